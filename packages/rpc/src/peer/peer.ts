/**
 * The symmetric RPC peer: the protocol's semantics (docs/protocol.md) over
 * decoded frames, for both ends of a connection.
 */

import type { Frame, MessageFrame, ResponseFrame, StreamOpenFrame } from '../codec/index.js';
import { ProtocolError, SequenceCheck } from '../codec/index.js';
import type { CallOptions, CallSink, NotifyOptions } from './calls.js';
import { ResponseQueue, mapResponses, stopAttachments } from './calls.js';
import type { PayloadCodec } from './codecs.js';
import type { PeerCore } from './core.js';
import { Dispatcher } from './dispatch.js';
import { RpcError, RpcErrorCode, isWireCode, messageOf, truncateUtf8 } from './errors.js';
import type { PlannedAttachment } from './files.js';
import { attachmentsOf, releaseSources } from './files.js';
import type { IncomingHandler } from './incoming.js';
import { FrameOutput } from './output.js';
import { CallTable, goingAwayError } from './outgoing.js';
import type { RpcResponse } from './response.js';
import { ReceivedResponse } from './response.js';
import { OutboundStream } from './sender.js';
import type { InboundHost } from './streams.js';
import { InboundStream } from './streams.js';
import type { Action, PayloadArgs } from './templates.js';
import { actionName } from './templates.js';
import type { PeerOptions, PeerSettings, PeerStats, Timers } from './types.js';

const NO_STREAMS: readonly InboundStream[] = [];
const NO_OUTBOUND: readonly OutboundStream[] = [];
/** Fits a GO_AWAY in the smallest allowed frame. */
const MAX_GO_AWAY_MESSAGE = 512;
const defaultTimers: Timers = {
  setTimeout: (callback, ms) => setTimeout(callback, ms),
  clearTimeout: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>),
};

/**
 * `call`'s sink: the first response's value settles the promise. A class
 * rather than an object of closures: one allocation per call instead of three.
 */
class FirstValue implements CallSink {
  constructor(
    private readonly resolve: (value: unknown) => void,
    readonly fail: (error: Error) => void,
  ) {}

  response(response: RpcResponse): void {
    stopAttachments(response); // `call` gives the value only: `request` gives streams and files
    let value: unknown;
    try {
      value = response.value;
    } catch (error) {
      this.fail(error as Error);
      return;
    }
    this.resolve(value);
  }

  end(): void {
    this.resolve(undefined);
  }
}

/** The frame whose STREAM_OPENs are being received. */
interface Collecting {
  frame: MessageFrame | ResponseFrame;
  seq: number;
  streams: InboundStream[];
}

/**
 * One side of a connection, after the handshake. Frames go in through
 * `receive` (decoded by the transport); bytes go out through `write`.
 *
 * **Calls.** `call` resolves with the first response's decoded value (a
 * fast reply's integer; `undefined` when the call ends without a response);
 * `callMany` yields every response's value. `request` and `requestMany`
 * give `RpcResponse` objects instead (bytes, UUID, streams, files). An ERROR
 * rejects with a `RemoteError`. Our calls beyond the other side's
 * `maxConcurrentCalls` wait in a queue until a slot frees. Calls fail with
 * `ERR_TIMEOUT`, `ERR_CANCELLED`, `ERR_DISCONNECTED` or `ERR_GOING_AWAY`
 * (`retryable`: the other side did not process them).
 *
 * **Handlers.** Calls from the other side go to `handler` in arrival order,
 * at most `local.maxConcurrentCalls` at once (more get `ERR_TOO_MANY_CALLS`,
 * not dispatched; one-way messages are not counted). When the handler has
 * not sent its final reply by the time it returns (or its promise settles):
 * - it returned `undefined` → END (ends the call, even after responses);
 * - it returned an integer in 0…2^48-1 → FAST_REPLY with it;
 * - it returned anything else → a last RESPONSE with the value encoded;
 * - it threw an error with a valid string `code` → ERROR with that code,
 *   its message and its `details`;
 * - it threw anything else → ERROR `ERR_HANDLER_FAILED` (and `onHandlerError`).
 *
 * So a call lasts as long as its handler's promise; a handler that has
 * already replied may keep running. Incoming streams the handler never
 * started reading (nor `retain()`ed) are stopped when it settles. What a
 * one-way handler returns is ignored; what it throws goes to `onHandlerError`.
 */
export class Peer {
  readonly local: PeerSettings;
  readonly remote: PeerSettings;
  readonly codec: PayloadCodec;
  /** The features both sides set. */
  readonly features: number;
  private readonly options: PeerOptions;
  private readonly out: FrameOutput;
  /** Also refuses frames of features not in effect (ERR_PROTOCOL_FEATURE, docs/protocol.md §4). */
  private readonly sequence: SequenceCheck;
  private readonly calls: CallTable;
  private readonly dispatcher: Dispatcher;
  private lastStreamId = 0;
  /** The largest STREAM_DATA frame body we send: the other side's maxFrameSize, or less (`maxStreamChunk`). */
  private readonly maxChunkFrame: number;
  private readonly inbound = new Map<number, InboundStream>();
  private readonly outbound = new Map<number, OutboundStream>();
  private collecting: Collecting | null = null;
  private closed = false;
  private goAwaySent = false;
  private goAwayReceived = false;
  private idleWaiters: (() => void)[] = [];

  private readonly inboundHost: InboundHost = {
    sendCredit: (streamId, increment) => this.out.send({ type: 'credit', streamId, increment }),
    sendStop: (streamId, code) => {
      this.out.send({ type: 'stop', streamId, code });
      this.checkIdle();
    },
  };

  constructor(options: PeerOptions) {
    this.options = options;
    this.local = options.local;
    this.remote = options.remote;
    this.codec = options.codec;
    this.features = options.local.features & options.remote.features;
    this.sequence = new SequenceCheck(this.features);
    const chunk = options.maxStreamChunk;
    // A frame body holds the stream id (≤ 6 bytes) and at least one data byte.
    this.maxChunkFrame = chunk === undefined ? options.remote.maxFrameSize : Math.min(options.remote.maxFrameSize, Math.max(7, chunk + 6));
    this.out = new FrameOutput(options.write, options.batchWrites ?? true, (error) => this.close(error), options.writeParts);
    const peer = this;
    const core: PeerCore = {
      options,
      codec: options.codec,
      local: options.local,
      remote: options.remote,
      features: this.features,
      timers: options.timers ?? defaultTimers,
      get closed() {
        return peer.closed;
      },
      get goingAway() {
        return peer.isGoingAway;
      },
      get goAwayReceived() {
        return peer.goAwayReceived;
      },
      send: (frame) => this.out.send(frame),
      openStreams: (planned) => this.openStreams(planned),
      checkOutboundStreams: (count) => this.checkOutboundStreams(count),
      checkIdle: () => this.checkIdle(),
    };
    this.calls = new CallTable(core);
    this.dispatcher = new Dispatcher(core);
  }

  // ---------------------------------------------------------------- calls

  /** Calls `action`; resolves with the first response's value (see the class notes). */
  call<Req, Res>(action: Action<Req, Res>, ...args: PayloadArgs<Req, CallOptions>): Promise<Res>;
  call<T = unknown>(action: string, payload?: unknown, options?: CallOptions): Promise<T>;
  call(action: string | Action<unknown, unknown>, payload?: unknown, options?: CallOptions): Promise<unknown> {
    return new Promise((resolve, reject) => {
      this.calls.start(actionName(action), payload, options, new FirstValue(resolve, reject), 'first');
    });
  }

  /** Like `call`, resolving with the first `RpcResponse` (one of kind `end` when there was none). */
  request<Req, Res>(action: Action<Req, Res>, ...args: PayloadArgs<Req, CallOptions>): Promise<RpcResponse>;
  request(action: string, payload?: unknown, options?: CallOptions): Promise<RpcResponse>;
  request(action: string | Action<unknown, unknown>, payload?: unknown, options?: CallOptions): Promise<RpcResponse> {
    return new Promise((resolve, reject) => {
      const end = () => resolve(ReceivedResponse.end(attachmentsOf(NO_STREAMS)));
      this.calls.start(actionName(action), payload, options, { response: resolve, end, fail: reject }, 'first');
    });
  }

  /**
   * Calls `action` and yields the value of every response until the last.
   * Ending the loop early cancels the call. The call is sent at once, not
   * at the first iteration; errors are thrown by the iteration.
   */
  callMany<Req, Res>(action: Action<Req, Res>, ...args: PayloadArgs<Req, CallOptions>): AsyncIterableIterator<Res>;
  callMany<T = unknown>(action: string, payload?: unknown, options?: CallOptions): AsyncIterableIterator<T>;
  callMany(action: string | Action<unknown, unknown>, payload?: unknown, options?: CallOptions): AsyncIterableIterator<unknown> {
    return mapResponses(this.requestMany(actionName(action), payload, options), (response) => {
      stopAttachments(response);
      return response.value;
    });
  }

  /** Like `callMany`, yielding `RpcResponse` objects. */
  requestMany<Req, Res>(action: Action<Req, Res>, ...args: PayloadArgs<Req, CallOptions>): AsyncIterableIterator<RpcResponse>;
  requestMany(action: string, payload?: unknown, options?: CallOptions): AsyncIterableIterator<RpcResponse>;
  requestMany(action: string | Action<unknown, unknown>, payload?: unknown, options?: CallOptions): AsyncIterableIterator<RpcResponse> {
    const queue = new ResponseQueue(() => {
      if (call !== null) this.calls.cancel(call, new RpcError(RpcErrorCode.Cancelled, 'the call was cancelled'));
    });
    const call = this.calls.start(actionName(action), payload, options, queue, 'many');
    return queue;
  }

  /**
   * Sends a one-way message: no response, no state kept. Throws an RpcError
   * when it cannot be sent (closed, going away, invalid arguments).
   */
  notify<Req>(action: Action<Req, unknown>, ...args: PayloadArgs<Req, NotifyOptions>): void;
  notify(action: string, payload?: unknown, options?: NotifyOptions): void;
  notify(action: string | Action<unknown, unknown>, payload?: unknown, options?: NotifyOptions): void {
    const name = actionName(action);
    let message;
    try {
      message = this.calls.prepare(name, payload, options);
    } catch (error) {
      releaseSources(options, error instanceof Error ? error : new Error(String(error)));
      throw error;
    }
    this.calls.notify(name, message);
  }

  /** Sets (or removes) the handler of incoming calls. */
  setHandler(handler: IncomingHandler | null): void {
    this.dispatcher.handler = handler;
  }

  // ---------------------------------------------------------------- input

  /** Feeds one decoded frame. Protocol violations end the connection (see `onProtocolError`). */
  receive(frame: Frame): void {
    if (this.closed) return;
    try {
      this.sequence.check(frame);
      switch (frame.type) {
        case 'message':
          if (frame.callId !== 0) this.dispatcher.highestCallId = frame.callId;
          // Dispatched (and counted for a GO_AWAY) once its attachments are in.
          if (frame.attachments > 0) this.collecting = { frame, seq: 0, streams: [] };
          else this.dispatcher.dispatch(frame, NO_STREAMS);
          break;
        case 'response': {
          this.calls.checkResponseId(frame.callId);
          const seq = ++this.calls.responsesReceived;
          if (frame.attachments > 0) this.collecting = { frame, seq, streams: [] };
          else this.calls.deliverResponse(frame, seq, NO_STREAMS);
          break;
        }
        case 'end':
        case 'fastReply':
        case 'error':
          this.calls.finalReply(frame);
          break;
        case 'streamOpen':
          this.streamOpen(frame);
          break;
        case 'streamData':
          this.inboundStream(frame.streamId).receiveData(frame.data);
          break;
        case 'streamEnd': {
          const stream = this.inboundStream(frame.streamId);
          this.inbound.delete(frame.streamId);
          stream.receiveEnd(frame.abort);
          this.checkIdle();
          break;
        }
        case 'credit':
          this.outboundStream(frame.streamId)?.onCredit(frame.increment);
          break;
        case 'stop':
          this.outboundStream(frame.streamId)?.onStop(frame.code);
          break;
        case 'cancel':
          this.dispatcher.cancel(frame.callId);
          break;
        case 'heartbeat':
          if (!frame.pong) this.out.send({ type: 'heartbeat', pong: true });
          break;
        case 'goAway':
          this.goAwayReceived = true;
          this.calls.goAway(frame);
          this.options.onGoAway?.(frame);
          this.checkIdle();
          break;
        default:
          throw new ProtocolError('ERR_PROTOCOL_HANDSHAKE', `${frame.type} after the handshake`);
      }
    } catch (error) {
      if (!(error instanceof ProtocolError)) throw error;
      this.fail(error);
      this.options.onProtocolError?.(error);
    }
  }

  private streamOpen(frame: StreamOpenFrame): void {
    const collecting = this.collecting;
    if (collecting === null) throw new ProtocolError('ERR_PROTOCOL_SEQUENCE', 'STREAM_OPEN without a MESSAGE or RESPONSE owing it');
    const stream = new InboundStream(this.inboundHost, frame.streamId, frame.file, this.local.initialWindow);
    this.inbound.set(frame.streamId, stream);
    collecting.streams.push(stream);
    if (collecting.streams.length < collecting.frame.attachments) return;
    this.collecting = null;
    if (collecting.frame.type === 'message') this.dispatcher.dispatch(collecting.frame, collecting.streams);
    else this.calls.deliverResponse(collecting.frame, collecting.seq, collecting.streams);
  }

  /**
   * The stream we send that a CREDIT or STOP names: undefined once it is
   * closed (the expected race, ignored); an id we never opened is a
   * violation (docs/protocol.md §4 CREDIT, STOP).
   */
  private outboundStream(streamId: number): OutboundStream | undefined {
    if (streamId === 0 || streamId > this.lastStreamId) {
      throw new ProtocolError('ERR_PROTOCOL_STREAM_ID', `stream ${streamId} was never opened by this side (last: ${this.lastStreamId})`);
    }
    return this.outbound.get(streamId);
  }

  private inboundStream(streamId: number): InboundStream {
    const stream = this.inbound.get(streamId);
    if (stream === undefined) throw new ProtocolError('ERR_PROTOCOL_STREAM_ID', `stream ${streamId} is not open`);
    return stream;
  }

  /** Sends the STREAM_OPENs of the message or response just sent, then starts sending their data. */
  private openStreams(planned: readonly PlannedAttachment[]): readonly OutboundStream[] {
    if (planned.length === 0) return NO_OUTBOUND;
    const streams: OutboundStream[] = [];
    const out = this.out;
    const host = {
      send: (frame: Frame, tailByReference?: boolean) => out.send(frame, tailByReference),
      released: (stream: OutboundStream) => this.released(stream),
      get paused() {
        return out.paused;
      },
      whenWritable: () => out.whenWritable(),
    };
    for (const { source, file } of planned) {
      const streamId = ++this.lastStreamId;
      const stream = new OutboundStream(host, streamId, source, this.remote.initialWindow, this.maxChunkFrame, file?.size ?? null);
      this.outbound.set(streamId, stream);
      streams.push(stream);
      this.out.send({ type: 'streamOpen', streamId, file });
    }
    for (const stream of streams) stream.start();
    return streams;
  }

  private checkOutboundStreams(count: number): void {
    const max = this.options.maxOutboundStreams;
    if (count === 0 || max === undefined || this.outbound.size + count <= max) return;
    throw new RpcError(
      RpcErrorCode.TooManyStreams,
      `${count} more stream(s) would pass the ${max} this connection may have open at once (${this.outbound.size} are)`,
    );
  }

  private released(stream: OutboundStream): void {
    this.outbound.delete(stream.id);
    this.checkIdle();
  }

  // ---------------------------------------------------------------- lifecycle

  /**
   * Graceful shutdown: sends GO_AWAY (written at once) with the last call id
   * of the other side's that was received. Later messages from it are not
   * processed; our queued and new calls fail with `ERR_GOING_AWAY`. Calls in
   * flight complete: wait for `whenIdle()`, then close the transport.
   */
  goAway(code: string = RpcErrorCode.GoingAway, message = ''): void {
    if (!isWireCode(code)) throw new RpcError(RpcErrorCode.InvalidArgument, `a GO_AWAY code is 1–255 printable ASCII characters, got ${JSON.stringify(code)}`);
    if (this.closed || this.goAwaySent) return;
    this.goAwaySent = true;
    const lastCallId = this.dispatcher.lastReceivedCallId;
    this.dispatcher.goAwayLastId = lastCallId;
    this.out.send({ type: 'goAway', lastCallId, code, message: truncateUtf8(message, MAX_GO_AWAY_MESSAGE) });
    this.out.flush();
    this.calls.failQueued(goingAwayError('this side is going away'));
    this.checkIdle();
  }

  /**
   * Ends the connection for a protocol violation: writes GO_AWAY with the
   * error's code (if the transport can still take it), then closes.
   */
  fail(error: ProtocolError): void {
    if (this.closed) return;
    const lastCallId = this.dispatcher.goAwayLastId ?? this.dispatcher.lastReceivedCallId;
    this.out.send({ type: 'goAway', lastCallId, code: error.code, message: truncateUtf8(error.message, MAX_GO_AWAY_MESSAGE) });
    this.out.flush();
    this.close(error);
  }

  /**
   * The transport is gone: pending calls reject with `ERR_DISCONNECTED`
   * (`cause`: `error`), handlers' signals fire, open streams fail. Nothing
   * is written any more.
   */
  close(error?: unknown): void {
    if (this.closed) return;
    this.closed = true;
    this.out.close();
    const detail = error === undefined ? '' : `: ${messageOf(error) || String(error)}`;
    const reason = new RpcError(RpcErrorCode.Disconnected, `the connection closed${detail}`, { cause: error });
    this.calls.failAll(reason);
    this.dispatcher.abortAll(reason);
    for (const stream of this.inbound.values()) stream.fail(reason);
    this.inbound.clear();
    for (const stream of [...this.outbound.values()]) stream.fail(reason);
    this.outbound.clear();
    this.collecting = null;
    this.checkIdle();
  }

  /** Writes the frames batched so far now (before closing the transport, for instance). */
  flush(): void {
    this.out.flush();
  }

  /**
   * The transport drained after a `write` returned `false` (see
   * `PeerOptions.write`): stream data flows again.
   */
  resume(): void {
    this.out.resume();
  }

  /** Resolves when no call (either way) and no stream is open, or the peer is closed. */
  whenIdle(): Promise<void> {
    if (this.isIdle()) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  get isClosed(): boolean {
    return this.closed;
  }

  /** Either side sent GO_AWAY: no new calls. */
  get isGoingAway(): boolean {
    return this.goAwaySent || this.goAwayReceived;
  }

  /** Our calls not finished yet (sent or queued). */
  get pendingCalls(): number {
    return this.calls.size + this.calls.queued;
  }

  stats(): PeerStats {
    let bufferedBytes = 0;
    for (const stream of this.inbound.values()) bufferedBytes += stream.bufferedBytes;
    return {
      pendingCalls: this.calls.size,
      queuedCalls: this.calls.queued,
      incomingCalls: this.dispatcher.size,
      runningHandlers: this.dispatcher.runningHandlers,
      inboundStreams: this.inbound.size,
      outboundStreams: this.outbound.size,
      bufferedBytes,
      lastCallId: this.calls.lastCallId,
      responsesSent: this.dispatcher.responsesSent,
      responsesReceived: this.calls.responsesReceived,
    };
  }

  private isIdle(): boolean {
    if (this.closed) return true;
    if (this.calls.size > 0 || this.calls.queued > 0 || this.dispatcher.size > 0 || this.outbound.size > 0) return false;
    for (const stream of this.inbound.values()) if (!stream.stopped) return false;
    return true;
  }

  private checkIdle(): void {
    if (this.idleWaiters.length === 0 || !this.isIdle()) return;
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const resolve of waiters) resolve();
  }
}
