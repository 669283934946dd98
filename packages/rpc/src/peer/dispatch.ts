/**
 * The other side's calls: dispatch in arrival order under our
 * maxConcurrentCalls, the handler's outcome as the reply, CANCEL
 * (docs/protocol.md §4 MESSAGE, CANCEL; §5).
 */

import type { MessageFrame } from '../codec/index.js';
import { ProtocolError } from '../codec/index.js';
import type { PeerCore } from './core.js';
import { RpcError, RpcErrorCode } from './errors.js';
import type { PlannedAttachment } from './files.js';
import { attachmentsOf, planAttachments, releaseSources } from './files.js';
import type { IncomingHandler, ReplyFrame, ReplyHost } from './incoming.js';
import { ReceivedCall, replyWithError, replyWithValue } from './incoming.js';
import type { InboundStream } from './streams.js';

const EMPTY = new Uint8Array(0);

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return typeof (value as { then?: unknown } | null)?.then === 'function';
}

export class Dispatcher {
  handler: IncomingHandler | null;
  /**
   * The highest call id of the other side's messages given to `dispatch`
   * (complete, attachments in): the `last call id` of our GO_AWAY. A
   * message still waiting for its STREAM_OPENs is not counted: it is never
   * dispatched if the connection ends first (docs/protocol.md §2.4).
   */
  lastReceivedCallId = 0;
  /** The highest call id the other side used so far, attachments in or not. */
  highestCallId = 0;
  /** Unnumbered one-way messages (call id 0) received so far. */
  private unnumberedReceived = 0;
  /** The last call id announced in our GO_AWAY, or null. */
  goAwayLastId: number | null = null;
  responsesSent = 0;
  /** Calls awaiting their final reply. */
  private readonly calls = new Map<number, ReceivedCall>();
  /** Handlers whose promise has not settled. */
  private readonly running = new Set<ReceivedCall>();
  private readonly replyHost: ReplyHost;

  constructor(private readonly core: PeerCore) {
    this.handler = core.options.handler ?? null;
    this.replyHost = {
      codec: core.codec,
      maxFrameSize: core.remote.maxFrameSize,
      plan: (options) => {
        const planned = planAttachments(options, core.features, core.remote.maxFrameSize);
        try {
          core.checkOutboundStreams(planned.length);
        } catch (error) {
          releaseSources(options, error as Error); // writers given with the response will never be sent
          throw error;
        }
        return planned;
      },
      reply: (call, frame, planned, final) => this.reply(call, frame, planned, final),
    };
  }

  get size(): number {
    return this.calls.size;
  }

  get runningHandlers(): number {
    return this.running.size;
  }

  /** A MESSAGE, with its attachments once their STREAM_OPENs are in. */
  dispatch(frame: MessageFrame, streams: readonly InboundStream[]): void {
    const handler = this.handler;
    // An unnumbered broadcast (call id 0) is not in the call id order.
    if (frame.callId !== 0) this.lastReceivedCallId = frame.callId;
    if (this.goAwayLastId !== null && frame.callId !== 0 && frame.callId > this.goAwayLastId) {
      // Not processed: the caller fails it with ERR_GOING_AWAY on our GO_AWAY.
      for (const stream of streams) stream.stopWith(RpcErrorCode.GoingAway, null);
      return;
    }
    if (this.core.goAwayReceived && frame.callId !== 0) {
      // The other side said it is going away, then started a call anyway
      // (docs/protocol.md §2.4): not dispatched. A call is refused with an
      // ERROR, not a connection error: calls in flight are finishing.
      for (const stream of streams) stream.stopWith(RpcErrorCode.GoingAway, null);
      if (frame.expectsReply) {
        this.responsesSent += 1;
        this.core.send({ type: 'error', callId: frame.callId, code: RpcErrorCode.GoingAway, message: 'a call after your GO_AWAY', details: EMPTY });
      }
      return;
    }
    if (handler === null || (frame.expectsReply && this.calls.size >= this.core.local.maxConcurrentCalls)) {
      const refusal =
        handler === null
          ? new RpcError(RpcErrorCode.NotImplemented, `no handler for "${frame.action}"`)
          : new RpcError(RpcErrorCode.TooManyCalls, `at most ${this.core.local.maxConcurrentCalls} concurrent calls`);
      for (const stream of streams) stream.stopWith(refusal.code, null);
      if (frame.expectsReply) {
        this.responsesSent += 1;
        this.core.send({ type: 'error', callId: frame.callId, code: refusal.code, message: refusal.message, details: EMPTY });
      }
      return;
    }
    // An unnumbered message's UUID comes from its place among them (§6).
    const unnumbered = frame.callId === 0 ? ++this.unnumberedReceived : 0;
    const call = new ReceivedCall(this.replyHost, frame, this.core.remote.seed, attachmentsOf(streams), streams, unnumbered);
    if (frame.expectsReply) this.calls.set(frame.callId, call);
    this.run(handler, call);
  }

  /**
   * CANCEL from the caller. A call that is over (or a one-way message) is
   * the expected race and ignored; an id the caller never used is a
   * violation (docs/protocol.md §4 CANCEL).
   */
  cancel(callId: number): void {
    if (callId === 0 || callId > this.highestCallId) {
      throw new ProtocolError('ERR_PROTOCOL_CALL_ID', `CANCEL of call ${callId}, an id the peer never used (last: ${this.highestCallId})`);
    }
    const call = this.calls.get(callId);
    if (call === undefined) return;
    this.calls.delete(callId);
    call.abort(new RpcError(RpcErrorCode.Cancelled, 'the caller cancelled the call'));
    for (const stream of call.outStreams) stream.abort(RpcErrorCode.Cancelled, 'the call was cancelled');
    this.core.checkIdle();
  }

  /** The connection closed: every handler's signal fires. */
  abortAll(reason: Error): void {
    const calls = new Set([...this.calls.values(), ...this.running]);
    this.calls.clear();
    this.running.clear();
    for (const call of calls) call.abort(reason);
  }

  private run(handler: IncomingHandler, call: ReceivedCall): void {
    let result: unknown;
    try {
      result = handler(call);
    } catch (error) {
      this.failed(call, error);
      return;
    }
    if (!isThenable(result)) {
      this.returned(call, result);
      return;
    }
    this.running.add(call);
    result.then(
      (value) => {
        this.running.delete(call);
        this.returned(call, value);
      },
      (error: unknown) => {
        this.running.delete(call);
        this.failed(call, error);
      },
    );
  }

  private returned(call: ReceivedCall, value: unknown): void {
    if (call.open && !this.core.closed) {
      try {
        replyWithValue(call, value);
      } catch (error) {
        this.failed(call, error); // the value did not encode, or does not fit
        return;
      }
    }
    this.releaseUnread(call);
  }

  private failed(call: ReceivedCall, error: unknown): void {
    let seen = false;
    if (call.open && !this.core.closed) {
      seen = replyWithError(call, error, this.core.options.exposeHandlerErrors === true);
    } else if (call.cancelled) {
      seen = true; // failing after a cancel or a disconnect is expected
    }
    if (!seen) this.core.options.onHandlerError?.(error, call);
    this.releaseUnread(call);
  }

  /** Stops the attachments a settled handler never started reading (their senders would wait for credit forever). */
  private releaseUnread(call: ReceivedCall): void {
    for (const stream of call.inbound) {
      if (!stream.touched && !stream.finished) stream.stopWith(RpcErrorCode.StreamStopped, null);
    }
  }

  private reply(call: ReceivedCall, frame: ReplyFrame, planned: readonly PlannedAttachment[], final: boolean): void {
    if (frame.type !== 'end') {
      this.responsesSent += 1;
      call.responsesSent += 1;
    }
    this.core.send(frame);
    for (const stream of this.core.openStreams(planned)) call.outStreams.push(stream);
    if (final) {
      this.calls.delete(call.callId);
      this.core.checkIdle();
    }
  }
}
