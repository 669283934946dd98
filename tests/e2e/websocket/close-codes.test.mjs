// Applications may only send the close codes RFC 6455 §7.4 allows; others
// are refused with ERR_INVALID_OPTION before anything reaches the wire.
import test from 'node:test';
import assert from 'node:assert/strict';
import { connect, startServer } from '../../helpers/index.mjs';

test('end() refuses reserved and out-of-range close codes, then closes with a valid one', async (t) => {
  const refused = [];
  const { server, url } = await startServer((s) =>
    s.ws('/', {
      message(ws, data) {
        const code = Number(data.toString());
        try {
          ws.end(code, 'x');
        } catch (error) {
          refused.push([code, error.code]);
          ws.send(`refused ${code}`);
        }
      },
    }),
  );
  t.after(() => server.close({ drainTimeout: 500 }));
  const client = await connect(url);
  for (const code of [999, 1004, 1005, 1006, 1015, 2999, 5000, 70000, 1000.5]) {
    client.send(String(code));
  }
  client.send('4000');
  const closed = await client.closed;
  assert.deepEqual(refused.map(([code]) => code), [999, 1004, 1005, 1006, 1015, 2999, 5000, 70000, 1000.5]);
  assert.ok(refused.every(([, code]) => code === 'ERR_INVALID_OPTION'));
  assert.equal(client.received.length, 9);
  assert.deepEqual(closed, { code: 4000, reason: 'x' });
  assert.throws(() => server.end(1, 1006), { code: 'ERR_INVALID_OPTION' });
});

test('ws.cork(fn) from a timer delivers everything sent inside it, in order', async (t) => {
  const { server, url } = await startServer((s) =>
    s.ws('/', {
      open(ws) {
        setTimeout(() => {
          ws.cork(() => {
            for (let i = 0; i < 100; i++) ws.send(`m${i}`);
          });
          // And after the cork, sends wake the connection at once again.
          ws.send('after');
        }, 10);
      },
    }),
  );
  t.after(() => server.close({ drainTimeout: 500 }));
  const client = await connect(url);
  const deadline = Date.now() + 5000;
  while (client.received.length < 101 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
  assert.deepEqual(
    client.received.map((m) => m.data.toString()),
    [...Array.from({ length: 100 }, (_, i) => `m${i}`), 'after'],
  );
  client.close();
});
