// Messages on an open connection: echo of text and binary, sizes, order,
// fragmentation, ping/pong and timers, closing handshakes, every kind of
// malformed input (each while a bystander client keeps working),
// permessage-deflate and the counters of `server.stats()`.
import test, { describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import zlib from 'node:zlib';
import { once } from 'node:events';
import { startServer, connect, nextMessage, waitFor, clientFrame } from '../../helpers/index.mjs';
import { RawClient, closePayload, OP, sleep, within } from './support.mjs';

/** A route that echoes and tags each connection through the upgrade hook. */
function taggedEcho(record, extra = {}) {
  return {
    upgrade: (req) => ({ tag: req.searchParams.get('tag') ?? '' }),
    message: (ws, data, isBinary) => {
      record.messages.push({ tag: ws.data.tag, data: Buffer.from(data), isBinary });
      const text = isBinary ? '' : data.toString();
      if (text === 'please end') ws.end(4001, 'bye');
      else if (text === 'please terminate') ws.close();
      else ws.send(data, isBinary);
    },
    close: (ws, code, reason) => void record.closes.set(ws.data.tag, { code, reason }),
    ...extra,
  };
}

describe('messages', () => {
  let server;
  let url;
  let port;
  const record = { messages: [], closes: new Map(), extensions: new Map() };
  let tagCounter = 0;
  const tag = (name) => `${name}-${++tagCounter}`;

  /** Wait for the server's close handler of a tagged connection. */
  async function serverClose(t) {
    await waitFor(() => record.closes.has(t), 5000, `the close handler of ${t}`);
    return record.closes.get(t);
  }

  /**
   * Run `fn` while another client is connected; afterwards that client must
   * still get an echo promptly and must not have been closed.
   */
  async function withBystander(fn) {
    const bystander = await connect(`${url}/echo?tag=${tag('bystander')}`);
    try {
      await fn();
      const started = Date.now();
      bystander.send('are you there?');
      const reply = await nextMessage(bystander, 2000);
      assert.equal(reply.data.toString(), 'are you there?');
      assert.ok(Date.now() - started < 2000);
      assert.equal(bystander.readyState, 1, 'the bystander is still open');
    } finally {
      bystander.terminate();
    }
  }

  /** Send `bytes` from a raw client and expect the server to fail the connection. */
  async function expectFailure(bytes, code, reason, path = '/echo') {
    const t = tag('raw');
    const client = await RawClient.open(port, `${path}?tag=${t}`);
    try {
      const errorsBefore = server.stats().protocolErrors;
      client.send(bytes);
      const close = await client.closeFrame();
      assert.equal(close.code, code, `close code (reason ${close.reason})`);
      if (reason) assert.equal(close.reason, reason);
      assert.equal(client.malformed, null, 'the server frames are well formed');
      await client.waitEnded(4000);
      const seen = await serverClose(t);
      assert.equal(seen.code, code);
      if (reason) assert.equal(seen.reason, reason);
      assert.ok(server.stats().protocolErrors > errorsBefore, 'counted as a protocol error');
      return close;
    } finally {
      client.destroy();
    }
  }

  before(async () => {
    ({ server, url, port } = await startServer(
      (s) => {
        s.ws('/echo', taggedEcho(record));
        s.ws('/limited', taggedEcho(record, { maxPayloadLength: 1024, maxFragments: 4 }));
        s.ws('/ping', taggedEcho(record, { pingInterval: 0.2 }));
        s.ws('/idle', taggedEcho(record, { idleTimeout: 0.3, pingInterval: 0 }));
        s.ws('/idle-ping', taggedEcho(record, { idleTimeout: 0.5, pingInterval: 0.15 }));
        s.ws(
          '/deflate',
          taggedEcho(record, {
            compression: true,
            open: (ws) => void record.extensions.set(ws.data.tag, ws.extensions),
          }),
        );
      },
      { closeTimeout: 1 },
    ));
  });

  after(async () => {
    await server.close({ drainTimeout: 1000 });
  });

  test('text echo: a string arrives as text on both sides', async () => {
    const t = tag('text');
    const ws = await connect(`${url}/echo?tag=${t}`);
    try {
      ws.send('héllo wörld ✓');
      const reply = await nextMessage(ws);
      assert.equal(reply.isBinary, false);
      assert.equal(reply.data.toString('utf8'), 'héllo wörld ✓');
      const seen = record.messages.find((m) => m.tag === t);
      assert.equal(seen.isBinary, false);
      assert.equal(seen.data.toString('utf8'), 'héllo wörld ✓');
    } finally {
      ws.terminate();
    }
  });

  test('binary echo: bytes arrive as binary, unchanged', async () => {
    const t = tag('binary');
    const ws = await connect(`${url}/echo?tag=${t}`);
    try {
      const bytes = crypto.randomBytes(300);
      bytes[0] = 0xff; // not UTF-8: must not be treated as text anywhere
      ws.send(bytes);
      const reply = await nextMessage(ws);
      assert.equal(reply.isBinary, true);
      assert.deepEqual(reply.data, bytes);
      assert.equal(record.messages.find((m) => m.tag === t).isBinary, true);
    } finally {
      ws.terminate();
    }
  });

  test('empty text and binary messages', async () => {
    const ws = await connect(`${url}/echo?tag=${tag('empty')}`);
    try {
      ws.send('');
      ws.send(Buffer.alloc(0));
      const a = await nextMessage(ws);
      const b = await nextMessage(ws);
      assert.deepEqual([a.isBinary, a.data.length], [false, 0]);
      assert.deepEqual([b.isBinary, b.data.length], [true, 0]);
    } finally {
      ws.terminate();
    }
  });

  test('a message of 1 MiB - 1 byte echoes intact (64-bit length, under the default limit)', async () => {
    const ws = await connect(`${url}/echo?tag=${tag('big')}`);
    try {
      const bytes = crypto.randomBytes(1024 * 1024 - 1);
      ws.send(bytes);
      const reply = await nextMessage(ws, 10000);
      assert.equal(reply.data.length, bytes.length);
      assert.ok(reply.data.equals(bytes));
    } finally {
      ws.terminate();
    }
  });

  test('the default message limit is 1 MiB: one byte more closes with 1009', async () => {
    await withBystander(async () => {
      const t = tag('toobig');
      const ws = await connect(`${url}/echo?tag=${t}`);
      ws.send(Buffer.alloc(1024 * 1024 + 1));
      const closed = await within(5000, ws.closed, 'close');
      assert.equal(closed.code, 1009);
      assert.equal((await serverClose(t)).code, 1009);
    });
  });

  test('1000 messages arrive in order, on both sides', async () => {
    const t = tag('order');
    const ws = await connect(`${url}/echo?tag=${t}`);
    try {
      for (let i = 0; i < 1000; i++) ws.send(i % 2 ? `m${i}` : Buffer.from(`m${i}`));
      await waitFor(() => ws.received.length >= 1000, 10000, '1000 echoes');
      const got = ws.received.map((m) => m.data.toString());
      assert.deepEqual(got, Array.from({ length: 1000 }, (_, i) => `m${i}`));
      assert.deepEqual(
        ws.received.map((m) => m.isBinary),
        Array.from({ length: 1000 }, (_, i) => i % 2 === 0),
      );
      const serverSide = record.messages.filter((m) => m.tag === t).map((m) => m.data.toString());
      assert.deepEqual(serverSide, got);
    } finally {
      ws.terminate();
    }
  });

  test('a fragmented message with a ping in between: one message, one pong', async () => {
    const t = tag('frag');
    const client = await RawClient.open(port, `/echo?tag=${t}`);
    try {
      client.send(clientFrame(OP.TEXT, 'Hel', { fin: false }));
      client.send(clientFrame(OP.PING, 'mid'));
      client.send(clientFrame(OP.CONT, 'lo ', { fin: false }));
      client.send(clientFrame(OP.CONT, 'world'));
      const pong = await client.nextFrame();
      assert.equal(pong.opcode, OP.PONG, 'the pong is answered before the message completes');
      assert.equal(pong.payload.toString(), 'mid');
      const echoFrame = await client.nextFrame();
      assert.equal(echoFrame.opcode, OP.TEXT);
      assert.equal(echoFrame.fin, true);
      assert.equal(echoFrame.payload.toString(), 'Hello world');
      const mine = record.messages.filter((m) => m.tag === t);
      assert.equal(mine.length, 1);
      assert.equal(mine[0].data.toString(), 'Hello world');
      assert.equal(mine[0].isBinary, false);
    } finally {
      client.destroy();
    }
  });

  test('a fragmented message sent byte by byte is reassembled', async () => {
    const client = await RawClient.open(port, `/echo?tag=${tag('bytewise')}`);
    try {
      const bytes = Buffer.concat([clientFrame(OP.BINARY, [1, 2, 3], { fin: false }), clientFrame(OP.CONT, [4, 5])]);
      for (const byte of bytes) {
        client.send(Buffer.from([byte]));
        await sleep(1);
      }
      const f = await client.nextFrame({ opcode: OP.BINARY });
      assert.deepEqual([...f.payload], [1, 2, 3, 4, 5]);
    } finally {
      client.destroy();
    }
  });

  test('ping from the client gets a pong with the same payload', async () => {
    const ws = await connect(`${url}/echo?tag=${tag('ping')}`);
    try {
      const payload = Buffer.from('are-you-alive-42');
      const pong = once(ws, 'pong');
      ws.ping(payload);
      const [data] = await within(2000, pong, 'pong');
      assert.deepEqual(data, payload);
      const empty = once(ws, 'pong');
      ws.ping();
      const [nothing] = await within(2000, empty, 'pong');
      assert.equal(nothing.length, 0);
    } finally {
      ws.terminate();
    }
  });

  test('pingInterval: the server pings a quiet connection, repeatedly while it answers', async () => {
    const ws = await connect(`${url}/ping?tag=${tag('autoping')}`);
    try {
      const pings = [];
      const started = Date.now();
      ws.on('ping', () => pings.push(Date.now() - started));
      await waitFor(() => pings.length >= 2, 3000, 'two pings');
      assert.ok(pings[0] >= 100, `first ping after ${pings[0]} ms`);
      assert.equal(ws.readyState, 1);
    } finally {
      ws.terminate();
    }
  });

  test('idleTimeout: a silent client gets close 1001', async () => {
    await withBystander(async () => {
      const t = tag('idle');
      const started = Date.now();
      const client = await RawClient.open(port, `/idle?tag=${t}`);
      try {
        const close = await client.closeFrame(3000);
        const elapsed = Date.now() - started;
        assert.equal(close.code, 1001);
        assert.equal(close.reason, 'ERR_WS_IDLE_TIMEOUT');
        assert.ok(elapsed >= 250 && elapsed < 2500, `closed after ${elapsed} ms`);
        client.send(clientFrame(OP.CLOSE, closePayload(1001)));
        await client.waitEnded(3000);
        assert.deepEqual(await serverClose(t), { code: 1001, reason: 'ERR_WS_IDLE_TIMEOUT' });
      } finally {
        client.destroy();
      }
    });
  });

  test('idleTimeout: incoming data (pongs too) keeps a connection alive', async () => {
    const ws = await connect(`${url}/idle-ping?tag=${tag('alive')}`);
    try {
      await sleep(1300);
      assert.equal(ws.readyState, 1, 'still open after more than twice the idle timeout');
      ws.send('still here');
      assert.equal((await nextMessage(ws)).data.toString(), 'still here');
    } finally {
      ws.terminate();
    }
  });

  test('the client closes with 4000 "x": the server sees it and echoes the code', async () => {
    const t = tag('close4000');
    const ws = await connect(`${url}/echo?tag=${t}`);
    ws.close(4000, 'x');
    const closed = await within(3000, ws.closed, 'close');
    assert.equal(closed.code, 4000);
    assert.deepEqual(await serverClose(t), { code: 4000, reason: 'x' });
  });

  test('a close without a code is seen as 1005 and echoed empty', async () => {
    const t = tag('close1005');
    const client = await RawClient.open(port, `/echo?tag=${t}`);
    try {
      client.send(clientFrame(OP.CLOSE));
      const close = await client.closeFrame();
      assert.equal(close.payload.length, 0);
      await client.waitEnded();
      assert.deepEqual(await serverClose(t), { code: 1005, reason: '' });
    } finally {
      client.destroy();
    }
  });

  test('ws.end(4001, "bye"): the client gets 4001 "bye"', async () => {
    const t = tag('end');
    const ws = await connect(`${url}/echo?tag=${t}`);
    ws.send('please end');
    const closed = await within(3000, ws.closed, 'close');
    assert.deepEqual(closed, { code: 4001, reason: 'bye' });
    assert.deepEqual(await serverClose(t), { code: 4001, reason: 'bye' });
  });

  test('ws.close(): the connection drops without a close frame (1006)', async () => {
    const t = tag('terminate');
    const client = await RawClient.open(port, `/echo?tag=${t}`);
    try {
      client.send(clientFrame(OP.TEXT, 'please terminate'));
      await client.waitEnded(3000);
      assert.equal(client.frames.filter((f) => f.opcode === OP.CLOSE).length, 0, 'no close frame');
      assert.equal((await serverClose(t)).code, 1006);
    } finally {
      client.destroy();
    }
    const ws = await connect(`${url}/echo?tag=${tag('terminate-ws')}`);
    ws.send('please terminate');
    const closed = await within(3000, ws.closed, 'close');
    assert.equal(closed.code, 1006);
  });

  test('invalid close codes from the client close with 1002', async () => {
    await withBystander(async () => {
      for (const code of [1005, 999, 1006, 1015, 2999, 5000]) {
        await expectFailure(clientFrame(OP.CLOSE, closePayload(code)), 1002, 'ERR_WS_INVALID_CLOSE_CODE');
      }
      await expectFailure(clientFrame(OP.CLOSE, [0x03]), 1002, 'ERR_WS_INVALID_CLOSE_PAYLOAD');
      await expectFailure(
        clientFrame(OP.CLOSE, Buffer.concat([closePayload(1000), Buffer.from([0xff])])),
        1007,
        'ERR_WS_INVALID_UTF8',
      );
    });
  });

  test('maxPayloadLength: 1024 bytes pass, 1025 close with 1009, others unaffected', async () => {
    await withBystander(async () => {
      const t = tag('limit');
      const ws = await connect(`${url}/limited?tag=${t}`);
      ws.send(Buffer.alloc(1024, 7));
      assert.equal((await nextMessage(ws)).data.length, 1024);
      ws.send(Buffer.alloc(1025, 7));
      const closed = await within(3000, ws.closed, 'close');
      assert.equal(closed.code, 1009);
      assert.deepEqual(await serverClose(t), { code: 1009, reason: 'ERR_WS_MESSAGE_TOO_BIG' });
      // Reassembled fragments count as one message.
      await expectFailure(
        Buffer.concat([
          clientFrame(OP.BINARY, Buffer.alloc(400), { fin: false }),
          clientFrame(OP.CONT, Buffer.alloc(400), { fin: false }),
          clientFrame(OP.CONT, Buffer.alloc(400)),
        ]),
        1009,
        'ERR_WS_MESSAGE_TOO_BIG',
        '/limited',
      );
    });
  });

  test('maxFragments: 4 fragments pass, 5 close with 1009', async () => {
    await withBystander(async () => {
      const fragments = (n) =>
        Buffer.concat(
          Array.from({ length: n }, (_, i) => clientFrame(i === 0 ? OP.TEXT : OP.CONT, `f${i}`, { fin: i === n - 1 })),
        );
      const client = await RawClient.open(port, `/limited?tag=${tag('frags4')}`);
      try {
        client.send(fragments(4));
        const f = await client.nextFrame({ opcode: OP.TEXT });
        assert.equal(f.payload.toString(), 'f0f1f2f3');
      } finally {
        client.destroy();
      }
      await expectFailure(fragments(5), 1009, 'ERR_WS_TOO_MANY_FRAGMENTS', '/limited');
    });
  });

  test('invalid UTF-8 in a text message closes with 1007', async () => {
    await withBystander(async () => {
      await expectFailure(clientFrame(OP.TEXT, [0x68, 0x69, 0xc3, 0x28]), 1007, 'ERR_WS_INVALID_UTF8');
      // Split across fragments: each fragment alone could be a valid prefix.
      await expectFailure(
        Buffer.concat([clientFrame(OP.TEXT, [0x61, 0xe2, 0x82], { fin: false }), clientFrame(OP.CONT, [0x28])]),
        1007,
        'ERR_WS_INVALID_UTF8',
      );
      // Found in the first fragment, without waiting for the rest.
      await expectFailure(clientFrame(OP.TEXT, [0x61, 0xff], { fin: false }), 1007, 'ERR_WS_INVALID_UTF8');
      // A message ending in the middle of a code point.
      await expectFailure(clientFrame(OP.TEXT, [0x61, 0xe2, 0x82]), 1007, 'ERR_WS_INVALID_UTF8');
    });
  });

  test('a code point split across fragments is valid', async () => {
    const client = await RawClient.open(port, `/echo?tag=${tag('utf8split')}`);
    try {
      client.send(clientFrame(OP.TEXT, [0x61, 0xe2], { fin: false }));
      client.send(clientFrame(OP.CONT, [0x82], { fin: false }));
      client.send(clientFrame(OP.CONT, [0xac, 0x62]));
      const f = await client.nextFrame({ opcode: OP.TEXT });
      assert.equal(f.payload.toString('utf8'), 'a€b');
    } finally {
      client.destroy();
    }
  });

  test('an unmasked client frame closes with 1002', async () => {
    await withBystander(async () => {
      await expectFailure(clientFrame(OP.TEXT, 'naked', { masked: false }), 1002, 'ERR_WS_UNMASKED_FRAME');
    });
  });

  test('reserved bits without a negotiated extension close with 1002', async () => {
    await withBystander(async () => {
      for (const rsv of [4, 2, 1]) {
        await expectFailure(clientFrame(OP.TEXT, 'rsv', { rsv }), 1002, 'ERR_WS_RESERVED_BITS');
      }
    });
  });

  test('unknown opcodes close with 1002', async () => {
    await withBystander(async () => {
      for (const opcode of [0x3, 0x7, 0xb, 0xf]) {
        await expectFailure(clientFrame(opcode, 'what'), 1002, 'ERR_WS_INVALID_OPCODE');
      }
    });
  });

  test('bad control and continuation frames close with 1002', async () => {
    await withBystander(async () => {
      await expectFailure(clientFrame(OP.PING, Buffer.alloc(126)), 1002, 'ERR_WS_CONTROL_FRAME_TOO_BIG');
      await expectFailure(clientFrame(OP.PING, 'x', { fin: false }), 1002, 'ERR_WS_FRAGMENTED_CONTROL');
      await expectFailure(clientFrame(OP.CONT, 'orphan'), 1002, 'ERR_WS_UNEXPECTED_CONTINUATION');
      await expectFailure(
        Buffer.concat([clientFrame(OP.TEXT, 'a', { fin: false }), clientFrame(OP.TEXT, 'b')]),
        1002,
        'ERR_WS_EXPECTED_CONTINUATION',
      );
    });
  });

  test('a valid frame before a bad one is still delivered, nothing after it is', async () => {
    const t = tag('before-bad');
    const client = await RawClient.open(port, `/echo?tag=${t}`);
    try {
      client.send(Buffer.concat([clientFrame(OP.TEXT, 'good'), clientFrame(OP.TEXT, 'bad', { masked: false }), clientFrame(OP.TEXT, 'late')]));
      const close = await client.closeFrame();
      assert.equal(close.code, 1002);
      await client.waitEnded();
      await serverClose(t);
      const mine = record.messages.filter((m) => m.tag === t).map((m) => m.data.toString());
      assert.deepEqual(mine, ['good']);
    } finally {
      client.destroy();
    }
  });

  test('compression: permessage-deflate is negotiated and big messages echo intact', async () => {
    const t = tag('deflate');
    const ws = await connect(`${url}/deflate?tag=${t}`, { perMessageDeflate: true });
    try {
      assert.equal(ws.extensions, 'permessage-deflate');
      await waitFor(() => record.extensions.has(t), 2000, 'the open handler');
      assert.match(record.extensions.get(t), /^permessage-deflate\b/);
      const before = server.stats();
      const text = 'the quick brown fox jumps over the lazy dog. '.repeat(10000);
      ws.send(text);
      const reply = await nextMessage(ws, 5000);
      assert.equal(reply.isBinary, false);
      assert.equal(reply.data.toString(), text);
      const after = server.stats();
      assert.ok(after.bytesIn - before.bytesIn < text.length / 10, `received ${after.bytesIn - before.bytesIn} bytes`);
      assert.ok(after.bytesOut - before.bytesOut < text.length / 10, `sent ${after.bytesOut - before.bytesOut} bytes`);

      const binary = Buffer.alloc(200000);
      for (let i = 0; i < binary.length; i++) binary[i] = i % 251;
      ws.send(binary);
      const back = await nextMessage(ws, 5000);
      assert.equal(back.isBinary, true);
      assert.ok(back.data.equals(binary));
      // Small messages and many in a row (context takeover) stay correct.
      for (let i = 0; i < 50; i++) ws.send(`small ${i} ${'z'.repeat(i * 10)}`);
      for (let i = 0; i < 50; i++) {
        assert.equal((await nextMessage(ws)).data.toString(), `small ${i} ${'z'.repeat(i * 10)}`);
      }
    } finally {
      ws.terminate();
    }
  });

  test('compression: the server compresses what it sends (RSV1, raw deflate)', async () => {
    const client = await RawClient.open(port, `/deflate?tag=${tag('deflate-raw')}`, {
      extra: 'Sec-WebSocket-Extensions: permessage-deflate\r\n',
    });
    try {
      assert.match(client.response.headers['sec-websocket-extensions'], /^permessage-deflate\b/);
      const text = 'a'.repeat(5000);
      client.send(clientFrame(OP.TEXT, text)); // uncompressed frames remain legal
      const f = await client.nextFrame({ opcode: OP.TEXT });
      assert.equal(f.rsv, 4, 'RSV1 marks a compressed message');
      assert.ok(f.payload.length < 200);
      const inflated = zlib.inflateRawSync(Buffer.concat([f.payload, Buffer.from([0, 0, 0xff, 0xff])]), {
        finishFlush: zlib.constants.Z_SYNC_FLUSH,
      });
      assert.equal(inflated.toString(), text);
    } finally {
      client.destroy();
    }
  });

  test('compression: a route without it declines the offer, and RSV1 there is an error', async () => {
    const ws = await connect(`${url}/echo?tag=${tag('nodeflate')}`, { perMessageDeflate: true });
    assert.equal(ws.extensions, '');
    ws.terminate();
    await withBystander(async () => {
      await expectFailure(clientFrame(OP.TEXT, zlib.deflateRawSync('hi'), { rsv: 4 }), 1002, 'ERR_WS_RESERVED_BITS');
    });
  });

  test('compression: corrupt deflate data closes with 1007', async () => {
    await withBystander(async () => {
      const t = tag('badinflate');
      const client = await RawClient.open(port, `/deflate?tag=${t}`, {
        extra: 'Sec-WebSocket-Extensions: permessage-deflate\r\n',
      });
      try {
        client.send(clientFrame(OP.TEXT, Buffer.from([0xff, 0xff, 0xff, 0xff, 0x00]), { rsv: 4 }));
        const close = await client.closeFrame();
        assert.equal(close.code, 1007);
        await client.waitEnded();
        assert.equal((await serverClose(t)).code, 1007);
      } finally {
        client.destroy();
      }
    });
  });
});

describe('stats', () => {
  test('stats() counts connections, messages, bytes and protocol errors', async () => {
    const { server, url, port } = await startServer((s) =>
      s.ws('/echo', { message: (ws, data, isBinary) => void ws.send(data, isBinary) }),
    );
    const clients = [];
    try {
      const zero = server.stats();
      assert.equal(zero.connectionsOpen, 0);
      assert.equal(zero.messagesIn, 0);
      clients.push(await connect(`${url}/echo`, { perMessageDeflate: false }));
      clients.push(await connect(`${url}/echo`, { perMessageDeflate: false }));
      await waitFor(() => server.stats().connectionsOpen === 2, 2000, 'two open connections');
      assert.equal(server.stats().connectionsTotal, 2);

      const [a] = clients;
      for (let i = 0; i < 3; i++) a.send('abc');
      for (let i = 0; i < 3; i++) assert.equal((await nextMessage(a)).data.toString(), 'abc');
      const s = server.stats();
      assert.equal(s.messagesIn, 3);
      assert.equal(s.messagesOut, 3);
      assert.equal(s.workers[0].messagesIn, 3);
      assert.equal(s.workers[0].connectionsOpen, 2);
      // Client frames: 2 header + 4 mask + 3 payload; server frames: 2 + 3.
      assert.equal(s.bytesIn, 3 * 9);
      assert.equal(s.bytesOut, 3 * 5);
      assert.equal(s.protocolErrors, 0);
      assert.equal(s.messagesDropped, 0);

      // A 70000-byte message: 64-bit length (client 2+8+4, server 2+8 bytes of header).
      const big = Buffer.alloc(70000, 1);
      clients[1].send(big);
      await nextMessage(clients[1], 5000);
      const s2 = server.stats();
      assert.equal(s2.messagesIn, 4);
      assert.equal(s2.messagesOut, 4);
      assert.equal(s2.bytesIn, 27 + 14 + 70000);
      assert.equal(s2.bytesOut, 15 + 10 + 70000);

      const raw = await RawClient.open(port, '/echo');
      raw.send(clientFrame(OP.TEXT, 'x', { masked: false }));
      await raw.closeFrame();
      await raw.waitEnded();
      raw.destroy();
      await waitFor(() => server.stats().protocolErrors === 1, 2000, 'a protocol error');
      assert.equal(server.stats().connectionsTotal, 3);

      for (const ws of clients) ws.close(1000);
      await Promise.all(clients.map((ws) => within(3000, ws.closed, 'close')));
      await waitFor(() => server.stats().connectionsOpen === 0, 3000, 'no open connection');
      assert.equal(server.stats().workers[0].connectionsOpen, 0);
    } finally {
      for (const ws of clients) ws.terminate();
      await server.close({ drainTimeout: 500 });
    }
  });
});
