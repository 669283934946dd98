// Every channel operation through the public API, end to end: real servers
// on 127.0.0.1:0, real `ws` clients. Server-level operations (`server.*`),
// connection methods (`ws.*`, handlers on the main thread with `workers: 0`)
// and App-level operations (`app.*`, in worker threads) are all covered.
import { test, before, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, connect, nextMessage, waitFor } from '../../helpers/index.mjs';
import { join, barrier, texts } from './util.mjs';

const sorted = (list) => [...list].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));

describe('channels with inline routes (workers: 0)', { timeout: 120000 }, () => {
  let server;
  let url;
  /** Server-side `ws` objects by connection id. */
  const sockets = new Map();
  /** Close events seen by the handler, by connection id. */
  const closes = new Map();
  const clients = [];

  before(async () => {
    ({ server, url } = await startServer((s) =>
      s.ws('/', {
        idleTimeout: 0,
        open(ws) {
          sockets.set(ws.id, ws);
          ws.send(JSON.stringify({ id: ws.id }));
        },
        close(ws, code, reason) {
          closes.set(ws.id, { code, reason });
        },
      }),
    ));
  });

  after(
    async () => {
      for (const c of clients) c.terminate();
      await server?.close({ drainTimeout: 500 });
    },
    { timeout: 20000 },
  );

  async function open(n) {
    const list = [];
    for (let i = 0; i < n; i++) list.push(await join(url));
    clients.push(...list);
    await waitFor(() => list.every((c) => sockets.has(c.id)), 5000, 'server-side sockets');
    return list;
  }

  test('subscribe with refcount deltas returns the ids whose membership changed', { timeout: 30000 }, async () => {
    const [a, b, c] = await open(3);
    const ch = 'rc';
    assert.deepEqual(server.subscribe(a.id, ch), [a.id]);
    // Second subscribe: count 2, membership unchanged.
    assert.deepEqual(server.subscribe(a.id, ch), []);
    assert.equal(server.numSubscribers(ch), 1);
    // -1: count 1, still a member.
    assert.deepEqual(server.subscribe(a.id, ch, -1), []);
    assert.equal(server.isSubscribed(a.id, ch), true);
    assert.equal(server.hasSubscriptions(ch), true);
    // -1 again: leaves.
    assert.deepEqual(server.subscribe(a.id, ch, -1), [a.id]);
    assert.equal(server.isSubscribed(a.id, ch), false);
    assert.equal(server.numSubscribers(ch), 0);
    assert.equal(server.hasSubscriptions(ch), false);
    // A negative delta on a non-member is a no-op (no negative count that
    // would swallow a later subscribe).
    assert.deepEqual(server.subscribe(a.id, ch, -3), []);
    assert.deepEqual(server.subscribe(a.id, ch, 1), [a.id]);
    assert.deepEqual(server.subscribe(a.id, ch, -1), [a.id]);
    // delta 0 never changes anything.
    assert.deepEqual(server.subscribe(a.id, ch, 0), []);
    assert.equal(server.isSubscribed(a.id, ch), false);

    // Bulk: only the new members are reported, in input order.
    assert.deepEqual(server.subscribe([b.id], ch), [b.id]);
    assert.deepEqual(server.subscribe([c.id, a.id, b.id], ch), [c.id, a.id]);
    assert.deepEqual(sorted(server.subscribers(ch)), sorted([a.id, b.id, c.id]));
    // b has count 2 now: a bulk -1 removes a and c only.
    assert.deepEqual(server.subscribe([a.id, b.id, c.id], ch, -1), [a.id, c.id]);
    assert.deepEqual(server.subscribers(ch), [b.id]);
    // A delta of 3 needs three -1 (or unsubscribe, whatever the count).
    assert.deepEqual(server.subscribe(a.id, ch, 3), [a.id]);
    assert.deepEqual(server.subscribe(a.id, ch, -2), []);
    assert.equal(server.isSubscribed(a.id, ch), true);
    assert.equal(server.unsubscribe(a.id, ch), true);
    assert.equal(server.unsubscribe(a.id, ch), false);
    assert.equal(server.unsubscribe(b.id, ch), true);
    assert.equal(server.numSubscribers(ch), 0);
    assert.deepEqual(server.subscribers(ch), []);
  });

  test('ws.subscribe / ws.unsubscribe / ws.isSubscribed / ws.getTopics', { timeout: 30000 }, async () => {
    const [a] = await open(1);
    const ws = sockets.get(a.id);
    assert.equal(ws.subscribe('t1'), true);
    assert.equal(ws.subscribe('t1'), false, 'second subscribe only bumps the count');
    assert.equal(ws.subscribe('t2'), true);
    assert.equal(ws.isSubscribed('t1'), true);
    assert.equal(ws.isSubscribed('nope'), false);
    assert.deepEqual(sorted(ws.getTopics()), ['t1', 't2']);
    assert.deepEqual(sorted(server.getTopics(a.id)), ['t1', 't2']);
    // ws.unsubscribe ignores the refcount (uWebSockets.js semantics).
    assert.equal(ws.unsubscribe('t1'), true);
    assert.equal(ws.isSubscribed('t1'), false);
    assert.equal(ws.unsubscribe('t1'), false);
    assert.deepEqual(ws.getTopics(), ['t2']);
    assert.equal(ws.unsubscribe('t2'), true);
    assert.deepEqual(ws.getTopics(), []);
    assert.deepEqual(server.getTopics(a.id), []);
  });

  test('publish reaches exactly the subscribers and returns the recipient count', { timeout: 30000 }, async () => {
    const list = await open(5);
    const subs = list.slice(0, 3);
    for (const c of subs) server.subscribe(c.id, 'news');
    server.subscribe(list[3].id, 'other');
    assert.equal(server.publish('news', 'headline'), 3);
    assert.equal(server.publish('empty-channel', 'x'), 0);
    const got = await barrier(server, list);
    assert.deepEqual(got.map(texts), [['headline'], ['headline'], ['headline'], [], []]);
    for (const c of subs) server.unsubscribe(c.id, 'news');
    server.unsubscribe(list[3].id, 'other');
  });

  test('ws.publish excludes the sender; publish(..., { exclude }) excludes that connection', { timeout: 30000 }, async () => {
    const list = await open(3);
    const [a, b, c] = list;
    for (const x of list) server.subscribe(x.id, 'room');
    assert.equal(sockets.get(a.id).publish('room', 'from-a'), 2);
    // On the connection method, `exclude` names the one connection to skip
    // instead of the sender (there is a single exclusion): a receives this one.
    assert.equal(sockets.get(a.id).publish('room', 'from-a-not-c', { exclude: c.id }), 2);
    assert.equal(server.publish('room', 'not-b', { exclude: b.id }), 2);
    assert.equal(server.publish('room', 'all'), 3);
    const [ga, gb, gc] = (await barrier(server, list)).map(texts);
    assert.deepEqual(ga, ['from-a-not-c', 'not-b', 'all']);
    assert.deepEqual(gb, ['from-a', 'from-a-not-c', 'all']);
    assert.deepEqual(gc, ['from-a', 'not-b', 'all']);
    // Excluding someone who is not a subscriber changes nothing.
    assert.equal(server.publish('room', 'z', { exclude: 987654321 }), 3);
    await barrier(server, list);
    for (const x of list) server.unsubscribe(x.id, 'room');
  });

  test('publishTo a mix of channels, connection ids and virtual sockets delivers once per recipient', { timeout: 30000 }, async () => {
    const list = await open(6);
    const [a, b, c, d, e, f] = list;
    server.subscribe([a.id, b.id], 'pt-1');
    server.subscribe([b.id, c.id], 'pt-2');
    const vs = server.createVirtualSocket(e.id, 'E:');
    // a is in pt-1 and listed by id; b is in both channels; d only by id
    // (twice); e through its virtual socket; f is not targeted at all.
    const n = server.publishTo(['pt-1', 'pt-2', a.id, d.id, d.id, vs, 'pt-none', 'pt-1'], 'multi');
    assert.equal(n, 5);
    const got = (await barrier(server, list)).map(texts);
    assert.deepEqual(got, [['multi'], ['multi'], ['multi'], ['multi'], ['E:multi'], []]);

    // exclude applies to publishTo too, also through virtual sockets.
    assert.equal(server.publishTo(['pt-1', 'pt-2', vs], 'ex', { exclude: b.id }), 3);
    assert.equal(server.publishTo([vs, d.id], 'ex-e', { exclude: e.id }), 1);
    const got2 = (await barrier(server, list)).map(texts);
    assert.deepEqual(got2, [['ex'], [], ['ex'], ['ex-e'], ['E:ex'], []]);

    // More targets than the inline dedupe path handles (> 8): same rules.
    const many = ['pt-1', 'pt-2', a.id, b.id, c.id, d.id, vs, 'pt-1', a.id, 'pt-x', 'pt-y', f.id];
    assert.equal(server.publishTo(many, 'many'), 6);
    const got3 = (await barrier(server, list)).map(texts);
    assert.deepEqual(got3, [['many'], ['many'], ['many'], ['many'], ['E:many'], ['many']]);

    // A connection reached directly and through a virtual socket is two
    // distinct recipients: once plain, once tagged.
    server.subscribe([e.id, vs], 'pt-both');
    assert.equal(server.publish('pt-both', 'twice'), 2);
    const [ge] = (await barrier(server, [e])).map(texts);
    assert.deepEqual(sorted(ge), ['E:twice', 'twice']);

    // An id that names no open connection is no recipient: not counted.
    assert.equal(server.publishTo([123456789], 'void'), 0);
    assert.equal(server.publishTo([123456789, d.id], 'to-d'), 1);
    assert.deepEqual((await barrier(server, [d])).map(texts), [['to-d']]);
    server.deleteVirtualSocket(vs);
    server.unsubscribe(e.id, 'pt-both');
    server.subscribe([a.id, b.id], 'pt-1', -1);
    server.subscribe([b.id, c.id], 'pt-2', -1);
  });

  test('subscribers, numSubscribers, hasSubscriptions, getTopics, stats', { timeout: 30000 }, async () => {
    const before = server.stats();
    const [a, b] = await open(2);
    server.subscribe([a.id, b.id], 'q-1');
    server.subscribe(a.id, 'q-2');
    assert.deepEqual(sorted(server.subscribers('q-1')), sorted([a.id, b.id]));
    assert.deepEqual(server.subscribers('q-2'), [a.id]);
    assert.deepEqual(server.subscribers('q-none'), []);
    assert.equal(server.numSubscribers('q-1'), 2);
    assert.equal(server.numSubscribers('q-none'), 0);
    assert.equal(server.hasSubscriptions('q-2'), true);
    assert.equal(server.hasSubscriptions('q-none'), false);
    assert.deepEqual(sorted(server.getTopics(a.id)), ['q-1', 'q-2']);
    assert.deepEqual(server.getTopics(b.id), ['q-1']);
    assert.deepEqual(server.getTopics(99999999), []);
    const s = server.stats();
    assert.equal(s.subscriptions, before.subscriptions + 3);
    assert.equal(s.channels, before.channels + 2);
    server.unsubscribe(a.id, 'q-1');
    server.unsubscribe(b.id, 'q-1');
    server.unsubscribe(a.id, 'q-2');
    assert.equal(server.stats().subscriptions, before.subscriptions);
    assert.equal(server.stats().channels, before.channels);
  });

  test('copySubscriptions subscribes the members of one channel to another', { timeout: 30000 }, async () => {
    const list = await open(3);
    const [a, b, c] = list;
    server.subscribe([a.id, b.id], 'cp-from');
    server.subscribe(c.id, 'cp-to');
    server.subscribe(b.id, 'cp-to', 2);
    // Only a is new in cp-to; b keeps its count of 2.
    assert.deepEqual(server.copySubscriptions('cp-from', 'cp-to'), [a.id]);
    assert.deepEqual(server.copySubscriptions('cp-from', 'cp-to'), [], 'idempotent');
    assert.deepEqual(server.copySubscriptions('cp-empty', 'cp-to'), []);
    assert.deepEqual(server.copySubscriptions('cp-to', 'cp-to'), []);
    assert.deepEqual(sorted(server.subscribers('cp-to')), sorted([a.id, b.id, c.id]));
    assert.deepEqual(server.subscribe(b.id, 'cp-to', -1), [], 'b still had count 2');
    assert.equal(server.publish('cp-to', 'copied'), 3);
    assert.deepEqual((await barrier(server, list)).map(texts), [['copied'], ['copied'], ['copied']]);
    // The source is untouched.
    assert.deepEqual(sorted(server.subscribers('cp-from')), sorted([a.id, b.id]));
    // Copy onto a fresh channel creates it.
    assert.deepEqual(sorted(server.copySubscriptions('cp-from', 'cp-new')), sorted([a.id, b.id]));
    assert.equal(server.numSubscribers('cp-new'), 2);
    for (const ch of ['cp-from', 'cp-to', 'cp-new']) for (const x of list) server.unsubscribe(x.id, ch);
    assert.equal(server.hasSubscriptions('cp-to'), false);
  });

  test('virtual sockets: tagged delivery, chains, deletion with dependents, guarded delete', { timeout: 30000 }, async () => {
    const list = await open(2);
    const [a, b] = list;
    const subsBefore = server.stats().subscriptions;
    const vs1 = server.createVirtualSocket(a.id, 'T1|');
    assert.ok(Number.isInteger(vs1) && vs1 > 0);
    assert.notEqual(vs1, a.id);
    assert.deepEqual(server.subscribe(vs1, 'vs-ch'), [vs1]);
    assert.equal(server.isSubscribed(vs1, 'vs-ch'), true);
    assert.equal(server.isSubscribed(a.id, 'vs-ch'), false, 'the connection itself is not subscribed');
    assert.deepEqual(server.getTopics(vs1), ['vs-ch']);
    assert.equal(server.publish('vs-ch', 'hello'), 1);
    // Binary: the tag bytes go in front of the binary payload.
    assert.equal(server.publish('vs-ch', Buffer.from([0, 1, 2, 255])), 1);
    let [ga, gb] = await barrier(server, list);
    assert.deepEqual(texts(ga), ['T1|hello', 'T1|\u0000\u0001\u0002\ufffd']);
    assert.equal(ga[0].isBinary, false);
    assert.equal(ga[1].isBinary, true);
    assert.deepEqual(ga[1].data, Buffer.concat([Buffer.from('T1|'), Buffer.from([0, 1, 2, 255])]));
    assert.deepEqual(gb, []);

    // Publishing straight to the virtual socket's id also goes through it.
    assert.equal(server.publishTo([vs1], 'direct'), 1);
    assert.equal(server.send(a.id, 'plain'), 0);
    // A VS of a VS: the message picks up vs2's tag, then vs1's:
    // connection sees t1 ++ t2 ++ msg (outermost hop first).
    const vs2 = server.createVirtualSocket(vs1, 'T2|');
    server.subscribe(vs2, 'vs-ch2');
    assert.equal(server.publish('vs-ch2', 'deep'), 1);
    // A tag given as bytes, and a VS without a tag.
    const vs3 = server.createVirtualSocket(vs2, new Uint8Array([0x41, 0x42]));
    const vsPlain = server.createVirtualSocket(b.id);
    server.subscribe([vs3, vsPlain], 'vs-ch3');
    assert.equal(server.publish('vs-ch3', 'deeper'), 2);
    [ga, gb] = await barrier(server, list);
    assert.deepEqual(texts(ga), ['T1|direct', 'plain', 'T1|T2|deep', 'T1|T2|ABdeeper']);
    assert.deepEqual(texts(gb), ['deeper']);

    // A guarded delete with the wrong target throws and changes nothing.
    assert.throws(
      () => server.deleteVirtualSocket(vs2, a.id),
      (e) => e.code === 'ERR_VIRTUAL_SOCKET_TARGET_MISMATCH' && /ERR_VIRTUAL_SOCKET_TARGET_MISMATCH/.test(e.message),
    );
    assert.throws(() => server.deleteVirtualSocket(vs1, b.id), { code: 'ERR_VIRTUAL_SOCKET_TARGET_MISMATCH' });
    assert.equal(server.isSubscribed(vs2, 'vs-ch2'), true);
    assert.equal(server.isSubscribed(vs3, 'vs-ch3'), true);
    assert.equal(server.publish('vs-ch2', 'still'), 1);
    [ga] = await barrier(server, [a]);
    assert.deepEqual(texts(ga), ['T1|T2|still']);

    // Deleting vs1 (guarded, right target) takes vs2 and vs3 with it.
    const subsWithVs = server.stats().subscriptions;
    assert.equal(subsWithVs, subsBefore + 4);
    const removed = server.deleteVirtualSocket(vs1, a.id);
    assert.equal(removed[0], vs1, 'the deleted id comes first');
    assert.deepEqual(sorted(removed), sorted([vs1, vs2, vs3]));
    assert.equal(server.stats().subscriptions, subsBefore + 1, 'only vsPlain is left subscribed');
    for (const [id, ch] of [
      [vs1, 'vs-ch'],
      [vs2, 'vs-ch2'],
      [vs3, 'vs-ch3'],
    ]) {
      assert.equal(server.isSubscribed(id, ch), false);
      assert.deepEqual(server.getTopics(id), []);
    }
    assert.equal(server.hasSubscriptions('vs-ch'), false);
    assert.equal(server.numSubscribers('vs-ch3'), 1);
    assert.equal(server.publish('vs-ch', 'gone'), 0);
    assert.equal(server.publish('vs-ch2', 'gone'), 0);
    assert.equal(server.publish('vs-ch3', 'only-b'), 1);
    [ga, gb] = await barrier(server, list);
    assert.deepEqual(texts(ga), []);
    assert.deepEqual(texts(gb), ['only-b']);
    // Deleted ids are unknown now, also to subscribe and to create on.
    assert.throws(() => server.deleteVirtualSocket(vs2), { code: 'ERR_VIRTUAL_SOCKET_UNKNOWN' });
    assert.throws(() => server.deleteVirtualSocket(a.id), { code: 'ERR_VIRTUAL_SOCKET_UNKNOWN' }, 'a connection is no VS');
    assert.deepEqual(server.subscribe(vs2, 'vs-ch2'), [], 'a deleted virtual socket cannot subscribe');
    assert.equal(server.numSubscribers('vs-ch2'), 0);
    assert.throws(() => server.createVirtualSocket(vs1), { code: 'ERR_INVALID_OPTION' });
    assert.throws(() => server.createVirtualSocket(424242424), { code: 'ERR_INVALID_OPTION' });
    // An unguarded delete.
    assert.deepEqual(server.deleteVirtualSocket(vsPlain), [vsPlain]);
    assert.equal(server.stats().subscriptions, subsBefore);
  });

  test('closing a connection removes its subscriptions and virtual sockets', { timeout: 30000 }, async () => {
    const [a, b] = await open(2);
    const base = server.stats().subscriptions;
    server.subscribe(a.id, 'cl-1');
    server.subscribe(a.id, 'cl-2', 5);
    server.subscribe([a.id, b.id], 'cl-3');
    const vs = server.createVirtualSocket(a.id, 'x');
    const vsChild = server.createVirtualSocket(vs, 'y');
    server.subscribe([vs, vsChild], 'cl-vs');
    server.subscribe(vs, 'cl-3');
    assert.equal(server.stats().subscriptions, base + 7);
    assert.equal(server.numSubscribers('cl-3'), 3);

    a.close(1000, 'bye');
    const closed = await a.closed;
    assert.equal(closed.code, 1000);
    await waitFor(() => closes.has(a.id), 5000, 'close handler');
    assert.deepEqual(closes.get(a.id), { code: 1000, reason: 'bye' });
    // The registry forgets the connection before the close event is queued.
    assert.equal(server.stats().subscriptions, base + 1);
    assert.equal(server.numSubscribers('cl-1'), 0);
    assert.equal(server.numSubscribers('cl-2'), 0);
    assert.equal(server.numSubscribers('cl-vs'), 0);
    assert.deepEqual(server.subscribers('cl-3'), [b.id]);
    assert.deepEqual(server.getTopics(a.id), []);
    assert.deepEqual(server.getTopics(vs), []);
    assert.throws(() => server.deleteVirtualSocket(vs), { code: 'ERR_VIRTUAL_SOCKET_UNKNOWN' });
    assert.throws(() => server.deleteVirtualSocket(vsChild), { code: 'ERR_VIRTUAL_SOCKET_UNKNOWN' });
    assert.throws(() => server.createVirtualSocket(a.id), { code: 'ERR_INVALID_OPTION' });
    assert.equal(server.publish('cl-3', 'after'), 1);
    assert.deepEqual((await barrier(server, [b])).map(texts), [['after']]);
    server.unsubscribe(b.id, 'cl-3');
    assert.equal(server.stats().subscriptions, base);
  });

  test('subscribing a closed (or never opened) connection id does nothing', { timeout: 30000 }, async () => {
    const [a] = await open(1);
    const id = a.id;
    a.terminate();
    await waitFor(() => closes.has(id), 5000, 'close handler');
    const base = server.stats().subscriptions;
    assert.deepEqual(server.subscribe(id, 'dead'), []);
    assert.deepEqual(server.subscribe([id, 77777777], 'dead', 3), []);
    assert.equal(server.isSubscribed(id, 'dead'), false);
    assert.equal(server.numSubscribers('dead'), 0);
    assert.equal(server.hasSubscriptions('dead'), false);
    assert.deepEqual(server.copySubscriptions('dead', 'dead2'), []);
    assert.equal(server.stats().subscriptions, base);
    // The server-side object of the closed connection also cannot subscribe.
    const ws = sockets.get(id);
    assert.equal(ws.isOpen, false);
    assert.equal(ws.subscribe('dead'), false);
    assert.equal(server.numSubscribers('dead'), 0);
    assert.equal(server.publish('dead', 'x'), 0);
    assert.equal(server.send(id, 'x'), 3, 'SendStatus.CLOSED');
  });

  test('binary and text publishes keep their type and bytes', { timeout: 30000 }, async () => {
    const list = await open(2);
    for (const c of list) server.subscribe(c.id, 'bin');
    const bytes = Buffer.from([0xde, 0xad, 0xbe, 0xef, 0x00]);
    assert.equal(server.publish('bin', 'text é ✓'), 2);
    assert.equal(server.publish('bin', bytes), 2);
    assert.equal(server.publish('bin', new Uint8Array(bytes).buffer), 2, 'an ArrayBuffer');
    assert.equal(server.publish('bin', new Uint16Array([0x4241, 0x4443])), 2, 'a typed array view');
    assert.equal(server.publish('bin', 'forced binary', { binary: true }), 2);
    assert.equal(server.publish('bin', Buffer.from('forced text'), { binary: false }), 2);
    assert.equal(server.publish('bin', ''), 2, 'an empty message');
    assert.equal(server.publish('bin', Buffer.alloc(70000, 7)), 2, 'a 64-bit length frame');
    const got = await barrier(server, list);
    for (const g of got) {
      assert.deepEqual(
        g.map((m) => m.isBinary),
        [false, true, true, true, true, false, false, true],
      );
      assert.equal(g[0].text, 'text é ✓');
      assert.deepEqual(g[1].data, bytes);
      assert.deepEqual(g[2].data, bytes);
      assert.deepEqual(g[3].data, Buffer.from('ABCD'));
      assert.equal(g[4].text, 'forced binary');
      assert.equal(g[5].text, 'forced text');
      assert.equal(g[6].text, '');
      assert.deepEqual(g[7].data, Buffer.alloc(70000, 7));
    }
    for (const c of list) server.unsubscribe(c.id, 'bin');
  });

  test('a publish to 500 subscribers is delivered exactly once to each', { timeout: 60000 }, async () => {
    const many = [];
    // Open in parallel batches to keep it quick.
    for (let i = 0; i < 500; i += 50) {
      many.push(...(await Promise.all(Array.from({ length: 50 }, () => join(url)))));
    }
    clients.push(...many);
    const ids = many.map((c) => c.id);
    assert.equal(new Set(ids).size, 500);
    const changed = server.subscribe(ids, 'broadcast');
    assert.equal(changed.length, 500);
    assert.equal(server.numSubscribers('broadcast'), 500);
    assert.equal(server.publish('broadcast', 'one'), 500);
    assert.equal(server.publish('broadcast', Buffer.from('two')), 500);
    const got = await barrier(server, many, 20000);
    for (const g of got) {
      assert.deepEqual(texts(g), ['one', 'two']);
      assert.deepEqual(
        g.map((m) => m.isBinary),
        [false, true],
      );
    }
    for (const c of many) c.terminate();
    await waitFor(() => server.numSubscribers('broadcast') === 0, 10000, 'mass unsubscribe on close');
    assert.equal(server.hasSubscriptions('broadcast'), false);
  });
});

describe('channel operations from worker threads (app.* and ws.*)', { timeout: 60000 }, () => {
  let server;
  let url;
  const clients = [];

  before(async () => {
    ({ server, url } = await startServer(null, {
      app: new URL('../../fixtures/channels-rpc-app.mjs', import.meta.url),
      workers: 2,
    }));
  });

  after(
    async () => {
      for (const c of clients) c.terminate();
      await server?.close({ drainTimeout: 500 });
    },
    { timeout: 20000 },
  );

  let seq = 0;
  /** Run `app[op](...args)` (or `ws[wsop]` with `{ ws: true }`) in the worker of `client`. */
  async function call(client, op, args = [], { ws = false } = {}) {
    const request = { seq: ++seq, args };
    if (ws) request.wsop = op;
    else request.op = op;
    client.send(JSON.stringify(request));
    for (;;) {
      const m = await nextMessage(client);
      const reply = JSON.parse(m.data.toString());
      if (reply.seq === request.seq) {
        if (reply.error) {
          const e = new Error(reply.error.message);
          e.code = reply.error.code;
          throw e;
        }
        return reply.result;
      }
    }
  }

  async function joinRpc() {
    const client = await connect(url);
    const hello = JSON.parse((await nextMessage(client)).data.toString());
    client.id = hello.id;
    client.worker = hello.worker;
    clients.push(client);
    return client;
  }

  test('app.* channel operations, from two workers, act on one registry', { timeout: 30000 }, async () => {
    const ctl0 = await joinRpc();
    const ctl1 = await joinRpc();
    assert.notEqual(ctl0.worker, ctl1.worker, 'consecutive connections go to different workers');
    // Observers: they only receive.
    const obs = [];
    for (let i = 0; i < 4; i++) obs.push(await join(url));
    clients.push(...obs);
    const [o1, o2, o3, o4] = obs;

    assert.deepEqual(await call(ctl0, 'subscribe', [[o1.id, o2.id], 'w-ch']), [o1.id, o2.id]);
    assert.deepEqual(await call(ctl1, 'subscribe', [o2.id, 'w-ch']), [], 'refcount 2 from the other worker');
    assert.deepEqual(await call(ctl1, 'subscribe', [o3.id, 'w-ch']), [o3.id]);
    assert.equal(await call(ctl0, 'numSubscribers', ['w-ch']), 3);
    assert.equal(await call(ctl1, 'hasSubscriptions', ['w-ch']), true);
    assert.equal(await call(ctl0, 'isSubscribed', [o2.id, 'w-ch']), true);
    assert.deepEqual(sorted(await call(ctl1, 'subscribers', ['w-ch'])), sorted([o1.id, o2.id, o3.id]));
    assert.deepEqual(await call(ctl0, 'getTopics', [o3.id]), ['w-ch']);
    assert.deepEqual(await call(ctl0, 'subscribe', [o2.id, 'w-ch', -1]), []);
    assert.equal(await call(ctl1, 'publish', ['w-ch', 'from-worker']), 3);
    assert.equal(await call(ctl0, 'publish', ['w-ch', 'skip-o1', { exclude: o1.id }]), 2);
    assert.deepEqual((await barrier(server, obs)).map(texts), [
      ['from-worker'],
      ['from-worker', 'skip-o1'],
      ['from-worker', 'skip-o1'],
      [],
    ]);

    // Virtual sockets created in one worker, used from the other.
    const vs = await call(ctl0, 'createVirtualSocket', [o4.id, 'V:']);
    const vs2 = await call(ctl1, 'createVirtualSocket', [vs, 'W:']);
    assert.deepEqual(await call(ctl1, 'subscribe', [[vs, vs2], 'w-vs']), [vs, vs2]);
    assert.equal(await call(ctl0, 'publishTo', [['w-vs', 'w-ch', o1.id], 'mix']), 5);
    const got = (await barrier(server, obs)).map(texts);
    assert.deepEqual(got.slice(0, 3), [['mix'], ['mix'], ['mix']]);
    assert.deepEqual(sorted(got[3]), ['V:W:mix', 'V:mix']);
    await assert.rejects(call(ctl1, 'deleteVirtualSocket', [vs2, o4.id]), { code: 'ERR_VIRTUAL_SOCKET_TARGET_MISMATCH' });
    assert.equal(await call(ctl0, 'numSubscribers', ['w-vs']), 2);
    assert.deepEqual(sorted(await call(ctl0, 'deleteVirtualSocket', [vs, o4.id])), sorted([vs, vs2]));
    assert.equal(await call(ctl1, 'numSubscribers', ['w-vs']), 0);
    assert.deepEqual(await call(ctl1, 'copySubscriptions', ['w-ch', 'w-copy']), await call(ctl0, 'subscribers', ['w-copy']));
    assert.equal(await call(ctl1, 'numSubscribers', ['w-copy']), 3);
    assert.equal(await call(ctl0, 'unsubscribe', [o1.id, 'w-copy']), true);
    assert.equal(await call(ctl0, 'unsubscribe', [o1.id, 'w-copy']), false);
    // The server on the main thread sees the same registry.
    assert.equal(server.numSubscribers('w-copy'), 2);
    assert.equal(server.numSubscribers('w-ch'), 3);
  });

  test('ws.* channel methods inside a worker', { timeout: 30000 }, async () => {
    const a = await joinRpc();
    const b = await joinRpc();
    assert.equal(await call(a, 'subscribe', ['ws-room'], { ws: true }), true);
    assert.equal(await call(a, 'subscribe', ['ws-room'], { ws: true }), false);
    assert.equal(await call(b, 'subscribe', ['ws-room'], { ws: true }), true);
    assert.equal(await call(a, 'isSubscribed', ['ws-room'], { ws: true }), true);
    assert.deepEqual(await call(b, 'getTopics', [], { ws: true }), ['ws-room']);
    // ws.publish from a: b receives, a does not (a's next message is its reply).
    assert.equal(await call(a, 'publish', ['ws-room', 'from-a'], { ws: true }), 1);
    const m = await nextMessage(b);
    assert.equal(m.data.toString(), 'from-a');
    assert.equal(await call(a, 'unsubscribe', ['ws-room'], { ws: true }), true);
    assert.equal(await call(a, 'isSubscribed', ['ws-room'], { ws: true }), false);
    assert.deepEqual(await call(a, 'getTopics', [], { ws: true }), []);
    assert.equal(server.numSubscribers('ws-room'), 1);
    // Nothing else was delivered to a: its next message is the barrier.
    assert.deepEqual((await barrier(server, [a])).map(texts), [[]]);
  });
});
