//! Negotiates permessage-deflate from arbitrary header values and round-trips
//! a message with the result. Logic: `switchboard_proto::fuzzing::deflate_negotiate`.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| switchboard_proto::fuzzing::deflate_negotiate(data));
