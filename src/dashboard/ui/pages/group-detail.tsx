/**
 * One consumer group: per topic and queue its offsets, ready, in flight, waiting retry and lag in
 * messages and time (push, simple and pull consumers alike); its connected clients; offset reset by
 * time; its dead-letter queue with resend.
 */
import { useState } from 'preact/hooks';
import { api, enc, type DlqPage, type GroupDetail, type TopicLag } from '../api.js';
import { usePoll } from '../hooks.js';
import { Panel, ErrorNote, Empty, ConfirmButton, Stat } from '../widgets.js';
import { duration, num, time, toLocalInput } from '../format.js';
import { GroupForm } from './groups.js';

function TopicTable(props: { t: TopicLag }) {
  const t = props.t;
  const total = (f: (q: TopicLag['queues'][number]) => number) => t.queues.reduce((a, q) => a + f(q), 0);
  return (
    <div class="topic-lag" data-testid={`lag-${t.topic}`}>
      <h3>
        <a href={`#/messages?topic=${enc(t.topic)}`}>{t.topic}</a>{' '}
        <span class="badge">{t.kind === 'POP' ? 'push / simple consumers' : 'pull consumers'}</span>{' '}
        <span class="muted">
          lag <b data-testid="topic-lag-total">{num(total((q) => q.lag))}</b>, in flight{' '}
          <b data-testid="topic-inflight-total">{num(total((q) => q.inflight))}</b>, ready{' '}
          {num(total((q) => q.ready))}
          {t.kind === 'POP' ? (
            <>
              , retries waiting <b>{num(t.retry.backlog)}</b> (+{num(t.retry.inflight)} in flight)
            </>
          ) : null}
        </span>
      </h3>
      <table>
        <thead>
          <tr>
            <th class="n">Queue</th>
            <th class="n">Broker offset</th>
            <th class="n">{t.kind === 'POP' ? 'Consumed offset' : 'Committed offset'}</th>
            <th class="n">Committed (all below acked)</th>
            <th class="n">Ready</th>
            <th class="n">In flight</th>
            <th class="n">Waiting retry</th>
            <th class="n">Lag</th>
            <th class="n">Lag (time)</th>
            <th>Last stored</th>
          </tr>
        </thead>
        <tbody>
          {t.queues.map((q) => (
            <tr key={q.queueId} class={q.lag > 0 ? 'lagging' : ''}>
              <td class="n">{q.queueId}</td>
              <td class="n">{num(q.brokerOffset)}</td>
              <td class="n">{num(q.consumerOffset)}</td>
              <td class="n">{num(q.committedOffset)}</td>
              <td class="n">{num(q.ready)}</td>
              <td class="n">{num(q.inflight)}</td>
              <td class="n">{num(q.waitingRetry)}</td>
              <td class="n">{num(q.lag)}</td>
              <td class="n">{duration(q.lagLatencyMs)}</td>
              <td>{time(q.lastStoreTimestamp)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

function ResetOffset(props: { group: string; topics: string[]; onDone: () => void }) {
  const [topic, setTopic] = useState(props.topics[0] ?? '');
  const [when, setWhen] = useState(toLocalInput(Date.now() - 3600_000));
  const [result, setResult] = useState<string | null>(null);
  const [error, setError] = useState<Error | undefined>();
  return (
    <form
      class="inline"
      data-testid="reset-form"
      onSubmit={async (e) => {
        e.preventDefault();
        try {
          const r = await api.post<{
            queues: { queueId: number; oldOffset: number | null; newOffset: number }[];
          }>(`/api/groups/${enc(props.group)}/reset-offset`, { topic, timestamp: new Date(when).getTime() });
          setResult(r.queues.map((q) => `q${q.queueId}: ${q.oldOffset ?? '—'} → ${q.newOffset}`).join(', '));
          setError(undefined);
          props.onDone();
        } catch (err) {
          setError(err as Error);
        }
      }}
    >
      <label>
        Topic
        <input
          name="topic"
          list="reset-topics"
          value={topic}
          required
          onInput={(e) => setTopic((e.target as HTMLInputElement).value)}
        />
        <datalist id="reset-topics">
          {props.topics.map((t) => (
            <option key={t} value={t} />
          ))}
        </datalist>
      </label>
      <label>
        To the first message stored at or after
        <input
          type="datetime-local"
          step="1"
          name="when"
          value={when}
          required
          onInput={(e) => setWhen((e.target as HTMLInputElement).value)}
        />
      </label>
      <button type="submit" class="primary">
        Reset offset
      </button>
      {result ? <span class="ok">{result}</span> : null}
      <ErrorNote error={error} />
    </form>
  );
}

function DeadLetters(props: { group: string; onChange: () => void }) {
  const { data, error, reload } = usePoll(
    () => api.get<DlqPage>(`/api/groups/${enc(props.group)}/dlq?limit=50`),
    3000,
    [props.group],
  );
  const [note, setNote] = useState<string | null>(null);
  const [failure, setFailure] = useState<Error | undefined>();
  const resend = async (messageId?: string) => {
    try {
      const r = await api.post<{ resent: number }>(
        `/api/groups/${enc(props.group)}/dlq/resend`,
        messageId ? { messageId } : {},
      );
      setNote(`Resent ${r.resent} message(s) to ${props.group}.`);
      setFailure(undefined);
      reload();
      props.onChange();
    } catch (err) {
      setFailure(err as Error);
    }
  };
  return (
    <div data-testid="dlq">
      <ErrorNote error={error ?? failure} />
      {note ? (
        <p class="ok" data-testid="dlq-note">
          {note}
        </p>
      ) : null}
      {data && data.messages.length === 0 ? <Empty>The dead-letter queue is empty.</Empty> : null}
      {data && data.messages.length > 0 ? (
        <>
          <p>
            <ConfirmButton
              label="Resend all"
              class="primary"
              confirm={`Send every dead letter back to ${props.group}?`}
              testId="resend-all"
              onConfirm={() => resend()}
            />
          </p>
          <table>
            <thead>
              <tr>
                <th>Message ID</th>
                <th>From topic</th>
                <th>Tag</th>
                <th>Keys</th>
                <th class="n">Attempts</th>
                <th>Dead since</th>
                <th />
              </tr>
            </thead>
            <tbody>
              {data.messages.map((m) => (
                <tr key={`${m.queueOffset}`} data-message={m.originMessageId ?? m.messageId}>
                  <td class="mono">
                    <a href={`#/messages?id=${enc(m.originMessageId ?? m.messageId)}`}>
                      {m.originMessageId ?? m.messageId}
                    </a>
                  </td>
                  <td>{m.originTopic}</td>
                  <td>{m.tag ?? ''}</td>
                  <td>{m.keys.join(', ')}</td>
                  <td class="n">{m.reconsumeTimes}</td>
                  <td>{time(m.storeTimestamp)}</td>
                  <td>
                    <button
                      data-testid="resend-one"
                      onClick={() => void resend(m.originMessageId ?? m.messageId)}
                    >
                      Resend
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </>
      ) : null}
    </div>
  );
}

export function GroupDetailPage(props: { group: string }) {
  const { data, error, reload } = usePoll(
    () => api.get<GroupDetail>(`/api/groups/${enc(props.group)}/detail`),
    1000,
    [props.group],
  );
  const [editing, setEditing] = useState(false);
  if (!data) return <ErrorNote error={error} />;
  const totalLag = data.topics.reduce((a, t) => a + t.queues.reduce((b, q) => b + q.lag, 0), 0);
  return (
    <div>
      <p class="crumbs">
        <a href="#/groups">Consumer groups</a> › <b>{data.group}</b>
      </p>
      <ErrorNote error={error} />
      <div class="stats">
        <Stat label="Lag" value={<span data-testid="detail-lag">{num(totalLag)}</span>} />
        <Stat label="Dead letters" value={num(data.dlqSize)} warn={data.dlqSize > 0} />
        <Stat label="Clients" value={num(data.connections.length)} />
        <Stat label="Max retries" value={data.retryMaxTimes} />
        <Stat label="Orderly" value={data.consumeMessageOrderly ? 'yes' : 'no'} />
        <Stat
          label="Consumption"
          value={data.consumeEnable ? 'enabled' : 'disabled'}
          warn={!data.consumeEnable}
        />
      </div>
      <Panel
        title="Settings"
        actions={<button onClick={() => setEditing(!editing)}>{editing ? 'Close' : 'Edit'}</button>}
      >
        {editing ? (
          <GroupForm
            initial={data}
            onDone={() => {
              setEditing(false);
              reload();
            }}
          />
        ) : (
          <p class="mono small">retry policy {JSON.stringify(data.groupRetryPolicy)}</p>
        )}
      </Panel>
      <Panel title="Progress per topic and queue">
        {data.topics.length === 0 ? (
          <Empty>No consumption yet.</Empty>
        ) : (
          data.topics.map((t) => <TopicTable key={t.topic} t={t} />)
        )}
      </Panel>
      <Panel title="Connected clients">
        {data.connections.length === 0 ? (
          <Empty>No client of this group is connected.</Empty>
        ) : (
          <table data-testid="connections">
            <thead>
              <tr>
                <th>Client ID</th>
                <th>Type</th>
                <th>Address</th>
                <th>Language</th>
                <th>Version</th>
                <th>Topics</th>
                <th>Connected since</th>
              </tr>
            </thead>
            <tbody>
              {data.connections.map((c) => (
                <tr key={c.clientId}>
                  <td class="mono">{c.clientId}</td>
                  <td>{c.clientType}</td>
                  <td>{c.remoteAddress}</td>
                  <td>{c.language}</td>
                  <td>{c.version}</td>
                  <td>{c.topics.join(', ')}</td>
                  <td>{time(c.connectedAt)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </Panel>
      <Panel title="Reset offset by time">
        <ResetOffset group={data.group} topics={data.topics.map((t) => t.topic)} onDone={reload} />
      </Panel>
      <Panel title={`Dead-letter queue (${data.dlqTopic})`}>
        <DeadLetters group={data.group} onChange={reload} />
      </Panel>
    </div>
  );
}
