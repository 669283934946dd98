// The client side of the `grpc` peer (contract: ../../ADAPTERS.md):
// @grpc/grpc-js, a client built from the hand-written service
// (./service.mjs) with makeGenericClientConstructor. Each connect() gets its
// own channel *and* its own TCP connection ('grpc.use_local_subchannel_pool':
// grpc-js otherwise shares one connection between channels to the same
// address). Calls are HTTP/2 streams multiplexed on it.
// one-way: one client-streaming Notify call per connection, held open; each
// write() is a message, and write()'s false return waits for 'drain'.
// Files: client streaming in 64 KiB messages, from the Buffer or from an fs
// read stream with 64 KiB reads.
//
// One setting besides the message size limits: 'grpc.per_rpc_retry_buffer_size'
// 16 KiB (default 256 KiB). grpc-js keeps each message of a call in a retry
// buffer until it is sent, acknowledges write() at once while the buffer has
// room, and trims the buffer with a copy of what is left after every message
// sent. A client stream of small messages (one-way here) thus builds a
// backlog of thousands and spends its time copying it: about 3 k messages/s
// with the default, 80-90 k with 16 KiB on this machine. A smaller buffer
// only limits how much of a call could be replayed on a transparent retry,
// which never happens on loopback. Unary calls and 64 KiB file chunks are
// not measurably affected.
import { createReadStream } from 'node:fs';
import { once } from 'node:events';
import grpc from '@grpc/grpc-js';
import { MANY_RESPONSES, MAX_MESSAGE } from '../../lib/wire.mjs';
import { FILE_CHUNK, service } from './service.mjs';

const Client = grpc.makeGenericClientConstructor(service, 'Bench');
const RETRY_BUFFER = 16 * 1024;
const EMPTY = Buffer.alloc(0);

export async function connect({ host, port }) {
  const client = new Client(`${host}:${port}`, grpc.credentials.createInsecure(), {
    'grpc.use_local_subchannel_pool': 1,
    // See the header: without this a long client stream slows to a crawl.
    'grpc.per_rpc_retry_buffer_size': RETRY_BUFFER,
    'grpc.max_receive_message_length': MAX_MESSAGE,
    'grpc.max_send_message_length': MAX_MESSAGE,
  });
  await new Promise((resolve, reject) =>
    client.waitForReady(Date.now() + 10_000, (err) => (err ? reject(err) : resolve())),
  );

  const unary = (name, req) =>
    new Promise((resolve, reject) => client[name](req, (err, res) => (err ? reject(err) : resolve(res))));

  /** A client-streaming call fed by `chunks` (an iterable or async iterable of Buffers). */
  const upstream = (name, chunks) =>
    new Promise((resolve, reject) => {
      const call = client[name]((err, res) => (err ? reject(err) : resolve(Number(res.toString()))));
      (async () => {
        for await (const chunk of chunks) if (!call.write(chunk)) await once(call, 'drain');
        call.end();
      })().catch((err) => {
        call.cancel();
        reject(err);
      });
    });

  function* slices(buf) {
    for (let i = 0; i < buf.length; i += FILE_CHUNK) yield buf.subarray(i, i + FILE_CHUNK);
  }

  let notifyCall = null;
  const conn = {
    call: (payload) => unary('tiny', payload),
    // No integer reply in gRPC: the call's status (OK = 0) is the integer.
    fast: async () => (await unary('fast', EMPTY), grpc.status.OK),
    upload: async (payload) => Number((await unary('upload', payload)).toString()),
    uploadFile: (source) =>
      upstream('file', source.path ? createReadStream(source.path, { highWaterMark: FILE_CHUNK }) : slices(source.buffer)),
    many: (n = MANY_RESPONSES) =>
      new Promise((resolve, reject) => {
        let got = 0;
        const call = client.many(Buffer.from(String(n)));
        call.on('data', () => got++);
        call.on('end', () => resolve(got));
        call.on('error', reject);
      }),
    notify(payload) {
      notifyCall ??= client.notify(() => {});
      return notifyCall.write(payload);
    },
    drain: () => once(notifyCall, 'drain'),
    count: async () => Number((await unary('count', EMPTY)).toString()),
    close: async () => {
      notifyCall?.end();
      client.close();
    },
  };
  return conn;
}
