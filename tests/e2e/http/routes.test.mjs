// HTTP routes end to end with real clients (fetch/undici, curl, raw TCP):
// routing and parameters, bodies, responses, middleware and error
// handlers, keep-alive and pipelining in order, and what the core answers
// without JavaScript (404, 405, automatic HEAD, malformed requests).
import test from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { HttpError, Router, Server } from 'switchboard';
import { HttpConnection, exchange, startHttp } from './support.mjs';

const run = promisify(execFile);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** A server for `setup` (support.mjs); `errors` are `{ error, info }` reports. */
const start = async (setup, options) => {
  const started = await startHttp(setup, options);
  return { ...started, errors: started.reports };
};

test('routes, parameters, query and headers reach the handler', async (t) => {
  const { server, base } = await start((app) => {
    app.get('/users/:id', (req, res) => {
      res.json({ id: req.params.id, query: req.query, agent: req.header('x-agent'), method: req.method, url: req.url, ip: req.ip, protocol: req.protocol, hostname: req.hostname });
    });
    app.get('/files/*', (req, res) => res.send(req.params['*']));
    app.get('/users/:id/posts/:post', (req, res) => res.send(`${req.params.id}/${req.params.post}`));
    app.get('/users/me', (req, res) => res.send('static wins'));
  });
  t.after(() => server.close({ drainTimeout: 500 }));

  const response = await fetch(`${base}/users/caf%C3%A9?sort=asc&tag=a&tag=b`, { headers: { 'X-Agent': 'tests' } });
  assert.equal(response.status, 200);
  assert.equal(response.headers.get('content-type'), 'application/json; charset=utf-8');
  assert.ok(response.headers.get('date'), 'a Date header');
  assert.deepEqual(await response.json(), {
    id: 'café',
    query: { sort: 'asc', tag: ['a', 'b'] },
    agent: 'tests',
    method: 'GET',
    url: '/users/caf%C3%A9?sort=asc&tag=a&tag=b',
    ip: '127.0.0.1',
    protocol: 'http',
    hostname: '127.0.0.1',
  });
  assert.equal(await (await fetch(`${base}/files/a/b/c.txt`)).text(), 'a/b/c.txt');
  assert.equal(await (await fetch(`${base}/users/7/posts/9`)).text(), '7/9');
  assert.equal(await (await fetch(`${base}/users/me`)).text(), 'static wins');
});

test('the core answers 404, 405 with Allow, and HEAD for GET routes, without JavaScript', async (t) => {
  let calls = 0;
  const { server, port, base } = await start((app) => {
    app.get('/thing', (req, res) => {
      calls++;
      res.send('thing body');
    });
    app.post('/thing', (req, res) => res.send('posted'));
  });
  t.after(() => server.close({ drainTimeout: 500 }));

  const missing = await fetch(`${base}/nothing`);
  assert.equal(missing.status, 404);
  assert.match(await missing.text(), /ERR_HTTP_NOT_FOUND/);

  const wrong = await fetch(`${base}/thing`, { method: 'DELETE' });
  assert.equal(wrong.status, 405);
  assert.equal(wrong.headers.get('allow'), 'GET, HEAD, POST');
  assert.match(await wrong.text(), /ERR_HTTP_METHOD_NOT_ALLOWED/);
  assert.equal(calls, 0, 'no handler ran');

  // HEAD runs the GET handler; the head says what GET sends, without the body.
  const connection = await HttpConnection.open(port);
  t.after(() => connection.destroy());
  connection.write('HEAD /thing HTTP/1.1\r\nHost: x\r\n\r\n');
  const head = await connection.response({ headOnly: true });
  assert.equal(head.status, 200);
  assert.equal(head.headers['content-length'], String('thing body'.length));
  connection.write('GET /thing HTTP/1.1\r\nHost: x\r\n\r\n');
  const get = await connection.response();
  assert.equal(get.body.toString(), 'thing body', 'no body bytes were left behind by the HEAD');
  assert.equal(calls, 2);
});

test('request bodies: JSON, text, urlencoded, large, streamed, and the body limit', async (t) => {
  const { server, base } = await start((app) => {
    app.post('/json', async (req, res) => res.json({ got: await req.json() }));
    app.post('/text', async (req) => (await req.text()).toUpperCase());
    app.post('/form', async (req) => req.urlencoded());
    app.post('/size', { bodyLimit: 8 * 1024 * 1024 }, async (req, res) => {
      let size = 0;
      let pieces = 0;
      for await (const piece of req) {
        size += piece.length;
        pieces++;
      }
      res.json({ size, pieces });
    });
    app.post('/small', async (req) => ({ size: (await req.buffer()).length }));
  });
  t.after(() => server.close({ drainTimeout: 500 }));

  const post = (path, body, headers = {}) => fetch(`${base}${path}`, { method: 'POST', body, headers });
  assert.deepEqual(await (await post('/json', JSON.stringify({ a: [1, 2] }), { 'content-type': 'application/json' })).json(), { got: { a: [1, 2] } });
  assert.equal(await (await post('/text', 'hello')).text(), 'HELLO');
  assert.deepEqual(await (await post('/form', 'a=1&b=two&b=3')).json(), { a: '1', b: ['two', '3'] });

  const bad = await post('/json', '{nope');
  assert.equal(bad.status, 400);
  assert.equal((await bad.json()).error.code, 'ERR_HTTP_INVALID_BODY');

  // 5 MiB with Content-Length, then chunked (a stream of unknown length).
  const big = Buffer.alloc(5 * 1024 * 1024, 7);
  const sized = await (await post('/size', big)).json();
  assert.equal(sized.size, big.length);
  const stream = new ReadableStream({
    start(controller) {
      for (let i = 0; i < 64; i++) controller.enqueue(new Uint8Array(16 * 1024).fill(i));
      controller.close();
    },
  });
  const chunked = await (await fetch(`${base}/size`, { method: 'POST', body: stream, duplex: 'half' })).json();
  assert.equal(chunked.size, 64 * 16 * 1024);

  // Over the default limit (1 MiB): 413 from the core.
  const tooBig = await post('/small', Buffer.alloc(2 * 1024 * 1024));
  assert.equal(tooBig.status, 413);
  assert.match(await tooBig.text(), /ERR_HTTP_BODY_TOO_LARGE/);
});

test('responses: status, headers, types, redirects, and streamed bodies', async (t) => {
  const { server, base, port } = await start((app) => {
    app.get('/teapot', (req, res) => res.status(418).header('X-Kind', 'tea').append('Set-Cookie', 'a=1').append('Set-Cookie', 'b=2').send('short and stout'));
    app.get('/bytes', (req, res) => res.send(Buffer.from([1, 2, 3])));
    app.get('/html', (req, res) => res.html('<p>hi</p>'));
    app.get('/go', (req, res) => res.redirect('/teapot', 301));
    app.get('/empty', (req, res) => res.status(204).end());
    app.get('/stream', async (req, res) => {
      res.type('text');
      for (let i = 0; i < 5; i++) {
        res.write(`line ${i}\n`);
        await sleep(5);
      }
      res.end('done\n');
    });
    app.get('/sized', (req, res) => {
      res.header('Content-Length', 10);
      res.write('01234');
      res.end('56789');
    });
    app.get('/returned', async () => ({ from: 'return value' }));
  });
  t.after(() => server.close({ drainTimeout: 500 }));

  const teapot = await fetch(`${base}/teapot`);
  assert.equal(teapot.status, 418);
  assert.equal(teapot.headers.get('x-kind'), 'tea');
  assert.deepEqual(teapot.headers.getSetCookie(), ['a=1', 'b=2']);
  assert.equal(teapot.headers.get('content-type'), 'text/plain; charset=utf-8');
  assert.equal(await teapot.text(), 'short and stout');

  const bytes = await fetch(`${base}/bytes`);
  assert.equal(bytes.headers.get('content-type'), 'application/octet-stream');
  assert.deepEqual([...new Uint8Array(await bytes.arrayBuffer())], [1, 2, 3]);
  assert.equal((await fetch(`${base}/html`)).headers.get('content-type'), 'text/html; charset=utf-8');

  const go = await fetch(`${base}/go`, { redirect: 'manual' });
  assert.equal(go.status, 301);
  assert.equal(go.headers.get('location'), '/teapot');

  const { response: empty } = await exchange(port, 'GET /empty HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
  assert.equal(empty.status, 204);
  assert.equal(empty.headers['content-length'], undefined, 'no Content-Length on a 204');

  const connection = await HttpConnection.open(port);
  t.after(() => connection.destroy());
  connection.write('GET /stream HTTP/1.1\r\nHost: x\r\n\r\n');
  const streamed = await connection.response();
  assert.equal(streamed.headers['transfer-encoding'], 'chunked');
  assert.equal(streamed.body.toString(), 'line 0\nline 1\nline 2\nline 3\nline 4\ndone\n');
  connection.write('GET /sized HTTP/1.1\r\nHost: x\r\n\r\n');
  const sized = await connection.response();
  assert.equal(sized.headers['content-length'], '10');
  assert.equal(sized.headers['transfer-encoding'], undefined);
  assert.equal(sized.body.toString(), '0123456789');

  assert.deepEqual(await (await fetch(`${base}/returned`)).json(), { from: 'return value' });
});

test('a string body goes out as its UTF-8 whatever its size and the character that ends it', async (t) => {
  // The native side writes a string into a 16 KiB scratch buffer before it
  // measures one (crates/node/src/raw.rs, string_of): bodies whose UTF-8
  // ends right at that edge, with characters of 1 to 4 bytes (and a lone
  // surrogate, which becomes U+FFFD), must not be cut.
  const endings = ['a', '\u00e9', '\u20ac', '\u{1f600}', '\ud800'];
  const { server, base } = await start((app) => {
    app.get('/text/:size/:ending', (req, res) => {
      const ending = endings[Number(req.params.ending)];
      res.type('bin').send('x'.repeat(Number(req.params.size)) + ending);
    });
  });
  t.after(() => server.close({ drainTimeout: 500 }));
  for (let size = 16 * 1024 - 9; size <= 16 * 1024 + 2; size++) {
    for (let ending = 0; ending < endings.length; ending++) {
      const response = await fetch(`${base}/text/${size}/${ending}`);
      const body = Buffer.from(await response.arrayBuffer());
      const expected = Buffer.from('x'.repeat(size) + endings[ending]);
      assert.equal(body.length, expected.length, `size ${size}, ending ${ending}`);
      assert.ok(body.equals(expected), `size ${size}, ending ${ending}`);
    }
  }
});

test('keep-alive: many requests on one connection; pipelined responses come back in order', async (t) => {
  const { server, port } = await start((app) => {
    // The first request finishes last: its response still goes first.
    app.get('/slow/:ms', async (req, res) => {
      await sleep(Number(req.params.ms));
      res.send(`slow ${req.params.ms}`);
    });
    app.get('/fast/:n', (req, res) => res.send(`fast ${req.params.n}`));
  });
  t.after(() => server.close({ drainTimeout: 500 }));

  const connection = await HttpConnection.open(port);
  t.after(() => connection.destroy());
  for (let i = 0; i < 20; i++) {
    connection.write(`GET /fast/${i} HTTP/1.1\r\nHost: x\r\n\r\n`);
    const response = await connection.response();
    assert.equal(response.body.toString(), `fast ${i}`);
  }
  connection.write(
    'GET /slow/80 HTTP/1.1\r\nHost: x\r\n\r\n' +
      'GET /fast/1 HTTP/1.1\r\nHost: x\r\n\r\n' +
      'GET /slow/20 HTTP/1.1\r\nHost: x\r\n\r\n' +
      'GET /missing HTTP/1.1\r\nHost: x\r\n\r\n' +
      'GET /fast/2 HTTP/1.1\r\nHost: x\r\n\r\n',
  );
  const bodies = [];
  for (let i = 0; i < 5; i++) {
    const response = await connection.response();
    assert.ok(response, `response ${i}`);
    bodies.push(`${response.status} ${response.status === 404 ? 'not found' : response.body.toString()}`);
  }
  assert.deepEqual(bodies, ['200 slow 80', '200 fast 1', '200 slow 20', '404 not found', '200 fast 2']);
  assert.equal(connection.closed, false, 'the connection stays open');
});

test('HTTP/1.0 and Connection: close end the connection after the response', async (t) => {
  const { server, port } = await start((app) => {
    app.get('/hi', (req, res) => res.send('hi'));
    app.get('/bye', (req, res) => res.header('Connection', 'close').send('bye'));
    app.get('/stream10', (req, res) => {
      res.write('part one, ');
      res.end('part two');
    });
  });
  t.after(() => server.close({ drainTimeout: 500 }));

  const http10 = await exchange(port, 'GET /hi HTTP/1.0\r\n\r\n');
  assert.equal(http10.response.status, 200);
  assert.equal(http10.response.body.toString(), 'hi');
  assert.equal(http10.closed, true, 'an HTTP/1.0 request without keep-alive closes');

  const kept = await exchange(port, 'GET /hi HTTP/1.0\r\nConnection: keep-alive\r\n\r\n');
  assert.equal(kept.response.headers.connection, 'keep-alive');
  assert.equal(kept.closed, false);

  const asked = await exchange(port, 'GET /hi HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
  assert.equal(asked.response.headers.connection, 'close');
  assert.equal(asked.closed, true);

  const handler = await exchange(port, 'GET /bye HTTP/1.1\r\nHost: x\r\n\r\n');
  assert.equal(handler.response.headers.connection, 'close');
  assert.equal(handler.closed, true, 'a handler that says Connection: close closes');

  // HTTP/1.0 has no chunked coding: a streamed body ends with the connection.
  const streamed = await exchange(port, 'GET /stream10 HTTP/1.0\r\n\r\n');
  assert.equal(streamed.response.headers['transfer-encoding'], undefined);
  assert.equal(streamed.response.body.toString(), 'part one, part two');
  assert.equal(streamed.closed, true);
});

test('middleware, routers mounted under prefixes, and error handlers from the innermost out', async (t) => {
  const api = new Router();
  const admin = new Router();
  admin.use((req, res, next) => {
    if (req.header('x-admin') !== 'yes') throw new HttpError(403, 'ERR_FORBIDDEN', 'admins only');
    next();
  });
  admin.get('/stats', (req, res) => res.json({ trail: req.trail }));
  admin.get('/boom', () => {
    throw new Error('secret detail');
  });
  api.use((req, res, next) => {
    req.trail = [...(req.trail ?? []), 'api'];
    next();
  });
  api.get('/items/:id', (req, res) => res.json({ id: req.params.id, trail: req.trail }));
  api.get('/fails', (req, res, next) => next(new HttpError(409, 'ERR_CONFLICT', 'taken')));
  api.use('/admin', admin);
  api.setErrorHandler((error, req, res, next) => {
    if (error.code === 'ERR_CONFLICT') return res.status(409).json({ handledBy: 'api' });
    next(error);
  });

  const { server, base, errors } = await start((app) => {
    app.use((req, res, next) => {
      req.trail = ['global'];
      next();
    });
    app.use('/v1', api);
    app.use('/v2', api);
    app.get('/async-fail', async () => {
      await sleep(1);
      throw new HttpError(422, 'ERR_UNPROCESSABLE', 'bad input');
    });
  });
  t.after(() => server.close({ drainTimeout: 500 }));

  assert.deepEqual(await (await fetch(`${base}/v1/items/3`)).json(), { id: '3', trail: ['global', 'api'] });
  assert.deepEqual(await (await fetch(`${base}/v2/items/4`)).json(), { id: '4', trail: ['global', 'api'] }, 'mounted twice');
  assert.deepEqual(await (await fetch(`${base}/v1/admin/stats`, { headers: { 'x-admin': 'yes' } })).json(), { trail: ['global', 'api'] });

  const forbidden = await fetch(`${base}/v1/admin/stats`);
  assert.equal(forbidden.status, 403);
  assert.deepEqual(await forbidden.json(), { error: { code: 'ERR_FORBIDDEN', message: 'admins only' } });

  const conflict = await fetch(`${base}/v1/fails`);
  assert.equal(conflict.status, 409);
  assert.deepEqual(await conflict.json(), { handledBy: 'api' });

  const unprocessable = await fetch(`${base}/async-fail`);
  assert.equal(unprocessable.status, 422);
  assert.equal((await unprocessable.json()).error.code, 'ERR_UNPROCESSABLE');

  const boom = await fetch(`${base}/v1/admin/boom`, { headers: { 'x-admin': 'yes' } });
  assert.equal(boom.status, 500);
  const body = await boom.json();
  assert.equal(body.error.code, 'ERR_HTTP_INTERNAL');
  assert.ok(!JSON.stringify(body).includes('secret'), 'a 500 does not leak the error message');
  assert.ok(errors.some((e) => e.error.message === 'secret detail' && e.info.handler === 'http'), 'the 500 is reported');
});

test('misuse of a response is reported and harmless: a second send, a write after the end, a late write', async (t) => {
  let late;
  const { server, base, port, errors } = await start((app) => {
    app.get('/twice', (req, res) => {
      res.send('first');
      res.send('second');
      res.write('more');
    });
    app.get('/late', async (req, res) => {
      late = { req, res, aborted: new Promise((resolve) => req.signal.addEventListener('abort', resolve)) };
      await sleep(200);
      res.send('too late');
      res.write('and more');
    });
    app.get('/after', (req, res) => res.send('still fine'));
  });
  t.after(() => server.close({ drainTimeout: 500 }));

  assert.equal(await (await fetch(`${base}/twice`)).text(), 'first');
  assert.ok(errors.some((e) => e.error.code === 'ERR_HTTP_RESPONSE_SENT'));

  const connection = await HttpConnection.open(port);
  connection.write('GET /late HTTP/1.1\r\nHost: x\r\n\r\n');
  await sleep(50);
  connection.destroy();
  await late.aborted;
  assert.equal(late.req.signal.aborted, true, 'the request was aborted when the client left');
  await sleep(250);
  assert.equal(late.res.closed, true);
  assert.equal(await (await fetch(`${base}/after`)).text(), 'still fine', 'the server goes on');
});

test('malformed requests get their status from the core and the connection closes', async (t) => {
  const { server, port } = await start((app) => {
    app.post('/p', async (req) => (await req.buffer()).length);
    app.get('/', (req, res) => res.send('root'));
  });
  t.after(() => server.close({ drainTimeout: 500 }));

  const cases = [
    ['Content-Length with Transfer-Encoding', 'POST /p HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n', 400],
    ['two Content-Lengths', 'POST /p HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\nabc', 400],
    ['no Host on HTTP/1.1', 'GET / HTTP/1.1\r\n\r\n', 400],
    ['obs-fold', 'GET / HTTP/1.1\r\nHost: x\r\nX-A: a\r\n b\r\n\r\n', 400],
    ['space before the colon', 'GET / HTTP/1.1\r\nHost : x\r\n\r\n', 400],
    ['HTTP/2.0 request line', 'GET / HTTP/2.0\r\nHost: x\r\n\r\n', 505],
    ['an unknown transfer coding', 'POST /p HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n', 501],
    ['a bad chunk size', 'POST /p HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n', 400],
  ];
  for (const [name, request, status] of cases) {
    const { response, closed } = await exchange(port, request);
    assert.equal(response?.status, status, name);
    assert.equal(closed, true, `${name}: the connection closes`);
  }
  const long = await exchange(port, `GET /${'a'.repeat(9000)} HTTP/1.1\r\nHost: x\r\n\r\n`);
  assert.equal(long.response.status, 414);
  // The server still serves.
  const fine = await exchange(port, 'GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
  assert.equal(fine.response.body.toString(), 'root');
});

test('curl speaks to it: GET, POST with a body, HEAD, keep-alive across two URLs', async (t) => {
  const { server, base } = await start((app) => {
    app.get('/hello', (req, res) => res.send(`hello ${req.header('user-agent')?.split('/')[0]}`));
    app.post('/echo', async (req, res) => res.type(req.header('content-type') ?? 'bin').send(await req.buffer()));
  });
  t.after(() => server.close({ drainTimeout: 500 }));

  const { stdout: hello } = await run('curl', ['-sS', `${base}/hello`]);
  assert.equal(hello, 'hello curl');
  const { stdout: echoed } = await run('curl', ['-sS', '-H', 'Content-Type: text/plain', '--data-binary', 'a body', `${base}/echo`]);
  assert.equal(echoed, 'a body');
  const { stdout: head } = await run('curl', ['-sS', '-I', `${base}/hello`]);
  assert.match(head, /^HTTP\/1\.1 200 OK/);
  assert.match(head, /content-length: 10/i);
  const { stderr } = await run('curl', ['-sS', '-v', `${base}/hello`, `${base}/hello`]);
  assert.match(stderr, /Re-using existing connection|Reusing existing connection/, 'curl reused the connection');
});

test('not-found handlers per router answer what no route takes under their prefix', async (t) => {
  const api = new Router();
  api.get('/items', (req, res) => res.send('items'));
  api.setNotFoundHandler((req, res) => res.status(404).json({ error: { code: 'API_NOT_FOUND', path: req.path } }));
  const { server, base } = await start((app) => {
    app.use((req, res, next) => {
      res.header('X-Seen', 'global');
      next();
    });
    app.use('/api', api);
    app.get('/page', (req, res) => res.send('page'));
  });
  t.after(() => server.close({ drainTimeout: 500 }));

  assert.equal(await (await fetch(`${base}/api/items`)).text(), 'items');
  const missing = await fetch(`${base}/api/nothing/here`);
  assert.equal(missing.status, 404);
  assert.equal(missing.headers.get('x-seen'), 'global', 'after the middleware, like a route');
  assert.deepEqual(await missing.json(), { error: { code: 'API_NOT_FOUND', path: '/api/nothing/here' } });
  const prefix = await fetch(`${base}/api`);
  assert.equal((await prefix.json()).error.code, 'API_NOT_FOUND', 'the prefix itself too');
  // Outside the prefix the core answers as before.
  const outside = await fetch(`${base}/elsewhere`);
  assert.equal(outside.status, 404);
  assert.match(await outside.text(), /ERR_HTTP_NOT_FOUND/);
  assert.equal(await (await fetch(`${base}/page`)).text(), 'page');
});

test('trustProxy: req.ip, protocol and hostname from the forwarded headers of trusted hops only', async (t) => {
  const seen = (req) => ({ ip: req.ip, protocol: req.protocol, hostname: req.hostname });
  const { server: plain, base: plainBase } = await start((app) => app.get('/who', seen));
  t.after(() => plain.close({ drainTimeout: 500 }));
  const forwarded = { 'x-forwarded-for': '203.0.113.7, 10.0.0.2', 'x-forwarded-proto': 'https', 'x-forwarded-host': 'example.org' };
  assert.deepEqual(await (await fetch(`${plainBase}/who`, { headers: forwarded })).json(), { ip: '127.0.0.1', protocol: 'http', hostname: '127.0.0.1' }, 'not trusted by default');

  const { server: one, base: oneBase } = await start((app) => {
    app.trustProxy = 1;
    app.get('/who', seen);
  });
  t.after(() => one.close({ drainTimeout: 500 }));
  assert.deepEqual(await (await fetch(`${oneBase}/who`, { headers: forwarded })).json(), { ip: '10.0.0.2', protocol: 'https', hostname: 'example.org' }, 'one hop: the nearest forwarded address');

  const { server: listed, base: listedBase } = await start((app) => {
    app.trustProxy = ['127.0.0.1', '10.0.0.2'];
    app.get('/who', seen);
  });
  t.after(() => listed.close({ drainTimeout: 500 }));
  assert.equal((await (await fetch(`${listedBase}/who`, { headers: forwarded })).json()).ip, '203.0.113.7', 'both proxies trusted: the client');
  assert.throws(() => {
    new Server({ workers: 0 }).app.trustProxy = -1;
  }, /ERR_INVALID_OPTION/);
});
