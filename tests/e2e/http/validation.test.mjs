// Per-route JSON Schema validation end to end with fetch: valid and invalid
// params, query, headers and bodies, coercion of the strings of a URL,
// defaults, the error body's shape, `req.body` and `req.json()` after
// validation, a body of another type (415), and schemas refused at
// registration (and at `listen`, from a worker's app module).
import test from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Router, Server } from 'switchboard';
import { startHttp } from './support.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));

const start = startHttp;

const userSchema = {
  body: {
    type: 'object',
    required: ['name', 'email'],
    additionalProperties: false,
    properties: {
      name: { type: 'string', minLength: 1 },
      email: { type: 'string', format: 'email' },
      age: { type: 'integer', minimum: 0 },
      role: { type: 'string', enum: ['user', 'admin'], default: 'user' },
    },
  },
  query: {
    type: 'object',
    properties: {
      limit: { type: 'integer', minimum: 1, maximum: 100, default: 10 },
      dryRun: { type: 'boolean' },
      tag: { type: 'array', items: { type: 'string' } },
    },
  },
  params: {
    type: 'object',
    properties: { org: { type: 'integer' } },
  },
};

function setupUsers(app) {
  app.post('/orgs/:org/users', { schema: userSchema }, async (req) => ({
    body: req.body,
    again: await req.json(),
    same: req.body === (await req.json()),
    query: req.query,
    params: req.params,
    types: { org: typeof req.params.org, limit: typeof req.query.limit, dryRun: typeof req.query.dryRun },
  }));
}

const post = (url, body, headers = { 'content-type': 'application/json' }) =>
  fetch(url, { method: 'POST', body: typeof body === 'string' ? body : JSON.stringify(body), headers });

test('a valid request passes: query and params coerced, defaults applied, req.body and req.json()', async (t) => {
  const { server, base, errors } = await start(setupUsers);
  t.after(() => server.close({ drainTimeout: 500 }));

  const response = await post(`${base}/orgs/42/users?dryRun=true&tag=a`, { name: 'Ada', email: 'ada@example.com', age: 36 });
  assert.equal(response.status, 200);
  assert.deepEqual(await response.json(), {
    body: { name: 'Ada', email: 'ada@example.com', age: 36, role: 'user' },
    again: { name: 'Ada', email: 'ada@example.com', age: 36, role: 'user' },
    same: true,
    query: { dryRun: true, tag: ['a'], limit: 10 },
    params: { org: 42 },
    types: { org: 'number', limit: 'number', dryRun: 'boolean' },
  });

  const numbers = await post(`${base}/orgs/7/users?limit=25&tag=x&tag=y`, { name: 'Bo', email: 'bo@example.com' }, { 'content-type': 'application/json; charset=utf-8' });
  assert.equal(numbers.status, 200);
  assert.deepEqual((await numbers.json()).query, { limit: 25, tag: ['x', 'y'] });
  assert.deepEqual(errors, []);
});

test('invalid requests: 400 ERR_HTTP_VALIDATION with { location, path, message } details', async (t) => {
  let handled = 0;
  const { server, base } = await start((app) => {
    setupUsers(app);
    app.post('/count', { schema: { query: { type: 'object', properties: { n: { type: 'integer' } } }, body: { type: 'object' } } }, (req, res) => {
      handled++;
      res.send('ok');
    });
  });
  t.after(() => server.close({ drainTimeout: 500 }));

  const check = async (response, location, pathInLocation, message) => {
    assert.equal(response.status, 400);
    assert.equal(response.headers.get('content-type'), 'application/json; charset=utf-8');
    const body = await response.json();
    assert.deepEqual(Object.keys(body), ['error']);
    assert.deepEqual(Object.keys(body.error), ['code', 'message', 'details']);
    assert.equal(body.error.code, 'ERR_HTTP_VALIDATION');
    assert.equal(typeof body.error.message, 'string');
    assert.ok(Array.isArray(body.error.details) && body.error.details.length >= 1);
    const detail = body.error.details.find((d) => d.location === location);
    assert.ok(detail, `a detail for ${location}: ${JSON.stringify(body.error.details)}`);
    assert.deepEqual(Object.keys(detail), ['location', 'path', 'message']);
    assert.equal(detail.path, pathInLocation);
    if (message) assert.match(detail.message, message);
    return body.error;
  };

  const url = `${base}/orgs/1/users`;
  const missing = await check(await post(url, { email: 'a@b.co' }), 'body', '/name', /required property 'name'/);
  assert.match(missing.message, /^invalid body at \/name: must have required property 'name'$/);
  await check(await post(url, { name: 'A', email: 'not an email' }), 'body', '/email', /format "email"/);
  await check(await post(url, { name: 'A', email: 'a@b.co', age: -1 }), 'body', '/age', />= 0/);
  await check(await post(url, { name: 'A', email: 'a@b.co', age: '3' }), 'body', '/age', /integer/);
  await check(await post(url, { name: 'A', email: 'a@b.co', extra: 1 }), 'body', '/extra', /additional properties/);
  await check(await post(url, [1, 2]), 'body', '', /must be object/);
  await check(await post(`${url}?limit=abc`, { name: 'A', email: 'a@b.co' }), 'query', '/limit', /integer/);
  await check(await post(`${url}?limit=1000`, { name: 'A', email: 'a@b.co' }), 'query', '/limit', /<= 100/);
  await check(await post(`${base}/orgs/acme/users`, { name: 'A', email: 'a@b.co' }), 'params', '/org', /integer/);

  // Params and query both wrong: both reported, the body left unread.
  const both = await check(await post(`${base}/orgs/acme/users?limit=0`, '{not json'), 'params', '/org');
  assert.deepEqual(both.details.map((d) => d.location), ['params', 'query']);
  assert.match(both.message, /\(and 1 more\)$/);

  // Malformed JSON stays ERR_HTTP_INVALID_BODY; no body at all fails the schema.
  const malformed = await post(url, '{nope');
  assert.equal(malformed.status, 400);
  assert.equal((await malformed.json()).error.code, 'ERR_HTTP_INVALID_BODY');
  await check(await fetch(url, { method: 'POST' }), 'body', '', /must be object/);

  await check(await post(`${base}/count?n=1.5`, {}), 'query', '/n');
  assert.equal(handled, 0, 'no handler ran for an invalid request');
  assert.equal((await post(`${base}/count?n=2`, {})).status, 200);
  assert.equal(handled, 1);
});

test('a body schema with a body that is not JSON is 415 ERR_HTTP_UNSUPPORTED_MEDIA_TYPE', async (t) => {
  const { server, base } = await start(setupUsers);
  t.after(() => server.close({ drainTimeout: 500 }));
  for (const headers of [{ 'content-type': 'text/plain' }, { 'content-type': 'application/x-www-form-urlencoded' }, {}]) {
    const response = await fetch(`${base}/orgs/1/users`, { method: 'POST', body: 'name=A&email=a@b.co', headers });
    assert.equal(response.status, 415, JSON.stringify(headers));
    assert.equal((await response.json()).error.code, 'ERR_HTTP_UNSUPPORTED_MEDIA_TYPE');
  }
  // A +json type is JSON.
  const problem = await post(`${base}/orgs/1/users`, { name: 'A', email: 'a@b.co' }, { 'content-type': 'application/merge-patch+json' });
  assert.equal(problem.status, 200);
});

test('headers: validated on a copy, coerced for the check', async (t) => {
  const { server, base } = await start((app) => {
    app.get('/v', { schema: { headers: { type: 'object', required: ['x-api-version'], properties: { 'x-api-version': { type: 'integer', minimum: 2 } } } } }, (req) => ({
      header: req.headers['x-api-version'],
    }));
  });
  t.after(() => server.close({ drainTimeout: 500 }));
  const ok = await fetch(`${base}/v`, { headers: { 'X-Api-Version': '3' } });
  assert.deepEqual(await ok.json(), { header: '3' });
  const old = await fetch(`${base}/v`, { headers: { 'X-Api-Version': '1' } });
  assert.equal(old.status, 400);
  assert.deepEqual((await old.json()).error.details, [{ location: 'headers', path: '/x-api-version', message: 'must be >= 2' }]);
  const none = await fetch(`${base}/v`);
  assert.deepEqual((await none.json()).error.details, [{ location: 'headers', path: '/x-api-version', message: "must have required property 'x-api-version'" }]);
});

test('validation runs after the middleware and before the handlers, and errors reach the error handlers', async (t) => {
  const order = [];
  const { server, base } = await start((app) => {
    const api = new Router();
    api.use((req, res, next) => {
      order.push('middleware');
      next();
    });
    api.get('/items/:id', { schema: { params: { type: 'object', properties: { id: { type: 'integer' } } } } }, (req) => {
      order.push('handler');
      return { id: req.params.id };
    });
    api.setErrorHandler((error, req, res) => {
      order.push(`error:${error.code}`);
      res.status(error.status).json({ mine: true, details: error.details });
    });
    app.use('/api', api);
  });
  t.after(() => server.close({ drainTimeout: 500 }));
  assert.deepEqual(await (await fetch(`${base}/api/items/5`)).json(), { id: 5 });
  const bad = await fetch(`${base}/api/items/x`);
  assert.equal(bad.status, 400);
  assert.deepEqual(await bad.json(), { mine: true, details: [{ location: 'params', path: '/id', message: 'must be integer' }] });
  assert.deepEqual(order, ['middleware', 'handler', 'middleware', 'error:ERR_HTTP_VALIDATION']);
});

test('a schema that does not compile is ERR_INVALID_OPTION at registration', () => {
  const server = new Server({ workers: 0 });
  const refused = [
    { body: { type: 'objekt' } },
    { query: { type: 'object', properties: { n: { type: 'integer', minimun: 1 } } } },
    { body: { type: 'string', format: 'no-such-format' } },
    { params: { $ref: '#/definitions/missing' } },
    { querystring: { type: 'object' } },
    { body: 'not a schema' },
    'not an object',
  ];
  for (const schema of refused) {
    assert.throws(
      () => server.app.post('/x', { schema }, () => 'never'),
      (error) => error.code === 'ERR_INVALID_OPTION' && /POST \/x|schema/.test(error.message),
      JSON.stringify(schema),
    );
  }
  // The same `$id` on two routes (or two servers) is fine.
  const withId = () => ({ $id: 'https://example.com/user', type: 'object' });
  server.app.post('/a', { schema: { body: withId() } }, () => 'a');
  server.app.post('/b', { schema: { body: withId() } }, () => 'b');
  new Server({ workers: 0 }).app.post('/c', { schema: { body: withId() } }, () => 'c');
});

test('a schema that does not compile in a worker\'s app module fails listen', async (t) => {
  // The app module must resolve `switchboard` as the tests do: keep it beside them.
  const dir = mkdtempSync(path.join(here, '.tmp-validation-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const file = path.join(dir, 'bad-schema-app.mjs');
  writeFileSync(file, "export default (app) => { app.post('/x', { schema: { body: { type: 'nope' } } }, () => 'never'); };\n");
  const server = new Server({ workers: 1, app: pathToFileURL(file) });
  await assert.rejects(server.listen(0, '127.0.0.1'), (error) => {
    assert.equal(error.code, 'ERR_APP_LOAD');
    assert.match(String(error.message) + String(error.cause?.message ?? ''), /ERR_INVALID_OPTION|does not compile/);
    return true;
  });
  await server.close().catch(() => {});
});
