// Raw HTTP for the SockJS transport tests: one request per connection,
// written byte for byte, and streaming responses read frame by frame
// (chunk by chunk on HTTP/1.1, bytes until the close on HTTP/1.0).
import assert from 'node:assert/strict';
import { HttpConnection } from '../http/support.mjs';

export const NO_CACHE = 'no-store, no-cache, no-transform, must-revalidate, max-age=0';
export const PRELUDE = `${'h'.repeat(2048)}\n`;

/** A raw request head (and body) with exactly the target and headers given. */
export function rawRequest(method, target, headers = {}, body = '', version = '1.1') {
  const lines = [`${method} ${target} HTTP/${version}`, 'Host: 127.0.0.1'];
  for (const [name, value] of Object.entries(headers)) lines.push(`${name}: ${value}`);
  if (body !== '' || method === 'POST' || method === 'PUT') lines.push(`Content-Length: ${Buffer.byteLength(body)}`);
  return `${lines.join('\r\n')}\r\n\r\n${body}`;
}

/** One request on its own connection: `{ status, headers, body (string), raw }`. */
export async function request(port, method, target, headers = {}, body = '', { timeoutMs = 3000 } = {}) {
  const connection = await HttpConnection.open(port);
  try {
    connection.write(rawRequest(method, target, headers, body));
    const response = await connection.response({ timeoutMs });
    assert.ok(response, `${method} ${target}: no whole response within ${timeoutMs} ms`);
    return { status: response.status, headers: response.headers, body: response.body.toString('utf8'), raw: response.raw };
  } finally {
    connection.destroy();
  }
}

/** `Content-Type` as the protocol suite compares it: spaces ignored. */
export function contentType(response) {
  return (response.headers['content-type'] ?? '').replace(/ /g, '');
}

/** A streaming response read as it arrives. */
export class Stream {
  /** Open `method target` and read up to the end of the head. */
  static async open(port, method, target, { headers = {}, version = '1.1' } = {}) {
    const connection = await HttpConnection.open(port);
    connection.write(rawRequest(method, target, headers, '', version));
    const head = await connection.response({ headOnly: true, timeoutMs: 3000 });
    assert.ok(head, `${method} ${target}: no response head`);
    return new Stream(connection, head);
  }

  constructor(connection, head) {
    this.connection = connection;
    this.status = head.status;
    this.headers = head.headers;
    this.chunked = head.headers['transfer-encoding'] === 'chunked';
  }

  /**
   * The next chunk as a string ('' for the last chunk), or null when the
   * connection closed (or nothing came within `timeoutMs`).
   */
  async chunk(timeoutMs = 3000) {
    assert.ok(this.chunked, 'a chunked response');
    const connection = this.connection;
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const buffer = connection.buffer;
      const lineEnd = buffer.indexOf('\r\n');
      if (lineEnd >= 0) {
        const size = parseInt(buffer.subarray(0, lineEnd).toString('latin1'), 16);
        assert.ok(!Number.isNaN(size), `a chunk size line, got ${JSON.stringify(buffer.subarray(0, lineEnd).toString('latin1'))}`);
        const end = lineEnd + 2 + size + 2;
        if (buffer.length >= end) {
          connection.buffer = buffer.subarray(end);
          return buffer.subarray(lineEnd + 2, lineEnd + 2 + size).toString('utf8');
        }
      }
      if (connection.closed) return null;
      const left = deadline - Date.now();
      if (left <= 0 || !(await connection.more(left))) {
        if (connection.closed) continue;
        return null;
      }
    }
  }

  /** Exactly `n` bytes of an unchunked body (null if the connection closed first). */
  async bytes(n, timeoutMs = 3000) {
    const connection = this.connection;
    const deadline = Date.now() + timeoutMs;
    while (connection.buffer.length < n) {
      if (connection.closed) return null;
      const left = deadline - Date.now();
      if (left <= 0 || !(await connection.more(left))) {
        if (connection.closed) continue;
        return null;
      }
    }
    const out = connection.buffer.subarray(0, n).toString('utf8');
    connection.buffer = connection.buffer.subarray(n);
    return out;
  }

  /** Whether the server closed the connection within `timeoutMs`. */
  closed(timeoutMs = 3000) {
    return this.connection.closedByServer(timeoutMs);
  }

  /** Whether nothing arrives for `ms`. */
  async silentFor(ms) {
    const before = this.connection.buffer.length;
    await new Promise((resolve) => setTimeout(resolve, ms));
    return this.connection.buffer.length === before && !this.connection.closed;
  }

  destroy() {
    this.connection.destroy();
  }
}
