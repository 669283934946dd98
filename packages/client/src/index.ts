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
  StreamSource,
  WrapOptions,
} from 'switchboard-rpc';

/** `connect()`'s options: the client's, without `transport`, and the WebSocket's. */
export interface ConnectOptions extends Omit<ClientOptions, 'transport'>, WebSocketTransportOptions {}

/**
 * Connects to a WebSocket URL (`ws:`, `wss:`; `http:` and `https:` are
 * taken as `ws:` and `wss:`) and resolves with the client once it is open.
 * Rejects, with the client closed, when the first connection fails.
 */
export async function connect(url: string | URL, options: ConnectOptions = {}): Promise<Client> {
  const client = new Client({ ...options, transport: webSocketTransport(webSocketUrl(url), options) });
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
