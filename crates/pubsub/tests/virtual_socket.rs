//! Virtual sockets through the public API (src/virtual_socket.rs).

use bytes::Bytes;
use switchboard_pubsub::{Error, Registry};

fn tag(s: &'static str) -> Option<Bytes> {
    Some(Bytes::from_static(s.as_bytes()))
}

fn sorted<T: Ord>(mut v: Vec<T>) -> Vec<T> {
    v.sort();
    v
}

#[test]
fn create_and_inspect() {
    let mut reg = Registry::new();
    reg.create_virtual_socket(10, 1, tag("t")).unwrap();
    assert!(reg.is_virtual_socket(10));
    assert!(!reg.is_virtual_socket(1), "connections are not registered");
    let vs = reg.virtual_socket(10).unwrap();
    assert_eq!(vs.target(), 1);
    assert_eq!(vs.connection(), 1);
    assert_eq!(vs.tag(), tag("t").as_ref());
    assert_eq!(vs.prefix(), tag("t").as_ref());
    assert_eq!(reg.virtual_socket_count(), 1);
    assert_eq!(reg.virtual_sockets_targeting(1).collect::<Vec<_>>(), [10]);
    assert!(reg.virtual_socket(11).is_none());
    reg.check_invariants().unwrap();
}

#[test]
fn create_errors_change_nothing() {
    let mut reg = Registry::new();
    reg.create_virtual_socket(10, 1, None).unwrap();
    assert_eq!(
        reg.create_virtual_socket(10, 2, None),
        Err(Error::VirtualSocketExists { id: 10 })
    );
    assert_eq!(reg.virtual_socket(10).unwrap().target(), 1);
    assert_eq!(
        reg.create_virtual_socket(11, 11, None),
        Err(Error::VirtualSocketCycle { id: 11 })
    );
    // 1 is in use as a connection: 10 points at it.
    assert_eq!(
        reg.create_virtual_socket(1, 10, None),
        Err(Error::VirtualSocketIdInUse { id: 1 })
    );
    // 5 is in use as a connection: it has a subscription.
    reg.subscribe(5, "a", 1);
    assert_eq!(
        reg.create_virtual_socket(5, 1, None),
        Err(Error::VirtualSocketIdInUse { id: 5 })
    );
    assert_eq!(reg.virtual_socket_count(), 1);
    assert!(!reg.is_virtual_socket(11));
    reg.check_invariants().unwrap();
}

#[test]
fn prefixes_compose_outermost_first() {
    let mut reg = Registry::new();
    // VS1 (t1) -> VS2 (t2) -> C: C receives t2 ++ t1 ++ message.
    reg.create_virtual_socket(2, 100, tag("t2")).unwrap();
    reg.create_virtual_socket(1, 2, tag("t1")).unwrap();
    assert_eq!(reg.resolve(1), (100, tag("t2t1").as_ref()));
    assert_eq!(reg.resolve(2), (100, tag("t2").as_ref()));
    assert_eq!(reg.resolve(100), (100, None));
    assert_eq!(reg.resolve(999), (999, None), "unknown ids are connections");
    // A third hop without a tag adds nothing; a tag on top of it composes.
    reg.create_virtual_socket(3, 1, None).unwrap();
    reg.create_virtual_socket(4, 3, tag("t4")).unwrap();
    assert_eq!(reg.resolve(3), (100, tag("t2t1").as_ref()));
    assert_eq!(reg.resolve(4), (100, tag("t2t1t4").as_ref()));
    reg.check_invariants().unwrap();
}

#[test]
fn empty_tags_mean_no_prefix_and_single_tags_are_shared() {
    let mut reg = Registry::new();
    reg.create_virtual_socket(1, 100, Some(Bytes::new()))
        .unwrap();
    reg.create_virtual_socket(2, 1, None).unwrap();
    assert_eq!(reg.resolve(1), (100, None));
    assert_eq!(reg.resolve(2), (100, None));
    assert_eq!(reg.virtual_socket(1).unwrap().tag(), Some(&Bytes::new()));
    let t = Bytes::from(vec![7u8; 32]);
    reg.create_virtual_socket(3, 2, Some(t.clone())).unwrap();
    let prefix = reg.resolve(3).1.unwrap();
    assert_eq!(prefix.as_ptr(), t.as_ptr(), "one tag in the chain: no copy");
}

#[test]
fn guarded_delete() {
    let mut reg = Registry::new();
    reg.create_virtual_socket(10, 1, None).unwrap();
    reg.subscribe(10, "a", 1);
    assert_eq!(
        reg.delete_virtual_socket(10, Some(2)),
        Err(Error::VirtualSocketTargetMismatch {
            id: 10,
            expected: 2,
            actual: 1
        })
    );
    assert!(reg.is_subscribed(10, "a"), "a failed guard changes nothing");
    assert_eq!(reg.delete_virtual_socket(10, Some(1)), Ok(vec![10]));
    assert!(!reg.has_subscriptions("a"));
    reg.check_invariants().unwrap();
}

#[test]
fn double_delete_is_unknown() {
    let mut reg = Registry::new();
    reg.create_virtual_socket(10, 1, None).unwrap();
    assert_eq!(reg.delete_virtual_socket(10, None), Ok(vec![10]));
    assert_eq!(
        reg.delete_virtual_socket(10, None),
        Err(Error::VirtualSocketUnknown { id: 10 })
    );
    assert_eq!(
        reg.delete_virtual_socket(1, None),
        Err(Error::VirtualSocketUnknown { id: 1 }),
        "a connection is not a virtual socket"
    );
    assert_eq!(reg.virtual_sockets_targeting(1).count(), 0);
    reg.check_invariants().unwrap();
}

#[test]
fn delete_takes_the_whole_subtree() {
    let mut reg = Registry::new();
    // 1 <- 10 <- 11 <- 12, 10 <- 13, 1 <- 20 (sibling, survives)
    reg.create_virtual_socket(10, 1, tag("a")).unwrap();
    reg.create_virtual_socket(11, 10, None).unwrap();
    reg.create_virtual_socket(12, 11, None).unwrap();
    reg.create_virtual_socket(13, 10, None).unwrap();
    reg.create_virtual_socket(20, 1, None).unwrap();
    for id in [1, 10, 11, 12, 13, 20] {
        reg.subscribe(id, "ch", 1);
    }
    reg.subscribe(12, "only12", 1);
    let removed = reg.delete_virtual_socket(10, Some(1)).unwrap();
    assert_eq!(removed[0], 10, "the requested socket comes first");
    assert_eq!(sorted(removed), [10, 11, 12, 13]);
    assert_eq!(sorted(reg.subscribers_of("ch").to_vec()), [1, 20]);
    assert!(!reg.has_subscriptions("only12"));
    assert_eq!(reg.virtual_sockets_targeting(1).collect::<Vec<_>>(), [20]);
    assert_eq!(reg.virtual_socket_count(), 1);
    reg.check_invariants().unwrap();
}

#[test]
fn remove_subscriber_takes_every_virtual_socket_on_the_connection() {
    let mut reg = Registry::new();
    reg.create_virtual_socket(10, 1, None).unwrap();
    reg.create_virtual_socket(11, 10, None).unwrap();
    reg.create_virtual_socket(12, 1, None).unwrap();
    reg.create_virtual_socket(20, 2, None).unwrap();
    for id in [1, 2, 10, 11, 12, 20] {
        reg.subscribe(id, "ch", 1);
    }
    assert_eq!(sorted(reg.remove_subscriber(1)), [10, 11, 12]);
    assert_eq!(sorted(reg.subscribers_of("ch").to_vec()), [2, 20]);
    assert_eq!(reg.virtual_socket_count(), 1);
    reg.check_invariants().unwrap();
    // A closing connection with nothing attached returns nothing.
    assert!(reg.remove_subscriber(1).is_empty());
    // Closing the other connection leaves a completely empty registry.
    assert_eq!(reg.remove_subscriber(2), [20]);
    assert_eq!(reg.channel_count(), 0);
    assert_eq!(reg.subscription_count(), 0);
    assert_eq!(reg.subscriber_total(), 0);
    assert_eq!(reg.virtual_socket_count(), 0);
    reg.check_invariants().unwrap();
}

#[test]
fn remove_subscriber_on_a_virtual_socket_deletes_it() {
    let mut reg = Registry::new();
    reg.create_virtual_socket(10, 1, None).unwrap();
    reg.create_virtual_socket(11, 10, None).unwrap();
    let removed = reg.remove_subscriber(10);
    assert_eq!(removed, [10, 11]);
    assert_eq!(reg.virtual_socket_count(), 0);
    reg.check_invariants().unwrap();
}

#[test]
fn long_chains_delete_without_recursion() {
    let mut reg = Registry::new();
    let depth = 100_000;
    reg.create_virtual_socket(1, 0, None).unwrap();
    for id in 2..=depth {
        reg.create_virtual_socket(id, id - 1, None).unwrap();
    }
    assert_eq!(reg.resolve(depth), (0, None));
    assert_eq!(reg.remove_subscriber(0).len(), depth as usize);
    assert_eq!(reg.virtual_socket_count(), 0);
}

#[test]
fn a_deleted_target_id_is_just_an_id() {
    // The runtime validates targets; the registry treats any id that is not
    // a live virtual socket as a connection, including a deleted one.
    let mut reg = Registry::new();
    reg.create_virtual_socket(10, 1, tag("x")).unwrap();
    reg.delete_virtual_socket(10, None).unwrap();
    reg.create_virtual_socket(11, 10, tag("y")).unwrap();
    assert_eq!(reg.resolve(11), (10, tag("y").as_ref()));
    reg.check_invariants().unwrap();
}
