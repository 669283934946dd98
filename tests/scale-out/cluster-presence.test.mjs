// Presence on a Redis Cluster (docs/scale-out.md, "Presence"): the
// scenarios of presence.test.mjs (presence-scenarios.mjs) on Switchboard
// processes and a real three-master cluster, where each channel's presence
// keys and its `$presence:` events channel live in the channel's slot.
import test, { after } from 'node:test';
import assert from 'node:assert/strict';
import * as scenarios from './presence-scenarios.mjs';
import { cluster, stopCluster } from './cluster-engine.mjs';
import { cli, sleep, until, wsClient } from './helpers.mjs';

after(stopCluster);

const slow = { timeout: 60_000 };

test('cluster: members on every node are listed with their info; joins and leaves reach subscribers of $presence: on every node, also when a node dies', slow, (t) => scenarios.membersAndEvents(t, cluster));

test('cluster: a node that closes gracefully removes its members at once; info set after joining shows in the list', slow, (t) => scenarios.gracefulLeave(t, cluster));

test("cluster: a killed node's members leave once its node key expires (nodeTtl), long before their own presenceTtl", slow, (t) => scenarios.killedNodeEvicted(t, cluster));

test('cluster: presence channels on every master, each channel\'s keys and events in its slot', slow, async (t) => {
  const server = await cluster.start();
  const prefix = cluster.freshPrefix();
  const [a, b] = await Promise.all([0, 1].map(() => cluster.startNode(t, server, { prefix, presence: ['p*'] })));
  const names = Array.from({ length: 9 }, (_, i) => `p${i}`);
  const masters = new Set();
  for (const name of names) masters.add((await server.owner(await server.slot(name))).port);
  assert.equal(masters.size, 3, 'the channels spread over the three masters');
  const watchers = [];
  for (const name of names) {
    const watcher = await wsClient(t, a);
    assert.equal(await watcher.command(`sub:$presence:${name}`), `ok:sub:$presence:${name}`);
    watchers.push(watcher);
  }
  const member = await wsClient(t, b);
  for (const name of names) assert.equal(await member.command(`sub:${name}`), `ok:sub:${name}`);
  for (const [i, name] of names.entries()) {
    await until(() => watchers[i].received.length === 1, `the join on ${name}`);
    assert.equal(JSON.parse(watchers[i].received[0]).event, 'join');
    assert.equal((await a.request('presence', { channel: name })).result.length, 1);
    // The keys at the channel's master, beside its events channel.
    const key = `${prefix}{${name}}:presence`;
    assert.equal(await server.slot(key), await server.slot(name));
    const { port } = await server.owner(await server.slot(name));
    assert.equal(await cli(port, 'HLEN', key), '1');
  }
});

test('cluster: a presence channel\'s slot migrates with its keys: members kept alive at the new master, events after the move', slow, async (t) => {
  const server = await cluster.start();
  const prefix = cluster.freshPrefix();
  // Refreshes every 0.5 s: some meet the migration (ASK, then MOVED).
  const env = { prefix, presence: ['moving'], presenceTtl: 1.5 };
  const [a, b] = await Promise.all([0, 1].map(() => cluster.startNode(t, server, env)));
  const watcher = await wsClient(t, a);
  assert.equal(await watcher.command('sub:$presence:moving'), 'ok:sub:$presence:moving');
  const first = await wsClient(t, b);
  await first.command('sub:moving');
  await until(() => watcher.received.length === 1, 'the first join');

  const slot = await server.slot('moving');
  const from = await server.owner(slot);
  const to = (await server.masters()).find((m) => m.port !== from.port);
  await server.migrate(slot, to, { keys: true, during: () => sleep(600) });
  assert.equal(await cli(to.port, 'HLEN', `${prefix}{moving}:presence`), '1', 'the members moved with the slot');
  // The watcher's node subscribes the events at the new master again.
  await until(async () => (await cluster.subscribers(server, cluster.redisName(prefix, '$presence:moving'))) === 1, 'the events channel at the new master', 10_000);

  const second = await wsClient(t, b);
  await second.command('sub:moving');
  await until(() => watcher.received.length === 2, 'the second join, after the move');
  // Past presenceTtl: the refreshes reached the new master, nobody expired.
  await sleep(2000);
  assert.equal((await a.request('presence', { channel: 'moving' })).result.length, 2);
  assert.deepEqual(watcher.received.map((m) => JSON.parse(m).event), ['join', 'join'], 'no leave: every refresh followed the slot');
  await first.command('unsub:moving');
  await until(() => watcher.received.length === 3, 'the leave');
  assert.equal(JSON.parse(watcher.received[2]).event, 'leave');
});
