// maxHeaders: the number of header lines a request head may carry, on both
// sides of the limit, for upgrades and plain requests, with the default and
// with the option set.
import test from 'node:test';
import assert from 'node:assert/strict';
import { Server } from 'switchboard';
import { startServer } from '../../helpers/index.mjs';
import { httpExchange, requestHead } from './support.mjs';

const echo = { message: (ws, data, isBinary) => void ws.send(data, isBinary) };

/** An upgrade request of exactly `count` header lines (the six an upgrade needs, then padding). */
function upgradeWithHeaders(count) {
  const lines = [
    'GET /echo HTTP/1.1',
    'Host: 127.0.0.1',
    'Upgrade: websocket',
    'Connection: Upgrade',
    'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==',
    'Sec-WebSocket-Version: 13',
  ];
  for (let i = lines.length - 1; i < count; i++) lines.push(`X-Pad-${i}: ${i}`);
  assert.equal(lines.length - 1, count);
  return requestHead(lines);
}

/** A plain GET of exactly `count` header lines. */
function getWithHeaders(count) {
  const lines = ['GET /page HTTP/1.1', 'Host: 127.0.0.1'];
  for (let i = 1; i < count; i++) lines.push(`X-Pad-${i}: ${i}`);
  return requestHead(lines);
}

function setup(s) {
  s.ws('/echo', echo);
  s.get('/page', { body: 'page', contentType: 'text/plain' });
}

test('maxHeaders defaults to 64: 64 header lines pass, 65 get 431', async (t) => {
  const { server, port } = await startServer(setup);
  t.after(() => server.close({ drainTimeout: 500 }));

  const ok = await httpExchange(port, upgradeWithHeaders(64), { timeoutMs: 500 });
  assert.equal(ok.status, 101);
  const over = await httpExchange(port, upgradeWithHeaders(65));
  assert.equal(over.status, 431);
  assert.match(over.body, /^ERR_HTTP_HEADERS_TOO_LARGE/);
  assert.ok(over.closedByServer);

  const page = await httpExchange(port, getWithHeaders(64));
  assert.equal(page.status, 200);
  assert.equal(page.body, 'page');
  assert.equal((await httpExchange(port, getWithHeaders(65))).status, 431);
});

test('maxHeaders raised: 100 header lines pass, 101 get 431', async (t) => {
  const { server, port } = await startServer(setup, { maxHeaders: 100 });
  t.after(() => server.close({ drainTimeout: 500 }));
  assert.equal((await httpExchange(port, upgradeWithHeaders(65), { timeoutMs: 500 })).status, 101);
  assert.equal((await httpExchange(port, upgradeWithHeaders(100), { timeoutMs: 500 })).status, 101);
  const over = await httpExchange(port, upgradeWithHeaders(101));
  assert.equal(over.status, 431);
  assert.match(over.body, /^ERR_HTTP_HEADERS_TOO_LARGE/);
});

test('maxHeaders lowered: 8 header lines pass, 9 get 431', async (t) => {
  const { server, port } = await startServer(setup, { maxHeaders: 8 });
  t.after(() => server.close({ drainTimeout: 500 }));
  assert.equal((await httpExchange(port, getWithHeaders(8))).status, 200);
  assert.equal((await httpExchange(port, getWithHeaders(9))).status, 431);
  assert.equal((await httpExchange(port, upgradeWithHeaders(8), { timeoutMs: 500 })).status, 101);
  assert.equal((await httpExchange(port, upgradeWithHeaders(9))).status, 431);
});

test('maxHeaders outside 1..65535 is refused when the server is created', () => {
  for (const maxHeaders of [0, -1, 1.5, 65536, '64']) {
    assert.throws(() => new Server({ workers: 0, maxHeaders }), { code: 'ERR_INVALID_OPTION' }, String(maxHeaders));
  }
  assert.doesNotThrow(() => new Server({ workers: 0, maxHeaders: 65535 }));
});
