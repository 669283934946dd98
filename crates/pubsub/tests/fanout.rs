//! Fan-out planning through the public API (src/fanout.rs).

use bytes::Bytes;
use switchboard_pubsub::{Registry, Target, INLINE_TARGETS};

type Delivery = (u64, Option<Vec<u8>>);

/// Runs a publish and returns (count, sorted deliveries).
fn publish(reg: &Registry, targets: &[Target<'_>], exclude: Option<u64>) -> Vec<Delivery> {
    let mut out = Vec::new();
    let n = reg.for_each_recipient(targets, exclude, |conn, prefix| {
        out.push((conn, prefix.map(|p| p.to_vec())));
    });
    assert_eq!(n, out.len(), "the count matches the calls");
    out.sort();
    out
}

fn plain(ids: &[u64]) -> Vec<Delivery> {
    ids.iter().map(|&id| (id, None)).collect()
}

fn tag(s: &'static str) -> Option<Bytes> {
    Some(Bytes::from_static(s.as_bytes()))
}

#[test]
fn one_channel_reaches_every_member() {
    let mut reg = Registry::new();
    reg.subscribe_many(&[3, 1, 2], "a", 1);
    reg.subscribe(4, "b", 1);
    assert_eq!(
        publish(&reg, &[Target::Channel("a")], None),
        plain(&[1, 2, 3])
    );
}

#[test]
fn nothing_to_deliver() {
    let mut reg = Registry::new();
    reg.subscribe(1, "a", 1);
    assert!(publish(&reg, &[], None).is_empty());
    assert!(publish(&reg, &[Target::Channel("nope")], None).is_empty());
    assert!(publish(&reg, &[Target::Channel("a")], Some(1)).is_empty());
}

#[test]
fn overlapping_channels_deliver_once() {
    let mut reg = Registry::new();
    reg.subscribe_many(&[1, 2, 3], "a", 1);
    reg.subscribe_many(&[2, 3, 4], "b", 1);
    let targets = [
        Target::Channel("a"),
        Target::Channel("b"),
        Target::Channel("a"), // listed twice
        Target::Subscriber(4),
        Target::Subscriber(5), // not subscribed anywhere: passed through
        Target::Subscriber(5),
        Target::Channel("nope"),
    ];
    assert_eq!(publish(&reg, &targets, None), plain(&[1, 2, 3, 4, 5]));
    assert_eq!(publish(&reg, &targets, Some(2)), plain(&[1, 3, 4, 5]));
}

#[test]
fn many_targets_deliver_once() {
    let mut reg = Registry::new();
    let names: Vec<String> = (0..3 * INLINE_TARGETS).map(|i| format!("c{i}")).collect();
    for (i, name) in names.iter().enumerate() {
        // Channel i holds ids i..i+5, so neighbours overlap heavily.
        for id in i..i + 5 {
            reg.subscribe(id as u64, name, 1);
        }
    }
    reg.subscribe_many(&(0..100).collect::<Vec<_>>(), "big", 1);
    let mut targets: Vec<Target<'_>> = names.iter().map(|n| Target::Channel(n)).collect();
    targets.push(Target::Subscriber(7));
    targets.push(Target::Subscriber(500));
    targets.push(Target::Channel("big"));
    assert!(targets.len() > INLINE_TARGETS);
    let mut want: Vec<u64> = (0..100).collect();
    want.push(500);
    assert_eq!(publish(&reg, &targets, None), plain(&want));
    want.retain(|&id| id != 7);
    assert_eq!(publish(&reg, &targets, Some(7)), plain(&want));
}

#[test]
fn scratch_is_reused_across_calls() {
    let mut reg = Registry::new();
    let names: Vec<String> = (0..=INLINE_TARGETS).map(|i| format!("c{i}")).collect();
    for name in &names {
        reg.subscribe_many(&[1, 2], name, 1);
    }
    let targets: Vec<Target<'_>> = names.iter().map(|n| Target::Channel(n)).collect();
    let mut scratch = vec![99, 98, 97]; // stale content is ignored
    for _ in 0..3 {
        let n = reg.for_each_recipient_with(&targets, None, &mut scratch, |_, _| {});
        assert_eq!(n, 2);
    }
}

#[test]
fn a_connection_and_its_virtual_socket_are_distinct_recipients() {
    let mut reg = Registry::new();
    reg.create_virtual_socket(10, 1, tag("v:")).unwrap();
    reg.subscribe(1, "a", 1);
    reg.subscribe(10, "a", 1);
    let got = publish(&reg, &[Target::Channel("a")], None);
    assert_eq!(got, [(1, None), (1, Some(b"v:".to_vec()))]);
    // Reached through two channels, each still arrives once.
    reg.subscribe(1, "b", 1);
    reg.subscribe(10, "b", 1);
    let got = publish(&reg, &[Target::Channel("a"), Target::Channel("b")], None);
    assert_eq!(got, [(1, None), (1, Some(b"v:".to_vec()))]);
}

#[test]
fn exclusion_follows_virtual_sockets_to_their_connection() {
    let mut reg = Registry::new();
    reg.create_virtual_socket(10, 1, tag("x")).unwrap();
    reg.create_virtual_socket(11, 10, tag("y")).unwrap();
    reg.create_virtual_socket(20, 2, tag("z")).unwrap();
    reg.subscribe_many(&[1, 2, 10, 11, 20], "a", 1);
    let got = publish(&reg, &[Target::Channel("a")], Some(1));
    assert_eq!(got, [(2, None), (2, Some(b"z".to_vec()))]);
    // The virtual socket's own id is not a connection: excluding it skips nothing.
    assert_eq!(publish(&reg, &[Target::Channel("a")], Some(10)).len(), 5);
    // Same through the multi-target path.
    let got = publish(
        &reg,
        &[Target::Channel("a"), Target::Subscriber(11)],
        Some(1),
    );
    assert_eq!(got, [(2, None), (2, Some(b"z".to_vec()))]);
}

#[test]
fn subscriber_targets_resolve_virtual_sockets() {
    let mut reg = Registry::new();
    reg.create_virtual_socket(2, 100, tag("t2")).unwrap();
    reg.create_virtual_socket(1, 2, tag("t1")).unwrap();
    assert_eq!(
        publish(&reg, &[Target::Subscriber(1)], None),
        [(100, Some(b"t2t1".to_vec()))]
    );
    assert!(publish(&reg, &[Target::Subscriber(1)], Some(100)).is_empty());
    assert_eq!(publish(&reg, &[Target::Subscriber(7)], None), plain(&[7]));
    assert_eq!(
        publish(&reg, &[Target::Subscriber(1), Target::Subscriber(2)], None),
        [(100, Some(b"t2".to_vec())), (100, Some(b"t2t1".to_vec()))]
    );
}

#[test]
fn prefixes_are_shared_not_copied_per_recipient() {
    let mut reg = Registry::new();
    let t = Bytes::from(vec![1u8; 64]);
    reg.create_virtual_socket(10, 1, Some(t.clone())).unwrap();
    reg.subscribe(10, "a", 1);
    let mut ptrs = Vec::new();
    for _ in 0..2 {
        reg.for_each_recipient(&[Target::Channel("a")], None, |_, p| {
            ptrs.push(p.unwrap().as_ptr());
        });
    }
    assert!(ptrs.iter().all(|&p| p == t.as_ptr()));
}

#[test]
fn large_channel_with_and_without_virtual_members() {
    let mut reg = Registry::new();
    let ids: Vec<u64> = (0..10_000).collect();
    reg.subscribe_many(&ids, "big", 1);
    let n = reg.for_each_recipient(&[Target::Channel("big")], Some(5), |_, p| {
        assert!(p.is_none());
    });
    assert_eq!(n, 9_999);
    // One virtual member switches the loop to per-member resolution.
    reg.create_virtual_socket(20_000, 5, tag("v")).unwrap();
    reg.subscribe(20_000, "big", 1);
    let mut tagged = 0;
    let n = reg.for_each_recipient(&[Target::Channel("big")], None, |conn, p| {
        if p.is_some() {
            assert_eq!(conn, 5);
            tagged += 1;
        }
    });
    assert_eq!((n, tagged), (10_001, 1));
    assert_eq!(
        reg.for_each_recipient(&[Target::Channel("big")], Some(5), |_, _| {}),
        9_999
    );
}
