// What every RPC peer serves and sends: the actions of ADAPTERS.md and the
// data of each scenario. Imported by the servers, the client adapters and
// the driver, so every peer moves the same bytes.

export const MiB = 1024 * 1024;

/** The tiny request and response of tiny-response, serial-rtt and parallel: 16 bytes of JSON-ish ASCII. */
export const TINY = Buffer.from('{"a":1,"b":"xy"}');
/** The same 16 bytes as a string, for peers whose cheapest small datum is a string (qrpc, Socket.IO). */
export const TINY_TEXT = TINY.toString('latin1');

/** The integer a fast reply carries. */
export const FAST_CODE = 200;

/** Responses per call in many-responses; each is TINY. */
export const MANY_RESPONSES = 100;

/** Largest message any peer is configured to accept (4 MiB payloads plus framing). */
export const MAX_MESSAGE = 16 * MiB;

/**
 * The actions a server implements (ADAPTERS.md). Peers that route by name
 * use these names: HTTP paths `/<action>`, qrpc handler names, Socket.IO
 * event names, gRPC method names (capitalised).
 */
export const ACTIONS = ['tiny', 'fast', 'upload', 'file', 'many', 'notify', 'count'];

/** Deterministic pseudo-random bytes (xorshift32): payloads that no transport can compress or shortcut. */
export function payloadOf(size, seed = 0x9e3779b9) {
  const buf = Buffer.allocUnsafe(size);
  let x = seed >>> 0 || 1;
  let i = 0;
  for (; i + 4 <= size; i += 4) {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    buf.writeUInt32LE(x, i);
  }
  for (; i < size; i++) buf[i] = i & 0xff;
  return buf;
}
