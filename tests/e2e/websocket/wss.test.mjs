// WebSocket and HTTP over TLS (wss://, https://): rustls in the core, with
// the same options as RPC listeners (SNI with a fallback, optional or
// required client certificates), the real `ws` client and Node's `https`,
// and one server listening with and without TLS at once. Certificates are
// made with openssl for each run.
import test from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import https from 'node:https';
import tls from 'node:tls';
import { Server } from 'switchboard';
import { certificateFactory } from '../../helpers/certs.mjs';
import { connect, nextMessage, upgradeStatus, WebSocket } from '../../helpers/index.mjs';

const { makeCa, issue } = certificateFactory();
const ca = makeCa('wss-ca');
const localhost = issue(ca, 'localhost');
const other = issue(ca, 'other.test');
const clientCa = makeCa('wss-client-ca');
const clientCert = issue(clientCa, 'wss-client-1', { server: false });
const strangerCa = makeCa('stranger-ca');

/** An echo route that also answers "tls?" with what `ws.tls` says. */
async function start(listeners) {
  const server = new Server({ workers: 0 });
  server.ws('/', {
    upgrade: (req) => ({ peer: req.tls?.peerCertificate?.subject ?? null, serverName: req.tls?.serverName ?? null }),
    message: (ws, data, isBinary) => {
      if (data.toString() === 'tls?') {
        const info = ws.tls && {
          serverName: ws.tls.serverName ?? null,
          protocol: ws.tls.protocol,
          cipher: ws.tls.cipher,
          client: ws.tls.peerCertificate?.subject ?? null,
          fromUpgrade: ws.data,
        };
        ws.send(JSON.stringify(info ?? null));
      } else {
        ws.send(data, isBinary);
      }
    },
  });
  server.get('/page', { body: 'over tls', contentType: 'text/plain' });
  const addresses = await server.listen(listeners);
  return { server, addresses };
}

test('wss:// echoes and the handlers see what the TLS handshake settled', async (t) => {
  const { server, addresses } = await start([{ host: '127.0.0.1', port: 0, tls: { cert: localhost.cert, key: localhost.key } }]);
  t.after(() => server.close({ drainTimeout: 500 }));
  assert.ok(addresses[0].tls, 'the bound address says it is TLS');
  const ws = await connect(`wss://127.0.0.1:${addresses[0].port}/`, { ca: ca.cert, servername: 'localhost' });
  ws.send('hello');
  assert.equal((await nextMessage(ws)).data.toString(), 'hello');
  const big = Buffer.alloc(300_000, 7);
  ws.send(big);
  const echoed = await nextMessage(ws);
  assert.ok(echoed.isBinary);
  assert.equal(Buffer.compare(echoed.data, big), 0, 'a message larger than a TLS record comes back intact');
  ws.send('tls?');
  const info = JSON.parse((await nextMessage(ws)).data.toString());
  assert.equal(info.serverName, 'localhost');
  assert.match(info.protocol, /^TLSv1\.[23]$/);
  assert.match(info.cipher, /^TLS/);
  assert.equal(info.client, null);
  assert.deepEqual(info.fromUpgrade, { peer: null, serverName: 'localhost' });
  ws.close(1000);
  assert.deepEqual(await ws.closed, { code: 1000, reason: '' });
});

test('one server listens with and without TLS at once', async (t) => {
  const { server, addresses } = await start([
    { host: '127.0.0.1', port: 0 },
    { host: '127.0.0.1', port: 0, tls: { cert: localhost.cert, key: localhost.key } },
  ]);
  t.after(() => server.close({ drainTimeout: 500 }));
  const [plain, secure] = addresses;
  const a = await connect(`ws://127.0.0.1:${plain.port}/`);
  const b = await connect(`wss://127.0.0.1:${secure.port}/`, { ca: ca.cert, servername: 'localhost' });
  a.send('tls?');
  b.send('tls?');
  assert.equal(JSON.parse((await nextMessage(a)).data.toString()), null);
  assert.equal(JSON.parse((await nextMessage(b)).data.toString()).serverName, 'localhost');
  // A TLS client on the plain port and a plain client on the TLS port fail
  // without harming the server.
  await assert.rejects(connect(`wss://127.0.0.1:${plain.port}/`, { ca: ca.cert, servername: 'localhost', handshakeTimeout: 3000 }));
  await assert.rejects(connect(`ws://127.0.0.1:${secure.port}/`, { handshakeTimeout: 3000 }));
  a.send('still here');
  assert.equal((await nextMessage(a)).data.toString(), 'still here');
  a.close();
  b.close();
});

test('https:// serves static routes and answers a plain request to the WebSocket route with 426', async (t) => {
  const { server, addresses } = await start([{ host: '127.0.0.1', port: 0, tls: { cert: localhost.cert, key: localhost.key } }]);
  t.after(() => server.close({ drainTimeout: 500 }));
  const get = (path) =>
    new Promise((resolve, reject) => {
      const req = https.get({ host: '127.0.0.1', port: addresses[0].port, path, ca: ca.cert, servername: 'localhost' }, (res) => {
        let body = '';
        res.on('data', (c) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode, body }));
      });
      req.on('error', reject);
    });
  assert.deepEqual(await get('/page'), { status: 200, body: 'over tls' });
  assert.equal((await get('/')).status, 426);
  assert.equal((await get('/missing')).status, 404);
});

test('SNI picks the certificate; an unknown name gets the default one', async (t) => {
  const { server, addresses } = await start([
    {
      host: '127.0.0.1',
      port: 0,
      tls: { cert: localhost.cert, key: localhost.key, sni: { 'other.test': { cert: other.cert, key: other.key } } },
    },
  ]);
  t.after(() => server.close({ drainTimeout: 500 }));
  const port = addresses[0].port;
  const subjectFor = async (servername) => {
    const ws = new WebSocket(`wss://127.0.0.1:${port}/`, { ca: ca.cert, servername, checkServerIdentity: () => undefined });
    ws.on('error', () => {});
    // Both listened for at once: 'open' follows 'upgrade' in the same tick.
    const upgraded = once(ws, 'upgrade');
    const opened = once(ws, 'open');
    const [res] = await upgraded;
    const subject = res.socket.getPeerCertificate().subject.CN;
    await opened;
    ws.close();
    return subject;
  };
  assert.equal(await subjectFor('other.test'), 'other.test');
  assert.equal(await subjectFor('localhost'), 'localhost');
  assert.equal(await subjectFor('unknown.test'), 'localhost');
});

test('a certificate the client does not trust fails the handshake, and the server goes on', async (t) => {
  const { server, addresses } = await start([{ host: '127.0.0.1', port: 0, tls: { cert: localhost.cert, key: localhost.key } }]);
  t.after(() => server.close({ drainTimeout: 500 }));
  const url = `wss://127.0.0.1:${addresses[0].port}/`;
  const failure = await new Promise((resolve) => {
    const ws = new WebSocket(url, { ca: strangerCa.cert, servername: 'localhost' });
    ws.on('error', resolve);
    ws.on('open', () => resolve(new Error('opened')));
  });
  assert.match(failure.code ?? failure.message, /UNABLE_TO_VERIFY|SELF_SIGNED|unable to verify/i);
  // Garbage where a ClientHello belongs.
  const garbage = tls.connect({ host: '127.0.0.1', port: addresses[0].port, servername: 'localhost', ca: ca.cert });
  garbage.on('error', () => {});
  garbage.destroy();
  const ws = await connect(url, { ca: ca.cert, servername: 'localhost' });
  ws.send('after');
  assert.equal((await nextMessage(ws)).data.toString(), 'after');
  ws.close();
});

test('bad TLS options are refused at listen with ERR_TLS_CONFIG', async () => {
  const server = new Server({ workers: 0 });
  server.ws('/', {});
  await assert.rejects(server.listen([{ host: '127.0.0.1', port: 0, tls: { cert: 'not a pem', key: localhost.key } }]), (error) => {
    assert.equal(error.code, 'ERR_TLS_CONFIG');
    return true;
  });
  const mismatched = new Server({ workers: 0 });
  mismatched.ws('/', {});
  await assert.rejects(mismatched.listen([{ host: '127.0.0.1', port: 0, tls: { cert: localhost.cert, key: other.key } }]), {
    code: 'ERR_TLS_CONFIG',
  });
});

test('required client certificates: the upgrade hook sees the verified one, clients without are refused', async (t) => {
  const { server, addresses } = await start([
    { host: '127.0.0.1', port: 0, tls: { cert: localhost.cert, key: localhost.key, ca: clientCa.cert } },
  ]);
  t.after(() => server.close({ drainTimeout: 500 }));
  const url = `wss://127.0.0.1:${addresses[0].port}/`;
  const ws = await connect(url, { ca: ca.cert, servername: 'localhost', cert: clientCert.cert, key: clientCert.key });
  ws.send('tls?');
  const info = JSON.parse((await nextMessage(ws)).data.toString());
  assert.match(info.client, /CN=wss-client-1/);
  assert.match(info.fromUpgrade.peer, /CN=wss-client-1/);
  ws.close();
  await assert.rejects(connect(url, { ca: ca.cert, servername: 'localhost', handshakeTimeout: 3000 }));
});

test('optional client certificates: checked when given, absent allowed', async (t) => {
  const { server, addresses } = await start([
    {
      host: '127.0.0.1',
      port: 0,
      tls: { cert: localhost.cert, key: localhost.key, ca: clientCa.cert, rejectUnauthorized: false },
    },
  ]);
  t.after(() => server.close({ drainTimeout: 500 }));
  const url = `wss://127.0.0.1:${addresses[0].port}/`;
  const anonymous = await connect(url, { ca: ca.cert, servername: 'localhost' });
  anonymous.send('tls?');
  assert.equal(JSON.parse((await nextMessage(anonymous)).data.toString()).client, null);
  anonymous.close();
  // A certificate from a CA the server does not trust is refused.
  const stranger = issue(strangerCa, 'stranger-client', { server: false });
  await assert.rejects(
    connect(url, { ca: ca.cert, servername: 'localhost', cert: stranger.cert, key: stranger.key, handshakeTimeout: 3000 }),
  );
});

test('an upgrade over TLS can still be refused with a status', async (t) => {
  const server = new Server({ workers: 0 });
  server.ws('/', { upgrade: (req, res) => res.reject(401, 'no token') });
  const [address] = await server.listen([{ host: '127.0.0.1', port: 0, tls: { cert: localhost.cert, key: localhost.key } }]);
  t.after(() => server.close({ drainTimeout: 500 }));
  const refused = await upgradeStatus(`wss://127.0.0.1:${address.port}/`, { ca: ca.cert, servername: 'localhost' });
  assert.equal(refused.status, 401);
});
