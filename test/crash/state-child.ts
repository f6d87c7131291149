/**
 * Child process for the state-journal crash test. It runs the broker's own state participants (topic
 * and group registries, committed offsets) on a `StateJournal` exactly as `Broker.open` wires them,
 * plus a participant that applies its changes to memory before appending them (as the consumption
 * state does), with a tiny compaction threshold so that snapshots are taken all the time, in the
 * middle of everything. It prints each change once the broker API has acknowledged it (a line may
 * still be in the child's stdout buffer when it is killed: the parent may miss the last ones, never
 * see one that was not acknowledged):
 *
 *   A topic <name> <n>      updateTopic answered (attribute n=<n>)
 *   A group <name> <v>      updateSubGroup answered (fifoRetryIntervalMs=<v>, one more than before)
 *   A off <group> <q> <n>   offset commit answered
 *   A cnt <n>               an apply-then-append change answered
 *
 * usage: state-child.ts <dir> <round>
 */
import { StateJournal, type StateParticipant, type StateRecord } from '../../src/broker/state-journal.js';
import { TopicRegistry } from '../../src/broker/topic-registry.js';
import { GroupRegistry } from '../../src/broker/group-registry.js';
import { OffsetStore } from '../../src/broker/offsets.js';
import { silentLogger } from '../../src/common/logger.js';

/**
 * Applies each change to memory, then journals it (the consumption state's order). The journal
 * carries only the broker's typed records: a counter travels as a `txChecked` record (the
 * transactions' kind, which nothing else in this journal applies), its number as the offset.
 */
export class Counters implements StateParticipant {
  readonly stateKey = 'counters';
  readonly seen = new Set<number>();
  journal!: StateJournal;
  async add(n: number): Promise<void> {
    this.seen.add(n);
    await this.journal.append({ kind: 'txChecked', offset: n, checks: 1, at: 0 });
  }
  apply(rec: StateRecord): boolean {
    if (rec.kind !== 'txChecked') return false;
    this.seen.add(rec.offset);
    return true;
  }
  snapshot(): unknown {
    return [...this.seen];
  }
  restore(data: unknown): void {
    this.seen.clear();
    for (const n of data as number[]) this.seen.add(n);
  }
}

export async function openState(dir: string, compactBytes: number) {
  const topics = new TopicRegistry(false);
  const groups = new GroupRegistry();
  const offsets = new OffsetStore(() => Date.now());
  const counters = new Counters();
  const journal = await StateJournal.open({ dir, flush: 'sync', logger: silentLogger(), compactBytes }, [
    topics,
    groups,
    offsets,
    counters,
  ]);
  topics.journal = groups.journal = offsets.journal = counters.journal = journal;
  return { journal, topics, groups, offsets, counters };
}

if (process.argv[1]?.endsWith('state-child.ts')) {
  const [dir, round] = process.argv.slice(2) as [string, string];
  const s = await openState(dir, 2048);
  const out = (line: string) => process.stdout.write(line + '\n');
  // Values grow across rounds, so a later commit is always a larger number.
  let seq = Number(round) * 1_000_000;
  const writer = async (w: number): Promise<void> => {
    for (;;) {
      const n = seq++;
      switch (n % 4) {
        case 0: {
          const name = `T${round}_${n}`;
          await s.topics.upsert(name, { attributes: { n: String(n) } });
          out(`A topic ${name} ${n}`);
          break;
        }
        case 1: {
          // Each writer updates its own group, one change at a time: version v, then v + 1 …
          const name = `G${w}`;
          const v = (s.groups.get(name)?.fifoRetryIntervalMs ?? 0) + 1;
          await s.groups.upsert(name, { fifoRetryIntervalMs: v });
          out(`A group ${name} ${v}`);
          break;
        }
        case 2:
          await s.offsets.commit(`G${w}`, 'Topic', w, n);
          out(`A off G${w} ${w} ${n}`);
          break;
        default:
          await s.counters.add(n);
          out(`A cnt ${n}`);
      }
    }
  };
  await Promise.all(Array.from({ length: 8 }, (_, w) => writer(w)));
}
