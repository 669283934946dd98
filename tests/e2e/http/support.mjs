// Raw HTTP/1.1 over TCP for the HTTP tests: what a well-behaved client
// (fetch, curl) never sends, and responses read one by one from a kept-alive
// connection, with their framing checked byte by byte.
import net from 'node:net';
import { once } from 'node:events';
import { Server } from 'switchboard';

/**
 * A server on 127.0.0.1:0 (`workers: 0`) whose routes `setup(app, server)`
 * registers. `errors`: what `handlerError` reported; `reports`: the same
 * with its info (`{ error, info }`).
 */
export async function startHttp(setup, options = {}) {
  const server = new Server({ workers: 0, ...options });
  const errors = [];
  const reports = [];
  server.on('handlerError', (error, info) => {
    errors.push(error);
    reports.push({ error, info });
  });
  setup(server.app, server);
  await server.listen(0, '127.0.0.1');
  return { server, errors, reports, port: server.port, base: `http://127.0.0.1:${server.port}` };
}

/** A raw connection that reads responses one after another. */
export class HttpConnection {
  static async open(port) {
    const socket = net.connect(port, '127.0.0.1');
    await once(socket, 'connect');
    return new HttpConnection(socket);
  }

  constructor(socket) {
    this.socket = socket;
    this.buffer = Buffer.alloc(0);
    this.closed = false;
    this.waiters = [];
    socket.on('data', (chunk) => {
      this.buffer = Buffer.concat([this.buffer, chunk]);
      this.wake();
    });
    socket.on('close', () => {
      this.closed = true;
      this.wake();
    });
    socket.on('error', () => {});
  }

  wake() {
    for (const waiter of this.waiters.splice(0)) waiter();
  }

  write(bytes) {
    this.socket.write(bytes);
  }

  /** Wait for more bytes (or the close); false on timeout. */
  async more(timeoutMs) {
    if (this.closed) return false;
    return new Promise((resolve) => {
      const timer = setTimeout(() => resolve(false), timeoutMs);
      this.waiters.push(() => {
        clearTimeout(timer);
        resolve(true);
      });
    });
  }

  /**
   * The next response: `{ status, headers, body (Buffer), raw }`, with its
   * body framed by Content-Length or chunked (or, `headOnly`, none). Null if
   * the connection closed (or `timeoutMs` passed) before a whole response.
   */
  async response({ timeoutMs = 3000, headOnly = false } = {}) {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const parsed = parseOne(this.buffer, headOnly);
      if (parsed) {
        this.buffer = this.buffer.subarray(parsed.length);
        return parsed.response;
      }
      if (this.closed) {
        if (this.buffer.length > 0) {
          // A body that ends with the connection (no length, no chunks).
          const unframed = parseOne(this.buffer, headOnly, true);
          this.buffer = Buffer.alloc(0);
          return unframed?.response ?? null;
        }
        return null;
      }
      const left = deadline - Date.now();
      if (left <= 0 || !(await this.more(left))) {
        if (this.closed) continue;
        return null;
      }
    }
  }

  /** Wait until the server closes the connection; true if it did within the time. */
  async closedByServer(timeoutMs = 3000) {
    const deadline = Date.now() + timeoutMs;
    while (!this.closed) {
      const left = deadline - Date.now();
      if (left <= 0) return false;
      await this.more(left);
    }
    return true;
  }

  destroy() {
    this.socket.destroy();
  }
}

/** One response from the start of `buffer`, or null when incomplete. */
function parseOne(buffer, headOnly, toEnd = false) {
  const end = buffer.indexOf('\r\n\r\n');
  if (end < 0) return null;
  const head = buffer.subarray(0, end).toString('latin1');
  const [statusLine, ...lines] = head.split('\r\n');
  const match = /^HTTP\/1\.[01] (\d{3}) ?(.*)$/.exec(statusLine);
  if (!match) throw new Error(`not a status line: ${JSON.stringify(statusLine)}`);
  const headers = {};
  const headerList = [];
  for (const line of lines) {
    const colon = line.indexOf(':');
    const name = line.slice(0, colon).toLowerCase();
    const value = line.slice(colon + 1).trim();
    headerList.push([name, value]);
    headers[name] = name in headers ? `${headers[name]}, ${value}` : value;
  }
  const status = Number(match[1]);
  let at = end + 4;
  let body = Buffer.alloc(0);
  const noBody = headOnly || status < 200 || status === 204 || status === 304;
  if (!noBody) {
    if (headers['transfer-encoding'] === 'chunked') {
      const pieces = [];
      for (;;) {
        const lineEnd = buffer.indexOf('\r\n', at);
        if (lineEnd < 0) return null;
        const size = parseInt(buffer.subarray(at, lineEnd).toString('latin1'), 16);
        if (Number.isNaN(size)) throw new Error('bad chunk size');
        if (size === 0) {
          const trailerEnd = buffer.indexOf('\r\n', lineEnd + 2);
          if (trailerEnd < 0) return null;
          at = trailerEnd + 2;
          break;
        }
        if (buffer.length < lineEnd + 2 + size + 2) return null;
        pieces.push(buffer.subarray(lineEnd + 2, lineEnd + 2 + size));
        at = lineEnd + 2 + size + 2;
      }
      body = Buffer.concat(pieces);
    } else if (headers['content-length'] !== undefined) {
      const length = Number(headers['content-length']);
      if (buffer.length < at + length) return null;
      body = buffer.subarray(at, at + length);
      at += length;
    } else if (toEnd) {
      body = buffer.subarray(at);
      at = buffer.length;
    } else {
      return null;
    }
  }
  return {
    length: at,
    response: { status, statusText: match[2], headers, headerList, body: Buffer.from(body), raw: buffer.subarray(0, at).toString('latin1') },
  };
}

/** Send `request` on a fresh connection and read one response (and whether the server closed after it). */
export async function exchange(port, request, options = {}) {
  const connection = await HttpConnection.open(port);
  try {
    connection.write(request);
    const response = await connection.response(options);
    const closed = await connection.closedByServer(options.closeWaitMs ?? 300);
    return { response, closed };
  } finally {
    connection.destroy();
  }
}
