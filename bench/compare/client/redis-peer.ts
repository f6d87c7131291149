/**
 * Redis Streams: XADD (auto-pipelined), XREADGROUP of up to 1,024 entries then one XACK per batch
 * (ioredis, RESP2).
 */
import { Redis } from 'ioredis';
import { IN_FLIGHT_DELIVERIES } from './in-flight.js';
import { type OnMessage, type Peer, type Sender, type Subscription } from './peer.js';

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
