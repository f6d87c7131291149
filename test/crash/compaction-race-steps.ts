/** The steps of the compaction race test (compaction-race-child.ts, compaction-race.test.ts). */
export const RACE = {
  txTopic: 'RaceTx',
  txMessage: 'M-race-tx',
  topic: 'RaceT',
  group: 'RaceG',
  body: 'race body',
  user: 'raceuser',
  password: 'race-password-1',
} as const;

export const RACE_STEPS = [
  /** Commit intent (an apply-then-append record). */
  'tx-committing',
  /** A transaction's end (a commit-then-apply record), committed and rolled back. */
  'tx-commit',
  'tx-rollback',
  /** Retry-topic state: a retry written and its delivery settled; a retry handed out; a retry acked. */
  'retry-nack',
  'retry-deliver',
  'retry-ack',
  /** ACL records: a user created, an ACL entry added, an ACL deleted, a user deleted. */
  'acl-user',
  'acl-entry',
  'acl-deleted',
  'acl-user-deleted',
] as const;
export type RaceStep = (typeof RACE_STEPS)[number];

export function raceStep(name: string): RaceStep {
  if (!(RACE_STEPS as readonly string[]).includes(name)) throw new Error(`unknown step ${name}`);
  return name as RaceStep;
}
