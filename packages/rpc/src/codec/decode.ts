/**
 * Frame decoding (docs/protocol.md §3–4), in two steps:
 *
 * - `frameSize` reads the header and says how big the frame is, or that
 *   more bytes are needed. It rejects an unknown type, reserved descriptor
 *   bits and an oversized length as soon as the byte that shows them is
 *   there, so a stream decoder fails before buffering a body it would
 *   throw away (the spec requires this for the length).
 * - `decodeBody` parses a complete frame. Byte fields (payloads, data,
 *   details, seeds, explicit UUIDs) are `subarray` views: no copy.
 *   (An empty one is a shared empty array: no allocation either.)
 *
 * Any width is accepted for an integer field (the spec requires decoders to
 * accept non-minimal widths). A body must hold its fields exactly: a field
 * running past the end, or bytes left over in a frame type that has no
 * `rest` field, is ERR_PROTOCOL_MALFORMED.
 */

import type { Abort, FileInfo, Frame } from './frames.js';
import { ALL_FEATURES, FrameType, MIN_FRAME_SIZE } from './frames.js';
import { ProtocolError, handshakeError, malformed } from './errors.js';
import { readU16, readU32, readUint, widthOf } from './ints.js';
import { readAscii, readUtf8 } from './utf8.js';

/**
 * Descriptor bits each frame type leaves undefined (§3 table), indexed by
 * type; they MUST be 0. STREAM_OPEN's B bits are also reserved unless FILE
 * is set, which `frameSize` checks separately.
 */
const RESERVED = Uint8Array.of(
  0xff, // 0x00: not a type
  0xfc, // HELLO: only L
  0xfc, // WELCOME: only L
  0x80, // MESSAGE: ATTACHMENTS, UUID, REPLY, A, L
  0xa0, // RESPONSE: ATTACHMENTS, LAST, A, L
  0xf0, // END: A, L
  0xc0, // FAST_REPLY: B, A, L
  0xf0, // ERROR: A, L
  0x80, // STREAM_OPEN: FILE, B, A, L
  0xf0, // STREAM_DATA: A, L
  0xb0, // STREAM_END: ABORT, A, L
  0xc0, // CREDIT: B, A, L
  0xf0, // STOP: A, L
  0xf0, // CANCEL: A, L
  0xec, // HEARTBEAT: PONG, L
  0xf0, // GO_AWAY: A, L
);

const SEED_SIZE = 16;

/**
 * An empty field (a payload, details, data) is common; sharing one empty
 * array saves an allocation per such frame. A zero-length view cannot be
 * written through, so sharing it is safe.
 */
const EMPTY = new Uint8Array(0);

function view(bytes: Uint8Array, start: number, end: number): Uint8Array {
  return start === end ? EMPTY : bytes.subarray(start, end);
}

/**
 * Decodes the frame at `offset`. Returns the frame and its size in bytes,
 * or null when `bytes` ends before the frame does. Throws ProtocolError.
 */
export function decodeFrame(
  bytes: Uint8Array,
  offset: number,
  maxFrameSize: number,
): { frame: Frame; size: number } | null {
  if (!(Number.isInteger(offset) && offset >= 0 && offset <= bytes.length)) {
    throw new RangeError(`offset ${offset} is outside the ${bytes.length} bytes given`);
  }
  const size = frameSize(bytes, offset, bytes.length, maxFrameSize);
  if (size < 0) return null;
  return { frame: decodeBody(bytes, offset, size), size };
}

/**
 * The size of the frame at `offset` (header and body) when all of it lies
 * before `end`, else -1. Throws on a bad type, reserved bits or a length
 * above `maxFrameSize` as soon as those bytes are present.
 */
export function frameSize(bytes: Uint8Array, offset: number, end: number, maxFrameSize: number): number {
  const available = end - offset;
  if (available < 1) return -1;
  const type = bytes[offset]!;
  if (type === 0 || type > FrameType.GoAway) {
    throw new ProtocolError('ERR_PROTOCOL_FRAME_TYPE', `unknown frame type 0x${hexByte(type)}`);
  }
  if (available < 2) return -1;
  const descriptor = bytes[offset + 1]!;
  // STREAM_OPEN's B (bits 4-5) is the file size width: without FILE (bit 6)
  // there is no size, so a nonzero B would be a second encoding of one frame.
  const sizeWithoutFile = type === FrameType.StreamOpen && (descriptor & 0x70) !== 0 && (descriptor & 0x40) === 0;
  if ((descriptor & RESERVED[type]!) !== 0 || sizeWithoutFile) {
    throw malformed(`reserved descriptor bits set in 0x${hexByte(descriptor)} of frame type 0x${hexByte(type)}`);
  }
  const lengthWidth = widthOf(descriptor & 3);
  if (available < 2 + lengthWidth) return -1;
  const length = readUint(bytes, offset + 2, lengthWidth);
  if (length > maxFrameSize) {
    throw new ProtocolError('ERR_PROTOCOL_FRAME_TOO_LARGE', `a frame body of ${length} bytes exceeds maxFrameSize ${maxFrameSize}`);
  }
  const size = 2 + lengthWidth + length;
  return available < size ? -1 : size;
}

function hexByte(b: number): string {
  return b.toString(16).padStart(2, '0');
}

/** Throws unless `n` more bytes from `p` fit before `end`. */
function need(p: number, n: number, end: number, what: string): void {
  if (p + n > end) throw malformed(`${what} does not fit in the frame body`);
}

/** Throws if bytes follow the last field of a frame type without `rest`. */
function done(p: number, end: number, what: string): void {
  if (p !== end) throw malformed(`${end - p} bytes after the last field of ${what}`);
}

/**
 * Parses the frame of `size` bytes at `offset`, which `frameSize` has
 * checked (type, reserved bits, completeness).
 */
export function decodeBody(bytes: Uint8Array, offset: number, size: number): Frame {
  const type = bytes[offset]!;
  const d = bytes[offset + 1]!;
  const end = offset + size;
  let p = offset + 2 + widthOf(d & 3);
  // Width of field A (bits 2-3) and B (bits 4-5), for the types that have them.
  const aw = widthOf((d >> 2) & 3);
  const bw = widthOf((d >> 4) & 3);

  switch (type) {
    case FrameType.Message: {
      need(p, aw, end, 'MESSAGE call id');
      const callId = readUint(bytes, p, aw);
      p += aw;
      let uuid: Uint8Array | null = null;
      if ((d & 0x20) !== 0) {
        need(p, 16, end, 'MESSAGE uuid');
        uuid = view(bytes, p, p + 16);
        p += 16;
      }
      let attachments = 0;
      if ((d & 0x40) !== 0) {
        need(p, 1, end, 'MESSAGE attachment count');
        attachments = bytes[p++]!;
        if (attachments === 0) throw malformed('MESSAGE with ATTACHMENTS and an attachment count of 0');
      }
      need(p, 1, end, 'MESSAGE action length');
      const actionLength = bytes[p++]!;
      if (actionLength === 0) throw malformed('MESSAGE with an empty action');
      need(p, actionLength, end, 'MESSAGE action');
      const action = readUtf8(bytes, p, p + actionLength, 'MESSAGE action');
      p += actionLength;
      return {
        type: 'message',
        callId,
        expectsReply: (d & 0x10) !== 0,
        uuid,
        attachments,
        action,
        payload: view(bytes, p, end),
      };
    }

    case FrameType.Response: {
      need(p, aw, end, 'RESPONSE call id');
      const callId = readUint(bytes, p, aw);
      p += aw;
      let attachments = 0;
      if ((d & 0x40) !== 0) {
        need(p, 1, end, 'RESPONSE attachment count');
        attachments = bytes[p++]!;
        if (attachments === 0) throw malformed('RESPONSE with ATTACHMENTS and an attachment count of 0');
      }
      return { type: 'response', callId, last: (d & 0x10) !== 0, attachments, payload: view(bytes, p, end) };
    }

    case FrameType.End:
    case FrameType.Cancel: {
      const what = type === FrameType.End ? 'END' : 'CANCEL';
      need(p, aw, end, `${what} call id`);
      const callId = readUint(bytes, p, aw);
      done(p + aw, end, what);
      return type === FrameType.End ? { type: 'end', callId } : { type: 'cancel', callId };
    }

    case FrameType.FastReply: {
      need(p, aw + bw, end, 'FAST_REPLY call id and code');
      const callId = readUint(bytes, p, aw);
      const code = readUint(bytes, p + aw, bw);
      done(p + aw + bw, end, 'FAST_REPLY');
      return { type: 'fastReply', callId, code };
    }

    case FrameType.Error: {
      need(p, aw, end, 'ERROR call id');
      const callId = readUint(bytes, p, aw);
      p += aw;
      const code = readCode(bytes, p, end, 'ERROR code');
      p += 1 + code.length;
      need(p, 2, end, 'ERROR message length');
      const messageLength = readU16(bytes, p);
      p += 2;
      need(p, messageLength, end, 'ERROR message');
      const message = readUtf8(bytes, p, p + messageLength, 'ERROR message');
      p += messageLength;
      return { type: 'error', callId, code, message, details: view(bytes, p, end) };
    }

    case FrameType.StreamOpen: {
      need(p, aw, end, 'STREAM_OPEN stream id');
      const streamId = readUint(bytes, p, aw);
      p += aw;
      let file: FileInfo | null = null;
      if ((d & 0x40) !== 0) {
        need(p, bw + 2, end, 'STREAM_OPEN file size and name length');
        const fileSize = readUint(bytes, p, bw);
        p += bw;
        const nameLength = readU16(bytes, p);
        p += 2;
        need(p, nameLength, end, 'STREAM_OPEN file name');
        file = { size: fileSize, name: readUtf8(bytes, p, p + nameLength, 'STREAM_OPEN file name') };
        p += nameLength;
      }
      done(p, end, 'STREAM_OPEN');
      return { type: 'streamOpen', streamId, file };
    }

    case FrameType.StreamData: {
      need(p, aw, end, 'STREAM_DATA stream id');
      const streamId = readUint(bytes, p, aw);
      return { type: 'streamData', streamId, data: view(bytes, p + aw, end) };
    }

    case FrameType.StreamEnd: {
      need(p, aw, end, 'STREAM_END stream id');
      const streamId = readUint(bytes, p, aw);
      p += aw;
      let abort: Abort | null = null;
      if ((d & 0x40) !== 0) {
        const code = readCode(bytes, p, end, 'STREAM_END code');
        p += 1 + code.length;
        abort = { code, message: readUtf8(bytes, p, end, 'STREAM_END message') };
        p = end;
      }
      done(p, end, 'STREAM_END');
      return { type: 'streamEnd', streamId, abort };
    }

    case FrameType.Credit: {
      need(p, aw + bw, end, 'CREDIT stream id and increment');
      const streamId = readUint(bytes, p, aw);
      const increment = readUint(bytes, p + aw, bw);
      done(p + aw + bw, end, 'CREDIT');
      if (increment === 0) throw malformed('CREDIT with an increment of 0');
      return { type: 'credit', streamId, increment };
    }

    case FrameType.Stop: {
      need(p, aw, end, 'STOP stream id');
      const streamId = readUint(bytes, p, aw);
      p += aw;
      const code = readCode(bytes, p, end, 'STOP code');
      done(p + 1 + code.length, end, 'STOP');
      return { type: 'stop', streamId, code };
    }

    case FrameType.Heartbeat:
      done(p, end, 'HEARTBEAT');
      return { type: 'heartbeat', pong: (d & 0x10) !== 0 };

    case FrameType.GoAway: {
      need(p, aw, end, 'GO_AWAY last call id');
      const lastCallId = readUint(bytes, p, aw);
      p += aw;
      const code = readCode(bytes, p, end, 'GO_AWAY code');
      p += 1 + code.length;
      return { type: 'goAway', lastCallId, code, message: readUtf8(bytes, p, end, 'GO_AWAY message') };
    }

    case FrameType.Hello:
    case FrameType.Welcome:
      return decodeHandshake(bytes, type, p, end);

    default:
      // frameSize rejected every other type.
      throw new ProtocolError('ERR_PROTOCOL_FRAME_TYPE', `unknown frame type 0x${hexByte(type)}`);
  }
}

/**
 * HELLO / WELCOME. The value rules of §4 (ERR_PROTOCOL_HANDSHAKE) are
 * checked as soon as the fixed settings are read, before the codec names,
 * in the same order as the Rust codec (crates/proto/src/rpc/decode.rs), so
 * both report the same code for a frame that breaks rules of both kinds.
 */
function decodeHandshake(bytes: Uint8Array, type: number, p: number, end: number): Frame {
  const what = type === FrameType.Hello ? 'HELLO' : 'WELCOME';
  need(p, SEED_SIZE + 20, end, `${what} settings`);
  const seed = view(bytes, p, p + SEED_SIZE);
  p += SEED_SIZE;
  const maxFrameSize = readU32(bytes, p);
  const initialWindow = readU32(bytes, p + 4);
  const maxConcurrentCalls = readU32(bytes, p + 8);
  const heartbeatMs = readU32(bytes, p + 12);
  const features = readU32(bytes, p + 16);
  p += 20;
  if ((seed[6]! & 0xf0) !== 0x40 || (seed[8]! & 0xc0) !== 0x80) {
    throw handshakeError(`${what} seed lacks the UUID v4 marks (byte 6 0x${hexByte(seed[6]!)}, byte 8 0x${hexByte(seed[8]!)})`);
  }
  if (maxFrameSize < MIN_FRAME_SIZE) throw handshakeError(`${what} maxFrameSize ${maxFrameSize} is below ${MIN_FRAME_SIZE}`);
  if (initialWindow < MIN_FRAME_SIZE) throw handshakeError(`${what} initialWindow ${initialWindow} is below ${MIN_FRAME_SIZE}`);
  if ((features & ~ALL_FEATURES) !== 0) throw handshakeError(`${what} features 0x${features.toString(16)} set undefined bits`);
  if (type === FrameType.Hello) {
    need(p, 1, end, 'HELLO codec count');
    const count = bytes[p++]!;
    const codecs: string[] = [];
    for (let i = 0; i < count; i++) {
      const codec = readCode(bytes, p, end, 'HELLO codec name');
      codecs.push(codec);
      p += 1 + codec.length;
    }
    return { type: 'hello', seed, maxFrameSize, initialWindow, maxConcurrentCalls, heartbeatMs, features, codecs, data: view(bytes, p, end) };
  }
  const codec = readCode(bytes, p, end, 'WELCOME codec name');
  p += 1 + codec.length;
  return { type: 'welcome', seed, maxFrameSize, initialWindow, maxConcurrentCalls, heartbeatMs, features, codec, data: view(bytes, p, end) };
}

/**
 * A code or codec name: u8 length, then 1–255 printable ASCII bytes
 * (0x21–0x7E, docs/protocol.md §3), everywhere a code appears.
 * The caller advances by 1 + the string's length (ASCII: one unit a byte).
 */
function readCode(bytes: Uint8Array, p: number, end: number, what: string): string {
  need(p, 1, end, `${what} length`);
  const length = bytes[p]!;
  if (length === 0) throw malformed(`${what} is empty`);
  need(p + 1, length, end, what);
  return readAscii(bytes, p + 1, p + 1 + length, what);
}
