// The HTTP example (examples/http) as a user runs it: `node
// examples/http/server.mjs` in a child process, on HTTP and HTTPS at once
// (throwaway certificates), driven with fetch and curl: the greeting, the
// REST API with its validation, login with a session and a signed cookie,
// an upload, the server-sent events feed; SIGTERM stops it cleanly.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { promisify } from 'node:util';
import { certificateFactory } from '../helpers/certs.mjs';
import { startExample } from '../helpers/examples.mjs';

const run = promisify(execFile);
const certs = certificateFactory();
const ca = certs.makeCa('example-ca');
const leaf = certs.issue(ca, 'localhost');

let example;
let server;
let base;
let secure;

before(async () => {
  example = await startExample('examples/http/server.mjs', {
    env: { PORT: '0', TLS_PORT: '0', TLS_CERT: leaf.certPath, TLS_KEY: leaf.keyPath },
    ready: /https:\/\/\S+\//,
  });
  server = example.child;
  base = /(http:\/\/\S+)\//.exec(example.output())[1];
  secure = /(https:\/\/\S+)\//.exec(example.output())[1];
});

after(async () => {
  if (server.exitCode === null) {
    server.kill('SIGTERM');
    await once(server, 'exit');
  }
});

/** fetch with a cookie jar of one. */
function client() {
  let cookies = new Map();
  return async (url, init = {}) => {
    const headers = new Headers(init.headers);
    if (cookies.size > 0) headers.set('cookie', [...cookies].map(([k, v]) => `${k}=${v}`).join('; '));
    const res = await fetch(url, { ...init, headers });
    for (const line of res.headers.getSetCookie()) {
      const [pair] = line.split(';');
      const [name, value] = pair.split('=');
      if (/max-age=0/i.test(line)) cookies.delete(name);
      else cookies.set(name, value);
    }
    return res;
  };
}

test('GET / answers a plain-text greeting, on HTTP and on HTTPS (curl)', async () => {
  const res = await fetch(`${base}/`);
  assert.equal(res.status, 200);
  assert.match(res.headers.get('content-type'), /^text\/plain/);
  assert.match(await res.text(), /^Switchboard HTTP example/);
  const { stdout } = await run('curl', ['-sS', '--cacert', path.join(certs.dir, 'example-ca.pem'), `${secure}/`]);
  assert.match(stdout, /^Switchboard HTTP example/);
});

test('the page and its files are served natively, with their CSP and validators', async () => {
  const moved = await fetch(`${base}/app`, { redirect: 'manual' });
  assert.equal(moved.status, 301);
  assert.equal(moved.headers.get('location'), '/app/');
  const page = await fetch(`${base}/app/`);
  assert.equal(page.status, 200);
  assert.match(page.headers.get('content-type'), /^text\/html/);
  assert.match(page.headers.get('content-security-policy'), /script-src 'self'/);
  assert.match(await page.text(), /<script type="module" src="notes.js"><\/script>/);
  for (const [file, type] of [['notes.js', /^text\/javascript/], ['notes.css', /^text\/css/]]) {
    const res = await fetch(`${base}/app/${file}`);
    assert.equal(res.status, 200, file);
    assert.match(res.headers.get('content-type'), type, file);
    assert.equal(res.headers.get('x-content-type-options'), 'nosniff', file);
    await res.arrayBuffer();
    const again = await fetch(`${base}/app/${file}`, { headers: { 'if-none-match': res.headers.get('etag') } });
    assert.equal(again.status, 304, `${file} revalidates`);
  }
});

test('notes: validation, login with a session and a signed cookie, 401 without', async () => {
  const as = client();
  const anonymous = await as(`${base}/api/notes`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ text: 'hi' }) });
  assert.equal(anonymous.status, 401);
  assert.equal((await anonymous.json()).error.code, 'ERR_SIGN_IN');

  const badLogin = await as(`${base}/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: 'no spaces' }) });
  assert.equal(badLogin.status, 400);
  assert.equal((await badLogin.json()).error.code, 'ERR_HTTP_VALIDATION');

  const login = await as(`${base}/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: 'ada' }) });
  assert.equal(login.status, 200);
  assert.deepEqual(await (await as(`${base}/me`)).json(), { name: 'ada', cookie: 'ada' });

  const invalid = await as(`${base}/api/notes`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ text: '' }) });
  assert.equal(invalid.status, 400);
  const created = await as(`${base}/api/notes`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ text: 'first note', tag: 'demo' }) });
  assert.equal(created.status, 201);
  const note = await created.json();
  assert.equal(created.headers.get('location'), `/api/notes/${note.id}`);
  assert.equal(note.author, 'ada');
  assert.deepEqual(await (await fetch(`${base}/api/notes/${note.id}`)).json(), note);
  assert.equal((await fetch(`${base}/api/notes/999999`)).status, 404);
  assert.equal((await fetch(`${base}/api/notes/abc`)).status, 400, 'the id must be an integer');
  const tagged = await (await fetch(`${base}/api/notes?tag=demo`)).json();
  assert.ok(tagged.some((n) => n.id === note.id));

  assert.equal((await as(`${base}/logout`, { method: 'POST' })).status, 204);
  assert.deepEqual(await (await as(`${base}/me`)).json(), { name: null, cookie: null });
});

test('an upload: each file of a multipart form with its size and SHA-256', async () => {
  const big = Buffer.alloc(3 * 1024 * 1024, 7);
  const form = new FormData();
  form.append('note', 'attached');
  form.append('a', new Blob(['hello']), 'hello.txt');
  form.append('b', new Blob([big]), 'big.bin');
  const res = await fetch(`${base}/upload`, { method: 'POST', body: form });
  assert.equal(res.status, 200);
  const { files } = await res.json();
  assert.deepEqual(
    files.map((f) => [f.field, f.filename, f.size, f.sha256]),
    [
      ['a', 'hello.txt', 5, createHash('sha256').update('hello').digest('hex')],
      ['b', 'big.bin', big.length, createHash('sha256').update(big).digest('hex')],
    ],
  );
});

test('the feed streams server-sent events: ticks, and each new note', async () => {
  const as = client();
  await as(`${base}/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: 'bob' }) });
  const controller = new AbortController();
  const feed = await fetch(`${base}/feed`, { signal: controller.signal });
  assert.match(feed.headers.get('content-type'), /^text\/event-stream/);
  const reader = feed.body.getReader();
  const decoder = new TextDecoder();
  let text = '';
  const posted = as(`${base}/api/notes`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ text: 'live' }) });
  const deadline = Date.now() + 5000;
  while (!(/event: note/.test(text) && /event: tick/.test(text)) && Date.now() < deadline) {
    const { value, done } = await reader.read();
    if (done) break;
    text += decoder.decode(value, { stream: true });
  }
  controller.abort();
  assert.equal((await posted).status, 201);
  assert.match(text, /event: note\nid: \d+\ndata: \{.*"text":"live".*\}\n\n/);
  assert.match(text, /event: tick\ndata: \d{4}-\d\d-\d\dT/);
});

test('SIGTERM stops the example cleanly', async () => {
  server.kill('SIGTERM');
  const [code] = await once(server, 'exit');
  assert.equal(code, 0, example.output());
});
