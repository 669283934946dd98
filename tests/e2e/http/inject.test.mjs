// inject(): requests through an app's routes without a socket. The same
// app answers real requests (fetch) and injected ones, and the two must
// agree: status, content type, body, and what the core answers itself
// (404, 405 with Allow, HEAD, 413, 501, fixed routes).
import test from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { App, HttpError, Router, Server } from 'switchboard';
import { startHttp } from './support.mjs';

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** A server for `setup` (support.mjs); `errors` are `{ error, info }` reports. */
const start = async (setup, options) => {
  const started = await startHttp(setup, options);
  return { ...started, errors: started.reports };
};

/** The same request by fetch and by inject; both answers, normalised. */
async function both(server, base, url, init = {}) {
  const real = await fetch(`${base}${url}`, { redirect: 'manual', ...init });
  const injected = await server.inject({ url, method: init.method, headers: init.headers, body: init.body });
  const realBody = Buffer.from(await real.arrayBuffer());
  return {
    real: { status: real.status, type: real.headers.get('content-type'), body: realBody.toString(), headers: real.headers },
    injected: { status: injected.statusCode, type: injected.headers['content-type'] ?? null, body: injected.text(), headers: injected.headers },
  };
}

async function same(server, base, url, init = {}) {
  const { real, injected } = await both(server, base, url, init);
  assert.deepEqual(
    { status: injected.status, type: injected.type, body: injected.body },
    { status: real.status, type: real.type, body: real.body },
    `${init.method ?? 'GET'} ${url}`,
  );
  return { real, injected };
}

function setupApp(app) {
  const api = new Router();
  api.use((req, res, next) => {
    req.trail = ['api'];
    next();
  });
  api.get('/items/:id', (req, res) => res.json({ id: req.params.id, trail: req.trail }));
  api.get('/conflict', () => {
    throw new HttpError(409, 'ERR_CONFLICT', 'taken');
  });
  app.use('/api', api);
  app.get('/users/:id', (req, res) => res.json({ id: req.params.id, query: req.query, agent: req.header('x-agent'), url: req.url, method: req.method }));
  app.get('/users/me', (req, res) => res.send('static wins'));
  app.get('/files/*', (req, res) => res.send(req.params['*']));
  app.post('/json', async (req, res) => res.status(201).json({ got: await req.json() }));
  app.post('/text', async (req) => (await req.text()).toUpperCase());
  app.post('/small', { bodyLimit: 16 }, async (req) => ({ size: (await req.buffer()).length }));
  app.get('/boom', () => {
    throw new Error('secret detail');
  });
  app.get('/async-fail', async () => {
    await sleep(1);
    throw new HttpError(422, 'ERR_UNPROCESSABLE', 'bad input');
  });
  app.get('/stream', async (req, res) => {
    res.type('text');
    for (let i = 0; i < 3; i++) {
      res.write(`line ${i}\n`);
      await sleep(2);
    }
    res.end('done\n');
  });
  app.get('/sized', (req, res) => {
    res.header('Content-Length', 10);
    res.write('01234');
    res.end('56789');
  });
  app.get('/bytes', (req, res) => res.send(Buffer.from([1, 2, 3])));
  app.get('/html', (req, res) => res.html('<p>hi</p>'));
  app.get('/go', (req, res) => res.redirect('/users/me', 301));
  app.get('/empty', (req, res) => res.status(204).end());
  app.get('/returned', async () => ({ from: 'return value' }));
  app.get('/nothing', (req, res, next) => next());
  app.route('/thing').get((req, res) => res.send('thing body')).post((req, res) => res.send('posted'));
  app.get('/fixed', { body: 'a fixed page', contentType: 'text/plain; charset=utf-8', headers: { 'X-Fixed': 'yes' } });
  app.ws('/socket', {});
}

test('inject answers as the server does: routes, parameters, bodies, errors, streams', async (t) => {
  const { server, base } = await start(setupApp);
  t.after(() => server.close({ drainTimeout: 500 }));

  const user = await same(server, base, '/users/caf%C3%A9?sort=asc&tag=a&tag=b', { headers: { 'X-Agent': 'tests' } });
  assert.deepEqual(JSON.parse(user.injected.body), { id: 'café', query: { sort: 'asc', tag: ['a', 'b'] }, agent: 'tests', url: '/users/caf%C3%A9?sort=asc&tag=a&tag=b', method: 'GET' });
  await same(server, base, '/users/me');
  await same(server, base, '/files/a/b/c.txt');
  await same(server, base, '/files/');
  await same(server, base, '/api/items/3');
  await same(server, base, '/api/conflict');
  await same(server, base, '/json', { method: 'POST', body: JSON.stringify({ a: [1, 2] }), headers: { 'content-type': 'application/json' } });
  await same(server, base, '/json', { method: 'POST', body: '{nope' });
  await same(server, base, '/text', { method: 'POST', body: 'hello' });
  await same(server, base, '/small', { method: 'POST', body: 'twelve bytes' });
  await same(server, base, '/boom');
  await same(server, base, '/async-fail');
  await same(server, base, '/bytes');
  await same(server, base, '/html');
  await same(server, base, '/go');
  await same(server, base, '/returned');
  await same(server, base, '/nothing');
  const empty = await same(server, base, '/empty');
  assert.equal(empty.injected.headers['content-length'], undefined, 'no Content-Length on a 204');

  const streamed = await same(server, base, '/stream');
  assert.equal(streamed.injected.body, 'line 0\nline 1\nline 2\ndone\n');
  assert.equal(streamed.injected.headers['transfer-encoding'], 'chunked');
  const sized = await same(server, base, '/sized');
  assert.equal(sized.injected.headers['content-length'], '10');
  assert.equal(sized.injected.headers['transfer-encoding'], undefined);
});

test('inject answers what the core answers itself: 404, 405 with Allow, HEAD, 413, 426, 501, fixed routes', async (t) => {
  let calls = 0;
  const { server, base } = await start((app) => {
    setupApp(app);
    app.get('/counted', (req, res) => {
      calls++;
      res.send('counted body');
    });
  });
  t.after(() => server.close({ drainTimeout: 500 }));

  const missing = await same(server, base, '/missing');
  assert.equal(missing.injected.status, 404);
  const wrong = await same(server, base, '/thing', { method: 'DELETE' });
  assert.equal(wrong.injected.status, 405);
  assert.equal(wrong.injected.headers.allow, wrong.real.headers.get('allow'));
  assert.equal(wrong.injected.headers.allow, 'GET, HEAD, POST');
  await same(server, base, '/thing', { method: 'POST' });
  await same(server, base, '/socket');
  assert.equal((await server.inject('/socket')).statusCode, 426);
  await same(server, base, '/users/1', { method: 'BREW' });
  assert.equal((await server.inject({ url: '/users/1', method: 'BREW' })).statusCode, 501);

  const fixed = await same(server, base, '/fixed');
  assert.equal(fixed.injected.headers['x-fixed'], 'yes');
  assert.equal(fixed.injected.headers['cache-control'], fixed.real.headers.get('cache-control'));

  // HEAD runs the GET route: its head, no body.
  const before = calls;
  const head = await same(server, base, '/counted', { method: 'HEAD' });
  assert.equal(head.injected.body, '');
  assert.equal(head.injected.headers['content-length'], String('counted body'.length));
  assert.equal(head.injected.headers['content-length'], head.real.headers.get('content-length'));
  assert.equal(calls, before + 2, 'the GET handler ran for both');
  const fixedHead = await same(server, base, '/fixed', { method: 'HEAD' });
  assert.equal(fixedHead.injected.headers['content-length'], String('a fixed page'.length));

  // Over the route's bodyLimit: 413 from the core, no handler.
  const tooBig = await same(server, base, '/small', { method: 'POST', body: 'x'.repeat(64) });
  assert.equal(tooBig.injected.status, 413);
  assert.match(tooBig.injected.body, /^ERR_HTTP_BODY_TOO_LARGE/);
  assert.equal(tooBig.injected.headers.connection, 'close');
});

test('inject on its own: an App without a server, routes added later, the peer address, bad input', async () => {
  const app = new App(0);
  app.get('/ip', (req) => ({ ip: req.ip, remote: req.remoteAddress, host: req.hostname, protocol: req.protocol }));
  assert.deepEqual((await app.inject('/ip')).json(), { ip: '127.0.0.1', remote: '127.0.0.1:0', host: 'localhost', protocol: 'http' });
  assert.deepEqual((await app.inject({ url: 'http://example.test:8080/ip', remoteAddress: '::1' })).json(), {
    ip: '::1',
    remote: '[::1]:0',
    host: 'example.test',
    protocol: 'http',
  });

  assert.equal((await app.inject('/later')).statusCode, 404);
  app.post('/later', async (req, res) => res.json({ body: await req.json(), type: req.header('content-type') }));
  const later = await app.inject({ method: 'post', url: '/later', body: { a: 1 } });
  assert.equal(later.statusCode, 200, 'the table is rebuilt when the routes change');
  assert.deepEqual(later.json(), { body: { a: 1 }, type: 'application/json' });
  assert.equal((await app.inject('/later')).statusCode, 405);

  // Middleware added later applies too: the routes are compiled anew.
  app.use((req, res, next) => (req.header('x-block') ? res.status(403).send('blocked') : next()));
  assert.equal((await app.inject({ url: '/ip', headers: { 'x-block': '1' } })).statusCode, 403);

  await assert.rejects(app.inject({ url: '/ip', headers: { 'x-bad': 'a\r\nb' } }), { code: 'ERR_INVALID_OPTION' });
  await assert.rejects(app.inject({}), { code: 'ERR_INVALID_OPTION' });

  // A table the server would refuse at listen is refused here too.
  app.get('/dup/:a', () => 'a');
  app.get('/dup/:b', () => 'b');
  await assert.rejects(app.inject('/ip'), { code: 'ERR_INVALID_OPTION' });
});

test('server.inject: handler errors are reported; the app module is loaded; workers > 0 is refused', async (t) => {
  const server = new Server({ workers: 0 });
  const errors = [];
  server.on('handlerError', (error, info) => errors.push({ error, info }));
  server.app.get('/boom', () => {
    throw new Error('secret detail');
  });
  server.app.get('/twice', (req, res) => {
    res.send('first');
    res.send('second');
  });
  const boom = await server.inject('/boom');
  assert.equal(boom.statusCode, 500);
  assert.equal(boom.json().error.code, 'ERR_HTTP_INTERNAL');
  assert.ok(!boom.text().includes('secret'));
  assert.equal((await server.inject('/twice')).text(), 'first');
  assert.deepEqual(
    errors.map((e) => [e.error.message ?? '', e.error.code, e.info.handler]),
    [
      ['secret detail', undefined, 'http'],
      ['ERR_HTTP_RESPONSE_SENT: send after the response was sent', 'ERR_HTTP_RESPONSE_SENT', 'http'],
    ],
  );

  const dir = mkdtempSync(path.join(os.tmpdir(), 'switchboard-inject-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const module = path.join(dir, 'app.mjs');
  writeFileSync(module, "export default (app) => { app.get('/from-module', (req, res) => res.send('module route')); };\n");
  const withModule = new Server({ workers: 0, app: pathToFileURL(module) });
  assert.equal((await withModule.inject('/from-module')).text(), 'module route', 'loaded before listen');
  await withModule.listen(0, '127.0.0.1');
  t.after(() => withModule.close({ drainTimeout: 500 }));
  const real = await fetch(`http://127.0.0.1:${withModule.port}/from-module`);
  assert.equal(await real.text(), 'module route', 'listen did not load it twice (a duplicate route would fail)');

  const pooled = new Server({ workers: 1, app: pathToFileURL(module) });
  await assert.rejects(pooled.inject('/from-module'), { code: 'ERR_INVALID_OPTION' });
});

test('inject before and after listen: the served routes keep their numbers', async (t) => {
  // inject compiles the routes apart from the table the server serves from.
  const server = new Server({ workers: 0 });
  server.app.get('/a', (req, res) => res.send('a'));
  server.app.get('/b', (req, res) => res.send('b'));
  assert.equal((await server.inject('/b')).text(), 'b');
  await server.listen(0, '127.0.0.1');
  t.after(() => server.close({ drainTimeout: 500 }));
  assert.equal((await server.inject('/a')).text(), 'a');
  assert.equal(await (await fetch(`http://127.0.0.1:${server.port}/b`)).text(), 'b');
  assert.equal(await (await fetch(`http://127.0.0.1:${server.port}/a`)).text(), 'a');
});
