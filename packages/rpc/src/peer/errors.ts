/**
 * Errors of calls and streams (as opposed to `ProtocolError`, a connection
 * violation, which the codec defines).
 */

/** Codes the peer itself produces. Applications may use any other code. */
export const RpcErrorCode = {
  /** The connection closed (or failed) while the call or stream was open. */
  Disconnected: 'ERR_DISCONNECTED',
  /** The call's `timeoutMs` passed before its (first) response. */
  Timeout: 'ERR_TIMEOUT',
  /** The caller cancelled the call (AbortSignal, breaking out of `callMany`). */
  Cancelled: 'ERR_CANCELLED',
  /** A side sent GO_AWAY: no new calls; calls it did not process are retryable. */
  GoingAway: 'ERR_GOING_AWAY',
  /** The receiver runs `maxConcurrentCalls` calls already (or accepts none). */
  TooManyCalls: 'ERR_TOO_MANY_CALLS',
  /** This side has `maxOutboundStreams` streams open to the other already. */
  TooManyStreams: 'ERR_TOO_MANY_STREAMS',
  /** No handler for the action. */
  NotImplemented: 'ERR_NOT_IMPLEMENTED',
  /** A handler threw something that is not an error with a code. */
  HandlerFailed: 'ERR_HANDLER_FAILED',
  /** The receiver of a stream sent STOP. */
  StreamStopped: 'ERR_STREAM_STOPPED',
  /** Write to a stream after its end or abort. */
  StreamClosed: 'ERR_STREAM_CLOSED',
  /** The default code of `StreamWriter.abort()`. */
  StreamAborted: 'ERR_STREAM_ABORTED',
  /** The sender's stream source threw an error without a code. */
  StreamSource: 'ERR_STREAM_SOURCE',
  /** A file source produced more or fewer bytes than its declared size. */
  FileSize: 'ERR_FILE_SIZE',
  /** A payload does not fit in one frame of the receiver's `maxFrameSize`. */
  PayloadTooLarge: 'ERR_PAYLOAD_TOO_LARGE',
  /** A value could not be encoded with the connection's codec. */
  PayloadEncode: 'ERR_PAYLOAD_ENCODE',
  /** A payload could not be decoded with the connection's codec. */
  PayloadDecode: 'ERR_PAYLOAD_DECODE',
  /** Streams or files, and the peer did not negotiate that feature. */
  FeatureDisabled: 'ERR_FEATURE_DISABLED',
  /** A reply to a one-way message, or after the call's final reply. */
  ReplyNotAllowed: 'ERR_REPLY_NOT_ALLOWED',
  /** An argument the peer cannot send as given (bad action, uuid, code…). */
  InvalidArgument: 'ERR_INVALID_ARGUMENT',
  /** A channel name a protocol connection cannot subscribe to (docs/protocol.md §10). */
  InvalidChannel: 'ERR_INVALID_CHANNEL',
  /** The server refused a client's subscription (its hook said no, or it takes none). */
  SubscriptionRefused: 'ERR_SUBSCRIPTION_REFUSED',
  /** The connection has as many subscriptions of its own as the server allows. */
  TooManySubscriptions: 'ERR_TOO_MANY_SUBSCRIPTIONS',
} as const;

/**
 * Every code of `RpcErrorCode` with its meaning: calls reject (and streams
 * fail) with these, on both ends. `docs/errors.md` is generated from it.
 */
export const RPC_ERROR_DESCRIPTIONS: Readonly<Record<string, string>> = {
  ERR_DISCONNECTED: 'The connection closed (or failed) while the call or stream was open.',
  ERR_TIMEOUT: "The call's `timeoutMs` passed before its (first) response.",
  ERR_CANCELLED: 'The caller cancelled the call (AbortSignal, breaking out of `callMany`).',
  ERR_GOING_AWAY: 'A side sent GO_AWAY: no new calls; calls it did not process are retryable.',
  ERR_TOO_MANY_CALLS: 'The receiver runs `maxConcurrentCalls` calls already (or accepts none).',
  ERR_TOO_MANY_STREAMS:
    'A response or call would open more streams towards the other side than its connection allows at once (`rpc.maxOutboundStreams` on the server); nothing was sent.',
  ERR_NOT_IMPLEMENTED: 'No handler for the action.',
  ERR_HANDLER_FAILED: 'A handler threw something that is not an error with a code.',
  ERR_STREAM_STOPPED: 'The receiver of a stream sent STOP.',
  ERR_STREAM_CLOSED: 'A write to a stream after its end or abort.',
  ERR_STREAM_ABORTED: 'The default code of `StreamWriter.abort()`.',
  ERR_STREAM_SOURCE: "The sender's stream source threw an error without a code.",
  ERR_FILE_SIZE: 'A file source produced more or fewer bytes than its declared size.',
  ERR_PAYLOAD_TOO_LARGE: "A payload does not fit in one frame of the receiver's `maxFrameSize`.",
  ERR_PAYLOAD_ENCODE: "A value could not be encoded with the connection's codec.",
  ERR_PAYLOAD_DECODE: "A payload could not be decoded with the connection's codec.",
  ERR_FEATURE_DISABLED: 'Streams or files were used on a connection that did not negotiate that feature.',
  ERR_REPLY_NOT_ALLOWED: "A reply to a one-way message, or after the call's final reply.",
  ERR_INVALID_ARGUMENT: 'An argument the peer cannot send as given (bad action, uuid, code…).',
  ERR_INVALID_CHANNEL:
    'A channel name a client cannot subscribe to: empty, over 255 bytes of UTF-8, not well-formed, or in the reserved `$sb.` namespace (`client.subscribe()` throws it; the server refuses `$sb.subscribe` with it).',
  ERR_SUBSCRIPTION_REFUSED:
    "The server refused a client's subscription: its `rpc.onSubscribe` hook returned false, or it has none (the default refuses every channel). The subscription's `ready` rejects and its iterator throws.",
  ERR_TOO_MANY_SUBSCRIPTIONS:
    'A client asked for one more subscription than `rpc.maxSubscriptions` (per connection) allows; the subscription is refused.',
};

export interface RpcErrorOptions {
  cause?: unknown;
  /** Application data describing the error (sent as an ERROR frame's details). */
  details?: unknown;
  /** True when the call was not processed by the peer and may be sent again elsewhere. */
  retryable?: boolean;
}

/** An error of one call or one stream, with a machine-readable code. */
export class RpcError extends Error {
  readonly code: string;
  readonly details: unknown;
  /** The call was not processed by the peer (go-away): it is safe to retry it elsewhere. */
  readonly retryable: boolean;

  constructor(code: string, message: string, options: RpcErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'RpcError';
    this.code = code;
    this.details = options.details;
    this.retryable = options.retryable ?? false;
  }
}

/** The peer answered a call with an ERROR frame. */
export class RemoteError extends RpcError {
  /** The ERROR response's UUID (docs/protocol.md §6). */
  readonly uuid: string;
  /** The details as received (codec-encoded; empty when none). */
  readonly detailsBytes: Uint8Array;

  constructor(code: string, message: string, details: unknown, detailsBytes: Uint8Array, uuid: string) {
    super(code, message, { details });
    this.name = 'RemoteError';
    this.uuid = uuid;
    this.detailsBytes = detailsBytes;
  }
}

/** A code as an ERROR, STREAM_END or STOP frame carries it: 1–255 printable ASCII bytes. */
export function isWireCode(code: unknown): code is string {
  return typeof code === 'string' && code.length > 0 && code.length <= 255 && /^[\x21-\x7e]+$/.test(code);
}

/** The `code` of an error-like value, when it is one that can go on the wire. */
export function codeOf(error: unknown): string | undefined {
  if (typeof error === 'object' && error !== null && 'code' in error) {
    const code = (error as { code: unknown }).code;
    if (isWireCode(code)) return code;
  }
  return undefined;
}

/** The `message` of an error-like value, or ''. */
export function messageOf(error: unknown): string {
  if (typeof error === 'object' && error !== null && 'message' in error) {
    const message = (error as { message: unknown }).message;
    if (typeof message === 'string') return message;
  }
  return '';
}

/** The `details` of an error-like value (undefined when it has none). */
export function detailsOf(error: unknown): unknown {
  if (typeof error === 'object' && error !== null && 'details' in error) {
    return (error as { details: unknown }).details;
  }
  return undefined;
}

const utf8Encoder = new TextEncoder();
const lenientDecoder = new TextDecoder();

/** `text` cut to at most `maxBytes` UTF-8 bytes, on a character boundary. */
export function truncateUtf8(text: string, maxBytes: number): string {
  if (text.length * 3 <= maxBytes) return text;
  const bytes = utf8Encoder.encode(text);
  if (bytes.length <= maxBytes) return text;
  let end = maxBytes;
  // Back up over continuation bytes (10xxxxxx) to a character start.
  while (end > 0 && (bytes[end]! & 0xc0) === 0x80) end -= 1;
  return lenientDecoder.decode(bytes.subarray(0, end));
}
