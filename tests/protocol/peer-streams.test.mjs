// The symmetric RPC peer: streams and files in both directions, flow
// control with slow consumers, STOP, aborts, file sizes, cancellation and
// disconnects of streams, and volume (50 MB through a small window).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import * as P from '../../packages/rpc/dist/index.js';

import { settings, connect, tick, sleep, until, deferred, rejectsWith, idle } from './peer-harness.mjs';

// --- helpers for streams ------------------------------------------------------

/** Deterministic bytes: byte i of the stream is (i * 7 + 3) & 255. */
function pattern(offset, length) {
  const out = new Uint8Array(length);
  for (let i = 0; i < length; i++) out[i] = ((offset + i) * 7 + 3) & 255;
  return out;
}
function checkPattern(chunk, offset) {
  for (let i = 0; i < chunk.length; i++) {
    if (chunk[i] !== (((offset + i) * 7 + 3) & 255)) return false;
  }
  return true;
}
const text = (b) => new TextDecoder().decode(b);
const bytesOf = (s) => new TextEncoder().encode(s);

// --- streams -------------------------------------------------------------------

describe('streams to the handler', () => {
  test('an upload from a StreamWriter, read by the handler', async () => {
    const t = connect({
      chunk: 7,
      peerB: {
        handler: async (call) => {
          assert.equal(call.files.length, 0);
          assert.equal(call.stream.file, null);
          return text(await call.stream.readAll());
        },
      },
    });
    const writer = P.openStream();
    const reply = t.a.call('upload', { name: 'x' }, { stream: writer });
    await writer.write('hello ');
    await writer.write(bytesOf('world'));
    writer.end();
    await writer.finished;
    assert.equal(await reply, 'hello world');
    await until(() => idle(t.a) && idle(t.b), 'idle');
  });

  test('writes made before the call is sent wait in the writer', async () => {
    const t = connect({ b: { maxConcurrentCalls: 1 }, peerB: { handler: async (call) => (call.stream ? text(await call.stream.readAll()) : sleep(10)) } });
    const first = t.a.call('hold');
    const writer = P.openStream();
    const writes = [writer.write('a'), writer.write('b')];
    writer.end();
    const second = t.a.call('upload', null, { stream: writer });
    assert.equal(t.a.stats().queuedCalls, 1);
    await first;
    assert.equal(await second, 'ab');
    await Promise.all(writes);
  });

  test('sources: bytes, arrays, sync and async generators, ReadableStreams', async () => {
    const t = connect({ peerB: { handler: async (call) => text(await call.stream.readAll()) } });
    assert.equal(await t.a.call('u', null, { stream: bytesOf('bytes') }), 'bytes');
    assert.equal(await t.a.call('u', null, { stream: [bytesOf('ar'), bytesOf('ray')] }), 'array');
    assert.equal(
      await t.a.call('u', null, {
        stream: (function* () {
          yield bytesOf('sy');
          yield 'nc'; // strings are sent as UTF-8
        })(),
      }),
      'sync',
    );
    assert.equal(
      await t.a.call('u', null, {
        stream: (async function* () {
          yield bytesOf('as');
          await tick();
          yield bytesOf('ync');
        })(),
      }),
      'async',
    );
    const web = new ReadableStream({
      start(controller) {
        controller.enqueue(bytesOf('web'));
        controller.close();
      },
    });
    assert.equal(await t.a.call('u', null, { stream: web }), 'web');
    const readerOnly = { getReader: () => web2.getReader() };
    const web2 = new ReadableStream({
      start(controller) {
        controller.enqueue(bytesOf('reader'));
        controller.close();
      },
    });
    assert.equal(await t.a.call('u', null, { stream: readerOnly }), 'reader');
    assert.equal(await t.a.call('u', null, { stream: new Uint8Array(0) }), '');
    await rejectsWith(t.a.call('u', null, { stream: 42 }), 'ERR_INVALID_ARGUMENT');
  });

  test('a slow consumer bounds the receiver buffer and holds the sender back', async () => {
    const window = 4096;
    let maxBuffered = 0;
    let consumed = 0;
    let stream;
    const t = connect({
      b: { initialWindow: window, maxFrameSize: 2048 },
      peerB: {
        handler: async (call) => {
          stream = call.stream;
          for (;;) {
            maxBuffered = Math.max(maxBuffered, stream.bufferedBytes);
            const chunk = await stream.read();
            if (chunk === null) break;
            assert.ok(checkPattern(chunk, consumed));
            consumed += chunk.length;
            await sleep(1);
          }
          return consumed;
        },
      },
    });
    const writer = P.openStream();
    const reply = t.a.call('slow', null, { stream: writer });
    let written = 0;
    let maxAhead = 0;
    for (let i = 0; i < 60; i++) {
      await writer.write(pattern(written, 1000));
      written += 1000;
      maxAhead = Math.max(maxAhead, written - consumed);
      if (stream) maxBuffered = Math.max(maxBuffered, stream.bufferedBytes);
    }
    writer.end();
    assert.equal(await reply, 60_000);
    assert.ok(maxBuffered <= window, `buffered ${maxBuffered}`);
    assert.ok(maxBuffered > 0);
    // The writer is at most a window (plus the chunk being sent) ahead of the consumer.
    assert.ok(maxAhead <= window + 1000, `the sender ran ${maxAhead} bytes ahead`);
    for (const f of t.sent('a', 'streamData')) assert.ok(f.data.length <= 2048 - 1);
    assert.ok(t.sent('b', 'credit').length >= 10);
  });

  test('untouched streams are stopped when the handler returns; retained ones are not', async () => {
    const kept = deferred();
    const t = connect({
      peerB: {
        handler: (call) => {
          if (call.action === 'keep') kept.resolve(call.stream.retain());
          return 'ok';
        },
      },
    });
    const finallyRan = deferred();
    const source = (async function* () {
      try {
        for (let i = 0; ; i++) {
          yield pattern(0, 1000);
          await tick();
        }
      } finally {
        finallyRan.resolve();
      }
    })();
    assert.equal(await t.a.call('ignore', null, { stream: source }), 'ok');
    await finallyRan.promise;
    await until(() => idle(t.a) && idle(t.b), 'idle');
    assert.equal(t.sent('b', 'stop').length, 1);
    assert.deepEqual(t.sent('a', 'streamEnd').map((f) => f.abort.code), ['ERR_STREAM_STOPPED']);

    assert.equal(await t.a.call('keep', null, { stream: bytesOf('later') }), 'ok');
    const stream = await kept.promise;
    await sleep(5);
    assert.equal(text(await stream.readAll()), 'later');
  });
});

describe('streams from the handler', () => {
  test('a response with a stream, through request()', async () => {
    const t = connect({
      chunk: 64,
      b: { initialWindow: 1024 },
      a: { initialWindow: 2048, maxFrameSize: 1024 },
      peerB: {
        handler: (call) =>
          call.respond(
            { total: 100_000 },
            {
              stream: (async function* () {
                for (let offset = 0; offset < 100_000; offset += 10_000) yield pattern(offset, 10_000);
              })(),
            },
          ),
      },
    });
    const response = await t.a.request('download');
    assert.deepEqual(response.value, { total: 100_000 });
    let offset = 0;
    for await (const chunk of response.stream) {
      assert.ok(chunk.length <= 1023);
      assert.ok(checkPattern(chunk, offset));
      offset += chunk.length;
      assert.ok(response.stream.bufferedBytes <= 2048);
    }
    assert.equal(offset, 100_000);
    await until(() => idle(t.a) && idle(t.b), 'idle');
  });

  test('streams on several responses of callMany', async () => {
    const t = connect({
      peerB: {
        handler: (call) => {
          for (let i = 0; i < 3; i++) call.respond(i, { last: false, stream: bytesOf(`part ${i}`) });
          call.end();
        },
      },
    });
    const parts = [];
    for await (const response of t.a.requestMany('parts')) parts.push([response.value, text(await response.stream.readAll())]);
    assert.deepEqual(parts, [
      [0, 'part 0'],
      [1, 'part 1'],
      [2, 'part 2'],
    ]);
  });

  test('call() gives the value and stops the streams of the response', async () => {
    const stopped = deferred();
    const t = connect({
      peerB: {
        handler: (call) => {
          const writer = P.openStream();
          call.respond('value', { stream: writer });
          writer.write(pattern(0, 10)).catch(() => {});
          writer.finished.catch((e) => stopped.resolve(e.code));
        },
      },
    });
    assert.equal(await t.a.call('x'), 'value');
    assert.equal(await stopped.promise, 'ERR_STREAM_STOPPED');
    await until(() => idle(t.a) && idle(t.b), 'idle');
  });

  test('several plain streams and files, in order', async () => {
    const t = connect({
      peerB: {
        handler: async (call) => {
          const out = { streams: [], files: [] };
          for (const s of call.streams) out.streams.push(text(await s.readAll()));
          for (const f of call.files) out.files.push([f.name, f.size, text(await f.stream.readAll()), f.stream.file]);
          return out;
        },
      },
    });
    const result = await t.a.call('multi', null, {
      stream: bytesOf('one'),
      streams: [bytesOf('two')],
      files: [
        { name: 'a.txt', size: 3, data: bytesOf('abc') },
        {
          name: 'ünïcode.bin',
          size: 5,
          data: (async function* () {
            yield bytesOf('de');
            yield bytesOf('fgh');
          })(),
        },
        { name: '', size: 0, data: new Uint8Array(0) },
      ],
    });
    assert.deepEqual(result, {
      streams: ['one', 'two'],
      files: [
        ['a.txt', 3, 'abc', { name: 'a.txt', size: 3 }],
        ['ünïcode.bin', 5, 'defgh', { name: 'ünïcode.bin', size: 5 }],
        ['', 0, '', { name: '', size: 0 }],
      ],
    });
    const opens = t.sent('a', 'streamOpen');
    assert.deepEqual(opens.map((f) => f.streamId), [1, 2, 3, 4, 5]);
    assert.equal(t.sent('a', 'message')[0].attachments, 5);
  });

  test('files in a response', async () => {
    const t = connect({ peerB: { handler: (call) => call.respond('here', { files: [{ name: 'r.bin', size: 4, data: Uint8Array.of(1, 2, 3, 4) }] }) } });
    const r = await t.a.request('get');
    assert.equal(r.files.length, 1);
    assert.equal(r.files[0].name, 'r.bin');
    assert.deepEqual([...(await r.files[0].stream.readAll())], [1, 2, 3, 4]);
  });
});

describe('stop, abort, sizes', () => {
  test('breaking out of the loop sends STOP; the sender stops and closes the id', async () => {
    let yielded = 0;
    const finallyRan = deferred();
    const t = connect({
      b: { initialWindow: 2048 },
      peerB: {
        handler: async (call) => {
          for await (const chunk of call.stream) {
            assert.ok(chunk.length > 0);
            break;
          }
          return 'broke';
        },
      },
    });
    const source = (async function* () {
      try {
        for (;;) {
          yielded += 1;
          yield pattern(0, 512);
        }
      } finally {
        finallyRan.resolve();
      }
    })();
    assert.equal(await t.a.call('x', null, { stream: source }), 'broke');
    await finallyRan.promise;
    await until(() => idle(t.a) && idle(t.b), 'idle');
    assert.ok(yielded < 10, `${yielded} chunks yielded`);
    assert.deepEqual(t.sent('b', 'stop').map((f) => f.code), ['ERR_STREAM_STOPPED']);
    assert.deepEqual(t.sent('a', 'streamEnd').map((f) => f.abort?.code), ['ERR_STREAM_STOPPED']);
  });

  test('a stopped writer rejects pending and later writes', async () => {
    const t = connect({
      b: { initialWindow: 1024 },
      peerB: {
        handler: async (call) => {
          await call.stream.read();
          call.stream.stop('E_ENOUGH');
          return 'stopped';
        },
      },
    });
    const writer = P.openStream();
    const reply = t.a.call('x', null, { stream: writer });
    const results = [];
    for (let i = 0; i < 5; i++) results.push(writer.write(pattern(0, 1000)).then(() => 'ok', (e) => e.code));
    assert.equal(await reply, 'stopped');
    await rejectsWith(writer.finished, 'ERR_STREAM_STOPPED');
    const settled = await Promise.all(results);
    assert.ok(settled.includes('ERR_STREAM_STOPPED'), settled.join());
    await rejectsWith(writer.write('more'), 'ERR_STREAM_STOPPED');
    assert.deepEqual(t.sent('b', 'stop').map((f) => f.code), ['E_ENOUGH']);
    writer.end(); // harmless
  });

  test('an aborted stream makes the reader throw the sender code', async () => {
    const errors = [];
    const t = connect({
      peerB: {
        handler: async (call) => {
          const chunks = [];
          try {
            for await (const chunk of call.stream) chunks.push(text(chunk));
          } catch (e) {
            errors.push([chunks.join(''), e.code, e.message]);
          }
        },
      },
    });
    const writer = P.openStream();
    const p = t.a.call('w', null, { stream: writer });
    await writer.write('partial');
    writer.abort('E_UPLOAD', 'the user gave up');
    await rejectsWith(writer.finished, 'E_UPLOAD');
    await p;
    await t.a.call('g', null, {
      stream: (async function* () {
        yield bytesOf('x');
        throw Object.assign(new Error('disk on fire'), { code: 'E_DISK' });
      })(),
    });
    await t.a.call('g', null, {
      stream: (async function* () {
        yield bytesOf('y');
        throw new Error('no code');
      })(),
    });
    assert.deepEqual(errors, [
      ['partial', 'E_UPLOAD', 'the user gave up'],
      ['x', 'E_DISK', 'disk on fire'],
      ['y', 'ERR_STREAM_SOURCE', 'no code'],
    ]);
  });

  test('a file source that does not match its size is aborted with ERR_FILE_SIZE', async () => {
    const errors = [];
    const t = connect({
      peerB: {
        handler: async (call) => {
          try {
            await call.files[0].stream.readAll();
            errors.push('no error');
          } catch (e) {
            errors.push(e.code);
          }
        },
      },
    });
    await t.a.call('f', null, { files: [{ name: 'long', size: 10, data: [pattern(0, 6), pattern(6, 6)] }] });
    await t.a.call('f', null, { files: [{ name: 'short', size: 10, data: [pattern(0, 8)] }] });
    await t.a.call('f', null, { files: [{ name: 'exact', size: 10, data: [pattern(0, 4), pattern(4, 6)] }] });
    assert.deepEqual(errors, ['ERR_FILE_SIZE', 'ERR_FILE_SIZE', 'no error']);
    // A Uint8Array of the wrong size is refused before anything is sent.
    await rejectsWith(t.a.call('f', null, { files: [{ name: 'bad', size: 3, data: new Uint8Array(4) }] }), 'ERR_FILE_SIZE');
    await rejectsWith(t.a.call('f', null, { files: [{ name: 'neg', size: -1, data: new Uint8Array(0) }] }), 'ERR_INVALID_ARGUMENT');
    // Files smaller than the window need no credit: none is granted.
    assert.equal(t.sent('b', 'credit').length, 0);
  });

  test('a StreamWriter is attached once', async () => {
    const t = connect({ peerB: { handler: async (call) => text(await call.stream.readAll()) } });
    const writer = P.openStream();
    await rejectsWith(t.a.call('x', null, { stream: writer, streams: [writer] }), 'ERR_INVALID_ARGUMENT');
    const writer2 = P.openStream();
    const p = t.a.call('x', null, { stream: writer2 });
    await rejectsWith(t.a.call('x', null, { stream: writer2 }), 'ERR_INVALID_ARGUMENT');
    writer2.write('ok');
    writer2.end();
    assert.equal(await p, 'ok');
  });

  test('streams and files need their features', async () => {
    const t = connect({ b: { features: P.Feature.Cancel }, peerB: { handler: () => 1 } });
    await rejectsWith(t.a.call('x', null, { stream: bytesOf('x') }), 'ERR_FEATURE_DISABLED');
    await rejectsWith(t.a.call('x', null, { files: [{ name: 'f', size: 0, data: new Uint8Array(0) }] }), 'ERR_FEATURE_DISABLED');
    const writer = P.openStream();
    await rejectsWith(t.a.call('x', null, { stream: writer }), 'ERR_FEATURE_DISABLED');
    await rejectsWith(writer.write('x'), 'ERR_FEATURE_DISABLED');
  });
});

describe('streams and cancellation', () => {
  test('cancelling a call aborts its upload', async () => {
    const seen = deferred();
    const t = connect({
      peerB: {
        handler: async (call) => {
          try {
            for await (const _ of call.stream);
          } catch (e) {
            seen.resolve(e.code);
          }
        },
      },
    });
    const writer = P.openStream();
    const controller = new AbortController();
    const p = t.a.call('up', null, { stream: writer, signal: controller.signal });
    await writer.write('x');
    controller.abort();
    await rejectsWith(p, 'ERR_CANCELLED');
    assert.equal(await seen.promise, 'ERR_CANCELLED');
    await rejectsWith(writer.write('y'), 'ERR_CANCELLED');
  });

  test('cancelling a call stops its response streams on both sides', async () => {
    const handlerSaw = deferred();
    const t = connect({
      b: { initialWindow: 1024 },
      a: { initialWindow: 1024 },
      peerB: {
        handler: async (call) => {
          const writer = P.openStream();
          call.respond(0, { last: false, stream: writer });
          try {
            for (;;) await writer.write(pattern(0, 512));
          } catch (e) {
            handlerSaw.resolve([e.code, call.signal.aborted]);
          }
        },
      },
    });
    const controller = new AbortController();
    const responses = t.a.requestMany('feed', null, { signal: controller.signal });
    const first = await responses.next();
    const stream = first.value.stream;
    assert.ok(await stream.read());
    controller.abort();
    await rejectsWith(responses.next(), 'ERR_CANCELLED');
    await rejectsWith(stream.read(), 'ERR_CANCELLED');
    // CANCEL arrives before the STOP: the handler's side aborts its stream first.
    assert.deepEqual(await handlerSaw.promise, ['ERR_CANCELLED', true]);
    await until(() => idle(t.a) && idle(t.b), 'idle');
  });

  test('a disconnect fails streams in both directions', async () => {
    const readerError = deferred();
    const firstRead = deferred();
    const t = connect({
      b: { initialWindow: 1024 },
      peerB: {
        handler: async (call) => {
          firstRead.resolve(text(await call.stream.read()));
          call.stream.read().catch((e) => readerError.resolve(e.code));
          return new Promise(() => {});
        },
      },
    });
    const writer = P.openStream();
    t.a.call('x', null, { stream: writer }).catch(() => {});
    await writer.write('a');
    assert.equal(await firstRead.promise, 'a');
    t.disconnect();
    assert.equal(await readerError.promise, 'ERR_DISCONNECTED');
    await rejectsWith(writer.write('b'), 'ERR_DISCONNECTED');
  });
});

describe('volume', () => {
  test('50 MB through a stream with a 16 KiB window, in random small transport chunks', async (t0) => {
    const total = 50 * 1024 * 1024;
    const window = 16 * 1024;
    let maxBuffered = 0;
    const t = connect({
      chunk: 32 * 1024,
      b: { initialWindow: window, maxFrameSize: 16 * 1024 },
      peerB: {
        handler: async (call) => {
          let received = 0;
          let sum = 0;
          for await (const chunk of call.stream) {
            maxBuffered = Math.max(maxBuffered, call.stream.bufferedBytes + chunk.length);
            // Spot checks keep the test fast: first and last byte of each chunk.
            if (chunk[0] !== (((received) * 7 + 3) & 255)) throw new Error(`bad byte at ${received}`);
            received += chunk.length;
            sum = (sum + chunk[chunk.length - 1]) % 1_000_000_007;
          }
          return { received, sum };
        },
      },
    });
    const block = 256 * 1024;
    const data = pattern(0, block); // 256 KiB is a multiple of 256: the pattern repeats exactly
    const source = (async function* () {
      for (let offset = 0; offset < total; offset += block) yield data;
    })();
    const started = Date.now();
    const result = await t.a.call('big', null, { stream: source, timeoutMs: 60_000 });
    const ms = Date.now() - started;
    assert.equal(result.received, total);
    assert.ok(maxBuffered <= window, `buffered ${maxBuffered}`);
    t0.diagnostic(`50 MB in ${ms} ms (${((total / 1048576 / ms) * 1000).toFixed(0)} MB/s), ${t.sent('b', 'credit').length} CREDIT frames`);
  });
});
