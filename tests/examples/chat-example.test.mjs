// The chat demo (examples/chat) without a browser: names are normalised
// before they are checked and compared (invisible characters, NFKC, white
// space), so a name that only differs by what nobody sees is refused as
// taken; and every file of the page is served with a strict
// Content-Security-Policy and `X-Content-Type-Options: nosniff`.
// tests/browser/chat.test.mjs runs the page itself under that policy.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import WebSocket from 'ws';
import { MAX_NAME, MAX_NAME_INPUT, normalizeName } from '../../examples/chat/public/names.mjs';
import { startExample } from '../helpers/examples.mjs';

describe('names.mjs', () => {
  test('invisible characters are removed, compatibility forms folded, white space collapsed', () => {
    const same = [
      'sam',
      'sam\u200b', // zero-width space
      '\u200bs\u200ca\u200dm', // zero-width space, non-joiner, joiner
      'sa\u200em\u200f', // direction marks
      '\u202esam\u202c', // a right-to-left override and its pop
      '\u2066sam\u2069', // an isolate
      's\u2060a\u2061m\u2064', // word joiner, invisible operators
      '\ufeffsam', // byte-order mark
      'sa\u00adm', // soft hyphen
      'sam\u2028', // line separator
      '\u2029sam', // paragraph separator
      'sam\ufe0f', // a variation selector
      '\u3164sam', // a Hangul filler
      'ｓａｍ', // fullwidth
      '  sam\t',
      '\u00a0sam\u3000',
    ];
    for (const raw of same) assert.deepEqual(normalizeName(raw), { name: 'sam' }, JSON.stringify(raw));
    assert.deepEqual(normalizeName('Ada \u2003  Lovelace'), { name: 'Ada Lovelace' });
    assert.deepEqual(normalizeName('a\u2028b'), { name: 'ab' });
    assert.deepEqual(normalizeName('ﬁnn'), { name: 'finn' });
    // An invisible character between a letter and its accent does not keep them apart.
    assert.deepEqual(normalizeName('e\u200b\u0301'), { name: '\u00e9' });
    assert.deepEqual(normalizeName('Zoë'), { name: 'Zoë' });
    assert.deepEqual(normalizeName('Sam'), { name: 'Sam' }, 'case is kept');
  });

  test('empty, invisible, too long and control characters are refused', () => {
    assert.deepEqual(normalizeName(''), { error: 'empty' });
    assert.deepEqual(normalizeName('   '), { error: 'empty' });
    assert.deepEqual(normalizeName(undefined), { error: 'empty' });
    assert.deepEqual(normalizeName('\u200b\ufeff\u2060'), { error: 'invisible' });
    assert.deepEqual(normalizeName('\u202e'), { error: 'invisible' });
    assert.deepEqual(normalizeName('x'.repeat(MAX_NAME + 1)), { error: 'too-long' });
    assert.deepEqual(normalizeName('x'.repeat(MAX_NAME)), { name: 'x'.repeat(MAX_NAME) });
    // Length is counted in characters after normalisation...
    assert.deepEqual(normalizeName(`${'x'.repeat(MAX_NAME)}${'\u200b'.repeat(100)}`), { name: 'x'.repeat(MAX_NAME) });
    assert.deepEqual(normalizeName('😀'.repeat(MAX_NAME)), { name: '😀'.repeat(MAX_NAME) });
    // ...and the input itself is bounded before any work.
    assert.deepEqual(normalizeName('\u200b'.repeat(MAX_NAME_INPUT + 1)), { error: 'too-long' });
    assert.deepEqual(normalizeName('\u0001evil'), { error: 'control' });
    assert.deepEqual(normalizeName('ev\u007fil'), { error: 'control' });
    assert.deepEqual(normalizeName('ev\u0085il'), { error: 'control' });
  });

  test('normalising twice changes nothing', () => {
    for (const raw of ['sam\u200b', 'ｓａｍ', 'e\u200b\u0301', ' a  b ', 'ﬁ\u2028x', 'Zoë 😀']) {
      const once = normalizeName(raw).name;
      assert.deepEqual(normalizeName(once), { name: once }, JSON.stringify(raw));
    }
  });
});

describe('the chat server', () => {
  let server;
  let base;

  before(async () => {
    const example = await startExample('examples/chat/server.mjs', {
      env: { PORT: '0', HOST: '127.0.0.1', WORKERS: '2' },
      ready: /open (http:\/\/\S+?)\/?(\s|$)/,
    });
    server = example.child;
    base = example.match[1];
  });

  after(async () => {
    if (server.exitCode === null) {
      server.kill('SIGTERM');
      await new Promise((r) => server.once('exit', r));
    }
  });

  test('the page and its files carry a strict CSP and nosniff', async () => {
    const files = {
      '/': /^text\/html/,
      '/chat.js': /^text\/javascript/,
      '/names.mjs': /^text\/javascript/,
      '/chat.css': /^text\/css/,
      '/favicon.svg': /^image\/svg\+xml$/,
    };
    for (const [file, type] of Object.entries(files)) {
      const res = await fetch(`${base}${file}`);
      assert.equal(res.status, 200, file);
      assert.match(res.headers.get('content-type'), type, file);
      assert.equal(res.headers.get('x-content-type-options'), 'nosniff', file);
      const csp = res.headers.get('content-security-policy');
      assert.ok(csp, `${file} has a Content-Security-Policy`);
      const directives = Object.fromEntries(csp.split(';').map((d) => d.trim().split(/\s+/)).map(([k, ...v]) => [k, v]));
      assert.deepEqual(directives['default-src'], ["'none'"], file);
      assert.deepEqual(directives['script-src'], ["'self'"], file);
      assert.deepEqual(directives['style-src'], ["'self'"], file);
      assert.deepEqual(directives['frame-ancestors'], ["'none'"], file);
      assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval|\*/, file);
      await res.arrayBuffer();
    }
    // Nothing inline is left for the policy to block.
    const html = await (await fetch(`${base}/`)).text();
    assert.doesNotMatch(html, /<style|style=|<script(?![^>]*\ssrc=)|\son[a-z]+=/i);
    assert.match(html, /<script type="module" src="\/chat.js"><\/script>/);
  });

  /** Join `room` as `name` (raw, as a client may send it); resolves with how it went. */
  function join(name, room) {
    return new Promise((resolve, reject) => {
      const url = `${base.replace(/^http/, 'ws')}/chat?${new URLSearchParams({ name, room })}`;
      const ws = new WebSocket(url);
      const messages = [];
      const timer = setTimeout(() => reject(new Error(`no outcome for ${JSON.stringify(name)}`)), 10_000);
      ws.on('unexpected-response', (req, res) => {
        let body = '';
        res.setEncoding('utf8').on('data', (c) => (body += c));
        res.on('end', () => {
          clearTimeout(timer);
          req.destroy();
          resolve({ status: res.statusCode, body });
        });
      });
      ws.on('message', (data) => {
        const message = JSON.parse(data.toString());
        messages.push(message);
        if (message.type === 'welcome') {
          clearTimeout(timer);
          resolve({ status: 101, ws, welcome: message, messages });
        }
      });
      ws.on('close', (code, reason) => {
        clearTimeout(timer);
        resolve({ status: 101, closed: { code, reason: reason.toString() }, messages });
      });
      ws.on('error', () => {});
    });
  }

  test('a name that differs only by invisible or compatibility characters is taken', async (t) => {
    const room = 'names';
    const sam = await join('sam', room);
    t.after(() => sam.ws.close());
    assert.equal(sam.welcome.name, 'sam');
    for (const twin of ['sam\u200b', '\u200bs\u200da\u200bm', '\u202esam', 'ｓａｍ', ' sam\ufeff', 'sa\u00adm']) {
      const outcome = await join(twin, room);
      assert.equal(outcome.closed?.code, 4009, `${JSON.stringify(twin)} is refused as taken`);
      assert.equal(outcome.messages[0]?.type, 'error');
      assert.match(outcome.messages[0].message, /the name "sam" is taken/);
    }
    // Only one "sam" in the room, seen by the next member.
    const other = await join('\u200bSam\u200b', room);
    t.after(() => other.ws.close());
    assert.equal(other.welcome.name, 'Sam', 'a different case is another name');
    assert.deepEqual(other.welcome.members.map((m) => m.name).sort(), ['Sam', 'sam']);
    // In another room the name is free.
    const elsewhere = await join('sam\u200b', 'elsewhere');
    t.after(() => elsewhere.ws.close());
    assert.equal(elsewhere.welcome.name, 'sam');
  });

  test('GET /api/rooms/<room> lists the members of a room without joining it', async (t) => {
    const empty = await fetch(`${base}/api/rooms/lobby-rest`);
    assert.equal(empty.status, 200);
    assert.deepEqual(await empty.json(), { room: 'lobby-rest', members: [] });
    const ada = await join('ada', 'lobby-rest');
    t.after(() => ada.ws.close());
    const bob = await join('bob', 'lobby-rest');
    t.after(() => bob.ws.close());
    const listed = await (await fetch(`${base}/api/rooms/lobby-rest`)).json();
    assert.deepEqual(listed.members.map((m) => m.name).sort(), ['ada', 'bob']);
    assert.deepEqual(listed.members.map((m) => m.id).sort(), [ada.welcome.id, bob.welcome.id].sort());
    const bad = await fetch(`${base}/api/rooms/${encodeURIComponent('no spaces!')}`);
    assert.equal(bad.status, 404);
    assert.equal((await bad.json()).error.code, 'NO_SUCH_ROOM');
  });

  test('names are normalised before they are shown to others', async (t) => {
    const room = 'shown';
    const ada = await join('  Ada\u2003\u2003Lovelace\u2028', room);
    t.after(() => ada.ws.close());
    assert.equal(ada.welcome.name, 'Ada Lovelace');
    const bob = await join('b\u200bob', room);
    t.after(() => bob.ws.close());
    assert.equal(bob.welcome.name, 'bob');
    assert.deepEqual(bob.welcome.members.map((m) => m.name).sort(), ['Ada Lovelace', 'bob']);
    // Ada hears of bob by his normalised name.
    const deadline = Date.now() + 5_000;
    while (!ada.messages.some((m) => m.type === 'join')) {
      assert.ok(Date.now() < deadline, 'Ada is told bob joined');
      await new Promise((r) => setTimeout(r, 10));
    }
    assert.equal(ada.messages.find((m) => m.type === 'join').name, 'bob');
  });

  test('a name that is empty once normalised, too long or with control characters is refused with 400', async () => {
    const cases = [
      ['\u200b\u200c\ufeff', /no visible characters/],
      ['\u202e\u2066', /no visible characters/],
      ['', /name is required/],
      ['x'.repeat(MAX_NAME + 1), new RegExp(`longer than ${MAX_NAME}`)],
      ['\u200b'.repeat(MAX_NAME_INPUT + 1), new RegExp(`longer than ${MAX_NAME}`)],
      ['a\u0007b', /control characters/],
    ];
    for (const [name, reason] of cases) {
      const outcome = await join(name, 'lobby');
      assert.equal(outcome.status, 400, JSON.stringify(name));
      assert.match(outcome.body, reason, JSON.stringify(name));
    }
  });
});
