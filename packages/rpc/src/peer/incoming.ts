/**
 * The receiving side of a call: what a handler sees, how it replies, and
 * what its return value or exception turns into.
 */

import type { EndFrame, ErrorFrame, FastReplyFrame, MessageFrame, ResponseFrame } from '../codec/index.js';
import { MAX_INTEGER, messageUuid, unnumberedUuid, uuidToString } from '../codec/index.js';
import type { PayloadCodec } from './codecs.js';
import { RpcError, RpcErrorCode, codeOf, detailsOf, isWireCode, messageOf, truncateUtf8 } from './errors.js';
import type { AttachmentOptions, Attachments, IncomingFile, PlannedAttachment } from './files.js';
import { releaseSources } from './files.js';
import type { OutboundStream } from './sender.js';
import type { IncomingStream, InboundStream } from './streams.js';

export interface ReplyOptions extends AttachmentOptions {
  /** This response is the call's final one (default true). */
  last?: boolean;
}

/**
 * A call (or one-way message) from the peer, as its handler sees it.
 *
 * Replying: `respond` (any number of times with `last: false`, then once
 * with `last: true`, the default), `fastReply`, `error` and `end`; the last
 * three are always final. Replying to a one-way message or after the final
 * reply throws an RpcError `ERR_REPLY_NOT_ALLOWED`; replying after the
 * caller cancelled or the connection closed does nothing (that race is
 * expected). `respond` throws `ERR_PAYLOAD_TOO_LARGE` when the payload
 * does not fit in one frame of the caller's `maxFrameSize` (send large
 * data as a stream instead).
 */
export interface IncomingCall extends Attachments {
  readonly action: string;
  readonly callId: number;
  /** False for a one-way message (no reply possible). */
  readonly expectsReply: boolean;
  /** The payload as received (codec-encoded). */
  readonly payload: Uint8Array;
  /** The message's UUID (docs/protocol.md §6): explicit if the caller sent one, else derived. */
  readonly uuid: string;
  readonly uuidBytes: Uint8Array;
  /** The UUID the sender gave explicitly, or null when it is derived (a positioned publication's position, §10). */
  readonly explicitUuid: Uint8Array | null;
  /** Fires when the caller cancels (reason: `ERR_CANCELLED`) or the connection closes (`ERR_DISCONNECTED`). */
  readonly signal: AbortSignal;
  /** The caller cancelled, or the connection closed. */
  readonly cancelled: boolean;
  /** No reply can be sent any more (final reply sent, cancelled, disconnected, or one-way). */
  readonly finished: boolean;
  /** RESPONSE, FAST_REPLY and ERROR frames sent for this call so far. */
  readonly responsesSent: number;
  /** The payload decoded with the connection's codec (throws `ERR_PAYLOAD_DECODE`). */
  decode<T = unknown>(): T;
  /**
   * A RESPONSE with `value` encoded by the codec (a number too: return it,
   * or use `fastReply`, for a FAST_REPLY). Throws `ERR_PAYLOAD_ENCODE` when
   * the codec cannot encode it, `ERR_FEATURE_DISABLED` for attachments the
   * connection did not negotiate.
   */
  respond(value: unknown, options?: ReplyOptions): void;
  /** `respond` with a payload that is already encoded. */
  respondRaw(bytes: Uint8Array, options?: ReplyOptions): void;
  /** A final response that is just an integer in 0 … 2^48-1 (no codec involved). */
  fastReply(code: number): void;
  /** A final ERROR: `code` is 1–255 printable ASCII characters; `details` are encoded with the codec. */
  error(code: string, message?: string, details?: unknown): void;
  /** Ends the call without a (further) response. */
  end(): void;
}

/** Handles calls and one-way messages. What it returns or throws is described at `Peer`. */
export type IncomingHandler = (call: IncomingCall) => unknown;

export type ReplyFrame = ResponseFrame | FastReplyFrame | ErrorFrame | EndFrame;

/** What a received call needs from the peer. */
export interface ReplyHost {
  readonly codec: PayloadCodec;
  /** The caller's maxFrameSize. */
  readonly maxFrameSize: number;
  plan(options: AttachmentOptions | undefined): readonly PlannedAttachment[];
  /** Sends `frame` and its attachments; `final` frees the call's slot. */
  reply(call: ReceivedCall, frame: ReplyFrame, planned: readonly PlannedAttachment[], final: boolean): void;
}

const enum State {
  Open,
  /** Final reply sent (or a one-way message). */
  Replied,
  /** Cancelled by the caller, or the connection closed. */
  Aborted,
}

function idWidth(id: number): number {
  return id < 0x100 ? 1 : id < 0x10000 ? 2 : id < 0x1_0000_0000 ? 4 : 6;
}

/** A non-negative integer a FAST_REPLY carries. */
export function isFastReplyCode(value: unknown): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value >= 0 && value <= MAX_INTEGER;
}

export class ReceivedCall implements IncomingCall {
  readonly action: string;
  readonly callId: number;
  readonly expectsReply: boolean;
  readonly payload: Uint8Array;
  /** The response streams this call opened (aborted if it is cancelled). */
  readonly outStreams: OutboundStream[] = [];
  responsesSent = 0;
  private state: State;
  private controller: AbortController | null = null;
  private abortReason: Error | null = null;
  readonly explicitUuid: Uint8Array | null;
  private uuidCache: Uint8Array | null = null;

  constructor(
    private readonly host: ReplyHost,
    frame: MessageFrame,
    private readonly remoteSeed: Uint8Array,
    private readonly attachments: Attachments,
    /** The attachments as the peer tracks them. */
    readonly inbound: readonly InboundStream[],
    /** For an unnumbered message (call id 0): its sequence number among them. */
    private readonly unnumbered = 0,
  ) {
    this.action = frame.action;
    this.callId = frame.callId;
    this.expectsReply = frame.expectsReply;
    this.payload = frame.payload;
    this.explicitUuid = frame.uuid;
    this.state = frame.expectsReply ? State.Open : State.Replied;
  }

  get uuidBytes(): Uint8Array {
    this.uuidCache ??=
      this.explicitUuid ??
      (this.callId === 0 ? unnumberedUuid(this.remoteSeed, this.unnumbered) : messageUuid(this.remoteSeed, this.callId));
    return this.uuidCache;
  }

  get uuid(): string {
    return uuidToString(this.uuidBytes);
  }

  get stream(): IncomingStream | null {
    return this.attachments.stream;
  }

  get streams(): readonly IncomingStream[] {
    return this.attachments.streams;
  }

  get files(): readonly IncomingFile[] {
    return this.attachments.files;
  }

  get signal(): AbortSignal {
    if (this.controller === null) {
      this.controller = new AbortController();
      if (this.abortReason !== null) this.controller.abort(this.abortReason);
    }
    return this.controller.signal;
  }

  get cancelled(): boolean {
    return this.abortReason !== null;
  }

  get finished(): boolean {
    return this.state !== State.Open;
  }

  /** A reply may still go out: an open call on an open connection. */
  get open(): boolean {
    return this.state === State.Open;
  }

  decode<T = unknown>(): T {
    try {
      return this.host.codec.decode(this.payload) as T;
    } catch (error) {
      throw new RpcError(RpcErrorCode.PayloadDecode, `the payload of "${this.action}" does not decode as ${this.host.codec.name}: ${messageOf(error)}`, {
        cause: error,
      });
    }
  }

  respond(value: unknown, options?: ReplyOptions): void {
    if (!this.mayReply()) return this.dropped(options);
    let payload: Uint8Array;
    try {
      payload = this.host.codec.encode(value);
    } catch (error) {
      throw new RpcError(RpcErrorCode.PayloadEncode, `the response does not encode as ${this.host.codec.name}: ${messageOf(error)}`, {
        cause: error,
      });
    }
    this.sendResponse(payload, options);
  }

  respondRaw(bytes: Uint8Array, options?: ReplyOptions): void {
    if (!(bytes instanceof Uint8Array)) throw new RpcError(RpcErrorCode.InvalidArgument, 'respondRaw takes a Uint8Array');
    if (!this.mayReply()) return this.dropped(options);
    this.sendResponse(bytes, options);
  }

  fastReply(code: number): void {
    if (!isFastReplyCode(code)) throw new RpcError(RpcErrorCode.InvalidArgument, `a fast reply is an integer in 0…2^48-1, got ${String(code)}`);
    if (!this.mayReply()) return;
    this.state = State.Replied;
    this.host.reply(this, { type: 'fastReply', callId: this.callId, code }, [], true);
  }

  error(code: string, message = '', details?: unknown): void {
    if (!isWireCode(code)) throw new RpcError(RpcErrorCode.InvalidArgument, `an error code is 1–255 printable ASCII characters, got ${JSON.stringify(code)}`);
    if (!this.mayReply()) return;
    // ERROR: call id, u8 code length, code, u16 message length, message, details.
    const room = this.host.maxFrameSize - idWidth(this.callId) - 1 - code.length - 2;
    let bytes: Uint8Array = EMPTY;
    if (details !== undefined) {
      try {
        bytes = this.host.codec.encode(details);
      } catch {
        bytes = EMPTY; // details that do not encode are dropped, the error still goes out
      }
      if (bytes.length > room - 256) bytes = EMPTY;
    }
    const text = truncateUtf8(String(message), Math.min(0xffff, room - bytes.length));
    this.state = State.Replied;
    this.host.reply(this, { type: 'error', callId: this.callId, code, message: text, details: bytes }, [], true);
  }

  end(): void {
    if (!this.mayReply()) return;
    this.state = State.Replied;
    this.host.reply(this, { type: 'end', callId: this.callId }, [], true);
  }

  /** CANCEL received, or the connection closed: the signal fires, replies become no-ops. */
  abort(reason: Error): void {
    if (this.abortReason !== null) return;
    this.abortReason = reason;
    if (this.state === State.Open) this.state = State.Aborted;
    this.controller?.abort(reason);
  }

  private mayReply(): boolean {
    if (this.state === State.Open) return true;
    if (this.state === State.Aborted) return false;
    throw new RpcError(
      RpcErrorCode.ReplyNotAllowed,
      this.expectsReply ? `call ${this.callId} ("${this.action}") already sent its final reply` : `"${this.action}" is a one-way message: it takes no reply`,
    );
  }

  /** A reply after a cancel or a disconnect: its stream writers will never be sent. */
  private dropped(options: ReplyOptions | undefined): void {
    releaseSources(options, this.abortReason ?? new RpcError(RpcErrorCode.Cancelled, 'the call was cancelled'));
  }

  private sendResponse(payload: Uint8Array, options: ReplyOptions | undefined): void {
    const planned = this.host.plan(options);
    const size = idWidth(this.callId) + (planned.length > 0 ? 1 : 0) + payload.length;
    if (size > this.host.maxFrameSize) {
      throw new RpcError(
        RpcErrorCode.PayloadTooLarge,
        `a response of ${payload.length} bytes does not fit in the caller's maxFrameSize (${this.host.maxFrameSize}); send it as a stream`,
      );
    }
    const last = options?.last ?? true;
    if (last) this.state = State.Replied;
    this.host.reply(this, { type: 'response', callId: this.callId, last, attachments: planned.length, payload }, planned, last);
  }
}

const EMPTY = new Uint8Array(0);

/**
 * Turns what a handler returned into the final reply, when it has not sent
 * one: undefined → END; a FAST_REPLY code (an integer in 0…2^48-1) → FAST_REPLY;
 * anything else → a last RESPONSE encoded with the codec.
 */
export function replyWithValue(call: ReceivedCall, value: unknown): void {
  if (value === undefined) call.end();
  else if (isFastReplyCode(value)) call.fastReply(value);
  else call.respond(value);
}

/**
 * Turns what a handler threw into the final reply: an error with a valid
 * string `code` → ERROR with its code, message and `details`; anything else
 * → ERROR `ERR_HANDLER_FAILED` (message only when `exposeMessage`).
 * Returns true when the error was sent with its own code.
 */
export function replyWithError(call: ReceivedCall, error: unknown, exposeMessage: boolean): boolean {
  const code = codeOf(error);
  if (code !== undefined) {
    call.error(code, messageOf(error), detailsOf(error));
    return true;
  }
  call.error(RpcErrorCode.HandlerFailed, exposeMessage ? messageOf(error) || 'the handler failed' : 'the handler failed');
  return false;
}
