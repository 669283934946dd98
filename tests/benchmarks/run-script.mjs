// Running a benchmark script from a test: in its own process group, so
// that a timeout (or the test ending early) stops the servers and load
// generators it started too, with a scratch directory for its results.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after } from 'node:test';
import { fileURLToPath } from 'node:url';

export const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

/**
 * A scratch directory (`out`, removed after the tests), `runChecked` (below) and `run(args)`,
 * which runs `node ...args` from the repository root and resolves with its
 * exit `code` or `signal` and its `output` (stdout and stderr together).
 * Past `timeoutMs` the group gets SIGTERM (a runner then stops its server
 * and keeps partial results), and SIGKILL 10 s later.
 */
export function scriptRunner(name, timeoutMs) {
  const out = mkdtempSync(path.join(os.tmpdir(), `switchboard-${name}-`));
  let child = null;
  after(() => {
    if (child && child.exitCode === null && child.signalCode === null) {
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    rmSync(out, { recursive: true, force: true });
  });
  const run = (args) =>
    new Promise((resolve) => {
      child = spawn(process.execPath, args, { cwd: root, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
      let output = '';
      child.stdout.on('data', (c) => (output += c));
      child.stderr.on('data', (c) => (output += c));
      const timer = setTimeout(() => {
        process.kill(-child.pid, 'SIGTERM');
        setTimeout(() => process.kill(-child.pid, 'SIGKILL'), 10_000).unref();
      }, timeoutMs);
      child.on('close', (code, signal) => {
        clearTimeout(timer);
        resolve({ code, signal, output });
      });
    });
  /**
   * Runs `node ...args` (the test `t` notes how it ended), requires exit 0,
   * then calls `check()`; a failure of either carries the last `tailLines`
   * lines of the run's output, whose progress lines say which run
   * misbehaved and how.
   */
  const runChecked = async (t, what, args, tailLines, check) => {
    const started = Date.now();
    const result = await run(args);
    t.diagnostic(`${what}: exit ${result.code ?? result.signal} after ${Math.round((Date.now() - started) / 1000)} s`);
    const tail = result.output.split('\n').slice(-tailLines).join('\n');
    assert.equal(result.code, 0, `the ${what} failed:\n${tail}`);
    try {
      check();
    } catch (err) {
      err.message += `\n--- the run's output (tail):\n${tail}`;
      throw err;
    }
  };
  return { out, run, runChecked };
}
