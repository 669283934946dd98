// RPC streams and files end to end, the real client against the native
// server (`workers: 0`), over TCP, WebSocket and a Unix socket: streams and
// files with a call and with responses, both ways (the server calls the
// client with a stream too), aborts and stops, a client that disconnects
// mid-stream, and flow control against slow readers on either side.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { RpcError, openStream } from 'switchboard';
import { generate, expectedSha256, hashStream } from '../fixtures/rpc-data.mjs';
import { TRANSPORTS, rejectsWith, sleep, startServer, until, untilIdle } from '../fixtures/rpc-e2e.mjs';

const KiB = 1024;
const MiB = 1024 * 1024;
/** Chunks of a size every transport takes (see the large-frame test below for 1 MiB ones). */
const CHUNK = 64 * KiB;

/** What the handlers saw, for the tests to check. */
const seen = { disconnects: [], stopped: [], slow: null };

function setup(rpc) {
  rpc
    .action('whoami', (call) => call.connection.id)
    .action('echo', (call) => call.decode())
    // Hashes every attachment as it arrives.
    .action('upload', async (call) => {
      const out = { meta: call.decode(), streams: [], files: [] };
      for (const stream of call.streams) out.streams.push(await hashStream(stream));
      for (const file of call.files) out.files.push({ name: file.name, declared: file.size, ...(await hashStream(file.stream)) });
      return out;
    })
    // Text of the first stream, read chunk by chunk with read().
    .action('text', async (call) => call.stream.text())
    // A response with a stream generated on the fly.
    .action('download.stream', (call) => {
      const { size, seed } = call.decode();
      call.respond({ size, seed }, { stream: generate(size, seed, CHUNK) });
    })
    // A response whose stream the handler writes after responding.
    .action('download.writer', async (call) => {
      const writer = openStream();
      call.respond('writing', { stream: writer });
      for (const word of call.decode()) await writer.write(`${word} `);
      writer.end();
      await writer.finished;
    })
    // Files in a response, and streams in several responses.
    .action('download.files', (call) => {
      const files = call.decode().map(({ name, size, seed }) => ({ name, size, data: generate(size, seed, CHUNK) }));
      call.respond({ count: files.length }, { files });
    })
    .action('download.many', (call) => {
      const n = call.decode();
      for (let i = 1; i <= n; i++) call.respond({ part: i }, { last: i === n, stream: new TextEncoder().encode(`part ${i} body`) });
    })
    // Reads one chunk and stops the rest.
    .action('firstChunk', async (call) => {
      for await (const chunk of call.stream) {
        seen.stopped.push(chunk.length);
        break;
      }
      return 'enough';
    })
    // Never reads its stream: it is stopped when the handler returns.
    .action('ignoreStream', () => 'ignored')
    // Counts until the sender aborts; answers with the abort's code.
    .action('untilAbort', async (call) => {
      let bytes = 0;
      try {
        for await (const chunk of call.stream) bytes += chunk.length;
        return { bytes, aborted: null };
      } catch (error) {
        return { bytes, aborted: error.code, message: error.message };
      }
    })
    // Reads slowly; the test disconnects the client meanwhile.
    .action('slowUpload', async (call) => {
      const record = { bytes: 0, signal: null, iteration: null };
      seen.disconnects.push(record);
      call.signal.addEventListener('abort', () => (record.signal = call.signal.reason?.code), { once: true });
      try {
        for await (const chunk of call.stream) {
          record.bytes += chunk.length;
          await sleep(5);
        }
        record.iteration = 'ended';
      } catch (error) {
        record.iteration = error.code;
      }
    })
    // A response stream the client stops consuming by disconnecting; the
    // handler runs until its writer fails.
    .action('endlessDownload', async (call) => {
      const writer = openStream();
      const record = { sent: 0, failed: null, signal: null };
      seen.disconnects.push(record);
      call.signal.addEventListener('abort', () => (record.signal = call.signal.reason?.code), { once: true });
      call.respond('go', { stream: writer });
      try {
        for (;;) {
          await writer.write(new Uint8Array(CHUNK));
          record.sent += CHUNK;
        }
      } catch (error) {
        record.failed = error.code;
      }
    })
    // Flow control: reads `chunks` at a time with a pause, recording how far
    // the sender got ahead of what was consumed (see the slow-reader test).
    .action('slowReader', async (call) => {
      const state = seen.slow;
      const stream = call.stream;
      for (;;) {
        const chunk = await stream.read();
        if (chunk === null) break;
        state.consumed += chunk.length;
        state.maxBuffered = Math.max(state.maxBuffered, stream.bufferedBytes, call.connection.stats().bufferedBytes);
        state.maxAhead = Math.max(state.maxAhead, state.clientSent() - state.consumed);
        state.maxNativeAhead = Math.max(state.maxNativeAhead, state.nativeIn() - state.nativeIn0 - state.consumed);
        if (++state.reads % state.every === 0) await sleep(1);
      }
      return state.consumed;
    })
    // Server → client with a stream: the client hashes it and answers with a file.
    .action('serverSendsStream', async (call) => {
      const { size, seed } = call.decode();
      const response = await call.connection.request('client.hashAndReturn', { size }, { stream: generate(size, seed, CHUNK) });
      const [file] = response.files;
      return { clientSaw: response.value, returned: { name: file.name, size: file.size, ...(await hashStream(file.stream)) } };
    })
    // Sends a fast stream to the client and records how far it got ahead.
    .action('pushToSlowClient', async (call) => {
      const { size } = call.decode();
      const writer = openStream();
      const state = seen.slow;
      const reply = call.connection.call('client.slowRead', null, { stream: writer });
      for (const chunk of generate(size, 3, CHUNK)) {
        await writer.write(chunk);
        state.serverSent += chunk.length;
      }
      writer.end();
      return reply;
    });
}

for (const transport of TRANSPORTS) {
  describe(`RPC streams and files over ${transport}`, () => {
    let rpc;
    let client;
    let connection;
    const clientSeen = { slow: null };

    before(async () => {
      rpc = await startServer(setup, { rpc: { initialWindow: 256 * KiB } });
      client = await rpc.connect(transport, {
        handlers: {
          'client.hashAndReturn': async (payload, call) => {
            const hashed = await hashStream(call.stream);
            call.respond(hashed, { files: [{ name: 'from-client.bin', size: payload.size, data: generate(payload.size, 99, CHUNK) }] });
          },
          'client.slowRead': async (_payload, call) => {
            const state = clientSeen.slow;
            let consumed = 0;
            for await (const chunk of call.stream) {
              consumed += chunk.length;
              state.maxAhead = Math.max(state.maxAhead, seen.slow.serverSent - consumed);
              state.maxBuffered = Math.max(state.maxBuffered, call.stream.bufferedBytes);
              if (++state.reads % 4 === 0) await sleep(1);
            }
            return consumed;
          },
        },
        // The client grants 128 KiB per stream it receives.
        initialWindow: 128 * KiB,
      });
      connection = await rpc.connectionOf(client);
    });

    after(async () => {
      await client?.close();
      await rpc?.close();
    });

    test('a call with a stream: Uint8Array, async generator, StreamWriter; the handler reads it', async () => {
      const size = 8 * MiB + 123;
      const expected = expectedSha256(size, 5, CHUNK);
      async function* slowSource() {
        for (const chunk of generate(size, 5, CHUNK)) {
          yield chunk;
          await null;
        }
      }
      const fromGenerator = await client.call('upload', { how: 'generator' }, { stream: slowSource() });
      assert.deepEqual(fromGenerator, { meta: { how: 'generator' }, streams: [{ size, sha256: expected }], files: [] });

      const small = new TextEncoder().encode('bytes at once');
      assert.equal(await client.call('text', null, { stream: small }), 'bytes at once');

      const writer = openStream();
      const pending = client.call('upload', { how: 'writer' }, { stream: writer });
      for (const chunk of generate(size, 5, CHUNK)) await writer.write(chunk);
      writer.end();
      await writer.finished;
      assert.deepEqual((await pending).streams, [{ size, sha256: expected }]);
      await untilIdle(client, connection);
    });

    test('a call with several streams and files (an empty one too)', async () => {
      const files = [
        { name: 'a.bin', size: 3 * MiB, data: generate(3 * MiB, 11, CHUNK) },
        { name: 'empty.txt', size: 0, data: new Uint8Array(0) },
        { name: 'ünïcode name.txt', size: 5, data: new TextEncoder().encode('hello') },
      ];
      const result = await client.call('upload', 'meta', {
        stream: new TextEncoder().encode('first'),
        streams: [generate(MiB, 12, CHUNK)],
        files,
      });
      assert.equal(result.meta, 'meta');
      assert.deepEqual(
        result.streams.map((s) => s.size),
        [5, MiB],
      );
      assert.equal(result.streams[1].sha256, expectedSha256(MiB, 12, CHUNK));
      assert.deepEqual(
        result.files.map(({ name, declared, size }) => ({ name, declared, size })),
        files.map(({ name, size }) => ({ name, declared: size, size })),
      );
      assert.equal(result.files[0].sha256, expectedSha256(3 * MiB, 11, CHUNK));
      await untilIdle(client, connection);
    });

    test('responses with streams and files: generated, written after the response, and one per response', async () => {
      const size = 6 * MiB + 7;
      const response = await client.request('download.stream', { size, seed: 21 });
      assert.deepEqual(response.value, { size, seed: 21 });
      assert.deepEqual(await hashStream(response.stream), { size, sha256: expectedSha256(size, 21, CHUNK) });

      const written = await client.request('download.writer', ['streams', 'written', 'later']);
      assert.equal(written.value, 'writing');
      assert.equal(await written.stream.text(), 'streams written later ');

      const specs = [
        { name: 'one.bin', size: 2 * MiB, seed: 31 },
        { name: 'two.bin', size: 12345, seed: 32 },
      ];
      const withFiles = await client.request('download.files', specs);
      assert.deepEqual(withFiles.value, { count: 2 });
      for (const [i, file] of withFiles.files.entries()) {
        assert.equal(file.name, specs[i].name);
        assert.equal(file.size, specs[i].size);
        assert.deepEqual(await hashStream(file.stream), { size: specs[i].size, sha256: expectedSha256(specs[i].size, specs[i].seed, CHUNK) });
      }

      const parts = [];
      for await (const part of client.requestMany('download.many', 3)) parts.push([part.value, await part.stream.text()]);
      assert.deepEqual(parts, [
        [{ part: 1 }, 'part 1 body'],
        [{ part: 2 }, 'part 2 body'],
        [{ part: 3 }, 'part 3 body'],
      ]);
      await untilIdle(client, connection);
    });

    test('the server calls the client with a stream; the client answers with a file', async () => {
      const size = 3 * MiB + 1;
      const result = await client.call('serverSendsStream', { size, seed: 41 });
      assert.deepEqual(result.clientSaw, { size, sha256: expectedSha256(size, 41, CHUNK) });
      assert.deepEqual(result.returned, { name: 'from-client.bin', size, sha256: expectedSha256(size, 99, CHUNK) });
      await untilIdle(client, connection);
    });

    test('the sender aborts: the handler iteration throws its code', async () => {
      const writer = openStream();
      const pending = client.call('untilAbort', null, { stream: writer });
      await writer.write(new Uint8Array(1000));
      await writer.write(new Uint8Array(24));
      writer.abort('E_GAVE_UP', 'the client gave up');
      assert.deepEqual(await pending, { bytes: 1024, aborted: 'E_GAVE_UP', message: 'the client gave up' });
      await rejectsWith(writer.finished, 'E_GAVE_UP');
      // A file whose source falls short of its declared size.
      async function* short() {
        yield new Uint8Array(10);
      }
      await rejectsWith(client.call('upload', null, { files: [{ name: 'short', size: 100, data: short() }] }), 'ERR_FILE_SIZE');
      await untilIdle(client, connection);
    });

    test('the receiver stops (breaks out, or never reads): the sender writes reject with ERR_STREAM_STOPPED', async () => {
      seen.stopped.length = 0;
      const writer = openStream();
      const pending = client.call('firstChunk', null, { stream: writer });
      const writes = [];
      for (let i = 0; i < 40; i++) writes.push(writer.write(new Uint8Array(CHUNK)));
      assert.equal(await pending, 'enough');
      await rejectsWith(writer.finished, 'ERR_STREAM_STOPPED');
      const outcomes = await Promise.allSettled(writes);
      assert.ok(outcomes.some((o) => o.status === 'rejected' && o.reason.code === 'ERR_STREAM_STOPPED'), 'later writes reject');
      assert.deepEqual(seen.stopped, [CHUNK]);

      const ignored = openStream();
      const reply = client.call('ignoreStream', null, { stream: ignored });
      const write = ignored.write(new Uint8Array(512 * KiB)); // more than the window: it waits for credit
      assert.equal(await reply, 'ignored');
      await rejectsWith(write, 'ERR_STREAM_STOPPED');
      await untilIdle(client, connection);
    });

    test('slow reader on the server: the client sender is held back within the window', async (t) => {
      const window = 256 * KiB;
      const total = 52 * MiB;
      let clientSent = 0;
      seen.slow = {
        consumed: 0,
        reads: 0,
        every: 2,
        maxBuffered: 0,
        maxAhead: 0,
        maxNativeAhead: 0,
        clientSent: () => clientSent,
        nativeIn: () => rpc.server.stats().bytesIn,
        nativeIn0: rpc.server.stats().bytesIn,
      };
      const writer = openStream();
      const started = performance.now();
      const pending = client.call('slowReader', null, { stream: writer, timeoutMs: 60_000 });
      for (const chunk of generate(total, 8, CHUNK)) {
        await writer.write(chunk);
        clientSent += chunk.length;
      }
      writer.end();
      assert.equal(await pending, total);
      const state = seen.slow;
      const ms = performance.now() - started;
      // Bytes the handler had not taken yet never exceed the window it grants…
      assert.ok(state.maxBuffered <= window, `buffered ${state.maxBuffered} > window ${window}`);
      // …and the client's writes (resolved once sent) never ran further ahead
      // of the handler's reading than the window (plus the chunk in hand).
      assert.ok(state.maxAhead <= window + CHUNK, `the sender ran ${state.maxAhead} bytes ahead`);
      // What the native core read off the socket beyond what the handler
      // consumed: the window plus frame headers (and, over WebSocket, the
      // handshake and message headers), not megabytes.
      assert.ok(state.maxNativeAhead <= window + 64 * KiB, `the core read ${state.maxNativeAhead} bytes ahead`);
      assert.ok(state.maxAhead > 0 && state.maxBuffered > 0, 'the reader was slow enough to have a backlog');
      t.diagnostic(
        `slow reader, ${total / MiB} MB in ${ms.toFixed(0)} ms, max buffered ${state.maxBuffered}, ` +
          `sender ahead ≤ ${state.maxAhead}, core ahead ≤ ${state.maxNativeAhead} (window ${window})`,
      );
      await untilIdle(client, connection);
    });

    test('slow reader on the client: the server sender is held back within the client window', async () => {
      const window = 128 * KiB;
      const total = 20 * MiB;
      seen.slow = { serverSent: 0 };
      clientSeen.slow = { reads: 0, maxAhead: 0, maxBuffered: 0 };
      assert.equal(await client.call('pushToSlowClient', { size: total }, { timeoutMs: 60_000 }), total);
      assert.ok(clientSeen.slow.maxBuffered <= window, `buffered ${clientSeen.slow.maxBuffered}`);
      assert.ok(clientSeen.slow.maxAhead <= window + CHUNK, `the server ran ${clientSeen.slow.maxAhead} bytes ahead`);
      assert.ok(clientSeen.slow.maxAhead > 0);
      await untilIdle(client, connection);
    });

    test('a client that disconnects mid-stream: the handler signal fires, its stream errors, the server goes on', async () => {
      seen.disconnects.length = 0;
      const other = await rpc.connect(transport, { initialWindow: 128 * KiB });
      const writer = openStream();
      const upload = other.call('slowUpload', null, { stream: writer });
      upload.catch(() => {});
      // The download's response arrives; its stream is never read.
      const download = await other.request('endlessDownload');
      assert.equal(download.value, 'go');
      for (let i = 0; i < 8; i++) await writer.write(new Uint8Array(CHUNK));
      await until(() => seen.disconnects[0].bytes > 0 && seen.disconnects[1].sent > 0, 'both streams flow');
      const closes = rpc.closed.length;
      await other.close({ timeoutMs: 0 }); // at once: calls in flight fail
      await rejectsWith(upload, 'ERR_DISCONNECTED');
      await until(() => rpc.closed.length === closes + 1, 'the server sees the close');
      const [up, down] = seen.disconnects;
      await until(() => up.iteration !== null && up.signal !== null && down.failed !== null && down.signal !== null, 'the handlers see the disconnect');
      assert.equal(up.signal, 'ERR_DISCONNECTED');
      assert.equal(up.iteration, 'ERR_DISCONNECTED');
      assert.equal(down.signal, 'ERR_DISCONNECTED');
      assert.equal(down.failed, 'ERR_DISCONNECTED');
      assert.ok(down.sent <= 128 * KiB + CHUNK, `the server wrote ${down.sent} bytes no one read`);
      // Unharmed: the other connection and new ones work.
      assert.equal(await client.call('echo', 'still serving'), 'still serving');
      const fresh = await rpc.connect(transport);
      assert.equal(await fresh.call('text', null, { stream: new TextEncoder().encode('new client') }), 'new client');
      await fresh.close();
    });
  });
}

// Default settings on both sides (server window 1 MiB, client window 1 MiB,
// maxFrameSize 16 MiB): what the WELCOME allows must get through.
describe('default limits', () => {
  let rpc;
  before(async () => {
    rpc = await startServer((service) => {
      service.action('echo', (call) => call.decode());
      service.action('upload', async (call) => hashStream(call.stream));
      service.action('download', (call) => {
        const { size, seed } = call.decode();
        call.respond(null, { stream: generate(size, seed) });
      });
    });
  });
  after(() => rpc?.close());

  for (const transport of TRANSPORTS) {
    test(`over ${transport}: a 2 MB payload and 1 MiB stream chunks, within the announced maxFrameSize`, async () => {
      const client = await rpc.connect(transport);
      try {
        assert.equal(client.server.maxFrameSize, 16 * MiB);
        const size = 8 * MiB;
        // 1 MiB chunks: each goes out as one frame of the window's size.
        assert.deepEqual(await client.call('upload', null, { stream: generate(size, 3) }), { size, sha256: expectedSha256(size, 3) });
        const big = 'x'.repeat(2_000_000);
        assert.equal(await client.call('echo', big), big);
        // Large payloads (written by reference after their frame's head on
        // byte streams) interleaved with small frames in the same tick:
        // every call gets its own bytes back, in one piece.
        const sizes = [16 * 1024, 5, 100_000, 16 * 1024 - 1, 3 * MiB, 0, 70_000, 1];
        const payloads = sizes.map((n, i) => new Uint8Array(n).map((_, j) => (j * 7 + i) & 0xff));
        const echoed = await Promise.all(payloads.map((payload) => client.call('echo', payload)));
        echoed.forEach((got, i) => assert.ok(Buffer.from(got).equals(Buffer.from(payloads[i])), `payload ${i} (${sizes[i]} bytes)`));
        // Streams given as bytes (their chunks too go out by reference),
        // several at once and between calls.
        const blobs = [3 * MiB + 5, 40_000, 17].map((n, i) => Buffer.from(new Uint8Array(n).map((_, j) => (j * 13 + i) & 0xff)));
        const sha256 = (bytes) => createHash('sha256').update(bytes).digest('hex');
        const uploads = await Promise.all([
          ...blobs.map((blob) => client.call('upload', null, { stream: blob })),
          client.call('echo', payloads[2]),
        ]);
        blobs.forEach((blob, i) => assert.deepEqual(uploads[i], { size: blob.length, sha256: sha256(blob) }, `stream ${i}`));
      } finally {
        await client.close({ timeoutMs: 0 });
      }
    });

    test(`over ${transport}: a 16 MiB response stream to a client with the default window`, async () => {
      const client = await rpc.connect(transport);
      try {
        const size = 16 * MiB;
        const response = await client.request('download', { size, seed: 4 });
        assert.deepEqual(await hashStream(response.stream), { size, sha256: expectedSha256(size, 4) });
      } finally {
        await client.close({ timeoutMs: 0 });
      }
    });
  }
});

test('handlers can refuse a stream with an RpcError while reading it', async () => {
  const rpc = await startServer((service) =>
    service.action('limited', async (call) => {
      try {
        return (await call.stream.readAll(1000)).length;
      } catch (error) {
        throw new RpcError('E_TOO_BIG', `refused: ${error.code}`);
      }
    }),
  );
  try {
    const client = await rpc.connect('tcp');
    assert.equal(await client.call('limited', null, { stream: new Uint8Array(999) }), 999);
    const error = await rejectsWith(client.call('limited', null, { stream: generate(5 * MiB, 1, CHUNK) }), 'E_TOO_BIG');
    assert.equal(error.message, 'refused: ERR_PAYLOAD_TOO_LARGE');
    await client.close();
  } finally {
    await rpc.close();
  }
});
