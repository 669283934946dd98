//! Presence through the broker (docs/scale-out.md, "Presence"): who is in
//! a channel on every node, asynchronously like the history questions
//! (`history.rs`), and the info a connection shows there.

use napi::bindgen_prelude::Object;
use napi::{Env, Result};
use napi_derive::napi;
use switchboard_runtime::presence::Presence;

use crate::history::settle;
use crate::{id_from_js, id_to_js, ServerHandle};

/// One member of a channel.
#[napi(object)]
pub struct MemberJs {
    pub id: i64,
    /// The info its app gave it: JSON text (`null` when none).
    pub info: String,
}

fn presence_to_js(presence: Presence) -> Vec<MemberJs> {
    presence
        .members
        .into_iter()
        .map(|m| MemberJs {
            id: id_to_js(m.id),
            info: String::from_utf8_lossy(&m.info).into_owned(),
        })
        .collect()
}

#[napi]
impl ServerHandle {
    /// Resolves with the members of `channel` on every node (the expired
    /// ones removed first). Rejects with `ERR_PRESENCE_UNAVAILABLE` when
    /// the channel keeps no presence, `ERR_BROKER_UNAVAILABLE` when Redis
    /// does not answer.
    #[napi(ts_return_type = "Promise<Array<MemberJs>>")]
    pub fn presence<'env>(&self, env: &'env Env, channel: String) -> Result<Object<'env>> {
        let (reply, promise) = settle(env, "presence", presence_to_js)?;
        self.server.presence(&channel, reply);
        Ok(promise)
    }

    /// What `subscriber` shows in presence: JSON text. False without a
    /// broker.
    #[napi]
    pub fn set_presence_info(&self, subscriber: i64, info: String) -> bool {
        self.server
            .set_presence_info(id_from_js(subscriber), info.into_bytes())
    }
}
