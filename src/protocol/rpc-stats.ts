/**
 * `rocketmq_rpc_latency` for the gRPC endpoint: each RPC's name (RocketMQ's lower_snake_case request
 * label), the code of its response status, whether it long-polls, and how long it took. The histogram
 * for each (RPC, code) is looked up once and kept, so timing a call costs two clock reads and a bucket
 * increment.
 */
import { codeName } from '../common/codes.js';
import { requestLabel, type BrokerStats, type Histogram } from '../broker/stats.js';

/** A timer for one RPC name: `start()` when the call arrives, then `end(started, code)` once answered. */
export function rpcTimer(stats: BrokerStats, rpc: string, longPolling = false) {
  const request = requestLabel(rpc);
  const byCode = new Map<number, Histogram>();
  return {
    start: (): number => performance.now(),
    end: (started: number, code: number): void => {
      let h = byCode.get(code);
      if (!h) {
        h = stats.rpcLatency('grpc', request, codeName(code).toLowerCase(), longPolling);
        byCode.set(code, h);
      }
      h.observe(performance.now() - started);
    },
  };
}
