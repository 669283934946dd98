// Runs switchboard-loadgen (benchmarks/loadgen/README.md): one JSON step per
// line on stdout, `progress:` lines and errors on stderr.
import { spawn } from 'node:child_process';
import { pinned } from './machine.mjs';

/**
 * Run the load generator once. Resolves (never rejects) with
 * { command, steps, code, signal, timedOut, stderr, wallS }; the caller
 * decides what a non-zero exit means for the results. `binaryArgs` go
 * before the load generator's own arguments (the RPC suite runs
 * `node benchmarks/rpc/driver.mjs` this way).
 */
export function runLoadgen({ binary, binaryArgs = [], cpu, port, protocol, serverPid, args, timeoutMs, onProgress, onStep, onSpawn }) {
  const fullArgs = [...binaryArgs, '--port', String(port), '--protocol', protocol, ...args];
  if (serverPid) fullArgs.push('--server-pid', String(serverPid));
  const { command, args: argv } = pinned(cpu, binary, fullArgs);
  const started = process.hrtime.bigint();
  const child = spawn(command, argv, { stdio: ['ignore', 'pipe', 'pipe'] });
  onSpawn?.(child);
  const steps = [];
  const stdoutNoise = [];
  let stderrTail = [];
  let timedOut = false;

  const lines = (stream, onLine) => {
    let buffer = '';
    stream.setEncoding('utf8');
    stream.on('data', (chunk) => {
      buffer += chunk;
      let nl;
      while ((nl = buffer.indexOf('\n')) >= 0) {
        onLine(buffer.slice(0, nl));
        buffer = buffer.slice(nl + 1);
      }
    });
    stream.on('end', () => buffer && onLine(buffer));
  };

  lines(child.stdout, (line) => {
    const text = line.trim();
    if (!text) return;
    try {
      const step = JSON.parse(text);
      if (step && step.type === 'step') {
        steps.push(step);
        onStep?.(step);
        return;
      }
    } catch {
      // not JSON: kept below so a malformed line is visible, not silently dropped
    }
    stdoutNoise.push(text);
  });
  lines(child.stderr, (line) => {
    if (line.startsWith('progress:')) {
      onProgress?.(line.slice('progress:'.length).trim());
      return;
    }
    stderrTail.push(line);
    if (stderrTail.length > 60) stderrTail = stderrTail.slice(-60);
  });

  return new Promise((resolve) => {
    let killTimer = null;
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGTERM');
      killTimer = setTimeout(() => child.kill('SIGKILL'), 5000);
    }, timeoutMs);
    const finish = (code, signal, error) => {
      clearTimeout(timer);
      clearTimeout(killTimer);
      resolve({
        command: [command, ...argv].join(' '),
        steps,
        code,
        signal,
        timedOut,
        error: error ?? null,
        stderr: stderrTail.join('\n'),
        stdoutNoise,
        wallS: Number(process.hrtime.bigint() - started) / 1e9,
      });
    };
    child.on('error', (err) => finish(null, null, err.message));
    child.on('close', (code, signal) => finish(code, signal));
  });
}

/** What a results file records of a finished `runLoadgen` run (the client process). */
export function describeRun(run) {
  return {
    command: run.command,
    exit_code: run.code,
    signal: run.signal,
    timed_out: run.timedOut,
    wall_s: Math.round(run.wallS * 100) / 100,
    stderr: run.stderr || undefined,
    stdout_other: run.stdoutNoise.length ? run.stdoutNoise.slice(0, 20) : undefined,
  };
}
