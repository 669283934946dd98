// A Redis Cluster with sharded pub/sub (docs/scale-out.md, "Topologies"):
// three masters started by the test, three Switchboard processes; a
// channel `c` is the sharded channel `<prefix>{c}` on its slot's master.
import test from 'node:test';
import assert from 'node:assert/strict';
import { cli, collect, movableClient, readonly, recoverAcrossNodes, sleep, startCluster, startClusterNode, syncedReplica, until, wsClient } from './helpers.mjs';

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
  // In sync, or it refuses a manual failover.
  const replicaPort = await syncedReplica(cluster, master);
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

// History on a cluster (docs/scale-out.md, "History and recovery"): the
// append script runs at the channel's slot's master and SPUBLISHes there.
const history = [{ channels: 'h.*', size: 1000, ttl: 60 }];
const hprefix = `sbclhist${process.pid}:`;

test('history on a cluster: contiguous positions on every node and master, history() from any node, and a client recovering on another node', { timeout: 120_000 }, async (t) => {
  const cluster = await startCluster(t, { masters: 3 });
  const [a, b, c] = await Promise.all([0, 1, 2].map(() => startClusterNode(t, cluster, { prefix: hprefix, history })));

  // Channels on every master: two publishers, one order, contiguous offsets, read back from a third node.
  const names = Array.from({ length: 9 }, (_, i) => `h.room${i}`);
  const owners = new Set();
  for (const name of names) owners.add((await cluster.owner(await cluster.slot(name))).port);
  assert.equal(owners.size, 3, 'the channels spread over the three masters');
  const client = await movableClient(t, { node: c });
  const feeds = names.map((name) => collect(client, name, { recover: true }));
  await Promise.all(feeds.map((feed) => feed.subscription.ready));
  for (let i = 0; i < 3; i++) {
    for (const name of names) {
      assert.equal((await a.publish(name, JSON.stringify(`a${i}`))).error, undefined);
      assert.equal((await b.publish(name, JSON.stringify(`b${i}`))).error, undefined);
    }
  }
  await until(() => feeds.every((feed) => feed.received.length === 6), 'six publications on each channel', 10_000);
  // Masters that forgot the scripts (a flushed cache; a promoted replica has not got them): publishes and reads load them again, and nothing is lost.
  for (const m of await cluster.masters()) assert.equal(await cli(m.port, 'SCRIPT', 'FLUSH'), 'OK');
  for (const name of names) assert.equal((await a.publish(name, JSON.stringify('a3'))).error, undefined);
  await until(() => feeds.every((feed) => feed.received.length === 7), 'the seventh on each channel', 10_000);
  assert.equal((await a.request('stats')).result.brokerPublishesLost, 0);
  for (const [i, name] of names.entries()) {
    const feed = feeds[i];
    assert.deepEqual(feed.received.map((r) => r.position.offset), [1, 2, 3, 4, 5, 6, 7], name);
    const epoch = feed.received[0].position.epoch;
    assert.ok(feed.received.every((r) => r.position.epoch === epoch));
    const page = (await b.request('history', { channel: name, query: {} })).result;
    assert.equal(page.epoch, epoch);
    assert.equal(page.offset, 7);
    assert.deepEqual(page.publications.map((p) => JSON.parse(p.data)), feed.received.map((r) => r.value));
    const after = (await a.request('history', { channel: name, query: { since: { epoch, offset: 4 }, limit: 10 } })).result;
    assert.deepEqual(after.publications.map((p) => p.offset), [5, 6, 7]);
    assert.equal(after.continuous, true);
    // The keys live at the channel's master, in the channel's slot.
    const { port } = await cluster.owner(await cluster.slot(name));
    assert.deepEqual((await cli(port, 'KEYS', `${hprefix}{${name}}*`)).split('\n').sort(), [`${hprefix}{${name}}:history`, `${hprefix}{${name}}:meta`]);
  }

  // A client whose node dies recovers on another node exactly what it missed.
  const target = { node: b };
  const mover = await movableClient(t, target);
  const feed = collect(mover, 'h.feed', { recover: true });
  await feed.subscription.ready;
  await recoverAcrossNodes({ a, b, c, target, feed, channel: 'h.feed' });
  assert.deepEqual(feed.gaps, []);
});

test('the slot of a history channel migrates with its keys during traffic: recovering clients and plain subscribers get every publication once, in order', { timeout: 120_000 }, async (t) => {
  const cluster = await startCluster(t, { masters: 3 });
  const [a, b, c] = await Promise.all([0, 1, 2].map(() => startClusterNode(t, cluster, { prefix: hprefix, history })));
  const channel = 'h.move';
  // A recovering protocol client on B, whose node it leaves mid-way for C, and a plain WebSocket subscriber on C.
  const target = { node: b };
  const client = await movableClient(t, target);
  const feed = collect(client, channel, { recover: true });
  await feed.subscription.ready;
  const watcher = await wsClient(t, c);
  assert.equal(await watcher.command(`sub:${channel}`), `ok:sub:${channel}`);
  await until(async () => (await cluster.shardNumsub(`${hprefix}{${channel}}`)) === 2, 'B and C subscribed');

  const slot = await cluster.slot(channel);
  const from = await cluster.owner(slot);
  const to = (await cluster.masters()).find((m) => m.port !== from.port);
  const count = 3000;
  const burst = a.request('burst', { channel, tag: 'm', count, delayMs: 2 });
  await until(() => feed.received.length > 300, 'traffic before the move', 20_000);
  let done = false;
  burst.then(() => { done = true; });
  const window = {};
  await cluster.migrate(slot, to, {
    keys: true,
    // Between the keys' move and the slot's, publishes go to the new master (ASK) while subscribers are still at the old one: nothing arrives live.
    async during() {
      window.before = watcher.received.length;
      window.busy = !done;
      await sleep(150);
      window.after = watcher.received.length;
    },
  });
  assert.ok(window.busy, 'the burst went on while the keys moved');
  t.diagnostic(`live deliveries on C while the keys had moved and the slot not: ${window.after - window.before}`);
  // The client's node dies mid-way too; it comes back on C.
  target.node = null;
  b.child.kill('SIGKILL');
  await sleep(100);
  target.node = c;
  assert.equal((await burst).result, count, 'no publish was refused during the move');
  assert.equal((await cluster.owner(slot)).port, to.port);
  await a.publish(channel, JSON.stringify('end'));

  const expected = [...Array.from({ length: count }, (_, i) => `m:${i}`), 'end'];
  await until(() => feed.received.length >= expected.length && watcher.received.length >= expected.length, 'every publication on both', 30_000);
  await sleep(200);
  assert.deepEqual(feed.received.map((r) => r.value), expected, 'the recovering client: each once, in order');
  assert.deepEqual(feed.received.map((r) => r.position.offset), expected.map((_, i) => i + 1));
  assert.deepEqual(feed.gaps, []);
  assert.deepEqual(watcher.received.map((m) => JSON.parse(m)), expected, 'the plain subscriber on C: each once, in order');
  const stats = (await a.request('stats')).result;
  assert.equal(stats.brokerPublishesLost, 0, 'ASK, TRYAGAIN and MOVED publishes were sent again, none lost');
  // The history moved with the slot: read at the new master.
  const page = (await c.request('history', { channel, query: { limit: 2 } })).result;
  assert.deepEqual(page.publications.map((p) => p.offset), [count, count + 1]);
});

test('a manual failover of a history channel\'s master during traffic: the recovering client and the plain subscriber get every publication once, in order', { timeout: 120_000 }, async (t) => {
  const cluster = await startCluster(t, { masters: 3, replicas: 1 });
  const channel = 'h.failover';
  const meta = `${hprefix}{${channel}}:meta`;
  const slot = await cluster.slot(channel);
  const master = await cluster.owner(slot);
  // The replica in sync before the channel's first key is written (a key
  // written while a replica's first sync starts was seen missing from it).
  const replicaPort = await syncedReplica(cluster, master);
  const [a, b] = await Promise.all([0, 1].map(() => startClusterNode(t, cluster, { prefix: hprefix, history })));
  const client = await movableClient(t, { node: b });
  const feed = collect(client, channel, { recover: true });
  await feed.subscription.ready;
  const watcher = await wsClient(t, b);
  assert.equal(await watcher.command(`sub:${channel}`), `ok:sub:${channel}`);
  // The channel's epoch, made by the recovery's read, has reached the replica.
  const onReplica = () => readonly(replicaPort, 'HGET', meta, 'e');
  await until(async () => (await onReplica()) !== '' && (await onReplica()) === (await cli(master.port, 'HGET', meta, 'e')), 'the epoch on the replica', 10_000);

  const count = 2000;
  const burst = a.request('burst', { channel, tag: 'm', count, delayMs: 2, tolerant: true });
  let done = false;
  burst.then(() => { done = true; });
  await until(() => feed.received.length > 200, 'traffic before the failover', 20_000);
  // A manual failover waits for the replica to catch up: nothing acknowledged is lost.
  assert.equal(await cli(replicaPort, 'CLUSTER', 'FAILOVER'), 'OK');
  await until(async () => (await cluster.owner(slot))?.port === replicaPort, 'the replica to be master', 20_000);
  assert.ok(!done, 'the burst went on through the failover');
  // Publishes refused while the master changed hands (ERR_BROKER_UNAVAILABLE) are not published anywhere; every other one must arrive.
  const { accepted, refused } = (await burst).result;
  t.diagnostic(`${refused} of ${count} refused during the failover`);
  assert.equal((await a.publish(channel, JSON.stringify('end'))).error, undefined);
  await until(() => feed.received.at(-1)?.value === 'end' && watcher.received.at(-1) === JSON.stringify('end'), 'the end on both', 30_000);
  await sleep(200);
  const lost = (await a.request('stats')).result.brokerPublishesLost;
  t.diagnostic(`${lost} accepted and lost (a connection failed mid-batch)`);
  const values = feed.received.map((r) => r.value);
  const offsets = feed.received.map((r) => r.position.offset);
  assert.ok(feed.received.every((r) => r.position.epoch === feed.received[0].position.epoch), 'one epoch: the replica had the history');
  assert.deepEqual(offsets, offsets.map((_, i) => i + 1), 'contiguous offsets');
  assert.equal(values.length, accepted - lost + 1, 'every publication that ran, once');
  assert.ok(increasing(values.slice(0, -1).map((v) => Number(v.split(':')[1]))), 'in order');
  assert.deepEqual(feed.gaps, []);
  assert.deepEqual(watcher.received.map((m) => JSON.parse(m)), values, 'the plain subscriber saw the same');
  const page = (await a.request('history', { channel, query: { limit: 1 } })).result;
  assert.equal(page.offset, offsets.length, 'the history holds exactly what was delivered');
});
