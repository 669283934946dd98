// The RPC example's app module, loaded in every worker thread (see
// server.mjs). It registers the actions that client.mjs and browser.html
// call, one per feature of the Switchboard protocol, and serves the browser
// page with the client's ES modules.
//
//   add [a, b]            a call answered with a fast reply (a small integer)
//   greet { name }        a call answered with one response
//   countdown n           many responses: n, n-1, … 1, then "liftoff"
//   divide [a, b]         an error with a code and details when b is 0
//   log text              one-way (client.notify): no answer
//   stats                 what this connection did so far (logs, cancels)
//   upload (stream)       reads a stream: its size and SHA-256
//   uploadFiles (files)   reads files: name, size and SHA-256 of each
//   download { size }     responds with a generated file of that size
//   tail { lines }        responds with a stream written line by line
//   whoAmI                the server calls the client (`client.describe`)
//   slow { ms }           waits, unless the caller cancels or times out
//   math.*                an object's methods, exposed (client: wrap)
//   feed.join             subscribes this connection to the channel `feed`
//   feed.post text        publishes { kind: 'post', text, from } to `feed`:
//                         the number of subscribers it reached
//   feed.leave            unsubscribes
//
// On connect the server sends the client a one-way `server.welcome`.
// Whatever is published to `feed` (here, and server.mjs's clock) reaches
// each subscriber as a one-way message `feed` (client.handle('feed', fn)).
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { RpcError, defineApp, openStream } from 'switchboard';
import { msgpackCodec } from 'switchboard-rpc';

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** `size` bytes of a simple repeating pattern, generated chunk by chunk. */
function* pattern(size) {
  const block = Buffer.alloc(64 * 1024);
  for (let i = 0; i < block.length; i++) block[i] = i % 251;
  for (let sent = 0; sent < size; sent += block.length) yield block.subarray(0, Math.min(block.length, size - sent));
}

/** Reads a stream to its end: its size and SHA-256. */
async function digest(stream) {
  const hash = createHash('sha256');
  let size = 0;
  for await (const chunk of stream) {
    hash.update(chunk);
    size += chunk.length;
  }
  return { size, sha256: hash.digest('hex') };
}

/** The exposed object: `math.mul`, `math.hypot`… (names starting with `_` stay private). */
const math = {
  mul: (a, b) => a * b,
  hypot: (...values) => Math.hypot(...values),
  mean(...values) {
    if (values.length === 0) throw new RpcError('E_EMPTY', 'the mean of nothing');
    return values.reduce((sum, v) => sum + v, 0) / values.length;
  },
};

export default defineApp((app) => {
  const log = process.env.LOG === '1';

  app.rpc
    // Middleware: runs around every call and one-way message, in order.
    .use(async (call, next) => {
      const started = performance.now();
      try {
        return await next();
      } finally {
        if (log) console.log(`[worker ${app.workerIndex}] ${call.action} ${(performance.now() - started).toFixed(1)} ms`);
      }
    })
    .action('add', (call) => {
      const [a, b] = call.decode();
      return a + b; // a non-negative integer: sent as a FAST_REPLY
    })
    .action('greet', (call) => {
      const { name } = call.decode();
      return { message: `Hello, ${name}!`, worker: app.workerIndex };
    })
    .action('countdown', (call) => {
      for (let n = call.decode(); n > 0; n--) call.respond(n, { last: false });
      return 'liftoff'; // the last response
    })
    .action('divide', (call) => {
      const [a, b] = call.decode();
      if (b === 0) throw new RpcError('E_DIVIDE_BY_ZERO', `cannot divide ${a} by zero`, { details: { dividend: a } });
      return a / b;
    })
    .action('log', (call) => {
      call.connection.data.logs.push(call.decode()); // one-way: the return value goes nowhere
    })
    .action('stats', (call) => {
      const { logs, cancelled } = call.connection.data;
      // Over TLS: the name the client asked for (SNI) and its verified certificate.
      const tls = call.connection.tls && {
        serverName: call.connection.tls.serverName ?? null,
        client: call.connection.tls.peerCertificate?.subject ?? null,
      };
      return { logs: logs.length, lastLog: logs.at(-1) ?? null, cancelled, transport: call.connection.transport, worker: app.workerIndex, tls };
    })
    .action('upload', (call) => digest(call.stream))
    .action('uploadFiles', async (call) => {
      const out = [];
      for (const file of call.files) out.push({ name: file.name, declared: file.size, ...(await digest(file.stream)) });
      return out;
    })
    .action('download', (call) => {
      const { size } = call.decode();
      call.respond({ size }, { files: [{ name: 'download.bin', size, data: pattern(size) }] });
    })
    .action('tail', async (call) => {
      const writer = openStream();
      call.respond('tailing', { stream: writer });
      for (let i = 1; i <= call.decode().lines; i++) {
        await sleep(10);
        await writer.write(`line ${i}\n`);
      }
      writer.end();
    })
    .action('whoAmI', async (call) => {
      // The server calls the client back on the same connection.
      const answer = await call.connection.call('client.describe', { askedBy: `worker ${app.workerIndex}` });
      return { youSaid: answer };
    })
    .action('slow', async (call) => {
      const { ms } = call.decode();
      await new Promise((resolve) => {
        const timer = setTimeout(resolve, ms);
        call.signal.addEventListener('abort', () => {
          clearTimeout(timer);
          call.connection.data.cancelled += 1;
          resolve();
        });
      });
      return call.signal.aborted ? undefined : `waited ${ms} ms`;
    })
    .expose(math, { prefix: 'math.' })
    // Channels: a publish is framed once, natively, for every subscriber,
    // and goes out as published: no per-connection encoding. So the feed
    // is MessagePack (what the Node client and the page negotiate by
    // default), and a connection with another codec is refused.
    .action('feed.join', (call) => {
      if (call.connection.codec !== 'msgpack') {
        throw new RpcError('ERR_UNSUPPORTED_CODEC', `the feed is published as msgpack, this connection speaks ${call.connection.codec}`);
      }
      return call.connection.subscribe('feed');
    })
    .action('feed.post', (call) => {
      const item = { kind: 'post', text: String(call.decode()), from: call.connection.id };
      return app.publish('feed', msgpackCodec.encode(item)); // the recipients, this one included if subscribed
    })
    .action('feed.leave', (call) => call.connection.unsubscribe('feed'));

  app.rpc.onOpen((connection) => {
    connection.data = { logs: [], cancelled: 0 };
    connection.notify('server.welcome', { connection: connection.id, worker: app.workerIndex, transport: connection.transport });
  });

  // The protocol over WebSocket for browsers (subprotocol switchboard.v1).
  app.ws('/rpc', { rpc: true });

  // The page, and the client's modules for its import map.
  app.get('/', { body: readFileSync(new URL('./browser.html', import.meta.url)) });
  const packageDir = (specifier) => path.dirname(fileURLToPath(import.meta.resolve(specifier)));
  serveModules(app, '/modules/client/', packageDir('switchboard-client'));
  serveModules(app, '/modules/protocol/', packageDir('switchboard-rpc'));
  // msgpackr's browser entry and the modules it imports.
  serveModules(app, '/modules/msgpackr/', packageDir('msgpackr'), ['index.js', 'pack.js', 'unpack.js', 'iterators.js']);
});

/** Serves the `.js` files under `dir` (or just `only`) at `prefix` + their relative path. */
function serveModules(app, prefix, dir, only) {
  const files = only ?? readdirSync(dir, { recursive: true }).filter((name) => name.endsWith('.js'));
  for (const relative of files) {
    const body = readFileSync(path.join(dir, relative));
    app.get(prefix + relative.split(path.sep).join('/'), { body, contentType: 'text/javascript; charset=utf-8' });
  }
}
