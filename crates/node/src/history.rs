//! The questions that wait on the broker: a channel's history, and a
//! recovering subscriber's missed publications (docs/scale-out.md,
//! "History and recovery"). The first asynchronous operations of the
//! binding: each returns a promise at once and settles it from the
//! broker's thread through a `JsDeferred` (a threadsafe function back to
//! the calling thread, the main one or a worker), so no JavaScript thread
//! and no libuv pool thread waits on Redis.

use napi::bindgen_prelude::{Buffer, Object};
use napi::{Env, Result};
use napi_derive::napi;
use switchboard_runtime::history::{HistoryPage, QueryError, Recovery, Reply};
use switchboard_runtime::Position;

use crate::{coded, id_from_js, ServerHandle};

/// One publication read back from a history.
#[napi(object)]
pub struct StoredJs {
    pub offset: f64,
    pub data: Buffer,
    pub binary: bool,
}

/// `ServerHandle.history`'s answer.
#[napi(object)]
pub struct HistoryPageJs {
    /// The channel's epoch: 16 hex digits.
    pub epoch: String,
    /// Its last offset (0: nothing published in this epoch).
    pub offset: f64,
    /// The publications continue `since` exactly.
    pub continuous: bool,
    pub publications: Vec<StoredJs>,
}

/// `ServerHandle.recover`'s answer.
#[napi(object)]
pub struct RecoveryJs {
    pub epoch: String,
    pub offset: f64,
    pub recovered: bool,
    pub delivered: u32,
}

/// A position from JavaScript: none without an epoch; an epoch that is not
/// 16 hex digits or an offset that is not a whole number ≥ 0 is refused.
fn position_of(epoch: Option<String>, offset: f64) -> Result<Option<Position>> {
    let Some(epoch) = epoch else {
        return Ok(None);
    };
    let bad = || {
        coded(
            "ERR_INVALID_OPTION",
            format!("bad position {epoch:?}/{offset}"),
        )
    };
    let epoch_value = Position::parse_epoch(&epoch).ok_or_else(bad)?;
    if !(offset >= 0.0 && offset.fract() == 0.0 && offset <= 9_007_199_254_740_991.0) {
        return Err(bad());
    }
    Ok(Some(Position {
        epoch: epoch_value,
        offset: offset as u64,
    }))
}

/// The `Reply` that settles a promise: `Ok` through `to_js` on the
/// JavaScript thread, an error as `Error("<code>: ...")`.
pub(crate) fn settle<'env, T: Send + 'static, J: napi::bindgen_prelude::ToNapiValue + 'static>(
    env: &'env Env,
    what: &'static str,
    to_js: fn(T) -> J,
) -> Result<(Reply<T>, Object<'env>)> {
    let (deferred, promise) = env.create_deferred()?;
    let reply: Reply<T> = Box::new(
        move |answer: std::result::Result<T, QueryError>| match answer {
            Ok(value) => deferred.resolve(move |_env| Ok(to_js(value))),
            Err(error) => {
                let message = match error {
                    QueryError::NoHistory => format!("{what}: the channel keeps no history"),
                    QueryError::NoPresence => format!("{what}: the channel keeps no presence"),
                    QueryError::Unavailable => format!("{what}: the broker did not answer"),
                };
                deferred.reject(coded(error.code(), message));
            }
        },
    );
    Ok((reply, promise))
}

fn page_to_js(page: HistoryPage) -> HistoryPageJs {
    HistoryPageJs {
        epoch: page.top.epoch_hex(),
        offset: page.top.offset as f64,
        continuous: page.continuous,
        publications: page
            .publications
            .into_iter()
            .map(|p| StoredJs {
                offset: p.offset as f64,
                data: p.data.into(),
                binary: p.binary,
            })
            .collect(),
    }
}

fn recovery_to_js(recovery: Recovery) -> RecoveryJs {
    RecoveryJs {
        epoch: recovery.top.epoch_hex(),
        offset: recovery.top.offset as f64,
        recovered: recovery.recovered,
        delivered: recovery.delivered as u32,
    }
}

#[napi]
impl ServerHandle {
    /// Resolves with `channel`'s publications after the position
    /// (`sinceEpoch`, `sinceOffset`), or its newest `limit` without one,
    /// and its position now. Rejects with `ERR_HISTORY_UNAVAILABLE` (no
    /// broker, or no history for the channel) or `ERR_BROKER_UNAVAILABLE`.
    #[napi(ts_return_type = "Promise<HistoryPageJs>")]
    pub fn history<'env>(
        &self,
        env: &'env Env,
        channel: String,
        since_epoch: Option<String>,
        since_offset: f64,
        limit: u32,
    ) -> Result<Object<'env>> {
        let since = position_of(since_epoch, since_offset)?;
        let (reply, promise) = settle(env, "history", page_to_js)?;
        self.server
            .history(&channel, since, limit.max(1) as usize, reply);
        Ok(promise)
    }

    /// `subscriber` was just subscribed to `channel`: queue for it what it
    /// missed after the position, once this node's subscription is in
    /// effect, and resolve with what was done (see `Bridge::recover`).
    #[napi(ts_return_type = "Promise<RecoveryJs>")]
    pub fn recover<'env>(
        &self,
        env: &'env Env,
        subscriber: i64,
        channel: String,
        since_epoch: Option<String>,
        since_offset: f64,
    ) -> Result<Object<'env>> {
        let since = position_of(since_epoch, since_offset)?;
        let (reply, promise) = settle(env, "recover", recovery_to_js)?;
        let subscriber = id_from_js(subscriber);
        self.server
            .recover(subscriber, &channel, since, usize::MAX, reply);
        Ok(promise)
    }
}
