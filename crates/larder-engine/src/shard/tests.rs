//! Tests of `shard.rs`.

use super::*;

fn put(s: &mut Shard, k: &[u8], v: &[u8], at: u64) -> SlotId {
    let h = hash_key(k);
    assert!(s.find(k, h, 0).is_none());
    s.insert_string(k, h, v, at, 0)
}

#[test]
fn removed_since_remembers_recent_removals_and_is_conservative_after() {
    let mut s = Shard::new(1);
    let (k, h) = (b"k".as_slice(), hash_key(b"k"));
    let before = s.stamp();
    let slot = put(&mut s, k, b"v", 0);
    assert!(!s.removed_since(h, before));
    s.remove(slot);
    assert!(s.removed_since(h, before));
    let after = s.stamp();
    assert!(!s.removed_since(h, after));
    // Other keys' removals: not this key's, until the shard forgets more than it keeps.
    for i in 0..REMOVED_KEPT {
        let key = format!("o{i}");
        let slot = put(&mut s, key.as_bytes(), b"v", 0);
        s.remove(slot);
    }
    assert!(!s.removed_since(h, after));
    let slot = put(&mut s, b"last", b"v", 0);
    s.remove(slot);
    assert!(s.removed_since(h, after), "forgotten removals answer yes");
    // A flush of a few keys remembers each.
    let before = s.stamp();
    put(&mut s, k, b"v", 0);
    s.clear();
    assert!(s.removed_since(h, before));
}

#[test]
fn insert_find_remove() {
    let mut s = Shard::new(1);
    for i in 0..10_000u32 {
        put(
            &mut s,
            format!("k{i}").as_bytes(),
            format!("v{i}").as_bytes(),
            0,
        );
    }
    assert_eq!(s.len(), 10_000);
    for i in 0..10_000u32 {
        let k = format!("k{i}");
        let slot = s
            .find(k.as_bytes(), hash_key(k.as_bytes()), 0)
            .expect("present");
        assert_eq!(s.entry(slot).string(), Some(format!("v{i}").as_bytes()));
    }
    for i in (0..10_000u32).step_by(2) {
        let k = format!("k{i}");
        let slot = s
            .find(k.as_bytes(), hash_key(k.as_bytes()), 0)
            .expect("present");
        assert_eq!(s.remove(slot).key(), k.as_bytes());
    }
    assert_eq!(s.len(), 5_000);
    for i in 0..10_000u32 {
        let k = format!("k{i}");
        assert_eq!(
            s.find(k.as_bytes(), hash_key(k.as_bytes()), 0).is_some(),
            i % 2 == 1
        );
    }
}

#[test]
fn versions_increase_and_are_unique() {
    let mut s = Shard::new(7);
    let slot = put(&mut s, b"a", b"1", 0);
    let v1 = s.entry(slot).version();
    s.set_string(slot, b"2");
    let v2 = s.entry(slot).version();
    assert!(v2 > v1);
    assert_eq!(v2 & 0xfffff, 7);
    s.set_expire(slot, Some(100));
    assert!(s.entry(slot).version() > v2);
}

#[test]
fn lazy_and_active_expiry() {
    let mut s = Shard::new(0);
    put(&mut s, b"a", b"1", 100);
    put(&mut s, b"b", b"1", 200);
    put(&mut s, b"c", b"1", 0);
    assert_eq!(s.volatile_len(), 2);
    assert_eq!(s.next_deadline_ms(), Some(100));
    // Lazy: a lookup after the deadline removes it.
    assert!(s.find(b"a", hash_key(b"a"), 100).is_none());
    assert_eq!(s.len(), 2);
    let mut expired = Vec::new();
    assert_eq!(s.expire_due(250, 10, |e| expired.push(e.key().to_vec())), 1);
    assert_eq!(expired, vec![b"b".to_vec()]);
    assert_eq!(s.len(), 1);
    assert_eq!(s.volatile_len(), 0);
}

#[test]
fn set_expire_moves_deadline() {
    let mut s = Shard::new(0);
    let slot = put(&mut s, b"a", b"1", 100);
    s.set_expire(slot, Some(500));
    assert_eq!(s.expire_due(200, 10, |_| {}), 0);
    s.set_expire(slot, None);
    assert_eq!(s.expire_due(1000, 10, |_| {}), 0);
    assert_eq!(s.len(), 1);
}

#[test]
fn scan_returns_stable_keys_across_growth_and_shrink() {
    let mut s = Shard::new(0);
    for i in 0..1000u32 {
        put(&mut s, format!("stable{i}").as_bytes(), b"", 0);
    }
    let mut seen = std::collections::HashSet::new();
    let mut cursor = Some(0);
    let mut round = 0u32;
    while let Some(c) = cursor {
        cursor = s.scan(c, 10, |e| {
            seen.insert(e.key().to_vec());
        });
        // Churn between calls: add many keys, then delete them again.
        for j in 0..200u32 {
            put(&mut s, format!("churn{round}-{j}").as_bytes(), b"", 0);
        }
        for j in 0..200u32 {
            let k = format!("churn{round}-{j}");
            let slot = s
                .find(k.as_bytes(), hash_key(k.as_bytes()), 0)
                .expect("present");
            s.remove(slot);
        }
        round += 1;
    }
    for i in 0..1000u32 {
        assert!(
            seen.contains(format!("stable{i}").as_bytes()),
            "missed stable{i}"
        );
    }
}

#[test]
fn update_string_grows_in_place() {
    let mut s = Shard::new(0);
    let slot = put(&mut s, b"k", b"ab", 0);
    for _ in 0..1000 {
        s.update_string(slot, |v| v.push(b'x'));
    }
    assert_eq!(s.entry(slot).string().map(<[u8]>::len), Some(1002));
    assert!(s.entry(slot).is_grown_string());
}

#[test]
fn unshare_string_changes_the_representation_only() {
    let mut s = Shard::new(0);
    let slot = put(&mut s, b"k", b"ab", 0);
    let v0 = s.entry(slot).version();
    assert!(!s.entry(slot).is_grown_string());
    s.unshare_string(slot);
    assert!(s.entry(slot).is_grown_string());
    assert_eq!(s.entry(slot).string(), Some(&b"ab"[..]));
    assert_eq!(s.entry(slot).version(), v0, "not a write");
    assert_eq!(s.used_bytes, s.entry(slot).memory_bytes());
    // Again, and on another type: nothing happens.
    s.unshare_string(slot);
    assert_eq!(s.used_bytes, s.entry(slot).memory_bytes());
    let list = s.insert_object(b"l", hash_key(b"l"), Object::List(Default::default()), 0, 0);
    s.unshare_string(list);
    assert_eq!(s.entry(list).kind(), crate::ObjectKind::List);
    s.remove(slot);
    s.remove(list);
    assert_eq!(s.used_bytes, 0);
}

#[test]
fn object_mut_bumps_version_and_accounts() {
    let mut s = Shard::new(0);
    let slot = s.insert_object(b"l", hash_key(b"l"), Object::List(Default::default()), 0, 0);
    let (v0, bytes0) = (s.entry(slot).version(), s.used_bytes);
    let len = s.object_mut(slot, |o| match o {
        Object::List(l) => l.push_back(&[[7u8; 100]]),
        _ => 0,
    });
    assert_eq!(len, 1);
    assert!(s.entry(slot).version() > v0);
    assert!(s.used_bytes >= bytes0 + 100);
    s.remove(slot);
    assert_eq!(s.used_bytes, 0);
}

#[test]
fn sample_finds_live_and_volatile_entries() {
    let mut s = Shard::new(0);
    let mut seen = 0;
    s.sample(5, false, |_, _| seen += 1);
    assert_eq!(seen, 0);
    for i in 0..1000u32 {
        put(
            &mut s,
            format!("k{i}").as_bytes(),
            b"",
            if i == 7 { 50 } else { 0 },
        );
    }
    // Remove most keys so the slab is sparse.
    for i in 0..1000u32 {
        if i % 100 != 7 {
            let k = format!("k{i}");
            let slot = s
                .find(k.as_bytes(), hash_key(k.as_bytes()), 0)
                .expect("present");
            s.remove(slot);
        }
    }
    let mut keys = Vec::new();
    s.sample(5, false, |slot, e| {
        assert!(s.holds(slot, e.version()));
        keys.push(e.key().to_vec());
    });
    assert_eq!(keys.len(), 5);
    let mut vol = Vec::new();
    s.sample(5, true, |_, e| vol.push(e.key().to_vec()));
    assert!(!vol.is_empty() && vol.iter().all(|k| k == b"k7"));
    let mut near = Vec::new();
    s.nearest_deadlines(3, |_, e| near.push(e.key().to_vec()));
    assert_eq!(near, vec![b"k7".to_vec()]);
}

#[test]
fn expire_keep_version_and_explicit_version() {
    let mut s = Shard::new(3);
    let slot = put(&mut s, b"a", b"1", 0);
    let v = s.entry(slot).version();
    s.set_expire_keep_version(slot, Some(100));
    assert_eq!(s.entry(slot).version(), v);
    assert_eq!(s.next_deadline_ms(), Some(100));
    s.set_expire_keep_version(slot, None);
    assert_eq!(s.next_deadline_ms(), None);
    assert_eq!(s.entry(slot).expire_at_ms(), None);
    assert!(!s.set_version(slot, 0));
    assert_eq!(s.entry(slot).version(), v);
    assert!(s.set_version(slot, 12345));
    assert_eq!(s.entry(slot).version(), 12345);
}

#[test]
fn mc_state_survives_reads_and_clears_on_write() {
    let mut s = Shard::new(3);
    let slot = put(&mut s, b"a", b"1", 0);
    assert_eq!(s.entry(slot).mc_state(), 0);
    s.set_mc_state(slot, 0b101);
    assert_eq!(s.entry(slot).mc_state(), 0b101);
    s.touch(slot, 5);
    s.set_expire_keep_version(slot, Some(50));
    assert_eq!(s.entry(slot).mc_state(), 0b101);
    assert!(s.set_version(slot, 777 << 20));
    assert_eq!(s.entry(slot).mc_state(), 0b101);
    s.set_string(slot, b"2");
    assert_eq!(s.entry(slot).mc_state(), 0);
    s.set_mc_state(slot, 1);
    s.set_expire(slot, None);
    assert_eq!(s.entry(slot).mc_state(), 0);
    s.set_mc_state(slot, 1);
    s.update_string(slot, |v| v.push(b'x'));
    assert_eq!(s.entry(slot).mc_state(), 0);
}

#[test]
fn clear_empties() {
    let mut s = Shard::new(0);
    put(&mut s, b"a", b"1", 5);
    s.clear();
    assert!(s.is_empty());
    assert_eq!(s.next_deadline_ms(), None);
    assert!(s.find(b"a", hash_key(b"a"), 0).is_none());
}

#[test]
fn shards_grow_their_index_at_different_fills() {
    // The fill (len / capacity) at which each shard's index grew past 1024 buckets.
    let growth_fill = |id: u32| {
        let mut s = Shard::new(id);
        let mut fills = Vec::new();
        for i in 0..20_000 {
            let k = format!("key:{i:012}");
            let cap = s.index.capacity();
            put(&mut s, k.as_bytes(), b"v", 0);
            if cap >= 1024 && s.index.capacity() != cap {
                fills.push((s.len() - 1) as f64 / cap as f64);
            }
        }
        fills
    };
    let first = growth_fill(0);
    let last = growth_fill(255);
    assert!(!first.is_empty() && !last.is_empty());
    for f in first {
        assert!((0.49..0.52).contains(&f), "{f}");
    }
    for f in last {
        assert!(f > 0.95, "{f}");
    }
}

#[test]
fn shards_grow_their_slab_chunk_at_different_fills() {
    // The fills at which the first slab chunk's capacity doubled, from 256 slots up.
    let growth_fill = |id: u32| {
        let mut s = Shard::new(id);
        let mut fills = Vec::new();
        for i in 0..CHUNK_SLOTS {
            let cap = s.chunks.first().map_or(0, Vec::capacity);
            put(&mut s, format!("key:{i:012}").as_bytes(), b"v", 0);
            if cap >= 256 && s.chunks[0].capacity() != cap {
                fills.push((s.chunks[0].len() - 1) as f64 / cap as f64);
            }
        }
        assert_eq!(s.chunks[0].capacity(), CHUNK_SLOTS);
        fills
    };
    let first = growth_fill(0);
    assert!(!first.is_empty());
    assert!(first.iter().all(|f| (0.49..0.52).contains(f)), "{first:?}");
    assert!(growth_fill(255).iter().all(|&f| f > 0.95));
}

#[test]
fn entries_carry_their_index_tag_through_resizes() {
    let mut s = Shard::new(0);
    let keys: Vec<String> = (0..5_000).map(|i| format!("key:{i:012}")).collect();
    for k in &keys {
        put(&mut s, k.as_bytes(), b"v", 0);
    }
    // Shrink the index by removing most keys, then check every survivor.
    for k in &keys[..4_900] {
        let slot = s.find_raw(k.as_bytes(), hash_key(k.as_bytes()));
        s.remove(slot.expect("present"));
    }
    for k in &keys[4_900..] {
        let h = hash_key(k.as_bytes());
        let slot = s.find_raw(k.as_bytes(), h).expect("survivor");
        assert_eq!(s.entry(slot).hash_tag, tag_of(h));
        assert_eq!(s.entry(slot).key(), k.as_bytes());
    }
    assert!(s.index.capacity() < 1024);
}
