/**
 * The web console: a single-page app bundled at build time (`npm run build:console`, esbuild) into
 * `dist/console/`, served by the admin HTTP server at `/console/`. It works offline: no CDN, no font
 * or script from anywhere else; the Content-Security-Policy allows only this origin. The files are
 * read once when the server starts. It calls the admin JSON API like any client, with the admin token
 * when the broker has one (the page asks for it).
 */
import { readFileSync, existsSync } from 'node:fs';
import type { FastifyInstance, FastifyReply } from 'fastify';

/** Where the build puts the bundle: `<package root>/dist/console/` (from src/dashboard or dist/dashboard). */
export const CONSOLE_DIR = new URL('../../dist/console/', import.meta.url);

const FILES: Record<string, string> = {
  'index.html': 'text/html; charset=utf-8',
  'app.js': 'text/javascript; charset=utf-8',
  'app.css': 'text/css; charset=utf-8',
};

const SECURITY_HEADERS = {
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  'x-frame-options': 'DENY',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-cache',
};

export function registerConsole(app: FastifyInstance, dir: URL = CONSOLE_DIR): void {
  const files = new Map<string, Buffer>();
  for (const name of Object.keys(FILES)) {
    const url = new URL(name, dir);
    if (existsSync(url)) files.set(name, readFileSync(url));
  }
  const built = files.size === Object.keys(FILES).length;

  app.get('/', async (_req, reply) => reply.redirect('/console/'));
  app.get('/console', async (_req, reply) => reply.redirect('/console/'));
  const serve = (name: string, reply: FastifyReply) => {
    if (!built) {
      return reply
        .status(503)
        .header('content-type', 'text/plain; charset=utf-8')
        .send('The console is not built: run `npm run build` (or `npm run build:console`).\n');
    }
    const body = files.get(name);
    if (!body) return reply.status(404).header('content-type', 'text/plain').send('not found\n');
    return reply.headers({ ...SECURITY_HEADERS, 'content-type': FILES[name]! }).send(body);
  };
  app.get('/console/', async (_req, reply) => serve('index.html', reply));
  app.get<{ Params: { file: string } }>('/console/:file', async (req, reply) =>
    serve(req.params.file, reply),
  );
}
