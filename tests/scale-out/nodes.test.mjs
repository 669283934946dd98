// Nodes that know each other (docs/scale-out.md, "Nodes" and "Direct
// sends across nodes"): three Switchboard processes on one real
// redis-server claim distinct node numbers, their connection ids carry
// them, and operations by id reach connections on other nodes. The
// scenarios shared with a Redis Cluster are in node-scenarios.mjs.
import test from 'node:test';
import assert from 'node:assert/strict';
import { SendStatus } from 'switchboard';
import { startRedis } from '../helpers/redis.mjs';
import { startNode, until } from './helpers.mjs';
import { redis as redisEngine } from './engines.mjs';
import * as scenarios from './node-scenarios.mjs';

const { stats, wsWithId } = scenarios;
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

const engine = {
  ...redisEngine,
  freshPrefix,
  redisName: (prefix, channel) => `${prefix}${channel}`,
  nodeKeys,
  nodeKeyTtl,
  // One Redis: every channel keeps its order with the node messages.
  orderedChannel: async () => 'room',
};

test('three nodes claim distinct numbers, know each other, and their connection ids carry them', (t) => scenarios.distinctNumbers(t, engine));

test('send, subscribe, unsubscribe and close by id reach WebSocket and protocol connections on other nodes', (t) => scenarios.directOperations(t, engine));

test('publishTo across nodes: channels and ids of every node, each recipient once', (t) => scenarios.publishToAcrossNodes(t, engine));

test('per-user addressing: a personal channel reaches the user on every node', (t) => scenarios.perUserAddressing(t, engine));

test('a node that leaves gracefully tells the others and frees its number; a killed one expires', (t) => scenarios.leaveAndExpiry(t, engine));

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
