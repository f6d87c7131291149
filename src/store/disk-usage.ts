/** Disk use of the file system holding a directory, as `df` computes it. */
import { statfs } from 'node:fs/promises';
import type { DiskUsage } from './options.js';

export async function statfsDiskUsage(dir: string): Promise<DiskUsage> {
  const s = await statfs(dir);
  const used = (s.blocks - s.bfree) * s.bsize;
  // Space reserved for root is not available to us: count it as neither used nor free, like df.
  return { totalBytes: used + s.bavail * s.bsize, usedBytes: used };
}
