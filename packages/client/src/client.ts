/**
 * The client: one logical connection to a Switchboard server over a
 * `Transport`, reconnecting when it is lost, with the `Peer`'s API.
 */

import type {
  Action,
  CallOptions,
  GoAwayFrame,
  IncomingCall,
  IncomingHandler,
  NotifyOptions,
  PayloadArgs,
  Peer,
  PeerStats,
  Promisified,
  RpcResponse,
  WrapOptions,
} from 'switchboard-rpc';
import { RpcError, RpcErrorCode, checkChannel, isBuiltinAction, wrap } from 'switchboard-rpc';
import type { ConnectionSettings, Ending } from './connection.js';
import { Connection } from './connection.js';
import type { Unsubscribe } from './emitter.js';
import { Emitter } from './emitter.js';
import { FATAL_CODES } from './handshake.js';
import type { ClientEvents, ClientOptions, ClosedEvent, DisconnectEvent, ResolvedOptions, ServerInfo } from './options.js';
import { ClientErrorCode, ConnectionState, backoffDelay, resolveOptions } from './options.js';
import type { PublicationCallback, SubscribeOptions, SubscriptionHost } from './subscription.js';
import { Subscription } from './subscription.js';
import { Subscriptions } from './subscriptions.js';
import type { TransportFactory } from './transport.js';
import { OpenWaiters, deferredIterator, hasAttachments, releaseWriters } from './waiting.js';

const EMPTY = new Uint8Array(0);
const DEFAULT_CLOSE_TIMEOUT_MS = 5000;
/**
 * A connection that stayed open this long resets the back-off. One lost
 * sooner (a server that accepts, then goes away at once, while it shuts
 * down) keeps the delays growing, so a flapping server is not hammered.
 */
const STABLE_MS = 5000;
const now = (): number => (typeof performance !== 'undefined' ? performance.now() : Date.now());

export interface CloseOptions {
  /**
   * How long calls in flight (both ways) may take to finish after the
   * client's GO_AWAY (default 5000 ms); 0 closes at once, failing them
   * with `ERR_DISCONNECTED`.
   */
  timeoutMs?: number;
}

export interface ClientStats {
  state: ConnectionState;
  /** Calls waiting for a connection. */
  waitingCalls: number;
  /** Failed reconnect attempts since the last open. */
  reconnectAttempts: number;
  /** Channels subscribed or being subscribed to (one each, however many `Subscription`s share it). */
  channels: number;
  /** The current connection's counters, or null when there is none. */
  peer: PeerStats | null;
}

function nameOf(action: string | { readonly name: string }): string {
  return typeof action === 'string' ? action : action.name;
}

function timeoutError(action: string, timeoutMs: number): RpcError {
  return new RpcError(RpcErrorCode.Timeout, `the call to "${action}" timed out after ${timeoutMs} ms`);
}

/**
 * A client of the Switchboard protocol. It connects at once (from a
 * microtask, so that listeners added right after construction see every
 * event), and exposes the `Peer`'s calls, one-way messages and handlers.
 *
 * **Calls while not connected wait.** A call made while the client is
 * connecting, reconnecting, or draining a connection the server is taking
 * away is sent on the next connection once it opens. Its timeout
 * (`timeoutMs`, else `defaultTimeoutMs`) counts from the call, waiting
 * included; its signal can cancel it while it waits. When the client
 * closes for good, waiting calls fail with `ERR_DISCONNECTED`. `notify`
 * does not wait: without a usable connection it throws `ERR_DISCONNECTED`.
 *
 * **Lost connections.** Calls in flight on a connection that is lost fail
 * with `ERR_DISCONNECTED` (they may or may not have been processed). Calls
 * the server refused with a GO_AWAY were not processed: unless they carry
 * streams or files, they are sent again on the next connection
 * (`retryGoingAway`). After a GO_AWAY the connection stays up (state
 * `open`, but new calls wait) until the calls in flight both ways are
 * done, then the client closes it and reconnects.
 *
 * **Reconnecting.** After an open connection is lost, the client retries
 * with exponential back-off and jitter (`reconnect`); the delays start
 * over once a connection has stayed open for 5 s. The first connection
 * is not retried: if it fails, `ready` (and `connect()`) rejects and the
 * client is closed, so that a wrong address or a refused token shows at
 * once. Protocol mismatches (`ERR_PROTOCOL_PREFACE`, `_VERSION`, `_CODEC`,
 * `_HANDSHAKE`) are never retried.
 */
export class Client extends Emitter<ClientEvents> {
  private readonly settings: ResolvedOptions;
  private readonly connectionSettings: ConnectionSettings;
  private readonly factory: TransportFactory;
  private current: ConnectionState = ConnectionState.Connecting;
  private connection: Connection | null = null;
  private readonly readyWaiters = new OpenWaiters();
  private readonly callWaiters = new OpenWaiters();
  private readonly handlers = new Map<string, IncomingHandler>();
  private fallback: IncomingHandler | null;
  /** Reconnect attempts since the last open (for `maxAttempts`). */
  private attempts = 0;
  /** The back-off exponent: reset only by a connection that stayed open `STABLE_MS`. */
  private backoffStep = 0;
  private openedAt = 0;
  private everOpened = false;
  private reconnectTimer: ReturnType<typeof setTimeout> | null = null;
  private closing: Promise<void> | null = null;
  private closedEvent: ClosedEvent | null = null;
  private readonly subscriptions = new Subscriptions({
    usablePeer: () => this.usablePeer(),
    gap: (event) => this.emit('gap', event),
  });
  private readonly subscriptionHost: SubscriptionHost = {
    remove: (subscription) => this.subscriptions.remove(subscription),
    callbackFailed: (error, call) => this.emit('handlererror', { error, call }),
  };

  constructor(options: ClientOptions) {
    super();
    if (typeof options?.transport !== 'function') throw new TypeError('ClientOptions.transport is a TransportFactory');
    this.settings = resolveOptions(options);
    this.factory = options.transport;
    this.fallback = options.handler ?? null;
    const connectData = options.connectData;
    this.connectionSettings = {
      ...this.settings,
      exposeHandlerErrors: options.exposeHandlerErrors === true,
      connectData: typeof connectData === 'function' ? connectData : () => connectData ?? EMPTY,
      handler: (call) => this.dispatch(call),
    };
    for (const [action, fn] of Object.entries(options.handlers ?? {})) this.handle(action, fn);
    queueMicrotask(() => this.startConnection());
  }

  /** Where the client stands (see `ConnectionState`). */
  get state(): ConnectionState {
    return this.current;
  }

  /**
   * Resolves when the client can send calls: now if it can, else at the
   * next open. Rejects (with the close's code) once the client is closed.
   */
  get ready(): Promise<void> {
    if (this.usablePeer() !== null) return Promise.resolve();
    if (this.closedEvent !== null || this.closing !== null) return Promise.reject(this.closedError());
    return this.readyWaiters.wait(0, () => this.closedError());
  }

  /** What the server said in the current connection's WELCOME, or null. */
  get server(): ServerInfo | null {
    return this.connection?.isOpen === true ? this.connection.server : null;
  }

  /**
   * What carries the open connection (`Transport.name`): `'websocket'`,
   * `'xhr-streaming'` or `'xhr-polling'` after a fallback to SockJS,
   * `'tcp'`, `'tls'`, `'unix'`; null while not open (or for a transport
   * without a name).
   */
  get transport(): string | null {
    return this.connection?.isOpen === true ? this.connection.transportName : null;
  }

  /** The current connection's peer (an escape hatch: prefer the client's methods), or null. */
  get peer(): Peer | null {
    return this.connection?.isOpen === true ? this.connection.peer : null;
  }

  stats(): ClientStats {
    return {
      state: this.current,
      waitingCalls: this.callWaiters.size,
      reconnectAttempts: this.attempts,
      channels: this.subscriptions.channelCount,
      peer: this.peer?.stats() ?? null,
    };
  }

  // ------------------------------------------------------------ calls

  /** Calls `action`; resolves with the first response's value (see `Peer.call`). */
  call<Req, Res>(action: Action<Req, Res>, ...args: PayloadArgs<Req, CallOptions>): Promise<Res>;
  call<T = unknown>(action: string, payload?: unknown, options?: CallOptions): Promise<T>;
  call(action: string | Action<unknown, unknown>, payload?: unknown, options?: CallOptions): Promise<unknown> {
    const name = nameOf(action);
    const peer = this.directPeer(options);
    if (peer !== null) return peer.call(name, payload, options);
    return this.run(name, options, (ready, opts) => ready.call(name, payload, opts));
  }

  /** Like `call`, resolving with the first `RpcResponse` (bytes, UUID, streams, files). */
  request<Req, Res>(action: Action<Req, Res>, ...args: PayloadArgs<Req, CallOptions>): Promise<RpcResponse>;
  request(action: string, payload?: unknown, options?: CallOptions): Promise<RpcResponse>;
  request(action: string | Action<unknown, unknown>, payload?: unknown, options?: CallOptions): Promise<RpcResponse> {
    const name = nameOf(action);
    const peer = this.directPeer(options);
    if (peer !== null) return peer.request(name, payload, options);
    return this.run(name, options, (ready, opts) => ready.request(name, payload, opts));
  }

  /** Calls `action` and yields every response's value; ending the loop early cancels the call. */
  callMany<Req, Res>(action: Action<Req, Res>, ...args: PayloadArgs<Req, CallOptions>): AsyncIterableIterator<Res>;
  callMany<T = unknown>(action: string, payload?: unknown, options?: CallOptions): AsyncIterableIterator<T>;
  callMany(action: string | Action<unknown, unknown>, payload?: unknown, options?: CallOptions): AsyncIterableIterator<unknown> {
    const name = nameOf(action);
    return this.runMany(name, options, (peer, opts) => peer.callMany(name, payload, opts));
  }

  /** Like `callMany`, yielding `RpcResponse` objects. */
  requestMany<Req, Res>(action: Action<Req, Res>, ...args: PayloadArgs<Req, CallOptions>): AsyncIterableIterator<RpcResponse>;
  requestMany(action: string, payload?: unknown, options?: CallOptions): AsyncIterableIterator<RpcResponse>;
  requestMany(action: string | Action<unknown, unknown>, payload?: unknown, options?: CallOptions): AsyncIterableIterator<RpcResponse> {
    const name = nameOf(action);
    return this.runMany(name, options, (peer, opts) => peer.requestMany(name, payload, opts));
  }

  /**
   * Sends a one-way message on the current connection. Throws an RpcError
   * when it cannot be sent: `ERR_DISCONNECTED` without a usable connection
   * (one-way messages do not wait), or the peer's own errors.
   */
  notify<Req>(action: Action<Req, unknown>, ...args: PayloadArgs<Req, NotifyOptions>): void;
  notify(action: string, payload?: unknown, options?: NotifyOptions): void;
  notify(action: string | Action<unknown, unknown>, payload?: unknown, options?: NotifyOptions): void {
    const peer = this.usablePeer();
    if (peer === null) {
      releaseWriters(options);
      throw new RpcError(RpcErrorCode.Disconnected, `"${nameOf(action)}" cannot be sent: the client is ${this.current === 'open' ? 'changing connections' : this.current}`);
    }
    peer.notify(nameOf(action), payload, options);
  }

  /**
   * Sends a protocol-level ping (HEARTBEAT) on the current connection and
   * resolves with the round trip in milliseconds when the server's pong
   * arrives (the server's native core answers it, without running any
   * JavaScript). It does not wait for a connection: without an open one it
   * rejects with `ERR_DISCONNECTED`, as it does when the connection is lost
   * before the pong. No timeout of its own (the heartbeat, when on, ends a
   * silent connection).
   */
  ping(): Promise<number> {
    const connection = this.connection;
    if (this.closing !== null || connection === null || !connection.isOpen) {
      return Promise.reject(new RpcError(RpcErrorCode.Disconnected, `cannot ping: the client is ${this.closing === null ? this.current : 'closing'}`));
    }
    return connection.ping();
  }

  /** A proxy whose methods call the actions of the same name (see `wrap` in switchboard-rpc). */
  wrap<T extends object>(options?: WrapOptions): Promisified<T> {
    return wrap<T>(this, options);
  }

  // ------------------------------------------------------------ handlers

  /**
   * Serves calls (and one-way messages) from the server to `action`: `fn`
   * gets the decoded payload (checked by the template's `parse`, for an
   * `Action`) and the call; what it returns or throws is the reply (see
   * `Peer`). Replaces an earlier handler of that action. Returns a function
   * that removes it.
   */
  handle<Req, Res>(action: Action<Req, Res>, fn: (payload: Req, call: IncomingCall) => Res | Promise<Res>): Unsubscribe;
  handle<Req = unknown>(action: string, fn: (payload: Req, call: IncomingCall) => unknown): Unsubscribe;
  handle(action: string | Action<unknown, unknown>, fn: (payload: unknown, call: IncomingCall) => unknown): Unsubscribe {
    const name = nameOf(action);
    if (isBuiltinAction(name)) throw new RpcError(RpcErrorCode.InvalidArgument, `actions starting with "$sb." are the protocol's own, got ${JSON.stringify(name)}`);
    const handler: IncomingHandler = typeof action === 'string' ? (call) => fn(call.decode(), call) : action.implement(fn);
    this.handlers.set(name, handler);
    return () => {
      if (this.handlers.get(name) === handler) this.handlers.delete(name);
    };
  }

  /** Serves the calls no `handle()` registration takes (null: they get `ERR_NOT_IMPLEMENTED`). */
  setHandler(handler: IncomingHandler | null): void {
    this.fallback = handler;
  }

  private dispatch(call: IncomingCall): unknown {
    // A publication for a subscribed channel (§10) goes to its subscriptions, not to a handler.
    if (call.callId === 0 && this.subscriptions.deliver(call)) return undefined;
    const handler = this.handlers.get(call.action) ?? this.fallback;
    if (handler === null) throw new RpcError(RpcErrorCode.NotImplemented, `no handler for "${call.action}"`);
    return handler(call);
  }

  // ------------------------------------------------------------ channels

  /**
   * Subscribes to `channel`: the server's `rpc.onSubscribe` hook decides,
   * and what is then published to the channel arrives here. Iterate the
   * subscription (`for await (const { value } of subscription)`), or pass
   * a callback, which gets each publication's decoded value and the
   * publication. Subscriptions to one channel share one on the server; the
   * last to end unsubscribes it. A subscription made while the client is
   * not connected waits for the connection; after a reconnect every
   * subscription is made again, and a `gap` event (on the subscription and
   * on the client) gives the times between which publications were missed.
   * A template (`defineAction<T>(channel)`) types the values and checks
   * them with its `parse`. Throws `ERR_INVALID_CHANNEL` for a name the
   * protocol cannot carry (empty, over 255 bytes of UTF-8, or `$sb.`…).
   */
  subscribe<T = unknown>(channel: string | Action<T, unknown>, options?: SubscribeOptions): Subscription<T>;
  subscribe<T = unknown>(channel: string | Action<T, unknown>, callback: PublicationCallback<T>, options?: SubscribeOptions): Subscription<T>;
  subscribe<T = unknown>(
    channel: string | Action<T, unknown>,
    callbackOrOptions?: PublicationCallback<T> | SubscribeOptions,
    maybeOptions?: SubscribeOptions,
  ): Subscription<T> {
    const name = nameOf(channel);
    checkChannel(name);
    const callback = typeof callbackOrOptions === 'function' ? callbackOrOptions : null;
    const options = typeof callbackOrOptions === 'function' ? maybeOptions : callbackOrOptions;
    const decoder = typeof channel === 'string' ? null : (call: IncomingCall) => channel.decode(call);
    const subscription = new Subscription<T>(name, this.subscriptionHost, decoder, callback, options);
    if (this.closing !== null || this.closedEvent !== null) {
      const closed = this.closedError();
      subscription.close(closed, closed.code === ClientErrorCode.ClientClosed);
      return subscription;
    }
    this.subscriptions.add(subscription);
    return subscription;
  }

  // ------------------------------------------------------------ closing

  /**
   * Closes the client for good: sends GO_AWAY, lets calls in flight finish
   * (at most `timeoutMs`), then closes the connection. Calls waiting for a
   * connection fail with `ERR_DISCONNECTED` at once.
   */
  close(options: CloseOptions = {}): Promise<void> {
    if (this.closing !== null) return this.closing;
    if (this.closedEvent !== null) return (this.closing = Promise.resolve());
    const timeoutMs = options.timeoutMs ?? DEFAULT_CLOSE_TIMEOUT_MS;
    const closed: ClosedEvent = { code: ClientErrorCode.ClientClosed, message: 'the client was closed' };
    if (this.reconnectTimer !== null) clearTimeout(this.reconnectTimer);
    this.reconnectTimer = null;
    this.readyWaiters.fail(new RpcError(closed.code, closed.message));
    this.callWaiters.fail(new RpcError(RpcErrorCode.Disconnected, 'the client is closing'));
    this.subscriptions.close(new RpcError(closed.code, closed.message), true);
    const connection = this.connection;
    this.closing = (async () => {
      if (connection !== null && timeoutMs > 0) await connection.drain(timeoutMs);
      connection?.abort(closed.code, closed.message);
      this.finish(closed);
    })();
    return this.closing;
  }

  // ------------------------------------------------------------ internals

  private usablePeer(): Peer | null {
    return this.closing === null ? (this.connection?.usablePeer ?? null) : null;
  }

  /**
   * The peer a call goes straight to, when nothing needs watching: a usable
   * connection, and no retry after a GO_AWAY possible (`retryGoingAway` or
   * `reconnect` off, or the call carries attachments). Else null, and the
   * call takes `run`, which waits and retries (the same outcome, with a
   * closure, a clock reading and a promise more per call).
   */
  private directPeer(options: CallOptions | undefined): Peer | null {
    if (this.settings.retryGoingAway && this.settings.reconnect !== null && !hasAttachments(options)) return null;
    return this.usablePeer();
  }

  /** `call`/`request`: at once on a usable connection, else when one opens. */
  private run<T>(action: string, options: CallOptions | undefined, invoke: (peer: Peer, options: CallOptions | undefined) => Promise<T>): Promise<T> {
    // The clock matters only to a timeout that must count a wait.
    const started = (options?.timeoutMs ?? this.settings.defaultTimeoutMs) > 0 ? now() : 0;
    const peer = this.usablePeer();
    if (peer === null) return this.runLater(action, options, invoke, started);
    const result = invoke(peer, options);
    if (!this.settings.retryGoingAway || this.settings.reconnect === null || hasAttachments(options)) return result;
    return result.catch((error: unknown) => {
      if (!this.isRetryable(error)) throw error;
      return this.runLater(action, options, invoke, started);
    });
  }

  private async runLater<T>(
    action: string,
    options: CallOptions | undefined,
    invoke: (peer: Peer, options: CallOptions | undefined) => Promise<T>,
    started: number,
  ): Promise<T> {
    for (;;) {
      const [peer, effective] = await this.acquire(action, options, started);
      try {
        return await invoke(peer, effective);
      } catch (error) {
        if (!this.isRetryable(error) || hasAttachments(options)) throw error;
      }
    }
  }

  /** `callMany`/`requestMany`: at once on a usable connection, else an iterator that starts the call when one opens. */
  private runMany<T>(
    action: string,
    options: CallOptions | undefined,
    invoke: (peer: Peer, options: CallOptions | undefined) => AsyncIterableIterator<T>,
  ): AsyncIterableIterator<T> {
    const peer = this.usablePeer();
    if (peer !== null) return invoke(peer, options);
    const started = now();
    return deferredIterator(async (isWanted) => {
      const [ready, effective] = await this.acquire(action, options, started);
      if (isWanted()) return invoke(ready, effective);
      releaseWriters(options);
      return null;
    });
  }

  /**
   * Waits for a usable connection; returns its peer and the call's options
   * with the timeout left. A call that cannot be sent releases its writers.
   */
  private async acquire(action: string, options: CallOptions | undefined, started: number): Promise<[Peer, CallOptions | undefined]> {
    const timeoutMs = options?.timeoutMs ?? this.settings.defaultTimeoutMs;
    try {
      for (;;) {
        const left = timeoutMs > 0 ? timeoutMs - (now() - started) : 0;
        if (timeoutMs > 0 && left <= 0) throw timeoutError(action, timeoutMs);
        const peer = this.usablePeer();
        if (peer !== null) {
          return [peer, timeoutMs > 0 ? { ...options, timeoutMs: Math.max(1, Math.ceil(left)) } : options];
        }
        if (this.closing !== null || this.closedEvent !== null) {
          throw new RpcError(RpcErrorCode.Disconnected, 'the client is closed', { cause: this.closedError() });
        }
        await this.callWaiters.wait(left, () => timeoutError(action, timeoutMs), options?.signal);
      }
    } catch (error) {
      releaseWriters(options);
      throw error;
    }
  }

  /** The server refused the call in a GO_AWAY without processing it, and another connection may come. */
  private isRetryable(error: unknown): boolean {
    return (
      this.settings.retryGoingAway &&
      this.settings.reconnect !== null &&
      this.closing === null &&
      this.closedEvent === null &&
      error instanceof RpcError &&
      error.code === RpcErrorCode.GoingAway &&
      error.retryable
    );
  }

  private startConnection(): void {
    this.reconnectTimer = null;
    if (this.closing !== null || this.closedEvent !== null) return;
    const connection: Connection = new Connection(this.factory, this.connectionSettings, {
      opened: (server) => this.onOpened(connection, server),
      ended: (ending) => this.onEnded(connection, ending),
      goAway: (frame: GoAwayFrame) => this.emit('goaway', { code: frame.code, message: frame.message, lastCallId: frame.lastCallId }),
      handlerError: (error, call) => this.emit('handlererror', { error, call }),
    });
    this.connection = connection;
    this.emit('connecting', { attempt: this.attempts });
    void connection.start();
  }

  private onOpened(connection: Connection, server: ServerInfo): void {
    if (connection !== this.connection) return;
    const reconnected = this.everOpened;
    this.everOpened = true;
    this.attempts = 0;
    this.openedAt = now();
    // Before anything the application sends: the subscriptions go first.
    this.subscriptions.opened();
    this.setState(ConnectionState.Open);
    this.emit('open', { server, reconnected, transport: connection.transportName });
    this.readyWaiters.open();
    this.callWaiters.open();
  }

  private onEnded(connection: Connection, ending: Ending): void {
    if (connection !== this.connection) return;
    this.connection = null;
    this.subscriptions.lost(ending.code);
    const event: DisconnectEvent = { ...ending, willReconnect: false };
    const reconnect = this.settings.reconnect;
    if (this.closing === null && reconnect !== null && this.everOpened && !FATAL_CODES.has(ending.code) && this.attempts < reconnect.maxAttempts) {
      event.willReconnect = this.askShouldReconnect(reconnect.shouldReconnect, event);
    }
    let delayMs = 0;
    if (event.willReconnect && reconnect !== null) {
      if (ending.wasOpen && now() - this.openedAt >= STABLE_MS) this.backoffStep = 0;
      this.attempts += 1;
      this.backoffStep += 1;
      delayMs = backoffDelay(this.backoffStep, reconnect);
      // Armed before any listener runs, so that a listener may close() the client.
      this.reconnectTimer = setTimeout(() => this.startConnection(), delayMs);
    }
    this.emit('disconnect', event);
    if (this.closing !== null || this.closedEvent !== null) return; // close() finishes
    if (!event.willReconnect) {
      this.finish({ code: ending.code, message: ending.message, error: ending.error });
      return;
    }
    this.setState(ConnectionState.Reconnecting);
    this.emit('reconnecting', { attempt: this.attempts, delayMs, code: ending.code });
  }

  /** The application's say; one that throws means no (and its error is reported like a listener's). */
  private askShouldReconnect(ask: ((event: DisconnectEvent) => boolean) | null, event: DisconnectEvent): boolean {
    if (ask === null) return true;
    try {
      return ask({ ...event, willReconnect: true }) !== false;
    } catch (error) {
      queueMicrotask(() => {
        throw error;
      });
      return false;
    }
  }

  private finish(event: ClosedEvent): void {
    if (this.closedEvent !== null) return;
    this.closedEvent = event;
    if (this.reconnectTimer !== null) clearTimeout(this.reconnectTimer);
    this.reconnectTimer = null;
    this.setState(ConnectionState.Closed);
    this.readyWaiters.fail(this.closedError());
    this.callWaiters.fail(new RpcError(RpcErrorCode.Disconnected, `the client is closed: ${event.message}`, { cause: this.closedError() }));
    this.subscriptions.close(this.closedError(), event.code === ClientErrorCode.ClientClosed);
    this.emit('closed', event);
  }

  private closedError(): RpcError {
    const event = this.closedEvent ?? { code: ClientErrorCode.ClientClosed, message: 'the client is closing' };
    return new RpcError(event.code, event.message, { cause: event.error });
  }

  private setState(state: ConnectionState): void {
    const previous = this.current;
    if (previous === state) return;
    this.current = state;
    this.emit('statechange', { state, previous });
  }
}
