// The peers of the RPC suite: one entry per adapter folder under ../peers/
// (ADAPTERS.md). The runner starts `entry` as the server (pinned, PORT=0,
// `LISTENING <port>`), and the driver imports `client` in the load process.
//
// Order matters: the tables show the peers in this order, and a peer named
// `switchboard`, when present, is the reference of the "vs X" ratio columns.
// Switchboard's entry goes first (ADAPTERS.md, "Switchboard's adapter").
//
// Fields:
//   name         what --peer takes; the folder under peers/
//   label/short  name in prose / column heading
//   protocol     what goes over the wire
//   entry        the server script, relative to the repository root
//   client       the client adapter, relative to the repository root
//   packages     npm packages whose installed versions describe the peer
//                (server library first, then the client's), read from
//                benchmarks/node_modules at run time
//   env          the server's environment (besides PORT)
//   settings     the non-default settings, in a few words (each script's header explains them)
//   unsupported  scenario → why the peer has no equivalent (the run is
//                skipped and results.md says why)
//   mappings     scenario → how the peer does it, when that needs saying
const dir = (name) => `benchmarks/rpc/peers/${name}`;

export const PEERS = [
  {
    name: 'switchboard',
    label: 'Switchboard',
    short: 'Switchboard',
    protocol: 'Switchboard protocol v1 over TCP (binary frames, calls multiplexed on one connection)',
    entry: `${dir('switchboard')}/server.mjs`,
    client: `${dir('switchboard')}/client.mjs`,
    // `ours`: report Switchboard's version and commit.
    packages: [],
    ours: true,
    env: {},
    settings: 'server: workers 0 (handlers on the main thread), one native I/O thread, heartbeats off; client: switchboard-client, raw codec, no reconnect, no call timeouts, Nagle off',
    unsupported: {},
    mappings: {
      heartbeat: 'client.ping(): a HEARTBEAT frame, answered by the server\'s native core (no JavaScript)',
      'one-way': 'client.notify(): a one-way MESSAGE; false past 16 KiB unsent in the socket (read through the transport), drain() polls every 1 ms (the client has no drain event)',
      'fast-reply': 'the handler returns 200: a FAST_REPLY frame, the call resolves to the integer',
      'tiny-response': 'the 16 B as the raw payload of a MESSAGE, the same bytes back in a RESPONSE',
      'payload-1mib/4mib': 'the payload in the MESSAGE (one frame); the length back as a FAST_REPLY',
      'file-1mib-memory': 'a file attachment (STREAM_OPEN + STREAM_DATA under credit) from the Buffer; the server reads the stream',
      'file-1mib-disk': 'a file attachment from fileFromPath() (fs.createReadStream, 64 KiB reads)',
      'many-responses': 'callMany(): 99 non-final RESPONSE frames and a last one',
    },
  },
  {
    name: 'http',
    label: 'Node http (HTTP/1.1)',
    short: 'http',
    protocol: 'HTTP/1.1 (keep-alive; pipelined when several calls are in flight on a connection)',
    entry: `${dir('http')}/server.mjs`,
    client: `${dir('http')}/client.mjs`,
    packages: ['undici'],
    node: true,
    settings: 'keep-alive 60 s, Nagle off; client: undici Client per connection, pipelining = calls in flight',
    unsupported: {
      heartbeat: 'HTTP/1.1 has no ping',
      'one-way': 'HTTP has no fire-and-forget message: every request gets a response',
    },
    mappings: {
      'fast-reply': 'GET answered by status 200 with an empty body (the status code is the integer)',
      'tiny-response': 'POST of 16 B, the 16 B back',
      'payload-1mib/4mib': 'POST body read whole into a Buffer on the server',
      'file-1mib-memory': 'POST body from a Buffer, consumed chunk by chunk on the server',
      'file-1mib-disk': 'POST body streamed from fs.createReadStream, consumed chunk by chunk',
      parallel: 'in flight on one connection = HTTP/1.1 pipelining (undici), answered in order',
      'many-responses': 'a chunked response of 100 writes of 16 B; counted by bytes (a body has no message boundaries)',
    },
  },
  {
    name: 'http2',
    label: 'Node http2 (h2c)',
    short: 'http2',
    protocol: 'HTTP/2 over cleartext TCP, one session per connection, a stream per call',
    entry: `${dir('http2')}/server.mjs`,
    client: `${dir('http2')}/client.mjs`,
    packages: [],
    node: true,
    settings: '1 MiB stream and 16 MiB connection flow-control windows both ways, maxSessionMemory 64 MB, Nagle off',
    unsupported: {
      'one-way': 'HTTP/2 has no fire-and-forget message: every stream gets a response',
    },
    mappings: {
      heartbeat: 'session.ping(): a PING frame, acknowledged by nghttp2 without JavaScript',
      'fast-reply': 'HEADERS :status 200 with END_STREAM, no body',
      'file-1mib-disk': 'fs.createReadStream piped into the request stream',
      'many-responses': '100 DATA writes of 16 B on one response stream; counted by bytes',
    },
  },
  {
    name: 'qrpc',
    label: 'qrpc',
    short: 'qrpc',
    protocol: 'newline-delimited JSON over TCP (Buffers base64-encoded inside)',
    entry: `${dir('qrpc')}/server.mjs`,
    client: `${dir('qrpc')}/client.mjs`,
    packages: ['qrpc'],
    settings: 'Nagle off both ways (as its README advises); listens on 127.0.0.1 via QrpcServer + net',
    unsupported: {
      heartbeat: 'qrpc has no ping',
    },
    mappings: {
      'one-way': 'a call without callback to an addHandlerNoResponse endpoint; the sender waits for the socket\'s drain',
      'fast-reply': 'next(null, 200): a number in the JSON reply',
      'tiny-response': 'the 16 B as a string in the JSON envelope',
      'payload-1mib/4mib': 'a Buffer argument (base64 inside the JSON line)',
      'file-1mib-memory': 'no streams in qrpc: the file as one Buffer argument, as payload-1mib',
      'file-1mib-disk': 'no streams in qrpc: fs.readFile, then one Buffer argument',
      'many-responses': 'qrpc\'s own multi-response call: 99 res.write() and a final next()',
    },
  },
  {
    name: 'socketio',
    label: 'Socket.IO (acks)',
    short: 'Socket.IO',
    protocol: 'Socket.IO 5 / Engine.IO 4 over WebSocket, events with acknowledgements',
    entry: `${dir('socketio')}/server.mjs`,
    client: `${dir('socketio')}/client.mjs`,
    packages: ['socket.io', 'socket.io-client', 'engine.io', 'engine.io-client', 'ws'],
    settings: 'websocket transport only, perMessageDeflate off, ws engine, maxHttpBufferSize 16 MiB; client forceNew',
    unsupported: {
      heartbeat: 'Socket.IO has no ping the client can send (Engine.IO\'s heartbeat is the server\'s, on its own timer)',
    },
    mappings: {
      'one-way': 'emit without ack; an acknowledged count every 1,000 messages bounds the sender (no drain signal)',
      'fast-reply': 'ack(200)',
      'tiny-response': 'emit with the 16 B as a string, ack with it',
      'payload-1mib/4mib': 'a Buffer argument (a binary attachment: one more WebSocket frame)',
      'file-1mib-memory': 'no streams in Socket.IO: the file as one Buffer argument, as payload-1mib',
      'file-1mib-disk': 'no streams in Socket.IO: fs.readFile, then one Buffer argument',
      'many-responses': '100 emits of an event carrying the call\'s id (no multi-response ack)',
    },
  },
  {
    name: 'grpc',
    label: 'gRPC (grpc-js)',
    short: 'gRPC',
    protocol: 'gRPC over HTTP/2 (h2c), hand-written service of raw Buffers (no protobuf)',
    entry: `${dir('grpc')}/server.mjs`,
    client: `${dir('grpc')}/client.mjs`,
    packages: ['@grpc/grpc-js'],
    settings: 'raw Buffer messages, max message 16 MiB; client: local subchannel pool (a connection per client), per-call retry buffer 16 KiB',
    unsupported: {
      heartbeat: 'grpc-js has no ping the application can send (keepalive pings are internal, on a timer)',
    },
    mappings: {
      'one-way': 'one long client-streaming call; each message is a one-way message',
      'fast-reply': 'unary call answered by an empty message (gRPC has no integer reply); the status OK is the integer',
      'payload-1mib/4mib': 'unary call, the payload in one message',
      'file-1mib-memory': 'client streaming, 64 KiB messages',
      'file-1mib-disk': 'client streaming, 64 KiB reads of fs.createReadStream',
      'many-responses': 'server streaming, 100 messages',
    },
  },
];

export const PEER_NAMES = PEERS.map((p) => p.name);

export function peerByName(name) {
  const p = PEERS.find((x) => x.name === name);
  if (!p) throw new Error(`unknown RPC peer "${name}" (known: ${PEER_NAMES.join(', ')})`);
  return p;
}
