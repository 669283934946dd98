//! The answer about a file, whoever asked for it: a request under
//! `app.static` (`files.rs`) or a handler's `res.file` (its order crosses
//! from the worker: `http/file_order.rs`). One piece of code decides the
//! validators, the conditions, the range and the precompressed sibling
//! (the pure decisions are `http/files.rs`'s) and frames the head, so the
//! two kinds of answer cannot drift apart.
//!
//! A handler's file differs only in what it adds: its status (any other
//! than 200 sends the whole file, unconditionally), its header lines
//! (which take the place of ours of the same name), and its end, which the
//! I/O thread counts and reports to the worker (`HTTP_FILE_DONE`).

use std::fs::{self, File, Metadata};
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::time::Instant;

use bytes::Bytes;
use switchboard_proto::http1::{
    self, AcceptEncoding, ContentCoding, HttpDate, ResponseBody, Version,
};

use super::answers::failure_response;
use super::files::{has_sibling, modified_ns, open, open_sibling};
use super::sending::FileSend;
use super::Core;
use crate::errors;
use crate::events::Record;
use crate::http::file_cache::CachedFile;
use crate::http::file_order::{
    lines_without_content, FileOrder, FILE_GET, FILE_HEAD, FILE_IMMUTABLE, FILE_KEEP_ALIVE,
    FILE_NO_ETAG, FILE_NO_LAST_MODIFIED, FILE_NO_PRECOMPRESSED,
};
use crate::http::files::{self, Conditions, PathError, Plan, Validators};
use crate::http::respond::RESPOND_ROUTE_SHIFT;
use crate::session::Machine;

/// A file up to this size is read whole and queued as one response: one
/// read, one buffer, the common case of a site's assets.
pub(super) const WHOLE_UP_TO: u64 = 64 * 1024;

/// What the answer about a file depends on.
pub(super) struct FileRequest<'a> {
    pub conditions: Conditions<'a>,
    pub accept: AcceptEncoding,
    /// A range applies to GET only; HEAD gets the head alone.
    pub get: bool,
    pub head: bool,
    pub version: Version,
    /// The connection closes after this response.
    pub close: bool,
    /// 200, or a handler's own status.
    pub status: u16,
    /// A handler's header lines; empty for `app.static`.
    pub handler_headers: &'a [u8],
    pub max_age: u32,
    pub immutable: bool,
    pub precompressed: bool,
    pub etag: bool,
    pub last_modified: bool,
}

impl FileRequest<'_> {
    fn handler_set(&self, name: &str) -> bool {
        files::header_in(self.handler_headers, name).is_some()
    }
}

/// How to answer.
pub(super) enum Served {
    /// A whole response: a file up to [`WHOLE_UP_TO`], a 304, 412 or 416.
    Whole { response: Vec<u8>, status: u16 },
    /// A head, then `length` bytes of `file` from where it stands.
    Stream {
        head: Vec<u8>,
        file: File,
        length: u64,
        status: u16,
    },
    /// A head, then bytes of a kept file, shared with the write queue.
    Shared {
        head: Vec<u8>,
        body: Bytes,
        status: u16,
    },
    /// The file cannot be read as its `fstat` said (it shrank meanwhile):
    /// only closing the connection tells the client.
    Unreadable,
}

/// The representation an answer is about: the file or a precompressed
/// sibling, from the disk or kept in memory.
struct Chosen<'a> {
    size: u64,
    modified_ns: u64,
    coding: Option<ContentCoding>,
    /// A sibling exists, chosen or not: the answer varies.
    vary: bool,
    /// The file's real path (its name gives the type).
    real: &'a Path,
    body: Source,
}

enum Source {
    /// Opened, at its start.
    Disk(File),
    Kept(Bytes),
}

/// Decide and frame the answer with `file` (or a precompressed sibling).
pub(super) fn serve(
    request: &FileRequest<'_>,
    (file, meta, real): (File, Metadata, &Path),
) -> Served {
    let (mut file, mut meta, mut coding, mut vary) = (file, meta, None, false);
    // A handler that encoded the body itself gets its file as it is.
    if request.precompressed && !request.handler_set("content-encoding") {
        let brotli = has_sibling(real, ContentCoding::Br, &meta);
        let gzip = has_sibling(real, ContentCoding::Gzip, &meta);
        // A cache must not hand one client's variant to another.
        vary = brotli || gzip;
        if let Some(chosen) = files::choose_coding(&request.accept, brotli, gzip) {
            if let Some((sibling, sibling_meta)) = open_sibling(real, chosen) {
                (file, meta, coding) = (sibling, sibling_meta, Some(chosen));
            }
        }
    }
    let chosen = Chosen {
        size: meta.len(),
        modified_ns: modified_ns(&meta),
        coding,
        vary,
        real,
        body: Source::Disk(file),
    };
    answer(request, chosen)
}

/// Decide and frame the answer with a kept file: the variant the request
/// prefers, as [`serve`] chooses from the disk.
pub(super) fn serve_kept(request: &FileRequest<'_>, kept: &CachedFile) -> Served {
    let (br, gzip) = (kept.br.is_some(), kept.gzip.is_some());
    let coding = if request.precompressed && !request.handler_set("content-encoding") {
        files::choose_coding(&request.accept, br, gzip)
    } else {
        None
    };
    let variant = kept.variant(coding);
    let chosen = Chosen {
        size: variant.body.len() as u64,
        modified_ns: variant.modified_ns,
        coding,
        vary: request.precompressed && (br || gzip),
        real: &kept.fingerprint.real,
        body: Source::Kept(variant.body.clone()),
    };
    answer(request, chosen)
}

/// The answer about `chosen`: the request's conditions and range decide
/// the status and what of the body follows.
fn answer(request: &FileRequest<'_>, chosen: Chosen<'_>) -> Served {
    let Chosen {
        size,
        modified_ns,
        coding,
        vary,
        real,
        body: source,
    } = chosen;
    // The handler's validators, when it set them, are the ones the
    // conditions compare with (and ours are not written).
    let own_etag = files::etag(size, modified_ns, coding);
    let etag = match files::header_in(request.handler_headers, "etag") {
        Some(theirs) => std::str::from_utf8(theirs).ok(),
        None => request.etag.then_some(own_etag.as_str()),
    };
    let modified = match files::header_in(request.handler_headers, "last-modified") {
        Some(theirs) => HttpDate::parse(theirs),
        None => request.last_modified.then_some(modified_ns / 1_000_000_000),
    };
    let validators = Validators {
        etag,
        modified,
        size,
    };
    let plan = if request.status == 200 {
        files::plan(&request.conditions, &validators, request.get)
    } else {
        Plan::Whole
    };
    let handler_lines = request.handler_headers;
    // A 412 or 416 carries the handler's lines that do not describe a body.
    let refuse = |failure: errors::Failure, more: &[u8]| {
        let mut extra = lines_without_content(handler_lines);
        extra.extend_from_slice(more);
        let response = failure_response(
            failure,
            &extra,
            request.head,
            request.close,
            request.version,
        );
        Served::Whole {
            response,
            status: failure.status,
        }
    };
    let (status, start, length) = match plan {
        Plan::PreconditionFailed => return refuse(errors::HTTP_PRECONDITION_FAILED, b""),
        Plan::Unsatisfiable => {
            let range = format!("Content-Range: bytes */{size}\r\n");
            return refuse(errors::HTTP_RANGE_NOT_SATISFIABLE, range.as_bytes());
        }
        Plan::NotModified => (304, 0, 0),
        Plan::Whole => (request.status, 0, size),
        Plan::Part { start, end } => (206, start, end - start + 1),
    };
    // What every answer about the file carries, 304 included (RFC 9110
    // §15.4.5: what a 200 would have said of caching).
    let mut headers = Vec::with_capacity(320 + handler_lines.len());
    if status == 304 {
        headers.extend_from_slice(&lines_without_content(handler_lines));
    } else {
        headers.extend_from_slice(handler_lines);
    }
    let mut line = |name: &str, value: &str| {
        headers.extend_from_slice(name.as_bytes());
        headers.extend_from_slice(b": ");
        headers.extend_from_slice(value.as_bytes());
        headers.extend_from_slice(b"\r\n");
    };
    if request.etag && !request.handler_set("etag") {
        line("ETag", &own_etag);
    }
    if request.last_modified && !request.handler_set("last-modified") {
        let seconds = modified_ns / 1_000_000_000;
        line(
            "Last-Modified",
            HttpDate::from_unix_seconds(seconds).as_str(),
        );
    }
    if !request.handler_set("cache-control") {
        line(
            "Cache-Control",
            &files::cache_control(request.max_age, request.immutable),
        );
    }
    if vary && !varies_on_encoding(handler_lines) {
        line("Vary", "Accept-Encoding");
    }
    if status != 304 {
        if !request.handler_set("content-type") {
            line("Content-Type", files::content_type(real));
        }
        if let Some(coding) = coding {
            line("Content-Encoding", coding.as_str());
        }
        if request.status == 200 {
            line("Accept-Ranges", "bytes");
        }
        if status == 206 {
            let end = start + length - 1;
            line("Content-Range", &format!("bytes {start}-{end}/{size}"));
        }
    }
    let framing = if http1::status_allows_body(status) {
        ResponseBody::Length(length)
    } else {
        ResponseBody::None
    };
    let body = if request.head || !http1::status_allows_body(status) {
        0
    } else {
        length
    };
    let mut file = match source {
        Source::Disk(file) => file,
        Source::Kept(bytes) => {
            let mut head = Vec::with_capacity(200 + headers.len());
            frame_head(&mut head, request, status, &headers, framing);
            let start = start as usize;
            return Served::Shared {
                head,
                body: bytes.slice(start..start + body as usize),
                status,
            };
        }
    };
    let whole = body <= WHOLE_UP_TO;
    let mut response =
        Vec::with_capacity(200 + headers.len() + if whole { body as usize } else { 0 });
    frame_head(&mut response, request, status, &headers, framing);
    if start > 0 && file.seek(SeekFrom::Start(start)).is_err() {
        return Served::Unreadable;
    }
    if whole {
        let at = response.len();
        response.resize(at + body as usize, 0);
        if file.read_exact(&mut response[at..]).is_err() {
            return Served::Unreadable;
        }
        return Served::Whole { response, status };
    }
    Served::Stream {
        head: response,
        file,
        length: body,
        status,
    }
}

/// The status line, `Date`, `lines` and the framing headers.
fn frame_head(
    out: &mut Vec<u8>,
    request: &FileRequest<'_>,
    status: u16,
    lines: &[u8],
    framing: ResponseBody,
) {
    crate::http::with_date(|date| {
        http1::write_response_head(
            out,
            status,
            None,
            date,
            lines,
            framing,
            !request.close,
            request.version,
        )
    });
}

/// Whether the handler's `Vary` lines already cover `Accept-Encoding`
/// (or `*`).
fn varies_on_encoding(lines: &[u8]) -> bool {
    files::headers_in(lines, "vary").any(|value| {
        value.split(|&b| b == b',').any(|item| {
            let item = item.trim_ascii();
            item == b"*" || item.eq_ignore_ascii_case(b"accept-encoding")
        })
    })
}

/// What a handler's path leads to: a regular file, opened, with its
/// `fstat` and real path. With a root, the real path must be inside the
/// root's (a symbolic link out of it is not found), as under `app.static`.
fn lookup_order(path: &Path, root: Option<&Path>) -> Option<(File, Metadata, PathBuf)> {
    let real = fs::canonicalize(path).ok()?;
    if let Some(root) = root {
        let root = fs::canonicalize(root).ok()?;
        if !real.starts_with(&root) {
            return None;
        }
    }
    let file = open(&real).ok()?;
    let meta = file.metadata().ok().filter(Metadata::is_file)?;
    Some((file, meta, real))
}

impl Core {
    /// A handler asked to answer the first response in line with a file
    /// (`res.file`). Its turn has come (JavaScript ends its responses in
    /// order and holds the later ones until it hears of this one), so the
    /// answer is queued at once, ungated, and its end counted here.
    pub(super) fn answer_order(&mut self, machine: &mut Machine, order: &FileOrder, now: Instant) {
        let route = order.flags >> RESPOND_ROUTE_SHIFT;
        self.order_counted = (route != 0).then_some((route, order.started));
        let found = match order.checked_path() {
            Ok(path) => lookup_order(&path, order.root.as_deref()).ok_or(404),
            Err(PathError::Refused) => Err(404),
            Err(PathError::Malformed(_)) => Err(400),
        };
        let (file, meta, real) = match found {
            Ok(found) => found,
            Err(status) => {
                // Nothing sent: the response is the handler's again.
                self.file_done(machine, status, false, now);
                return;
            }
        };
        let request = FileRequest {
            conditions: Conditions::from_lines(&order.request_headers),
            accept: files::accept_encoding_in(&order.request_headers),
            get: order.has(FILE_GET),
            head: order.has(FILE_HEAD),
            version: order.version(),
            close: !order.has(FILE_KEEP_ALIVE),
            status: order.status,
            handler_headers: &order.headers,
            max_age: order.max_age,
            immutable: order.has(FILE_IMMUTABLE),
            precompressed: !order.has(FILE_NO_PRECOMPRESSED),
            etag: !order.has(FILE_NO_ETAG),
            last_modified: !order.has(FILE_NO_LAST_MODIFIED),
        };
        let close = request.close;
        match serve(&request, (file, meta, &real)) {
            Served::Whole { response, status } => {
                let outbound = &machine.connection.outbound;
                if outbound.push_own_bytes(Bytes::from(response)) {
                    outbound.end_own_response(close);
                }
                self.file_done(machine, status, true, now);
            }
            Served::Stream {
                head,
                file,
                length,
                status,
            } => {
                // Ahead of a static file of a later request waiting for
                // this response to end.
                let send = FileSend::new(file, length, head, None, close, Some(status), now);
                self.sending.push_front(send);
                self.pump(machine, now);
            }
            Served::Shared { head, body, status } => {
                let outbound = &machine.connection.outbound;
                if outbound.push_own_bytes(Bytes::from(head)) && outbound.push_own_bytes(body) {
                    outbound.end_own_response(close);
                }
                self.file_done(machine, status, true, now);
            }
            Served::Unreadable => {
                self.last_request = true;
                self.close_now(machine);
            }
        }
    }

    /// Tell the worker how the file of its first response in line went;
    /// one that was sent counts in its route's row, from its request's
    /// start (`FileOrder::started`) to now.
    pub(super) fn file_done(
        &mut self,
        machine: &mut Machine,
        status: u16,
        sent: bool,
        now: Instant,
    ) {
        if let Some((route, started)) = self.order_counted.take().filter(|_| sent) {
            let metrics = &machine.server.http_metrics;
            let micros = metrics.micros(now).saturating_sub(started);
            metrics.observe_io(metrics.handler_row((route - 1) as u16), status, micros);
        }
        machine.queue().push(&Record::HttpFileDone {
            id: machine.connection.id,
            status,
            sent,
        });
    }
}
