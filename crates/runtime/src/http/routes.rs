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
use crate::config::ServerConfig;

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
        let mut router = Router::new();
        let invalid = |pattern: &str, error| InvalidRoute {
            pattern: pattern.to_owned(),
            error,
        };
        for (i, route) in config.http_routes.iter().enumerate() {
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
        for (i, route) in config.static_routes.iter().enumerate() {
            let index =
                u16::try_from(i).map_err(|_| invalid(&route.path, RouteError::TooManyRoutes))?;
            router
                .insert(Some("GET"), &route.path, Target::Fixed(index))
                .map_err(|e| invalid(&route.path, e))?;
        }
        let max_body_bytes = config
            .http_routes
            .iter()
            .map(|route| route.max_body_bytes.unwrap_or(config.http.max_body_bytes))
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
