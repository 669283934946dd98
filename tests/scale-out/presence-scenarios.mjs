// The presence scenarios (docs/scale-out.md, "Presence") written once and
// run by each topology's test file: standalone Redis (presence.test.mjs)
// and a Redis Cluster (cluster-presence.test.mjs). An engine is one of
// engines.mjs's with `redisName(prefix, channel)`, the broker channel that
// carries `channel` (node-scenarios.mjs).
import assert from 'node:assert/strict';
import { sleep, until, wsClient } from './helpers.mjs';

/** The presence events a WebSocket client received, parsed. */
const events = (client) => client.received.map((text) => JSON.parse(text));
const members = async (node, channel) => {
  const reply = await node.request('presence', { channel });
  assert.equal(reply.error, undefined, `presence failed: ${reply.error}`);
  return reply.result.map((m) => m.info.user).sort();
};

/** Members on every node are listed with their info; joins and leaves reach subscribers of $presence: on every node, also when a node dies. */
export async function membersAndEvents(t, engine) {
  const server = await engine.start(t);
  const prefix = engine.freshPrefix();
  const env = { prefix, presence: ['room.*'], presenceTtl: 1 };
  const [a, b, c] = await Promise.all([0, 1, 2].map(() => engine.startNode(t, server, env)));

  const watcher = await wsClient(t, a);
  assert.equal(await watcher.command('sub:$presence:room.1'), 'ok:sub:$presence:room.1');
  await until(async () => (await engine.subscribers(server, engine.redisName(prefix, '$presence:room.1'))) === 1, 'A to subscribe to the events');

  const bob = await wsClient(t, b);
  const carol = await wsClient(t, c);
  const dave = await wsClient(t, c);
  assert.equal(await bob.command('info:{"user":"bob"}'), 'ok:info:{"user":"bob"}');
  assert.equal(await carol.command('info:{"user":"carol"}'), 'ok:info:{"user":"carol"}');
  assert.equal(await dave.command('info:{"user":"dave"}'), 'ok:info:{"user":"dave"}');
  await bob.command('sub:room.1');
  await carol.command('sub:room.1');
  await dave.command('sub:room.1');
  await carol.command('sub:other'); // no presence: not listed anywhere

  await until(async () => (await members(a, 'room.1')).length === 3, 'three members');
  assert.deepEqual(await members(a, 'room.1'), ['bob', 'carol', 'dave']);
  assert.deepEqual(await members(b, 'room.1'), ['bob', 'carol', 'dave']);
  const ids = (await a.request('presence', { channel: 'room.1' })).result.map((m) => m.id);
  assert.equal(new Set(ids).size, 3, 'ids name connections across nodes');
  assert.equal((await a.request('presence', { channel: 'other' })).error, 'ERR_PRESENCE_UNAVAILABLE');
  await until(() => watcher.received.length === 3, 'three joins');
  assert.deepEqual(events(watcher).map((e) => `${e.event}:${e.info.user}`).sort(), ['join:bob', 'join:carol', 'join:dave']);

  // A refresh does not repeat a join.
  await sleep(700);
  assert.equal(watcher.received.length, 3);

  // Leaving: the leave is published at once.
  await bob.command('unsub:room.1');
  await until(() => watcher.received.length === 4, 'the leave');
  assert.deepEqual(events(watcher)[3], { event: 'leave', id: events(watcher).find((e) => e.info.user === 'bob').id, info: { user: 'bob' } });
  assert.deepEqual(await members(b, 'room.1'), ['carol', 'dave']);

  // C dies: its members are no longer refreshed and expire; the next look
  // removes them and publishes their leaves.
  c.child.kill('SIGKILL');
  await until(async () => (await members(a, 'room.1')).length === 0, "C's members to expire", 5000);
  await until(() => watcher.received.length === 6, 'their leaves');
  assert.deepEqual(events(watcher).slice(4).map((e) => `${e.event}:${e.info.user}`).sort(), ['leave:carol', 'leave:dave']);
  await sleep(200);
  assert.equal(watcher.received.length, 6, 'each leave once');
}

/** A node that closes gracefully removes its members at once; info set after joining shows in the list. */
export async function gracefulLeave(t, engine) {
  const server = await engine.start(t);
  const prefix = engine.freshPrefix();
  const env = { prefix, presence: ['lobby'], presenceTtl: 30 };
  const [a, b] = await Promise.all([0, 1].map(() => engine.startNode(t, server, env)));
  const erin = await wsClient(t, b);
  await erin.command('sub:lobby');
  // On her own server a read right after the subscription lists her: it
  // is answered in turn with that server's joins.
  assert.equal((await b.request('presence', { channel: 'lobby' })).result.length, 1);
  await until(async () => (await a.request('presence', { channel: 'lobby' })).result?.length === 1, 'erin');
  assert.equal((await a.request('presence', { channel: 'lobby' })).result[0].info, null);
  await erin.command('info:{"user":"erin"}');
  await until(async () => (await members(a, 'lobby'))[0] === 'erin', 'the new info');

  assert.equal((await b.request('close')).result, true);
  assert.deepEqual(await members(a, 'lobby'), [], 'gone without waiting for the TTL');
}

/** A killed node's members leave once its node key expires (nodeTtl), long before their own presenceTtl. */
export async function killedNodeEvicted(t, engine) {
  const server = await engine.start(t);
  const prefix = engine.freshPrefix();
  const env = { prefix, presence: ['hall'], presenceTtl: 60, nodeTtl: 1 };
  const [a, b] = await Promise.all([0, 1].map(() => engine.startNode(t, server, env)));
  const watcher = await wsClient(t, a);
  await watcher.command('sub:$presence:hall');
  const frank = await wsClient(t, b);
  await frank.command('info:{"user":"frank"}');
  await frank.command('sub:hall');
  await until(() => watcher.received.length === 1, 'the join');
  // A must know B to notice that it is gone (else the TTL applies).
  await until(async () => (await a.request('stats')).result.brokerNodes.length === 2, 'A to hear B');

  const killedAt = Date.now();
  b.child.kill('SIGKILL');
  await until(() => watcher.received.length === 2, 'the leave', 10_000);
  assert.deepEqual(JSON.parse(watcher.received[1]).info, { user: 'frank' });
  assert.equal(JSON.parse(watcher.received[1]).event, 'leave');
  assert.ok(Date.now() - killedAt < 30_000, 'well before the 60 s presenceTtl');
  assert.deepEqual(await members(a, 'hall'), []);
}
