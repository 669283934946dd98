/**
 * Node socket transports: TCP (`node:net`), TLS (`node:tls`) and Unix
 * sockets. The protocol runs on the raw byte stream (docs/protocol.md §2).
 */

import net from 'node:net';
import tls from 'node:tls';
import type { CloseReason, Transport, TransportFactory, TransportHandlers } from '../transport.js';

/** TLS options passed through to `tls.connect` (servername, ca, cert, key, rejectUnauthorized…). */
export type TlsOptions = Omit<tls.ConnectionOptions, 'host' | 'port' | 'path' | 'socket'>;

export interface SocketTransportOptions {
  /** Host name or address for TCP and TLS (default `localhost`). */
  host?: string;
  port?: number;
  /** A Unix socket path (or a Windows named pipe) instead of host and port. */
  path?: string;
  /** TLS over the connection: true for the defaults, or options for `tls.connect`. */
  tls?: boolean | TlsOptions;
  /** Disable Nagle's algorithm, so small frames go out at once (default true). */
  noDelay?: boolean;
  /** After `close()`, how long the server has to close its side before the socket is destroyed (default 2000 ms). */
  closeGraceMs?: number;
}

/** Opens a TCP, TLS or Unix socket connection per (re)connect. */
export function socketTransport(options: SocketTransportOptions): TransportFactory {
  if (options.path === undefined && !(Number.isInteger(options.port) && options.port! > 0 && options.port! < 65536)) {
    throw new RangeError(`a socket transport needs a path, or a port in 1…65535 (got ${String(options.port)})`);
  }
  return (handlers) => new SocketTransport(options, handlers);
}

export function tcpTransport(host: string, port: number, options: Pick<SocketTransportOptions, 'noDelay' | 'closeGraceMs'> = {}): TransportFactory {
  return socketTransport({ ...options, host, port });
}

export function tlsTransport(host: string, port: number, tlsOptions: TlsOptions = {}, options: Pick<SocketTransportOptions, 'noDelay' | 'closeGraceMs'> = {}): TransportFactory {
  return socketTransport({ ...options, host, port, tls: tlsOptions });
}

export function unixTransport(path: string, options: Pick<SocketTransportOptions, 'closeGraceMs'> = {}): TransportFactory {
  return socketTransport({ ...options, path });
}

function open(options: SocketTransportOptions): { socket: net.Socket; event: 'connect' | 'secureConnect' } {
  const where = options.path !== undefined ? { path: options.path } : { host: options.host ?? 'localhost', port: options.port! };
  if (options.tls === undefined || options.tls === false) return { socket: net.connect(where), event: 'connect' };
  const extra: TlsOptions = options.tls === true ? {} : options.tls;
  // tls.connect sends SNI only when told: the host name is what a server with several certificates needs.
  const host = options.path === undefined ? (options.host ?? 'localhost') : undefined;
  const servername = extra.servername ?? (host !== undefined && net.isIP(host) === 0 ? host : undefined);
  return { socket: tls.connect({ ...extra, ...where, servername }), event: 'secureConnect' };
}

class SocketTransport implements Transport {
  readonly framing = 'stream';
  readonly name: 'tcp' | 'tls' | 'unix';
  private readonly socket: net.Socket;
  private opened = false;
  private reported = false;
  private error: Error | undefined;

  constructor(
    private readonly options: SocketTransportOptions,
    private readonly handlers: TransportHandlers,
  ) {
    const { socket, event } = open(options);
    this.socket = socket;
    this.name = options.tls !== undefined && options.tls !== false ? 'tls' : options.path !== undefined ? 'unix' : 'tcp';
    socket.once(event, () => {
      if (options.noDelay !== false && options.path === undefined) socket.setNoDelay(true);
      this.opened = true;
      if (!this.reported) handlers.onOpen();
    });
    socket.on('data', (chunk: Buffer) => {
      if (!this.reported) handlers.onData(chunk);
    });
    socket.on('error', (error) => {
      this.error ??= error;
    });
    socket.once('close', () => this.report());
  }

  get bufferedAmount(): number {
    return this.socket.writableLength;
  }

  /**
   * Node buffers what the kernel cannot take yet: nothing is lost. The
   * peer has no way to wait for `drain`, but it does not need one for
   * streams: it never sends more stream data than the server's credit,
   * which the server grants only as it consumes (docs/protocol.md §7), so
   * this buffer stays within a window per stream.
   */
  write(bytes: Uint8Array): void {
    if (this.reported || this.socket.destroyed || this.socket.writableEnded) return;
    this.socket.write(bytes);
  }

  /** One `writev` for the parts: corked, they leave together when uncorked. */
  writeParts(parts: readonly Uint8Array[]): void {
    if (this.reported || this.socket.destroyed || this.socket.writableEnded) return;
    const socket = this.socket;
    socket.cork();
    for (const part of parts) socket.write(part);
    socket.uncork();
  }

  close(_reason?: CloseReason): void {
    const socket = this.socket;
    if (!this.opened) {
      socket.destroy();
      return;
    }
    // After what was written (a GO_AWAY, say) goes out; then the server closes too.
    socket.end();
    const timer = setTimeout(() => socket.destroy(), this.options.closeGraceMs ?? 2000);
    timer.unref();
    socket.once('close', () => clearTimeout(timer));
  }

  private report(): void {
    if (this.reported) return;
    this.reported = true;
    this.handlers.onClose(this.error === undefined ? {} : { error: this.error });
  }
}
