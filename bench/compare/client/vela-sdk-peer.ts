/** Vela driven by its own SDK: Producer with automatic batching, PushConsumer with batched acks, PullConsumer. */
import { type OnMessage, type Peer, type Sender, type Subscription } from './peer.js';
import { sdk, VelaBase } from './vela-base.js';

const { ConsumeResult, PullConsumer, PushConsumer } = sdk;

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
