/** Overview: the broker, live throughput, storage and retention, flow control. */
import { useRef } from 'preact/hooks';
import { api, type Overview } from '../api.js';
import { usePoll } from '../hooks.js';
import { LineChart } from '../chart.js';
import { Panel, Stat, ErrorNote } from '../widgets.js';
import { bytes, duration, num, percent, time } from '../format.js';

const WINDOW = 120;

interface Rates {
  at: number;
  msgIn: number[];
  msgOut: number[];
  bytesIn: number[];
  bytesOut: number[];
}

export function OverviewPage() {
  const last = useRef<Overview | null>(null);
  const rates = useRef<Rates>({ at: 0, msgIn: [], msgOut: [], bytesIn: [], bytesOut: [] });
  const { data, error } = usePoll(async () => {
    const o = await api.get<Overview>('/api/overview');
    const prev = last.current;
    if (prev && o.now > prev.now) {
      const dt = (o.now - prev.now) / 1000;
      const r = rates.current;
      const push = (arr: number[], v: number) => {
        arr.push(Math.max(0, v / dt));
        if (arr.length > WINDOW) arr.shift();
      };
      push(r.msgIn, o.totals.messagesIn - prev.totals.messagesIn);
      push(r.msgOut, o.totals.messagesOut - prev.totals.messagesOut);
      push(r.bytesIn, o.totals.bytesIn - prev.totals.bytesIn);
      push(r.bytesOut, o.totals.bytesOut - prev.totals.bytesOut);
    }
    last.current = o;
    return o;
  }, 1000);
  const r = rates.current;
  return (
    <div>
      <ErrorNote error={error} />
      {data ? (
        <>
          <div class="stats" data-testid="overview-stats">
            <Stat label="Broker" value={data.brokerName} hint={`cluster ${data.clusterName}`} />
            <Stat label="Version" value={data.version} />
            <Stat label="Uptime" value={duration(data.uptimeMs)} hint={`since ${time(data.startedAt)}`} />
            <Stat label="Topics" value={num(data.topics)} />
            <Stat label="Consumer groups" value={num(data.groups)} />
            <Stat label="Connected clients" value={num(data.clients)} />
          </div>
          <div class="grid2">
            <Panel title="Messages per second">
              <LineChart
                label="messages per second in and out"
                unit="msg/s"
                series={[
                  { name: 'in', color: '#2f7ed8', values: r.msgIn },
                  { name: 'out', color: '#2a9d5c', values: r.msgOut },
                ]}
              />
            </Panel>
            <Panel title="Bytes per second">
              <LineChart
                label="bytes per second in and out"
                unit="B/s"
                series={[
                  { name: 'in', color: '#2f7ed8', values: r.bytesIn },
                  { name: 'out', color: '#2a9d5c', values: r.bytesOut },
                ]}
              />
            </Panel>
          </div>
          <div class="grid2">
            <Panel title="Storage and retention">
              <div class="stats">
                <Stat
                  label="Commit log"
                  value={bytes(data.storage.logBytes)}
                  hint={`${data.storage.segments} segments`}
                />
                <Stat
                  label="Disk used"
                  value={percent(data.storage.diskUsedRatio)}
                  warn={data.storage.diskUsedRatio >= data.storage.diskCleanupRatio}
                  hint={`cleanup from ${percent(data.storage.diskCleanupRatio)}, writes refused from ${percent(data.storage.diskRefuseRatio)}`}
                />
                <Stat
                  label="Oldest message"
                  value={
                    data.storage.oldestStoreTimestamp
                      ? duration(data.now - data.storage.oldestStoreTimestamp)
                      : '—'
                  }
                  hint={time(data.storage.oldestStoreTimestamp)}
                />
                <Stat label="Retention" value={duration(data.storage.retentionMs)} />
                <Stat label="Flush" value={data.storage.flush} />
                <Stat label="Queues" value={num(data.storage.queues)} />
              </div>
            </Panel>
            <Panel title="Flow control">
              <div class="stats">
                <Stat
                  label="Writes"
                  value={data.flowControl.refusingWrites ? 'refused (disk)' : 'accepted'}
                  warn={data.flowControl.refusingWrites}
                />
                <Stat
                  label="Backlog limit"
                  value={data.flowControl.maxReadyBacklog > 0 ? num(data.flowControl.maxReadyBacklog) : 'off'}
                />
              </div>
              {data.flowControl.refusingTopics.length > 0 ? (
                <table>
                  <thead>
                    <tr>
                      <th>Topic refusing sends</th>
                      <th>Because of group</th>
                      <th class="n">Backlog</th>
                    </tr>
                  </thead>
                  <tbody>
                    {data.flowControl.refusingTopics.map((t) => (
                      <tr key={t.topic} class="warn">
                        <td>{t.topic}</td>
                        <td>{t.group}</td>
                        <td class="n">{num(t.backlog)}</td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              ) : (
                <p class="ok">No topic is refusing sends.</p>
              )}
            </Panel>
          </div>
        </>
      ) : null}
    </div>
  );
}
