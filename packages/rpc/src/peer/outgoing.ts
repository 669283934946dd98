/**
 * Our calls: ids, the queue under the other side's maxConcurrentCalls,
 * timeouts and cancellation, and the responses as they come back
 * (docs/protocol.md §4 RESPONSE … ERROR, CANCEL, GO_AWAY; §6 UUIDs).
 */

import type { EndFrame, ErrorFrame, FastReplyFrame, GoAwayFrame, ResponseFrame } from '../codec/index.js';
import { Feature, ProtocolError, responseUuid, uuidToString } from '../codec/index.js';
import { utf8Length } from '../codec/utf8.js';
import type { CallMode, CallOptions, CallSink, NotifyOptions } from './calls.js';
import { DISCARD, NO_RESPONSE_STREAMS, OutgoingCall, stopAttachments } from './calls.js';
import type { PeerCore } from './core.js';
import { RemoteError, RpcError, RpcErrorCode, messageOf } from './errors.js';
import type { PlannedAttachment } from './files.js';
import { attachmentsOf, planAttachments, releaseSources } from './files.js';
import { ReceivedResponse } from './response.js';
import type { InboundStream } from './streams.js';

const EMPTY = new Uint8Array(0);
const NO_STREAMS: readonly InboundStream[] = [];
const MAX_TIMER_MS = 0x7fff_ffff;

export interface PreparedMessage {
  bytes: Uint8Array;
  planned: readonly PlannedAttachment[];
  uuid: Uint8Array | null;
}

export class CallTable {
  lastCallId = 0;
  responsesReceived = 0;
  private readonly calls = new Map<number, OutgoingCall>();
  private queue: OutgoingCall[] = [];

  constructor(private readonly core: PeerCore) {}

  /** Calls sent and not finished (including draining ones). */
  get size(): number {
    return this.calls.size;
  }

  get queued(): number {
    return this.queue.length;
  }

  /** Validates and encodes a message; throws an RpcError (nothing is sent). */
  prepare(action: string, payload: unknown, options: NotifyOptions | undefined): PreparedMessage {
    const core = this.core;
    if (core.closed) throw new RpcError(RpcErrorCode.Disconnected, 'the connection is closed');
    if (core.goingAway) throw goingAwayError('the connection is going away');
    // Measured, not encoded: the encoder writes the name into the frame itself.
    const actionBytes = typeof action === 'string' ? utf8Length(action) : 0;
    if (actionBytes < 1 || actionBytes > 255) {
      throw new RpcError(RpcErrorCode.InvalidArgument, `an action name is 1–255 UTF-8 bytes, got ${actionBytes}`);
    }
    const uuid = options?.uuid ?? null;
    if (uuid !== null && !(uuid instanceof Uint8Array && uuid.length === 16)) {
      throw new RpcError(RpcErrorCode.InvalidArgument, 'an explicit uuid is 16 bytes');
    }
    let bytes: Uint8Array;
    if (options?.raw === true) {
      if (payload !== undefined && !(payload instanceof Uint8Array)) {
        throw new RpcError(RpcErrorCode.InvalidArgument, 'a raw payload is a Uint8Array');
      }
      bytes = payload ?? EMPTY;
    } else {
      bytes = encode(core, payload);
    }
    const planned = planAttachments(options, core.features, core.remote.maxFrameSize);
    core.checkOutboundStreams(planned.length);
    // MESSAGE body: call id (≤ 6), uuid, attachment count, action length, action, payload.
    const size = 6 + (uuid === null ? 0 : 16) + (planned.length > 0 ? 1 : 0) + 1 + actionBytes + bytes.length;
    if (size > core.remote.maxFrameSize) {
      throw new RpcError(
        RpcErrorCode.PayloadTooLarge,
        `a payload of ${bytes.length} bytes does not fit in the peer's maxFrameSize (${core.remote.maxFrameSize}); send it as a stream`,
      );
    }
    return { bytes, planned, uuid };
  }

  /** A one-way message: an id, and no state. */
  notify(action: string, message: PreparedMessage): void {
    const callId = ++this.lastCallId;
    const { bytes, planned, uuid } = message;
    this.core.send({ type: 'message', callId, expectsReply: false, uuid, attachments: planned.length, action, payload: bytes });
    this.core.openStreams(planned);
  }

  /** Starts a call; its outcome goes to `sink`. Returns null when it failed at once. */
  start(action: string, payload: unknown, options: CallOptions | undefined, sink: CallSink, mode: CallMode): OutgoingCall | null {
    const core = this.core;
    let call: OutgoingCall;
    try {
      const { bytes, planned, uuid } = this.prepare(action, payload, options);
      const signal = options?.signal;
      if (signal?.aborted === true) throw cancelledError(signal);
      if (core.remote.maxConcurrentCalls === 0) throw new RpcError(RpcErrorCode.TooManyCalls, 'the peer accepts no calls');
      call = new OutgoingCall(action, bytes, uuid, planned, options?.raw === true, mode, sink, signal);
    } catch (error) {
      const failure = error instanceof Error ? error : new Error(String(error));
      releaseSources(options, failure);
      sink.fail(failure);
      return null;
    }
    const timeoutMs = options?.timeoutMs ?? core.options.defaultTimeoutMs ?? 0;
    // Beyond 2^31-1 ms timers fire at once: such a timeout is no timeout.
    if (timeoutMs > 0 && timeoutMs <= MAX_TIMER_MS) {
      call.timer = core.timers.setTimeout(() => {
        call.timer = null;
        this.cancel(call, new RpcError(RpcErrorCode.Timeout, `the call to "${action}" timed out after ${timeoutMs} ms`));
      }, timeoutMs);
    }
    const signal = call.signal;
    if (signal !== undefined) {
      call.abortListener = () => this.cancel(call, cancelledError(signal));
      signal.addEventListener('abort', call.abortListener, { once: true });
    }
    if (this.calls.size < core.remote.maxConcurrentCalls) this.send(call);
    else this.queue.push(call);
    return call;
  }

  /** Timeout, abort signal, or the end of a `requestMany` loop. */
  cancel(call: OutgoingCall, error: Error): void {
    if (call.state === 'queued') {
      this.settle(call).fail(error);
      return;
    }
    if (call.state !== 'sent') return;
    if ((this.core.features & Feature.Cancel) !== 0) this.core.send({ type: 'cancel', callId: call.id });
    for (const upload of call.uploads) upload.abort(RpcErrorCode.Cancelled, 'the call was cancelled');
    for (const stream of call.responseStreams) stream.stopWith(RpcErrorCode.Cancelled, error);
    this.finish(call).fail(error);
  }

  /** A RESPONSE, END, FAST_REPLY or ERROR names one of our call ids: never one we did not use. */
  checkResponseId(callId: number): void {
    if (callId === 0 || callId > this.lastCallId) {
      throw new ProtocolError('ERR_PROTOCOL_CALL_ID', `a response to call id ${callId}, which this side never used (last: ${this.lastCallId})`);
    }
  }

  /** A RESPONSE (with its attachments, once their STREAM_OPENs are in). */
  deliverResponse(frame: ResponseFrame, seq: number, streams: readonly InboundStream[]): void {
    const call = this.calls.get(frame.callId);
    const codec = call?.raw === true ? null : this.core.codec;
    const response = new ReceivedResponse('response', frame.last, frame.payload, null, codec, this.core.remote.seed, seq, attachmentsOf(streams));
    if (call === undefined || call.state === 'draining') {
      // Late (finished, cancelled, timed out, one-way), or unwanted.
      stopAttachments(response);
      if (call !== undefined && frame.last) this.finish(call);
      return;
    }
    const sink = call.sink;
    if (frame.last) {
      this.finish(call);
    } else {
      if (streams.length > 0) call.responseStreams = call.responseStreams.concat(streams);
      if (call.mode === 'first') {
        // `call`/`request` take the first response; the rest is dropped
        // without cancelling (that would abort the streams just handed over).
        call.state = 'draining';
        call.sink = DISCARD;
        this.quiet(call);
      }
    }
    sink.response(response);
  }

  /** END, FAST_REPLY or ERROR: the call's final frame. */
  finalReply(frame: EndFrame | FastReplyFrame | ErrorFrame): void {
    this.checkResponseId(frame.callId);
    const seq = frame.type === 'end' ? 0 : ++this.responsesReceived;
    const call = this.calls.get(frame.callId);
    if (call === undefined) return;
    const sink = this.finish(call);
    const seed = this.core.remote.seed;
    if (frame.type === 'end') {
      sink.end();
    } else if (frame.type === 'fastReply') {
      sink.response(new ReceivedResponse('fastReply', true, EMPTY, frame.code, null, seed, seq, attachmentsOf(NO_STREAMS)));
    } else {
      let details: unknown;
      try {
        details = frame.details.length === 0 ? undefined : this.core.codec.decode(frame.details);
      } catch {
        details = undefined; // still available as detailsBytes
      }
      sink.fail(new RemoteError(frame.code, frame.message, details, frame.details, uuidToString(responseUuid(seed, seq))));
    }
  }

  /** GO_AWAY received: calls it will not process fail as retryable. */
  goAway(frame: GoAwayFrame): void {
    const detail = frame.message === '' ? frame.code : `${frame.code}: ${frame.message}`;
    const error = goingAwayError(`the peer is going away (${detail}); the call was not processed`);
    this.failQueued(error);
    for (const call of [...this.calls.values()]) {
      if (call.id <= frame.lastCallId) continue;
      for (const upload of call.uploads) upload.abort(RpcErrorCode.GoingAway, 'the peer is going away');
      this.finish(call).fail(error);
    }
  }

  failQueued(error: Error): void {
    for (const call of [...this.queue]) this.settle(call).fail(error);
  }

  /** The connection closed: every call fails with `error`. */
  failAll(error: Error): void {
    const calls = [...this.queue, ...this.calls.values()];
    this.queue = [];
    this.calls.clear();
    for (const call of calls) this.settle(call).fail(error);
  }

  private send(call: OutgoingCall): void {
    if (call.state === 'queued' && call.planned.length > 0) {
      // It waited for a slot: streams opened meanwhile may leave no room.
      try {
        this.core.checkOutboundStreams(call.planned.length);
      } catch (error) {
        this.settle(call).fail(error as Error);
        return;
      }
    }
    const callId = ++this.lastCallId;
    call.id = callId;
    call.state = 'sent';
    this.calls.set(callId, call);
    const { action, payload, uuid, planned } = call;
    try {
      this.core.send({ type: 'message', callId, expectsReply: true, uuid, attachments: planned.length, action, payload });
    } catch (error) {
      // prepare() validated everything the encoder checks: this is a bug, but not a leak.
      this.settle(call).fail(new RpcError(RpcErrorCode.InvalidArgument, `the call cannot be encoded: ${messageOf(error)}`, { cause: error }));
      return;
    }
    call.uploads = this.core.openStreams(planned);
  }

  /** A call is over: free its slot, send queued calls. Returns its sink. */
  private finish(call: OutgoingCall): CallSink {
    const sink = this.settle(call);
    call.responseStreams = NO_RESPONSE_STREAMS;
    const core = this.core;
    while (this.queue.length > 0 && this.calls.size < core.remote.maxConcurrentCalls && !core.closed && !core.goingAway) {
      this.send(this.queue.shift()!);
    }
    core.checkIdle();
    return sink;
  }

  /** Removes a call from every table, with its timer and listener; returns its sink. */
  private settle(call: OutgoingCall): CallSink {
    const sink = call.sink;
    if (call.state === 'queued') {
      const index = this.queue.indexOf(call);
      if (index >= 0) this.queue.splice(index, 1);
      releaseSources({ streams: call.planned.map((p) => p.source) }, new RpcError(RpcErrorCode.Cancelled, 'the call was not sent'));
    } else if (call.state !== 'done') {
      this.calls.delete(call.id);
    }
    call.state = 'done';
    call.sink = DISCARD;
    this.quiet(call);
    return sink;
  }

  /** Stops a call's timer and abort listener. */
  private quiet(call: OutgoingCall): void {
    if (call.timer !== null) {
      this.core.timers.clearTimeout(call.timer);
      call.timer = null;
    }
    if (call.abortListener !== null) {
      call.signal?.removeEventListener('abort', call.abortListener);
      call.abortListener = null;
    }
  }
}

function encode(core: PeerCore, payload: unknown): Uint8Array {
  try {
    return core.codec.encode(payload);
  } catch (error) {
    throw new RpcError(RpcErrorCode.PayloadEncode, `the payload does not encode as ${core.codec.name}: ${messageOf(error)}`, { cause: error });
  }
}

export function goingAwayError(message: string): RpcError {
  return new RpcError(RpcErrorCode.GoingAway, message, { retryable: true });
}

function cancelledError(signal: AbortSignal): RpcError {
  return new RpcError(RpcErrorCode.Cancelled, 'the call was cancelled', { cause: signal.reason });
}
