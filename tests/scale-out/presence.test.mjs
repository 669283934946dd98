// Presence through Redis (docs/scale-out.md, "Presence"): separate
// Switchboard processes on one real redis-server.
import test from 'node:test';
import assert from 'node:assert/strict';
import { startRedis } from '../helpers/redis.mjs';
import { startNode, until, wsClient } from './helpers.mjs';

let runs = 0;
const freshPrefix = () => `sbpres${process.pid}x${++runs}:`;

const members = async (node, channel) => {
  const reply = await node.request('presence', { channel });
  assert.equal(reply.error, undefined, `presence failed: ${reply.error}`);
  return reply.result.map((m) => m.info.user).sort();
};

test('a node that closes gracefully removes its members at once; info set after joining shows in the list', async (t) => {
  const redis = await startRedis(t);
  const prefix = freshPrefix();
  const env = { prefix, presence: ['lobby'], presenceTtl: 30 };
  const [a, b] = await Promise.all([0, 1].map(() => startNode(t, redis, env)));
  const erin = await wsClient(t, b);
  await erin.command('sub:lobby');
  await until(async () => (await a.request('presence', { channel: 'lobby' })).result?.length === 1, 'erin');
  assert.equal((await a.request('presence', { channel: 'lobby' })).result[0].info, null);
  await erin.command('info:{"user":"erin"}');
  await until(async () => (await members(a, 'lobby'))[0] === 'erin', 'the new info');

  assert.equal((await b.request('close')).result, true);
  assert.deepEqual(await members(a, 'lobby'), [], 'gone without waiting for the TTL');
});
