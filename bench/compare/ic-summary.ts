/**
 * Which property accesses keep missing V8's inline caches, from a `--log-ic` log (`bench:compare
 * --ic-log DIR` writes one per Vela process): `node --import tsx bench/compare/ic-summary.ts FILE
 * [--from FRACTION] [--top N]`.
 *
 * V8 logs an IC event each time an access site misses its cache and goes to the runtime. A site that
 * settled (monomorphic, or megamorphic and found in the stub cache) logs nothing more, so a site
 * that logs about once per message in the steady state is one whose objects have a map V8 has not
 * seen before — typically objects each given a map of their own, as `{ ...x, more }` does when `x`
 * always has one shape (docs/benchmarks.md, "one hidden class per hot object"). `--from 0.5` skips
 * the first half of the log (start-up and warm-up). Rows: misses, IC kind, property, function and
 * its source position, old → new state (V8's letters: 0 uninitialized, 1 monomorphic, P polymorphic,
 * N megamorphic, X no feedback).
 */
import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

export interface IcSite {
  misses: number;
  /** `LoadIC messageId prepare src/broker/produce.ts:1:4917 N->N` */
  site: string;
}

interface CodeRange {
  start: number;
  end: number;
  name: string;
}

interface IcEvent {
  kind: string;
  pc: number;
  time: number;
  line: string;
  column: string;
  from: string;
  to: string;
  key: string;
}

const IC_LINE = /^(?:Keyed)?(?:Load|Store|Define[A-Za-z]*|StoreInArrayLiteral|LoadGlobal|StoreGlobal)IC,/;

/** The sites of `lines` (a V8 log) by misses, from `from` (a fraction of the log's time) on. */
export async function summarizeIcLog(
  lines: AsyncIterable<string> | Iterable<string>,
  from = 0,
): Promise<IcSite[]> {
  const code: CodeRange[] = [];
  const events: IcEvent[] = [];
  let last = 0;
  for await (const line of lines) {
    if (line.startsWith('code-creation,')) {
      // code-creation,<type>,<kind>,<time>,<address>,<size>,<name>[,<sfi>,<state>]
      const f = line.split(',');
      const start = parseInt(f[4]!, 16);
      code.push({ start, end: start + Number(f[5]), name: f[6] ?? '' });
    } else if (IC_LINE.test(line)) {
      // <kind>,<pc>,<time>,<line>,<column>,<old>,<new>,<map>,<key>,<modifier>,<slow reason>
      const f = line.split(',');
      const time = Number(f[2]);
      last = Math.max(last, time);
      events.push({
        kind: f[0]!,
        pc: parseInt(f[1]!, 16),
        time,
        line: f[3]!,
        column: f[4]!,
        from: f[5]!,
        to: f[6]!,
        key: f[8] ?? '',
      });
    }
  }
  code.sort((a, b) => a.start - b.start);
  const nameAt = (pc: number): string => {
    let lo = 0;
    let hi = code.length - 1;
    let found = -1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if (code[mid]!.start <= pc) {
        found = mid;
        lo = mid + 1;
      } else hi = mid - 1;
    }
    // Code objects are reused: the latest one starting at or below pc that still covers it.
    for (let i = found; i >= 0 && i > found - 64; i--) {
      const c = code[i]!;
      if (pc < c.end) return shortName(c.name);
    }
    return '?';
  };
  const since = from * last;
  const counts = new Map<string, number>();
  for (const e of events) {
    if (e.time < since) continue;
    const site = `${e.kind} ${e.key} ${nameAt(e.pc)} @${e.line}:${e.column} ${e.from}->${e.to}`;
    counts.set(site, (counts.get(site) ?? 0) + 1);
  }
  return [...counts]
    .map(([site, misses]) => ({ site, misses }))
    .sort((a, b) => b.misses - a.misses || (a.site < b.site ? -1 : 1));
}

/** `prepare file:///…/src/broker/produce.ts:1:4917` → `prepare src/broker/produce.ts:1:4917`. */
function shortName(name: string): string {
  const short = name.replace(/file:\/\/\S*?\/((?:src|dist|bench|node_modules)\/)/, '$1');
  return short.startsWith(' ') ? `(anonymous)${short}` : short;
}

async function main(argv: string[]): Promise<void> {
  const file = argv[0];
  if (!file) {
    console.error('usage: ic-summary.ts FILE [--from FRACTION] [--top N]');
    process.exitCode = 2;
    return;
  }
  const arg = (flag: string, dflt: number): number => {
    const at = argv.indexOf(flag);
    return at > 0 ? Number(argv[at + 1]) : dflt;
  };
  const rl = createInterface({ input: createReadStream(file), crlfDelay: Infinity });
  const sites = await summarizeIcLog(rl, arg('--from', 0));
  for (const s of sites.slice(0, arg('--top', 40))) console.log(`${String(s.misses).padStart(9)}  ${s.site}`);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await main(process.argv.slice(2));
