// Queues (GET /v1/queues): quota, usage, borrowed and lent GPUs as bars, fair share, and the
// waiting jobs of each queue by the layer of their verdict (GET /v1/jobs/{id}/explain of the
// kPendingSampled newest jobs not started: GET /v1/jobs?pending=1).
import { api } from '../api.js';
import { html, useLive, useVerdicts, Loading, ErrorNote } from '../lib.js';

const kPendingSampled = 100;

function Bar({ queue, scale }) {
  const g = queue.gpus;
  const pct = (v) => `${Math.min(100, (100 * v) / scale)}%`;
  return html`<div class="qbar" role="img" aria-label=${`${queue.name}: usage ${g.usage} of nominal ${g.nominal ?? 'none'} GPUs, borrowed ${g.borrowed}, lent ${g.lent}`}>
    ${g.nominal !== null ? html`<div class="q-nominal" style=${{ width: pct(g.nominal) }}></div>` : null}
    <div class="q-usage" style=${{ width: pct(g.usage - g.borrowed) }}></div>
    <div class="q-borrowed" style=${{ left: pct(g.usage - g.borrowed), width: pct(g.borrowed) }}></div>
    ${g.lent > 0 ? html`<div class="q-lent" style=${{ left: pct(g.usage), width: pct(g.lent) }}></div>` : null}
  </div>`;
}

export function Queues() {
  const relevant = (e) => e.type === 'job' || e.type === 'decision';
  // The queues first: they paint without waiting for the pending jobs, asked for once they are in.
  const { data, error } = useLive(() => api('/v1/queues'), [], relevant);
  const waiting = useLive(() => (data ? api(`/v1/jobs?pending=1&limit=${kPendingSampled}`) : Promise.resolve(null)),
    [!data], relevant);
  const pending = waiting.data ? waiting.data.jobs : [];
  const verdicts = useVerdicts(waiting.data && waiting.data.jobs);
  if (!data) return html`<${ErrorNote} error=${error} /><${Loading} what="queues" />`;
  const layers = {};
  for (const job of pending) {
    const v = verdicts[job.id];
    if (!v) continue;
    const q = (layers[job.queue] ||= {});
    q[v.layer] = (q[v.layer] || 0) + 1;
  }
  const scale = 1.1 * Math.max(1, ...data.queues.map((q) => Math.max(q.gpus.nominal || 0, q.gpus.usage + q.gpus.lent)));
  return html`<section>
    <h1>Queues</h1>
    <${ErrorNote} error=${error} />
    <p class="legend"><span class="sw q-nominal"></span> nominal quota
      <span class="sw q-usage"></span> used within quota <span class="sw q-borrowed"></span> borrowed
      <span class="sw q-lent"></span> lent (GPUs)</p>
    <table>
      <thead><tr><th>Queue</th><th>GPUs</th><th class="wide">Quota and usage</th><th>Share</th><th>Running</th><th>Pending</th><th>Pending by verdict layer</th></tr></thead>
      <tbody>${data.queues.map((q) => html`<tr key=${q.path}>
        <th scope="row" style=${{ paddingLeft: `${0.5 + q.depth}em` }}>${q.name}</th>
        <td>${q.gpus.usage}${q.gpus.nominal !== null ? ` / ${q.gpus.nominal}` : ''}${q.gpus.borrowed ? ` (+${q.gpus.borrowed} borrowed)` : ''}${q.gpus.lent ? ` (${q.gpus.lent} lent)` : ''}</td>
        <td><${Bar} queue=${q} scale=${scale} /></td>
        <td>${q.share.toFixed(2)}</td><td>${q.running_jobs}</td><td>${q.pending_jobs}</td>
        <td>${Object.entries(layers[q.name] || {}).map(([layer, n]) => html`<span class="layer">${layer}: ${n}</span> `)}</td>
      </tr>`)}</tbody>
    </table>
    <p class="muted">Verdict layers of the ${pending.length}${waiting.data && waiting.data.next !== null ? ' newest' : ''} jobs not started yet.</p>
  </section>`;
}
