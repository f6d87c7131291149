/** For fd-reuse-child.ts, preloaded before the power-cut model: `fs.close` reports 100 ms after closing. */
import fs from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';

const close = fs.close;
(fs as { close: typeof fs.close }).close = ((fd: number, cb: (err: NodeJS.ErrnoException | null) => void) =>
  close(fd, (err) => setTimeout(() => cb(err), 100))) as typeof fs.close;
syncBuiltinESMExports();
