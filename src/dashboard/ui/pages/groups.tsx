/** Consumer groups: list with lag and in-flight totals; create and update (retry policy, orderly, broadcast). */
import { useState } from 'preact/hooks';
import { api, enc, type GroupConfigView, type GroupStat } from '../api.js';
import { usePoll } from '../hooks.js';
import { Panel, ErrorNote, Empty } from '../widgets.js';
import { duration, num } from '../format.js';

type PolicyKind = 'DEFAULT' | 'CUSTOMIZED' | 'EXPONENTIAL';

function policyOf(g?: GroupConfigView): {
  kind: PolicyKind;
  next: string;
  initial: string;
  max: string;
  multiplier: string;
} {
  const p = g?.groupRetryPolicy as
    | {
        type?: string;
        customizedRetryPolicy?: { next?: number[] };
        exponentialRetryPolicy?: Record<string, number>;
      }
    | undefined;
  if (p?.type === 'EXPONENTIAL') {
    const e = p.exponentialRetryPolicy ?? {};
    return {
      kind: 'EXPONENTIAL',
      next: '',
      initial: String(e.initial ?? 1000),
      max: String(e.max ?? 60000),
      multiplier: String(e.multiplier ?? 2),
    };
  }
  return {
    kind: g ? 'CUSTOMIZED' : 'DEFAULT',
    next: (p?.customizedRetryPolicy?.next ?? []).join(', '),
    initial: '1000',
    max: '60000',
    multiplier: '2',
  };
}

export function GroupForm(props: { initial?: GroupConfigView; onDone: () => void }) {
  const g = props.initial;
  const [name, setName] = useState(g?.group ?? '');
  const [retryMaxTimes, setRetryMaxTimes] = useState(String(g?.retryMaxTimes ?? 16));
  const [orderly, setOrderly] = useState(g?.consumeMessageOrderly ?? false);
  const [broadcast, setBroadcast] = useState(g?.consumeBroadcastEnable ?? true);
  const [enabled, setEnabled] = useState(g?.consumeEnable ?? true);
  const [fifoMs, setFifoMs] = useState(String(g?.fifoRetryIntervalMs ?? 1000));
  const initialPolicy = policyOf(g);
  const [kind, setKind] = useState<PolicyKind>(initialPolicy.kind);
  const [next, setNext] = useState(initialPolicy.next);
  const [exp, setExp] = useState({
    initial: initialPolicy.initial,
    max: initialPolicy.max,
    multiplier: initialPolicy.multiplier,
  });
  const [error, setError] = useState<Error | undefined>();
  const value = (e: Event) => (e.target as HTMLInputElement).value;
  return (
    <form
      class="inline wrap"
      data-testid="group-form"
      onSubmit={async (e) => {
        e.preventDefault();
        const body: Record<string, unknown> = {
          group: name.trim(),
          retryMaxTimes: Number(retryMaxTimes),
          consumeMessageOrderly: orderly,
          consumeBroadcastEnable: broadcast,
          consumeEnable: enabled,
          fifoRetryIntervalMs: Number(fifoMs),
        };
        if (kind === 'CUSTOMIZED') {
          const list = next
            .split(/[\s,]+/)
            .filter(Boolean)
            .map(Number);
          body.groupRetryPolicy = { type: 'CUSTOMIZED', customizedRetryPolicy: { next: list } };
        } else if (kind === 'EXPONENTIAL') {
          body.groupRetryPolicy = {
            type: 'EXPONENTIAL',
            exponentialRetryPolicy: {
              initial: Number(exp.initial),
              max: Number(exp.max),
              multiplier: Number(exp.multiplier),
            },
          };
        }
        try {
          await api.post('/api/groups', body);
          setError(undefined);
          if (!g) setName('');
          props.onDone();
        } catch (err) {
          setError(err as Error);
        }
      }}
    >
      <label>
        Group
        <input name="group" value={name} disabled={!!g} required onInput={(e) => setName(value(e))} />
      </label>
      <label>
        Max retries
        <input
          name="retryMaxTimes"
          type="number"
          min={0}
          value={retryMaxTimes}
          onInput={(e) => setRetryMaxTimes(value(e))}
        />
      </label>
      <label class="check">
        <input
          type="checkbox"
          name="orderly"
          checked={orderly}
          onChange={(e) => setOrderly((e.target as HTMLInputElement).checked)}
        />
        Orderly (FIFO)
      </label>
      <label class="check">
        <input
          type="checkbox"
          name="broadcast"
          checked={broadcast}
          onChange={(e) => setBroadcast((e.target as HTMLInputElement).checked)}
        />
        Broadcast allowed
      </label>
      <label class="check">
        <input
          type="checkbox"
          name="enabled"
          checked={enabled}
          onChange={(e) => setEnabled((e.target as HTMLInputElement).checked)}
        />
        Consumption enabled
      </label>
      <label>
        Retry policy
        <select
          name="policy"
          value={kind}
          onChange={(e) => setKind((e.target as HTMLSelectElement).value as PolicyKind)}
        >
          {g ? null : <option value="DEFAULT">RocketMQ's table (10 s … 2 h)</option>}
          <option value="CUSTOMIZED">Custom list</option>
          <option value="EXPONENTIAL">Exponential</option>
        </select>
      </label>
      {kind === 'CUSTOMIZED' ? (
        <label>
          Waits (ms)
          <input
            name="next"
            placeholder="1000, 5000, 30000"
            value={next}
            onInput={(e) => setNext(value(e))}
          />
        </label>
      ) : null}
      {kind === 'EXPONENTIAL' ? (
        <>
          <label>
            Initial (ms)
            <input type="number" value={exp.initial} onInput={(e) => setExp({ ...exp, initial: value(e) })} />
          </label>
          <label>
            Max (ms)
            <input type="number" value={exp.max} onInput={(e) => setExp({ ...exp, max: value(e) })} />
          </label>
          <label>
            Multiplier
            <input
              type="number"
              step="0.1"
              value={exp.multiplier}
              onInput={(e) => setExp({ ...exp, multiplier: value(e) })}
            />
          </label>
        </>
      ) : null}
      {orderly ? (
        <label>
          FIFO retry interval (ms)
          <input type="number" value={fifoMs} onInput={(e) => setFifoMs(value(e))} />
        </label>
      ) : null}
      <button type="submit" class="primary">
        {g ? 'Update' : 'Create group'}
      </button>
      <ErrorNote error={error} />
    </form>
  );
}

export function GroupsPage() {
  const { data, error, reload } = usePoll(() => api.get<GroupStat[]>('/api/group-stats'), 2000);
  return (
    <div>
      <Panel title="Create a consumer group">
        <GroupForm onDone={reload} />
      </Panel>
      <Panel title="Consumer groups">
        <ErrorNote error={error} />
        {data && data.length === 0 ? <Empty>No consumer groups yet.</Empty> : null}
        {data && data.length > 0 ? (
          <table data-testid="groups-table">
            <thead>
              <tr>
                <th>Group</th>
                <th>Consumers</th>
                <th class="n">Clients</th>
                <th class="n">Lag</th>
                <th class="n">Lag (time)</th>
                <th class="n">In flight</th>
                <th class="n">Waiting retry</th>
                <th class="n">DLQ</th>
                <th>Orderly</th>
                <th class="n">Max retries</th>
              </tr>
            </thead>
            <tbody>
              {data.map((g) => (
                <tr key={g.group} data-group={g.group}>
                  <td>
                    <a href={`#/groups/${enc(g.group)}`}>{g.group}</a>
                  </td>
                  <td>{g.kinds.map((k) => (k === 'POP' ? 'push/simple' : 'pull')).join(', ') || '—'}</td>
                  <td class="n">{num(g.clients)}</td>
                  <td class="n" data-testid="group-lag">
                    {num(g.lag)}
                  </td>
                  <td class="n">{duration(g.lagLatencyMs)}</td>
                  <td class="n">{num(g.inflight)}</td>
                  <td class="n">{num(g.waitingRetry)}</td>
                  <td class={`n${g.dlqSize > 0 ? ' warn' : ''}`}>{num(g.dlqSize)}</td>
                  <td>{g.consumeMessageOrderly ? 'yes' : 'no'}</td>
                  <td class="n">{g.retryMaxTimes}</td>
                </tr>
              ))}
            </tbody>
          </table>
        ) : null}
      </Panel>
    </div>
  );
}
