// Helpers of the WebSocket end-to-end tests (in addition to tests/helpers,
// which has the client frame encoder `clientFrame`): raw HTTP exchanges with
// parsed responses, and a raw WebSocket client that can send any bytes and
// parse the server's frames as they arrive.
import net from 'node:net';
import { once } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import { connect, nextMessage, upgradeRequest, WebSocket } from '../../helpers/index.mjs';

export { sleep };

/** Parse an HTTP response head (and what follows it) from raw bytes. */
export function parseResponse(raw) {
  const text = raw.toString('latin1');
  const end = text.indexOf('\r\n\r\n');
  if (end < 0) return null;
  const lines = text.slice(0, end).split('\r\n');
  const match = /^HTTP\/1\.1 (\d{3}) ?(.*)$/.exec(lines[0]);
  if (!match) throw new Error(`not an HTTP/1.1 status line: ${JSON.stringify(lines[0])}`);
  const headers = {};
  for (const line of lines.slice(1)) {
    const colon = line.indexOf(':');
    const name = line.slice(0, colon).trim().toLowerCase();
    const value = line.slice(colon + 1).trim();
    headers[name] = name in headers ? `${headers[name]}, ${value}` : value;
  }
  return { status: Number(match[1]), statusText: match[2], headers, rest: raw.subarray(end + 4) };
}

/**
 * Write `request` (string or bytes) and read until the server closes the
 * connection, or `timeoutMs`, or (HTTP keeps connections alive) a whole
 * response with a `Content-Length` is in and `keepAliveWaitMs` more passed
 * without a close. Resolves with the parsed response, its body, whether
 * the server closed, and how long it took.
 */
export function httpExchange(port, request, { timeoutMs = 3000, writeDelayMs, keepAliveWaitMs = 200 } = {}) {
  return new Promise((resolve, reject) => {
    const started = Date.now();
    const socket = net.connect(port, '127.0.0.1');
    const chunks = [];
    let settled = false;
    const finish = (closedByServer) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      const raw = Buffer.concat(chunks);
      const response = parseResponse(raw);
      resolve({
        raw,
        closedByServer,
        elapsedMs: Date.now() - started,
        status: response?.status,
        statusText: response?.statusText,
        headers: response?.headers ?? {},
        body: response ? response.rest.toString('utf8') : '',
      });
    };
    const timer = setTimeout(() => finish(false), timeoutMs);
    let whole = false;
    socket.on('data', (c) => {
      chunks.push(c);
      if (whole) return;
      const response = parseResponse(Buffer.concat(chunks));
      const length = Number(response?.headers['content-length']);
      if (response && response.status !== 101 && Number.isInteger(length) && response.rest.length >= length) {
        whole = true;
        setTimeout(() => finish(false), keepAliveWaitMs);
      }
    });
    socket.on('error', (e) => (chunks.length > 0 ? finish(true) : settled || (clearTimeout(timer), reject(e))));
    socket.on('end', () => finish(true));
    socket.on('close', () => finish(true));
    if (request !== undefined && request !== null) socket.write(request);
  });
}

/** An upgrade request head with the headers given (complete control). */
export function requestHead(lines) {
  return `${lines.join('\r\n')}\r\n\r\n`;
}

/** A close frame payload: code (u16) + reason. */
export function closePayload(code, reason = '') {
  const out = Buffer.alloc(2 + Buffer.byteLength(reason));
  out.writeUInt16BE(code, 0);
  out.write(reason, 2);
  return out;
}

export const OP = { CONT: 0, TEXT: 1, BINARY: 2, CLOSE: 8, PING: 9, PONG: 10 };

/**
 * A WebSocket client over a raw TCP socket: it sends whatever bytes a test
 * gives it and parses server frames incrementally (checking that they are
 * well formed: unmasked, with a known opcode).
 */
export class RawClient {
  constructor(socket) {
    this.socket = socket;
    this.buffer = Buffer.alloc(0);
    this.frames = [];
    this.taken = 0;
    this.response = null;
    this.ended = false;
    this.bytesReceived = 0;
    this.malformed = null;
    /** Keep payloads of frames over 1 KiB (otherwise only their length). */
    this.keepPayloads = true;
    this.chunks = [];
    this.chunkBytes = 0;
    this.needed = 0;
    this.endedPromise = new Promise((resolve) => socket.once('close', () => resolve()));
    socket.on('close', () => (this.ended = true));
    socket.on('error', () => {});
  }

  /**
   * Connect, send an upgrade request for `path` and wait for the response
   * head. `paused: true` stops reading right after the head (a client that
   * never reads).
   */
  static async open(port, path = '/', { extra = '', trailing, paused = false, timeoutMs = 5000 } = {}) {
    const socket = net.connect(port, '127.0.0.1');
    await once(socket, 'connect');
    const client = new RawClient(socket);
    const head = Buffer.from(upgradeRequest(path, extra), 'latin1');
    socket.write(trailing ? Buffer.concat([head, trailing]) : head);
    await new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('timed out waiting for the upgrade response')), timeoutMs);
      const onData = (chunk) => {
        client.buffer = Buffer.concat([client.buffer, chunk]);
        const response = parseResponse(client.buffer);
        if (!response) return;
        clearTimeout(timer);
        socket.off('data', onData);
        socket.off('close', onClose);
        client.response = response;
        client.buffer = Buffer.from(response.rest);
        if (paused) socket.pause();
        else client.startReading();
        client.parse();
        resolve();
      };
      const onClose = () => {
        clearTimeout(timer);
        reject(new Error('the server closed before answering the upgrade'));
      };
      socket.on('data', onData);
      socket.on('close', onClose);
    });
    return client;
  }

  get status() {
    return this.response?.status;
  }

  startReading() {
    if (this.reading) return;
    this.reading = true;
    this.socket.on('data', (chunk) => {
      this.bytesReceived += chunk.length;
      this.chunks.push(chunk);
      this.chunkBytes += chunk.length;
      // Concatenate only once the next frame can be complete (big frames
      // arrive in many chunks).
      if (this.buffer.length + this.chunkBytes < this.needed) return;
      this.buffer = Buffer.concat([this.buffer, ...this.chunks]);
      this.chunks = [];
      this.chunkBytes = 0;
      this.parse();
    });
    this.socket.resume();
  }

  parse() {
    let offset = 0;
    const raw = this.buffer;
    this.needed = 0;
    while (offset + 2 <= raw.length) {
      const b0 = raw[offset];
      const b1 = raw[offset + 1];
      let len = b1 & 0x7f;
      let pos = offset + 2;
      if (len === 126) {
        if (pos + 2 > raw.length) break;
        len = raw.readUInt16BE(pos);
        pos += 2;
      } else if (len === 127) {
        if (pos + 8 > raw.length) break;
        len = Number(raw.readBigUInt64BE(pos));
        pos += 8;
      }
      if (pos + len > raw.length) {
        this.needed = pos + len - offset;
        break;
      }
      const opcode = b0 & 0x0f;
      if (b1 & 0x80) this.malformed ??= 'masked server frame';
      if (![0, 1, 2, 8, 9, 10].includes(opcode)) this.malformed ??= `bad opcode ${opcode}`;
      const f = { fin: (b0 & 0x80) !== 0, rsv: (b0 >> 4) & 7, opcode, length: len };
      const payload = raw.subarray(pos, pos + len);
      if (this.keepPayloads || len <= 1024) f.payload = Buffer.from(payload);
      else f.payload = null;
      if (opcode === OP.CLOSE && payload.length >= 2) {
        f.code = payload.readUInt16BE(0);
        f.reason = payload.subarray(2).toString();
      }
      this.frames.push(f);
      this.onFrame?.(f, payload);
      offset = pos + len;
    }
    this.buffer = offset === 0 ? raw : raw.subarray(offset);
  }

  send(bytes) {
    this.socket.write(bytes);
  }

  /** The next frame not taken yet (optionally of one opcode, skipping others). */
  async nextFrame({ timeoutMs = 5000, opcode } = {}) {
    const started = Date.now();
    for (;;) {
      while (this.taken < this.frames.length) {
        const f = this.frames[this.taken++];
        if (opcode === undefined || f.opcode === opcode) return f;
      }
      if (this.ended) throw new Error('the connection ended before the expected frame');
      if (Date.now() - started > timeoutMs) throw new Error('timed out waiting for a frame');
      await sleep(5);
    }
  }

  /** Wait for the close frame; resolves with it. */
  closeFrame(timeoutMs = 5000) {
    return this.nextFrame({ opcode: OP.CLOSE, timeoutMs });
  }

  /** Wait until the server closed the TCP connection. */
  async waitEnded(timeoutMs = 5000) {
    let timer;
    const timeout = new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error('timed out waiting for the server to close the connection')), timeoutMs);
    });
    try {
      await Promise.race([this.endedPromise, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  destroy() {
    this.socket.destroy();
  }
}

/** An echo client that proves the server still serves others promptly. */
export async function assertEchoes(url, assert, { withinMs = 2000, message = 'still alive' } = {}) {
  const ws = await connect(url);
  try {
    const started = Date.now();
    ws.send(message);
    const reply = await nextMessage(ws, withinMs);
    assert.equal(reply.data.toString(), message);
    assert.ok(Date.now() - started < withinMs, `echo took ${Date.now() - started} ms`);
  } finally {
    ws.terminate();
  }
}

/** Resolve `promise` or fail after `ms`. */
export async function within(ms, promise, what = 'operation') {
  let timer;
  try {
    return await Promise.race([
      promise,
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Try an upgrade with the `ws` client that should fail; resolves with the
 * HTTP status, headers and the full body (the shared `upgradeStatus` helper
 * terminates before the body arrives, so its body is always empty).
 */
export function rejectedUpgrade(url, options = {}) {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, options.protocols, options);
    const timer = setTimeout(() => {
      ws.terminate();
      reject(new Error('timed out waiting for the upgrade response'));
    }, options.timeoutMs ?? 5000);
    ws.on('unexpected-response', (_req, res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c) => (body += c));
      res.on('end', () => {
        clearTimeout(timer);
        resolve({ status: res.statusCode, headers: res.headers, body });
        ws.terminate();
      });
    });
    ws.on('open', () => {
      clearTimeout(timer);
      ws.terminate();
      reject(new Error('the upgrade unexpectedly succeeded'));
    });
    ws.on('error', () => {});
  });
}
