// The dashboard in a real browser (docs/dashboard.md): Debian's Chromium, headless, driven by
// playwright-core, against a real `drover server` whose one node has 8 GPUs of the fake
// libnvidia-ml (scripted: 0-3 idle, 4-7 at 80%) and a policy with preemption. Run by ctest
// (web.browser):
//   node tests/web/dashboard.mjs DROVER_BINARY FAKE_NVML_LIBRARY
// Checks, in one browser: logging in with a token (a wrong one refused); a running pipeline's
// stages turning green live, without a reload; the GPU map's cells against GET /v1/gpus; a
// pending job's verdict and estimate against GET /v1/jobs/{id}/explain; a preemption appearing
// live in the victim's decision log; a sweep's trials charted against its objective; the
// diagnosis page against GET /v1/diagnosis; the pending view (GET /v1/jobs?pending=1); and
// `drover run` serving the dashboard and the API while it runs. With DROVER_WEB_SCREENSHOTS=DIR it writes a screenshot of
// each page there (docs/img/ for docs/dashboard.md); without, it writes none.
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { fakeNvml, runDrover, startServer, submit, waitFor } from './lib.mjs';

const [binary, nvmlLibrary] = process.argv.slice(2);
if (!binary || !nvmlLibrary) {
  console.error('usage: dashboard.mjs DROVER_BINARY FAKE_NVML_LIBRARY');
  process.exit(2);
}
const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..', '..');
const shots = process.env.DROVER_WEB_SCREENSHOTS;
if (shots) mkdirSync(shots, { recursive: true });
const chromiumPath = process.env.CHROMIUM || '/usr/bin/chromium';
const started = Date.now();
const step = (what) => console.log(`[${((Date.now() - started) / 1000).toFixed(1)}s] ${what}`);

const nvml = fakeNvml(nvmlLibrary, [0, 0, 0, 0, 80, 80, 80, 80]);
const server = await startServer(resolve(binary), {
  env: nvml.env,
  args: ['--policy', join(here, 'testdata', 'policy.yaml'), '--gpu-sample-interval', '200ms',
    '--process-sample-interval', '500ms', '--diagnosis-min-sampled', '4s'],
});
const browser = await chromium.launch({ executablePath: chromiumPath, args: ['--no-sandbox'] });
const errors = [];
let failed = false;
try {
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  page.on('pageerror', (e) => errors.push(String(e)));
  const shoot = async (name) => {
    if (shots) await page.screenshot({ path: join(shots, `${name}.png`), fullPage: true });
  };

  step('the page, and logging in');
  const index = await fetch(`${server.url}/`);
  assert.equal(index.status, 200);
  assert.match(index.headers.get('content-type'), /text\/html/);
  assert.equal(index.headers.get('cache-control'), 'no-cache');
  await page.goto(server.url);
  await page.getByLabel('API token').fill('not-a-token');
  await page.getByRole('button', { name: 'Log in' }).click();
  await page.getByText('That token is not accepted.').waitFor();
  await shoot('login');
  await page.getByLabel('API token').fill(server.token);
  await page.keyboard.press('Enter');  // the form submits from the keyboard
  await page.getByTestId('live').getByText('live').waitFor();
  // The token never travels in a URL: not in the page's address, nor in any request's.
  assert.ok(!page.url().includes(server.token));
  const requested = [];
  page.on('request', (r) => requested.push(r.url()));
  await page.evaluate(() => { window.notReloaded = true; });

  step('a pipeline run turns green live');
  const workflow = readFileSync(join(here, 'testdata', 'pipeline.yaml'), 'utf8');
  const ids = await submit(server, workflow);
  const job = await server.api(`/v1/jobs/${ids[0]}`);
  const run = job.pipeline_run;
  await page.goto(`${server.url}/#/pipelines/${run}`);
  await page.locator('[data-stage=prepare]').waitFor();
  const seen = new Set();
  await waitFor('every stage to succeed', async () => {
    const states = await page.locator('[data-stage]').evaluateAll((els) => els.map((e) => e.dataset.state));
    states.forEach((s) => seen.add(s));
    return states.length === 3 && states.every((s) => s === 'succeeded');
  }, 90000, 100);
  assert.ok(seen.size > 1, `the stages showed only ${[...seen]}: no live change was seen`);
  const green = await page.locator('[data-stage=evaluate]').evaluate((e) => getComputedStyle(e).borderColor);
  assert.equal(green, 'rgb(0, 158, 115)');  // Okabe-Ito green
  assert.equal(await page.evaluate(() => window.notReloaded), true);
  // The sweep charted against its objective, its best trial marked as the API says.
  const train = (await server.api(`/v1/pipelines/${run}`)).stages.find((st) => st.name === 'train');
  assert.deepEqual(train.objective, { metric: 'loss', goal: 'minimize', best_trial: 2 });
  assert.deepEqual(train.jobs.map((j) => Number(j.outputs.loss)), [1, 0.2, 3]);
  const sweep = page.getByTestId('sweep-train');
  await sweep.getByTestId('best-trial').getByText('trial 2').waitFor();
  await sweep.locator('canvas').first().waitFor();
  assert.match(await sweep.locator('[role=img]').getAttribute('aria-label'),
    /^loss by trial: trial 1 1, trial 2 0.2, trial 3 3$/);
  await sweep.getByLabel('x axis').selectOption('lr');
  await sweep.locator('[role=img][aria-label^="loss by lr"]').waitFor();
  assert.match(await sweep.locator('[role=img]').getAttribute('aria-label'),
    /^loss by lr: trial 2 0.2, trial 1 1, trial 3 3$/);
  await shoot('pipeline');

  step('the GPU map against GET /v1/gpus');
  const worker = join(root, 'tests/integration/testdata/preemption/checkpointing_worker.sh');
  const scratch = server.dir;
  const [victim] = await submit(server, `kind: Job
name: b-train
queue: team-b
interruptible: true
checkpoint_dir: ${scratch}/b-ckpt
resources: {cpu: 100m, memory: 64Mi, gpus: 6}
command: [sh, "${worker}", "${scratch}/b.log", "100000"]
`);
  await waitFor('b-train to run', async () => (await server.api(`/v1/jobs/${victim}`)).state === 'running');
  await page.goto(`${server.url}/#/cluster`);
  // Samples reach the server in 10 s batches; the map refreshes on its own.
  await page.locator('[data-state=active]').first().waitFor({ timeout: 60000 });
  await waitFor('the map to match the API', async () => {
    const { gpus } = await server.api('/v1/gpus');
    const shown = await page.locator('button.gpu[data-testid^=gpu-]').evaluateAll((els) =>
      els.map((e) => [e.dataset.testid, e.dataset.state]));
    const expected = gpus.map((g) => [`gpu-${g.node}-${g.index}`, g.state]);
    return expected.length > 0 && JSON.stringify(shown) === JSON.stringify(expected);
  }, 30000, 500);
  const { gpus } = await server.api('/v1/gpus');
  const byState = {};
  for (const g of gpus) byState[g.state] = (byState[g.state] || 0) + 1;
  assert.deepEqual(byState, { allocated: 4, active: 2, idle: 2 }, JSON.stringify(gpus));
  // Each state its own colour and its own symbol (readable without colour).
  const looks = {};
  for (const state of ['idle', 'allocated', 'active']) {
    const cell = page.locator(`button.gpu[data-state=${state}]`).first();
    looks[state] = await cell.evaluate((e) => [getComputedStyle(e).backgroundImage + getComputedStyle(e).backgroundColor, e.textContent.trim()[0]]);
  }
  assert.equal(new Set(Object.values(looks).map((l) => l[0])).size, 3, JSON.stringify(looks));
  assert.equal(new Set(Object.values(looks).map((l) => l[1])).size, 3, JSON.stringify(looks));
  // Job and owner on keyboard focus.
  const held = gpus.find((g) => g.job === victim);
  const cell = page.getByTestId(`gpu-${held.node}-${held.index}`);
  await cell.focus();
  await page.locator('#gpu-tip').getByText(`allocated · job ${victim} (${held.owner})`).or(
    page.locator('#gpu-tip').getByText(`active · job ${victim} (${held.owner})`)).waitFor();
  await shoot('cluster');
  await page.keyboard.press('Enter');  // opens the job of the focused cell
  await page.waitForURL(`**/#/jobs/${victim}`);

  step('a pending job shows its verdict and estimate');
  const [pending] = await submit(server, `kind: Job
name: waits
queue: team-b
resources: {cpu: 100m, memory: 64Mi, gpus: 4}
command: [sleep, "1"]
`);
  await page.goto(`${server.url}/#/jobs/${pending}`);
  await page.locator('main h1').getByText(`Job ${pending}:`).waitFor();
  await page.getByTestId('verdict').waitFor();
  const explain = await server.api(`/v1/jobs/${pending}/explain`);
  assert.equal(await page.getByTestId('verdict-layer').textContent(), explain.layer);
  assert.equal(await page.getByTestId('verdict').textContent(), explain.message);
  const estimate = await page.getByTestId('estimate').textContent();
  assert.equal(estimate === 'unknown', explain.estimated_start === null, `${estimate} vs ${JSON.stringify(explain)}`);
  await page.goto(`${server.url}/#/jobs`);
  await page.getByTestId('jobs-table').getByText(explain.message).first().waitFor();
  await shoot('jobs');

  step('a preemption appears in the decision log');
  await page.goto(`${server.url}/#/jobs/${victim}`);
  await page.locator('[data-kind=placed]').first().waitFor();
  assert.equal(await page.locator('[data-kind=evicted]').count(), 0);
  await submit(server, `kind: Job
name: a-train
queue: team-a
resources: {cpu: 100m, memory: 64Mi, gpus: 4}
command: [sleep, "3"]
`);
  await page.locator('[data-kind=evicted]').first().waitFor({ timeout: 60000 });
  assert.equal(await page.evaluate(() => window.notReloaded), true);
  await page.locator('.chart canvas').first().waitFor({ timeout: 30000 });
  await shoot('job');

  step('the other pages');
  // A job that asks for 16 times the memory it uses, sampled past --diagnosis-min-sampled (4s):
  // the diagnosis page below has at least this finding to show.
  const [oversized] = await submit(server, `kind: Job
name: oversized
queue: team-a
resources: {cpu: 100m, memory: 256Mi}
command: [sleep, "6"]
`);
  for (const [hash, text] of [['queues', 'Verdict layers of'], ['goodput', 'Goodput by team']]) {
    await page.goto(`${server.url}/#/${hash}`);
    await page.locator('main h1').waitFor();
    await page.locator('main').getByText(text).first().waitFor();
    await shoot(hash);
  }
  step('the diagnosis page against GET /v1/diagnosis');
  await waitFor('the oversized job\'s finding in GET /v1/diagnosis', async () => {
    const { jobs } = await server.api('/v1/diagnosis');
    return jobs.some((j) => j.job_id === oversized &&
      j.findings.some((f) => f.kind === 'host_memory_over_requested'));
  }, 60000, 500);
  await page.goto(`${server.url}/#/diagnosis`);
  await page.getByTestId('diagnosis-teams').waitFor();
  await waitFor('the findings to match the API', async () => {
    const { jobs } = await server.api('/v1/diagnosis');
    const expected = jobs.flatMap((j) => j.findings.map((f) => `${j.job_id} ${f.kind}`)).sort();
    const shown = (await page.locator('table[data-testid^=findings-] tbody tr').evaluateAll((rows) =>
      rows.map((r) => `${r.cells[0].textContent} ${r.cells[5].textContent}`))).sort();
    return expected.length > 0 && JSON.stringify(shown) === JSON.stringify(expected);
  }, 30000, 500);
  await shoot('diagnosis');

  step('the pending jobs: every job not started, whatever it waits for');
  // One may wait for room (ready, while others hold the GPUs; it may also have started by
  // now), one waits for it (pending: the first runs for 20 s once it starts).
  const [forRoom, forDependency] = await submit(server, `kind: Job
name: needs-room
queue: team-b
resources: {cpu: 100m, memory: 64Mi, gpus: 4}
command: [sleep, "20"]
---
kind: Job
name: needs-room-first
queue: team-b
depends_on: [needs-room]
resources: {cpu: 100m, memory: 64Mi}
command: [sleep, "1"]
`);
  await page.goto(`${server.url}/#/jobs`);
  await page.locator('form.filters select').first().selectOption('not_started');
  await page.getByRole('button', { name: 'Filter' }).click();
  await waitFor('the pending view to match GET /v1/jobs?pending=1', async () => {
    const { jobs } = await server.api('/v1/jobs?pending=1&limit=50');
    const shown = await page.getByTestId('jobs-table').locator('tbody tr td:first-child').allTextContents();
    return JSON.stringify(shown) === JSON.stringify(jobs.map((j) => String(j.id))) && jobs;
  }, 30000, 500);
  const states = Object.fromEntries((await server.api('/v1/jobs?pending=1')).jobs.map((j) => [j.id, j.state]));
  // Listed while it waits for room (ready), gone once it started.
  assert.ok([undefined, 'ready'].includes(states[forRoom]), `needs-room listed as ${states[forRoom]}`);
  assert.equal(states[forDependency], 'pending');
  assert.ok(requested.some((u) => u.includes('/v1/jobs?') && u.includes('pending=1')));

  assert.ok(!requested.some((u) => u.includes(server.token)), 'a request URL carried the token');

  step('drover run serves the dashboard and the API while it runs');
  const ran = await runDrover(resolve(binary), join(here, 'testdata', 'run.yaml'));
  try {
    const served = await fetch(`${ran.url}/`);
    assert.equal(served.status, 200);
    assert.match(await served.text(), /<script type="module" src="\/assets\/app-/);
    const tab = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    tab.on('pageerror', (e) => errors.push(String(e)));
    await tab.goto(`${ran.url}/#/jobs`);
    await tab.getByLabel('API token').fill(ran.token);
    await tab.keyboard.press('Enter');
    await tab.getByTestId('live').getByText('live').waitFor();
    const row = tab.getByTestId('jobs-table').locator('tr', { hasText: 'run-sleeps' });
    await row.getByText('running').waitFor({ timeout: 30000 });
    await tab.close();
  } finally {
    await ran.stop();
  }
  assert.deepEqual(errors, []);
  step('passed');
} catch (e) {
  failed = true;
  console.error(e);
  console.error(`server log (tail):\n${server.log().slice(-4000)}`);
} finally {
  await browser.close();
  await server.stop();
  nvml.cleanup();
}
process.exit(failed ? 1 : 0);
