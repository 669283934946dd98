//! The decisions of serving a static file, apart from the file system: a
//! request path made safe to join onto a directory, the content type, the
//! validators (`ETag`, `Last-Modified`), the conditional requests of RFC
//! 9110 §13, byte ranges (§14) and the choice of a precompressed variant
//! (§12.5.3). Pure: header values in, decisions out; the I/O thread that
//! opens and reads the files is `session/http/files.rs`.

use std::path::PathBuf;

use switchboard_proto::http1::{AcceptEncoding, ContentCoding, HttpDate};

use crate::config::DotFiles;

/// Why a request path cannot name a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PathError {
    /// 400: the path cannot be decoded (a malformed `%` escape) or holds
    /// a NUL, which no file name contains.
    Malformed(&'static str),
    /// 404: a name that is refused rather than looked up (`..`, `.`, an
    /// empty segment, a backslash, a dotfile), so nothing outside the
    /// directory, and nothing hidden, is ever reached.
    Refused,
}

/// A request path under a served directory, decoded and checked.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct SafePath {
    /// Relative, one or more plain names (or none: the directory itself).
    pub relative: PathBuf,
    /// The path ended with `/` (or was empty): it names a directory.
    pub directory: bool,
}

/// Turn the raw wildcard value of a request (`css/site.css`, percent-
/// encoded as sent) into a path to join onto the directory.
///
/// The checks run on the decoded bytes, so an encoded dot or slash is
/// refused as its plain form is (`%2e%2e/`, `..%2f`): every `/` after
/// decoding separates names, and no name may be empty, `.` or `..`. An
/// empty name also refuses an absolute path (`%2Fetc%2Fpasswd` decodes to
/// a leading `/`), which `Path::join` would put in place of the directory.
/// A backslash is refused too: a separator elsewhere, and in no file name
/// a browser asks for.
pub(crate) fn safe_path(raw: &str, dotfiles: DotFiles) -> Result<SafePath, PathError> {
    let decoded = percent_decode(raw.as_bytes())?;
    check_names(decoded, dotfiles)
}

/// A path a handler names (`res.file(path, { root })`): a file system
/// path, not a URL, so it is not percent-decoded (a handler passes
/// `req.params`, decoded already: decoding again would turn a name with
/// `%2e` in it into `.`), but held to the same names as a request's: no
/// `..`, `.`, empty name, backslash, NUL or (unless allowed) dotfile. An
/// absolute path without a root is checked from its first name on.
pub(crate) fn safe_relative(path: &[u8], dotfiles: DotFiles) -> Result<SafePath, PathError> {
    check_names(path.to_vec(), dotfiles)
}

/// The checks of [`safe_path`] on a decoded path.
fn check_names(decoded: Vec<u8>, dotfiles: DotFiles) -> Result<SafePath, PathError> {
    if decoded.contains(&0) {
        return Err(PathError::Malformed("a NUL in the path"));
    }
    if decoded.contains(&b'\\') {
        return Err(PathError::Refused);
    }
    let (names, directory) = match decoded.strip_suffix(b"/") {
        Some(names) => (names, true),
        None => (&decoded[..], decoded.is_empty()),
    };
    if !names.is_empty() {
        for name in names.split(|&b| b == b'/') {
            let hidden = name.first() == Some(&b'.') && dotfiles == DotFiles::Ignore;
            if name.is_empty() || name == b"." || name == b".." || hidden {
                return Err(PathError::Refused);
            }
        }
    }
    Ok(SafePath {
        relative: path_of(names.to_vec())?,
        directory,
    })
}

#[cfg(unix)]
fn path_of(bytes: Vec<u8>) -> Result<PathBuf, PathError> {
    use std::os::unix::ffi::OsStringExt;
    Ok(PathBuf::from(std::ffi::OsString::from_vec(bytes)))
}

#[cfg(not(unix))]
fn path_of(bytes: Vec<u8>) -> Result<PathBuf, PathError> {
    String::from_utf8(bytes)
        .map(PathBuf::from)
        .map_err(|_| PathError::Refused)
}

fn percent_decode(raw: &[u8]) -> Result<Vec<u8>, PathError> {
    let mut out = Vec::with_capacity(raw.len());
    let mut at = 0;
    while at < raw.len() {
        let b = raw[at];
        if b == b'%' {
            let hex = |i: usize| raw.get(i).and_then(|&c| (c as char).to_digit(16));
            let (Some(high), Some(low)) = (hex(at + 1), hex(at + 2)) else {
                return Err(PathError::Malformed(
                    "a malformed percent-escape in the path",
                ));
            };
            out.push((high * 16 + low) as u8);
            at += 3;
        } else {
            out.push(b);
            at += 1;
        }
    }
    Ok(out)
}

/// The `Content-Type` of a file, from its extension (case-insensitive);
/// `application/octet-stream` for any other. Text types say UTF-8: what
/// a site's files are written in, and what keeps a browser from guessing.
pub(crate) fn content_type(name: &std::path::Path) -> &'static str {
    let Some(extension) = name.extension().and_then(|e| e.to_str()) else {
        return "application/octet-stream";
    };
    match extension.to_ascii_lowercase().as_str() {
        "html" | "htm" => "text/html; charset=utf-8",
        "css" => "text/css; charset=utf-8",
        // RFC 9239: text/javascript, for modules too.
        "js" | "mjs" | "cjs" => "text/javascript; charset=utf-8",
        "json" | "map" => "application/json; charset=utf-8",
        "txt" => "text/plain; charset=utf-8",
        "csv" => "text/csv; charset=utf-8",
        "md" => "text/markdown; charset=utf-8",
        "xml" => "text/xml; charset=utf-8",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "avif" => "image/avif",
        "ico" => "image/x-icon",
        "pdf" => "application/pdf",
        "wasm" => "application/wasm",
        "woff" => "font/woff",
        "woff2" => "font/woff2",
        "mp4" => "video/mp4",
        "webm" => "video/webm",
        "mp3" => "audio/mpeg",
        _ => "application/octet-stream",
    }
}

/// The suffix of a precompressed sibling in `coding` (`<file>.br`,
/// `<file>.gz`).
pub(crate) fn sibling_suffix(coding: ContentCoding) -> &'static str {
    match coding {
        ContentCoding::Br => ".br",
        ContentCoding::Gzip => ".gz",
    }
}

/// The strong `ETag` of a file: its size and modification time in
/// nanoseconds, in hex (`"1a2b-17f0c3e2d4a5b6c7"`), and the coding of a
/// precompressed variant (`"…-br"`), so a variant never validates the
/// other's bytes (a range of one is not a range of the other). Strong: a
/// write that keeps the size within the same nanosecond is the only
/// change it misses.
pub(crate) fn etag(size: u64, modified_ns: u64, coding: Option<ContentCoding>) -> String {
    match coding {
        Some(coding) => format!("\"{size:x}-{modified_ns:x}-{}\"", coding.as_str()),
        None => format!("\"{size:x}-{modified_ns:x}\""),
    }
}

/// `Cache-Control` for `max_age` seconds: `no-cache` for 0 (store, but
/// revalidate every time), else `public, max-age=N` (and `immutable`).
pub(crate) fn cache_control(max_age: u32, immutable: bool) -> String {
    match (max_age, immutable) {
        (0, _) => "no-cache".to_owned(),
        (age, false) => format!("public, max-age={age}"),
        (age, true) => format!("public, max-age={age}, immutable"),
    }
}

/// The conditional and range headers of a request (the first line of
/// each), as sent.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Conditions<'a> {
    pub if_match: Option<&'a [u8]>,
    pub if_none_match: Option<&'a [u8]>,
    pub if_modified_since: Option<&'a [u8]>,
    pub if_unmodified_since: Option<&'a [u8]>,
    pub if_range: Option<&'a [u8]>,
    pub range: Option<&'a [u8]>,
}

impl<'a> Conditions<'a> {
    /// The conditions in a request's header lines as received (`Name:
    /// value\r\n` each, what `HTTP_REQUEST` carried to JavaScript and
    /// `res.file` hands back).
    pub(crate) fn from_lines(lines: &'a [u8]) -> Self {
        Conditions {
            if_match: header_in(lines, "if-match"),
            if_none_match: header_in(lines, "if-none-match"),
            if_modified_since: header_in(lines, "if-modified-since"),
            if_unmodified_since: header_in(lines, "if-unmodified-since"),
            if_range: header_in(lines, "if-range"),
            range: header_in(lines, "range"),
        }
    }
}

/// Every `name: value` line of `lines` (`Name: value\r\n` each), the
/// name compared case-insensitively, the value without surrounding
/// whitespace. Lines without a colon are skipped: the lines come from the
/// strict parser, or from a handler's own headers, checked in JavaScript.
pub(crate) fn headers_in<'a, 'n>(
    lines: &'a [u8],
    name: &'n str,
) -> impl Iterator<Item = &'a [u8]> + 'n
where
    'a: 'n,
{
    lines.split(|&b| b == b'\n').filter_map(move |line| {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let colon = line.iter().position(|&b| b == b':')?;
        line[..colon]
            .eq_ignore_ascii_case(name.as_bytes())
            .then(|| trim(&line[colon + 1..]))
    })
}

/// The first `name` header of `lines` (see [`headers_in`]).
pub(crate) fn header_in<'a>(lines: &'a [u8], name: &str) -> Option<&'a [u8]> {
    headers_in(lines, name).next()
}

/// What every line of `Accept-Encoding` in `lines` accepts.
pub(crate) fn accept_encoding_in(lines: &[u8]) -> AcceptEncoding {
    let mut accept = AcceptEncoding::default();
    for value in headers_in(lines, "accept-encoding") {
        accept.add(value);
    }
    accept
}

/// The file (or variant) a request is answered with.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Validators<'a> {
    /// As [`etag`] wrote it, quotes included; `None` when the response
    /// carries no `ETag` (`res.file(path, { etag: false })`): then no
    /// entity-tag condition can match but `*`.
    pub etag: Option<&'a str>,
    /// `Last-Modified`, in whole seconds since the epoch; `None` when the
    /// response carries none: date conditions are then ignored (§13.1.3
    /// and §13.1.4 evaluate them against a `Last-Modified` the server has).
    pub modified: Option<u64>,
    pub size: u64,
}

/// How to answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Plan {
    /// 200 with the whole file.
    Whole,
    /// 206 with bytes `start..=end`.
    Part { start: u64, end: u64 },
    /// 304: the client's copy is current.
    NotModified,
    /// 412: `If-Match` or `If-Unmodified-Since` failed.
    PreconditionFailed,
    /// 416: no byte of the range is in the file.
    Unsatisfiable,
}

/// Evaluate a GET (`get`) or HEAD request's preconditions in the order of
/// RFC 9110 §13.2.2, then its range (GET only: §14.2 defines ranges for
/// GET alone, so a HEAD describes the whole file).
pub(crate) fn plan(conditions: &Conditions<'_>, file: &Validators<'_>, get: bool) -> Plan {
    // 1-2: the client wants to act on this version only.
    if let Some(value) = conditions.if_match {
        if !tag_list_matches(value, file.etag, Compare::Strong) {
            return Plan::PreconditionFailed;
        }
    } else if let (Some(since), Some(modified)) = (
        conditions.if_unmodified_since.and_then(HttpDate::parse),
        file.modified,
    ) {
        if modified > since {
            return Plan::PreconditionFailed;
        }
    }
    // 3-4: the client has a copy; If-Modified-Since counts only without
    // If-None-Match (§13.1.3), whose weak comparison suits a cache.
    if let Some(value) = conditions.if_none_match {
        if tag_list_matches(value, file.etag, Compare::Weak) {
            return Plan::NotModified;
        }
    } else if let (Some(since), Some(modified)) = (
        conditions.if_modified_since.and_then(HttpDate::parse),
        file.modified,
    ) {
        if modified <= since {
            return Plan::NotModified;
        }
    }
    // 5: a range, unless If-Range says the client's part is of another
    // version (then the whole file, §13.1.5).
    let Some(range) = conditions.range.filter(|_| get) else {
        return Plan::Whole;
    };
    if let Some(validator) = conditions.if_range {
        if !if_range_holds(validator, file) {
            return Plan::Whole;
        }
    }
    match parse_range(range, file.size) {
        RangeSpec::Ignored => Plan::Whole,
        RangeSpec::Single { start, end } => Plan::Part { start, end },
        RangeSpec::Unsatisfiable => Plan::Unsatisfiable,
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Compare {
    /// Both tags strong and equal (If-Match, If-Range).
    Strong,
    /// Equal apart from `W/` (If-None-Match).
    Weak,
}

/// Whether an `If-Match` / `If-None-Match` value (`*`, or a list of
/// entity-tags) names `etag` (ours, strong). A malformed list matches
/// nothing from the first malformed member on.
fn tag_list_matches(value: &[u8], etag: Option<&str>, compare: Compare) -> bool {
    let value = trim(value);
    if value == b"*" {
        // The file exists, which is all `*` asks.
        return true;
    }
    let Some(etag) = etag else {
        return false;
    };
    let mut rest = value;
    loop {
        rest = trim_start(rest);
        while let Some(after) = rest.strip_prefix(b",") {
            rest = trim_start(after);
        }
        if rest.is_empty() {
            return false;
        }
        let Some((tag, weak, after)) = entity_tag(rest) else {
            return false;
        };
        if tag == etag.as_bytes() && (compare == Compare::Weak || !weak) {
            return true;
        }
        rest = trim_start(after);
        match rest.first() {
            None => return false,
            Some(b',') => {}
            Some(_) => return false,
        }
    }
}

/// One entity-tag at the start of `input`: its quoted form (quotes
/// included), whether it was weak, and what follows it.
fn entity_tag(input: &[u8]) -> Option<(&[u8], bool, &[u8])> {
    let (weak, input) = match input.strip_prefix(b"W/") {
        Some(rest) => (true, rest),
        None => (false, input),
    };
    if input.first() != Some(&b'"') {
        return None;
    }
    // etagc: anything visible but DQUOTE (commas included).
    let close = input[1..].iter().position(|&b| b == b'"')? + 1;
    if input[1..close].iter().any(|&b| b < 0x21 || b == 0x7f) {
        return None;
    }
    Some((&input[..=close], weak, &input[close + 1..]))
}

/// `If-Range`: a strong entity-tag equal to ours, or exactly our
/// `Last-Modified` date. Anything else, a weak tag included, fails
/// (§13.1.5: a weak validator never gates a range).
fn if_range_holds(value: &[u8], file: &Validators<'_>) -> bool {
    let value = trim(value);
    if value.starts_with(b"\"") || value.starts_with(b"W/") {
        return matches!(
            entity_tag(value),
            Some((tag, false, rest))
                if Some(tag) == file.etag.map(str::as_bytes) && trim(rest).is_empty()
        );
    }
    file.modified.is_some() && HttpDate::parse(value) == file.modified
}

/// What a `Range` header asks of a file of `size` bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RangeSpec {
    /// Serve the whole file: no byte range we serve (another unit, a
    /// malformed value, or several ranges).
    Ignored,
    /// Bytes `start..=end`, within the file.
    Single { start: u64, end: u64 },
    /// A single range with no byte in the file: 416.
    Unsatisfiable,
}

/// Parse a `Range` value (RFC 9110 §14.1.2). Only one range is served:
/// several (`bytes=0-1,5-6`) give the whole file, which §14.2 allows ("a
/// server MAY ignore the Range header field") and which spares the
/// multipart/byteranges framing that browsers and media players never ask
/// for. A malformed value is ignored too, as §14.2 requires of an invalid
/// one.
pub(crate) fn parse_range(value: &[u8], size: u64) -> RangeSpec {
    let value = trim(value);
    let Some(eq) = value.iter().position(|&b| b == b'=') else {
        return RangeSpec::Ignored;
    };
    // The unit is case-insensitive (§14.1).
    if !trim(&value[..eq]).eq_ignore_ascii_case(b"bytes") {
        return RangeSpec::Ignored;
    }
    let spec = trim(&value[eq + 1..]);
    if spec.contains(&b',') {
        return RangeSpec::Ignored;
    }
    let Some(dash) = spec.iter().position(|&b| b == b'-') else {
        return RangeSpec::Ignored;
    };
    let (first, last) = (&spec[..dash], &spec[dash + 1..]);
    match (digits(first), digits(last)) {
        // `-n`: the last n bytes.
        (None, Some(suffix)) if first.is_empty() => {
            if suffix == 0 || size == 0 {
                RangeSpec::Unsatisfiable
            } else {
                RangeSpec::Single {
                    start: size - suffix.min(size),
                    end: size - 1,
                }
            }
        }
        // `a-`: from a to the end.
        (Some(start), None) if last.is_empty() => {
            if start >= size {
                RangeSpec::Unsatisfiable
            } else {
                RangeSpec::Single {
                    start,
                    end: size - 1,
                }
            }
        }
        // `a-b`: invalid when b < a.
        (Some(start), Some(end)) if start <= end => {
            if start >= size {
                RangeSpec::Unsatisfiable
            } else {
                RangeSpec::Single {
                    start,
                    end: end.min(size - 1),
                }
            }
        }
        _ => RangeSpec::Ignored,
    }
}

/// A run of digits as a number; `None` if empty, not all digits, or too
/// large for a file offset.
fn digits(text: &[u8]) -> Option<u64> {
    if text.is_empty() || text.len() > 19 || !text.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(text).ok()?.parse().ok()
}

/// The coding to send, among the precompressed siblings that exist, by
/// what the client's `Accept-Encoding` accepts (parsed with the request
/// head, `http1::AcceptEncoding`: q-values, `*`, `x-gzip`): the one of
/// highest weight above 0, `br` on a tie (smaller files for the same
/// decoding cost); `None`, the file as it is, when the client accepts
/// neither or sent no `Accept-Encoding` (a client that says nothing may
/// decode nothing). A sibling the client accepts is preferred to the file
/// as it is whatever `identity`'s weight, as nginx's `gzip_static` does: it
/// is the same content, smaller; and `identity;q=0` with no acceptable
/// sibling still gets the file as it is (RFC 9110 §12.5.3's "SHOULD send a
/// response without any content coding", rather than a 406 no browser
/// could use).
pub(crate) fn choose_coding(
    accept: &AcceptEncoding,
    brotli: bool,
    gzip: bool,
) -> Option<ContentCoding> {
    let weight = |coding, exists| if exists { accept.quality(coding) } else { 0 };
    let (br, gz) = (
        weight(ContentCoding::Br, brotli),
        weight(ContentCoding::Gzip, gzip),
    );
    if br == 0 && gz == 0 {
        None
    } else if br >= gz {
        Some(ContentCoding::Br)
    } else {
        Some(ContentCoding::Gzip)
    }
}

fn trim(bytes: &[u8]) -> &[u8] {
    let bytes = trim_start(bytes);
    let end = bytes
        .iter()
        .rposition(|&b| b != b' ' && b != b'\t')
        .map_or(0, |i| i + 1);
    &bytes[..end]
}

fn trim_start(bytes: &[u8]) -> &[u8] {
    let start = bytes
        .iter()
        .position(|&b| b != b' ' && b != b'\t')
        .unwrap_or(bytes.len());
    &bytes[start..]
}

#[cfg(test)]
mod tests;
