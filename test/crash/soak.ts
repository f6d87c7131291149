/**
 * The broker crash harness (mixed-load.ts), run for as long as you like:
 *
 *   npm run crash:soak                     kill -9, 100 rounds
 *   npm run crash:powerloss                power cuts (only what was fsynced survives), 30 rounds
 *   node --import tsx test/crash/soak.ts [--rounds N] [--power-cut] [--count-redelivery] [--load-ms A-B]
 *
 * Each round runs a broker in a child process under mixed load for a random while, crashes it, and
 * checks every acknowledged fact on a copy of what survived. Exits non-zero on the first violation,
 * keeping its files (the path is printed); a message delivered or dead-lettered twice after a restart
 * is one (`--count-redelivery` only counts them).
 */
import { tempDir } from '../helpers.js';
import { crashRounds } from './mixed-load.js';

const args = process.argv.slice(2);
const value = (name: string, dflt: string) => {
  const i = args.indexOf(name);
  return i >= 0 && args[i + 1] ? args[i + 1]! : dflt;
};
const rounds = Number(value('--rounds', '100'));
const powerCut = args.includes('--power-cut');
const [lo, hi] = value('--load-ms', '300-3000').split('-').map(Number) as [number, number];
const dir = tempDir('vela-soak-');
const t0 = Date.now();
try {
  const ledger = await crashRounds({
    dataDir: `${dir.path}/data`,
    scratch: dir.path,
    rounds,
    powerCut,
    loadMs: [lo, hi],
    strictRedelivery: !args.includes('--count-redelivery'),
    log: (line) => process.stdout.write(`${line}\n`),
  });
  process.stdout.write(
    `\n${rounds} ${powerCut ? 'power cuts' : 'kill -9s'} in ${Math.round((Date.now() - t0) / 1000)} s: every acknowledged fact held` +
      ` (${ledger.sent.size} sends, ${ledger.delayed.size} delay messages, ${ledger.consumed.size} acks, ${ledger.counts.nacks} nacks,` +
      ` ${ledger.counts.commits} offset commits, ${ledger.counts.admin} admin changes);` +
      ` messages delivered or dead-lettered twice after a crash: ${ledger.duplicated.size}\n`,
  );
} catch (err) {
  process.stderr.write(`FAILED: ${(err as Error).stack ?? String(err)}\n`);
  // What the round left (its data directory and the crashed image) stays, for a look.
  process.stderr.write(`the soak's files are kept in ${dir.path}\n`);
  process.exitCode = 1;
} finally {
  if (!process.exitCode) dir.cleanup();
}
