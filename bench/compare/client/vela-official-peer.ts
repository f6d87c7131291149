/**
 * Vela driven by the official RocketMQ Node client (rocketmq-client-nodejs: one SendMessage per
 * message, one AckMessage per message).
 */
import {
  Producer as OfficialProducer,
  PushConsumer as OfficialPushConsumer,
  ConsumeResult as OfficialConsumeResult,
} from 'rocketmq-client-nodejs';
import { type OnMessage, type Peer, type Sender, type Subscription } from './peer.js';
import { VelaBase } from './vela-base.js';

/** The official client logs to ~/logs/rocketmq by default; keep it quiet. */
const quiet = { info: () => {}, debug: () => {}, warn: () => {}, error: () => {} };

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
