/**
 * Messages: look up by id, by key, or by topic and time range; a message's body (text, JSON or hex),
 * properties and deliveries (each attempt, to which group and client, and how it ended).
 */
import { useEffect, useState } from 'preact/hooks';
import { api, enc, type Delivery, type MessageInfo } from '../api.js';
import { navigate, usePoll } from '../hooks.js';
import { Panel, ErrorNote, Empty } from '../widgets.js';
import { bytes, fromBase64, hexDump, time, toLocalInput } from '../format.js';

type Mode = 'id' | 'key' | 'time';

function SearchForm(props: { query: URLSearchParams }) {
  const q = props.query;
  const initial: Mode = q.get('id') ? 'id' : q.get('key') ? 'key' : q.get('topic') ? 'time' : 'key';
  const [mode, setMode] = useState<Mode>(initial);
  const [id, setId] = useState(q.get('id') ?? '');
  const [key, setKey] = useState(q.get('key') ?? '');
  const [topic, setTopic] = useState(q.get('topic') ?? '');
  const [from, setFrom] = useState(
    q.get('from') ? toLocalInput(Number(q.get('from'))) : toLocalInput(Date.now() - 3600_000),
  );
  const [to, setTo] = useState(
    q.get('to') ? toLocalInput(Number(q.get('to'))) : toLocalInput(Date.now() + 60_000),
  );
  const v = (e: Event) => (e.target as HTMLInputElement).value;
  return (
    <form
      class="inline wrap"
      data-testid="message-search"
      onSubmit={(e) => {
        e.preventDefault();
        const p = new URLSearchParams();
        if (mode === 'id') p.set('id', id.trim());
        if (mode === 'key') p.set('key', key.trim());
        if (topic.trim()) p.set('topic', topic.trim());
        if (mode === 'time') {
          p.set('from', String(new Date(from).getTime()));
          p.set('to', String(new Date(to).getTime()));
        }
        navigate(`#/messages?${p}`);
      }}
    >
      <label>
        Find by
        <select
          name="mode"
          value={mode}
          onChange={(e) => setMode((e.target as HTMLSelectElement).value as Mode)}
        >
          <option value="id">Message ID</option>
          <option value="key">Key</option>
          <option value="time">Topic and time</option>
        </select>
      </label>
      {mode === 'id' ? (
        <label>
          Message ID
          <input name="id" value={id} required size={36} onInput={(e) => setId(v(e))} />
        </label>
      ) : null}
      {mode === 'key' ? (
        <label>
          Key
          <input name="key" value={key} required onInput={(e) => setKey(v(e))} />
        </label>
      ) : null}
      <label>
        Topic{mode === 'time' ? '' : ' (optional)'}
        <input name="topic" value={topic} required={mode === 'time'} onInput={(e) => setTopic(v(e))} />
      </label>
      {mode === 'time' ? (
        <>
          <label>
            From
            <input type="datetime-local" step="1" value={from} onInput={(e) => setFrom(v(e))} />
          </label>
          <label>
            To
            <input type="datetime-local" step="1" value={to} onInput={(e) => setTo(v(e))} />
          </label>
        </>
      ) : null}
      <button type="submit" class="primary">
        Search
      </button>
    </form>
  );
}

function Body(props: { m: MessageInfo }) {
  const data = fromBase64(props.m.body);
  const text = new TextDecoder('utf-8', { fatal: false }).decode(data);
  // eslint-disable-next-line no-control-regex
  const isText = !text.includes('\uFFFD') && !/[\u0000-\u0008\u000e-\u001f]/.test(text);
  let json: string | null = null;
  if (isText) {
    try {
      json = JSON.stringify(JSON.parse(text), null, 2);
    } catch {
      json = null;
    }
  }
  const [view, setView] = useState<'text' | 'json' | 'hex'>(json ? 'json' : isText ? 'text' : 'hex');
  return (
    <div class="body">
      <div class="tabs" role="tablist">
        {(['text', 'json', 'hex'] as const).map((k) => (
          <button
            key={k}
            role="tab"
            class={view === k ? 'active' : ''}
            disabled={(k === 'json' && !json) || (k === 'text' && !isText)}
            onClick={() => setView(k)}
          >
            {k.toUpperCase()}
          </button>
        ))}
        <span class="muted">{bytes(props.m.bodySize)}</span>
      </div>
      <pre data-testid="message-body">{view === 'hex' ? hexDump(data) : view === 'json' ? json : text}</pre>
    </div>
  );
}

function Deliveries(props: { messageId: string }) {
  const { data, error } = usePoll(
    () =>
      api.get<{ remembered: boolean; deliveries: Delivery[] }>(
        `/api/messages/${enc(props.messageId)}/deliveries`,
      ),
    2000,
    [props.messageId],
  );
  if (!data) return <ErrorNote error={error} />;
  if (!data.remembered) return <Empty>The broker keeps no delivery history (deliveryHistory is 0).</Empty>;
  if (data.deliveries.length === 0)
    return <Empty>No delivery remembered: not consumed yet, or longer ago than the broker remembers.</Empty>;
  return (
    <table data-testid="deliveries">
      <thead>
        <tr>
          <th>When</th>
          <th>Group</th>
          <th class="n">Attempt</th>
          <th>Client</th>
          <th>How</th>
          <th>Outcome</th>
          <th>Then</th>
          <th>Settled</th>
        </tr>
      </thead>
      <tbody>
        {data.deliveries.map((d, i) => (
          <tr key={i} class={d.outcome === 'ACKED' ? 'ok' : d.outcome === 'IN_FLIGHT' ? '' : 'warn'}>
            <td>{time(d.at)}</td>
            <td>
              <a href={`#/groups/${enc(d.group)}`}>{d.group}</a>
            </td>
            <td class="n">{d.via === 'ADMIN' ? '' : d.attempt}</td>
            <td class="mono">{d.clientId}</td>
            <td>
              {d.via === 'POP'
                ? d.retry
                  ? 'receive (retry)'
                  : 'receive'
                : d.via === 'PULL'
                  ? 'pull'
                  : 'operator'}
            </td>
            <td data-testid="delivery-outcome">
              {d.via === 'PULL' ? (d.committed ? 'COMMITTED' : 'PULLED') : d.outcome.replace(/_/g, ' ')}
            </td>
            <td>{d.next ?? ''}</td>
            <td>{time(d.settledAt)}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

function MessageDetail(props: { m: MessageInfo }) {
  const m = props.m;
  const origin = m.properties.ORIGIN_MESSAGE_ID ?? m.messageId;
  return (
    <div class="message" data-testid="message-detail">
      <table class="kv">
        <tbody>
          {(
            [
              ['Message ID', m.messageId],
              ['Topic', m.topic],
              ['Type', m.messageType],
              ['Tag', m.tag ?? ''],
              ['Keys', m.keys.join(', ')],
              ['Message group', m.messageGroup ?? ''],
              ['Queue / offset', `${m.queueId} / ${m.queueOffset}`],
              ['Born', `${time(m.bornTimestamp)} on ${m.bornHost}`],
              ['Stored', time(m.storeTimestamp)],
              ['Reconsume times', String(m.reconsumeTimes)],
            ] as [string, string][]
          ).map(([k, v]) => (
            <tr key={k}>
              <th>{k}</th>
              <td class="mono">{v}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <h3>Body</h3>
      <Body m={m} />
      <h3>Properties</h3>
      {Object.keys(m.properties).length === 0 ? (
        <Empty>None.</Empty>
      ) : (
        <table class="kv">
          <tbody>
            {Object.entries(m.properties).map(([k, v]) => (
              <tr key={k}>
                <th class="mono">{k}</th>
                <td class="mono">{v}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <h3>Deliveries</h3>
      <Deliveries messageId={origin} />
    </div>
  );
}

export function MessagesPage(props: { query: URLSearchParams }) {
  const q = props.query;
  const [results, setResults] = useState<MessageInfo[] | null>(null);
  const [error, setError] = useState<Error | undefined>();
  const [open, setOpen] = useState<number>(0);
  const key = q.toString();
  useEffect(() => {
    const id = q.get('id');
    const k = q.get('key');
    const topic = q.get('topic');
    let path: string | null = null;
    if (id) path = `/api/messages/${enc(id)}${topic ? `?topic=${enc(topic)}` : ''}`;
    else if (k) path = `/api/messages?key=${enc(k)}${topic ? `&topic=${enc(topic)}` : ''}&limit=64`;
    else if (topic) {
      const from = q.get('from') ?? String(Date.now() - 3600_000);
      const to = q.get('to') ?? String(Date.now() + 60_000);
      path = `/api/topics/${enc(topic)}/messages?from=${from}&to=${to}&limit=100`;
    }
    setOpen(0);
    if (!path) {
      setResults(null);
      return;
    }
    api.get<MessageInfo[]>(path).then(
      (r) => {
        setResults(r);
        setError(undefined);
      },
      (e: Error) => {
        setResults(null);
        setError(e);
      },
    );
  }, [key]);
  return (
    <div>
      <Panel title="Find messages">
        <SearchForm key={key} query={q} />
      </Panel>
      <ErrorNote error={error} />
      {results ? (
        <Panel title={`${results.length} message(s)`}>
          {results.length === 0 ? <Empty>Nothing found.</Empty> : null}
          {results.length > 0 ? (
            <table data-testid="message-results">
              <thead>
                <tr>
                  <th>Message ID</th>
                  <th>Topic</th>
                  <th class="n">Queue</th>
                  <th class="n">Offset</th>
                  <th>Tag</th>
                  <th>Keys</th>
                  <th>Stored</th>
                </tr>
              </thead>
              <tbody>
                {results.map((m, i) => (
                  <tr
                    key={`${m.topic}-${m.queueId}-${m.queueOffset}`}
                    class={i === open ? 'selected' : ''}
                    onClick={() => setOpen(i)}
                  >
                    <td class="mono">
                      <a
                        href="#"
                        onClick={(e) => {
                          e.preventDefault();
                          setOpen(i);
                        }}
                      >
                        {m.messageId}
                      </a>
                    </td>
                    <td>{m.topic}</td>
                    <td class="n">{m.queueId}</td>
                    <td class="n">{m.queueOffset}</td>
                    <td>{m.tag ?? ''}</td>
                    <td>{m.keys.join(', ')}</td>
                    <td>{time(m.storeTimestamp)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          ) : null}
          {results[open] ? <MessageDetail m={results[open]} /> : null}
        </Panel>
      ) : null}
    </div>
  );
}
