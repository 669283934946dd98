// Channel subscriptions a client makes itself (docs/protocol.md §10), end to
// end: `client.subscribe()` sends the built-in `$sb.subscribe`, the server's
// `rpc.onSubscribe` hook decides, and `server.publish()` then reaches the
// client natively. Refcounting in the client, refusals with their codes,
// unsubscribing (also by leaving the loop), and the client's own
// subscriptions beside the app's.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { RpcError } from 'switchboard';
import { jsonCodec } from 'switchboard-client/node';
import { rejectsWith, sleep, startServer, until } from '../fixtures/rpc-e2e.mjs';

const json = { codecs: [jsonCodec] };

/** A server whose hook allows channels starting with `open.` and records every call to it. */
async function startChannels(options = {}) {
  const asked = [];
  const rpc = await startServer(
    (service, server) => {
      service.action('whoami', (call) => call.connection.id);
      service.action('publish', (call) => {
        const { channel, value } = call.decode();
        return server.publish(channel, JSON.stringify(value));
      });
      service.onSubscribe(options.hook ?? ((connection, channel) => {
        asked.push({ id: connection.id, channel });
        return channel.startsWith('open.');
      }));
    },
    options.server,
  );
  return { ...rpc, asked };
}

/** The next `n` values of an iterator, with a deadline. */
async function take(iterator, n, ms = 3000) {
  const values = [];
  const deadline = setTimeout(() => {}, ms);
  try {
    for (let i = 0; i < n; i++) {
      const next = await Promise.race([iterator.next(), sleep(ms).then(() => ({ timeout: true }))]);
      if (next.timeout) throw new Error(`timed out after ${values.length} of ${n} publications`);
      if (next.done) break;
      values.push(next.value);
    }
  } finally {
    clearTimeout(deadline);
  }
  return values;
}

for (const transport of ['tcp', 'ws']) {
  test(`over ${transport}: subscribe, receive publications, unsubscribe`, async (t) => {
    const rpc = await startChannels();
    t.after(() => rpc.close());
    const client = await rpc.connect(transport, json);
    t.after(() => client.close());

    const subscription = client.subscribe('open.news');
    assert.equal(subscription.state, 'subscribing');
    await subscription.ready;
    assert.equal(subscription.state, 'subscribed');
    const connection = await rpc.connectionOf(client);
    assert.deepEqual(rpc.asked, [{ id: connection.id, channel: 'open.news' }]);
    assert.deepEqual(connection.clientChannels, ['open.news']);
    assert.equal(rpc.server.numSubscribers('open.news'), 1);

    assert.equal(await client.call('publish', { channel: 'open.news', value: { n: 1 } }), 1);
    rpc.server.publish('open.news', JSON.stringify('two'));
    const iterator = subscription[Symbol.asyncIterator]();
    const [first, second] = await take(iterator, 2);
    assert.deepEqual(first.value, { n: 1 });
    assert.equal(first.channel, 'open.news');
    assert.equal(new TextDecoder().decode(first.bytes), '{"n":1}');
    assert.match(first.uuid, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    assert.equal(second.value, 'two');

    subscription.unsubscribe();
    assert.equal(subscription.state, 'closed');
    assert.deepEqual(await iterator.next(), { done: true, value: undefined });
    await until(() => rpc.server.numSubscribers('open.news') === 0, 'the server unsubscribes');
    assert.deepEqual(connection.clientChannels, []);
    assert.equal(client.stats().channels, 0);
    assert.equal(await client.call('publish', { channel: 'open.news', value: 'unheard' }), 0);
  });
}

test('subscriptions to one channel share one on the server; the last to go unsubscribes it', async (t) => {
  const rpc = await startChannels();
  t.after(() => rpc.close());
  const client = await rpc.connect('tcp', json);
  t.after(() => client.close());

  const seen = [];
  const a = client.subscribe('open.room');
  const b = client.subscribe('open.room', (value, publication) => seen.push([value, publication.channel]));
  await Promise.all([a.ready, b.ready]);
  // A third joins a subscription the server holds already: confirmed at once.
  const c = client.subscribe('open.room');
  assert.equal(c.state, 'subscribed');
  assert.equal(rpc.asked.length, 1, 'one $sb.subscribe for three subscriptions');
  assert.equal(client.stats().channels, 1);
  assert.equal(rpc.server.numSubscribers('open.room'), 1);

  // One publish, one delivery to the connection, three subscriptions fed.
  assert.equal(await client.call('publish', { channel: 'open.room', value: 'hello' }), 1);
  const [fromA] = await take(a[Symbol.asyncIterator](), 1);
  const [fromC] = await take(c[Symbol.asyncIterator](), 1);
  assert.equal(fromA.value, 'hello');
  assert.equal(fromC.value, 'hello');
  await until(() => seen.length === 1, 'the callback');
  assert.deepEqual(seen, [['hello', 'open.room']]);

  a.unsubscribe();
  c.unsubscribe();
  await sleep(50);
  assert.equal(rpc.server.numSubscribers('open.room'), 1, 'b still holds it');
  await client.call('publish', { channel: 'open.room', value: 'still' });
  await until(() => seen.length === 2, 'the callback again');
  b.unsubscribe();
  await until(() => rpc.server.numSubscribers('open.room') === 0, 'the last one unsubscribes');
  assert.equal(rpc.asked.length, 1);
});

test('leaving the loop (break) unsubscribes', async (t) => {
  const rpc = await startChannels();
  t.after(() => rpc.close());
  const client = await rpc.connect('tcp', json);
  t.after(() => client.close());
  const subscription = client.subscribe('open.ticks');
  const closed = [];
  subscription.on('closed', (event) => closed.push(event));
  await subscription.ready;
  for (let i = 0; i < 3; i++) rpc.server.publish('open.ticks', JSON.stringify(i));
  const got = [];
  for await (const { value } of subscription) {
    got.push(value);
    if (value === 1) break;
  }
  assert.deepEqual(got, [0, 1]);
  assert.equal(subscription.state, 'closed');
  assert.deepEqual(closed, [{ error: null }]);
  await until(() => rpc.server.numSubscribers('open.ticks') === 0, 'the server unsubscribes');
});

test('refusals: the hook says no, throws a coded error, or there is no hook', async (t) => {
  const rpc = await startChannels({
    hook: async (connection, channel) => {
      await sleep(5);
      if (channel === 'secret') throw new RpcError('ERR_FORBIDDEN', 'not for you');
      return channel !== 'closed';
    },
  });
  t.after(() => rpc.close());
  const client = await rpc.connect('tcp', json);
  t.after(() => client.close());

  const refused = client.subscribe('closed');
  const error = await rejectsWith(refused.ready, 'ERR_SUBSCRIPTION_REFUSED');
  assert.match(error.message, /"closed" was refused/);
  assert.equal(refused.state, 'closed');
  // The loop throws the refusal, once.
  await rejectsWith(refused[Symbol.asyncIterator]().next(), 'ERR_SUBSCRIPTION_REFUSED');

  const forbidden = client.subscribe('secret');
  const closedEvents = [];
  forbidden.on('closed', (event) => closedEvents.push(event.error.code));
  const forbiddenError = await rejectsWith(forbidden.ready, 'ERR_FORBIDDEN');
  assert.equal(forbiddenError.message, 'not for you');
  assert.deepEqual(closedEvents, ['ERR_FORBIDDEN']);
  assert.equal(rpc.server.numSubscribers('secret'), 0);
  assert.equal(client.stats().channels, 0);
  assert.deepEqual(rpc.handlerErrors, []);

  // The same client may still subscribe to what the hook allows.
  await client.subscribe('fine').ready;
  assert.equal(rpc.server.numSubscribers('fine'), 1);

  // Without a hook, the server refuses every channel.
  const bare = await startServer();
  t.after(() => bare.close());
  const other = await bare.connect('tcp', json);
  t.after(() => other.close());
  const none = await rejectsWith(other.subscribe('anything').ready, 'ERR_SUBSCRIPTION_REFUSED');
  assert.match(none.message, /no rpc\.onSubscribe hook/);
  assert.equal(bare.server.numSubscribers('anything'), 0);
});

test('names the protocol cannot carry are refused by the client, and by the server', async (t) => {
  const rpc = await startChannels({ hook: () => true });
  t.after(() => rpc.close());
  const client = await rpc.connect('tcp', json);
  t.after(() => client.close());
  for (const name of ['', 'x'.repeat(256), '$sb.subscribe', 'lone \ud800 surrogate']) {
    assert.throws(() => client.subscribe(name), (error) => error.code === 'ERR_INVALID_CHANNEL', JSON.stringify(name));
  }
  // 255 bytes of UTF-8 is the limit, not 255 characters.
  await client.subscribe('é'.repeat(127)).ready;
  assert.throws(() => client.subscribe('é'.repeat(128)), (error) => error.code === 'ERR_INVALID_CHANNEL');
  // A client that sends the built-in call itself meets the same rules.
  await rejectsWith(client.call('$sb.subscribe', new TextEncoder().encode('$sb.x'), { raw: true }), 'ERR_INVALID_CHANNEL');
  await rejectsWith(client.call('$sb.subscribe', Uint8Array.of(0xff), { raw: true }), 'ERR_INVALID_CHANNEL');
  await rejectsWith(client.call('$sb.nothing', new TextEncoder().encode('a'), { raw: true }), 'ERR_NOT_IMPLEMENTED');
  // The namespace is the protocol's on both ends.
  assert.throws(() => rpc.server.rpc.action('$sb.mine', () => 1), (error) => error.code === 'ERR_INVALID_OPTION');
  assert.throws(() => client.handle('$sb.mine', () => 1), (error) => error.code === 'ERR_INVALID_ARGUMENT');
});

test('rpc.maxSubscriptions bounds the channels one client subscribes itself to', async (t) => {
  const rpc = await startChannels({ hook: () => true, server: { rpc: { maxSubscriptions: 2 } } });
  t.after(() => rpc.close());
  const client = await rpc.connect('tcp', json);
  t.after(() => client.close());
  const first = client.subscribe('one');
  const second = client.subscribe('two');
  const third = client.subscribe('three');
  await Promise.all([first.ready, second.ready]);
  await rejectsWith(third.ready, 'ERR_TOO_MANY_SUBSCRIPTIONS');
  // The app's own subscriptions do not count, and a freed place can be taken.
  const connection = await rpc.connectionOf(client);
  connection.subscribe('app.own');
  first.unsubscribe();
  await until(() => rpc.server.numSubscribers('one') === 0, 'the unsubscribe');
  await client.subscribe('three').ready;
  assert.deepEqual(connection.clientChannels.sort(), ['three', 'two']);
});

test("the client's subscription is one count beside the app's own", async (t) => {
  const rpc = await startChannels({ hook: () => true });
  t.after(() => rpc.close());
  rpc.server.rpc.action('join', (call) => call.connection.subscribe(call.decode()));
  const client = await rpc.connect('tcp', json);
  t.after(() => client.close());
  const seen = [];
  client.handle('shared', (value) => seen.push(['handler', value]));
  await client.call('join', 'shared'); // the app subscribes the connection itself
  const subscription = client.subscribe('shared', (value) => seen.push(['subscription', value]));
  await subscription.ready;
  rpc.server.publish('shared', JSON.stringify(1));
  // A publication for a subscribed channel goes to the subscription, not the handler.
  await until(() => seen.length === 1, 'the publication');
  assert.deepEqual(seen, [['subscription', 1]]);
  subscription.unsubscribe();
  // Still subscribed by the app: the publication now reaches the handler.
  await until(async () => {
    rpc.server.publish('shared', JSON.stringify(2));
    await sleep(20);
    return seen.some(([to]) => to === 'handler');
  }, 'the handler');
  assert.equal(rpc.server.numSubscribers('shared'), 1);
});

test('subscribe and unsubscribe in quick succession end where the application left them', async (t) => {
  // A slow hook: the unsubscribe arrives while the subscribe waits for it.
  const rpc = await startChannels({ hook: () => sleep(30).then(() => true) });
  t.after(() => rpc.close());
  const client = await rpc.connect('tcp', json);
  t.after(() => client.close());
  const gone = client.subscribe('flicker');
  gone.unsubscribe();
  await rejectsWith(gone.ready, 'ERR_CANCELLED');
  const again = client.subscribe('flicker');
  again.unsubscribe();
  const kept = client.subscribe('flicker');
  await kept.ready;
  assert.equal(rpc.server.numSubscribers('flicker'), 1);
  kept.unsubscribe();
  await until(() => rpc.server.numSubscribers('flicker') === 0 && client.stats().channels === 0, 'the final unsubscribe');
  await sleep(80); // nothing in flight brings it back
  assert.equal(rpc.server.numSubscribers('flicker'), 0);
  // Raw built-in calls: subscribing twice holds one count; unsubscribing from
  // what was never subscribed is a no-op.
  const raw = (action, name) => client.call(action, new TextEncoder().encode(name), { raw: true });
  await raw('$sb.subscribe', 'twice');
  await raw('$sb.subscribe', 'twice');
  await raw('$sb.unsubscribe', 'twice');
  assert.equal(rpc.server.numSubscribers('twice'), 0);
  await raw('$sb.unsubscribe', 'never');
});

test('a subscription iterated by a slow consumer drops the oldest past maxBuffered and reports the gap', async (t) => {
  const rpc = await startChannels();
  t.after(() => rpc.close());
  const client = await rpc.connect('tcp', json);
  t.after(() => client.close());
  const subscription = client.subscribe('open.burst', { maxBuffered: 2 });
  const gaps = [];
  subscription.on('gap', (gap) => gaps.push(gap));
  await subscription.ready;
  const before = Date.now();
  for (let i = 0; i < 5; i++) rpc.server.publish('open.burst', JSON.stringify(i));
  await sleep(100);
  const values = (await take(subscription[Symbol.asyncIterator](), 2)).map((p) => p.value);
  assert.deepEqual(values, [3, 4]);
  assert.equal(gaps.length, 1);
  assert.equal(gaps[0].reason, 'overflow');
  assert.equal(gaps[0].dropped, 3);
  assert.ok(gaps[0].missedFrom >= before && gaps[0].missedUntil >= gaps[0].missedFrom);
  assert.throws(() => client.subscribe('open.x', () => {})[Symbol.asyncIterator](), TypeError);
});

test('a callback that throws is reported as handlererror; the others still get the publication', async (t) => {
  const rpc = await startChannels();
  t.after(() => rpc.close());
  const client = await rpc.connect('tcp', json);
  t.after(() => client.close());
  const errors = [];
  client.on('handlererror', ({ error, call }) => errors.push([error.message, call.action]));
  const got = [];
  const failing = client.subscribe('open.cb', () => {
    throw new Error('boom');
  });
  const fine = client.subscribe('open.cb', (value) => got.push(value));
  await Promise.all([failing.ready, fine.ready]);
  rpc.server.publish('open.cb', JSON.stringify('x'));
  await until(() => got.length === 1 && errors.length === 1, 'both callbacks');
  assert.deepEqual(errors, [['boom', 'open.cb']]);
});
