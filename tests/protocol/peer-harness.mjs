// The harness of the peer tests: two Peers joined by an in-memory transport
// that really encodes and decodes (each write goes through FrameDecoder, in
// random small chunks when asked), and small async helpers.
import assert from 'node:assert/strict';
import * as P from '../../packages/rpc/dist/index.js';

export const settings = (overrides = {}) => ({
  seed: P.randomSeed(),
  maxFrameSize: 64 * 1024,
  initialWindow: 64 * 1024,
  maxConcurrentCalls: 100,
  features: P.ALL_FEATURES,
  ...overrides,
});

/**
 * Two peers, `a` and `b`, connected back to back. Every frame written is
 * logged (`log.a` = frames a sent) and delivered asynchronously, in chunks
 * of 1…`chunk` bytes when `chunk` is set.
 */
export function connect({ a = {}, b = {}, codec = P.jsonCodec, chunk = 0, peerA = {}, peerB = {} } = {}) {
  const sa = settings(a);
  const sb = settings(b);
  const log = { a: [], b: [] };
  const writes = { a: 0, b: 0 };
  let alive = true;
  const peers = {};
  const link = (from, to, limit) => {
    const decoder = new P.FrameDecoder({ maxFrameSize: limit });
    const queue = [];
    let scheduled = false;
    const drain = () => {
      scheduled = false;
      while (alive && queue.length > 0) {
        decoder.push(queue.shift());
        for (let frame = decoder.next(); frame !== null; frame = decoder.next()) {
          log[from].push(frame);
          peers[to].receive(frame);
        }
      }
    };
    return (bytes) => {
      assert.ok(alive, `${from} wrote after the connection closed`);
      writes[from] += 1;
      const copy = bytes.slice();
      if (chunk > 0) {
        for (let i = 0; i < copy.length; ) {
          const n = 1 + Math.floor(Math.random() * chunk);
          queue.push(copy.subarray(i, i + n));
          i += n;
        }
      } else {
        queue.push(copy);
      }
      if (!scheduled) {
        scheduled = true;
        setImmediate(drain);
      }
    };
  };
  peers.a = new P.Peer({ local: sa, remote: sb, codec, write: link('a', 'b', sb.maxFrameSize), ...peerA });
  peers.b = new P.Peer({ local: sb, remote: sa, codec, write: link('b', 'a', sa.maxFrameSize), ...peerB });
  return {
    a: peers.a,
    b: peers.b,
    log,
    writes,
    sent: (side, type) => log[side].filter((f) => f.type === type),
    /** The transport dies: both peers see it. */
    disconnect(error = new Error('connection reset')) {
      alive = false;
      peers.a.close(error);
      peers.b.close(error);
    },
  };
}

export const tick = () => new Promise((resolve) => setImmediate(resolve));
export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
export async function until(predicate, what = 'condition', ms = 2000) {
  const end = Date.now() + ms;
  while (!predicate()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await tick();
  }
}
export function deferred() {
  let resolve, reject;
  const promise = new Promise((res, rej) => ((resolve = res), (reject = rej)));
  return { promise, resolve, reject };
}
export const rejectsWith = (promise, code) => assert.rejects(promise, (e) => (assert.equal(e.code, code, e.stack), true));
export const idle = (peer) => {
  const s = peer.stats();
  return s.pendingCalls + s.queuedCalls + s.incomingCalls + s.runningHandlers + s.inboundStreams + s.outboundStreams === 0;
};
