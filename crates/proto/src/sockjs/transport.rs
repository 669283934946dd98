//! The session transports, named by the last segment of a session URL,
//! and the HTTP rules of each (method, content type, caching), as data.
//!
//! Sources: the transport sections of sockjs-protocol ("XhrPolling",
//! "XhrStreaming", "EventSource", "HtmlFile", "JsonpPolling", "WebSocket
//! protocols") and sockjs-node's dispatcher table (`lib/sockjs.js`).

use crate::http1::Method;

use super::rules;

/// A SockJS session transport: the `{transport}` of
/// `/{server}/{session}/{transport}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Transport {
    /// `websocket`: a WebSocket carrying SockJS frames, one per message.
    WebSocket,
    /// `xhr`: long polling; one frame per `POST`, newline-terminated.
    XhrPolling,
    /// `xhr_send`: the client's messages for the XHR, EventSource and
    /// htmlfile transports, as a `POST` body.
    XhrSend,
    /// `xhr_streaming`: one long `POST` response carrying
    /// newline-terminated frames after a 2 KiB prelude.
    XhrStreaming,
    /// `eventsource`: one long `GET` response in `text/event-stream`
    /// format.
    EventSource,
    /// `htmlfile`: one long `GET` response, an HTML page that calls its
    /// parent window once per frame (for old Internet Explorer).
    HtmlFile,
    /// `jsonp`: polling; one frame per `GET`, as a JavaScript call.
    JsonpPolling,
    /// `jsonp_send`: the client's messages for the jsonp transport, as a
    /// form `POST`.
    JsonpSend,
}

/// What a transport's requests do for the session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TransportRole {
    /// Both directions over one WebSocket.
    WebSocket,
    /// Receives frames; the response ends after the first frame (after
    /// the open frame, too).
    Polling,
    /// Receives frames on one response until the response limit
    /// ([`rules::DEFAULT_RESPONSE_LIMIT`]) is reached or the session ends.
    Streaming,
    /// Delivers the client's messages to an existing session; answered at
    /// once. An unknown session is a 404.
    Send,
}

impl Transport {
    /// Every transport, in the order sockjs-protocol documents them.
    pub const ALL: [Transport; 8] = [
        Transport::WebSocket,
        Transport::XhrPolling,
        Transport::XhrSend,
        Transport::XhrStreaming,
        Transport::EventSource,
        Transport::HtmlFile,
        Transport::JsonpPolling,
        Transport::JsonpSend,
    ];

    /// The URL segment, e.g. `"xhr_streaming"`.
    pub fn name(self) -> &'static str {
        match self {
            Transport::WebSocket => "websocket",
            Transport::XhrPolling => "xhr",
            Transport::XhrSend => "xhr_send",
            Transport::XhrStreaming => "xhr_streaming",
            Transport::EventSource => "eventsource",
            Transport::HtmlFile => "htmlfile",
            Transport::JsonpPolling => "jsonp",
            Transport::JsonpSend => "jsonp_send",
        }
    }

    /// The transport named by a URL segment (case-sensitive); `None` for
    /// any other name, which is a 404.
    pub fn from_name(name: &str) -> Option<Transport> {
        Transport::ALL.into_iter().find(|t| t.name() == name)
    }

    /// What the transport's requests do.
    pub fn role(self) -> TransportRole {
        match self {
            Transport::WebSocket => TransportRole::WebSocket,
            Transport::XhrPolling | Transport::JsonpPolling => TransportRole::Polling,
            Transport::XhrStreaming | Transport::EventSource | Transport::HtmlFile => {
                TransportRole::Streaming
            }
            Transport::XhrSend | Transport::JsonpSend => TransportRole::Send,
        }
    }

    /// The method that carries the transport: `GET` for the WebSocket
    /// upgrade, EventSource, htmlfile and jsonp (which browsers load as a
    /// resource), `POST` for the rest.
    pub fn method(self) -> Method {
        match self {
            Transport::WebSocket
            | Transport::EventSource
            | Transport::HtmlFile
            | Transport::JsonpPolling => Method::Get,
            Transport::XhrPolling
            | Transport::XhrSend
            | Transport::XhrStreaming
            | Transport::JsonpSend => Method::Post,
        }
    }

    /// Whether the transport answers CORS preflight `OPTIONS` requests
    /// (the XHR transports, which browsers send cross-origin;
    /// `XhrPolling.test_options`, `XhrStreaming.test_options`).
    pub fn accepts_options(self) -> bool {
        matches!(
            self,
            Transport::XhrPolling | Transport::XhrSend | Transport::XhrStreaming
        )
    }

    /// Whether `method` may be used with this transport; any other method
    /// is answered with 405 and [`Transport::allow_header`].
    pub fn allows(self, method: Method) -> bool {
        method == self.method() || (method == Method::Options && self.accepts_options())
    }

    /// The value of the `Allow` header of a 405 answer, and of
    /// `Access-Control-Allow-Methods` in a preflight answer, which the
    /// 0.3.3 test suite compares verbatim (`"OPTIONS, POST"`).
    pub fn allow_header(self) -> &'static str {
        match (self.accepts_options(), self.method()) {
            (true, _) => "OPTIONS, POST",
            (false, Method::Get) => "GET",
            (false, _) => "POST",
        }
    }

    /// The `Content-Type` of a successful answer; `None` for the WebSocket
    /// transport, which answers with `101`.
    pub fn content_type(self) -> Option<&'static str> {
        match self {
            Transport::WebSocket => None,
            Transport::XhrPolling | Transport::XhrStreaming | Transport::JsonpPolling => {
                Some(rules::CONTENT_TYPE_JAVASCRIPT)
            }
            // The 204 of xhr_send still names a type: Firefox reports an
            // XML parse error for a typeless answer (XhrPolling test).
            Transport::XhrSend | Transport::JsonpSend => Some(rules::CONTENT_TYPE_PLAIN),
            Transport::EventSource => Some(rules::CONTENT_TYPE_EVENT_STREAM),
            Transport::HtmlFile => Some(rules::CONTENT_TYPE_HTML),
        }
    }

    /// The status of a successful answer: 204 for `xhr_send`, 101 for the
    /// WebSocket upgrade, 200 for the rest (`jsonp_send` answers 200 with
    /// the body [`rules::JSONP_SEND_OK`], because Konqueror mishandles
    /// 204).
    pub fn success_status(self) -> u16 {
        match self {
            Transport::WebSocket => 101,
            Transport::XhrSend => 204,
            _ => 200,
        }
    }

    /// Whether answers carry `Cache-Control: `[`rules::NO_CACHE`]: every
    /// transport but the WebSocket one. GETs must never be cached, and
    /// iOS 6 caches POSTs too (the test suite's `verify_not_cached`).
    pub fn never_cached(self) -> bool {
        self != Transport::WebSocket
    }

    /// Whether the transport needs a callback name ([`super::Callback`])
    /// from the query: jsonp and htmlfile.
    pub fn needs_callback(self) -> bool {
        matches!(self, Transport::JsonpPolling | Transport::HtmlFile)
    }
}
