// Cluster: every GPU a cell (GET /v1/gpus), grouped by node with the node's state and
// conditions (GET /v1/nodes). A cell's state shows as colour and as a symbol and pattern, so it
// reads without colour; its job and owner show on hover and on keyboard focus.
import { Component } from 'preact';
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { api } from '../api.js';
import { html, useLive, Loading, ErrorNote, bytes, StateBadge } from '../lib.js';

const kSymbols = { idle: '○', allocated: '◐', active: '●' };
const kCellsPerNodeShown = 64;
// Samples reach the server in 10 s batches and raise no event: the map reloads this often.
const kSampleRefreshMs = 5000;
// Nodes drawn in the first frame (more than a 1280x800 screen holds), then per later frame.
const kFirstNodes = 80;
const kNodesPerChunk = 100;

function describe(gpu) {
  const who = gpu.job ? `job ${gpu.job} (${gpu.owner})` : gpu.state === 'idle' ? 'free' : 'a job you cannot see';
  const util = gpu.utilization_pct === null ? 'no sample' : `${gpu.utilization_pct}% active`;
  const memory = gpu.memory_used_bytes !== null ? ` · ${bytes(gpu.memory_used_bytes)}` : '';
  return [`${gpu.node} · GPU ${gpu.index} ${gpu.model}`, `${gpu.state} · ${who}`, `${util}${memory}`];
}

// A cell is a bare button (thousands of them on a large cluster); one shared tooltip shows the
// hovered or focused cell's job, owner and activity.
function GpuCell({ gpu, at }) {
  return html`<button class=${`gpu gpu-${gpu.state}`} data-state=${gpu.state} data-at=${at}
      data-testid=${`gpu-${gpu.node}-${gpu.index}`} aria-label=${describe(gpu).join(', ')}
      >${kSymbols[gpu.state]}</button>`;
}

// A click or Enter on a cell opens its job's page.
function openJob(gpus, event) {
  const cell = event.target.closest && event.target.closest('button.gpu[data-at]');
  const gpu = cell && gpus[Number(cell.dataset.at)];
  if (gpu && gpu.job) location.hash = `#/jobs/${gpu.job}`;
}

function showTip(tip, gpus, event) {
  const cell = event.target.closest && event.target.closest('button.gpu[data-at]');
  if (!cell) {
    tip.hidden = true;
    return;
  }
  const lines = describe(gpus[Number(cell.dataset.at)]);
  tip.replaceChildren(...lines.flatMap((line, i) => (i ? [document.createElement('br'), line] : [line])));
  const box = cell.getBoundingClientRect();
  tip.style.left = `${box.left + window.scrollX}px`;
  tip.style.top = `${box.bottom + window.scrollY + 4}px`;
  tip.hidden = false;
}

// One node and its cells; redrawn only when its own data changed (a large map is drawn in
// chunks, and each chunk must not redraw the ones before it).
class NodeBlock extends Component {
  shouldComponentUpdate(next) {
    return next.node !== this.props.node || next.cells !== this.props.cells;
  }

  render({ node, cells }) {
    return html`<div class=${`node node-${node.state}`}>
      <div class="node-head"><b>${node.name}</b> ${node.state ? html`<${StateBadge} state=${node.state} />` : null}
        ${node.conditions.filter((c) => c.type !== 'ready').map((c) => html` <span class="cond" title=${c.message || ''}>${c.type}${c.by ? ` by ${c.by}` : ''}</span>`)}
      </div>
      <div class="gpus">${cells.slice(0, kCellsPerNodeShown).map(([gpu, at]) => html`<${GpuCell} gpu=${gpu} at=${at} key=${gpu.index} />`)}
        ${cells.length === 0 ? html`<span class="muted">no GPUs</span>` : null}</div>
    </div>`;
  }
}

export function Cluster() {
  const tipRef = useRef(null);
  // The GPUs first (they name their nodes): the map paints without waiting for the nodes'
  // conditions, which fill in when GET /v1/nodes answers.
  const relevant = (e) => e.type === 'node' || e.type === 'decision' || e.type === 'job';
  const { data, error } = useLive(() => api('/v1/gpus'), [], relevant, kSampleRefreshMs);
  // Asked for once the GPUs are in, so that the two do not compete at the server.
  const nodeList = useLive(() => (data ? api('/v1/nodes') : Promise.resolve(null)), [!data],
    (e) => e.type === 'node');
  const layout = useMemo(() => {
    if (!data) return null;
    const nodeByName = new Map(((nodeList.data && nodeList.data.nodes) || []).map((n) => [n.name, n]));
    const byNode = new Map();
    data.gpus.forEach((gpu, at) => (byNode.get(gpu.node) || byNode.set(gpu.node, []).get(gpu.node)).push([gpu, at]));
    for (const name of nodeByName.keys()) if (!byNode.has(name)) byNode.set(name, []);
    return [...byNode.entries()].map(([name, cells]) => [nodeByName.get(name) || { name, state: null, conditions: [] }, cells]);
  }, [data, nodeList.data]);
  // Large clusters paint the first nodes at once and the rest a chunk per frame after.
  const [shown, setShown] = useState(kFirstNodes);
  useEffect(() => {
    if (!layout || shown >= layout.length) return undefined;
    const timer = setTimeout(() => setShown(shown + kNodesPerChunk), 0);
    return () => clearTimeout(timer);
  }, [layout, shown]);
  if (!data) return html`<${ErrorNote} error=${error} /><${Loading} what="the cluster" />`;
  const { gpus } = data;
  const nodes = layout;
  const counts = { idle: 0, allocated: 0, active: 0 };
  for (const gpu of gpus) counts[gpu.state]++;
  return html`<section aria-labelledby="cluster-title">
    <h1 id="cluster-title">Cluster</h1>
    <${ErrorNote} error=${error} />
    <p class="legend" aria-label="Legend">
      ${['idle', 'allocated', 'active'].map((s) => html`<span class="legend-item">
        <span class=${`gpu gpu-${s} mini`} aria-hidden="true">${kSymbols[s]}</span>
        ${s} <b data-testid=${`count-${s}`}>${counts[s]}</b></span>`)}
      <span class="muted">${nodes.length} ${nodes.length === 1 ? 'node' : 'nodes'}, ${gpus.length} ${gpus.length === 1 ? 'GPU' : 'GPUs'}. Activity from each node's latest sample.</span>
    </p>
    <div id="gpu-tip" class="tip" role="tooltip" ref=${tipRef} hidden></div>
    <div class="nodes" onMouseOver=${(e) => showTip(tipRef.current, gpus, e)}
      onFocusIn=${(e) => showTip(tipRef.current, gpus, e)} onClick=${(e) => openJob(gpus, e)} onMouseLeave=${() => { tipRef.current.hidden = true; }}>
      ${nodes.slice(0, shown).map(([node, cells]) => html`<${NodeBlock} node=${node} cells=${cells} key=${node.name} />`)}
    </div>
  </section>`;
}
