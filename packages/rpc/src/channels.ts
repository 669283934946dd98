/**
 * Channel subscriptions as the protocol defines them (docs/protocol.md §10):
 * the reserved namespace of built-in actions, the two actions a client
 * subscribes and unsubscribes with, and what makes a channel name one a
 * protocol connection can subscribe to. Both ends use this file, so the
 * client refuses locally exactly what the server would refuse.
 */

import { utf8Length } from './codec/utf8.js';
import { RpcError, RpcErrorCode } from './peer/errors.js';

/**
 * Actions whose name starts with this are the protocol's own (§10): an
 * application's actions may not use it, and neither may the channels
 * clients subscribe to, since a publication carries its channel as its
 * action.
 */
export const BUILTIN_PREFIX = '$sb.';

/** The built-in actions (calls from the client; the payload is the channel name in UTF-8, not codec-encoded). */
export const BuiltinAction = {
  /** Subscribe this connection to a channel; END when done, ERROR when refused. */
  Subscribe: '$sb.subscribe',
  /** End this connection's subscription to a channel; END (also when there was none). */
  Unsubscribe: '$sb.unsubscribe',
  /**
   * Subscribe, and recover what was missed since a position: the missed
   * publications come first, then a RESPONSE with the outcome
   * (`recoverPayload`, `parseRecoverAnswer`).
   */
  Recover: '$sb.recover',
} as const;
export type BuiltinAction = (typeof BuiltinAction)[keyof typeof BuiltinAction];

/** The longest channel name, in UTF-8 bytes: a publication carries it as its action, whose length is one byte (§4 MESSAGE). */
export const MAX_CHANNEL_BYTES = 255;

/** `action` is in the reserved namespace. */
export function isBuiltinAction(action: string): boolean {
  // The first character alone settles it for almost every action.
  return action.charCodeAt(0) === 0x24 /* $ */ && action.startsWith(BUILTIN_PREFIX);
}

/** A lone surrogate would be sent as U+FFFD: the server would see another name. */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/**
 * Why `channel` cannot be subscribed to over the protocol, or null when it
 * can: 1..255 bytes of well-formed UTF-8, outside the reserved namespace.
 */
export function channelProblem(channel: unknown): string | null {
  if (typeof channel !== 'string' || channel.length === 0) return 'a channel name is a non-empty string';
  const bytes = utf8Length(channel);
  if (bytes > MAX_CHANNEL_BYTES) return `a channel name is at most ${MAX_CHANNEL_BYTES} bytes of UTF-8, got ${bytes}`;
  if (LONE_SURROGATE.test(channel)) return 'a channel name is well-formed Unicode (it has a lone surrogate)';
  if (isBuiltinAction(channel)) return `channel names starting with ${JSON.stringify(BUILTIN_PREFIX)} are reserved`;
  return null;
}

/** Throws `ERR_INVALID_CHANNEL` unless `channel` can be subscribed to (see `channelProblem`). */
export function checkChannel(channel: unknown): asserts channel is string {
  const problem = channelProblem(channel);
  if (problem !== null) throw new RpcError(RpcErrorCode.InvalidChannel, problem);
}

const encoder = new TextEncoder();
const decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** The payload of `$sb.subscribe` / `$sb.unsubscribe`: the name's UTF-8 bytes. */
export function channelPayload(channel: string): Uint8Array {
  return encoder.encode(channel);
}

/** The channel a built-in call names; throws `ERR_INVALID_CHANNEL` for bytes that are not a valid name. */
export function channelOfPayload(payload: Uint8Array): string {
  let channel: string;
  try {
    channel = decoder.decode(payload);
  } catch {
    throw new RpcError(RpcErrorCode.InvalidChannel, 'a channel name is UTF-8');
  }
  checkChannel(channel);
  return channel;
}

/** Where a publication sits in its channel's history (docs/protocol.md §10). */
export interface StreamPosition {
  /** The channel's epoch: 16 lowercase hex digits. */
  epoch: string;
  /** 1 for the first publication of the epoch, then contiguous. */
  offset: number;
}

/** The outcome of `$sb.recover`, the first byte of its answer. */
export const RecoverStatus = {
  /** The channel keeps no history here: a plain subscription. */
  NoHistory: 0,
  /** Everything after the position asked for came before the answer (or no position was asked for). */
  Recovered: 1,
  /** What was published after the position is no longer all there: nothing was replayed. */
  NotRecovered: 2,
} as const;
export type RecoverStatus = (typeof RecoverStatus)[keyof typeof RecoverStatus];

const HEX = /^[0-9a-f]{16}$/;

/** A position as 16 bytes: the epoch, then the offset big-endian (a positioned publication's UUID). */
export function positionBytes(position: StreamPosition): Uint8Array {
  if (!HEX.test(position.epoch) || !Number.isSafeInteger(position.offset) || position.offset < 0) {
    throw new RpcError(RpcErrorCode.InvalidArgument, 'a position is { epoch: 16 hex digits, offset: a whole number >= 0 }');
  }
  const bytes = new Uint8Array(16);
  for (let i = 0; i < 8; i++) bytes[i] = Number.parseInt(position.epoch.slice(i * 2, i * 2 + 2), 16);
  const view = new DataView(bytes.buffer);
  view.setBigUint64(8, BigInt(position.offset));
  return bytes;
}

/** The position in 16 bytes (see `positionBytes`); null for an offset past 2^53 - 1. */
export function positionOf(bytes: Uint8Array): StreamPosition | null {
  if (bytes.length !== 16) return null;
  let epoch = '';
  for (let i = 0; i < 8; i++) epoch += bytes[i]!.toString(16).padStart(2, '0');
  const offset = new DataView(bytes.buffer, bytes.byteOffset, 16).getBigUint64(8);
  return offset > BigInt(Number.MAX_SAFE_INTEGER) ? null : { epoch, offset: Number(offset) };
}

/** The payload of `$sb.recover`: u8 name length, the name, and the 16-byte position (none for a first subscription). */
export function recoverPayload(channel: string, since: StreamPosition | null): Uint8Array {
  const name = encoder.encode(channel);
  const out = new Uint8Array(1 + name.length + (since === null ? 0 : 16));
  out[0] = name.length;
  out.set(name, 1);
  if (since !== null) out.set(positionBytes(since), 1 + name.length);
  return out;
}

/** `recoverPayload` read back; throws `ERR_INVALID_CHANNEL` for a bad name, `ERR_INVALID_ARGUMENT` for a bad layout. */
export function parseRecoverPayload(payload: Uint8Array): { channel: string; since: StreamPosition | null } {
  const length = payload[0];
  if (length === undefined || (payload.length !== 1 + length && payload.length !== 17 + length)) {
    throw new RpcError(RpcErrorCode.InvalidArgument, '$sb.recover takes a name length, the name, and an optional 16-byte position');
  }
  const channel = channelOfPayload(payload.subarray(1, 1 + length));
  if (payload.length === 1 + length) return { channel, since: null };
  const since = positionOf(payload.subarray(1 + length));
  if (since === null) throw new RpcError(RpcErrorCode.InvalidArgument, 'the offset of a position is at most 2^53 - 1');
  return { channel, since };
}

/** The answer of `$sb.recover`: the status byte, then the channel's position now when known. */
export function recoverAnswer(status: RecoverStatus, position: StreamPosition | null): Uint8Array {
  const out = new Uint8Array(position === null ? 1 : 17);
  out[0] = status;
  if (position !== null) out.set(positionBytes(position), 1);
  return out;
}

export function parseRecoverAnswer(bytes: Uint8Array): { status: RecoverStatus; position: StreamPosition | null } {
  const status = bytes[0];
  if ((status !== 0 && status !== 1 && status !== 2) || (bytes.length !== 1 && bytes.length !== 17)) {
    throw new RpcError(RpcErrorCode.PayloadDecode, 'a $sb.recover answer is a status byte and an optional 16-byte position');
  }
  return { status, position: bytes.length === 17 ? positionOf(bytes.subarray(1)) : null };
}
