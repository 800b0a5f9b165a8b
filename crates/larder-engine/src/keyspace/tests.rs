//! Tests of `keyspace.rs` and its submodules.

use std::time::Duration;

use super::*;
use crate::entry::ObjectKind;
use crate::evict::EvictionPolicy;

fn set(ks: &Keyspace, db: usize, k: &[u8], at: u64) {
    let (mut s, h) = ks.db(db).lock_key(k);
    if let Some(slot) = s.find(k, h, 0) {
        s.remove(slot);
    }
    s.insert_string(k, h, b"v", at, 0);
}

#[test]
fn prefetch_is_only_a_hint_and_never_waits_for_a_lock() {
    let ks = Keyspace::new(1);
    let keys: Vec<Vec<u8>> = (0..100).map(|i| format!("key:{i}").into_bytes()).collect();
    for k in keys.iter().step_by(2) {
        set(&ks, 0, k, 0);
    }
    let db = ks.db(0);
    // A shard held elsewhere is skipped, not waited for (this would deadlock otherwise).
    let (held, _) = db.lock_key(&keys[0]);
    let refs: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
    db.prefetch(&refs);
    drop(held);
    // More keys than one batch, absent ones, an empty key, an empty shard: no effect on
    // what lookups find.
    db.prefetch(&refs);
    db.prefetch(&[b"", b"nope"]);
    Keyspace::new(1).db(0).prefetch(&refs);
    // Runs of one key, keys sharing shards, one key alone; and every shard of the batch is
    // unlocked afterwards (locking each again below would deadlock otherwise).
    let runs: Vec<&[u8]> = refs.iter().flat_map(|k| [*k, *k, *k]).take(32).collect();
    db.prefetch(&runs);
    db.prefetch(&[refs[0]; 16]);
    db.prefetch(&refs[..1]);
    // Members: for some keys, none, and more than keys (ignored past the keys).
    let members: Vec<Option<&[u8]>> = (0..120)
        .map(|i| (i % 3 != 0).then_some(&b"m"[..]))
        .collect();
    db.prefetch_with(&refs, &members);
    db.prefetch_with(&refs[..10], &members[..3]);
    for k in &refs {
        drop(db.lock_key(k));
    }
    for (i, k) in keys.iter().enumerate() {
        let (mut s, h) = db.lock_key(k);
        assert_eq!(s.find(k, h, 0).is_some(), i % 2 == 0, "{i}");
    }
}

#[test]
fn scan_sees_every_key_once_without_churn() {
    let ks = Keyspace::new(1);
    for i in 0..5000 {
        set(&ks, 0, format!("key:{i}").as_bytes(), 0);
    }
    let mut cursor = 0;
    let mut all = Vec::new();
    loop {
        let (next, keys) = ks.db(0).scan(cursor, 37, &ScanFilter::default(), 0);
        all.extend(keys);
        if next == 0 {
            break;
        }
        cursor = next;
    }
    all.sort();
    let before = all.len();
    all.dedup();
    assert_eq!(before, all.len());
    assert_eq!(all.len(), 5000);
}

#[test]
fn scan_filters() {
    let ks = Keyspace::new(1);
    set(&ks, 0, b"user:1", 0);
    set(&ks, 0, b"user:2", 0);
    set(&ks, 0, b"other", 0);
    set(&ks, 0, b"user:gone", 1);
    let f = ScanFilter {
        pattern: Some(b"user:*"),
        kind: Some(ObjectKind::String),
    };
    let mut cursor = 0;
    let mut all = Vec::new();
    loop {
        let (next, keys) = ks.db(0).scan(cursor, 1000, &f, 10);
        all.extend(keys);
        if next == 0 {
            break;
        }
        cursor = next;
    }
    all.sort();
    assert_eq!(all, vec![b"user:1".to_vec(), b"user:2".to_vec()]);
}

#[test]
fn expire_cycle_reclaims_due_keys_only() {
    let ks = Keyspace::new(2);
    for i in 0..100 {
        set(&ks, 1, format!("a{i}").as_bytes(), 50);
        set(&ks, 1, format!("b{i}").as_bytes(), 500);
    }
    let mut seen = 0;
    let (removed, next) = ks.expire_cycle(100, |db, _| {
        assert_eq!(db, 1);
        seen += 1;
    });
    assert_eq!((removed, seen, next), (100, 100, 500));
    assert_eq!(ks.db(1).len(), 100);
    assert_eq!(ks.expired_keys(), 100);
}

#[test]
fn expiry_thread_reclaims_on_time() {
    let ks = Arc::new(Keyspace::new(1));
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let t = {
        let (ks, stop) = (Arc::clone(&ks), Arc::clone(&stop));
        std::thread::spawn(move || ks.run_expiry(100, || stop.load(Ordering::Relaxed), |_, _| {}))
    };
    std::thread::sleep(Duration::from_millis(20));
    let deadline = crate::clock::now_ms() + 30;
    set(&ks, 0, b"k", deadline);
    let t0 = std::time::Instant::now();
    while !ks.db(0).is_empty() && t0.elapsed() < Duration::from_secs(2) {
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(ks.db(0).len(), 0, "key not reclaimed");
    stop.store(true, Ordering::Relaxed);
    t.thread().unpark();
    t.join().expect("expiry thread");
}

fn evict_all(ks: &Keyspace, policy: EvictionPolicy, n: usize) -> (Eviction, Vec<Vec<u8>>) {
    let mut gone = Vec::new();
    let r = ks.evict(policy, 5, 1_000_000, usize::MAX, n, |_, e| {
        gone.push(e.key().to_vec())
    });
    (r, gone)
}

#[test]
fn evict_lru_prefers_idle_keys() {
    let ks = Keyspace::new(2);
    // 500 keys idle for 100 s, 500 just used, split over two databases.
    for i in 0..1000 {
        let k = format!("k{i}");
        let (mut s, h) = ks.db(i % 2).lock_key(k.as_bytes());
        let slot = s.insert_string(k.as_bytes(), h, b"v", 0, 1_000_000);
        if i < 500 {
            s.touch(slot, 900_000);
        }
    }
    let (r, gone) = evict_all(&ks, EvictionPolicy::AllkeysLru, 200);
    assert_eq!(r.keys, 200);
    assert!(!r.exhausted);
    let old = gone
        .iter()
        .filter(|k| {
            std::str::from_utf8(&k[1..])
                .ok()
                .and_then(|n| n.parse::<u32>().ok())
                < Some(500)
        })
        .count();
    // Best of 5 samples per database: nearly all evictions hit idle keys.
    assert!(old >= 190, "{old}");
    assert_eq!(ks.db(0).len() + ks.db(1).len(), 800);
    assert_eq!(ks.evicted_keys(), 200);
}

#[test]
fn evict_volatile_ttl_takes_nearest_deadline_and_skips_persistent_keys() {
    let ks = Keyspace::new(1);
    for i in 0..100u64 {
        set(&ks, 0, format!("v{i}").as_bytes(), 2_000_000 + i * 1000);
        set(&ks, 0, format!("p{i}").as_bytes(), 0);
    }
    let (r, gone) = evict_all(&ks, EvictionPolicy::VolatileTtl, 3);
    assert_eq!(r.keys, 3);
    assert_eq!(gone, vec![b"v0".to_vec(), b"v1".to_vec(), b"v2".to_vec()]);
    // volatile-lru removes only volatile keys and then reports exhaustion.
    let (r, gone) = evict_all(&ks, EvictionPolicy::VolatileLru, 1000);
    assert_eq!(r.keys, 97);
    assert!(r.exhausted);
    assert!(gone.iter().all(|k| k[0] == b'v'));
    assert_eq!(ks.db(0).len(), 100);
    let (r, _) = evict_all(&ks, EvictionPolicy::VolatileRandom, 10);
    assert_eq!((r.keys, r.exhausted), (0, true));
    let (r, _) = evict_all(&ks, EvictionPolicy::AllkeysRandom, 1000);
    assert_eq!((r.keys, r.exhausted), (100, true));
    assert!(ks.db(0).is_empty());
}

#[test]
fn evict_rechecks_a_database_skipped_as_empty() {
    let ks = Keyspace::new(3);
    set(&ks, 0, b"a", 0);
    let r = ks.evict(
        EvictionPolicy::AllkeysRandom,
        5,
        1000,
        usize::MAX,
        10,
        |_, _| {},
    );
    assert_eq!((r.keys, r.exhausted), (1, true));
    // Databases 1 and 2 are now marked empty; a key in 1 must still be found.
    set(&ks, 1, b"b", 0);
    let mut dbs = Vec::new();
    let r = ks.evict(
        EvictionPolicy::AllkeysLru,
        5,
        1001,
        usize::MAX,
        10,
        |d, _| dbs.push(d),
    );
    assert_eq!((r.keys, r.exhausted, dbs), (1, true, vec![1]));
}

#[test]
fn evict_stops_at_needed_bytes() {
    let ks = Keyspace::new(1);
    for i in 0..100 {
        set(&ks, 0, format!("k{i}").as_bytes(), 0);
    }
    let r = ks.evict(EvictionPolicy::AllkeysRandom, 5, 0, 1, 64, |_, _| {});
    assert_eq!((r.keys, r.exhausted), (1, false));
    assert!(r.bytes > 0);
}

#[test]
fn lfu_mode_counts_accesses_and_evicts_cold_keys() {
    let ks = Keyspace::new(1);
    ks.set_access_policy(true, 0, 1);
    let now = 1_000_000;
    for i in 0..200 {
        let k = format!("k{i}");
        let (mut s, h) = ks.db(0).lock_key(k.as_bytes());
        let slot = s.insert_string(k.as_bytes(), h, b"v", 0, now);
        assert_eq!(
            ks.lfu_freq(s.entry(slot).access(), now),
            crate::evict::LFU_INIT_VAL
        );
        if i >= 100 {
            for _ in 0..10 {
                s.find_touch(k.as_bytes(), h, now, crate::Access::Touch);
            }
            assert_eq!(ks.lfu_freq(s.entry(slot).access(), now), 15);
        }
    }
    let mut gone = Vec::new();
    let r = ks.evict(
        EvictionPolicy::AllkeysLfu,
        5,
        now,
        usize::MAX,
        50,
        |_, e| gone.push(e.key().to_vec()),
    );
    assert_eq!(r.keys, 50);
    let cold = gone
        .iter()
        .filter(|k| {
            std::str::from_utf8(&k[1..])
                .ok()
                .and_then(|n| n.parse::<u32>().ok())
                < Some(100)
        })
        .count();
    assert!(cold >= 48, "{cold}");
}

#[test]
fn swapdb_swaps() {
    let ks = Keyspace::new(2);
    set(&ks, 0, b"a", 0);
    ks.swap_dbs(0, 1);
    assert_eq!(ks.db(0).len(), 0);
    assert_eq!(ks.db(1).len(), 1);
}

#[test]
fn guards_lend_a_subset_of_their_shards() {
    let ks = Keyspace::new(2);
    let mut guards = ks.lock_many(&mut [(0, 3), (1, 0), (0, 1), (0, 7), (0, 3)]);
    assert!(guards.holds(0, 3) && guards.holds(1, 0));
    assert!(!guards.holds(0, 2));
    let lent: Vec<(usize, usize)> = guards
        .subset(&[(0, 1), (0, 2), (0, 7), (1, 0)])
        .into_iter()
        .map(|(k, _)| k)
        .collect();
    assert_eq!(
        lent,
        vec![(0, 1), (0, 7), (1, 0)],
        "the unlocked (0, 2) is left out"
    );
    assert!(guards.subset(&[]).is_empty());
    let held: Vec<(usize, usize)> = guards.iter_keyed().map(|(k, _)| k).collect();
    assert_eq!(held, [(0, 1), (0, 3), (0, 7), (1, 0)], "sorted, each once");
    drop(guards);
    // One shard: the same answers.
    let mut one = ks.lock_many(&mut [(1, 5)]);
    assert!(one.holds(1, 5) && !one.holds(0, 5));
    assert_eq!(one.subset(&[(0, 5), (1, 5)]).len(), 1);
    assert_eq!(one.iter_mut().count(), 1);
}

#[test]
fn prefetch_of_members_leaves_hyperloglogs_as_they_are() {
    let ks = Keyspace::new(1);
    let db = ks.db(0);
    let mut dense = crate::hyperloglog::new_sparse();
    crate::hyperloglog::to_dense(&mut dense).expect("valid");
    let keys: Vec<Vec<u8>> = (0..40).map(|i| format!("hll:{i}").into_bytes()).collect();
    for k in &keys {
        let (mut s, h) = db.lock_key(k);
        s.insert_object(k, h, Object::Str(dense.clone()), 0, 0);
    }
    let refs: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
    let members: Vec<Option<&[u8]>> = (0..40).map(|i| Some(&b"visitor"[..i % 8])).collect();
    db.prefetch_with(&refs, &members);
    for k in &refs {
        let (mut s, h) = db.lock_key(k);
        let slot = s.find(k, h, 0).expect("present");
        assert!(matches!(s.entry(slot).object(), Some(Object::Str(v)) if *v == dense));
    }
}
