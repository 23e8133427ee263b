// Pipeline runs (GET /v1/pipelines) and one run (GET /v1/pipelines/{id}): the stage graph with
// each stage's state, laid out by depth (a stage's column is one past its deepest upstream), its
// trials, and the critical path (the chain of stages whose finish times bound the run's).
import { api } from '../api.js';
import { html, useLive, Loading, ErrorNote, StateBadge, JobLink, time, duration } from '../lib.js';

export function Pipelines() {
  const { data, error } = useLive(() => api('/v1/pipelines'), [], (e) => e.type === 'job');
  if (!data) return html`<${ErrorNote} error=${error} /><${Loading} what="pipeline runs" />`;
  const runs = data.pipelines || data.runs || [];
  return html`<section><h1>Pipeline runs</h1><${ErrorNote} error=${error} />
    <table><thead><tr><th>Run</th><th>Name</th><th>Owner</th><th>State</th><th>Stages</th><th>Created</th><th>Wall</th></tr></thead>
    <tbody>${runs.map((r) => html`<tr><td><a href=${`#/pipelines/${r.id}`}>${r.id}</a></td><td>${r.name}</td><td>${r.owner}</td>
      <td><${StateBadge} state=${r.state} /></td><td>${r.stages_done}/${r.stages_total}</td><td>${time(r.created_at)}</td><td>${duration(r.wall_ms)}</td></tr>`)}</tbody></table>
    ${runs.length === 0 ? html`<p class="muted">No pipeline runs.</p>` : null}</section>`;
}

// The stages on the longest chain by finish time: from the stage that finished last (or is
// still going), back through the upstream that finished last.
function criticalPath(stages) {
  const byName = new Map(stages.map((s) => [s.name, s]));
  const end = (s) => s.finished_at || Number.MAX_SAFE_INTEGER;
  let current = stages.reduce((a, b) => (end(b) >= end(a) ? b : a), stages[0]);
  const path = new Set();
  while (current) {
    path.add(current.name);
    const ups = current.depends_on.map((d) => byName.get(d.stage)).filter(Boolean);
    current = ups.length ? ups.reduce((a, b) => (end(b) >= end(a) ? b : a)) : null;
  }
  return path;
}

export function Pipeline({ id }) {
  const { data, error } = useLive(() => api(`/v1/pipelines/${id}`), [id], (e) => e.type === 'job');
  if (!data) return html`<${ErrorNote} error=${error} /><${Loading} what=${`pipeline run ${id}`} />`;
  const stages = data.stages;
  const depth = new Map();
  const depthOf = (s) => {
    if (depth.has(s.name)) return depth.get(s.name);
    depth.set(s.name, 0);
    const d = Math.max(-1, ...s.depends_on.map((u) => {
      const up = stages.find((x) => x.name === u.stage);
      return up ? depthOf(up) : -1;
    })) + 1;
    depth.set(s.name, d);
    return d;
  };
  stages.forEach(depthOf);
  const columns = [];
  for (const s of stages) (columns[depth.get(s.name)] ||= []).push(s);
  const critical = criticalPath(stages);
  return html`<section>
    <h1>Pipeline run ${data.id}: ${data.name} <${StateBadge} state=${data.state} /></h1>
    <${ErrorNote} error=${error} />
    <p>${data.stages_done}/${data.stages_total} stages done · wall ${duration(data.wall_ms)} · owner ${data.owner} · queue ${data.queue}</p>
    <div class="dag" role="list" aria-label="Stages by depth">
      ${columns.map((col, i) => html`<div class="dag-col" key=${i}>${col.map((s) => html`<div role="listitem"
        class=${`stage stage-${s.state}${critical.has(s.name) ? ' critical' : ''}`} data-stage=${s.name} data-state=${s.state}>
        <b>${s.name}</b> <${StateBadge} state=${s.state} />
        ${s.depends_on.length ? html`<div class="muted">after ${s.depends_on.map((d) => `${d.stage} (${d.condition})`).join(', ')}</div>` : null}
        <div>${s.jobs.map((j) => html`<span class="stage-job"><${JobLink} id=${j.id} />${j.trial ? html` trial ${j.trial.index}/${j.trial.count}` : null} <span class=${`dot state-${j.state}`} title=${j.state}>${j.state}</span></span> `)}</div>
        <div class="muted">${duration(s.run_time_ms)} run${critical.has(s.name) ? ' · critical path' : ''}</div>
      </div>`)}</div>`)}
    </div>
  </section>`;
}
