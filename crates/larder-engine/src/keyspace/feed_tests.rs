//! Tests of `keyspace.rs` and its submodules.

use super::*;
use crate::evict::EvictionPolicy;
use crate::feed::{Change, Consumer, Interest};

#[derive(Default)]
struct Collect(Mutex<Vec<(u64, Vec<Change>)>>);

impl Consumer for Collect {
    fn committed(&self, seq: u64, changes: &[Change]) {
        self.0.lock().push((seq, changes.to_vec()));
    }
}

fn kinds(groups: &[(u64, Vec<Change>)]) -> Vec<Vec<(ChangeKind, Vec<u8>)>> {
    groups
        .iter()
        .map(|(_, g)| g.iter().map(|c| (c.kind, c.key.clone())).collect())
        .collect()
}

/// Every kind of write reaches the feed, each as its own group in execution order, with
/// versions and (when asked) values: writes, deletes, lazy and active expiry, eviction,
/// flush and swap.
#[test]
fn every_write_kind_is_recorded_in_order() {
    let ks = Keyspace::new(2);
    let c = Arc::new(Collect::default());
    ks.feed().subscribe(Interest::VALUES, c.clone());
    let db = ks.db(0);
    {
        let (mut s, h) = db.lock_key(b"a");
        let slot = s.insert_string(b"a", h, b"1", 0, 0);
        s.set_string(slot, b"2");
    }
    {
        let (mut s, h) = db.lock_key(b"a");
        let slot = s.find(b"a", h, 0).expect("a");
        s.remove(slot);
    }
    {
        let (mut s, h) = db.lock_key(b"lazy");
        s.insert_string(b"lazy", h, b"x", 5, 0);
    }
    {
        let (mut s, h) = db.lock_key(b"lazy");
        assert!(s.find(b"lazy", h, 10).is_none());
    }
    {
        let (mut s, h) = db.lock_key(b"active");
        s.insert_string(b"active", h, b"y", 5, 0);
    }
    ks.expire_cycle(10, |_, _| {});
    {
        let (mut s, h) = db.lock_key(b"ev");
        s.insert_string(b"ev", h, b"z", 0, 0);
    }
    ks.evict(EvictionPolicy::AllkeysRandom, 5, 10, 1, 1, |_, _| {});
    db.clear();
    ks.swap_dbs(0, 1);
    let got = c.0.lock().clone();
    let seqs: Vec<u64> = got.iter().map(|(s, _)| *s).collect();
    assert_eq!(seqs, (1..=seqs.len() as u64).collect::<Vec<_>>());
    use ChangeKind::*;
    assert_eq!(
        kinds(&got),
        vec![
            vec![(Written, b"a".to_vec()), (Written, b"a".to_vec())],
            vec![(Deleted, b"a".to_vec())],
            vec![(Written, b"lazy".to_vec())],
            vec![(Expired, b"lazy".to_vec())],
            vec![(Written, b"active".to_vec())],
            vec![(Expired, b"active".to_vec())],
            vec![(Written, b"ev".to_vec())],
            vec![(Evicted, b"ev".to_vec())],
            vec![(Flushed, Vec::new())],
            vec![(Swapped, Vec::new())],
        ]
    );
    // Versions grow with each write of a key; removals carry the removed value.
    let (w1, w2) = (&got[0].1[0], &got[0].1[1]);
    assert!(w2.version > w1.version);
    assert_eq!(w2.value, Some(crate::feed::Value::String(b"2".to_vec())));
    assert_eq!(got[1].1[0].version, w2.version);
    assert_eq!(
        got[7].1[0].value,
        Some(crate::feed::Value::String(b"z".to_vec()))
    );
    assert_eq!((got[9].1[0].db, got[9].1[0].class), (0, 1));
}

/// A group spanning several shards commits once, after the last write, while its shards
/// are still locked.
#[test]
fn a_group_over_several_shards_commits_whole() {
    let ks = Keyspace::new(1);
    let c = Arc::new(Collect::default());
    ks.feed().subscribe(Interest::CHANGES, c.clone());
    let keys: Vec<Vec<u8>> = (0..20).map(|i| format!("k{i}").into_bytes()).collect();
    let mut which: Vec<_> = keys.iter().map(|k| (0, Db::route(k).0)).collect();
    let mut guards = ks.lock_many(&mut which);
    {
        let _group = ks.feed().group();
        for k in &keys {
            let (s, h) = Db::route(k);
            guards.get(0, s).insert_string(k, h, b"v", 0, 0);
            assert!(c.0.lock().is_empty(), "committed before the group ended");
        }
    }
    assert_eq!(c.0.lock().len(), 1);
    drop(guards);
    let got = c.0.lock().clone();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].1.len(), 20);
}
