/**
 * Vela driven by its own SDK (Producer with automatic batching, PushConsumer with batched acks,
 * PullConsumer) and by the official RocketMQ Node client (rocketmq-client-nodejs: one SendMessage
 * per message, one AckMessage per message). Topics and groups are created through the admin API.
 */
import {
  Producer as OfficialProducer,
  PushConsumer as OfficialPushConsumer,
  ConsumeResult as OfficialConsumeResult,
} from 'rocketmq-client-nodejs';
import type * as VelaSdk from '../../../src/index.js';
import { velaFrom } from '../vela-from.js';
import { type OnMessage, type Peer, type Sender, type Subscription } from './peer.js';

// The SDK as its users get it (the package's compiled dist/) unless asked for the sources.
const { Admin, ConsumeResult, Producer, PullConsumer, PushConsumer } = (await import(
  velaFrom() === 'src' ? '../../../src/index.js' : '../../../dist/index.js'
)) as typeof VelaSdk;

/** The official client logs to ~/logs/rocketmq by default; keep it quiet. */
const quiet = { info: () => {}, debug: () => {}, warn: () => {}, error: () => {} };

class VelaBase {
  protected readonly endpoints: string;
  protected readonly admin: VelaSdk.Admin;

  constructor(port: number, adminPort: number) {
    this.endpoints = `127.0.0.1:${port}`;
    this.admin = new Admin({ url: `http://127.0.0.1:${adminPort}` });
  }

  async prepare(queue: string): Promise<void> {
    await this.admin.createTopic(queue, { messageType: 'NORMAL' });
  }

  protected async group(group: string): Promise<void> {
    await this.admin.createGroup(group);
  }

  async sdkSender(queue: string): Promise<Sender> {
    const producer = new Producer({ endpoints: this.endpoints, topics: [queue] });
    await producer.start();
    return {
      send: async (body) => {
        await producer.send({ topic: queue, body });
      },
      close: () => producer.close(),
    };
  }

  async drained(queue: string, group: string): Promise<boolean | null> {
    const progress = await this.admin.consumerProgress(group, queue);
    return progress.totalLag === 0 && progress.inflight === 0;
  }

  async close(): Promise<void> {}
}

export class VelaSdkPeer extends VelaBase implements Peer {
  sender(queue: string): Promise<Sender> {
    return this.sdkSender(queue);
  }

  filler(queue: string): Promise<Sender> {
    return this.sdkSender(queue);
  }

  async subscribe(queue: string, group: string, onMessage: OnMessage): Promise<Subscription> {
    await this.group(group);
    const consumer = new PushConsumer({
      endpoints: this.endpoints,
      group,
      subscriptions: { [queue]: '*' },
      listener: (m) => {
        onMessage(m.body);
        return ConsumeResult.SUCCESS;
      },
    });
    await consumer.start();
    return { settle: async () => {}, close: () => consumer.close() };
  }

  async pull(queue: string, group: string, onMessage: OnMessage): Promise<Subscription> {
    await this.group(group);
    const consumer = new PullConsumer({
      endpoints: this.endpoints,
      group,
      subscriptions: { [queue]: '*' },
      batchSize: 1024,
      autoCommitIntervalMs: 0,
      startPosition: 'BEGINNING',
    });
    await consumer.start();
    const stop = new AbortController();
    const loop = (async () => {
      for await (const m of consumer.messages({ signal: stop.signal })) onMessage(m.body);
    })();
    let settled = false;
    return {
      // Stop reading (the last message handed out counts as consumed), then commit: that is the ack.
      settle: async () => {
        settled = true;
        stop.abort();
        await loop;
        await consumer.commit();
      },
      close: async () => {
        if (!settled) stop.abort();
        await loop.catch(() => {});
        await consumer.close();
      },
    };
  }
}

export class VelaOfficialPeer extends VelaBase implements Peer {
  async sender(queue: string): Promise<Sender> {
    const producer = new OfficialProducer({
      endpoints: this.endpoints,
      namespace: '',
      topics: [queue],
      logger: quiet,
    });
    await producer.startup();
    return {
      send: async (body) => {
        await producer.send({ topic: queue, body });
      },
      close: () => producer.shutdown(),
    };
  }

  /** The official producer fails with 1,024 sends in flight (issue 12), so the SDK fills W2's backlog. */
  filler(queue: string): Promise<Sender> {
    return this.sdkSender(queue);
  }

  async subscribe(queue: string, group: string, onMessage: OnMessage): Promise<Subscription> {
    await this.group(group);
    const consumer = new OfficialPushConsumer({
      endpoints: this.endpoints,
      namespace: '',
      consumerGroup: group,
      subscriptions: new Map([[queue, '*']]),
      logger: quiet,
      messageListener: {
        consume: async (m) => {
          onMessage(m.body);
          return OfficialConsumeResult.SUCCESS;
        },
      },
    });
    await consumer.startup();
    return {
      settle: async () => {},
      close: () => consumer.shutdown(),
    };
  }
}
