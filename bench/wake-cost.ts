/**
 * What a loopback socket write costs here, with the reader busy and with the reader asleep:
 * `node --import tsx bench/wake-cost.ts [--writes N] [--trips N]`.
 *
 * - burst: this process writes N 200-byte chunks back to back to a child process that is reading
 *   all the time; CPU per write of the writer.
 * - ping-pong: one 200-byte message to the child, which echoes it; the next only after the echo
 *   arrives, so each write finds the other process asleep in the event loop and has to wake it. Wall
 *   time per round trip and CPU per round trip of this side (one write, one read, one wake-up).
 *
 * The difference is what a request/answer exchange at a low rate pays per hop (W1b, W3) that a
 * pipelined one (W1a, W2) does not.
 */
import net from 'node:net';
import { fork } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(name);
  return i >= 0 ? Number(process.argv[i + 1]) : fallback;
}

const CHUNK = Buffer.alloc(200, 1);

if (process.argv[2] === '--child') {
  // Echo what arrives when told to, else just read.
  const socket = net.connect(Number(process.argv[3]), '127.0.0.1');
  socket.setNoDelay(true);
  let echo = false;
  socket.on('data', (d: Buffer) => {
    if (d[0] === 2) echo = true;
    if (echo) socket.write(d);
  });
} else {
  const writes = arg('--writes', 20_000);
  const trips = arg('--trips', 5_000);
  const server = net.createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const child = fork(
    fileURLToPath(import.meta.url),
    ['--child', String((server.address() as net.AddressInfo).port)],
    {
      execArgv: ['--import', 'tsx'],
    },
  );
  const [socket] = (await once(server, 'connection')) as [net.Socket];
  socket.setNoDelay(true);

  // Burst: the reader never sleeps for long.
  let cpu = process.cpuUsage();
  let t0 = performance.now();
  for (let i = 0; i < writes; i += 100) {
    for (let k = 0; k < 100; k++) socket.write(CHUNK);
    await new Promise((r) => setImmediate(r));
  }
  let used = process.cpuUsage(cpu);
  console.log(
    `burst:     ${((used.user + used.system) / writes).toFixed(1)} µs CPU per write ` +
      `(${(used.system / writes).toFixed(1)} in the kernel), ${(((performance.now() - t0) * 1000) / writes).toFixed(1)} µs wall`,
  );

  // Ping-pong: each write wakes the other side.
  await new Promise((r) => setTimeout(r, 200));
  const ping = Buffer.from(CHUNK);
  ping[0] = 2;
  cpu = process.cpuUsage();
  t0 = performance.now();
  for (let i = 0; i < trips; i++) {
    socket.write(ping);
    let got = 0;
    while (got < ping.length) {
      const [d] = (await once(socket, 'data')) as [Buffer];
      got += d.length;
    }
  }
  used = process.cpuUsage(cpu);
  console.log(
    `ping-pong: ${(((performance.now() - t0) * 1000) / trips).toFixed(1)} µs per round trip, ` +
      `${((used.user + used.system) / trips).toFixed(1)} µs CPU per round trip on this side`,
  );
  socket.destroy();
  child.kill();
  server.close();
}
