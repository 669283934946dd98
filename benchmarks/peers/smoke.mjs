// Smoke test of the benchmark servers in this folder: starts one, speaks the
// contract of ../SCENARIOS.md to it over raw WebSockets, in the framing the
// load generator uses for that server's protocol, and stops it with SIGTERM.
//
//   node benchmarks/peers/smoke.mjs <server>... | all
//
// <server> is a file name here without `.mjs`: switchboard, uws, ws (plain
// WebSocket framing), socketio (Engine.IO 4 / Socket.IO 5 framing), sockjs
// (SockJS framing). It checks:
//   - the server prints exactly `LISTENING <port>` on stdout;
//   - /echo returns a 32-byte stamped payload and a 2 MiB one unchanged;
//   - /room delivers each message to every member, the sender included;
//   - /channels answers `join:<ch>` with `joined`, returns a message to its
//     sender once, delivers it to the other members of the sender's channel
//     and to no one else;
//   - SIGTERM makes it exit with status 0 while a client is connected.
// Exits 0 when every server passed, 1 otherwise; one line per server and
// check on stdout. Needs the servers' packages installed
// (`npm install` in benchmarks/) and, for switchboard, the build.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import WebSocket from 'ws';

const here = path.dirname(fileURLToPath(import.meta.url));
const PROTOCOL = { switchboard: 'ws', uws: 'ws', ws: 'ws', socketio: 'socketio', sockjs: 'sockjs' };
const START_TIMEOUT_MS = 20_000;
const STEP_TIMEOUT_MS = 5_000;
const STOP_TIMEOUT_MS = 10_000;
// How long to wait for messages that must NOT arrive.
const QUIET_MS = 300;

/** A load-carrying payload: 16 hex digits of stamp, padded with `x`. */
function payload(stamp, size = 32) {
  return stamp.toString(16).padStart(16, '0') + 'x'.repeat(size - 16);
}

function withTimeout(promise, ms, what) {
  let timer;
  return Promise.race([
    promise,
    new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms: ${what}`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

/**
 * One client speaking one framing. `received` collects the payloads of
 * messages (control and load alike) in arrival order; `next()` waits for the
 * next one.
 */
class Client {
  constructor(protocol, port, endpoint) {
    this.protocol = protocol;
    this.endpoint = endpoint;
    this.received = [];
    this.waiters = [];
    this.closed = null;
    let url;
    if (protocol === 'ws') url = `ws://127.0.0.1:${port}/${endpoint}`;
    else if (protocol === 'socketio') url = `ws://127.0.0.1:${port}/socket.io/?EIO=4&transport=websocket`;
    else {
      const server = String(Math.floor(Math.random() * 1000)).padStart(3, '0');
      const session = randomBytes(6).toString('base64url').slice(0, 8);
      url = `ws://127.0.0.1:${port}/${endpoint}/${server}/${session}/websocket`;
    }
    this.url = url;
    this.ws = new WebSocket(url, { perMessageDeflate: false, maxPayload: 64 * 1024 * 1024 });
    this.ready = new Promise((resolve, reject) => {
      this.resolveReady = resolve;
      this.rejectReady = reject;
    });
    this.ws.on('error', (err) => this.fail(new Error(`${endpoint}: ${err.message}`)));
    this.ws.on('close', (code, reason) => {
      this.closed = `closed ${code} ${reason}`;
      this.fail(new Error(`${endpoint}: connection ${this.closed}`));
    });
    this.ws.on('open', () => {
      if (protocol === 'ws') this.resolveReady();
    });
    this.ws.on('message', (data, isBinary) => {
      try {
        if (isBinary) throw new Error('a binary message; the contract has text only');
        this.frame(data.toString('utf8'));
      } catch (err) {
        this.fail(new Error(`${endpoint}: ${err.message}`));
      }
    });
  }

  fail(err) {
    if (!this.error) this.error = err;
    this.rejectReady(err);
    for (const w of this.waiters.splice(0)) w.reject(err);
  }

  deliver(text) {
    const w = this.waiters.shift();
    if (w) w.resolve(text);
    else this.received.push(text);
  }

  frame(text) {
    if (this.protocol === 'ws') return this.deliver(text);
    if (this.protocol === 'socketio') return this.socketioFrame(text);
    return this.sockjsFrame(text);
  }

  socketioFrame(text) {
    const nsp = `/${this.endpoint}`;
    if (text.startsWith('0{')) {
      const open = JSON.parse(text.slice(1));
      if (typeof open.sid !== 'string') throw new Error(`Engine.IO open without a sid: ${text}`);
      this.ws.send(`40${nsp},`);
      return;
    }
    if (text === '2') {
      this.ws.send('3');
      return;
    }
    if (text.startsWith(`40${nsp},{`)) {
      JSON.parse(text.slice(`40${nsp},`.length));
      this.resolveReady();
      return;
    }
    const prefix = `42${nsp},["m",`;
    if (text.startsWith(prefix) && text.endsWith(']')) {
      const value = JSON.parse(text.slice(prefix.length, -1));
      if (typeof value !== 'string') throw new Error(`event m with a non-string argument: ${text.slice(0, 80)}`);
      return this.deliver(value);
    }
    throw new Error(`unexpected Socket.IO frame: ${text.slice(0, 80)}`);
  }

  sockjsFrame(text) {
    if (text === 'o') return this.resolveReady();
    if (text === 'h') return;
    if (text.startsWith('a[')) {
      const values = JSON.parse(text.slice(1));
      for (const v of values) {
        if (typeof v !== 'string') throw new Error(`a non-string SockJS message: ${text.slice(0, 80)}`);
        this.deliver(v);
      }
      return;
    }
    if (text.startsWith('c[')) throw new Error(`SockJS close frame ${text}`);
    throw new Error(`unexpected SockJS frame: ${text.slice(0, 80)}`);
  }

  send(text) {
    if (this.protocol === 'ws') this.ws.send(text);
    else if (this.protocol === 'socketio') this.ws.send(`42/${this.endpoint},${JSON.stringify(['m', text])}`);
    else this.ws.send(JSON.stringify([text]));
  }

  next(what) {
    if (this.error) return Promise.reject(this.error);
    if (this.received.length > 0) return Promise.resolve(this.received.shift());
    return withTimeout(
      new Promise((resolve, reject) => this.waiters.push({ resolve, reject })),
      STEP_TIMEOUT_MS,
      `${this.endpoint}: waiting for ${what}`,
    );
  }

  async expect(expected, what) {
    const got = await this.next(what);
    if (got !== expected) {
      const show = (s) => (s.length > 60 ? `${JSON.stringify(s.slice(0, 60))}... (${s.length} bytes)` : JSON.stringify(s));
      throw new Error(`${this.endpoint}: ${what}: expected ${show(expected)}, got ${show(got)}`);
    }
  }

  /** Fail if anything arrived beyond what was expected. */
  expectNothingMore(what) {
    if (this.error) throw this.error;
    if (this.received.length > 0) {
      throw new Error(`${this.endpoint}: ${what}: unexpected ${JSON.stringify(this.received[0].slice(0, 60))}`);
    }
  }

  close() {
    this.ws.removeAllListeners('close');
    this.ws.on('error', () => {});
    this.ws.terminate();
  }
}

async function connect(protocol, port, endpoint, count) {
  const clients = Array.from({ length: count }, () => new Client(protocol, port, endpoint));
  await withTimeout(Promise.all(clients.map((c) => c.ready)), STEP_TIMEOUT_MS, `${endpoint}: connecting`);
  return clients;
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function checkEcho(protocol, port) {
  const [c] = await connect(protocol, port, 'echo', 1);
  try {
    for (let i = 1; i <= 3; i++) {
      const p = payload(i);
      c.send(p);
      await c.expect(p, `echo of message ${i}`);
    }
    const big = payload(4, 2 * 1024 * 1024);
    c.send(big);
    await c.expect(big, 'echo of a 2 MiB message');
    await sleep(QUIET_MS);
    c.expectNothingMore('after the echoes');
  } finally {
    c.close();
  }
}

async function checkRoom(protocol, port) {
  const clients = await connect(protocol, port, 'room', 3);
  try {
    // Subscription happens on open; give a server whose `open` runs
    // asynchronously time to subscribe before the first publish.
    await sleep(100);
    for (const [i, sender] of clients.entries()) {
      const p = payload(100 + i);
      sender.send(p);
      for (const [j, c] of clients.entries()) await c.expect(p, `client ${j} receiving client ${i}'s message`);
    }
    await sleep(QUIET_MS);
    for (const [j, c] of clients.entries()) c.expectNothingMore(`client ${j} after the room messages`);
  } finally {
    for (const c of clients) c.close();
  }
}

async function checkChannels(protocol, port) {
  // a and b in channel c1, d alone in channel c2.
  const [a, b, d] = await connect(protocol, port, 'channels', 3);
  try {
    a.send('join:c1');
    b.send('join:c1');
    d.send('join:c2');
    await a.expect('joined', 'answer to join:c1');
    await b.expect('joined', 'answer to join:c1');
    await d.expect('joined', 'answer to join:c2');

    const p1 = payload(200);
    a.send(p1);
    await a.expect(p1, "sender's reply");
    await b.expect(p1, 'broadcast to the other member of c1');
    const p2 = payload(201);
    b.send(p2);
    await b.expect(p2, "sender's reply");
    await a.expect(p2, 'broadcast to the other member of c1');
    const p3 = payload(202);
    d.send(p3);
    await d.expect(p3, "sender's reply (alone in c2)");
    await sleep(QUIET_MS);
    a.expectNothingMore('member of c1 (a sender must not get its own broadcast; c2 must not leak)');
    b.expectNothingMore('member of c1 (a sender must not get its own broadcast; c2 must not leak)');
    d.expectNothingMore('member of c2 (c1 must not leak)');
  } finally {
    for (const c of [a, b, d]) c.close();
  }
}

async function smoke(name) {
  const protocol = PROTOCOL[name];
  const file = path.join(here, `${name}.mjs`);
  const child = spawn(process.execPath, [file], {
    env: { ...process.env, PORT: '0' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (s) => (stdout += s));
  child.stderr.setEncoding('utf8').on('data', (s) => (stderr += s));
  const exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));

  const results = [];
  const step = async (what, fn) => {
    try {
      await fn();
      results.push({ what, ok: true });
    } catch (err) {
      results.push({ what, ok: false, message: err.message });
    }
  };
  let port;
  const lingering = [];
  try {
    port = await withTimeout(
      new Promise((resolve, reject) => {
        const check = () => {
          const m = /^LISTENING (\d+)\n/.exec(stdout);
          if (m) resolve(Number(m[1]));
        };
        child.stdout.on('data', check);
        exited.then(({ code, signal }) => reject(new Error(`exited (${code ?? signal}) before LISTENING`)));
      }),
      START_TIMEOUT_MS,
      'LISTENING <port> on stdout',
    );
    results.push({ what: `LISTENING ${port}`, ok: true });
    await step('/echo', () => checkEcho(protocol, port));
    await step('/room', () => checkRoom(protocol, port));
    await step('/channels', () => checkChannels(protocol, port));
  } catch (err) {
    results.push({ what: 'start', ok: false, message: err.message });
  }

  await step('SIGTERM exits 0 (with a connection open)', async () => {
    if (child.exitCode === null && child.signalCode === null) {
      try {
        // An open connection must not keep the server from stopping.
        if (port !== undefined) lingering.push(...(await connect(protocol, port, 'echo', 1)));
      } finally {
        child.kill('SIGTERM');
      }
    }
    const { code, signal } = await withTimeout(exited, STOP_TIMEOUT_MS, 'exit after SIGTERM').catch((err) => {
      child.kill('SIGKILL');
      throw err;
    });
    if (code !== 0) throw new Error(`exited with ${code ?? signal}`);
  });
  for (const c of lingering) c.close();
  await step('stdout holds only the LISTENING line', async () => {
    if (!/^LISTENING \d+\n$/.test(stdout)) throw new Error(`stdout was ${JSON.stringify(stdout.slice(0, 200))}`);
  });

  const ok = results.every((r) => r.ok);
  for (const r of results) console.log(`${r.ok ? 'ok  ' : 'FAIL'} ${name}: ${r.what}${r.ok ? '' : `: ${r.message}`}`);
  if (!ok && stderr.trim()) console.log(`--- ${name} stderr ---\n${stderr.trimEnd()}\n---`);
  return ok;
}

const args = process.argv.slice(2);
const names = args.length === 1 && args[0] === 'all' ? Object.keys(PROTOCOL) : args;
if (names.length === 0 || names.some((n) => !(n in PROTOCOL))) {
  console.error(`usage: node benchmarks/peers/smoke.mjs <server>... | all   (servers: ${Object.keys(PROTOCOL).join(', ')})`);
  process.exit(2);
}
let failed = 0;
for (const name of names) if (!(await smoke(name))) failed++;
console.log(`smoke: ${names.length - failed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
