// Nodes that know each other (docs/scale-out.md, "Nodes" and "Direct
// sends across nodes"): three Switchboard processes on one real
// redis-server claim distinct node numbers, their connection ids carry
// them, and operations by id reach connections on other nodes.
import test from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { nodeOf, SendStatus } from 'switchboard';
import { connect, jsonCodec } from 'switchboard-client/node';
import { startRedis } from '../helpers/redis.mjs';
import { sleep, startNode, until, wsClient } from './helpers.mjs';

let runs = 0;
const freshPrefix = () => `sbnodes${process.pid}x${++runs}:`;

/** The node numbers whose keys exist in Redis (names under `<prefix>\xFF`, reached through Lua). */
async function nodeKeys(redis, prefix) {
  const script = "local out = {} for _, k in ipairs(redis.call('KEYS', ARGV[1] .. '\\255node:*')) do table.insert(out, string.sub(k, #ARGV[1] + 7)) end return out";
  const text = await redis.cli('EVAL', script, '0', prefix);
  return text === '' ? [] : text.split('\n').map(Number).sort((x, y) => x - y);
}

async function nodeKeyTtl(redis, prefix, n) {
  return Number(await redis.cli('EVAL', "return redis.call('PTTL', ARGV[1] .. '\\255node:' .. ARGV[2])", '0', prefix, String(n)));
}

async function stats(node) {
  return (await node.request('stats')).result;
}

async function wsWithId(t, node) {
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

const sorted = (list) => [...list].sort((x, y) => x - y);

/** `promise`, or a failure after `ms`: every wait here is bounded. */
function within(promise, what, ms = 5000) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}


test('three nodes claim distinct numbers, know each other, and their connection ids carry them', async (t) => {
  const redis = await startRedis(t);
  const prefix = freshPrefix();
  const nodes = await Promise.all([0, 1, 2].map(() => startNode(t, redis, { prefix, nodeTtl: 3 })));
  const numbers = await Promise.all(nodes.map(async (node) => (await stats(node)).brokerNode));
  assert.equal(new Set(numbers).size, 3, `distinct numbers: ${numbers}`);
  for (const n of numbers) assert.ok(Number.isInteger(n) && n >= 1 && n <= 1023, `${n} in 1..1023`);
  assert.deepEqual(await nodeKeys(redis, prefix), sorted(numbers));
  const ttl = await nodeKeyTtl(redis, prefix, numbers[0]);
  assert.ok(ttl > 0 && ttl <= 3000, `the key expires (PTTL ${ttl})`);

  // Each learns of the others from their heartbeats (a newcomer is
  // answered at once).
  for (const node of nodes) {
    await until(async () => JSON.stringify((await stats(node)).brokerNodes) === JSON.stringify(sorted(numbers)), 'every node to know all three', 3000);
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
});

test('send, subscribe, unsubscribe and close by id reach WebSocket and protocol connections on other nodes', async (t) => {
  const redis = await startRedis(t);
  const prefix = freshPrefix();
  const [a, b, c] = await Promise.all([0, 1, 2].map(() => startNode(t, redis, { prefix })));
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
  await until(async () => (await redis.numsub(`${prefix}room`))[`${prefix}room`] === 2, 'B and C to subscribe in Redis');
  assert.equal((await a.publish('room', '"to the room"')).result, 0);
  await until(() => onB.received.length === 2 && onC.length === 1, 'the publish on both');
  assert.deepEqual([onB.received[1], onC[0]], ['"to the room"', 'to the room']);

  // A send and a publish from one node keep their order on arrival (one
  // connection to Redis out, one in).
  for (let i = 0; i < 20; i++) {
    await Promise.all([a.request('send', { conn: onB.id, text: `"s${i}"` }), a.publish('room', `"p${i}"`)]);
  }
  await until(() => onB.received.length === 42, 'the interleaved sends and publishes');
  const expected = Array.from({ length: 20 }, (_, i) => [`"s${i}"`, `"p${i}"`]).flat();
  assert.deepEqual(onB.received.slice(2), expected);

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
});

test('publishTo across nodes: channels and ids of every node, each recipient once', async (t) => {
  const redis = await startRedis(t);
  const prefix = freshPrefix();
  const [a, b, c] = await Promise.all([0, 1, 2].map(() => startNode(t, redis, { prefix })));
  const inRoomA = await wsWithId(t, a);
  const inRoomB = await wsWithId(t, b);
  const outB = await wsWithId(t, b);
  const inRoomC = await wsWithId(t, c);
  const onRpc = [];
  const rpc = await rpcClient(t, c, onRpc);
  for (const ws of [inRoomA, inRoomB, inRoomC]) assert.equal(await ws.command('sub:room'), 'ok:sub:room');
  assert.equal(await rpc.call('join', 'room'), true);
  await until(async () => (await redis.numsub(`${prefix}room`))[`${prefix}room`] === 3, 'three nodes to subscribe');

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
});

test('per-user addressing: a personal channel reaches the user on every node', async (t) => {
  const redis = await startRedis(t);
  const prefix = freshPrefix();
  const [a, b, c] = await Promise.all([0, 1, 2].map(() => startNode(t, redis, { prefix })));
  const phone = await wsClient(t, b);
  const laptop = await wsClient(t, c);
  const other = await wsClient(t, a);
  assert.equal(await phone.command('login:42'), 'ok:login:42');
  assert.equal(await laptop.command('login:42'), 'ok:login:42');
  assert.equal(await other.command('login:7'), 'ok:login:7');
  await until(async () => (await redis.numsub(`${prefix}user:42`))[`${prefix}user:42`] === 2, 'the user\'s nodes to subscribe');
  assert.equal((await a.publish('user:42', 'for 42')).result, 0);
  await until(() => phone.received.length === 1 && laptop.received.length === 1, 'both of the user\'s connections');
  await sleep(100);
  assert.deepEqual([phone.received, laptop.received, other.received], [['for 42'], ['for 42'], []]);
});

test('a node that leaves gracefully tells the others and frees its number; a killed one expires', async (t) => {
  const redis = await startRedis(t);
  const prefix = freshPrefix();
  const nodes = await Promise.all([0, 1, 2].map(() => startNode(t, redis, { prefix, nodeTtl: 1 })));
  const [a, b, c] = nodes;
  const [na, nb, nc] = await Promise.all(nodes.map(async (node) => (await stats(node)).brokerNode));
  for (const node of nodes) {
    await until(async () => (await stats(node)).brokerNodes.length === 3, 'every node to know all three', 3000);
  }

  // Graceful: C's key is gone as close() returns, and the others drop it
  // at once (well within the TTL).
  assert.equal((await c.request('close')).result, true);
  assert.deepEqual(await nodeKeys(redis, prefix), sorted([na, nb]));
  for (const node of [a, b]) {
    await until(async () => JSON.stringify((await stats(node)).brokerNodes) === JSON.stringify(sorted([na, nb])), 'the goodbye to be seen', 500);
  }

  // Killed: its key stays until the TTL runs out, then the number is
  // free, and A stops counting it live.
  b.child.kill('SIGKILL');
  assert.ok((await nodeKeys(redis, prefix)).includes(nb), 'the killed node\'s key outlives it');
  const killed = Date.now();
  await until(async () => !(await nodeKeys(redis, prefix)).includes(nb), 'the key to expire', 3000);
  await until(async () => JSON.stringify((await stats(a)).brokerNodes) === JSON.stringify([na]), 'A to drop B', 3000);
  t.diagnostic(`a killed node was forgotten after ${Date.now() - killed} ms (nodeTtl 1 s)`);
  // A's own key is kept alive by its heartbeat all along.
  assert.deepEqual(await nodeKeys(redis, prefix), [na]);
});

test('malformed node messages are counted and ignored; a broker down refuses sends to other nodes', async (t) => {
  const redis = await startRedis(t);
  const prefix = freshPrefix();
  const [a, b] = await Promise.all([0, 1].map(() => startNode(t, redis, { prefix })));
  const onB = await wsWithId(t, b);
  const nb = (await stats(b)).brokerNode;
  const publishRaw = (suffix, payload) => redis.cli('EVAL', "return redis.call('PUBLISH', ARGV[1] .. '\\255' .. ARGV[2], ARGV[3])", '0', prefix, suffix, payload);
  assert.equal(await publishRaw(`node:${nb}`, 'not a node message'), '1');
  assert.equal(await publishRaw('nodes', '\x01\x01'), '2');
  await until(async () => (await stats(b)).brokerNodeMessagesInvalid === 2, 'both to be counted on B');
  await until(async () => (await stats(a)).brokerNodeMessagesInvalid === 1, 'the shared channel\'s garbage to be counted on A');
  // B still works.
  assert.equal((await a.request('send', { conn: onB.id, text: 'still here' })).result, SendStatus.FORWARDED);
  await until(() => onB.received.length === 1, 'the send after the garbage');

  await redis.stop();
  await until(async () => (await a.request('send', { conn: onB.id, text: 'lost' })).error === 'ERR_BROKER_UNAVAILABLE', 'the send to be refused');
  assert.equal((await a.request('end', { conn: onB.id, code: 1000, reason: '' })).error, 'ERR_BROKER_UNAVAILABLE');
  assert.equal((await a.request('publishTo', { targets: [onB.id], text: 'x' })).error, 'ERR_BROKER_UNAVAILABLE');
  assert.equal((await a.request('subscribe', { ids: [onB.id], channel: 'room' })).error, 'ERR_BROKER_UNAVAILABLE');
});

test('the heartbeat takes a lost key back and counts a number taken by another node', async (t) => {
  const redis = await startRedis(t);
  const prefix = freshPrefix();
  const node = await startNode(t, redis, { prefix, nodeTtl: 1 });
  const n = (await stats(node)).brokerNode;
  const key = "ARGV[1] .. '\\255node:' .. ARGV[2]";
  // The key vanishes (as in a Redis restart): the next heartbeat claims it again.
  assert.equal(await redis.cli('EVAL', `return redis.call('DEL', ${key})`, '0', prefix, String(n)), '1');
  await until(async () => (await nodeKeys(redis, prefix)).includes(n), 'the key to be claimed again', 2000);
  assert.equal((await stats(node)).brokerNodeConflicts, 0);
  // Another node holds it: counted, and the number is kept (ids carry it).
  assert.equal(await redis.cli('EVAL', `return redis.call('SET', ${key}, 'intruder', 'PX', '60000')`, '0', prefix, String(n)), 'OK');
  await until(async () => (await stats(node)).brokerNodeConflicts >= 1, 'the conflict to be counted', 2000);
  assert.equal((await stats(node)).brokerNode, n);
  assert.equal(await redis.cli('EVAL', `return redis.call('GET', ${key})`, '0', prefix, String(n)), 'intruder', 'the other holder\'s key is left alone');
});
