// The Redis session store (docs/http.md, "Sessions"; docs/scale-out.md,
// "Sessions"): `app.sessionStore()` keeps sessions in the broker's Redis,
// so a session made by one server (or worker) is read by every other.
// Real redis-server; servers in this process (workers: 0) and in child
// processes (tests/fixtures/session-node.mjs, workers: 2).
import test from 'node:test';
import assert from 'node:assert/strict';
import { fork } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { Server, MAX_SESSION_ID_LENGTH } from 'switchboard';
import { startRedis } from '../helpers/redis.mjs';
import { sleep, until } from './helpers.mjs';
import { Client, startSessionServer } from './session-helpers.mjs';

const nodeFixture = fileURLToPath(new URL('../fixtures/session-node.mjs', import.meta.url));
let runs = 0;
const freshPrefix = () => `sbsess${process.pid}x${++runs}:`;

/** A server in this process (workers: 0) with the session routes; its handlerError reports are kept. */
function startLocal(t, redis, prefix, options = {}) {
  return startSessionServer(t, { redis: redis.url, prefix, connectTimeout: 0.5, maxReconnectDelay: 0.2 }, options);
}

/** A server in this process sharding over several standalone Redis servers. */
async function startSharded(t, servers, prefix) {
  return (await startSessionServer(t, { redis: servers.map((r) => r.url), prefix, connectTimeout: 0.5 })).base;
}

/** A server as a child process with two workers. */
async function startChild(t, redis, prefix) {
  const child = fork(nodeFixture, [], {
    env: { ...process.env, REDIS_URL: redis.url, BROKER_PREFIX: prefix, WORKERS: '2' },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  t.after(() => child.kill('SIGKILL'));
  const [ready] = await once(child, 'message');
  assert.equal(ready.ready, true);
  return { child, base: `http://127.0.0.1:${ready.port}` };
}

test('a session made by one server is read by another process, and shared by its two workers', async (t) => {
  const redis = await startRedis(t);
  const prefix = freshPrefix();
  const local = await startLocal(t, redis, prefix);
  const remote = await startChild(t, redis, prefix);
  const client = new Client();

  const first = await client.json(local.base, '/visit', 'POST');
  assert.deepEqual({ isNew: first.isNew, visits: first.visits }, { isNew: true, visits: 1 });
  assert.equal(client.sid, first.id);
  // Written after the head went out: wait for it to land.
  const key = `${prefix}session:${first.id}`;
  await until(async () => (await redis.cli('GET', key)) === '{"visits":1}', 'the session in Redis');
  const pttl = Number(await redis.cli('PTTL', key));
  assert.ok(pttl > 50_000 && pttl <= 60_000, `PX ttl: ${pttl}`);

  // Each request on a new connection, so both workers of the other server take some.
  const workers = new Set();
  let visits = 1;
  for (let i = 0; i < 12 && workers.size < 2; i++) {
    const seen = await client.json(remote.base, '/visit', 'POST', true);
    assert.equal(seen.id, first.id, 'the same session');
    assert.equal(seen.isNew, false);
    assert.equal(seen.visits, ++visits, 'each request saw the one before');
    workers.add(seen.worker);
    await until(async () => (await redis.cli('GET', key)) === `{"visits":${visits}}`, 'the write');
  }
  assert.equal(workers.size, 2, 'both workers served the session');
  assert.equal((await client.json(local.base, '/whoami')).visits, visits, 'and the first server reads what they wrote');
});

test('sharded over two Redis servers: each session lives on the one its id routes to, and every server finds it there', async (t) => {
  const servers = [await startRedis(t), await startRedis(t)];
  const prefix = freshPrefix();
  const [one, two] = [await startSharded(t, servers, prefix), await startSharded(t, servers, prefix)];
  const holders = [0, 0];
  // Random ids: 16 sessions all on one server is one chance in 2^15.
  for (let i = 0; i < 16; i++) {
    const client = new Client();
    const made = await client.json(one, '/visit', 'POST');
    const key = `${prefix}session:${made.id}`;
    const where = await until(async () => {
      const found = await Promise.all(servers.map((r) => r.cli('EXISTS', key)));
      return found.includes('1') && found;
    }, 'the session');
    assert.deepEqual([...where].sort(), ['0', '1'], 'on exactly one server');
    holders[where.indexOf('1')]++;
    const seen = await client.json(two, '/whoami');
    assert.deepEqual({ id: seen.id, visits: seen.visits }, { id: made.id, visits: 1 }, 'the other server reads it');
  }
  assert.ok(holders[0] > 0 && holders[1] > 0, `spread over both: ${holders}`);
});

test('expiry by TTL, rolling touch, destroy', async (t) => {
  const redis = await startRedis(t);
  const prefix = freshPrefix();
  const { base } = await startLocal(t, redis, prefix, { ttl: 600 });

  // Rolling: every request pushes the expiry back, so the session outlives its TTL.
  const client = new Client();
  const made = await client.json(base, '/visit', 'POST');
  const key = `${prefix}session:${made.id}`;
  await until(async () => (await redis.cli('EXISTS', key)) === '1', 'the session');
  for (let i = 0; i < 5; i++) {
    await sleep(250);
    const seen = await client.json(base, '/whoami');
    assert.equal(seen.id, made.id, `alive after ${(i + 1) * 250} ms`);
    assert.equal(seen.visits, 1);
  }
  await until(async () => Number(await redis.cli('PTTL', key)) > 450, 'the touch');

  // Unused, it expires (Redis's own expiry), and the old cookie gets a new session.
  await sleep(750);
  assert.equal(await redis.cli('EXISTS', key), '0');
  const after = await client.json(base, '/whoami');
  assert.equal(after.isNew, true);
  assert.notEqual(after.id, made.id);
  assert.equal(after.visits, 0);

  // Destroy: the key goes, the cookie is cleared, and the old cookie is worth nothing.
  const other = new Client();
  const session = await other.json(base, '/visit', 'POST');
  const otherKey = `${prefix}session:${session.id}`;
  await until(async () => (await redis.cli('EXISTS', otherKey)) === '1', 'the session');
  const kept = other.cookie;
  await other.json(base, '/logout', 'POST');
  assert.equal(other.cookie, undefined, 'cleared');
  await until(async () => (await redis.cli('EXISTS', otherKey)) === '0', 'DEL');
  const replay = await new Client(kept).json(base, '/whoami');
  assert.equal(replay.isNew, true);
  assert.notEqual(replay.id, session.id);
});

test('forged, tampered or unknown session cookies get a new session', async (t) => {
  const redis = await startRedis(t);
  const prefix = freshPrefix();
  const { base } = await startLocal(t, redis, prefix);
  const real = new Client();
  const made = await real.json(base, '/visit', 'POST');
  await until(async () => (await redis.cli('EXISTS', `${prefix}session:${made.id}`)) === '1', 'the session');

  const unsigned = await new Client(made.id).json(base, '/whoami');
  const cookie = decodeURIComponent(real.cookie);
  const tampered = cookie.slice(0, 10) + (cookie[10] === 'A' ? 'B' : 'A') + cookie.slice(11);
  const forged = await new Client(encodeURIComponent(tampered)).json(base, '/whoami');
  for (const seen of [unsigned, forged]) {
    assert.equal(seen.isNew, true);
    assert.notEqual(seen.id, made.id);
    assert.equal(seen.visits, 0);
  }
  // A well-signed id Redis does not know (deleted behind the server's back).
  await redis.cli('DEL', `${prefix}session:${made.id}`);
  const unknown = await real.json(base, '/whoami');
  assert.equal(unknown.isNew, true);
  assert.notEqual(unknown.id, made.id, 'ids are only ever made by the server');
});

test('Redis down: loading a session fails the request with a 500, new sessions are served and their save reported; the server goes on', async (t) => {
  const redis = await startRedis(t);
  const prefix = freshPrefix();
  const { base, reports } = await startLocal(t, redis, prefix);
  const client = new Client();
  const made = await client.json(base, '/visit', 'POST');
  await until(async () => (await redis.cli('EXISTS', `${prefix}session:${made.id}`)) === '1', 'the session');

  await redis.stop();
  const started = Date.now();
  const failed = await client.fetch(base, '/whoami');
  assert.equal(failed.status, 500);
  await failed.text();
  assert.ok(Date.now() - started < 3000, 'bounded by connectTimeout');
  await until(() => reports.some((e) => e.code === 'ERR_SESSION_STORE'), 'the load failure reported');
  const load = reports.find((e) => e.code === 'ERR_SESSION_STORE');
  assert.equal(load.cause?.code, 'ERR_BROKER_UNAVAILABLE');

  // A visitor without a session is served; the save fails after the response and is reported.
  reports.length = 0;
  const visitor = new Client();
  const served = await visitor.json(base, '/visit', 'POST');
  assert.equal(served.visits, 1);
  await until(() => reports.some((e) => e.code === 'ERR_SESSION_STORE' && e.cause?.code === 'ERR_BROKER_UNAVAILABLE'), 'the save failure reported');

  // Redis back (empty: no persistence): the server finds it again on its own.
  await redis.start();
  await until(async () => (await client.fetch(base, '/whoami')).status === 200, 'sessions again', 8000);

  // A Redis that answers nothing (frozen): each request waits connectTimeout (0.5 s) at most.
  const frozen = new Client();
  await frozen.json(base, '/visit', 'POST');
  await until(async () => (await redis.cli('EXISTS', `${prefix}session:${frozen.sid}`)) === '1', 'the session');
  redis.pause();
  const waited = Date.now();
  const timedOut = await frozen.fetch(base, '/whoami');
  await timedOut.text();
  redis.resume();
  assert.equal(timedOut.status, 500);
  assert.ok(Date.now() - waited >= 400 && Date.now() - waited < 2500, `waited ${Date.now() - waited} ms`);
  assert.equal((await frozen.json(base, '/whoami')).visits, 1, 'the same session once Redis answers again');
  await until(async () => (await client.fetch(base, '/whoami')).status === 200, 'sessions again', 8000);
  const again = await new Client().json(base, '/visit', 'POST');
  await until(async () => (await redis.cli('EXISTS', `${prefix}session:${again.id}`)) === '1', 'a new session stored');
});

test('the store refuses bad ids, TTLs and sizes with clear codes', async (t) => {
  const redis = await startRedis(t);
  const prefix = freshPrefix();
  const { server } = await startLocal(t, redis, prefix);
  const store = server.sessionStore({ prefix: `${prefix}custom:`, maxSessionBytes: 64 });
  assert.equal(store.prefix, `${prefix}custom:`);

  await store.set('my-id', { a: 1 }, 5000);
  assert.equal(await redis.cli('GET', `${prefix}custom:my-id`), '{"a":1}');
  assert.deepEqual(await store.get('my-id'), { a: 1 });
  await store.touch('my-id', 100_000);
  assert.ok(Number(await redis.cli('PTTL', `${prefix}custom:my-id`)) > 90_000);
  await store.touch('nobody', 1000); // nothing for an unknown one
  assert.equal(await redis.cli('EXISTS', `${prefix}custom:nobody`), '0');
  await store.destroy('my-id');
  assert.equal(await store.get('my-id'), undefined);

  // What is not a session object reads as none.
  await redis.cli('SET', `${prefix}custom:junk`, 'not json');
  await redis.cli('SET', `${prefix}custom:list`, '[1,2]');
  assert.equal(await store.get('junk'), undefined);
  assert.equal(await store.get('list'), undefined);

  for (const id of ['', 'has space', 'x'.repeat(MAX_SESSION_ID_LENGTH + 1), 'é', 42]) {
    await assert.rejects(store.get(id), { code: 'ERR_INVALID_OPTION' }, JSON.stringify(id));
  }
  assert.deepEqual(await store.get('x'.repeat(MAX_SESSION_ID_LENGTH)), undefined, 'the longest id is fine');
  for (const ttl of [0, -1, NaN, Infinity, '10', 2 ** 54]) {
    await assert.rejects(store.set('ok', {}, ttl), { code: 'ERR_INVALID_OPTION' }, String(ttl));
    await assert.rejects(store.touch('ok', ttl), { code: 'ERR_INVALID_OPTION' }, String(ttl));
  }
  await assert.rejects(store.set('ok', { big: 'x'.repeat(64) }, 1000), { code: 'ERR_SESSION_TOO_LARGE' });
  const cyclic = {};
  cyclic.self = cyclic;
  await assert.rejects(store.set('ok', cyclic, 1000), { code: 'ERR_INVALID_OPTION' });
  assert.equal(await redis.cli('EXISTS', `${prefix}custom:ok`), '0');
  await store.set('ok', {}, 1.5); // a fraction of a ms rounds up
  assert.throws(() => server.sessionStore({ maxSessionBytes: 0 }), { code: 'ERR_INVALID_OPTION' });
  assert.throws(() => server.sessionStore({ prefix: 7 }), { code: 'ERR_INVALID_OPTION' });
});

test('without a broker, or with NATS, making the store throws ERR_INVALID_OPTION; before listen its calls reject', async (t) => {
  assert.throws(() => new Server({ workers: 0 }).sessionStore(), { code: 'ERR_INVALID_OPTION', message: /give the server a broker/ });
  assert.throws(() => new Server({ workers: 0 }).app.sessionStore(), { code: 'ERR_INVALID_OPTION' });
  assert.throws(() => new Server({ workers: 0, broker: { nats: 'nats://127.0.0.1:4222' } }).sessionStore(), { code: 'ERR_INVALID_OPTION', message: /NATS/ });
  assert.equal(new Server({ workers: 0, broker: { cluster: 'redis://127.0.0.1:7000', prefix: 'c:' } }).sessionStore().prefix, 'c:session:', 'a cluster keeps sessions');
  const idle = new Server({ workers: 0, broker: { redis: 'redis://127.0.0.1:1', prefix: 'app:' } });
  const store = idle.sessionStore();
  assert.equal(store.prefix, 'app:session:', 'under the broker prefix');
  await assert.rejects(store.get('abc'), { code: 'ERR_NOT_LISTENING' });
});
