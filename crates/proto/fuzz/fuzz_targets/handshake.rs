//! Parses and validates arbitrary bytes as an upgrade request and builds the
//! response. Logic: `switchboard_proto::fuzzing::handshake`.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| switchboard_proto::fuzzing::handshake(data));
