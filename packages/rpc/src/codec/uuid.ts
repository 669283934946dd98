/**
 * Derived UUIDs (docs/protocol.md §6): a message's UUID is its sender's
 * seed plus the call id in the last 6 bytes; a response's is the
 * responder's seed with bit 0x20 of byte 8 flipped, plus the response's
 * sequence number. The addition only touches bytes 10–15, so the version
 * nibble (byte 6) and variant bits (byte 8) of a v4 seed survive.
 */

import { toHex } from './hex.js';
import { checkInteger } from './ints.js';

const TWO_24 = 0x100_0000;

/** The UUID of the MESSAGE with `callId` from the side whose seed is `seed`. */
export function messageUuid(seed: Uint8Array, callId: number): Uint8Array {
  return derive(seed, callId, 0, 'call id');
}

/** The UUID of the `sequence`-th response (1-based) from the side whose seed is `seed`. */
export function responseUuid(seed: Uint8Array, sequence: number): Uint8Array {
  return derive(seed, sequence, 0x20, 'response sequence number');
}

/** The UUID of the `sequence`-th unnumbered message (call id 0; 1-based) from the side whose seed is `seed`. */
export function unnumberedUuid(seed: Uint8Array, sequence: number): Uint8Array {
  return derive(seed, sequence, 0x10, 'unnumbered message sequence number');
}

function derive(seed: Uint8Array, n: number, flip: number, what: string): Uint8Array {
  if (seed.length !== 16) throw new RangeError(`a seed is 16 bytes, got ${seed.length}`);
  checkInteger(n, what);
  const out = seed.slice();
  out[8] = out[8]! ^ flip;
  // Bytes 10–15 as a big-endian 48-bit number, in two 24-bit halves so
  // every step stays an exact small integer; the carry out of the top half
  // is dropped, which is the modulo 2^48.
  const low = ((out[13]! << 16) | (out[14]! << 8) | out[15]!) + (n % TWO_24);
  const high = ((out[10]! << 16) | (out[11]! << 8) | out[12]!) + Math.floor(n / TWO_24) + (low >= TWO_24 ? 1 : 0);
  out[10] = high >>> 16;
  out[11] = high >>> 8;
  out[12] = high;
  out[13] = low >>> 16;
  out[14] = low >>> 8;
  out[15] = low;
  return out;
}

/** The canonical 8-4-4-4-12 lowercase form. */
export function uuidToString(bytes: Uint8Array): string {
  if (bytes.length !== 16) throw new RangeError(`a uuid is 16 bytes, got ${bytes.length}`);
  return `${toHex(bytes, 0, 4)}-${toHex(bytes, 4, 6)}-${toHex(bytes, 6, 8)}-${toHex(bytes, 8, 10)}-${toHex(bytes, 10, 16)}`;
}

/** 16 random bytes with the UUID v4 marks: a seed for HELLO / WELCOME. */
export function randomSeed(): Uint8Array {
  const seed = crypto.getRandomValues(new Uint8Array(16));
  seed[6] = (seed[6]! & 0x0f) | 0x40;
  seed[8] = (seed[8]! & 0x3f) | 0x80;
  return seed;
}
