// The Switchboard protocol carried by SockJS (`app.sockjs(prefix, { rpc:
// true })`, docs/sockjs.md): the client's SockJS transport against the
// server over real sockets, calls, streams both ways (large enough to
// cross streaming responses and backpressure), a publish, polling, a
// reconnect after the session is killed and after the server restarts;
// and the raw wire: base64 messages, a broken one, a silent session, the
// transports such a service offers; and channel subscriptions made from
// the client, which come back after a reconnect.
import test from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { Server } from 'switchboard';
import { Client, connect, jsonCodec, openStream, sockJsTransport } from 'switchboard-client/node';
import { CHUNK, expectedSha256, generate, hashStream } from '../fixtures/rpc-data.mjs';
import { Stream, request } from '../e2e/sockjs/support.mjs';

const MiB = 1024 * 1024;
const PREFACE = Buffer.from('SWB\x01', 'latin1');

/** A server with the protocol over SockJS on `/rpc`; `closed` records the close hook's codes. */
async function start(t, options = {}, port = 0) {
  const server = new Server({ workers: 0, ...options });
  const closed = [];
  server.rpc
    .action('add', (call) => {
      const [a, b] = call.decode();
      return a + b;
    })
    .action('where', (call) => call.connection.transport)
    .action('join', (call) => call.connection.subscribe(call.decode()))
    .action('upload', (call) => hashStream(call.stream))
    .action('download', (call) => {
      const { size, seed } = call.decode();
      call.respond({ size }, { stream: generate(size, seed, CHUNK) });
    })
    .action('kill', (call) => {
      // After the reply has gone: the session ends from the server's side.
      setTimeout(() => call.connection.close('ERR_KILLED', 'by request'), 20);
      return 'bye';
    })
    .onClose((connection, code, reason) => closed.push({ transport: connection.transport, code, reason }));
  server.sockjs('/rpc', { rpc: true });
  const [address] = await server.listen(port);
  t.after(() => server.close());
  return { server, port: address.port, closed };
}

/** A client on the SockJS transport alone. */
async function sockjsClient(t, port, options = {}) {
  const { transport = {}, ...rest } = options;
  const client = new Client({ transport: sockJsTransport(`http://127.0.0.1:${port}/rpc`, transport), codecs: [jsonCodec], ...rest });
  t.after(() => client.close({ timeoutMs: 0 }));
  await client.ready;
  return client;
}

async function until(what, condition, ms = 5000) {
  const deadline = Date.now() + ms;
  while (!(await condition())) {
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** Frames of the protocol, as the server's SockJS messages carry them. */
function carried(frame) {
  const messages = JSON.parse(frame.slice(1));
  return messages.map((message) => Buffer.from(message, 'base64'));
}

/** A HELLO (preface first) offering json, as the client sends it: taken from a real client's first write. */
async function helloBytes() {
  let hello;
  const transport = () => ({
    framing: 'message',
    bufferedAmount: 0,
    write: (bytes) => (hello ??= Buffer.from(bytes)),
    close() {},
  });
  const client = new Client({ transport: (handlers) => (queueMicrotask(() => handlers.onOpen()), transport()), codecs: [jsonCodec], reconnect: false, handshakeTimeoutMs: 50 });
  await client.ready.catch(() => {});
  return hello;
}

test('calls, a streamed upload and download, a publish and a ping over xhr_streaming', async (t) => {
  const { server, port, closed } = await start(t, { rpc: { maxBackpressure: 1 * MiB } });
  const client = await sockjsClient(t, port, { reconnect: false });
  assert.equal(client.transport, 'xhr-streaming');
  assert.equal(await client.call('add', [2, 40]), 42);
  assert.equal(await client.call('where'), 'sockjs');
  // Many calls at once: their frames share sends and streaming responses.
  const sums = await Promise.all(Array.from({ length: 200 }, (_, i) => client.call('add', [i, i])));
  assert.deepEqual(sums, Array.from({ length: 200 }, (_, i) => 2 * i));

  // An upload of 3 MiB: three times the server's window, so credit paces it.
  const writer = openStream();
  const upload = client.call('upload', null, { stream: writer });
  for (const chunk of generate(3 * MiB + 5, 7, 100_000)) await writer.write(chunk);
  writer.end();
  assert.deepEqual(await upload, { size: 3 * MiB + 5, sha256: expectedSha256(3 * MiB + 5, 7, 100_000) });

  // A download of 6 MiB: many times the streaming responses' 128 KiB and the
  // session's high-water mark (a quarter of 1 MiB), so the server's peer
  // pauses at BUFFERED and resumes at the drain between receivers.
  const size = 6 * MiB + 3;
  const response = await client.request('download', { size, seed: 9 });
  assert.deepEqual(await hashStream(response.stream), { size, sha256: expectedSha256(size, 9, CHUNK) });

  const got = [];
  client.handle('news', (payload, call) => {
    assert.equal(call.callId, 0);
    got.push(payload);
  });
  assert.equal(await client.call('join', 'news'), true);
  assert.equal(server.publish('news', JSON.stringify({ n: 1 })), 1);
  assert.equal(server.publish('news', JSON.stringify({ n: 2 })), 1);
  await until('the publishes', () => got.length === 2);
  assert.deepEqual(got, [{ n: 1 }, { n: 2 }]);
  assert.ok((await client.ping()) >= 0);

  await client.close();
  // The client ended its receiving request: the server saw the session go.
  await until('the close hook', () => closed.length === 1);
  assert.equal(closed[0].transport, 'sockjs');
});

test('xhr polling: when asked, and when streaming fails before the session opens', async (t) => {
  const { port } = await start(t);
  const polling = await sockjsClient(t, port, { transport: { receive: 'polling' }, reconnect: false });
  assert.equal(polling.transport, 'xhr-polling');
  const sums = await Promise.all(Array.from({ length: 50 }, (_, i) => polling.call('add', [i, 1])));
  assert.deepEqual(sums, Array.from({ length: 50 }, (_, i) => i + 1));
  const response = await polling.request('download', { size: MiB, seed: 3 });
  assert.deepEqual(await hashStream(response.stream), { size: MiB, sha256: expectedSha256(MiB, 3, CHUNK) });

  // A proxy that answers every streaming request with 502: the transport
  // polls instead, in a new session, and keeps polling on reconnects.
  const asked = [];
  const proxied = (url, init) => {
    asked.push(url.split('/').at(-1));
    if (url.endsWith('/xhr_streaming')) return Promise.resolve(new Response('bad gateway', { status: 502 }));
    return fetch(url, init);
  };
  const factory = sockJsTransport(`http://127.0.0.1:${port}/rpc`, { fetch: proxied });
  const client = new Client({ transport: factory, codecs: [jsonCodec], reconnect: { initialDelayMs: 10 } });
  t.after(() => client.close({ timeoutMs: 0 }));
  await client.ready;
  assert.equal(client.transport, 'xhr-polling');
  assert.equal(asked[0], 'xhr_streaming');
  assert.equal(await client.call('add', [1, 2]), 3);
  const streamingTries = asked.filter((what) => what === 'xhr_streaming').length;
  const reopened = new Promise((resolve) => client.once('open', resolve));
  await client.call('kill');
  const { transport } = await reopened;
  assert.equal(transport, 'xhr-polling');
  assert.equal(asked.filter((what) => what === 'xhr_streaming').length, streamingTries);
});

test('reconnects after the server kills the session and after the server restarts', async (t) => {
  const first = await start(t);
  const client = await sockjsClient(t, first.port, { reconnect: { initialDelayMs: 20, maxDelayMs: 100 } });
  const disconnects = [];
  client.on('disconnect', (event) => disconnects.push(event.code));
  assert.equal(await client.call('kill'), 'bye');
  // The server's GO_AWAY named the code; the client comes back.
  await until('the disconnect', () => disconnects.length === 1);
  assert.deepEqual(disconnects, ['ERR_KILLED']);
  assert.equal(await client.call('add', [1, 1]), 2);
  await until('the close hook', () => first.closed.length === 1);
  assert.deepEqual(first.closed[0], { transport: 'sockjs', code: 1000, reason: 'ERR_KILLED: by request' });

  // The server goes; a new one comes on the same port; calls made
  // meanwhile wait for the reconnect.
  await first.server.close();
  await until('the second disconnect', () => disconnects.length === 2);
  const pending = client.call('add', [20, 22]);
  const second = await start(t, {}, first.port);
  assert.equal(await pending, 42);
  assert.equal(await client.call('where'), 'sockjs');
  assert.equal(second.closed.length, 0);
});

test('on the wire: base64 frames in SockJS messages, and a broken message closes the session', async (t) => {
  const { port, closed } = await start(t);
  const info = JSON.parse((await request(port, 'GET', '/rpc/info')).body);
  assert.equal(info.websocket, false);
  assert.equal((await request(port, 'GET', '/rpc/000/abc/websocket', { Upgrade: 'websocket', Connection: 'Upgrade' })).status, 404);

  const stream = await Stream.open(port, 'POST', '/rpc/000/raw/xhr_streaming');
  assert.equal(stream.status, 200);
  assert.match(await stream.chunk(), /^h{2048}\n$/);
  assert.equal(await stream.chunk(), 'o\n');
  const send = (body) => request(port, 'POST', '/rpc/000/raw/xhr_send', { 'Content-Type': 'text/plain' }, body);
  assert.equal((await send(JSON.stringify([(await helloBytes()).toString('base64')]))).status, 204);
  const [welcome] = carried((await stream.chunk()).trimEnd());
  assert.deepEqual(welcome.subarray(0, 4), PREFACE);
  assert.equal(welcome[4], 0x02, 'a WELCOME after our preface');

  // A ping (HEARTBEAT, 0x0e) is answered natively with a pong.
  assert.equal((await send(JSON.stringify([Buffer.from([0x0e, 0, 0]).toString('base64')]))).status, 204);
  assert.deepEqual(carried((await stream.chunk()).trimEnd()), [Buffer.from([0x0e, 0x10, 0])]);

  // Not base64: 500 with the code, then a GO_AWAY and the close frame.
  const broken = await send(JSON.stringify(['not base64!']));
  assert.equal(broken.status, 500);
  assert.match(broken.body, /^ERR_SOCKJS_BROKEN_BASE64: /);
  let rest = '';
  for (let chunk = await stream.chunk(); chunk !== null && chunk !== ''; chunk = await stream.chunk()) rest += chunk;
  const [goAwayFrame, closeFrame] = rest.trimEnd().split('\n');
  const [goAway] = carried(goAwayFrame);
  assert.equal(goAway[0], 0x0f, 'GO_AWAY');
  assert.match(goAway.toString('latin1'), /ERR_SOCKJS_BROKEN_BASE64/);
  assert.equal(closeFrame, 'c[1002,"ERR_SOCKJS_BROKEN_BASE64"]');
  await until('the close hook', () => closed.length === 1);
  assert.deepEqual(closed[0], { transport: 'sockjs', code: 1002, reason: 'ERR_SOCKJS_BROKEN_BASE64' });
  stream.destroy?.();

  // A message that ends inside a frame is malformed: GO_AWAY, then c[1002,...].
  const second = await Stream.open(port, 'POST', '/rpc/000/cut/xhr_streaming');
  await second.chunk();
  await second.chunk();
  const hello = await helloBytes();
  await request(port, 'POST', '/rpc/000/cut/xhr_send', {}, JSON.stringify([hello.subarray(0, hello.length - 1).toString('base64')]));
  let frames = '';
  for (let chunk = await second.chunk(); chunk !== null && chunk !== ''; chunk = await second.chunk()) frames += chunk;
  assert.match(frames, /c\[1002,"ERR_PROTOCOL_MALFORMED"\]\n$/);
});

test('a session that sends no HELLO within handshakeTimeout is closed', async (t) => {
  const { port } = await start(t, { handshakeTimeout: 0.3 });
  const started = Date.now();
  const stream = await Stream.open(port, 'POST', '/rpc/000/silent/xhr_streaming');
  await stream.chunk();
  assert.equal(await stream.chunk(), 'o\n');
  let frames = '';
  for (let chunk = await stream.chunk(3000); chunk !== null && chunk !== ''; chunk = await stream.chunk(3000)) frames += chunk;
  const [goAwayFrame, closeFrame] = frames.trimEnd().split('\n');
  const [goAway] = carried(goAwayFrame);
  // Before our WELCOME: our preface, then the GO_AWAY.
  assert.deepEqual(goAway.subarray(0, 4), PREFACE);
  assert.equal(goAway[4], 0x0f);
  assert.equal(closeFrame, 'c[1002,"ERR_HANDSHAKE_TIMEOUT"]');
  assert.ok(Date.now() - started >= 250, 'not before the timeout');
});

test('connect() falls back from a blocked WebSocket, and <prefix>/websocket is the protocol over WebSocket', async (t) => {
  const { port } = await start(t);
  const fallback = `http://127.0.0.1:${port}/rpc`;
  // No WebSocket route at /blocked: the upgrade gets 404, as behind a
  // proxy that refuses it.
  const refused = await connect(`ws://127.0.0.1:${port}/blocked`, { fallback, codecs: [jsonCodec], reconnect: false });
  t.after(() => refused.close({ timeoutMs: 0 }));
  assert.equal(refused.transport, 'xhr-streaming');
  assert.equal(await refused.call('where'), 'sockjs');

  // A WebSocket that is accepted and never answered: the fallback after timeoutMs.
  const silent = net.createServer(() => {});
  await new Promise((resolve) => silent.listen(0, '127.0.0.1', resolve));
  t.after(() => silent.close());
  const sockets = [];
  silent.on('connection', (socket) => sockets.push(socket));
  t.after(() => sockets.forEach((socket) => socket.destroy()));
  const started = Date.now();
  const held = await connect(`ws://127.0.0.1:${silent.address().port}/rpc/websocket`, {
    fallback: { url: fallback, timeoutMs: 300 },
    codecs: [jsonCodec],
    reconnect: false,
  });
  t.after(() => held.close({ timeoutMs: 0 }));
  assert.ok(Date.now() - started >= 250);
  assert.equal(held.transport, 'xhr-streaming');
  assert.equal(await held.call('add', [3, 4]), 7);

  // The service's raw WebSocket speaks the protocol: no fallback needed.
  const direct = await connect(`ws://127.0.0.1:${port}/rpc/websocket`, { fallback, codecs: [jsonCodec], reconnect: false });
  t.after(() => direct.close({ timeoutMs: 0 }));
  assert.equal(direct.transport, 'websocket');
  assert.equal(await direct.call('where'), 'websocket');

  // Forced: SockJS alone.
  const forced = await connect(`ws://127.0.0.1:${port}/rpc/websocket`, { fallback, transports: ['sockjs'], codecs: [jsonCodec], reconnect: false });
  t.after(() => forced.close({ timeoutMs: 0 }));
  assert.equal(forced.transport, 'xhr-streaming');
  await assert.rejects(connect(`ws://127.0.0.1:${port}/rpc/websocket`, { transports: ['sockjs'] }), /fallback/);
});

test('client.subscribe over the fallback: publications arrive, and after the session is killed it subscribes again and reports the gap', async (t) => {
  const { server, port } = await start(t);
  server.rpc.onSubscribe((connection, channel) => channel === 'prices');
  const client = await sockjsClient(t, port, { reconnect: { initialDelayMs: 20, maxDelayMs: 100 } });
  const received = [];
  const gaps = [];
  const subscription = client.subscribe('prices', (value) => received.push(value));
  subscription.on('gap', (gap) => gaps.push(gap));
  await subscription.ready;
  assert.equal(server.publish('prices', JSON.stringify({ p: 1 })), 1);
  await until('the first publication', () => received.length === 1);
  await assert.rejects(client.subscribe('secrets').ready, (error) => error.code === 'ERR_SUBSCRIPTION_REFUSED');

  assert.equal(await client.call('kill'), 'bye');
  await until('the gap after the reconnect', () => gaps.length === 1);
  assert.equal(gaps[0].reason, 'reconnect');
  await until('the subscription again', () => server.numSubscribers('prices') === 1);
  server.publish('prices', JSON.stringify({ p: 2 }));
  await until('the second publication', () => received.length === 2);
  assert.deepEqual(received, [{ p: 1 }, { p: 2 }]);
});
