// A bare NATS client speaking the text protocol over a socket (CONNECT,
// PUB, SUB, PING; MSG in): enough for a test to publish exactly the bytes
// it means on any subject, and to watch what nodes say, with nothing of
// Switchboard's code in between.
import net from 'node:net';
import { once } from 'node:events';

/** Connect to `server` (a NatsServer); `t.after` closes the socket. */
export async function natsWire(t, server) {
  const socket = net.connect(server.port, '127.0.0.1');
  await once(socket, 'connect');
  t.after(() => socket.destroy());
  let buffer = Buffer.alloc(0);
  let nextSid = 0;
  const subscriptions = new Map();
  const pongs = [];

  /** One whole protocol line or message at the head of `buffer`, or null. */
  function take() {
    const end = buffer.indexOf('\r\n');
    if (end < 0) return null;
    const line = buffer.subarray(0, end).toString();
    const [op, ...args] = line.split(' ');
    if (op !== 'MSG') {
      buffer = buffer.subarray(end + 2);
      return { op };
    }
    // MSG <subject> <sid> [reply-to] <#bytes>
    const size = Number(args.at(-1));
    if (buffer.length < end + 2 + size + 2) return null;
    const payload = Buffer.from(buffer.subarray(end + 2, end + 2 + size));
    buffer = buffer.subarray(end + 2 + size + 2);
    return { op, subject: args[0], sid: args[1], reply: args.length === 4 ? args[2] : null, payload };
  }

  socket.on('data', (chunk) => {
    buffer = Buffer.concat([buffer, chunk]);
    for (let item = take(); item; item = take()) {
      if (item.op === 'PING') socket.write('PONG\r\n');
      else if (item.op === 'PONG') pongs.shift()?.();
      else if (item.op === 'MSG') subscriptions.get(item.sid)?.(item);
    }
  });

  const client = {
    /** Publish `payload` (a Buffer or a string) to `subject`. */
    publish(subject, payload, reply) {
      const bytes = Buffer.from(payload);
      socket.write(`PUB ${subject}${reply ? ` ${reply}` : ''} ${bytes.length}\r\n`);
      socket.write(Buffer.concat([bytes, Buffer.from('\r\n')]));
    },
    /**
     * Subscribe; the messages that arrive, `{ subject, reply, payload }`
     * each, also handed to `onMessage` as they come.
     */
    subscribe(subject, onMessage = () => {}) {
      const sid = String(++nextSid);
      const received = [];
      subscriptions.set(sid, (message) => {
        received.push(message);
        onMessage(message);
      });
      socket.write(`SUB ${subject} ${sid}\r\n`);
      return received;
    },
    /** Resolves once the server processed everything written before. */
    flush() {
      const pong = new Promise((resolve) => pongs.push(resolve));
      socket.write('PING\r\n');
      return pong;
    },
  };
  socket.write(`CONNECT ${JSON.stringify({ verbose: false, pedantic: false, name: 'test-wire' })}\r\n`);
  await client.flush();
  return client;
}
