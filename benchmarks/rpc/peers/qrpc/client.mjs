// The client side of the `qrpc` peer (contract: ../../ADAPTERS.md):
// qrpc.connect(), one TCP connection per connect(), calls multiplexed on it
// (qrpc matches responses to calls by id, completion order is free).
// Tiny data travels as a string (qrpc's JSON envelope carries it as is);
// payloads and files as Buffers (qrpc's way for binary data: base64 inside
// the JSON line, decoded by the receiver). one-way is a call without a
// callback to an addHandlerNoResponse endpoint; client.call() returns the
// socket's write() result, so the sender waits for 'drain' when it is false.
// Nagle off, as qrpc's README advises.
import { readFile } from 'node:fs/promises';
import qrpc from 'qrpc';
import { MANY_RESPONSES, TINY_TEXT } from '../../lib/wire.mjs';

export async function connect({ host, port }) {
  let socket;
  const client = await new Promise((resolve, reject) => {
    const c = qrpc.connect({ port, host }, (s) => {
      s.setNoDelay(true);
      socket = s;
      resolve(c);
    });
    // Until connected: a refused connection rejects instead of crashing.
    c.target.once('error', reject);
  });
  socket.on('error', () => {});

  const call = (name, data) =>
    new Promise((resolve, reject) => {
      client.call(name, data, (err, ret) => (err ? reject(err) : resolve(ret)));
    });

  return {
    call: (payload) => call('tiny', payload === undefined ? TINY_TEXT : payload.toString('latin1')),
    fast: () => call('fast'),
    upload: (payload) => call('upload', payload),
    uploadFile: async (source) => call('file', source.path ? await readFile(source.path) : source.buffer),
    many: (n = MANY_RESPONSES) =>
      new Promise((resolve, reject) => {
        let got = 0;
        // qrpc invokes the callback once per response; the last one closes the call.
        client.call('many', n, (err) => {
          if (err) return reject(err);
          if (++got === n) resolve(got);
        });
      }),
    notify: (payload) => client.call('notify', payload.toString('latin1')),
    drain: () => new Promise((resolve) => socket.once('drain', resolve)),
    count: () => call('count'),
    close: () =>
      new Promise((resolve) => {
        socket.once('close', resolve);
        client.close();
        socket.end();
        setTimeout(() => {
          socket.destroy();
          resolve();
        }, 1000).unref();
      }),
  };
}
