// The RPC example's TLS certificates (server.mjs serves tls://, client.mjs
// connects to it). Without TLS_DIR, the server makes a throwaway set with
// the `openssl` CLI at every start, in $TMPDIR/switchboard-rpc-example-tls:
//
//   ca.pem, ca.key           a CA, made for the run, that signs the rest
//   server.pem, server.key   for localhost and 127.0.0.1 (the default certificate)
//   second.pem, second.key   for rpc.example.test (chosen by SNI)
//   client.pem, client.key   a client certificate (CN=example-client)
//
// With TLS_DIR, the files of that directory are used as they are (bring
// your own, under the same names; the client trusts ca.pem, the server
// asks clients for a certificate signed by it).
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** The second name the server answers to, with its own certificate (SNI). */
export const SECOND_NAME = 'rpc.example.test';

/** Where the certificates are: TLS_DIR, or the throwaway set's directory. */
export function certificateDir() {
  return process.env.TLS_DIR ?? path.join(os.tmpdir(), 'switchboard-rpc-example-tls');
}

/** Runs `openssl` in `dir`; throws with its message when it fails (or is not installed). */
function openssl(dir, args) {
  const result = spawnSync('openssl', args, { cwd: dir, encoding: 'utf8' });
  if (result.error) throw new Error(`cannot run openssl: ${result.error.message}`);
  if (result.status !== 0) throw new Error(`openssl ${args[0]} failed: ${result.stderr.trim()}`);
}

/** A P-256 key and a certificate for `subject`, signed by the CA (or self-signed, for the CA). */
function issue(dir, name, subject, extensions) {
  // Short-lived on purpose: a new set is made at every start.
  const days = '30';
  const key = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', `${name}.key`];
  if (name === 'ca') {
    openssl(dir, ['req', '-x509', ...key, '-out', 'ca.pem', '-days', days, '-subj', subject]);
    return;
  }
  openssl(dir, ['req', ...key, '-out', `${name}.csr`, '-subj', subject]);
  writeFileSync(path.join(dir, `${name}.ext`), extensions.join('\n') + '\n');
  openssl(dir, ['x509', '-req', '-in', `${name}.csr`, '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial', '-out', `${name}.pem`, '-days', days, '-extfile', `${name}.ext`]);
}

/** Makes a fresh set in `dir` (replacing what is there). */
export function generateCertificates(dir) {
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  issue(dir, 'ca', '/CN=Switchboard example CA');
  issue(dir, 'server', '/CN=localhost', ['subjectAltName=DNS:localhost,IP:127.0.0.1', 'extendedKeyUsage=serverAuth']);
  issue(dir, 'second', `/CN=${SECOND_NAME}`, [`subjectAltName=DNS:${SECOND_NAME}`, 'extendedKeyUsage=serverAuth']);
  issue(dir, 'client', '/CN=example-client', ['extendedKeyUsage=clientAuth']);
}

/** The PEM files of `dir`, as Buffers. */
export function readCertificates(dir) {
  const read = (name) => readFileSync(path.join(dir, name));
  const pair = (name) => ({ cert: read(`${name}.pem`), key: read(`${name}.key`) });
  return { ca: read('ca.pem'), server: pair('server'), second: pair('second'), client: pair('client') };
}
