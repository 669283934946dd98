// Static routes carry response headers (`app.get(path, { body, contentType,
// headers })`): written as given, on GET and HEAD; a Cache-Control replaces
// the default; names, values and reserved headers are checked when the
// route is registered, so nothing can split the response.
import test from 'node:test';
import assert from 'node:assert/strict';
import { Server } from 'switchboard';
import { startServer } from '../../helpers/index.mjs';
import { httpExchange } from './support.mjs';

const CSP = "default-src 'none'; script-src 'self'; style-src 'self'";

test('a static route sends its headers on GET and HEAD, and its body', async (t) => {
  const { server, port } = await startServer((s) => {
    s.get('/page', {
      body: '<p>hi</p>',
      headers: { 'Content-Security-Policy': CSP, 'X-Content-Type-Options': 'nosniff', 'X-Tab': 'a\tb' },
    });
    s.get('/plain', { body: 'ok', contentType: 'text/plain' });
    s.get('/cached', { body: 'c', headers: { 'cache-control': 'public, max-age=60' } });
  });
  t.after(() => server.close({ drainTimeout: 500 }));

  const page = await httpExchange(port, 'GET /page HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
  assert.equal(page.status, 200);
  assert.equal(page.headers['content-security-policy'], CSP);
  assert.equal(page.headers['x-content-type-options'], 'nosniff');
  assert.equal(page.headers['x-tab'], 'a\tb');
  assert.equal(page.headers['content-type'], 'text/html; charset=utf-8');
  assert.equal(page.headers['content-length'], '9');
  assert.equal(page.headers['cache-control'], 'no-cache');
  assert.equal(page.body, '<p>hi</p>');

  const head = await httpExchange(port, 'HEAD /page HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
  assert.equal(head.status, 200);
  assert.equal(head.headers['content-security-policy'], CSP);
  assert.equal(head.headers['x-content-type-options'], 'nosniff');
  assert.equal(head.body, '');

  // Through a real HTTP client too.
  const fetched = await fetch(`http://127.0.0.1:${port}/page`);
  assert.equal(fetched.headers.get('content-security-policy'), CSP);
  assert.equal(await fetched.text(), '<p>hi</p>');

  // A route without headers sends only the server's own.
  const plain = await httpExchange(port, 'GET /plain HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
  assert.deepEqual(Object.keys(plain.headers).sort(), ['cache-control', 'content-length', 'content-type', 'date']);

  // Cache-Control given replaces the default, once.
  const cached = await httpExchange(port, 'GET /cached HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
  assert.equal(cached.headers['cache-control'], 'public, max-age=60');
  assert.equal(cached.raw.toString('latin1').match(/cache-control/gi).length, 1);
});

test('static route headers that could break the response are refused at registration', () => {
  const server = new Server({ workers: 0 });
  const refused = [
    [{ 'X-A': 'one\r\nSet-Cookie: evil=1' }, /control characters/],
    [{ 'X-A': 'line\nbreak' }, /control characters/],
    [{ 'X-A': 'nul\0' }, /control characters/],
    [{ 'X-A': 'café' }, /visible ASCII/],
    [{ 'X-A': 42 }, /must be a string/],
    [{ 'Bad Name': 'x' }, /not an HTTP token/],
    [{ 'X-A:': 'x' }, /not an HTTP token/],
    [{ '': 'x' }, /not an HTTP token/],
    [{ 'Content-Length': '5' }, /sets Content-Length itself/],
    [{ 'transfer-encoding': 'chunked' }, /sets transfer-encoding itself/],
    [{ Connection: 'keep-alive' }, /sets Connection itself/],
    [{ 'Keep-Alive': 'timeout=5' }, /itself/],
    [{ Upgrade: 'websocket' }, /itself/],
    [{ TE: 'trailers' }, /itself/],
    [{ Trailer: 'X' }, /itself/],
    [{ 'Proxy-Connection': 'close' }, /itself/],
    [{ 'Content-Type': 'text/plain' }, /use contentType/],
  ];
  for (const [headers, message] of refused) {
    assert.throws(() => server.get('/x', { body: 'x', headers }), { code: 'ERR_INVALID_OPTION', message }, JSON.stringify(headers));
  }
  assert.throws(() => server.get('/x', { body: 'x', contentType: 'text/html\r\nX-Evil: 1' }), { code: 'ERR_INVALID_OPTION' });
  assert.throws(() => server.get('/x', { body: 'x', headers: 'X-A: 1' }), { code: 'ERR_INVALID_OPTION' });
  assert.throws(() => server.get('x', { body: 'x' }), { code: 'ERR_INVALID_OPTION' });
});

test('static routes with headers from an app module in worker threads', async (t) => {
  const app = new URL('../../fixtures/static-headers-app.mjs', import.meta.url);
  const server = new Server({ app, workers: 1 });
  await server.listen(0, '127.0.0.1');
  t.after(() => server.close({ drainTimeout: 500 }));
  const res = await httpExchange(server.port, 'GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
  assert.equal(res.status, 200);
  assert.equal(res.headers['x-content-type-options'], 'nosniff');
  assert.equal(res.headers['x-worker'], 'yes');
  assert.equal(res.body, 'w');
});
