/**
 * Where the old generation's objects were allocated, from a sampled allocation profile (V8's
 * sampling heap profiler, `.heapprofile` JSON: `bench:compare --heap-sample DIR` writes one for Vela's
 * broker, with only the objects that outlived two young-generation collections):
 * `node --import tsx bench/compare/heap-summary.ts FILE.heapprofile [--top N]` prints the sampled
 * bytes by allocating function and by its three callers. An object a delivery keeps past two
 * scavenges (~0.1–0.2 s apart at 5,000 msgs/s) is copied twice, then fills the old generation until a
 * mark-compact stops the broker to collect it: these lists say which.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { frameName } from './profile-summary.js';

interface HeapNode {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  children?: HeapNode[];
}

export interface HeapProfile {
  head: HeapNode;
}

export interface HeapShare {
  name: string;
  bytes: number;
  /** Of all sampled bytes. */
  percent: number;
}

export interface HeapSummary {
  totalBytes: number;
  /** By the function that allocated. */
  sites: HeapShare[];
  /** By the allocating function and its three nearest callers, innermost last. */
  stacks: HeapShare[];
}

export function summarizeHeapProfile(profile: HeapProfile, top = 20): HeapSummary {
  const sites = new Map<string, number>();
  const stacks = new Map<string, number>();
  let totalBytes = 0;
  const walk = (node: HeapNode, path: string[]) => {
    const name = frameName(node.callFrame);
    const here = [...path, name];
    if (node.selfSize > 0) {
      totalBytes += node.selfSize;
      sites.set(name, (sites.get(name) ?? 0) + node.selfSize);
      const stack = here.slice(-4).join(' > ');
      stacks.set(stack, (stacks.get(stack) ?? 0) + node.selfSize);
    }
    for (const c of node.children ?? []) walk(c, here);
  };
  // The root is V8's "(root)": not a frame of anyone's stack.
  for (const c of profile.head.children ?? []) walk(c, []);
  const shares = (m: Map<string, number>): HeapShare[] =>
    [...m]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([name, bytes]) => ({ name, bytes, percent: totalBytes > 0 ? (100 * bytes) / totalBytes : 0 }));
  return { totalBytes, sites: shares(sites), stacks: shares(stacks) };
}

export function formatHeapSummary(s: HeapSummary): string {
  const line = (x: HeapShare) =>
    `${x.percent.toFixed(1).padStart(5)} %  ${(x.bytes / 1024 / 1024).toFixed(2).padStart(8)} MiB  ${x.name}`;
  return [
    `sampled ${(s.totalBytes / 1024 / 1024).toFixed(1)} MiB`,
    '',
    'by allocating function:',
    ...s.sites.map(line),
    '',
    'by allocating function and its callers (outermost first):',
    ...s.stacks.map(line),
  ].join('\n');
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const file = process.argv[2];
  if (!file) {
    console.error('usage: heap-summary.ts FILE.heapprofile [--top N]');
    process.exit(2);
  }
  const topAt = process.argv.indexOf('--top');
  const top = topAt > 0 ? Number(process.argv[topAt + 1]) : 20;
  const profile = JSON.parse(readFileSync(file, 'utf8')) as HeapProfile;
  console.log(formatHeapSummary(summarizeHeapProfile(profile, top)));
}
