/**
 * Unsigned little-endian integers of 1, 2, 4 or 6 bytes (docs/protocol.md
 * §3), read and written byte by byte on the Uint8Array itself: a DataView
 * per frame would be an allocation, and shifts on small typed-array reads
 * are as fast as DataView calls in V8 and SpiderMonkey.
 *
 * Values above 32 bits are split into a low 32-bit and a high 16-bit half
 * because JavaScript's bitwise operators work on 32 bits; numbers below
 * 2^48 are exact doubles, so the arithmetic recombination loses nothing.
 */

import { MAX_INTEGER } from './frames.js';

const TWO_32 = 0x1_0000_0000;

/** Width code (0–3) of the smallest width that holds `value`. */
export function widthCode(value: number): number {
  return value < 0x100 ? 0 : value < 0x1_0000 ? 1 : value < TWO_32 ? 2 : 3;
}

/** Byte width of a width code: 1, 2, 4, 6. */
export function widthOf(code: number): number {
  return code === 3 ? 6 : 1 << code;
}

/** Byte width of the smallest width that holds `value`. */
export function byteWidth(value: number): number {
  return value < 0x100 ? 1 : value < 0x1_0000 ? 2 : value < TWO_32 ? 4 : 6;
}

export function readU16(bytes: Uint8Array, pos: number): number {
  return bytes[pos]! | (bytes[pos + 1]! << 8);
}

export function readU32(bytes: Uint8Array, pos: number): number {
  // `>>> 0` makes the top bit a value bit instead of a sign bit.
  return (bytes[pos]! | (bytes[pos + 1]! << 8) | (bytes[pos + 2]! << 16) | (bytes[pos + 3]! << 24)) >>> 0;
}

/** Reads an integer of `width` bytes (1, 2, 4 or 6). The caller checked the bounds. */
export function readUint(bytes: Uint8Array, pos: number, width: number): number {
  switch (width) {
    case 1:
      return bytes[pos]!;
    case 2:
      return readU16(bytes, pos);
    case 4:
      return readU32(bytes, pos);
    default:
      return readU32(bytes, pos) + readU16(bytes, pos + 4) * TWO_32;
  }
}

export function writeU16(bytes: Uint8Array, pos: number, value: number): void {
  bytes[pos] = value;
  bytes[pos + 1] = value >>> 8;
}

export function writeU32(bytes: Uint8Array, pos: number, value: number): void {
  bytes[pos] = value;
  bytes[pos + 1] = value >>> 8;
  bytes[pos + 2] = value >>> 16;
  bytes[pos + 3] = value >>> 24;
}

/** Writes `value` in `width` bytes (1, 2, 4 or 6); the typed array truncates each byte. */
export function writeUint(bytes: Uint8Array, pos: number, value: number, width: number): void {
  switch (width) {
    case 1:
      bytes[pos] = value;
      return;
    case 2:
      writeU16(bytes, pos, value);
      return;
    case 4:
      writeU32(bytes, pos, value);
      return;
    default:
      // `value >>> 0` is value mod 2^32 for any integer below 2^53.
      writeU32(bytes, pos, value >>> 0);
      writeU16(bytes, pos + 4, Math.floor(value / TWO_32));
  }
}

/**
 * Encoder-side check: a protocol integer is a whole number in 0 … 2^48−1.
 * A fraction, NaN or negative number would otherwise be silently truncated
 * into some other valid-looking value by the typed-array stores.
 */
export function checkInteger(value: number, what: string, max: number = MAX_INTEGER): void {
  if (!(Number.isInteger(value) && value >= 0 && value <= max)) {
    throw new RangeError(`${what} must be an integer in 0…${max}, got ${String(value)}`);
  }
}
