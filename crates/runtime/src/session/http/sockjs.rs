//! A SockJS service's HTTP endpoints, answered on the I/O thread (the
//! protocol's rules are `switchboard_proto::sockjs`'s): the greeting,
//! `/info` and its preflight, the iframe page, and the answers to requests
//! that cannot be served: a WebSocket URL without an upgrade (400), a
//! method the URL does not take (405, without a body, as the protocol's
//! suite requires), anything else (404). The WebSocket endpoints are
//! upgrades (`handshake.rs`); the session transports over plain HTTP are
//! a receiving request (`sockjs_receive.rs`) or a send (`sockjs_send.rs`)
//! on a session of `crate::sockjs`.

use std::time::Instant;

use switchboard_proto::http1::{BodyKind, Method, RequestHead};
use switchboard_proto::sockjs::{
    self, Callback, CallbackError, Framing, IframePage, Info, Route, Transport, TransportRole,
    ACCESS_CONTROL_MAX_AGE, CONTENT_TYPE_HTML, CONTENT_TYPE_JSON, CONTENT_TYPE_PLAIN, GREETING,
    NO_CACHE, WEBSOCKET_UPGRADE_REQUIRED,
};

use super::answers::frame;
use super::sockjs_answer::Answer;
use super::Core;
use crate::config::SockJsConfig;
use crate::errors;
use crate::http::metrics::RowId;
use crate::session::Machine;

/// What a request under a service's prefix is.
enum Decision {
    /// Answered at once.
    Answer(Answer),
    /// A receiving request of session `session` (`sockjs_receive.rs`);
    /// `headers` are its response's (type, caching, CORS, cookie).
    Receive {
        session: String,
        framing: Framing,
        headers: String,
    },
    /// A send to session `session` (`sockjs_send.rs`).
    Send {
        session: String,
        transport: Transport,
        headers: String,
    },
}

impl Core {
    /// A request under the prefix of the SockJS service of route `route`.
    pub(super) fn sockjs(
        &mut self,
        machine: &mut Machine,
        route: usize,
        head: &RequestHead<'_, '_>,
        keep_alive: bool,
        now: Instant,
    ) {
        let server = machine.server.clone();
        let config = &server.config.routes[route];
        let decision = match &config.sockjs {
            Some(service) => decide(service, config.rpc, head),
            None => Decision::Answer(Answer::new(404)),
        };
        // Not counted by route (`http/metrics.rs` has no row for them).
        self.row = RowId::MAX;
        match decision {
            Decision::Answer(answer) => self.sockjs_answer(machine, answer, head, keep_alive, now),
            Decision::Receive {
                session,
                framing,
                headers,
            } => {
                let request = super::sockjs_receive::Request {
                    route,
                    session: &session,
                    framing,
                    headers,
                    keep_alive,
                };
                self.sockjs_receive(machine, request, head, now);
            }
            Decision::Send {
                session,
                transport,
                headers,
            } => self.sockjs_send(
                machine, route, &session, transport, headers, head, keep_alive, now,
            ),
        }
    }

    /// Answer a request under a service's prefix at once.
    pub(super) fn sockjs_answer(
        &mut self,
        machine: &mut Machine,
        answer: Answer,
        head: &RequestHead<'_, '_>,
        keep_alive: bool,
        now: Instant,
    ) {
        // A request with a body closes the connection: its body is not
        // read.
        let close = !keep_alive || head.body != BodyKind::Empty;
        let body: &[u8] = if head.method == Method::Head {
            &[]
        } else {
            &answer.body
        };
        let response = frame(
            answer.status,
            answer.headers.as_bytes(),
            body,
            answer.body.len(),
            !close,
            head.version,
        );
        self.after_own(close, now);
        self.respond(machine, response, close, now);
    }
}

/// The headers of every answer on a session URL: the transport's content
/// type, never cached, CORS, the cookie.
fn session_headers(
    service: &SockJsConfig,
    head: &RequestHead<'_, '_>,
    content_type: &str,
) -> String {
    let answer = Answer::new(200)
        .header("Content-Type", content_type)
        .header("Cache-Control", NO_CACHE)
        .cors(head)
        .cookie(service, head);
    answer.headers
}

/// What `head`, on the service's prefix, is. `rpc`: the service carries
/// the Switchboard protocol.
fn decide(service: &SockJsConfig, rpc: bool, head: &RequestHead<'_, '_>) -> Decision {
    let Some(Route::Session {
        session_id,
        transport,
        ..
    }) = sockjs::strip_prefix(head.path, &service.prefix).and_then(Route::parse)
    else {
        return Decision::Answer(answer(service, rpc, head));
    };
    let method = match head.method {
        Method::Head => Method::Get,
        other => other,
    };
    if !transport.allows(method) || method == Method::Options {
        return Decision::Answer(answer(service, rpc, head));
    }
    let callback = match transport {
        Transport::HtmlFile | Transport::JsonpPolling => match Callback::from_query(head.query) {
            Ok(callback) => Some(callback),
            Err(error) => {
                let failure = match error {
                    CallbackError::Missing => errors::SOCKJS_CALLBACK_REQUIRED,
                    CallbackError::Invalid => errors::SOCKJS_CALLBACK_INVALID,
                };
                return Decision::Answer(
                    Answer::new(failure.status)
                        .header("Cache-Control", NO_CACHE)
                        .body(CONTENT_TYPE_PLAIN, failure.reason()),
                );
            }
        },
        _ => None,
    };
    match transport.role() {
        TransportRole::WebSocket => Decision::Answer(answer(service, rpc, head)),
        TransportRole::Polling | TransportRole::Streaming => {
            let Some(framing) = Framing::for_transport(transport, callback) else {
                return Decision::Answer(Answer::new(404));
            };
            Decision::Receive {
                session: session_id.to_owned(),
                headers: session_headers(service, head, framing.content_type()),
                framing,
            }
        }
        TransportRole::Send => Decision::Send {
            session: session_id.to_owned(),
            transport,
            headers: session_headers(service, head, CONTENT_TYPE_PLAIN),
        },
    }
}

/// What the service answers `head`. A service that carries the
/// Switchboard protocol (`rpc`) has no SockJS WebSocket transport (its
/// messages are base64, where the protocol's own WebSocket carries bytes):
/// `/info` says `"websocket":false`, a session's `websocket` URL is 404,
/// and `<prefix>/websocket` is the protocol over WebSocket
/// (`handshake.rs`).
fn answer(service: &SockJsConfig, rpc: bool, head: &RequestHead<'_, '_>) -> Answer {
    let Some(route) = sockjs::strip_prefix(head.path, &service.prefix).and_then(Route::parse)
    else {
        return Answer::new(404);
    };
    let method = match head.method {
        Method::Head => Method::Get,
        other => other,
    };
    let websocket_url = matches!(
        route,
        Route::RawWebSocket
            | Route::Session {
                transport: Transport::WebSocket,
                ..
            }
    );
    let session_websocket = matches!(
        route,
        Route::Session {
            transport: Transport::WebSocket,
            ..
        }
    );
    if websocket_url && (!service.websocket || (rpc && session_websocket)) {
        return Answer::new(404);
    }
    if !route.allows(method) {
        // No body and no type (`verify405`).
        return Answer::new(405).header("Allow", route.allow_header());
    }
    match route {
        Route::Greeting => Answer::new(200).body(CONTENT_TYPE_PLAIN, GREETING),
        Route::Info if method == Method::Options => Answer::new(204)
            .cached_for_a_year()
            .header("Access-Control-Max-Age", ACCESS_CONTROL_MAX_AGE)
            .header("Access-Control-Allow-Methods", route.allow_header())
            .allow_headers(head)
            .cors(head),
        Route::Info => {
            let mut entropy = [0u8; 4];
            // The OS source failing leaves nothing sensible to do but stop
            // (as the protocol sessions' seeds do).
            getrandom::fill(&mut entropy).expect("the operating system's random source failed");
            let mut json = Vec::with_capacity(96);
            Info {
                websocket: service.websocket && !rpc,
                cookie_needed: service.cookie_needed,
                entropy: u32::from_le_bytes(entropy),
            }
            .write_json(&mut json);
            Answer::new(200)
                .header("Cache-Control", NO_CACHE)
                .cors(head)
                .body(CONTENT_TYPE_JSON, json)
        }
        Route::Iframe => {
            let page = IframePage::new(&service.sockjs_url);
            let etag = page.etag();
            let fresh = head
                .header("if-none-match")
                .is_some_and(|theirs| page.is_fresh(&String::from_utf8_lossy(theirs)));
            if fresh {
                Answer::new(304).header("ETag", etag)
            } else {
                Answer::new(200)
                    .cached_for_a_year()
                    .header("ETag", etag)
                    .body(CONTENT_TYPE_HTML, page.html())
            }
        }
        // A WebSocket URL without an upgrade.
        Route::RawWebSocket
        | Route::Session {
            transport: Transport::WebSocket,
            ..
        } => Answer::new(400).body(CONTENT_TYPE_PLAIN, WEBSOCKET_UPGRADE_REQUIRED),
        // A preflight of an XHR transport.
        Route::Session { transport, .. } if method == Method::Options => Answer::new(204)
            .cached_for_a_year()
            .header("Access-Control-Max-Age", ACCESS_CONTROL_MAX_AGE)
            .header("Access-Control-Allow-Methods", transport.allow_header())
            .allow_headers(head)
            .cors(head)
            .cookie(service, head),
        // (`decide` takes the others.)
        Route::Session { .. } => Answer::new(404),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use switchboard_proto::sockjs::CACHE_ONE_YEAR;

    /// The answer to `request` (a whole head) from a service on `/echo`.
    fn ask(request: &str) -> Answer {
        let mut parser = switchboard_proto::http1::HeadParser::new(Default::default());
        let head = parser.parse(request.as_bytes()).unwrap().unwrap();
        answer(&SockJsConfig::new("/echo"), false, &head)
    }

    fn header<'a>(answer: &'a Answer, name: &str) -> Option<&'a str> {
        answer.headers.lines().find_map(|line| {
            let (n, v) = line.split_once(": ")?;
            n.eq_ignore_ascii_case(name).then_some(v)
        })
    }

    #[test]
    fn greeting_info_and_not_found() {
        let greeting = ask("GET /echo/ HTTP/1.1\r\nHost: a\r\n\r\n");
        assert_eq!(
            (greeting.status, greeting.body.as_slice()),
            (200, GREETING.as_bytes())
        );
        assert_eq!(ask("GET /echo/a/a HTTP/1.1\r\nHost: a\r\n\r\n").status, 404);

        let info = ask("GET /echo/info HTTP/1.1\r\nHost: a\r\n\r\n");
        assert_eq!(info.status, 200);
        assert_eq!(header(&info, "cache-control"), Some(NO_CACHE));
        assert_eq!(header(&info, "access-control-allow-origin"), Some("*"));
        assert_eq!(header(&info, "access-control-allow-credentials"), None);
        let body = String::from_utf8(info.body).unwrap();
        assert!(body.starts_with(
            r#"{"websocket":true,"origins":["*:*"],"cookie_needed":false,"entropy":"#
        ));

        let preflight = ask("OPTIONS /echo/info HTTP/1.1\r\nHost: a\r\nOrigin: null\r\n\r\n");
        assert_eq!(preflight.status, 204);
        assert_eq!(
            header(&preflight, "access-control-allow-origin"),
            Some("null")
        );
        assert_eq!(
            header(&preflight, "access-control-allow-credentials"),
            Some("true")
        );
        assert_eq!(
            header(&preflight, "access-control-allow-methods"),
            Some("OPTIONS, GET")
        );
        assert!(header(&preflight, "expires").is_some());
        assert!(preflight.body.is_empty());
    }

    #[test]
    fn the_iframe_page_is_cached_and_validated() {
        let page = ask("GET /echo/iframe-1.6.1.html?t=1 HTTP/1.1\r\nHost: a\r\n\r\n");
        assert_eq!(page.status, 200);
        assert_eq!(header(&page, "cache-control"), Some(CACHE_ONE_YEAR));
        let etag = header(&page, "etag").unwrap().to_owned();
        let again = ask(&format!(
            "GET /echo/iframe.html HTTP/1.1\r\nHost: a\r\nIf-None-Match: {etag}\r\n\r\n"
        ));
        assert_eq!(again.status, 304);
        assert!(again.body.is_empty());
    }

    #[test]
    fn methods_and_websocket_urls() {
        let wrong = ask("POST /echo/info HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n");
        assert_eq!(wrong.status, 405);
        assert_eq!(header(&wrong, "allow"), Some("OPTIONS, GET"));
        assert_eq!(header(&wrong, "content-type"), None);
        let plain = ask("GET /echo/000/abc/websocket HTTP/1.1\r\nHost: a\r\n\r\n");
        assert_eq!(plain.status, 400);
        assert_eq!(plain.body, WEBSOCKET_UPGRADE_REQUIRED.as_bytes());
        assert_eq!(
            ask("GET /echo/000/a.b/websocket HTTP/1.1\r\nHost: a\r\n\r\n").status,
            404
        );
    }
}
