/**
 * The streaming decoder: bytes in, in chunks of any size; frames out.
 *
 * Memory rules, and why:
 *
 * - Frames hold `subarray` views of the decoder's buffer, so decoding
 *   copies no payload. Those views stay valid forever because the decoder
 *   never writes over a byte it has handed out: it appends past the last
 *   byte received, and when the buffer is full it moves the unread tail to
 *   a fresh buffer, leaving the old one (and every view into it) untouched.
 *   The cost is that a retained view keeps its whole buffer alive, as a
 *   Node Buffer slice does.
 * - Chunks are copied in, never kept: the caller may reuse its chunk.
 * - A new buffer is at least twice the unread bytes plus the chunk, so a
 *   large frame arriving in small chunks is copied O(1) times per byte
 *   overall, not once per chunk (a 16 MiB frame in 64 KiB chunks: under
 *   2 × 16 MiB of copying, chunks included, instead of 16 MiB × 128).
 *   Once a quarter of a frame is in, the buffer is sized for all of it. It
 *   is never sized from the header alone: a peer that sends headers only
 *   cannot make this side allocate maxFrameSize per header.
 * - A decode error is final: the connection is over, and every later
 *   `next()` throws the same error.
 */

import type { Frame } from './frames.js';
import { PREFACE } from './frames.js';
import { decodeBody, frameSize } from './decode.js';
import { ProtocolError } from './errors.js';
import { readUint, widthOf } from './ints.js';
import { prefaceStatus } from './preface.js';

/** Smallest buffer allocated: many small frames share one. */
const MIN_CAPACITY = 64 * 1024;
const EMPTY = new Uint8Array(0);

export interface FrameDecoderOptions {
  /** Largest frame body accepted (the limit this side announced). */
  maxFrameSize: number;
  /** The input starts with the peer's preface (`SWB` 0x01), checked first. */
  expectPreface?: boolean;
}

export class FrameDecoder {
  #buffer: Uint8Array = EMPTY;
  /** First byte not yet returned (as a frame or the preface). */
  #start = 0;
  /** End of the bytes received; the buffer past it was never handed out. */
  #end = 0;
  #maxFrameSize: number;
  #prefaceDue: boolean;
  #error: unknown = null;

  constructor(options: FrameDecoderOptions) {
    this.#maxFrameSize = checkLimit(options.maxFrameSize);
    this.#prefaceDue = options.expectPreface === true;
  }

  get maxFrameSize(): number {
    return this.#maxFrameSize;
  }

  /** Changes the limit, e.g. to the value announced in the handshake. */
  set maxFrameSize(value: number) {
    this.#maxFrameSize = checkLimit(value);
  }

  /** Bytes received and not yet returned as frames (or as the preface). */
  get buffered(): number {
    return this.#end - this.#start;
  }

  /** Adds received bytes. `chunk` is copied; the caller may reuse it. */
  push(chunk: Uint8Array): void {
    const length = chunk.length;
    if (length === 0) return;
    if (length <= this.#buffer.length - this.#end) {
      this.#buffer.set(chunk, this.#end);
      this.#end += length;
      return;
    }
    const unread = this.#end - this.#start;
    const needed = unread + length;
    let capacity = Math.max(MIN_CAPACITY, 2 * needed);
    // A frame whose header is in and of which a quarter has arrived gets
    // its whole size at once: that saves the last doublings' copies, and
    // still reserves at most 4 times what the peer has actually sent.
    const pending = this.#pendingFrameSize();
    if (pending >= needed && pending <= 4 * needed) capacity = Math.max(MIN_CAPACITY, pending);
    const buffer = new Uint8Array(capacity);
    buffer.set(this.#buffer.subarray(this.#start, this.#end), 0);
    buffer.set(chunk, unread);
    this.#buffer = buffer;
    this.#start = 0;
    this.#end = needed;
  }

  /**
   * The next complete frame, or null until more bytes are pushed. Throws
   * ProtocolError (the same one on every later call) on invalid input.
   */
  next(): Frame | null {
    if (this.#error !== null) throw this.#error;
    try {
      if (this.#prefaceDue) {
        if (prefaceStatus(this.#buffer, this.#start, this.#end) === 'need-more') return null;
        this.#start += PREFACE.length;
        this.#prefaceDue = false;
      }
      const size = frameSize(this.#buffer, this.#start, this.#end, this.#maxFrameSize);
      if (size < 0) return null;
      const frame = decodeBody(this.#buffer, this.#start, size);
      this.#start += size;
      return frame;
    } catch (error) {
      if (error instanceof ProtocolError) this.#error = error;
      throw error;
    }
  }

  /**
   * The size of the partly received frame at the read position when its
   * header is in, else 0. Used only to size a new buffer, so it does not
   * validate: `next()` does that.
   */
  #pendingFrameSize(): number {
    const start = this.#start + (this.#prefaceDue ? PREFACE.length : 0);
    if (this.#end - start < 2) return 0;
    const lengthWidth = widthOf(this.#buffer[start + 1]! & 3);
    if (this.#end - start < 2 + lengthWidth) return 0;
    return 2 + lengthWidth + readUint(this.#buffer, start + 2, lengthWidth);
  }
}

function checkLimit(value: number): number {
  if (!(Number.isInteger(value) && value >= 0)) {
    throw new RangeError(`maxFrameSize must be a non-negative integer, got ${String(value)}`);
  }
  return value;
}
