// Flow control and the server's write queue agree (ARCHITECTURE.md,
// "Backpressure, end to end"): stream data the client's credit allows is
// produced only while the connection's queue is below its high-water mark,
// and resumes on drain, so a client that reads is never closed as a slow
// consumer, however many streams it reads at once. End to end through the
// native server and the real client at its defaults.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { startServer } from '../fixtures/rpc-e2e.mjs';

const MiB = 1024 * 1024;

/** Every byte of a response's stream; checks the pattern on the way. */
async function readPattern(stream, size, pauseMs = 0) {
  let received = 0;
  for await (const chunk of stream) {
    if (pauseMs > 0) await new Promise((resolve) => setTimeout(resolve, pauseMs));
    for (let i = 0; i < chunk.length; i += 4096) assert.equal(chunk[i], (received + i) & 0xff);
    received += chunk.length;
  }
  assert.equal(received, size);
  return received;
}

for (const transport of ['tcp', 'ws']) {
  test(`17 concurrent 8 MiB downloads over ${transport}: the client is never cut off as a slow consumer`, { timeout: 120_000 }, async () => {
    const size = 8 * MiB;
    const data = new Uint8Array(size).map((_, i) => i & 0xff);
    const rpc = await startServer((server) =>
      server.action('download', (call) => {
        call.respond(null, { stream: data });
      }),
    );
    try {
      const client = await rpc.connect(transport);
      const disconnects = [];
      client.on('disconnect', (event) => disconnects.push(event.code));
      // 17 × the client's 1 MiB window is more credit than the server's
      // 16 MiB maxBackpressure: the queue must stop short of it.
      const downloads = Array.from({ length: 17 }, async () => {
        const response = await client.request('download');
        return readPattern(response.stream, size);
      });
      const sizes = await Promise.all(downloads);
      assert.deepEqual(sizes, Array(17).fill(size));
      assert.deepEqual(disconnects, []);
      assert.deepEqual(rpc.closed, []);
      await client.close();
    } finally {
      await rpc.close();
    }
  });
}

test('a small rpc.maxBackpressure and a slow reader: many streams, the queue holds, the client stays', { timeout: 120_000 }, async () => {
  const size = 2 * MiB;
  const data = new Uint8Array(size).map((_, i) => i & 0xff);
  const rpc = await startServer(
    (server) =>
      server.action('download', (call) => {
        call.respond(null, { stream: data });
      }),
    { rpc: { maxBackpressure: 256 * 1024 } },
  );
  try {
    const client = await rpc.connect('tcp');
    const disconnects = [];
    client.on('disconnect', (event) => disconnects.push(event.code));
    // Credit: 12 streams × the client's 1 MiB window, 48 times the limit.
    const sizes = await Promise.all(
      Array.from({ length: 12 }, async (_, i) => {
        const response = await client.request('download');
        return readPattern(response.stream, size, i % 3 === 0 ? 2 : 0);
      }),
    );
    assert.deepEqual(sizes, Array(12).fill(size));
    assert.deepEqual(disconnects, []);
    assert.deepEqual(rpc.closed, []);
    await client.close();
  } finally {
    await rpc.close();
  }
});
