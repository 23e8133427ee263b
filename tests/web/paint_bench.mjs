// First useful paint of the dashboard at scale (docs/benchmarks.md, "Dashboard"): a fresh
// `drover server` with NODES declared nodes (8 H100 each) and JOBS jobs held infeasible (as
// bench/listing_bench.sh), then each page loaded RUNS times in a fresh tab of Debian's Chromium,
// logged in (the token put in sessionStorage before the page's scripts run). Prints, per page,
// the median and slowest of: first contentful paint (the browser's paint timing) and first
// useful paint (the app's performance mark `drover-useful`: the first frame after a page's data
// was rendered), in ms since navigation start.
//   node tests/web/paint_bench.mjs DROVER_BINARY [RUNS]
// Environment: JOBS (10000), NODES (1000).
import { writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { startServer } from './lib.mjs';

const [binary, runsText] = process.argv.slice(2);
const runs = Number(runsText || 5);
const jobs = Number(process.env.JOBS || 10000);
const nodes = Number(process.env.NODES || 1000);
const work = mkdtempSync(join(tmpdir(), 'drover-paint-'));
const nodeFile = join(work, 'nodes.yaml');
writeFileSync(nodeFile, `nodes:\n${Array.from({ length: nodes }, (_, i) =>
  `  - {name: n${i + 1}, cpu: "8", memory: 32Gi, gpus: 8xH100-80GB}`).join('\n')}\n`);
const server = await startServer(binary, { args: ['--nodes', nodeFile] });
const t0 = Date.now();
for (let first = 1; first <= jobs; first += 1000) {
  const last = Math.min(jobs, first + 999);
  const docs = [];
  for (let i = first; i <= last; i++) {
    docs.push(`kind: Job\nname: j${i}\nresources: {cpu: 64, memory: 100Mi, gpus: 1}\ncommand: ["true"]\n`);
  }
  await server.api('/v1/jobs', { method: 'POST', body: docs.join('---\n'),
    headers: { 'X-Drover-Hold-Infeasible': 'true' } });
}
console.log(`filled: ${jobs} jobs, ${nodes} nodes in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
const browser = await chromium.launch({ executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  args: ['--no-sandbox'] });
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
try {
  for (const page of ['cluster', 'jobs', 'queues']) {
    const fcp = [];
    const useful = [];
    for (let r = 0; r < runs; r++) {
      const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
      await context.addInitScript((token) => sessionStorage.setItem('drover.token', token), server.token);
      const tab = await context.newPage();
      await tab.goto(`${server.url}/#/${page}`);
      await tab.waitForFunction(() => performance.getEntriesByName('drover-useful').length > 0,
        null, { timeout: 60000 });
      const [paint, mark, calls] = await tab.evaluate(() => [
        performance.getEntriesByName('first-contentful-paint')[0]?.startTime ?? NaN,
        performance.getEntriesByName('drover-useful')[0].startTime,
        performance.getEntriesByType('resource').filter((e) => e.name.includes('/v1/'))
          .map((e) => `${new URL(e.name).pathname} ${e.startTime.toFixed(0)}-${e.responseEnd.toFixed(0)}`)]);
      if (process.env.VERBOSE) console.log(`  ${page} run ${r}: ${calls.join(', ')}`);
      fcp.push(paint);
      useful.push(mark);
      await context.close();
    }
    console.log(`${page}: first contentful paint median ${median(fcp).toFixed(0)} ms (max ` +
      `${Math.max(...fcp).toFixed(0)}), first useful paint median ${median(useful).toFixed(0)} ms ` +
      `(max ${Math.max(...useful).toFixed(0)})`);
  }
} finally {
  await browser.close();
  await server.stop();
}
