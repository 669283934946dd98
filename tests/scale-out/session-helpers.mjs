// What the session store tests share (sessions.test.mjs on standalone
// Redis, cluster-sessions.test.mjs on a Redis Cluster): a server in this
// process with the session routes, and a client that keeps its cookie.
import assert from 'node:assert/strict';
import { Server } from 'switchboard';
import { sessionRoutes } from '../fixtures/session-app.mjs';

/** A server in this process (workers: 0) on `broker` with the session routes (`options`: theirs); its handlerError reports are kept. */
export async function startSessionServer(t, broker, options = {}) {
  const server = new Server({ workers: 0, broker });
  const store = sessionRoutes(server.app, options);
  const reports = [];
  server.on('handlerError', (error) => reports.push(error));
  await server.listen(0);
  t.after(() => server.close({ drainTimeout: 200 }));
  return { server, store, reports, base: `http://127.0.0.1:${server.port}` };
}

/** A client with one cookie, `sid`, as Set-Cookie leaves it. */
export class Client {
  constructor(cookie) {
    this.cookie = cookie;
  }

  async fetch(base, path, method = 'GET', close = false) {
    const headers = { ...(this.cookie ? { cookie: `sid=${this.cookie}` } : {}), ...(close ? { connection: 'close' } : {}) };
    const response = await fetch(`${base}${path}`, { method, headers });
    for (const line of response.headers.getSetCookie()) {
      const [pair] = line.split(';');
      if (!pair.startsWith('sid=')) continue;
      this.cookie = /Max-Age=0/.test(line) ? undefined : pair.slice(4);
    }
    return response;
  }

  async json(base, path, method = 'GET', close = false) {
    const response = await this.fetch(base, path, method, close);
    const body = await response.text();
    assert.equal(response.status, 200, `${method} ${path}: ${response.status} ${body}`);
    return JSON.parse(body);
  }

  /** The id inside the signed cookie. */
  get sid() {
    return this.cookie && /^s:([A-Za-z0-9_-]{32})\./.exec(decodeURIComponent(this.cookie))?.[1];
  }
}
