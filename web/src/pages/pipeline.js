// Pipeline runs (GET /v1/pipelines) and one run (GET /v1/pipelines/{id}): the stage graph with
// each stage's state, laid out by depth (a stage's column is one past its deepest upstream), its
// trials, and the critical path (the chain of stages whose finish times bound the run's); and
// each sweep's trials charted against its objective (the stage's `objective`: metric, goal and
// best trial), by trial index or by a numeric parameter.
import { useEffect, useRef, useState } from 'preact/hooks';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
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

// The points of a sweep's chart: {x, y, trial, best} per trial that published a numeric
// objective, by x (trial index, or the parameter `by`, when every trial's value is a number).
function sweepPoints(stage, by) {
  const { metric, best_trial: best } = stage.objective;
  const points = [];
  for (const job of stage.jobs) {
    const y = Number.parseFloat(job.outputs && job.outputs[metric]);
    const x = by === 'trial' ? job.trial.index : Number.parseFloat(job.trial.params[by]);
    if (Number.isFinite(x) && Number.isFinite(y)) points.push({ x, y, trial: job.trial.index, best: job.trial.index === best });
  }
  return points.sort((a, b) => a.x - b.x || a.trial - b.trial);
}

// The parameters of a sweep every trial gives a number for (the chart's other x axes).
function numericParams(stage) {
  const names = Object.keys(stage.jobs[0].trial.params);
  return names.filter((n) => stage.jobs.every((j) => Number.isFinite(Number.parseFloat(j.trial.params[n]))));
}

function SweepChart({ stage }) {
  const [by, setBy] = useState('trial');
  const ref = useRef(null);
  const points = sweepPoints(stage, by);
  const { metric, goal, best_trial: best } = stage.objective;
  useEffect(() => {
    if (!ref.current || points.length === 0) return undefined;
    const data = [points.map((p) => p.x), points.map((p) => p.y), points.map((p) => (p.best ? p.y : null))];
    const plot = new uPlot({
      width: Math.min(800, ref.current.clientWidth || 800), height: 220,
      series: [{ label: by },
        { label: metric, stroke: '#0072B2', paths: () => null, points: { show: true, size: 8, fill: '#0072B2' } },
        { label: 'best', stroke: '#D55E00', paths: () => null, points: { show: true, size: 14, width: 3, fill: 'transparent' } }],
      scales: { x: { time: false } },
      axes: [{ label: by === 'trial' ? 'trial' : `parameter ${by}` }, { label: `${metric} (${goal})` }],
    }, data, ref.current);
    return () => plot.destroy();
  }, [JSON.stringify(points), by]);
  const params = numericParams(stage);
  return html`<figure class="sweep" data-testid=${`sweep-${stage.name}`}>
    <figcaption><b>${stage.name}</b>: ${metric} of each trial (${goal}),
      ${best ? html`best <span data-testid="best-trial">trial ${best}</span>` : 'no best trial yet'}
      ${params.length ? html` · x axis <select aria-label="x axis" value=${by} onChange=${(e) => setBy(e.target.value)}>
        ${['trial', ...params].map((p) => html`<option value=${p}>${p}</option>`)}</select>` : null}</figcaption>
    ${points.length === 0 ? html`<p class="muted">No trial has published ${metric} yet.</p>`
      : html`<div ref=${ref} class="chart" role="img" aria-label=${`${metric} by ${by}: ${points.map((p) => `trial ${p.trial} ${p.y}`).join(', ')}`}></div>`}
  </figure>`;
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
        <div>${s.jobs.map((j) => html`<span class="stage-job"><${JobLink} id=${j.id} />${j.trial ? html` trial ${j.trial.index}/${j.trial.count}${s.objective && s.objective.best_trial === j.trial.index ? html` <b class="best">(best)</b>` : null}` : null} <span class=${`dot state-${j.state}`} title=${j.state}>${j.state}</span></span> `)}</div>
        <div class="muted">${duration(s.run_time_ms)} run${critical.has(s.name) ? ' · critical path' : ''}</div>
      </div>`)}</div>`)}
    </div>
    ${stages.filter((st) => st.objective).map((st) => html`<${SweepChart} key=${st.name} stage=${st} />`)}
  </section>`;
}
