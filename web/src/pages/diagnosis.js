// Diagnosis (GET /v1/diagnosis: one call, the server examines the newest jobs the caller may
// view): the findings grouped as idle allocations, input-bound jobs, fragmentation waits,
// recovery overhead and the rest, each row linking to its job; and the waste per team.
import { api } from '../api.js';
import { html, useLive, Loading, ErrorNote, JobLink, StateBadge } from '../lib.js';

// The finding kinds (docs/observability.md, "Diagnosis") under the headings the page shows;
// a kind not named here falls under the last.
const kGroups = [
  ['Idle allocations', ['allocated_idle', 'idle_gpus', 'cpu_stage_holding_gpus', 'low_gpu_activity']],
  ['Input-bound jobs', ['input_bound_cpu', 'input_bound_io']],
  ['Fragmentation waits', ['waiting_for_shape']],
  ['Recovery overhead', ['recovery_overhead']],
  ['Other findings', []],
];

// The rows {job, finding} of `jobs` (GET /v1/diagnosis's, ranked by waste) under each heading.
function groupFindings(jobs) {
  const groups = kGroups.map(([title, kinds]) => ({ title, kinds, rows: [] }));
  const other = groups[groups.length - 1];
  for (const job of jobs) {
    for (const finding of job.findings) {
      const group = groups.find((g) => g.kinds.includes(finding.kind)) || other;
      group.rows.push({ job, finding });
    }
  }
  return groups;
}

const hours = (h) => h.toFixed(2);

export function Diagnosis() {
  const { data, error } = useLive(() => api('/v1/diagnosis'), [], (e) => e.type === 'job');
  if (!data) return html`<${ErrorNote} error=${error} /><${Loading} what="findings" />`;
  const groups = groupFindings(data.jobs);
  return html`<section><h1>Diagnosis</h1><${ErrorNote} error=${error} />
    <p>${groups.map((g) => html`<span class="layer">${g.title}: ${g.rows.length}</span> `)}
      <span class="muted">findings of the ${data.examined} newest jobs${data.more ? ' (more not examined)' : ''}</span></p>
    <h2>Waste by team</h2>
    <table data-testid="diagnosis-teams"><thead><tr><th>Team</th><th>Jobs</th><th>With findings</th><th>Wasted GPU h</th><th>Idle GPU h</th><th>Lost GPU h</th></tr></thead>
    <tbody>${data.teams.map((t) => html`<tr><th scope="row">${t.team || '(none)'}</th><td>${t.jobs}</td><td>${t.jobs_with_findings}</td>
      <td>${hours(t.wasted_gpu_hours)}</td><td>${hours(t.idle_gpu_hours)}</td><td>${hours(t.lost_gpu_hours)}</td></tr>`)}</tbody></table>
    ${groups.map((g) => html`<h2>${g.title}</h2>
      ${g.rows.length === 0 ? html`<p class="muted">None.</p>` : html`<table data-testid=${`findings-${g.kinds[0] || 'other'}`}>
      <thead><tr><th>Job</th><th>Name</th><th>Owner</th><th>State</th><th>Wasted GPU h</th><th>Finding</th><th>Evidence</th><th>Threshold</th></tr></thead>
      <tbody>${g.rows.map(({ job, finding }) => html`<tr><td><${JobLink} id=${job.job_id} /></td><td>${job.name}</td><td>${job.owner}</td>
        <td><${StateBadge} state=${job.state} /></td><td>${hours(job.wasted_gpu_hours)}</td><td><b>${finding.kind}</b></td>
        <td>${finding.evidence}</td><td class="muted">${finding.threshold}</td></tr>`)}</tbody></table>`}`)}
  </section>`;
}
