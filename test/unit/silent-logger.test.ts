/**
 * The SDK's default logger discards everything and does not load pino: importing the SDK pays for
 * no logger its user did not ask for.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { silentLogger } from '../../src/common/silent-logger.js';
import { createLogger } from '../../src/common/logger.js';

test('the silent logger discards, and so do its children', () => {
  const log = silentLogger();
  for (const level of ['fatal', 'error', 'warn', 'info', 'debug', 'trace'] as const) {
    assert.equal(log[level]({ a: 1 }, 'nothing'), undefined);
  }
  const child = log.child({ client: 'Producer' });
  child.warn('still nothing');
  assert.equal(child.isLevelEnabled('error'), false);
  assert.equal(child.level, 'silent');
  // A pino logger is still what createLogger gives: the broker's and the CLI's.
  const lines: string[] = [];
  const real = createLogger({ level: 'warn', destination: { write: (l: string) => void lines.push(l) } });
  real.child({ c: 1 }).warn('kept');
  assert.equal(JSON.parse(lines[0]!).msg, 'kept');
});

test("importing the SDK's entry point does not load pino", () => {
  const dir = mkdtempSync(join(tmpdir(), 'vela-silent-'));
  try {
    const seen = join(dir, 'resolved.txt');
    writeFileSync(seen, '');
    // A resolve hook (run on the loader thread) that notes every specifier naming pino.
    const hook = join(dir, 'hook.mjs');
    writeFileSync(
      hook,
      `import { appendFileSync } from 'node:fs';
export async function resolve(specifier, context, next) {
  if (/(^|\\/)pino(\\/|$)/.test(specifier)) appendFileSync(${JSON.stringify(seen)}, specifier + '\\n');
  return next(specifier, context);
}
`,
    );
    const entry = pathToFileURL(join(import.meta.dirname, '../../src/client/index.ts')).href;
    const script =
      `import { register } from 'node:module';` +
      `register(${JSON.stringify(pathToFileURL(hook).href)});` +
      `await import(${JSON.stringify(entry)});` +
      `await import('pino');`; // the check: a pino import is noted
    execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      stdio: ['ignore', 'ignore', 'inherit'],
      timeout: 60_000,
    });
    assert.deepEqual(readFileSync(seen, 'utf8').trim().split('\n'), ['pino'], 'only the check loaded pino');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
