/**
 * switchboard-client/node: everything of the core entry point, plus TCP,
 * TLS and Unix socket transports, a `connect()` that takes any of their
 * URLs, and file and stream helpers for Node.
 */

import { RpcError } from 'switchboard-rpc';
import { Client } from './client.js';
import type { ConnectOptions } from './index.js';
import { webTransport } from './index.js';
import { ClientErrorCode } from './options.js';
import type { TransportFactory } from './transport.js';
import type { SocketTransportOptions, TlsOptions } from './transports/node.js';
import { socketTransport } from './transports/node.js';
import type { WebSocketConstructor } from './transports/websocket.js';
import { globalWebSocket } from './transports/websocket.js';

export * from './index.js';
export { socketTransport, tcpTransport, tlsTransport, unixTransport } from './transports/node.js';
export type { SocketTransportOptions, TlsOptions } from './transports/node.js';
export { fileFromPath, fileFromReadable, pipeTo, saveTo, toReadable } from './node/files.js';
export type { FileFromPathOptions, Incoming, PipeOptions } from './node/files.js';

export interface NodeConnectOptions extends ConnectOptions {
  /** For `tls:` and `wss:` URLs: options for `tls.connect` (servername, ca, cert, key, rejectUnauthorized…). */
  tls?: TlsOptions;
  /** Disable Nagle's algorithm on TCP and TLS sockets (default true). */
  noDelay?: boolean;
}

/**
 * The transport for a URL:
 * - `tcp://host:port`, `tls://host:port`;
 * - `unix:/path/to.sock` (or `unix:///path/to.sock`; `unix:relative.sock`);
 * - `ws://…`, `wss://…` (also `http://`, `https://`): with `options.WebSocket`,
 *   else the global WebSocket (Node ≥ 22), else the `ws` package if it is
 *   installed; falling back to SockJS with `options.fallback` (see
 *   `ConnectOptions.transports`).
 */
export async function transportFor(url: string | URL, options: NodeConnectOptions = {}): Promise<TransportFactory> {
  const href = String(url);
  if (href.startsWith('unix:')) {
    let socketPath = href.slice('unix:'.length);
    if (socketPath.startsWith('//')) socketPath = socketPath.slice(2);
    if (socketPath === '') throw new RpcError(ClientErrorCode.InvalidUrl, `no socket path in ${href}`);
    return socketTransport({ path: socketPath });
  }
  let parsed: URL;
  try {
    parsed = new URL(href);
  } catch {
    throw new RpcError(ClientErrorCode.InvalidUrl, `not a URL: ${href}`);
  }
  if (parsed.protocol === 'tcp:' || parsed.protocol === 'tls:') {
    const port = Number(parsed.port);
    if (parsed.port === '' || !Number.isInteger(port)) throw new RpcError(ClientErrorCode.InvalidUrl, `${href} has no port`);
    // URL keeps an IPv6 host in brackets; sockets want it bare.
    const host = parsed.hostname.replace(/^\[(.*)\]$/, '$1') || 'localhost';
    const socketOptions: SocketTransportOptions = { host, port, noDelay: options.noDelay ?? true };
    if (parsed.protocol === 'tls:') socketOptions.tls = options.tls ?? true;
    return socketTransport(socketOptions);
  }
  const sockjsOnly = options.transports?.length === 1 && options.transports[0] === 'sockjs';
  // A global WebSocket (Node ≥ 22), else `ws`: not needed for SockJS alone.
  const WebSocket = options.WebSocket ?? globalWebSocket() ?? (sockjsOnly ? undefined : await loadWs());
  // `ws` takes TLS options (ca, cert, servername…) in its third argument.
  const webSocketOptions = options.tls === undefined ? options.webSocketOptions : { ...options.tls, ...options.webSocketOptions };
  return webTransport(parsed, { ...options, WebSocket, webSocketOptions });
}

/** The `ws` package's WebSocket, for Node 20 (an optional peer dependency). */
async function loadWs(): Promise<WebSocketConstructor> {
  const specifier = 'ws'; // a variable: `ws` is optional, and has no types here
  try {
    const module = (await import(specifier)) as { WebSocket?: unknown; default?: unknown };
    const WebSocket = module.WebSocket ?? module.default;
    if (typeof WebSocket === 'function') return WebSocket as WebSocketConstructor;
  } catch {
    // not installed: the error below says what to do
  }
  throw new TypeError("there is no global WebSocket in this Node version: install the 'ws' package, or pass { WebSocket }");
}

/**
 * Connects to `url` (see `transportFor`) and resolves with the client once
 * it is open. Rejects, with the client closed, when the first connection
 * fails: `ERR_DISCONNECTED` (refused, reset, TLS…) with the socket error as
 * `cause`, a protocol code (`ERR_PROTOCOL_PREFACE`…), or the server's
 * refusal code.
 *
 * ```ts
 * const client = await connect('tcp://127.0.0.1:4000', { connectData: token });
 * const sum = await client.call('add', [1, 2]);
 * ```
 */
export async function connect(url: string | URL, options: NodeConnectOptions = {}): Promise<Client> {
  const client = new Client({ ...options, transport: await transportFor(url, options) });
  await client.ready;
  return client;
}
