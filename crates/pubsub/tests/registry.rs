//! Subscriptions and queries through the public API (src/registry.rs).

use switchboard_pubsub::Registry;

fn sorted<T: Ord>(mut v: Vec<T>) -> Vec<T> {
    v.sort();
    v
}

fn channels_of(reg: &Registry, id: u64) -> Vec<&str> {
    sorted(reg.channels_of(id).collect())
}

#[test]
fn refcount_goes_up_and_down() {
    let mut reg = Registry::new();
    assert!(reg.subscribe(1, "a", 1), "0 -> 1 joins");
    assert!(!reg.subscribe(1, "a", 1), "1 -> 2 only counts");
    assert_eq!(reg.refcount(1, "a"), 2);
    assert!(!reg.subscribe(1, "a", -1), "2 -> 1 still a member");
    assert!(reg.is_subscribed(1, "a"));
    assert!(reg.subscribe(1, "a", -1), "1 -> 0 leaves");
    assert!(!reg.is_subscribed(1, "a"));
    assert_eq!(reg.refcount(1, "a"), 0);
    assert!(!reg.has_subscriptions("a"), "an empty channel is dropped");
    assert_eq!(reg.channel_count(), 0);
    reg.check_invariants().unwrap();
}

#[test]
fn delta_above_one_and_overshooting_removal() {
    let mut reg = Registry::new();
    assert!(reg.subscribe(1, "a", 3));
    assert_eq!(reg.refcount(1, "a"), 3);
    assert!(reg.subscribe(1, "a", -10), "dropping below zero leaves");
    assert!(!reg.is_subscribed(1, "a"));
    // The count does not remember the overshoot: a new subscribe joins.
    assert!(reg.subscribe(1, "a", 1));
    assert_eq!(reg.refcount(1, "a"), 1);
}

#[test]
fn zero_and_negative_deltas_on_non_members_are_no_ops() {
    let mut reg = Registry::new();
    assert!(!reg.subscribe(1, "a", 0));
    assert!(!reg.subscribe(1, "a", -1));
    assert!(!reg.has_subscriptions("a"), "no channel is created");
    assert_eq!(reg.subscriber_total(), 0, "no subscriber entry is created");
    reg.subscribe(1, "a", 2);
    assert!(
        !reg.subscribe(1, "a", 0),
        "zero on a member changes nothing"
    );
    assert_eq!(reg.refcount(1, "a"), 2);
    reg.check_invariants().unwrap();
}

#[test]
fn counts_saturate() {
    let mut reg = Registry::new();
    reg.subscribe(1, "a", i32::MAX);
    reg.subscribe(1, "a", i32::MAX);
    reg.subscribe(1, "a", i32::MAX);
    assert_eq!(reg.refcount(1, "a"), u32::MAX);
    assert!(!reg.subscribe(1, "a", i32::MIN));
    assert!(reg.is_subscribed(1, "a"));
}

#[test]
fn subscribe_many_returns_changed_ids_in_order() {
    let mut reg = Registry::new();
    reg.subscribe(2, "a", 1);
    assert_eq!(reg.subscribe_many(&[3, 2, 1, 3], "a", 1), [3, 1]);
    assert_eq!(reg.refcount(3, "a"), 2, "a repeated id is applied twice");
    assert_eq!(reg.refcount(2, "a"), 2);
    assert_eq!(reg.subscribe_many(&[1, 2, 3, 9], "a", -1), [1]);
    assert_eq!(reg.subscribe_many(&[2, 3], "a", -1), [2, 3]);
    assert!(!reg.has_subscriptions("a"));
    assert_eq!(reg.subscribe_many(&[], "a", 1), Vec::<u64>::new());
    reg.check_invariants().unwrap();
}

#[test]
fn unsubscribe_ignores_the_count() {
    let mut reg = Registry::new();
    reg.subscribe(1, "a", 5);
    reg.subscribe(2, "a", 1);
    assert!(reg.unsubscribe(1, "a"));
    assert!(!reg.unsubscribe(1, "a"), "already gone");
    assert!(!reg.unsubscribe(1, "nope"));
    assert_eq!(reg.subscribers_of("a"), [2]);
    assert!(reg.unsubscribe(2, "a"));
    assert_eq!(reg.channel_count(), 0);
    assert_eq!(reg.subscriber_total(), 0);
    reg.check_invariants().unwrap();
}

#[test]
fn queries_see_both_sides() {
    let mut reg = Registry::new();
    reg.subscribe(1, "a", 1);
    reg.subscribe(1, "b", 1);
    reg.subscribe(2, "a", 1);
    reg.subscribe(3, "", 1); // the empty name is a name like any other
    reg.subscribe(3, "é", 1);
    assert_eq!(reg.subscriber_count("a"), 2);
    assert_eq!(reg.subscriber_count("nope"), 0);
    assert_eq!(sorted(reg.subscribers_of("a").to_vec()), [1, 2]);
    assert!(reg.subscribers_of("nope").is_empty());
    assert_eq!(channels_of(&reg, 1), ["a", "b"]);
    assert_eq!(channels_of(&reg, 3), ["", "é"]);
    assert_eq!(channels_of(&reg, 9), Vec::<&str>::new());
    assert_eq!(reg.channel_count_of(1), 2);
    assert_eq!(reg.channel_count_of(9), 0);
    assert_eq!(sorted(reg.channels().collect()), ["", "a", "b", "é"]);
    assert_eq!(reg.channel_count(), 4);
    assert_eq!(reg.subscription_count(), 5);
    assert_eq!(reg.subscriber_total(), 3);
    assert!(reg.has_subscriptions(""));
    assert!(!reg.is_subscribed(2, "b"));
    reg.check_invariants().unwrap();
}

#[test]
fn copy_subscriptions_adds_only_new_members() {
    let mut reg = Registry::new();
    reg.subscribe_many(&[1, 2, 3], "from", 1);
    reg.subscribe(2, "to", 4);
    let added = sorted(reg.copy_subscriptions("from", "to"));
    assert_eq!(added, [1, 3]);
    assert_eq!(reg.refcount(1, "to"), 1, "new members start at 1");
    assert_eq!(reg.refcount(2, "to"), 4, "existing members are untouched");
    assert!(
        reg.copy_subscriptions("from", "to").is_empty(),
        "idempotent"
    );
    assert_eq!(reg.subscriber_count("from"), 3, "the source is unchanged");
    reg.check_invariants().unwrap();
}

#[test]
fn copy_subscriptions_edge_cases() {
    let mut reg = Registry::new();
    reg.subscribe(1, "a", 2);
    assert!(reg.copy_subscriptions("a", "a").is_empty());
    assert_eq!(reg.refcount(1, "a"), 2);
    assert!(reg.copy_subscriptions("nope", "a").is_empty());
    assert!(!reg.has_subscriptions("nope"), "no empty channel appears");
    assert_eq!(reg.copy_subscriptions("a", "new"), [1]);
    assert!(reg.has_subscriptions("new"));
}

#[test]
fn copy_subscriptions_carries_virtual_sockets() {
    let mut reg = Registry::new();
    reg.create_virtual_socket(10, 1, None).unwrap();
    reg.subscribe(10, "a", 1);
    reg.subscribe(1, "a", 1);
    assert_eq!(sorted(reg.copy_subscriptions("a", "b")), [1, 10]);
    // The copy counts the virtual member, so deleting it keeps `b` exact.
    reg.delete_virtual_socket(10, None).unwrap();
    assert_eq!(reg.subscribers_of("b"), [1]);
    reg.check_invariants().unwrap();
}

#[test]
fn emptying_everything_leaves_no_entries() {
    let mut reg = Registry::new();
    for id in 0..100 {
        for ch in ["a", "b", "c"] {
            reg.subscribe(id, ch, 2);
        }
    }
    assert_eq!(reg.subscription_count(), 300);
    for id in 0..100 {
        reg.unsubscribe(id, "a");
        reg.subscribe(id, "b", -2);
        reg.remove_subscriber(id);
    }
    assert_eq!(reg.channel_count(), 0);
    assert_eq!(reg.subscription_count(), 0);
    assert_eq!(reg.subscriber_total(), 0);
    reg.check_invariants().unwrap();
}

#[test]
fn remove_subscriber_drops_every_membership() {
    let mut reg = Registry::new();
    reg.subscribe(1, "a", 3);
    reg.subscribe(1, "b", 1);
    reg.subscribe(2, "b", 1);
    assert!(reg.remove_subscriber(1).is_empty(), "no virtual sockets");
    assert!(!reg.has_subscriptions("a"));
    assert_eq!(reg.subscribers_of("b"), [2]);
    assert_eq!(reg.channel_count_of(1), 0);
    assert!(
        reg.remove_subscriber(1).is_empty(),
        "unknown ids are a no-op"
    );
    reg.check_invariants().unwrap();
}

#[test]
fn many_members_survive_arbitrary_removals() {
    let mut reg = Registry::new();
    for id in 0..1000 {
        reg.subscribe(id, "big", 1);
    }
    for id in (0..1000u64).filter(|id| !id.is_multiple_of(3)) {
        assert!(reg.unsubscribe(id, "big"));
    }
    let want: Vec<u64> = (0..1000u64).filter(|id| id.is_multiple_of(3)).collect();
    assert_eq!(sorted(reg.subscribers_of("big").to_vec()), want);
    reg.check_invariants().unwrap();
}
