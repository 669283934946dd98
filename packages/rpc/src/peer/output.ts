/**
 * The peer's way out: frames are encoded at once and the small ones written
 * in the same tick are concatenated into one `write`.
 *
 * Encoding copies the payload into the frame, so later changes to a
 * caller's buffers cannot alter what is sent. The exception, on
 * transports that take a frame in parts (`writeParts`: byte streams such
 * as TCP): a message's or response's payload of `DIRECT_WRITE` bytes or
 * more is written by reference after the frame's head, as Node's
 * `socket.write` and HTTP bodies are; so is a stream chunk cut from bytes
 * the caller gave with the call (a file's `data`). Copying a megabyte
 * payload (and faulting in the fresh pages it lands in) was the largest
 * cost of a client sending one. Chunks from iterables and `StreamWriter`s
 * are always copied: `write` resolves once a chunk is sent, and callers
 * reuse their chunk buffers after that.
 *
 * Pacing: a transport whose `write` returns `false` has passed its own
 * high-water mark. Stream data then waits (`paused`, `whenWritable`) until
 * the transport says it drained (`resume`); other frames still go out
 * (they are what credit does not cover, and a peer that stopped answering
 * calls would be worse than one that queues a few replies).
 */

import type { Frame } from '../codec/index.js';
import { encodeFrame, encodeFrameHead, frameTail } from '../codec/index.js';

/** Frames at least this large are written on their own, without a concatenation. */
const DIRECT_WRITE = 16 * 1024;
/**
 * A batch never holds more: over WebSocket a batch is one message, and a
 * receiver accepts at least one maximal frame or 64 KiB of smaller ones
 * (docs/protocol.md §2).
 */
const MAX_BATCH = 64 * 1024;

export class FrameOutput {
  private parts: Uint8Array[] = [];
  private size = 0;
  private scheduled = false;
  private closed = false;
  /** The transport's last write said its queue is full; stream data waits for `resume`. */
  private full = false;
  private writableWaiters: (() => void)[] = [];
  private readonly flushTask = (): void => {
    this.scheduled = false;
    this.flush();
  };

  constructor(
    private readonly sink: (bytes: Uint8Array) => void | boolean,
    private readonly batch: boolean,
    private readonly onWriteError: (error: unknown) => void,
    private readonly sinkParts?: (parts: readonly Uint8Array[]) => void | boolean,
  ) {}

  /** Stream data should wait: the transport's queue is over its high-water mark. */
  get paused(): boolean {
    return this.full;
  }

  /** Resolves once stream data may flow (at once when it may; also when the output closes). */
  whenWritable(): Promise<void> {
    if (!this.full || this.closed) return Promise.resolve();
    return new Promise((resolve) => this.writableWaiters.push(resolve));
  }

  /** The transport drained: stream data flows again. */
  resume(): void {
    this.full = false;
    this.wakeWriters();
  }

  /** `tailByReference`: a stream chunk that may be written by reference (see above). */
  send(frame: Frame, tailByReference = false): void {
    if (this.closed) return;
    if (this.sinkParts !== undefined) {
      // Stream chunks only when their source allows it; payloads always.
      const tail = frame.type === 'streamData' && !tailByReference ? null : frameTail(frame);
      if (tail !== null && tail.length >= DIRECT_WRITE) {
        const head = encodeFrameHead(frame);
        this.flush();
        this.writeParts([head, tail]);
        return;
      }
    }
    const bytes = encodeFrame(frame);
    if (!this.batch || bytes.length >= DIRECT_WRITE) {
      this.flush();
      this.write(bytes);
      return;
    }
    if (this.size + bytes.length > MAX_BATCH) this.flush();
    this.parts.push(bytes);
    this.size += bytes.length;
    if (this.size === MAX_BATCH) this.flush();
    else if (!this.scheduled) {
      this.scheduled = true;
      queueMicrotask(this.flushTask);
    }
  }

  /** Writes what is batched now. */
  flush(): void {
    const parts = this.parts;
    if (parts.length === 0) return;
    let bytes: Uint8Array;
    if (parts.length === 1) {
      bytes = parts[0]!;
    } else {
      bytes = new Uint8Array(this.size);
      let offset = 0;
      for (const part of parts) {
        bytes.set(part, offset);
        offset += part.length;
      }
    }
    this.parts = [];
    this.size = 0;
    this.write(bytes);
  }

  /** Drops what is batched and writes nothing more. */
  close(): void {
    this.closed = true;
    this.parts = [];
    this.size = 0;
    this.wakeWriters();
  }

  private wakeWriters(): void {
    const waiters = this.writableWaiters;
    if (waiters.length === 0) return;
    this.writableWaiters = [];
    for (const resolve of waiters) resolve();
  }

  private writeParts(parts: readonly Uint8Array[]): void {
    if (this.closed) return;
    try {
      if (this.sinkParts!(parts) === false) this.full = true;
    } catch (error) {
      this.onWriteError(error);
    }
  }

  private write(bytes: Uint8Array): void {
    if (this.closed) return;
    try {
      if (this.sink(bytes) === false) this.full = true;
    } catch (error) {
      this.onWriteError(error);
    }
  }
}
