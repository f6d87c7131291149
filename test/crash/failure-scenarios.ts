/** The scenarios of the failure crash test (failure-child.ts, failure-crash.test.ts). */
export const FAILURE_TOPIC = 'FailT';
export const FAILURE_GROUP = 'FailG';

export const SCENARIOS = ['expire', 'nack', 'release', 'dlq', 'forward', 'fifo-dlq'] as const;
export type Scenario = (typeof SCENARIOS)[number];

export function scenarioConfig(s: Scenario): { fifo: boolean; retryMaxTimes: number; deadLetter: boolean } {
  const deadLetter = s === 'dlq' || s === 'forward' || s === 'fifo-dlq';
  return {
    fifo: s === 'fifo-dlq',
    // One attempt in all for the dead-letter scenarios (forward dead-letters whatever the count).
    retryMaxTimes: deadLetter ? 0 : 16,
    deadLetter,
  };
}
