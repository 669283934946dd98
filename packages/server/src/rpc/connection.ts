/**
 * One Switchboard protocol connection as a worker sees it: the shared
 * `Peer` (switchboard-rpc) fed with the frames the native core checked
 * and delivered, writing through the native `send`. The native side has
 * already done the handshake and answers heartbeats; everything else
 * (calls in both directions, streams, flow control, cancellation) is the
 * peer's, the same code the client runs.
 */
import {
  type Action,
  type CallOptions,
  type NotifyOptions,
  Peer,
  type PeerStats,
  type RpcResponse,
  RpcError,
  RpcErrorCode,
  decodeFrame,
  findCodec,
  rawCodec,
  type HelloFrame,
  type WelcomeFrame,
  ProtocolError,
} from 'switchboard-rpc';
import type { NativeTlsInfo } from '../internal/events.js';
import { SendStatus } from '../operations.js';
import { native, type NativeRecovery, type NativeServerHandle } from '../native.js';
import type { StreamPosition } from 'switchboard-rpc';
import { type TlsInfo, tlsInfo } from '../tls.js';
import type { RpcCall, RpcService } from './service.js';
import type { ClientSubscriptions } from './subscriptions.js';

/**
 * The most data bytes in one STREAM_DATA frame the server sends. With the
 * native high-water mark at a quarter of `rpc.maxBackpressure`, paused
 * stream data holds at most a quarter of the limit plus one chunk, so from
 * 256 KiB up at least half the limit is left for the other frames (which
 * credit does not pace). 64 KiB chunks also keep a response from waiting
 * behind a megabyte of another stream's data, and cost ~2 µs each.
 */
const MAX_STREAM_CHUNK = 64 * 1024;

/** How the connection reached the server: `sockjs` is the protocol carried by a SockJS session on the HTTP transports (`app.sockjs(prefix, { rpc: true })`). */
export type RpcTransport = 'tcp' | 'unix' | 'websocket' | 'tls' | 'sockjs';
/** Indexed by the native transport byte (`Transport` in `crates/runtime/src/events/record.rs`). */
const TRANSPORTS: readonly RpcTransport[] = ['tcp', 'unix', 'websocket', 'tls', 'sockjs'];

/** What the TLS handshake of a `tls` connection settled. */
export type RpcTlsInfo = TlsInfo;

export interface RpcConnectionInit {
  handle: NativeServerHandle;
  serverId: number;
  id: number;
  transport: number;
  remoteAddress: string;
  tls: NativeTlsInfo | undefined;
  hello: HelloFrame;
  welcome: WelcomeFrame;
  service: RpcService;
  defaultTimeoutMs: number;
  onHandlerError(error: unknown, call: RpcCall): void;
}

export class RpcConnection<UserData = unknown> {
  readonly id: number;
  readonly transport: RpcTransport;
  readonly remoteAddress: string;
  /** TLS connections: the server name, protocol, cipher and client certificate. */
  readonly tls: RpcTlsInfo | undefined;
  /** The payload codec negotiated (`raw`, `json`, `msgpack`). */
  readonly codec: string;
  /** The connect data the client sent in its HELLO (a token, for instance). */
  readonly connectData: Uint8Array;
  /** Your own data for this connection. */
  data: UserData | undefined;
  /** @internal */ readonly peer: Peer;
  /** @internal The subscriptions the client made itself (`$sb.subscribe`), once it made one. */
  clientSubscriptions: ClientSubscriptions | undefined;
  private readonly handle: NativeServerHandle;

  constructor(init: RpcConnectionInit) {
    this.id = init.id;
    this.handle = init.handle;
    this.transport = TRANSPORTS[init.transport] ?? 'tcp';
    this.remoteAddress = init.remoteAddress;
    this.tls = tlsInfo(init.tls);
    this.codec = init.welcome.codec;
    this.connectData = init.hello.data;
    const { serverId, id } = init;
    this.peer = new Peer({
      local: init.welcome,
      remote: init.hello,
      // The native side only accepts codecs the options listed, all known here.
      codec: findCodec(init.welcome.codec) ?? rawCodec,
      defaultTimeoutMs: init.defaultTimeoutMs,
      // A closed connection drops the bytes; its close event follows and
      // closes the peer. BUFFERED: the connection's queue passed its
      // high-water mark (or the socket is full): stream data waits for the
      // DRAIN that follows (`drained()`), so credit cannot make the queue
      // pass `rpc.maxBackpressure` (ARCHITECTURE.md, Backpressure).
      write: (bytes) => native.send(serverId, id, bytes, true) !== SendStatus.BUFFERED,
      maxStreamChunk: MAX_STREAM_CHUNK,
      maxOutboundStreams: init.service.limits.maxOutboundStreams,
      handler: (call) => init.service.dispatch(Object.assign(call, { connection: this }) as RpcCall),
      // The peer wrote its GO_AWAY (with the last call id it dispatched):
      // the native side closes without a second one.
      onProtocolError: (error) => this.handle.end(id, 1002, `${error.code}: ${error.message}`, false),
      // The client is leaving: the peer already refuses new calls both
      // ways; once nothing is in flight, the receiver of a GO_AWAY closes
      // (docs/protocol.md §2.4), without a GO_AWAY of its own.
      onGoAway: () => {
        void this.peer.whenIdle().then(() => {
          if (this.peer.isClosed) return;
          this.peer.flush();
          this.handle.end(id, 1000, 'ERR_GOING_AWAY', false);
        });
      },
      onHandlerError: (error, call) => {
        // A one-way message to an unknown action is the client's mistake,
        // not a failure of the server's code.
        if (error instanceof RpcError && error.code === RpcErrorCode.NotImplemented) return;
        init.onHandlerError(error, call as RpcCall);
      },
    });
  }

  /** @internal A frame the native side delivered (already checked). */
  receive(bytes: Uint8Array): void {
    let decoded;
    try {
      decoded = decodeFrame(bytes, 0, Number.MAX_SAFE_INTEGER);
    } catch (error) {
      // The native decoder accepted it, so this is a bug on one side:
      // close rather than guess.
      const code = error instanceof ProtocolError ? error.code : 'ERR_PROTOCOL_MALFORMED';
      this.handle.end(this.id, 1002, code);
      return;
    }
    if (decoded) this.peer.receive(decoded.frame);
  }

  /** @internal The native queue drained after a send reported BUFFERED. */
  drained(): void {
    this.peer.resume();
  }

  /** @internal The connection ended. */
  closed(code: number, reason: string): void {
    this.peer.close(new Error(`connection closed (${code}${reason ? ` ${reason}` : ''})`));
  }

  /** Call the client (it must serve calls: its HELLO's `maxConcurrentCalls` > 0). */
  call<Req, Res>(action: string | Action<Req, Res>, payload?: Req, options?: CallOptions): Promise<Res> {
    return this.peer.call(action as Action<unknown, unknown>, payload, options) as Promise<Res>;
  }

  request(action: string | Action<unknown, unknown>, payload?: unknown, options?: CallOptions): Promise<RpcResponse> {
    return this.peer.request(action as string, payload, options);
  }

  callMany(action: string | Action<unknown, unknown>, payload?: unknown, options?: CallOptions): AsyncIterableIterator<unknown> {
    return this.peer.callMany(action as string, payload, options);
  }

  /** A one-way message to the client. */
  notify(action: string | Action<unknown, unknown>, payload?: unknown, options?: NotifyOptions): void {
    this.peer.notify(action as string, payload, options);
  }

  /**
   * Subscribe this connection to `channel` (refcounted, as for WebSocket
   * connections). Whatever is then published to the channel reaches the
   * client as a one-way message whose action is the channel's name
   * (`client.handle(channel, fn)`); the message is framed once per
   * publish, natively, for every protocol subscriber.
   */
  subscribe(channel: string, delta = 1): boolean {
    return this.handle.subscribe([this.id], channel, delta).length > 0;
  }

  /**
   * @internal Queue for this connection what it missed of `channel` since
   * `since` (it is subscribed already), once the subscription is in effect
   * in the broker (`$sb.recover`).
   */
  recover(channel: string, since: StreamPosition | null): Promise<NativeRecovery> {
    return this.handle.recover(this.id, channel, since?.epoch ?? null, since?.offset ?? 0);
  }

  /**
   * The channels the client subscribed itself to (`client.subscribe()`,
   * allowed by `app.rpc.onSubscribe`), not those the app subscribed it to.
   */
  get clientChannels(): string[] {
    return this.clientSubscriptions?.list ?? [];
  }

  /** Remove the subscription whatever its count; true if there was one. */
  unsubscribe(channel: string): boolean {
    return this.handle.unsubscribe(this.id, channel);
  }

  /** Ask the client to go: GO_AWAY now, then close once its calls are done (or after the close timeout). */
  goAway(message = ''): void {
    this.peer.goAway(RpcErrorCode.GoingAway, message);
  }

  /** Close at once with a GO_AWAY carrying `code` (an `ERR_*` code). */
  close(code = 'ERR_GOING_AWAY', message = ''): void {
    this.handle.end(this.id, 1000, message ? `${code}: ${message}` : code);
  }

  get isOpen(): boolean {
    return !this.peer.isClosed;
  }

  stats(): PeerStats {
    return this.peer.stats();
  }
}
