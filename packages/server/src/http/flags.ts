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
/** The request's route number plus one, from this bit up: the native side counts the response in its route's row. */
export const RESPOND_ROUTE_SHIFT = 16;

/** `httpRespond`'s and `httpWrite`'s results (`SendStatus` in `websocket.ts`). */
export const STATUS_SENT = 0;
export const STATUS_BUFFERED = 1;
export const STATUS_CLOSED = 3;

/**
 * The flag bits of `httpFile` (`crates/runtime/src/http/file_order.rs`).
 * The first three are the request's, as `RESPOND_KEEP_ALIVE`,
 * `RESPOND_HTTP10` and `RESPOND_HEAD`.
 */
export const FILE_GET = 8;
export const FILE_IMMUTABLE = 16;
export const FILE_NO_ETAG = 32;
export const FILE_NO_LAST_MODIFIED = 64;
export const FILE_DOTFILES = 128;
export const FILE_NO_PRECOMPRESSED = 256;
