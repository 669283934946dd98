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
