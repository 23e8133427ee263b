// Job: summary, the Gantt of its attempts and their phases, workers and GPUs, the GPU activity
// chart (GET /v1/jobs/{id}/usage, uPlot), the decision log, explain, findings, and the logs'
// tail with follow (GET /v1/jobs/{id}/logs, long poll).
import { useEffect, useRef, useState } from 'preact/hooks';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { api, session } from '../api.js';
import { html, useLive, Loading, ErrorNote, StateBadge, JobLink, time, duration, bytes } from '../lib.js';

// The phases of an attempt, in order, from the times the stored attempt carries.
const kPhases = [
  ['queue', 'ready_at', 'dequeued_at'],
  ['admission', 'dequeued_at', 'admitted_at'],
  ['placement', 'admitted_at', 'placed_at'],
  ['startup', 'placed_at', 'running_at'],
  ['run', 'running_at', 'finished_at'],
];

const kFinishedStates = ['succeeded', 'failed', 'cancelled', 'timed_out', 'skipped'];
// Half the server's usage bucket (10 s), so a new bucket shows within one bucket's time.
const kUsageRefreshMs = 5000;

function Gantt({ job, now }) {
  const rows = [];
  for (const attempt of job.attempts || []) {
    for (const [phase, from, to] of kPhases) {
      const start = attempt[from];
      if (!start) continue;
      const end = attempt[to] || (attempt.finished_at ? 0 : now);
      if (!end || end < start) continue;
      rows.push({ attempt: attempt.number, phase, start, end });
    }
  }
  if (rows.length === 0) return html`<p class="muted">No attempt has started yet.</p>`;
  const t0 = Math.min(job.created_at, ...rows.map((r) => r.start));
  const t1 = Math.max(...rows.map((r) => r.end), t0 + 1);
  const x = (t) => (100 * (t - t0)) / (t1 - t0);
  const attempts = [...new Set(rows.map((r) => r.attempt))];
  return html`<figure class="gantt" aria-label="Timeline of attempts and phases">
    ${attempts.map((a) => html`<div class="gantt-row"><span class="gantt-label">attempt ${a}</span>
      <div class="gantt-track">${rows.filter((r) => r.attempt === a).map((r) => html`<span
        class=${`phase phase-${r.phase}`} style=${{ left: `${x(r.start)}%`, width: `${Math.max(0.5, x(r.end) - x(r.start))}%` }}
        title=${`${r.phase}: ${duration(r.end - r.start)}`} tabindex="0" aria-label=${`attempt ${a} ${r.phase} ${duration(r.end - r.start)}`}>${r.phase}</span>`)}</div></div>`)}
    <figcaption class="muted">${time(t0)} → ${time(t1)} (${duration(t1 - t0)})</figcaption>
  </figure>`;
}

function UsageChart({ usage }) {
  const ref = useRef(null);
  useEffect(() => {
    if (!ref.current || !usage || usage.buckets.length === 0) return undefined;
    const mean = (s) => (s && s.count ? s.sum / s.count : null);
    const data = [
      usage.buckets.map((b) => b.start_at / 1000),
      usage.buckets.map((b) => mean(b.gpu_util)),
      usage.buckets.map((b) => {
        const m = mean(b.gpu_memory);
        return m === null ? null : m / 2 ** 30;
      }),
    ];
    const plot = new uPlot({
      width: Math.min(1100, ref.current.clientWidth || 900), height: 220,
      series: [{}, { label: 'GPU activity %', stroke: '#1f77b4', width: 2 },
        { label: 'GPU memory GiB', stroke: '#d62728', dash: [6, 4], scale: 'GiB' }],
      axes: [{}, { label: '%' }, { side: 1, scale: 'GiB', label: 'GiB', grid: { show: false } }],
      // Each point is a 10 s bucket's start: the axis spans the buckets' time (one bucket alone
      // would otherwise get a range uPlot widens to years).
      scales: { x: { time: true, range: (u, min, max) => [min, max + 10] }, y: { range: [0, 100] } },
    }, data, ref.current);
    return () => plot.destroy();
  }, [usage]);
  if (!usage || usage.buckets.length === 0) return html`<p class="muted">No samples for this job.</p>`;
  return html`<div ref=${ref} class="chart" aria-label="GPU activity and memory over time"></div>`;
}

function Logs({ id }) {
  const [text, setText] = useState('');
  const [follow, setFollow] = useState(false);
  const [note, setNote] = useState('');
  useEffect(() => {
    let stopped = false;
    let offset = -16384;
    setText('');
    (async () => {
      do {
        const query = new URLSearchParams({ offset: String(offset) });
        if (follow) query.set('wait_ms', '20000');
        try {
          const r = await fetch(`/v1/jobs/${id}/logs?${query}`, {
            headers: { Authorization: `Bearer ${session.token()}` } });
          if (!r.ok) {
            setNote(`logs: ${(await r.json().catch(() => ({}))).message || r.status}`);
            return;
          }
          const chunk = await r.text();
          if (stopped) return;
          if (chunk) setText((t) => (t + chunk).slice(-65536));
          offset = Number(r.headers.get('X-Drover-Next-Offset') || offset);
          const finished = r.headers.get('X-Drover-Finished') === '1';
          setNote(finished ? 'the worker has exited' : r.headers.get('X-Drover-Started') === '0' ? 'not started yet' : '');
          if (finished) return;
        } catch {
          return;
        }
      } while (follow && !stopped);
    })();
    return () => { stopped = true; };
  }, [id, follow]);
  return html`<div>
    <label><input type="checkbox" checked=${follow} onChange=${(e) => setFollow(e.target.checked)} /> follow</label>
    <span class="muted"> ${note}</span>
    <pre class="logs" tabindex="0" aria-label="Logs of rank 0, stdout">${text || '(empty)'}</pre>
  </div>`;
}

function Decision({ d }) {
  return html`<li class=${`decision decision-${d.kind}`} data-kind=${d.kind}>
    <time>${time(d.at)}</time> <b>${d.kind}</b> (attempt ${d.attempt}) ${d.summary}
    ${d.victims && d.victims.length ? html` — victims: ${d.victims.map((v) => html`<${JobLink} id=${v.job_id} /> (${v.gpus} GPUs, ${v.lost_gpu_seconds.toFixed(0)} GPU·s lost) `)}` : null}
    ${d.kind === 'evicted' && d.preemptor ? html` by job <${JobLink} id=${d.preemptor} />` : null}
  </li>`;
}

export function Job({ id }) {
  const { data, error, reload } = useLive(async () => {
    const [job, decisions, explain, usage] = await Promise.all([
      api(`/v1/jobs/${id}`),
      api(`/v1/jobs/${id}/decisions`),
      api(`/v1/jobs/${id}/explain`).catch(() => null),
      api(`/v1/jobs/${id}/usage`).catch(() => null),
    ]);
    return { job, decisions: decisions.decisions, explain, usage, now: Date.now() };
  }, [id], (e) => e.type !== 'node' && (e.data.job_id === Number(id) ||
      (e.data.victims || []).some((v) => v.job_id === Number(id))));
  // A job's samples reach the server in batches that raise no event: while it is not finished,
  // the page reloads every kUsageRefreshMs as well, so the chart and the findings keep up.
  const active = data !== null && !kFinishedStates.includes(data.job.state);
  useEffect(() => {
    if (!active) return undefined;
    const interval = setInterval(reload, kUsageRefreshMs);
    return () => clearInterval(interval);
  }, [active, id]);
  if (!data) return html`<${ErrorNote} error=${error} /><${Loading} what=${`job ${id}`} />`;
  const { job, decisions, explain, usage } = data;
  // The workers of the latest attempt that placed any (a requeued job's next has none yet).
  const attempt = [...(job.attempts || [])].reverse().find((a) => a.workers && a.workers.length);
  return html`<section>
    <h1>Job ${job.id}: ${job.name} <${StateBadge} state=${job.state} /></h1>
    <${ErrorNote} error=${error} />
    <dl class="facts">
      <dt>Owner</dt><dd>${job.owner} (${job.team})</dd><dt>Queue</dt><dd>${job.queue}</dd>
      <dt>Workers × GPUs</dt><dd>${job.workers} × ${job.workers ? job.gpus / job.workers : 0}</dd>
      <dt>Created</dt><dd>${time(job.created_at)}</dd><dt>Attempts</dt><dd>${job.attempt}</dd>
      ${job.pipeline_run ? html`<dt>Pipeline run</dt><dd><a href=${`#/pipelines/${job.pipeline_run}`}>${job.pipeline_run}</a></dd>` : null}
      ${job.message ? html`<dt>Message</dt><dd>${job.message}</dd>` : null}
    </dl>
    ${explain && !kFinishedStates.includes(job.state) ? html`
    <section class="explain" data-testid="explain" aria-label="Explain">
      <h2>Explain</h2>
      <p><span class="layer" data-testid="verdict-layer">${explain.layer}</span> <span data-testid="verdict">${explain.message}</span></p>
      <p>Estimated start: <b data-testid="estimate">${explain.estimated_start ? time(explain.estimated_start) : 'unknown'}</b>
        ${explain.estimate_basis ? html` <span class="muted">(${explain.estimate_basis})</span>` : null}</p>
      ${explain.position ? html`<p>Position: ${explain.position.in_queue} in queue ${explain.position.queue}, ${explain.position.in_cluster} in the cluster</p>` : null}
    </section>` : null}
    <h2>Timeline</h2>
    <${Gantt} job=${job} now=${data.now} />
    <h2>Workers${attempt ? ` (attempt ${attempt.number})` : ''}</h2>
    ${attempt && attempt.workers && attempt.workers.length ? html`<table><thead><tr><th>Rank</th><th>Node</th><th>GPUs</th><th>State</th><th>Started</th></tr></thead>
      <tbody>${attempt.workers.map((w) => html`<tr><td>${w.rank}</td><td>${w.node}</td><td>${(w.gpus || []).join(', ')}</td><td>${w.state}</td><td>${time(w.started_at)}</td></tr>`)}</tbody></table>`
      : html`<p class="muted">No workers placed.</p>`}
    <h2>GPU activity</h2>
    <${UsageChart} usage=${usage} />
    ${usage && usage.findings && usage.findings.length ? html`<h2>Findings</h2><ul>${usage.findings.map((f) => html`<li><b>${f.kind}</b>: ${f.evidence} <span class="muted">(${f.threshold})</span></li>`)}</ul>` : null}
    <h2>Decision log</h2>
    ${decisions.length ? html`<ol class="decisions" data-testid="decisions">${decisions.map((d) => html`<${Decision} d=${d} />`)}</ol>` : html`<p class="muted">No decisions yet.</p>`}
    <h2>Logs</h2>
    <${Logs} id=${id} />
  </section>`;
}
