// Process helpers shared by the interop and conformance tests: start an
// example server and wait for its URL line, run a bounded child process, and
// make sure nothing we started outlives the test file.
//
// The example-server contract (see examples/): started with plain `node`,
// listens on 127.0.0.1 at env PORT (0 = any free port), honours WORKERS and
// COMPRESSION=1, and prints one stdout line containing
// `ws://127.0.0.1:<port>/` (`wss://` given TLS_CERT and TLS_KEY) once listening.

import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

// Grace period between SIGTERM and SIGKILL when stopping a child.
const STOP_GRACE_MS = 5_000;
// Keep the tail of each child's output for failure messages; a whole
// Autobahn run or a chatty server would otherwise grow without bound.
const OUTPUT_TAIL_CHARS = 64 * 1024;
const URL_LINE = /wss?:\/\/127\.0\.0\.1:(\d+)\//;

/** Children still running, killed on `stopAll()` and, last resort, on exit. */
const live = new Set();

process.on('exit', () => {
  for (const child of live) signalGroup(child, 'SIGKILL');
});

/**
 * The echo example under test: env SB_ECHO_SERVER (absolute, or relative to
 * the repo root), default `examples/echo/server.mjs`.
 */
export function echoServerScript() {
  return path.resolve(repoRoot, process.env.SB_ECHO_SERVER || 'examples/echo/server.mjs');
}

/**
 * Starts `node <script>` with PORT=0 (plus `env`) and resolves once it prints
 * its `ws://127.0.0.1:<port>/` line. Rejects, after stopping the child, if it
 * exits first or is not ready within `readyTimeoutMs`.
 *
 * @returns {Promise<{url: string, port: number, child: import('node:child_process').ChildProcess,
 *   output: () => string, running: () => boolean, stop: () => Promise<ExitInfo>}>}
 */
export async function startServer({ script = echoServerScript(), env = {}, readyTimeoutMs = 30_000 } = {}) {
  if (!existsSync(script)) {
    throw new Error(`server script not found: ${script} (set SB_ECHO_SERVER to point at another one)`);
  }
  const proc = track(process.execPath, [script], {
    env: { ...process.env, PORT: '0', ...env },
  });
  const { child } = proc;

  let onData;
  const ready = new Promise((resolve, reject) => {
    let pending = '';
    onData = (chunk) => {
      pending += chunk;
      const lines = pending.split('\n');
      pending = lines.pop();
      for (const line of lines) {
        const match = URL_LINE.exec(line);
        if (match) return resolve({ url: match[0], port: Number(match[1]) });
      }
    };
    child.stdout.on('data', onData);
    proc.exited.then((info) =>
      reject(new Error(`server exited before it was ready (${describeExit(info)})\n${proc.output()}`)),
    );
    setTimeout(
      () => reject(new Error(`server printed no ws://127.0.0.1:<port>/ line within ${readyTimeoutMs} ms\n${proc.output()}`)),
      readyTimeoutMs,
    ).unref();
  });

  try {
    const { url, port } = await ready;
    return {
      url,
      port,
      child,
      output: proc.output,
      running: () => child.exitCode === null && child.signalCode === null,
      stop: proc.stop,
    };
  } catch (err) {
    await proc.stop();
    throw err;
  } finally {
    child.stdout.off('data', onData);
  }
}

/**
 * Runs `cmd args` to completion, killing it (and its process group) after
 * `timeoutMs`. Never rejects for a non-zero exit: the caller asserts.
 *
 * @typedef {{code: number | null, signal: string | null}} ExitInfo
 * @returns {Promise<ExitInfo & {stdout: string, stderr: string, output: string, timedOut: boolean, durationMs: number}>}
 */
export async function runProcess(cmd, args, { env = process.env, cwd = repoRoot, timeoutMs, onOutput } = {}) {
  const started = Date.now();
  const proc = track(cmd, args, { env, cwd, onOutput, keepAllStdout: true });
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    proc.stop();
  }, timeoutMs);
  const info = await proc.exited;
  clearTimeout(timer);
  return { ...info, ...proc.streams(), output: proc.output(), timedOut, durationMs: Date.now() - started };
}

/** Stops every child these helpers started and that is still running. */
export async function stopAll() {
  await Promise.all([...live].map((child) => child.sbStop()));
}

/** The server script for test titles: repo-relative when inside the repo. */
export function serverLabel(script = echoServerScript()) {
  const relative = path.relative(repoRoot, script);
  return relative.startsWith('..') ? script : relative;
}

export function describeExit({ code, signal }) {
  return signal ? `killed by ${signal}` : `exit code ${code}`;
}

function track(cmd, args, { env, cwd = repoRoot, onOutput, keepAllStdout = false }) {
  // Own process group, so stop() also reaches anything the child spawned.
  const child = spawn(cmd, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  live.add(child);

  let output = '';
  let stdout = '';
  let stderr = '';
  const append = (which) => (chunk) => {
    const text = chunk.toString();
    output = (output + text).slice(-OUTPUT_TAIL_CHARS);
    if (which === 'stdout') stdout = keepAllStdout ? stdout + text : (stdout + text).slice(-OUTPUT_TAIL_CHARS);
    else stderr = (stderr + text).slice(-OUTPUT_TAIL_CHARS);
    onOutput?.(text);
  };
  // Always drain both pipes: a child blocks once a full pipe is not read.
  child.stdout.setEncoding('utf8').on('data', append('stdout'));
  child.stderr.setEncoding('utf8').on('data', append('stderr'));

  const exited = new Promise((resolve) => {
    child.on('error', (err) => {
      output += `\n[spawn error: ${err.message}]`;
      live.delete(child);
      resolve({ code: null, signal: null, error: err });
    });
    child.on('close', (code, signal) => {
      live.delete(child);
      resolve({ code, signal });
    });
  });

  const stop = async () => {
    if (!live.has(child)) return exited;
    signalGroup(child, 'SIGTERM');
    const timer = setTimeout(() => signalGroup(child, 'SIGKILL'), STOP_GRACE_MS);
    const info = await exited;
    clearTimeout(timer);
    return info;
  };
  child.sbStop = stop;

  return { child, exited, stop, output: () => output, streams: () => ({ stdout, stderr }) };
}

function signalGroup(child, signal) {
  if (child.pid === undefined) return;
  try {
    process.kill(-child.pid, signal);
  } catch {
    try {
      child.kill(signal);
    } catch {
      // Already gone.
    }
  }
}
