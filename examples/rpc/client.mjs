// RPC example client: exercises every action of the example server
// (server.mjs, app.mjs) and prints what happens, one line per feature.
//
//   node examples/rpc/server.mjs               first, then:
//   node examples/rpc/client.mjs [url]
//
// url: tcp://127.0.0.1:8081 (the default; or $URL),
// tls://127.0.0.1:8082, unix:/tmp/switchboard-rpc-example.sock,
// ws://127.0.0.1:8080/rpc. Over tls:// it trusts the example's CA and
// presents the client certificate, both from the server's certificate
// directory (TLS_DIR, as for the server; see certs.mjs), and also shows
// SNI and a client without a certificate being refused.
// Exits with 1 (after saying why) if anything is not as expected.
import { createHash } from 'node:crypto';
import tls from 'node:tls';
import { RemoteError, connect, openStream } from 'switchboard-client/node';
import { SECOND_NAME, certificateDir, readCertificates } from './certs.mjs';

const url = process.argv[2] ?? process.env.URL ?? 'tcp://127.0.0.1:8081';
const overTls = url.startsWith('tls:');

function check(condition, what) {
  if (!condition) throw new Error(`unexpected: ${what}`);
}

function sha256(...parts) {
  const hash = createHash('sha256');
  for (const part of parts) hash.update(part);
  return hash.digest('hex');
}

/** The server's download pattern (app.mjs), to check what arrives. */
function pattern(size) {
  const out = Buffer.alloc(size);
  for (let i = 0; i < size; i++) out[i] = (i % (64 * 1024)) % 251;
  return out;
}

let welcome;
const welcomed = new Promise((resolve) => (welcome = resolve));
// Handlers of the server's calls, in place before the first connection
// (the server sends `server.welcome` as soon as it opens).
const handlers = {
  'server.welcome': (payload) => welcome(payload),
  'client.describe': (payload) => `a Node ${process.version} client (pid ${process.pid}), asked by ${payload.askedBy}`,
};

/**
 * Options for `tls.connect`: trust the example's CA, present the client
 * certificate (unless `anonymous`), and note the subject of the certificate
 * the server presented (`presented`) while checking it as usual.
 */
function tlsOptions({ servername, anonymous = false } = {}) {
  const certificates = readCertificates(certificateDir());
  const options = {
    ca: certificates.ca,
    checkServerIdentity(host, certificate) {
      options.presented = certificate.subject.CN;
      return tls.checkServerIdentity(host, certificate);
    },
  };
  if (!anonymous) Object.assign(options, certificates.client);
  if (servername) options.servername = servername; // else the URL's host name (none for an IP address)
  return options;
}

let client;
let mainTls;
try {
  if (overTls) mainTls = tlsOptions();
  client = await connect(url, { handlers, connectData: 'example-token', ...(overTls ? { tls: mainTls } : {}) });
} catch (error) {
  console.error(`cannot connect to ${url}: ${error.code} ${error.message} (is examples/rpc/server.mjs running?)`);
  process.exit(1);
}
try {
  const hello = await welcomed;
  console.log(`connected to ${url}: codec ${client.server.codec}, welcomed as connection ${hello.connection} on worker ${hello.worker} (${hello.transport})`);

  // A call with one response.
  const greeting = await client.call('greet', { name: 'Ada' });
  check(greeting.message === 'Hello, Ada!', 'greet');
  console.log(`call: greet → ${greeting.message}`);

  // A fast reply: a small integer, no payload encoding.
  const sum = await client.request('add', [40, 2]);
  check(sum.kind === 'fastReply' && sum.value === 42, 'add');
  console.log(`fast reply: add(40, 2) → ${sum.value} (${sum.kind})`);

  // Many responses to one call.
  const counted = [];
  for await (const value of client.callMany('countdown', 3)) counted.push(value);
  check(counted.join() === '3,2,1,liftoff', 'countdown');
  console.log(`many responses: countdown(3) → ${counted.join(', ')}`);

  // An error with a code and details, as a RemoteError.
  try {
    await client.call('divide', [1, 0]);
    check(false, 'divide by zero succeeded');
  } catch (error) {
    check(error instanceof RemoteError && error.code === 'E_DIVIDE_BY_ZERO', 'divide error');
    console.log(`error: divide(1, 0) → ${error.name} ${error.code} "${error.message}" ${JSON.stringify(error.details)}`);
  }

  // One-way messages: no answer, no state kept.
  for (const text of ['first', 'second', 'third']) client.notify('log', text);
  const stats = await client.call('stats'); // sent after the notes, dispatched after them
  check(stats.logs === 3 && stats.lastLog === 'third', 'one-way logs');
  console.log(`one-way: notify('log') ×3 → the server counted ${stats.logs}, last "${stats.lastLog}"`);

  // A stream with the call, written as we go.
  const writer = openStream();
  const uploading = client.call('upload', null, { stream: writer });
  const chunk = Buffer.alloc(64 * 1024, 7);
  for (let i = 0; i < 80; i++) await writer.write(chunk); // 5 MiB, within the server's credit
  writer.end();
  const uploaded = await uploading;
  check(uploaded.sha256 === sha256(...Array(80).fill(chunk)), 'upload hash');
  console.log(`stream: upload 5 MiB → the server read ${uploaded.size} bytes, sha256 ok`);

  // Files with the call.
  const text = Buffer.from('hello files');
  const binary = pattern(300_000);
  const files = await client.call('uploadFiles', null, {
    files: [
      { name: 'hello.txt', size: text.length, data: text },
      { name: 'pattern.bin', size: binary.length, data: binary },
    ],
  });
  check(files[0].sha256 === sha256(text) && files[1].sha256 === sha256(binary), 'file hashes');
  console.log(`files: uploadFiles → ${files.map((f) => `${f.name} ${f.size} bytes`).join(', ')}, sha256 ok`);

  // A file in the response.
  const response = await client.request('download', { size: 500_000 });
  const [file] = response.files;
  const received = await file.stream.readAll();
  check(file.size === 500_000 && sha256(received) === sha256(pattern(500_000)), 'download');
  console.log(`file download: ${file.name} ${file.size} bytes, sha256 ok`);

  // A stream in the response, written by the server over time.
  const tail = await client.request('tail', { lines: 3 });
  const lines = (await tail.stream.text()).trim().split('\n');
  check(lines.length === 3, 'tail');
  console.log(`stream download: tail → ${lines.join(' | ')}`);

  // The server calls the client (the `client.describe` handler above).
  const who = await client.call('whoAmI');
  check(who.youSaid.startsWith('a Node'), 'whoAmI');
  console.log(`server calls the client: whoAmI → the server heard "${who.youSaid}"`);

  // Remote objects: expose on the server, wrap here.
  const math = client.wrap({ prefix: 'math.' });
  const product = await math.mul(6, 7);
  const hypot = await math.hypot(3, 4);
  check(product === 42 && hypot === 5, 'math');
  console.log(`expose/wrap: math.mul(6, 7) → ${product}, math.hypot(3, 4) → ${hypot}`);

  // Cancellation and timeouts: the server handler's signal fires.
  const controller = new AbortController();
  setTimeout(() => controller.abort(), 50);
  const cancelled = await client.call('slow', { ms: 5000 }, { signal: controller.signal }).catch((error) => error.code);
  const timedOut = await client.call('slow', { ms: 5000 }, { timeoutMs: 50 }).catch((error) => error.code);
  const after = await client.call('stats');
  check(cancelled === 'ERR_CANCELLED' && timedOut === 'ERR_TIMEOUT' && after.cancelled === 2, 'cancellation');
  console.log(`cancellation: slow(5000) aborted → ${cancelled}, with timeoutMs 50 → ${timedOut}; the server saw ${after.cancelled} cancels`);

  // Channels: once subscribed, what anyone publishes to `feed` arrives as a
  // one-way message named after the channel: a post (published by the
  // action's worker) and the server's clock (published by its main thread).
  const feed = [];
  let fed;
  const feedWaiting = new Promise((resolve) => (fed = resolve));
  const mine = (item) => item.kind === 'post' && item.from === hello.connection;
  client.handle('feed', (item) => {
    feed.push(item);
    if (feed.some(mine) && feed.some((i) => i.kind === 'tick')) fed();
  });
  const joined = await client.call('feed.join');
  const reached = await client.call('feed.post', 'hello, feed');
  const timeout = setTimeout(fed, 5000); // at most: a tick comes every TICK_MS
  await feedWaiting;
  clearTimeout(timeout);
  const tick = feed.find((i) => i.kind === 'tick');
  check(joined === true && reached >= 1 && feed.some(mine) && tick !== undefined, `feed (received ${JSON.stringify(feed)})`);
  check(await client.call('feed.leave'), 'feed.leave');
  console.log(`channels: feed.join, feed.post → published to ${reached} subscriber(s); received "${feed.find(mine).text}" and the server's tick #${tick.n}`);

  if (overTls) {
    // TLS: which certificate the server chose for the name asked (SNI),
    // and client certificates required by the server.
    check(mainTls.presented === 'localhost' && hello.transport === 'tls', 'tls');
    const sniTls = tlsOptions({ servername: SECOND_NAME });
    const second = await connect(url, { tls: sniTls, reconnect: false });
    const secondStats = await second.call('stats');
    await second.close();
    check(sniTls.presented === SECOND_NAME && secondStats.transport === 'tls', 'SNI');
    // What the server's handlers see of it (connection.tls).
    const ours = await client.call('stats');
    check(ours.tls?.client === 'CN=example-client' && secondStats.tls?.serverName === SECOND_NAME, `connection.tls (${JSON.stringify([ours.tls, secondStats.tls])})`);
    // Refused in the handshake; with TLS 1.3 that may show only once the
    // client reads, hence the call.
    const refused = await connect(url, { tls: tlsOptions({ anonymous: true }), reconnect: false })
      .then((anonymous) => anonymous.call('stats', undefined, { timeoutMs: 2000 }).finally(() => anonymous.close()))
      .then(() => 'accepted', (error) => error.code);
    check(refused !== 'accepted', 'a client without a certificate was accepted');
    console.log(`tls: no SNI → CN=${mainTls.presented}, servername ${SECOND_NAME} → CN=${sniTls.presented} (both verified against the example CA); without a client certificate → refused (${refused})`);
    console.log(`tls, server side: the handlers saw the client certificate ${ours.tls.client}, and the SNI name ${secondStats.tls.serverName}`);
  }
} catch (error) {
  console.error(`FAILED over ${url}:`, error);
  process.exitCode = 1;
} finally {
  await client.close();
  console.log('closed');
}
