/** `vela admin …` in a child process, run asynchronously (an in-process broker must keep answering). */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const CLI = fileURLToPath(new URL('../../src/cli.ts', import.meta.url));

export interface CliResult {
  status: number;
  stdout: string;
  stderr: string;
}

export function runAdminCli(args: string[], env: Record<string, string> = {}): Promise<CliResult> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', CLI, 'admin', ...args],
      { encoding: 'utf8', env: { ...process.env, ...env }, timeout: 60_000 },
      (err, stdout, stderr) => {
        const code = (err as { code?: unknown } | null)?.code;
        resolve({ status: typeof code === 'number' ? code : err ? 1 : 0, stdout, stderr });
      },
    );
  });
}
