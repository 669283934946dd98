// Nodes (child processes running tests/fixtures/scale-out-node.mjs) and
// clients for the scale-out tests.
import assert from 'node:assert/strict';
import { execFile, fork, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import { promisify } from 'node:util';
import { once } from 'node:events';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import WebSocket from 'ws';
import { Client, jsonCodec, tcpTransport } from 'switchboard-client/node';
import { ensureRedis } from '../helpers/redis.mjs';

const fixture = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', 'fixtures', 'scale-out-node.mjs');

/** Wait until `check()` returns something truthy (it may throw meanwhile). */
export async function until(check, what, timeout = 5000) {
  const deadline = Date.now() + timeout;
  let last;
  for (;;) {
    try {
      const value = await check();
      if (value) return value;
    } catch (error) {
      last = error;
    }
    assert.ok(Date.now() < deadline, `timed out waiting for ${what}${last ? `: ${last.message}` : ''}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** A node as a separate process on `redis`; `t.after` ends it. */
export async function startNode(t, redis, { prefix, unsubscribeDelay = 1, nodeTtl, history, presence, presenceTtl, env = {} }) {
  const child = fork(fixture, [], {
    env: {
      ...process.env,
      REDIS_URL: redis.url,
      BROKER_PREFIX: prefix,
      UNSUBSCRIBE_DELAY: String(unsubscribeDelay),
      ...(nodeTtl !== undefined && { NODE_TTL: String(nodeTtl) }),
      ...(history ? { HISTORY: JSON.stringify(history) } : {}),
      ...(presence ? { PRESENCE: JSON.stringify(presence), PRESENCE_TTL: String(presenceTtl ?? 30) } : {}),
      ...env,
    },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  t.after(() => child.kill('SIGKILL'));
  const [ready] = await once(child, 'message');
  assert.equal(ready.ready, true);
  let next = 0;
  const pending = new Map();
  child.on('message', (reply) => {
    const settle = pending.get(reply.id);
    pending.delete(reply.id);
    settle?.(reply);
  });
  return {
    http: ready.http,
    rpc: ready.rpc,
    child,
    /** `{ result }` or `{ error: code }`. */
    request(op, fields = {}) {
      const id = ++next;
      child.send({ id, op, ...fields });
      return new Promise((resolve) => pending.set(id, resolve));
    },
    publish(channel, text) {
      return this.request('publish', { channel, text });
    },
  };
}

/** A WebSocket client of a node: commands answered in order, the rest kept. */
export async function wsClient(t, node) {
  const ws = new WebSocket(`ws://127.0.0.1:${node.http}/ws`);
  await once(ws, 'open');
  t.after(() => ws.terminate());
  const received = [];
  const replies = [];
  ws.on('message', (data, isBinary) => {
    const text = isBinary ? null : data.toString();
    if (text !== null && (text.startsWith('ok:') || text.startsWith('err:'))) replies.shift()?.(text);
    else received.push(isBinary ? Buffer.from(data) : text);
  });
  return {
    ws,
    received,
    command(text) {
      ws.send(text);
      return new Promise((resolve) => replies.push(resolve));
    },
  };
}

/** A loopback port nobody listens on: connecting is refused at once. */
async function refusingPort() {
  const server = net.createServer().listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address();
  server.close();
  await once(server, 'close');
  return port;
}

/**
 * A protocol client whose every (re)connection goes to `target.node`: the
 * test moves it to another node by changing `target.node`, and keeps it
 * away from every node with `target.node = null` (its attempts are refused).
 */
export async function movableClient(t, target) {
  const nowhere = await refusingPort();
  const client = new Client({
    transport: (handlers) => tcpTransport('127.0.0.1', target.node?.rpc ?? nowhere)(handlers),
    codecs: [jsonCodec],
    reconnect: { initialDelayMs: 20, maxDelayMs: 100 },
  });
  t.after(() => client.close());
  await client.ready;
  return client;
}

/** Subscribe with a callback; returns what arrives, each as `{ value, position }`, and the gaps. */
export function collect(client, channel, options = {}) {
  const received = [];
  const gaps = [];
  const states = [];
  const subscription = client.subscribe(channel, (value, publication) => received.push({ value, position: publication.position }), options);
  subscription.on('gap', (gap) => gaps.push(gap));
  subscription.on('statechange', ({ state }) => states.push(state));
  return { subscription, received, gaps, states };
}

/** A node sharding its channels over several standalone Redis servers. */
export function startShardedNode(t, servers, options) {
  return startNode(t, { url: servers.map((s) => s.url).join(',') }, options);
}

/** A node on NATS (`nats`: one server, or an array of one NATS cluster's). */
export function startNatsNode(t, nats, options) {
  const urls = Array.isArray(nats) ? nats.map((n) => n.url) : [nats.url];
  return startNode(t, { url: '' }, { ...options, env: { NATS_URL: urls.join(','), ...options.env } });
}

/** A node on a Redis Cluster (its seeds: every master's URL). */
export function startClusterNode(t, cluster, options) {
  return startNode(t, { url: '' }, { ...options, env: { REDIS_CLUSTER: cluster.urls.join(',') } });
}

const run = promisify(execFile);

async function portFree(port) {
  const probe = net.createServer();
  const ok = await new Promise((resolve) => {
    probe.once('error', () => resolve(false));
    probe.listen(port, '127.0.0.1', () => resolve(true));
  });
  if (ok) await new Promise((resolve) => probe.close(resolve));
  return ok;
}

/** A port free for a cluster node: itself and its bus port (+10000). */
async function clusterPort(taken) {
  for (;;) {
    const port = 20000 + Math.floor(Math.random() * 10000);
    if (taken.has(port)) continue;
    if ((await portFree(port)) && (await portFree(port + 10000))) {
      taken.add(port);
      return port;
    }
  }
}

/** One redis-cli command against 127.0.0.1:port; the reply, trimmed. */
export async function cli(port, ...args) {
  const { stdout } = await run('redis-cli', ['-h', '127.0.0.1', '-p', String(port), ...args], { timeout: 10_000 });
  return stdout.trim();
}

/** One command on a cluster replica, after READONLY (so it answers for its master's slots); the reply, trimmed. */
export async function readonly(port, ...args) {
  const stdout = await piped(port, `READONLY\n${args.map((a) => JSON.stringify(a)).join(' ')}\n`);
  return stdout.split('\n').slice(1).join('\n').trim();
}

/** Commands given to redis-cli on its standard input, which reads quoted arguments with `\xHH` escapes (binary keys); its output. */
export async function piped(port, input) {
  const { stdout } = await new Promise((resolve, reject) => {
    const child = execFile('redis-cli', ['-h', '127.0.0.1', '-p', String(port)], { timeout: 10_000 }, (error, stdout) => (error ? reject(error) : resolve({ stdout })));
    child.stdin.end(input);
  });
  return stdout;
}

/**
 * A Redis Cluster on loopback: `masters` masters (and `replicas` per
 * master), cluster-enabled redis-servers on free ports with persistence
 * off, joined with `redis-cli --cluster create`; ready once every node says
 * cluster_state:ok. `t.after` stops it.
 */
export async function startCluster(t, { masters = 3, replicas = 0 } = {}) {
  ensureRedis();
  const dir = mkdtempSync(path.join(os.tmpdir(), 'switchboard-cluster-'));
  const taken = new Set();
  const ports = [];
  for (let i = 0; i < masters * (1 + replicas); i++) ports.push(await clusterPort(taken));
  const processes = ports.map((port) =>
    spawn(
      'redis-server',
      ['--port', String(port), '--bind', '127.0.0.1', '--cluster-enabled', 'yes', '--cluster-config-file', `nodes-${port}.conf`,
        '--cluster-node-timeout', '2000', '--save', '', '--appendonly', 'no', '--dir', dir, '--loglevel', 'warning'],
      { stdio: 'ignore' },
    ),
  );
  t.after(async () => {
    await Promise.all(processes.map((child) => {
      if (child.exitCode !== null) return undefined;
      const exited = once(child, 'exit');
      child.kill('SIGKILL');
      return exited;
    }));
    rmSync(dir, { recursive: true, force: true });
  });
  for (const port of ports) await until(async () => (await cli(port, 'PING')) === 'PONG', `redis-server on ${port}`, 10_000);
  await run('redis-cli', ['--cluster', 'create', ...ports.map((p) => `127.0.0.1:${p}`), '--cluster-replicas', String(replicas), '--cluster-yes'], { timeout: 30_000 });
  for (const port of ports) {
    await until(async () => /cluster_state:ok/.test(await cli(port, 'CLUSTER', 'INFO')), `cluster_state:ok on ${port}`, 20_000);
  }
  const cluster = {
    ports,
    urls: ports.slice(0, masters).map((p) => `redis://127.0.0.1:${p}`),
    cli: (...args) => cli(ports[0], ...args),
    /** The slot of a key, as Redis computes it. */
    async slot(key) {
      return Number(await cli(ports[0], 'CLUSTER', 'KEYSLOT', key));
    },
    /** `{ port, id }` of the master serving `slot`, as node `ports[0]` sees it. */
    async owner(slot) {
      for (const line of (await cli(ports[0], 'CLUSTER', 'NODES')).split('\n')) {
        const [id, address, flags, , , , , , ...ranges] = line.split(' ');
        if (!flags.includes('master')) continue;
        for (const range of ranges) {
          const [from, to = from] = range.split('-').map(Number);
          if (slot >= from && slot <= to) return { port: Number(address.split(':')[1].split('@')[0]), id };
        }
      }
      return null;
    },
    /**
     * Masters serving slots, as `{ port, id }`. A node without slots is
     * left out: in a cluster just made with replicas, node `ports[0]` may
     * still list a replica as a master until it hears of its replication
     * (and that node refuses SETSLOT: "only with masters").
     */
    async masters() {
      return (await cli(ports[0], 'CLUSTER', 'NODES'))
        .split('\n')
        .map((line) => line.split(' '))
        .filter(([, , flags, , , , , , ...ranges]) => flags.includes('master') && !flags.includes('fail') && ranges.length > 0)
        .map(([id, address]) => ({ port: Number(address.split(':')[1].split('@')[0]), id }));
    },
    /** Subscribers (nodes) of a sharded channel, asked of its master. */
    async shardNumsub(channel) {
      const { port } = await cluster.owner(await cluster.slot(channel));
      const lines = (await cli(port, 'PUBSUB', 'SHARDNUMSUB', channel)).split('\n');
      return Number(lines[1]);
    },
    /**
     * Move `slot` to the master at `to`: IMPORTING, MIGRATING, then (with
     * `keys`, as `redis-cli --cluster reshard` does) the slot's keys with
     * MIGRATE, with `during()` awaited between the two, then NODE on both
     * and the others. Without `keys` no key moves (sharded channels are
     * not keys).
     */
    async migrate(slot, to, { keys = false, during } = {}) {
      const from = await cluster.owner(slot);
      // IMPORTING and MIGRATING until taken: in a cluster just made, a
      // master may not know another's id yet (gossip) and refuses it, and
      // a MIGRATE to a master that is not importing is answered MOVED.
      const setslot = (port, ...args) => until(
        async () => {
          const reply = await cli(port, 'CLUSTER', 'SETSLOT', String(slot), ...args);
          if (reply !== 'OK') throw new Error(reply);
          return true;
        },
        `CLUSTER SETSLOT ${slot} ${args.join(' ')} at ${port}`,
      );
      await setslot(to.port, 'IMPORTING', from.id);
      await setslot(from.port, 'MIGRATING', to.id);
      for (;;) {
        if (!keys) break;
        // Quoted as redis-cli shows them (`--no-raw`), so binary keys
        // (the nodes', `<prefix>{\xFF}...`) survive the trip.
        const listed = await cli(from.port, '--no-raw', 'CLUSTER', 'GETKEYSINSLOT', String(slot), '100');
        const found = listed.split('\n').map((line) => /^\d+\) (".*")$/.exec(line)?.[1]).filter(Boolean);
        if (found.length === 0) break;
        const migrated = await piped(from.port, `MIGRATE 127.0.0.1 ${to.port} "" 0 5000 KEYS ${found.join(' ')}\n`);
        assert.equal(migrated.trim(), 'OK', `MIGRATE: ${migrated}`);
        await during?.();
      }
      await cli(to.port, 'CLUSTER', 'SETSLOT', String(slot), 'NODE', to.id);
      await cli(from.port, 'CLUSTER', 'SETSLOT', String(slot), 'NODE', to.id);
      for (const m of await cluster.masters()) {
        if (m.port !== from.port && m.port !== to.port) await cli(m.port, 'CLUSTER', 'SETSLOT', String(slot), 'NODE', to.id);
      }
      return from;
    },
  };
  return cluster;
}

/**
 * The port of a replica of `master`, once it is in sync with it.
 * `--cluster create` attaches replicas a moment after the slots are served.
 */
export async function syncedReplica(cluster, master) {
  const replica = await until(async () => {
    const nodes = (await cluster.cli('CLUSTER', 'NODES')).split('\n').map((l) => l.split(' '));
    return nodes.find(([, , flags, masterId]) => flags.includes('slave') && masterId === master.id);
  }, 'a replica of the master', 20_000);
  const replicaPort = Number(replica[1].split(':')[1].split('@')[0]);
  await until(async () => /master_link_status:up/.test(await cli(replicaPort, 'INFO', 'replication')), 'the replica in sync', 20_000);
  return replicaPort;
}

/**
 * A TCP proxy in front of `redis` whose `muteSubscribers()` stops passing
 * Redis's bytes to the connections that have sent a SUBSCRIBE, while
 * keeping them open: a subscription gone silent, as after a failover
 * behind a proxy. Connections made after it pass everything.
 */
export async function silencingProxy(t, redis) {
  const muted = new Set();
  const subscribers = new Set();
  const server = net.createServer((client) => {
    const upstream = net.connect(redis.port, '127.0.0.1');
    const link = { client, upstream };
    client.on('data', (bytes) => {
      if (/subscribe/i.test(bytes.toString('latin1'))) subscribers.add(link);
      upstream.write(bytes);
    });
    upstream.on('data', (bytes) => {
      if (!muted.has(link)) client.write(bytes);
    });
    const end = () => {
      client.destroy();
      upstream.destroy();
      subscribers.delete(link);
      muted.delete(link);
    };
    client.on('error', end).on('close', end);
    upstream.on('error', end).on('close', end);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.after(() => {
    server.close();
    for (const link of subscribers) link.client.destroy();
  });
  return {
    url: `redis://127.0.0.1:${server.address().port}`,
    /** Mute every subscribed connection; returns how many. */
    muteSubscribers() {
      for (const link of subscribers) muted.add(link);
      return muted.size;
    },
  };
}

/**
 * The channels of `prefix` a Redis has subscribers for, without the
 * servers' own (the nodes' `<prefix>\xFF...`, which Redis's reply shows
 * as U+FFFD, and the probes' `<prefix>$probe:...`).
 */
export async function userChannels(redis, prefix) {
  const names = await redis.channels(`${prefix}*`);
  return names.filter((name) => !name.includes('\ufffd') && !name.startsWith(`${prefix}$probe:`));
}

/**
 * A recovering client's journey across nodes: `feed` (a `collect` of
 * `channel` by a `movableClient` on B through `target`) gets three
 * publications from A; B dies, six are published while the client reaches
 * no node, then it reaches C and recovers them, and three more arrive
 * live. Each of the twelve must arrive once, in order, with its offset.
 */
export async function recoverAcrossNodes({ a, b, c, target, feed, channel }) {
  for (let i = 1; i <= 3; i++) await a.publish(channel, JSON.stringify(i));
  await until(() => feed.received.length === 3, 'the first three');

  // B dies; the client reaches no node while six are published, then C.
  target.node = null;
  b.child.kill('SIGKILL');
  await until(() => feed.states.includes('resubscribing'), 'the loss to be noticed');
  for (let i = 4; i <= 9; i++) await a.publish(channel, JSON.stringify(i));
  await sleep(50);
  assert.equal(feed.received.length, 3, 'nothing arrives while away');
  target.node = c;
  await until(() => feed.received.length >= 9, 'the missed six, recovered', 10_000);
  for (let i = 10; i <= 12; i++) await a.publish(channel, JSON.stringify(i));
  await until(() => feed.received.length >= 12, 'the live ones after');
  await sleep(100);

  const numbers = Array.from({ length: 12 }, (_, i) => i + 1);
  assert.deepEqual(feed.received.map((r) => r.value), numbers, 'each once, in order');
  assert.deepEqual(feed.received.map((r) => r.position.offset), numbers);
}
