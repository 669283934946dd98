// Presence on a Redis Cluster (docs/scale-out.md, "Presence"): the
// scenarios of presence.test.mjs (presence-scenarios.mjs) on Switchboard
// processes and a real three-master cluster, where each channel's presence
// keys and its `$presence:` events channel live in the channel's slot.
import test, { after } from 'node:test';
import assert from 'node:assert/strict';
import * as scenarios from './presence-scenarios.mjs';
import { cluster, stopCluster } from './cluster-engine.mjs';
import { cli, until, wsClient } from './helpers.mjs';

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
