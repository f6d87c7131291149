/**
 * NATS JetStream: a file-backed stream, `js.publish` awaiting each PubAck, a durable pull consumer
 * with explicit acks (`consume()` with 1,024 messages buffered, `max_ack_pending` 1,024) (nats.js).
 */
import { AckPolicy, DeliverPolicy, StorageType, connect as natsConnect, type NatsConnection } from 'nats';
import { IN_FLIGHT_DELIVERIES } from './in-flight.js';
import { type OnMessage, type Peer, type Sender, type Subscription } from './peer.js';

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
