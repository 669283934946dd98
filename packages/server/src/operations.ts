/**
 * Channel and connection operations that work from any thread: the main
 * thread (`Server`) and every worker (`App`) share this one implementation.
 * Each is one synchronous native call that only enqueues: fan-out happens
 * natively, no JavaScript runs per recipient.
 */
import { EventEmitter } from 'node:events';
import { type NativeHttpRouteStats, type NativeServerHandle, type NativeStats, native as nativeModule } from './native.js';
import { SwitchboardError, liftNativeError, publishedCount } from './errors.js';
import { type HistoryPage, type HistoryQuery, readHistory } from './history.js';
import { type PresenceMember, readPresence, writePresenceInfo } from './presence.js';

/** What may be sent: text (a string) or bytes. */
export type MessageData = string | ArrayBuffer | ArrayBufferView;

/** The outcome of a send. */
export const SendStatus = {
  /** Queued; the connection keeps up. */
  SENT: 0,
  /** Queued behind unread data; a `drain` event follows when it catches up. */
  BUFFERED: 1,
  /** Refused: over `maxBackpressure` (counted in `messagesDropped`), or closed by the slow-consumer policy. */
  DROPPED: 2,
  /** Refused: the connection is closed or closing. */
  CLOSED: 3,
  /**
   * Handed to the broker for the server the connection lives on (its id names it: `nodeOf(id)`); that server
   * delivers it natively. Whether the connection is still there is not known here (docs/scale-out.md).
   */
  FORWARDED: 4,
} as const;
export type SendStatus = (typeof SendStatus)[keyof typeof SendStatus];

/** Server counters (see `docs/api.md#stats`). */
export type Stats = NativeStats;
/** One route's HTTP responses in `Stats.http` (docs/http.md, "Metrics"). */
export type HttpRouteStats = NativeHttpRouteStats;

/** A target of `publishTo`: a channel name, or a connection / virtual socket id. */
export type PublishTarget = string | number;

export interface PublishOptions {
  /** Treat the message as binary (default: true unless `data` is a string). */
  binary?: boolean;
  /** Skip this connection (the sender). */
  exclude?: number;
}

const encoder = new TextEncoder();

/** Bits of a connection id below its node number (docs/scale-out.md, "Node numbers and connection ids"). */
const LOCAL_ID_BITS = 43;

/**
 * The node number in a connection (or virtual socket) id: the server it lives on, among the servers sharing a
 * `broker` (`stats().brokerNode` on that server); 0 for a server without a broker.
 */
export function nodeOf(id: number): number {
  return Math.floor(id / 2 ** LOCAL_ID_BITS);
}

/**
 * Close codes an application may send (RFC 6455 §7.4): 1000-1003,
 * 1007-1014, and 3000-4999 for libraries and applications. 1005, 1006 and
 * 1015 are reserved for reporting and must never be sent.
 */
export function checkCloseCode(code: number): number {
  const valid =
    Number.isInteger(code) &&
    ((code >= 1000 && code <= 1003) || (code >= 1007 && code <= 1014) || (code >= 3000 && code <= 4999));
  if (!valid) throw new SwitchboardError('ERR_INVALID_OPTION', `${String(code)} is not a close code an application may send`);
  return code;
}

/** Bytes and binary flag of a message, without copying bytes that are already bytes. */
export function toBytes(data: MessageData, binary?: boolean): [Uint8Array, boolean] {
  if (typeof data === 'string') return [encoder.encode(data), binary ?? false];
  if (data instanceof Uint8Array) return [data, binary ?? true];
  if (ArrayBuffer.isView(data)) return [new Uint8Array(data.buffer, data.byteOffset, data.byteLength), binary ?? true];
  if (data instanceof ArrayBuffer) return [new Uint8Array(data), binary ?? true];
  throw new SwitchboardError('ERR_INVALID_OPTION', 'a message must be a string, an ArrayBuffer or a typed array');
}

export class Operations extends EventEmitter {
  /** Set once the server is listening (main) or the worker is attached. */
  protected handle: NativeServerHandle | undefined;
  /** `handle.id`, read once: a class getter costs a locked table entry per call. */
  private serverId = 0;

  /** Attach to (or, with `undefined`, detach from) a native server. */
  protected setHandle(handle: NativeServerHandle | undefined): void {
    this.handle = handle;
    this.serverId = handle?.id ?? 0;
  }

  /** The attached handle; throws `ERR_NOT_LISTENING` when there is none. */
  protected get native(): NativeServerHandle {
    if (!this.handle) throw new SwitchboardError('ERR_NOT_LISTENING', 'the server is not listening');
    return this.handle;
  }

  /** The attached server's id, for the per-message module functions. */
  private requireServerId(): number {
    this.native; // the attach check
    return this.serverId;
  }

  /**
   * Send to one connection (from any worker). With a `broker`, the connection may live on another server: the
   * message goes there through Redis and this returns `SendStatus.FORWARDED`; it throws `ERR_BROKER_UNAVAILABLE` (or
   * `ERR_BROKER_BACKLOG`) when the broker cannot take it.
   */
  send(connection: number, data: MessageData, binary?: boolean): SendStatus {
    const [bytes, isBinary] = toBytes(data, binary);
    const status = nativeModule.send(this.requireServerId(), connection, bytes, isBinary);
    return (status < 0 ? publishedCount(status) : status) as SendStatus;
  }

  /**
   * Publish to a channel; returns the number of recipients (on this
   * server). With a `broker`, the message reaches every server's
   * subscribers, this one's included once it comes back from the broker;
   * it throws `ERR_BROKER_UNAVAILABLE` (or `ERR_BROKER_BACKLOG`) when the
   * broker cannot take it, and then nothing is delivered anywhere.
   */
  publish(channel: string, data: MessageData, options: PublishOptions = {}): number {
    const [bytes, isBinary] = toBytes(data, options.binary);
    return publishedCount(nativeModule.publish(this.requireServerId(), channel, bytes, isBinary, options.exclude ?? null));
  }

  /**
   * Publish to a mixed list of channels (strings) and connections or virtual
   * sockets (numbers). A subscriber reached through several targets gets the
   * message once. Returns the number of recipients on this server. With a
   * `broker`, on every server: ids of other servers go to their server (one
   * message per server), and a list that names channels goes to every
   * server, each delivering to its own recipients once (docs/scale-out.md);
   * throws `ERR_BROKER_UNAVAILABLE` / `ERR_BROKER_BACKLOG` as `publish` does.
   */
  publishTo(targets: readonly PublishTarget[], data: MessageData, options: PublishOptions = {}): number {
    const channels: string[] = [];
    const ids: number[] = [];
    for (const t of targets) (typeof t === 'string' ? channels : ids).push(t as never);
    const [bytes, isBinary] = toBytes(data, options.binary);
    try {
      return this.native.publishTo(channels, ids, bytes, isBinary, options.exclude ?? null);
    } catch (error) {
      throw liftNativeError(error);
    }
  }

  /**
   * Add `delta` (default 1) to the subscription count of each subscriber
   * (a connection or virtual socket id) on `channel`; a count reaching 0
   * unsubscribes. Returns the ids whose membership changed. With a
   * `broker`, ids of other servers are handed to their server (one message
   * per server) and are never in the result: that server decides.
   */
  subscribe(subscribers: number | readonly number[], channel: string, delta = 1): number[] {
    const ids = typeof subscribers === 'number' ? [subscribers] : [...subscribers];
    try {
      return this.native.subscribe(ids, channel, delta);
    } catch (error) {
      throw liftNativeError(error);
    }
  }

  /**
   * Remove a subscription whatever its count; true if there was one (or, for
   * a subscriber of another server, once the request is handed to the broker).
   */
  unsubscribe(subscriber: number, channel: string): boolean {
    try {
      return this.native.unsubscribe(subscriber, channel);
    } catch (error) {
      throw liftNativeError(error);
    }
  }

  isSubscribed(subscriber: number, channel: string): boolean {
    return this.native.isSubscribed(subscriber, channel);
  }

  /** Subscribers of a channel (uWebSockets.js `numSubscribers`). */
  numSubscribers(channel: string): number {
    return this.native.subscriberCount(channel);
  }

  hasSubscriptions(channel: string): boolean {
    return this.native.subscriberCount(channel) > 0;
  }

  /** Ids subscribed to a channel. */
  subscribers(channel: string): number[] {
    return this.native.subscribersOf(channel);
  }

  /** Channels a connection or virtual socket is subscribed to (uWebSockets.js `getTopics`). */
  getTopics(subscriber: number): string[] {
    return this.native.channelsOf(subscriber);
  }

  /** Subscribe every subscriber of `from` to `to`; returns the newly subscribed ids. */
  copySubscriptions(from: string, to: string): number[] {
    return this.native.copySubscriptions(from, to);
  }

  /**
   * Create a virtual socket pointing at a connection or another virtual
   * socket. It subscribes like a connection; what it receives goes to its
   * target with `tag` in front. Returns its id.
   */
  createVirtualSocket(target: number, tag?: MessageData): number {
    const id = this.native.createVirtualSocket(target, tag === undefined ? null : toBytes(tag)[0]);
    if (id < 0) throw new SwitchboardError('ERR_INVALID_OPTION', `no connection or virtual socket ${target}`);
    return id;
  }

  /**
   * Delete a virtual socket and every virtual socket pointing at it, with
   * all their subscriptions. With `expectedTarget`, only if it points there.
   * Returns the deleted ids.
   */
  deleteVirtualSocket(id: number, expectedTarget?: number): number[] {
    try {
      return this.native.deleteVirtualSocket(id, expectedTarget ?? null);
    } catch (error) {
      throw liftNativeError(error);
    }
  }

  /**
   * A channel's history, kept in the broker for the channels its
   * `broker.history` names: the publications after `since` (or the newest
   * `limit`), oldest first, and the channel's position now. Rejects with
   * `ERR_HISTORY_UNAVAILABLE` (no broker, or no history for the channel)
   * or `ERR_BROKER_UNAVAILABLE`.
   */
  async history(channel: string, query: HistoryQuery = {}): Promise<HistoryPage> {
    return readHistory(this.native, channel, query);
  }

  /**
   * The members of a channel that keeps presence (`broker.presence`), on
   * every server, with their info. Rejects with `ERR_PRESENCE_UNAVAILABLE`
   * (no broker, or no presence for the channel) or `ERR_BROKER_UNAVAILABLE`.
   */
  async presence(channel: string): Promise<PresenceMember[]> {
    return readPresence(this.native, channel);
  }

  /**
   * What a connection shows in presence (any JSON value): used when it
   * joins a presence channel, and in the channels it is in already. Set it
   * before subscribing (in `open`) so its join carries it. False without
   * a broker.
   */
  setPresenceInfo(connection: number, info: unknown): boolean {
    return writePresenceInfo(this.native, connection, info);
  }

  /**
   * Start the closing handshake of any connection; with a `broker`, of a
   * connection on any server (true once handed to the broker; throws
   * `ERR_BROKER_*` when it cannot take it).
   */
  end(connection: number, code = 1000, reason = ''): boolean {
    try {
      return this.native.end(connection, checkCloseCode(code), reason);
    } catch (error) {
      throw liftNativeError(error);
    }
  }

  /** Drop any connection without a closing handshake (on any server, as `end`). */
  terminate(connection: number): boolean {
    try {
      return this.native.terminate(connection);
    } catch (error) {
      throw liftNativeError(error);
    }
  }

  /** Counters of the whole server and of each worker. */
  stats(): Stats {
    return this.native.stats();
  }

  /** Every counter in Prometheus's text format (docs/http.md, "Metrics"), as the `metrics` endpoint serves it. */
  metricsText(): string {
    return this.native.metricsText();
  }
}
