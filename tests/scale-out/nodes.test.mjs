// Nodes that know each other through standalone Redis (docs/scale-out.md,
// "Nodes" and "Direct sends across nodes"): three Switchboard processes on
// one real redis-server claim distinct node numbers as keys, their
// connection ids carry them, and operations by id reach connections on
// other nodes. The scenarios every engine with nodes shares (NATS and a
// Redis Cluster too) are in node-scenarios.mjs; what only standalone
// Redis's keys show is here.
import test from 'node:test';
import assert from 'node:assert/strict';
import { redis } from './engines.mjs';
import { until } from './helpers.mjs';
import * as scenarios from './node-scenarios.mjs';

const { stats } = scenarios;

/** The node numbers whose keys exist in Redis (names under `<prefix>\xFF`, reached through Lua). */
async function nodeKeys(server, prefix) {
  const script = "local out = {} for _, k in ipairs(redis.call('KEYS', ARGV[1] .. '\\255node:*')) do table.insert(out, string.sub(k, #ARGV[1] + 7)) end return out";
  const text = await server.cli('EVAL', script, '0', prefix);
  return text === '' ? [] : text.split('\n').map(Number).sort((x, y) => x - y);
}

async function nodeKeyTtl(server, prefix, n) {
  return Number(await server.cli('EVAL', "return redis.call('PTTL', ARGV[1] .. '\\255node:' .. ARGV[2])", '0', prefix, String(n)));
}

/** Standalone Redis: node `to`'s channel (or, for 'all', the shared one) is `<prefix>\xFFnode:<to>` (`<prefix>\xFFnodes`). */
const engine = {
  ...redis,
  nodeKeys,
  nodeKeyTtl,
  // One Redis: every channel keeps its order with the node messages.
  orderedChannel: async () => 'room',
  publishRaw: async (t, server, prefix, to, payload) =>
    Number(await server.cli('EVAL', "return redis.call('PUBLISH', ARGV[1] .. '\\255' .. ARGV[2], ARGV[3])", '0', prefix, to === 'all' ? 'nodes' : `node:${to}`, payload)),
};

test('three nodes claim distinct numbers as keys, know each other, and their connection ids carry them', (t) => scenarios.claimAndKnow(t, engine));

test('send, subscribe, unsubscribe and close by id reach WebSocket and protocol connections on other nodes', (t) => scenarios.directSends(t, engine));

test('publishTo across nodes: channels and ids of every node, each recipient once', (t) => scenarios.publishToAcrossNodes(t, engine));

test('per-user addressing: a personal channel reaches the user on every node', (t) => scenarios.perUserAddressing(t, engine));

test('a node that leaves gracefully tells the others and frees its number; a killed one expires', (t) => scenarios.leaveAndKill(t, engine));

test('malformed node messages are counted and ignored; a broker down refuses sends to other nodes', (t) => scenarios.malformedAndDown(t, engine));

test('the heartbeat takes a lost key back and counts a number taken by another node', async (t) => {
  const server = await engine.start(t);
  const prefix = engine.freshPrefix();
  const node = await engine.startNode(t, server, { prefix, nodeTtl: 1 });
  const n = (await stats(node)).brokerNode;
  const key = "ARGV[1] .. '\\255node:' .. ARGV[2]";
  // The key vanishes (as in a Redis restart): the next heartbeat claims it again.
  assert.equal(await server.cli('EVAL', `return redis.call('DEL', ${key})`, '0', prefix, String(n)), '1');
  await until(async () => (await nodeKeys(server, prefix)).includes(n), 'the key to be claimed again', 2000);
  assert.equal((await stats(node)).brokerNodeConflicts, 0);
  // Another node holds it: counted, and the number is kept (ids carry it).
  assert.equal(await server.cli('EVAL', `return redis.call('SET', ${key}, 'intruder', 'PX', '60000')`, '0', prefix, String(n)), 'OK');
  await until(async () => (await stats(node)).brokerNodeConflicts >= 1, 'the conflict to be counted', 2000);
  assert.equal((await stats(node)).brokerNode, n);
  assert.equal(await server.cli('EVAL', `return redis.call('GET', ${key})`, '0', prefix, String(n)), 'intruder', 'the other holder\'s key is left alone');
});
