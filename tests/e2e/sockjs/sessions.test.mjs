// SockJS sessions on the HTTP transports as an application sees them: the
// real client (sockjs-client 1.6.1 in Node) forced through each transport
// Node can run (websocket, xhr-streaming, xhr-polling, eventsource; the
// browser's htmlfile and jsonp-polling are driven in tests/browser), and
// raw requests for the session's life: what waits between receivers, the
// disconnect delay, an aborted receiver, limits, the `upgrade` hook, send
// statuses and `drain`, the application's close, and the server's.
import test, { describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import SockJS from 'sockjs-client';
import { SendStatus, UpgradeRejection } from 'switchboard';
import { startServer, waitFor, within } from '../../helpers/index.mjs';
import { PRELUDE, Stream, request } from './support.mjs';

const TRANSPORTS = ['websocket', 'xhr-streaming', 'xhr-polling', 'eventsource'];
/** Every character class SockJS escapes, an astral character, quotes, markup. */
const HOSTILE = '\u0000\u001f \u200c\u2028\u2029\u2060\ufff0\uffff 😀 "q" \\ </script> é ✓ \u00ad\ufeff';

describe('SockJS sessions over HTTP', () => {
  let server;
  let port;
  let base;
  const events = { opens: [], closes: [], drains: 0, statuses: [], short: { opens: 0, closes: [] }, slowpoke: [] };
  const clients = new Set();

  const echo = {
    open: (ws) => void events.opens.push(ws),
    message: (ws, data) => {
      const text = data.toString('utf8');
      if (text.startsWith('triple ')) {
        for (let i = 1; i <= 3; i++) events.statuses.push(ws.send(`${text.slice(7)}${i}`));
      } else if (text.startsWith('end ')) ws.end(4000, text.slice(4));
      else ws.send(text);
    },
    drain: () => void events.drains++,
    close: (ws, code, reason) => void events.closes.push({ code, reason }),
  };

  before(async () => {
    ({ server, port } = await startServer((s) => {
      s.sockjs('/echo', { ...echo });
      s.sockjs('/close', { open: (ws) => ws.end(3000, 'Go away!') });
      s.sockjs('/hb', { ...echo, heartbeatDelay: 150 });
      s.sockjs('/short', {
        ...echo,
        disconnectDelay: 300,
        open: () => void events.short.opens++,
        close: (ws, code, reason) => void events.short.closes.push({ code, reason }),
      });
      s.sockjs('/small', { ...echo, maxPayloadLength: 1024 });
      s.sockjs('/tiny-close', { ...echo, maxBackpressure: 16 * 1024, slowConsumer: 'close' });
      s.sockjs('/tiny-drop', { ...echo, maxBackpressure: 16 * 1024 });
      s.ws('/both', { ...echo, sockjs: true });
      s.sockjs('/slow-echo', {
        message: async (ws, data) => {
          await new Promise((resolve) => setTimeout(resolve, 40));
          ws.send(data.toString('utf8'));
        },
      });
      s.sockjs('/slowpoke', {
        maxBackpressure: 64 * 1024,
        slowConsumer: 'close',
        responseLimit: 64 * 1024 * 1024,
        message: (ws, data) => {
          const count = Number(data.toString('utf8'));
          for (let i = 0; i < count; i++) if (ws.send('s'.repeat(16 * 1024)) === SendStatus.DROPPED) break;
        },
        close: (ws, code) => void events.slowpoke.push(code),
      });
      s.sockjs('/room', { ...echo, open: (ws) => ws.subscribe('room') });
      s.sockjs('/guarded', {
        upgrade: (req) => {
          if (req.headers['x-token'] !== 'yes') throw new UpgradeRejection(403, 'no token');
          return { user: req.headers['x-user'] };
        },
        message: (ws, data) => ws.send(`${ws.data.user}:${data.toString('utf8')}`),
      });
    }));
    base = `http://127.0.0.1:${port}`;
  });

  after(async () => {
    for (const client of clients) if (client.readyState < SockJS.CLOSING) client.close();
    await server.close({ drainTimeout: 1000 });
  });

  /** A sockjs-client forced through `transport`, collecting what it receives. */
  function sockjs(path, transport) {
    const sock = new SockJS(`${base}${path}`, null, { transports: [transport] });
    clients.add(sock);
    sock.received = [];
    sock.heartbeats = 0;
    sock.onmessage = (e) => sock.received.push(e.data);
    sock.addEventListener('heartbeat', () => sock.heartbeats++);
    sock.closed = new Promise((resolve) => {
      sock.onclose = (e) => resolve({ code: e.code, reason: e.reason });
    });
    sock.opened = new Promise((resolve, reject) => {
      sock.onopen = () => resolve();
      sock.closed.then((e) => reject(new Error(`closed before it opened: ${e.code} ${e.reason}`)));
    });
    sock.opened.catch(() => {});
    return sock;
  }

  for (const transport of TRANSPORTS) {
    describe(`sockjs-client over ${transport}`, () => {
      test('opens on that transport, echoes hostile Unicode and keeps order', async () => {
        const sock = sockjs('/echo', transport);
        await within(sock.opened, 5000, 'open');
        assert.equal(sock.transport, transport);
        sock.send(HOSTILE);
        for (let i = 0; i < 50; i++) sock.send(`m${i}`);
        await waitFor(() => sock.received.length === 51, 5000, '51 echoes');
        assert.equal(sock.received[0], HOSTILE);
        assert.deepEqual(sock.received.slice(1), Array.from({ length: 50 }, (_, i) => `m${i}`));
        sock.close();
        await within(sock.closed, 3000, 'close');
      });

      test("the server's close code and reason reach the client", async () => {
        const sock = sockjs('/close', transport);
        await within(sock.opened, 5000, 'open');
        assert.deepEqual(await within(sock.closed, 3000, 'close'), { code: 3000, reason: 'Go away!' });
      });

      test('heartbeats come every heartbeatDelay', async () => {
        const sock = sockjs('/hb', transport);
        await within(sock.opened, 5000, 'open');
        await waitFor(() => sock.heartbeats >= 2, 3000, 'two heartbeats');
        sock.send('still here');
        await waitFor(() => sock.received.includes('still here'), 3000, 'an echo after heartbeats');
        sock.close();
      });
    });
  }

  test('one publish reaches sessions of every transport, framed once', async () => {
    const socks = TRANSPORTS.map((t) => sockjs('/room', t));
    await within(Promise.all(socks.map((s) => s.opened)), 5000, 'four opens');
    await waitFor(() => server.numSubscribers('room') === 4, 3000, 'four subscribers');
    assert.equal(server.publish('room', `news ${HOSTILE}`), 4);
    assert.equal(server.publish('room', 'second'), 4);
    await waitFor(() => socks.every((s) => s.received.length === 2), 5000, 'both publishes everywhere');
    for (const sock of socks) assert.deepEqual(sock.received, [`news ${HOSTILE}`, 'second'], sock.transport);
    for (const sock of socks) sock.close();
    await waitFor(() => server.numSubscribers('room') === 0, 5000, 'the sessions leave the channel');
  });

  test('what is sent between receivers waits, reports Buffered, and comes whole with the next poll; drain follows', async () => {
    const url = `/echo/000/${crypto.randomUUID()}`;
    assert.equal((await request(port, 'POST', `${url}/xhr`)).body, 'o\n');
    const drains = events.drains;
    events.statuses.length = 0;
    assert.equal((await request(port, 'POST', `${url}/xhr_send`, {}, '["triple r"]')).status, 204);
    await waitFor(() => events.statuses.length === 3, 3000, 'three sends');
    assert.deepEqual(events.statuses, [SendStatus.BUFFERED, SendStatus.BUFFERED, SendStatus.BUFFERED]);
    assert.equal((await request(port, 'POST', `${url}/xhr`)).body, 'a["r1","r2","r3"]\n');
    await waitFor(() => events.drains === drains + 1, 3000, 'drain');
  });

  test('a streaming receiver that reached its limit comes back within the disconnect delay and loses nothing', async () => {
    const url = `/echo/000/${crypto.randomUUID()}`;
    // The first stream: its limit (128 KiB) is passed by one large message.
    const first = await Stream.open(port, 'POST', `${url}/xhr_streaming`);
    const big = 'x'.repeat(140 * 1024);
    try {
      assert.equal(await first.chunk(), PRELUDE);
      assert.equal(await first.chunk(), 'o\n');
      assert.equal((await request(port, 'POST', `${url}/xhr_send`, {}, JSON.stringify([big]))).status, 204);
      assert.equal(await first.chunk(), `a["${big}"]\n`);
      assert.equal(await first.chunk(), '', 'the response ended at its limit');
    } finally {
      first.destroy();
    }
    // Between receivers: three messages from the application.
    assert.equal((await request(port, 'POST', `${url}/xhr_send`, {}, '["triple s"]')).status, 204);
    await new Promise((resolve) => setTimeout(resolve, 100));
    const second = await Stream.open(port, 'POST', `${url}/xhr_streaming`);
    try {
      assert.equal(await second.chunk(), PRELUDE);
      assert.equal(await second.chunk(), 'a["s1","s2","s3"]\n');
    } finally {
      second.destroy();
    }
  });

  test('a session without a receiver for disconnectDelay closes (1006); its id then opens a new one', async () => {
    const url = `/short/000/${crypto.randomUUID()}`;
    const { short } = events;
    assert.equal((await request(port, 'POST', `${url}/xhr`)).body, 'o\n');
    await waitFor(() => short.closes.length === 1, 3000, 'the close event');
    assert.deepEqual(short.closes[0], { code: 1006, reason: '' });
    assert.equal((await request(port, 'POST', `${url}/xhr_send`, {}, '["late"]')).status, 404);
    assert.equal((await request(port, 'POST', `${url}/xhr`)).body, 'o\n');
    await waitFor(() => short.opens === 2, 3000, 'the second open event');
  });

  test('a receiver the client aborts closes the session (1006 to the app, c[1002,...] to the client)', async () => {
    const url = `/echo/000/${crypto.randomUUID()}`;
    const closes = events.closes.length;
    const stream = await Stream.open(port, 'GET', `${url}/eventsource`);
    assert.equal(await stream.chunk(), '\r\n');
    assert.equal(await stream.chunk(), 'data: o\r\n\r\n');
    stream.destroy();
    await waitFor(() => events.closes.length === closes + 1, 3000, 'the close event');
    assert.equal(events.closes.at(-1).code, 1006);
    assert.equal((await request(port, 'POST', `${url}/xhr`)).body, 'c[1002,"Connection interrupted"]\n');
  });

  test("the application's end() reaches an attached stream as its close frame and ends it", async () => {
    const url = `/echo/000/${crypto.randomUUID()}`;
    const stream = await Stream.open(port, 'POST', `${url}/xhr_streaming`);
    try {
      assert.equal(await stream.chunk(), PRELUDE);
      assert.equal(await stream.chunk(), 'o\n');
      assert.equal((await request(port, 'POST', `${url}/xhr_send`, {}, '["end bye"]')).status, 204);
      assert.equal(await stream.chunk(), 'c[4000,"bye"]\n');
      assert.equal(await stream.chunk(), '');
      await waitFor(() => events.closes.some((c) => c.code === 4000 && c.reason === 'bye'), 3000, 'the close event');
    } finally {
      stream.destroy();
    }
  });

  test('a send over maxPayloadLength is 413 and closes only its session (1009)', async () => {
    const url = `/small/000/${crypto.randomUUID()}`;
    const bystander = `/small/000/${crypto.randomUUID()}`;
    assert.equal((await request(port, 'POST', `${url}/xhr`)).body, 'o\n');
    assert.equal((await request(port, 'POST', `${bystander}/xhr`)).body, 'o\n');
    const big = await request(port, 'POST', `${url}/xhr_send`, {}, JSON.stringify(['y'.repeat(2000)]));
    assert.equal(big.status, 413);
    assert.equal((await request(port, 'POST', `${url}/xhr`)).body, 'c[1009,"Message too big"]\n');
    await waitFor(() => events.closes.some((c) => c.code === 1009), 3000, 'the close event');
    assert.equal((await request(port, 'POST', `${bystander}/xhr_send`, {}, '["fine"]')).status, 204);
    assert.equal((await request(port, 'POST', `${bystander}/xhr`)).body, 'a["fine"]\n');
  });

  test("a send is answered once its messages' handlers ran: the next poll finds every echo in one frame", async () => {
    const url = `/slow-echo/000/${crypto.randomUUID()}`;
    assert.equal((await request(port, 'POST', `${url}/xhr`)).body, 'o\n');
    const started = Date.now();
    assert.equal((await request(port, 'POST', `${url}/xhr_send`, {}, '["a","b","c"]')).status, 204);
    assert.ok(Date.now() - started >= 100, `answered after ${Date.now() - started} ms, before the three 40 ms handlers ran`);
    assert.equal((await request(port, 'POST', `${url}/xhr`)).body, 'a["a","b","c"]\n');
    // Many rounds of sends and a poll (the protocol suite's
    // test_content_types): never a frame cut short.
    const fast = `/echo/000/${crypto.randomUUID()}`;
    assert.equal((await request(port, 'POST', `${fast}/xhr`)).body, 'o\n');
    for (let round = 0; round < 40; round++) {
      for (let i = 0; i < 8; i++) assert.equal((await request(port, 'POST', `${fast}/xhr_send`, {}, `["${round}.${i}"]`)).status, 204);
      const poll = await request(port, 'POST', `${fast}/xhr`);
      assert.equal(poll.body, `a[${Array.from({ length: 8 }, (_, i) => `"${round}.${i}"`).join(',')}]\n`, `round ${round}`);
    }
  });

  test("a session nobody takes from meets the slow-consumer policy: 'drop' refuses, 'close' closes with 1008", async () => {
    // 'drop': what fits waits for the next poll, the rest is DROPPED.
    const dropping = `/tiny-drop/000/${crypto.randomUUID()}`;
    assert.equal((await request(port, 'POST', `${dropping}/xhr`)).body, 'o\n');
    events.statuses.length = 0;
    for (let i = 0; i < 8; i++) {
      assert.equal((await request(port, 'POST', `${dropping}/xhr_send`, {}, JSON.stringify([`triple ${'d'.repeat(3000)}`]))).status, 204);
    }
    await waitFor(() => events.statuses.length === 24, 3000, '24 sends');
    assert.ok(events.statuses.includes(SendStatus.DROPPED), `statuses: ${events.statuses}`);
    const kept = events.statuses.filter((status) => status === SendStatus.BUFFERED).length;
    const poll = await request(port, 'POST', `${dropping}/xhr`);
    assert.equal(JSON.parse(poll.body.slice(1)).length, kept, 'the next poll gets exactly what was kept');
    // 'close': the session closes; its client hears why.
    const closing = `/tiny-close/000/${crypto.randomUUID()}`;
    assert.equal((await request(port, 'POST', `${closing}/xhr`)).body, 'o\n');
    for (let i = 0; i < 8; i++) await request(port, 'POST', `${closing}/xhr_send`, {}, JSON.stringify([`triple ${'c'.repeat(3000)}`]));
    assert.equal((await request(port, 'POST', `${closing}/xhr`)).body, 'c[1008,"ERR_WS_SLOW_CONSUMER"]\n');
    await waitFor(() => events.closes.some((c) => c.code === 1008), 3000, 'the close event');
  });

  test('a receiver that stops reading backs up into its session, whose slow-consumer policy applies (1008); others go on', async () => {
    const url = `/slowpoke/000/${crypto.randomUUID()}`;
    const stream = await Stream.open(port, 'POST', `${url}/xhr_streaming`);
    try {
      assert.equal(await stream.chunk(), PRELUDE);
      assert.equal(await stream.chunk(), 'o\n');
      stream.connection.socket.pause();
      // 16 MiB: more than the sockets' buffers and the receiver's own
      // queue hold, so the rest waits in the session's queue.
      assert.equal((await request(port, 'POST', `${url}/xhr_send`, {}, '["1024"]')).status, 204);
      await waitFor(() => events.slowpoke.length === 1, 10_000, 'the close event');
      assert.deepEqual(events.slowpoke, [1008]);
      // The server and other sessions are unaffected.
      const other = `/echo/000/${crypto.randomUUID()}`;
      assert.equal((await request(port, 'POST', `${other}/xhr`)).body, 'o\n');
    } finally {
      stream.destroy();
    }
  });

  test('app.ws(path, { sockjs: true }) serves the same handlers to SockJS clients on <path>/sockjs', async () => {
    const sock = sockjs('/both/sockjs', 'xhr-polling');
    await within(sock.opened, 5000, 'open');
    sock.send('through sockjs');
    await waitFor(() => sock.received.includes('through sockjs'), 3000, 'the echo');
    sock.close();
    assert.equal((await request(port, 'GET', '/both/sockjs/info')).status, 200);
  });

  test('a flood of concurrent polls on one session: one waits, every other gets c[2010,...]', async () => {
    const url = `/echo/000/${crypto.randomUUID()}`;
    assert.equal((await request(port, 'POST', `${url}/xhr`)).body, 'o\n');
    const polls = Array.from({ length: 20 }, () => request(port, 'POST', `${url}/xhr`, {}, '', { timeoutMs: 5000 }));
    await new Promise((resolve) => setTimeout(resolve, 300));
    assert.equal((await request(port, 'POST', `${url}/xhr_send`, {}, '["one"]')).status, 204);
    const bodies = (await Promise.all(polls)).map((r) => r.body);
    assert.equal(bodies.filter((b) => b === 'a["one"]\n').length, 1);
    assert.equal(bodies.filter((b) => b === 'c[2010,"Another connection still open"]\n').length, 19);
  });

  test('the upgrade hook decides on the first receiving request: refused with its status, accepted with its data', async () => {
    const refused = await request(port, 'POST', `/guarded/000/${crypto.randomUUID()}/xhr`);
    assert.equal(refused.status, 403);
    assert.match(refused.body, /no token/);
    const url = `/guarded/000/${crypto.randomUUID()}`;
    const headers = { 'X-Token': 'yes', 'X-User': 'ada' };
    assert.equal((await request(port, 'POST', `${url}/xhr`, headers)).body, 'o\n');
    assert.equal((await request(port, 'POST', `${url}/xhr_send`, {}, '["hi"]')).status, 204);
    assert.equal((await request(port, 'POST', `${url}/xhr`)).body, 'a["ada:hi"]\n');
  });
});

test('server.close() closes every HTTP session: attached receivers get c[1001,...], detached ones close at once', async () => {
  const closes = [];
  const { server, port } = await startServer((s) => {
    s.sockjs('/echo', { message: (ws, data) => ws.send(data), close: (ws, code) => void closes.push(code) });
  });
  const detached = `/echo/000/${crypto.randomUUID()}`;
  assert.equal((await request(port, 'POST', `${detached}/xhr`)).body, 'o\n');
  const stream = await Stream.open(port, 'POST', `/echo/000/${crypto.randomUUID()}/xhr_streaming`);
  try {
    assert.equal(await stream.chunk(), PRELUDE);
    assert.equal(await stream.chunk(), 'o\n');
    const started = Date.now();
    const closing = server.close({ drainTimeout: 5000 });
    assert.equal(await stream.chunk(), 'c[1001,"server shutting down"]\n');
    await closing;
    assert.ok(Date.now() - started < 3000, `closed in ${Date.now() - started} ms`);
    assert.deepEqual(closes.sort(), [1001, 1001]);
  } finally {
    stream.destroy();
  }
});
