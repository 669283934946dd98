// The client side of the `switchboard` peer (contract: ../../ADAPTERS.md):
// switchboard-client over TCP, one connection per connect(), calls
// multiplexed on it (any completion order).
//
// Settings: `raw` codec only (payloads and responses are the bytes as they
// are, Buffers in and Uint8Arrays out, like every peer's); heartbeats off
// (the client asks for none and the server has them off); reconnecting off
// (a lost connection fails the run instead of being papered over); no call
// timeouts (no timer per call); Nagle off (the client's default for tcp://).
// `new Client({ transport })` and `await client.ready` are what
// `connect('tcp://…')` does; the adapter spells them out to keep the
// transport (see notify()).
//
// - ping()       client.ping(): a HEARTBEAT ping and the server's pong,
//                answered by the server's native core (no JavaScript there).
// - notify()     a one-way MESSAGE. The client has no drain event: the
//                adapter opens the connection through its own factory around
//                tcpTransport() (the client's public Transport interface) to
//                read the socket's unsent bytes (`bufferedAmount`). notify
//                returns false past 16 KiB unsent (Node's own write()
//                threshold); drain() then polls every millisecond until the
//                buffer is empty (the kernel's socket buffer, full at that
//                point, keeps the server busy meanwhile).
// - fast()       the `fast` action answers with a FAST_REPLY: the call
//                resolves to the integer.
// - call()       the 16 bytes as the payload; the response's bytes back.
// - upload()     the whole payload in the MESSAGE (one frame); the server's
//                answer (its length) is a FAST_REPLY.
// - uploadFile() a file attachment (STREAM_OPEN with name and size, then
//                STREAM_DATA under the server's credit): from the Buffer for
//                memory, fileFromPath() (fs.createReadStream, 64 KiB reads)
//                for disk.
// - many(n)      callMany with n as decimal text; counts the responses.
import { Client, fileFromPath, rawCodec, tcpTransport } from 'switchboard-client/node';

/** Unsent bytes in the socket beyond which notify() says wait (Node's default writable highWaterMark). */
const HIGH_WATER = 16 * 1024;

export async function connect({ host, port }) {
  const factory = tcpTransport(host, port, { noDelay: true });
  let transport = null;
  const client = new Client({
    transport: (handlers) => (transport = factory(handlers)),
    codecs: [rawCodec],
    heartbeatMs: 0,
    reconnect: false,
  });
  await client.ready;

  const drain = () =>
    new Promise((resolve) => {
      const check = () => (transport.bufferedAmount === 0 || client.state !== 'open' ? resolve() : setTimeout(check, 1));
      check();
    });

  return {
    ping: () => client.ping(),
    notify: (payload) => {
      client.notify('notify', payload);
      return transport.bufferedAmount < HIGH_WATER;
    },
    drain,
    count: () => client.call('count'),
    fast: () => client.call('fast'),
    call: (payload) => client.call('tiny', payload),
    upload: (payload) => client.call('upload', payload),
    uploadFile: async (source) => {
      const file = source.path
        ? await fileFromPath(source.path)
        : { name: 'file.bin', size: source.buffer.length, data: source.buffer };
      return client.call('file', undefined, { files: [file] });
    },
    many: async (n) => {
      let got = 0;
      for await (const _ of client.callMany('many', String(n))) got++;
      return got;
    },
    close: () => client.close({ timeoutMs: 1000 }),
  };
}
