/**
 * Objects the hot paths make once per message or per read share one V8 map (hidden class). When
 * each gets a map of its own (as `{ ...x, more }` does where `x` always has one shape: V8's fast clone
 * gives the copy a map without transitions, so adding `more` makes a new map each time),
 * every later property read of them misses its inline cache: that cost ~2.5 µs per produced message
 * in the broker and ~3.5 µs in the SDK producer (docs/benchmarks.md). The check runs in a child
 * process started with `--allow-natives-syntax`, which V8's map comparison needs.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const CHILD = fileURLToPath(new URL('./hidden-classes-child.ts', import.meta.url));

test('per-message and per-read objects of the hot paths share one hidden class', () => {
  const out = execFileSync(process.execPath, ['--allow-natives-syntax', '--import', 'tsx', CHILD], {
    encoding: 'utf8',
    timeout: 60_000,
  });
  const result = JSON.parse(out) as Record<string, boolean>;
  assert.deepEqual(result, {
    // SendMessage entries as the produce service gets them (protocol/handlers/send.ts)
    sendPath: true,
    // SDK send requests addressed to a queue (client/message.ts wireOnQueue)
    sdkPath: true,
    // MessageStore.read answers, whatever their status
    storePath: true,
    // retry records made from stored messages (consume/retry-records.ts)
    retryPath: true,
  });
});
