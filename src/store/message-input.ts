/**
 * What the store accepts as a message: checked whole before anything of a batch is written, so a
 * batch with one bad message stores nothing.
 */
import { VelaError } from '../common/errors.js';
import { MAX_FRAME_SIZE, messageFrameUpperBound, type MessageInput } from './record-codec.js';

/** Check a message; returns the most bytes its frame can take. */
export function checkMessageInput(m: MessageInput): number {
  validateInput(m);
  const bound = messageFrameUpperBound(m);
  if (bound > MAX_FRAME_SIZE) {
    throw new VelaError('STORE_RECORD_TOO_LARGE', `message ${m.messageId}: over ${MAX_FRAME_SIZE} bytes`);
  }
  return bound;
}

function checkLength(s: string | undefined): void {
  // A UTF-8 string has at most 3 bytes per UTF-16 unit: only long strings need measuring.
  if (s !== undefined && s.length > 21_845 && Buffer.byteLength(s) > 0xffff) {
    throw new VelaError('STORE_BAD_ARGUMENT', 'a string field is longer than 65535 bytes');
  }
}

function validateInput(m: MessageInput): void {
  if (typeof m.topic !== 'string' || m.topic.length === 0)
    throw new VelaError('STORE_BAD_ARGUMENT', 'topic is required');
  if (!Number.isInteger(m.queueId) || m.queueId < 0 || m.queueId > 0x7fffffff) {
    throw new VelaError('STORE_BAD_ARGUMENT', `invalid queue id ${m.queueId}`);
  }
  if (typeof m.messageId !== 'string' || m.messageId.length === 0) {
    throw new VelaError('STORE_BAD_ARGUMENT', 'messageId is required');
  }
  if (!(m.body instanceof Uint8Array)) throw new VelaError('STORE_BAD_ARGUMENT', 'body must be bytes');
  checkLength(m.topic);
  checkLength(m.messageId);
  checkLength(m.tag);
  checkLength(m.messageGroup);
  checkLength(m.bornHost);
  if (m.keys) {
    if (m.keys.length > 0xffff) throw new VelaError('STORE_BAD_ARGUMENT', 'too many keys');
    for (const k of m.keys) checkLength(k);
  }
  if (m.keys) {
    for (const k of m.keys)
      if (typeof k !== 'string') throw new VelaError('STORE_BAD_ARGUMENT', 'keys must be strings');
  }
  if (m.properties) {
    for (const k in m.properties) {
      checkLength(k);
      if (typeof m.properties[k] !== 'string')
        throw new VelaError('STORE_BAD_ARGUMENT', `property ${k} must be a string`);
    }
  }
}
