/**
 * What some clients do differently from the protocol, and how the endpoint meets it.
 *
 * rocketmq-client-go (v2, up to 2.1.2 at least) sends UPDATE_CONSUMER_OFFSET and END_TRANSACTION with
 * its `InvokeOneWay`, which never sets the one-way flag and never reads the answer. Answering them
 * is worse than useless: at shutdown the Go push consumer writes its final offsets and closes its
 * connection at once, and an answer that has reached it by then, unread, turns its close into a
 * reset — which makes the broker's kernel discard the offsets it has received but the broker has not
 * read yet. So the endpoint treats these two requests from Go clients as the one-way requests they
 * are meant to be: it processes them and answers nothing.
 */
import { RequestCode } from './codes.js';
import { Flag, type RemotingCommand } from './frame.js';

const GO_FIRE_AND_FORGET: ReadonlySet<number> = new Set([
  RequestCode.UPDATE_CONSUMER_OFFSET,
  RequestCode.END_TRANSACTION,
]);

/** Mark a request the client will never read the answer to as one-way. */
export function applyClientQuirks(cmd: RemotingCommand): void {
  if (cmd.language === 'GO' && GO_FIRE_AND_FORGET.has(cmd.code)) cmd.flag |= Flag.ONEWAY;
}
