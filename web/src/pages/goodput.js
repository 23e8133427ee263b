// Goodput by team (GET /v1/goodput?by=team): GPU hours, results, hours per result and the
// hours lost to retries and preemptions, as numbers and as a stacked bar per team.
import { useState } from 'preact/hooks';
import { api } from '../api.js';
import { html, useLive, Loading, ErrorNote } from '../lib.js';

export function Goodput() {
  const [by, setBy] = useState('team');
  const { data, error } = useLive(() => api(`/v1/goodput?by=${by}`), [by], (e) => e.type === 'job');
  if (!data) return html`<${ErrorNote} error=${error} /><${Loading} what="goodput" />`;
  const scale = Math.max(1e-9, ...data.groups.map((g) => g.gpu_hours));
  const pct = (v) => `${(100 * v) / scale}%`;
  return html`<section><h1>Goodput by ${by}</h1><${ErrorNote} error=${error} />
    <label>group by <select value=${by} onChange=${(e) => setBy(e.target.value)}>
      ${['team', 'queue', 'owner'].map((b) => html`<option value=${b}>${b}</option>`)}</select></label>
    <p class="legend"><span class="sw g-useful"></span> kept <span class="sw g-retry"></span> lost to retries
      <span class="sw g-preempt"></span> lost to preemption</p>
    <table><thead><tr><th>${by}</th><th>Jobs</th><th>Succeeded</th><th>GPU hours</th><th>GPU h / result</th><th>Retry lost</th><th>Preemption lost</th><th class="wide">GPU time</th></tr></thead>
    <tbody>${data.groups.map((g) => {
      const kept = Math.max(0, g.gpu_hours - g.retry_lost_gpu_hours - g.preemption_lost_gpu_hours);
      return html`<tr><th scope="row">${g.name || '(none)'}</th><td>${g.jobs}</td><td>${g.succeeded}</td>
        <td>${g.gpu_hours.toFixed(3)}</td><td>${g.gpu_hours_per_result.toFixed(3)}</td>
        <td>${g.retry_lost_gpu_hours.toFixed(3)}</td><td>${g.preemption_lost_gpu_hours.toFixed(3)}</td>
        <td><div class="qbar" role="img" aria-label=${`${g.name}: ${g.gpu_hours.toFixed(2)} GPU hours`}>
          <div class="g-useful" style=${{ width: pct(kept) }}></div>
          <div class="g-retry" style=${{ left: pct(kept), width: pct(g.retry_lost_gpu_hours) }}></div>
          <div class="g-preempt" style=${{ left: pct(kept + g.retry_lost_gpu_hours), width: pct(g.preemption_lost_gpu_hours) }}></div>
        </div></td></tr>`;
    })}</tbody></table></section>`;
}
