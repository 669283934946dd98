// The servers of the suite (Switchboard and its peers), how to start one
// under the contract of SCENARIOS.md, and which library versions it ran.
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { allowedCpus, pinned } from './machine.mjs';

/**
 * name: what --server takes; label: its name in prose; short: the column
 * heading when the label is long; protocol: the load generator's
 * `--protocol` (its framing, and for `sockjs-xhr-streaming` its transport);
 * packages: the npm packages whose versions describe the server (first = the
 * library under test); ours: this repository's build (Switchboard, on
 * any of its transports); versus: for Switchboard on a transport other
 * than its own WebSocket, the peer on the same transport that the results
 * compare it with; crate: the Rust peer; env: its thread settings,
 * written out although they equal the peer scripts' defaults, so that a
 * variable left in the caller's shell cannot change a run; optIn: run only
 * when --server names it; scenarios: the only scenarios it runs (default
 * all), with `skipWhy` saying why the others are not; crossNode: it runs
 * the cross-node scenario (which no other server does): with `nodes: 2`
 * as two nodes on a Redis of their own (harness/topology.mjs), without
 * as one node that publishers and subscribers share (the baseline).
 */
const XHR_STREAMING = {
  optIn: true,
  scenarios: ['ws-echo', 'ws-broadcast-room', 'ws-idle'],
  skipWhy: 'a SockJS xhr-streaming client that sends holds two sockets (its stream and its xhr_send connection), so the full size would need twice the descriptors',
};

const CROSS_NODE_ONLY = {
  crossNode: true,
  nodes: 2,
  scenarios: ['cross-node'],
  skipWhy: 'a scale-out variant: two nodes and a Redis, for cross-node only (the single-node scenarios are the plain server\'s)',
};

/**
 * Switchboard as two nodes on Redis (the cross-node scenario): `broker` is
 * passed to the peer script as BROKER_OPTIONS (JSON), beside REDIS_URL, so a
 * variant is one line in SERVERS (as the one with history is).
 */
function switchboardOverRedis(name, label, short, broker) {
  return {
    name, label, short, protocol: 'ws', script: 'switchboard.mjs', packages: [], ours: true, versus: 'socketio-redis',
    env: { WORKERS: '1', IO_THREADS: '1', BROKER_OPTIONS: JSON.stringify(broker) },
    ...CROSS_NODE_ONLY,
  };
}

/** Socket.IO as two nodes on Redis with one of @socket.io/redis-adapter's adapters (peers/socketio.mjs). */
function socketioOverRedis(name, label, short, adapter) {
  return {
    name, label, short, protocol: 'socketio', script: 'socketio.mjs',
    packages: ['socket.io', '@socket.io/redis-adapter', 'redis', 'engine.io', 'ws'],
    env: { SOCKETIO_ADAPTER: adapter },
    ...CROSS_NODE_ONLY,
  };
}

export const SERVERS = [
  // One worker thread and one I/O thread: the server gets one core, so more
  // threads would only contend for it.
  { name: 'switchboard', label: 'Switchboard', protocol: 'ws', script: 'switchboard.mjs', packages: [], ours: true, crossNode: true, env: { WORKERS: '1', IO_THREADS: '1' } },
  { name: 'uws', label: 'uWebSockets.js', short: 'uWS.js', protocol: 'ws', script: 'uws.mjs', packages: ['@trufflesuite/uws-js-unofficial'] },
  { name: 'ws', label: 'ws', protocol: 'ws', script: 'ws.mjs', packages: ['ws', 'bufferutil'] },
  { name: 'socketio', label: 'Socket.IO', protocol: 'socketio', script: 'socketio.mjs', packages: ['socket.io', 'engine.io', 'ws'], crossNode: true },
  { name: 'sockjs', label: 'SockJS', protocol: 'sockjs', script: 'sockjs.mjs', packages: ['sockjs', 'faye-websocket', 'websocket-driver'] },
  // Switchboard's SockJS services (app.sockjs) on the same framing, beside sockjs-node.
  { name: 'switchboard-sockjs', label: 'Switchboard (SockJS)', short: 'SB SockJS', protocol: 'sockjs', script: 'switchboard.mjs', packages: [], ours: true, versus: 'sockjs', env: { WORKERS: '1', IO_THREADS: '1', SWITCHBOARD_TRANSPORT: 'sockjs' } },
  { name: 'tokio', label: 'Tokio (Rust)', short: 'Tokio', protocol: 'ws', binary: 'switchboard-bench-tokio', crate: 'benchmarks/peers/tokio', env: { THREADS: '1' } },
  // The same two SockJS servers (same scripts, same prefixes) over SockJS's
  // xhr-streaming transport, the HTTP fallback sockjs-client uses without
  // WebSockets. On request only (--server): a study of their own, beside
  // the WebSocket suite rather than in it. ws-channels is left out: a
  // client that sends holds two sockets, and 19,000 of them would need
  // 38,000 descriptors in each process.
  { name: 'sockjs-xhr-streaming', label: 'SockJS (xhr-streaming)', short: 'SockJS xhr', protocol: 'sockjs-xhr-streaming', script: 'sockjs.mjs', packages: ['sockjs', 'faye-websocket', 'websocket-driver'], ...XHR_STREAMING },
  // Scale-out through Redis (the cross-node scenario only): Switchboard's
  // broker against Socket.IO's two Redis adapters, each as two nodes.
  switchboardOverRedis('switchboard-redis', 'Switchboard + Redis', 'SB Redis', {}),
  switchboardOverRedis('switchboard-redis-history', 'Switchboard + Redis (history)', 'SB Redis hist', { history: [{ channels: 'room', size: 100, ttl: 300 }] }),
  socketioOverRedis('socketio-redis', 'Socket.IO + redis-adapter', 'SIO Redis', 'redis'),
  socketioOverRedis('socketio-redis-sharded', 'Socket.IO + sharded redis-adapter', 'SIO sharded', 'sharded'),
  { name: 'switchboard-sockjs-xhr-streaming', label: 'Switchboard (SockJS xhr-streaming)', short: 'SB SockJS xhr', protocol: 'sockjs-xhr-streaming', script: 'switchboard.mjs', packages: [], ours: true, versus: 'sockjs-xhr-streaming', env: { WORKERS: '1', IO_THREADS: '1', SWITCHBOARD_TRANSPORT: 'sockjs' }, ...XHR_STREAMING },
];

export const SERVER_NAMES = SERVERS.map((s) => s.name);
/** What a run without --server runs: every server but the opt-in ones. */
export const DEFAULT_SERVER_NAMES = SERVERS.filter((s) => !s.optIn).map((s) => s.name);

/** Whether `server` runs `scenario`. */
export function runsScenario(server, scenario) {
  if (scenario === 'cross-node') return Boolean(server.crossNode);
  return !server.scenarios || server.scenarios.includes(scenario);
}

/** Why `server` does not run `scenario` (for the results' notes). */
export function skipReason(server, scenario) {
  if (scenario === 'cross-node' && !server.crossNode) {
    return 'the scenario compares scale-out through Redis (Switchboard\'s broker, Socket.IO\'s adapters) and their single-node baselines';
  }
  return server.skipWhy;
}

export function serverByName(name) {
  const server = SERVERS.find((s) => s.name === name);
  if (!server) throw new Error(`unknown server "${name}" (known: ${SERVER_NAMES.join(', ')})`);
  return server;
}

/** The command that starts a server, before pinning. */
export function serverCommand(server, { root, binDir }) {
  if (server.binary) return { command: path.join(binDir, server.binary), args: [] };
  // `entry`: a Node script by its path from the repository root (the RPC suite's peers).
  if (server.entry) return { command: process.execPath, args: [path.join(root, server.entry)] };
  return { command: process.execPath, args: [path.join(root, 'benchmarks', 'peers', server.script)] };
}

function readJson(file) {
  try {
    return JSON.parse(readFileSync(file, 'utf8'));
  } catch {
    return null;
  }
}

/**
 * The version of an npm package as the peer resolves it: npm nests a
 * dependency under its dependent when the hoisted copy's version differs
 * (socket.io's engine.io may bring its own ws), so look there first.
 */
function npmVersion(modules, name, parent) {
  const candidates = [];
  if (parent) candidates.push(path.join(modules, parent, 'node_modules', name, 'package.json'));
  candidates.push(path.join(modules, name, 'package.json'));
  for (const file of candidates) {
    const pkg = readJson(file);
    if (pkg?.version) return pkg.version;
  }
  return null;
}

/** The [dependencies] names of a Cargo.toml (both `name = ...` lines and `[dependencies.name]` tables). */
function cargoDependencies(manifest) {
  const names = [];
  let inDeps = false;
  for (const raw of manifest.split('\n')) {
    const line = raw.replace(/#.*$/, '').trim();
    const table = /^\[(.+)\]$/.exec(line);
    if (table) {
      const sub = /^dependencies\.([\w-]+)$/.exec(table[1]);
      if (sub) names.push(sub[1]);
      inDeps = table[1] === 'dependencies';
      continue;
    }
    const dep = inDeps && /^([\w-]+)\s*=/.exec(line);
    if (dep) names.push(dep[1]);
  }
  return names;
}

/** Every version of each named crate in Cargo.lock. */
function lockedCrateVersions(lock, names) {
  const out = {};
  for (const block of lock.split('[[package]]')) {
    const name = /^name = "([^"]+)"/m.exec(block)?.[1];
    const version = /^version = "([^"]+)"/m.exec(block)?.[1];
    if (name && version && names.includes(name)) (out[name] ??= []).push(version);
  }
  return Object.fromEntries(Object.entries(out).map(([k, v]) => [k, v.join(', ')]));
}

/** Library versions per server, read from what is installed and locked (not from memory). */
export function serverVersions(server, { root, machine }) {
  if (server.nodeBuiltin) return { node: machine.node };
  if (server.ours) {
    const git = machine.switchboard.git;
    return {
      switchboard: machine.switchboard.version,
      commit: git ? `${git.commit.slice(0, 12)}${git.dirty ? ' (uncommitted changes)' : ''}` : null,
    };
  }
  if (server.crate) {
    const manifest = (() => {
      try {
        return readFileSync(path.join(root, server.crate, 'Cargo.toml'), 'utf8');
      } catch {
        return '';
      }
    })();
    const lockFile = path.join(root, 'Cargo.lock');
    const lock = existsSync(lockFile) ? readFileSync(lockFile, 'utf8') : '';
    return lockedCrateVersions(lock, cargoDependencies(manifest));
  }
  const modules = path.join(root, 'benchmarks', 'node_modules');
  const versions = {};
  for (const name of server.packages) versions[name] = npmVersion(modules, name, server.packages[0]);
  return versions;
}

/** A one-line description of the versions for the Markdown table. */
export function describeVersions(versions) {
  const entries = Object.entries(versions ?? {}).filter(([, v]) => v);
  return entries.length ? entries.map(([k, v]) => `${k} ${v}`).join(', ') : 'unknown';
}

/**
 * Start a server: pinned, PORT=0, wait for `LISTENING <port>` on stdout.
 * `env`: more environment for it (the HTTP suite's STATIC_DIR).
 * Resolves { pid, port, cpus, stop(), output() }.
 */
export function startServer(server, { root, binDir, cpu, env = {}, timeoutMs = 30_000 }) {
  const base = serverCommand(server, { root, binDir });
  const { command, args } = pinned(cpu, base.command, base.args);
  const child = spawn(command, args, {
    cwd: root,
    env: { ...process.env, ...server.env, ...env, PORT: '0' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  // Keep the tail of what the server prints, to show when something fails.
  let tail = '';
  const keep = (chunk) => {
    tail = (tail + chunk).slice(-8000);
  };
  child.stderr.on('data', keep);
  let exited = null;
  const exitPromise = new Promise((resolve) =>
    child.on('exit', (code, signal) => {
      exited = { code, signal };
      resolve(exited);
    }),
  );

  const handle = {
    pid: child.pid,
    command: [command, ...args].join(' '),
    port: null,
    cpus: null,
    running: () => exited === null,
    output: () => tail,
    exited: exitPromise,
    /** SIGTERM, then SIGKILL if it has not exited after graceMs. */
    async stop(graceMs = 5000) {
      if (exited) return exited;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
      const result = await exitPromise;
      clearTimeout(timer);
      return result;
    },
  };

  return new Promise((resolve, reject) => {
    let out = '';
    const fail = async (message) => {
      clearTimeout(timer);
      await handle.stop(1000);
      reject(new Error(`${server.name}: ${message}\n--- server output (tail):\n${tail || '(none)'}`));
    };
    const timer = setTimeout(() => fail(`no "LISTENING <port>" line within ${timeoutMs} ms`), timeoutMs);
    child.on('error', (err) => fail(`cannot start ${command}: ${err.message}`));
    child.once('exit', (code, signal) => {
      if (handle.port === null) fail(`exited before listening (code ${code}, signal ${signal})`);
    });
    child.stdout.on('data', (chunk) => {
      keep(chunk);
      if (handle.port !== null) return;
      out += chunk;
      const m = /^LISTENING (\d+)\s*$/m.exec(out);
      if (!m) return;
      clearTimeout(timer);
      handle.port = Number(m[1]);
      // Recorded so the results show the pinning took effect, not just that it was asked for.
      handle.cpus = allowedCpus(child.pid);
      resolve(handle);
    });
  });
}
