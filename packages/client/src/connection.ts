/**
 * One connection of the client: a transport, the handshake, then a `Peer`
 * fed by a `FrameDecoder`, and the heartbeat (docs/protocol.md §2, §4
 * HEARTBEAT). The `Client` makes a new one for every (re)connect and hears
 * back through `ConnectionHooks`; `ended` is called exactly once.
 */

import type { Frame, GoAwayFrame, IncomingCall, IncomingHandler, WelcomeFrame } from 'switchboard-rpc';
import { FrameDecoder, MAX_HANDSHAKE_SIZE, Peer, ProtocolError, RpcError, RpcErrorCode, encodeFrame } from 'switchboard-rpc';
import { chosenCodec, goAwayBytes, helloBytes, localSettings, refusalMessage, serverInfo } from './handshake.js';
import type { ConnectData, ResolvedOptions, ServerInfo } from './options.js';
import { ClientErrorCode } from './options.js';
import type { CloseReason, Transport, TransportClose, TransportFactory } from './transport.js';

const PING = encodeFrame({ type: 'heartbeat', pong: false });
const now = (): number => (typeof performance !== 'undefined' ? performance.now() : Date.now());

/** How a connection ended, as the client reports it (`willReconnect` is the client's call). */
export interface Ending {
  code: string;
  message: string;
  error?: Error;
  wasOpen: boolean;
}

export interface ConnectionHooks {
  opened(server: ServerInfo): void;
  ended(ending: Ending): void;
  goAway(frame: GoAwayFrame): void;
  handlerError(error: unknown, call: IncomingCall): void;
}

export interface ConnectionSettings extends ResolvedOptions {
  exposeHandlerErrors: boolean;
  connectData: () => ConnectData | Promise<ConnectData>;
  handler: IncomingHandler;
}

type Phase = 'connecting' | 'handshake' | 'open' | 'done';

/** A `ping()` waiting for its pong: when it was sent, and its promise's ends. */
interface PingWaiter {
  sentAt: number;
  resolve(ms: number): void;
  reject(error: Error): void;
}

export class Connection {
  peer: Peer | null = null;
  server: ServerInfo | null = null;
  private phase: Phase = 'connecting';
  private transport: Transport | null = null;
  private readonly local;
  private readonly decoder: FrameDecoder;
  private handshakeTimer: ReturnType<typeof setTimeout> | null = null;
  private heartbeatTimer: ReturnType<typeof setTimeout> | null = null;
  private heartbeatMs = 0;
  private lastReceived = 0;
  /** `lastReceived` when the last ping went out: one ping per silence. */
  private pingedAt = -1;
  private goAwayFrame: GoAwayFrame | null = null;
  /** `drain()` sent our GO_AWAY: the server may close first (§2.4), which is the end we asked for. */
  private draining = false;
  /**
   * Pongs owed by the server, in the order the pings went out (a server
   * answers them in order): a `ping()` waiting, or null for a heartbeat's own.
   */
  private pongsOwed: (PingWaiter | null)[] = [];
  /** Pings asked for this tick, written together from a microtask. */
  private pingsDue = 0;

  constructor(
    private readonly factory: TransportFactory,
    private readonly settings: ConnectionSettings,
    private readonly hooks: ConnectionHooks,
  ) {
    this.local = localSettings(settings);
    // Until the WELCOME, the handshake's own limit (docs/protocol.md §2).
    this.decoder = new FrameDecoder({ maxFrameSize: MAX_HANDSHAKE_SIZE, expectPreface: true });
  }

  private get ended(): boolean {
    return this.phase === 'done';
  }

  get isOpen(): boolean {
    return this.phase === 'open';
  }

  /** The name of the transport carrying it (`Transport.name`), or null. */
  get transportName(): string | null {
    return this.transport?.name ?? null;
  }

  /** Open, and neither side sent GO_AWAY: new calls may go out on it. */
  get usablePeer(): Peer | null {
    const peer = this.peer;
    return this.phase === 'open' && peer !== null && !peer.isGoingAway ? peer : null;
  }

  /** Opens the transport (after the connect data, which may be asynchronous). */
  async start(): Promise<void> {
    const ms = this.settings.handshakeTimeoutMs;
    if (ms > 0) {
      this.handshakeTimer = setTimeout(() => {
        this.handshakeTimer = null;
        this.abort(ClientErrorCode.HandshakeTimeout, `no WELCOME from the server within ${ms} ms`);
      }, ms);
    }
    let data: ConnectData;
    try {
      data = await this.settings.connectData();
    } catch (error) {
      this.end({ code: ClientErrorCode.Disconnected, message: 'the connect data could not be produced', error: asError(error), wasOpen: false });
      return;
    }
    if (this.phase !== 'connecting') return;
    try {
      this.transport = this.factory({
        onOpen: () => this.onOpen(data),
        onData: (bytes) => this.onData(bytes),
        onClose: (info) => this.onClose(info),
      });
    } catch (error) {
      this.end({ code: ClientErrorCode.Disconnected, message: 'the transport could not be opened', error: asError(error), wasOpen: false });
    }
  }

  /**
   * Graceful end (`client.close()`): GO_AWAY, then wait (at most
   * `timeoutMs`) for calls in flight both ways, then close.
   */
  async drain(timeoutMs: number): Promise<void> {
    const peer = this.peer;
    if (this.phase !== 'open' || peer === null) return;
    this.draining = true;
    peer.goAway();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, timeoutMs);
    });
    await Promise.race([peer.whenIdle(), timeout]);
    clearTimeout(timer);
  }

  /** Ends the connection now: pending calls fail with `ERR_DISCONNECTED`. */
  abort(code: string, message: string, error?: Error): void {
    if (this.phase === 'done') return;
    this.finish({ code, message, error: error ?? new ProtocolError(code, message), wasOpen: this.phase === 'open' });
  }

  // ------------------------------------------------------------ transport events

  private onOpen(data: ConnectData): void {
    if (this.phase !== 'connecting') return;
    if (this.transport === null) {
      // Called from inside the factory: write once it has returned.
      queueMicrotask(() => this.onOpen(data));
      return;
    }
    this.phase = 'handshake';
    this.lastReceived = now();
    let hello: Uint8Array;
    try {
      hello = helloBytes(this.local, this.settings.codecs, data);
    } catch (error) {
      this.abort(ClientErrorCode.Disconnected, `the HELLO cannot be encoded: ${asError(error).message}`, asError(error));
      return;
    }
    this.transport.write(hello);
  }

  private onData(bytes: Uint8Array): void {
    if (this.phase !== 'handshake' && this.phase !== 'open') return;
    // Only the heartbeat reads it (and the WELCOME starts it): no clock reading per chunk without one.
    if (this.heartbeatMs > 0 || this.phase === 'handshake') this.lastReceived = now();
    this.decoder.push(bytes);
    try {
      for (let frame = this.decoder.next(); frame !== null; frame = this.decoder.next()) {
        if (this.phase === 'open') {
          this.peer!.receive(frame);
          if (frame.type === 'heartbeat' && frame.pong && !this.ended) this.onPong();
        } else {
          this.handshakeFrame(frame);
        }
        if (this.ended) return; // a violation, a refusal, or a listener closed the client
      }
      if (this.transport?.framing === 'message' && this.decoder.buffered > 0) {
        throw new ProtocolError('ERR_PROTOCOL_MALFORMED', 'a WebSocket message ended inside a frame');
      }
    } catch (error) {
      if (!(error instanceof ProtocolError)) throw error;
      this.violation(error);
    }
  }

  private onClose(info: TransportClose): void {
    if (this.phase === 'done') return;
    const goAway = this.goAwayFrame;
    const wasOpen = this.phase === 'open';
    if (this.draining && wasOpen && info.error === undefined) {
      // The server closed once our calls were done, as the receiver of our
      // GO_AWAY does: the close we were about to make ourselves.
      this.end({ code: ClientErrorCode.ClientClosed, message: 'the client was closed', wasOpen });
    } else if (goAway !== null) {
      this.end({ code: goAway.code, message: goAway.message || `the server went away (${goAway.code})`, error: info.error, wasOpen });
    } else {
      const detail = info.error?.message ?? (info.closeCode === undefined ? '' : `WebSocket close code ${info.closeCode}`);
      const message = `the connection ${wasOpen ? 'was lost' : 'could not be established'}${detail === '' ? '' : `: ${detail}`}`;
      // A transport that names a protocol code (a text WebSocket message) keeps it.
      const code = protocolCode(info.error) ?? ClientErrorCode.Disconnected;
      this.end({ code, message, error: info.error, wasOpen });
    }
  }

  // ------------------------------------------------------------ handshake

  private handshakeFrame(frame: Frame): void {
    if (frame.type === 'goAway') {
      // A refusal: no WELCOME will come. The server closes; so do we.
      this.goAwayFrame = frame;
      this.abort(frame.code, refusalMessage(frame));
      return;
    }
    if (frame.type !== 'welcome') {
      throw new ProtocolError('ERR_PROTOCOL_HANDSHAKE', `the server's first frame is ${frame.type}, not WELCOME`);
    }
    this.welcome(frame);
  }

  private welcome(frame: WelcomeFrame): void {
    const codec = chosenCodec(frame, this.settings.codecs);
    this.decoder.maxFrameSize = this.settings.maxFrameSize;
    const settings = this.settings;
    const peer = new Peer({
      local: this.local,
      remote: frame,
      codec,
      write: (bytes) => this.transport?.write(bytes),
      // Large payloads by reference where the transport can take a frame in parts.
      writeParts: this.transport?.writeParts && ((parts) => this.transport?.writeParts?.(parts)),
      handler: settings.handler,
      defaultTimeoutMs: settings.defaultTimeoutMs,
      exposeHandlerErrors: settings.exposeHandlerErrors,
      // The peer wrote GO_AWAY with the code and closed itself.
      onProtocolError: (error) => this.finish({ code: error.code, message: error.message, error, wasOpen: true }),
      onGoAway: (goAway) => this.onGoAway(goAway),
      onHandlerError: (error, call) => this.hooks.handlerError(error, call),
    });
    this.peer = peer;
    this.server = serverInfo(frame, settings.features);
    this.phase = 'open';
    if (this.handshakeTimer !== null) clearTimeout(this.handshakeTimer);
    this.handshakeTimer = null;
    this.heartbeatMs = frame.heartbeatMs;
    this.scheduleHeartbeat(this.heartbeatMs);
    this.hooks.opened(this.server);
  }

  /** GO_AWAY: no new calls here; once calls in flight (both ways) are done, close. */
  private onGoAway(frame: GoAwayFrame): void {
    this.goAwayFrame = frame;
    this.hooks.goAway(frame);
    const peer = this.peer!;
    void peer.whenIdle().then(() => {
      if (this.phase !== 'open' || this.peer !== peer) return;
      this.finish({ code: frame.code, message: frame.message || `the server went away (${frame.code})`, wasOpen: true }, 'ERR_GOING_AWAY');
    });
  }

  /** A violation by the server: GO_AWAY with its code when the server speaks our protocol, then close. */
  private violation(error: ProtocolError): void {
    if (this.phase === 'open') {
      this.peer!.fail(error); // writes GO_AWAY; calls fail with ERR_DISCONNECTED
    } else if (error.code !== 'ERR_PROTOCOL_PREFACE' && error.code !== 'ERR_PROTOCOL_VERSION') {
      const bytes = goAwayBytes(error.code, error.message);
      if (bytes !== null) this.transport?.write(bytes);
    }
    this.abort(error.code, error.message, error);
  }

  // ------------------------------------------------------------ heartbeat

  /**
   * A HEARTBEAT ping now (after the frames the peer has batched); resolves
   * with the round trip in milliseconds when its pong arrives.
   */
  ping(): Promise<number> {
    if (this.phase !== 'open') return Promise.reject(new RpcError(RpcErrorCode.Disconnected, 'the connection is not open'));
    return new Promise<number>((resolve, reject) => {
      this.sendPing({ sentAt: now(), resolve, reject });
    });
  }

  private sendPing(waiter: PingWaiter | null): void {
    this.pongsOwed.push(waiter);
    if (this.pingsDue++ === 0) queueMicrotask(this.writePings);
  }

  /**
   * The pings of this tick in one write, after what the peer has batched
   * (so that none lands between a MESSAGE and its STREAM_OPENs, §4).
   */
  private readonly writePings = (): void => {
    const count = this.pingsDue;
    this.pingsDue = 0;
    if (this.phase !== 'open') return; // end() failed the waiters
    this.peer?.flush();
    if (count === 1) {
      this.transport?.write(PING);
      return;
    }
    const bytes = new Uint8Array(PING.length * count);
    for (let i = 0; i < count; i++) bytes.set(PING, i * PING.length);
    this.transport?.write(bytes);
  };

  private onPong(): void {
    const waiter = this.pongsOwed.shift();
    // An unsolicited pong (none owed) is harmless: any frame is a sign of life.
    if (waiter != null) waiter.resolve(now() - waiter.sentAt);
  }

  private scheduleHeartbeat(delay: number): void {
    if (this.heartbeatMs === 0) return;
    this.heartbeatTimer = setTimeout(this.checkHeartbeat, Math.max(1, Math.ceil(delay)));
  }

  /**
   * One timer per connection, re-armed for the next deadline instead of
   * being reset on every received chunk (cheap at high message rates).
   */
  private readonly checkHeartbeat = (): void => {
    this.heartbeatTimer = null;
    if (this.phase !== 'open') return;
    const ms = this.heartbeatMs;
    const idle = now() - this.lastReceived;
    if (idle >= 2 * ms) {
      const error = new ProtocolError(ClientErrorCode.HeartbeatTimeout, `nothing received from the server for ${Math.round(idle)} ms`);
      this.violation(error);
      return;
    }
    if (idle >= ms) {
      if (this.pingedAt !== this.lastReceived) {
        this.pingedAt = this.lastReceived;
        // The peer has no ping of its own: the frame goes straight to the
        // transport (see writePings).
        this.sendPing(null);
      }
      this.scheduleHeartbeat(2 * ms - idle);
    } else {
      this.scheduleHeartbeat(ms - idle);
    }
  };

  // ------------------------------------------------------------ ending

  /**
   * Ends the connection from this side: frames batched this tick go out
   * first, then the peer closes (so the transport's own close event, which
   * follows, changes nothing), then the transport closes.
   */
  private finish(ending: Ending, closeCode: string = ending.code): void {
    if (this.phase === 'done') return;
    this.peer?.flush();
    const transport = this.transport;
    this.end(ending);
    const reason: CloseReason = { code: closeCode, message: ending.message };
    transport?.close(reason);
  }

  private end(ending: Ending): void {
    if (this.phase === 'done') return;
    this.phase = 'done';
    if (this.handshakeTimer !== null) clearTimeout(this.handshakeTimer);
    if (this.heartbeatTimer !== null) clearTimeout(this.heartbeatTimer);
    this.handshakeTimer = null;
    this.heartbeatTimer = null;
    // Pending calls and pings reject with ERR_DISCONNECTED, the cause saying why.
    const cause = ending.error ?? new ProtocolError(ending.code, ending.message);
    this.peer?.close(cause);
    const pings = this.pongsOwed;
    this.pongsOwed = [];
    for (const waiter of pings) waiter?.reject(new RpcError(RpcErrorCode.Disconnected, `the connection closed before the pong: ${ending.message}`, { cause }));
    this.hooks.ended(ending);
  }
}

function asError(value: unknown): Error {
  return value instanceof Error ? value : new Error(String(value));
}

function protocolCode(error: Error | undefined): string | undefined {
  return error instanceof ProtocolError ? error.code : undefined;
}
