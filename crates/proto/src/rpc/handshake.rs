//! The server's half of the handshake (§2, §4): from a client's HELLO and
//! our configuration to the WELCOME we answer with.
//!
//! The connect hook (which may refuse the client, or return data for the
//! WELCOME) runs in the runtime between [`accept_hello`] and sending; this
//! module only negotiates.

use super::error::ProtocolError;
use super::frame::{check_settings, Frame, Hello, Settings, Welcome, ALL_FEATURES};
use super::uuid::seed_from_random;
use super::{
    DEFAULT_INITIAL_WINDOW, DEFAULT_MAX_CONCURRENT_CALLS, DEFAULT_MAX_FRAME_SIZE, MIN_FRAME_SIZE,
};

/// The codec every implementation speaks (§4): payloads are passed through
/// as bytes.
pub const RAW_CODEC: &str = "raw";

/// Our side of the negotiation: the limits that bind the client, and what we
/// speak.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerSettings {
    /// Largest frame body we accept. Raised to 1024 if below.
    pub max_frame_size: u32,
    /// Credit we grant each stream we receive. Raised to 1024 if below.
    pub initial_window: u32,
    /// Calls from the client we run at once; 0 = we accept none.
    pub max_concurrent_calls: u32,
    /// The heartbeat interval of the connection; 0 = off.
    pub heartbeat_ms: u32,
    /// Feature bits we support; undefined bits are ignored.
    pub features: u32,
    /// Codec names we speak besides `raw`, which is always spoken. Their
    /// order does not matter: the client's preference decides (§4).
    pub codecs: Vec<String>,
}

impl Default for ServerSettings {
    fn default() -> Self {
        ServerSettings {
            max_frame_size: DEFAULT_MAX_FRAME_SIZE,
            initial_window: DEFAULT_INITIAL_WINDOW,
            max_concurrent_calls: DEFAULT_MAX_CONCURRENT_CALLS,
            // 30 s: finds a dead peer within a minute while costing an idle
            // connection a 3-byte frame twice a minute at most.
            heartbeat_ms: 30_000,
            features: ALL_FEATURES,
            codecs: vec!["json".to_owned()],
        }
    }
}

/// A WELCOME that owns its codec name and data, as [`accept_hello`] builds
/// it; [`OwnedWelcome::frame`] borrows it as a [`Frame`] to encode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnedWelcome {
    /// Our seed and limits, with the heartbeat and features in effect.
    pub settings: Settings,
    /// The codec chosen.
    pub codec: String,
    /// Data from the connect hook; empty until the runtime sets it.
    pub data: Vec<u8>,
}

impl OwnedWelcome {
    /// The WELCOME frame to send.
    pub fn frame(&self) -> Frame<'_> {
        Frame::Welcome(Welcome {
            settings: self.settings,
            codec: &self.codec,
            data: &self.data,
        })
    }
}

/// Negotiates the connection from the client's `hello`:
///
/// - codec: the first in the client's list that we speak (`raw` always
///   counts), else `ERR_PROTOCOL_CODEC`;
/// - features: the bits both sides set;
/// - heartbeat: ours, always. The server decides (it pays for every
///   connection's timers), so the client's wish is advisory and a server
///   with heartbeats off (0) keeps them off whatever the client asks;
/// - limits: ours, raised to the 1024-byte minimum, so the WELCOME is valid
///   whatever the configuration;
/// - seed: `seed` (16 random bytes the runtime drew) with the v4 marks set.
///
/// The HELLO's own fields are checked again (`ERR_PROTOCOL_HANDSHAKE`), for
/// a `Hello` that did not come from [`super::decode`].
pub fn accept_hello(
    hello: &Hello<'_>,
    ours: &ServerSettings,
    seed: [u8; 16],
) -> Result<OwnedWelcome, ProtocolError> {
    check_settings(&hello.settings)?;
    let speaks = |name: &str| name == RAW_CODEC || ours.codecs.iter().any(|c| c == name);
    let codec = hello
        .codecs
        .iter()
        .find(|name| speaks(name))
        .ok_or(ProtocolError::Codec)?;
    let settings = Settings {
        seed: seed_from_random(seed),
        max_frame_size: ours.max_frame_size.max(MIN_FRAME_SIZE),
        initial_window: ours.initial_window.max(MIN_FRAME_SIZE),
        max_concurrent_calls: ours.max_concurrent_calls,
        heartbeat_ms: ours.heartbeat_ms,
        features: ours.features & hello.settings.features & ALL_FEATURES,
    };
    Ok(OwnedWelcome {
        settings,
        codec: (*codec).to_owned(),
        data: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rpc::{decode, encode, uuid::is_v4, FEATURE_CANCEL, FEATURE_FILES};

    fn hello(codecs: Vec<&str>, features: u32, heartbeat_ms: u32) -> Hello<'_> {
        Hello {
            settings: Settings {
                seed: seed_from_random([1; 16]),
                max_frame_size: 4096,
                initial_window: 4096,
                max_concurrent_calls: 10,
                heartbeat_ms,
                features,
            },
            codecs,
            data: b"token",
        }
    }

    #[test]
    fn the_clients_preference_decides_the_codec() {
        let ours = ServerSettings {
            codecs: vec!["json".into(), "msgpack".into()],
            ..ServerSettings::default()
        };
        let pick = |codecs| accept_hello(&hello(codecs, 0, 0), &ours, [0; 16]).map(|w| w.codec);
        assert_eq!(pick(vec!["cbor", "msgpack", "json"]), Ok("msgpack".into()));
        assert_eq!(
            pick(vec!["cbor", "raw"]),
            Ok("raw".into()),
            "raw is always spoken"
        );
        assert_eq!(pick(vec!["cbor"]), Err(ProtocolError::Codec));
        assert_eq!(pick(vec![]), Err(ProtocolError::Codec));
        assert_eq!(
            pick(vec!["JSON"]),
            Err(ProtocolError::Codec),
            "names are exact"
        );
    }

    #[test]
    fn features_heartbeat_limits_and_seed() {
        let ours = ServerSettings {
            max_frame_size: 10,
            initial_window: 2048,
            heartbeat_ms: 0,
            features: FEATURE_FILES | FEATURE_CANCEL | 0x100,
            ..ServerSettings::default()
        };
        let w = accept_hello(
            &hello(vec!["raw"], ALL_FEATURES & !FEATURE_CANCEL, 5000),
            &ours,
            [0xff; 16],
        )
        .unwrap();
        assert_eq!(w.settings.features, FEATURE_FILES);
        assert_eq!(w.settings.heartbeat_ms, 0, "server decides, even off");
        assert_eq!(w.settings.max_frame_size, 1024);
        assert_eq!(w.settings.initial_window, 2048);
        assert!(is_v4(&w.settings.seed));
        // The WELCOME is valid and survives the wire.
        let frame = w.frame();
        assert_eq!(frame.validate(), Ok(()));
        let mut out = Vec::new();
        encode(&frame, &mut out);
        assert_eq!(decode(&out, 1 << 20).unwrap().unwrap().0, frame);

        let with = ServerSettings::default();
        let w = accept_hello(&hello(vec!["raw"], ALL_FEATURES, 0), &with, [0; 16]).unwrap();
        assert_eq!(w.settings.heartbeat_ms, 30_000);
        assert_eq!(w.settings.features, ALL_FEATURES);
    }

    #[test]
    fn an_invalid_hello_is_refused() {
        let mut bad = hello(vec!["raw"], 0, 0);
        bad.settings.seed = [0; 16];
        assert_eq!(
            accept_hello(&bad, &ServerSettings::default(), [0; 16])
                .unwrap_err()
                .code(),
            "ERR_PROTOCOL_HANDSHAKE"
        );
    }
}
