// Backpressure: a client that stops reading costs only its own bounded
// queue. Sends report SENT, then BUFFERED, then DROPPED; memory stays flat
// while hundreds of MB are offered; other clients are unaffected; `drain`
// fires when the client catches up; the 'close' policy evicts with 1008.
import test, { describe } from 'node:test';
import assert from 'node:assert/strict';
import { SendStatus } from 'switchboard';
import { startServer, connect, nextMessage, waitFor, clientFrame } from '../../helpers/index.mjs';
import { RawClient, closePayload, OP, sleep } from './support.mjs';

const KiB = 1024;
const MiB = 1024 * KiB;
const CHUNK = 64 * KiB;
/** Wire size of one 64 KiB binary message (header 2 + 8 bytes). */
const FRAME = CHUNK + 10;

/** A server whose `/feed` route hands its connections to the test by tag. */
async function feedServer(routeOptions, serverOptions = {}) {
  const sockets = new Map();
  const drains = [];
  const closes = new Map();
  const { server, url, port } = await startServer(
    (s) => {
      s.ws('/feed', {
        ...routeOptions,
        upgrade: (req) => ({ tag: req.searchParams.get('tag') }),
        open: (ws) => void sockets.set(ws.data.tag, ws),
        drain: (ws) => void drains.push({ tag: ws.data.tag, at: Date.now(), buffered: ws.getBufferedAmount() }),
        close: (ws, code, reason) => void closes.set(ws.data.tag, { code, reason, at: Date.now() }),
      });
      s.ws('/echo', { message: (ws, data, isBinary) => void ws.send(data, isBinary) });
    },
    serverOptions,
  );
  const socketOf = async (tag) => {
    await waitFor(() => sockets.has(tag), 3000, `open of ${tag}`);
    return sockets.get(tag);
  };
  return { server, url, port, socketOf, drains, closes };
}

/** Echo round trip of a normal client, in ms. */
async function echoLatency(ws, text) {
  const started = Date.now();
  ws.send(text);
  const reply = await nextMessage(ws, 3000);
  assert.equal(reply.data.toString(), text);
  return Date.now() - started;
}

const yieldToIo = () => new Promise((resolve) => setImmediate(resolve));

/**
 * Give the connection's I/O thread time to write what was queued: wait
 * until nothing is buffered, or the amount stops shrinking (the socket is
 * full). Statuses then depend on the client, not on thread scheduling (on a
 * busy 2-core machine the I/O thread can lag a few sends behind).
 */
async function settle(buffered) {
  let last = buffered();
  for (let stable = 0; last > 0 && stable < 3; ) {
    await sleep(5);
    const now = buffered();
    stable = now < last ? 0 : stable + 1;
    last = now;
  }
}

describe('backpressure', () => {
  test('drop policy: SENT, then BUFFERED, then DROPPED; bounded queue and memory; drain on catch-up', async () => {
    const { server, url, port, socketOf, drains } = await feedServer({ maxBackpressure: MiB });
    const stalled = await RawClient.open(port, '/feed?tag=stalled', { paused: true });
    stalled.keepPayloads = false;
    const normal = await connect(`${url}/echo`);
    try {
      const ws = await socketOf('stalled');
      const chunk = Buffer.alloc(CHUNK, 0x5a);
      const statuses = [];
      const counts = { [SendStatus.SENT]: 0, [SendStatus.BUFFERED]: 0, [SendStatus.DROPPED]: 0, [SendStatus.CLOSED]: 0 };
      let maxBuffered = 0;
      let maxRss = 0;
      const latencies = [];
      if (global.gc) global.gc();
      const rssBefore = process.memoryUsage().rss;
      const offer = 200 * MiB;
      for (let offered = 0, i = 0; offered < offer; offered += CHUNK, i++) {
        const status = ws.send(chunk);
        counts[status]++;
        if (statuses.length === 0 || statuses[statuses.length - 1] !== status) statuses.push(status);
        maxBuffered = Math.max(maxBuffered, ws.getBufferedAmount());
        if (i % 64 === 0) maxRss = Math.max(maxRss, process.memoryUsage().rss);
        if (i % 800 === 400) latencies.push(await echoLatency(normal, `ping ${i}`));
        // Until the queue is full, give the I/O thread time to write, so that
        // the kernel buffers fill before our queue does.
        if (counts[SendStatus.DROPPED] === 0) await settle(() => ws.getBufferedAmount());
        else await yieldToIo();
        if (status === SendStatus.DROPPED && counts[SendStatus.DROPPED] === 1) {
          // The stall starts here, with the queue at its limit. While the
          // kernel buffers were filling, a send could be BUFFERED behind a
          // few bytes the kernel then took after all (it grows the send
          // buffer, or compacts the stalled client's receive queue, now and
          // then): the queue emptied, and that drain was right. From here
          // the queue is too full for that; what follows is the stall.
          await sleep(50);
          drains.length = 0;
        }
      }
      maxRss = Math.max(maxRss, process.memoryUsage().rss);

      assert.equal(statuses[0], SendStatus.SENT, `status sequence ${statuses}`);
      assert.ok(counts[SendStatus.BUFFERED] > 0, `no BUFFERED (${JSON.stringify(counts)})`);
      assert.ok(counts[SendStatus.DROPPED] > 0, `no DROPPED (${JSON.stringify(counts)})`);
      assert.ok(
        statuses.indexOf(SendStatus.BUFFERED) < statuses.indexOf(SendStatus.DROPPED),
        `BUFFERED comes before DROPPED: ${statuses}`,
      );
      assert.equal(counts[SendStatus.CLOSED], 0, 'the drop policy keeps the connection open');
      assert.ok(maxBuffered <= MiB + FRAME, `buffered up to ${maxBuffered} bytes`);
      assert.ok(maxBuffered > MiB - FRAME, `the queue filled up to the limit (${maxBuffered})`);
      assert.equal(server.stats().messagesDropped, counts[SendStatus.DROPPED]);
      assert.ok(server.stats().outboundBufferedBytes <= MiB + FRAME);
      const growth = (maxRss - rssBefore) / MiB;
      assert.ok(growth < 48, `RSS grew by ${growth.toFixed(1)} MiB while 200 MiB were offered`);
      for (const ms of latencies) assert.ok(ms < 500, `a normal client waited ${ms} ms for its echo`);
      assert.ok(latencies.length >= 3);

      // The client catches up: everything accepted arrives, well formed, and
      // a drain event follows.
      const accepted = counts[SendStatus.SENT] + counts[SendStatus.BUFFERED];
      assert.equal(drains.length, 0, 'no drain while the client is stalled');
      stalled.startReading();
      await waitFor(() => drains.length > 0, 10000, 'the drain event');
      assert.equal(drains[0].tag, 'stalled');
      await waitFor(() => stalled.frames.length >= accepted, 10000, `${accepted} frames`);
      await sleep(100);
      assert.equal(stalled.frames.length, accepted, 'exactly the accepted messages arrive');
      assert.equal(stalled.malformed, null);
      assert.ok(stalled.frames.every((f) => f.opcode === OP.BINARY && f.fin && f.length === CHUNK));
      assert.equal(ws.getBufferedAmount(), 0);
      assert.equal(ws.send(chunk), SendStatus.SENT, 'a caught-up connection reports SENT again');
      await waitFor(() => stalled.frames.length === accepted + 1, 3000, 'the next message');
    } finally {
      stalled.destroy();
      normal.terminate();
      await server.close({ drainTimeout: 500 });
    }
  });

  test('sends from the main thread by id (server.send) see the same statuses', async () => {
    const { server, port, socketOf } = await feedServer({ maxBackpressure: 256 * KiB });
    const stalled = await RawClient.open(port, '/feed?tag=byid', { paused: true });
    try {
      const { id } = await socketOf('byid');
      const chunk = new Uint8Array(CHUNK);
      const seen = new Set();
      for (let i = 0; i < 2000 && !seen.has(SendStatus.DROPPED); i++) {
        seen.add(server.send(id, chunk));
        await settle(() => server.stats().outboundBufferedBytes);
      }
      assert.ok(seen.has(SendStatus.SENT) && seen.has(SendStatus.BUFFERED) && seen.has(SendStatus.DROPPED), [...seen].join());
      assert.ok(server.stats().messagesDropped >= 1);
      assert.equal(server.send(987654321, chunk), SendStatus.CLOSED, 'an unknown id is CLOSED');
    } finally {
      stalled.destroy();
      await server.close({ drainTimeout: 500 });
    }
  });

  test('close policy: the slow consumer is evicted with 1008 ERR_WS_SLOW_CONSUMER', async () => {
    const { server, url, port, socketOf, closes } = await feedServer(
      { maxBackpressure: 256 * KiB, slowConsumer: 'close' },
      { closeTimeout: 0.5 },
    );
    const stalled = await RawClient.open(port, '/feed?tag=evicted', { paused: true });
    const normal = await connect(`${url}/echo`);
    try {
      const ws = await socketOf('evicted');
      const chunk = Buffer.alloc(CHUNK, 1);
      const statuses = [];
      for (let i = 0; i < 3000; i++) {
        const status = ws.send(chunk);
        statuses.push(status);
        if (status === SendStatus.DROPPED) break;
        await sleep(1);
      }
      assert.equal(statuses[statuses.length - 1], SendStatus.DROPPED, 'the send over the limit is refused');
      assert.equal(ws.send(chunk), SendStatus.CLOSED, 'later sends see a closed connection');
      const evictedAt = Date.now();
      // The client never reads, so our close frame cannot go out: the
      // connection ends after closeTimeout.
      await waitFor(() => closes.has('evicted'), 4000, 'the close handler');
      assert.deepEqual({ ...closes.get('evicted'), at: 0 }, { code: 1008, reason: 'ERR_WS_SLOW_CONSUMER', at: 0 });
      assert.ok(closes.get('evicted').at - evictedAt < 3000);
      assert.equal(ws.isOpen, false);
      assert.ok(server.stats().messagesDropped >= 1);
      assert.ok((await echoLatency(normal, 'unaffected')) < 500);
      await waitFor(() => server.stats().connectionsOpen === 1, 3000, 'the evicted connection to go');
    } finally {
      stalled.destroy();
      normal.terminate();
      await server.close({ drainTimeout: 500 });
    }
  });

  test('close policy: a client that reads again gets whole frames, then close 1008', async () => {
    const { server, port, socketOf, closes } = await feedServer(
      { maxBackpressure: 256 * KiB, slowConsumer: 'close' },
      { closeTimeout: 5 },
    );
    const stalled = await RawClient.open(port, '/feed?tag=late-reader', { paused: true });
    stalled.keepPayloads = false;
    try {
      const ws = await socketOf('late-reader');
      // Odd sizes, so that the socket buffer is likely to end mid-frame.
      const chunk = Buffer.alloc(CHUNK - 777, 2);
      let status;
      for (let i = 0; i < 3000; i++) {
        status = ws.send(chunk);
        if (status === SendStatus.DROPPED) break;
        await sleep(1);
      }
      assert.equal(status, SendStatus.DROPPED);
      await sleep(200);
      stalled.startReading();
      const close = await stalled.closeFrame(8000);
      assert.equal(stalled.malformed, null, 'the stream stays well formed');
      const data = stalled.frames.filter((f) => f.opcode !== OP.CLOSE);
      for (const f of data) {
        assert.equal(f.opcode, OP.BINARY);
        assert.equal(f.length, chunk.length, 'no frame is cut short by the eviction');
      }
      assert.equal(close.code, 1008);
      assert.equal(close.reason, 'ERR_WS_SLOW_CONSUMER');
      stalled.send(clientFrame(OP.CLOSE, closePayload(1008)));
      await waitFor(() => closes.has('late-reader'), 4000, 'the close handler');
      assert.equal(closes.get('late-reader').code, 1008);
      assert.equal(closes.get('late-reader').reason, 'ERR_WS_SLOW_CONSUMER');
    } finally {
      stalled.destroy();
      await server.close({ drainTimeout: 500 });
    }
  });

  test('close policy: a client that reads slowly gets the rest of a large frame, then 1008, however long it takes', async () => {
    // The close timeout counts from the last progress of our writes, not
    // from the eviction: a slow reader behind a large frame still learns why
    // it was closed instead of seeing a bare disconnect.
    const { server, port, socketOf, closes } = await feedServer(
      { maxBackpressure: 256 * KiB, maxPayloadLength: 8 * MiB, slowConsumer: 'close' },
      // Above the longest pause between two writes that make progress: the
      // receiver reopens its window only once it has read a good part of
      // its (autotuned, megabytes large) buffer.
      { closeTimeout: 2 },
    );
    const slow = await RawClient.open(port, '/feed?tag=slow', { paused: true });
    slow.keepPayloads = false;
    try {
      const ws = await socketOf('slow');
      // Larger than the kernel can take while the client does not read
      // (the send buffer grows to tcp_wmem's 4 MiB, plus the receiver's
      // window): a 4 MiB message was once taken almost whole, leaving the
      // queue under the limit.
      const big = Buffer.alloc(8 * MiB, 3);
      const first = ws.send(big);
      assert.ok(first === SendStatus.SENT || first === SendStatus.BUFFERED, `an empty queue takes one large message (${first})`);
      await sleep(50);
      assert.equal(ws.send(Buffer.alloc(CHUNK)), SendStatus.DROPPED, 'the next one passes the limit: evicted');
      // Read in sips: one read (at most 64 KiB) every 40 ms, under 2 MiB/s,
      // so the rest of the 8 MiB frame takes more than twice the close timeout.
      slow.startReading();
      slow.socket.on('data', () => slow.socket.pause());
      const sips = setInterval(() => slow.socket.resume(), 40);
      const started = Date.now();
      let close;
      try {
        close = await slow.closeFrame(15000);
      } finally {
        clearInterval(sips);
        slow.socket.resume();
      }
      assert.ok(Date.now() - started > 4000, `the reader was slow (${Date.now() - started} ms)`);
      assert.equal(slow.malformed, null, 'the stream stays well formed');
      const data = slow.frames.filter((f) => f.opcode !== OP.CLOSE);
      assert.deepEqual(data.map((f) => f.length), [big.length], 'the large frame arrives whole');
      assert.equal(close.code, 1008);
      assert.equal(close.reason, 'ERR_WS_SLOW_CONSUMER');
      await waitFor(() => closes.has('slow'), 4000, 'the close handler');
      assert.equal(closes.get('slow').code, 1008);
    } finally {
      slow.destroy();
      await server.close({ drainTimeout: 500 });
    }
  });

  test('a client that pings and never reads costs at most maxBackpressure, and others go on', async () => {
    // Each ping owes a pong; past the backpressure limit only the latest
    // is owed (RFC 6455 allows it), so a flood cannot grow the queue.
    const { server, url, port } = await feedServer({ maxBackpressure: 64 * KiB });
    const flooder = await RawClient.open(port, '/feed?tag=flooder', { paused: true });
    const normal = await connect(`${url}/echo`);
    try {
      const ping = clientFrame(OP.PING, Buffer.from('0123456789abcdef0123456789abcdef'));
      const burst = Buffer.concat(Array.from({ length: 2000 }, () => ping));
      let maxBuffered = 0;
      // 200,000 pings (7.6 MB of them) in bursts.
      for (let i = 0; i < 100; i++) {
        if (!flooder.socket.write(burst)) await new Promise((resolve) => flooder.socket.once('drain', resolve));
        maxBuffered = Math.max(maxBuffered, server.stats().outboundBufferedBytes);
        if (i % 25 === 0) assert.ok((await echoLatency(normal, `during ${i}`)) < 500);
      }
      await sleep(200);
      maxBuffered = Math.max(maxBuffered, server.stats().outboundBufferedBytes);
      assert.ok(maxBuffered <= 64 * KiB + 64, `the pongs queued reached ${maxBuffered} bytes`);
      assert.ok((await echoLatency(normal, 'after')) < 500);
      // It reads at last: pongs, in order, each answering a ping it sent.
      flooder.startReading();
      await waitFor(() => flooder.frames.length > 0, 5000, 'the pongs');
      await sleep(100);
      assert.equal(flooder.malformed, null);
      assert.ok(flooder.frames.every((f) => f.opcode === OP.PONG), 'only pongs');
      assert.ok(flooder.frames.length < 200_000, `${flooder.frames.length} pongs for 200,000 pings`);
    } finally {
      flooder.destroy();
      normal.terminate();
      await server.close({ drainTimeout: 500 });
    }
  });

  test('end() still closes a connection whose queue is over the limit', async () => {
    for (const slowConsumer of ['drop', 'close']) {
      const { server, port, socketOf, closes } = await feedServer({ maxBackpressure: 64 * KiB, slowConsumer });
      const stalled = await RawClient.open(port, '/feed?tag=ending', { paused: true });
      stalled.keepPayloads = false;
      try {
        const ws = await socketOf('ending');
        // An empty queue takes one message however large: more than the
        // kernel buffers hold, so most of it stays queued.
        const big = Buffer.alloc(32 * MiB, 3);
        // SENT, or BUFFERED when the I/O thread already hit the full socket.
        assert.ok([SendStatus.SENT, SendStatus.BUFFERED].includes(ws.send(big)));
        await sleep(200);
        assert.ok(ws.getBufferedAmount() > 64 * KiB, `queued ${ws.getBufferedAmount()}`);
        ws.end(4001, 'bye');
        stalled.startReading();
        const close = await stalled.closeFrame(10000).catch((error) => {
          throw new Error(`${slowConsumer}: no close frame after end(): ${error.message}`);
        });
        assert.equal(close.code, 4001, slowConsumer);
        assert.equal(close.reason, 'bye');
        const data = stalled.frames.filter((f) => f.opcode !== OP.CLOSE);
        assert.deepEqual(
          data.map((f) => f.length),
          [big.length],
          'the big message arrives whole before the close',
        );
        stalled.send(clientFrame(OP.CLOSE, closePayload(4001)));
        await waitFor(() => closes.has('ending'), 4000, 'the close handler');
        assert.equal(closes.get('ending').code, 4001);
        assert.equal(closes.get('ending').reason, 'bye');
      } finally {
        stalled.destroy();
        await server.close({ drainTimeout: 500 });
      }
    }
  });
});
