/**
 * What a request processor gets: the broker, the connection the request came on, the endpoint's
 * advertised address (routes point at it; offset message ids embed it) and the typed header.
 */
import type { Broker } from '../broker/broker.js';
import type { Logger } from '../common/logger.js';
import type { RemotingConnection } from './connection.js';
import type { RemotingCommand } from './frame.js';
import type { Header } from './header.js';
import type { HostAddress } from './message-codec.js';

export interface EndpointInfo {
  /** `host:port` clients dial: the broker address in every route. */
  readonly address: string;
  readonly host: HostAddress;
  readonly clusterName: string;
  readonly autoCreateTopics: boolean;
  /** Tell every client of a group to rebalance now (NOTIFY_CONSUMER_IDS_CHANGED). */
  notifyConsumerIdsChanged(group: string): void;
  /** The opaque of the next request the broker sends a client. */
  nextOpaque(): number;
  /** The open connection with this id (a consumer's or producer's registered channel). */
  connection(channel: string): RemotingConnection | undefined;
  /** How long the broker waits for a client to answer its request (RocketMQ: 10 s). */
  readonly callClientTimeoutMs: number;
}

export interface RequestContext {
  readonly broker: Broker;
  readonly conn: RemotingConnection;
  readonly endpoint: EndpointInfo;
  readonly logger: Logger;
  readonly cmd: RemotingCommand;
  readonly header: Header;
}

/** What a processor answers; the endpoint adds opaque, flag and version. */
export interface Reply {
  /** @defaultValue SUCCESS */
  code?: number;
  remark?: string;
  extFields?: Record<string, string | number | boolean | undefined>;
  body?: Buffer;
}

export type Processor = (ctx: RequestContext) => Promise<Reply> | Reply;
