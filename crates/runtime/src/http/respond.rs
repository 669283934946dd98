//! The responses a worker writes to an HTTP connection: the head framed
//! here (status line, `Date`, the handler's header lines, the framing
//! headers, `Connection`), the body after it in the same buffer, all in the
//! connection's queue, so a batch of responses leaves in one vectored
//! write (corked, like WebSocket sends). A body of 16 KiB or more is
//! written straight from the caller's bytes when the socket is free.
//!
//! JavaScript says how with flag bits; the request's own (`keep-alive`,
//! HTTP/1.0, HEAD, the coding `Accept-Encoding` prefers) come back with its
//! response, so the native side keeps no per-request state on the worker's
//! path. A whole body with [`RESPOND_GZIP`] or [`RESPOND_BR`] is encoded
//! here first (`compress.rs`). So do the request's route number and start
//! time: a response that ends is counted here (`metrics.rs`), with the
//! clock this batch's `Date` was read from.

use std::cell::RefCell;
use std::sync::Arc;

use switchboard_proto::http1::{self, ChunkHead, ContentCoding, ResponseBody, Version, LAST_CHUNK};

use super::compress;
use super::date::{self, with_date_at};
use super::metrics::HttpMetrics;
use crate::config::CompressionConfig;
use crate::connection::Connection;
use crate::outbound::{OutItem, SendStatus};

/// The connection stays open after this response.
pub const RESPOND_KEEP_ALIVE: u32 = 1;
/// The request was HTTP/1.0: no chunked framing (a body of unknown length
/// ends with the connection).
pub const RESPOND_HTTP10: u32 = 2;
/// The request was HEAD: the head says what GET would send, no body
/// follows it.
pub const RESPOND_HEAD: u32 = 4;
/// More of the body follows through [`write`]: the response is chunked,
/// unless [`RESPOND_LENGTH`] gives its length.
pub const RESPOND_STREAM: u32 = 8;
/// With [`RESPOND_STREAM`]: `ResponseParts::length` is the body's length
/// (`Content-Length`), and its pieces go out as they are.
pub const RESPOND_LENGTH: u32 = 16;

/// [`write`]: frame the piece as a chunk (the response is chunked).
pub const WRITE_CHUNKED: u32 = 32;
/// [`write`]: the piece ends the response.
pub const WRITE_END: u32 = 64;

/// A whole response (not [`RESPOND_STREAM`], not [`RESPOND_HEAD`]): send
/// the body gzip-encoded, with `Content-Encoding: gzip`, unless that would
/// not make it smaller. JavaScript sets it only when the request preferred
/// gzip and the response is worth compressing; ignored when the server's
/// compression is off.
pub const RESPOND_GZIP: u32 = 128;
/// As [`RESPOND_GZIP`], with brotli (`Content-Encoding: br`).
pub const RESPOND_BR: u32 = 256;

/// The bits from here up of `flags` ([`respond`] and [`write`]) hold the
/// request's route number plus one (0: not counted), so the response is
/// counted in its route's row without another argument.
pub const RESPOND_ROUTE_SHIFT: u32 = 16;

/// Bodies from this size on are written from the caller's bytes when the
/// socket is free for it (as WebSocket messages are: `connection.rs`).
const SEND_DIRECT_FROM: usize = 16 * 1024;

/// A response as JavaScript hands it over.
pub struct ResponseParts<'a> {
    pub status: u16,
    /// The handler's header lines, each `Name: value\r\n`, checked by
    /// JavaScript (no CR or LF inside a line, no framing headers).
    pub headers: &'a [u8],
    /// The whole body, or its first piece with [`RESPOND_STREAM`].
    pub body: &'a [u8],
    pub flags: u32,
    /// The body's length with [`RESPOND_LENGTH`].
    pub length: u64,
    /// When the request's head was complete (its record's `started`).
    pub started: u64,
}

/// The response of a request that started at `started` ended with
/// `status`: counted in its route's row, if `flags` name a route.
fn count(
    metrics: &HttpMetrics,
    connection: &Connection,
    flags: u32,
    status: u16,
    started: u64,
    now: std::time::Instant,
) {
    let route = flags >> RESPOND_ROUTE_SHIFT;
    if route == 0 {
        return;
    }
    let row = metrics.handler_row((route - 1) as u16);
    let micros = metrics.micros(now).saturating_sub(started);
    metrics.observe_worker(connection.worker(), row, status, micros);
}

thread_local! {
    /// Where a response head is framed before it is copied behind the
    /// queued bytes: one buffer per worker thread, reused.
    static HEAD: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// Queue a response (or its head and first piece), its body encoded first
/// when the flags ask for a coding and `compression` is on.
pub fn respond(
    connection: &Arc<Connection>,
    parts: &ResponseParts<'_>,
    compression: Option<&CompressionConfig>,
    metrics: &HttpMetrics,
) -> SendStatus {
    let flags = parts.flags;
    // This batch's clock: the response's `Date` and its end.
    let now = date::now();
    let coding = if flags & RESPOND_BR != 0 {
        Some(ContentCoding::Br)
    } else if flags & RESPOND_GZIP != 0 {
        Some(ContentCoding::Gzip)
    } else {
        None
    };
    let status = match (coding, compression) {
        (Some(coding), Some(config))
            if flags & (RESPOND_STREAM | RESPOND_HEAD) == 0
                && http1::status_allows_body(parts.status) =>
        {
            compress::encode(
                coding,
                parts.body,
                parts.headers,
                config,
                |encoded| match encoded {
                    Some(encoded) => queue(connection, parts, encoded.headers, encoded.body, now),
                    None => queue(connection, parts, parts.headers, parts.body, now),
                },
            )
        }
        _ => queue(connection, parts, parts.headers, parts.body, now),
    };
    if flags & RESPOND_STREAM == 0 {
        count(metrics, connection, flags, parts.status, parts.started, now);
    }
    status
}

/// [`respond`] with these header lines and this body (the handler's, or
/// the encoded ones).
fn queue(
    connection: &Arc<Connection>,
    parts: &ResponseParts<'_>,
    headers: &[u8],
    body: &[u8],
    now: std::time::Instant,
) -> SendStatus {
    let flags = parts.flags;
    let version = if flags & RESPOND_HTTP10 != 0 {
        Version::Http10
    } else {
        Version::Http11
    };
    let keep_alive = flags & RESPOND_KEEP_ALIVE != 0;
    let may_have_body = http1::status_allows_body(parts.status);
    let streaming = flags & RESPOND_STREAM != 0;
    let chunked = streaming && flags & RESPOND_LENGTH == 0 && version == Version::Http11;
    let framing = if !may_have_body {
        ResponseBody::None
    } else if !streaming {
        ResponseBody::Length(body.len() as u64)
    } else if flags & RESPOND_LENGTH != 0 {
        ResponseBody::Length(parts.length)
    } else if chunked {
        ResponseBody::Chunked
    } else {
        // HTTP/1.0 and no length: the body ends with the connection
        // (JavaScript clears keep-alive for it).
        ResponseBody::None
    };
    let body: &[u8] = if flags & RESPOND_HEAD != 0 || !may_have_body {
        &[]
    } else {
        body
    };
    let ends = !streaming;
    HEAD.with(|head| {
        let mut head = head.borrow_mut();
        head.clear();
        with_date_at(now, |date| {
            http1::write_response_head(
                &mut head,
                parts.status,
                None,
                date,
                headers,
                framing,
                keep_alive,
                version,
            )
        });
        let status = if !chunked && body.len() >= SEND_DIRECT_FROM {
            send_large(connection, &head, body, ends)
        } else {
            None
        };
        let status = status.unwrap_or_else(|| {
            let len = head.len() + framed_len(body.len(), chunked);
            let (status, wake) = connection.outbound.push_response(len, ends, |out| {
                out.extend_from_slice(&head);
                put_piece(out, body, chunked);
            });
            connection.woken(wake);
            status
        });
        if ends && !keep_alive {
            close_after(connection);
        }
        status
    })
}

/// Queue the next piece of a streamed body ([`WRITE_CHUNKED`] frames it as
/// a chunk; [`WRITE_END`] ends the response, with the last chunk when
/// chunked). `flags` also carry the response's [`RESPOND_KEEP_ALIVE`] and
/// [`RESPOND_HEAD`], and its route; `status` and `started` are the
/// response's and its request's, counted when the piece ends it.
pub fn write(
    connection: &Arc<Connection>,
    data: &[u8],
    flags: u32,
    (status, started): (u16, u64),
    metrics: &HttpMetrics,
) -> SendStatus {
    let chunked = flags & WRITE_CHUNKED != 0;
    let ends = flags & WRITE_END != 0;
    let data: &[u8] = if flags & RESPOND_HEAD != 0 { &[] } else { data };
    let last_chunk: &[u8] = if ends && chunked { LAST_CHUNK } else { b"" };
    let direct = (!chunked && data.len() >= SEND_DIRECT_FROM)
        .then(|| send_large(connection, &[], data, ends))
        .flatten();
    let sent = direct.unwrap_or_else(|| {
        let len = framed_len(data.len(), chunked) + last_chunk.len();
        let (status, wake) = connection.outbound.push_response(len, ends, |out| {
            put_piece(out, data, chunked);
            out.extend_from_slice(last_chunk);
        });
        connection.woken(wake);
        status
    });
    if ends && flags & RESPOND_KEEP_ALIVE == 0 {
        close_after(connection);
    }
    if ends {
        count(metrics, connection, flags, status, started, date::now());
    }
    sent
}

/// `head` then `body` written at once from the caller's bytes, when the
/// socket is free; `None` when it is not (queue them instead).
fn send_large(
    connection: &Arc<Connection>,
    head: &[u8],
    body: &[u8],
    ends: bool,
) -> Option<SendStatus> {
    let (status, wake) = connection
        .outbound
        .send_direct(head, body, &connection.stats)?;
    if ends {
        connection.outbound.end_response();
    }
    connection.woken(wake);
    Some(status)
}

/// The connection closes once what is queued before this is written.
fn close_after(connection: &Arc<Connection>) {
    connection.enqueue(
        OutItem::Close {
            code: 1000,
            reason: String::new(),
            go_away: false,
        },
        0,
    );
}

/// Bytes of a piece on the wire: a chunk adds its size line and CRLF.
fn framed_len(len: usize, chunked: bool) -> usize {
    if chunked && len > 0 {
        ChunkHead::new(len).framed_len(len)
    } else {
        len
    }
}

fn put_piece(out: &mut bytes::BytesMut, data: &[u8], chunked: bool) {
    if chunked && !data.is_empty() {
        out.extend_from_slice(ChunkHead::new(data.len()).as_bytes());
        out.extend_from_slice(data);
        out.extend_from_slice(b"\r\n");
    } else {
        out.extend_from_slice(data);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunk_framing_length_matches_what_is_written() {
        for len in [1usize, 9, 15, 16, 255, 256, 4095, 4096, 65_535, 65_536] {
            let data = vec![b'x'; len];
            let mut out = bytes::BytesMut::new();
            put_piece(&mut out, &data, true);
            assert_eq!(out.len(), framed_len(len, true), "{len}");
            assert!(out.starts_with(format!("{len:x}\r\n").as_bytes()));
            assert!(out.ends_with(b"x\r\n"));
        }
        let mut out = bytes::BytesMut::new();
        put_piece(&mut out, b"", true);
        assert!(out.is_empty());
        assert_eq!(framed_len(0, true), 0);
    }
}
