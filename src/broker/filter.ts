/**
 * Subscription filters. TAG expressions are `*` (everything) or tags joined by `||`, as in RocketMQ.
 * The store skips non-matching records by tag hash; `matches` then checks the tag itself, so a hash
 * collision never delivers a message the subscription did not ask for.
 */
import { VelaError } from '../common/errors.js';
import { tagHash } from '../store/index.js';

export interface TagFilter {
  readonly expression: string;
  /** Null for `*`: every message matches. */
  readonly tags: ReadonlySet<string> | null;
  /** Tag hashes for the store to pre-filter with, or null for everything. */
  readonly hashes: ReadonlySet<number> | null;
  matches(tag: string): boolean;
}

export const MATCH_ALL: TagFilter = Object.freeze({
  expression: '*',
  tags: null,
  hashes: null,
  matches: () => true,
});

export function parseTagFilter(expression: string | undefined | null): TagFilter {
  const expr = (expression ?? '').trim();
  if (expr === '' || expr === '*') return MATCH_ALL;
  const tags = new Set<string>();
  for (const part of expr.split('||')) {
    const t = part.trim();
    if (t === '') continue;
    if (t === '*') return MATCH_ALL;
    // eslint-disable-next-line no-control-regex
    if (/[\u0000-\u001f|]/.test(t))
      throw new VelaError('ILLEGAL_FILTER_EXPRESSION', `bad tag "${t}" in "${expr}"`);
    tags.add(t);
  }
  if (tags.size === 0) throw new VelaError('ILLEGAL_FILTER_EXPRESSION', `"${expr}" names no tag`);
  const hashes = new Set([...tags].map((t) => tagHash(t)));
  return { expression: [...tags].join('||'), tags, hashes, matches: (tag) => tags.has(tag) };
}

export const FilterType = { TAG: 'TAG', SQL: 'SQL' } as const;
export type FilterType = (typeof FilterType)[keyof typeof FilterType];

export function parseFilter(type: FilterType, expression: string | undefined | null): TagFilter {
  if (type === 'SQL') {
    throw new VelaError(
      'ILLEGAL_FILTER_EXPRESSION',
      'SQL92 filters are not supported by this broker; use TAG expressions',
    );
  }
  return parseTagFilter(expression);
}
