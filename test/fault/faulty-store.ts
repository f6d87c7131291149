/**
 * A message store in a temp directory with Node's fs under fault injection (node-faults.ts), its
 * timers quiet (no index flush, checkpoint or disk check unless a test asks), and its log captured.
 */
import { MessageStore, type MessageStoreOptions } from '../../src/store/index.js';
import { captureLogger, tempDir } from '../helpers.js';
import { NodeFaults } from './node-faults.js';

/** Store options that keep its periodic work out of a test's way. */
export const QUIET = {
  indexFlushIntervalMs: 3_600_000,
  checkpointIntervalMs: 3_600_000,
  diskCheckIntervalMs: 3_600_000,
};

/** Run `fn` with such a store; everything is closed, uninstalled and removed afterwards. */
export async function withFaultyStore(
  opts: Partial<MessageStoreOptions>,
  fn: (ctx: {
    store: MessageStore;
    fs: NodeFaults;
    dataDir: string;
    lines: { level: number; msg: string }[];
  }) => Promise<void>,
): Promise<void> {
  const dir = tempDir();
  const fs = await new NodeFaults(dir.path).install();
  const { logger, lines } = captureLogger();
  try {
    const store = await MessageStore.open({ dataDir: dir.path, logger, ...QUIET, ...opts });
    try {
      await fn({ store, fs, dataDir: dir.path, lines });
    } finally {
      fs.clear();
      await store.close();
    }
  } finally {
    fs.uninstall();
    dir.cleanup();
  }
}
