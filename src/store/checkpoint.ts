/**
 * The recovery checkpoint: "every record below `logPosition` is indexed, and those index entries are
 * fsynced". Recovery re-reads only the log past it, so start-up time grows with the unflushed tail,
 * not with the log. Written atomically (see atomic-file.ts).
 */
import { join } from 'node:path';
import { readFileIfExists, writeFileAtomic } from './atomic-file.js';
import type { StoreFs } from './store-fs.js';

export interface Checkpoint {
  version: 1;
  logPosition: number;
  /** True when written by a clean shutdown. */
  clean: boolean;
  /** Readable entries per queue at `logPosition`: [topic, queueId, count]. */
  queues: [string, number, number][];
  /** Entries per key-index file (by segment base) at `logPosition`. */
  keys: Record<string, number>;
  /** Newest store time per segment base. */
  segments: Record<string, number>;
  /** Deleted topics: their records below this log position are dead (never indexed again). */
  deleted?: Record<string, number>;
  writtenAt: number;
}

const FILE = 'checkpoint.json';

export async function readCheckpoint(dataDir: string, sfs?: StoreFs): Promise<Checkpoint | null> {
  const raw = await readFileIfExists(join(dataDir, FILE), sfs);
  if (!raw) return null;
  try {
    const c = JSON.parse(raw.toString('utf8')) as Checkpoint;
    return c.version === 1 && Number.isFinite(c.logPosition) ? c : null;
  } catch {
    return null;
  }
}

export async function writeCheckpoint(dataDir: string, c: Checkpoint, sfs?: StoreFs): Promise<void> {
  await writeFileAtomic(join(dataDir, FILE), JSON.stringify(c), sfs);
}
