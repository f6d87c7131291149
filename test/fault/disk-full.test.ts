/**
 * Disk full, for real when the machine lets us: a 12 MiB tmpfs mounted in a private user + mount
 * namespace (`unshare -rm`, no root needed where unprivileged user namespaces are allowed), with the
 * broker running inside it (disk-full-child.ts has the scenario and its checks). Where the kernel
 * refuses the mount, the test says why and runs the same scenario with ENOSPC injected at Node's fs.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { createInterface } from 'node:readline';
import { tempDir, waitExit } from '../helpers.js';

const CHILD = fileURLToPath(new URL('./disk-full-child.ts', import.meta.url));

/** Why a private tmpfs cannot be mounted here, or null when it can. */
function cannotMount(dir: string): string | null {
  if (process.platform !== 'linux') return `${process.platform} has no unshare/tmpfs`;
  const r = spawnSync('unshare', ['-rm', 'sh', '-c', 'mount -t tmpfs -o size=1m tmpfs "$1"', 'sh', dir], {
    encoding: 'utf8',
    timeout: 10_000,
  });
  if (r.error) return `unshare is not available (${r.error.message})`;
  return r.status === 0 ? null : `the kernel refused the mount: ${(r.stderr || `exit ${r.status}`).trim()}`;
}

function run(args: string[], cmd = process.execPath): Promise<{ result: string; output: string[] }> {
  const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'inherit'] });
  const output: string[] = [];
  let result = '';
  createInterface({ input: child.stdout! }).on('line', (line) => {
    output.push(line);
    if (line.startsWith('RESULT ')) result = line.slice(7);
  });
  return waitExit(child).then(() => ({ result, output }));
}

test(
  'disk full while producing and acking: flow control, nothing damaged, everything resumes',
  { timeout: 120_000 },
  async (t) => {
    const dir = tempDir();
    try {
      const why = cannotMount(dir.path);
      let out;
      if (why === null) {
        out = await run(
          [
            '-rm',
            'sh',
            '-c',
            'mount -t tmpfs -o size=12m,mode=0700 tmpfs "$1" && exec "$2" --import tsx "$3" "$1" real',
            'sh',
            dir.path,
            process.execPath,
            CHILD,
          ],
          'unshare',
        );
      } else {
        t.diagnostic(`no real small file system here (${why}): injecting ENOSPC at Node's fs instead`);
        out = await run(['--import', 'tsx', CHILD, dir.path, 'emulated']);
      }
      assert.match(out.result, /^ok /, out.output.join('\n'));
      t.diagnostic(out.result);
    } finally {
      dir.cleanup();
    }
  },
);
