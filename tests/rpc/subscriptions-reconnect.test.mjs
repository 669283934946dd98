// Subscriptions across connections: after a lost connection the client
// reconnects and subscribes every live subscription again by itself, and
// reports the gap (the times between which publications could not reach
// it) on each subscription and on the client. Also: a server restarted on
// another port, a resubscription the server now refuses, subscriptions made
// before the first connection, and the client's close.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Client, jsonCodec, tcpTransport } from 'switchboard-client/node';
import { rejectsWith, sleep, startServer, until } from '../fixtures/rpc-e2e.mjs';

const json = { codecs: [jsonCodec] };
const fastReconnect = { reconnect: { initialDelayMs: 20, maxDelayMs: 50 } };

function channelsApp(state) {
  return (service) => {
    service.action('whoami', (call) => call.connection.id);
    service.action('kickMe', (call) => {
      setTimeout(() => call.connection.close('ERR_KICKED', 'dropped by the test'), 5);
      return 'soon';
    });
    service.onSubscribe((connection, channel) => {
      state.asked.push({ id: connection.id, channel });
      return state.allow;
    });
  };
}

/** Publishes `value` as JSON until the client's subscription has it. */
async function publishUntilSeen(server, channel, value, seen) {
  await until(async () => {
    server.publish(channel, JSON.stringify(value));
    await sleep(10);
    return seen.includes(value);
  }, `${JSON.stringify(value)} on ${channel}`);
}

test('a dropped connection: the client reconnects, subscribes again and reports the gap', async (t) => {
  const state = { asked: [], allow: true };
  const rpc = await startServer(channelsApp(state));
  t.after(() => rpc.close());
  const client = await rpc.connect('tcp', { ...json, ...fastReconnect });
  t.after(() => client.close());

  const seen = [];
  const states = [];
  const gaps = [];
  const clientGaps = [];
  const subscription = client.subscribe('prices', (value) => seen.push(value));
  const shared = client.subscribe('prices'); // the same server subscription, iterated
  await subscription.ready;
  subscription.on('statechange', ({ state: s }) => states.push(s));
  subscription.on('gap', (gap) => gaps.push(gap));
  client.on('gap', (gap) => clientGaps.push(gap));
  await publishUntilSeen(rpc.server, 'prices', 'before', seen);
  const firstId = state.asked[0].id;

  const droppedAt = Date.now();
  await client.call('kickMe');
  await until(() => client.state === 'reconnecting', 'the drop');
  assert.equal(subscription.state, 'resubscribing');
  assert.equal(shared.state, 'resubscribing');
  // Nobody is subscribed while the client is away: this one is missed.
  assert.equal(rpc.server.publish('prices', JSON.stringify('missed')), 0);

  await until(() => subscription.state === 'subscribed', 'the resubscription');
  assert.deepEqual(states, ['resubscribing', 'subscribed']);
  assert.equal(state.asked.length, 2, 'one $sb.subscribe per connection');
  assert.notEqual(state.asked[1].id, firstId);
  assert.equal(rpc.server.numSubscribers('prices'), 1);

  assert.equal(gaps.length, 1);
  const [gap] = gaps;
  assert.equal(gap.reason, 'reconnect');
  assert.equal(gap.channel, 'prices');
  assert.equal(gap.code, 'ERR_KICKED');
  assert.equal(gap.dropped, null);
  assert.ok(gap.missedFrom >= droppedAt && gap.missedFrom <= gap.missedUntil && gap.missedUntil <= Date.now(), JSON.stringify(gap));
  // Once per channel on the client, once per subscription on each.
  assert.deepEqual(clientGaps, [gap]);

  await publishUntilSeen(rpc.server, 'prices', 'after', seen);
  assert.ok(!seen.includes('missed'));
  // The iterated subscription saw the same publications, in order.
  const iterator = shared[Symbol.asyncIterator]();
  const values = [];
  while (values.at(-1) !== 'after') values.push((await iterator.next()).value.value);
  assert.deepEqual([...new Set(values)], ['before', 'after']);
});

test('a restarted server (on another port): the subscriptions are made there', async (t) => {
  const state = { asked: [], allow: true };
  let rpc = await startServer(channelsApp(state));
  let port = Number(new URL(rpc.urls.tcp).port);
  // The transport factory is asked for every connection: it follows the restart.
  const client = new Client({ transport: (handlers) => tcpTransport('127.0.0.1', port)(handlers), ...json, ...fastReconnect });
  t.after(() => client.close());
  const seen = [];
  const subscription = client.subscribe('news', (value) => seen.push(value));
  const gaps = [];
  subscription.on('gap', (gap) => gaps.push(gap));
  await subscription.ready;
  await publishUntilSeen(rpc.server, 'news', 'first server', seen);

  await rpc.close();
  await until(() => client.state === 'reconnecting', 'the client notices');
  rpc = await startServer(channelsApp(state));
  t.after(() => rpc.close());
  port = Number(new URL(rpc.urls.tcp).port);

  await until(() => gaps.length === 1, 'the resubscription');
  assert.equal(gaps[0].code, 'ERR_GOING_AWAY'); // the old server's shutdown
  assert.equal(subscription.state, 'subscribed');
  assert.equal(rpc.server.numSubscribers('news'), 1);
  await publishUntilSeen(rpc.server, 'news', 'second server', seen);
});

test('a resubscription the server now refuses ends the subscription with its error', async (t) => {
  const state = { asked: [], allow: true };
  const rpc = await startServer(channelsApp(state));
  t.after(() => rpc.close());
  const client = await rpc.connect('tcp', { ...json, ...fastReconnect });
  t.after(() => client.close());
  const subscription = client.subscribe('vip');
  const closed = [];
  subscription.on('closed', ({ error }) => closed.push(error?.code));
  await subscription.ready;
  const loop = (async () => {
    for await (const publication of subscription) void publication;
  })();
  state.allow = false; // e.g. the user's rights were revoked
  await client.call('kickMe');
  await rejectsWith(loop, 'ERR_SUBSCRIPTION_REFUSED');
  assert.deepEqual(closed, ['ERR_SUBSCRIPTION_REFUSED']);
  assert.equal(subscription.state, 'closed');
  assert.equal(client.stats().channels, 0);
  assert.equal(client.state, 'open');
});

test('subscriptions made before the first connection wait for it; close() ends them', async (t) => {
  const state = { asked: [], allow: true };
  const rpc = await startServer(channelsApp(state));
  t.after(() => rpc.close());
  const client = new Client({ transport: tcpTransport('127.0.0.1', Number(new URL(rpc.urls.tcp).port)), ...json });
  const subscription = client.subscribe('early');
  assert.equal(client.state, 'connecting');
  assert.equal(client.stats().channels, 1);
  await subscription.ready;
  assert.equal(subscription.state, 'subscribed');
  assert.equal(rpc.server.numSubscribers('early'), 1);
  // No gap for a first subscription.
  const gaps = [];
  subscription.on('gap', (gap) => gaps.push(gap));

  const loop = (async () => {
    const values = [];
    for await (const { value } of subscription) values.push(value);
    return values;
  })();
  rpc.server.publish('early', JSON.stringify('one'));
  await sleep(50);
  await client.close();
  // The loop ends (no error) when the application closes the client.
  assert.deepEqual(await loop, ['one']);
  assert.deepEqual(gaps, []);
  // After the close, a subscription is closed from the start.
  const late = client.subscribe('late');
  await rejectsWith(late.ready, 'ERR_CLIENT_CLOSED');
  assert.equal(late.state, 'closed');
});

test('a first connection that fails ends the subscriptions with its error', async () => {
  const rpc = await startServer(channelsApp({ asked: [], allow: true }));
  const port = Number(new URL(rpc.urls.tcp).port);
  await rpc.close(); // nothing listens there now
  const client = new Client({ transport: tcpTransport('127.0.0.1', port), ...json });
  const subscription = client.subscribe('nowhere');
  await rejectsWith(subscription.ready, 'ERR_DISCONNECTED');
  await rejectsWith(subscription[Symbol.asyncIterator]().next(), 'ERR_DISCONNECTED');
  assert.equal(client.state, 'closed');
});
