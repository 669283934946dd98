// The client's fallback in a real headless Chromium: the page's WebSocket
// fails to connect (a constructor that errors and closes, as a proxy that
// refuses the upgrade looks to a page), so the client, loaded as plain ES
// modules (an import map, no bundler), goes on over SockJS (fetch with a
// streaming body, xhr_send) to the Switchboard server's
// `app.sockjs('/rpc', { rpc: true })`, from another origin (CORS). A call,
// a streamed upload, a channel publish, a subscription from the page
// (refused, then allowed, then made again after the reconnect with the gap
// reported), and a reconnect after the server drops the session, which
// stays on SockJS. The channel's payload is
// published as the client's codec (JSON) encodes it.
//
// Needs /usr/bin/chromium (scripts/setup-browser.sh installs it; the test
// runs it first) and the playwright-core devDependency.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { launchChromium } from '../helpers/chromium.mjs';
import { IMPORT_MAP, startStaticServer } from './static-server.mjs';
import { Server } from 'switchboard';

const script = (wsUrl, sockjsUrl) => `
import { ConnectionState, connect, jsonCodec, openStream } from 'switchboard-client';
const results = { constructed: 0 };
window.progress = results; // what a timed-out test reports
// A WebSocket that never connects: an error, then a close (1006), as a
// browser reports an upgrade that a proxy refused.
class BlockedWebSocket {
  constructor(url) {
    results.constructed += 1;
    this.url = url;
    this.readyState = 0;
    this.protocol = '';
    this.bufferedAmount = 0;
    this.binaryType = 'blob';
    this.listeners = {};
    setTimeout(() => {
      this.readyState = 3;
      for (const listener of this.listeners.error ?? []) listener({});
      for (const listener of this.listeners.close ?? []) listener({ code: 1006, reason: '' });
    }, 20);
  }
  addEventListener(type, listener) { (this.listeners[type] ??= []).push(listener); }
  send() { throw new Error('not open'); }
  close() {}
}
window.WebSocket = BlockedWebSocket;
try {
  const client = await connect(${JSON.stringify(wsUrl)}, { fallback: ${JSON.stringify(sockjsUrl)}, codecs: [jsonCodec], reconnect: { initialDelayMs: 20 } });
  results.transport = client.transport;
  results.add = await client.call('add', [2, 40]);
  results.where = await client.call('where');
  const writer = openStream();
  const upload = client.call('upload', null, { stream: writer });
  await writer.write('streamed ');
  await writer.write(new TextEncoder().encode('from the page '));
  await writer.write(new Uint8Array(200000).fill(120));
  writer.end();
  results.upload = await upload;
  const news = new Promise((resolve) => client.handle('news', (payload) => resolve(payload)));
  results.joined = await client.call('join', 'news');
  results.recipients = await client.call('say', { text: 'to the channel' });
  results.news = await news;
  const prices = [];
  const gaps = [];
  const until = async (check) => { while (!check()) await new Promise((r) => setTimeout(r, 10)); };
  const subscription = client.subscribe('prices', (value) => prices.push(value));
  subscription.on('gap', (gap) => gaps.push(gap.reason));
  await subscription.ready;
  await client.call('tick', 1);
  await until(() => prices.length === 1);
  results.refused = await client.subscribe('secrets').ready.catch((e) => e.code);
  const states = [];
  client.on('statechange', ({ state }) => states.push(state));
  results.dropped = await client.call('drop').catch((e) => e.code);
  results.afterDrop = await client.call('add', [1, 1]); // waits for the reconnect
  await until(() => gaps.length === 1);
  await client.call('tick', 2);
  await until(() => prices.length === 2);
  results.prices = prices;
  results.gaps = gaps;
  results.transportAfter = client.transport;
  results.states = [...states];
  results.open = client.state === ConnectionState.Open;
  await client.close();
  results.closed = client.state;
} catch (error) {
  results.error = String(error && error.stack || error);
}
window.results = results;
`;

test('in Chromium, a blocked WebSocket falls back to SockJS: a call, an upload, a publish, a subscription, a reconnect', { timeout: 11 * 60_000 }, async () => {
  const server = new Server({ workers: 0 });
  const transports = [];
  server.rpc.onOpen((connection) => transports.push(connection.transport));
  server.rpc
    .action('add', (call) => {
      const [a, b] = call.decode();
      return a + b;
    })
    .action('where', (call) => call.connection.transport)
    .action('upload', async (call) => {
      const text = await call.stream.text();
      return `${text.slice(0, 23)}+${text.length - 23}`;
    })
    .action('join', (call) => call.connection.subscribe(call.decode()))
    .action('say', (call) => server.publish('news', JSON.stringify(call.decode())))
    .action('tick', (call) => server.publish('prices', JSON.stringify(call.decode())))
    .action('drop', (call) => {
      setTimeout(() => call.connection.close('ERR_GOING_AWAY', 'dropped by the test'), 10);
      return new Promise(() => {});
    });
  server.rpc.onSubscribe((connection, channel) => channel === 'prices');
  server.sockjs('/rpc', { rpc: true });
  const [address] = await server.listen(0);
  const base = `127.0.0.1:${address.port}`;
  const page = `<!doctype html><html><head>
<script type="importmap">${JSON.stringify(IMPORT_MAP)}</script>
<script type="module">${script(`ws://${base}/rpc/websocket`, `http://${base}/rpc`)}</script></head><body></body></html>`;
  const web = await startStaticServer(page);
  const browser = await launchChromium();
  try {
    const tab = await browser.newPage();
    const errors = [];
    tab.on('pageerror', (error) => errors.push(String(error)));
    const console = [];
    tab.on('console', (message) => console.push(message.text()));
    await tab.goto(`http://127.0.0.1:${web.address().port}/`);
    await tab.waitForFunction(() => window.results !== undefined, null, { timeout: 30_000 }).catch(async (error) => {
      const progress = await tab.evaluate(() => window.progress);
      assert.fail(`${error.message}: the page got ${JSON.stringify(progress)}; console: ${console.join(' | ')}; errors: ${errors.join(' | ')}`);
    });
    const results = await tab.evaluate(() => window.results);
    assert.deepEqual(errors, []);
    assert.equal(results.error, undefined, results.error);
    // One WebSocket try; the reconnect went straight to SockJS.
    assert.equal(results.constructed, 1);
    assert.equal(results.transport, 'xhr-streaming');
    assert.equal(results.add, 42);
    assert.equal(results.where, 'sockjs');
    assert.equal(results.upload, 'streamed from the page +200000');
    assert.equal(results.joined, true);
    assert.equal(results.recipients, 1);
    assert.deepEqual(results.news, { text: 'to the channel' });
    assert.equal(results.refused, 'ERR_SUBSCRIPTION_REFUSED');
    assert.deepEqual(results.prices, [1, 2], 'a subscription from the page, and again after the reconnect');
    assert.deepEqual(results.gaps, ['reconnect']);
    assert.equal(results.dropped, 'ERR_DISCONNECTED');
    assert.equal(results.afterDrop, 2);
    assert.equal(results.transportAfter, 'xhr-streaming');
    assert.deepEqual(results.states, ['reconnecting', 'open']);
    assert.equal(results.open, true);
    assert.equal(results.closed, 'closed');
    assert.deepEqual(transports, ['sockjs', 'sockjs']);
  } finally {
    await browser.close();
    web.close();
    await server.close();
  }
});
