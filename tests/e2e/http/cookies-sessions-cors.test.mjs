// Cookies (parsing, Set-Cookie attributes, signing and key rotation),
// sessions (login, logout, regenerate, TTL, rolling expiry, the memory
// store's bound, store failures) and CORS (simple requests, preflights on
// the app and on a mounted router, credentials, refused origins), end to
// end with fetch and raw sockets against a server on port 0.
import test from 'node:test';
import assert from 'node:assert/strict';
import { MemoryStore, Router, Server, cors, session } from 'switchboard';
import { exchange, startHttp } from './support.mjs';

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const OLD_SECRET = 'an-older-secret-of-at-least-32-bytes!!';
const NEW_SECRET = 'the-newest-secret-of-at-least-32-bytes!';

const start = startHttp;

/** The `name=value` part of each Set-Cookie line, by name (the last line of a name wins). */
function setCookies(response) {
  const cookies = {};
  for (const line of response.headers.getSetCookie()) {
    const pair = line.split(';')[0];
    const equals = pair.indexOf('=');
    cookies[pair.slice(0, equals)] = { value: pair.slice(equals + 1), line };
  }
  return cookies;
}

/** A minimal cookie jar over fetch: keeps what Set-Cookie says, drops what Max-Age=0 clears. */
class Client {
  constructor(base) {
    this.base = base;
    this.jar = new Map();
  }

  async fetch(path, init = {}) {
    const cookie = [...this.jar].map(([name, value]) => `${name}=${value}`).join('; ');
    const response = await fetch(`${this.base}${path}`, { ...init, headers: { ...init.headers, ...(cookie ? { cookie } : {}) } });
    for (const [name, { value, line }] of Object.entries(setCookies(response))) {
      if (/Max-Age=0/.test(line)) this.jar.delete(name);
      else this.jar.set(name, value);
    }
    return response;
  }

  async json(path, init) {
    const response = await this.fetch(path, init);
    assert.equal(response.status, 200, `${path}: ${response.status}`);
    return { body: await response.json(), response };
  }

  /** The session id inside the signed `sid` cookie. */
  get sid() {
    const raw = this.jar.get('sid');
    return raw === undefined ? undefined : /^s:([A-Za-z0-9_-]{32})\.[A-Za-z0-9_-]{43}$/.exec(decodeURIComponent(raw))?.[1];
  }
}

function raw(path, headers, method = 'GET') {
  return `${method} ${path} HTTP/1.1\r\nHost: x\r\n${Object.entries(headers).map(([name, value]) => `${name}: ${value}\r\n`).join('')}Connection: close\r\n\r\n`;
}

// -- Cookies -----------------------------------------------------------------

test('the Cookie header is parsed leniently: quotes, escapes, junk, repeats, several lines, UTF-8', async (t) => {
  const { server, port, base } = await start((app) => {
    app.get('/cookies', (req) => ({ cookies: req.cookies, nullProto: Object.getPrototypeOf(req.cookies) === null, same: req.cookies === req.cookies }));
  });
  t.after(() => server.close({ drainTimeout: 500 }));

  const header = 'a=1; b="quoted value"; c=%E2%9C%93; bad; =noname; d=x=y; a=second; __proto__=p; e=%ZZ;   f = spaced  ;;';
  const { cookies, nullProto, same } = await (await fetch(`${base}/cookies`, { headers: { cookie: header } })).json();
  assert.deepEqual(cookies, { a: '1', b: 'quoted value', c: '✓', d: 'x=y', ['__proto__']: 'p', e: '%ZZ', f: 'spaced' });
  assert.equal(nullProto, true, 'no prototype: a cookie named __proto__ is a cookie');
  assert.equal(same, true, 'parsed once');

  assert.deepEqual((await (await fetch(`${base}/cookies`)).json()).cookies, {}, 'no Cookie header: no cookies');

  // Two Cookie lines (HTTP/2 proxies split them) and raw UTF-8 bytes.
  const { response } = await exchange(port, Buffer.concat([Buffer.from('GET /cookies HTTP/1.1\r\nHost: x\r\nCookie: a=1; b=2\r\nCookie: c=3; g='), Buffer.from('café', 'utf8'), Buffer.from('\r\nConnection: close\r\n\r\n')]));
  assert.deepEqual(JSON.parse(response.body.toString()).cookies, { a: '1', b: '2', c: '3', g: 'café' });
});

test('res.cookie writes every attribute, encodes values that need it, and refuses what browsers drop', async (t) => {
  const refusals = {};
  const { server, base } = await start((app) => {
    app.get('/set', (req, res) => {
      res.cookie('full', 'v', {
        domain: 'example.com',
        path: '/p',
        expires: new Date(Date.UTC(2030, 0, 2, 3, 4, 5)),
        maxAge: 3600.7,
        secure: true,
        httpOnly: true,
        sameSite: 'none',
        partitioned: true,
        priority: 'high',
      });
      res.cookie('enc', 'a b;c,"d"%41é');
      res.cookie('lax', 'l', { sameSite: 'Lax', priority: 'Low' });
      res.clearCookie('old', { path: '/p', domain: 'example.com' });
      const attempts = {
        noneWithoutSecure: { sameSite: 'none' },
        partitionedWithoutSecure: { partitioned: true },
        badSameSite: { sameSite: 'sometimes' },
        badPriority: { priority: 'urgent' },
        badDomain: { domain: 'a.com; Secure' },
        badPath: { path: '/a;b' },
        badExpires: { expires: new Date('nope') },
        badMaxAge: { maxAge: Number.NaN },
      };
      for (const [name, options] of Object.entries(attempts)) {
        try {
          res.cookie('x', 'y', options);
        } catch (error) {
          refusals[name] = error.code;
        }
      }
      for (const [name, args] of Object.entries({ badName: ['a b', 'v'], hostWithoutPath: ['__Host-x', 'v', { secure: true }], secureWithoutSecure: ['__Secure-x', 'v'], notString: ['n', 42] })) {
        try {
          res.cookie(...args);
        } catch (error) {
          refusals[name] = error.code;
        }
      }
      res.cookie('__Host-ok', 'v', { secure: true, path: '/' });
      res.send('ok');
    });
    app.get('/echo', (req) => req.cookies);
  });
  t.after(() => server.close({ drainTimeout: 500 }));

  const response = await fetch(`${base}/set`);
  assert.equal(response.status, 200);
  const lines = response.headers.getSetCookie();
  assert.deepEqual(lines, [
    'full=v; Domain=example.com; Path=/p; Expires=Wed, 02 Jan 2030 03:04:05 GMT; Max-Age=3600; Secure; HttpOnly; SameSite=None; Partitioned; Priority=High',
    'enc=a%20b%3Bc%2C%22d%22%2541%C3%A9',
    'lax=l; SameSite=Lax; Priority=Low',
    'old=; Domain=example.com; Path=/p; Expires=Thu, 01 Jan 1970 00:00:00 GMT; Max-Age=0',
    '__Host-ok=v; Path=/; Secure',
  ]);
  const every = ['noneWithoutSecure', 'partitionedWithoutSecure', 'badSameSite', 'badPriority', 'badDomain', 'badPath', 'badExpires', 'badMaxAge', 'badName', 'hostWithoutPath', 'secureWithoutSecure', 'notString'];
  assert.deepEqual(refusals, Object.fromEntries(every.map((name) => [name, 'ERR_INVALID_OPTION'])));

  // What was encoded reads back as it was set.
  const echoed = await (await fetch(`${base}/echo`, { headers: { cookie: 'enc=a%20b%3Bc%2C%22d%22%2541%C3%A9' } })).json();
  assert.equal(echoed.enc, 'a b;c,"d"%41é');
});

test('signed cookies: accepted when intact, absent when tampered, moved or unsigned', async (t) => {
  const { server, base } = await start((app) => {
    app.cookieSecrets = [NEW_SECRET];
    app.get('/set', (req, res) => {
      res.cookie('user', 'alice', { signed: true, httpOnly: true });
      res.cookie('plain', 'x');
      res.send('ok');
    });
    app.get('/read', (req) => ({ signed: req.signedCookies, unsign: req.unsign('user') ?? null, raw: req.cookies.user ?? null }));
  });
  t.after(() => server.close({ drainTimeout: 500 }));

  const set = setCookies(await fetch(`${base}/set`));
  const signed = set.user.value;
  assert.match(signed, /^s:alice\.[A-Za-z0-9_-]{43}$/);
  assert.match(set.user.line, /; HttpOnly$/);
  const mac = signed.slice(signed.lastIndexOf('.') + 1);
  const read = async (cookie) => (await fetch(`${base}/read`, { headers: { cookie } })).json();

  const good = await read(`user=${signed}; plain=x`);
  assert.deepEqual(good.signed, { user: 'alice' }, 'only verified cookies, not the plain one');
  assert.deepEqual(good.unsign, { value: 'alice', stale: false });
  assert.equal(good.raw, signed, 'req.cookies has the raw signed value');

  const flipped = mac[5] === 'A' ? 'B' : 'A';
  for (const tampered of [
    `user=s:admin.${mac}`,
    `user=s:alice.${mac.slice(0, 5)}${flipped}${mac.slice(6)}`,
    `user=s:alice.${mac.slice(0, -1)}`,
    'user=alice',
    `user=s:alice`,
  ]) {
    const result = await read(tampered);
    assert.deepEqual(result.signed, {}, tampered);
    assert.equal(result.unsign, null, tampered);
  }
  // The MAC covers the name: the same signed value under another name is refused.
  assert.deepEqual((await read(`other=${signed}`)).signed, {});
});

test('cookie secrets are checked, and signing without them fails', async (t) => {
  let noSecret;
  const { server, base } = await start((app) => {
    for (const bad of ['short', [], ['x'.repeat(31)], [123], [Buffer.alloc(16)]]) {
      assert.throws(() => (app.cookieSecrets = bad), { code: 'ERR_INVALID_OPTION' }, JSON.stringify(bad));
    }
    app.get('/', (req, res) => {
      try {
        res.cookie('a', 'b', { signed: true });
      } catch (error) {
        noSecret = error.code;
      }
      res.json({ signed: req.signedCookies, unsign: req.unsign('a') ?? null });
    });
  });
  t.after(() => server.close({ drainTimeout: 500 }));
  const body = await (await fetch(`${base}/`, { headers: { cookie: 'a=s:b.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA' } })).json();
  assert.equal(noSecret, 'ERR_COOKIE_NO_SECRET');
  assert.deepEqual(body, { signed: {}, unsign: null }, 'without secrets nothing verifies');
  // A Buffer of 32 bytes is a secret.
  server.app.cookieSecrets = Buffer.alloc(32, 1);
});

test('key rotation: a cookie signed with an older secret is accepted and reported stale, then re-signed; a dropped secret is refused', async (t) => {
  const { server, base } = await start((app) => {
    app.cookieSecrets = [OLD_SECRET];
    app.get('/set', (req, res) => res.cookie('user', 'bob', { signed: true }).send('ok'));
    app.get('/read', (req, res) => {
      const cookie = req.unsign('user');
      // The app's part of a rotation: send a stale cookie again.
      if (cookie?.stale) res.cookie('user', cookie.value, { signed: true });
      res.json(cookie ?? null);
    });
  });
  t.after(() => server.close({ drainTimeout: 500 }));

  const old = setCookies(await fetch(`${base}/set`)).user.value;
  server.app.cookieSecrets = [NEW_SECRET, OLD_SECRET];
  const response = await fetch(`${base}/read`, { headers: { cookie: `user=${old}` } });
  assert.deepEqual(await response.json(), { value: 'bob', stale: true });
  const renewed = setCookies(response).user.value;
  assert.match(renewed, /^s:bob\./);
  assert.notEqual(renewed, old, 'signed with the newest secret');

  const again = await fetch(`${base}/read`, { headers: { cookie: `user=${renewed}` } });
  assert.deepEqual(await again.json(), { value: 'bob', stale: false });
  assert.equal(again.headers.getSetCookie().length, 0);

  server.app.cookieSecrets = [NEW_SECRET];
  assert.equal(await (await fetch(`${base}/read`, { headers: { cookie: `user=${old}` } })).json(), null, 'the retired secret no longer verifies');
  assert.deepEqual(await (await fetch(`${base}/read`, { headers: { cookie: `user=${renewed}` } })).json(), { value: 'bob', stale: false });
});

// -- Sessions ----------------------------------------------------------------

function sessionRoutes(app) {
  app.get('/whoami', (req) => ({ user: req.session.get('user') ?? null, visits: req.session.get('visits') ?? 0, id: req.session.id, isNew: req.session.isNew }));
  app.post('/visit', (req) => {
    req.session.set('visits', (req.session.get('visits') ?? 0) + 1);
    return { visits: req.session.get('visits'), id: req.session.id };
  });
  app.post('/login', (req) => {
    const before = req.session.id;
    req.session.regenerate(['visits']);
    req.session.set('user', 'alice');
    return { before, after: req.session.id };
  });
  app.post('/logout', (req) => {
    req.session.destroy();
    return { id: req.session.id };
  });
}

test('sessions: no cookie until data; login regenerates the id; logout destroys the session and clears the cookie', async (t) => {
  const store = new MemoryStore();
  t.after(() => store.close());
  const { server, base } = await start((app) => {
    app.cookieSecrets = NEW_SECRET;
    app.use(session({ store }));
    sessionRoutes(app);
  });
  t.after(() => server.close({ drainTimeout: 500 }));
  const client = new Client(base);

  const anonymous = await client.json('/whoami');
  assert.deepEqual({ ...anonymous.body, id: undefined }, { user: null, visits: 0, id: undefined, isNew: true });
  assert.equal(anonymous.response.headers.getSetCookie().length, 0, 'saveUninitialized: false');
  assert.equal(store.size, 0);

  const visit = await client.json('/visit', { method: 'POST' });
  assert.equal(visit.body.visits, 1);
  const line = visit.response.headers.getSetCookie()[0];
  assert.match(line, /^sid=s:[A-Za-z0-9_-]{32}\.[A-Za-z0-9_-]{43}; Path=\/; Max-Age=86400; HttpOnly; SameSite=Lax$/);
  const first = client.sid;
  assert.equal(first, visit.body.id);
  assert.deepEqual(await store.get(first), { visits: 1 });

  assert.equal((await client.json('/visit', { method: 'POST' })).body.visits, 2);
  const fixated = new Map(client.jar);

  const login = await client.json('/login', { method: 'POST' });
  assert.equal(login.body.before, first);
  assert.notEqual(login.body.after, first, 'a new id at login');
  assert.equal(client.sid, login.body.after);
  await sleep(10);
  assert.equal(await store.get(first), undefined, 'the old id is forgotten');
  assert.deepEqual(await store.get(client.sid), { visits: 2, user: 'alice' }, 'kept what regenerate was told to keep');
  assert.deepEqual((await client.json('/whoami')).body.user, 'alice');

  // The pre-login cookie (an attacker's planted id) is worth nothing now.
  const attacker = new Client(base);
  attacker.jar = fixated;
  const planted = await attacker.json('/whoami');
  assert.equal(planted.body.user, null);
  assert.equal(planted.body.isNew, true);
  assert.match(planted.response.headers.getSetCookie()[0] ?? '', /^sid=; .*Max-Age=0/, 'the dead cookie is cleared');

  const loggedIn = client.sid;
  const logout = await client.fetch('/logout', { method: 'POST' });
  assert.match(logout.headers.getSetCookie()[0], /^sid=; Path=\/; Expires=Thu, 01 Jan 1970 00:00:00 GMT; Max-Age=0; HttpOnly; SameSite=Lax$/);
  assert.equal(client.sid, undefined);
  await sleep(10);
  assert.equal(await store.get(loggedIn), undefined);
  assert.equal(store.size, 0);
  assert.equal((await client.json('/whoami')).body.user, null);

  // A tampered session cookie is a new session.
  const forger = new Client(base);
  forger.jar.set('sid', `s:${loggedIn}.${'A'.repeat(43)}`);
  assert.equal((await forger.json('/whoami')).body.isNew, true);
});

test('sessions expire after the TTL; rolling requests extend them, non-rolling ones do not', async (t) => {
  const rollingStore = new MemoryStore();
  const fixedStore = new MemoryStore();
  t.after(() => (rollingStore.close(), fixedStore.close()));
  const { server, base } = await start((app) => {
    app.cookieSecrets = NEW_SECRET;
    const rolling = new Router().use(session({ store: rollingStore, ttl: 400 }));
    const fixed = new Router().use(session({ store: fixedStore, ttl: 400, rolling: false, cookieName: 'fixed' }));
    sessionRoutes(rolling);
    sessionRoutes(fixed);
    app.use('/rolling', rolling);
    app.use('/fixed', fixed);
  });
  t.after(() => server.close({ drainTimeout: 500 }));

  const roller = new Client(base);
  const created = await roller.json('/rolling/visit', { method: 'POST' });
  assert.match(created.response.headers.getSetCookie()[0], /Max-Age=1;/, 'Max-Age is the TTL, rounded up to seconds');
  await sleep(250);
  const touched = await roller.json('/rolling/whoami');
  assert.equal(touched.body.visits, 1);
  assert.equal(touched.response.headers.getSetCookie().length, 1, 'rolling: the cookie is sent again');
  await sleep(250);
  assert.equal((await roller.json('/rolling/whoami')).body.visits, 1, 'alive 500 ms after its creation: the TTL counts from the last request');
  await sleep(550);
  assert.equal((await roller.json('/rolling/whoami')).body.visits, 0, 'expired after the TTL without requests');

  const fixed = new Client(base);
  await fixed.json('/fixed/visit', { method: 'POST' });
  assert.ok(fixed.jar.has('fixed'));
  await sleep(250);
  const unchanged = await fixed.json('/fixed/whoami');
  assert.equal(unchanged.body.visits, 1);
  assert.equal(unchanged.response.headers.getSetCookie().length, 0, 'not rolling: no cookie for an unchanged session');
  await sleep(250);
  assert.equal((await fixed.json('/fixed/whoami')).body.visits, 0, 'expired: the TTL counts from the save');
});

test('the memory store holds at most maxSessions, evicting the least recently saved or touched', async (t) => {
  const store = new MemoryStore({ maxSessions: 3 });
  t.after(() => store.close());
  const { server, base } = await start((app) => {
    app.cookieSecrets = NEW_SECRET;
    app.use(session({ store }));
    sessionRoutes(app);
  });
  t.after(() => server.close({ drainTimeout: 500 }));

  const clients = [0, 1, 2, 3].map(() => new Client(base));
  for (const client of clients.slice(0, 3)) await client.json('/visit', { method: 'POST' });
  assert.equal(store.size, 3);
  // Client 0 comes back (a rolling touch): client 1 is now the oldest.
  await clients[0].json('/whoami');
  await sleep(10);
  await clients[3].json('/visit', { method: 'POST' });
  await sleep(10);
  assert.equal(store.size, 3);
  const visits = [];
  for (const client of clients) visits.push((await store.get(client.sid)) === undefined ? 'evicted' : 'kept');
  assert.deepEqual(visits, ['kept', 'evicted', 'kept', 'kept']);
  assert.equal((await clients[1].json('/whoami')).body.visits, 0);

  // The store keeps copies, as a networked one would, and refuses what JSON cannot hold.
  const data = { a: [1] };
  await store.set('direct', data, 1000);
  data.a.push(2);
  assert.deepEqual(await store.get('direct'), { a: [1] });
  await assert.rejects(store.set('bad', { n: 1n }, 1000), TypeError);
  assert.throws(() => new MemoryStore({ maxSessions: 0 }), { code: 'ERR_INVALID_OPTION' });
});

test('store failures: a failed load answers 500, a failed save is reported; the server goes on', async (t) => {
  const failing = {
    mode: 'ok',
    inner: new MemoryStore(),
    async get(id) {
      if (this.mode === 'get') throw new Error('store down (get)');
      return this.inner.get(id);
    },
    set(id, data, ttl) {
      if (this.mode === 'set-throws') throw new Error('store down (set, synchronously)');
      if (this.mode === 'set') return Promise.reject(new Error('store down (set)'));
      return this.inner.set(id, data, ttl);
    },
    touch(id, ttl) {
      return this.inner.touch(id, ttl);
    },
    destroy(id) {
      return this.inner.destroy(id);
    },
  };
  t.after(() => failing.inner.close());
  const { server, base, errors } = await start((app) => {
    app.cookieSecrets = NEW_SECRET;
    app.use(session({ store: failing }));
    sessionRoutes(app);
  });
  t.after(() => server.close({ drainTimeout: 500 }));
  const client = new Client(base);

  for (const mode of ['set', 'set-throws']) {
    failing.mode = mode;
    errors.length = 0;
    const response = await client.fetch('/visit', { method: 'POST' });
    assert.equal(response.status, 200, 'the response does not wait for the store');
    await sleep(20);
    assert.deepEqual(errors.map((e) => e.code), ['ERR_SESSION_STORE'], mode);
    assert.match(errors[0].cause.message, /store down/);
  }

  failing.mode = 'ok';
  await client.json('/visit', { method: 'POST' });
  failing.mode = 'get';
  errors.length = 0;
  const down = await client.fetch('/whoami');
  assert.equal(down.status, 500);
  assert.equal((await down.json()).error.code, 'ERR_HTTP_INTERNAL');
  assert.deepEqual(errors.map((e) => e.code), ['ERR_SESSION_STORE']);

  failing.mode = 'ok';
  assert.equal((await client.json('/whoami')).body.visits, 1, 'the server serves on');
});

test('sessions: save() writes at once, cookie options apply, a stale-key cookie is re-signed, no secrets is a 500', async (t) => {
  const store = new MemoryStore();
  t.after(() => store.close());
  let savedBeforeAnswer;
  const { server, base, errors } = await start((app) => {
    app.cookieSecrets = [OLD_SECRET];
    const sessions = session({ store, rolling: false, cookieName: 'app.sid', cookie: { secure: true, sameSite: 'strict', path: '/s', domain: 'localhost' } });
    app.post('/s/save', sessions, async (req) => {
      req.session.set('k', 'v');
      await req.session.save();
      savedBeforeAnswer = await store.get(req.session.id);
      return 'ok';
    });
    app.get('/s/read', sessions, (req) => ({ k: req.session.get('k') ?? null }));
    assert.throws(() => session({ cookieName: 'bad name' }), { code: 'ERR_INVALID_OPTION' });
    assert.throws(() => session({ ttl: 0 }), { code: 'ERR_INVALID_OPTION' });
    assert.throws(() => session({ store: {} }), { code: 'ERR_INVALID_OPTION' });
  });
  t.after(() => server.close({ drainTimeout: 500 }));

  const saved = await fetch(`${base}/s/save`, { method: 'POST' });
  assert.deepEqual(savedBeforeAnswer, { k: 'v' });
  const line = saved.headers.getSetCookie()[0];
  assert.match(line, /^app\.sid=s:\S+; Domain=localhost; Path=\/s; Max-Age=86400; Secure; HttpOnly; SameSite=Strict$/);
  const cookie = line.split(';')[0];

  // Rotation: the same session, its cookie signed with the retired secret, is re-sent signed with the newest.
  server.app.cookieSecrets = [NEW_SECRET, OLD_SECRET];
  const read = await fetch(`${base}/s/read`, { headers: { cookie } });
  assert.deepEqual(await read.json(), { k: 'v' });
  const renewed = read.headers.getSetCookie()[0];
  assert.ok(renewed, 'a stale cookie is sent again even without rolling');
  assert.notEqual(renewed.split(';')[0], cookie);
  const again = await fetch(`${base}/s/read`, { headers: { cookie: renewed.split(';')[0] } });
  assert.deepEqual(await again.json(), { k: 'v' });
  assert.equal(again.headers.getSetCookie().length, 0);

  const bare = await start((app) => {
    app.use(session());
    sessionRoutes(app);
  });
  t.after(() => bare.server.close({ drainTimeout: 500 }));
  const failed = await fetch(`${bare.base}/whoami`);
  assert.equal(failed.status, 500);
  assert.deepEqual(bare.errors.map((e) => e.code), ['ERR_COOKIE_NO_SECRET']);
  assert.equal(errors.length, 0);
});

// -- CORS --------------------------------------------------------------------

test('CORS simple requests: allowed origins get the headers, refused ones none; Vary: Origin', async (t) => {
  const { server, port } = await start((app) => {
    app.use(cors({ origin: ['https://a.example', /\.b\.example$/], credentials: true, exposedHeaders: ['X-Total', 'X-Page'] }));
    app.get('/data', (req, res) => res.header('X-Total', '3').json([1, 2, 3]));
  });
  t.after(() => server.close({ drainTimeout: 500 }));

  for (const origin of ['https://a.example', 'https://x.b.example']) {
    const { response } = await exchange(port, raw('/data', { Origin: origin }));
    assert.equal(response.status, 200);
    assert.equal(response.headers['access-control-allow-origin'], origin);
    assert.equal(response.headers['access-control-allow-credentials'], 'true');
    assert.equal(response.headers['access-control-expose-headers'], 'X-Total, X-Page');
    assert.equal(response.headers.vary, 'Origin');
    assert.equal(response.body.toString(), '[1,2,3]');
  }
  for (const headers of [{ Origin: 'https://evil.example' }, { Origin: 'https://a.example.evil' }, {}]) {
    const { response } = await exchange(port, raw('/data', headers));
    assert.equal(response.status, 200, 'the request is served; the browser hides the response');
    assert.equal(response.headers['access-control-allow-origin'], undefined, JSON.stringify(headers));
    assert.equal(response.headers['access-control-allow-credentials'], undefined);
    assert.equal(response.headers.vary, 'Origin', 'caches must key on Origin');
  }
});

test('CORS preflights on the app: answered for any path, without shadowing routes or 405s', async (t) => {
  let ownOptions = 0;
  const { server, port } = await start((app) => {
    app.use(cors({ maxAge: 600 }));
    app.get('/data', (req) => 'data');
    app.post('/data', (req) => 'posted');
    app.options('/own', (req, res) => {
      ownOptions++;
      res.status(200).send('own options');
    });
  });
  t.after(() => server.close({ drainTimeout: 500 }));

  const preflight = (path, extra = {}) => exchange(port, raw(path, { Origin: 'https://a.example', 'Access-Control-Request-Method': 'PUT', ...extra }, 'OPTIONS'));
  for (const path of ['/data', '/nothing/here', '/', '/own']) {
    const { response } = await preflight(path, { 'Access-Control-Request-Headers': 'x-custom, content-type' });
    assert.equal(response.status, 204, path);
    assert.equal(response.headers['access-control-allow-origin'], '*');
    assert.equal(response.headers['access-control-allow-methods'], 'GET, HEAD, PUT, PATCH, POST, DELETE');
    assert.equal(response.headers['access-control-allow-headers'], 'x-custom, content-type', 'reflected');
    assert.equal(response.headers['access-control-max-age'], '600');
    assert.equal(response.headers.vary, 'Access-Control-Request-Headers');
    assert.equal(response.headers['content-length'], undefined, 'a 204 has no body');
  }
  assert.equal(ownOptions, 0, 'the middleware answers preflights before the route');

  // Not preflights: the app's own OPTIONS route, and 404 where there is none.
  assert.equal((await exchange(port, raw('/own', { Origin: 'https://a.example' }, 'OPTIONS'))).response.body.toString(), 'own options');
  assert.equal(ownOptions, 1);
  assert.equal((await exchange(port, raw('/data', {}, 'OPTIONS'))).response.status, 404);

  // The catch-all only takes OPTIONS: other methods route and 405 as before.
  const get = (await exchange(port, raw('/data', { Origin: 'https://a.example' }))).response;
  assert.equal(get.body.toString(), 'data');
  assert.equal(get.headers['access-control-allow-origin'], '*');
  const wrong = (await exchange(port, raw('/data', {}, 'DELETE'))).response;
  assert.equal(wrong.status, 405);
  assert.equal(wrong.headers.allow, 'GET, HEAD, POST');
});

test('CORS on a mounted router: its preflights (prefix included) and headers, nothing outside it; an app OPTIONS route replaces the catch-all', async (t) => {
  let catchAll = 0;
  const { server, port } = await start((app) => {
    const api = new Router();
    api.use(cors({ origin: 'https://a.example', methods: ['GET', 'POST'], allowedHeaders: 'Content-Type, X-Token', credentials: true }));
    api.get('/', (req) => 'api root');
    api.get('/items', (req) => 'items');
    app.use('/api', api);
    app.get('/other', (req) => 'other');
    // A second cors() with the app's own catch-all OPTIONS route on the same pattern: no collision at listen.
    app.use('/open', cors());
    app.get('/open/x', (req) => 'open');
    app.options('/open/*', (req, res) => {
      catchAll++;
      res.status(204).end();
    });
  });
  t.after(() => server.close({ drainTimeout: 500 }));

  const preflight = (path, origin = 'https://a.example') => exchange(port, raw(path, { Origin: origin, 'Access-Control-Request-Method': 'POST', 'Access-Control-Request-Headers': 'x-token' }, 'OPTIONS'));
  for (const path of ['/api/items', '/api', '/api/', '/api/missing']) {
    const { response } = await preflight(path);
    assert.equal(response.status, 204, path);
    assert.equal(response.headers['access-control-allow-origin'], 'https://a.example', path);
    assert.equal(response.headers['access-control-allow-credentials'], 'true');
    assert.equal(response.headers['access-control-allow-methods'], 'GET, POST');
    assert.equal(response.headers['access-control-allow-headers'], 'Content-Type, X-Token');
    assert.equal(response.headers['access-control-max-age'], undefined);
    assert.equal(response.headers.vary, 'Origin');
  }
  const refused = (await preflight('/api/items', 'https://evil.example')).response;
  assert.equal(refused.status, 204);
  assert.equal(refused.headers['access-control-allow-origin'], undefined, 'a refused origin gets no CORS headers');
  assert.equal(refused.headers['access-control-allow-methods'], undefined);

  // Outside the router: no CORS, and the native 405 for OPTIONS.
  const outside = (await preflight('/other')).response;
  assert.equal(outside.status, 405);
  assert.equal(outside.headers['access-control-allow-origin'], undefined);
  const other = (await exchange(port, raw('/other', { Origin: 'https://a.example' }))).response;
  assert.equal(other.body.toString(), 'other');
  assert.equal(other.headers['access-control-allow-origin'], undefined);

  const items = (await exchange(port, raw('/api/items', { Origin: 'https://a.example' }))).response;
  assert.equal(items.body.toString(), 'items');
  assert.equal(items.headers['access-control-allow-origin'], 'https://a.example');

  // /open: preflights answered by cors() before the app's route; other OPTIONS reach that route.
  const open = (await preflight('/open/x')).response;
  assert.equal(open.status, 204);
  assert.equal(open.headers['access-control-allow-origin'], '*');
  assert.equal(catchAll, 0);
  await exchange(port, raw('/open/x', {}, 'OPTIONS'));
  assert.equal(catchAll, 1, "the app's OPTIONS /open/* route replaced cors()'s");
});

test('CORS origin functions (async, reflecting), credentials rules and option checks', async (t) => {
  const { server, port } = await start((app) => {
    app.use(
      cors({
        credentials: true,
        origin: async (origin, req) => {
          await sleep(1);
          if (req.path === '/star') return '*';
          if (origin?.endsWith('.trusted.example')) return true;
        },
      }),
    );
    app.get('/fn', () => 'fn');
    app.get('/star', () => 'star');
  });
  t.after(() => server.close({ drainTimeout: 500 }));

  const ask = async (path, origin) => (await exchange(port, raw(path, origin ? { Origin: origin } : {}))).response;
  assert.equal((await ask('/fn', 'https://app.trusted.example')).headers['access-control-allow-origin'], 'https://app.trusted.example');
  const refused = await ask('/fn', 'https://other.example');
  assert.equal(refused.headers['access-control-allow-origin'], undefined, 'undefined from the function refuses');
  assert.equal(refused.body.toString(), 'fn');
  const star = await ask('/star', 'https://any.example');
  assert.equal(star.headers['access-control-allow-origin'], 'https://any.example', "'*' with credentials reflects the origin");
  assert.equal(star.headers['access-control-allow-credentials'], 'true');

  assert.throws(() => cors({ credentials: true }), { code: 'ERR_INVALID_OPTION' }, "'*' with credentials");
  assert.throws(() => cors({ origin: 5 }), { code: 'ERR_INVALID_OPTION' });
  assert.throws(() => cors({ maxAge: -1 }), { code: 'ERR_INVALID_OPTION' });
  assert.throws(() => cors({ methods: ['GET', 'BAD METHOD'] }), { code: 'ERR_INVALID_OPTION' });
  assert.throws(() => cors({ optionsSuccessStatus: 404 }), { code: 'ERR_INVALID_OPTION' });
});
