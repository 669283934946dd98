//! Serves arbitrary bytes as pipelined HTTP/1.1 requests with bodies, whole
//! and cut into pieces; every run must agree. Logic and input layout:
//! `switchboard_proto::fuzzing::http1_request`.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| switchboard_proto::fuzzing::http1_request(data));
