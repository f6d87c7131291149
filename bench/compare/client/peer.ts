/**
 * The one interface every system is driven through, so each workload is the same loop for all of
 * them: confirmed sends, and consumption with an ack per message.
 */

/** Sends one message and resolves once the server has confirmed it (its durability as configured). */
export interface Sender {
  send(body: Buffer): Promise<void>;
  close(): Promise<void>;
}

/** A running consumer; `onMessage` ran for each message before its ack was issued. */
export interface Subscription {
  /**
   * Make the consumption so far final where the client defers it (the pull consumer commits its
   * offsets); part of the measured time.
   */
  settle(): Promise<void>;
  close(): Promise<void>;
}

export type OnMessage = (body: Buffer) => void;

export interface Peer {
  /** Create the queue / stream / topic a workload uses (untimed). */
  prepare(queue: string): Promise<void>;
  sender(queue: string): Promise<Sender>;
  /** What fills a backlog before W2 (untimed); the peer's own sender unless it cannot keep 1,024 in flight. */
  filler(queue: string): Promise<Sender>;
  /** Consume from the queue's beginning as `group`, acking each message after `onMessage`. */
  subscribe(queue: string, group: string, onMessage: OnMessage): Promise<Subscription>;
  /** Vela SDK only: consume through the PullConsumer (commits offsets on `settle()`). */
  pull?(queue: string, group: string, onMessage: OnMessage): Promise<Subscription>;
  /** After the consumer closed: whether the server holds nothing un-acked for the group (null: unknown). */
  drained(queue: string, group: string): Promise<boolean | null>;
  close(): Promise<void>;
}

/** Wait for a promise at most `ms`; resolves false on time-out (the promise is left to finish). */
export async function within(p: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<boolean>((r) => (timer = setTimeout(() => r(false), ms)));
  try {
    return await Promise.race([p.then(() => true), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Close something within `ms`, never failing the workload: a close that errs or hangs (a client
 * whose goodbye call times out on a busy server) is reported on stderr only.
 */
export async function closeWithin(what: string, p: Promise<unknown>, ms: number): Promise<void> {
  try {
    if (!(await within(p, ms))) console.error(`(${what}: close took over ${ms} ms; left behind)`);
  } catch (err) {
    console.error(`(${what}: close failed: ${errorText(err)})`);
  }
}

/** A short message for an error of any shape. */
export function errorText(err: unknown): string {
  if (err instanceof Error) {
    const code = (err as { code?: unknown }).code;
    return `${err.name}${code !== undefined ? ` ${String(code)}` : ''}: ${err.message}`.replace(/\s+/g, ' ');
  }
  return String(err);
}
