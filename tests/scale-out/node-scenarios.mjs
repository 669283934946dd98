// The node scenarios (docs/scale-out.md, "Nodes" and "Direct sends across
// nodes") that hold for every engine with nodes, written once: three
// Switchboard processes on one real broker claim distinct node numbers,
// their connection ids carry them, and operations by id reach connections
// on other nodes. Each engine's test file runs them with the engine's own
// way to start its broker and nodes (engines.mjs), and what only its store
// can show (`heldNumbers`, `publishRaw`).
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { nodeOf, SendStatus } from 'switchboard';
import { connect, jsonCodec } from 'switchboard-client/node';
import { natsWire } from '../helpers/nats-wire.mjs';
import { nats, redis } from './engines.mjs';
import { sleep, until, wsClient } from './helpers.mjs';

/** The node numbers whose keys exist in Redis (names under `<prefix>\xFF`, reached through Lua). */
export async function nodeKeys(server, prefix) {
  const script = "local out = {} for _, k in ipairs(redis.call('KEYS', ARGV[1] .. '\\255node:*')) do table.insert(out, string.sub(k, #ARGV[1] + 7)) end return out";
  const text = await server.cli('EVAL', script, '0', prefix);
  return text === '' ? [] : text.split('\n').map(Number).sort((x, y) => x - y);
}

/** Redis: node `to`'s channel (or, for 'all', the shared one) is `<prefix>\xFFnode:<to>`. */
export const redisNodes = {
  ...redis,
  /** Numbers held in the broker's store, as the nodes' keys. */
  heldNumbers: nodeKeys,
  publishRaw: (t, server, prefix, to, payload) =>
    server.cli('EVAL', "return redis.call('PUBLISH', ARGV[1] .. '\\255' .. ARGV[2], ARGV[3])", '0', prefix, to === 'all' ? 'nodes' : `node:${to}`, payload),
  /** A send then a publish from one node arrive in that order. */
  ordered: true,
};

/** NATS: node subjects are `<prefix>%%node.<n>` and `<prefix>%%nodes`; nothing is stored. */
export const natsNodes = {
  ...nats,
  heldNumbers: null,
  publishRaw: async (t, server, prefix, to, payload) => {
    const wire = await natsWire(t, server);
    wire.publish(to === 'all' ? `${prefix}%%nodes` : `${prefix}%%node.${to}`, payload);
    await wire.flush();
  },
  ordered: false,
};

export async function stats(node) {
  return (await node.request('stats')).result;
}

export async function wsWithId(t, node) {
  const client = await wsClient(t, node);
  const reply = await client.command('id');
  client.id = Number(reply.slice('ok:id:'.length));
  return client;
}

async function rpcClient(t, node, into) {
  const client = await connect(`tcp://127.0.0.1:${node.rpc}`, { reconnect: false, codecs: [jsonCodec] });
  t.after(() => client.close());
  client.handle('room', (payload) => into.push(payload));
  client.id = await client.call('whoami');
  return client;
}

export const sorted = (list) => [...list].sort((x, y) => x - y);
const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);

/** `promise`, or a failure after `ms`: every wait here is bounded. */
function within(promise, what, ms = 5000) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** A broker and `count` nodes on it sharing a fresh prefix, started at once. */
async function startNodes(t, engine, options = {}, count = 3) {
  const server = await engine.start(t);
  const prefix = engine.freshPrefix();
  const nodes = await Promise.all(Array.from({ length: count }, () => engine.startNode(t, server, { prefix, ...options })));
  return { server, prefix, nodes };
}

/** Three nodes started at once: distinct numbers, each knows all three, ids carry them. */
export async function claimAndKnow(t, engine) {
  const { server, prefix, nodes } = await startNodes(t, engine, { nodeTtl: 3 });
  const numbers = await Promise.all(nodes.map(async (node) => (await stats(node)).brokerNode));
  assert.equal(new Set(numbers).size, 3, `distinct numbers: ${numbers}`);
  for (const n of numbers) assert.ok(Number.isInteger(n) && n >= 1 && n <= 1023, `${n} in 1..1023`);

  // Each learns of the others from their heartbeats (a newcomer is
  // answered at once).
  for (const node of nodes) {
    await until(async () => same((await stats(node)).brokerNodes, sorted(numbers)), 'every node to know all three', 3000);
  }
  const metrics = (await nodes[0].request('metrics')).result;
  assert.match(metrics, /^switchboard_broker_nodes 3$/m);
  assert.match(metrics, /^switchboard_broker_node_messages_invalid_total 0$/m);

  for (const [i, node] of nodes.entries()) {
    const ws = await wsWithId(t, node);
    assert.equal(nodeOf(ws.id), numbers[i], 'a WebSocket id names its node');
    assert.ok(Number.isSafeInteger(ws.id));
    const client = await rpcClient(t, node, []);
    assert.equal(nodeOf(client.id), numbers[i], 'a protocol connection id names its node');
  }
  return { server, prefix, nodes, numbers };
}

/** Send, subscribe, unsubscribe and close by id, from A to WebSocket and protocol connections on B and C. */
export async function directSends(t, engine) {
  const { server, prefix, nodes: [a, b, c] } = await startNodes(t, engine);
  const onB = await wsWithId(t, b);
  const onC = [];
  const rpc = await rpcClient(t, c, onC);

  // A direct send: handed to the broker, delivered natively on B.
  assert.equal((await a.request('send', { conn: onB.id, text: 'direct' })).result, SendStatus.FORWARDED);
  await until(() => onB.received.length === 1, 'the direct send');
  assert.equal(onB.received[0], 'direct');

  // Subscribe both by id from A (one message per node), then publish.
  assert.deepEqual((await a.request('subscribe', { ids: [onB.id, rpc.id], channel: 'room' })).result, [], 'no local id changed');
  await until(async () => (await b.request('isSubscribed', { conn: onB.id, channel: 'room' })).result, 'B to apply the subscription');
  await until(async () => (await c.request('isSubscribed', { conn: rpc.id, channel: 'room' })).result, 'C to apply the subscription');
  await until(async () => (await engine.subscribers(server, `${prefix}room`)) === 2, 'B and C to subscribe in the broker');
  assert.equal((await a.publish('room', '"to the room"')).result, 0);
  await until(() => onB.received.length === 2 && onC.length === 1, 'the publish on both');
  assert.deepEqual([onB.received[1], onC[0]], ['"to the room"', 'to the room']);

  // A send and a publish from one node keep their order on arrival where
  // the engine promises it (Redis: one connection out, one in; not NATS,
  // whose client queues each subscription apart: docs/scale-out.md).
  const rounds = 20;
  for (let i = 0; i < rounds; i++) {
    await Promise.all([a.request('send', { conn: onB.id, text: `"s${i}"` }), a.publish('room', `"p${i}"`)]);
  }
  await until(() => onB.received.length === 2 + 2 * rounds, 'the interleaved sends and publishes');
  const expected = Array.from({ length: rounds }, (_, i) => [`"s${i}"`, `"p${i}"`]).flat();
  const got = onB.received.slice(2);
  if (engine.ordered) assert.deepEqual(got, expected);
  else {
    assert.deepEqual([...got].sort(), [...expected].sort(), 'each once');
    t.diagnostic(`sends and publishes ${same(got, expected) ? 'kept' : 'did not keep'} their order (not promised here): ${got.join(' ')}`);
  }

  // Unsubscribe by id.
  assert.equal((await a.request('unsubscribe', { conn: onB.id, channel: 'room' })).result, true);
  await until(async () => !(await b.request('isSubscribed', { conn: onB.id, channel: 'room' })).result, 'B to apply the unsubscription');

  // Close by id with a code: the WebSocket sees it.
  const closed = once(onB.ws, 'close');
  assert.equal((await a.request('end', { conn: onB.id, code: 4001, reason: 'kicked' })).result, true);
  const [code, reason] = await within(closed, 'the WebSocket to close');
  assert.deepEqual([code, reason.toString()], [4001, 'kicked']);

  // And a protocol connection gets its GO_AWAY with the reason's code.
  const goAway = new Promise((resolve) => rpc.once('goaway', resolve));
  const ended = new Promise((resolve) => rpc.once('closed', resolve));
  assert.equal((await b.request('end', { conn: rpc.id, code: 4002, reason: 'ERR_KICKED: bye' })).result, true);
  const event = await within(goAway, 'the GO_AWAY');
  assert.equal(event.code, 'ERR_KICKED');
  await within(ended, 'the protocol client to close');
}

/** publishTo across nodes: channels and ids of every node, each recipient once. */
export async function publishToAcrossNodes(t, engine) {
  const { server, prefix, nodes: [a, b, c] } = await startNodes(t, engine);
  const inRoomA = await wsWithId(t, a);
  const inRoomB = await wsWithId(t, b);
  const outB = await wsWithId(t, b);
  const inRoomC = await wsWithId(t, c);
  const onRpc = [];
  const rpc = await rpcClient(t, c, onRpc);
  for (const ws of [inRoomA, inRoomB, inRoomC]) assert.equal(await ws.command('sub:room'), 'ok:sub:room');
  assert.equal(await rpc.call('join', 'room'), true);
  await until(async () => (await engine.subscribers(server, `${prefix}room`)) === 3, 'three nodes to subscribe');

  // Channels and ids, some of them in the channel too, from A: one on A.
  const targets = ['room', inRoomA.id, inRoomB.id, outB.id, inRoomC.id, rpc.id];
  assert.equal((await a.request('publishTo', { targets, text: '"m1"' })).result, 1);
  await until(() => [inRoomA, inRoomB, outB, inRoomC].every((ws) => ws.received.length === 1) && onRpc.length === 1, 'm1 everywhere');

  // Ids only: one message per node, none on A.
  assert.equal((await a.request('publishTo', { targets: [outB.id, inRoomC.id, inRoomB.id], text: '"m2"' })).result, 0);
  await until(() => outB.received.length === 2 && inRoomC.received.length === 2 && inRoomB.received.length === 2, 'm2 on B and C');

  // The excluded connection is left out on its own node.
  assert.equal((await c.request('publishTo', { targets: ['room'], text: '"m3"', exclude: inRoomB.id })).result, 2);
  await until(() => inRoomA.received.length === 2 && inRoomC.received.length === 3 && onRpc.length === 2, 'm3');

  await sleep(200);
  const json = (...names) => names.map((m) => JSON.stringify(m));
  assert.deepEqual(inRoomA.received, json('m1', 'm3'));
  assert.deepEqual(inRoomB.received, json('m1', 'm2'));
  assert.deepEqual(outB.received, json('m1', 'm2'));
  assert.deepEqual(inRoomC.received, json('m1', 'm2', 'm3'));
  assert.deepEqual(onRpc, ['m1', 'm3'], 'the protocol client once each (its MESSAGE action is the channel)');
}

/** A personal channel reaches the user on every node, and nobody else. */
export async function perUserAddressing(t, engine) {
  const { server, prefix, nodes: [a, b, c] } = await startNodes(t, engine);
  const phone = await wsClient(t, b);
  const laptop = await wsClient(t, c);
  const other = await wsClient(t, a);
  assert.equal(await phone.command('login:42'), 'ok:login:42');
  assert.equal(await laptop.command('login:42'), 'ok:login:42');
  assert.equal(await other.command('login:7'), 'ok:login:7');
  await until(async () => (await engine.subscribers(server, `${prefix}user:42`)) === 2, 'the user\'s nodes to subscribe');
  assert.equal((await a.publish('user:42', 'for 42')).result, 0);
  await until(() => phone.received.length === 1 && laptop.received.length === 1, 'both of the user\'s connections');
  await sleep(100);
  assert.deepEqual([phone.received, laptop.received, other.received], [['for 42'], ['for 42'], []]);
}

/** A graceful leave is seen at once (and frees a stored number); a killed node drops out after nodeTtl. */
export async function leaveAndKill(t, engine) {
  const { server, prefix, nodes } = await startNodes(t, engine, { nodeTtl: 1 });
  const [a, b, c] = nodes;
  const [na, nb] = await Promise.all(nodes.map(async (node) => (await stats(node)).brokerNode));
  const held = engine.heldNumbers && (() => engine.heldNumbers(server, prefix));
  for (const node of nodes) {
    await until(async () => (await stats(node)).brokerNodes.length === 3, 'every node to know all three', 3000);
  }

  // Graceful: the others drop C at once (well within the TTL); a stored
  // number is gone as close() returns.
  assert.equal((await c.request('close')).result, true);
  if (held) assert.deepEqual(await held(), sorted([na, nb]));
  for (const node of [a, b]) {
    await until(async () => same((await stats(node)).brokerNodes, sorted([na, nb])), 'the goodbye to be seen', 500);
  }

  // Killed: A stops counting it live within nodeTtl of its last
  // heartbeat (and a stored number expires).
  b.child.kill('SIGKILL');
  if (held) assert.ok((await held()).includes(nb), 'the killed node\'s key outlives it');
  const killed = Date.now();
  if (held) await until(async () => !(await held()).includes(nb), 'the key to expire', 3000);
  await until(async () => same((await stats(a)).brokerNodes, [na]), 'A to drop B', 3000);
  const after = Date.now() - killed;
  t.diagnostic(`a killed node was forgotten after ${after} ms (nodeTtl 1 s)`);
  assert.ok(after >= 500, `not before its heartbeats could be missed (${after} ms)`);
  // A's own number is kept alive by its heartbeat all along.
  if (held) assert.deepEqual(await held(), [na]);
}

/** Garbage on the node channels is counted and ignored; a broker down refuses sends to other nodes. */
export async function malformedAndDown(t, engine) {
  const { server, prefix, nodes: [a, b] } = await startNodes(t, engine, {}, 2);
  const onB = await wsWithId(t, b);
  const nb = (await stats(b)).brokerNode;
  await engine.publishRaw(t, server, prefix, nb, 'not a node message');
  await engine.publishRaw(t, server, prefix, 'all', '\x01\x01');
  await until(async () => (await stats(b)).brokerNodeMessagesInvalid === 2, 'both to be counted on B');
  await until(async () => (await stats(a)).brokerNodeMessagesInvalid === 1, 'the shared channel\'s garbage to be counted on A');
  // B still works.
  assert.equal((await a.request('send', { conn: onB.id, text: 'still here' })).result, SendStatus.FORWARDED);
  await until(() => onB.received.length === 1, 'the send after the garbage');

  await server.stop();
  await until(async () => (await a.request('send', { conn: onB.id, text: 'lost' })).error === 'ERR_BROKER_UNAVAILABLE', 'the send to be refused');
  assert.equal((await a.request('end', { conn: onB.id, code: 1000, reason: '' })).error, 'ERR_BROKER_UNAVAILABLE');
  assert.equal((await a.request('publishTo', { targets: [onB.id], text: 'x' })).error, 'ERR_BROKER_UNAVAILABLE');
  assert.equal((await a.request('subscribe', { ids: [onB.id], channel: 'room' })).error, 'ERR_BROKER_UNAVAILABLE');
}
