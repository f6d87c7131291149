/**
 * What both Vela rows share: topics and groups created through the admin API, and Vela's SDK Producer
 * (automatic batching) as the sender (the official-client row fills W2's backlog with it too). The SDK
 * is the package's compiled dist/ (as its users get it) unless asked for the sources.
 */
import type * as VelaSdk from '../../../src/index.js';
import { velaFrom } from '../vela-from.js';
import type { Sender } from './peer.js';

export const sdk = (await import(
  velaFrom() === 'src' ? '../../../src/index.js' : '../../../dist/index.js'
)) as typeof VelaSdk;
const { Admin, Producer } = sdk;

export class VelaBase {
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
