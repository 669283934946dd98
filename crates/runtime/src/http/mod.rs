//! Plain HTTP requests on the listeners that also serve WebSocket: the
//! route table matched natively (`routes.rs`, on the radix tree of
//! `router.rs`; [`RouteTable`] is the same table outside a server, for
//! `inject()`), and the responses the workers write (`respond.rs`; bodies
//! compressed by `compress.rs`), framed
//! here with a cached `Date`; the decisions of serving a static file
//! (`files.rs`: safe paths, conditionals, ranges, codings) and the files
//! a directory keeps in memory (`file_cache.rs`); responses counted by
//! route and status with their latency (`metrics.rs`) and rendered for
//! Prometheus (`exposition.rs`). What the I/O
//! thread reads is the session's
//! (`session/http.rs`); the codec is `switchboard_proto::http1`.

pub(crate) mod compress;
pub(crate) mod date;
pub(crate) use date::with_date;
pub mod exposition;
pub(crate) mod file_cache;
pub mod file_order;
pub(crate) mod files;
pub mod metrics;
pub mod respond;
pub(crate) mod router;
pub(crate) mod routes;

pub use file_order::FileOrder;

/// The `Content-Type` a file is sent with, by its extension.
pub fn content_type_of(name: &std::path::Path) -> &'static str {
    files::content_type(name)
}
pub use router::RouteError;
pub use routes::{InvalidRoute, RouteMatch, RouteTable};

pub use respond::{
    ResponseParts, RESPOND_BR, RESPOND_GZIP, RESPOND_HEAD, RESPOND_HTTP10, RESPOND_KEEP_ALIVE,
    RESPOND_LENGTH, RESPOND_ROUTE_SHIFT, RESPOND_STREAM, WRITE_CHUNKED, WRITE_END,
};
