/**
 * switchboard-client: the client of the Switchboard protocol
 * (docs/protocol.md) for browsers and Node.js. This entry point has no
 * Node dependency; TCP, TLS, Unix sockets and file helpers are in
 * `switchboard-client/node`.
 */

import { RpcError } from 'switchboard-rpc';
import { Client } from './client.js';
import type { ClientOptions } from './options.js';
import { ClientErrorCode } from './options.js';
import type { TransportFactory } from './transport.js';
import type { FallbackOptions } from './transports/fallback.js';
import { fallbackTransport } from './transports/fallback.js';
import type { SockJsTransportOptions } from './transports/sockjs.js';
import { sockJsTransport } from './transports/sockjs.js';
import type { WebSocketTransportOptions } from './transports/websocket.js';
import { webSocketTransport } from './transports/websocket.js';

export { Client } from './client.js';
export type { ClientStats, CloseOptions } from './client.js';
export { Emitter } from './emitter.js';
export type { Unsubscribe } from './emitter.js';
export { CLIENT_ERROR_DESCRIPTIONS, ClientErrorCode, ConnectionState, backoffDelay } from './options.js';
export type {
  ClientEvents,
  ClientOptions,
  ClosedEvent,
  ConnectData,
  DisconnectEvent,
  GoAwayEvent,
  HandlerErrorEvent,
  OpenEvent,
  ReconnectOptions,
  ReconnectingEvent,
  ResolvedReconnect,
  ServerInfo,
  StateChangeEvent,
} from './options.js';
export { Subscription, SubscriptionState } from './subscription.js';
export type {
  GapEvent,
  Publication,
  PublicationCallback,
  SubscribeOptions,
  SubscriptionClosedEvent,
  SubscriptionEvents,
  SubscriptionStateEvent,
} from './subscription.js';
export type { CloseReason, Transport, TransportClose, TransportFactory, TransportHandlers } from './transport.js';
export { globalWebSocket, webSocketTransport } from './transports/websocket.js';
export { sockJsTransport } from './transports/sockjs.js';
export type { FetchLike, RequestInitLike, ResponseLike, SockJsTransportOptions } from './transports/sockjs.js';
export { fallbackTransport } from './transports/fallback.js';
export type { FallbackOptions } from './transports/fallback.js';
export { decodeBase64, encodeBase64 } from './base64.js';
export type { WebSocketConstructor, WebSocketEventLike, WebSocketLike, WebSocketTransportOptions } from './transports/websocket.js';

// What applications use with a client, so that they need one import only.
export {
  ALL_FEATURES,
  Feature,
  ProtocolError,
  RemoteError,
  RpcError,
  RpcErrorCode,
  StreamWriter,
  defineAction,
  exposeObject,
  jsonCodec,
  msgpackCodec,
  openStream,
  payloadCodecs,
  rawCodec,
} from 'switchboard-rpc';
export type {
  Action,
  CallOptions,
  FileSource,
  IncomingCall,
  IncomingFile,
  IncomingHandler,
  IncomingStream,
  NotifyOptions,
  PayloadCodec,
  PeerStats,
  Promisified,
  ReadableStreamLike,
  ReplyOptions,
  RpcResponse,
  StreamPosition,
  StreamSource,
  WrapOptions,
} from 'switchboard-rpc';

/** The transports `connect()` chooses from (`ConnectOptions.transports`). */
export type TransportKind = 'websocket' | 'sockjs';

/** Where the SockJS fallback is, and how it behaves. */
export interface SockJsFallbackOptions extends SockJsTransportOptions, FallbackOptions {
  /** The server's `app.sockjs(prefix, { rpc: true })`: `http(s)://host/prefix`. */
  url: string | URL;
}

/** `connect()`'s options: the client's, without `transport`, and the transports'. */
export interface ConnectOptions extends Omit<ClientOptions, 'transport'>, WebSocketTransportOptions {
  /**
   * The SockJS service that carries the protocol where WebSocket is
   * blocked (`app.sockjs(prefix, { rpc: true })` on the server): its URL,
   * or the URL with the SockJS and fallback options. With it the client
   * falls back to SockJS when a WebSocket fails to connect, for that
   * connection and the later ones. Default: none (WebSocket only).
   */
  fallback?: string | URL | SockJsFallbackOptions;
  /**
   * The transports to use, in order: `['websocket', 'sockjs']` (the
   * default with a `fallback`) tries WebSocket first; `['sockjs']` uses
   * the fallback alone; `['websocket']` (the default without one) never
   * falls back.
   */
  transports?: readonly TransportKind[];
}

/**
 * The transport `connect()` uses for a WebSocket URL and its options:
 * WebSocket, the SockJS fallback, or WebSocket falling back to SockJS
 * (`ConnectOptions.transports`).
 */
export function webTransport(url: string | URL, options: ConnectOptions = {}): TransportFactory {
  const fallback = options.fallback === undefined ? undefined : typeof options.fallback === 'object' && !(options.fallback instanceof URL) ? options.fallback : { url: options.fallback };
  const kinds = options.transports ?? (fallback === undefined ? ['websocket'] : ['websocket', 'sockjs']);
  const known = kinds.length > 0 && kinds.length <= 2 && new Set(kinds).size === kinds.length && kinds.every((kind) => kind === 'websocket' || kind === 'sockjs');
  if (!known) throw new TypeError(`transports lists 'websocket' and/or 'sockjs' once each, got ${JSON.stringify(kinds)}`);
  const factories = kinds.map((kind): TransportFactory => {
    if (kind === 'websocket') return webSocketTransport(webSocketUrl(url), options);
    if (fallback === undefined) throw new TypeError("transports lists 'sockjs': say where with fallback: { url }");
    try {
      return sockJsTransport(fallback.url, fallback);
    } catch (error) {
      throw new RpcError(ClientErrorCode.InvalidUrl, error instanceof Error ? error.message : String(error));
    }
  });
  return factories.length === 1 ? factories[0]! : fallbackTransport(factories[0]!, factories[1]!, fallback);
}

/**
 * Connects to a WebSocket URL (`ws:`, `wss:`; `http:` and `https:` are
 * taken as `ws:` and `wss:`), falling back to SockJS where WebSocket is
 * blocked when `fallback` says where, and resolves with the client once it
 * is open. Rejects, with the client closed, when the first connection
 * fails.
 */
export async function connect(url: string | URL, options: ConnectOptions = {}): Promise<Client> {
  const client = new Client({ ...options, transport: webTransport(url, options) });
  await client.ready;
  return client;
}

/** `url` as a ws: or wss: URL; throws `ERR_INVALID_URL` for other schemes. */
export function webSocketUrl(url: string | URL): string {
  let parsed: URL;
  try {
    parsed = new URL(String(url));
  } catch {
    throw new RpcError(ClientErrorCode.InvalidUrl, `not a URL: ${String(url)}`);
  }
  if (parsed.protocol === 'http:') parsed.protocol = 'ws:';
  else if (parsed.protocol === 'https:') parsed.protocol = 'wss:';
  if (parsed.protocol !== 'ws:' && parsed.protocol !== 'wss:') {
    throw new RpcError(ClientErrorCode.InvalidUrl, `a WebSocket URL starts with ws: or wss:, got ${parsed.protocol}`);
  }
  return parsed.href;
}
