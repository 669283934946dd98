//! The log of channel transitions a broker mirrors: first member in,
//! last member out, whichever operation caused it.

use std::sync::Arc;

use bytes::Bytes;
use switchboard_pubsub::{ChannelChange, Registry};

fn created(name: &str) -> ChannelChange {
    ChannelChange::Created(Arc::from(name))
}

fn removed(name: &str) -> ChannelChange {
    ChannelChange::Removed(Arc::from(name))
}

#[test]
fn nothing_is_logged_unless_asked() {
    let mut reg = Registry::new();
    reg.subscribe(1, "a", 1);
    reg.unsubscribe(1, "a");
    assert!(reg.take_channel_changes().is_empty());
}

#[test]
fn only_the_first_join_and_the_last_leave_are_logged() {
    let mut reg = Registry::new();
    reg.log_channel_changes(true);
    reg.subscribe(1, "a", 1);
    reg.subscribe(2, "a", 1);
    reg.subscribe(1, "a", 2); // a count change: no transition
    assert_eq!(reg.take_channel_changes(), [created("a")]);
    reg.subscribe(1, "a", -3);
    assert!(reg.take_channel_changes().is_empty(), "2 is still a member");
    reg.unsubscribe(2, "a");
    reg.subscribe(3, "a", 1);
    reg.subscribe(3, "a", -1);
    assert_eq!(
        reg.take_channel_changes(),
        [removed("a"), created("a"), removed("a")]
    );
    assert!(reg.take_channel_changes().is_empty());
}

#[test]
fn closing_connections_and_deleting_virtual_sockets_log_removals() {
    let mut reg = Registry::new();
    reg.log_channel_changes(true);
    reg.subscribe(1, "a", 1);
    reg.create_virtual_socket(10, 1, Some(Bytes::from_static(b"t:")))
        .unwrap();
    reg.subscribe(10, "b", 1);
    reg.copy_subscriptions("b", "c");
    assert_eq!(
        reg.take_channel_changes(),
        [created("a"), created("b"), created("c")]
    );
    reg.remove_subscriber(1);
    let mut changes = reg.take_channel_changes();
    changes.sort_by(|x, y| format!("{x:?}").cmp(&format!("{y:?}")));
    assert_eq!(changes, [removed("a"), removed("b"), removed("c")]);
    reg.check_invariants().unwrap();
}

#[test]
fn turning_the_log_off_drops_it() {
    let mut reg = Registry::new();
    reg.log_channel_changes(true);
    reg.subscribe(1, "a", 1);
    reg.log_channel_changes(false);
    assert!(reg.take_channel_changes().is_empty());
}
