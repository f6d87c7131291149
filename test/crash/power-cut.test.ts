/**
 * Power loss under the store: the child appends under `sync` flush with a power-cut model underneath
 * (power-cut-shim.ts: after the cut only what was fsynced survives, file contents and directory
 * entries alike). At a random moment the power goes; the surviving image replaces the data directory,
 * and every acknowledged message must be in it, intact and stored once, and appends must go on.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { mkdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { tempDir, waitExit, waitClosed, sleep } from '../helpers.js';
import { verifyAppends, type Ack } from './verify-appends.js';

const CHILD = fileURLToPath(new URL('./append-child.ts', import.meta.url));
const SHIM = fileURLToPath(new URL('./power-cut-shim.ts', import.meta.url));
const SLOW_CLOSE = fileURLToPath(new URL('./fd-reuse-slow-close.ts', import.meta.url));
const FD_REUSE_CHILD = fileURLToPath(new URL('./fd-reuse-child.ts', import.meta.url));

/** Run `script` under the power-cut model for `dir`; `cut()` pulls the plug and puts the image in place. */
export function underPowerCut(script: string, args: string[], dir: string, onLine: (line: string) => void) {
  const image = `${dir}.image`;
  rmSync(image, { recursive: true, force: true });
  const child = spawn(process.execPath, ['--import', 'tsx', '--import', SHIM, script, ...args], {
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, VELA_POWER_CUT_DIR: dir, VELA_POWER_CUT_OUT: image },
  });
  let cutDone: (() => void) | null = null;
  createInterface({ input: child.stdout! }).on('line', (line) => {
    if (line.startsWith('POWER-CUT')) cutDone?.();
    else onLine(line);
  });
  return {
    child,
    async cut(): Promise<void> {
      const done = new Promise<void>((r) => (cutDone = r));
      child.kill('SIGUSR2');
      await Promise.race([done, waitExit(child).then(() => assert.fail('child exited before the cut'))]);
      child.kill('SIGKILL');
      await waitClosed(child);
      rmSync(dir, { recursive: true, force: true });
      renameSync(image, dir);
    },
  };
}

test(
  'acknowledged appends survive power cuts at random moments, exactly once',
  { timeout: 120_000 },
  async () => {
    const dir = tempDir();
    const data = `${dir.path}/data`;
    const acked = new Map<string, Ack>();
    try {
      for (let round = 0; round < 3; round++) {
        let first: () => void;
        const started = new Promise<void>((r) => (first = r));
        const run = underPowerCut(CHILD, [data, `p${round}`, 'loop'], data, (line) => {
          const [kind, id, q, off] = line.split(' ');
          if (kind !== 'A') return;
          acked.set(id!, { queueId: Number(q), queueOffset: Number(off) });
          first();
        });
        await Promise.race([started, waitExit(run.child).then(() => assert.fail('child exited early'))]);
        await sleep(100 + Math.random() * 500);
        await run.cut();
        const stored = await verifyAppends(data, acked);
        assert.ok(stored >= acked.size);
      }
      assert.ok(acked.size > 300, `only ${acked.size} acknowledged appends: the test did not exercise much`);
    } finally {
      dir.cleanup();
    }
  },
);

test('the power-cut model follows a descriptor number reused before its close was reported', async () => {
  // The store closes and opens files concurrently: a close's callback can come after an open that
  // got the same number. The model must keep tracking the new file (else its O_DSYNC writes would
  // not survive in the model, and a later check would blame the store for bytes it did make durable).
  const dir = tempDir();
  const data = `${dir.path}/data`;
  const image = `${data}.image`;
  mkdirSync(data);
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', '--import', SLOW_CLOSE, '--import', SHIM, FD_REUSE_CHILD, data],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
      env: { ...process.env, VELA_POWER_CUT_DIR: data, VELA_POWER_CUT_OUT: image },
    },
  );
  try {
    const lines = createInterface({ input: child.stdout! });
    const ready = await new Promise<string>((resolve, reject) => {
      lines.on('line', (l) => l.startsWith('READY') && resolve(l));
      child.once('exit', (code) => reject(new Error(`the child exited (${code}) before it was ready`)));
    });
    const [, fdA, fdB] = ready.split(' ');
    assert.equal(fdB, fdA, 'the second open got the number the first close freed');
    const cut = new Promise<void>((r) => lines.on('line', (l) => l.startsWith('POWER-CUT') && r()));
    child.kill('SIGUSR2');
    await cut;
    assert.equal(readFileSync(`${image}/b`, 'utf8'), 'written with O_DSYNC after the late close');
  } finally {
    child.kill('SIGKILL');
    await waitClosed(child);
    dir.cleanup();
  }
});
