//! Static files (`app.static(prefix, options)`), served by the I/O thread
//! without JavaScript: the request path is made safe (`http/files.rs`),
//! joined onto the directory, resolved to its real path and checked to be
//! inside the directory's real path (a symbolic link out of it is not
//! found); then the validators, the conditions and the range decide the
//! answer, which waits its turn behind JavaScript's responses as every
//! response of ours does (`answers.rs`).
//!
//! **Sending.** A file of up to 64 KiB is read whole into its response.
//! A larger one streams: its head is queued, then pieces of 64 KiB read at
//! the file's offset, topped up whenever less than 256 KiB is queued for
//! the connection (`ReadState::Sending`), so a connection holds at most
//! about 320 KiB of a file however large it is and however slowly its
//! client reads. The pieces are shared with the write queue, not copied.
//! The top-up runs where the reactor services the connection: when the
//! socket becomes writable, and at once again while the socket takes all
//! it is given (`Session::wants_another_turn`). While a file is sent
//! nothing more is read; pipelined requests wait in the socket.
//!
//! **Blocking reads.** Opening, `stat` and reading block the I/O thread:
//! cheap while the files are in the page cache (the case of a site's
//! assets), a stall of the thread's other connections on a cold disk.
//! `sendfile` (and reads on another thread) is a later step.
//!
//! **Failures.** A missing file is the native 404 (`ERR_HTTP_NOT_FOUND`);
//! a malformed path 400. A read that fails once the length was promised
//! (the file shrank under us) closes the connection: the client sees a
//! body shorter than its `Content-Length`. A client that takes nothing
//! for `bodyTimeout` while a file is sent is disconnected.

use std::fs::{self, File, Metadata};
use std::io::{self, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, UNIX_EPOCH};

use bytes::Bytes;
use switchboard_proto::http1::{
    self, BodyKind, ContentCoding, HttpDate, Method, RequestHead, ResponseBody,
};

use super::answers::frame;
use super::{Core, ReadState};
use crate::config::StaticDirConfig;
use crate::errors;
use crate::http::files::{self, Conditions, PathError, Plan, SafePath, Validators};
use crate::session::Machine;

/// A file up to this size is read whole and queued as one response: one
/// read, one buffer, the common case of a site's assets.
const WHOLE_UP_TO: u64 = 64 * 1024;
/// A larger file is read in pieces of this size: the I/O thread's read
/// buffer's size, a few reads per turn.
const PIECE: u64 = 64 * 1024;
/// Pieces are queued while less than this is waiting to be written: four
/// pieces, enough to keep a fast client's socket busy between two turns
/// (on loopback the kernel takes a few hundred KiB per write), little
/// enough that ten thousand slow clients cost 3 GiB at worst.
const QUEUE_LOW: usize = 256 * 1024;

/// A file being streamed to the client.
pub(super) struct FileSend {
    file: File,
    /// Bytes still to read and queue (the file's offset is where they
    /// start).
    remaining: u64,
    /// The response head, until it is queued (its turn comes once the
    /// responses before it ended).
    head: Option<Vec<u8>>,
    /// The last time the client took bytes (or the head was queued), and
    /// what was queued then: a client that takes nothing for
    /// `body_timeout` is disconnected.
    progress_at: Instant,
    buffered_seen: usize,
}

impl FileSend {
    /// When the client will have taken nothing for too long.
    pub(super) fn deadline(&self, timeout: Duration) -> Option<Instant> {
        self.head.is_none().then(|| self.progress_at + timeout)
    }

    /// The next piece, read at the file's offset.
    fn read_piece(&mut self) -> io::Result<Bytes> {
        let n = self.remaining.min(PIECE);
        let mut piece = Vec::with_capacity(n as usize);
        (&self.file).take(n).read_to_end(&mut piece)?;
        if piece.len() as u64 != n {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        self.remaining -= n;
        Ok(Bytes::from(piece))
    }
}

/// What a request path leads to in a directory.
// A value returned once per request and taken apart at once: its size on
// the stack costs nothing, where boxing the file would cost an allocation.
#[allow(clippy::large_enum_variant)]
enum Lookup {
    /// A regular file, opened, with its `fstat` and real path.
    File(File, Metadata, PathBuf),
    /// A directory named without its trailing slash: 301 to the slash form.
    Directory,
    Missing,
}

impl Core {
    /// Answer a request for directory `index` (`params`: the path under
    /// its prefix, none for the prefix itself). Returns false, having
    /// answered nothing, when the file is missing and the directory falls
    /// through to the other routes.
    pub(super) fn files(
        &mut self,
        machine: &mut Machine,
        index: usize,
        params: &[&str],
        head: &RequestHead<'_, '_>,
        keep_alive: bool,
        now: Instant,
    ) -> bool {
        let server = machine.server.clone();
        let dir = &server.config.static_dirs[index];
        let Some(raw) = params.first() else {
            // The prefix itself: its slash form, where relative links
            // resolve inside the directory.
            self.redirect(machine, head, keep_alive, now);
            return true;
        };
        let lookup = match files::safe_path(raw, dir.dotfiles) {
            Ok(path) => lookup(dir, &path),
            Err(PathError::Malformed(why)) => {
                let text = format!("ERR_HTTP_BAD_REQUEST: {why}");
                let close = !keep_alive || head.body != BodyKind::Empty;
                let body = if head.method == Method::Head {
                    ""
                } else {
                    &text
                };
                let response = frame(
                    400,
                    b"Content-Type: text/plain; charset=utf-8\r\n",
                    body.as_bytes(),
                    text.len(),
                    !close,
                    head.version,
                );
                self.after_own(close, now);
                self.respond(machine, response, close);
                return true;
            }
            Err(PathError::Refused) => Lookup::Missing,
        };
        match lookup {
            Lookup::File(file, meta, real) => {
                self.serve(machine, dir, (file, meta, &real), head, keep_alive, now)
            }
            Lookup::Directory => self.redirect(machine, head, keep_alive, now),
            Lookup::Missing if dir.fallthrough => return false,
            Lookup::Missing => {
                self.answer(machine, errors::HTTP_NOT_FOUND, b"", head, keep_alive, now)
            }
        }
        true
    }

    /// 301 to the request's path with a slash added (its query kept).
    fn redirect(
        &mut self,
        machine: &mut Machine,
        head: &RequestHead<'_, '_>,
        keep_alive: bool,
        now: Instant,
    ) {
        // The path is a request-target the parser checked (visible ASCII),
        // and starts with the directory's prefix, so it cannot name
        // another host (`//host`).
        let mut location = format!("Location: {}/", head.path);
        if let Some(query) = head.query {
            location.push('?');
            location.push_str(query);
        }
        location.push_str("\r\n");
        let close = !keep_alive || head.body != BodyKind::Empty;
        let response = frame(301, location.as_bytes(), b"", 0, !close, head.version);
        self.after_own(close, now);
        self.respond(machine, response, close);
    }

    /// Answer with `file` (or a precompressed sibling of it).
    fn serve(
        &mut self,
        machine: &mut Machine,
        dir: &StaticDirConfig,
        (file, meta, real): (File, Metadata, &Path),
        head: &RequestHead<'_, '_>,
        keep_alive: bool,
        now: Instant,
    ) {
        let (mut file, mut meta, mut coding, mut vary) = (file, meta, None, false);
        if dir.precompressed {
            let brotli = has_sibling(real, ContentCoding::Br, &meta);
            let gzip = has_sibling(real, ContentCoding::Gzip, &meta);
            // A cache must not hand one client's variant to another.
            vary = brotli || gzip;
            if let Some(chosen) = files::choose_coding(&head.accept_encoding, brotli, gzip) {
                if let Some((sibling, sibling_meta)) = open_sibling(real, chosen) {
                    (file, meta, coding) = (sibling, sibling_meta, Some(chosen));
                }
            }
        }
        let size = meta.len();
        let modified_ns = modified_ns(&meta);
        let etag = files::etag(size, modified_ns, coding);
        let modified = modified_ns / 1_000_000_000;
        let conditions = Conditions {
            if_match: head.header("if-match"),
            if_none_match: head.header("if-none-match"),
            if_modified_since: head.header("if-modified-since"),
            if_unmodified_since: head.header("if-unmodified-since"),
            if_range: head.header("if-range"),
            range: head.header("range"),
        };
        let validators = Validators {
            etag: &etag,
            modified,
            size,
        };
        let plan = files::plan(&conditions, &validators, head.method == Method::Get);
        let close = !keep_alive || head.body != BodyKind::Empty;
        // What every answer about the file carries, 304 included (RFC
        // 9110 §15.4.5: what a 200 would have said of caching).
        let mut headers = Vec::with_capacity(320);
        let mut line = |name: &str, value: &str| {
            headers.extend_from_slice(name.as_bytes());
            headers.extend_from_slice(b": ");
            headers.extend_from_slice(value.as_bytes());
            headers.extend_from_slice(b"\r\n");
        };
        let (status, start, length) = match plan {
            Plan::PreconditionFailed => {
                let failure = errors::HTTP_PRECONDITION_FAILED;
                self.answer(machine, failure, b"", head, keep_alive, now);
                return;
            }
            Plan::Unsatisfiable => {
                let extra = format!("Content-Range: bytes */{size}\r\n");
                let failure = errors::HTTP_RANGE_NOT_SATISFIABLE;
                self.answer(machine, failure, extra.as_bytes(), head, keep_alive, now);
                return;
            }
            Plan::NotModified => (304, 0, 0),
            Plan::Whole => (200, 0, size),
            Plan::Part { start, end } => (206, start, end - start + 1),
        };
        for (name, value) in &dir.headers {
            line(name, value);
        }
        line("ETag", &etag);
        line(
            "Last-Modified",
            HttpDate::from_unix_seconds(modified).as_str(),
        );
        line(
            "Cache-Control",
            &files::cache_control(dir.max_age, dir.immutable),
        );
        if vary {
            line("Vary", "Accept-Encoding");
        }
        if status != 304 {
            line("Content-Type", files::content_type(real));
            if let Some(coding) = coding {
                line("Content-Encoding", coding.as_str());
            }
            line("Accept-Ranges", "bytes");
            if status == 206 {
                let end = start + length - 1;
                line("Content-Range", &format!("bytes {start}-{end}/{size}"));
            }
        }
        let framing = if status == 304 {
            ResponseBody::None
        } else {
            ResponseBody::Length(length)
        };
        let body = if head.method == Method::Head || status == 304 {
            0
        } else {
            length
        };
        let mut response = Vec::with_capacity(
            200 + headers.len()
                + if body <= WHOLE_UP_TO {
                    body as usize
                } else {
                    0
                },
        );
        crate::http::with_date(|date| {
            http1::write_response_head(
                &mut response,
                status,
                None,
                date,
                &headers,
                framing,
                !close,
                head.version,
            )
        });
        if start > 0 && file.seek(SeekFrom::Start(start)).is_err() {
            self.unreadable(machine, now);
            return;
        }
        if body <= WHOLE_UP_TO {
            let at = response.len();
            response.resize(at + body as usize, 0);
            if file.read_exact(&mut response[at..]).is_err() {
                self.unreadable(machine, now);
                return;
            }
            self.after_own(close, now);
            self.respond(machine, response, close);
            return;
        }
        self.after_own(close, now);
        self.state = ReadState::Sending(Box::new(FileSend {
            file,
            remaining: body,
            head: Some(response),
            progress_at: now,
            buffered_seen: 0,
        }));
        self.pump(machine, now);
    }

    /// The file cannot be read as its `fstat` said (it shrank meanwhile):
    /// no answer can be given, so the connection closes, once the
    /// responses before this request are out.
    fn unreadable(&mut self, machine: &mut Machine, now: Instant) {
        self.after_own(true, now);
        self.respond(machine, Vec::new(), true);
    }

    /// Move the file being sent along: queue its head once its turn came,
    /// then pieces while little is queued; at its end, back to reading
    /// requests (or the end of the connection).
    pub(super) fn pump(&mut self, machine: &mut Machine, now: Instant) {
        let ReadState::Sending(send) = &mut self.state else {
            return;
        };
        let outbound = &machine.connection.outbound;
        if let Some(head) = &send.head {
            if !outbound.push_own_response(self.dispatched, head, false) {
                // Responses before it are pending: their end wakes us.
                return;
            }
            send.head = None;
            send.progress_at = now;
        } else if outbound.buffered() < send.buffered_seen {
            send.progress_at = now;
        }
        while send.remaining > 0 && outbound.buffered() < QUEUE_LOW {
            let Ok(piece) = send.read_piece() else {
                // The length is promised: only closing tells the client.
                self.last_request = true;
                self.close_now(machine);
                return;
            };
            if !outbound.push_own_bytes(piece) {
                // Closed meanwhile (evicted, shutting down).
                self.state = ReadState::Done;
                return;
            }
        }
        send.buffered_seen = outbound.buffered();
        if send.remaining == 0 {
            if self.last_request {
                outbound.push_own_response(self.dispatched, &[], true);
                self.state = ReadState::Done;
            } else {
                self.state = ReadState::Head;
            }
            self.idle_since = now;
        }
    }

    /// A file is being sent and the client took nothing for `timeout`:
    /// it is disconnected.
    pub(super) fn send_stalled(&mut self, machine: &mut Machine, now: Instant, timeout: Duration) {
        let ReadState::Sending(send) = &mut self.state else {
            return;
        };
        let buffered = machine.connection.outbound.buffered();
        if send.head.is_some() || now < send.progress_at + timeout {
            return;
        }
        if buffered < send.buffered_seen {
            // It did take some, unseen by a top-up.
            send.progress_at = now;
            send.buffered_seen = buffered;
            return;
        }
        self.state = ReadState::Done;
        machine.fail_with(1006, "", now);
    }

    /// Whether a file is being sent (its head queued): the reactor then
    /// services the connection again while the socket takes everything.
    pub(super) fn sending(&self) -> bool {
        matches!(&self.state, ReadState::Sending(send) if send.head.is_none())
    }
}

/// Resolve `path` in `dir`: its real path must be inside the directory's
/// (so a symbolic link out of it is not followed), a directory gives its
/// index, and only a regular file is served. What is served is what was
/// opened: its own `fstat` decides, not a `stat` of the path before.
fn lookup(dir: &StaticDirConfig, path: &SafePath) -> Lookup {
    let inside = |path: PathBuf| {
        fs::canonicalize(path)
            .ok()
            .filter(|real| real.starts_with(&dir.root))
    };
    let opened = |real: PathBuf| {
        let file = open(&real).ok()?;
        let meta = file.metadata().ok()?;
        Some((file, meta, real))
    };
    let Some((file, meta, real)) = inside(dir.root.join(&path.relative)).and_then(opened) else {
        return Lookup::Missing;
    };
    let (file, meta, real) = if meta.is_dir() {
        drop(file);
        let Some(index) = &dir.index else {
            return Lookup::Missing;
        };
        if !path.directory {
            return Lookup::Directory;
        }
        match inside(real.join(index)).and_then(opened) {
            Some(found) => found,
            None => return Lookup::Missing,
        }
    } else if path.directory {
        // `file.txt/` names no directory.
        return Lookup::Missing;
    } else {
        (file, meta, real)
    };
    if meta.is_file() {
        Lookup::File(file, meta, real)
    } else {
        Lookup::Missing
    }
}

/// Open for reading without following a symbolic link in the last name
/// (one swapped in since the path was resolved) and without blocking on
/// a FIFO swapped in (`O_NONBLOCK` changes nothing for a regular file).
fn open(path: &Path) -> io::Result<File> {
    let mut options = fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK);
    }
    options.open(path)
}

fn sibling_path(real: &Path, coding: ContentCoding) -> PathBuf {
    let mut name = real.as_os_str().to_owned();
    name.push(files::sibling_suffix(coding));
    PathBuf::from(name)
}

/// Whether `<file>.br` (or `.gz`) is a regular file (not a link: its
/// directory is the file's, inside the root, so it is inside too) and
/// not older than the file (an older one is a stale build).
fn has_sibling(real: &Path, coding: ContentCoding, file: &Metadata) -> bool {
    fs::symlink_metadata(sibling_path(real, coding))
        .is_ok_and(|meta| meta.is_file() && meta.modified().ok() >= file.modified().ok())
}

fn open_sibling(real: &Path, coding: ContentCoding) -> Option<(File, Metadata)> {
    let file = open(&sibling_path(real, coding)).ok()?;
    let meta = file.metadata().ok().filter(Metadata::is_file)?;
    Some((file, meta))
}

/// The modification time in nanoseconds since the epoch (0 before it, or
/// where the platform has none).
fn modified_ns(meta: &Metadata) -> u64 {
    meta.modified()
        .ok()
        .and_then(|time| time.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}
