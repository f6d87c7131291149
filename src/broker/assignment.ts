/**
 * Queue-granularity load balancing: RocketMQ's AllocateMessageQueueAveragely. Queues and consumers
 * are sorted; consumer i of n gets a contiguous run of queues, the first (queues mod n) consumers one
 * more than the rest. Every consumer computes the same answer, so each queue has exactly one owner.
 */
export function allocateAveragely(
  queueIds: readonly number[],
  clientIds: readonly string[],
  me: string,
): number[] {
  const queues = [...queueIds].sort((a, b) => a - b);
  const clients = [...clientIds].sort();
  const index = clients.indexOf(me);
  if (index < 0 || queues.length === 0) return [];
  const n = clients.length;
  const mod = queues.length % n;
  const averageSize =
    queues.length <= n
      ? 1
      : mod > 0 && index < mod
        ? Math.floor(queues.length / n) + 1
        : Math.floor(queues.length / n);
  const startIndex = mod > 0 && index < mod ? index * averageSize : index * averageSize + mod;
  const range = Math.min(averageSize, queues.length - startIndex);
  const out: number[] = [];
  for (let i = 0; i < range; i++) out.push(queues[(startIndex + i) % queues.length]!);
  return out;
}
