// The real sockjs-client (1.6.1, its browser build) in headless Chromium,
// forced through each transport in turn: websocket, xhr-streaming,
// xhr-polling, eventsource, htmlfile, jsonp-polling. For each: the session
// opens on that transport, hostile Unicode comes back intact and in order,
// the server's close code and reason arrive, heartbeats arrive; and one
// publish reaches sessions of every transport at once. The page and the
// client script are served by the same Switchboard server (same origin,
// which htmlfile and jsonp need). Streaming responses that end every few
// frames show a receiver that is dropped and comes back losing nothing.
//
// Needs /usr/bin/chromium (scripts/setup-browser.sh installs it, and
// tests/helpers/chromium.mjs runs it) and the playwright-core devDependency.
import { after, before, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { Server } from 'switchboard';
import { launchChromium } from '../helpers/chromium.mjs';
import { waitFor } from '../helpers/index.mjs';

const require = createRequire(import.meta.url);
const CLIENT = readFileSync(require.resolve('sockjs-client/dist/sockjs.min.js'));
const TRANSPORTS = ['websocket', 'xhr-streaming', 'xhr-polling', 'eventsource', 'htmlfile', 'jsonp-polling'];
const HOSTILE = '\u0000\u001f \u200c\u2028\u2029\u2060\ufff0\uffff 😀 "q" \\ </script><script>x()</script> é ✓ \u00ad\ufeff';

const PAGE = `<!doctype html>
<html><head><meta charset="utf-8"><title>SockJS transports</title><script src="/sockjs.min.js"></script></head>
<body><script>
// Opens a session on one transport; resolves with the socket once open.
window.openOn = (path, transport) => new Promise((resolve, reject) => {
  const sock = new SockJS(path, null, { transports: [transport] });
  sock.received = [];
  sock.heartbeats = 0;
  sock.onmessage = (e) => sock.received.push(e.data);
  sock.addEventListener('heartbeat', () => sock.heartbeats++);
  sock.closed = new Promise((done) => { sock.onclose = (e) => done({ code: e.code, reason: e.reason }); });
  sock.onopen = () => resolve(sock);
  sock.closed.then((e) => reject(new Error('closed before open: ' + e.code + ' ' + e.reason)));
});
window.until = async (check, ms) => {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 20));
  }
};
window.socks = {};
</script></body></html>`;

describe('sockjs-client in Chromium, every transport', () => {
  let server;
  let browser;
  let page;

  before(async () => {
    server = new Server({ workers: 0 });
    server.get('/', { body: PAGE, contentType: 'text/html; charset=utf-8' });
    server.get('/sockjs.min.js', { body: CLIENT, contentType: 'application/javascript; charset=utf-8' });
    server.sockjs('/echo', { message: (ws, data) => ws.send(data.toString('utf8')) });
    server.sockjs('/close', { open: (ws) => ws.end(3000, 'Go away!') });
    server.sockjs('/hb', { heartbeatDelay: 150, message: (ws, data) => ws.send(data.toString('utf8')) });
    server.sockjs('/room', { open: (ws) => ws.subscribe('room') });
    // Streaming responses end every few frames: the client's receiver is
    // dropped and comes back again and again while messages keep coming.
    server.sockjs('/limited', {
      responseLimit: 256,
      message: (ws, data) => {
        const count = Number(data.toString('utf8'));
        for (let i = 0; i < count; i++) ws.send(`burst ${i} ${'x'.repeat(30)}`);
      },
    });
    await server.listen(0, '127.0.0.1');
    browser = await launchChromium();
  });

  // Each test on a page of its own browser context: a browser keeps six
  // connections per host, and sessions a test left behind (an htmlfile
  // iframe, a jsonp script) must not hold the next test's.
  beforeEach(async () => {
    await page?.context().close();
    page = await (await browser.newContext()).newPage();
    await page.goto(`http://127.0.0.1:${server.port}/`);
  });

  after(async () => {
    await browser?.close();
    await server?.close({ drainTimeout: 1000 });
  });

  for (const transport of TRANSPORTS) {
    test(`${transport}: opens on it, echoes hostile Unicode in order, reports the server's close, gets heartbeats`, async () => {
      const result = await page.evaluate(
        async ({ transport, hostile }) => {
          const sock = await window.openOn('/echo', transport);
          const used = sock.transport;
          sock.send(hostile);
          for (let i = 0; i < 20; i++) sock.send('m' + i);
          await window.until(() => sock.received.length === 21, 5000);
          sock.close();
          const closing = await window.openOn('/close', transport);
          const closed = await closing.closed;
          const beating = await window.openOn('/hb', transport);
          await window.until(() => beating.heartbeats >= 2, 5000);
          beating.send('after heartbeats');
          await window.until(() => beating.received.length === 1, 5000);
          beating.close();
          return { used, received: sock.received, closed, late: beating.received[0] };
        },
        { transport, hostile: HOSTILE },
      );
      assert.equal(result.used, transport);
      assert.equal(result.received[0], HOSTILE);
      assert.deepEqual(result.received.slice(1), Array.from({ length: 20 }, (_, i) => `m${i}`));
      assert.deepEqual(result.closed, { code: 3000, reason: 'Go away!' });
      assert.equal(result.late, 'after heartbeats');
    });
  }

  for (const transport of TRANSPORTS) {
    test(`${transport}: receivers dropped at the response limit come back and lose nothing`, async () => {
      const received = await page.evaluate(async (transport) => {
        const sock = await window.openOn('/limited', transport);
        sock.send('200');
        await window.until(() => sock.received.length === 200, 10000);
        sock.close();
        return sock.received;
      }, transport);
      assert.deepEqual(received, Array.from({ length: 200 }, (_, i) => `burst ${i} ${'x'.repeat(30)}`));
    });
  }

  test('one publish reaches a session of every transport', async () => {
    await page.evaluate(async (transports) => {
      for (const t of transports) window.socks[t] = await window.openOn('/room', t);
    }, TRANSPORTS);
    await waitFor(() => server.numSubscribers('room') === TRANSPORTS.length, 5000, 'every session subscribed');
    assert.equal(server.publish('room', `news ${HOSTILE}`), TRANSPORTS.length);
    const received = await page.evaluate(async (transports) => {
      await window.until(() => transports.every((t) => window.socks[t].received.length === 1), 5000);
      const out = {};
      for (const t of transports) {
        out[t] = window.socks[t].received;
        window.socks[t].close();
      }
      return out;
    }, TRANSPORTS);
    for (const t of TRANSPORTS) assert.deepEqual(received[t], [`news ${HOSTILE}`], t);
  });
});
