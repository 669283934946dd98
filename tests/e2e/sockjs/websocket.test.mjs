// SockJS sessions over WebSocket (`server.sockjs(prefix, behavior)`):
// driven by the real client (sockjs-client 1.6.1 in Node, limited to the
// websocket transport) for what an application sees — open, echo of every
// character SockJS escapes, order, the server's close code and reason,
// channels shared with plain WebSocket connections — and by raw `ws`
// clients on `/{server}/{session}/websocket` and `/websocket` for the frames
// themselves, as the protocol suite (sockjs/sockjs-protocol,
// `sockjs-protocol.py`: Websocket, RawWebsocket, JSONEncoding) checks them.
import test, { describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import SockJS from 'sockjs-client';
import { SendStatus, UpgradeRejection } from 'switchboard';
import { startServer, connect, nextMessage, waitFor, within, upgradeStatus, upgradeRequest } from '../../helpers/index.mjs';
import { HttpConnection } from '../http/support.mjs';

/** Every code point from `from` to `to`, inclusive. */
function codePoints(from, to) {
  let s = '';
  for (let c = from; c <= to; c++) s += String.fromCodePoint(c);
  return s;
}

/** The characters a SockJS server must escape beyond JSON's own (sockjs-protocol, "JSON Unicode Encoding"). */
const SERVER_ESCAPED_ABOVE_255 = codePoints(0x200c, 0x200f) + codePoints(0x2028, 0x202f) + codePoints(0x2060, 0x206f) + codePoints(0xfff0, 0xffff);
const CONTROL = codePoints(0x00, 0x1f);
/** What a hostile peer would send: every escaped range, an astral character, quotes, backslashes, markup. */
const HOSTILE =
  CONTROL +
  SERVER_ESCAPED_ABOVE_255 +
  ' 😀 𝄞 "double" \'single\' back\\slash \\u0041 \\" </script><script>alert(1)</script> ]"], é ✓ \u00ad \ufeff';

/** `\uXXXX`, lowercase, for every character of `s` (the suite's `server_killer_string_esc`). */
function lowercaseEscapes(s) {
  return [...s].map((c) => `\\u${c.codePointAt(0).toString(16).padStart(4, '0')}`).join('');
}

describe('SockJS over WebSocket', () => {
  let server;
  let url;
  let port;
  let base;
  const record = { opens: 0, messages: [], closes: [], closeRoute: [], binarySends: [] };
  /** Every client a test opened, closed at the end whatever happened. */
  const clients = new Set();

  const echo = {
    open: () => void record.opens++,
    message: (ws, data, isBinary) => {
      record.messages.push({ text: data.toString('utf8'), bytes: Buffer.from(data), isBinary, isBuffer: Buffer.isBuffer(data) });
      const text = data.toString('utf8');
      if (isBinary) ws.send(`binary:${data.length}`);
      else if (text.startsWith('send binary ')) {
        // SockJS carries text: a binary send is refused (DROPPED), nothing reaches the client.
        record.binarySends.push({ tag: text, status: ws.send(Buffer.from([0xff, 0x00, 0x01]), true) });
        ws.send(`after ${text}`);
      } else ws.send(text);
    },
    close: (ws, code, reason) => void record.closes.push({ code, reason }),
  };

  before(async () => {
    ({ server, url, port } = await startServer((s) => {
      s.sockjs('/echo', { ...echo });
      s.sockjs('/close', {
        open: (ws) => ws.end(3000, 'Go away!'),
        message: (ws, data) => void record.closeRoute.push({ unexpected: data.toString() }),
        close: (ws, code, reason) => void record.closeRoute.push({ code, reason }),
      });
      s.sockjs('/nows', { ...echo, websocket: false });
      s.sockjs('/hb', { ...echo, heartbeatDelay: 200 });
      s.sockjs('/guarded', {
        upgrade: (req) => {
          if (req.headers['x-token'] !== 'yes') throw new UpgradeRejection(403, 'no token');
          return { user: req.headers['x-user'] };
        },
        message: (ws, data) => ws.send(`${ws.data.user}:${data.toString('utf8')}`),
      });
      s.sockjs('/room', {
        open: (ws) => ws.subscribe('room'),
        message: (ws, data) => ws.send(data.toString('utf8')),
      });
      s.ws('/plain-room', { open: (ws) => ws.subscribe('room') });
    }));
    base = `http://127.0.0.1:${port}`;
  });

  after(async () => {
    for (const client of clients) {
      if (client instanceof SockJS) {
        if (client.readyState < SockJS.CLOSING) client.close();
      } else client.terminate();
    }
    await server.close({ drainTimeout: 1000 });
  });

  /** A sockjs-client limited to the websocket transport, collecting what it receives. */
  function sockjs(path) {
    const sock = new SockJS(`${base}${path}`, null, { transports: ['websocket'] });
    clients.add(sock);
    sock.received = [];
    sock.taken = 0;
    sock.heartbeats = 0;
    sock.onmessage = (e) => sock.received.push(e.data);
    sock.addEventListener('heartbeat', () => sock.heartbeats++);
    sock.closed = new Promise((resolve) => {
      sock.onclose = (e) => resolve({ code: e.code, reason: e.reason, wasClean: e.wasClean });
    });
    sock.opened = new Promise((resolve, reject) => {
      sock.onopen = () => resolve();
      sock.closed.then((e) => reject(new Error(`closed before it opened: ${e.code} ${e.reason}`)));
    });
    sock.opened.catch(() => {});
    return sock;
  }

  /** A sockjs-client that is open. */
  async function openSockjs(path) {
    const sock = sockjs(path);
    await within(sock.opened, 5000, `sockjs-client to open ${path}`);
    assert.equal(sock.transport, 'websocket');
    return sock;
  }

  /** The next message a sockjs-client receives. */
  async function nextSockjs(sock, timeoutMs = 5000) {
    await waitFor(() => sock.received.length > sock.taken, timeoutMs, 'a SockJS message');
    return sock.received[sock.taken++];
  }

  /** A raw `ws` client on a session WebSocket URL (new session id). */
  async function session(prefix = '/echo', options = {}) {
    const ws = await connect(`${url}${prefix}/000/${crypto.randomUUID()}/websocket`, options);
    clients.add(ws);
    return ws;
  }

  /** The next frame's text on a raw client. */
  async function frame(ws, timeoutMs = 5000) {
    const m = await nextMessage(ws, timeoutMs);
    assert.equal(m.isBinary, false, 'SockJS frames are text');
    return m.data.toString('utf8');
  }

  /** The messages of `a[...]` frames until `count` arrived (heartbeats skipped). */
  async function messagesOf(ws, count, timeoutMs = 5000) {
    const out = [];
    while (out.length < count) {
      const text = await frame(ws, timeoutMs);
      if (text === 'h') continue;
      assert.equal(text[0], 'a', `an array frame, got ${JSON.stringify(text)}`);
      const array = JSON.parse(text.slice(1));
      assert.ok(Array.isArray(array) && array.length > 0, `a non-empty array: ${text}`);
      out.push(...array);
    }
    assert.equal(out.length, count, 'no more messages than sent');
    return out;
  }

  describe('with sockjs-client 1.6.1 (websocket transport)', () => {
    test('opens on the websocket transport; the handlers get open, text messages and close', async () => {
      const opensBefore = record.opens;
      const closesBefore = record.closes.length;
      const sock = await openSockjs('/echo');
      await waitFor(() => record.opens === opensBefore + 1, 2000, 'the open handler');
      const token = `hello ${crypto.randomUUID()}`;
      sock.send(token);
      assert.equal(await nextSockjs(sock), token);
      const seen = record.messages.find((m) => m.text === token);
      assert.ok(seen, 'the message handler saw it');
      assert.equal(seen.isBinary, false);
      assert.equal(seen.isBuffer, true);
      assert.deepEqual(seen.bytes, Buffer.from(token, 'utf8'));
      sock.close();
      const closed = await within(sock.closed, 3000, 'the client close');
      assert.equal(closed.code, 1000);
      await waitFor(() => record.closes.length === closesBefore + 1, 3000, 'the close handler');
      assert.equal(typeof record.closes.at(-1).code, 'number');
    });

    test('hostile Unicode survives the round trip: escaped ranges, astral, quotes, backslashes, </script>', async () => {
      const sock = await openSockjs('/echo');
      const tagged = `${crypto.randomUUID()}|${HOSTILE}`;
      sock.send(tagged);
      const back = await nextSockjs(sock);
      assert.equal(back.length, tagged.length);
      assert.equal(back, tagged);
      const seen = record.messages.find((m) => m.text === tagged);
      assert.ok(seen, 'the handler got the string, decoded');
      assert.deepEqual(seen.bytes, Buffer.from(tagged, 'utf8'), 'as its UTF-8 bytes');
      // Each character alone too (a decoder may go wrong at a boundary).
      const singles = [...`${CONTROL}${SERVER_ESCAPED_ABOVE_255}😀"\\`];
      for (const c of singles) sock.send(c);
      for (const c of singles) {
        const got = await nextSockjs(sock);
        assert.equal(got, c, `U+${c.codePointAt(0).toString(16).padStart(4, '0')}`);
      }
      sock.close();
    });

    test('a thousand messages arrive in order, each one handler call', async () => {
      const sock = await openSockjs('/echo');
      const tag = crypto.randomUUID();
      const sent = Array.from({ length: 1000 }, (_, i) => `${tag}:${i}:${'x'.repeat(i % 37)}`);
      for (const m of sent) sock.send(m);
      const got = [];
      for (let i = 0; i < sent.length; i++) got.push(await nextSockjs(sock));
      assert.deepEqual(got, sent);
      const handled = record.messages.filter((m) => m.text.startsWith(`${tag}:`)).map((m) => m.text);
      assert.deepEqual(handled, sent, 'the handler saw each message once, in order');
      sock.close();
    });

    test('the server closes a session: the client sees 3000 "Go away!", the close handler runs', async () => {
      const before = record.closeRoute.length;
      const sock = sockjs('/close');
      let opened = false;
      sock.opened.then(
        () => (opened = true),
        () => {},
      );
      const closed = await within(sock.closed, 5000, 'the close');
      assert.equal(opened, true, 'it opened first (o, then c[...])');
      assert.deepEqual(closed, { code: 3000, reason: 'Go away!', wasClean: true });
      await waitFor(() => record.closeRoute.length === before + 1, 3000, 'the close handler');
      assert.deepEqual(record.closeRoute.at(-1), { code: 3000, reason: 'Go away!' });
    });

    test('websocket: false: a client limited to the websocket transport finds none (2000)', async () => {
      const sock = sockjs('/nows');
      const closed = await within(sock.closed, 5000, 'the client to give up');
      assert.equal(closed.code, 2000);
    });

    test('a publish reaches every subscribed SockJS session and plain WebSocket client', async () => {
      const socks = [await openSockjs('/room'), await openSockjs('/room'), await openSockjs('/room')];
      const plain = await connect(`${url}/plain-room`);
      clients.add(plain);
      await waitFor(() => server.numSubscribers('room') === 4, 3000, 'four subscribers');
      const news = `news ${crypto.randomUUID()}: "quoted" \\ \u2028 \u0000 😀 </script>`;
      assert.equal(server.publish('room', news), 4);
      for (const sock of socks) assert.equal(await nextSockjs(sock), news);
      const raw = await nextMessage(plain);
      assert.equal(raw.isBinary, false);
      assert.equal(raw.data.toString('utf8'), news, 'the plain client gets the bare text, no SockJS framing');
      // The sessions still echo on their own, and a second publish comes after.
      socks[1].send('mine');
      assert.equal(await nextSockjs(socks[1]), 'mine');
      assert.equal(server.publish('room', 'second'), 4);
      for (const sock of socks) assert.equal(await nextSockjs(sock), 'second');
      assert.equal((await nextMessage(plain)).data.toString(), 'second');
      // A binary publish skips the SockJS sessions (SockJS carries text); the plain client gets it.
      const bytes = Buffer.from([0xff, 0xfe, 0x00, 0x01]);
      server.publish('room', bytes, { binary: true });
      const binary = await nextMessage(plain);
      assert.equal(binary.isBinary, true);
      assert.deepEqual(binary.data, bytes);
      assert.equal(server.publish('room', 'third'), 4);
      for (const sock of socks) assert.equal(await nextSockjs(sock), 'third', 'the binary publish did not reach the session');
      assert.equal((await nextMessage(plain)).data.toString(), 'third');
      // Closed sessions leave the channel.
      for (const sock of socks) sock.close();
      await waitFor(() => server.numSubscribers('room') === 1, 3000, 'the sessions to leave the channel');
      plain.terminate();
      await waitFor(() => server.numSubscribers('room') === 0, 3000, 'the plain client to leave the channel');
    });
  });

  describe('raw frames on /{server}/{session}/websocket', () => {
    test('the first frame is o; ["a","b"] comes back as a["a"], a["b"] or a["a","b"]; the handler gets two messages', async () => {
      const ws = await session();
      assert.equal(await frame(ws), 'o');
      const a = `a-${crypto.randomUUID()}`;
      const b = `b-${crypto.randomUUID()}`;
      ws.send(JSON.stringify([a, b]));
      assert.deepEqual(await messagesOf(ws, 2), [a, b]);
      const handled = record.messages.filter((m) => m.text === a || m.text === b);
      assert.deepEqual(handled.map((m) => m.text), [a, b]);
      assert.ok(handled.every((m) => m.isBinary === false));
      ws.send('["a"]');
      assert.equal(await frame(ws), 'a["a"]', 'Websocket.test_transport');
      ws.terminate();
    });

    test('one JSON string (not in an array) is one message', async () => {
      const ws = await session();
      assert.equal(await frame(ws), 'o');
      ws.send('"single \\"one\\""');
      assert.deepEqual(await messagesOf(ws, 1), ['single "one"']);
      ws.terminate();
    });

    test('a binary send on a session is refused with DROPPED and sends nothing', async () => {
      const ws = await session();
      assert.equal(await frame(ws), 'o');
      const tag = `send binary ${crypto.randomUUID()}`;
      ws.send(JSON.stringify([tag]));
      assert.deepEqual(await messagesOf(ws, 1), [`after ${tag}`], 'the next frame is the text sent after it');
      assert.deepEqual(record.binarySends.find((b) => b.tag === tag), { tag, status: SendStatus.DROPPED });
      assert.equal(ws.readyState, 1, 'the session goes on');
      ws.send('["still"]');
      assert.deepEqual(await messagesOf(ws, 1), ['still']);
      ws.terminate();
    });

    test('an empty frame and an empty array are ignored (Websocket.test_empty_frame)', async () => {
      const ws = await session();
      assert.equal(await frame(ws), 'o');
      const before = record.messages.length;
      ws.send('');
      ws.send('[]');
      ws.send('["after"]');
      assert.equal(await frame(ws), 'a["after"]');
      assert.equal(record.messages.length, before + 1, 'only "after" reached the handler');
      assert.equal(ws.readyState, 1);
      ws.terminate();
    });

    test('broken JSON, JSON that is not strings, or a binary frame closes the connection (Websocket.test_broken_json)', async () => {
      const ws = await session();
      assert.equal(await frame(ws), 'o');
      const before = record.messages.length;
      const closesBefore = record.closes.length;
      ws.send('["a');
      // Closed at once, as sockjs-node closes it: the WebSocket close 3000
      // and no c[...] frame before it (the suite reads the next frame and
      // wants the connection gone, not a message).
      assert.equal((await within(ws.closed, 3000, 'the connection to close')).code, 3000);
      assert.deepEqual(
        ws.received.slice(ws.taken).map((m) => m.data.toString()),
        [],
        'nothing after o'
      );
      assert.equal(record.messages.length, before, 'nothing reached the handler');
      await waitFor(
        () => record.closes.slice(closesBefore).some((c) => c.code === 3000 && c.reason === 'ERR_SOCKJS_BROKEN_FRAMING'),
        3000,
        'the close handler to report 3000 ERR_SOCKJS_BROKEN_FRAMING'
      );
      // Neither does JSON that is not strings.
      for (const bad of ['[1]', '{"a":1}', '["a",', 'null', 'x', Buffer.from('["binary"]')]) {
        const other = await session();
        assert.equal(await frame(other), 'o');
        other.send(bad);
        const closed = await within(other.closed, 3000, `the connection to close after ${bad}`);
        assert.equal(closed.code, 3000, `the close code after ${bad}`);
        assert.equal(other.received.length, other.taken, `nothing after o for ${bad}`);
      }
      assert.equal(record.messages.length, before);
    });

    test('the server escapes what SockJS requires, as lowercase \\uXXXX (JSONEncoding)', async () => {
      const ws = await session();
      assert.equal(await frame(ws), 'o');
      // Sent raw (JSON.stringify leaves these characters as they are).
      ws.send(JSON.stringify([SERVER_ESCAPED_ABOVE_255]));
      assert.equal(await frame(ws), `a["${lowercaseEscapes(SERVER_ESCAPED_ABOVE_255)}"]`);
      // Control characters: escaped one way or another, never raw.
      ws.send(JSON.stringify([CONTROL]));
      const text = await frame(ws);
      assert.doesNotMatch(text, /[\u0000-\u001f\u200c-\u200f\u2028-\u202f\u2060-\u206f\ufff0-\uffff]/);
      assert.deepEqual(JSON.parse(text.slice(1)), [CONTROL]);
      // The client's escapes are decoded, surrogate pairs included.
      ws.send('["\\ud83d\\ude00 \\u00e9 \\u2028 \\\\ \\" \\/"]');
      const decoded = await frame(ws);
      assert.deepEqual(JSON.parse(decoded.slice(1)), ['😀 é \u2028 \\ " /']);
      assert.ok(record.messages.some((m) => m.text === '😀 é \u2028 \\ " /'));
      ws.terminate();
    });

    test('a heartbeat h arrives every heartbeatDelay (200 ms), and messages still flow', async () => {
      const ws = await session('/hb');
      assert.equal(await frame(ws), 'o');
      // Counted over a window rather than timed one by one: a busy machine may
      // deliver two beats together, not change how many there were.
      await new Promise((resolve) => setTimeout(resolve, 1300));
      const frames = ws.received.slice(ws.taken).map((m) => m.data.toString());
      ws.taken = ws.received.length;
      assert.ok(frames.every((f) => f === 'h'), `only heartbeats: ${frames}`);
      assert.ok(frames.length >= 3 && frames.length <= 8, `about one per 200 ms in 1.3 s: ${frames.length}`);
      ws.send('["between beats"]');
      assert.deepEqual(await messagesOf(ws, 1), ['between beats']);
      ws.terminate();
    });

    test('no heartbeat on the default delay (25 s) within a second', async () => {
      const ws = await session();
      assert.equal(await frame(ws), 'o');
      await new Promise((resolve) => setTimeout(resolve, 1000));
      assert.equal(ws.received.length, ws.taken, `nothing more: ${ws.received.slice(ws.taken).map((m) => m.data.toString())}`);
      ws.terminate();
    });

    test('closed by the server: o, c[3000,"Go away!"], then the connection ends (Websocket.test_close)', async () => {
      const ws = await session('/close');
      assert.equal(await frame(ws), 'o');
      assert.equal(await frame(ws), 'c[3000,"Go away!"]');
      await within(ws.closed, 3000, 'the connection to end');
      assert.equal(ws.received.length, 2, 'nothing after the close frame');
    });

    test('two connections may share a session id (Websocket.test_reuseSessionId)', async () => {
      const path = `${url}/echo/000/${crypto.randomUUID()}/websocket`;
      const ws1 = await connect(path);
      const ws2 = await connect(path);
      clients.add(ws1).add(ws2);
      assert.equal(await frame(ws1), 'o');
      assert.equal(await frame(ws2), 'o');
      ws1.send('["a"]');
      assert.equal(await frame(ws1), 'a["a"]');
      ws2.send('["b"]');
      assert.equal(await frame(ws2), 'a["b"]');
      ws1.close();
      ws2.close();
      await within(Promise.all([ws1.closed, ws2.closed]), 3000, 'both to close');
      const ws3 = await connect(path);
      clients.add(ws3);
      assert.equal(await frame(ws3), 'o');
      ws3.send('["c"]');
      assert.equal(await frame(ws3), 'a["c"]');
      ws3.terminate();
    });

    test('the upgrade hook can refuse a session or attach data to it', async () => {
      const refused = await upgradeStatus(`${url}/guarded/000/${crypto.randomUUID()}/websocket`);
      assert.equal(refused.status, 403);
      const ws = await session('/guarded', { headers: { 'x-token': 'yes', 'x-user': 'ann' } });
      assert.equal(await frame(ws), 'o');
      ws.send('["hi"]');
      assert.deepEqual(await messagesOf(ws, 1), ['ann:hi']);
      ws.terminate();
    });

    test('ids that contain a dot or are empty: 404 on upgrade', async () => {
      for (const ids of ['/a./a', '/a/a.', '/.a/b', '/a/b.c']) {
        const r = await upgradeStatus(`${url}/echo${ids}/websocket`);
        assert.equal(r.status, 404, ids);
      }
      // Paths a URL parser would normalise, sent byte for byte.
      for (const ids of ['/./.', '//', '/a/', '//a']) {
        const connection = await HttpConnection.open(port);
        try {
          connection.write(upgradeRequest(`/echo${ids}/websocket`));
          const r = await connection.response({ timeoutMs: 3000, headOnly: true });
          assert.equal(r?.status, 404, ids);
        } finally {
          connection.destroy();
        }
      }
    });

    test('websocket: false: no session WebSocket', async () => {
      assert.equal((await upgradeStatus(`${url}/nows/000/${crypto.randomUUID()}/websocket`)).status, 404);
      assert.equal((await upgradeStatus(`${url}/nows/websocket`)).status, 404);
    });
  });

  describe('raw WebSocket on /websocket', () => {
    test('plain text in and out: no o frame, no JSON (RawWebsocket.test_transport)', async () => {
      const ws = await connect(`${url}/echo/websocket`);
      clients.add(ws);
      ws.send('Hello world!\uffff');
      const reply = await nextMessage(ws);
      assert.equal(reply.isBinary, false);
      assert.equal(reply.data.toString('utf8'), 'Hello world!\uffff');
      // Text that looks like SockJS framing is just text here.
      ws.send('["a"]');
      assert.equal((await nextMessage(ws)).data.toString(), '["a"]');
      assert.ok(record.messages.some((m) => m.text === '["a"]' && m.isBinary === false), 'the handler got it as is');
      ws.send(HOSTILE);
      assert.equal((await nextMessage(ws)).data.toString('utf8'), HOSTILE);
      // A binary message reaches the handler as binary, unchanged.
      const bytes = crypto.randomBytes(64);
      bytes[0] = 0xff;
      ws.send(bytes);
      assert.equal((await nextMessage(ws)).data.toString(), 'binary:64');
      const seen = record.messages.find((m) => m.isBinary && m.bytes.equals(bytes));
      assert.ok(seen, 'the handler got the bytes with isBinary true');
      ws.terminate();
    });

    test('closed by the server with a WebSocket close frame 3000 "Go away!" (RawWebsocket.test_close)', async () => {
      const ws = await connect(`${url}/close/websocket`);
      clients.add(ws);
      const closed = await within(ws.closed, 3000, 'the close');
      assert.deepEqual(closed, { code: 3000, reason: 'Go away!' });
      assert.equal(ws.received.length, 0, 'no SockJS frames on the raw endpoint');
    });
  });
});
