// Helpers of the browser test: a real `drover server` in a scratch directory, the API with its
// admin token, and waits.
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// Polls `fn` until it returns a truthy value (returned) or `timeoutMs` passes (throws `what`).
export async function waitFor(what, fn, timeoutMs = 60000, everyMs = 200) {
  const deadline = Date.now() + timeoutMs;
  let last;
  for (;;) {
    try {
      last = await fn();
      if (last) return last;
    } catch (e) {
      last = e;
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what} (last: ${last})`);
    await sleep(everyMs);
  }
}

// A drover server over a new data directory: {url, token, api(path, init), stop()}.
// `env` adds to the environment (the fake NVML), `args` to the command line.
export async function startServer(binary, { args = [], env = {}, keep = false } = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'drover-web-'));
  const ready = join(dir, 'ready.url');
  const child = spawn(binary, ['server', '--data', join(dir, 'data'), '--listen', '127.0.0.1:0',
    '--ready-file', ready, ...args], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (d) => { stderr = (stderr + d).slice(-20000); });
  await waitFor('the server to be ready', () => existsSync(ready) || child.exitCode !== null, 60000, 50);
  if (!existsSync(ready)) throw new Error(`drover server did not start:\n${stderr}`);
  const url = readFileSync(ready, 'utf8').trim();
  const token = readFileSync(join(dir, 'data', 'admin.token'), 'utf8').trim();
  const api = async (path, init = {}) => {
    const response = await fetch(url + path, {
      ...init, headers: { Authorization: `Bearer ${token}`, ...(init.headers || {}) } });
    const text = await response.text();
    if (!response.ok) throw new Error(`${init.method || 'GET'} ${path}: ${response.status} ${text}`);
    return text ? JSON.parse(text) : null;
  };
  // Cancels the jobs that hold workers (a server that stops leaves its workers running, to adopt
  // them when it starts again), again until none does (cancelling one may let another start), so
  // that no worker outlives the test and writes into `dir`.
  const cancelRunning = async () => {
    const active = ['placed', 'starting', 'running'];
    await waitFor('no job to hold workers', async () => {
      const { jobs } = await api(`/v1/jobs?limit=5000`);
      const running = jobs.filter((j) => active.includes(j.state));
      for (const job of running) {
        await api(`/v1/jobs/${job.id}/cancel`, { method: 'POST' }).catch(() => {});
      }
      return running.length === 0;
    }, 20000, 200);
  };
  const stop = async () => {
    if (child.exitCode === null) await cancelRunning().catch((e) => console.error(String(e)));
    child.kill('SIGTERM');
    await waitFor('the server to exit', () => child.exitCode !== null || child.signalCode !== null, 20000, 50)
      .catch(() => child.kill('SIGKILL'));
    if (!keep) rmSync(dir, { recursive: true, force: true });
  };
  return { url, token, api, stop, dir, log: () => stderr };
}

// `drover run FILE` on a new data directory, once it prints where its API is: {url, token,
// stop()}; stop() interrupts it (SIGINT: it cancels its jobs and exits).
export async function runDrover(binary, file) {
  const dir = mkdtempSync(join(tmpdir(), 'drover-web-run-'));
  const child = spawn(binary, ['run', file, '--data', join(dir, 'data')], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (d) => { output = (output + d).slice(-20000); });
  child.stderr.on('data', (d) => { output = (output + d).slice(-20000); });
  const url = await waitFor('drover run to print its API address', () => {
    if (child.exitCode !== null) throw new Error(`drover run exited:\n${output}`);
    const found = /API at (http:\/\/\S+) \(token in (\S+)\)/.exec(output);
    return found && found[1];
  }, 60000, 50);
  const token = readFileSync(join(dir, 'data', 'admin.token'), 'utf8').trim();
  const stop = async () => {
    child.kill('SIGINT');
    await waitFor('drover run to exit', () => child.exitCode !== null || child.signalCode !== null, 30000, 50)
      .catch(() => child.kill('SIGKILL'));
    rmSync(dir, { recursive: true, force: true });
  };
  return { url, token, stop };
}

// Submits a YAML text; the ids of the jobs it created.
export async function submit(server, yaml) {
  const body = await server.api('/v1/jobs', { method: 'POST', body: yaml,
    headers: { 'Content-Type': 'application/yaml' } });
  return body.jobs.map((j) => j.id);
}

// A directory holding the fake libnvidia-ml as libnvidia-ml.so.1 and a script for it: `gpus`
// GPUs, each at its utilization of `utils` (percent), repeated forever.
export function fakeNvml(library, utils) {
  const dir = mkdtempSync(join(tmpdir(), 'drover-web-nvml-'));
  mkdirSync(join(dir, 'lib'));
  symlinkSync(resolve(library), join(dir, 'lib', 'libnvidia-ml.so.1'));
  const lines = [`gpus ${utils.length}`];
  utils.forEach((u, i) => lines.push(`gpu 0 ${i} ${u} ${u ? 2147483648 : 0} ${u ? 300000 : 60000} 0`));
  writeFileSync(join(dir, 'script'), `${lines.join('\n')}\n`);
  return { env: { LD_LIBRARY_PATH: join(dir, 'lib'), DROVER_FAKE_NVML_SCRIPT: join(dir, 'script') },
    cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}
