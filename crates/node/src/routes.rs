//! The native route table as a JavaScript object, for `inject()`: a
//! request that never touched a socket is routed by the same tree, with the
//! same priorities and `Allow` lists, as a real one. The table is
//! `switchboard_runtime::http::RouteTable`; this file converts types.

use napi::Result;
use napi_derive::napi;
use switchboard_runtime::http::{self, RouteMatch};
use switchboard_runtime::HttpRouteConfig;

use crate::coded;
use crate::options::HttpRouteOptions;

/// What `RouteTable.find` answers: `{ route, params }` for a route of the
/// list, `{ fixed }` for a fixed response, `{ status: 404 }`,
/// `{ status: 405, allow }`, or `{ status: 501 }` for a method the core does
/// not serve.
#[napi(object)]
pub struct RouteFound {
    /// The route's index in the list given to `create`.
    pub route: Option<u32>,
    /// Its raw (percent-encoded) parameter values, in pattern order.
    pub params: Option<Vec<String>>,
    /// The fixed path's index in the list given to `create`.
    pub fixed: Option<u32>,
    pub status: Option<u32>,
    /// The `Allow` header of a 405.
    pub allow: Option<String>,
}

impl RouteFound {
    fn status(status: u32, allow: Option<String>) -> Self {
        Self {
            route: None,
            params: None,
            fixed: None,
            status: Some(status),
            allow,
        }
    }
}

/// A route table built from the routes a server would be created with.
#[napi]
pub struct RouteTable {
    table: http::RouteTable,
}

#[napi]
impl RouteTable {
    /// The table of `routes` (numbered in order; their body limits are the
    /// caller's to apply) and of fixed GET responses at `fixedPaths`.
    /// Refuses what a server would refuse at `listen`
    /// (`ERR_INVALID_OPTION`).
    #[napi(factory)]
    pub fn create(routes: Vec<HttpRouteOptions>, fixed_paths: Option<Vec<String>>) -> Result<Self> {
        let routes: Vec<HttpRouteConfig> = routes
            .into_iter()
            .map(|r| HttpRouteConfig {
                method: r.method,
                pattern: r.pattern,
                max_body_bytes: None,
            })
            .collect();
        let fixed_paths = fixed_paths.unwrap_or_default();
        let fixed: Vec<&str> = fixed_paths.iter().map(String::as_str).collect();
        let table =
            http::RouteTable::new(&routes, &fixed).map_err(|e| coded("ERR_INVALID_OPTION", e))?;
        Ok(Self { table })
    }

    /// Match a request: `method` as sent (case-sensitive), `path` without
    /// the query, as sent (percent-encoded).
    #[napi]
    pub fn find(&self, method: String, path: String) -> RouteFound {
        match self.table.find(&method, &path) {
            RouteMatch::Handler { route, params } => RouteFound {
                route: Some(route.into()),
                params: Some(params.into_iter().map(str::to_owned).collect()),
                fixed: None,
                status: None,
                allow: None,
            },
            RouteMatch::Fixed(index) => RouteFound {
                route: None,
                params: None,
                // Fewer than 2^16 fixed routes (the table numbers them in u16).
                fixed: Some(index as u32),
                status: None,
                allow: None,
            },
            RouteMatch::NotFound => RouteFound::status(404, None),
            RouteMatch::MethodNotAllowed { allow } => RouteFound::status(405, Some(allow.into())),
            RouteMatch::NotImplemented => RouteFound::status(501, None),
        }
    }
}
