/**
 * Where the comparison takes Vela's broker and SDK from: the compiled `dist/` that users run
 * (`npm start` runs `dist/cli.js`; the npm package's SDK is `dist/`), or the TypeScript sources under
 * tsx (`--from src`, what runs before this option existed). They differ: tsx compiles with esbuild's
 * `keepNames`, which wraps every function made at run time in a `__name` call — measurable in the
 * SDK's per-message cost (docs/benchmarks.md).
 */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';

export type VelaFrom = 'dist' | 'src';

/** Tells the broker child and the client children which one to load. */
export const VELA_FROM_ENV = 'VELA_COMPARE_FROM';

/** In a child: what the orchestrator asked for (dist unless told `src`). */
export function velaFrom(): VelaFrom {
  return process.env[VELA_FROM_ENV] === 'src' ? 'src' : 'dist';
}

/** Compile the checkout at `root` into its `dist/` (TypeScript only: the console bundle is not measured). */
export function buildDist(root: string): void {
  execFileSync(
    process.execPath,
    [join(root, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json'],
    {
      cwd: root,
      stdio: ['ignore', 'inherit', 'inherit'],
    },
  );
}
