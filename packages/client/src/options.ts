/**
 * The client's options, their defaults, and the events it emits.
 */

import type { IncomingCall, IncomingHandler, PayloadCodec } from 'switchboard-rpc';
import { ALL_FEATURES, payloadCodecs } from 'switchboard-rpc';
import type { GapEvent } from './subscription.js';
import type { TransportFactory } from './transport.js';

/** Connect data: bytes as they are, a string as UTF-8. */
export type ConnectData = Uint8Array | string;

export interface ReconnectOptions {
  /** The first retry's delay, before jitter (default 250 ms). */
  initialDelayMs?: number;
  /** The delay doubles per attempt up to this (default 10 s). */
  maxDelayMs?: number;
  /** Failed attempts in a row before the client gives up and closes (default: no limit). */
  maxAttempts?: number;
  /**
   * Called before each reconnect with the reason of the disconnect; return
   * false to close instead (e.g. the server refused the connect data).
   */
  shouldReconnect?(event: DisconnectEvent): boolean;
}

export interface ClientOptions {
  /** Opens a connection (one per reconnect): `webSocketTransport(url)`, or the Node ones in `switchboard-client/node`. */
  transport: TransportFactory;
  /** Codecs offered, in preference order (default msgpack, json, raw). */
  codecs?: readonly PayloadCodec[];
  /**
   * Data for the server's connect hook (a token…). A function is called for
   * every connection, so a reconnect can send a fresh token.
   */
  connectData?: ConnectData | (() => ConnectData | Promise<ConnectData>);
  /** The heartbeat interval the client would like (0, the default: the server decides). */
  heartbeatMs?: number;
  /** Largest frame body the client accepts (default 16 MiB, the server's default too). */
  maxFrameSize?: number;
  /** Credit granted to each stream the client receives (default 1 MiB). */
  initialWindow?: number;
  /** Calls from the server the client runs at once (default 256; 0 = it accepts none). */
  maxConcurrentCalls?: number;
  /** Feature bits offered (default all: streams, files, cancellation). */
  features?: number;
  /** Timeout of calls without their own `timeoutMs`, including time spent waiting for a connection (0 or absent: none). */
  defaultTimeoutMs?: number;
  /** From opening the transport to the server's WELCOME (default 10 s). */
  handshakeTimeoutMs?: number;
  /** Reconnect after a lost connection (default: on, with the default delays); false: close instead. */
  reconnect?: false | ReconnectOptions;
  /**
   * Send again, on the next connection, the calls the server refused with a
   * GO_AWAY (`ERR_GOING_AWAY`, `retryable`: it never processed them), when
   * they carry no streams or files (default true).
   */
  retryGoingAway?: boolean;
  /**
   * Handlers of the server's calls by action, as `client.handle(action, fn)`
   * registers them, but in place before the first connection (a server may
   * call the client as soon as it opens).
   */
  handlers?: { readonly [action: string]: (payload: unknown, call: IncomingCall) => unknown };
  /** Serves calls from the server that no `handle()` registration takes. */
  handler?: IncomingHandler;
  /** Send the message of an uncoded handler exception in its `ERR_HANDLER_FAILED` (default false). */
  exposeHandlerErrors?: boolean;
}

export const ConnectionState = {
  /** The first connection is being established. */
  Connecting: 'connecting',
  /** Handshake done: calls go out at once. */
  Open: 'open',
  /** The connection was lost (or the server went away); the client waits before its next attempt, or is attempting. */
  Reconnecting: 'reconnecting',
  /** For good: `close()` was called, reconnecting is off or gave up, or the first connection failed. */
  Closed: 'closed',
} as const;
export type ConnectionState = (typeof ConnectionState)[keyof typeof ConnectionState];

/** What the server said in its WELCOME. */
export interface ServerInfo {
  /** The codec chosen. */
  codec: string;
  /** The heartbeat interval in effect (0 = off). */
  heartbeatMs: number;
  /** The features both sides set. */
  features: number;
  maxFrameSize: number;
  initialWindow: number;
  maxConcurrentCalls: number;
  /** Data from the server's connect hook (may be empty). */
  data: Uint8Array;
}

export interface OpenEvent {
  server: ServerInfo;
  /** False for the first connection, true after a reconnect. */
  reconnected: boolean;
  /** What carries it (`client.transport`): `'websocket'`, `'xhr-streaming'`… */
  transport: string | null;
}

/** One connection ended (or one attempt failed). */
export interface DisconnectEvent {
  /**
   * Why: the code of the server's GO_AWAY (`ERR_GOING_AWAY`, `ERR_PROTOCOL_*`…),
   * of a violation this side detected, `ERR_HEARTBEAT_TIMEOUT`,
   * `ERR_HANDSHAKE_TIMEOUT`, `ERR_CLIENT_CLOSED`, or `ERR_DISCONNECTED`
   * when the transport failed or closed without one.
   */
  code: string;
  message: string;
  /** The underlying error (a socket error, a ProtocolError…), if any. */
  error?: Error;
  /** The connection had completed its handshake. */
  wasOpen: boolean;
  /** The client will try again. */
  willReconnect: boolean;
}

export interface ReconnectingEvent {
  /** 1 for the first retry after a loss. */
  attempt: number;
  delayMs: number;
  /** The disconnect that led here. */
  code: string;
}

export interface ClosedEvent {
  code: string;
  message: string;
  error?: Error;
}

export interface GoAwayEvent {
  code: string;
  message: string;
  /** The highest of our call ids the server will process. */
  lastCallId: number;
}

export interface StateChangeEvent {
  state: ConnectionState;
  previous: ConnectionState;
}

export interface HandlerErrorEvent {
  error: unknown;
  call: IncomingCall;
}

/** The client's events (`client.on(type, listener)`). */
export interface ClientEvents {
  statechange: StateChangeEvent;
  connecting: { attempt: number };
  open: OpenEvent;
  disconnect: DisconnectEvent;
  reconnecting: ReconnectingEvent;
  closed: ClosedEvent;
  goaway: GoAwayEvent;
  /**
   * A handler failure the server does not see as such (see
   * `PeerOptions.onHandlerError`), or a subscription's callback that threw
   * or rejected.
   */
  handlererror: HandlerErrorEvent;
  /**
   * A channel's subscription is back after a reconnect: publications
   * between `missedFrom` and `missedUntil` did not arrive. Once per
   * channel; each of its subscriptions gets its own `gap` too.
   */
  gap: GapEvent;
}

/** Codes the client itself produces (besides the peer's `RpcErrorCode`s and the protocol's). */
export const ClientErrorCode = {
  /** `close()` was called. */
  ClientClosed: 'ERR_CLIENT_CLOSED',
  /** The connection was lost, or could not be established. */
  Disconnected: 'ERR_DISCONNECTED',
  /** No WELCOME within `handshakeTimeoutMs`. */
  HandshakeTimeout: 'ERR_HANDSHAKE_TIMEOUT',
  /** Nothing received for twice the heartbeat interval. */
  HeartbeatTimeout: 'ERR_HEARTBEAT_TIMEOUT',
  /** A URL the client cannot connect to (unknown scheme, no port…). */
  InvalidUrl: 'ERR_INVALID_URL',
} as const;

/** The codes only the client produces, with their meaning (`docs/errors.md` is generated from it). */
export const CLIENT_ERROR_DESCRIPTIONS: Readonly<Record<string, string>> = {
  ERR_CLIENT_CLOSED: 'Calls on a client after `close()` (or pending when it was called) reject with this.',
  ERR_INVALID_URL: 'A URL the client cannot connect to (unknown scheme, no port, no path for `unix:`).',
};

export interface ResolvedReconnect {
  initialDelayMs: number;
  maxDelayMs: number;
  maxAttempts: number;
  shouldReconnect: ((event: DisconnectEvent) => boolean) | null;
}

export interface ResolvedOptions {
  codecs: readonly PayloadCodec[];
  heartbeatMs: number;
  maxFrameSize: number;
  initialWindow: number;
  maxConcurrentCalls: number;
  features: number;
  defaultTimeoutMs: number;
  handshakeTimeoutMs: number;
  reconnect: ResolvedReconnect | null;
  retryGoingAway: boolean;
}

function count(value: number | undefined, fallback: number, name: string, min = 0, max = 0xffff_ffff): number {
  if (value === undefined) return fallback;
  if (!(Number.isInteger(value) && value >= min && value <= max)) {
    throw new RangeError(`${name} must be an integer in ${min}…${max}, got ${String(value)}`);
  }
  return value;
}

/** Validates the options and fills in the defaults (throws a RangeError for bad values). */
export function resolveOptions(options: ClientOptions): ResolvedOptions {
  const codecs = options.codecs ?? payloadCodecs;
  if (codecs.length === 0 || codecs.length > 255) throw new RangeError('codecs must list 1…255 codecs');
  const reconnect = options.reconnect ?? {};
  return {
    codecs,
    heartbeatMs: count(options.heartbeatMs, 0, 'heartbeatMs'),
    maxFrameSize: count(options.maxFrameSize, 16 * 1024 * 1024, 'maxFrameSize', 1024),
    initialWindow: count(options.initialWindow, 1024 * 1024, 'initialWindow', 1024),
    maxConcurrentCalls: count(options.maxConcurrentCalls, 256, 'maxConcurrentCalls'),
    features: count(options.features, ALL_FEATURES, 'features', 0, ALL_FEATURES),
    defaultTimeoutMs: count(options.defaultTimeoutMs, 0, 'defaultTimeoutMs', 0, Number.MAX_SAFE_INTEGER),
    handshakeTimeoutMs: count(options.handshakeTimeoutMs, 10_000, 'handshakeTimeoutMs', 0, 0x7fff_ffff),
    reconnect:
      reconnect === false
        ? null
        : {
            initialDelayMs: count(reconnect.initialDelayMs, 250, 'reconnect.initialDelayMs', 0, 0x7fff_ffff),
            maxDelayMs: count(reconnect.maxDelayMs, 10_000, 'reconnect.maxDelayMs', 0, 0x7fff_ffff),
            maxAttempts: reconnect.maxAttempts === undefined || reconnect.maxAttempts === Infinity ? Infinity : count(reconnect.maxAttempts, 0, 'reconnect.maxAttempts'),
            shouldReconnect: reconnect.shouldReconnect ?? null,
          },
    retryGoingAway: options.retryGoingAway ?? true,
  };
}

/**
 * The delay before reconnect attempt `attempt` (1-based): exponential
 * back-off with "equal jitter" (half fixed, half random), so that many
 * clients dropped at once do not come back in lockstep, while none retries
 * at once in a tight loop.
 */
export function backoffDelay(attempt: number, reconnect: ResolvedReconnect, random: () => number = Math.random): number {
  const exp = Math.min(reconnect.maxDelayMs, reconnect.initialDelayMs * 2 ** Math.min(attempt - 1, 30));
  return Math.round(exp / 2 + random() * (exp / 2));
}
