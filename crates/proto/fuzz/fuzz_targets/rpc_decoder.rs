//! Decodes arbitrary bytes as a stream of Switchboard RPC frames; every
//! frame must re-encode to bytes that decode to the same frame. Logic and
//! input layout: `switchboard_proto::fuzzing::rpc_decoder`.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| switchboard_proto::fuzzing::rpc_decoder(data));
