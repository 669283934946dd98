// Switchboard as an RPC peer (contract: ../../ADAPTERS.md): the Switchboard
// protocol on a raw TCP listener, handlers on the main thread.
//
//   PORT=0 node benchmarks/rpc/peers/switchboard/server.mjs
//
// Settings: one native I/O thread and the handlers on the main thread
// (`workers: 0`), so the whole server is two threads on the one pinned core,
// like the single-threaded peers; heartbeats off (the runs are short);
// `raw` codec (the client asks for it: payloads are Buffers, as for every
// peer); maxFrameSize 16 MiB (the 4 MiB payload fits in one frame, the
// default).
// Handlers:
//   tiny    the payload back (a view of the received bytes).
//   fast    returns FAST_CODE: a number becomes a FAST_REPLY frame.
//   upload  the payload is whole in memory already; answers its length.
//   file    reads the attached file chunk by chunk (credit flows back as it
//           reads), answers the byte count.
//   many    n − 1 non-final responses, then a last one.
//   notify  a one-way message; counts.
//   count   the count.
import { Server } from 'switchboard';
import { FAST_CODE, TINY } from '../../lib/wire.mjs';
import { HOST, listenPort, received, serve } from '../../lib/server.mjs';

const server = new Server({ workers: 0, ioThreads: 1, rpc: { heartbeatInterval: 0 } });
const rpc = server.rpc;
rpc.action('tiny', (call) => call.respondRaw(call.payload));
rpc.action('fast', () => FAST_CODE);
rpc.action('upload', (call) => call.payload.length);
rpc.action('file', async (call) => {
  let bytes = 0;
  for (const file of call.files) for await (const chunk of file.stream) bytes += chunk.length;
  return bytes;
});
rpc.action('many', (call) => {
  const n = Number(new TextDecoder().decode(call.payload));
  for (let i = 1; i < n; i++) call.respondRaw(TINY, { last: false });
  call.respondRaw(TINY);
});
rpc.action('notify', () => {
  received.notify++;
});
rpc.action('count', () => received.notify);

const [address] = await server.listen([{ host: HOST, port: listenPort(), protocol: 'rpc' }]);
serve(address.port, () => server.close({ drainTimeout: 500 }));
