/**
 * What a long-lived Set whose entries come and go per call does to V8's collector (not a test):
 * `node --import tsx bench/set-churn.ts`.
 *
 * Each variant runs the same loop in a child process for 5 s: every millisecond, 5 objects of ~3 KB
 * are made and registered, and deregistered 2 ms later (so registrations overlap); a 10 MB heap of
 * long-lived objects sits beside them. The child reports its collections (scavenges and
 * mark-compacts, their pause time and the longest pause). Variants:
 * - `none`: the objects are only held by the callback that drops them;
 * - `set`: added to and deleted from one long-lived Set;
 * - `slot-set`: added to and removed from one long-lived SlotSet (common/slot-set.ts).
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { PerformanceObserver, constants } from 'node:perf_hooks';
import { SlotSet } from '../src/common/slot-set.js';

const VARIANTS = ['none', 'set', 'slot-set'] as const;
type Variant = (typeof VARIANTS)[number];
const SECONDS = 5;

async function child(variant: Variant): Promise<void> {
  const keep: { a: number; b: string }[] = [];
  for (let i = 0; i < 100_000; i++) keep.push({ a: i, b: String(i) });
  const set = new Set<object>();
  const slots = new SlotSet<object>();
  let sink = 0;
  const gc = { scavenges: 0, markCompacts: 0, ms: 0, longest: 0 };
  const obs = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      const kind = (e as unknown as { detail?: { kind?: number } }).detail?.kind;
      if (kind === constants.NODE_PERFORMANCE_GC_MINOR) gc.scavenges++;
      else if (kind === constants.NODE_PERFORMANCE_GC_MAJOR) gc.markCompacts++;
      gc.ms += e.duration;
      gc.longest = Math.max(gc.longest, e.duration);
    }
  });
  obs.observe({ entryTypes: ['gc'] });
  // Deregistered 2 ms later: some ten registrations are live at any time, as calls overlap.
  const later = (fn: () => void) => setTimeout(fn, 2);
  const tick = setInterval(() => {
    for (let i = 0; i < 5; i++) {
      const payload = { junk: Array.from({ length: 100 }, (_, j) => ({ j })) };
      const done = () => (sink += payload.junk.length);
      switch (variant) {
        case 'none':
          later(done);
          break;
        case 'set':
          set.add(payload);
          later(() => set.delete(payload) && done());
          break;
        case 'slot-set': {
          const h = slots.add(payload);
          later(() => {
            slots.remove(h);
            done();
          });
          break;
        }
      }
    }
  }, 1);
  await new Promise((r) => setTimeout(r, SECONDS * 1000));
  clearInterval(tick);
  await new Promise((r) => setImmediate(r));
  obs.disconnect();
  process.stdout.write(`${JSON.stringify({ ...gc, sink: sink > 0 })}\n`);
}

async function run(variant: Variant): Promise<string> {
  const out: string[] = [];
  const p = spawn(process.execPath, ['--import', 'tsx', fileURLToPath(import.meta.url), variant], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  p.stdout.on('data', (d: Buffer) => out.push(String(d)));
  await new Promise((r) => p.once('exit', r));
  const gc = JSON.parse(out.join('')) as {
    scavenges: number;
    markCompacts: number;
    ms: number;
    longest: number;
  };
  return `| ${variant} | ${gc.scavenges} | ${gc.markCompacts} | ${gc.ms.toFixed(0)} | ${gc.longest.toFixed(1)} |`;
}

const arg = process.argv[2] as Variant | undefined;
if (arg && (VARIANTS as readonly string[]).includes(arg)) await child(arg);
else {
  console.log(`${SECONDS} s each, node ${process.version}\n`);
  console.log('| variant | scavenges | mark-compacts | pause ms | longest pause ms |\n|---|---|---|---|---|');
  for (const v of VARIANTS) console.log(await run(v));
}
