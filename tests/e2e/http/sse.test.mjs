// Server-sent events with real clients: a fetch that reads the stream and
// parses it as EventSource would (the WHATWG rules), heartbeats, the end
// from either side, backpressure, and the timer stopped whoever ends it.
import test from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import net from 'node:net';
import { Server } from 'switchboard';
import { startHttp } from './support.mjs';

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** A server for `setup` (support.mjs); `errors` are `{ error, info }` reports. */
const start = async (setup, options) => {
  const started = await startHttp(setup, options);
  return { ...started, errors: started.reports };
};

/**
 * Reads an event stream as EventSource does: lines end with CRLF, CR or
 * LF; `:` lines are comments; `data` lines join with LF; a blank line
 * dispatches (an event with no data is not dispatched, but its id sticks).
 */
class EventReader {
  constructor(response) {
    this.reader = response.body.getReader();
    this.decoder = new TextDecoder();
    this.buffer = '';
    this.events = [];
    this.comments = [];
    this.lastEventId = '';
    this.retry = undefined;
    this.pending = { data: [], event: '' };
    this.ended = false;
  }

  /** Read until `done()` is true or the stream ends; false if it ended first. */
  async until(done, timeoutMs = 3000) {
    const deadline = Date.now() + timeoutMs;
    while (!done()) {
      if (this.ended) return false;
      if (Date.now() > deadline) throw new Error('timed out waiting on the stream');
      const { value, done: end } = await this.reader.read();
      if (end) {
        this.ended = true;
        continue;
      }
      this.feed(this.decoder.decode(value, { stream: true }));
    }
    return true;
  }

  feed(text) {
    this.buffer += text;
    for (;;) {
      const match = /\r\n|\r|\n/.exec(this.buffer);
      // A CR at the very end may be the first half of a CRLF.
      if (!match || (match[0] === '\r' && match.index === this.buffer.length - 1)) return;
      const line = this.buffer.slice(0, match.index);
      this.buffer = this.buffer.slice(match.index + match[0].length);
      this.line(line);
    }
  }

  line(line) {
    if (line === '') {
      if (this.pending.data.length > 0) {
        this.events.push({ event: this.pending.event || 'message', data: this.pending.data.join('\n'), lastEventId: this.lastEventId });
      }
      this.pending = { data: [], event: '' };
      return;
    }
    if (line.startsWith(':')) {
      this.comments.push(line.slice(1).replace(/^ /, ''));
      return;
    }
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
    if (field === 'data') this.pending.data.push(value);
    else if (field === 'event') this.pending.event = value;
    else if (field === 'id' && !value.includes('\0')) this.lastEventId = value;
    else if (field === 'retry' && /^\d+$/.test(value)) this.retry = Number(value);
  }
}

test('events reach a streaming fetch: headers, types, ids, multi-line and JSON data, retry, the end from the server', async (t) => {
  let lastEventId;
  const { server, base } = await start((app) => {
    app.get('/events', async (req, res) => {
      lastEventId = req.header('last-event-id');
      const stream = res.sse({ retry: 2500 });
      stream.send('plain');
      stream.send({ event: 'update', id: 1, data: { a: [1, 2], text: 'two\nlines' } });
      await sleep(5);
      stream.send({ id: 'two', data: 'line one\nline two\r\nline three\rline four' });
      stream.comment('just a comment');
      stream.send({ event: 'empty', data: '' });
      stream.send({ id: 'only-an-id' });
      stream.send({ event: 'last', data: 'bye', retry: 100 });
      stream.close();
      assert.equal(stream.closed, true);
      assert.equal(stream.send('after close'), false);
    });
  });
  t.after(() => server.close({ drainTimeout: 500 }));

  const response = await fetch(`${base}/events`, { headers: { 'Last-Event-ID': '41' } });
  assert.equal(response.status, 200);
  assert.equal(response.headers.get('content-type'), 'text/event-stream; charset=utf-8');
  assert.equal(response.headers.get('cache-control'), 'no-cache');
  assert.equal(response.headers.get('x-accel-buffering'), 'no');
  assert.equal(response.headers.get('transfer-encoding'), 'chunked');
  const reader = new EventReader(response);
  assert.equal(await reader.until(() => false), false, 'the stream ends when the server closes it');
  assert.equal(lastEventId, '41', 'the client\'s Last-Event-ID reaches the handler');
  assert.deepEqual(reader.events, [
    { event: 'message', data: 'plain', lastEventId: '' },
    { event: 'update', data: JSON.stringify({ a: [1, 2], text: 'two\nlines' }), lastEventId: '1' },
    { event: 'message', data: 'line one\nline two\nline three\nline four', lastEventId: 'two' },
    { event: 'empty', data: '', lastEventId: 'two' },
    { event: 'last', data: 'bye', lastEventId: 'only-an-id' },
  ]);
  assert.deepEqual(reader.comments, ['just a comment']);
  assert.equal(reader.retry, 100, 'the last retry wins (2500 came first)');
});

test('heartbeat comments keep a quiet stream alive; events put them off; the default is none for 15 s', async (t) => {
  const { server, base } = await start((app) => {
    app.get('/quiet', (req, res) => {
      res.sse({ heartbeat: 25 });
    });
    app.get('/default', (req, res) => {
      const stream = res.sse();
      stream.send('hello');
      setTimeout(() => stream.close(), 120);
    });
  });
  t.after(() => server.close({ drainTimeout: 500 }));

  const controller = new AbortController();
  const quiet = new EventReader(await fetch(`${base}/quiet`, { signal: controller.signal }));
  await quiet.until(() => quiet.comments.length >= 3);
  assert.ok(quiet.comments.every((c) => c === ''), 'a heartbeat is an empty comment');
  assert.equal(quiet.events.length, 0);
  controller.abort();

  const defaults = new EventReader(await fetch(`${base}/default`));
  await defaults.until(() => false);
  assert.deepEqual(defaults.events.map((e) => e.data), ['hello']);
  assert.deepEqual(defaults.comments, [], 'no heartbeat within 120 ms by default');
  assert.equal(defaults.retry, undefined, 'no retry unless asked');
});

test('a client that leaves closes the stream: the heartbeat timer stops, send returns false, the server closes cleanly', async (t) => {
  // Count the heartbeat timers the streams start and stop.
  const realSetInterval = globalThis.setInterval;
  const realClearInterval = globalThis.clearInterval;
  const live = new Set();
  globalThis.setInterval = (fn, ms, ...rest) => {
    const timer = realSetInterval(fn, ms, ...rest);
    live.add(timer);
    return timer;
  };
  globalThis.clearInterval = (timer) => {
    live.delete(timer);
    return realClearInterval(timer);
  };
  t.after(() => {
    globalThis.setInterval = realSetInterval;
    globalThis.clearInterval = realClearInterval;
  });

  let stream;
  let closed;
  let aborted;
  const { server, base } = await start((app) => {
    app.get('/events', (req, res) => {
      aborted = new Promise((resolve) => req.signal.addEventListener('abort', resolve));
      stream = res.sse({ heartbeat: 20 });
      closed = new Promise((resolve) => stream.on('close', resolve));
      stream.send('first');
    });
  });

  const controller = new AbortController();
  const reader = new EventReader(await fetch(`${base}/events`, { signal: controller.signal }));
  await reader.until(() => reader.events.length === 1 && reader.comments.length >= 1);
  assert.equal(live.size, 1, 'one heartbeat timer while the stream is open');
  controller.abort();
  await Promise.all([aborted, closed]);
  assert.equal(stream.closed, true);
  assert.equal(live.size, 0, 'the heartbeat timer was cleared when the client left');
  assert.equal(stream.send('too late'), false);
  assert.equal(stream.comment('too late'), false);
  stream.close(); // harmless

  const started = Date.now();
  await server.close({ drainTimeout: 500 });
  assert.ok(Date.now() - started < 2000, 'nothing held the server open');
  assert.equal(live.size, 0);
});

test('server shutdown ends open streams and their timers', async () => {
  let stream;
  const { server, base } = await start((app) => {
    app.get('/events', (req, res) => {
      stream = res.sse({ heartbeat: 50 });
      stream.send('open');
    });
  });
  const reader = new EventReader(await fetch(`${base}/events`));
  await reader.until(() => reader.events.length === 1);
  const closed = new Promise((resolve) => stream.on('close', resolve));
  await server.close({ drainTimeout: 200 });
  await closed;
  assert.equal(stream.closed, true);
  await reader.until(() => false).catch(() => {});
});

test('backpressure: send returns false while the client does not read, and drain follows', async (t) => {
  let drained;
  let result;
  const { server, port } = await start(
    (app) => {
      app.get('/flood', (req, res) => {
        const stream = res.sse({ heartbeat: 0 });
        const big = 'x'.repeat(64 * 1024);
        let sent = 0;
        // Until the queue passes its high-water mark (a quarter of http.maxBackpressure).
        while (stream.send({ id: sent, data: big })) {
          sent++;
          if (sent > 2000) break;
        }
        result = { sent, refused: sent <= 2000 };
        drained = new Promise((resolve) => stream.on('drain', resolve)).then(() => stream.close());
      });
    },
    { http: { maxBackpressure: 512 * 1024 } },
  ).then((s) => ({ ...s, port: s.server.port }));
  t.after(() => server.close({ drainTimeout: 500 }));

  const socket = net.connect(port, '127.0.0.1');
  await once(socket, 'connect');
  socket.pause();
  socket.write('GET /flood HTTP/1.1\r\nHost: x\r\n\r\n');
  await sleep(200);
  assert.ok(result, 'the handler ran');
  assert.equal(result.refused, true, 'send returned false before 2000 events of 64 KiB');
  // Read everything: the queue empties, 'drain' fires, the handler closes.
  let received = 0;
  socket.on('data', (chunk) => (received += chunk.length));
  socket.resume();
  await drained;
  await once(socket, 'end').catch(() => {});
  socket.destroy();
  assert.ok(received > result.sent * 64 * 1024, 'every event the server took arrived');
});

test('a HEAD request gets the head alone; sse() after a response is reported and closed; bad fields throw', async (t) => {
  let late;
  let thrown = [];
  const { server, base, errors } = await start((app) => {
    app.get('/events', (req, res) => {
      const stream = res.sse({ heartbeat: 10 });
      if (req.method === 'HEAD') {
        assert.equal(stream.closed, true);
        return;
      }
      for (const bad of [{ event: 'a\nb' }, { id: 'x\ry' }, { id: 'nul\0' }, { retry: -1 }, { retry: 1.5 }]) {
        try {
          stream.send(bad);
        } catch (error) {
          thrown.push(error.code);
        }
      }
      stream.close();
    });
    app.get('/late', (req, res) => {
      res.send('done');
      late = res.sse();
    });
    app.get('/bad-option', (req, res) => {
      res.sse({ heartbeat: -5 });
    });
  });
  t.after(() => server.close({ drainTimeout: 500 }));

  const head = await fetch(`${base}/events`, { method: 'HEAD' });
  assert.equal(head.status, 200);
  assert.equal(head.headers.get('content-type'), 'text/event-stream; charset=utf-8');
  await fetch(`${base}/events`).then((r) => r.text());
  assert.deepEqual(thrown, Array(5).fill('ERR_INVALID_OPTION'));

  assert.equal(await (await fetch(`${base}/late`)).text(), 'done');
  assert.equal(late.closed, true);
  assert.equal(late.send('x'), false);
  assert.ok(errors.some((e) => e.error.code === 'ERR_HTTP_RESPONSE_SENT'));

  const bad = await fetch(`${base}/bad-option`);
  assert.equal(bad.status, 500, 'an invalid option throws in the handler');
});

test('inject reads a stream the server closes', async () => {
  const server = new Server({ workers: 0 });
  server.app.get('/events', (req, res) => {
    const stream = res.sse({ heartbeat: 0 });
    stream.send({ event: 'a', id: 1, data: 'one\ntwo' });
    stream.close();
  });
  const response = await server.inject('/events');
  assert.equal(response.statusCode, 200);
  assert.equal(response.headers['content-type'], 'text/event-stream; charset=utf-8');
  assert.equal(response.text(), 'event: a\nid: 1\ndata: one\ndata: two\n\n');
});
