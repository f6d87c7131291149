/** Topics: list with offsets and message counts; create, update (type, queues), delete. */
import { useState } from 'preact/hooks';
import { api, enc, type TopicStat } from '../api.js';
import { usePoll, navigate } from '../hooks.js';
import { Panel, ErrorNote, ConfirmButton, Empty } from '../widgets.js';
import { num, time } from '../format.js';

const TYPES = ['NORMAL', 'FIFO', 'DELAY', 'TRANSACTION'];

function TopicForm(props: { initial?: TopicStat; onDone: () => void }) {
  const [name, setName] = useState(props.initial?.topic ?? '');
  const [type, setType] = useState(props.initial?.messageType ?? 'NORMAL');
  const [queues, setQueues] = useState(String(props.initial?.writeQueueNums ?? 8));
  const [error, setError] = useState<Error | undefined>();
  const editing = !!props.initial;
  return (
    <form
      class="inline"
      data-testid="topic-form"
      onSubmit={async (e) => {
        e.preventDefault();
        try {
          await api.post('/api/topics', {
            topic: name.trim(),
            readQueueNums: Number(queues),
            writeQueueNums: Number(queues),
            attributes: { 'message.type': type },
          });
          setError(undefined);
          if (!editing) setName('');
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
          value={name}
          disabled={editing}
          required
          pattern="[%\|a-zA-Z0-9_\-]+"
          maxLength={127}
          onInput={(e) => setName((e.target as HTMLInputElement).value)}
        />
      </label>
      <label>
        Message type
        <select
          name="messageType"
          value={type}
          onChange={(e) => setType((e.target as HTMLSelectElement).value)}
        >
          {TYPES.map((t) => (
            <option key={t}>{t}</option>
          ))}
        </select>
      </label>
      <label>
        Queues
        <input
          name="queues"
          type="number"
          min={1}
          max={1024}
          value={queues}
          onInput={(e) => setQueues((e.target as HTMLInputElement).value)}
        />
      </label>
      <button type="submit" class="primary">
        {editing ? 'Update' : 'Create topic'}
      </button>
      <ErrorNote error={error} />
    </form>
  );
}

export function TopicsPage() {
  const { data, error, reload } = usePoll(() => api.get<TopicStat[]>('/api/topic-stats'), 3000);
  const [editing, setEditing] = useState<string | null>(null);
  return (
    <div>
      <Panel title="Create a topic">
        <TopicForm onDone={reload} />
      </Panel>
      <Panel title="Topics">
        <ErrorNote error={error} />
        {data && data.length === 0 ? <Empty>No topics yet.</Empty> : null}
        {data && data.length > 0 ? (
          <table data-testid="topics-table">
            <thead>
              <tr>
                <th>Topic</th>
                <th>Type</th>
                <th class="n">Read / write queues</th>
                <th class="n">Min offset</th>
                <th class="n">Max offset</th>
                <th class="n">Messages</th>
                <th>Last stored</th>
                <th />
              </tr>
            </thead>
            <tbody>
              {data.map((t) => (
                <>
                  <tr key={t.topic} data-topic={t.topic}>
                    <td>
                      <a href={`#/messages?topic=${enc(t.topic)}`}>{t.topic}</a>
                    </td>
                    <td>
                      <span class={`badge ${t.messageType.toLowerCase()}`}>{t.messageType}</span>
                    </td>
                    <td class="n">
                      {t.readQueueNums} / {t.writeQueueNums}
                    </td>
                    <td class="n">{num(t.minOffset)}</td>
                    <td class="n">{num(t.maxOffset)}</td>
                    <td class="n" data-testid="topic-messages">
                      {num(t.messages)}
                    </td>
                    <td>{time(t.lastStoreTimestamp)}</td>
                    <td class="row-actions">
                      <button onClick={() => setEditing(editing === t.topic ? null : t.topic)}>Edit</button>{' '}
                      <button onClick={() => navigate(`#/messages?topic=${enc(t.topic)}`)}>Messages</button>{' '}
                      <ConfirmButton
                        label="Delete"
                        confirm={`Delete ${t.topic}?`}
                        testId={`delete-${t.topic}`}
                        onConfirm={async () => {
                          await api.del(`/api/topics/${enc(t.topic)}`);
                          reload();
                        }}
                      />
                    </td>
                  </tr>
                  {editing === t.topic ? (
                    <tr key={`${t.topic}-edit`}>
                      <td colSpan={8}>
                        <TopicForm
                          initial={t}
                          onDone={() => {
                            setEditing(null);
                            reload();
                          }}
                        />
                      </td>
                    </tr>
                  ) : null}
                </>
              ))}
            </tbody>
          </table>
        ) : null}
      </Panel>
    </div>
  );
}
