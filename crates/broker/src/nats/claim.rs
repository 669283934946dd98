//! A node number claimed through core NATS alone (docs/scale-out.md,
//! "Nodes with NATS"): the rules as a state machine, with no I/O and no
//! clock (the caller passes the time; randomness comes from a seed), so
//! every race is a unit test. `nats/nodes.rs` runs it on the broker's
//! thread.
//!
//! NATS keeps nothing (no `SET NX` as with Redis, and JetStream's
//! key-value store is not required of operators), so the live nodes are
//! asked instead, on the claim subject:
//!
//! 1. **Roll-call.** The newcomer asks, with its inbox as the reply
//!    subject; every node that holds a number answers `Held` to it, and
//!    `Seen` with the nodes it heard from within `nodeTtl` (so a node cut
//!    off for a moment keeps its number that long, as its Redis key
//!    would). The answers (and any claim or heartbeat heard meanwhile) are
//!    collected for `window`.
//! 2. **Claim.** The newcomer picks a number at random among those it did
//!    not hear of, and announces it with its random token. A node that
//!    holds that number objects, and so does one whose own pending claim of
//!    it has the lower token; a claimer that hears a lower token claiming
//!    its number, or the number held, gives way. Silence for `window`
//!    makes the number this node's.
//! 3. **Held.** The node answers roll-calls and objects to claims of its
//!    number; its heartbeats repeat `Held` on the claim subject, and one
//!    heard from another token with this node's number is a conflict (two
//!    sides of a healed partition), counted as with Redis.
//!
//! A loser picks again before it is ready: ids are only issued once the
//! number is held, so re-picking costs nothing. Two claimers of one number
//! at once end with the lower token holding it: each hears the other's
//! claim (both subscribe the claim subject before they speak), and a claim
//! heard after the window closed meets a holder, who objects. What this
//! cannot see is a holder that does not answer within `window` (cut off
//! from NATS at that moment): that ends as a conflict, the same as a
//! partition.

use std::time::{Duration, Instant};

use switchboard_runtime::ids::MAX_NODE;

use super::note::{contains, insert, Note, Numbers};

/// What the caller must do after an event.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Action {
    /// Publish on the claim subject, with this node's inbox for replies,
    /// then call [`Claim::sent`] once it is written.
    Announce(Note),
    /// Publish to the reply subject of the note just handled.
    Reply(Note),
    /// The number is this node's: subscribe its subject, then be ready.
    Claimed(u16),
    /// Another node holds this node's number.
    Conflict,
}

#[derive(Debug, PartialEq, Eq)]
enum Phase {
    /// Collecting what is held; the window runs from `sent`.
    RollCall {
        until: Option<Instant>,
    },
    /// Waiting for objections to `number`.
    Claiming {
        number: u16,
        until: Option<Instant>,
    },
    Held(u16),
}

/// One node's claim, from its roll-call to holding a number.
pub(crate) struct Claim {
    token: u64,
    window: Duration,
    /// Numbers heard of (held, seen live, or claimed by another).
    taken: Numbers,
    rng: u64,
    phase: Phase,
}

impl Claim {
    /// Start with a roll-call (the returned note, to announce). `token`
    /// must be random (it decides ties); `seed` drives the picks.
    pub(crate) fn new(token: u64, window: Duration, seed: u64) -> (Self, Action) {
        let claim = Self {
            token,
            window,
            taken: [0; 16],
            rng: mix(seed),
            phase: Phase::RollCall { until: None },
        };
        (claim, Action::Announce(Note::RollCall { token }))
    }

    pub(crate) fn token(&self) -> u64 {
        self.token
    }

    /// The number, once held.
    pub(crate) fn number(&self) -> Option<u16> {
        match self.phase {
            Phase::Held(n) => Some(n),
            _ => None,
        }
    }

    /// When [`Claim::tick`] must run next.
    pub(crate) fn deadline(&self) -> Option<Instant> {
        match self.phase {
            Phase::RollCall { until } | Phase::Claiming { until, .. } => until,
            Phase::Held(_) => None,
        }
    }

    /// The last announcement is written: its window starts now (not when
    /// it was queued: a client still connecting must not shorten it).
    pub(crate) fn sent(&mut self, now: Instant) {
        match &mut self.phase {
            Phase::RollCall { until } | Phase::Claiming { until, .. } => {
                *until = Some(now + self.window)
            }
            Phase::Held(_) => {}
        }
    }

    /// Time passed: a window may have closed.
    pub(crate) fn tick(&mut self, now: Instant) -> Option<Action> {
        if self.deadline().is_none_or(|at| now < at) {
            return None;
        }
        match self.phase {
            Phase::RollCall { .. } => Some(self.pick()),
            Phase::Claiming { number, .. } => {
                self.phase = Phase::Held(number);
                Some(Action::Claimed(number))
            }
            Phase::Held(_) => None,
        }
    }

    /// A note arrived (on the claim subject or this node's inbox).
    pub(crate) fn heard(&mut self, note: Note) -> Option<Action> {
        match (note, &self.phase) {
            // Our own announcements come back (NATS echoes them).
            (
                Note::RollCall { token } | Note::Claim { token, .. } | Note::Held { token, .. },
                _,
            ) if token == self.token => None,
            (Note::RollCall { .. }, Phase::Held(n)) => Some(Action::Reply(Note::Held {
                number: *n,
                token: self.token,
            })),
            (Note::RollCall { .. }, _) => None,
            (Note::Claim { number, .. }, Phase::Held(n)) if number == *n => {
                Some(Action::Reply(Note::Objection { number }))
            }
            (Note::Held { number, .. }, Phase::Held(n)) if number == *n => Some(Action::Conflict),
            (
                Note::Claim { .. } | Note::Held { .. } | Note::Objection { .. } | Note::Seen { .. },
                Phase::Held(_),
            ) => None,
            (Note::Seen { live }, phase) => {
                let lost =
                    matches!(phase, Phase::Claiming { number, .. } if contains(&live, *number));
                for (taken, seen) in self.taken.iter_mut().zip(live) {
                    *taken |= seen;
                }
                lost.then(|| self.pick())
            }
            (Note::Claim { number, token }, Phase::Claiming { number: mine, .. })
                if number == *mine =>
            {
                if self.token < token {
                    Some(Action::Reply(Note::Objection { number }))
                } else {
                    self.take(number);
                    Some(self.pick())
                }
            }
            (
                Note::Held { number, .. } | Note::Objection { number },
                Phase::Claiming { number: mine, .. },
            ) if number == *mine => {
                self.take(number);
                Some(self.pick())
            }
            (Note::Claim { number, .. } | Note::Held { number, .. }, _) => {
                self.take(number);
                None
            }
            // An objection to an earlier pick, or before any.
            (Note::Objection { .. }, _) => None,
        }
    }

    fn take(&mut self, n: u16) {
        insert(&mut self.taken, n);
    }

    fn is_taken(&self, n: u16) -> bool {
        contains(&self.taken, n)
    }

    /// Claim a random number among those not heard of; with none left
    /// (1,023 nodes live), forget them and ask again.
    fn pick(&mut self) -> Action {
        let free = (1..=MAX_NODE).filter(|&n| !self.is_taken(n)).count();
        if free == 0 {
            self.taken = [0; 16];
            self.phase = Phase::RollCall { until: None };
            return Action::Announce(Note::RollCall { token: self.token });
        }
        let k = (self.next_random() % free as u64) as usize;
        let number = (1..=MAX_NODE)
            .filter(|&n| !self.is_taken(n))
            .nth(k)
            .unwrap_or(1);
        self.phase = Phase::Claiming {
            number,
            until: None,
        };
        Action::Announce(Note::Claim {
            number,
            token: self.token,
        })
    }

    fn next_random(&mut self) -> u64 {
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        self.rng
    }
}

/// from a raw small seed repeats its neighbours' first picks); never 0,
/// which xorshift cannot leave.
fn mix(seed: u64) -> u64 {
    let mut z = seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    (z ^ (z >> 31)) | 1
}

#[cfg(test)]
mod tests {
    use super::*;

    const WINDOW: Duration = Duration::from_millis(250);

    /// A claim through its roll-call, with `held` answering: its pick.
    fn past_roll_call(token: u64, seed: u64, held: &[u16], t0: Instant) -> (Claim, u16) {
        let (mut claim, first) = Claim::new(token, WINDOW, seed);
        assert_eq!(first, Action::Announce(Note::RollCall { token }));
        claim.sent(t0);
        for &number in held {
            assert_eq!(claim.heard(Note::Held { number, token: 99 }), None);
        }
        assert_eq!(claim.tick(t0 + WINDOW / 2), None, "the window is open");
        let Some(Action::Announce(Note::Claim { number, token: t })) = claim.tick(t0 + WINDOW)
        else {
            panic!("no claim after the roll-call");
        };
        assert_eq!(t, token);
        (claim, number)
    }

    #[test]
    fn an_unopposed_claim_holds_a_number_nobody_answered_with() {
        let t0 = Instant::now();
        let held: Vec<u16> = (1..=MAX_NODE).filter(|n| n % 3 != 0).collect();
        for seed in 0..50 {
            let (mut claim, number) = past_roll_call(42, seed, &held, t0);
            assert_eq!(number % 3, 0, "{number} was answered as held");
            claim.sent(t0 + WINDOW);
            assert_eq!(claim.number(), None);
            assert_eq!(claim.tick(t0 + WINDOW * 2), Some(Action::Claimed(number)));
            assert_eq!(claim.number(), Some(number));
            assert_eq!(claim.deadline(), None);
        }
    }

    #[test]
    fn picks_spread_over_the_free_numbers() {
        let t0 = Instant::now();
        let picks: std::collections::HashSet<u16> = (0..200)
            .map(|seed| past_roll_call(1, seed, &[], t0).1)
            .collect();
        assert!(picks.len() > 150, "{} distinct picks of 200", picks.len());
    }

    #[test]
    fn the_window_starts_when_the_announcement_is_written() {
        let t0 = Instant::now();
        let (mut claim, _) = Claim::new(1, WINDOW, 1);
        assert_eq!(claim.deadline(), None);
        assert_eq!(claim.tick(t0 + WINDOW * 10), None, "not sent: no window");
        claim.sent(t0 + WINDOW * 10);
        assert_eq!(claim.deadline(), Some(t0 + WINDOW * 11));
    }

    #[test]
    fn own_echoes_are_ignored() {
        let t0 = Instant::now();
        let (mut claim, number) = past_roll_call(5, 1, &[], t0);
        assert_eq!(claim.heard(Note::RollCall { token: 5 }), None);
        assert_eq!(claim.heard(Note::Claim { number, token: 5 }), None);
        claim.sent(t0);
        assert_eq!(claim.tick(t0 + WINDOW), Some(Action::Claimed(number)));
        assert_eq!(
            claim.heard(Note::Held { number, token: 5 }),
            None,
            "our heartbeat"
        );
    }

    #[test]
    fn a_holder_answers_roll_calls_objects_to_claims_and_counts_conflicts() {
        let t0 = Instant::now();
        let (mut claim, number) = past_roll_call(5, 1, &[], t0);
        claim.sent(t0);
        claim.tick(t0 + WINDOW);
        assert_eq!(
            claim.heard(Note::RollCall { token: 8 }),
            Some(Action::Reply(Note::Held { number, token: 5 }))
        );
        for token in [1, 8] {
            assert_eq!(
                claim.heard(Note::Claim { number, token }),
                Some(Action::Reply(Note::Objection { number })),
                "a holder objects whatever the token"
            );
        }
        let other = number % MAX_NODE + 1;
        assert_eq!(
            claim.heard(Note::Claim {
                number: other,
                token: 8
            }),
            None
        );
        assert_eq!(
            claim.heard(Note::Held {
                number: other,
                token: 8
            }),
            None
        );
        assert_eq!(claim.heard(Note::Objection { number }), None);
        assert_eq!(
            claim.heard(Note::Held { number, token: 8 }),
            Some(Action::Conflict)
        );
        assert_eq!(claim.number(), Some(number), "the number is kept");
    }

    /// Deliver every announcement to every claimer (one ordered bus, as one
    /// NATS subject is), objections to their target; run to the end.
    fn run(claims: &mut [Claim], first: Vec<Action>, t0: Instant) -> Vec<u16> {
        let mut now = t0;
        let mut pending: Vec<(usize, Action)> = first.into_iter().enumerate().collect();
        for _ in 0..10_000 {
            let mut next = Vec::new();
            for (from, action) in pending.drain(..) {
                match action {
                    Action::Announce(note) => {
                        claims[from].sent(now);
                        for i in 0..claims.len() {
                            match claims[i].heard(note) {
                                Some(Action::Reply(reply)) => {
                                    // A reply goes to the announcer's inbox.
                                    if let Some(a) = claims[from].heard(reply) {
                                        next.push((from, a));
                                    }
                                }
                                Some(a) => next.push((i, a)),
                                None => {}
                            }
                        }
                    }
                    Action::Claimed(_) | Action::Conflict | Action::Reply(_) => {}
                }
            }
            if next.is_empty() {
                now += WINDOW;
                for (i, claim) in claims.iter_mut().enumerate() {
                    if let Some(a) = claim.tick(now) {
                        next.push((i, a));
                    }
                }
            }
            if claims.iter().all(|c| c.number().is_some()) {
                return claims.iter().filter_map(Claim::number).collect();
            }
            pending = next;
        }
        panic!("the claims never settled");
    }

    #[test]
    fn nodes_starting_together_end_with_distinct_numbers() {
        let t0 = Instant::now();
        for round in 0..200u64 {
            // Few numbers left free, so the picks often collide.
            let held: Vec<u16> = (3..=MAX_NODE).collect();
            let mut claims = Vec::new();
            let mut first = Vec::new();
            for i in 0..2 {
                let (mut claim, action) =
                    Claim::new(round * 10 + i + 1, WINDOW, round * 31 + i * 7);
                for &number in &held {
                    claim.heard(Note::Held { number, token: 0 });
                }
                claims.push(claim);
                first.push(action);
            }
            let mut numbers = run(&mut claims, first, t0);
            numbers.sort_unstable();
            assert_eq!(numbers, [1, 2], "round {round}");
        }
    }

    #[test]
    fn the_lower_token_keeps_a_contested_number() {
        let t0 = Instant::now();
        // Both picked 3 (every other number taken).
        let held: Vec<u16> = (1..=MAX_NODE).filter(|&n| n != 3).collect();
        let (mut low, _) = past_roll_call(10, 1, &held, t0);
        let (mut high, _) = past_roll_call(20, 2, &held, t0);
        assert_eq!(
            low.heard(Note::Claim {
                number: 3,
                token: 20
            }),
            Some(Action::Reply(Note::Objection { number: 3 }))
        );
        // The higher token gives way on the lower claim; with nothing left
        // it asks again.
        assert_eq!(
            high.heard(Note::Claim {
                number: 3,
                token: 10
            }),
            Some(Action::Announce(Note::RollCall { token: 20 }))
        );
        low.sent(t0);
        assert_eq!(low.tick(t0 + WINDOW), Some(Action::Claimed(3)));
    }

    #[test]
    fn numbers_seen_live_are_not_picked_and_make_a_claimer_give_way() {
        let t0 = Instant::now();
        // Seen: every number but 40 and 41.
        let mut live: Numbers = [0; 16];
        (1..=MAX_NODE)
            .filter(|n| !matches!(n, 40 | 41))
            .for_each(|n| insert(&mut live, n));
        let (mut claim, _) = Claim::new(1, WINDOW, 3);
        claim.sent(t0);
        assert_eq!(claim.heard(Note::Seen { live }), None);
        let Some(Action::Announce(Note::Claim { number, .. })) = claim.tick(t0 + WINDOW) else {
            panic!("no claim");
        };
        assert!(matches!(number, 40 | 41), "{number}");
        // A late answer names the pick live: the other one is claimed.
        let mut late: Numbers = [0; 16];
        insert(&mut late, number);
        let Some(Action::Announce(Note::Claim { number: other, .. })) =
            claim.heard(Note::Seen { live: late })
        else {
            panic!("no new pick");
        };
        assert_eq!(other, 81 - number);
        claim.sent(t0 + WINDOW);
        assert_eq!(claim.tick(t0 + WINDOW * 2), Some(Action::Claimed(other)));
        // A holder is not moved by seeing itself live.
        let mut me: Numbers = [0; 16];
        insert(&mut me, other);
        assert_eq!(claim.heard(Note::Seen { live: me }), None);
        assert_eq!(claim.number(), Some(other));
    }

    #[test]
    fn a_claimer_gives_way_to_an_objection_or_a_holder() {
        let t0 = Instant::now();
        let (mut claim, number) = past_roll_call(10, 1, &[], t0);
        assert_eq!(
            claim.heard(Note::Objection {
                number: number % MAX_NODE + 1
            }),
            None
        );
        let Some(Action::Announce(Note::Claim { number: second, .. })) =
            claim.heard(Note::Objection { number })
        else {
            panic!("no new pick after the objection");
        };
        assert_ne!(second, number);
        let Some(Action::Announce(Note::Claim { number: third, .. })) = claim.heard(Note::Held {
            number: second,
            token: 3,
        }) else {
            panic!("no new pick after hearing the number held");
        };
        assert!(third != number && third != second);
    }
}
