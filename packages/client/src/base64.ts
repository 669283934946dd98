/**
 * Padded standard base64 (RFC 4648 §4), for the protocol's frames in SockJS
 * messages (docs/protocol.md, "Over SockJS"). Written out rather than
 * `btoa`/`atob`, which take "binary strings" (one string character per
 * byte, built and parsed a character at a time) and are not in every
 * runtime the client targets; and rather than `Buffer`, which browsers
 * lack. The decoder is as strict as the server's: padding required, no
 * other characters, no bits set past the data.
 */

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
const CODES = new Uint8Array(64);
for (let i = 0; i < 64; i++) CODES[i] = ALPHABET.charCodeAt(i);
/** Character code to its 6 bits; 255 for a character outside the alphabet. */
const VALUES = new Uint8Array(128).fill(255);
for (let i = 0; i < 64; i++) VALUES[ALPHABET.charCodeAt(i)] = i;
const PAD = 61; // '='
const latin1 = new TextDecoder('latin1');

/** The base64 of `bytes`. */
export function encodeBase64(bytes: Uint8Array): string {
  const n = bytes.length;
  const out = new Uint8Array(Math.ceil(n / 3) * 4);
  let o = 0;
  let i = 0;
  for (; i + 3 <= n; i += 3) {
    const v = (bytes[i]! << 16) | (bytes[i + 1]! << 8) | bytes[i + 2]!;
    out[o++] = CODES[v >>> 18]!;
    out[o++] = CODES[(v >>> 12) & 63]!;
    out[o++] = CODES[(v >>> 6) & 63]!;
    out[o++] = CODES[v & 63]!;
  }
  if (i < n) {
    const two = i + 1 < n;
    const v = (bytes[i]! << 16) | (two ? bytes[i + 1]! << 8 : 0);
    out[o++] = CODES[v >>> 18]!;
    out[o++] = CODES[(v >>> 12) & 63]!;
    out[o++] = two ? CODES[(v >>> 6) & 63]! : PAD;
    out[o++] = PAD;
  }
  // ASCII bytes as a string in one call (latin1 maps each byte to its code point).
  return latin1.decode(out);
}

/** The bytes `text` encodes; throws a RangeError unless it is padded, canonical standard base64. */
export function decodeBase64(text: string): Uint8Array {
  const length = text.length;
  if (length % 4 !== 0) throw new RangeError('base64: the length is not a multiple of 4');
  if (length === 0) return new Uint8Array(0);
  const pad = text.charCodeAt(length - 1) === PAD ? (text.charCodeAt(length - 2) === PAD ? 2 : 1) : 0;
  const out = new Uint8Array((length / 4) * 3 - pad);
  let o = 0;
  const value = (at: number): number => {
    const code = text.charCodeAt(at);
    const v = code < 128 ? VALUES[code]! : 255;
    if (v === 255) throw new RangeError(`base64: an invalid character at ${at}`);
    return v;
  };
  const whole = pad === 0 ? length : length - 4;
  for (let i = 0; i < whole; i += 4) {
    const v = (value(i) << 18) | (value(i + 1) << 12) | (value(i + 2) << 6) | value(i + 3);
    out[o++] = v >>> 16;
    out[o++] = (v >>> 8) & 255;
    out[o++] = v & 255;
  }
  if (pad > 0) {
    const a = value(whole);
    const b = value(whole + 1);
    if (pad === 2) {
      if ((b & 15) !== 0) throw new RangeError('base64: bits set past the data');
      out[o] = (a << 2) | (b >>> 4);
    } else {
      const c = value(whole + 2);
      if ((c & 3) !== 0) throw new RangeError('base64: bits set past the data');
      out[o++] = (a << 2) | (b >>> 4);
      out[o] = ((b & 15) << 4) | (c >>> 2);
    }
  }
  return out;
}
