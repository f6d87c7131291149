/**
 * `rocketmq_rpc_latency` for the Remoting endpoint (`protocol_type="remoting"`), as RocketMQ's
 * `RemotingMetricsManager` labels it: the request code's name in lower case (`pull_message`), the
 * response code's (`success`, `pull_not_found` …), and whether the request long-polls (a pull with
 * the suspend flag). Only served request codes are counted, so a client sending random codes cannot
 * grow the label set. Each histogram is looked up once and kept.
 */
import type { BrokerStats, Histogram } from '../broker/stats.js';
import { requestCodeName, RequestCode, ResponseCode } from './codes.js';
import type { RemotingCommand } from './frame.js';

/** PullSysFlag's suspend bit: the pull may be held until a message arrives. */
const SUSPEND = 0x2;

const RESPONSE_NAMES = new Map<number, string>(
  Object.entries(ResponseCode).map(([name, code]) => [code, name.toLowerCase()]),
);

export function isLongPolling(cmd: RemotingCommand): boolean {
  if (cmd.code !== RequestCode.PULL_MESSAGE && cmd.code !== RequestCode.LITE_PULL_MESSAGE) return false;
  return (Number(cmd.extFields.sysFlag ?? 0) & SUSPEND) !== 0;
}

export class RemotingRpcStats {
  private readonly byKey = new Map<number, Histogram>();

  constructor(private readonly stats: BrokerStats) {}

  /** Record one served request: its code, the response code it got and how long it took. */
  observe(requestCode: number, responseCode: number, longPolling: boolean, ms: number): void {
    // request codes < 2^20, response codes < 2^16 in practice; one number keys the three labels.
    const key = (requestCode * 65_536 + (responseCode & 0xffff)) * 2 + (longPolling ? 1 : 0);
    let h = this.byKey.get(key);
    if (!h) {
      h = this.stats.rpcLatency(
        'remoting',
        requestCodeName(requestCode).toLowerCase(),
        RESPONSE_NAMES.get(responseCode) ?? `code_${responseCode}`,
        longPolling,
      );
      this.byKey.set(key, h);
    }
    h.observe(ms);
  }
}
