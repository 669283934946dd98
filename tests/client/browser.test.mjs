// The core entry point of switchboard-client in a real headless Chromium:
// loaded as plain ES modules (an import map, no bundler), it connects over
// the browser's own WebSocket to the reference server, calls, is called
// back, streams, and reconnects after a drop.
//
// Needs /usr/bin/chromium (scripts/setup-browser.sh installs it; the test
// runs it first) and the playwright-core devDependency.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { launchChromium } from '../helpers/chromium.mjs';
import { IMPORT_MAP, startStaticServer } from './static-server.mjs';
import { Server } from 'switchboard';
import { startReferenceServer } from './reference-server.mjs';

const script = (wsUrl) => `
import { Client, ConnectionState, connect, openStream, webSocketTransport } from 'switchboard-client';
const results = {};
try {
  const client = await connect(${JSON.stringify(wsUrl)}, { reconnect: { initialDelayMs: 20 } });
  results.codec = client.server.codec;
  results.add = await client.call('add', [2, 40]);
  client.handle('client.where', () => navigator.userAgent.includes('Chrome') ? 'in chromium' : 'elsewhere');
  results.callback = await client.call('askClient', { action: 'client.where' });
  const writer = openStream();
  const upload = client.call('upload', null, { stream: writer });
  await writer.write('streamed ');
  await writer.write(new TextEncoder().encode('from the page'));
  writer.end();
  results.upload = await upload;
  const states = [];
  client.on('statechange', ({ state }) => states.push(state));
  const dropped = client.call('drop').catch((e) => e.code);
  results.dropped = await dropped;
  results.afterDrop = await client.call('add', [1, 1]); // waits for the reconnect
  results.states = [...states];
  results.open = client.state === ConnectionState.Open;
  await client.close();
  results.closed = client.state;
} catch (error) {
  results.error = String(error && error.stack || error);
}
window.results = results;
`;


async function runPage(rpc) {
  const page = `<!doctype html><html><head>
<script type="importmap">${JSON.stringify(IMPORT_MAP)}</script>
<script type="module">${script(rpc.url)}</script></head><body></body></html>`;
  const web = await startStaticServer(page);
  const browser = await launchChromium();
  try {
    const tab = await browser.newPage();
    const errors = [];
    tab.on('pageerror', (error) => errors.push(String(error)));
    await tab.goto(`http://127.0.0.1:${web.address().port}/`);
    await tab.waitForFunction(() => window.results !== undefined, null, { timeout: 15_000 });
    const results = await tab.evaluate(() => window.results);
    assert.deepEqual(errors, []);
    assert.equal(results.error, undefined, results.error);
    assert.equal(results.codec, 'msgpack');
    assert.equal(results.add, 42);
    assert.equal(results.callback, 'in chromium');
    assert.equal(results.upload, 'streamed from the page');
    assert.equal(results.dropped, 'ERR_DISCONNECTED');
    assert.equal(results.afterDrop, 2);
    assert.deepEqual(results.states, ['reconnecting', 'open']);
    assert.equal(results.open, true);
    assert.equal(results.closed, 'closed');
    assert.equal(await rpc.connectionCount(), 2);
  } finally {
    await browser.close();
    web.close();
    await rpc.close();
  }
}

test('the core runs in Chromium over its native WebSocket (reference server)', { timeout: 11 * 60_000 }, async () => {
  const rpc = await startReferenceServer('ws', {
    handlers: {
      add: (call) => {
        const [a, b] = call.decode();
        return a + b;
      },
      askClient: async (call, conn) => conn.peer.call(call.decode().action),
      upload: async (call) => call.stream.text(),
      drop: (call, conn) => {
        setTimeout(() => conn.drop(), 10);
        return new Promise(() => {});
      },
    },
  });
  rpc.connectionCount = () => rpc.connections.length;
  await runPage(rpc);
});

test('the core runs in Chromium against the Switchboard server (WebSocket route with rpc: true)', { timeout: 11 * 60_000 }, async () => {
  const server = new Server({ workers: 0 });
  let opened = 0;
  server.rpc.onOpen(() => opened++);
  server.rpc
    .action('add', (call) => {
      const [a, b] = call.decode();
      return a + b;
    })
    .action('askClient', (call) => call.connection.call(call.decode().action))
    .action('upload', (call) => call.stream.text())
    .action('drop', (call) => {
      setTimeout(() => call.connection.close('ERR_GOING_AWAY', 'dropped by the test'), 10);
      return new Promise(() => {});
    });
  server.ws('/rpc', { rpc: true });
  const [address] = await server.listen(0);
  const rpc = { url: `ws://127.0.0.1:${address.port}/rpc`, connectionCount: async () => opened, close: () => server.close() };
  await runPage(rpc);
});
