// The node scenarios (docs/scale-out.md, "Nodes" and "Direct sends across
// nodes") that hold for every engine with nodes, written once: three
// Switchboard processes on one real broker claim distinct node numbers,
// their connection ids carry them, and operations by id reach connections
// on other nodes. Each engine's test file runs them: standalone Redis
// (nodes.test.mjs), NATS (nats-nodes.test.mjs) and a Redis Cluster
// (cluster-nodes.test.mjs, cluster-engine.mjs).
//
// An engine here is one of engines.mjs's (`start`, `startNode`,
// `freshPrefix`, `subscribers`) with what nodes need besides, for what
// only some brokers can show:
// - `redisName(prefix, channel)`, optional: the broker channel carrying
//   `channel` where it is not `<prefix><channel>` (a cluster's hash tags);
// - `nodeKeys(server, prefix)`: the node numbers whose keys exist, or null
//   where numbers are not stored (NATS);
// - `nodeKeyTtl(server, prefix, n)`: node `n`'s key's PTTL (with nodeKeys);
// - `orderedChannel(server)`: a channel whose publishes keep their order
//   with the node messages of the same sender (any channel on one Redis;
//   in a cluster one whose slot is served by the nodes' slot's master), or
//   null where none does (NATS, whose client queues each subscription
//   apart);
// - `publishRaw(t, server, prefix, to, payload)`: `payload` on node `to`'s
//   channel (or, for 'all', the shared one); how many nodes got it, or null
//   where the broker does not say.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { nodeOf, SendStatus } from 'switchboard';
import { connect, jsonCodec } from 'switchboard-client/node';
import { sleep, until, wsClient } from './helpers.mjs';

export async function stats(node) {
  return (await node.request('stats')).result;
}

export async function wsWithId(t, node) {
  const client = await wsClient(t, node);
  const reply = await client.command('id');
  client.id = Number(reply.slice('ok:id:'.length));
  return client;
}

/** A protocol client of `node` collecting `channel`'s messages into `into`; its id. */
async function rpcClient(t, node, into, channel = 'room') {
  const client = await connect(`tcp://127.0.0.1:${node.rpc}`, { reconnect: false, codecs: [jsonCodec] });
  t.after(() => client.close());
  client.handle(channel, (payload) => into.push(payload));
  client.id = await client.call('whoami');
  return client;
}

export const sorted = (list) => [...list].sort((x, y) => x - y);
export const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);

/** `promise`, or a failure after `ms`: every wait here is bounded. */
function within(promise, what, ms = 5000) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** A broker and `count` nodes on it sharing a fresh prefix, started at once; `subscribers(channel)` counts the nodes on `channel` in the broker. */
async function startNodes(t, engine, options = {}, count = 3) {
  const server = await engine.start(t);
  const prefix = engine.freshPrefix();
  const nodes = await Promise.all(Array.from({ length: count }, () => engine.startNode(t, server, { prefix, ...options })));
  const brokerName = engine.redisName ?? ((p, channel) => `${p}${channel}`);
  const subscribers = (channel) => engine.subscribers(server, brokerName(prefix, channel));
  return { server, prefix, nodes, subscribers };
}

/** Three nodes started at once: distinct numbers (stored as expiring keys where the engine stores them), each knows all three, ids carry them. */
export async function claimAndKnow(t, engine) {
  const { server, prefix, nodes } = await startNodes(t, engine, { nodeTtl: 3 });
  const numbers = await Promise.all(nodes.map(async (node) => (await stats(node)).brokerNode));
  assert.equal(new Set(numbers).size, 3, `distinct numbers: ${numbers}`);
  for (const n of numbers) assert.ok(Number.isInteger(n) && n >= 1 && n <= 1023, `${n} in 1..1023`);
  if (engine.nodeKeys) {
    assert.deepEqual(await engine.nodeKeys(server, prefix), sorted(numbers));
    const ttl = await engine.nodeKeyTtl(server, prefix, numbers[0]);
    assert.ok(ttl > 0 && ttl <= 3000, `the key expires (PTTL ${ttl})`);
  }

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
  const { server, nodes: [a, b, c], subscribers } = await startNodes(t, engine);
  const ordered = await engine.orderedChannel(server);
  const room = ordered ?? 'room';
  const onB = await wsWithId(t, b);
  const onC = [];
  const rpc = await rpcClient(t, c, onC, room);

  // A direct send: handed to the broker, delivered natively on B.
  assert.equal((await a.request('send', { conn: onB.id, text: 'direct' })).result, SendStatus.FORWARDED);
  await until(() => onB.received.length === 1, 'the direct send');
  assert.equal(onB.received[0], 'direct');

  // Subscribe both by id from A (one message per node), then publish.
  assert.deepEqual((await a.request('subscribe', { ids: [onB.id, rpc.id], channel: room })).result, [], 'no local id changed');
  await until(async () => (await b.request('isSubscribed', { conn: onB.id, channel: room })).result, 'B to apply the subscription');
  await until(async () => (await c.request('isSubscribed', { conn: rpc.id, channel: room })).result, 'C to apply the subscription');
  await until(async () => (await subscribers(room)) === 2, 'B and C to subscribe in the broker');
  assert.equal((await a.publish(room, '"to the room"')).result, 0);
  await until(() => onB.received.length === 2 && onC.length === 1, 'the publish on both');
  assert.deepEqual([onB.received[1], onC[0]], ['"to the room"', 'to the room']);

  // A send and a publish from one node keep their order on arrival where
  // the engine promises it (Redis: one connection out, one in; in a
  // cluster only on the nodes' master; not NATS: docs/scale-out.md).
  const rounds = 20;
  for (let i = 0; i < rounds; i++) {
    await Promise.all([a.request('send', { conn: onB.id, text: `"s${i}"` }), a.publish(room, `"p${i}"`)]);
  }
  await until(() => onB.received.length === 2 + 2 * rounds, 'the interleaved sends and publishes');
  const expected = Array.from({ length: rounds }, (_, i) => [`"s${i}"`, `"p${i}"`]).flat();
  const got = onB.received.slice(2);
  if (ordered) assert.deepEqual(got, expected);
  else {
    assert.deepEqual([...got].sort(), [...expected].sort(), 'each once');
    t.diagnostic(`sends and publishes ${same(got, expected) ? 'kept' : 'did not keep'} their order (not promised here): ${got.join(' ')}`);
  }

  // Unsubscribe by id.
  assert.equal((await a.request('unsubscribe', { conn: onB.id, channel: room })).result, true);
  await until(async () => !(await b.request('isSubscribed', { conn: onB.id, channel: room })).result, 'B to apply the unsubscription');

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
  const { nodes: [a, b, c], subscribers } = await startNodes(t, engine);
  const inRoomA = await wsWithId(t, a);
  const inRoomB = await wsWithId(t, b);
  const outB = await wsWithId(t, b);
  const inRoomC = await wsWithId(t, c);
  const onRpc = [];
  const rpc = await rpcClient(t, c, onRpc);
  for (const ws of [inRoomA, inRoomB, inRoomC]) assert.equal(await ws.command('sub:room'), 'ok:sub:room');
  assert.equal(await rpc.call('join', 'room'), true);
  await until(async () => (await subscribers('room')) === 3, 'three nodes to subscribe');

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
  const { nodes: [a, b, c], subscribers } = await startNodes(t, engine);
  const phone = await wsClient(t, b);
  const laptop = await wsClient(t, c);
  const other = await wsClient(t, a);
  assert.equal(await phone.command('login:42'), 'ok:login:42');
  assert.equal(await laptop.command('login:42'), 'ok:login:42');
  assert.equal(await other.command('login:7'), 'ok:login:7');
  await until(async () => (await subscribers('user:42')) === 2, 'the user\'s nodes to subscribe');
  assert.equal((await a.publish('user:42', 'for 42')).result, 0);
  await until(() => phone.received.length === 1 && laptop.received.length === 1, 'both of the user\'s connections');
  await sleep(100);
  assert.deepEqual([phone.received, laptop.received, other.received], [['for 42'], ['for 42'], []]);
}

/** A graceful leave is seen at once (and frees a stored number); a killed node drops out after nodeTtl (and its key expires). */
export async function leaveAndKill(t, engine) {
  const { server, prefix, nodes } = await startNodes(t, engine, { nodeTtl: 1 });
  const [a, b, c] = nodes;
  const [na, nb] = await Promise.all(nodes.map(async (node) => (await stats(node)).brokerNode));
  const keys = engine.nodeKeys && (() => engine.nodeKeys(server, prefix));
  for (const node of nodes) {
    await until(async () => (await stats(node)).brokerNodes.length === 3, 'every node to know all three', 3000);
  }

  // Graceful: C's key (where numbers are stored) is gone as close()
  // returns, and the others drop it at once (well within the TTL).
  assert.equal((await c.request('close')).result, true);
  if (keys) assert.deepEqual(await keys(), sorted([na, nb]));
  for (const node of [a, b]) {
    await until(async () => same((await stats(node)).brokerNodes, sorted([na, nb])), 'the goodbye to be seen', 500);
  }

  // Killed: its key stays until the TTL runs out, then the number is
  // free, and A stops counting it live within nodeTtl of its last
  // heartbeat.
  b.child.kill('SIGKILL');
  if (keys) assert.ok((await keys()).includes(nb), 'the killed node\'s key outlives it');
  const killed = Date.now();
  if (keys) await until(async () => !(await keys()).includes(nb), 'the key to expire', 3000);
  await until(async () => same((await stats(a)).brokerNodes, [na]), 'A to drop B', 3000);
  const after = Date.now() - killed;
  t.diagnostic(`a killed node was forgotten after ${after} ms (nodeTtl 1 s)`);
  assert.ok(after >= 500, `not before its heartbeats could be missed (${after} ms)`);
  // A's own key is kept alive by its heartbeat all along.
  if (keys) assert.deepEqual(await keys(), [na]);
}

/** Garbage on the node channels is counted and ignored; a broker down refuses sends to other nodes. */
export async function malformedAndDown(t, engine) {
  const { server, prefix, nodes: [a, b] } = await startNodes(t, engine, {}, 2);
  const onB = await wsWithId(t, b);
  const nb = (await stats(b)).brokerNode;
  const got = [await engine.publishRaw(t, server, prefix, nb, 'not a node message'), await engine.publishRaw(t, server, prefix, 'all', '\x01\x01')];
  // Where the broker counts receivers (Redis's PUBLISH): B alone, then both.
  if (got[0] !== null) assert.deepEqual(got, [1, 2]);
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
