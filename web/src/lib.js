// Shared pieces of the pages: htm bound to Preact, the live-data hook, formatting.
import { h, createContext } from 'preact';
import { useContext, useEffect, useRef, useState } from 'preact/hooks';
import htm from 'htm';
import { api } from './api.js';

export const html = htm.bind(h);

// The event bus of the open stream (main.js): subscribe(fn) -> unsubscribe.
export const Events = createContext({ subscribe: () => () => {} });

// Marks (performance mark `drover-useful`, once per page load) the first frame after a page's
// data was rendered: the first useful paint tests/web/paint_bench.mjs measures.
function markUseful() {
  if (performance.getEntriesByName('drover-useful').length) return;
  requestAnimationFrame(() => setTimeout(() => {
    if (!performance.getEntriesByName('drover-useful').length) performance.mark('drover-useful');
  }, 0));
}

// Loads `load()` now and again after each event `relevant(event)` accepts (every event by
// default; a 'reset' always), at most once per 300 ms, keeping what is shown until the new data
// arrives; and every `everyMs` as well when given (what changes without events: GPU samples).
// Data loaded for other `deps` (the page before a navigation changed them) is never returned:
// until the new deps' first load arrives, data is null.
// Returns {data, error, reload}.
export function useLive(load, deps, relevant = () => true, everyMs = 0) {
  const events = useContext(Events);
  const key = JSON.stringify(deps);
  const [state, setState] = useState({ key, data: null, error: null });
  const timer = useRef(null);
  const generation = useRef(0);
  const run = () => {
    const mine = ++generation.current;
    load().then(
      (data) => {
        if (mine !== generation.current) return;
        setState({ key, data, error: null });
        if (data !== null) markUseful();
      },
      (error) => mine === generation.current &&
        setState((s) => ({ key, data: s.key === key ? s.data : null, error })),
    );
  };
  useEffect(() => {
    setState({ key, data: null, error: null });
    run();
    const unsubscribe = events.subscribe((event) => {
      if (event.type !== 'reset' && !relevant(event)) return;
      if (timer.current) return;
      timer.current = setTimeout(() => {
        timer.current = null;
        run();
      }, 300);
    });
    const interval = everyMs ? setInterval(run, everyMs) : null;
    return () => {
      clearInterval(interval);
      unsubscribe();
      clearTimeout(timer.current);
      timer.current = null;
      generation.current++;
    };
  }, deps);
  const current = state.key === key ? state : { data: null, error: null };
  return { data: current.data, error: current.error, reload: run };
}

export function Loading({ what }) {
  return html`<p class="muted" role="status">Loading ${what}…</p>`;
}

export function ErrorNote({ error }) {
  if (!error) return null;
  return html`<p class="error" role="alert">${error.code ? `${error.code}: ` : ''}${error.message}</p>`;
}

export function time(ms) {
  if (!ms) return '—';
  return new Date(ms).toLocaleString(undefined, { hour12: false });
}

export function duration(ms) {
  if (ms === null || ms === undefined || ms < 0) return '—';
  const s = Math.round(ms / 1000);
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
  return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
}

export function bytes(n) {
  if (n === null || n === undefined) return '—';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) {
    n /= 1024;
    i++;
  }
  return `${n.toFixed(i ? 1 : 0)} ${units[i]}`;
}

export function StateBadge({ state }) {
  return html`<span class=${`badge state-${state}`}>${state}</span>`;
}

export function JobLink({ id }) {
  return id ? html`<a href=${`#/jobs/${id}`}>${id}</a>` : '—';
}

// The states of a job that waits for the scheduler (its verdict says why).
export const kWaitingStates = ['pending', 'ready', 'waiting'];

// The explanations (GET /v1/jobs/{id}/explain) of the waiting jobs among `jobs`, by id, loaded
// after the jobs are shown (so the table paints without waiting for them); {} until then.
export function useVerdicts(jobs) {
  const [verdicts, setVerdicts] = useState({});
  useEffect(() => {
    let current = true;
    const pending = (jobs || []).filter((j) => kWaitingStates.includes(j.state));
    Promise.all(pending.map((j) => api(`/v1/jobs/${j.id}/explain`).then((e) => [j.id, e], () => null)))
      .then((pairs) => current && setVerdicts(Object.fromEntries(pairs.filter(Boolean))));
    return () => { current = false; };
  }, [jobs]);
  return verdicts;
}
