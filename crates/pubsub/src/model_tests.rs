//! The model's own tests: the property test over random byte strings, and
//! hand-written scenarios run through the same checker.

use super::*;

/// The property test: random operation sequences against the model.
#[test]
fn random_sequences_match_the_model() {
    let mut rng = SplitMix64(0x5b_5b_5b);
    let mut total = Coverage::default();
    for _ in 0..1500 {
        let len = (rng.next_u64() % 400) as usize;
        total += run(&rng.bytes(len));
    }
    println!("{total:?}");
    // Guards against a decoder change quietly making the inputs shallow.
    // (Thresholds are about half of what seed 0x5b5b5b reaches.)
    assert!(total.membership_changes > 3_000, "{total:?}");
    assert!(total.virtual_created > 3_000, "{total:?}");
    assert!(total.chains > 500, "{total:?}");
    assert!(total.cascades > 100, "{total:?}");
    assert!(total.sorted_publishes > 1_000, "{total:?}");
    assert!(total.tagged_deliveries > 1_000, "{total:?}");
    assert!(total.excluded > 400, "{total:?}");
}

#[test]
fn decoding_is_total() {
    assert!(decode(&[]).is_empty());
    // A truncated operation still decodes (missing bytes read as zero).
    assert!(matches!(decode(&[5])[..], [Op::CreateVirtual(0, 0, None)]));
    assert_eq!(decode(&[0; 7]).len(), 2);
}

#[test]
fn scripted_chain_scenario() {
    let tag = |s: &'static str| Some(Bytes::from_static(s.as_bytes()));
    check_ops(&[
        Op::CreateVirtual(1, 0, tag("x")),
        Op::CreateVirtual(2, 1, tag("y")),
        Op::CreateVirtual(3, 2, None),
        Op::CreateVirtual(4, 1, Some(Bytes::new())),
        Op::Subscribe(3, "a", 2),
        Op::Subscribe(4, "a", 1),
        Op::Subscribe(0, "a", 1),
        Op::Subscribe(5, "b", 1),
        Op::Publish(
            vec![
                Target::Channel("a"),
                Target::Channel("b"),
                Target::Subscriber(2),
            ],
            None,
        ),
        Op::Publish(vec![Target::Channel("a")], Some(0)),
        Op::Copy("a", "b"),
        Op::DeleteVirtual(2, Some(0)),
        Op::DeleteVirtual(2, Some(1)),
        Op::Remove(0),
        Op::Remove(5),
    ]);
}
