/**
 * For power-cut.test.ts: a descriptor number reused while the close that freed it has not been
 * reported yet. Opens `a`, closes it (fd-reuse-slow-close.ts reports the close 100 ms late), opens
 * `b` (the kernel hands out the same number), makes `b`'s directory entry durable, and once the late
 * close has been reported writes `b` with O_DSYNC; then prints `READY <fd a> <fd b>` and waits for
 * the cut.
 */
import fs from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';

const dir = process.argv[2]!;
const C = fs.constants;
const open = promisify(fs.open);
const fsync = promisify(fs.fsync);
const close = promisify(fs.close);

const a = await open(join(dir, 'a'), C.O_CREAT | C.O_RDWR | C.O_DSYNC);
const closedA = close(a);
const b = await open(join(dir, 'b'), C.O_CREAT | C.O_RDWR | C.O_DSYNC);
const d = await open(dir, C.O_RDONLY);
await fsync(d);
await close(d);
await closedA;
fs.writevSync(b, [Buffer.from('written with O_DSYNC after the late close')], 0);
process.stdout.write(`READY ${a} ${b}\n`);
setInterval(() => {}, 1000);
