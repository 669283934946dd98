//! The responses an HTTP connection answers itself, never reaching
//! JavaScript: a fixed route, the metrics endpoint, 404, 405, 426, a
//! malformed request, a timeout. Each waits its turn behind JavaScript's
//! responses (`outbound/http.rs`), and those that close the connection end
//! it once they are written. Each is counted (`http/metrics.rs`) when it
//! is queued.

use std::time::Instant;

use bytes::Bytes;

use switchboard_proto::http1::{
    self, BodyKind, HttpError, Method, RequestHead, ResponseBody, Version,
};

use super::{Core, ReadState};
use crate::errors::{self, Failure};
use crate::events::Record;
use crate::http::exposition;
use crate::http::metrics::Unrouted;
use crate::session::{Machine, Phase};
use crate::stats;

impl Core {
    /// A fixed route (`app.get(path, { body })`). A request with a body
    /// closes the connection: the body is not read.
    pub(super) fn fixed(
        &mut self,
        machine: &mut Machine,
        index: usize,
        head: &RequestHead<'_, '_>,
        keep_alive: bool,
        now: Instant,
    ) {
        let route = &machine.server.config.static_routes[index];
        let close = !keep_alive || head.body != BodyKind::Empty;
        let mut extra = Vec::new();
        let mut cache_control = false;
        for (name, value) in &route.headers {
            cache_control |= name.eq_ignore_ascii_case("cache-control");
            extra.extend_from_slice(format!("{name}: {value}\r\n").as_bytes());
        }
        if !cache_control {
            extra.extend_from_slice(b"Cache-Control: no-cache\r\n");
        }
        extra.extend_from_slice(format!("Content-Type: {}\r\n", route.content_type).as_bytes());
        let body: &[u8] = if head.method == Method::Head {
            &[]
        } else {
            &route.body
        };
        let response = frame(200, &extra, body, route.body.len(), !close, head.version);
        self.after_own(close, now);
        self.respond(machine, response, close, now);
    }

    /// The metrics endpoint: every counter, rendered now on this thread
    /// (a scrape costs a walk over the connection table and the counters,
    /// about what `stats()` costs, and no worker).
    pub(super) fn metrics(
        &mut self,
        machine: &mut Machine,
        head: &RequestHead<'_, '_>,
        keep_alive: bool,
        now: Instant,
    ) {
        let server = &machine.server;
        let text = exposition::render(&server.stats_snapshot(), &server.http_metrics.snapshot());
        let close = !keep_alive || head.body != BodyKind::Empty;
        let headers = format!(
            "Content-Type: {}\r\nCache-Control: no-store\r\n",
            exposition::CONTENT_TYPE
        );
        let body: &[u8] = if head.method == Method::Head {
            &[]
        } else {
            text.as_bytes()
        };
        let response = frame(
            200,
            headers.as_bytes(),
            body,
            text.len(),
            !close,
            head.version,
        );
        self.after_own(close, now);
        self.respond(machine, response, close, now);
    }

    /// Answer a request with a failure of ours; the connection stays open
    /// when the request allows it and has no body (which we would have to
    /// read and discard).
    pub(super) fn answer(
        &mut self,
        machine: &mut Machine,
        failure: Failure,
        extra: &[u8],
        head: &RequestHead<'_, '_>,
        keep_alive: bool,
        now: Instant,
    ) {
        let close = !keep_alive || head.body != BodyKind::Empty;
        let head_only = head.method == Method::Head;
        let response = failure_response(failure, extra, head_only, close, head.version);
        self.after_own(close, now);
        self.respond(machine, response, close, now);
    }

    /// No route for the path: 404, or 426 when a WebSocket route has it.
    pub(super) fn not_found(
        &mut self,
        machine: &mut Machine,
        head: &RequestHead<'_, '_>,
        keep_alive: bool,
        now: Instant,
    ) {
        let server = &machine.server;
        let (failure, unrouted, extra): (_, _, &[u8]) =
            if server.config.routes.iter().any(|r| r.matches(head.path)) {
                let upgrade = b"Upgrade: websocket\r\n";
                (
                    errors::WS_UPGRADE_REQUIRED,
                    Unrouted::UpgradeRequired,
                    upgrade,
                )
            } else {
                (errors::HTTP_NOT_FOUND, Unrouted::NotFound, b"")
            };
        self.row = server.http_metrics.unrouted_row(unrouted);
        self.answer(machine, failure, extra, head, keep_alive, now);
    }

    /// Routes for the path, none for the method: 405 with `allow` (the
    /// `Allow` header line).
    pub(super) fn method_not_allowed(
        &mut self,
        machine: &mut Machine,
        allow: &str,
        head: &RequestHead<'_, '_>,
        keep_alive: bool,
        now: Instant,
    ) {
        let metrics = &machine.server.http_metrics;
        self.row = metrics.unrouted_row(Unrouted::MethodNotAllowed);
        let failure = errors::HTTP_METHOD_NOT_ALLOWED;
        self.answer(machine, failure, allow.as_bytes(), head, keep_alive, now);
    }

    /// A request answered by us is read (we do not read its body).
    pub(super) fn after_own(&mut self, close: bool, now: Instant) {
        if close {
            self.last_request = true;
        }
        self.request_read(now);
    }

    /// A malformed request: its status, and the connection closes (what
    /// follows cannot be framed).
    pub(super) fn reject(&mut self, machine: &mut Machine, error: HttpError, now: Instant) {
        stats::add(&machine.server.stats.handshakes_rejected, 1);
        self.started = now;
        self.row = machine
            .server
            .http_metrics
            .unrouted_row(Unrouted::BadRequest);
        let text = format!("{}: {}", error.code(), error);
        self.refuse(machine, error.status(), &text, now);
    }

    /// The body of the request JavaScript has cannot be read to its end:
    /// its handlers hear why (their response is the answer), nothing more
    /// is read, and the connection closes once the responses in flight
    /// ended (the rest of the stream cannot be framed).
    pub(super) fn body_failed(&mut self, machine: &mut Machine, status: u16, reason: &str) {
        machine.queue().push(&Record::HttpBodyError {
            id: machine.connection.id,
            status,
            reason,
        });
        self.state = ReadState::Done;
        self.gathered = Vec::new();
        self.last_request = true;
        self.closing_when_idle = true;
        self.refresh(machine, true);
        if self.in_flight() == 0 {
            self.close_now(machine);
        }
    }

    /// Answer with `status` and `text`, then close.
    pub(super) fn refuse(&mut self, machine: &mut Machine, status: u16, text: &str, now: Instant) {
        let response = frame(
            status,
            b"Content-Type: text/plain; charset=utf-8\r\n",
            text.as_bytes(),
            text.len(),
            false,
            Version::Http11,
        );
        self.last_request = true;
        self.state = ReadState::Done;
        self.respond(machine, response, true, now);
    }

    /// Queue a response of ours once JavaScript's before it ended; until
    /// then it is held, and nothing more is read.
    pub(super) fn respond(
        &mut self,
        machine: &mut Machine,
        response: Vec<u8>,
        close: bool,
        now: Instant,
    ) {
        if response.len() >= SHARE_FROM {
            // A large response (a static file read whole) goes into the
            // queue as it is, not copied into its coalescing buffer: the
            // copy was a fifth of the time of a 64 KiB file.
            self.respond_shared(machine, Vec::new(), Bytes::from(response), close, now);
            return;
        }
        if machine
            .connection
            .outbound
            .push_own_response(self.dispatched, &response, close)
        {
            self.count(machine, status_of(&response), now);
            if close {
                self.state = ReadState::Done;
            }
        } else {
            self.state = ReadState::Held { response, close };
        }
    }

    /// As [`Core::respond`], the body shared with the write queue rather
    /// than copied into it (a kept file's bytes, a large response).
    pub(super) fn respond_shared(
        &mut self,
        machine: &mut Machine,
        head: Vec<u8>,
        body: Bytes,
        close: bool,
        now: Instant,
    ) {
        let outbound = &machine.connection.outbound;
        if outbound.push_own_response(self.dispatched, &head, false) {
            let status = status_of(if head.is_empty() { &body } else { &head });
            self.count(machine, status, now);
            if !body.is_empty() {
                outbound.push_own_bytes(body);
            }
            if close {
                outbound.push_own_response(self.dispatched, &[], true);
                self.state = ReadState::Done;
            }
        } else {
            // Its turn has not come (JavaScript's responses before it are
            // pending): held whole, as any response of ours.
            let mut response = head;
            response.extend_from_slice(&body);
            self.state = ReadState::Held { response, close };
        }
    }

    /// A response of ours with `status` (none: the connection closed
    /// without one) is queued: it counts in the current request's row.
    pub(super) fn count(&self, machine: &Machine, status: Option<u16>, now: Instant) {
        if let Some(status) = status {
            let micros = now.saturating_duration_since(self.started).as_micros() as u64;
            machine
                .server
                .http_metrics
                .observe_io(self.row, status, micros);
        }
    }

    /// Close without a response (an idle keep-alive connection, the end of
    /// a shutdown): queue the end behind whatever is queued.
    pub(super) fn close_now(&mut self, machine: &mut Machine) {
        self.state = ReadState::Done;
        machine
            .connection
            .outbound
            .push_own_response(self.dispatched, &[], true);
        if machine.phase == Phase::Open {
            machine.settle(1000, "");
        }
    }
}

/// The answer with a failure of ours: its text as a plain-text body (none
/// for HEAD, with the length it would have), `extra` header lines first.
pub(super) fn failure_response(
    failure: Failure,
    extra: &[u8],
    head_only: bool,
    close: bool,
    version: Version,
) -> Vec<u8> {
    let text = failure.reason();
    let body: &[u8] = if head_only { b"" } else { text.as_bytes() };
    let mut headers = extra.to_vec();
    headers.extend_from_slice(b"Content-Type: text/plain; charset=utf-8\r\n");
    frame(failure.status, &headers, body, text.len(), !close, version)
}

/// The status of a response we framed (`HTTP/1.1 404 ...`).
pub(super) fn status_of(response: &[u8]) -> Option<u16> {
    let digits = response.get(9..12)?;
    std::str::from_utf8(digits).ok()?.parse().ok()
}

/// A response of ours from this size on is queued without a copy.
const SHARE_FROM: usize = 16 * 1024;

/// A whole response of ours: head (with `Content-Length: length`, the
/// body's length even when `body` is empty for HEAD) and body.
pub(super) fn frame(
    status: u16,
    headers: &[u8],
    body: &[u8],
    length: usize,
    keep_alive: bool,
    version: Version,
) -> Vec<u8> {
    let mut out = Vec::with_capacity(160 + headers.len() + body.len());
    crate::http::with_date(|date| {
        http1::write_response_head(
            &mut out,
            status,
            None,
            date,
            headers,
            // RFC 9110 §8.6: no `Content-Length` on a 204 (nor on a 304,
            // where it would have to be the full response's).
            if status == 204 || status == 304 {
                ResponseBody::None
            } else {
                ResponseBody::Length(length as u64)
            },
            keep_alive,
            version,
        )
    });
    out.extend_from_slice(body);
    out
}
