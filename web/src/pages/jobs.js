// Jobs (GET /v1/jobs): a table filtered by state (or every job not started), owner, team, queue
// and name, paged by key (`after` = the previous page's `next`), newest first; each pending job
// with its verdict and estimated start (GET /v1/jobs/{id}/explain).
import { useState } from 'preact/hooks';
import { api } from '../api.js';
import { html, useLive, useVerdicts, kWaitingStates, Loading, ErrorNote, StateBadge, JobLink, time, duration } from '../lib.js';

const kPageSize = 50;
// The state filter's choices: any, every job not started yet (GET /v1/jobs?pending=1, the rule
// `drover ls --pending` uses: pending, waiting, ready, admitted or placed), or one state.
const kNotStarted = 'not_started';
const kStates = ['', kNotStarted, 'pending', 'ready', 'admitted', 'placed', 'starting', 'running', 'succeeded',
  'failed', 'cancelled', 'timed_out', 'waiting', 'skipped'];
const kFields = ['owner', 'team', 'queue', 'name'];

async function load(filter, after) {
  const query = new URLSearchParams({ limit: String(kPageSize), order: 'desc' });
  for (const [k, v] of Object.entries(filter)) if (v) query.set(k, v);
  if (filter.state === kNotStarted) {
    query.delete('state');
    query.set('pending', '1');
  }
  if (after) query.set('after', String(after));
  return api(`/v1/jobs?${query}`);
}

export function Jobs() {
  const [draft, setDraft] = useState({ state: '', owner: '', team: '', queue: '', name: '' });
  const [filter, setFilter] = useState(draft);
  const [cursors, setCursors] = useState([null]);  // `after` of each page seen, for Previous
  const after = cursors[cursors.length - 1];
  const { data, error } = useLive(() => load(filter, after), [filter, after],
    (e) => e.type === 'job' || e.type === 'decision');
  const verdicts = useVerdicts(data && data.jobs);
  const apply = (e) => {
    e.preventDefault();
    setFilter({ ...draft });
    setCursors([null]);
  };
  return html`<section>
    <h1>Jobs</h1>
    <form class="filters" onSubmit=${apply} aria-label="Filter jobs">
      <label>state <select value=${draft.state} onChange=${(e) => setDraft({ ...draft, state: e.target.value })}>
        ${kStates.map((s) => html`<option value=${s}>${s === kNotStarted ? 'pending (not started)' : s || 'any'}</option>`)}</select></label>
      ${kFields.map((f) => html`<label>${f} <input value=${draft[f]} size="10"
        onInput=${(e) => setDraft({ ...draft, [f]: e.target.value })} /></label>`)}
      <button type="submit">Filter</button>
    </form>
    <${ErrorNote} error=${error} />
    ${!data ? html`<${Loading} what="jobs" />` : html`
    <table class="jobs" data-testid="jobs-table">
      <thead><tr><th>ID</th><th>Name</th><th>State</th><th>Owner</th><th>Team</th><th>Queue</th><th>GPUs</th>
        <th>Created</th><th>Wait</th><th>Run</th><th>Verdict</th><th>Estimated start</th></tr></thead>
      <tbody>${data.jobs.map((job) => {
        const v = verdicts[job.id];
        return html`<tr key=${job.id}>
          <td><${JobLink} id=${job.id} /></td><td>${job.name}</td><td><${StateBadge} state=${job.state} /></td>
          <td>${job.owner}</td><td>${job.team}</td><td>${job.queue}</td><td>${job.gpus}</td>
          <td>${time(job.created_at)}</td><td>${duration(job.metrics.queue_wait_ms)}</td><td>${duration(job.metrics.run_time_ms)}</td>
          <td class="verdict">${v ? html`<span class="layer">${v.layer}</span> ${v.message}` : job.message}</td>
          <td>${v ? (v.estimated_start ? time(v.estimated_start) : 'unknown') : kWaitingStates.includes(job.state) ? '…' : ''}</td>
        </tr>`;
      })}</tbody>
    </table>
    ${data.jobs.length === 0 ? html`<p class="muted">No jobs match.</p>` : null}
    <nav class="pager" aria-label="Pages of jobs">
      <button disabled=${cursors.length === 1} onClick=${() => setCursors(cursors.slice(0, -1))}>Previous</button>
      <span>page ${cursors.length}</span>
      <button disabled=${data.next === null} onClick=${() => setCursors([...cursors, data.next])}>Next</button>
    </nav>`}
  </section>`;
}
