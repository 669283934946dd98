// Nodes that know each other through standalone Redis (docs/scale-out.md,
// "Nodes" and "Direct sends across nodes"): three Switchboard processes on
// one real redis-server claim distinct node numbers as keys, their
// connection ids carry them, and operations by id reach connections on
// other nodes. The scenarios every engine with nodes shares are in
// node-scenarios.mjs; what only Redis's keys show is here.
import test from 'node:test';
import assert from 'node:assert/strict';
import { startRedis } from '../helpers/redis.mjs';
import { startNode, until } from './helpers.mjs';
import { claimAndKnow, directSends, leaveAndKill, malformedAndDown, nodeKeys, perUserAddressing, publishToAcrossNodes, redisNodes as engine, sorted, stats } from './node-scenarios.mjs';

async function nodeKeyTtl(redis, prefix, n) {
  return Number(await redis.cli('EVAL', "return redis.call('PTTL', ARGV[1] .. '\\255node:' .. ARGV[2])", '0', prefix, String(n)));
}

test('three nodes claim distinct numbers as keys, know each other, and their connection ids carry them', async (t) => {
  const { server, prefix, numbers } = await claimAndKnow(t, engine);
  assert.deepEqual(await nodeKeys(server, prefix), sorted(numbers));
  const ttl = await nodeKeyTtl(server, prefix, numbers[0]);
  assert.ok(ttl > 0 && ttl <= 3000, `the key expires (PTTL ${ttl})`);
});

test('send, subscribe, unsubscribe and close by id reach WebSocket and protocol connections on other nodes', (t) => directSends(t, engine));

test('publishTo across nodes: channels and ids of every node, each recipient once', (t) => publishToAcrossNodes(t, engine));

test('per-user addressing: a personal channel reaches the user on every node', (t) => perUserAddressing(t, engine));

test('a node that leaves gracefully tells the others and frees its number; a killed one expires', (t) => leaveAndKill(t, engine));

test('malformed node messages are counted and ignored; a broker down refuses sends to other nodes', (t) => malformedAndDown(t, engine));

test('the heartbeat takes a lost key back and counts a number taken by another node', async (t) => {
  const redis = await startRedis(t);
  const prefix = engine.freshPrefix();
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
