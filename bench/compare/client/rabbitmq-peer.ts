/**
 * RabbitMQ: a durable quorum queue, publisher confirms (one callback per message), a consumer with
 * prefetch 1,024 and one manual `basic.ack` per message (amqplib).
 */
import amqp from 'amqplib';
import { IN_FLIGHT_DELIVERIES } from './in-flight.js';
import { type OnMessage, type Peer, type Sender, type Subscription } from './peer.js';

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
