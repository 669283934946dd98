// What the benchmark runners (run.mjs, rpc/run.mjs, rpc/capacity.mjs)
// share on the command line: a comma-separated list checked against the
// known names, seconds, the progress display on stderr (a status line
// redrawn in place on a terminal, log lines kept), and the clean-up of the
// run in progress when the runner is interrupted or exits.

import { mkdirSync, mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';

/**
 * The options of the command line (`node:util` parseArgs `options`, plus
 * `--help`); a bad one prints `usage` and exits 2, `--help` prints it and
 * exits 0.
 */
export function parseCommandLine(usage, options) {
  let values;
  try {
    ({ values } = parseArgs({ options: { ...options, help: { type: 'boolean', default: false } } }));
  } catch (err) {
    console.error(`${err.message}\n${usage}`);
    process.exit(2);
  }
  if (values.help) {
    console.log(usage);
    process.exit(0);
  }
  return values;
}

/** The options rpc/run.mjs and rpc/capacity.mjs both take. */
export const RPC_RUNNER_OPTIONS = {
  quick: { type: 'boolean', default: false },
  scenario: { type: 'string' },
  peer: { type: 'string' },
  out: { type: 'string' },
  warmup: { type: 'string' },
  duration: { type: 'string' },
  'no-build': { type: 'boolean', default: false },
  render: { type: 'boolean', default: false },
};

/**
 * What the RPC runners' options select: the scenarios and peers (names,
 * in their own order), the timing overrides, whether that is everything
 * at full length (`complete`), and the output folder (made): `--out`,
 * else `defaultOut` for a complete run, else a temp dir named after `name`.
 */
export function rpcRunSelection(args, { scenarioNames, peerNames, defaultOut, name }) {
  const quick = args.quick;
  const warmup = seconds(args.warmup, 'warmup');
  const duration = seconds(args.duration, 'duration');
  const scenarios = parseList(args.scenario, scenarioNames, 'scenario');
  const peers = parseList(args.peer, peerNames, 'peer');
  const complete =
    !quick && warmup === undefined && duration === undefined && scenarios.length === scenarioNames.length && peers.length === peerNames.length;
  const outDir = path.resolve(
    args.out ?? (complete ? defaultOut : mkdtempSync(path.join(os.tmpdir(), `${name}-${quick ? 'quick' : 'partial'}-`))),
  );
  mkdirSync(outDir, { recursive: true });
  return { quick, warmup, duration, scenarios, peers, complete, outDir };
}

/**
 * The known names `value` selects, in their own order (`defaults` when it
 * selects none); exits 2 on an unknown one.
 */
export function parseList(value, known, what, defaults = known) {
  if (!value) return [...defaults];
  const list = value.split(',').map((s) => s.trim()).filter(Boolean);
  for (const item of list) {
    if (!known.includes(item)) {
      console.error(`unknown ${what} "${item}" (known: ${known.join(', ')})`);
      process.exit(2);
    }
  }
  return known.filter((k) => list.includes(k));
}

/** A positive number of seconds from an option, or undefined; exits 2 otherwise. */
export function seconds(value, what) {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!(n > 0)) {
    console.error(`--${what} takes a positive number of seconds`);
    process.exit(2);
  }
  return n;
}

/** { log(line), status(line) }: log lines stay, the status line is replaced by the next. */
export function progressDisplay(stream = process.stderr) {
  const tty = stream.isTTY;
  let statusShown = false;
  return {
    log(line) {
      if (statusShown) stream.write('\r\x1b[K');
      statusShown = false;
      stream.write(`${line}\n`);
    },
    status(line) {
      if (!tty) return;
      const width = stream.columns || 120;
      stream.write(`\r\x1b[K${line.slice(0, width - 1)}`);
      statusShown = true;
    },
  };
}

/**
 * On SIGINT or SIGTERM: stop the run in progress, write the results so far
 * (`writeResults()`), exit 130; on any exit, kill what is left. Returns
 * `track`: `track.begin()` gives the object to fill with the run's
 * `server` (a handle with `stop`, `running`, `pid`) and `client` (its
 * child process) as they start; `track.end()` when the run is over.
 */
export function guardRuns({ log, outDir, writeResults }) {
  let current = null;
  let interrupted = false;
  for (const signal of ['SIGINT', 'SIGTERM']) {
    process.on(signal, async () => {
      if (interrupted) process.exit(130);
      interrupted = true;
      log(`\n${signal}: stopping the current run, keeping the results so far in ${outDir()}`);
      current?.client?.kill('SIGTERM');
      await current?.server?.stop(2000);
      writeResults();
      process.exit(130);
    });
  }
  // Last resort (an exception in the runner): leave no server or client behind.
  process.on('exit', () => {
    current?.client?.kill('SIGKILL');
    if (current?.server?.running()) process.kill(current.server.pid, 'SIGKILL');
  });
  return {
    begin: () => (current = {}),
    end: () => {
      current = null;
    },
  };
}
