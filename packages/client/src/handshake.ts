/**
 * The client's half of the handshake (docs/protocol.md §2, §4): the
 * preface and HELLO it sends, and the checks on the server's answer that
 * the codec does not make itself.
 */

import type { GoAwayFrame, PayloadCodec, PeerSettings, WelcomeFrame } from 'switchboard-rpc';
import { PREFACE, ProtocolError, encodeFrame, randomSeed } from 'switchboard-rpc';
import type { ConnectData, ResolvedOptions, ServerInfo } from './options.js';

const utf8 = new TextEncoder();

/** Our settings for one connection: a fresh seed each time, so UUIDs never repeat across connections. */
export function localSettings(options: ResolvedOptions): PeerSettings & { heartbeatMs: number } {
  return {
    seed: randomSeed(),
    maxFrameSize: options.maxFrameSize,
    initialWindow: options.initialWindow,
    maxConcurrentCalls: options.maxConcurrentCalls,
    heartbeatMs: options.heartbeatMs,
    features: options.features,
  };
}

/**
 * The preface and HELLO as one write: over WebSocket the first message of
 * each side starts with its preface, and the client sends both at once
 * without waiting (§2).
 */
export function helloBytes(local: PeerSettings & { heartbeatMs: number }, codecs: readonly PayloadCodec[], data: ConnectData): Uint8Array {
  const hello = encodeFrame({
    type: 'hello',
    ...local,
    codecs: codecs.map((codec) => codec.name),
    data: typeof data === 'string' ? utf8.encode(data) : data,
  });
  const bytes = new Uint8Array(PREFACE.length + hello.length);
  bytes.set(PREFACE, 0);
  bytes.set(hello, PREFACE.length);
  return bytes;
}

/**
 * The codec the server chose, which must be one we offered. The decoder
 * has already checked the WELCOME's seed, limits and feature bits.
 */
export function chosenCodec(welcome: WelcomeFrame, codecs: readonly PayloadCodec[]): PayloadCodec {
  const codec = codecs.find((c) => c.name === welcome.codec);
  if (codec === undefined) {
    throw new ProtocolError('ERR_PROTOCOL_CODEC', `the server chose codec "${welcome.codec}", which the client did not offer`);
  }
  return codec;
}

export function serverInfo(welcome: WelcomeFrame, features: number): ServerInfo {
  return {
    codec: welcome.codec,
    heartbeatMs: welcome.heartbeatMs,
    features: welcome.features & features,
    maxFrameSize: welcome.maxFrameSize,
    initialWindow: welcome.initialWindow,
    maxConcurrentCalls: welcome.maxConcurrentCalls,
    // A copy: the frame is a view into the decoder's buffer.
    data: welcome.data.slice(),
  };
}

/** A GO_AWAY as the only frame to send after a violation in the handshake (no call was made yet). */
export function goAwayBytes(code: string, message: string): Uint8Array | null {
  try {
    return encodeFrame({ type: 'goAway', lastCallId: 0, code, message: message.slice(0, 200) });
  } catch {
    return null; // a code that is not wire-safe: just close
  }
}

/** Describes a server's refusal. */
export function refusalMessage(frame: GoAwayFrame): string {
  return frame.message === '' ? `the server refused the connection (${frame.code})` : `the server refused the connection (${frame.code}): ${frame.message}`;
}

/**
 * Codes after which reconnecting cannot help: the server does not speak
 * this protocol, this version, or any of our codecs, or one side's
 * handshake is broken.
 */
export const FATAL_CODES: ReadonlySet<string> = new Set([
  'ERR_PROTOCOL_PREFACE',
  'ERR_PROTOCOL_VERSION',
  'ERR_PROTOCOL_CODEC',
  'ERR_PROTOCOL_HANDSHAKE',
]);
