/**
 * Producing: SEND_MESSAGE, SEND_MESSAGE_V2 (single-letter header keys), SEND_BATCH_MESSAGE, and
 * CONSUMER_SEND_MSG_BACK (a consumer's failed message into its group's retry topic or DLQ).
 *
 * A Remoting producer chooses the queue itself (ordered sends use a selector), so the queue it names
 * is kept. The message id is the producer's `UNIQ_KEY`; the answer's `msgId` is RocketMQ's offset
 * message id (this endpoint's address + the message's log position). Compressed bodies are stored
 * inflated, so consumers of either protocol get them plain.
 */
import { randomBytes } from 'node:crypto';
import { VelaError } from '../../common/errors.js';
import type { ProduceMessage, SendReceipt } from '../../broker/produce.js';
import type { BrokerMessage } from '../../broker/message.js';
import { groupOfRetryTopic } from '../../broker/send-back.js';
import { ResponseCode } from '../codes.js';
import type { Reply, RequestContext } from '../context.js';
import { Header } from '../header.js';
import {
  checkImmunityMsOf,
  deliveryTimeOf,
  isTransactionPrepared,
  remotingProducerKey,
  SEND_CONTROL_PROPERTIES,
} from '../special-sends.js';
import { decodeBatch, decodeProperties, offsetMessageId, Prop, type BatchEntry } from '../message-codec.js';
import { decompressBody } from '../compression.js';
import { AUTO_CREATE_TOPIC } from './route.js';
import { takeTransactionChecks } from './transaction.js';

/** SEND_MESSAGE_V2's single-letter keys → SendMessageRequestHeader's names. */
const V2_KEYS: Record<string, string> = {
  a: 'producerGroup',
  b: 'topic',
  c: 'defaultTopic',
  d: 'defaultTopicQueueNums',
  e: 'queueId',
  f: 'sysFlag',
  g: 'bornTimestamp',
  h: 'flag',
  i: 'properties',
  j: 'reconsumeTimes',
  k: 'unitMode',
  l: 'maxReconsumeTimes',
  m: 'batch',
  n: 'brokerName',
};

function sendHeader(ctx: RequestContext, v2: boolean): Header {
  if (!v2) return ctx.header;
  const ext: Record<string, string> = {};
  for (const [k, v] of Object.entries(ctx.cmd.extFields)) ext[V2_KEYS[k] ?? k] = v;
  return new Header(ext);
}

/** Properties that live in fields of their own, or only matter to the send itself. */
const FIELD_PROPERTIES = new Set<string>([Prop.UNIQ_KEY, Prop.TAGS, Prop.KEYS, Prop.WAIT, Prop.SHARDING_KEY]);

/** A UNIQ_KEY-shaped id for messages that arrive without one (32 hex characters). */
function newUniqKey(): string {
  return randomBytes(16).toString('hex').toUpperCase();
}

/**
 * What a send's header adds to each message. Callers pass every field (absent ones `undefined`) in
 * one literal: a literal that starts with a conditional spread gives each object a V8 map of its own,
 * and every read of it then misses its inline cache (4 misses per message, found with `--log-ic`).
 */
interface SendExtra {
  queueId?: number;
  bornTimestamp?: number;
  /** The header's sysFlag (TRANSACTION_PREPARED marks a half message). */
  sysFlag?: number;
  /** The header's producer group: whose producers resolve an orphaned transaction. */
  producerGroup?: string;
  /** The message's `flag` (kept and delivered to Remoting consumers). */
  flag?: number;
}

function toProduceMessage(
  ctx: RequestContext,
  topic: string,
  body: Buffer,
  properties: Record<string, string>,
  extra: SendExtra,
): ProduceMessage {
  const due = deliveryTimeOf(properties, ctx.broker.clock.now());
  const transaction = isTransactionPrepared(properties, extra.sysFlag ?? 0);
  if (transaction && due !== undefined) {
    throw new VelaError(
      'MESSAGE_CORRUPTED',
      'a transactional message cannot also carry a delay or delivery time',
    );
  }
  const user: Record<string, string> = {};
  for (const k in properties) {
    if (!FIELD_PROPERTIES.has(k) && !SEND_CONTROL_PROPERTIES.has(k)) user[k] = properties[k]!;
  }
  const keys = (properties[Prop.KEYS] ?? '').split(' ').filter((k) => k !== '');
  let special: Partial<ProduceMessage> = {};
  if (due !== undefined) special = { deliveryTimestamp: due, messageType: 'DELAY' };
  else if (transaction) {
    const group = extra.producerGroup ?? properties[Prop.PRODUCER_GROUP] ?? '';
    // The connection that sends a half message is a live producer of its group: it takes the
    // group's checks from now on, even if its first heartbeat has not reached this broker yet
    // (the Java client heartbeats a broker only once it has a route to it, then every 30 s).
    if (group) takeTransactionChecks(ctx, group);
    const recoveryMs = checkImmunityMsOf(properties);
    special = {
      messageType: 'TRANSACTION',
      ...(group ? { producerClientId: remotingProducerKey(group) } : {}),
      ...(recoveryMs !== undefined ? { transactionRecoveryMs: recoveryMs } : {}),
    };
  }
  return {
    topic,
    messageId: properties[Prop.UNIQ_KEY] || newUniqKey(),
    body,
    ...(properties[Prop.TAGS] ? { tag: properties[Prop.TAGS] } : {}),
    ...(keys.length ? { keys } : {}),
    ...(properties[Prop.SHARDING_KEY] ? { messageGroup: properties[Prop.SHARDING_KEY] } : {}),
    properties: user,
    ...(extra.bornTimestamp ? { bornTimestamp: extra.bornTimestamp } : {}),
    bornHost: ctx.conn.remoteAddress,
    ...(extra.queueId !== undefined && extra.queueId >= 0 ? { queueId: extra.queueId } : {}),
    ...(extra.flag ? { flag: extra.flag } : {}),
    ...special,
    checkType: false,
  };
}

/** Create the topic on a send naming the auto-create template, when auto-creation is on. */
async function ensureTopic(ctx: RequestContext, topic: string, h: Header): Promise<void> {
  const b = ctx.broker;
  if (b.topics.get(topic) || !ctx.endpoint.autoCreateTopics || h.optStr('defaultTopic') !== AUTO_CREATE_TOPIC)
    return;
  const n = Math.min(Math.max(h.optInt('defaultTopicQueueNums') ?? 4, 1), 8);
  await b.topics.upsert(topic, { readQueueNums: n, writeQueueNums: n });
}

function receiptReply(ctx: RequestContext, receipts: SendReceipt[]): Reply {
  const ids = receipts.map((r) => offsetMessageId(ctx.endpoint.host, r.logPosition ?? 0));
  const first = receipts[0]!;
  return {
    extFields: {
      msgId: ids.join(','),
      queueId: first.queueId,
      queueOffset: first.queueOffset,
      ...(first.transactionId ? { transactionId: first.transactionId } : {}),
      MSG_REGION: 'DefaultRegion',
      TRACE_ON: 'true',
    },
  };
}

/** Store the messages, all or none (a batch with one invalid message is refused whole, as RocketMQ does). */
async function produce(ctx: RequestContext, messages: ProduceMessage[]): Promise<Reply> {
  const results = await ctx.broker.produce.send(messages, { allOrNone: true });
  const failed = results.find((r): r is VelaError => r instanceof VelaError);
  if (failed) throw failed;
  return receiptReply(ctx, results as SendReceipt[]);
}

export function sendMessage(v2: boolean) {
  return async (ctx: RequestContext): Promise<Reply> => {
    const h = sendHeader(ctx, v2);
    if (h.optBool('batch')) return sendBatch(ctx, h);
    const topic = h.str('topic');
    const properties = decodeProperties(h.optStr('properties') ?? '');
    const maxBody = ctx.broker.config.produce.maxBodySize;
    const body = decompressBody(ctx.cmd.body ?? Buffer.alloc(0), h.optInt('sysFlag') ?? 0, maxBody);
    const group = groupOfRetryTopic(topic);
    if (group !== undefined) return sendRetry(ctx, h, group, body, properties);
    await ensureTopic(ctx, topic, h);
    const queueId = h.optInt('queueId');
    const bornTimestamp = h.optInt('bornTimestamp');
    const producerGroup = h.optStr('producerGroup');
    const flag = h.optInt('flag');
    return produce(ctx, [
      toProduceMessage(ctx, topic, body, properties, {
        queueId,
        bornTimestamp,
        sysFlag: h.optInt('sysFlag') ?? 0,
        producerGroup: producerGroup || undefined,
        flag: flag || undefined,
      }),
    ]);
  };
}

export async function sendBatchMessage(ctx: RequestContext): Promise<Reply> {
  return sendBatch(ctx, sendHeader(ctx, true));
}

async function sendBatch(ctx: RequestContext, h: Header): Promise<Reply> {
  const topic = h.str('topic');
  if (groupOfRetryTopic(topic) !== undefined) {
    throw new VelaError('MESSAGE_CORRUPTED', 'batches cannot be sent to a retry topic');
  }
  await ensureTopic(ctx, topic, h);
  const entries: BatchEntry[] = decodeBatch(ctx.cmd.body ?? Buffer.alloc(0));
  const queueId = h.optInt('queueId');
  const bornTimestamp = h.optInt('bornTimestamp');
  return produce(
    ctx,
    entries.map((e) =>
      toProduceMessage(ctx, topic, e.body, e.properties, {
        queueId,
        bornTimestamp,
        sysFlag: undefined,
        producerGroup: undefined,
        flag: e.flag || undefined,
      }),
    ),
  );
}

/**
 * A message a consumer sends to its retry topic itself (the 4.x client does when its send-back
 * failed): stored as that retry, at the delay level it carries, or as a dead letter when out of tries.
 */
async function sendRetry(
  ctx: RequestContext,
  h: Header,
  group: string,
  body: Buffer,
  properties: Record<string, string>,
): Promise<Reply> {
  const b = ctx.broker;
  const config = await b.consume.requireGroup(group);
  const reconsumeTimes = h.optInt('reconsumeTimes') ?? Number(properties[Prop.RECONSUME_TIME] ?? 1);
  const {
    [Prop.DELAY]: delay,
    [Prop.RECONSUME_TIME]: _r,
    [Prop.MAX_RECONSUME_TIMES]: _m,
    ...kept
  } = properties;
  const pm = toProduceMessage(ctx, properties[Prop.RETRY_TOPIC] ?? `%RETRY%${group}`, body, kept, {});
  const now = b.clock.now();
  const message: BrokerMessage = {
    topic: pm.topic,
    queueId: 0,
    queueOffset: 0,
    messageId: pm.messageId,
    body,
    tag: pm.tag ?? '',
    keys: pm.keys ?? [],
    messageGroup: pm.messageGroup ?? '',
    properties: pm.properties ?? {},
    bornTimestamp: h.optInt('bornTimestamp') ?? now,
    bornHost: ctx.conn.remoteAddress,
    storeTimestamp: now,
    deliveryTimestamp: 0,
    reconsumeTimes: Math.max(0, reconsumeTimes - 1),
    sysFlag: 0,
    logPosition: 0,
    size: 0,
  };
  const max = h.optInt('maxReconsumeTimes');
  const r = await b.sendBack.sendBack(
    {
      message,
      group,
      delayLevel: Number(delay ?? 0) || 0,
      ...(max !== undefined ? { maxReconsumeTimes: max } : {}),
    },
    config,
  );
  return {
    extFields: {
      msgId: message.messageId,
      queueId: r.queueId,
      queueOffset: r.queueOffset,
      MSG_REGION: 'DefaultRegion',
      TRACE_ON: 'true',
    },
  };
}

export async function consumerSendMsgBack(ctx: RequestContext): Promise<Reply> {
  const h = ctx.header;
  const b = ctx.broker;
  const group = await b.consume.requireGroup(h.str('group'));
  const offset = h.int('offset');
  const message = await b.messageAt(offset);
  if (!message)
    return { code: ResponseCode.SYSTEM_ERROR, remark: `look message by offset failed, ${offset}` };
  const max = h.optInt('maxReconsumeTimes');
  const originMessageId = h.optStr('originMsgId');
  await b.sendBack.sendBack(
    {
      message,
      group: group.name,
      delayLevel: h.optInt('delayLevel') ?? 0,
      ...(originMessageId ? { originMessageId } : {}),
      ...(max !== undefined ? { maxReconsumeTimes: max } : {}),
    },
    group,
  );
  return {};
}
