/**
 * What a TLS handshake settled, as handlers see it: `ws.tls`, the upgrade
 * hook's `req.tls` and an RPC connection's `connection.tls`.
 */
import { X509Certificate } from 'node:crypto';
import type { NativeTlsInfo } from './internal/events.js';

/** What the TLS handshake of a connection settled. */
export interface TlsInfo {
  /** The server name the client asked for (SNI), or `undefined` without one. */
  readonly serverName: string | undefined;
  /** `TLSv1.3` or `TLSv1.2`. */
  readonly protocol: string;
  /** The cipher suite (IANA name, e.g. `TLS13_AES_128_GCM_SHA256`). */
  readonly cipher: string;
  /**
   * The client's certificate, already verified against the listener's `ca`
   * (parsed on first read), or `undefined` when it sent none.
   */
  readonly peerCertificate: X509Certificate | undefined;
}

/** Parses the certificate only when the application looks at it. */
class LazyTlsInfo implements TlsInfo {
  readonly serverName: string | undefined;
  readonly protocol: string;
  readonly cipher: string;
  #der: Buffer;
  #certificate: X509Certificate | undefined;

  constructor(native: NativeTlsInfo) {
    this.serverName = native.serverName === '' ? undefined : native.serverName;
    this.protocol = native.protocol;
    this.cipher = native.cipher;
    this.#der = native.peerCertificate;
  }

  get peerCertificate(): X509Certificate | undefined {
    if (this.#certificate === undefined && this.#der.length > 0) this.#certificate = new X509Certificate(this.#der);
    return this.#certificate;
  }
}

/** The handlers' view of a native TLS block (none for a plain connection). */
export function tlsInfo(native: NativeTlsInfo | undefined): TlsInfo | undefined {
  return native && new LazyTlsInfo(native);
}
