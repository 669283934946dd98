/**
 * The preface check (docs/protocol.md §2): `SWB` then the version byte.
 * Checked byte by byte so a peer that speaks something else (an HTTP
 * request, a TLS record) is turned away at its first wrong byte, without
 * waiting for four bytes it may never send.
 */

import { PREFACE, PROTOCOL_VERSION } from './frames.js';
import { ProtocolError } from './errors.js';

/**
 * 'ok' when `bytes` starts with the preface, 'need-more' when it is a
 * proper prefix of it (or empty). Throws ERR_PROTOCOL_PREFACE for other
 * magic bytes, ERR_PROTOCOL_VERSION for the right magic with another version.
 */
export function checkPreface(bytes: Uint8Array): 'ok' | 'need-more' {
  return prefaceStatus(bytes, 0, bytes.length);
}

/** `checkPreface` over bytes [start, end). */
export function prefaceStatus(bytes: Uint8Array, start: number, end: number): 'ok' | 'need-more' {
  const n = Math.min(end - start, PREFACE.length);
  for (let i = 0; i < n; i++) {
    const b = bytes[start + i]!;
    if (i < 3) {
      if (b !== PREFACE[i]) {
        throw new ProtocolError('ERR_PROTOCOL_PREFACE', `not a Switchboard peer: byte ${i} of the preface is 0x${b.toString(16).padStart(2, '0')}`);
      }
    } else if (b !== PROTOCOL_VERSION) {
      throw new ProtocolError('ERR_PROTOCOL_VERSION', `the peer speaks protocol version ${b}, this side speaks ${PROTOCOL_VERSION}`);
    }
  }
  return n === PREFACE.length ? 'ok' : 'need-more';
}
