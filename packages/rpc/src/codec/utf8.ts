/**
 * Strings in frames: UTF-8 (actions, messages, file names) and printable
 * ASCII, bytes 0x21–0x7E (codes, codec names), docs/protocol.md §3.
 *
 * Encoding writes short strings by hand: for the few bytes of an action
 * name that is several times faster than `TextEncoder.encodeInto`, which
 * needs a `subarray` view per call. Long strings go through the encoder.
 * Lone surrogates become U+FFFD (3 bytes) on both paths, as TextEncoder
 * does, so `utf8Length` always matches what is written.
 *
 * Decoding validates strictly (`fatal`: invalid UTF-8 is
 * ERR_PROTOCOL_MALFORMED) and keeps a leading U+FEFF (`ignoreBOM`: the
 * default would silently strip it from an action name). Short strings go
 * through a small interning cache: actions, error codes and codec names
 * come from a small vocabulary, and returning the same string object skips
 * both the decode and the hashing when the caller looks it up in a Map.
 */

import { malformed } from './errors.js';

const encoder = new TextEncoder();
const decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** Strings up to this many UTF-16 units are encoded by hand. */
const SHORT_STRING = 64;

/** Number of UTF-8 bytes of `s`, as TextEncoder would write them. */
export function utf8Length(s: string): number {
  const n = s.length;
  let length = n;
  for (let i = 0; i < n; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) continue;
    if (c < 0x800) {
      length += 1;
    } else if (c >= 0xd800 && c <= 0xdbff && i + 1 < n && isLowSurrogate(s.charCodeAt(i + 1))) {
      // A pair: 2 UTF-16 units, 4 bytes.
      length += 2;
      i++;
    } else {
      // Other BMP characters and lone surrogates (written as U+FFFD): 3 bytes.
      length += 2;
    }
  }
  return length;
}

function isLowSurrogate(c: number): boolean {
  return c >= 0xdc00 && c <= 0xdfff;
}

/**
 * Writes `s` at `pos` (the caller sized the room with `utf8Length`).
 * Returns the position after it.
 */
export function writeUtf8(s: string, bytes: Uint8Array, pos: number): number {
  if (s.length > SHORT_STRING) return pos + encoder.encodeInto(s, bytes.subarray(pos)).written;
  let p = pos;
  const n = s.length;
  for (let i = 0; i < n; i++) {
    let c = s.charCodeAt(i);
    if (c < 0x80) {
      bytes[p++] = c;
    } else if (c < 0x800) {
      bytes[p++] = 0xc0 | (c >> 6);
      bytes[p++] = 0x80 | (c & 0x3f);
    } else if (c >= 0xd800 && c <= 0xdfff) {
      const d = c <= 0xdbff && i + 1 < n ? s.charCodeAt(i + 1) : 0;
      if (isLowSurrogate(d)) {
        c = 0x10000 + ((c - 0xd800) << 10) + (d - 0xdc00);
        i++;
        bytes[p++] = 0xf0 | (c >> 18);
        bytes[p++] = 0x80 | ((c >> 12) & 0x3f);
        bytes[p++] = 0x80 | ((c >> 6) & 0x3f);
        bytes[p++] = 0x80 | (c & 0x3f);
      } else {
        bytes[p++] = 0xef;
        bytes[p++] = 0xbf;
        bytes[p++] = 0xbd;
      }
    } else {
      bytes[p++] = 0xe0 | (c >> 12);
      bytes[p++] = 0x80 | ((c >> 6) & 0x3f);
      bytes[p++] = 0x80 | (c & 0x3f);
    }
  }
  return p;
}

/** A printable ASCII byte (or UTF-16 unit): 0x21–0x7E, no space, no control character. */
function isPrintable(c: number): boolean {
  return c >= 0x21 && c <= 0x7e;
}

/** Encoder-side: the length of a printable ASCII field, or a RangeError naming it. */
export function asciiLength(s: string, what: string): number {
  for (let i = 0; i < s.length; i++) {
    if (!isPrintable(s.charCodeAt(i))) throw new RangeError(`${what} must be printable ASCII (0x21-0x7E): ${JSON.stringify(s)}`);
  }
  return s.length;
}

/** Writes a printable ASCII string (checked by `asciiLength`). Returns the position after it. */
export function writeAscii(s: string, bytes: Uint8Array, pos: number): number {
  for (let i = 0; i < s.length; i++) bytes[pos + i] = s.charCodeAt(i);
  return pos + s.length;
}

/** Decodes UTF-8 bytes [start, end); invalid UTF-8 is ERR_PROTOCOL_MALFORMED. */
export function readUtf8(bytes: Uint8Array, start: number, end: number, what: string): string {
  if (start === end) return '';
  if (end - start <= MAX_INTERNED) return intern(bytes, start, end, false, what);
  return decode(bytes, start, end, what);
}

/** Decodes printable ASCII bytes [start, end); any byte outside 0x21–0x7E is ERR_PROTOCOL_MALFORMED. */
export function readAscii(bytes: Uint8Array, start: number, end: number, what: string): string {
  if (start === end) return '';
  if (end - start <= MAX_INTERNED) return intern(bytes, start, end, true, what);
  checkAscii(bytes, start, end, what);
  return decode(bytes, start, end, what);
}

function decode(bytes: Uint8Array, start: number, end: number, what: string): string {
  try {
    return decoder.decode(bytes.subarray(start, end));
  } catch {
    throw malformed(`${what} is not valid UTF-8`);
  }
}

function checkAscii(bytes: Uint8Array, start: number, end: number, what: string): void {
  for (let i = start; i < end; i++) {
    if (!isPrintable(bytes[i]!)) throw malformed(`${what} is not printable ASCII`);
  }
}

// The interning cache: a direct-mapped table of the last string seen per
// hash slot, holding a private copy of its bytes. A hit costs a hash and a
// compare over the string's bytes; a miss decodes as usual and replaces the
// slot. Only validated strings enter it, so a hit needs no validation.
const MAX_INTERNED = 64;
const SLOTS = 512;
const internedBytes: (Uint8Array | null)[] = new Array<Uint8Array | null>(SLOTS).fill(null);
const internedStrings: string[] = new Array<string>(SLOTS).fill('');

function intern(bytes: Uint8Array, start: number, end: number, ascii: boolean, what: string): string {
  let hash = 0x811c9dc5;
  let high = 0;
  let printable = true;
  for (let i = start; i < end; i++) {
    const b = bytes[i]!;
    high |= b;
    printable &&= isPrintable(b);
    hash = Math.imul(hash ^ b, 0x01000193);
  }
  // Checked before the lookup: a cached UTF-8 string may hold such bytes.
  if (ascii && !printable) throw malformed(`${what} is not printable ASCII`);
  const slot = (hash ^ (hash >>> 16)) & (SLOTS - 1);
  const cached = internedBytes[slot]!;
  const length = end - start;
  if (cached !== null && cached.length === length) {
    let i = 0;
    while (i < length && cached[i] === bytes[start + i]) i++;
    if (i === length) return internedStrings[slot]!;
  }
  const s = high <= 0x7f ? asciiString(bytes, start, end) : decode(bytes, start, end, what);
  internedBytes[slot] = bytes.slice(start, end);
  internedStrings[slot] = s;
  return s;
}

function asciiString(bytes: Uint8Array, start: number, end: number): string {
  // fromCharCode over a view beats TextDecoder for short ASCII runs.
  return String.fromCharCode.apply(null, bytes.subarray(start, end) as unknown as number[]);
}
