//! The event records that cross from the native core to a JavaScript
//! worker: one type names every kind ([`Record`]), one method writes each
//! record's bytes and one reads them back. The TypeScript side
//! (`packages/server/src/internal/events.ts`) decodes the same layout, and
//! both are checked against the language-neutral vectors in `spec/events/`.
//!
//! Layout of one record (little-endian): `u8 kind | u32 body length | body`.
//! Bodies (`str` = u16 length + UTF-8 bytes, `id` = u64, `tls` = u8 present,
//! then when 1: str server name (empty: no SNI), str protocol version, str
//! cipher suite, u32 length + the client certificate's DER):
//! - `UPGRADE` (1): id, u16 route, str remote address, str path, str query,
//!   tls, u16 header count, (str name, str value)*
//! - `OPEN` (2): id, u16 route, str remote address, str protocol, str
//!   extensions, tls
//! - `MESSAGE` (3): id, u8 binary, payload (the rest)
//! - `CLOSE` (4): id, u16 code, reason (the rest, UTF-8)
//! - `DRAIN` (5): id
//! - `RPC_OPEN` (6): id, u16 route (`0xFFFF`: an RPC listener), u8
//!   transport ([`Transport`]), str remote address, tls, u32 HELLO length,
//!   the client's HELLO frame, our WELCOME frame (the rest). The
//!   connection's frames then arrive as `MESSAGE`s (binary, one frame
//!   each) or `MESSAGE_OWNED`s.
//! - `MESSAGE_OWNED` (7): id, u8 binary, u32 index: a `MESSAGE` whose data
//!   is not in the batch but the `index`th buffer drained with it (see
//!   [`super::Drained`]).
//! - `HTTP_OPEN` (8): id, str remote address, tls: an HTTP connection's
//!   first request for JavaScript follows (connections whose requests are
//!   all answered natively never reach JavaScript).
//! - `HTTP_REQUEST` (9): id, u16 route, u8 method (`Method::index`), u8
//!   flags ([`REQUEST_KEEP_ALIVE`], [`REQUEST_HTTP10`], [`REQUEST_BODY`],
//!   [`REQUEST_ACCEPTS_GZIP`], [`REQUEST_ACCEPTS_BR`]),
//!   str path, str query, u8 parameter count, str parameter*, then the
//!   header lines exactly as received (the rest), decoded lazily by
//!   JavaScript. Parameters are raw (percent-encoded) path segments.
//! - `HTTP_BODY` (10): id, u8 last, data (the rest): the next piece of the
//!   body of the connection's latest request; `last` ends it.
//! - `HTTP_BODY_ERROR` (11): id, u16 status, reason (the rest): the body of
//!   the latest request cannot be read to its end (malformed, too large,
//!   too slow); the connection closes after the responses in flight.
//! - `HTTP_FILE_DONE` (12): id, u16 status, u8 sent: the file the first
//!   response in line was to be answered with (`res.file`) is queued whole
//!   with this status (`sent` 1: 200, 206, 304, 412, 416 or the handler's
//!   own), or was not sent (`sent` 0: 404 missing or refused, 400 a
//!   malformed path): the response is the handler's again.
//! - `HTTP_BODY_OWNED` (13): id, u8 last, u32 index: an `HTTP_BODY` whose
//!   data is the `index`th buffer drained with the batch, as for
//!   `MESSAGE_OWNED`. Large pieces travel so: JavaScript can hand such a
//!   piece to the handler as the whole body without copying it out of a
//!   batch that other events share.

use crate::tls::TlsInfo;

pub const KIND_UPGRADE: u8 = 1;
pub const KIND_OPEN: u8 = 2;
pub const KIND_MESSAGE: u8 = 3;
pub const KIND_CLOSE: u8 = 4;
pub const KIND_DRAIN: u8 = 5;
pub const KIND_RPC_OPEN: u8 = 6;
pub const KIND_MESSAGE_OWNED: u8 = 7;
pub const KIND_HTTP_OPEN: u8 = 8;
pub const KIND_HTTP_REQUEST: u8 = 9;
pub const KIND_HTTP_BODY: u8 = 10;
pub const KIND_HTTP_BODY_ERROR: u8 = 11;
pub const KIND_HTTP_FILE_DONE: u8 = 12;
pub const KIND_HTTP_BODY_OWNED: u8 = 13;
pub const KIND_SOCKJS_SENT: u8 = 14;

/// `HTTP_REQUEST` flag: the connection stays open after the response
/// (HTTP/1.1 without `Connection: close`, HTTP/1.0 with `keep-alive`).
pub const REQUEST_KEEP_ALIVE: u8 = 1;
/// `HTTP_REQUEST` flag: the request is HTTP/1.0 (no chunked responses).
pub const REQUEST_HTTP10: u8 = 2;
/// `HTTP_REQUEST` flag: `HTTP_BODY` records follow, the last one marked.
pub const REQUEST_BODY: u8 = 4;
/// `HTTP_REQUEST` flag: gzip is the coding `Accept-Encoding` prefers
/// (`switchboard_proto::http1::AcceptEncoding::preferred`): the response
/// may be sent gzip-encoded. At most one of this and
/// [`REQUEST_ACCEPTS_BR`] is set, and neither when compression is off.
pub const REQUEST_ACCEPTS_GZIP: u8 = 8;
/// `HTTP_REQUEST` flag: brotli is the coding `Accept-Encoding` prefers.
pub const REQUEST_ACCEPTS_BR: u8 = 16;
/// `HTTP_REQUEST` flag: the server counts responses (the `metrics`
/// option): `started` is set, and the response is to carry it back with
/// the route. Without it `started` is 0 and the worker skips both.
pub const REQUEST_COUNTED: u8 = 32;

/// The route index of a connection that came through no route (an RPC
/// listener).
pub const NO_ROUTE: u16 = u16::MAX;

/// How an RPC connection reached the server (the `RPC_OPEN` transport
/// byte; JavaScript's `connection.transport`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Transport {
    Tcp = 0,
    Unix = 1,
    WebSocket = 2,
    Tls = 3,
    /// Carried by a SockJS session on the HTTP transports.
    SockJs = 4,
}

impl Transport {
    fn from_byte(byte: u8) -> Option<Self> {
        Some(match byte {
            0 => Self::Tcp,
            1 => Self::Unix,
            2 => Self::WebSocket,
            3 => Self::Tls,
            4 => Self::SockJs,
            _ => return None,
        })
    }
}

/// What a TLS handshake settled, as a record carries it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TlsRecord<'a> {
    pub server_name: &'a str,
    pub protocol: &'a str,
    pub cipher: &'a str,
    pub peer_certificate: &'a [u8],
}

impl<'a> From<&'a TlsInfo> for TlsRecord<'a> {
    fn from(info: &'a TlsInfo) -> Self {
        Self {
            server_name: &info.server_name,
            protocol: info.protocol,
            cipher: &info.cipher,
            peer_certificate: &info.peer_certificate,
        }
    }
}

/// One event for a worker.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Record<'a> {
    /// An upgrade request for a route with an `upgrade` hook: the worker
    /// answers with `Server::resolve_upgrade`.
    Upgrade {
        id: u64,
        route: u16,
        remote: &'a str,
        path: &'a str,
        query: &'a str,
        tls: Option<TlsRecord<'a>>,
        headers: Vec<(&'a str, &'a str)>,
    },
    /// A WebSocket connection opened.
    Open {
        id: u64,
        route: u16,
        remote: &'a str,
        protocol: &'a str,
        extensions: &'a str,
        tls: Option<TlsRecord<'a>>,
    },
    /// A message (WebSocket), or one protocol frame (RPC).
    Message {
        id: u64,
        binary: bool,
        payload: &'a [u8],
    },
    /// A message whose bytes travel in their own buffer, the `index`th
    /// handed over with the batch.
    MessageOwned { id: u64, binary: bool, index: u32 },
    /// The connection is gone; nothing of it follows.
    Close { id: u64, code: u16, reason: &'a str },
    /// The connection's outbound queue emptied after a send reported
    /// `BUFFERED`.
    Drain { id: u64 },
    /// The messages of a SockJS send (`xhr_send`, `jsonp_send`) to session
    /// `id` came before this: once its handlers for them have run, the
    /// worker acknowledges to the HTTP connection `http`, whose answer
    /// waits for it (`session/http/sockjs_send.rs`).
    SockJsSent { id: u64, http: u64 },
    /// An RPC connection completed its handshake.
    RpcOpen {
        id: u64,
        route: u16,
        transport: Transport,
        remote: &'a str,
        tls: Option<TlsRecord<'a>>,
        hello: &'a [u8],
        welcome: &'a [u8],
    },
    /// An HTTP connection's first request for JavaScript follows.
    HttpOpen {
        id: u64,
        remote: &'a str,
        tls: Option<TlsRecord<'a>>,
    },
    /// A request matched an HTTP route.
    HttpRequest {
        id: u64,
        route: u16,
        method: u8,
        flags: u8,
        /// When the head was complete: microseconds since the server
        /// started (`http/metrics.rs`). JavaScript hands it back with the
        /// response, whose end is measured from it.
        started: u64,
        path: &'a str,
        query: &'a str,
        params: Vec<&'a str>,
        headers: &'a [u8],
    },
    /// A piece of the latest request's body.
    HttpBody { id: u64, last: bool, data: &'a [u8] },
    /// A piece of the latest request's body in its own buffer, the
    /// `index`th handed over with the batch.
    HttpBodyOwned { id: u64, last: bool, index: u32 },
    /// The latest request's body failed with this status and reason.
    HttpBodyError {
        id: u64,
        status: u16,
        reason: &'a str,
    },
    /// A handler's file went out with this status, or (`sent` false) was
    /// not found.
    HttpFileDone { id: u64, status: u16, sent: bool },
}

/// A record's bytes do not follow the layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Malformed(pub &'static str);

impl<'a> Record<'a> {
    pub fn kind(&self) -> u8 {
        match self {
            Record::Upgrade { .. } => KIND_UPGRADE,
            Record::Open { .. } => KIND_OPEN,
            Record::Message { .. } => KIND_MESSAGE,
            Record::MessageOwned { .. } => KIND_MESSAGE_OWNED,
            Record::Close { .. } => KIND_CLOSE,
            Record::Drain { .. } => KIND_DRAIN,
            Record::SockJsSent { .. } => KIND_SOCKJS_SENT,
            Record::RpcOpen { .. } => KIND_RPC_OPEN,
            Record::HttpOpen { .. } => KIND_HTTP_OPEN,
            Record::HttpRequest { .. } => KIND_HTTP_REQUEST,
            Record::HttpBody { .. } => KIND_HTTP_BODY,
            Record::HttpBodyOwned { .. } => KIND_HTTP_BODY_OWNED,
            Record::HttpBodyError { .. } => KIND_HTTP_BODY_ERROR,
            Record::HttpFileDone { .. } => KIND_HTTP_FILE_DONE,
        }
    }

    /// Append the record's body (not its kind and length) to `out`.
    pub fn write_body(&self, out: &mut Vec<u8>) {
        match self {
            Record::Upgrade {
                id,
                route,
                remote,
                path,
                query,
                tls,
                headers,
            } => {
                put_id(out, *id);
                put_u16(out, *route);
                put_str(out, remote);
                put_str(out, path);
                put_str(out, query);
                put_tls(out, tls.as_ref());
                put_u16(out, headers.len().min(u16::MAX as usize) as u16);
                for (name, value) in headers.iter().take(u16::MAX as usize) {
                    put_str(out, name);
                    put_str(out, value);
                }
            }
            Record::Open {
                id,
                route,
                remote,
                protocol,
                extensions,
                tls,
            } => {
                put_id(out, *id);
                put_u16(out, *route);
                put_str(out, remote);
                put_str(out, protocol);
                put_str(out, extensions);
                put_tls(out, tls.as_ref());
            }
            Record::Message {
                id,
                binary,
                payload,
            } => {
                put_id(out, *id);
                out.push(u8::from(*binary));
                out.extend_from_slice(payload);
            }
            Record::MessageOwned { id, binary, index } => {
                put_id(out, *id);
                out.push(u8::from(*binary));
                out.extend_from_slice(&index.to_le_bytes());
            }
            Record::Close { id, code, reason } => {
                put_id(out, *id);
                put_u16(out, *code);
                out.extend_from_slice(reason.as_bytes());
            }
            Record::Drain { id } => put_id(out, *id),
            Record::SockJsSent { id, http } => {
                put_id(out, *id);
                put_id(out, *http);
            }
            Record::RpcOpen {
                id,
                route,
                transport,
                remote,
                tls,
                hello,
                welcome,
            } => {
                put_id(out, *id);
                put_u16(out, *route);
                out.push(*transport as u8);
                put_str(out, remote);
                put_tls(out, tls.as_ref());
                out.extend_from_slice(&(hello.len() as u32).to_le_bytes());
                out.extend_from_slice(hello);
                out.extend_from_slice(welcome);
            }
            Record::HttpOpen { id, remote, tls } => {
                put_id(out, *id);
                put_str(out, remote);
                put_tls(out, tls.as_ref());
            }
            Record::HttpRequest {
                id,
                route,
                method,
                flags,
                started,
                path,
                query,
                params,
                headers,
            } => {
                put_id(out, *id);
                put_u16(out, *route);
                out.push(*method);
                out.push(*flags);
                put_id(out, *started);
                put_str(out, path);
                put_str(out, query);
                // Patterns have far fewer than 255 parameters (the router
                // holds them per segment of a path of at most 64 KiB).
                out.push(params.len().min(u8::MAX as usize) as u8);
                for param in params.iter().take(u8::MAX as usize) {
                    put_str(out, param);
                }
                out.extend_from_slice(headers);
            }
            Record::HttpBody { id, last, data } => {
                put_id(out, *id);
                out.push(u8::from(*last));
                out.extend_from_slice(data);
            }
            Record::HttpBodyOwned { id, last, index } => {
                put_id(out, *id);
                out.push(u8::from(*last));
                out.extend_from_slice(&index.to_le_bytes());
            }
            Record::HttpBodyError { id, status, reason } => {
                put_id(out, *id);
                put_u16(out, *status);
                out.extend_from_slice(reason.as_bytes());
            }
            Record::HttpFileDone { id, status, sent } => {
                put_id(out, *id);
                put_u16(out, *status);
                out.push(u8::from(*sent));
            }
        }
    }

    /// Append the whole record (kind, length, body) to `out`.
    pub fn write(&self, out: &mut Vec<u8>) {
        out.push(self.kind());
        let length_at = out.len();
        out.extend_from_slice(&[0; 4]);
        self.write_body(out);
        let body_len = (out.len() - length_at - 4) as u32;
        out[length_at..length_at + 4].copy_from_slice(&body_len.to_le_bytes());
    }

    /// Read one record from the start of `bytes`; returns it and the bytes
    /// it took.
    pub fn read(bytes: &'a [u8]) -> Result<(Record<'a>, usize), Malformed> {
        let mut header = Reader(bytes);
        let kind = header.u8()?;
        let length = header.u32()? as usize;
        let body = header.take(length)?;
        Ok((Self::read_body(kind, body)?, 5 + length))
    }

    /// Read a record of `kind` from its whole body.
    pub fn read_body(kind: u8, body: &'a [u8]) -> Result<Record<'a>, Malformed> {
        let mut r = Reader(body);
        let record = match kind {
            KIND_UPGRADE => {
                let (id, route, remote, path, query) =
                    (r.id()?, r.u16()?, r.str()?, r.str()?, r.str()?);
                let tls = r.tls()?;
                let count = r.u16()?;
                let headers = (0..count)
                    .map(|_| Ok((r.str()?, r.str()?)))
                    .collect::<Result<_, Malformed>>()?;
                Record::Upgrade {
                    id,
                    route,
                    remote,
                    path,
                    query,
                    tls,
                    headers,
                }
            }
            KIND_OPEN => Record::Open {
                id: r.id()?,
                route: r.u16()?,
                remote: r.str()?,
                protocol: r.str()?,
                extensions: r.str()?,
                tls: r.tls()?,
            },
            KIND_MESSAGE => Record::Message {
                id: r.id()?,
                binary: r.flag()?,
                payload: r.rest(),
            },
            KIND_MESSAGE_OWNED => Record::MessageOwned {
                id: r.id()?,
                binary: r.flag()?,
                index: r.u32()?,
            },
            KIND_CLOSE => Record::Close {
                id: r.id()?,
                code: r.u16()?,
                reason: utf8(r.rest())?,
            },
            KIND_DRAIN => Record::Drain { id: r.id()? },
            KIND_SOCKJS_SENT => Record::SockJsSent {
                id: r.id()?,
                http: r.id()?,
            },
            KIND_RPC_OPEN => {
                let (id, route) = (r.id()?, r.u16()?);
                let transport =
                    Transport::from_byte(r.u8()?).ok_or(Malformed("unknown transport"))?;
                let remote = r.str()?;
                let tls = r.tls()?;
                let hello_len = r.u32()? as usize;
                let hello = r.take(hello_len)?;
                Record::RpcOpen {
                    id,
                    route,
                    transport,
                    remote,
                    tls,
                    hello,
                    welcome: r.rest(),
                }
            }
            KIND_HTTP_OPEN => Record::HttpOpen {
                id: r.id()?,
                remote: r.str()?,
                tls: r.tls()?,
            },
            KIND_HTTP_REQUEST => {
                let (id, route, method, flags) = (r.id()?, r.u16()?, r.u8()?, r.u8()?);
                let started = r.id()?;
                let (path, query) = (r.str()?, r.str()?);
                let count = r.u8()?;
                let params = (0..count)
                    .map(|_| r.str())
                    .collect::<Result<_, Malformed>>()?;
                Record::HttpRequest {
                    id,
                    route,
                    method,
                    flags,
                    started,
                    path,
                    query,
                    params,
                    headers: r.rest(),
                }
            }
            KIND_HTTP_BODY => Record::HttpBody {
                id: r.id()?,
                last: r.flag()?,
                data: r.rest(),
            },
            KIND_HTTP_BODY_OWNED => Record::HttpBodyOwned {
                id: r.id()?,
                last: r.flag()?,
                index: r.u32()?,
            },
            KIND_HTTP_BODY_ERROR => Record::HttpBodyError {
                id: r.id()?,
                status: r.u16()?,
                reason: utf8(r.rest())?,
            },
            KIND_HTTP_FILE_DONE => Record::HttpFileDone {
                id: r.id()?,
                status: r.u16()?,
                sent: r.flag()?,
            },
            _ => return Err(Malformed("unknown kind")),
        };
        if !r.0.is_empty() {
            return Err(Malformed("bytes after the record's fields"));
        }
        Ok(record)
    }
}

fn put_id(out: &mut Vec<u8>, id: u64) {
    out.extend_from_slice(&id.to_le_bytes());
}

fn put_u16(out: &mut Vec<u8>, v: u16) {
    out.extend_from_slice(&v.to_le_bytes());
}

/// A string of at most 65535 bytes (longer input is cut on a char
/// boundary; request heads are far below this by `max_head_bytes`).
fn put_str(out: &mut Vec<u8>, s: &str) {
    let mut end = s.len().min(u16::MAX as usize);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    put_u16(out, end as u16);
    out.extend_from_slice(&s.as_bytes()[..end]);
}

fn put_tls(out: &mut Vec<u8>, tls: Option<&TlsRecord<'_>>) {
    match tls {
        None => out.push(0),
        Some(tls) => {
            out.push(1);
            put_str(out, tls.server_name);
            put_str(out, tls.protocol);
            put_str(out, tls.cipher);
            out.extend_from_slice(&(tls.peer_certificate.len() as u32).to_le_bytes());
            out.extend_from_slice(tls.peer_certificate);
        }
    }
}

fn utf8(bytes: &[u8]) -> Result<&str, Malformed> {
    std::str::from_utf8(bytes).map_err(|_| Malformed("a string is not UTF-8"))
}

/// Reads fields from the front of a body.
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], Malformed> {
        if self.0.len() < n {
            return Err(Malformed("the record ends inside a field"));
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }

    fn rest(&mut self) -> &'a [u8] {
        std::mem::take(&mut self.0)
    }

    fn u8(&mut self) -> Result<u8, Malformed> {
        Ok(self.take(1)?[0])
    }

    fn flag(&mut self) -> Result<bool, Malformed> {
        match self.u8()? {
            0 => Ok(false),
            1 => Ok(true),
            _ => Err(Malformed("a flag is neither 0 nor 1")),
        }
    }

    fn u16(&mut self) -> Result<u16, Malformed> {
        Ok(u16::from_le_bytes(self.take(2)?.try_into().unwrap()))
    }

    fn u32(&mut self) -> Result<u32, Malformed> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().unwrap()))
    }

    fn id(&mut self) -> Result<u64, Malformed> {
        Ok(u64::from_le_bytes(self.take(8)?.try_into().unwrap()))
    }

    fn str(&mut self) -> Result<&'a str, Malformed> {
        let len = self.u16()? as usize;
        utf8(self.take(len)?)
    }

    fn tls(&mut self) -> Result<Option<TlsRecord<'a>>, Malformed> {
        if !self.flag()? {
            return Ok(None);
        }
        let (server_name, protocol, cipher) = (self.str()?, self.str()?, self.str()?);
        let certificate_len = self.u32()? as usize;
        Ok(Some(TlsRecord {
            server_name,
            protocol,
            cipher,
            peer_certificate: self.take(certificate_len)?,
        }))
    }
}

#[cfg(test)]
mod tests;
