// The HTTP half of the suite (SCENARIOS.md, "HTTP"): its servers, the files
// of http-static, the matrix of runs, and the figures of a run. The runner
// (run.mjs) drives it like the WebSocket suite: a fresh server per run pinned
// to one core, switchboard-loadgen in its HTTP mode (`--protocol http`)
// pinned to the other; report and charts are in http-report.mjs.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { bound } from './report.mjs';

/**
 * As SERVERS in servers.mjs. `nodeBuiltin`: the library is Node itself (its
 * version is the runtime's). Every server gets STATIC_DIR from the runner.
 */
export const HTTP_SERVERS = [
  // One worker thread and one I/O thread: the server gets one core.
  { name: 'switchboard', label: 'Switchboard', protocol: 'http', script: 'switchboard-http.mjs', packages: [], ours: true, env: { WORKERS: '1', IO_THREADS: '1' } },
  { name: 'uws', label: 'uWebSockets.js', short: 'uWS.js', protocol: 'http', script: 'http/uws.mjs', packages: ['@trufflesuite/uws-js-unofficial'] },
  { name: 'hyperexpress', label: 'HyperExpress', protocol: 'http', script: 'http/hyperexpress.mjs', packages: ['hyper-express', 'uWebSockets.js'] },
  { name: 'fastify', label: 'fastify', protocol: 'http', script: 'http/fastify.mjs', packages: ['fastify', '@fastify/static'] },
  { name: 'node', label: 'node:http', protocol: 'http', script: 'http/node.mjs', packages: [], nodeBuiltin: true },
  { name: 'hyper', label: 'hyper (Rust)', short: 'hyper', protocol: 'http', binary: 'switchboard-bench-hyper', crate: 'benchmarks/peers/hyper', env: { THREADS: '1' } },
];

export const HTTP_SERVER_NAMES = HTTP_SERVERS.map((s) => s.name);

export function httpServerByName(name) {
  const server = HTTP_SERVERS.find((s) => s.name === name);
  if (!server) throw new Error(`unknown HTTP server "${name}" (known: ${HTTP_SERVER_NAMES.join(', ')})`);
  return server;
}

export const HTTP_SCENARIO_NAMES = ['http-hello', 'http-json', 'http-param', 'http-post-64k', 'http-static'];

/** The load generator's `--scenario` for each. */
const LOADGEN_KIND = {
  'http-hello': 'hello',
  'http-json': 'json',
  'http-param': 'param',
  'http-post-64k': 'post',
  'http-static': 'static',
};

/** The files of http-static: name and size. */
export const STATIC_FILES = [
  { name: '64k.bin', bytes: 64 * 1024 },
  { name: '1m.bin', bytes: 1024 * 1024 },
];
const POST_BYTES = 64 * 1024;
const CONNECTIONS = 100;
const PIPELINES = [1, 16];

/**
 * A temp folder holding STATIC_FILES (random bytes, so no layer can
 * compress them), created once per runner invocation; `remove()` deletes it.
 */
export function createStaticDir() {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'switchboard-bench-static-'));
  for (const f of STATIC_FILES) writeFileSync(path.join(dir, f.name), randomBytes(f.bytes));
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/**
 * The runs: { scenario, config, args, expectedS, settleMs }, as buildMatrix
 * of scenarios.mjs, `args` holding the whole loadgen scenario (its
 * `--scenario` included). Full: every scenario (both files for static)
 * without and with pipelining ×16, 100 connections, 1 s warm-up + 5 s.
 * Quick: 50 connections, 0.2 + 0.5 s, pipelined ×16 only except hello
 * (both), the 64 KiB file only: enough to exercise every path.
 */
export function buildHttpMatrix({ quick, scenarios, staticDir }) {
  const configs = [];
  const [warmup, duration] = quick ? [0.2, 0.5] : [1, 5];
  const connections = quick ? 50 : CONNECTIONS;
  for (const scenario of HTTP_SCENARIO_NAMES) {
    if (!scenarios.includes(scenario)) continue;
    const pipelines = quick && scenario !== 'http-hello' ? [16] : PIPELINES;
    const files = scenario === 'http-static' ? (quick ? STATIC_FILES.slice(0, 1) : STATIC_FILES) : [null];
    for (const file of files) {
      for (const pipeline of pipelines) {
        const config = { connections, pipeline };
        const args = ['--scenario', LOADGEN_KIND[scenario], '--connections', String(connections), '--pipeline', String(pipeline)];
        if (scenario === 'http-post-64k') {
          config.body_bytes = POST_BYTES;
          args.push('--body-size', String(POST_BYTES));
        }
        if (file) {
          config.file = file.name;
          config.file_bytes = file.bytes;
          args.push('--path', `/static/${file.name}`, '--body-file', path.join(staticDir, file.name));
        }
        args.push('--warmup', String(warmup), '--duration', String(duration));
        configs.push({ scenario, config, args, expectedS: warmup + duration, settleMs: 0 });
      }
    }
  }
  return { configs, notes: [] };
}

/** A short label for a configuration: `c=100 k=16`, plus the file for static. */
export function httpConfigLabel(scenario, config) {
  return `c=${config.connections} k=${config.pipeline}${config.file ? ` ${config.file}` : ''}`;
}

/** The figures of one run, from its single step. */
export function summarizeHttp(scenario, steps, { cores = [], pin = null } = {}) {
  const step = steps[0];
  if (!step) return null;
  const l = step.latency_us ?? {};
  const msOf = (v) => (Number.isFinite(v) ? v / 1000 : null);
  return {
    req_per_s: step.received_per_s,
    bytes_per_s: step.http?.body_bytes_per_s ?? null,
    latency_ms: { mean: msOf(l.mean), p50: msOf(l.p50), p99: msOf(l.p99), max: msOf(l.max) },
    rss_kb: step.server?.rss_kb ?? null,
    connected: step.connected,
    bad: step.http?.bad ?? null,
    first_error: step.http?.first_error ?? null,
    errors: step.errors,
    ...bound(step, cores[0] ?? null, pin),
  };
}

/**
 * Why a run whose load generator exited non-zero failed, in words: the
 * loadgen's own first error when its step says (a wrong answer, a lost
 * connection), else null (the caller falls back to its stderr).
 */
export function httpFailure(steps) {
  const h = steps[0]?.http;
  if (!h?.first_error) return null;
  return `${h.bad ? `${h.bad} wrong response(s); ` : ''}first error: ${h.first_error}`;
}
