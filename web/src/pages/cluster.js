// Cluster: every GPU a cell (GET /v1/gpus), grouped by node with the node's state and
// conditions (GET /v1/nodes). A cell's state shows as colour and as a symbol and pattern, so it
// reads without colour; its job and owner show on hover and on keyboard focus.
import { api } from '../api.js';
import { html, useLive, Loading, ErrorNote, JobLink, bytes, StateBadge } from '../lib.js';

const kSymbols = { idle: '○', allocated: '◐', active: '●' };
const kCellsPerNodeShown = 64;
// Samples reach the server in 10 s batches and raise no event: the map reloads this often.
const kSampleRefreshMs = 5000;

function GpuCell({ gpu }) {
  const who = gpu.job ? `job ${gpu.job} (${gpu.owner})` : gpu.state === 'idle' ? 'free' : 'a job you cannot see';
  const util = gpu.utilization_pct === null ? 'no sample' : `${gpu.utilization_pct}% active`;
  const label = `${gpu.node} GPU ${gpu.index} ${gpu.model}: ${gpu.state}, ${who}, ${util}`;
  return html`<button class=${`gpu gpu-${gpu.state}`} data-state=${gpu.state}
      data-testid=${`gpu-${gpu.node}-${gpu.index}`} aria-label=${label}
      onClick=${() => gpu.job && (location.hash = `#/jobs/${gpu.job}`)}>
    <span aria-hidden="true">${kSymbols[gpu.state]}</span>
    <span class="tip" role="tooltip">${gpu.node} · GPU ${gpu.index} ${gpu.model}<br />
      ${gpu.state} · ${who}<br />${util}${gpu.memory_used_bytes !== null ? ` · ${bytes(gpu.memory_used_bytes)}` : ''}</span>
  </button>`;
}

export function Cluster() {
  const { data, error } = useLive(
    () => Promise.all([api('/v1/gpus'), api('/v1/nodes')]),
    [],
    (e) => e.type === 'node' || e.type === 'decision' || e.type === 'job',
    kSampleRefreshMs,
  );
  if (!data) return html`<${ErrorNote} error=${error} /><${Loading} what="the cluster" />`;
  const [{ gpus }, { nodes }] = data;
  const byNode = new Map(nodes.map((n) => [n.name, []]));
  for (const gpu of gpus) (byNode.get(gpu.node) || byNode.set(gpu.node, []).get(gpu.node)).push(gpu);
  const counts = { idle: 0, allocated: 0, active: 0 };
  for (const gpu of gpus) counts[gpu.state]++;
  return html`<section aria-labelledby="cluster-title">
    <h1 id="cluster-title">Cluster</h1>
    <${ErrorNote} error=${error} />
    <p class="legend" aria-label="Legend">
      ${['idle', 'allocated', 'active'].map((s) => html`<span class="legend-item">
        <span class=${`gpu gpu-${s} mini`} aria-hidden="true">${kSymbols[s]}</span>
        ${s} <b data-testid=${`count-${s}`}>${counts[s]}</b></span>`)}
      <span class="muted">${nodes.length} nodes, ${gpus.length} GPUs. Activity from each node's latest sample.</span>
    </p>
    <div class="nodes">
      ${nodes.map((node) => {
        const cells = byNode.get(node.name) || [];
        return html`<div class=${`node node-${node.state}`} key=${node.name}>
          <div class="node-head"><b>${node.name}</b> <${StateBadge} state=${node.state} />
            ${node.conditions.filter((c) => c.type !== 'ready').map((c) => html` <span class="cond" title=${c.message || ''}>${c.type}${c.by ? ` by ${c.by}` : ''}</span>`)}
          </div>
          <div class="gpus">${cells.slice(0, kCellsPerNodeShown).map((gpu) => html`<${GpuCell} gpu=${gpu} key=${gpu.index} />`)}
            ${cells.length === 0 ? html`<span class="muted">no GPUs</span>` : null}</div>
        </div>`;
      })}
    </div>
  </section>`;
}
