/**
 * Payload codecs: how MESSAGE and RESPONSE payloads and ERROR details are
 * encoded. The handshake picks one by name (docs/protocol.md §4: `raw` is
 * always spoken, `json` and `msgpack` are standard).
 *
 * Every built-in codec maps `undefined` to an empty payload and an empty
 * payload back to `undefined`, so "no payload" costs no byte: the spec's
 * rule that zero bytes is *no value*, distinct from `null`
 * (docs/protocol.md §4 Payloads, vectors in spec/wire/payloads.json).
 */

import { Packr } from 'msgpackr';

export interface PayloadCodec {
  /** The name the handshake negotiates (ASCII). */
  readonly name: string;
  encode(value: unknown): Uint8Array;
  decode(bytes: Uint8Array): unknown;
}

const EMPTY = new Uint8Array(0);
const utf8Encoder = new TextEncoder();
const utf8Decoder = new TextDecoder('utf-8', { fatal: true });

/**
 * Bytes as they are. Encodes a Uint8Array (as is), a string (UTF-8),
 * `undefined` or `null` (empty); anything else is a TypeError. Decodes to
 * the Uint8Array itself.
 */
export const rawCodec: PayloadCodec = {
  name: 'raw',
  encode(value: unknown): Uint8Array {
    if (value instanceof Uint8Array) return value;
    if (typeof value === 'string') return utf8Encoder.encode(value);
    if (value === undefined || value === null) return EMPTY;
    throw new TypeError(`the raw codec encodes Uint8Array or string payloads, got ${typeof value}`);
  },
  decode(bytes: Uint8Array): unknown {
    return bytes;
  },
};

/** JSON text in UTF-8. `undefined` ↔ empty payload. */
export const jsonCodec: PayloadCodec = {
  name: 'json',
  encode(value: unknown): Uint8Array {
    if (value === undefined) return EMPTY;
    const text = JSON.stringify(value);
    // JSON.stringify returns undefined for functions and symbols.
    if (text === undefined) throw new TypeError(`the json codec cannot encode a ${typeof value}`);
    return utf8Encoder.encode(text);
  },
  decode(bytes: Uint8Array): unknown {
    if (bytes.length === 0) return undefined;
    return JSON.parse(utf8Decoder.decode(bytes)) as unknown;
  },
};

// Plain MessagePack that other implementations read: no record extension,
// maps with string keys as objects, undefined inside values as nil, maps
// with the smallest header (fixmap up to 15 keys).
const packr = new Packr({
  useRecords: false,
  mapsAsObjects: true,
  variableMapSize: true,
  encodeUndefinedAsNil: true,
  moreTypes: false,
});

/** MessagePack (msgpackr, without its record extension). `undefined` ↔ empty payload. */
export const msgpackCodec: PayloadCodec = {
  name: 'msgpack',
  encode(value: unknown): Uint8Array {
    if (value === undefined) return EMPTY;
    return packr.pack(value);
  },
  decode(bytes: Uint8Array): unknown {
    if (bytes.length === 0) return undefined;
    return packr.unpack(bytes) as unknown;
  },
};

/** The built-in codecs, in the order a client offers them by default. */
export const payloadCodecs: readonly PayloadCodec[] = [msgpackCodec, jsonCodec, rawCodec];

/** The built-in codec of that name, or undefined. */
export function findCodec(name: string, codecs: readonly PayloadCodec[] = payloadCodecs): PayloadCodec | undefined {
  return codecs.find((codec) => codec.name === name);
}
