/**
 * What makes a Remoting send special: a delivery time (RocketMQ's delay levels, `DELAY`, and the 5.x
 * timer properties `TIMER_DELAY_SEC`, `TIMER_DELAY_MS`, `TIMER_DELIVER_MS`) or a transaction
 * (`TRAN_MSG=true`, sysFlag TRANSACTION_PREPARED). Both go to the broker's own timer and transaction
 * services, as gRPC sends do; this module only reads RocketMQ's properties the way its broker does
 * (`HookUtils.handleScheduleMessage`, `transformTimerMessage`, `transformDelayLevelMessage`):
 *
 * - A delay level above the highest (18, 2 h) is clamped to it; 0 or below means no delay. A message
 *   with a level ignores its timer properties.
 * - Timer properties: `TIMER_DELAY_SEC` first, then `TIMER_DELAY_MS` (both from now), then the
 *   absolute `TIMER_DELIVER_MS`. One that is not a number is refused (`MESSAGE_ILLEGAL`); a time that
 *   is not in the future means "deliver now". The longest delay is the broker's `timer.maxDelayMs`.
 */
import { VelaError } from '../common/errors.js';
import { DELAY_LEVELS_MS, MAX_DELAY_LEVEL } from '../broker/send-back.js';
import { Prop, RmqSysFlag } from './message-codec.js';

export const TimerProp = {
  DELAY_SEC: 'TIMER_DELAY_SEC',
  DELAY_MS: 'TIMER_DELAY_MS',
  DELIVER_MS: 'TIMER_DELIVER_MS',
} as const;

/** Properties the sending client sets for the broker, not for consumers: never stored as user properties. */
export const SEND_CONTROL_PROPERTIES: ReadonlySet<string> = new Set([
  Prop.DELAY,
  TimerProp.DELAY_SEC,
  TimerProp.DELAY_MS,
  TimerProp.DELIVER_MS,
  Prop.TRAN_MSG,
  Prop.PRODUCER_GROUP,
  Prop.CHECK_IMMUNITY_TIME,
]);

/** The delay level a message asks for (clamped to 18), or 0 for none. */
export function delayLevelOf(properties: Readonly<Record<string, string>>): number {
  const v = properties[Prop.DELAY];
  if (v === undefined || v === '') return 0;
  const level = Number(v);
  if (!Number.isInteger(level))
    throw new VelaError('MESSAGE_CORRUPTED', `the delay level "${v}" is not an integer`);
  return level <= 0 ? 0 : Math.min(level, MAX_DELAY_LEVEL);
}

function integerProperty(properties: Readonly<Record<string, string>>, key: string): number {
  const v = properties[key]!;
  const n = Number(v);
  if (v.trim() === '' || !Number.isSafeInteger(n)) {
    throw new VelaError('ILLEGAL_DELIVERY_TIME', `the ${key} property is not an integer: "${v}"`);
  }
  return n;
}

/**
 * When the message is to be delivered, or undefined for "now": from its delay level, else from its
 * timer properties.
 */
export function deliveryTimeOf(
  properties: Readonly<Record<string, string>>,
  now: number,
): number | undefined {
  const level = delayLevelOf(properties);
  let due: number | undefined;
  if (level > 0) due = now + DELAY_LEVELS_MS[level - 1]!;
  else if (properties[TimerProp.DELAY_SEC] !== undefined)
    due = now + integerProperty(properties, TimerProp.DELAY_SEC) * 1000;
  else if (properties[TimerProp.DELAY_MS] !== undefined)
    due = now + integerProperty(properties, TimerProp.DELAY_MS);
  else if (properties[TimerProp.DELIVER_MS] !== undefined)
    due = integerProperty(properties, TimerProp.DELIVER_MS);
  return due !== undefined && due > now ? due : undefined;
}

/** Whether a send is the first half of a transaction (a prepared message). */
export function isTransactionPrepared(
  properties: Readonly<Record<string, string>>,
  sysFlag: number,
): boolean {
  return (
    properties[Prop.TRAN_MSG] === 'true' ||
    (sysFlag & RmqSysFlag.TRANSACTION_MASK) === RmqSysFlag.TRANSACTION_PREPARED
  );
}

/** The check delay a transactional message asks for (`CHECK_IMMUNITY_TIME_IN_SECONDS`), in ms. */
export function checkImmunityMsOf(properties: Readonly<Record<string, string>>): number | undefined {
  const s = Number(properties[Prop.CHECK_IMMUNITY_TIME] ?? '');
  return Number.isFinite(s) && s > 0 ? s * 1000 : undefined;
}

/**
 * The key under which a Remoting producer group's connections take orphaned-transaction checks: as
 * in RocketMQ, any live producer of the group that sent the half message may be asked.
 */
export function remotingProducerKey(group: string): string {
  return `%REMOTING_PRODUCER%${group}`;
}
