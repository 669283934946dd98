// The client side of the `http` peer (contract: ../../ADAPTERS.md): undici's
// Client, one TCP connection per connect(), keep-alive.
//
// Why undici and not http.request with a keep-alive Agent: both speak the
// same HTTP/1.1 to the same server, but undici (the client behind Node's own
// fetch) spends markedly less CPU per request (README.md gives the figures
// measured here), and the client process is the one most likely to saturate
// its core. The cheaper client gives the HTTP server the best chance to show
// its own limit.
//
// Several calls in flight on one connection are *pipelined* (undici's
// `pipelining` set to the in-flight count, requests marked idempotent and
// non-blocking so that POSTs pipeline too): HTTP/1.1's only way to keep
// more than one request outstanding on a connection, and its best case
// (browsers never do it). Responses come back in order. Stream bodies
// (file-1mib-disk) are never pipelined by undici; those scenarios keep one
// call in flight per connection anyway.
import { createReadStream } from 'node:fs';
import { Client } from 'undici';
import { FAST_CODE } from '../../lib/wire.mjs';

export async function connect({ host, port, inFlight = 1 }) {
  const client = new Client(`http://${host}:${port}`, {
    pipelining: Math.max(1, inFlight),
    keepAliveTimeout: 60_000,
    keepAliveMaxTimeout: 60_000,
    headersTimeout: 0,
    bodyTimeout: 0,
  });
  const request = (path, method, body, headers) =>
    client.request({ path, method, body, headers, idempotent: true, blocking: false });
  const text = async (res) => {
    if (res.statusCode !== 200) throw new Error(`HTTP ${res.statusCode}`);
    return res.body.text();
  };

  const conn = {
    async call(payload) {
      const res = await request('/tiny', 'POST', payload, { 'content-type': 'application/json' });
      return Buffer.from(await res.body.arrayBuffer());
    },
    async fast() {
      const res = await request('/fast', 'GET');
      await res.body.dump();
      return res.statusCode;
    },
    async upload(payload) {
      return Number(await text(await request('/upload', 'POST', payload, { 'content-type': 'application/octet-stream' })));
    },
    async uploadFile(source) {
      const body = source.path ? createReadStream(source.path) : source.buffer;
      const size = source.path ? source.size : source.buffer.length;
      return Number(await text(await request('/file', 'POST', body, { 'content-type': 'application/octet-stream', 'content-length': String(size) })));
    },
    async many(n) {
      const res = await request(`/many?n=${n}`, 'GET');
      let bytes = 0;
      for await (const chunk of res.body) bytes += chunk.length;
      // HTTP has no message boundaries inside a body: the 16-byte responses are counted by bytes.
      return bytes / 16;
    },
    async count() {
      return Number(await text(await request('/count', 'GET')));
    },
    close: () => client.close(),
  };
  // Open the connection now, so connecting is not part of the first measured call.
  if ((await conn.fast()) !== FAST_CODE) throw new Error('unexpected answer to the first request');
  return conn;
}
