// Shared helpers of the end-to-end tests: real servers on 127.0.0.1 port 0,
// real `ws` clients, raw TCP for what a well-behaved client cannot send.
import net from 'node:net';
import { once } from 'node:events';
import WebSocket from 'ws';
import { Server } from 'switchboard';

/**
 * Start a server on 127.0.0.1:0. `setup(server)` registers inline routes
 * (main thread, `workers: 0`) unless `options.app` names an app module.
 */
export async function startServer(setup, options = {}) {
  const server = new Server({ workers: 0, ...options });
  if (setup) setup(server);
  await server.listen(0, '127.0.0.1');
  const url = `ws://127.0.0.1:${server.port}`;
  return { server, url, port: server.port };
}

/** Open a `ws` client and wait until it is open. */
export async function connect(url, options = {}) {
  const ws = new WebSocket(url, options.protocols, options);
  ws.received = [];
  ws.on('message', (data, isBinary) => ws.received.push({ data, isBinary }));
  ws.closed = new Promise((resolve) => ws.on('close', (code, reason) => resolve({ code, reason: reason.toString() })));
  ws.on('error', () => {});
  await once(ws, 'open');
  return ws;
}

/** The next message a client receives (or one already received and not taken). */
export async function nextMessage(ws, timeoutMs = 5000) {
  const started = Date.now();
  ws.taken ??= 0;
  while (ws.received.length <= ws.taken) {
    if (Date.now() - started > timeoutMs) throw new Error('timed out waiting for a message');
    await new Promise((r) => setTimeout(r, 5));
  }
  return ws.received[ws.taken++];
}

/** Wait until `predicate()` is true (polling), or fail after `timeoutMs`. */
export async function waitFor(predicate, timeoutMs = 5000, what = 'condition') {
  const started = Date.now();
  while (!(await predicate())) {
    if (Date.now() - started > timeoutMs) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** `promise`, or a rejection naming `what` when it takes longer than `ms`. */
export function within(promise, ms, what) {
  let timer;
  return Promise.race([
    promise,
    new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

/** Try an upgrade that should fail; resolves with the HTTP status. */
export function upgradeStatus(url, options = {}) {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, options.protocols, options);
    ws.on('unexpected-response', (_req, res) => {
      let body = '';
      res.on('data', (c) => (body += c));
      res.on('end', () => {
        resolve({ status: res.statusCode, headers: res.headers, body });
        res.socket?.destroy();
      });
    });
    ws.on('open', () => reject(new Error('the upgrade unexpectedly succeeded')));
    ws.on('error', () => {});
  });
}

/** Send raw bytes over TCP and collect everything until the server closes. */
export function rawExchange(port, bytes, { timeoutMs = 3000 } = {}) {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    const chunks = [];
    const timer = setTimeout(() => {
      socket.destroy();
      resolve(Buffer.concat(chunks));
    }, timeoutMs);
    socket.on('data', (c) => chunks.push(c));
    socket.on('error', reject);
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(Buffer.concat(chunks));
    });
    socket.write(bytes);
  });
}

/** A valid upgrade request head for raw sockets. */
export function upgradeRequest(path = '/', extra = '') {
  return (
    `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
    `Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n${extra}\r\n`
  );
}

/**
 * A client frame, masked unless `masked: false`, with every header bit under
 * the caller's control (`fin`, `rsv`, the opcode, the mask): what a raw
 * client needs to send well-formed and malformed frames alike. The length
 * takes the shortest form (7 bits, 16 or 64).
 */
export function clientFrame(opcode, payload = Buffer.alloc(0), { fin = true, rsv = 0, masked = true, mask = [0x37, 0xfa, 0x21, 0x3d] } = {}) {
  const data = Buffer.from(payload);
  const head = [((fin ? 0x80 : 0) | (rsv << 4) | opcode) & 0xff];
  const maskBit = masked ? 0x80 : 0;
  if (data.length < 126) head.push(maskBit | data.length);
  else if (data.length < 65536) head.push(maskBit | 126, data.length >> 8, data.length & 0xff);
  else {
    head.push(maskBit | 127, 0, 0, 0, 0);
    head.push((data.length >>> 24) & 0xff, (data.length >>> 16) & 0xff, (data.length >>> 8) & 0xff, data.length & 0xff);
  }
  if (!masked) return Buffer.concat([Buffer.from(head), data]);
  const out = Buffer.alloc(data.length);
  for (let i = 0; i < data.length; i++) out[i] = data[i] ^ mask[i % 4];
  return Buffer.concat([Buffer.from(head), Buffer.from(mask), out]);
}

/** Parse the server frames that follow a 101 response in raw bytes. */
export function serverFrames(raw) {
  const text = raw.toString('latin1');
  let offset = text.indexOf('\r\n\r\n');
  if (offset < 0) return [];
  offset += 4;
  const frames = [];
  while (offset + 2 <= raw.length) {
    const b0 = raw[offset];
    let len = raw[offset + 1] & 0x7f;
    let pos = offset + 2;
    if (len === 126) {
      len = raw.readUInt16BE(pos);
      pos += 2;
    } else if (len === 127) {
      len = Number(raw.readBigUInt64BE(pos));
      pos += 8;
    }
    if (pos + len > raw.length) break;
    const payload = raw.subarray(pos, pos + len);
    const frame = { fin: (b0 & 0x80) !== 0, opcode: b0 & 0x0f, payload };
    if (frame.opcode === 8 && payload.length >= 2) {
      frame.code = payload.readUInt16BE(0);
      frame.reason = payload.subarray(2).toString();
    }
    frames.push(frame);
    offset = pos + len;
  }
  return frames;
}

export { WebSocket };

/** Whether a TCP connection to 127.0.0.1:`port` is refused (nothing listens). */
export function connectionRefused(port) {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.on('connect', () => {
      socket.destroy();
      resolve(false);
    });
    socket.on('error', (e) => resolve(e.code === 'ECONNREFUSED'));
  });
}
