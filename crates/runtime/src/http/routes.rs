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
use crate::config::{HttpConfig, HttpRouteConfig, ServerConfig, StaticDirConfig};

/// What a route leads to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Target {
    /// `config.http_routes[i]`: JavaScript's handlers.
    Handler(u16),
    /// `config.static_routes[i]`: a fixed response.
    Fixed(u16),
    /// `config.static_dirs[i]`: files served natively.
    Files(u16),
    /// `config.metrics_path`: the counters for Prometheus.
    Metrics,
    /// `config.routes[i]`'s SockJS endpoints, answered natively.
    SockJs(u16),
}

/// The outcome of matching a request.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Routed<'r> {
    /// JavaScript's route `route`; its body may have `max_body_bytes`.
    Handler { route: u16, max_body_bytes: u64 },
    /// `config.static_routes[i]`.
    Fixed(usize),
    /// `config.static_dirs[i]`; the parameter is the path under the
    /// prefix (none for the prefix itself).
    Files(usize),
    /// The metrics endpoint (`config.metrics_path`).
    Metrics,
    /// A SockJS service's endpoint: `config.routes[i]` (its `sockjs`).
    SockJs(usize),
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
    /// The same table without the directories that fall through
    /// (`fallthrough`): where a request goes on when its file is missing.
    /// Built only when some directory falls through.
    past_files: Option<Router<Target>>,
    /// Body limits by handler route (the config's default filled in).
    max_body_bytes: Vec<u64>,
}

impl Routes {
    pub(crate) fn new(config: &ServerConfig) -> Result<Self, InvalidRoute> {
        let fixed: Vec<&str> = config
            .static_routes
            .iter()
            .map(|route| route.path.as_str())
            .collect();
        let mut routes = Self::build(
            &config.http_routes,
            fixed.iter().copied(),
            config.http.max_body_bytes,
        )?;
        insert_dirs(&mut routes.router, &config.static_dirs, true)?;
        insert_metrics(&mut routes.router, config)?;
        insert_sockjs(&mut routes.router, config)?;
        if config.static_dirs.iter().any(|dir| dir.fallthrough) {
            let mut past = Self::build(
                &config.http_routes,
                fixed.iter().copied(),
                config.http.max_body_bytes,
            )?;
            insert_dirs(&mut past.router, &config.static_dirs, false)?;
            insert_metrics(&mut past.router, config)?;
            insert_sockjs(&mut past.router, config)?;
            routes.past_files = Some(past.router);
        }
        Ok(routes)
    }

    /// JavaScript's routes (numbered in order), then the fixed responses
    /// (numbered in order too), in one tree.
    fn build<'a>(
        http_routes: &[HttpRouteConfig],
        fixed_paths: impl IntoIterator<Item = &'a str>,
        default_max_body_bytes: u64,
    ) -> Result<Self, InvalidRoute> {
        let mut router = Router::new();
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
            past_files: None,
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
        self.find_in(&self.router, method, path, params)
    }

    /// Match a request whose file was missing in a directory that falls
    /// through: the routes that directory hid (never a directory that
    /// falls through, so this does not loop).
    pub(crate) fn find_past_files<'r, 'p>(
        &'r self,
        method: Method,
        path: &'p str,
        params: &mut Vec<&'p str>,
    ) -> Routed<'r> {
        match &self.past_files {
            Some(router) => self.find_in(router, method, path, params),
            None => Routed::NotFound,
        }
    }

    fn find_in<'r, 'p>(
        &'r self,
        router: &'r Router<Target>,
        method: Method,
        path: &'p str,
        params: &mut Vec<&'p str>,
    ) -> Routed<'r> {
        match router.find(method.as_str(), path, params) {
            Match::Found { value, .. } => match *value {
                Target::Handler(route) => Routed::Handler {
                    route,
                    max_body_bytes: self.max_body_bytes[route as usize],
                },
                Target::Fixed(index) => Routed::Fixed(index as usize),
                Target::Files(index) => Routed::Files(index as usize),
                Target::Metrics => Routed::Metrics,
                Target::SockJs(route) => Routed::SockJs(route as usize),
            },
            Match::MethodNotAllowed { allow } => Routed::MethodNotAllowed { allow },
            Match::NotFound => Routed::NotFound,
        }
    }
}

fn invalid(pattern: &str, error: RouteError) -> InvalidRoute {
    InvalidRoute {
        pattern: pattern.to_owned(),
        error,
    }
}

/// The directories' routes, after the others (numbered in order): GET (and
/// so HEAD) on `<prefix>/*`, and on `<prefix>` itself, which redirects to
/// the slash form; only `/*` for the prefix `/`. Without `with_fallthrough`
/// the directories that fall through are left out.
fn insert_dirs(
    router: &mut Router<Target>,
    dirs: &[StaticDirConfig],
    with_fallthrough: bool,
) -> Result<(), InvalidRoute> {
    for (i, dir) in dirs.iter().enumerate() {
        if dir.fallthrough && !with_fallthrough {
            continue;
        }
        let index =
            u16::try_from(i).map_err(|_| invalid(&dir.prefix, RouteError::TooManyRoutes))?;
        let prefix = dir.prefix.strip_suffix('/').unwrap_or(&dir.prefix);
        let files = format!("{prefix}/*");
        router
            .insert(Some("GET"), &files, Target::Files(index))
            .map_err(|e| invalid(&files, e))?;
        if !prefix.is_empty() {
            router
                .insert(Some("GET"), prefix, Target::Files(index))
                .map_err(|e| invalid(prefix, e))?;
        }
    }
    Ok(())
}

/// The metrics endpoint, GET (and so HEAD) on its path; a route of the
/// app's with the same method and path is refused, as two routes are.
fn insert_metrics(router: &mut Router<Target>, config: &ServerConfig) -> Result<(), InvalidRoute> {
    if let Some(path) = &config.metrics_path {
        router
            .insert(Some("GET"), path, Target::Metrics)
            .map_err(|e| invalid(path, e))?;
    }
    Ok(())
}

/// Every SockJS service's endpoints, all methods (the service answers 405
/// itself, with the protocol's rules): its prefix (the greeting) and
/// everything under it. Its WebSocket endpoints are upgrades, which never
/// reach this table.
fn insert_sockjs(router: &mut Router<Target>, config: &ServerConfig) -> Result<(), InvalidRoute> {
    for (i, route) in config.routes.iter().enumerate() {
        let Some(sockjs) = &route.sockjs else {
            continue;
        };
        let index =
            u16::try_from(i).map_err(|_| invalid(&sockjs.prefix, RouteError::TooManyRoutes))?;
        let under = format!("{}/*", sockjs.prefix);
        router
            .insert(None, &under, Target::SockJs(index))
            .map_err(|e| invalid(&under, e))?;
        if !sockjs.prefix.is_empty() {
            router
                .insert(None, &sockjs.prefix, Target::SockJs(index))
                .map_err(|e| invalid(&sockjs.prefix, e))?;
        }
    }
    Ok(())
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
            // A table outside a server has no directories, no metrics and
            // no SockJS services.
            Routed::Files(_) | Routed::Metrics | Routed::SockJs(_) | Routed::NotFound => {
                RouteMatch::NotFound
            }
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
    fn directories_serve_their_prefix_and_fall_through_when_asked() {
        use crate::config::StaticDirConfig;
        let mut fallthrough = StaticDirConfig::new("/assets", "/srv/assets");
        fallthrough.fallthrough = true;
        let config = ServerConfig {
            http_routes: vec![route(None, "/assets/*"), route(Some("GET"), "/static/api")],
            static_dirs: vec![
                StaticDirConfig::new("/static", "/srv/static"),
                fallthrough,
                StaticDirConfig::new("/", "/srv/site"),
            ],
            ..ServerConfig::default()
        };
        let routes = Routes::new(&config).unwrap();
        let mut params = Vec::new();
        let mut find = |method, path| {
            let routed = routes.find(method, path, &mut params);
            (format!("{routed:?}"), params.clone())
        };
        assert_eq!(
            find(Method::Get, "/static/a/b.css"),
            ("Files(0)".into(), vec!["a/b.css"])
        );
        assert_eq!(
            find(Method::Head, "/static/"),
            ("Files(0)".into(), vec![""])
        );
        assert_eq!(find(Method::Get, "/static"), ("Files(0)".into(), vec![]));
        assert_eq!(
            find(Method::Get, "/static/api").0,
            "Handler { route: 1, max_body_bytes: 1048576 }",
            "a route of JavaScript's is more specific"
        );
        assert_eq!(
            find(Method::Post, "/static/x").0,
            "MethodNotAllowed { allow: \"GET, HEAD\" }"
        );
        assert_eq!(
            find(Method::Get, "/assets/x.js").0,
            "Files(1)",
            "GET: the directory"
        );
        assert_eq!(find(Method::Get, "/").0, "Files(2)");
        assert_eq!(find(Method::Get, "/other/page.html").0, "Files(2)");
        let mut past = |path| {
            format!(
                "{:?}",
                routes.find_past_files(Method::Get, path, &mut params)
            )
        };
        assert_eq!(
            past("/assets/x.js"),
            "Handler { route: 0, max_body_bytes: 1048576 }",
            "past the directory that falls through: the route it hid"
        );
        assert_eq!(past("/static/a.css"), "Files(0)", "others stay");
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
