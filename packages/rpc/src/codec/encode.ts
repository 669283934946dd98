/**
 * Frame encoding (docs/protocol.md §3–4): every integer in the smallest
 * width that holds it, straight into one Uint8Array of the exact size.
 *
 * Two passes: `bodyLength` validates the frame and measures its body (it
 * is the only place that throws, so nothing is written for a bad frame),
 * then `writeFrame` writes it. Length-prefixed strings are written first
 * and their length filled in after, so the writer never measures a string
 * a second time.
 *
 * The encoder refuses what the decoder would reject as malformed (an
 * empty action, a zero credit, codes that are empty or not printable
 * ASCII, fields too long for their length prefix): a bug in the sender
 * surfaces as a RangeError at its source instead of as the peer closing
 * the connection. It does encode values that are wrong only in context
 * (call id 0, a handshake with a small maxFrameSize): the stateful and
 * handshake checks own those.
 */

import type { Frame, Settings } from './frames.js';
import { FrameType } from './frames.js';
import { byteWidth, checkInteger, widthCode, writeU16, writeU32, writeUint } from './ints.js';
import { asciiLength, utf8Length, writeAscii, writeUtf8 } from './utf8.js';

// Descriptor flag bits (§3).
const REPLY = 0x10;
const LAST = 0x10;
const PONG = 0x10;
const UUID = 0x20;
const ATTACHMENTS = 0x40;
const FILE = 0x40;
const ABORT = 0x40;

const U8 = 0xff;
const U16 = 0xffff;
const U32 = 0xffff_ffff;
/** seed + maxFrameSize, initialWindow, maxConcurrentCalls, heartbeatMs, features. */
const SETTINGS_SIZE = 16 + 5 * 4;

/** The size of `frame` encoded: header and body. */
export function encodedLength(frame: Frame): number {
  const body = bodyLength(frame);
  return 2 + byteWidth(body) + body;
}

/** Encodes `frame` into a new Uint8Array of exactly its size. */
export function encodeFrame(frame: Frame): Uint8Array {
  const body = bodyLength(frame);
  const out = new Uint8Array(2 + byteWidth(body) + body);
  writeFrame(frame, body, out, 0);
  return out;
}

/**
 * The bytes a frame ends with as they are: a message's or response's
 * payload, a stream chunk's data; null for the other frames.
 */
export function frameTail(frame: Frame): Uint8Array | null {
  switch (frame.type) {
    case 'message':
    case 'response':
      return frame.payload;
    case 'streamData':
      return frame.data;
    default:
      return null;
  }
}

/**
 * Encodes `frame` without its tail (`frameTail`): the bytes to write before
 * the tail, which then goes out as it is. Header, fields and tail
 * concatenated are exactly `encodeFrame(frame)`; a large payload is written
 * this way without being copied.
 */
export function encodeFrameHead(frame: Frame): Uint8Array {
  const body = bodyLength(frame);
  const tail = frameTail(frame)?.length ?? 0;
  const out = new Uint8Array(2 + byteWidth(body) + body - tail);
  writeFrame(frame, body, out, 0, false);
  return out;
}

/**
 * Encodes `frame` into `target` at `offset` (for batching several frames
 * into one write). Returns the number of bytes written; throws a RangeError,
 * writing nothing, when they do not fit.
 */
export function encodeFrameInto(frame: Frame, target: Uint8Array, offset: number): number {
  const body = bodyLength(frame);
  const size = 2 + byteWidth(body) + body;
  if (!(Number.isInteger(offset) && offset >= 0 && offset + size <= target.length)) {
    throw new RangeError(`a ${frame.type} frame of ${size} bytes does not fit at offset ${offset} of ${target.length} bytes`);
  }
  writeFrame(frame, body, target, offset);
  return size;
}

/** Validates `frame` and returns its body length. */
function bodyLength(frame: Frame): number {
  switch (frame.type) {
    case 'message': {
      checkInteger(frame.callId, 'call id');
      const attachments = frame.attachments;
      checkInteger(attachments, 'attachments', U8);
      const action = utf8Length(frame.action);
      if (action < 1 || action > U8) throw new RangeError(`an action is 1…255 UTF-8 bytes, got ${action}`);
      let length = byteWidth(frame.callId) + 1 + action + frame.payload.length;
      if (frame.uuid !== null) {
        if (frame.uuid.length !== 16) throw new RangeError(`a uuid is 16 bytes, got ${frame.uuid.length}`);
        length += 16;
      }
      if (attachments > 0) length += 1;
      return length;
    }
    case 'response':
      checkInteger(frame.callId, 'call id');
      checkInteger(frame.attachments, 'attachments', U8);
      return byteWidth(frame.callId) + (frame.attachments > 0 ? 1 : 0) + frame.payload.length;
    case 'end':
    case 'cancel':
      checkInteger(frame.callId, 'call id');
      return byteWidth(frame.callId);
    case 'fastReply':
      checkInteger(frame.callId, 'call id');
      checkInteger(frame.code, 'fast reply code');
      return byteWidth(frame.callId) + byteWidth(frame.code);
    case 'error': {
      checkInteger(frame.callId, 'call id');
      const code = codeLength(frame.code, 'error code');
      const message = utf8Length(frame.message);
      if (message > U16) throw new RangeError(`an error message is at most 65535 UTF-8 bytes, got ${message}`);
      return byteWidth(frame.callId) + 1 + code + 2 + message + frame.details.length;
    }
    case 'streamOpen': {
      checkInteger(frame.streamId, 'stream id');
      let length = byteWidth(frame.streamId);
      if (frame.file !== null) {
        checkInteger(frame.file.size, 'file size');
        const name = utf8Length(frame.file.name);
        if (name > U16) throw new RangeError(`a file name is at most 65535 UTF-8 bytes, got ${name}`);
        length += byteWidth(frame.file.size) + 2 + name;
      }
      return length;
    }
    case 'streamData':
      checkInteger(frame.streamId, 'stream id');
      return byteWidth(frame.streamId) + frame.data.length;
    case 'streamEnd': {
      checkInteger(frame.streamId, 'stream id');
      let length = byteWidth(frame.streamId);
      if (frame.abort !== null) {
        length += 1 + codeLength(frame.abort.code, 'abort code') + utf8Length(frame.abort.message);
      }
      return length;
    }
    case 'credit':
      checkInteger(frame.streamId, 'stream id');
      checkInteger(frame.increment, 'credit increment');
      if (frame.increment === 0) throw new RangeError('a credit increment is at least 1');
      return byteWidth(frame.streamId) + byteWidth(frame.increment);
    case 'stop':
      checkInteger(frame.streamId, 'stream id');
      return byteWidth(frame.streamId) + 1 + codeLength(frame.code, 'stop code');
    case 'heartbeat':
      return 0;
    case 'goAway':
      checkInteger(frame.lastCallId, 'last call id');
      return byteWidth(frame.lastCallId) + 1 + codeLength(frame.code, 'go-away code') + utf8Length(frame.message);
    case 'hello': {
      let length = settingsLength(frame) + 1;
      if (frame.codecs.length > U8) throw new RangeError(`HELLO lists at most 255 codecs, got ${frame.codecs.length}`);
      for (const codec of frame.codecs) length += 1 + codeLength(codec, 'codec name');
      return length + frame.data.length;
    }
    case 'welcome':
      return settingsLength(frame) + 1 + codeLength(frame.codec, 'codec name') + frame.data.length;
    default:
      throw new TypeError(`not a frame type: ${String((frame as { type: unknown }).type)}`);
  }
}

/** A printable ASCII code behind a u8 length: 1–255 bytes (see readCode in decode.ts). */
function codeLength(code: string, what: string): number {
  const length = asciiLength(code, what);
  if (length < 1 || length > U8) throw new RangeError(`${what} is 1…255 printable ASCII bytes, got ${length}`);
  return length;
}

function settingsLength(frame: Settings): number {
  if (frame.seed.length !== 16) throw new RangeError(`a seed is 16 bytes, got ${frame.seed.length}`);
  checkInteger(frame.maxFrameSize, 'maxFrameSize', U32);
  checkInteger(frame.initialWindow, 'initialWindow', U32);
  checkInteger(frame.maxConcurrentCalls, 'maxConcurrentCalls', U32);
  checkInteger(frame.heartbeatMs, 'heartbeatMs', U32);
  checkInteger(frame.features, 'features', U32);
  return SETTINGS_SIZE;
}

/** Writes a frame `bodyLength` validated; `body` is its body length. */
/** Writes `frame` at `offset`; without `withTail`, everything but its tail (see `encodeFrameHead`). */
function writeFrame(frame: Frame, body: number, out: Uint8Array, offset: number, withTail = true): void {
  const lengthCode = widthCode(body);
  const lengthWidth = byteWidth(body);
    writeUint(out, offset + 2, body, lengthWidth);
  let p = offset + 2 + lengthWidth;
  let type: number;
  // The field widths and flags are or-ed in below, per type.
  let descriptor = lengthCode;
  switch (frame.type) {
    case 'message': {
      type = FrameType.Message;
      const idWidth = byteWidth(frame.callId);
      descriptor |= widthCode(frame.callId) << 2;
      if (frame.expectsReply) descriptor |= REPLY;
      writeUint(out, p, frame.callId, idWidth);
      p += idWidth;
      if (frame.uuid !== null) {
        descriptor |= UUID;
        out.set(frame.uuid, p);
        p += 16;
      }
      if (frame.attachments > 0) {
        descriptor |= ATTACHMENTS;
        out[p++] = frame.attachments;
      }
      const end = writeUtf8(frame.action, out, p + 1);
      out[p] = end - p - 1;
      p = end;
      if (withTail) out.set(frame.payload, p);
      break;
    }
    case 'response': {
      type = FrameType.Response;
      descriptor |= widthCode(frame.callId) << 2;
      if (frame.last) descriptor |= LAST;
      p = writeId(out, p, frame.callId);
      if (frame.attachments > 0) {
        descriptor |= ATTACHMENTS;
        out[p++] = frame.attachments;
      }
      if (withTail) out.set(frame.payload, p);
      break;
    }
    case 'end':
    case 'cancel':
      type = frame.type === 'end' ? FrameType.End : FrameType.Cancel;
      descriptor |= widthCode(frame.callId) << 2;
      writeId(out, p, frame.callId);
      break;
    case 'fastReply':
      type = FrameType.FastReply;
      descriptor |= (widthCode(frame.callId) << 2) | (widthCode(frame.code) << 4);
      p = writeId(out, p, frame.callId);
      writeId(out, p, frame.code);
      break;
    case 'error': {
      type = FrameType.Error;
      descriptor |= widthCode(frame.callId) << 2;
      p = writeId(out, p, frame.callId);
      p = writeCode(out, p, frame.code);
      const end = writeUtf8(frame.message, out, p + 2);
      writeU16(out, p, end - p - 2);
      out.set(frame.details, end);
      break;
    }
    case 'streamOpen':
      type = FrameType.StreamOpen;
      descriptor |= widthCode(frame.streamId) << 2;
      p = writeId(out, p, frame.streamId);
      if (frame.file !== null) {
        descriptor |= FILE | (widthCode(frame.file.size) << 4);
        p = writeId(out, p, frame.file.size);
        const end = writeUtf8(frame.file.name, out, p + 2);
        writeU16(out, p, end - p - 2);
      }
      break;
    case 'streamData':
      type = FrameType.StreamData;
      descriptor |= widthCode(frame.streamId) << 2;
      p = writeId(out, p, frame.streamId);
      if (withTail) out.set(frame.data, p);
      break;
    case 'streamEnd':
      type = FrameType.StreamEnd;
      descriptor |= widthCode(frame.streamId) << 2;
      p = writeId(out, p, frame.streamId);
      if (frame.abort !== null) {
        descriptor |= ABORT;
        p = writeCode(out, p, frame.abort.code);
        writeUtf8(frame.abort.message, out, p);
      }
      break;
    case 'credit':
      type = FrameType.Credit;
      descriptor |= (widthCode(frame.streamId) << 2) | (widthCode(frame.increment) << 4);
      p = writeId(out, p, frame.streamId);
      writeId(out, p, frame.increment);
      break;
    case 'stop':
      type = FrameType.Stop;
      descriptor |= widthCode(frame.streamId) << 2;
      p = writeId(out, p, frame.streamId);
      writeCode(out, p, frame.code);
      break;
    case 'heartbeat':
      type = FrameType.Heartbeat;
      if (frame.pong) descriptor |= PONG;
      break;
    case 'goAway':
      type = FrameType.GoAway;
      descriptor |= widthCode(frame.lastCallId) << 2;
      p = writeId(out, p, frame.lastCallId);
      p = writeCode(out, p, frame.code);
      writeUtf8(frame.message, out, p);
      break;
    case 'hello':
      type = FrameType.Hello;
      p = writeSettings(out, p, frame);
      out[p++] = frame.codecs.length;
      for (const codec of frame.codecs) p = writeCode(out, p, codec);
      out.set(frame.data, p);
      break;
    case 'welcome':
      type = FrameType.Welcome;
      p = writeSettings(out, p, frame);
      p = writeCode(out, p, frame.codec);
      out.set(frame.data, p);
      break;
  }
  out[offset] = type;
  out[offset + 1] = descriptor;
}

/** An integer in its smallest width; returns the position after it. */
function writeId(out: Uint8Array, p: number, value: number): number {
  const width = byteWidth(value);
  writeUint(out, p, value, width);
  return p + width;
}

/** u8 length + ASCII. */
function writeCode(out: Uint8Array, p: number, code: string): number {
  out[p] = code.length;
  return writeAscii(code, out, p + 1);
}

function writeSettings(out: Uint8Array, p: number, frame: Settings): number {
  out.set(frame.seed, p);
  writeU32(out, p + 16, frame.maxFrameSize);
  writeU32(out, p + 20, frame.initialWindow);
  writeU32(out, p + 24, frame.maxConcurrentCalls);
  writeU32(out, p + 28, frame.heartbeatMs);
  writeU32(out, p + 32, frame.features);
  return p + SETTINGS_SIZE;
}
