/**
 * The connection object handlers receive. It lives in the worker the
 * connection is pinned to; every method is a synchronous native call.
 */
import { type NativeServerHandle, native } from './native.js';
import { publishedCount } from './errors.js';
import { type MessageData, type PublishOptions, type SendStatus, checkCloseCode, toBytes } from './operations.js';
import type { TlsInfo } from './tls.js';

export class WebSocket<UserData = unknown> {
  /** Whether the connection is still open (false after its `close` event). */
  isOpen = true;

  /** @internal */
  constructor(
    private readonly native: NativeServerHandle,
    /** The native server's id, for the per-message module functions. */
    private readonly serverId: number,
    /** Connection id: a number any worker can use to send, subscribe or close. */
    readonly id: number,
    /** What the `upgrade` hook attached (undefined without a hook). */
    readonly data: UserData,
    /** The peer's address, `ip:port`. */
    readonly remoteAddress: string,
    /** The negotiated subprotocol, or `''`. */
    readonly protocol: string,
    /** The negotiated extensions (`Sec-WebSocket-Extensions`), or `''`. */
    readonly extensions: string,
    /** On a TLS listener (`wss://`): what the handshake settled; `undefined` otherwise. */
    readonly tls: TlsInfo | undefined = undefined,
  ) {}

  /** Send a message; text for strings unless `isBinary` says otherwise. */
  send(data: MessageData, isBinary?: boolean): SendStatus {
    const [bytes, binary] = toBytes(data, isBinary);
    return native.send(this.serverId, this.id, bytes, binary) as SendStatus;
  }

  /**
   * Start the closing handshake (default 1000). Throws `ERR_INVALID_OPTION`
   * for a code an application may not send (e.g. 1005, 1006, 999, 70000).
   */
  end(code = 1000, reason = ''): void {
    this.native.end(this.id, checkCloseCode(code), reason);
  }

  /** Drop the connection without a closing handshake (the peer sees 1006). */
  close(): void {
    this.native.terminate(this.id);
  }

  /** Bytes queued for this connection and not yet written. */
  getBufferedAmount(): number {
    return Math.max(0, this.native.bufferedAmount(this.id));
  }

  /** Subscribe to a channel; true if it was not subscribed. */
  subscribe(channel: string): boolean {
    return this.native.subscribe([this.id], channel, 1).length > 0;
  }

  /** Unsubscribe from a channel, whatever the refcount; true if it was subscribed. */
  unsubscribe(channel: string): boolean {
    return this.native.unsubscribe(this.id, channel);
  }

  isSubscribed(channel: string): boolean {
    return this.native.isSubscribed(this.id, channel);
  }

  /** The channels this connection is subscribed to. */
  getTopics(): string[] {
    return this.native.channelsOf(this.id);
  }

  /**
   * Publish to a channel, excluding this connection (as uWebSockets.js
   * does). With a `broker`, to every server; throws as `server.publish` does
   * when the broker cannot take it.
   */
  publish(channel: string, data: MessageData, options: PublishOptions = {}): number {
    const [bytes, binary] = toBytes(data, options.binary);
    return publishedCount(native.publish(this.serverId, channel, bytes, binary, options.exclude ?? this.id));
  }

  /**
   * Run `fn`; what it sends goes out together when it returns (one
   * vectored write per connection). Handlers already run corked; this is
   * for sends from timers and other callbacks.
   */
  cork(fn: () => void): this {
    native.cork();
    try {
      fn();
    } finally {
      native.uncork();
    }
    return this;
  }
}
