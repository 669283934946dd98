// A Redis Cluster with sharded pub/sub (docs/scale-out.md, "Topologies"):
// three masters started by the test, three Switchboard processes; a
// channel `c` is the sharded channel `<prefix>{c}` on its slot's master.
import test from 'node:test';
import assert from 'node:assert/strict';
import { cli, sleep, startCluster, startClusterNode, until, wsClient } from './helpers.mjs';

const prefix = `sbcluster${process.pid}:`;
const key = (c) => `${prefix}{${c}}`;

/** `<tag>:<i>` messages of one publisher, in the order received. */
const of = (received, tag) => received.map((m) => JSON.parse(m)).filter((m) => m.startsWith(`${tag}:`)).map((m) => Number(m.split(':')[1]));
const increasing = (list) => list.every((v, i) => i === 0 || v > list[i - 1]);

test('sharded pub/sub across three nodes: channels on every master, one order per channel, and a slot migration under traffic', { timeout: 120_000 }, async (t) => {
  const cluster = await startCluster(t, { masters: 3 });
  const [a, b, c] = await Promise.all([0, 1, 2].map(() => startClusterNode(t, cluster, { prefix })));
  const onB = await wsClient(t, b);
  const onC = await wsClient(t, c);

  // Channels whose slots are on every master.
  const names = Array.from({ length: 12 }, (_, i) => `room${i}`);
  const owners = new Set();
  for (const name of names) owners.add((await cluster.owner(await cluster.slot(name))).port);
  assert.equal(owners.size, 3, 'the channels spread over the three masters');
  for (const name of names) {
    assert.equal(await onB.command(`sub:${name}`), `ok:sub:${name}`);
    assert.equal(await onC.command(`sub:${name}`), `ok:sub:${name}`);
  }
  await until(async () => {
    for (const name of names) if ((await cluster.shardNumsub(key(name))) !== 2) return false;
    return true;
  }, 'B and C subscribed at each channel\'s master', 10_000);

  // Cross-node delivery from A, which has no subscriber.
  for (const name of names) assert.equal((await a.publish(name, JSON.stringify(`${name}:0`))).result, 0);
  await until(() => onB.received.length === names.length && onC.received.length === names.length, 'every channel on B and C');

  // One order per channel with two publishers.
  const count = 300;
  const bursts = await Promise.all([a.request('burst', { channel: 'race', tag: 'a', count }), c.request('burst', { channel: 'race', tag: 'c', count })]);
  assert.deepEqual(bursts.map((r) => r.result), [count, count], 'race has no subscriber yet: published all the same');
  assert.equal(await onB.command('sub:race'), 'ok:sub:race');
  assert.equal(await onC.command('sub:race'), 'ok:sub:race');
  await until(async () => (await cluster.shardNumsub(key('race'))) === 2, 'race subscribed');
  onB.received.length = 0;
  onC.received.length = 0;
  await Promise.all([a.request('burst', { channel: 'race', tag: 'a', count }), c.request('burst', { channel: 'race', tag: 'c', count })]);
  await until(() => onB.received.length === 2 * count && onC.received.length === 2 * count, 'both bursts on B and C', 20_000);
  assert.deepEqual(onC.received, onB.received, 'B and C saw one order');
  assert.deepEqual(of(onB.received, 'a'), Array.from({ length: count }, (_, i) => i));
  assert.deepEqual(of(onB.received, 'c'), Array.from({ length: count }, (_, i) => i));

  // The slot of `race` moves to another master while A publishes to it.
  onB.received.length = 0;
  onC.received.length = 0;
  const slot = await cluster.slot('race');
  const from = await cluster.owner(slot);
  const to = (await cluster.masters()).find((m) => m.port !== from.port);
  const long = 3000;
  const burst = a.request('burst', { channel: 'race', tag: 'm', count: long });
  await until(() => onB.received.length > 200, 'traffic before the move', 20_000);
  await cluster.migrate(slot, to);
  assert.equal((await burst).result, long, 'no publish was refused during the move');
  assert.equal((await cluster.owner(slot)).port, to.port);
  // Subscribers keep their channel: both nodes subscribed at the new master.
  await until(async () => (await cluster.shardNumsub(key('race'))) === 2, 'B and C resubscribed at the new master', 10_000);
  let n = 0;
  await until(async () => {
    const text = JSON.stringify(`after:${++n}`);
    await a.publish('race', text);
    await sleep(50);
    return onB.received.includes(text) && onC.received.includes(text);
  }, 'messages after the move', 10_000);
  for (const received of [onB.received, onC.received]) {
    const seen = of(received, 'm');
    assert.ok(increasing(seen), 'order kept across the move');
    t.diagnostic(`${seen.length} of ${long} published during the move reached a subscriber`);
  }
  // The other channels were not disturbed.
  assert.equal((await a.publish('room0', JSON.stringify('room0:1'))).result, 0);
  await until(() => onB.received.includes(JSON.stringify('room0:1')), 'room0 still delivered');
  const stats = (await a.request('stats')).result;
  assert.equal(stats.brokerPublishesLost, 0, 'MOVED publishes were sent again, none lost');
});

test('a master that fails over to its replica: subscribers keep their channels', { timeout: 120_000 }, async (t) => {
  const cluster = await startCluster(t, { masters: 3, replicas: 1 });
  const [a, b] = await Promise.all([0, 1].map(() => startClusterNode(t, cluster, { prefix })));
  const onB = await wsClient(t, b);
  assert.equal(await onB.command('sub:fail'), 'ok:sub:fail');
  await until(async () => (await cluster.shardNumsub(key('fail'))) === 1, 'B subscribed');
  assert.equal((await a.publish('fail', '"before"')).result, 0);
  await until(() => onB.received.includes('"before"'), 'delivery before');

  // A replica of the channel's master takes over (a manual failover).
  const slot = await cluster.slot('fail');
  const master = await cluster.owner(slot);
  // `--cluster create` attaches replicas a moment after the slots are served.
  const replica = await until(async () => {
    const nodes = (await cluster.cli('CLUSTER', 'NODES')).split('\n').map((l) => l.split(' '));
    return nodes.find(([, , flags, masterId]) => flags.includes('slave') && masterId === master.id);
  }, 'a replica of the master', 20_000);
  const replicaPort = Number(replica[1].split(':')[1].split('@')[0]);
  // Wait for the replica to be in sync, or it refuses a manual failover.
  await until(async () => /master_link_status:up/.test(await cli(replicaPort, 'INFO', 'replication')), 'the replica in sync', 20_000);
  assert.equal(await cli(replicaPort, 'CLUSTER', 'FAILOVER'), 'OK');
  await until(async () => (await cluster.owner(slot))?.port === replicaPort, 'the replica to be master', 20_000);
  await until(async () => (await cluster.shardNumsub(key('fail'))) === 1, 'B subscribed at the new master', 20_000);
  let n = 0;
  await until(async () => {
    const text = `"after ${++n}"`;
    if ((await a.publish('fail', text)).error) return false;
    await sleep(50);
    return onB.received.includes(text);
  }, 'delivery after the failover', 20_000);
});
