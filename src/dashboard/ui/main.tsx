/**
 * The Vela console: a single-page app on the admin HTTP API (hash routes: overview, topics, consumer
 * groups, a group, messages). When the broker has an admin token, the first 401 asks for it; it is
 * kept in this tab's session storage only.
 */
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import './styles.css';
import { onUnauthorized, setToken, token } from './api.js';
import { useRoute } from './hooks.js';
import { OverviewPage } from './pages/overview.js';
import { TopicsPage } from './pages/topics.js';
import { GroupsPage } from './pages/groups.js';
import { GroupDetailPage } from './pages/group-detail.js';
import { MessagesPage } from './pages/messages.js';

function TokenPrompt(props: { onSaved: () => void; wrong: boolean }) {
  const [value, setValue] = useState('');
  return (
    <div class="token-prompt" role="dialog" aria-label="Admin token">
      <form
        onSubmit={(e) => {
          e.preventDefault();
          setToken(value.trim());
          props.onSaved();
        }}
      >
        <h2>This broker needs its admin token</h2>
        <p>
          Give the token the broker was started with (<code>adminToken</code>, <code>--admin-token</code> or{' '}
          <code>VELA_ADMIN_TOKEN</code>). It is kept in this browser tab only.
        </p>
        {props.wrong ? <p class="error">That token was refused.</p> : null}
        <input
          type="password"
          name="token"
          autocomplete="off"
          value={value}
          onInput={(e) => setValue((e.target as HTMLInputElement).value)}
          required
        />{' '}
        <button class="primary" type="submit">
          Continue
        </button>
      </form>
    </div>
  );
}

const NAV: [string, string][] = [
  ['', 'Overview'],
  ['topics', 'Topics'],
  ['groups', 'Consumer groups'],
  ['messages', 'Messages'],
];

function App() {
  const { path, query } = useRoute();
  const [needToken, setNeedToken] = useState(false);
  const [generation, setGeneration] = useState(0);
  useEffect(() => onUnauthorized(() => setNeedToken(true)), []);
  const section = path[0] ?? '';
  let page;
  if (section === 'topics') page = <TopicsPage />;
  else if (section === 'groups' && path[1]) page = <GroupDetailPage group={path[1]} />;
  else if (section === 'groups') page = <GroupsPage />;
  else if (section === 'messages') page = <MessagesPage query={query} />;
  else page = <OverviewPage />;
  return (
    <>
      <header class="top">
        <a class="brand" href="#/">
          Vela
        </a>
        <nav>
          {NAV.map(([k, label]) => (
            <a key={k} href={`#/${k}`} class={section === k ? 'active' : ''}>
              {label}
            </a>
          ))}
        </nav>
        {token() ? (
          <button
            class="link"
            onClick={() => {
              setToken('');
              setGeneration((g) => g + 1);
            }}
          >
            Forget token
          </button>
        ) : null}
      </header>
      <main key={generation}>{page}</main>
      {needToken ? (
        <TokenPrompt
          wrong={!!token()}
          onSaved={() => {
            setNeedToken(false);
            setGeneration((g) => g + 1);
          }}
        />
      ) : null}
    </>
  );
}

render(<App />, document.getElementById('app')!);
