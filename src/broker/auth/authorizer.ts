/**
 * The authorization decision (RocketMQ's AclAuthorizationHandler): a request names resources and the
 * actions it needs on each (any one of them suffices, as RocketMQ lists `Pub, Sub` for a route
 * query). For each resource, the entries of the user's ACL whose resource pattern, actions and source
 * IPs match are candidates; the most specific pattern decides, and among equally specific ones Deny
 * wins. No candidate means no right: denied. Super users are never checked.
 */
import { VelaError } from '../../common/errors.js';
import { inRange, parseIp, parseIpRange, type IpRange, type ParsedIp } from './ip-range.js';
import { Action, Decision, type PolicyEntry } from './model.js';
import {
  compareSpecificity,
  matchesResource,
  parseResource,
  type ResourcePattern,
  type ResourceType,
} from './resource.js';

export interface AccessRequest {
  type: ResourceType;
  name: string;
  /** Any one of these is enough. */
  actions: readonly Action[];
}

/** A policy entry parsed once for matching. */
export interface CompiledEntry {
  entry: PolicyEntry;
  pattern: ResourcePattern;
  ranges: IpRange[];
  all: boolean;
}

export function compileEntry(entry: PolicyEntry): CompiledEntry {
  return {
    entry,
    pattern: parseResource(entry.resource),
    ranges: entry.sourceIps.map(parseIpRange),
    all: entry.actions.includes(Action.ALL),
  };
}

export type Verdict = { allowed: true; entry: PolicyEntry } | { allowed: false; entry?: PolicyEntry };

/** The decision for one resource: the winning entry, or none. */
export function decide(
  entries: readonly CompiledEntry[],
  request: AccessRequest,
  sourceIp: string | ParsedIp | undefined,
): Verdict {
  let best: CompiledEntry | undefined;
  for (const c of entries) {
    if (!matchesResource(c.pattern, request.type, request.name)) continue;
    if (!c.all && !request.actions.some((a) => c.entry.actions.includes(a))) continue;
    if (c.ranges.length > 0 && !c.ranges.some((r) => inRange(r, sourceIp))) continue;
    if (!best) {
      best = c;
      continue;
    }
    const cmp = compareSpecificity(c.pattern, best.pattern);
    if (cmp > 0 || (cmp === 0 && c.entry.decision === Decision.DENY)) best = c;
  }
  if (!best) return { allowed: false };
  return best.entry.decision === Decision.ALLOW
    ? { allowed: true, entry: best.entry }
    : { allowed: false, entry: best.entry };
}

/** Throws `ACL_FORBIDDEN` naming the first resource the user may not access as asked. */
export function authorize(
  username: string,
  entries: readonly CompiledEntry[],
  requests: readonly AccessRequest[],
  sourceIp: string,
): void {
  const ip = parseIp(sourceIp);
  for (const r of requests) {
    const v = decide(entries, r, ip);
    if (v.allowed) continue;
    const why = v.entry ? `denied by ${v.entry.resource}` : 'no policy allows it';
    throw new VelaError(
      'ACL_FORBIDDEN',
      `User:${username} may not ${r.actions.join(' or ')} ${r.type}:${r.name} from ${sourceIp || 'an unknown address'} (${why})`,
    );
  }
}
