// The chat demo (examples/chat) in a real headless Chromium: two users in
// one room, on different worker threads, see each other and each other's
// messages; a user in another room sees none of it; leaving, refused
// names and a graceful shutdown show on the page. The page runs under its
// strict Content-Security-Policy without a violation, and the policy blocks
// an injected inline script.
//
// Needs /usr/bin/chromium (scripts/setup-browser.sh installs it, and this
// test runs it) and the playwright-core devDependency.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { launchChromium } from '../helpers/chromium.mjs';
import WebSocket from 'ws';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const screenshots = path.join(root, 'tests', 'browser', 'screenshots');
/** How long the page may take to show something. */
const UI_TIMEOUT = 10_000;

let server; // the child process
let serverOutput = '';
let baseURL;
let browser;
const pageErrors = [];
/** Content-Security-Policy violations the pages reported on their console. */
const cspViolations = [];
/** A page still in the room when the server shuts down (set by the chat test). */
let shutdownWitness;

function log() {
  return `\n--- server output ---\n${serverOutput.trim()}\n---------------------`;
}

/** Wait for a child process to exit, up to `ms`; true if it did. */
function exited(child, ms) {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(true);
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(false), ms);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve(true);
    });
  });
}

function startServer() {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['examples/chat/server.mjs'], {
      cwd: root,
      env: { ...process.env, PORT: '0', HOST: '127.0.0.1', WORKERS: '2' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    server = child;
    const timer = setTimeout(() => reject(new Error(`the chat server did not start in 20 s${log()}`)), 20_000);
    const onData = (chunk) => {
      serverOutput += chunk;
      const match = /open (http:\/\/\S+?)\/?(\s|$)/.exec(serverOutput);
      if (match) {
        clearTimeout(timer);
        resolve(match[1]);
      }
    };
    child.stdout.setEncoding('utf8').on('data', onData);
    child.stderr.setEncoding('utf8').on('data', (chunk) => {
      serverOutput += chunk;
    });
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`the chat server exited early (code ${code}, signal ${signal})${log()}`));
    });
  });
}

before(
  async () => {
    baseURL = await startServer();
    browser = await launchChromium();
  },
  { timeout: 11 * 60_000 },
);

after(
  async () => {
    await Promise.race([browser?.close(), new Promise((r) => setTimeout(r, 10_000))]).catch(() => {});
    if (server && !(await exited(server, 0))) {
      server.kill('SIGTERM');
      if (!(await exited(server, 5_000))) {
        server.kill('SIGKILL');
        await exited(server, 5_000);
      }
    }
  },
  { timeout: 30_000 },
);

/** A page in its own browser context (its own localStorage), watched for errors. */
async function newPage() {
  const context = await browser.newContext({ viewport: { width: 1000, height: 640 } });
  const page = await context.newPage();
  page.setDefaultTimeout(UI_TIMEOUT);
  page.on('pageerror', (error) => pageErrors.push(error));
  page.on('console', (message) => {
    if (/Content Security Policy/i.test(message.text())) cspViolations.push(message.text());
  });
  return page;
}

/**
 * Join `room` as `name` through the form, over `transport` (a value of the
 * page's Transport setting); resolves once welcomed, with the worker index.
 */
async function join(page, name, room, transport = 'websocket') {
  await page.goto(`${baseURL}/`);
  await page.fill('#name', name);
  await page.fill('#room', room);
  await page.selectOption('#transport', transport);
  await page.click('#join-form button[type=submit]');
  await page.locator('#status[data-state="connected"]').waitFor();
  const status = await page.textContent('#status');
  const worker = /worker (\d+)/.exec(status ?? '');
  assert.ok(worker, `status shows the worker: ${status}`);
  return Number(worker[1]);
}

async function memberNames(page) {
  return (await page.locator('#members li .who').allTextContents()).sort();
}

/** Wait until the member list of `page` is exactly `names`. */
async function waitForMembers(page, names) {
  const want = [...names].sort();
  try {
    await page.waitForFunction(
      (expected) => {
        const got = [...document.querySelectorAll('#members li .who')].map((e) => e.textContent).sort();
        return JSON.stringify(got) === JSON.stringify(expected);
      },
      want,
      { timeout: UI_TIMEOUT },
    );
  } catch {
    assert.deepEqual(await memberNames(page), want, `members of ${page.url()}${log()}`);
  }
}

/** Send a chat message from `page` with the composer (Enter sends). */
async function say(page, text) {
  await page.fill('#text', text);
  await page.press('#text', 'Enter');
}

/** Wait for a message with exactly `text` in the log of `page`; returns its locator. */
async function waitForMessage(page, text) {
  const message = page.locator('#log li.msg').filter({ has: page.locator('.text', { hasText: text }) });
  await message.first().waitFor();
  return message.first();
}

test('GET / serves the page', { timeout: 10_000 }, async () => {
  const response = await fetch(`${baseURL}/`, { signal: AbortSignal.timeout(5_000) });
  assert.equal(response.status, 200);
  assert.match(response.headers.get('content-type') ?? '', /^text\/html/);
  assert.match(await response.text(), /<title>Switchboard chat<\/title>/);
});

/** Open a WebSocket with `ws` and report how the handshake ended. */
function handshake(query) {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(`${baseURL.replace(/^http/, 'ws')}/chat?${query}`);
    const timer = setTimeout(() => {
      socket.terminate();
      reject(new Error(`no handshake answer for ?${query} in 5 s`));
    }, 5_000);
    socket.on('unexpected-response', (request, response) => {
      let body = '';
      response.setEncoding('utf8');
      response.on('data', (chunk) => (body += chunk));
      response.on('end', () => {
        clearTimeout(timer);
        request.destroy();
        resolve({ status: response.statusCode, body });
      });
    });
    socket.on('open', () => {
      clearTimeout(timer);
      socket.terminate();
      resolve({ status: 101, body: '' });
    });
    socket.on('error', (error) => {
      // After unexpected-response, ws may also report an error; the first answer wins.
      if (socket.readyState === WebSocket.CLOSED) return;
      clearTimeout(timer);
      reject(error);
    });
  });
}

test('the upgrade is refused with 400 for a bad name or room', { timeout: 30_000 }, async () => {
  const cases = [
    ['room=lobby', /name is required/],
    [`name=${'x'.repeat(33)}&room=lobby`, /name is longer than 32/],
    ['name=%01evil&room=lobby', /control characters/],
    ['name=ada&room=Bad%20Room!', /room must be/],
    ['name=ada', /room must be/],
  ];
  for (const [query, reason] of cases) {
    const answer = await handshake(query);
    assert.equal(answer.status, 400, `?${query} is refused`);
    assert.match(answer.body, reason, `?${query}`);
  }
  // Upper case rooms are folded, not refused.
  assert.equal((await handshake('name=ada&room=Lobby')).status, 101);

  // The page checks the same rules before connecting...
  const page = await newPage();
  try {
    await page.goto(`${baseURL}/`);
    await page.fill('#name', 'ada');
    await page.fill('#room', 'no spaces please');
    await page.click('#join-form button[type=submit]');
    await page.locator('#join-error', { hasText: 'A room is 1–32 characters' }).waitFor();
    // ...and one that gets past them anyway sees a connection failure, not an open.
    const outcome = await page.evaluate(
      () =>
        new Promise((resolve) => {
          const ws = new WebSocket(`ws://${location.host}/chat?name=&room=lobby`);
          ws.onopen = () => resolve('open');
          ws.onclose = (event) => resolve(`closed ${event.code}`);
        }),
    );
    assert.equal(outcome, 'closed 1006');
  } finally {
    await page.context().close();
  }
});

test('two users chat in a room across workers; other rooms see nothing', { timeout: 90_000 }, async () => {
  const alice = await newPage();
  const bob = await newPage();
  const carol = await newPage();

  const aliceWorker = await join(alice, 'Alice', 'switchboard');
  const bobWorker = await join(bob, 'Bob', 'switchboard');
  await join(carol, 'Carol', 'elsewhere');
  // Round-robin pinning: consecutive connections land on different workers,
  // so the member list and messages below cross worker threads.
  assert.notEqual(aliceWorker, bobWorker, 'Alice and Bob are pinned to different workers');

  // Each sees the other: Bob from Alice's `join`, Alice from Bob's `welcome`.
  await waitForMembers(alice, ['Alice', 'Bob']);
  await waitForMembers(bob, ['Alice', 'Bob']);
  await waitForMembers(carol, ['Carol']);
  await alice.locator('#log li.notice', { hasText: 'Bob joined' }).waitFor();

  // A second "Alice" in the room is turned away, and never shows as a member.
  const impostor = await newPage();
  try {
    await impostor.goto(`${baseURL}/`);
    await impostor.fill('#name', 'Alice');
    await impostor.fill('#room', 'switchboard');
    await impostor.click('#join-form button[type=submit]');
    await impostor.locator('#join-error', { hasText: 'taken' }).waitFor();
  } finally {
    await impostor.context().close();
  }

  // Messages both ways, on both pages; markup stays text.
  await say(alice, 'Hi Bob! Is this <b>bold</b>?');
  await say(bob, 'Hello Alice, no: it is text.');
  await say(bob, 'And this one sits under the previous one.');
  await say(alice, 'Naïve café ✓\nTwo lines, too.');
  for (const page of [alice, bob]) {
    const html = await waitForMessage(page, 'Hi Bob! Is this <b>bold</b>?');
    assert.equal(await html.locator('.text b').count(), 0, 'user text is never parsed as HTML');
    assert.equal(await html.locator('.name').textContent(), 'Alice');
    await waitForMessage(page, 'Hello Alice, no: it is text.');
    await waitForMessage(page, 'And this one sits under the previous one.');
    await waitForMessage(page, 'Two lines, too.');
  }
  assert.equal(await alice.locator('#log li.msg.mine').count(), 2, "Alice's own messages are marked");
  assert.equal(await bob.locator('#log li.msg.mine').count(), 2, "Bob's own messages are marked");
  const texts = await bob.locator('#log li.msg .text').allTextContents();
  assert.deepEqual(texts, [
    'Hi Bob! Is this <b>bold</b>?',
    'Hello Alice, no: it is text.',
    'And this one sits under the previous one.',
    'Naïve café ✓\nTwo lines, too.',
  ]);

  // Carol, in another room, saw none of it.
  await waitForMembers(carol, ['Carol']);
  assert.equal(await carol.locator('#log li.msg').count(), 0, 'another room sees no message');
  await say(carol, 'Anyone here?');
  await waitForMessage(carol, 'Anyone here?');

  mkdirSync(screenshots, { recursive: true });
  await alice.screenshot({ path: path.join(screenshots, 'chat.png') });

  // Bob closes his tab: Alice sees him leave.
  await bob.context().close();
  await alice.locator('#log li.notice', { hasText: 'Bob left' }).waitFor();
  await waitForMembers(alice, ['Alice']);
  assert.equal(await alice.locator('#log li.msg', { hasText: 'Anyone here?' }).count(), 0);
  await carol.context().close();
  // Alice stays for the shutdown test.
  shutdownWitness = alice;
});

test('the page works under its Content-Security-Policy, which blocks injected inline script', { timeout: 30_000 }, async () => {
  // Everything the chat test did (joining, members, messages, leaving) ran
  // without a single violation: the page needs nothing the policy forbids.
  assert.deepEqual(cspViolations, [], 'no CSP violation while chatting');
  const context = await browser.newContext();
  try {
    const page = await context.newPage();
    page.setDefaultTimeout(UI_TIMEOUT);
    const response = await page.goto(`${baseURL}/`);
    assert.match(response.headers()['content-security-policy'] ?? '', /script-src 'self'/);
    assert.equal(response.headers()['x-content-type-options'], 'nosniff');
    await page.locator('#join-form').waitFor();
    // An injected inline script (what an XSS would add) does not run, and the
    // browser reports why.
    const outcome = await page.evaluate(
      () =>
        new Promise((resolve) => {
          document.addEventListener('securitypolicyviolation', (e) => resolve({ ran: window.injected === true, directive: e.effectiveDirective }), {
            once: true,
          });
          const script = document.createElement('script');
          script.textContent = 'window.injected = true';
          document.body.append(script);
        }),
    );
    assert.deepEqual(outcome, { ran: false, directive: 'script-src-elem' });
  } finally {
    await context.close();
  }
});

test('a name that differs only by invisible characters is taken; the page shows the normalised name', { timeout: 30_000 }, async () => {
  // Alice is still in #switchboard (the chat test's witness).
  const twin = await newPage();
  try {
    await twin.goto(`${baseURL}/`);
    await twin.fill('#name', 'Ali\u200bce\u200d');
    await twin.fill('#room', 'switchboard');
    await twin.click('#join-form button[type=submit]');
    await twin.locator('#join-error', { hasText: 'taken' }).waitFor();
    await waitForMembers(shutdownWitness, ['Alice']);
    // Invisible characters around a free name are dropped, not refused.
    await twin.fill('#name', '\u200bZed\ufeff');
    await twin.click('#join-form button[type=submit]');
    await twin.locator('#status[data-state="connected"]').waitFor();
    assert.match(await twin.textContent('#status'), /Connected as Zed ·/);
    await waitForMembers(shutdownWitness, ['Alice', 'Zed']);
  } finally {
    await twin.context().close();
  }
  await waitForMembers(shutdownWitness, ['Alice']);
  assert.deepEqual(cspViolations, [], 'no CSP violation');
});

test('users on every SockJS transport and on WebSocket chat in one room; the page shows each transport', { timeout: 90_000 }, async () => {
  const transports = ['xhr-streaming', 'xhr-polling', 'eventsource', 'htmlfile', 'jsonp-polling', 'websocket-sockjs'];
  const pages = [];
  const names = [];
  try {
    const native = await newPage();
    pages.push(native);
    names.push('native');
    await join(native, 'native', 'transports');
    assert.equal(await native.textContent('#transport-used'), 'WebSocket');
    for (const transport of transports) {
      const page = await newPage();
      pages.push(page);
      const name = `via-${transport}`;
      names.push(name);
      await join(page, name, 'transports', transport);
      const shown = transport === 'websocket-sockjs' ? 'websocket' : transport;
      assert.equal(await page.textContent('#transport-used'), `SockJS · ${shown}`);
    }
    for (const page of pages) await waitForMembers(page, names);
    await say(pages[2], 'polled hello ✓ </script>');
    await say(pages[0], 'native hello');
    for (const page of pages) {
      await waitForMessage(page, 'polled hello ✓ </script>');
      await waitForMessage(page, 'native hello');
    }
    // One leaves: the others see it, whatever their transport.
    await pages[3].click('#leave');
    for (const page of pages.filter((_, i) => i !== 3)) await waitForMembers(page, names.filter((_, i) => i !== 3));
  } finally {
    for (const page of pages) await page.context().close();
  }
  assert.deepEqual(pageErrors, []);
  assert.deepEqual(cspViolations, []);
});

test("Switchboard's own client: over WebSocket, and falling back to SockJS on a page where WebSocket is blocked", { timeout: 60_000 }, async () => {
  const pages = [];
  try {
    const native = await newPage();
    pages.push(native);
    await join(native, 'plain', 'fallback');
    const direct = await newPage();
    pages.push(direct);
    await join(direct, 'client', 'fallback', 'switchboard');
    assert.equal(await direct.textContent('#transport-used'), 'Switchboard · websocket');
    // A page whose WebSocket cannot connect, as behind a proxy that breaks it.
    const blocked = await newPage();
    pages.push(blocked);
    await blocked.addInitScript(() => {
      window.WebSocket = class BlockedWebSocket extends EventTarget {
        constructor() {
          super();
          this.readyState = 0;
          setTimeout(() => {
            this.readyState = 3;
            this.onerror?.(new Event('error'));
            this.dispatchEvent(new Event('error'));
            const close = Object.assign(new Event('close'), { code: 1006, reason: '', wasClean: false });
            this.onclose?.(close);
            this.dispatchEvent(close);
          }, 10);
        }
        send() {}
        close() {}
      };
      window.WebSocket.OPEN = 1;
    });
    await join(blocked, 'behind-proxy', 'fallback', 'switchboard');
    assert.equal(await blocked.textContent('#transport-used'), 'Switchboard · xhr-streaming');
    const names = ['plain', 'client', 'behind-proxy'];
    for (const page of pages) await waitForMembers(page, names);
    await say(blocked, 'hello from behind the proxy');
    await say(native, 'hello from WebSocket');
    for (const page of pages) {
      await waitForMessage(page, 'hello from behind the proxy');
      await waitForMessage(page, 'hello from WebSocket');
    }
    // Its name is taken there: refused as on /chat.
    const twin = await newPage();
    pages.push(twin);
    await twin.goto(`${baseURL}/`);
    await twin.fill('#name', 'plain');
    await twin.fill('#room', 'fallback');
    await twin.selectOption('#transport', 'switchboard-sockjs');
    await twin.click('#join-form button[type=submit]');
    await twin.locator('#join-error:not([hidden])').waitFor();
    assert.match(await twin.textContent('#join-error'), /taken/);
    await pages[2].click('#leave');
    for (const page of pages.slice(0, 2)) await waitForMembers(page, ['plain', 'client']);
  } finally {
    for (const page of pages) await page.context().close();
  }
  assert.deepEqual(pageErrors, []);
  assert.deepEqual(cspViolations, []);
});

test('SIGTERM closes the server gracefully and the page says so', { timeout: 30_000 }, async () => {
  assert.ok(shutdownWitness, 'the chat test left a page open');
  server.kill('SIGTERM');
  await shutdownWitness.locator('#banner', { hasText: 'The server is shutting down' }).waitFor();
  assert.equal(await shutdownWitness.getAttribute('#status', 'data-state'), 'closed');
  assert.ok(await exited(server, 10_000), `the server exits after SIGTERM${log()}`);
  assert.equal(server.exitCode, 0, `the server exits with 0${log()}`);
  assert.deepEqual(pageErrors, [], 'no script error on any page');
});
