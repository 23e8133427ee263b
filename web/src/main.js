// The dashboard's shell: the login form, the hash router, the live event stream and the nav.
import { render } from 'preact';
import { useEffect, useMemo, useState } from 'preact/hooks';
import { api, followEvents, session } from './api.js';
import { Events, html } from './lib.js';
import { Cluster } from './pages/cluster.js';
import { Queues } from './pages/queues.js';
import { Jobs } from './pages/jobs.js';
import { Job } from './pages/job.js';
import { Pipelines, Pipeline } from './pages/pipeline.js';
import { Diagnosis } from './pages/diagnosis.js';
import { Goodput } from './pages/goodput.js';
import './style.css';

const kPages = [
  ['cluster', 'Cluster'],
  ['queues', 'Queues'],
  ['jobs', 'Jobs'],
  ['pipelines', 'Pipelines'],
  ['diagnosis', 'Diagnosis'],
  ['goodput', 'Goodput'],
];

function useHash() {
  const [hash, setHash] = useState(location.hash);
  useEffect(() => {
    const onChange = () => setHash(location.hash);
    addEventListener('hashchange', onChange);
    return () => removeEventListener('hashchange', onChange);
  }, []);
  return hash;
}

function Login({ onLogin, error }) {
  const [token, setToken] = useState('');
  const submit = (e) => {
    e.preventDefault();
    if (token.trim()) onLogin(token.trim());
  };
  return html`<main class="login">
    <h1>Drover</h1>
    <form onSubmit=${submit}>
      <label for="token">API token</label>
      <input id="token" type="password" autocomplete="off" value=${token}
        onInput=${(e) => setToken(e.target.value)} autofocus />
      <button type="submit">Log in</button>
      <p class="muted">Kept in this tab's session storage only; every call sends it as
        Authorization: Bearer.</p>
      ${error && html`<p class="error" role="alert">${error}</p>`}
    </form>
  </main>`;
}

function Page({ route }) {
  const [name, id] = route;
  switch (name) {
    case 'queues':
      return html`<${Queues} />`;
    case 'jobs':
      return id ? html`<${Job} id=${id} />` : html`<${Jobs} />`;
    case 'pipelines':
      return id ? html`<${Pipeline} id=${id} />` : html`<${Pipelines} />`;
    case 'diagnosis':
      return html`<${Diagnosis} />`;
    case 'goodput':
      return html`<${Goodput} />`;
    default:
      return html`<${Cluster} />`;
  }
}

function Shell({ who, onLogout }) {
  const hash = useHash();
  const route = hash.replace(/^#\/?/, '').split('/');
  const [status, setStatus] = useState('connecting');
  const bus = useMemo(() => {
    const listeners = new Set();
    return {
      subscribe: (fn) => {
        listeners.add(fn);
        return () => listeners.delete(fn);
      },
      emit: (event) => listeners.forEach((fn) => fn(event)),
    };
  }, []);
  useEffect(() => followEvents(bus.emit, (s) => {
    setStatus(s);
    if (s === 'unauthenticated') onLogout('The token is no longer accepted.');
  }), []);
  return html`<${Events.Provider} value=${bus}>
    <header>
      <a class="brand" href="#/cluster">Drover</a>
      <nav aria-label="Pages">
        ${kPages.map(([page, title]) => html`<a href=${`#/${page}`}
          aria-current=${(route[0] || 'cluster') === page ? 'page' : undefined}>${title}</a>`)}
      </nav>
      <span class=${`live live-${status}`} role="status" data-testid="live">${status}</span>
      <span class="who">${who}</span>
      <button onClick=${() => onLogout('')}>Log out</button>
    </header>
    <main id="main"><${Page} route=${route} /></main>
  </${Events.Provider}>`;
}

function App() {
  const [who, setWho] = useState(null);
  const [error, setError] = useState('');
  const check = () =>
    api('/v1/whoami').then(
      (me) => setWho(`${me.user || me.name || 'token'}${me.team ? ` (${me.team})` : ''}`),
      (e) => {
        session.logout();
        setWho(null);
        setError(e.status === 401 ? 'That token is not accepted.' : e.message);
      },
    );
  // With a token from this tab's session, show the pages at once and check it alongside (a token
  // no longer accepted logs out, here or when the event stream is refused).
  useEffect(() => {
    if (session.token()) {
      setWho('…');
      check();
    }
  }, []);
  if (!who) {
    return html`<${Login} error=${error} onLogin=${(token) => {
      session.login(token);
      check();
    }} />`;
  }
  return html`<${Shell} who=${who} onLogout=${(why) => {
    session.logout();
    setWho(null);
    setError(why);
  }} />`;
}

render(html`<${App} />`, document.getElementById('app'));
