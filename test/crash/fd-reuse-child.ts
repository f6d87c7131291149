/**
 * For power-cut.test.ts: a descriptor number reused while the close that freed it has not been
 * reported yet. Opens `a`, closes it (fd-reuse-slow-close.ts reports the close 100 ms late), waits
 * until the kernel has freed the number (the close runs on a pool thread: an open issued right after
 * it may run first), opens `b` (the kernel hands out the same number, unless other descriptors came
 * or went meanwhile: then again), makes `b`'s directory entry durable, and once the late close has
 * been reported writes `b` with O_DSYNC; then prints `READY <fd a> <fd b>` and waits for the cut.
 */
import fs from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';

const dir = process.argv[2]!;
const C = fs.constants;
const open = promisify(fs.open);
const fsync = promisify(fs.fsync);
const close = promisify(fs.close);

// Other descriptors of this process may come and go meanwhile (on a cold start tsx writes its cache
// files while this runs), and the kernel hands out the lowest free number: `b` then gets another
// number than `a`'s. Close both and try again until it gets `a`'s.
let a = -1;
let b = -1;
let closedA = Promise.resolve();
for (let attempt = 1; ; attempt++) {
  a = await open(join(dir, 'a'), C.O_CREAT | C.O_RDWR | C.O_DSYNC);
  closedA = close(a);
  // (Bounded: another thread may have been given the number at once; then the open below tells.)
  for (let i = 0; i < 1000 && isOpen(a); i++) await new Promise((r) => setTimeout(r, 1));
  b = await open(join(dir, 'b'), C.O_CREAT | C.O_RDWR | C.O_DSYNC);
  if (b === a || attempt === 50) break;
  await closedA;
  await close(b);
}
const d = await open(dir, C.O_RDONLY);
await fsync(d);
await close(d);
await closedA;
fs.writevSync(b, [Buffer.from('written with O_DSYNC after the late close')], 0);
process.stdout.write(`READY ${a} ${b}\n`);
setInterval(() => {}, 1000);

/** Whether `fd` is still an open descriptor of this process. */
function isOpen(fd: number): boolean {
  try {
    fs.fstatSync(fd);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EBADF') return false;
    throw err;
  }
}
