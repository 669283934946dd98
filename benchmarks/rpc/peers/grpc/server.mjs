// gRPC as an RPC peer (contract: ../../ADAPTERS.md): @grpc/grpc-js 1.14.7
// (pure JavaScript, on Node's http2), one process, Node's main thread.
// The service is hand-written with Buffer messages (./service.mjs): no
// protobuf cost.
//
//   PORT=0 node benchmarks/rpc/peers/grpc/server.mjs
//
//   Tiny    unary, answers the request's bytes.
//   Fast    unary, answers an empty message: gRPC has no integer reply; its
//           smallest response is HEADERS, an empty length-prefixed message
//           and the status trailers.
//   Upload  unary, the payload whole in one message; answers its length.
//   File    client streaming of 64 KiB chunks, each only counted; answers the count.
//   Many    server streaming: N messages of 16 bytes.
//   Notify  client streaming, held open by the client: each message is a one-way message; counted.
//   Count   unary, the one-way count.
// Settings: max send/receive message length 16 MiB (the 4 MiB default
// refuses a 4 MiB payload once framed). grpc-js exposes no setting for the
// server's HTTP/2 flow-control window, so uploads run with Node's 64 KiB
// stream window (README.md). Keepalive pings: grpc-js's defaults (off for
// the client, 2 h for the server).
import grpc from '@grpc/grpc-js';
import { MAX_MESSAGE, TINY } from '../../lib/wire.mjs';
import { HOST, listenPort, received, serve } from '../../lib/server.mjs';
import { service } from './service.mjs';

const EMPTY = Buffer.alloc(0);
const ascii = (n) => Buffer.from(String(n));

const server = new grpc.Server({
  'grpc.max_receive_message_length': MAX_MESSAGE,
  'grpc.max_send_message_length': MAX_MESSAGE,
});

server.addService(service, {
  tiny: (call, cb) => cb(null, call.request),
  fast: (call, cb) => cb(null, EMPTY),
  upload: (call, cb) => cb(null, ascii(call.request.length)),
  file: (call, cb) => {
    let n = 0;
    call.on('data', (chunk) => (n += chunk.length));
    call.on('end', () => cb(null, ascii(n)));
    call.on('error', () => {});
  },
  many: (call) => {
    const n = Number(call.request.toString());
    for (let i = 0; i < n; i++) call.write(TINY);
    call.end();
  },
  notify: (call, cb) => {
    call.on('data', () => {
      received.notify++;
    });
    call.on('end', () => cb(null, EMPTY));
    call.on('error', () => {});
  },
  count: (call, cb) => cb(null, ascii(received.notify)),
});

server.bindAsync(`${HOST}:${listenPort()}`, grpc.ServerCredentials.createInsecure(), (err, port) => {
  if (err) {
    process.stderr.write(`bind failed: ${err.message}\n`);
    process.exit(1);
  }
  serve(port, () => server.forceShutdown());
});
