/**
 * The randomized FIFO stress of test/stress/fifo-stress.ts, bounded for `npm test`: message groups,
 * consumers joining and leaving, random delays, nacks and silent consumers, a broker restart in the
 * middle. `npm run stress:fifo` runs a longer one.
 */
import { test } from 'node:test';
import { BOUNDED, runFifoStress } from '../stress/fifo-stress.js';

test('randomized FIFO stress: per-group order holds and every message is consumed or dead-lettered', async (t) => {
  const seed = Number(process.env.VELA_FIFO_STRESS_SEED ?? BOUNDED.seed);
  const report = await runFifoStress({ ...BOUNDED, seed });
  t.diagnostic(`seed ${seed}: ${JSON.stringify(report)}`);
});
