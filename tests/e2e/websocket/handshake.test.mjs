// The opening handshake: the 101 response, every rejection with its status,
// static routes, limits and timeouts, origins, subprotocols and the
// JavaScript `upgrade` hook.
import test, { describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { UpgradeRejection } from 'switchboard';
import { startServer, connect, nextMessage, waitFor, WebSocket, clientFrame } from '../../helpers/index.mjs';
import { httpExchange, requestHead, RawClient, OP, sleep, within, rejectedUpgrade } from './support.mjs';

const RFC_KEY = 'dGhlIHNhbXBsZSBub25jZQ==';
const RFC_ACCEPT = 's3pPLMBiTxaQ9kYGzzhZRbK+xOo=';

const echo = { message: (ws, data, isBinary) => void ws.send(data, isBinary) };

/** The lines of a valid upgrade request; `change` edits them by header name. */
function upgradeLines(path = '/echo', change = {}) {
  const base = [
    ['request', `GET ${path} HTTP/1.1`],
    ['host', 'Host: 127.0.0.1'],
    ['upgrade', 'Upgrade: websocket'],
    ['connection', 'Connection: Upgrade'],
    ['key', `Sec-WebSocket-Key: ${RFC_KEY}`],
    ['version', 'Sec-WebSocket-Version: 13'],
  ];
  const lines = [];
  for (const [name, line] of base) {
    if (name in change) {
      if (change[name] !== null) lines.push(change[name]);
    } else lines.push(line);
  }
  for (const extra of change.extra ?? []) lines.push(extra);
  return requestHead(lines);
}

describe('handshake', () => {
  let server;
  let url;
  let port;
  const handlerErrors = [];
  const hookRequests = [];
  const seen = { open: [], message: [], close: [] };
  const protoServerSide = [];

  before(async () => {
    ({ server, url, port } = await startServer((s) => {
      s.ws('/echo', echo);
      s.ws('/proto', {
        protocols: ['chat.v2', 'chat.v1'],
        open: (ws) => void protoServerSide.push(ws.protocol),
        ...echo,
      });
      s.ws('/origin', { allowedOrigins: ['https://good.example'], ...echo });
      s.ws('/hook/*', {
        protocols: ['p2'],
        upgrade: (req) => {
          hookRequests.push(req);
          return { user: req.searchParams.get('user'), token: req.headers['x-token'] };
        },
        open: (ws) => void seen.open.push(ws.data),
        message: (ws, data) => {
          seen.message.push(ws.data);
          ws.send(`${ws.data.user}:${data}`);
        },
        close: (ws) => void seen.close.push(ws.data),
      });
      s.ws('/reject', { upgrade: (_req, res) => res.reject(401, 'nope') });
      s.ws('/rejection', {
        upgrade: () => {
          throw new UpgradeRejection(403);
        },
      });
      s.ws('/throws', {
        upgrade: () => {
          throw new Error('hook exploded');
        },
      });
      s.ws('/async', {
        upgrade: async (req) => {
          await sleep(50);
          if (req.searchParams.get('deny') === '1') throw new UpgradeRejection(429, 'slow down');
          return { late: true };
        },
        message: (ws) => void ws.send(JSON.stringify(ws.data)),
      });
      s.ws('/choose', {
        protocols: ['a', 'b'],
        upgrade: (_req, res) => res.accept({ chosen: true }, { protocol: 'b' }),
        message: (ws) => void ws.send(`${ws.protocol}:${JSON.stringify(ws.data)}`),
      });
      s.get('/health', { body: 'ok' });
      s.get('/page', { body: '<h1>hi</h1>' });
    }));
    server.on('handlerError', (error, info) => handlerErrors.push({ error, info }));
  });

  after(async () => {
    await server.close({ drainTimeout: 1000 });
  });

  test('a ws client upgrades and exchanges messages', async () => {
    const ws = await connect(`${url}/echo`);
    try {
      assert.equal(ws.readyState, WebSocket.OPEN);
      assert.equal(ws.protocol, '');
      ws.send('hello');
      const reply = await nextMessage(ws);
      assert.equal(reply.data.toString(), 'hello');
      assert.equal(reply.isBinary, false);
    } finally {
      ws.terminate();
    }
  });

  test('the 101 response carries the RFC 6455 accept value and nothing unasked', async () => {
    const client = await RawClient.open(port, '/echo');
    try {
      assert.equal(client.status, 101);
      const h = client.response.headers;
      assert.equal(h['upgrade'].toLowerCase(), 'websocket');
      assert.match(h['connection'], /\bupgrade\b/i);
      assert.equal(h['sec-websocket-accept'], RFC_ACCEPT);
      assert.equal(h['sec-websocket-protocol'], undefined);
      assert.equal(h['sec-websocket-extensions'], undefined);
      assert.equal(client.response.rest.length, 0, 'nothing follows the head before any frame');
    } finally {
      client.destroy();
    }
  });

  test('the accept value follows SHA-1(key + GUID) for any key', async () => {
    const key = crypto.randomBytes(16).toString('base64');
    const expected = crypto
      .createHash('sha1')
      .update(key + '258EAFA5-E914-47DA-95CA-C5AB0DC85B11')
      .digest('base64');
    const res = await httpExchange(port, upgradeLines('/echo', { key: `Sec-WebSocket-Key: ${key}` }), { timeoutMs: 500 });
    assert.equal(res.status, 101);
    assert.equal(res.headers['sec-websocket-accept'], expected);
  });

  test('frames sent together with the request head are processed', async () => {
    const client = await RawClient.open(port, '/echo', { trailing: clientFrame(OP.TEXT, 'early bird') });
    try {
      assert.equal(client.status, 101);
      const f = await client.nextFrame({ opcode: OP.TEXT });
      assert.equal(f.payload.toString(), 'early bird');
    } finally {
      client.destroy();
    }
  });

  test('a non-GET upgrade gets 405 with Allow: GET', async () => {
    const res = await httpExchange(port, upgradeLines('/echo', { request: 'POST /echo HTTP/1.1' }));
    assert.equal(res.status, 405);
    assert.equal(res.headers['allow'], 'GET');
    assert.match(res.body, /^ERR_WS_BAD_METHOD/);
    assert.ok(res.closedByServer, 'the server closes after a rejection');
  });

  test('a missing Upgrade header on a WebSocket path gets 426 with Upgrade: websocket', async () => {
    const res = await httpExchange(port, upgradeLines('/echo', { upgrade: null }));
    assert.equal(res.status, 426);
    assert.equal(res.headers['upgrade'], 'websocket');
    assert.match(res.body, /^ERR_WS_UPGRADE_REQUIRED/);
  });

  test('an Upgrade to another protocol is a plain request: 426 on a WebSocket path', async () => {
    // A server may ignore an Upgrade it does not speak (RFC 9110 §7.8).
    const res = await httpExchange(port, upgradeLines('/echo', { upgrade: 'Upgrade: h2c' }));
    assert.equal(res.status, 426);
    assert.equal(res.headers['upgrade'], 'websocket');
    assert.match(res.body, /^ERR_WS_UPGRADE_REQUIRED/);
  });

  test('a Connection header without the upgrade token gets 426', async () => {
    // Without it the request does not ask to upgrade (RFC 9110 §7.8): a
    // plain request on a WebSocket path.
    for (const connection of [null, 'Connection: keep-alive', 'Connection: upgraded']) {
      const res = await httpExchange(port, upgradeLines('/echo', { connection }));
      assert.equal(res.status, 426, `Connection: ${connection}`);
      assert.equal(res.headers['upgrade'], 'websocket');
      assert.match(res.body, /^ERR_WS_UPGRADE_REQUIRED/);
    }
    // The token is found in a list, case-insensitively.
    const ok = await httpExchange(port, upgradeLines('/echo', { connection: 'Connection: keep-alive, UPGRADE' }), {
      timeoutMs: 500,
    });
    assert.equal(ok.status, 101);
  });

  test('a missing or malformed Sec-WebSocket-Key gets 400', async () => {
    const keys = [
      null,
      'Sec-WebSocket-Key: short',
      'Sec-WebSocket-Key: !!!!!!!!!!!!!!!!!!!!!!==',
      // 24 characters of base64 that decode to 17 bytes are not a key.
      `Sec-WebSocket-Key: ${Buffer.alloc(18).toString('base64')}`,
    ];
    for (const key of keys) {
      const res = await httpExchange(port, upgradeLines('/echo', { key }));
      assert.equal(res.status, 400, `key line ${key}`);
      assert.match(res.body, /^ERR_WS_BAD_KEY/);
    }
    const twice = await httpExchange(
      port,
      upgradeLines('/echo', { extra: [`Sec-WebSocket-Key: ${RFC_KEY}`] }),
    );
    assert.equal(twice.status, 400, 'a repeated key is rejected');
  });

  test('a version other than 13 gets 426 with Sec-WebSocket-Version: 13', async () => {
    for (const version of ['Sec-WebSocket-Version: 8', null]) {
      const res = await httpExchange(port, upgradeLines('/echo', { version }));
      assert.equal(res.status, 426, String(version));
      assert.equal(res.headers['sec-websocket-version'], '13');
      assert.match(res.body, /^ERR_WS_BAD_VERSION/);
    }
    // The ws client can be made to send another version too.
    const viaClient = await rejectedUpgrade(`${url}/echo`, { protocolVersion: 8 });
    assert.equal(viaClient.status, 426);
    assert.equal(viaClient.headers['sec-websocket-version'], '13');
  });

  test('an unknown path gets 404', async () => {
    const res = await rejectedUpgrade(`${url}/nowhere`);
    assert.equal(res.status, 404);
    assert.match(res.body, /^ERR_WS_NO_ROUTE/);
    const plain = await httpExchange(port, 'GET /nowhere HTTP/1.1\r\nHost: x\r\n\r\n');
    assert.equal(plain.status, 404);
  });

  test('a plain GET on a WebSocket path gets 426', async () => {
    const res = await httpExchange(port, 'GET /echo HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
    assert.equal(res.status, 426);
    assert.equal(res.headers['upgrade'], 'websocket');
    assert.ok(!res.closedByServer, 'a plain request keeps its connection alive');
  });

  test('a plain GET on a static route gets its body', async () => {
    const res = await httpExchange(port, 'GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
    assert.equal(res.status, 200);
    assert.equal(res.body, 'ok');
    assert.equal(res.headers['content-length'], '2');
    assert.equal(res.headers['content-type'], 'text/html; charset=utf-8');
    assert.ok(!res.closedByServer, 'a plain request keeps its connection alive');

    const page = await fetch(`http://127.0.0.1:${port}/page`);
    assert.equal(page.status, 200);
    assert.equal(await page.text(), '<h1>hi</h1>');

    const head = await httpExchange(port, 'HEAD /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
    assert.equal(head.status, 200);
    assert.equal(head.headers['content-length'], '2');
    assert.equal(head.body, '', 'HEAD has no body');

    const post = await httpExchange(port, 'POST /health HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\n\r\n');
    assert.equal(post.status, 405);
    assert.equal(post.headers['allow'], 'GET, HEAD');
  });

  test('the default head limit is 16 KiB: 12 KiB upgrade, 17 KiB get 431', async () => {
    const ok = await httpExchange(port, upgradeLines('/echo', { extra: [`X-Pad: ${'a'.repeat(12 * 1024)}`] }), {
      timeoutMs: 500,
    });
    assert.equal(ok.status, 101, 'a 12 KiB head (large cookies) is accepted');
    const res = await httpExchange(port, upgradeLines('/echo', { extra: [`X-Pad: ${'a'.repeat(17 * 1024)}`] }));
    assert.equal(res.status, 431);
    assert.match(res.body, /^ERR_HTTP_HEADERS_TOO_LARGE/);
  });

  test('an origin outside the allow-list gets 403', async () => {
    const bad = await rejectedUpgrade(`${url}/origin`, { origin: 'https://evil.example' });
    assert.equal(bad.status, 403);
    assert.match(bad.body, /^ERR_WS_ORIGIN_REJECTED/);
    const none = await rejectedUpgrade(`${url}/origin`);
    assert.equal(none.status, 403, 'no Origin is not an allowed origin');
    const good = await connect(`${url}/origin`, { origin: 'https://good.example' });
    good.send('in');
    assert.equal((await nextMessage(good)).data.toString(), 'in');
    good.terminate();
    // Routes without a list take any origin.
    const any = await connect(`${url}/echo`, { origin: 'https://evil.example' });
    any.terminate();
  });

  test('subprotocols: the first one the client offers that the route speaks is chosen', async () => {
    protoServerSide.length = 0;
    const ws = await connect(`${url}/proto`, { protocols: ['x-unknown', 'chat.v1', 'chat.v2'] });
    try {
      assert.equal(ws.protocol, 'chat.v1');
      await waitFor(() => protoServerSide.length === 1, 2000, 'open on the server');
      assert.deepEqual(protoServerSide, ['chat.v1']);
    } finally {
      ws.terminate();
    }
    const other = await connect(`${url}/proto`, { protocols: ['chat.v2', 'chat.v1'] });
    assert.equal(other.protocol, 'chat.v2');
    other.terminate();
  });

  test('subprotocols: none in common means no Sec-WebSocket-Protocol in the 101', async () => {
    const client = await RawClient.open(port, '/proto', { extra: 'Sec-WebSocket-Protocol: foo, bar\r\n' });
    try {
      assert.equal(client.status, 101);
      assert.equal(client.response.headers['sec-websocket-protocol'], undefined);
    } finally {
      client.destroy();
    }
    const malformed = await httpExchange(port, upgradeLines('/proto', { extra: ['Sec-WebSocket-Protocol: a, a'] }));
    assert.equal(malformed.status, 400, 'a repeated subprotocol is malformed');
    assert.match(malformed.body, /^ERR_WS_BAD_PROTOCOL/);
  });

  test('the upgrade hook sees the request and its data reaches every handler', async () => {
    hookRequests.length = 0;
    for (const list of Object.values(seen)) list.length = 0;
    const ws = await connect(`${url}/hook/room1?user=alice&x=1&x=2`, {
      headers: { 'X-Token': 'abc', 'X-Multi': 'one' },
      protocols: ['p1', 'p2'],
      handshakeTimeout: 3000,
    }).catch((error) => {
      throw new Error(`upgrade through the hook failed: ${error.message}`);
    });
    try {
      assert.equal(hookRequests.length, 1);
      const req = hookRequests[0];
      assert.equal(req.path, '/hook/room1');
      assert.equal(req.query, 'user=alice&x=1&x=2');
      assert.ok(req.searchParams instanceof URLSearchParams);
      assert.equal(req.searchParams.get('user'), 'alice');
      assert.deepEqual(req.searchParams.getAll('x'), ['1', '2']);
      assert.equal(req.headers['x-token'], 'abc');
      assert.equal(req.headers['x-multi'], 'one');
      assert.equal(req.headers['upgrade'], 'websocket');
      assert.equal(req.headers['host'], `127.0.0.1:${port}`);
      assert.ok(!('X-Token' in req.headers), 'header names are lowercase');
      assert.match(req.remoteAddress, /^127\.0\.0\.1:\d+$/);
      assert.equal(Number(req.remoteAddress.split(':')[1]), ws._socket.localPort);
      assert.deepEqual(req.protocols, ['p1', 'p2']);
      assert.equal(ws.protocol, 'p2');

      ws.send('hi');
      assert.equal((await nextMessage(ws)).data.toString(), 'alice:hi');
      ws.close(1000);
      await within(3000, ws.closed, 'close');
      await waitFor(() => seen.close.length === 1, 2000, 'close handler');
      const expected = { user: 'alice', token: 'abc' };
      assert.deepEqual(seen.open, [expected]);
      assert.deepEqual(seen.message, [expected]);
      assert.deepEqual(seen.close, [expected]);
      assert.ok(seen.open[0] === seen.close[0], 'the same object in every handler');
    } finally {
      ws.terminate();
    }
  });

  test('each connection gets its own hook data', async () => {
    const a = await connect(`${url}/hook/x?user=ann`);
    const b = await connect(`${url}/hook/x?user=bob`);
    try {
      a.send('1');
      b.send('2');
      assert.equal((await nextMessage(a)).data.toString(), 'ann:1');
      assert.equal((await nextMessage(b)).data.toString(), 'bob:2');
    } finally {
      a.terminate();
      b.terminate();
    }
  });

  test('res.accept(data, { protocol }) chooses the subprotocol', async () => {
    const ws = await connect(`${url}/choose`, { protocols: ['a', 'b'] });
    try {
      assert.equal(ws.protocol, 'b');
      ws.send('?');
      assert.equal((await nextMessage(ws)).data.toString(), 'b:{"chosen":true}');
    } finally {
      ws.terminate();
    }
  });

  test('res.reject(401, reason) answers 401 with the reason', async () => {
    const res = await rejectedUpgrade(`${url}/reject`);
    assert.equal(res.status, 401);
    assert.equal(res.body, 'nope');
  });

  test('throwing UpgradeRejection(403) answers 403 without a handlerError', async () => {
    const before = handlerErrors.length;
    const res = await rejectedUpgrade(`${url}/rejection`);
    assert.equal(res.status, 403);
    await sleep(50);
    assert.equal(handlerErrors.length, before);
  });

  test('a hook throwing another error answers 500 and emits handlerError', async () => {
    const before = handlerErrors.length;
    const res = await rejectedUpgrade(`${url}/throws`);
    assert.equal(res.status, 500);
    await waitFor(() => handlerErrors.length > before, 2000, 'handlerError');
    const { error, info } = handlerErrors[handlerErrors.length - 1];
    assert.equal(error.message, 'hook exploded');
    assert.equal(info.handler, 'upgrade');
    assert.equal(info.worker, 0);
    assert.equal(typeof info.connection, 'number');
    // The server keeps serving.
    const ws = await connect(`${url}/echo`);
    ws.terminate();
  });

  test('an async hook may await before deciding', async () => {
    const started = Date.now();
    const ws = await connect(`${url}/async`);
    try {
      assert.ok(Date.now() - started >= 40, 'the 101 waited for the hook');
      ws.send('?');
      assert.equal((await nextMessage(ws)).data.toString(), '{"late":true}');
    } finally {
      ws.terminate();
    }
    const denied = await rejectedUpgrade(`${url}/async?deny=1`);
    assert.equal(denied.status, 429);
    assert.equal(denied.body, 'slow down');
  });

  test('rejections are counted in stats().handshakesRejected', async () => {
    const before = server.stats().handshakesRejected;
    await rejectedUpgrade(`${url}/nowhere`);
    await rejectedUpgrade(`${url}/reject`);
    await waitFor(() => server.stats().handshakesRejected >= before + 2, 2000, 'the counter');
    assert.equal(server.stats().handshakesRejected, before + 2);
  });
});

describe('handshake limits and timeouts', () => {
  test('maxHeadBytes: a larger head gets 431, a smaller one upgrades', async () => {
    const { server, port } = await startServer((s) => s.ws('/echo', echo), { maxHeadBytes: 1024 });
    try {
      const big = await httpExchange(port, upgradeLines('/echo', { extra: [`X-Pad: ${'a'.repeat(1200)}`] }));
      assert.equal(big.status, 431);
      // Sent in pieces: the limit applies to the head as it accumulates.
      const small = await httpExchange(port, upgradeLines('/echo', { extra: [`X-Pad: ${'a'.repeat(600)}`] }), {
        timeoutMs: 500,
      });
      assert.equal(small.status, 101);
    } finally {
      await server.close({ drainTimeout: 500 });
    }
  });

  test('handshakeTimeout: a client that never finishes its head gets 408', async () => {
    const { server, port } = await startServer((s) => s.ws('/echo', echo), { handshakeTimeout: 0.3 });
    try {
      const partial = await httpExchange(port, 'GET /echo HTTP/1.1\r\nHost: 127.0.0.1\r\n', { timeoutMs: 4000 });
      assert.equal(partial.status, 408);
      assert.match(partial.body, /^ERR_HTTP_REQUEST_TIMEOUT/);
      assert.ok(partial.closedByServer);
      assert.ok(partial.elapsedMs >= 250, `answered after ${partial.elapsedMs} ms`);
      assert.ok(partial.elapsedMs < 2500, `answered after ${partial.elapsedMs} ms`);

      const silent = await httpExchange(port, null, { timeoutMs: 4000 });
      assert.equal(silent.status, 408);
      assert.ok(silent.elapsedMs >= 250 && silent.elapsedMs < 2500, `answered after ${silent.elapsedMs} ms`);

      // A client that takes a while but finishes in time upgrades, and the
      // timeout no longer applies once the connection is open.
      const client = await RawClient.open(port, '/echo');
      await sleep(500);
      client.send(clientFrame(OP.TEXT, 'after the deadline'));
      const f = await client.nextFrame({ opcode: OP.TEXT });
      assert.equal(f.payload.toString(), 'after the deadline');
      client.destroy();
    } finally {
      await server.close({ drainTimeout: 500 });
    }
  });

  test('upgradeTimeout: a hook that never answers gets 503', async () => {
    let asked = 0;
    const { server, url } = await startServer(
      (s) =>
        s.ws('/never', {
          upgrade: () => {
            asked++;
            return new Promise(() => {});
          },
        }),
      { upgradeTimeout: 0.3 },
    );
    try {
      const started = Date.now();
      const res = await rejectedUpgrade(`${url}/never`);
      const elapsed = Date.now() - started;
      assert.equal(res.status, 503);
      assert.match(res.body, /^ERR_UPGRADE_TIMEOUT/);
      assert.equal(asked, 1);
      assert.ok(elapsed >= 250 && elapsed < 3000, `answered after ${elapsed} ms`);
    } finally {
      await server.close({ drainTimeout: 500 });
    }
  });

  test('maxConnections: connections beyond the limit get 503 until one leaves', async () => {
    const { server, url } = await startServer((s) => s.ws('/echo', echo), { maxConnections: 2 });
    const clients = [];
    try {
      clients.push(await connect(`${url}/echo`));
      clients.push(await connect(`${url}/echo`));
      const third = await rejectedUpgrade(`${url}/echo`);
      assert.equal(third.status, 503);
      assert.match(third.body, /^ERR_SERVER_AT_CAPACITY/);
      // The two admitted connections still work.
      for (const ws of clients) {
        ws.send('x');
        assert.equal((await nextMessage(ws)).data.toString(), 'x');
      }
      // One leaves: its slot frees once its connection is over.
      clients[0].close(1000);
      await within(3000, clients[0].closed, 'close');
      let admitted;
      await waitFor(
        async () => {
          try {
            admitted = await connect(`${url}/echo`);
            return true;
          } catch {
            return false;
          }
        },
        4000,
        'a free slot',
      );
      clients.push(admitted);
      admitted.send('y');
      assert.equal((await nextMessage(admitted)).data.toString(), 'y');
    } finally {
      for (const ws of clients) ws.terminate();
      await server.close({ drainTimeout: 500 });
    }
  });
});
