// The client served by the server (`app.clientBundle()`), in a real
// headless Chromium: a page with one module script and no import map or
// build step imports `/switchboard/client.js`, connects over the browser's
// WebSocket, subscribes to a channel the server's hook allows, receives
// what the server publishes (loop and callback), is refused a channel the
// hook refuses, and is subscribed again after its connection is dropped,
// with the gap reported.
//
// Needs /usr/bin/chromium (scripts/setup-browser.sh installs it; the
// helper runs it) and the playwright-core devDependency.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Server } from 'switchboard';
import { msgpackCodec } from 'switchboard-rpc';
import { launchChromium } from '../helpers/chromium.mjs';

const script = `
import { ConnectionState, connect } from '/switchboard/client.js';
const results = {};
const until = async (predicate, what) => {
  for (let i = 0; i < 500 && !predicate(); i++) await new Promise((r) => setTimeout(r, 10));
  if (!predicate()) throw new Error('timed out waiting for ' + what);
};
try {
  // The default codecs: msgpack (msgpackr, inside the bundle) is chosen.
  const client = await connect('ws://' + location.host + '/rpc', { reconnect: { initialDelayMs: 20 } });
  results.codec = client.server.codec;
  // The loop form: the server publishes three, the loop takes them and leaves.
  const room = client.subscribe('room');
  await room.ready;
  results.state = room.state;
  await client.call('publishThree', 'room');
  results.values = [];
  for await (const { value, channel } of room) {
    results.values.push(channel + ':' + value);
    if (results.values.length === 3) break;
  }
  results.afterBreak = room.state;
  results.refused = await client.subscribe('secret').ready.then(() => 'subscribed', (error) => error.code);

  // The callback form, across a dropped connection.
  const seen = [];
  const gaps = [];
  const news = client.subscribe('news', (value) => seen.push(value));
  news.on('gap', (gap) => gaps.push(gap));
  await news.ready;
  await client.call('kickMe');
  await until(() => gaps.length === 1, 'the resubscription');
  results.gap = { reason: gaps[0].reason, ordered: gaps[0].missedFrom <= gaps[0].missedUntil, state: news.state };
  await client.call('publishThree', 'news');
  await until(() => seen.length === 3, 'the publications after the reconnect');
  results.seen = seen;
  results.open = client.state === ConnectionState.Open;
  await client.close();
  results.closed = news.state;
} catch (error) {
  results.error = String((error && error.stack) || error);
}
window.results = results;
`;

const page = `<!doctype html><html><head><title>client bundle</title>
<script type="module">${script}</script></head><body></body></html>`;

test('a page imports the served client bundle with one module script and subscribes', { timeout: 11 * 60_000 }, async (t) => {
  const server = new Server({ workers: 0 });
  server.clientBundle();
  server.get('/', { body: page });
  server.ws('/rpc', { rpc: true });
  const asked = [];
  server.rpc
    .onSubscribe((connection, channel) => {
      asked.push(channel);
      return channel !== 'secret';
    })
    .action('publishThree', (call) => {
      const channel = call.decode();
      // Published bytes go out as they are: encoded for the page's codec.
      for (const n of [1, 2, 3]) server.publish(channel, msgpackCodec.encode(n));
    })
    .action('kickMe', (call) => {
      setTimeout(() => call.connection.close('ERR_KICKED', 'dropped by the test'), 5);
    });
  const [address] = await server.listen(0);
  t.after(() => server.close());

  const browser = await launchChromium();
  t.after(() => browser.close());
  const tab = await browser.newPage();
  const errors = [];
  tab.on('pageerror', (error) => errors.push(String(error)));
  const requested = [];
  tab.on('request', (request) => requested.push(new URL(request.url()).pathname));
  await tab.goto(`http://127.0.0.1:${address.port}/`);
  await tab.waitForFunction(() => window.results !== undefined, null, { timeout: 20_000 });
  const results = await tab.evaluate(() => window.results);

  assert.deepEqual(errors, []);
  assert.equal(results.error, undefined, results.error);
  // One module, no other script: switchboard-rpc and msgpackr are inside.
  assert.deepEqual(requested.filter((p) => p.endsWith('.js')), ['/switchboard/client.js']);
  assert.equal(results.codec, 'msgpack');
  assert.equal(results.state, 'subscribed');
  assert.deepEqual(results.values, ['room:1', 'room:2', 'room:3']);
  assert.equal(results.afterBreak, 'closed');
  assert.equal(results.refused, 'ERR_SUBSCRIPTION_REFUSED');
  assert.deepEqual(results.gap, { reason: 'reconnect', ordered: true, state: 'subscribed' });
  assert.deepEqual(results.seen, [1, 2, 3]);
  assert.equal(results.open, true);
  assert.equal(results.closed, 'closed');
  // room, secret, news, and news again on the new connection.
  assert.deepEqual(asked, ['room', 'secret', 'news', 'news']);
});
