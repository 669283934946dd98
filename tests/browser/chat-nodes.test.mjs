// The chat page (examples/chat) on two nodes sharing one Redis, in a real
// headless Chromium: a user on each node, one over WebSocket and one over
// Switchboard's client, see each other in the member list and each other's
// messages; when one node is killed, the other page shows its member
// leaving, once. tests/examples/chat-nodes.test.mjs covers the protocol
// without a browser.
//
// Needs /usr/bin/chromium (scripts/setup-browser.sh installs it) and a
// redis-server (scripts/setup-redis.sh), both installed by the helpers.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { launchChromium } from '../helpers/chromium.mjs';
import { startExample } from '../helpers/examples.mjs';
import { startRedis } from '../helpers/redis.mjs';

const UI_TIMEOUT = 10_000;

async function startNode(t, redis) {
  const started = await startExample('examples/chat/server.mjs', {
    env: { PORT: '0', HOST: '127.0.0.1', WORKERS: '1', REDIS_URL: redis.url, NATS_URL: '' },
    ready: /open (http:\/\/\S+?)\/? \(1 workers, node (\d+)/,
  });
  t.after(() => started.child.kill('SIGKILL'));
  return { child: started.child, base: started.match[1], node: Number(started.match[2]) };
}

async function join(browser, t, base, name, room, transport) {
  const context = await browser.newContext();
  t.after(() => context.close().catch(() => {}));
  const page = await context.newPage();
  page.setDefaultTimeout(UI_TIMEOUT);
  const errors = [];
  page.on('pageerror', (error) => errors.push(error));
  page.errors = errors;
  await page.goto(`${base}/`);
  await page.fill('#name', name);
  await page.fill('#room', room);
  await page.selectOption('#transport', transport);
  await page.click('#join-form button[type=submit]');
  await page.locator('#status[data-state="connected"]').waitFor();
  return page;
}

async function waitForMembers(page, names) {
  const want = [...names].sort();
  try {
    await page.waitForFunction(
      (expected) => JSON.stringify([...document.querySelectorAll('#members li .who')].map((e) => e.textContent).sort()) === JSON.stringify(expected),
      want,
      { timeout: UI_TIMEOUT },
    );
  } catch {
    assert.deepEqual((await page.locator('#members li .who').allTextContents()).sort(), want);
  }
}

const notices = (page) => page.locator('#log li.notice').allTextContents();

test('two nodes, one room: the page lists and hears members of the other node, and sees a killed node\'s member leave', { timeout: 11 * 60_000 }, async (t) => {
  const redis = await startRedis(t);
  const [a, b] = await Promise.all([startNode(t, redis), startNode(t, redis)]);
  const browser = await launchChromium();
  t.after(() => browser.close().catch(() => {}));

  const ada = await join(browser, t, a.base, 'ada', 'nodes', 'websocket');
  assert.match(await ada.textContent('#status'), new RegExp(`node ${a.node} · worker \\d+`));
  const bob = await join(browser, t, b.base, 'bob', 'nodes', 'switchboard');
  assert.match(await bob.textContent('#status'), new RegExp(`node ${b.node} · worker \\d+`));
  await waitForMembers(bob, ['ada', 'bob']);
  await waitForMembers(ada, ['ada', 'bob']);

  await ada.fill('#text', 'hello from node A');
  await ada.press('#text', 'Enter');
  await bob.locator('#log li.msg .text', { hasText: 'hello from node A' }).waitFor();

  b.child.kill('SIGKILL');
  // presenceTtl is 3 s: gone within about 4.
  await waitForMembers(ada, ['ada']);
  const shown = await notices(ada);
  assert.equal(shown.filter((n) => n.startsWith('bob joined')).length, 1, `one join notice: ${shown}`);
  await ada.locator('#log li.notice', { hasText: 'bob left' }).waitFor();
  assert.equal((await notices(ada)).filter((n) => n.startsWith('bob left')).length, 1, 'one leave notice');
  assert.deepEqual(ada.errors, []);
  assert.deepEqual(bob.errors, []);
});
