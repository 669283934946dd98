// Lifecycle hooks with a real client: the order of the phases across
// nested routers, async hooks, onSend replacing the payload, onResponse
// after the end, onError observing, and a failing hook answered by the
// error handlers.
import test from 'node:test';
import assert from 'node:assert/strict';
import { HttpError, Router, Server } from 'switchboard';
import { startHttp } from './support.mjs';

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** A server for `setup` (support.mjs); `errors` are `{ error, info }` reports. */
const start = async (setup, options) => {
  const started = await startHttp(setup, options);
  return { ...started, errors: started.reports };
};

/** Resolves once `check()` holds (hooks that run after the response). */
async function eventually(check, timeoutMs = 2000) {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('timed out');
    await sleep(2);
  }
}

test('phases run in order, outer routers first, only for their routes', async (t) => {
  const trail = [];
  const phases = (router, name) => {
    router.addHook('onRequest', (req) => void trail.push(`onRequest ${name}`));
    router.addHook('preHandler', () => void trail.push(`preHandler ${name}`));
    router.addHook('onSend', (req, res, payload) => {
      trail.push(`onSend ${name}`);
      return payload;
    });
    router.addHook('onResponse', () => void trail.push(`onResponse ${name}`));
    router.use((req, res, next) => {
      trail.push(`middleware ${name}`);
      next();
    });
  };
  const api = new Router();
  const admin = new Router();
  phases(admin, 'admin');
  admin.get('/stats', (req, res) => {
    trail.push('handler');
    res.send('stats');
  });
  phases(api, 'api');
  api.get('/items', (req, res) => {
    trail.push('handler');
    res.send('items');
  });
  api.use('/admin', admin);

  const { server, base } = await start((app) => {
    // Registered after the routes and routers: hooks apply whatever the order.
    app.use('/api', api);
    app.get('/plain', (req, res) => {
      trail.push('handler');
      res.send('plain');
    });
    phases(app, 'app');
  });
  t.after(() => server.close({ drainTimeout: 500 }));

  assert.equal(await (await fetch(`${base}/api/admin/stats`)).text(), 'stats');
  await eventually(() => trail.length === 16);
  assert.deepEqual(trail.splice(0), [
    'onRequest app',
    'onRequest api',
    'onRequest admin',
    'middleware app',
    'middleware api',
    'middleware admin',
    'preHandler app',
    'preHandler api',
    'preHandler admin',
    'handler',
    'onSend app',
    'onSend api',
    'onSend admin',
    'onResponse app',
    'onResponse api',
    'onResponse admin',
  ]);

  assert.equal(await (await fetch(`${base}/plain`)).text(), 'plain');
  await eventually(() => trail.length === 6);
  assert.deepEqual(trail.splice(0), ['onRequest app', 'middleware app', 'preHandler app', 'handler', 'onSend app', 'onResponse app'], "a router's hooks stay with its routes");

  // The same chain through inject().
  assert.equal((await server.inject('/api/items')).text(), 'items');
  await eventually(() => trail.length === 11);
  assert.deepEqual(trail.splice(0), [
    'onRequest app',
    'onRequest api',
    'middleware app',
    'middleware api',
    'preHandler app',
    'preHandler api',
    'handler',
    'onSend app',
    'onSend api',
    'onResponse app',
    'onResponse api',
  ]);
});

test('async hooks are awaited in order, and the request waits for them', async (t) => {
  const trail = [];
  const { server, base } = await start((app) => {
    app.addHook('onRequest', async (req) => {
      await sleep(20);
      trail.push('onRequest slow');
      req.user = 'ada';
    });
    app.addHook('onRequest', () => void trail.push('onRequest fast'));
    app.addHook('preHandler', async () => {
      await sleep(10);
      trail.push('preHandler');
    });
    app.addHook('onSend', async (req, res, payload) => {
      await sleep(10);
      trail.push('onSend');
      return `${payload} (checked)`;
    });
    app.addHook('onResponse', async () => {
      await sleep(10);
      trail.push('onResponse slow');
    });
    app.addHook('onResponse', () => void trail.push('onResponse fast'));
    app.get('/me', (req) => {
      trail.push('handler');
      return `hello ${req.user}`;
    });
  });
  t.after(() => server.close({ drainTimeout: 500 }));

  assert.equal(await (await fetch(`${base}/me`)).text(), 'hello ada (checked)');
  await eventually(() => trail.length === 7);
  assert.deepEqual(trail, ['onRequest slow', 'onRequest fast', 'preHandler', 'handler', 'onSend', 'onResponse slow', 'onResponse fast']);
});

test('onSend replaces the payload of whole responses, may set headers, and leaves streams alone', async (t) => {
  let streamedSeen = false;
  const { server, base } = await start((app) => {
    app.addHook('onSend', (req, res, payload) => {
      if (req.path === '/stream') streamedSeen = true;
      if (req.path === '/json') {
        res.header('X-Wrapped', 'yes');
        return JSON.stringify({ data: JSON.parse(payload) });
      }
      if (req.path === '/bytes') return Buffer.from([...payload].reverse());
      if (req.path === '/nothing') return null;
      return undefined;
    });
    app.addHook('onSend', (req, res, payload) => (req.path === '/text' ? payload.toUpperCase() : payload));
    app.get('/json', (req, res) => res.json({ a: 1 }));
    app.get('/text', (req, res) => res.send('shout'));
    app.get('/bytes', (req, res) => res.send(Buffer.from([1, 2, 3])));
    app.get('/nothing', (req, res) => res.send('gone'));
    app.get('/stream', (req, res) => {
      res.write('not ');
      res.end('touched');
    });
  });
  t.after(() => server.close({ drainTimeout: 500 }));

  const json = await fetch(`${base}/json`);
  assert.equal(json.headers.get('x-wrapped'), 'yes', 'a header set in onSend goes out');
  assert.equal(json.headers.get('content-type'), 'application/json; charset=utf-8');
  const jsonBody = await json.text();
  assert.deepEqual(JSON.parse(jsonBody), { data: { a: 1 } });
  assert.equal(json.headers.get('content-length'), String(jsonBody.length), 'the length is the new payload\'s');
  assert.equal(await (await fetch(`${base}/text`)).text(), 'SHOUT', 'each hook gets the previous one\'s payload');
  assert.deepEqual([...new Uint8Array(await (await fetch(`${base}/bytes`)).arrayBuffer())], [3, 2, 1]);
  const nothing = await fetch(`${base}/nothing`);
  assert.equal(await nothing.text(), '');
  assert.equal(nothing.headers.get('content-length'), '0');
  assert.equal(await (await fetch(`${base}/stream`)).text(), 'not touched');
  assert.equal(streamedSeen, false, 'onSend does not run for a streamed body');
});

test('onResponse runs after the end and only observes; its errors are reported', async (t) => {
  let seen;
  const { server, base, errors } = await start((app) => {
    app.addHook('onResponse', (req, res) => {
      seen = { finished: res.finished, status: res.statusCode };
      res.send('too late');
    });
    app.addHook('onResponse', async () => {
      throw new Error('onResponse failed');
    });
    app.get('/ok', (req, res) => res.status(202).send('accepted'));
  });
  t.after(() => server.close({ drainTimeout: 500 }));

  const response = await fetch(`${base}/ok`);
  assert.equal(response.status, 202);
  assert.equal(await response.text(), 'accepted');
  await eventually(() => errors.length === 2);
  assert.deepEqual(seen, { finished: true, status: 202 });
  assert.deepEqual(errors.map((e) => e.error.code ?? e.error.message).sort(), ['ERR_HTTP_RESPONSE_SENT', 'onResponse failed']);
  assert.equal(await (await fetch(`${base}/ok`)).text(), 'accepted', 'the server goes on');
});

test('onError observes the first error before the error handlers answer', async (t) => {
  const observed = [];
  const { server, base, errors } = await start((app) => {
    app.addHook('onError', async (req, res, error) => {
      await sleep(5);
      observed.push([req.path, error.code ?? error.message]);
    });
    app.addHook('onError', () => {
      throw new Error('observer failed');
    });
    app.setErrorHandler((error, req, res, next) => {
      if (error.code === 'ERR_MINE') return res.status(418).json({ handled: observed.length });
      next(error);
    });
    app.get('/mine', () => {
      throw new HttpError(400, 'ERR_MINE', 'mine');
    });
    app.get('/other', async () => {
      throw new HttpError(409, 'ERR_OTHER', 'other');
    });
    app.get('/fine', () => 'fine');
  });
  t.after(() => server.close({ drainTimeout: 500 }));

  const mine = await fetch(`${base}/mine`);
  assert.equal(mine.status, 418);
  assert.deepEqual(await mine.json(), { handled: 1 }, 'the observers ran before the error handler');
  const other = await fetch(`${base}/other`);
  assert.equal(other.status, 409, 'the default handler answers after the observers');
  assert.equal(await (await fetch(`${base}/fine`)).text(), 'fine');
  assert.deepEqual(observed, [
    ['/mine', 'ERR_MINE'],
    ['/other', 'ERR_OTHER'],
  ]);
  assert.equal(errors.filter((e) => e.error.message === 'observer failed').length, 2, "an observer's error is reported, not answered");
});

test('a hook that throws or rejects goes to the error handlers; a hook that answers stops the chain', async (t) => {
  let handlerRan = 0;
  const api = new Router();
  api.addHook('preHandler', async (req) => {
    if (req.header('x-reject')) throw new HttpError(422, 'ERR_REJECTED', 'rejected in preHandler');
  });
  api.setErrorHandler((error, req, res, next) => (error.code === 'ERR_REJECTED' ? res.status(422).send('api handled it') : next(error)));
  api.get('/thing', () => {
    handlerRan++;
    return 'thing';
  });

  const { server, base } = await start((app) => {
    app.addHook('onRequest', (req, res) => {
      if (req.header('x-deny')) return res.status(403).send('denied by a hook');
      if (req.header('x-throw')) throw new HttpError(401, 'ERR_NO_TOKEN', 'no token');
    });
    app.addHook('onSend', (req, res, payload) => {
      if (req.header('x-break-send')) throw new Error('onSend broke');
      if (req.header('x-bad-payload')) return { not: 'a payload' };
      return payload;
    });
    app.use('/api', api);
  });
  t.after(() => server.close({ drainTimeout: 500 }));

  const denied = await fetch(`${base}/api/thing`, { headers: { 'x-deny': '1' } });
  assert.equal(denied.status, 403);
  assert.equal(await denied.text(), 'denied by a hook');
  const unauthorized = await fetch(`${base}/api/thing`, { headers: { 'x-throw': '1' } });
  assert.equal(unauthorized.status, 401);
  assert.equal((await unauthorized.json()).error.code, 'ERR_NO_TOKEN');
  const rejected = await fetch(`${base}/api/thing`, { headers: { 'x-reject': '1' } });
  assert.equal(rejected.status, 422);
  assert.equal(await rejected.text(), 'api handled it');
  assert.equal(handlerRan, 0, 'the handler never ran');

  const broken = await fetch(`${base}/api/thing`, { headers: { 'x-break-send': '1' } });
  assert.equal(broken.status, 500, 'an onSend error is answered by the error handlers');
  assert.equal((await broken.json()).error.code, 'ERR_HTTP_INTERNAL');
  const badPayload = await fetch(`${base}/api/thing`, { headers: { 'x-bad-payload': '1' } });
  assert.equal(badPayload.status, 500);
  assert.equal(handlerRan, 2);
  assert.equal(await (await fetch(`${base}/api/thing`)).text(), 'thing');
});

test('hooks are checked at registration', () => {
  const router = new Router();
  assert.throws(() => router.addHook('onFoo', () => {}), { code: 'ERR_INVALID_OPTION' });
  assert.throws(() => router.addHook('preSerialization', () => {}), { code: 'ERR_INVALID_OPTION' });
  assert.throws(() => router.addHook('onRequest', 'not a function'), { code: 'ERR_INVALID_OPTION' });
  const server = new Server({ workers: 0 });
  assert.throws(() => server.app.addHook('onsend', () => {}), { code: 'ERR_INVALID_OPTION' });
  assert.equal(server.app.addHook('onSend', (req, res, payload) => payload), server.app, 'chains');
});
