/**
 * Receipt handles of deliveries: issue one for the current hand-out of a delivery, and find the live
 * delivery a client's handle stands for (or say why there is none).
 */
import { VelaError } from '../../common/errors.js';
import type { ConsumeContext } from './context.js';
import type { HandleFields } from '../receipt-handle.js';
import {
  DeliveryState,
  Source,
  deliveryKey,
  stateKey,
  type Delivery,
  type DeliveryKey,
  type GroupTopicState,
} from './delivery.js';

/** Handles carry the source in the queue id's top bit. */
const RETRY_BIT = 0x8000_0000;

/** Fill `f` with the fields of `d`'s handle. */
function fillFields(f: HandleFields, d: Delivery): void {
  f.queueId = d.source === Source.RETRY ? (d.queueId | RETRY_BIT) >>> 0 : d.queueId;
  f.offset = d.offset;
  f.nonce = d.nonce;
}

export function receiptHandleOf(ctx: ConsumeContext, s: GroupTopicState, d: Delivery): string {
  const f: HandleFields = { queueId: 0, offset: 0, nonce: 0 };
  fillFields(f, d);
  return ctx.handles.encode(s.topic, s.group, f);
}

/** Handles of many hand-outs of one (group, topic), in order (one keyed computation for all). */
export function receiptHandlesOf(ctx: ConsumeContext, s: GroupTopicState, ds: readonly Delivery[]): string[] {
  return ctx.handles.encodeEach(s.topic, s.group, ds.length, (i, f) => fillFields(f, ds[i]!));
}

/** A handle checked for forgery and for its (group, topic): which delivery it names, and which hand-out. */
export interface DecodedHandle {
  stateKey: string;
  key: DeliveryKey;
  nonce: number;
}

/** Decode and authenticate a handle (pure: no state is looked at). */
export function decodeHandle(
  ctx: ConsumeContext,
  group: string,
  topic: string,
  receiptHandle: string,
): DecodedHandle {
  const f = ctx.handles.decode(receiptHandle, topic, group);
  const source = f.queueId & RETRY_BIT ? Source.RETRY : Source.TOPIC;
  return {
    stateKey: stateKey(group, topic),
    key: deliveryKey(source, (f.queueId & ~RETRY_BIT) >>> 0, f.offset),
    nonce: f.nonce,
  };
}

/** Decode and authenticate many handles of one (group, topic): per handle, what it names or why not. */
export function decodeHandles(
  ctx: ConsumeContext,
  group: string,
  topic: string,
  receiptHandles: readonly string[],
): (DecodedHandle | VelaError)[] {
  const sk = stateKey(group, topic);
  return ctx.handles.decodeMany(receiptHandles, topic, group).map((f) => {
    if (f instanceof VelaError) return f;
    const source = f.queueId & RETRY_BIT ? Source.RETRY : Source.TOPIC;
    return {
      stateKey: sk,
      key: deliveryKey(source, (f.queueId & ~RETRY_BIT) >>> 0, f.offset),
      nonce: f.nonce,
    };
  });
}

/** The in-flight delivery a handle names, if the handle is still the live one. Call serialized. */
export function liveDelivery(
  ctx: ConsumeContext,
  group: string,
  topic: string,
  h: DecodedHandle,
): { s: GroupTopicState; d: Delivery } {
  const s = ctx.states.get(group, topic);
  const d = liveDeliveryIn(s, h, ctx.now());
  return { s: s!, d };
}

/** `liveDelivery` with the (group, topic)'s state looked up already (for many handles of one) at `now`. */
export function liveDeliveryIn(s: GroupTopicState | undefined, h: DecodedHandle, now: number): Delivery {
  const d = s?.deliveries.get(h.key);
  if (!s || !d || d.nonce !== h.nonce) {
    throw new VelaError('INVALID_RECEIPT_HANDLE', 'the receipt handle was acked, superseded or never issued');
  }
  if (d.state !== DeliveryState.INFLIGHT || d.deadline <= now) {
    throw new VelaError(
      'INVALID_RECEIPT_HANDLE',
      'the receipt handle has expired; the message will be delivered again',
    );
  }
  return d;
}
