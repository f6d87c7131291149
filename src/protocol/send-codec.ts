/**
 * The SendMessage answer written by hand, byte for byte what protobufjs writes for the same object
 * (test/unit/send-codec.test.ts): one entry per message (status, message id, transaction id, queue
 * offset, recall handle), every field left out at its default as protobufjs leaves it out. The
 * answer of every produced batch, a twentieth of the broker's CPU in W1a with protobufjs
 * (docs/benchmarks.md). Undefined for an answer this does not cover: protobufjs writes it then.
 */
import type { Status } from './wire-types.js';
import { vsize, writeVarint } from './varint.js';
import {
  coveredStatus,
  measureStatus,
  nested,
  stringField,
  utf8Length,
  writeEntriesAnswer,
  writeStatus,
  writeString,
  type StatusSize,
} from './answer-writer.js';

export interface SendResultEntryWire {
  status: Status;
  message_id: string;
  transaction_id: string;
  offset: number;
  recall_handle?: string;
}

export interface SendResponseWire {
  status: Status;
  entries?: SendResultEntryWire[];
}

interface EntrySize {
  status: StatusSize;
  id: number;
  transaction: number;
  recall: number;
  size: number;
}

const coveredOffset = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;

export function encodeSendResponse(res: SendResponseWire): Buffer | undefined {
  return writeEntriesAnswer('SendMessageResponse', res.status, res.entries ?? [], measureEntry, writeEntry);
}

function measureEntry(e: SendResultEntryWire): EntrySize | undefined {
  if (
    !coveredStatus(e.status) ||
    typeof e.message_id !== 'string' ||
    typeof e.transaction_id !== 'string' ||
    !coveredOffset(e.offset) ||
    (e.recall_handle !== undefined && typeof e.recall_handle !== 'string')
  ) {
    return undefined;
  }
  const status = measureStatus(e.status);
  const id = utf8Length(e.message_id);
  const transaction = utf8Length(e.transaction_id);
  const recall = e.recall_handle ? utf8Length(e.recall_handle) : 0;
  const size =
    nested(status.size) +
    stringField(id) +
    stringField(transaction) +
    (e.offset ? 1 + vsize(e.offset) : 0) +
    stringField(recall);
  return { status, id, transaction, recall, size };
}

function writeEntry(out: Buffer, at: number, e: SendResultEntryWire, z: EntrySize): number {
  at = writeStatus(out, at, (1 << 3) | 2, e.status, z.status);
  at = writeString(out, at, (2 << 3) | 2, e.message_id, z.id);
  at = writeString(out, at, (3 << 3) | 2, e.transaction_id, z.transaction);
  if (e.offset) {
    out[at++] = 4 << 3;
    at = writeVarint(out, at, e.offset);
  }
  if (z.recall) at = writeString(out, at, (5 << 3) | 2, e.recall_handle!, z.recall);
  return at;
}
