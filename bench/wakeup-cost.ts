/**
 * What waking up costs on this machine: the process CPU time (every thread, user + system) of one
 * event-loop wake-up that does nothing, and of one that does ~10 µs of JavaScript work, at several
 * intervals between wake-ups, against the same work done back to back.
 * `node --import tsx bench/wakeup-cost.ts [--n N]`
 *
 * On a virtual machine whose idle vCPUs halt, a thread that sleeps and is woken pays for the halt and
 * the wake-up in CPU time, and its caches are cold. A broker at a low or moderate message rate wakes
 * several threads per message (its event loop per socket read, a thread-pool thread per file write),
 * so this, not the work, sets its CPU per message there.
 */
const argv = process.argv.slice(2);
const nAt = argv.indexOf('--n');
const N = nAt >= 0 ? Number(argv[nAt + 1]) : 1000;

/** ~10 µs of the kind of work a broker does per message: small objects, a map, property reads. */
function work(): number {
  const m = new Map<string, { a: number; b: number[] }>();
  for (let i = 0; i < 300; i++) m.set(`k${i % 50}`, { a: i, b: [i, i + 1] });
  let s = 0;
  for (const v of m.values()) s += v.a;
  return s;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
const yieldNow = () => new Promise<void>((resolve) => setImmediate(resolve));

/** Process CPU µs per iteration of `step`, over `n` iterations. */
async function cpuPer(n: number, step: (i: number) => Promise<void> | void): Promise<number> {
  const before = process.cpuUsage();
  for (let i = 0; i < n; i++) await step(i);
  const used = process.cpuUsage(before);
  return (used.user + used.system) / n;
}

let sink = 0;
for (let i = 0; i < 20_000; i++) sink += work(); // warm up (optimized code)

const t0 = performance.now();
for (let i = 0; i < 2000; i++) sink += work();
const pure = ((performance.now() - t0) * 1000) / 2000;

const backToBack = await cpuPer(N * 3, async (i) => {
  sink += work();
  if (i % 50 === 0) await yieldNow();
});
console.log(`work alone: ${pure.toFixed(1)} µs wall; back to back: ${backToBack.toFixed(1)} µs CPU per unit`);
for (const interval of [1, 2, 5]) {
  const n = Math.max(100, Math.round(N / interval));
  const empty = await cpuPer(n, () => sleep(interval));
  const withWork = await cpuPer(n, async () => {
    sink += work();
    await sleep(interval);
  });
  console.log(
    `a wake-up every ${interval} ms: ${empty.toFixed(1)} µs CPU doing nothing, ${withWork.toFixed(1)} µs CPU doing the work`,
  );
}
if (sink === 42) console.log(''); // keep the work observable
