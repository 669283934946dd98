// The client side of the `http2` peer (contract: ../../ADAPTERS.md): Node's
// http2.connect, one session (one TCP connection) per connect(), every call
// a stream on it, as many streams in flight as the scenario asks.
// ping() is session.ping(): an HTTP/2 PING frame and its ACK.
// Settings mirror the server's: 1 MiB stream window, 16 MiB connection
// window, maxSessionMemory 64 MB, Nagle off.
import { createReadStream } from 'node:fs';
import http2 from 'node:http2';
import net from 'node:net';
import { FAST_CODE, MiB } from '../../lib/wire.mjs';

const { HTTP2_HEADER_METHOD: METHOD, HTTP2_HEADER_PATH: PATH, HTTP2_HEADER_STATUS: STATUS } = http2.constants;

export async function connect({ host, port }) {
  const session = http2.connect(`http://${host}:${port}`, {
    settings: { initialWindowSize: MiB },
    maxSessionMemory: 64,
    createConnection: () => net.connect({ host, port, noDelay: true }),
  });
  session.on('error', () => {});
  await new Promise((resolve, reject) => {
    session.once('connect', resolve);
    session.once('error', reject);
  });
  session.setLocalWindowSize(16 * MiB);

  /** One stream: send headers (and body), collect the response. `collect`: 'buffer' | 'bytes' | 'none'. */
  function stream(headers, body, collect) {
    return new Promise((resolve, reject) => {
      const req = session.request(headers, { endStream: body === undefined });
      let status = 0;
      const chunks = [];
      let bytes = 0;
      req.on('response', (h) => (status = h[STATUS]));
      if (collect === 'none') req.resume();
      else
        req.on('data', (c) => {
          bytes += c.length;
          if (collect === 'buffer') chunks.push(c);
        });
      req.on('end', () => {
        if (status !== 200) return reject(new Error(`HTTP/2 status ${status}`));
        resolve(collect === 'buffer' ? (chunks.length === 1 ? chunks[0] : Buffer.concat(chunks)) : collect === 'bytes' ? bytes : status);
      });
      req.on('error', reject);
      if (body === undefined) return;
      if (Buffer.isBuffer(body)) req.end(body);
      else body.pipe(req);
    });
  }
  const post = (path, type) => ({ [METHOD]: 'POST', [PATH]: path, 'content-type': type });

  const conn = {
    ping: () =>
      new Promise((resolve, reject) => {
        if (!session.ping((err) => (err ? reject(err) : resolve()))) reject(new Error('too many outstanding pings'));
      }),
    call: (payload) => stream(post('/tiny', 'application/json'), payload, 'buffer'),
    fast: () => stream({ [METHOD]: 'GET', [PATH]: '/fast' }, undefined, 'none'),
    upload: async (payload) => Number(await stream(post('/upload', 'application/octet-stream'), payload, 'buffer')),
    uploadFile: async (source) => {
      const headers = post('/file', 'application/octet-stream');
      headers['content-length'] = String(source.path ? source.size : source.buffer.length);
      return Number(await stream(headers, source.path ? createReadStream(source.path) : source.buffer, 'buffer'));
    },
    // The 16-byte responses arrive as DATA; HTTP/2 keeps no boundaries between writes, so count bytes.
    many: async (n) => (await stream({ [METHOD]: 'GET', [PATH]: `/many?n=${n}` }, undefined, 'bytes')) / 16,
    count: async () => Number(await stream({ [METHOD]: 'GET', [PATH]: '/count' }, undefined, 'buffer')),
    close: () => new Promise((resolve) => session.close(resolve)),
  };
  if ((await conn.fast()) !== FAST_CODE) throw new Error('unexpected answer to the first request');
  return conn;
}
