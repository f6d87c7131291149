/**
 * The Vela console: a single-page app on the admin HTTP API (hash routes: overview, topics, consumer
 * groups, a group, messages). When the broker has an admin token, the first 401 asks for it; with
 * access control on, it asks for a super user's keys and signs every request. Both are kept in this
 * tab's session storage only.
 */
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import './styles.css';
import { aclKeys, onUnauthorized, setAclKeys, setToken, token, type Credential } from './api.js';
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

function KeysPrompt(props: { onSaved: () => void; wrong: boolean }) {
  const [accessKey, setAccessKey] = useState(aclKeys()?.accessKey ?? '');
  const [secretKey, setSecretKey] = useState('');
  return (
    <div class="token-prompt" role="dialog" aria-label="Access keys">
      <form
        onSubmit={(e) => {
          e.preventDefault();
          setAclKeys({ accessKey: accessKey.trim(), secretKey });
          props.onSaved();
        }}
      >
        <h2>This broker runs with access control</h2>
        <p>
          Sign in with a super user's access key and secret key (<code>vela admin createUser -t Super</code>).
          Requests are signed in the browser; the keys are kept in this browser tab only.
        </p>
        {props.wrong ? <p class="error">Those keys were refused.</p> : null}
        <label>
          Access key{' '}
          <input
            name="accessKey"
            autocomplete="off"
            value={accessKey}
            onInput={(e) => setAccessKey((e.target as HTMLInputElement).value)}
            required
          />
        </label>{' '}
        <label>
          Secret key{' '}
          <input
            type="password"
            name="secretKey"
            autocomplete="off"
            value={secretKey}
            onInput={(e) => setSecretKey((e.target as HTMLInputElement).value)}
            required
          />
        </label>{' '}
        <button class="primary" type="submit">
          Sign in
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
  const [need, setNeed] = useState<Credential | null>(null);
  const [generation, setGeneration] = useState(0);
  useEffect(() => onUnauthorized((what) => setNeed(what)), []);
  const saved = () => {
    setNeed(null);
    setGeneration((g) => g + 1);
  };
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
        {aclKeys() ? (
          <button
            class="link"
            onClick={() => {
              setAclKeys(null);
              setGeneration((g) => g + 1);
            }}
          >
            Sign out
          </button>
        ) : null}
      </header>
      <main key={generation}>{page}</main>
      {need === 'token' ? <TokenPrompt wrong={!!token()} onSaved={saved} /> : null}
      {need === 'keys' ? <KeysPrompt wrong={!!aclKeys()} onSaved={saved} /> : null}
    </>
  );
}

render(<App />, document.getElementById('app')!);
