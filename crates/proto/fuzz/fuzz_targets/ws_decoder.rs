//! Decodes arbitrary bytes as server and client, with and without deflate,
//! whole and in random pieces; both runs must agree. Logic and input layout:
//! `switchboard_proto::fuzzing::ws_decoder`.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| switchboard_proto::fuzzing::ws_decoder(data));
