//! HTTP sessions kept in the broker's Redis (docs/http.md, "Sessions":
//! the Redis store): the four operations of `app.sessionStore()`, each a
//! promise settled from the broker's thread like the history questions
//! (`history.rs`). The TypeScript store checks ids, TTLs and sizes with
//! clear messages first; the checks here only keep the core safe.

use std::time::Duration;

use napi::bindgen_prelude::Object;
use napi::{Env, Result};
use napi_derive::napi;
use switchboard_runtime::session_store::{SessionCommand, SessionOp};

use crate::history::settle;
use crate::{coded, ServerHandle};

/// The longest session id taken, in bytes (the session middleware makes
/// 32 characters); as `MAX_ID_LENGTH` in packages/server/src/http/redis-store.ts.
const MAX_ID_BYTES: usize = 256;
/// Milliseconds exact in a JavaScript number (2^53 - 1): a TTL beyond it
/// was not computed on purpose.
const MAX_TTL_MS: f64 = 9_007_199_254_740_991.0;

fn text(value: Option<Vec<u8>>) -> Option<String> {
    // The value is the JSON text a store wrote; bytes that are not UTF-8
    // were written by something else and read as no JSON at all.
    value.map(|bytes| String::from_utf8(bytes).unwrap_or_default())
}

fn ttl_of(ttl_ms: f64) -> Result<Duration> {
    if !(1.0..=MAX_TTL_MS).contains(&ttl_ms) {
        return Err(coded(
            "ERR_INVALID_OPTION",
            format!("a session's ttl must be a number of ms in 1..2^53, got {ttl_ms}"),
        ));
    }
    Ok(Duration::from_millis(ttl_ms.ceil() as u64))
}

impl ServerHandle {
    fn session_op<'env>(
        &self,
        env: &'env Env,
        what: &'static str,
        id: String,
        key: String,
        op: SessionOp,
    ) -> Result<Object<'env>> {
        if id.is_empty() || id.len() > MAX_ID_BYTES {
            return Err(coded(
                "ERR_INVALID_OPTION",
                format!("a session id must be 1 to {MAX_ID_BYTES} bytes"),
            ));
        }
        if let Some(refusal) = self.server.sessions_refusal() {
            return Err(coded("ERR_INVALID_OPTION", refusal));
        }
        let (reply, promise) = settle(env, what, text)?;
        let key = key.into_bytes();
        self.server.session(SessionCommand { id, key, op }, reply);
        Ok(promise)
    }
}

#[napi]
impl ServerHandle {
    /// Resolves with the session's JSON text (`GET key`), null when unknown
    /// or expired. Rejects with `ERR_BROKER_UNAVAILABLE` when Redis does not
    /// answer within `connectTimeout`.
    #[napi(ts_return_type = "Promise<string | null>")]
    pub fn session_get<'env>(
        &self,
        env: &'env Env,
        id: String,
        key: String,
    ) -> Result<Object<'env>> {
        self.session_op(env, "session get", id, key, SessionOp::Get)
    }

    /// Stores the session's JSON text for `ttlMs` (`SET key value PX ttl`).
    #[napi(ts_return_type = "Promise<null>")]
    pub fn session_set<'env>(
        &self,
        env: &'env Env,
        id: String,
        key: String,
        value: String,
        ttl_ms: f64,
    ) -> Result<Object<'env>> {
        let ttl = ttl_of(ttl_ms)?;
        let op = SessionOp::Set {
            value: value.into_bytes(),
            ttl,
        };
        self.session_op(env, "session set", id, key, op)
    }

    /// Extends a live session to `ttlMs` from now (`PEXPIRE`); nothing for
    /// an unknown one.
    #[napi(ts_return_type = "Promise<null>")]
    pub fn session_touch<'env>(
        &self,
        env: &'env Env,
        id: String,
        key: String,
        ttl_ms: f64,
    ) -> Result<Object<'env>> {
        let ttl = ttl_of(ttl_ms)?;
        self.session_op(env, "session touch", id, key, SessionOp::Touch { ttl })
    }

    /// Forgets the session (`DEL key`).
    #[napi(ts_return_type = "Promise<null>")]
    pub fn session_destroy<'env>(
        &self,
        env: &'env Env,
        id: String,
        key: String,
    ) -> Result<Object<'env>> {
        self.session_op(env, "session destroy", id, key, SessionOp::Destroy)
    }
}
