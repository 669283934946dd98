//! The HTTP route table: a compressed radix tree, matched natively before
//! any JavaScript runs.
//!
//! A request is matched here; the match (the route's value and the raw
//! parameter values) is handed to a JavaScript worker, and 404 and 405 are
//! answered without one. Pure data structure: no I/O, no clock, no threads.
//!
//! # Patterns
//!
//! A pattern starts with `/`; segments are separated by `/`.
//! - `:name` as a whole segment is a parameter: it matches one non-empty
//!   segment (no `/`). Names are `[A-Za-z0-9_]+`, unique within a pattern.
//! - `*` as the whole last segment is a wildcard: it matches the rest of the
//!   path, `/` and the empty string included (`/static/*` matches `/static/`
//!   and `/static/a/b.css`, not `/static`). Its name is `"*"`.
//! - Anything else is matched byte for byte: case-sensitive, no decoding, and
//!   strict about trailing slashes (`/a` and `/a/` are different routes).
//!   `:` and `*` cannot appear elsewhere; `?`, `#`, spaces and control
//!   characters are refused because they never reach us in a request path.
//!
//! # Priority
//!
//! At every branch: static, then parameter, then wildcard, with backtracking.
//! With `/a/b/d` and `/a/:x/c`, the path `/a/b/c` matches the second (x="b").
//! The tree's shape does not depend on insertion order, so neither does a
//! lookup. Each node is visited at most once per lookup (a static prefix and
//! a parameter consume a fixed number of bytes), so backtracking is linear in
//! the size of the tree, never exponential.
//!
//! # Methods
//!
//! Patterns equal but for their parameter names are one *shape*; a shape holds
//! one route per method plus optionally one for every method ("all").
//! Within a shape a request method picks, in this order: the route for that
//! exact method; for HEAD, the GET route (automatic HEAD); the "all" route.
//!
//! Across shapes, the path is matched in priority order and **the first shape
//! that accepts the method wins**; only when no matching shape accepts it is
//! the answer 405, with the `Allow` list of the highest-priority matching
//! shape. So with `GET /a/b` and `POST /a/:x`, `POST /a/b` reaches the second
//! route (x="b") and `PUT /a/b` is a 405 with `Allow: GET, HEAD`. Current
//! find-my-way behaves so (it keeps one tree per method): a route never hides a
//! lower-priority route of another method. The known imprecision: that
//! `Allow` omits POST although POST would be served. Listing the union of all
//! matching shapes would need an `Allow` string per combination of shapes,
//! built at lookup time (an allocation) or cached (shared mutable state); the
//! precomputed per-shape string keeps a lookup allocation-free.
//!
//! The `Allow` list is precomputed per shape at insertion: GET, HEAD, POST,
//! PUT, DELETE, OPTIONS, PATCH, TRACE in that order, then other methods
//! alphabetically; HEAD is listed whenever GET is.
//!
//! # Memory
//!
//! Insertion allocates freely (routes are registered once, at startup). A
//! lookup allocates nothing: the caller passes a reusable `Vec` for the
//! parameters, which grows at most once to the largest parameter count. A
//! lookup recurses once per tree level; the depth is bounded by the longest
//! pattern, which the application chooses, never by the request path.

#![forbid(unsafe_code)]

use std::error::Error;
use std::fmt;

/// The methods with a fixed place in the `Allow` list, in that order. A
/// request method is mapped to its index once per lookup, so a shape finds
/// its route by indexing an array instead of comparing strings.
const STANDARD_METHODS: [&str; 8] = [
    "GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS", "PATCH", "TRACE",
];
const GET: usize = 0;
const HEAD: usize = 1;

/// Index of a route in `Router::routes`. `u32` rather than `usize` keeps a
/// shape's method table at 64 bytes, one cache line.
type RouteId = u32;

/// Why [`Router::insert`] refused a route. A refused insert changes nothing.
///
/// The binding reports these as `ERR_INVALID_OPTION` with the `Display` text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RouteError {
    /// The pattern breaks a syntax rule; the reason says which.
    Invalid(&'static str),
    /// The method is not an uppercase HTTP token such as `"GET"`. Methods are
    /// case-sensitive, so `"get"` would never match what clients send.
    InvalidMethod,
    /// An equivalent pattern (equal but for parameter names) already has a
    /// route for this method, or for all methods when the method is `None`.
    Duplicate,
    /// More than `u32::MAX` routes.
    TooManyRoutes,
}

impl fmt::Display for RouteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RouteError::Invalid(reason) => write!(f, "invalid route pattern: {reason}"),
            RouteError::InvalidMethod => {
                f.write_str("invalid route method: expected an uppercase HTTP token such as GET")
            }
            RouteError::Duplicate => {
                f.write_str("a route with this method and an equivalent pattern already exists")
            }
            RouteError::TooManyRoutes => f.write_str("too many routes"),
        }
    }
}

impl Error for RouteError {}

/// The outcome of [`Router::find`].
#[derive(Debug, PartialEq, Eq)]
pub enum Match<'r, T> {
    /// A route accepts the path and the method. The parameter values are in
    /// the caller's `params`, in the order of `names`.
    Found {
        /// The value given to [`Router::insert`].
        value: &'r T,
        /// The route's parameter names in pattern order; a wildcard is `"*"`.
        names: &'r [Box<str>],
    },
    /// Routes accept the path but none accepts the method: answer 405.
    MethodNotAllowed {
        /// The `Allow` header value, such as `"GET, HEAD, POST"`.
        allow: &'r str,
    },
    /// No route accepts the path: answer 404.
    NotFound,
}

// Manual impls: a derive would require `T: Copy` for what are references.
impl<T> Clone for Match<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for Match<'_, T> {}

/// The route table. Build it with [`Router::insert`], then share it: a
/// lookup takes `&self`.
pub struct Router<T> {
    root: Node,
    /// Every route in insertion order; the tree refers to them by index.
    routes: Vec<Route<T>>,
}

struct Route<T> {
    method: Option<Box<str>>,
    pattern: Box<str>,
    names: Box<[Box<str>]>,
    value: T,
}

/// One tree node: a static byte string, then what may follow it.
#[derive(Default)]
struct Node {
    /// Bytes this node matches; empty only at the root and right after a
    /// parameter. Bytes, not `str`: a split may fall inside a UTF-8 character.
    prefix: Box<[u8]>,
    /// First byte of each static child, parallel to `children`. A linear scan
    /// of a few bytes beats hashing; the widest nodes of real route sets have
    /// a few dozen children.
    indices: Vec<u8>,
    children: Vec<Node>,
    /// A parameter segment here. Its node has an empty prefix, and only
    /// static children (which begin with `/`) and a shape.
    param: Option<Box<Node>>,
    /// A wildcard here: it ends the pattern, so it is a shape directly.
    wildcard: Option<Box<Shape>>,
    /// Routes whose pattern ends exactly here.
    shape: Option<Box<Shape>>,
}

/// The routes of one shape (patterns equal but for parameter names).
#[derive(Default)]
struct Shape {
    standard: [Option<RouteId>; 8],
    /// Other methods, sorted by name (the order the `Allow` list uses).
    other: Vec<(Box<str>, RouteId)>,
    all: Option<RouteId>,
    /// Precomputed `Allow` value of this shape.
    allow: Box<str>,
}

/// A request method, resolved once per lookup.
#[derive(Clone, Copy)]
enum Method<'a> {
    Standard(usize),
    Other(&'a str),
}

impl<'a> Method<'a> {
    fn parse(method: &'a str) -> Self {
        match method {
            "GET" => Method::Standard(GET),
            "HEAD" => Method::Standard(HEAD),
            "POST" => Method::Standard(2),
            "PUT" => Method::Standard(3),
            "DELETE" => Method::Standard(4),
            "OPTIONS" => Method::Standard(5),
            "PATCH" => Method::Standard(6),
            "TRACE" => Method::Standard(7),
            other => Method::Other(other),
        }
    }
}

impl Shape {
    /// The route for `method`: exact, then GET for HEAD, then "all".
    fn resolve(&self, method: Method<'_>) -> Option<RouteId> {
        let exact = match method {
            Method::Standard(i) => self.standard[i],
            Method::Other(name) => self
                .other
                .binary_search_by(|(n, _)| (**n).cmp(name))
                .ok()
                .map(|i| self.other[i].1),
        };
        exact
            .or_else(|| match method {
                Method::Standard(HEAD) => self.standard[GET],
                _ => None,
            })
            .or(self.all)
    }

    fn add(&mut self, method: Option<&str>, id: RouteId) -> Result<(), RouteError> {
        let slot = match method.map(Method::parse) {
            None => &mut self.all,
            Some(Method::Standard(i)) => &mut self.standard[i],
            Some(Method::Other(name)) => {
                match self.other.binary_search_by(|(n, _)| (**n).cmp(name)) {
                    Ok(_) => return Err(RouteError::Duplicate),
                    Err(at) => self.other.insert(at, (name.into(), id)),
                }
                self.allow = self.allow_list();
                return Ok(());
            }
        };
        if slot.is_some() {
            return Err(RouteError::Duplicate);
        }
        *slot = Some(id);
        self.allow = self.allow_list();
        Ok(())
    }

    fn allow_list(&self) -> Box<str> {
        let standard = STANDARD_METHODS.iter().enumerate().filter(|&(i, _)| {
            self.standard[i].is_some() || (i == HEAD && self.standard[GET].is_some())
        });
        let names: Vec<&str> = standard
            .map(|(_, name)| *name)
            .chain(self.other.iter().map(|(name, _)| &**name))
            .collect();
        names.join(", ").into()
    }
}

impl Node {
    /// The node reached by the static bytes `s` from here, splitting or
    /// creating nodes as needed.
    fn static_path(&mut self, s: &[u8]) -> &mut Node {
        let Some(&first) = s.first() else {
            return self;
        };
        let Some(i) = self.indices.iter().position(|&b| b == first) else {
            self.indices.push(first);
            self.children.push(Node {
                prefix: s.into(),
                ..Node::default()
            });
            let last = self.children.len() - 1;
            return &mut self.children[last];
        };
        let child = &mut self.children[i];
        let common = child
            .prefix
            .iter()
            .zip(s)
            .take_while(|(a, b)| a == b)
            .count();
        if common < child.prefix.len() {
            child.split(common);
        }
        child.static_path(&s[common..])
    }

    /// Keeps `prefix[..at]` here and moves the rest, with everything below,
    /// into a single child. `0 < at < prefix.len()`.
    fn split(&mut self, at: usize) {
        let mut tail = std::mem::take(self);
        self.prefix = tail.prefix[..at].into();
        tail.prefix = tail.prefix[at..].into();
        self.indices.push(tail.prefix[0]);
        self.children.push(tail);
    }
}

/// A pattern split into the steps of a tree walk.
enum Piece<'a> {
    Static(&'a [u8]),
    Param,
    Wildcard,
}

struct Parsed<'a> {
    pieces: Vec<Piece<'a>>,
    names: Vec<Box<str>>,
}

fn parse(pattern: &str) -> Result<Parsed<'_>, RouteError> {
    let Some(rest) = pattern.strip_prefix('/') else {
        return Err(RouteError::Invalid("a pattern must start with '/'"));
    };
    let bytes = pattern.as_bytes();
    let mut pieces = Vec::new();
    let mut names: Vec<Box<str>> = Vec::new();
    let mut static_start = 0; // start of the static run not yet emitted
    let mut seg_start = 1;
    let mut segments = rest.split('/').peekable();
    while let Some(seg) = segments.next() {
        let seg_end = seg_start + seg.len();
        if let Some(name) = seg.strip_prefix(':') {
            check_name(name)?;
            if names.iter().any(|n| **n == *name) {
                return Err(RouteError::Invalid("a parameter name is repeated"));
            }
            pieces.push(Piece::Static(&bytes[static_start..seg_start]));
            pieces.push(Piece::Param);
            names.push(name.into());
            static_start = seg_end;
        } else if seg == "*" {
            if segments.peek().is_some() {
                return Err(RouteError::Invalid("'*' may only be the last segment"));
            }
            pieces.push(Piece::Static(&bytes[static_start..seg_start]));
            pieces.push(Piece::Wildcard);
            names.push("*".into());
            static_start = seg_end;
        } else {
            check_static(seg)?;
        }
        seg_start = seg_end + 1;
    }
    if static_start < bytes.len() {
        pieces.push(Piece::Static(&bytes[static_start..]));
    }
    Ok(Parsed { pieces, names })
}

fn check_name(name: &str) -> Result<(), RouteError> {
    if name.is_empty() {
        return Err(RouteError::Invalid("empty parameter name"));
    }
    if name.contains(':') {
        return Err(RouteError::Invalid("':' may only start a segment"));
    }
    if !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
        return Err(RouteError::Invalid(
            "a parameter name may only contain A-Z, a-z, 0-9 and '_'",
        ));
    }
    Ok(())
}

fn check_static(seg: &str) -> Result<(), RouteError> {
    for b in seg.bytes() {
        match b {
            b':' => return Err(RouteError::Invalid("':' may only start a segment")),
            b'*' => return Err(RouteError::Invalid("'*' may only be a whole segment")),
            b'?' | b'#' | 0..=b' ' | 0x7f => {
                return Err(RouteError::Invalid(
                    "'?', '#', spaces and control characters never occur in a request path",
                ))
            }
            _ => {}
        }
    }
    Ok(())
}

/// An uppercase token (RFC 9110 `tchar`s without lowercase letters).
fn check_method(method: &str) -> Result<(), RouteError> {
    let tchar =
        |b: u8| b.is_ascii_uppercase() || b.is_ascii_digit() || b"!#$%&'*+-.^_`|~".contains(&b);
    if method.is_empty() || !method.bytes().all(tchar) {
        return Err(RouteError::InvalidMethod);
    }
    Ok(())
}

impl<T> Router<T> {
    /// An empty table.
    pub fn new() -> Self {
        Router {
            root: Node::default(),
            routes: Vec::new(),
        }
    }

    /// Adds a route. `method` is an uppercase token such as `Some("GET")`, or
    /// `None` for every method. Nothing changes when this fails.
    pub fn insert(
        &mut self,
        method: Option<&str>,
        pattern: &str,
        value: T,
    ) -> Result<(), RouteError> {
        if let Some(method) = method {
            check_method(method)?;
        }
        let Parsed { pieces, names } = parse(pattern)?;
        let id = RouteId::try_from(self.routes.len()).map_err(|_| RouteError::TooManyRoutes)?;
        // A duplicate's shape already exists, so walking to it creates and
        // splits nothing: the tree is unchanged when `add` refuses.
        let mut node = &mut self.root;
        let mut wildcard = false;
        for piece in &pieces {
            match piece {
                Piece::Static(s) => node = node.static_path(s),
                Piece::Param => node = node.param.get_or_insert_with(Box::default),
                Piece::Wildcard => wildcard = true, // always the last piece
            }
        }
        let shape = if wildcard {
            node.wildcard.get_or_insert_with(Box::default)
        } else {
            node.shape.get_or_insert_with(Box::default)
        };
        shape.add(method, id)?;
        self.routes.push(Route {
            method: method.map(Into::into),
            pattern: pattern.into(),
            names: names.into(),
            value,
        });
        Ok(())
    }

    /// Matches a request. `path` is the request target's path: no query
    /// string, not percent-decoded. `params` is cleared, then holds the raw
    /// parameter values (slices of `path`) in pattern order when a route is
    /// found; otherwise it is left empty.
    pub fn find<'r, 'p>(
        &'r self,
        method: &str,
        path: &'p str,
        params: &mut Vec<&'p str>,
    ) -> Match<'r, T> {
        params.clear();
        let mut search = Search {
            method: Method::parse(method),
            path,
            params,
            refused: None,
        };
        match search.below(&self.root, 0) {
            Some(id) => {
                let route = &self.routes[id as usize];
                Match::Found {
                    value: &route.value,
                    names: &route.names,
                }
            }
            None => match search.refused {
                Some(shape) => Match::MethodNotAllowed {
                    allow: &shape.allow,
                },
                None => Match::NotFound,
            },
        }
    }

    /// The number of routes.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.routes.len()
    }

    /// Whether no route was inserted.
    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.routes.is_empty()
    }

    /// Every route as `(method, pattern, value)`, in insertion order; `None`
    /// is a route for every method. For diagnostics.
    pub fn routes(&self) -> impl Iterator<Item = (Option<&str>, &str, &T)> {
        self.routes
            .iter()
            .map(|r| (r.method.as_deref(), &*r.pattern, &r.value))
    }
}

impl<T> Default for Router<T> {
    fn default() -> Self {
        Router::new()
    }
}

impl<T: fmt::Debug> fmt::Debug for Router<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.routes()).finish()
    }
}

// The runtime shares one table across its threads.
const _: () = {
    const fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Router<u32>>();
};

/// The state of one lookup: a depth-first walk in priority order.
struct Search<'r, 'p, 'v, 'm> {
    method: Method<'m>,
    path: &'p str,
    /// Holds the values of the current branch: a branch that fails leaves it
    /// as it found it.
    params: &'v mut Vec<&'p str>,
    /// The first shape that accepted the path but not the method.
    refused: Option<&'r Shape>,
}

impl<'r> Search<'r, '_, '_, '_> {
    /// Matches `node`'s prefix at `at`, then what follows it.
    fn node(&mut self, node: &'r Node, at: usize) -> Option<RouteId> {
        let end = at + node.prefix.len();
        if self.path.as_bytes().get(at..end)? != &*node.prefix {
            return None;
        }
        self.below(node, end)
    }

    /// Matches what follows `node`'s prefix, which ends at `at`, in priority
    /// order: static child, parameter, wildcard.
    ///
    /// Slicing `path` cannot panic: a parameter or wildcard always follows a
    /// `/` matched byte for byte, and a parameter ends at `/` or at the end.
    fn below(&mut self, node: &'r Node, at: usize) -> Option<RouteId> {
        let bytes = self.path.as_bytes();
        if let Some(&next) = bytes.get(at) {
            if let Some(i) = node.indices.iter().position(|&b| b == next) {
                if let Some(id) = self.node(&node.children[i], at) {
                    return Some(id);
                }
            }
            if let Some(param) = &node.param {
                let end = bytes[at..]
                    .iter()
                    .position(|&b| b == b'/')
                    .map_or(bytes.len(), |n| at + n);
                if end > at {
                    self.params.push(&self.path[at..end]);
                    if let Some(id) = self.below(param, end) {
                        return Some(id);
                    }
                    self.params.pop();
                }
            }
        } else if let Some(shape) = &node.shape {
            if let Some(id) = self.accept(shape) {
                return Some(id);
            }
        }
        if let Some(shape) = &node.wildcard {
            if let Some(id) = self.accept(shape) {
                self.params.push(&self.path[at..]);
                return Some(id);
            }
        }
        None
    }

    /// The route of a shape that matched the path, or `None` (noting the
    /// shape for the 405 when it is the first to refuse the method).
    fn accept(&mut self, shape: &'r Shape) -> Option<RouteId> {
        let id = shape.resolve(self.method);
        if id.is_none() && self.refused.is_none() {
            self.refused = Some(shape);
        }
        id
    }
}

#[cfg(test)]
mod tests;
