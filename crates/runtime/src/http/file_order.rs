//! `res.file(path, options)`: what a handler asks of the I/O thread. The
//! worker thread only builds this order (no disk access: it must never
//! block on a disk) and hands it over through the connection's queue
//! (`outbound/http.rs`); the connection's I/O thread opens the file and
//! answers exactly as it answers for `app.static` (`session/http/files.rs`),
//! then tells the worker what went out (`HTTP_FILE_DONE`).
//!
//! Everything the answer depends on travels in the order, so the I/O
//! thread keeps no state of the request: the request's header lines as
//! received (the conditions, the range, `Accept-Encoding`), the
//! handler's status and header lines, and the options as flag bits.

use std::path::PathBuf;

use switchboard_proto::http1::Version;

use super::files;
use crate::config::DotFiles;

/// The connection stays open after the response (as [`super::RESPOND_KEEP_ALIVE`]).
pub const FILE_KEEP_ALIVE: u32 = 1;
/// The request was HTTP/1.0.
pub const FILE_HTTP10: u32 = 2;
/// The request was HEAD: the head only.
pub const FILE_HEAD: u32 = 4;
/// The request was GET: the only method a `Range` applies to (RFC 9110
/// §14.2); a file sent to a POST is sent whole.
pub const FILE_GET: u32 = 8;
/// `Cache-Control` gets `immutable` (with a non-zero `max_age`).
pub const FILE_IMMUTABLE: u32 = 16;
/// No `ETag` (`etag: false`).
pub const FILE_NO_ETAG: u32 = 32;
/// No `Last-Modified` (`lastModified: false`).
pub const FILE_NO_LAST_MODIFIED: u32 = 64;
/// Names starting with `.` are served (`dotfiles: 'allow'`).
pub const FILE_DOTFILES: u32 = 128;
/// Do not look for `.br` / `.gz` siblings (`precompressed: false`).
pub const FILE_NO_PRECOMPRESSED: u32 = 256;

/// A handler's request to answer with a file.
#[derive(Debug, PartialEq, Eq)]
pub struct FileOrder {
    /// The handler's status (200 unless it set one). Any other status
    /// sends the whole file with it: conditions and ranges are about a
    /// 200's representation (a 404 page is not "not modified").
    pub status: u16,
    /// The handler's header lines (`Name: value\r\n`, checked by
    /// JavaScript). Its `Content-Type`, `Cache-Control`, `ETag` and
    /// `Last-Modified` take the place of ours.
    pub headers: Vec<u8>,
    /// The path as the handler gave it: relative to `root`, or absolute.
    pub path: Vec<u8>,
    /// The directory the path must stay inside (its real path too).
    pub root: Option<PathBuf>,
    /// The request's header lines as received.
    pub request_headers: Vec<u8>,
    /// `FILE_*` bits.
    pub flags: u32,
    /// `Cache-Control: max-age` in seconds (0: `no-cache`, as `app.static`
    /// says it), unless the handler set `Cache-Control`.
    pub max_age: u32,
    /// When the request's head was complete (its record's `started`): with
    /// the route in `flags` from `RESPOND_ROUTE_SHIFT` up (plus one; none:
    /// not counted), the response is counted when its file ends.
    pub started: u64,
}

impl FileOrder {
    pub(crate) fn has(&self, flag: u32) -> bool {
        self.flags & flag != 0
    }

    pub(crate) fn version(&self) -> Version {
        if self.has(FILE_HTTP10) {
            Version::Http10
        } else {
            Version::Http11
        }
    }

    pub(crate) fn dotfiles(&self) -> DotFiles {
        if self.has(FILE_DOTFILES) {
            DotFiles::Allow
        } else {
            DotFiles::Ignore
        }
    }

    /// The file's path, checked as a request path would be: under `root`,
    /// the names of the path (a handler's path usually comes from the
    /// request: `req.params`); without one, the names of the absolute
    /// path (a `..` in it is refused as well: it is what an attacker
    /// would inject into a path a handler builds).
    pub(crate) fn checked_path(&self) -> Result<PathBuf, files::PathError> {
        match &self.root {
            Some(root) => {
                let path = files::safe_relative(&self.path, self.dotfiles())?;
                Ok(root.join(path.relative))
            }
            None => {
                let Some(relative) = self.path.strip_prefix(b"/") else {
                    // JavaScript refuses this before asking.
                    return Err(files::PathError::Refused);
                };
                let path = files::safe_relative(relative, self.dotfiles())?;
                Ok(PathBuf::from("/").join(path.relative))
            }
        }
    }
}

/// The handler's header lines without those that describe a body
/// (`Content-*` but `Content-Location` and the `Content-Security-Policy`
/// pair, which describe the response, not its body): what a 304, 412 or
/// 416 carries of them (RFC 9110 §15.4.5; `send`'s rule too), cookies and
/// `Cache-Control` included.
pub(crate) fn lines_without_content(lines: &[u8]) -> Vec<u8> {
    const POLICY: &[u8] = b"content-security-policy";
    let mut out = Vec::with_capacity(lines.len());
    for line in lines.split_inclusive(|&b| b == b'\n') {
        let name_end = line.iter().position(|&b| b == b':').unwrap_or(0);
        let name = &line[..name_end];
        let content = name.len() >= 8 && name[..8].eq_ignore_ascii_case(b"content-");
        let policy =
            name.len() >= POLICY.len() && name[..POLICY.len()].eq_ignore_ascii_case(POLICY);
        if !content || policy || name.eq_ignore_ascii_case(b"content-location") {
            out.extend_from_slice(line);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn order(path: &str, root: Option<&str>, flags: u32) -> FileOrder {
        FileOrder {
            status: 200,
            headers: b"Content-Disposition: attachment\r\nSet-Cookie: a=1\r\n".to_vec(),
            path: path.as_bytes().to_vec(),
            root: root.map(PathBuf::from),
            request_headers: Vec::new(),
            flags,
            max_age: 0,
            started: 0,
        }
    }

    #[test]
    fn paths_stay_under_the_root() {
        let ok = order("a/b.txt", Some("/srv"), 0).checked_path();
        assert_eq!(ok, Ok(PathBuf::from("/srv/a/b.txt")));
        for escape in ["../etc/passwd", "a/../../x", "/etc/passwd", "a//b", ".env"] {
            assert_eq!(
                order(escape, Some("/srv"), 0).checked_path(),
                Err(files::PathError::Refused),
                "{escape}"
            );
        }
        assert!(order(".env", Some("/srv"), FILE_DOTFILES)
            .checked_path()
            .is_ok());
        assert!(matches!(
            order("a\0b", Some("/srv"), 0).checked_path(),
            Err(files::PathError::Malformed(_))
        ));
    }

    #[test]
    fn absolute_paths_without_root() {
        let ok = order("/srv/files/x.bin", None, 0).checked_path();
        assert_eq!(ok, Ok(PathBuf::from("/srv/files/x.bin")));
        for refused in ["/srv/../etc/passwd", "relative.txt", "/srv/.git/config"] {
            assert_eq!(
                order(refused, None, 0).checked_path(),
                Err(files::PathError::Refused),
                "{refused}"
            );
        }
    }

    #[test]
    fn handler_headers_and_what_a_304_keeps() {
        let order = order("x", None, 0);
        assert!(files::header_in(&order.headers, "content-disposition").is_some());
        assert!(files::header_in(&order.headers, "content-type").is_none());
        let lines = b"Content-Type: text/plain\r\nContent-Location: /a\r\ncache-control: no-store\r\nCONTENT-DISPOSITION: inline\r\nSet-Cookie: a=1\r\n";
        assert_eq!(
            lines_without_content(lines),
            b"Content-Location: /a\r\ncache-control: no-store\r\nSet-Cookie: a=1\r\n".to_vec()
        );
        // The policies describe the response, not its body: they stay.
        let policies = b"Content-Security-Policy: default-src 'none'\r\ncontent-security-policy-report-only: x\r\nContent-Language: en\r\n";
        assert_eq!(
            lines_without_content(policies),
            b"Content-Security-Policy: default-src 'none'\r\ncontent-security-policy-report-only: x\r\n".to_vec()
        );
    }
}
