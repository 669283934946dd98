// The metrics dashboard in a real headless Chromium: the page the core
// serves at /metrics/dashboard loads its script and style under its strict
// Content-Security-Policy (no violation, no error), polls /metrics, and
// shows the server's numbers: the responses of a route, a WebSocket
// connection's messages, the connections open.
//
// Needs /usr/bin/chromium (scripts/setup-browser.sh installs it, and
// tests/helpers/chromium.mjs runs it) and the playwright-core devDependency.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import WebSocket from 'ws';
import { Server } from 'switchboard';
import { launchChromium } from '../helpers/chromium.mjs';

/** How long the page may take to show something (it polls every second). */
const UI_TIMEOUT = 8_000;
const HELLOS = 7;

let server;
let browser;
let baseURL;
let client;

before(async () => {
  server = new Server({ workers: 0, metrics: true });
  server.app.get('/hello', (req, res) => res.send('hello'));
  server.app.ws('/ws', { message: (ws, data, isBinary) => ws.send(data, isBinary) });
  await server.listen(0, '127.0.0.1');
  baseURL = `http://127.0.0.1:${server.port}`;
  for (let i = 0; i < HELLOS; i++) await (await fetch(`${baseURL}/hello`)).text();
  client = new WebSocket(`ws://127.0.0.1:${server.port}/ws`);
  await once(client, 'open');
  browser = await launchChromium();
});

after(async () => {
  client?.close();
  await Promise.race([browser?.close(), new Promise((resolve) => setTimeout(resolve, 5_000).unref())]).catch(() => {});
  await server?.close({ drainTimeout: 500 });
});

test('the dashboard loads under its CSP and shows the server numbers', async () => {
  const context = await browser.newContext();
  const page = await context.newPage();
  const problems = [];
  page.on('pageerror', (error) => problems.push(`pageerror: ${error.message}`));
  page.on('console', (message) => {
    if (message.type() === 'error' || message.type() === 'warning') problems.push(`${message.type()}: ${message.text()}`);
  });
  page.on('requestfailed', (request) => problems.push(`failed: ${request.url()}`));
  const response = await page.goto(`${baseURL}/metrics/dashboard`);
  assert.equal(response.status(), 200);

  // The route's responses, as the server counted them.
  const row = page.locator('#routes tr', { hasText: '/hello' });
  await row.first().waitFor({ timeout: UI_TIMEOUT });
  const cells = await row.first().locator('td').allTextContents();
  assert.equal(cells[0], '/hello');
  assert.equal(cells[1], `200: ${HELLOS}`);
  assert.equal(cells[2], String(HELLOS));
  assert.match(cells[4], /µs|ms/, 'a p50 latency');

  // Connections open: the WebSocket client, and the browser's own.
  const connections = Number(await page.locator('#connections').textContent());
  assert.ok(connections >= 1 && connections === Math.floor(connections), `connections: ${connections}`);

  // Messages: a rate appears once two polls saw them arrive.
  const sender = setInterval(() => client.send('ping'), 20);
  try {
    await page.waitForFunction(() => Number(document.getElementById('messages-in').textContent) > 0, null, { timeout: UI_TIMEOUT });
  } finally {
    clearInterval(sender);
  }
  const workers = await page.locator('#workers tr').count();
  assert.equal(workers, 1);
  assert.match(await page.locator('#status').textContent(), /^updated /);
  // The style applied (a separate file, allowed by the policy).
  const display = await page.locator('.cards').evaluate((el) => getComputedStyle(el).display);
  assert.equal(display, 'grid');
  assert.deepEqual(problems, []);
  await context.close();
});
