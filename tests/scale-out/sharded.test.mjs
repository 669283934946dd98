// Client-side sharding over several standalone Redis servers
// (docs/scale-out.md, "Topologies"): every channel lives on one of them,
// chosen by a hash of its name; a server that is down costs only its own
// channels.
import test from 'node:test';
import assert from 'node:assert/strict';
import { startRedis } from '../helpers/redis.mjs';
import { sleep, startShardedNode, until, userChannels, wsClient } from './helpers.mjs';

const prefix = `sbshard${process.pid}:`;
const channels = Array.from({ length: 16 }, (_, i) => `ch${i}`);

test('channels spread over two Redis servers, cross-node delivery, and a stopped server fails only its own channels until it is back', async (t) => {
  const servers = [await startRedis(t), await startRedis(t)];
  // The list in another order on the second node: the same placement.
  const a = await startShardedNode(t, servers, { prefix });
  const b = await startShardedNode(t, [...servers].reverse(), { prefix });
  const onB = await wsClient(t, b);
  for (const c of channels) assert.equal(await onB.command(`sub:${c}`), `ok:sub:${c}`);

  // Every channel is subscribed on exactly one server, and both have some.
  const placed = async () => Promise.all(servers.map(async (s) => (await userChannels(s, prefix)).map((c) => c.slice(prefix.length))));
  const [on0, on1] = await until(async () => {
    const lists = await placed();
    return lists[0].length + lists[1].length === channels.length ? lists : null;
  }, 'every channel subscribed');
  assert.ok(on0.length > 0 && on1.length > 0, `both servers carry channels: ${on0} / ${on1}`);
  assert.deepEqual([...on0, ...on1].sort(), [...channels].sort());

  // A publish on A reaches B through the channel's server.
  for (const c of channels) assert.equal((await a.publish(c, `hello ${c}`)).result, 0);
  await until(() => onB.received.length === channels.length, 'every channel\'s message');
  assert.deepEqual([...onB.received].sort(), channels.map((c) => `hello ${c}`).sort());

  // Server 1 stops: its channels fail with ERR_BROKER_UNAVAILABLE, server 0's still flow.
  await servers[1].stop();
  await until(async () => (await a.publish(on1[0], 'probe')).error === 'ERR_BROKER_UNAVAILABLE', 'server 1\'s channels to fail');
  for (const c of on1) assert.equal((await a.publish(c, 'down')).error, 'ERR_BROKER_UNAVAILABLE', c);
  for (const c of on0) assert.equal((await a.publish(c, `still ${c}`)).result, 0, c);
  await until(() => on0.every((c) => onB.received.includes(`still ${c}`)), 'server 0\'s channels unaffected');
  assert.ok(!onB.received.includes('down'));

  // Back (empty, same port): B subscribes again there, publishes flow.
  await servers[1].start();
  await until(async () => (await userChannels(servers[1], prefix)).length === on1.length, 'resubscribed on server 1', 10_000);
  let n = 0;
  await until(async () => {
    const text = `back ${++n}`;
    if ((await a.publish(on1[0], text)).error) return false;
    await sleep(50);
    return onB.received.includes(text);
  }, 'server 1\'s channels again', 10_000);
});

test('with three servers a node publishes in order per channel, and the goodbye unsubscribes on every server', async (t) => {
  const servers = [await startRedis(t), await startRedis(t), await startRedis(t)];
  const [a, b] = [await startShardedNode(t, servers, { prefix, unsubscribeDelay: 30 }), await startShardedNode(t, servers, { prefix, unsubscribeDelay: 30 })];
  const onB = await wsClient(t, b);
  for (const c of channels) assert.equal(await onB.command(`sub:${c}`), `ok:sub:${c}`);
  await until(async () => {
    const counts = await Promise.all(servers.map(async (s) => (await userChannels(s, prefix)).length));
    return counts.reduce((x, y) => x + y) === channels.length && counts.every((x) => x > 0);
  }, 'channels on all three servers');
  const count = 200;
  const bursts = await Promise.all(channels.slice(0, 4).map((c) => a.request('burst', { channel: c, tag: c, count })));
  assert.deepEqual(bursts.map((r) => r.result), [count, count, count, count]);
  await until(() => onB.received.length === 4 * count, 'every burst', 10_000);
  for (const c of channels.slice(0, 4)) {
    const mine = onB.received.map((m) => JSON.parse(m)).filter((m) => m.startsWith(`${c}:`));
    assert.deepEqual(mine, Array.from({ length: count }, (_, i) => `${c}:${i}`), `${c} in order`);
  }
  assert.equal((await b.request('close')).result, true);
  const left = await Promise.all(servers.map((s) => userChannels(s, prefix)));
  assert.deepEqual(left, [[], [], []]);
});
