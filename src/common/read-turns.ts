/**
 * Reading a busy socket a bounded amount per event-loop turn.
 *
 * libuv reads a readable TCP socket up to 32 times (64 KiB each) before it returns to the event loop,
 * so a peer's burst of a few hundred requests is all parsed and handled in one go: nothing else runs
 * meanwhile — no disk write is started for the first of them, no finished write is answered, no
 * timer fires. A broker and a pipelining client then take turns instead of working at once (W1a:
 * both busy 20 % of the time). Pausing the socket once it has given READ_BYTES_PER_TURN in a turn
 * and resuming it in the next (`setImmediate`, after the I/O phase) lets writes start and answers go
 * out while the rest of the burst waits in the kernel.
 */

export const READ_BYTES_PER_TURN = 64 * 1024;

interface Pausable {
  pause(): unknown;
  resume(): unknown;
  readonly destroyed: boolean;
}

/**
 * Returns the function to call with each chunk's size, before handling it: past `limit` bytes in
 * this turn it pauses `socket` until the next turn.
 */
export function readTurns(socket: Pausable, limit = READ_BYTES_PER_TURN): (bytes: number) => void {
  let thisTurn = 0;
  let paused = false;
  const nextTurn = (): void => {
    thisTurn = 0;
    if (paused) {
      paused = false;
      if (!socket.destroyed) socket.resume();
    }
  };
  return (bytes) => {
    if (thisTurn === 0) setImmediate(nextTurn);
    thisTurn += bytes;
    if (thisTurn >= limit && !paused) {
      paused = true;
      socket.pause();
    }
  };
}
