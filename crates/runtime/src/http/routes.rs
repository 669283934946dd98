//! The HTTP route table: every route JavaScript registered, and the fixed
//! responses, in one radix tree matched on the I/O thread, so a request
//! reaches JavaScript with its route and parameters decided, and a 404 or
//! 405 never reaches it at all.
//!
//! WebSocket routes keep their own table (`RouteConfig::matches`): a path
//! may serve a page to a plain GET and a WebSocket to an upgrade, as most
//! applications want, and an upgrade never competes with an HTTP route.

use std::fmt;

use switchboard_proto::http1::Method;

use super::router::{Match, RouteError, Router};
use crate::config::{HttpConfig, HttpRouteConfig, ServerConfig};

/// What a route leads to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Target {
    /// `config.http_routes[i]`: JavaScript's handlers.
    Handler(u16),
    /// `config.static_routes[i]`: a fixed response.
    Fixed(u16),
}

/// The outcome of matching a request.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Routed<'r> {
    /// JavaScript's route `route`; its body may have `max_body_bytes`.
    Handler { route: u16, max_body_bytes: u64 },
    /// `config.static_routes[i]`.
    Fixed(usize),
    /// No route for the path: 404 (426 when a WebSocket route has it).
    NotFound,
    /// Routes for the path, none for the method: 405 with `Allow`.
    MethodNotAllowed { allow: &'r str },
}

/// A route JavaScript registered cannot be put in the table.
#[derive(Debug)]
pub struct InvalidRoute {
    pub pattern: String,
    pub error: RouteError,
}

impl fmt::Display for InvalidRoute {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "route {}: {}", self.pattern, self.error)
    }
}

impl std::error::Error for InvalidRoute {}

pub(crate) struct Routes {
    router: Router<Target>,
    /// Body limits by handler route (the config's default filled in).
    max_body_bytes: Vec<u64>,
}

impl Routes {
    pub(crate) fn new(config: &ServerConfig) -> Result<Self, InvalidRoute> {
        let fixed = config.static_routes.iter().map(|route| route.path.as_str());
        Self::build(&config.http_routes, fixed, config.http.max_body_bytes)
    }

    /// JavaScript's routes (numbered in order), then the fixed responses
    /// (numbered in order too), in one tree.
    fn build<'a>(
        http_routes: &[HttpRouteConfig],
        fixed_paths: impl IntoIterator<Item = &'a str>,
        default_max_body_bytes: u64,
    ) -> Result<Self, InvalidRoute> {
        let mut router = Router::new();
        let invalid = |pattern: &str, error| InvalidRoute {
            pattern: pattern.to_owned(),
            error,
        };
        for (i, route) in http_routes.iter().enumerate() {
            let index =
                u16::try_from(i).map_err(|_| invalid(&route.pattern, RouteError::TooManyRoutes))?;
            router
                .insert(
                    route.method.as_deref(),
                    &route.pattern,
                    Target::Handler(index),
                )
                .map_err(|e| invalid(&route.pattern, e))?;
        }
        for (i, path) in fixed_paths.into_iter().enumerate() {
            let index = u16::try_from(i).map_err(|_| invalid(path, RouteError::TooManyRoutes))?;
            router
                .insert(Some("GET"), path, Target::Fixed(index))
                .map_err(|e| invalid(path, e))?;
        }
        let max_body_bytes = http_routes
            .iter()
            .map(|route| route.max_body_bytes.unwrap_or(default_max_body_bytes))
            .collect();
        Ok(Self {
            router,
            max_body_bytes,
        })
    }

    /// Match a request; `params` gets the raw parameter values.
    pub(crate) fn find<'r, 'p>(
        &'r self,
        method: Method,
        path: &'p str,
        params: &mut Vec<&'p str>,
    ) -> Routed<'r> {
        match self.router.find(method.as_str(), path, params) {
            Match::Found { value, .. } => match *value {
                Target::Handler(route) => Routed::Handler {
                    route,
                    max_body_bytes: self.max_body_bytes[route as usize],
                },
                Target::Fixed(index) => Routed::Fixed(index as usize),
            },
            Match::MethodNotAllowed { allow } => Routed::MethodNotAllowed { allow },
            Match::NotFound => Routed::NotFound,
        }
    }
}

/// The outcome of [`RouteTable::find`].
#[derive(Debug, PartialEq, Eq)]
pub enum RouteMatch<'r, 'p> {
    /// Route `route` of the list the table was built from; `params` are
    /// the raw (percent-encoded) parameter values, in pattern order.
    Handler { route: u16, params: Vec<&'p str> },
    /// Fixed path `index` of the list the table was built from.
    Fixed(usize),
    /// No route for the path: 404.
    NotFound,
    /// Routes for the path, none for the method: 405 with `Allow`.
    MethodNotAllowed { allow: &'r str },
    /// A method the core does not serve (unknown, or CONNECT): 501.
    NotImplemented,
}

/// A route table outside a server, matching exactly as a server's does
/// (same tree, same priorities, same `Allow` lists): what `inject()`
/// routes a request with that never touched a socket, so a test finds the
/// route a real request would find. Pure, as the tree is.
pub struct RouteTable {
    routes: Routes,
}

impl RouteTable {
    /// The table of `routes` (numbered in order) and of the fixed
    /// responses at `fixed_paths` (GET, numbered in order); refused as a
    /// server would refuse them at `listen`.
    pub fn new(routes: &[HttpRouteConfig], fixed_paths: &[&str]) -> Result<Self, InvalidRoute> {
        // Body limits are the caller's to apply: it knows the server's.
        let routes = Routes::build(
            routes,
            fixed_paths.iter().copied(),
            HttpConfig::default().max_body_bytes,
        )?;
        Ok(Self { routes })
    }

    /// Match a request: `method` as sent (case-sensitive), `path` without
    /// the query, not percent-decoded.
    pub fn find<'r, 'p>(&'r self, method: &str, path: &'p str) -> RouteMatch<'r, 'p> {
        let Some(method) = Method::parse(method).filter(|&m| m != Method::Connect) else {
            return RouteMatch::NotImplemented;
        };
        let mut params = Vec::new();
        match self.routes.find(method, path, &mut params) {
            Routed::Handler { route, .. } => RouteMatch::Handler { route, params },
            Routed::Fixed(index) => RouteMatch::Fixed(index),
            Routed::NotFound => RouteMatch::NotFound,
            Routed::MethodNotAllowed { allow } => RouteMatch::MethodNotAllowed { allow },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn route(method: Option<&str>, pattern: &str) -> HttpRouteConfig {
        HttpRouteConfig {
            method: method.map(str::to_owned),
            pattern: pattern.to_owned(),
            max_body_bytes: None,
        }
    }

    #[test]
    fn a_table_matches_as_the_server_does() {
        let table = RouteTable::new(
            &[
                route(Some("GET"), "/a/b"),
                route(Some("POST"), "/a/:x"),
                route(None, "/files/*"),
            ],
            &["/health"],
        )
        .unwrap();
        assert_eq!(
            table.find("POST", "/a/b"),
            RouteMatch::Handler {
                route: 1,
                params: vec!["b"]
            }
        );
        assert_eq!(
            table.find("PUT", "/a/b"),
            RouteMatch::MethodNotAllowed { allow: "GET, HEAD" }
        );
        assert_eq!(
            table.find("HEAD", "/a/b"),
            RouteMatch::Handler {
                route: 0,
                params: vec![]
            }
        );
        assert_eq!(
            table.find("DELETE", "/files/x/y"),
            RouteMatch::Handler {
                route: 2,
                params: vec!["x/y"]
            }
        );
        assert_eq!(table.find("GET", "/health"), RouteMatch::Fixed(0));
        assert_eq!(table.find("GET", "/nothing"), RouteMatch::NotFound);
        assert_eq!(table.find("BREW", "/a/b"), RouteMatch::NotImplemented);
        assert_eq!(table.find("get", "/a/b"), RouteMatch::NotImplemented);
        assert_eq!(table.find("CONNECT", "/a/b"), RouteMatch::NotImplemented);
    }

    #[test]
    fn a_table_refuses_what_a_server_refuses() {
        let error = RouteTable::new(
            &[route(Some("GET"), "/a/:x"), route(Some("GET"), "/a/:y")],
            &[],
        )
        .err()
        .unwrap();
        assert_eq!(error.pattern, "/a/:y");
        assert_eq!(error.error, RouteError::Duplicate);
        assert!(RouteTable::new(&[route(Some("GET"), "a")], &[]).is_err());
    }
}
