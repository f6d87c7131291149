/**
 * `rocketmq_rpc_latency` for the gRPC endpoint: each RPC's name (RocketMQ's lower_snake_case request
 * label), the code of its response status, whether it long-polls, and how long it took. Labels are
 * computed once per RPC name and code, so timing a call costs two clock reads and a counter update.
 */
import { codeName } from '../common/codes.js';
import { requestLabel, type BrokerStats } from '../broker/stats.js';

const codeLabels = new Map<number, string>();
const codeLabel = (code: number): string => {
  let l = codeLabels.get(code);
  if (l === undefined) codeLabels.set(code, (l = codeName(code).toLowerCase()));
  return l;
};

/** A timer for one RPC name: `start()` when the call arrives, then `end(code)` once answered. */
export function rpcTimer(stats: BrokerStats, rpc: string, longPolling = false) {
  const request = requestLabel(rpc);
  return {
    start: (): number => performance.now(),
    end: (started: number, code: number): void =>
      stats.served('grpc', request, codeLabel(code), longPolling, performance.now() - started),
  };
}
