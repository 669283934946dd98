//! Differential fuzzing of the channel registry.
//!
//! The input decodes into a sequence of registry operations (subscribe,
//! bulk subscribe, unsubscribe, copy, virtual-socket create/delete, remove,
//! publish); each is applied to the registry and to a naive model, and after
//! every step all results, the whole observable state and the registry's own
//! invariants are compared. The decoder and model live in
//! `switchboard_pubsub::model`, so `cargo test` runs the same checks on
//! generated inputs without nightly.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    switchboard_pubsub::model::run(data);
});
