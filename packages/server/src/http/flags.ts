/**
 * The flag bits of `httpRespond` and `httpWrite`, as the native side reads
 * them (`crates/runtime/src/http/respond.rs`, which says what each means).
 */
export const RESPOND_KEEP_ALIVE = 1;
export const RESPOND_HTTP10 = 2;
export const RESPOND_HEAD = 4;
export const RESPOND_STREAM = 8;
export const RESPOND_LENGTH = 16;
export const WRITE_CHUNKED = 32;
export const WRITE_END = 64;
/** A whole response's body goes gzip- (or brotli-) encoded: the coding its request prefers, when the response is worth compressing. */
export const RESPOND_GZIP = 128;
export const RESPOND_BR = 256;

/** `httpRespond`'s and `httpWrite`'s results (`SendStatus` in `websocket.ts`). */
export const STATUS_SENT = 0;
export const STATUS_BUFFERED = 1;
export const STATUS_CLOSED = 3;
