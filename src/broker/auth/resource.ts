/**
 * Resource patterns of ACL entries, as RocketMQ writes them: `Topic:orders` (exact), `Topic:order-*`
 * (prefix), `Topic:*` (every topic), the same for `Group:` and `Cluster:`, and `*` (anything). When
 * several entries match a request, the most specific one decides (RocketMQ's order): exact before
 * prefix, a longer prefix before a shorter one, a typed wildcard before `*`.
 */
import { VelaError } from '../../common/errors.js';

export const ResourceType = { CLUSTER: 'Cluster', TOPIC: 'Topic', GROUP: 'Group' } as const;
export type ResourceType = (typeof ResourceType)[keyof typeof ResourceType];

export type PatternKind = 'any' | 'type' | 'prefix' | 'exact';

export interface ResourcePattern {
  /** Absent for `*`. */
  type?: ResourceType;
  kind: PatternKind;
  /** The exact name or the prefix ('' for wildcards). */
  name: string;
  /** The canonical key, e.g. `Topic:order-*`. */
  key: string;
}

/** Topic and group names (`[%|a-zA-Z0-9_-]`, ≤ 255 with a namespace), cluster names likewise. */
const NAME = /^[%|a-zA-Z0-9_.-]{1,255}$/;

const TYPES: readonly ResourceType[] = Object.values(ResourceType);

export function parseResource(raw: unknown): ResourcePattern {
  if (typeof raw !== 'string' || raw.trim() === '') {
    throw new VelaError('ILLEGAL_ACL', 'a resource is required (e.g. Topic:orders, Group:*, *)');
  }
  const key = raw.trim();
  if (key === '*') return { kind: 'any', name: '', key };
  const i = key.indexOf(':');
  const typeName = i < 0 ? key : key.slice(0, i);
  const type = TYPES.find((t) => t.toLowerCase() === typeName.toLowerCase());
  if (i < 0 || !type) {
    throw new VelaError(
      'ILLEGAL_ACL',
      `resource "${key}" must be Topic:<name>, Group:<name>, Cluster:<name> or * (a name may end with *)`,
    );
  }
  const name = key.slice(i + 1);
  if (name === '*') return { type, kind: 'type', name: '', key: `${type}:*` };
  const prefix = name.endsWith('*');
  const bare = prefix ? name.slice(0, -1) : name;
  if (!NAME.test(bare)) {
    throw new VelaError(
      'ILLEGAL_ACL',
      `resource "${key}": a name is 1-255 characters of a-z A-Z 0-9 % | _ . - (a prefix ends with *)`,
    );
  }
  return { type, kind: prefix ? 'prefix' : 'exact', name: bare, key: `${type}:${name}` };
}

export function matchesResource(p: ResourcePattern, type: ResourceType, name: string): boolean {
  switch (p.kind) {
    case 'any':
      return true;
    case 'type':
      return p.type === type;
    case 'prefix':
      return p.type === type && name.startsWith(p.name);
    case 'exact':
      return p.type === type && name === p.name;
  }
}

const RANK: Record<PatternKind, number> = { any: 0, type: 1, prefix: 2, exact: 3 };

/** > 0 when `a` is more specific than `b`, < 0 when less, 0 when equally specific. */
export function compareSpecificity(a: ResourcePattern, b: ResourcePattern): number {
  const byKind = RANK[a.kind] - RANK[b.kind];
  if (byKind !== 0) return byKind;
  return a.kind === 'prefix' ? a.name.length - b.name.length : 0;
}
