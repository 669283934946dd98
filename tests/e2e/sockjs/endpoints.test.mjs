// SockJS services (`server.sockjs(prefix, behavior)`), their HTTP side:
// the greeting, `/info` and its preflight, the iframe page and its 304, the
// 404s and 405s of the URL layout, the answers of the WebSocket URLs to
// plain requests, the options (`websocket`, `cookieNeeded`, `sockjsUrl`),
// the session transports of later phases (which must not hurt anything
// yet), and the example server (examples/sockjs) as the protocol's own test
// suite (sockjs/sockjs-protocol, `sockjs-protocol.py`) drives it.
//
// Requests are written byte for byte on raw connections: paths such as
// `//`, `/./.` or `/iframe-/.html` must reach the server unnormalised.
import test, { describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { once } from 'node:events';
import { startServer, connect, nextMessage, upgradeStatus, upgradeRequest } from '../../helpers/index.mjs';
import { startExample } from '../../helpers/examples.mjs';
import { Server } from 'switchboard';
import { HttpConnection } from '../http/support.mjs';
import { NO_CACHE, contentType, rawRequest, request } from './support.mjs';

const GREETING = 'Welcome to SockJS!\n';
const CUSTOM_CLIENT_URL = '/static/sockjs.min.js?v=1.6.1&t=2';
const DEFAULT_CLIENT_URL = /^https:\/\/cdn\.jsdelivr\.net\/npm\/sockjs-client@1[^"]*\/sockjs(\.min)?\.js$/;

/** Only the status line and headers of a response (for answers that may stream); the connection is dropped after. */
async function requestHead(port, method, target, headers = {}, body = '', { timeoutMs = 3000 } = {}) {
  const connection = await HttpConnection.open(port);
  try {
    connection.write(rawRequest(method, target, headers, body));
    const response = await connection.response({ timeoutMs, headOnly: true });
    assert.ok(response, `${method} ${target}: no response head within ${timeoutMs} ms`);
    return response;
  } finally {
    connection.destroy();
  }
}

/** The status of a raw upgrade request for `target` (for paths a URL parser would normalise). */
async function rawUpgradeStatus(port, target) {
  const connection = await HttpConnection.open(port);
  try {
    connection.write(upgradeRequest(target));
    const response = await connection.response({ timeoutMs: 3000, headOnly: true });
    assert.ok(response, `upgrade ${target}: no response within 3 s`);
    return response.status;
  } finally {
    connection.destroy();
  }
}

/** The protocol suite's `verify405`: status, an `Allow`, no `Content-Type`, no body. */
function assert405(response, what, ...methods) {
  assert.equal(response.status, 405, `${what}: status`);
  assert.ok(response.headers.allow, `${what}: an Allow header`);
  for (const method of methods) {
    assert.ok(
      response.headers.allow.split(',').map((m) => m.trim()).includes(method),
      `${what}: Allow (${response.headers.allow}) lists ${method}`,
    );
  }
  assert.equal(response.headers['content-type'], undefined, `${what}: no Content-Type`);
  assert.equal(response.body, '', `${what}: no body`);
}

/** The protocol suite's `verify_cors`. */
function assertCors(response, origin, what = '') {
  if (origin) {
    assert.equal(response.headers['access-control-allow-origin'], origin, `${what} Access-Control-Allow-Origin`);
    assert.equal(response.headers['access-control-allow-credentials'], 'true', `${what} Access-Control-Allow-Credentials`);
  } else {
    assert.equal(response.headers['access-control-allow-origin'], '*', `${what} Access-Control-Allow-Origin`);
    assert.equal(response.headers['access-control-allow-credentials'], undefined, `${what} no Access-Control-Allow-Credentials`);
  }
}

/** `max-age` of a `Cache-Control` value, or NaN. */
function maxAge(cacheControl = '') {
  return Number(/(?:^|[,\s])max-age=(\d+)/.exec(cacheControl)?.[1]);
}

describe('SockJS endpoints', () => {
  let server;
  let port;
  let url;
  const messages = [];

  const echo = {
    message: (ws, data) => {
      messages.push(data.toString('utf8'));
      ws.send(data.toString('utf8'));
    },
  };

  before(async () => {
    ({ server, port, url } = await startServer((s) => {
      s.sockjs('/echo', { ...echo });
      s.sockjs('/nows', { ...echo, websocket: false });
      s.sockjs('/cookie', { ...echo, cookieNeeded: true });
      s.sockjs('/custom', { ...echo, sockjsUrl: CUSTOM_CLIENT_URL });
      s.sockjs('/a/b/c/deep', { ...echo });
    }));
  });

  after(async () => {
    await server.close({ drainTimeout: 1000 });
  });

  describe('greeting', () => {
    test('GET prefix and prefix/ answer the greeting as text/plain, no cookie', async () => {
      for (const target of ['/echo', '/echo/', '/a/b/c/deep', '/a/b/c/deep/']) {
        const r = await request(port, 'GET', target);
        assert.equal(r.status, 200, target);
        assert.equal(contentType(r), 'text/plain;charset=UTF-8', target);
        assert.equal(r.body, GREETING, target);
        assert.equal(r.headers['content-length'], '19', target);
        assert.equal(r.headers['set-cookie'], undefined, target);
      }
    });

    test('other paths under the prefix are 404 (BaseUrlGreeting.test_notFound)', async () => {
      for (const suffix of ['/a', '/a.html', '//', '///', '/a/a', '/a/a/', '/a/', '/info/x', '/websocket/x', '/a/b/c/d']) {
        const r = await request(port, 'GET', `/echo${suffix}`);
        assert.equal(r.status, 404, `/echo${suffix}`);
      }
    });

    test('a path that merely starts with the prefix is not the service', async () => {
      const r = await request(port, 'GET', '/echoes');
      assert.equal(r.status, 404);
      assert.notEqual(r.body, GREETING);
    });
  });

  describe('/info', () => {
    test('GET with an Origin: JSON capabilities, never cached, CORS with credentials, no cookie', async () => {
      const r = await request(port, 'GET', '/echo/info', { Origin: 'test' });
      assert.equal(r.status, 200);
      assert.equal(contentType(r), 'application/json;charset=UTF-8');
      assert.equal(r.headers['set-cookie'], undefined);
      assert.equal(r.headers['cache-control'], NO_CACHE);
      assert.equal(r.headers.expires, undefined);
      assert.equal(r.headers['last-modified'], undefined);
      assertCors(r, 'test');
      const info = JSON.parse(r.body);
      assert.deepEqual(Object.keys(info).sort(), ['cookie_needed', 'entropy', 'origins', 'websocket']);
      assert.equal(info.websocket, true);
      assert.equal(info.cookie_needed, false);
      assert.deepEqual(info.origins, ['*:*']);
      assert.ok(Number.isInteger(info.entropy), `entropy ${info.entropy} is an integer`);
      assert.ok(info.entropy >= 0 && info.entropy <= 0xffffffff, `entropy ${info.entropy} is a u32`);
    });

    test('GET without an Origin: Access-Control-Allow-Origin * and no credentials', async () => {
      const r = await request(port, 'GET', '/echo/info');
      assert.equal(r.status, 200);
      assertCors(r, null);
      assert.equal(JSON.parse(r.body).websocket, true);
    });

    test('GET with Origin null echoes null (pages served from file://)', async () => {
      const r = await request(port, 'GET', '/echo/info', { Origin: 'null' });
      assert.equal(r.status, 200);
      assertCors(r, 'null');
    });

    test('/info/ with a trailing slash and with a query is /info too', async () => {
      for (const target of ['/echo/info/', '/echo/info?t=1234']) {
        const r = await request(port, 'GET', target);
        assert.equal(r.status, 200, target);
        assert.deepEqual(JSON.parse(r.body).origins, ['*:*'], target);
      }
    });

    test('entropy differs from one request to the next', async () => {
      const a = JSON.parse((await request(port, 'GET', '/echo/info')).body).entropy;
      const b = JSON.parse((await request(port, 'GET', '/echo/info')).body).entropy;
      const c = JSON.parse((await request(port, 'GET', '/echo/info')).body).entropy;
      assert.ok(Number.isInteger(a) && Number.isInteger(b) && Number.isInteger(c));
      assert.notEqual(a, b);
      assert.equal(new Set([a, b, c]).size, 3, `three draws, three values: ${a} ${b} ${c}`);
    });

    test('OPTIONS is a cacheable CORS preflight answer (InfoTest.test_options)', async () => {
      for (const origin of ['test', 'null']) {
        const r = await request(port, 'OPTIONS', '/echo/info', {
          'Access-Control-Request-Method': 'OPTIONS, GET',
          Origin: origin,
        });
        assert.equal(r.status, 204, origin);
        assert.match(r.headers['cache-control'] ?? '', /public/, origin);
        assert.equal(maxAge(r.headers['cache-control']), 31536000, `${origin}: one year`);
        assert.ok(r.headers.expires, `${origin}: an Expires`);
        assert.ok(!Number.isNaN(Date.parse(r.headers.expires)), `${origin}: Expires is a date (${r.headers.expires})`);
        assert.ok(Number(r.headers['access-control-max-age']) >= 1000000, `${origin}: Access-Control-Max-Age`);
        const methods = (r.headers['access-control-allow-methods'] ?? '').split(',').map((m) => m.trim());
        assert.ok(methods.includes('OPTIONS') && methods.includes('GET'), `${origin}: allowed methods ${methods}`);
        assert.equal(r.body, '', origin);
        assertCors(r, origin, origin);
      }
    });

    test('OPTIONS without an Origin: Access-Control-Allow-Origin *', async () => {
      const r = await request(port, 'OPTIONS', '/echo/info', { 'Access-Control-Request-Method': 'GET' });
      assert.equal(r.status, 204);
      assertCors(r, null);
      assert.equal(r.body, '');
    });

    test('OPTIONS with Origin null asking for POST still answers null (InfoTest.test_options_null_origin)', async () => {
      const r = await request(port, 'OPTIONS', '/echo/info', { Origin: 'null', 'Access-Control-Request-Method': 'POST' });
      assert.ok(r.status === 204 || r.status === 200, `status ${r.status}`);
      assert.equal(r.body, '');
      assert.equal(r.headers['access-control-allow-origin'], 'null');
    });

    test('websocket: false and cookieNeeded: true show in /info', async () => {
      const off = await request(port, 'GET', '/nows/info');
      assert.equal(off.status, 200);
      assert.equal(JSON.parse(off.body).websocket, false);
      assert.equal(JSON.parse(off.body).cookie_needed, false);
      const cookie = await request(port, 'GET', '/cookie/info');
      assert.equal(cookie.status, 200);
      assert.equal(JSON.parse(cookie.body).cookie_needed, true);
      assert.equal(JSON.parse(cookie.body).websocket, true);
    });
  });

  describe('iframe page', () => {
    /** The protocol suite's `IframePage.verify`; returns the response. */
    async function verifyIframe(target, prefix = '/echo') {
      const r = await request(port, 'GET', `${prefix}${target}`);
      assert.equal(r.status, 200, target);
      assert.equal(contentType(r), 'text/html;charset=UTF-8', target);
      assert.match(r.headers['cache-control'] ?? '', /public/, target);
      assert.equal(maxAge(r.headers['cache-control']), 31536000, `${target}: cached a year`);
      assert.ok(r.headers.expires && !Number.isNaN(Date.parse(r.headers.expires)), `${target}: an Expires date`);
      assert.ok(r.headers.etag, `${target}: an ETag`);
      assert.equal(r.headers['last-modified'], undefined, `${target}: no Last-Modified`);
      assert.equal(r.headers['set-cookie'], undefined, `${target}: no cookie`);
      assert.match(r.body, /^<!DOCTYPE html>/, target);
      assert.match(r.body, /<\/html>\s*$/, target);
      assert.match(r.body, /SockJS\.bootstrap_iframe\(\)/, target);
      return r;
    }

    /** The `src` of the page's external script. */
    function scriptSrc(html) {
      return /<script src="([^"]*)"><\/script>/.exec(html)?.[1];
    }

    test('/iframe.html, versioned and queried names: the page, loading the default client', async () => {
      const targets = [
        '/iframe.html',
        '/iframe-a.html',
        '/iframe-.html',
        '/iframe-0.1.2.html',
        '/iframe-0.1.2abc-dirty.2144.html',
        '/iframe-1.6.1.html',
        '/iframe-a.html?t=1234',
        '/iframe-0.1.2.html?t=123414',
        '/iframe-0.1.2abc-dirty.2144.html?t=qweqweq123',
      ];
      const bodies = new Set();
      const etags = new Set();
      for (const target of targets) {
        const r = await verifyIframe(target);
        bodies.add(r.body);
        etags.add(r.headers.etag);
        assert.match(scriptSrc(r.body) ?? '', DEFAULT_CLIENT_URL, `${target}: the default sockjs-client URL`);
      }
      assert.equal(bodies.size, 1, 'every version gets the same page');
      assert.equal(etags.size, 1, 'and the same ETag');
    });

    test('sockjsUrl is the script the page loads; its page has another ETag', async () => {
      const custom = await verifyIframe('/iframe.html', '/custom');
      // `&` may be written as is or as `&amp;` in the attribute.
      assert.equal(scriptSrc(custom.body)?.replaceAll('&amp;', '&'), CUSTOM_CLIENT_URL);
      const standard = await verifyIframe('/iframe.html');
      assert.notEqual(custom.headers.etag, standard.headers.etag);
    });

    test('the ETag is stable and If-None-Match gets 304 without body or type (IframePage.test_cacheability)', async () => {
      const r1 = await request(port, 'GET', '/echo/iframe.html');
      const r2 = await request(port, 'GET', '/echo/iframe.html');
      assert.ok(r1.headers.etag);
      assert.equal(r1.headers.etag, r2.headers.etag);
      const r = await request(port, 'GET', '/echo/iframe.html', { 'If-None-Match': r1.headers.etag });
      assert.equal(r.status, 304);
      assert.equal(r.headers['content-type'], undefined);
      assert.equal(r.body, '');
      // A versioned name is the same page: the same tag is fresh there too.
      const versioned = await request(port, 'GET', '/echo/iframe-1.6.1.html', { 'If-None-Match': r1.headers.etag });
      assert.equal(versioned.status, 304);
      // Another tag is not.
      const stale = await request(port, 'GET', '/echo/iframe.html', { 'If-None-Match': '"not-the-tag"' });
      assert.equal(stale.status, 200);
      assert.match(stale.body, /bootstrap_iframe/);
    });

    test('malformed iframe names are 404 (IframePage.test_invalidUrl)', async () => {
      for (const suffix of ['/iframe.htm', '/iframe', '/IFRAME.HTML', '/IFRAME', '/iframe.HTML', '/iframe.xml', '/iframe-/.html']) {
        const r = await request(port, 'GET', `/echo${suffix}`);
        assert.equal(r.status, 404, `/echo${suffix}`);
      }
    });
  });

  describe('405', () => {
    test('a method the URL does not allow: 405 with Allow, no Content-Type, no body', async () => {
      assert405(await request(port, 'POST', '/echo/info'), 'POST /info', 'GET', 'OPTIONS');
      assert405(await request(port, 'PUT', '/echo/info', {}, '{}'), 'PUT /info', 'GET', 'OPTIONS');
      assert405(await request(port, 'DELETE', '/echo/info'), 'DELETE /info', 'GET', 'OPTIONS');
      assert405(await request(port, 'POST', '/echo'), 'POST greeting', 'GET');
      assert405(await request(port, 'POST', '/echo/'), 'POST greeting/', 'GET');
      assert405(await request(port, 'POST', '/echo/iframe.html'), 'POST iframe', 'GET');
      assert405(await request(port, 'POST', '/echo/websocket'), 'POST raw websocket', 'GET');
    });

    test('POST on a session WebSocket URL, with or without upgrade headers (WebsocketHttpErrors.test_invalidMethod)', async () => {
      for (const headers of [{ Upgrade: 'WebSocket', Connection: 'Upgrade' }, {}]) {
        const r = await request(port, 'POST', '/echo/0/0/websocket', headers);
        assert405(r, `POST websocket ${JSON.stringify(headers)}`, 'GET');
      }
    });
  });

  describe('WebSocket URLs over plain HTTP', () => {
    test('a GET without upgrade is 400 Can "Upgrade" only to "WebSocket".', async () => {
      for (const target of ['/echo/0/0/websocket', `/echo/000/${crypto.randomUUID()}/websocket`, '/echo/websocket']) {
        const r = await request(port, 'GET', target);
        assert.equal(r.status, 400, target);
        assert.equal(r.body, 'Can "Upgrade" only to "WebSocket".', target);
      }
    });

    test('Upgrade with Connection: close is refused with 400 (WebsocketHttpErrors.test_invalidConnectionHeader)', async () => {
      const r = await request(port, 'GET', '/echo/0/0/websocket', { Upgrade: 'WebSocket', Connection: 'close' });
      assert.equal(r.status, 400);
    });

    test('server or session ids that are empty or contain a dot: 404, with or without upgrade', async () => {
      for (const ids of ['/a./a', '/a/a.', '/./.', '//', '/a/', '//a', '/.a/b', '/a/b.c']) {
        const target = `/echo${ids}/websocket`;
        const plain = await request(port, 'GET', target);
        assert.equal(plain.status, 404, `GET ${target}`);
        assert.equal(await rawUpgradeStatus(port, target), 404, `upgrade ${target}`);
      }
      // Fewer or more parts than /{server}/{session}/websocket.
      for (const target of ['/echo/a/websocket', '/echo/a/b/c/websocket', '/echo///websocket', '/echo////websocket']) {
        assert.equal((await request(port, 'GET', target)).status, 404, `GET ${target}`);
        assert.equal(await rawUpgradeStatus(port, target), 404, `upgrade ${target}`);
      }
    });

    test('websocket: false: the WebSocket URLs are 404, upgrade or not; the rest is served', async () => {
      for (const target of ['/nows/000/abc/websocket', '/nows/websocket']) {
        assert.equal((await request(port, 'GET', target)).status, 404, `GET ${target}`);
        const refused = await upgradeStatus(`${url}${target}`);
        assert.equal(refused.status, 404, `upgrade ${target}`);
      }
      const greeting = await request(port, 'GET', '/nows');
      assert.equal(greeting.body, GREETING);
      assert.equal((await request(port, 'GET', '/nows/iframe.html')).status, 200);
    });
  });

  describe('bad requests hurt nothing else', () => {
    test('every session transport answers (http-transports.test.mjs has their rules), and the service goes on', async () => {
      const id = crypto.randomUUID();
      const base = `/echo/000/${id}`;
      const attempts = [
        ['POST', `${base}/xhr`, {}, '', 200],
        ['POST', `${base}/xhr_send`, {}, '["a"]', 204],
        ['POST', `${base}/xhr_send`, {}, '["a', 500],
        ['POST', `${base}/xhr_streaming`, {}, '', 200],
        ['OPTIONS', `${base}/xhr`, { Origin: 'test', 'Access-Control-Request-Method': 'POST' }, '', 204],
        ['GET', `${base}/eventsource`, {}, '', 200],
        ['GET', `${base}/htmlfile?c=callback`, {}, '', 200],
        ['GET', `${base}/jsonp?c=callback`, {}, '', 200],
        ['POST', `${base}/jsonp_send`, { 'Content-Type': 'application/x-www-form-urlencoded' }, 'd=%5B%22x%22%5D', 200],
        ['GET', `${base}/unknown_transport`, {}, '', 404],
      ];
      for (const [method, target, headers, body, status] of attempts) {
        const r = await requestHead(port, method, target, headers, body);
        assert.equal(r.status, status, `${method} ${target}`);
      }
      const info = await request(port, 'GET', '/echo/info');
      assert.equal(info.status, 200);
    });

    test('after 404s, 405s, 400s and broken upgrades, a kept-alive connection, an open session and new clients go on', async () => {
      // A session that must live through all of it.
      const bystander = await connect(`${url}/echo/000/${crypto.randomUUID()}/websocket`);
      const keptAlive = await HttpConnection.open(port);
      try {
        assert.equal((await nextMessage(bystander)).data.toString(), 'o');
        const sequence = [
          ['GET', '/echo/a/a', {}, '', 404],
          ['POST', '/echo/info', {}, '', 405],
          ['GET', '/echo/iframe.htm', {}, '', 404],
          ['DELETE', '/echo/iframe.html', {}, '', 405],
          ['GET', '/echo/nope/websocket', {}, '', 404],
          ['GET', '/echo/info', { Origin: 'test' }, '', 200],
        ];
        // (Requests without a body: after a refused request with an unread body the server may close.)
        for (const [method, target, headers, body, status] of sequence) {
          keptAlive.write(rawRequest(method, target, headers, body));
          const r = await keptAlive.response();
          assert.ok(r, `${method} ${target}: a response on the kept-alive connection`);
          assert.equal(r.status, status, `${method} ${target}`);
          assert.equal(keptAlive.closed, false, `still open after ${method} ${target}`);
        }
        assert.equal((await request(port, 'GET', '/echo/0/0/websocket')).status, 400);

        // Upgrades that cannot succeed, each on its own connection.
        const broken = [
          `GET /echo/000/x/websocket HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n\r\n`,
          `GET /echo/000/x/websocket HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 7\r\n\r\n`,
          upgradeRequest('/echo/a./b/websocket'),
          upgradeRequest('/echo/000/x/xhr'),
          upgradeRequest('/echo/info'),
          `GET /echo/info HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: nope\r\n\r\n`,
          `\x16\x03\x01\x00\xa5garbage\r\n\r\n`,
        ];
        for (const bytes of broken) {
          const c = await HttpConnection.open(port);
          try {
            c.write(bytes);
            const r = await c.response({ timeoutMs: 2000, headOnly: true });
            // Refused (any 4xx) or, for an upgrade where none is due, answered as plain HTTP: never a 101 or a 5xx.
            if (r) assert.ok(r.status !== 101 && r.status < 500, `${JSON.stringify(bytes.slice(0, 40))}: ${r.status}`);
          } finally {
            c.destroy();
          }
        }

        // The session still echoes, the kept-alive connection still serves, a new client connects.
        bystander.send('["still here"]');
        assert.equal((await nextMessage(bystander)).data.toString(), 'a["still here"]');
        assert.equal(bystander.readyState, 1);
        keptAlive.write(rawRequest('GET', '/echo'));
        const again = await keptAlive.response();
        assert.equal(again?.status, 200);
        assert.equal(again.body.toString(), GREETING);
        const fresh = await connect(`${url}/echo/000/${crypto.randomUUID()}/websocket`);
        try {
          assert.equal((await nextMessage(fresh)).data.toString(), 'o');
          fresh.send('"fresh"');
          assert.equal((await nextMessage(fresh)).data.toString(), 'a["fresh"]');
        } finally {
          fresh.terminate();
        }
        assert.ok(messages.includes('still here') && messages.includes('fresh'));
      } finally {
        keptAlive.destroy();
        bystander.terminate();
      }
    });
  });
});

test('registration refuses prefixes with a trailing slash or without a leading one, rpc with a handler, a taken prefix, a quoted sockjsUrl', () => {
  const server = new Server({ workers: 0 });
  const refused = (fn, what) => assert.throws(fn, (e) => e.code === 'ERR_INVALID_OPTION', what);
  refused(() => server.sockjs('/echo/', {}), 'trailing slash');
  refused(() => server.sockjs('echo', {}), 'no leading slash');
  // A protocol service is served by app.rpc: its WebSocket handlers would never run.
  refused(() => server.sockjs('/rpc', { rpc: true, message: () => {} }), 'rpc with a message handler');
  refused(() => server.sockjs('/rpc', { rpc: true, open: () => {} }), 'rpc with an open handler');
  server.sockjs('/rpc', { rpc: true, upgrade: () => {} });
  refused(() => server.sockjs('/quoted', { sockjsUrl: '/a"><script>alert(1)</script>' }), 'a sockjsUrl that would break out of the attribute');
  server.sockjs('/taken', {});
  refused(() => server.sockjs('/taken', {}), 'the same prefix twice');
});

describe('the example server (examples/sockjs/server.mjs)', () => {
  let example;
  let child;
  let port;

  before(async () => {
    example = await startExample('examples/sockjs/server.mjs', { env: { PORT: '0' }, ready: /^LISTENING (\d+)$/m });
    child = example.child;
    port = Number(example.match[1]);
  });

  after(async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      await once(child, 'exit');
    }
  });

  test('prints LISTENING <port> on 127.0.0.1 and greets on /', async () => {
    assert.ok(port > 0);
    const r = await request(port, 'GET', '/');
    assert.equal(r.status, 200);
    assert.match(r.headers['content-type'] ?? '', /^text\/plain/);
    assert.ok(r.body.length > 0);
  });

  test('serves the four services of the protocol suite', async () => {
    const greeting = await request(port, 'GET', '/echo');
    assert.equal(greeting.body, GREETING);
    assert.equal(JSON.parse((await request(port, 'GET', '/echo/info')).body).websocket, true);
    const off = JSON.parse((await request(port, 'GET', '/disabled_websocket_echo/info')).body);
    assert.equal(off.websocket, false);
    const cookie = JSON.parse((await request(port, 'GET', '/cookie_needed_echo/info')).body);
    assert.equal(cookie.cookie_needed, true);
    assert.equal((await request(port, 'GET', '/close/info')).status, 200);

    const echo = await connect(`ws://127.0.0.1:${port}/echo/000/${crypto.randomUUID()}/websocket`);
    try {
      assert.equal((await nextMessage(echo)).data.toString(), 'o');
      echo.send('["a"]');
      assert.equal((await nextMessage(echo)).data.toString(), 'a["a"]');
    } finally {
      echo.terminate();
    }

    // Websocket.test_close: `o`, then the close frame, then the connection ends.
    const closing = await connect(`ws://127.0.0.1:${port}/close/000/${crypto.randomUUID()}/websocket`);
    try {
      assert.equal((await nextMessage(closing)).data.toString(), 'o');
      assert.equal((await nextMessage(closing)).data.toString(), 'c[3000,"Go away!"]');
      await Promise.race([
        closing.closed,
        new Promise((_, reject) => setTimeout(() => reject(new Error('not closed after c[3000,...] in 3 s')), 3000)),
      ]);
    } finally {
      closing.terminate();
    }

    // RawWebsocket.test_transport
    const raw = await connect(`ws://127.0.0.1:${port}/echo/websocket`);
    try {
      raw.send('Hello world!\uffff');
      const reply = await nextMessage(raw);
      assert.equal(reply.isBinary, false);
      assert.equal(reply.data.toString(), 'Hello world!\uffff');
    } finally {
      raw.terminate();
    }
    assert.equal((await upgradeStatus(`ws://127.0.0.1:${port}/disabled_websocket_echo/000/x/websocket`)).status, 404);
  });

  test('SIGTERM stops it cleanly', async () => {
    child.kill('SIGTERM');
    const [code] = await once(child, 'exit');
    assert.equal(code, 0, example.output());
  });
});
