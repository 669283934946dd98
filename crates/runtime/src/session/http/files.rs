//! Static files (`app.static(prefix, options)`), served by the I/O thread
//! without JavaScript: the request path is made safe (`http/files.rs`),
//! joined onto the directory, resolved to its real path and checked to be
//! inside the directory's real path (a symbolic link out of it is not
//! found); then `serve.rs` decides the answer (validators, conditions,
//! range, a precompressed sibling), which waits its turn behind
//! JavaScript's responses as every response of ours does (`answers.rs`),
//! and `sending.rs` streams a large file.
//!
//! **Kept in memory.** A directory keeps its small files (`cache`;
//! `http/file_cache.rs`): a request for one is answered from memory, no
//! system call made, and the disk is checked again (`fingerprint_now`) at
//! most once a `revalidate` per file. A miss that fits is read whole once
//! and kept.
//!
//! **Blocking reads.** Opening, `stat` and reading block the I/O thread:
//! cheap while the files are in the page cache (the case of a site's
//! assets), a stall of the thread's other connections on a cold disk.
//! `sendfile` (and reads on another thread) is a later step.
//!
//! **Failures.** A missing file is the native 404 (`ERR_HTTP_NOT_FOUND`);
//! a malformed path 400.

use std::fs::{self, File, Metadata};
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Instant, UNIX_EPOCH};

use bytes::Bytes;

use switchboard_proto::http1::{BodyKind, ContentCoding, Method, RequestHead};

use super::answers::frame;
use super::sending::FileSend;
use super::serve::{serve, serve_kept, FileRequest, Served};
use super::Core;
use crate::config::StaticDirConfig;
use crate::errors;
use crate::http::file_cache::{CachedFile, FileCache, Fingerprint, Hit, Variant};
use crate::http::files::{self, Conditions, PathError, SafePath};
use crate::session::Machine;

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

/// The file a request is answered with.
enum Found {
    Kept(Arc<CachedFile>),
    Disk(File, Metadata, PathBuf),
    /// Read to be kept, it turned out other than its `fstat` said.
    Changed,
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
        let path = match files::safe_path(raw, dir.dotfiles) {
            Ok(path) => path,
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
                self.respond(machine, response, close, now);
                return true;
            }
            Err(PathError::Refused) => {
                return self.missing(machine, dir, head, keep_alive, now);
            }
        };
        let cache = server.file_caches[index].as_ref();
        let found = match cache.and_then(|cache| kept(cache, dir, &path, now)) {
            Some(kept) => Found::Kept(kept),
            None => match lookup(dir, &path) {
                Lookup::File(file, meta, real) => {
                    keep_or_open(cache, dir, path, file, meta, real, now)
                }
                Lookup::Directory => {
                    self.redirect(machine, head, keep_alive, now);
                    return true;
                }
                Lookup::Missing => return self.missing(machine, dir, head, keep_alive, now),
            },
        };
        let close = !keep_alive || head.body != BodyKind::Empty;
        // The directory's own headers (`headers`) go as a handler's
        // would: validated at registration, none of them ours.
        let mut dir_lines = Vec::new();
        for (name, value) in &dir.headers {
            dir_lines.extend_from_slice(format!("{name}: {value}\r\n").as_bytes());
        }
        let request = FileRequest {
            conditions: Conditions {
                if_match: head.header("if-match"),
                if_none_match: head.header("if-none-match"),
                if_modified_since: head.header("if-modified-since"),
                if_unmodified_since: head.header("if-unmodified-since"),
                if_range: head.header("if-range"),
                range: head.header("range"),
            },
            accept: head.accept_encoding,
            get: head.method == Method::Get,
            head: head.method == Method::Head,
            version: head.version,
            close,
            status: 200,
            handler_headers: &dir_lines,
            max_age: dir.max_age,
            immutable: dir.immutable,
            precompressed: dir.precompressed,
            etag: true,
            last_modified: true,
        };
        self.after_own(close, now);
        let served = match found {
            Found::Kept(kept) => serve_kept(&request, &kept),
            Found::Disk(file, meta, real) => serve(&request, (file, meta, &real)),
            Found::Changed => Served::Unreadable,
        };
        match served {
            Served::Whole { response, .. } => self.respond(machine, response, close, now),
            Served::Shared { head, body, .. } => {
                self.respond_shared(machine, head, body, close, now)
            }
            Served::Stream {
                head, file, length, ..
            } => {
                let gate = Some(self.dispatched);
                let send = FileSend::new(file, length, head, gate, close, None, now);
                self.sending.push_back(send);
                self.pump(machine, now);
            }
            Served::Unreadable => {
                // The file shrank under us: no answer can be
                // given, the connection closes in its turn.
                self.last_request = true;
                self.respond(machine, Vec::new(), true, now);
            }
        }
        true
    }

    /// No file for the request: the routes the directory hid when it falls
    /// through (false: nothing answered), else the native 404.
    fn missing(
        &mut self,
        machine: &mut Machine,
        dir: &StaticDirConfig,
        head: &RequestHead<'_, '_>,
        keep_alive: bool,
        now: Instant,
    ) -> bool {
        if dir.fallthrough {
            return false;
        }
        self.answer(machine, errors::HTTP_NOT_FOUND, b"", head, keep_alive, now);
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
        self.respond(machine, response, close, now);
    }
}

/// Resolve `path` in `dir`: its real path must be inside the directory's
/// (so a symbolic link out of it is not followed), a directory gives its
/// index, and only a regular file is served. What is served is what was
/// opened: its own `fstat` decides, not a `stat` of the path before.
fn lookup(dir: &StaticDirConfig, path: &SafePath) -> Lookup {
    let inside = |path: PathBuf| inside(dir, path);
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
pub(super) fn open(path: &Path) -> io::Result<File> {
    let mut options = fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK);
    }
    options.open(path)
}

pub(super) fn sibling_path(real: &Path, coding: ContentCoding) -> PathBuf {
    let mut name = real.as_os_str().to_owned();
    name.push(files::sibling_suffix(coding));
    PathBuf::from(name)
}

/// Whether `<file>.br` (or `.gz`) is a regular file (not a link: its
/// directory is the file's, inside the root, so it is inside too) and
/// not older than the file (an older one is a stale build).
pub(super) fn has_sibling(real: &Path, coding: ContentCoding, file: &Metadata) -> bool {
    fs::symlink_metadata(sibling_path(real, coding))
        .is_ok_and(|meta| meta.is_file() && meta.modified().ok() >= file.modified().ok())
}

pub(super) fn open_sibling(real: &Path, coding: ContentCoding) -> Option<(File, Metadata)> {
    let file = open(&sibling_path(real, coding)).ok()?;
    let meta = file.metadata().ok().filter(Metadata::is_file)?;
    Some((file, meta))
}

/// The modification time in nanoseconds since the epoch (0 before it, or
/// where the platform has none).
pub(super) fn modified_ns(meta: &Metadata) -> u64 {
    meta.modified()
        .ok()
        .and_then(|time| time.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

/// The kept file for `path`, if any and the disk still agrees with it
/// (checked once it is due); a kept file the disk no longer agrees with
/// is dropped, and the request reads the disk.
fn kept(
    cache: &FileCache,
    dir: &StaticDirConfig,
    path: &SafePath,
    now: Instant,
) -> Option<Arc<CachedFile>> {
    match cache.get(path, now)? {
        Hit::Fresh(kept) => Some(kept),
        Hit::Stale(kept) => {
            if fingerprint_now(dir, path).as_ref() == Some(&kept.fingerprint) {
                cache.confirm(&kept, now);
                Some(kept)
            } else {
                cache.remove(path, &kept);
                None
            }
        }
    }
}

/// A file found on the disk: read whole and kept when the directory keeps
/// files and it fits, else answered from the disk.
fn keep_or_open(
    cache: Option<&FileCache>,
    dir: &StaticDirConfig,
    path: SafePath,
    file: File,
    meta: Metadata,
    real: PathBuf,
    now: Instant,
) -> Found {
    let Some(cache) = cache else {
        return Found::Disk(file, meta, real);
    };
    let fingerprint = fingerprint(dir, real, &meta);
    let siblings = [fingerprint.br, fingerprint.gzip]
        .iter()
        .flatten()
        .map(|(size, _)| size)
        .sum();
    if !cache.admits(meta.len(), siblings) {
        return Found::Disk(file, meta, fingerprint.real);
    }
    match read_to_keep(file, fingerprint, now) {
        Some(kept) => {
            let kept = Arc::new(kept);
            cache.insert(path, kept.clone());
            Found::Kept(kept)
        }
        None => Found::Changed,
    }
}

/// The real path of `path` if it is inside the directory's.
fn inside(dir: &StaticDirConfig, path: PathBuf) -> Option<PathBuf> {
    fs::canonicalize(path)
        .ok()
        .filter(|real| real.starts_with(&dir.root))
}

/// What the disk says now of the file `path` leads to (resolved as
/// [`lookup`] does, without opening it): what a kept file is checked
/// against. `None` when it leads to no regular file.
fn fingerprint_now(dir: &StaticDirConfig, path: &SafePath) -> Option<Fingerprint> {
    let mut real = inside(dir, dir.root.join(&path.relative))?;
    let mut meta = fs::symlink_metadata(&real).ok()?;
    if meta.is_dir() && path.directory {
        real = inside(dir, real.join(dir.index.as_ref()?))?;
        meta = fs::symlink_metadata(&real).ok()?;
    } else if path.directory {
        return None;
    }
    meta.is_file().then(|| fingerprint(dir, real, &meta))
}

/// The fingerprint of the regular file at `real` with `meta`, with the
/// siblings the directory would serve.
fn fingerprint(dir: &StaticDirConfig, real: PathBuf, meta: &Metadata) -> Fingerprint {
    let sibling = |coding| {
        dir.precompressed
            .then(|| sibling_state(&real, coding, meta))
            .flatten()
    };
    Fingerprint {
        br: sibling(ContentCoding::Br),
        gzip: sibling(ContentCoding::Gzip),
        file: (meta.len(), modified_ns(meta)),
        real,
    }
}

/// Size and modification time of `<file>.br` (or `.gz`) when it is used
/// ([`has_sibling`]).
fn sibling_state(real: &Path, coding: ContentCoding, file: &Metadata) -> Option<(u64, u64)> {
    let meta = fs::symlink_metadata(sibling_path(real, coding)).ok()?;
    (meta.is_file() && meta.modified().ok() >= file.modified().ok())
        .then(|| (meta.len(), modified_ns(&meta)))
}

/// Read the file (opened; `fingerprint` from its `fstat`) and the siblings
/// it names whole; `None` if a read finds other than the fingerprint
/// promised (changed meanwhile).
fn read_to_keep(file: File, fingerprint: Fingerprint, now: Instant) -> Option<CachedFile> {
    let read = |file: File, (size, modified_ns): (u64, u64)| {
        let mut body = Vec::with_capacity(size as usize);
        file.take(size + 1).read_to_end(&mut body).ok()?;
        (body.len() as u64 == size).then(|| Variant {
            body: Bytes::from(body),
            modified_ns,
        })
    };
    let sibling = |coding, state: Option<(u64, u64)>| -> Option<Option<Variant>> {
        let Some(state) = state else {
            return Some(None);
        };
        let (file, meta) = open_sibling(&fingerprint.real, coding)?;
        ((meta.len(), modified_ns(&meta)) == state).then_some(())?;
        read(file, state).map(Some)
    };
    let identity = read(file, fingerprint.file)?;
    let br = sibling(ContentCoding::Br, fingerprint.br)?;
    let gzip = sibling(ContentCoding::Gzip, fingerprint.gzip)?;
    Some(CachedFile::new(fingerprint, identity, br, gzip, now))
}
