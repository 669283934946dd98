// Certificates for TLS tests, made with openssl for each run: a CA, and
// server or client certificates it signs. Nothing is committed; the
// directory is removed when the test file ends.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after } from 'node:test';

/** A scratch directory of certificates, removed after the test file. */
export function certificateFactory() {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'switchboard-tls-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  function openssl(...args) {
    const result = spawnSync('openssl', args, { cwd: dir, encoding: 'utf8' });
    assert.equal(result.status, 0, `openssl ${args.join(' ')}: ${result.stderr}`);
  }

  const read = (name) => readFileSync(path.join(dir, name));

  return {
    dir,
    /** A self-signed CA named `name`. */
    makeCa(name) {
      openssl('req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', `${name}.key`, '-out', `${name}.pem`, '-days', '1', '-subj', `/CN=${name}`);
      return { cert: read(`${name}.pem`), key: read(`${name}.key`), name };
    },
    /**
     * A certificate `ca` signs: for a server with `name` and 127.0.0.1 as
     * subject alternative names, or (`server: false`) for a client. Its
     * files are `<name>.pem` and `<name>.key` in `dir`.
     */
    issue(ca, name, { server = true } = {}) {
      openssl('req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', `/CN=${name}`);
      const ext = server ? `subjectAltName=DNS:${name},IP:127.0.0.1\nextendedKeyUsage=serverAuth\n` : 'extendedKeyUsage=clientAuth\n';
      writeFileSync(path.join(dir, `${name}.ext`), ext);
      openssl('x509', '-req', '-in', `${name}.csr`, '-CA', `${ca.name}.pem`, '-CAkey', `${ca.name}.key`, '-CAcreateserial', '-out', `${name}.pem`, '-days', '1', '-extfile', `${name}.ext`);
      return { cert: read(`${name}.pem`), key: read(`${name}.key`), certPath: path.join(dir, `${name}.pem`), keyPath: path.join(dir, `${name}.key`) };
    },
  };
}
