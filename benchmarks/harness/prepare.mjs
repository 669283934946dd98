// Builds what a run needs, idempotently: Switchboard itself, the peers' npm
// packages, redis-server (cross-node), the load generator and the Rust peers (Tokio, hyper). Each step is quick when
// nothing changed, so `npm run bench` can always do all of them.
import { spawnSync } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/**
 * The cargo target directory: the same default as scripts/run.mjs, outside
 * the clone, so CI and fresh clones reuse compiled crates.
 */
export function cargoTargetDir() {
  const cache = process.env.SB_CACHE ?? path.join(os.homedir(), '.cache', 'switchboard');
  return process.env.CARGO_TARGET_DIR ?? path.join(cache, 'target');
}

export function binDir() {
  return path.join(cargoTargetDir(), 'release');
}

function mtime(file) {
  try {
    return statSync(file).mtimeMs;
  } catch {
    return null;
  }
}

/** Run a build step with its output on stderr (stdout stays clean for callers that parse it). */
function must(log, title, command, args, cwd) {
  log(`== ${title}`);
  const result = spawnSync(command, args, {
    cwd,
    stdio: ['ignore', process.stderr, process.stderr],
    env: { ...process.env, CARGO_TARGET_DIR: cargoTargetDir() },
  });
  if (result.error) throw new Error(`${title}: ${result.error.message}`);
  if (result.status !== 0) throw new Error(`${title}: \`${command} ${args.join(' ')}\` exited with ${result.status}`);
}

/**
 * npm writes node_modules/.package-lock.json on every install: it is older
 * than package-lock.json (or package.json) exactly when the lock changed
 * since the last install.
 */
function peersInstallNeeded(benchDir) {
  const marker = mtime(path.join(benchDir, 'node_modules', '.package-lock.json'));
  if (marker === null) return true;
  const lock = mtime(path.join(benchDir, 'package-lock.json'));
  const manifest = mtime(path.join(benchDir, 'package.json'));
  return (lock !== null && lock > marker) || (manifest !== null && manifest > marker);
}

/**
 * Prepare for the selected servers. `log` writes a line to the progress
 * display. `loadgen: false` (the RPC suite, whose load runs in Node) skips
 * building switchboard-loadgen.
 */
export function prepare({ root, servers, log, loadgen = true }) {
  if (servers.some((s) => s.ours)) {
    must(log, 'build Switchboard (node scripts/run.mjs build)', process.execPath, ['scripts/run.mjs', 'build'], root);
  }
  const benchDir = path.join(root, 'benchmarks');
  // The JS peers (Switchboard's included) resolve their libraries from benchmarks/node_modules.
  if (servers.some((s) => s.script || s.entry)) {
    if (peersInstallNeeded(benchDir)) {
      // `npm ci`: exactly the committed lockfile's versions (the peers are
      // pinned, and results record them), and the lockfile never rewritten.
      must(log, 'install the peers (npm ci in benchmarks/)', 'npm', ['ci', '--no-audit', '--no-fund'], benchDir);
    }
  }
  // The cross-node scenario's two-node servers start a redis-server of their own.
  if (servers.some((s) => s.nodes)) {
    must(log, 'redis-server (bash scripts/setup-redis.sh)', 'bash', [path.join('scripts', 'setup-redis.sh')], root);
  }
  const packages = loadgen ? ['-p', 'switchboard-loadgen'] : [];
  // A Rust peer's binary is its crate's package name.
  for (const s of servers) if (s.binary) packages.push('-p', s.binary);
  if (packages.length) must(log, `cargo build --release ${packages.join(' ')}`, 'cargo', ['build', '--release', ...packages], root);
}

/** The load generator binary, checked to exist. */
export function loadgenBinary() {
  const file = path.join(binDir(), 'switchboard-loadgen');
  if (!existsSync(file)) throw new Error(`${file} is missing: run without --no-build, or build it with cargo build --release -p switchboard-loadgen`);
  return file;
}
