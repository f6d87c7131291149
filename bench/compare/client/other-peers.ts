/**
 * The peers Vela is compared with, each used the way its documentation recommends for durable
 * messaging with acknowledgements, with about 1,024 unacknowledged deliveries per consumer like
 * Vela's PushConsumer (`maxCachedMessages` 1,024):
 *
 * - RabbitMQ: a durable quorum queue, publisher confirms (one callback per message), a consumer with
 *   prefetch 1,024 and one manual `basic.ack` per message (amqplib).
 * - NATS JetStream: a file-backed stream, `js.publish` awaiting each PubAck, a durable pull consumer
 *   with explicit acks (`consume()` with 1,024 messages buffered, `max_ack_pending` 1,024) (nats.js).
 * - Redis Streams: XADD (auto-pipelined), XREADGROUP of up to 1,024 entries then one XACK per batch
 *   (ioredis, RESP2).
 */
import amqp from 'amqplib';
import { AckPolicy, DeliverPolicy, StorageType, connect as natsConnect, type NatsConnection } from 'nats';
import { Redis } from 'ioredis';
import { type OnMessage, type Peer, type Sender, type Subscription } from './peer.js';

const IN_FLIGHT_DELIVERIES = 1024;

export class RabbitMqPeer implements Peer {
  private readonly connections: amqp.ChannelModel[] = [];

  constructor(private readonly port: number) {}

  private async connection(): Promise<amqp.ChannelModel> {
    const c = await amqp.connect(`amqp://guest:guest@127.0.0.1:${this.port}`);
    this.connections.push(c);
    return c;
  }

  async prepare(queue: string): Promise<void> {
    const ch = await (await this.connection()).createChannel();
    await ch.assertQueue(queue, { durable: true, arguments: { 'x-queue-type': 'quorum' } });
    await ch.close();
  }

  async sender(queue: string): Promise<Sender> {
    const conn = await this.connection();
    const ch = await conn.createConfirmChannel();
    return {
      send: (body) =>
        new Promise<void>((resolve, reject) => {
          ch.publish('', queue, body, { persistent: true }, (err) => (err ? reject(err) : resolve()));
        }),
      close: async () => {
        await ch.close();
        await conn.close();
      },
    };
  }

  filler(queue: string): Promise<Sender> {
    return this.sender(queue);
  }

  async subscribe(queue: string, _group: string, onMessage: OnMessage): Promise<Subscription> {
    const conn = await this.connection();
    const ch = await conn.createChannel();
    await ch.prefetch(IN_FLIGHT_DELIVERIES);
    let redelivered = 0;
    await ch.consume(
      queue,
      (msg) => {
        if (!msg) return;
        if (msg.fields.redelivered) redelivered++;
        onMessage(msg.content);
        ch.ack(msg);
      },
      { noAck: false },
    );
    return {
      // A synchronous method on the same channel: answered after the server's channel has taken in
      // every ack sent before it (closing the channel right after the last ack lost some acks here).
      settle: async () => {
        await ch.checkQueue(queue);
      },
      close: async () => {
        await ch.checkQueue(queue);
        if (redelivered) console.error(`(rabbitmq: ${redelivered} deliveries were redeliveries)`);
        await ch.close();
        await conn.close();
      },
    };
  }

  async drained(queue: string): Promise<boolean | null> {
    const conn = await this.connection();
    const ch = await conn.createChannel();
    // Un-acked deliveries of a closed channel go back to the queue: none may be left.
    // A quorum queue applies settlements asynchronously: allow it some seconds on a busy machine.
    let left = -1;
    for (let i = 0; i < 50; i++) {
      left = (await ch.checkQueue(queue)).messageCount;
      if (left === 0) {
        await ch.close();
        return true;
      }
      await new Promise((r) => setTimeout(r, 200));
    }
    console.error(`(rabbitmq: ${left} messages still in ${queue} 10 s after the consumer closed)`);
    await ch.close();
    return false;
  }

  async close(): Promise<void> {
    for (const c of this.connections) await c.close().catch(() => {});
  }
}

export class NatsPeer implements Peer {
  private nc!: NatsConnection;

  constructor(private readonly port: number) {}

  async open(): Promise<this> {
    this.nc = await natsConnect({ servers: `127.0.0.1:${this.port}` });
    return this;
  }

  async prepare(queue: string): Promise<void> {
    const jsm = await this.nc.jetstreamManager();
    await jsm.streams.add({ name: queue, subjects: [queue], storage: StorageType.File, num_replicas: 1 });
  }

  async sender(queue: string): Promise<Sender> {
    const js = this.nc.jetstream();
    return {
      send: async (body) => {
        await js.publish(queue, body);
      },
      close: async () => {},
    };
  }

  filler(queue: string): Promise<Sender> {
    return this.sender(queue);
  }

  async subscribe(queue: string, group: string, onMessage: OnMessage): Promise<Subscription> {
    const jsm = await this.nc.jetstreamManager();
    await jsm.consumers.add(queue, {
      durable_name: group,
      ack_policy: AckPolicy.Explicit,
      deliver_policy: DeliverPolicy.All,
      max_ack_pending: IN_FLIGHT_DELIVERIES,
    });
    const consumer = await this.nc.jetstream().consumers.get(queue, group);
    const messages = await consumer.consume({ max_messages: IN_FLIGHT_DELIVERIES });
    const loop = (async () => {
      for await (const m of messages) {
        onMessage(Buffer.from(m.data.buffer, m.data.byteOffset, m.data.byteLength));
        m.ack();
      }
    })();
    return {
      settle: async () => {},
      close: async () => {
        await messages.close();
        await loop;
      },
    };
  }

  async drained(queue: string, group: string): Promise<boolean | null> {
    await this.nc.flush();
    const jsm = await this.nc.jetstreamManager();
    for (let i = 0; i < 50; i++) {
      const info = await jsm.consumers.info(queue, group);
      if (info.num_pending === 0 && info.num_ack_pending === 0) return true;
      if (i === 49) {
        console.error(
          `(nats: ${info.num_pending} pending, ${info.num_ack_pending} un-acked in ${queue} after 10 s)`,
        );
      }
      await new Promise((r) => setTimeout(r, 200));
    }
    return false;
  }

  async close(): Promise<void> {
    await this.nc.drain().catch(() => this.nc.close());
  }
}

type StreamEntries = [key: Buffer, entries: [id: Buffer, fields: Buffer[]][]][] | null;

export class RedisPeer implements Peer {
  private readonly clients: Redis[] = [];

  constructor(private readonly port: number) {}

  private client(autoPipelining: boolean): Redis {
    const r = new Redis({
      host: '127.0.0.1',
      port: this.port,
      protocol: 2,
      enableAutoPipelining: autoPipelining,
      maxRetriesPerRequest: 1,
    });
    this.clients.push(r);
    return r;
  }

  async prepare(queue: string): Promise<void> {
    const r = this.client(false);
    // MKSTREAM creates the empty stream (it needs a group for that; this one is never read).
    await r.xgroup('CREATE', queue, 'init', '$', 'MKSTREAM');
  }

  async sender(queue: string): Promise<Sender> {
    const r = this.client(true);
    return {
      send: async (body) => {
        await r.xadd(queue, '*', 'b', body);
      },
      close: async () => {},
    };
  }

  filler(queue: string): Promise<Sender> {
    return this.sender(queue);
  }

  async subscribe(queue: string, group: string, onMessage: OnMessage): Promise<Subscription> {
    const r = this.client(false);
    await r.xgroup('CREATE', queue, group, '0');
    let stopped = false;
    const acks: Promise<unknown>[] = [];
    const loop = (async () => {
      while (!stopped) {
        const res = (await r.callBuffer('XREADGROUP', [
          'GROUP',
          group,
          'c1',
          'COUNT',
          IN_FLIGHT_DELIVERIES,
          'BLOCK',
          100,
          'STREAMS',
          queue,
          '>',
        ])) as StreamEntries;
        if (!res) continue;
        const ids: Buffer[] = [];
        for (const [, entries] of res) {
          for (const [id, fields] of entries) {
            onMessage(fields[1]!);
            ids.push(id);
          }
        }
        // Sent before the next XREADGROUP on the same connection; its answer is awaited at the end.
        if (ids.length) acks.push(r.xack(queue, group, ...ids));
        if (acks.length > 64) await acks.shift();
      }
    })();
    return {
      settle: async () => {
        await Promise.all(acks);
      },
      close: async () => {
        stopped = true;
        await loop;
        await Promise.all(acks);
      },
    };
  }

  async drained(queue: string, group: string): Promise<boolean | null> {
    const r = this.client(false);
    const pending = (await r.xpending(queue, group)) as [number, ...unknown[]];
    return Number(pending[0]) === 0;
  }

  async close(): Promise<void> {
    for (const r of this.clients) r.disconnect();
  }
}
