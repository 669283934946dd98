// The client side of the `socketio` peer (contract: ../../ADAPTERS.md):
// socket.io-client 4.8.4 (engine.io-client on ws), WebSocket transport
// only, `forceNew` so that each connect() is its own connection (the
// client would otherwise share one Manager per URL), no reconnection.
// A call is emit(event, ..., ack). one-way is an emit without ack.
//
// one-way flow control: socket.io-client exposes no write-buffer signal
// (emits are queued without bound), so after every 1,000 one-way messages the
// adapter emits an acknowledged `count` and lets the sender run at most one
// such batch ahead of the last acknowledged one: memory stays bounded and
// the pipe stays full. The server dispatches in order, so an acknowledged
// count also means every earlier message was received.
import { readFile } from 'node:fs/promises';
import { io } from 'socket.io-client';
import { MANY_RESPONSES } from '../../lib/wire.mjs';

const BATCH = 1000;

export async function connect({ host, port }) {
  const socket = io(`http://${host}:${port}`, {
    transports: ['websocket'],
    forceNew: true,
    reconnection: false,
    perMessageDeflate: false,
  });
  await new Promise((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('connect_error', reject);
  });

  const ask = (event, ...args) => new Promise((resolve) => socket.emit(event, ...args, resolve));

  // many: calls by id, each waiting for its n events.
  const pending = new Map();
  let nextId = 0;
  socket.on('r', (id) => {
    const p = pending.get(id);
    if (p && ++p.got === p.n) {
      pending.delete(id);
      p.resolve(p.got);
    }
  });
  socket.on('disconnect', (reason) => {
    for (const p of pending.values()) p.reject(new Error(`disconnected: ${reason}`));
    pending.clear();
  });

  let unacked = 0;
  let sync = null; // the acknowledged count of the previous batch, while outstanding

  return {
    call: (payload) => ask('tiny', payload.toString('latin1')),
    fast: () => ask('fast'),
    upload: (payload) => ask('upload', payload),
    uploadFile: async (source) => ask('file', source.path ? await readFile(source.path) : source.buffer),
    many: (n = MANY_RESPONSES) =>
      new Promise((resolve, reject) => {
        const id = ++nextId;
        pending.set(id, { n, got: 0, resolve, reject });
        socket.emit('many', id, n);
      }),
    notify(payload) {
      socket.emit('notify', payload.toString('latin1'));
      if (++unacked < BATCH) return true;
      unacked = 0;
      // One batch may be in flight unacknowledged; a second one waits for it.
      const busy = sync !== null;
      const previous = sync;
      const mine = ask('count').then(() => {
        if (sync === mine) sync = null;
      });
      sync = mine;
      if (!busy) return true;
      this._wait = previous;
      return false;
    },
    drain() {
      const w = this._wait;
      this._wait = null;
      return w ?? Promise.resolve();
    },
    count: () => ask('count'),
    close: async () => {
      socket.disconnect();
    },
  };
}
