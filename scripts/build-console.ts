/**
 * `npm run build:console`: bundle the web console (src/dashboard/ui, Preact) with esbuild into
 * dist/console/ (index.html, app.js, app.css). The admin HTTP server serves these files; nothing is
 * fetched from anywhere else at run time.
 */
import { build } from 'esbuild';
import { copyFileSync, mkdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const root = (p: string) => fileURLToPath(new URL(`../${p}`, import.meta.url));

export async function buildConsole(outdir = root('dist/console')): Promise<void> {
  mkdirSync(outdir, { recursive: true });
  await build({
    entryPoints: { app: root('src/dashboard/ui/main.tsx') },
    outdir,
    bundle: true,
    minify: true,
    sourcemap: false,
    format: 'esm',
    target: ['es2022'],
    jsx: 'automatic',
    jsxImportSource: 'preact',
    legalComments: 'none',
    logLevel: 'warning',
  });
  copyFileSync(root('src/dashboard/ui/index.html'), `${outdir}/index.html`);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) await buildConsole();
