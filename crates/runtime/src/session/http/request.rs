//! A request head read: matched natively, then answered here (a static
//! file, a fixed route, 404, 405, 426) or handed to the connection's
//! worker as one `HTTP_REQUEST` record, its body to follow.

use std::time::Instant;

use switchboard_proto::http1::{
    BodyDecoder, BodyKind, BodyLimits, ContentCoding, RequestHead, Version,
};

use super::{Core, ReadState, CONTINUE};
use crate::events::{
    Record, TlsRecord, REQUEST_ACCEPTS_BR, REQUEST_ACCEPTS_GZIP, REQUEST_BODY, REQUEST_COUNTED,
    REQUEST_HTTP10, REQUEST_KEEP_ALIVE,
};
use crate::http::routes::Routed;
use crate::session::Machine;
use crate::stats;

impl Core {
    pub(super) fn on_request(
        &mut self,
        machine: &mut Machine,
        head: &RequestHead<'_, '_>,
        now: Instant,
    ) {
        stats::add(&machine.server.stats.http_requests, 1);
        // A request that asked to switch protocols is the connection's last
        // even when served as plain HTTP (RFC 9110 §7.8 lets a server
        // ignore an Upgrade it does not speak): a front end that tunnels
        // after forwarding an Upgrade, without waiting for a 101, would
        // otherwise pass whatever follows straight to us (h2c smuggling).
        // llhttp stops reading there too.
        let keep_alive = head.keep_alive && !head.upgrade && !self.closing_when_idle;
        self.last_request = !keep_alive;
        let server = machine.server.clone();
        self.started = now;
        let mut params = recycle(std::mem::take(&mut self.params));
        let mut routed = server.http_routes.find(head.method, head.path, &mut params);
        while let Routed::Files(index) = routed {
            self.row = server.http_metrics.dir_row(index);
            if self.files(machine, index, &params, head, keep_alive, now) {
                self.params = forget(params);
                return;
            }
            // Missing in a directory that falls through: the routes it
            // hid (none of which falls through, so this ends).
            routed = server
                .http_routes
                .find_past_files(head.method, head.path, &mut params);
        }
        match routed {
            Routed::Handler {
                route,
                max_body_bytes,
            } => {
                let decoder = match head.body {
                    BodyKind::Empty => None,
                    kind => {
                        let limits = BodyLimits {
                            max_body_bytes,
                            ..BodyLimits::default()
                        };
                        match BodyDecoder::new(kind, limits) {
                            Ok(decoder) => Some(decoder),
                            Err(error) => {
                                self.params = forget(params);
                                self.reject(machine, error, now);
                                return;
                            }
                        }
                    }
                };
                if head.expect_continue && decoder.is_some() {
                    // RFC 9110 §10.1.1: an immediate `100` (the route
                    // exists and the declared body fits). Behind responses
                    // still owed it would break their order: it is owed
                    // until they ended, unless this request's own final
                    // response comes first.
                    let before = self.dispatched;
                    let outbound = &machine.connection.outbound;
                    if !outbound.push_own_response(before, CONTINUE, false) {
                        self.continue_owed = Some(before);
                    }
                }
                let id = machine.connection.id;
                if !self.opened {
                    self.opened = true;
                    machine.queue().push(&Record::HttpOpen {
                        id,
                        remote: &self.remote,
                        tls: self.tls.as_ref().map(TlsRecord::from),
                    });
                }
                let mut flags = 0;
                if keep_alive {
                    flags |= REQUEST_KEEP_ALIVE;
                }
                if head.version == Version::Http10 {
                    flags |= REQUEST_HTTP10;
                }
                if decoder.is_some() {
                    flags |= REQUEST_BODY;
                }
                if machine.config().http.compression.is_some() {
                    // The coding the response may use, if JavaScript finds
                    // it worth compressing (`http/compress.rs`).
                    flags |= match head.accept_encoding.preferred() {
                        Some(ContentCoding::Gzip) => REQUEST_ACCEPTS_GZIP,
                        Some(ContentCoding::Br) => REQUEST_ACCEPTS_BR,
                        None => 0,
                    };
                }
                // Counting costs the worker a little per response: only
                // when the counts are served (`http/metrics.rs`).
                let metrics = &server.http_metrics;
                let started = if metrics.enabled() {
                    flags |= REQUEST_COUNTED;
                    metrics.micros(now)
                } else {
                    0
                };
                machine.queue().push(&Record::HttpRequest {
                    id,
                    started,
                    route,
                    method: head.method.index(),
                    flags,
                    path: head.path,
                    query: head.query.unwrap_or(""),
                    params: params.clone(),
                    headers: head.headers_raw,
                });
                self.dispatched = self.dispatched.wrapping_add(1);
                match decoder {
                    Some(decoder) => {
                        self.bodies = self.bodies.wrapping_add(1);
                        self.discarding = false;
                        self.state = ReadState::Body(decoder);
                    }
                    None => self.request_read(now),
                }
            }
            Routed::Fixed(index) => {
                self.row = server.http_metrics.fixed_row(index);
                self.fixed(machine, index, head, keep_alive, now);
            }
            Routed::Metrics => {
                self.row = server.http_metrics.metrics_row();
                self.metrics(machine, head, keep_alive, now);
            }
            Routed::SockJs(route) => self.sockjs(machine, route, head, keep_alive, now),
            // (Files were answered above.)
            Routed::NotFound | Routed::Files(_) => self.not_found(machine, head, keep_alive, now),
            Routed::MethodNotAllowed { allow } => {
                let allow = format!("Allow: {allow}\r\n");
                self.method_not_allowed(machine, &allow, head, keep_alive, now);
            }
        }
        self.params = forget(params);
    }
}

/// The parameters' storage, emptied, for borrows of a new input. The
/// in-place `collect` keeps the allocation (same element layout), so a
/// request costs no allocation for its parameters.
fn recycle<'a>(mut params: Vec<&'static str>) -> Vec<&'a str> {
    params.clear();
    params.into_iter().collect()
}

/// The storage back, its borrows dropped.
fn forget(mut params: Vec<&str>) -> Vec<&'static str> {
    params.clear();
    params.into_iter().map(|_| "").collect()
}
