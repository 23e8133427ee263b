// Diagnosis: the findings of recent jobs (each job's GET /v1/jobs/{id}/usage: idle allocations,
// input-bound jobs, low activity, ...), with links to the jobs. Reads the usage of the newest
// kJobsExamined jobs that ran.
import { api } from '../api.js';
import { html, useLive, Loading, ErrorNote, JobLink, StateBadge } from '../lib.js';

const kJobsExamined = 100;

async function load() {
  const { jobs } = await api(`/v1/jobs?limit=${kJobsExamined}&order=desc`);
  const ran = jobs.filter((j) => j.attempt > 0 && j.metrics.run_time_ms > 0);
  const usages = await Promise.all(ran.map((j) => api(`/v1/jobs/${j.id}/usage`).catch(() => null)));
  const rows = [];
  ran.forEach((job, i) => {
    for (const f of (usages[i] && usages[i].findings) || []) rows.push({ job, ...f });
  });
  return { rows, examined: ran.length };
}

export function Diagnosis() {
  const { data, error } = useLive(load, [], (e) => e.type === 'job');
  if (!data) return html`<${ErrorNote} error=${error} /><${Loading} what="findings" />`;
  const kinds = {};
  for (const r of data.rows) kinds[r.kind] = (kinds[r.kind] || 0) + 1;
  return html`<section><h1>Diagnosis</h1><${ErrorNote} error=${error} />
    <p>${Object.entries(kinds).map(([k, n]) => html`<span class="layer">${k}: ${n}</span> `)}
      <span class="muted">findings of the ${data.examined} newest jobs that ran</span></p>
    <table><thead><tr><th>Job</th><th>Name</th><th>Owner</th><th>State</th><th>Finding</th><th>Evidence</th><th>Threshold</th></tr></thead>
    <tbody>${data.rows.map((r) => html`<tr><td><${JobLink} id=${r.job.id} /></td><td>${r.job.name}</td><td>${r.job.owner}</td>
      <td><${StateBadge} state=${r.job.state} /></td><td><b>${r.kind}</b></td><td>${r.evidence}</td><td class="muted">${r.threshold}</td></tr>`)}</tbody></table>
    ${data.rows.length === 0 ? html`<p class="muted">No findings.</p>` : null}</section>`;
}
