use std::collections::BTreeMap;

use super::*;

/// splitmix64: a fixed seed makes every run (and every failure) reproducible.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// The simple model: the group PEL as a map of ID → (owner, time, count), consumers as a map
/// of name → seen time, and the set of IDs the "stream" still holds.
#[derive(Default)]
struct Model {
    pel: BTreeMap<StreamId, (Vec<u8>, u64, u64)>,
    consumers: BTreeMap<Vec<u8>, u64>,
}

impl Model {
    fn touch(&mut self, name: &[u8], now: u64) -> bool {
        let created = !self.consumers.contains_key(name);
        self.consumers.insert(name.to_vec(), now);
        created
    }

    fn claim(&mut self, id: StreamId, claim: &Claim<'_>, exists: bool) -> Option<bool> {
        if !exists {
            return self.pel.remove(&id).map(|_| false);
        }
        match self.pel.get(&id) {
            None if !claim.force => return None,
            Some(p)
                if claim.min_idle_ms > 0
                    && (claim.now_ms as i128 - p.1 as i128) < claim.min_idle_ms as i128 =>
            {
                return None
            }
            _ => {}
        }
        self.touch(claim.consumer, claim.now_ms);
        let p = self.pel.entry(id).or_insert((Vec::new(), 0, 1));
        p.0 = claim.consumer.to_vec();
        p.1 = claim.delivery_time_ms;
        match claim.count {
            ClaimCount::Increment => p.2 += 1,
            ClaimCount::Keep => {}
            ClaimCount::Set(c) => p.2 = c,
        }
        Some(true)
    }
}

/// Everything the group holds agrees with the model, the two PEL views agree with each other,
/// and the byte count is what a recount gives.
fn check(g: &Group, m: &Model) {
    let pel: BTreeMap<StreamId, (Vec<u8>, u64, u64)> = g
        .pel
        .iter()
        .map(|(id, n)| {
            (
                *id,
                (n.consumer().to_vec(), n.delivery_time_ms, n.delivery_count),
            )
        })
        .collect();
    assert_eq!(pel, m.pel);
    let consumers: BTreeMap<Vec<u8>, u64> = g
        .consumers()
        .map(|(n, c)| (n.to_vec(), c.seen_time_ms))
        .collect();
    assert_eq!(consumers, m.consumers);
    for (name, c) in g.consumers() {
        let owned: Vec<StreamId> = m
            .pel
            .iter()
            .filter(|(_, p)| p.0 == name)
            .map(|(id, _)| *id)
            .collect();
        assert_eq!(c.pending_from(StreamId::MIN).collect::<Vec<_>>(), owned);
        assert_eq!(c.pending_len(), owned.len());
    }
    assert_eq!(g.bytes, g.recount());
    assert_eq!(g.pending_len(), m.pel.len());
}

fn id(n: u64) -> StreamId {
    StreamId::new(n / 3, n % 3)
}

/// Thousands of random operations of every kind against the model, with the PEL checked
/// after each.
#[test]
fn random_operations_match_the_model() {
    for seed in 0..8 {
        let mut rng = Rng(seed);
        let mut g = Group::new(StreamId::MIN, None);
        let mut m = Model::default();
        let names: [&[u8]; 4] = [b"alice", b"bob", b"carol", b"d"];
        let mut now = 1_000u64;
        // IDs 0..60 exist in the "stream" unless deleted.
        let mut exists = [true; 60];
        for step in 0..4_000 {
            now += rng.below(50);
            let who = names[rng.below(4) as usize];
            let at = rng.below(60);
            match rng.below(10) {
                0 => {
                    let created = g.create_consumer(who, now);
                    assert_eq!(created, !m.consumers.contains_key(who));
                    m.consumers.entry(who.to_vec()).or_insert(now);
                }
                1 => {
                    let created = g.touch_consumer(who, now) == Lookup::Created;
                    assert_eq!(created, m.touch(who, now));
                    g.deliver(id(at), who, now);
                    m.pel.insert(id(at), (who.to_vec(), now, 1));
                }
                2 => {
                    let was = m.pel.get(&id(at)).map(|p| (p.1, p.2));
                    let acked = g
                        .ack(id(at))
                        .map(|n| (n.delivery_time_ms, n.delivery_count));
                    assert_eq!(acked, was);
                    m.pel.remove(&id(at));
                }
                3 => {
                    let deleted = g.delete_consumer(who);
                    let owned = m.pel.values().filter(|p| p.0 == who).count();
                    if m.consumers.remove(who).is_some() {
                        assert_eq!(deleted, Some(owned));
                        m.pel.retain(|_, p| p.0 != who);
                    } else {
                        assert_eq!(deleted, None);
                    }
                }
                4 => {
                    let done = g.redeliver(id(at), now);
                    assert_eq!(done, m.pel.contains_key(&id(at)));
                    if let Some(p) = m.pel.get_mut(&id(at)) {
                        p.1 = now;
                        p.2 += 1;
                    }
                }
                5 | 6 => {
                    let count = match rng.below(3) {
                        0 => ClaimCount::Increment,
                        1 => ClaimCount::Keep,
                        _ => ClaimCount::Set(rng.below(5)),
                    };
                    let claim = Claim {
                        consumer: who,
                        min_idle_ms: rng.below(3) * 100,
                        delivery_time_ms: now - rng.below(500).min(now),
                        count,
                        force: rng.below(2) == 0,
                        now_ms: now,
                    };
                    let mut created = false;
                    let before = m.consumers.contains_key(who);
                    let got = g.claim(id(at), &claim, exists[at as usize], &mut created);
                    let want = m.claim(id(at), &claim, exists[at as usize]);
                    assert_eq!(got.is_some(), want.is_some(), "step {step}");
                    assert_eq!(matches!(got, Some(Claimed::Owned(..))), want == Some(true));
                    assert_eq!(created, !before && m.consumers.contains_key(who));
                }
                7 => {
                    let limit = 1 + rng.below(8);
                    let min_idle = rng.below(3) * 100;
                    let start = id(rng.below(60));
                    let keep = rng.below(2) == 0;
                    let count = if keep {
                        ClaimCount::Keep
                    } else {
                        ClaimCount::Increment
                    };
                    let got = g.autoclaim(start, limit, who, min_idle, count, now, |i| {
                        exists[(i.ms * 3 + i.seq) as usize]
                    });
                    // The model's walk: the same rules, one PEL element at a time.
                    let ids: Vec<StreamId> = m.pel.range(start..).map(|(i, _)| *i).collect();
                    let (mut attempts, mut left, mut last) = (limit * 10, limit, None);
                    let mut claims = Vec::new();
                    for &i in &ids {
                        if attempts == 0 || left == 0 {
                            break;
                        }
                        attempts -= 1;
                        last = Some(i);
                        let claim = Claim {
                            consumer: who,
                            min_idle_ms: min_idle,
                            delivery_time_ms: now,
                            count,
                            force: false,
                            now_ms: now,
                        };
                        if let Some(owned) = m.claim(i, &claim, exists[(i.ms * 3 + i.seq) as usize])
                        {
                            claims.push((i, owned));
                            left -= 1;
                        }
                    }
                    let next =
                        last.and_then(|l| m.pel.range(l..).map(|(i, _)| *i).find(|&i| i > l));
                    assert_eq!(got.next, next.unwrap_or(StreamId::MIN), "step {step}");
                    let got_claims: Vec<(StreamId, bool)> = got
                        .claims
                        .iter()
                        .map(|c| match c {
                            Claimed::Owned(i, _) => (*i, true),
                            Claimed::Gone(i, _) => (*i, false),
                        })
                        .collect();
                    assert_eq!(got_claims, claims, "step {step}");
                }
                8 => {
                    exists[at as usize] = !exists[at as usize];
                }
                _ => {
                    let before = g.last_id();
                    assert_eq!(g.raise_last_id(id(at)), id(at) > before);
                    assert_eq!(g.last_id(), before.max(id(at)));
                }
            }
            check(&g, &m);
        }
    }
}

/// The group collection keeps its byte count through creations, changes and removals.
#[test]
fn groups_account_their_bytes() {
    let mut gs = Groups::new();
    assert!(gs.create(b"g1", StreamId::MIN, None));
    assert!(!gs.create(b"g1", StreamId::MAX, Some(3)));
    assert!(gs.create(b"g2", StreamId::new(5, 0), Some(2)));
    let empty = gs.heap_bytes();
    assert_eq!(empty, 2 * (GROUP_BYTES + 2));
    gs.update(b"g1", |g| {
        g.touch_consumer(b"c", 1);
        for n in 0..10 {
            g.deliver(StreamId::new(n, 0), b"c", 1);
        }
    });
    assert!(gs.heap_bytes() > empty);
    let g1 = gs.get(b"g1").map(|g| g.recount());
    assert_eq!(gs.heap_bytes(), empty + g1.unwrap_or(0));
    assert_eq!(
        gs.update(b"g1", |g| g.delete_consumer(b"c")),
        Some(Some(10))
    );
    assert_eq!(gs.heap_bytes(), empty);
    assert!(gs.update(b"nope", |_| ()).is_none());
    assert!(gs.destroy(b"g1"));
    assert!(!gs.destroy(b"g1"));
    assert_eq!(gs.heap_bytes(), GROUP_BYTES + 2);
    assert_eq!(
        gs.iter().map(|(n, _)| n.to_vec()).collect::<Vec<_>>(),
        vec![b"g2".to_vec()]
    );
}

/// A read of new entries counts them while nothing deleted lies ahead, estimates otherwise,
/// and the lag follows (the cases of Redis's `streamEstimateDistanceFromFirstEverEntry`).
#[test]
fn read_counter_and_lag_follow_redis() {
    let meta = StreamMeta {
        length: 3,
        entries_added: 3,
        last_id: StreamId::new(3, 0),
        first_id: StreamId::new(1, 0),
        max_deleted_id: StreamId::MIN,
    };
    let mut g = Group::new(StreamId::MIN, None);
    assert_eq!(g.lag(&meta), Some(3));
    assert!(g.advance(StreamId::new(1, 0), &meta));
    assert_eq!(g.entries_read(), Some(1));
    assert!(g.advance(StreamId::new(2, 0), &meta));
    assert_eq!(g.entries_read(), Some(2));
    assert!(!g.advance(StreamId::new(2, 0), &meta));
    assert_eq!(g.lag(&meta), Some(1));
    // An entry deleted ahead of the group: the counter cannot follow a middle entry.
    let fragmented = StreamMeta {
        length: 2,
        max_deleted_id: StreamId::new(2, 5),
        ..meta
    };
    let mut h = Group::new(StreamId::new(1, 0), Some(1));
    assert_eq!(h.lag(&fragmented), None);
    h.advance(StreamId::new(2, 0), &fragmented);
    assert_eq!(h.entries_read(), None);
    h.advance(StreamId::new(3, 0), &fragmented);
    assert_eq!(h.entries_read(), Some(3));
    assert_eq!(h.lag(&fragmented), Some(0));
    // A fresh stream, an ID before the first entry, the first entry itself.
    assert_eq!(StreamMeta::default().entries_up_to(StreamId::MAX), Some(0));
    let trimmed = StreamMeta {
        length: 2,
        entries_added: 10,
        last_id: StreamId::new(10, 0),
        first_id: StreamId::new(9, 0),
        max_deleted_id: StreamId::MIN,
    };
    assert_eq!(trimmed.entries_up_to(StreamId::new(4, 0)), Some(8));
    assert_eq!(trimmed.entries_up_to(StreamId::new(9, 0)), Some(9));
    assert_eq!(trimmed.entries_up_to(StreamId::new(9, 1)), None);
    assert_eq!(trimmed.entries_up_to(StreamId::new(11, 0)), None);
    // ENTRIESREAD past the count: a negative lag, as Redis shows.
    let ahead = Group::new(StreamId::new(10, 0), Some(12));
    assert_eq!(ahead.lag(&trimmed), Some(-2));
}

/// XPENDING's summary lists the bounds and only consumers that own entries, in name order.
#[test]
fn pending_summary_and_ranges() {
    let mut g = Group::new(StreamId::MIN, None);
    assert_eq!(g.pending_summary().bounds, None);
    g.create_consumer(b"idle", 1);
    g.touch_consumer(b"b", 1);
    g.touch_consumer(b"a", 1);
    g.deliver(StreamId::new(2, 0), b"b", 1);
    g.deliver(StreamId::new(1, 0), b"a", 1);
    g.deliver(StreamId::new(3, 0), b"b", 1);
    let s = g.pending_summary();
    assert_eq!(s.count, 3);
    assert_eq!(s.bounds, Some((StreamId::new(1, 0), StreamId::new(3, 0))));
    assert_eq!(s.consumers, vec![(&b"a"[..], 1), (&b"b"[..], 2)]);
    let ids: Vec<StreamId> = g
        .pending_range(StreamId::new(2, 0), StreamId::MAX)
        .map(|(i, _)| i)
        .collect();
    assert_eq!(ids, vec![StreamId::new(2, 0), StreamId::new(3, 0)]);
    assert_eq!(g.pending_range(StreamId::MAX, StreamId::MIN).count(), 0);
    // A delivery of a pending entry to another consumer moves it.
    g.deliver(StreamId::new(2, 0), b"a", 7);
    assert_eq!(g.consumer(b"b").map(Consumer::pending_len), Some(1));
    assert_eq!(
        g.nack(StreamId::new(2, 0)).map(Nack::consumer),
        Some(&b"a"[..])
    );
}
