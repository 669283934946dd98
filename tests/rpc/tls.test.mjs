// The protocol inside TLS (rustls in the core): the real client over
// tls://, certificates chosen by SNI, and optional or required client
// certificates. Certificates are made with openssl for each run.
import test from 'node:test';
import assert from 'node:assert/strict';
import tls from 'node:tls';
import { Server } from 'switchboard';
import { connect } from 'switchboard-client/node';
import { certificateFactory } from '../helpers/certs.mjs';

const { makeCa, issue } = certificateFactory();

const ca = makeCa('test-ca');
const localhost = issue(ca, 'localhost');
const other = issue(ca, 'other.test');
const clientCa = makeCa('client-ca');
const clientCert = issue(clientCa, 'client-1', { server: false });

async function startTls(tlsOptions) {
  const server = new Server({ workers: 0 });
  server.rpc.action('hello', (call) => ({ transport: call.connection.transport, name: call.decode() }));
  server.rpc.action('big', (call) => new Uint8Array(call.decode()).fill(7));
  server.rpc.action('tls', (call) => {
    const { serverName, protocol, cipher, peerCertificate } = call.connection.tls;
    return { serverName: serverName ?? null, protocol, cipher, client: peerCertificate?.subject ?? null, clientIssuer: peerCertificate?.issuer ?? null };
  });
  const [address] = await server.listen([{ host: '127.0.0.1', port: 0, protocol: 'rpc', tls: tlsOptions }]);
  return { server, port: address.port };
}

test('calls over tls:// with the server certificate checked against its CA', async (t) => {
  const { server, port } = await startTls({ cert: localhost.cert, key: localhost.key });
  t.after(() => server.close());
  const client = await connect(`tls://127.0.0.1:${port}`, { tls: { servername: 'localhost', ca: ca.cert }, reconnect: false });
  assert.deepEqual(await client.call('hello', 'x'), { transport: 'tls', name: 'x' });
  // The handshake's results reach the handlers.
  const info = await client.call('tls');
  assert.equal(info.serverName, 'localhost');
  assert.equal(info.protocol, 'TLSv1.3');
  assert.match(info.cipher, /^TLS13_/);
  assert.equal(info.client, null);
  // A large reply crosses many TLS records (and socket writes) intact.
  const big = await client.call('big', 3_000_000);
  assert.equal(big.length, 3_000_000);
  assert.ok(big.every((b) => b === 7));
  await client.close();
  // A client that does not trust the CA refuses the server.
  await assert.rejects(connect(`tls://127.0.0.1:${port}`, { tls: { servername: 'localhost' }, reconnect: false }));
});

test('SNI chooses the certificate; an unknown name gets the default one', async (t) => {
  const { server, port } = await startTls({ cert: localhost.cert, key: localhost.key, sni: { 'other.test': other } });
  t.after(() => server.close());
  const subjectFor = (servername) =>
    new Promise((resolve, reject) => {
      const socket = tls.connect({ host: '127.0.0.1', port, servername, ca: ca.cert, rejectUnauthorized: false }, () => {
        resolve(socket.getPeerCertificate().subject.CN);
        socket.destroy();
      });
      socket.on('error', reject);
    });
  assert.equal(await subjectFor('other.test'), 'other.test');
  assert.equal(await subjectFor('localhost'), 'localhost');
  assert.equal(await subjectFor('unknown.test'), 'localhost');
  // The client names the server it wants, and checks what it gets.
  const client = await connect(`tls://127.0.0.1:${port}`, { tls: { servername: 'other.test', ca: ca.cert }, reconnect: false });
  assert.deepEqual(await client.call('hello', 'sni'), { transport: 'tls', name: 'sni' });
  assert.equal((await client.call('tls')).serverName, 'other.test');
  await client.close();
  // Without SNI (a bare IP address and no servername), the default certificate and no name.
  const bare = await connect(`tls://127.0.0.1:${port}`, { tls: { ca: ca.cert, checkServerIdentity: () => undefined }, reconnect: false });
  assert.equal((await bare.call('tls')).serverName, null);
  await bare.close();
});

test('client certificates: required ones are checked, optional ones may be absent', async (t) => {
  const required = await startTls({ cert: localhost.cert, key: localhost.key, ca: clientCa.cert });
  const optional = await startTls({ cert: localhost.cert, key: localhost.key, ca: clientCa.cert, rejectUnauthorized: false });
  t.after(() => Promise.all([required.server.close(), optional.server.close()]));
  const withCert = await connect(`tls://127.0.0.1:${required.port}`, { tls: { servername: 'localhost', ca: ca.cert, cert: clientCert.cert, key: clientCert.key }, reconnect: false });
  assert.deepEqual(await withCert.call('hello', 'cert'), { transport: 'tls', name: 'cert' });
  // The verified client certificate, for authorisation by its subject.
  const { client: subject, clientIssuer } = await withCert.call('tls');
  assert.equal(subject, 'CN=client-1');
  assert.equal(clientIssuer, 'CN=client-ca');
  await withCert.close();
  await assert.rejects(async () => {
    const anonymous = await connect(`tls://127.0.0.1:${required.port}`, { tls: { servername: 'localhost', ca: ca.cert }, reconnect: false });
    // TLS 1.3 may report the refusal only once the client reads.
    await anonymous.call('hello', 'no cert', { timeoutMs: 2000 });
  });
  const anonymous = await connect(`tls://127.0.0.1:${optional.port}`, { tls: { servername: 'localhost', ca: ca.cert }, reconnect: false });
  assert.deepEqual(await anonymous.call('hello', 'none'), { transport: 'tls', name: 'none' });
  assert.equal((await anonymous.call('tls')).client, null);
  await anonymous.close();
  // A certificate from another CA is refused even where one is optional.
  const stranger = issue(ca, 'stranger', { server: false });
  await assert.rejects(async () => {
    const c = await connect(`tls://127.0.0.1:${optional.port}`, { tls: { servername: 'localhost', ca: ca.cert, cert: stranger.cert, key: stranger.key }, reconnect: false });
    await c.call('hello', 'stranger', { timeoutMs: 2000 });
  });
});

test('unusable TLS options fail listen() with ERR_TLS_CONFIG', async () => {
  const server = new Server({ workers: 0 });
  server.rpc.action('x', () => 1);
  await assert.rejects(
    server.listen([{ host: '127.0.0.1', port: 0, protocol: 'rpc', tls: { cert: localhost.cert, key: other.key } }]),
    (error) => error.code === 'ERR_TLS_CONFIG',
  );
  await assert.rejects(
    new Server({ workers: 0 }).listen([{ host: '127.0.0.1', port: 0, protocol: 'rpc', tls: { cert: 'not pem', key: localhost.key } }]),
    (error) => error.code === 'ERR_TLS_CONFIG',
  );
});
