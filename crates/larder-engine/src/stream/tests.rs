//! Tests of the stream structure, above all thousands of random operations against a
//! `BTreeMap` model.

use std::collections::BTreeMap;

use super::*;

type Pairs = Vec<(Vec<u8>, Vec<u8>)>;

fn pairs(f: Fields<'_>) -> Pairs {
    f.map(|(a, b)| (a.to_vec(), b.to_vec())).collect()
}

#[test]
fn append_get_range() {
    let mut s = Stream::new();
    let limits = NodeLimits::default();
    for i in 1..=250u64 {
        let v = i.to_string();
        assert_eq!(
            s.append(StreamId::new(i, 0), &[b"f", v.as_bytes()], limits),
            Ok(())
        );
    }
    assert_eq!(s.len(), 250);
    assert_eq!(s.node_count(), 3);
    assert_eq!(
        s.get(StreamId::new(7, 0)).map(pairs),
        Some(vec![(b"f".to_vec(), b"7".to_vec())])
    );
    assert!(s.get(StreamId::new(7, 1)).is_none());
    let ids: Vec<u64> = s
        .range(StreamId::new(99, 0), StreamId::new(102, 0), true)
        .map(|(id, _)| id.ms)
        .collect();
    assert_eq!(ids, [102, 101, 100, 99]);
    // An approximate trim removes whole nodes only.
    assert_eq!(s.trim(Trim::MaxLen(180), true, 0), 0);
    assert_eq!(s.trim(Trim::MaxLen(150), true, 0), 100);
    assert_eq!(s.first_id(), StreamId::new(101, 0));
}

#[test]
fn ids_from_specs() {
    let mut s = Stream::new();
    assert_eq!(s.next_id(IdSpec::Auto, 5), Ok(StreamId::new(5, 0)));
    assert_eq!(s.next_id(IdSpec::AutoSeq(0), 5), Ok(StreamId::new(0, 1)));
    s.set_last_id(StreamId::new(9, 3));
    assert_eq!(s.next_id(IdSpec::Auto, 5), Ok(StreamId::new(9, 4)));
    assert_eq!(s.next_id(IdSpec::AutoSeq(9), 5), Ok(StreamId::new(9, 4)));
    assert_eq!(s.next_id(IdSpec::AutoSeq(8), 5), Err(AddError::TooSmall));
    assert_eq!(
        s.next_id(IdSpec::Explicit(StreamId::new(9, 3)), 5),
        Err(AddError::TooSmall)
    );
    s.set_last_id(StreamId::new(9, u64::MAX));
    assert_eq!(s.next_id(IdSpec::AutoSeq(9), 5), Err(AddError::TooSmall));
    assert_eq!(s.next_id(IdSpec::Auto, 5), Ok(StreamId::new(10, 0)));
    s.set_last_id(StreamId::MAX);
    assert_eq!(s.next_id(IdSpec::Auto, 5), Err(AddError::Exhausted));
}

/// The model: live entries, and the metadata Redis keeps.
#[derive(Default)]
struct Model {
    entries: BTreeMap<StreamId, Pairs>,
    last_id: StreamId,
    max_deleted: StreamId,
    added: u64,
}

fn check(s: &Stream, m: &Model, rng: &mut impl FnMut() -> u64) {
    assert_eq!(s.len(), m.entries.len() as u64);
    assert_eq!(s.last_id(), m.last_id);
    assert_eq!(s.max_deleted_id(), m.max_deleted);
    assert_eq!(s.entries_added(), m.added);
    let first = m.entries.keys().next().copied().unwrap_or_default();
    assert_eq!(s.first_id(), first);
    let newest = m.entries.keys().next_back().copied();
    assert_eq!(s.last_live_id(), newest);
    assert_eq!(s.edge(true).map(|(id, _)| id), newest);
    assert_eq!(s.heap_bytes(), s.recount_heap());
    // A random range both ways with a random count.
    let a = StreamId::new(rng() % 400, rng() % 4);
    let b = StreamId::new(rng() % 400, rng() % 4);
    let (lo, hi) = (a.min(b), a.max(b));
    let count = (rng() % 20) as usize + 1;
    let got: Vec<(StreamId, Pairs)> = s
        .range(lo, hi, false)
        .take(count)
        .map(|(id, f)| (id, pairs(f)))
        .collect();
    let want: Vec<(StreamId, Pairs)> = m
        .entries
        .range(lo..=hi)
        .take(count)
        .map(|(id, f)| (*id, f.clone()))
        .collect();
    assert_eq!(got, want);
    let got: Vec<(StreamId, Pairs)> = s
        .range(lo, hi, true)
        .take(count)
        .map(|(id, f)| (id, pairs(f)))
        .collect();
    let want: Vec<(StreamId, Pairs)> = m
        .entries
        .range(lo..=hi)
        .rev()
        .take(count)
        .map(|(id, f)| (*id, f.clone()))
        .collect();
    assert_eq!(got, want);
    assert_eq!(s.get(a).map(pairs), m.entries.get(&a).cloned());
}

#[test]
fn randomized_against_a_model() {
    let mut rng = crate::xorshift::xorshift(0x2545_f491_4f6c_dd1d);
    let rounds = [(4096, 100), (0, 3), (64, 0), (200, 1), (4096, 7)];
    for (max_bytes, max_entries) in rounds {
        let limits = NodeLimits {
            max_bytes,
            max_entries,
        };
        let mut s = Stream::new();
        let mut m = Model::default();
        let mut now = 0u64;
        for _ in 0..6000 {
            let op = rng() % 100;
            if op < 55 {
                // XADD: auto, ms-* or explicit IDs; fields shared with the master or not.
                now += rng() % 3;
                let spec = match rng() % 3 {
                    0 => IdSpec::Auto,
                    1 => IdSpec::AutoSeq(m.last_id.ms + rng() % 2),
                    _ => IdSpec::Explicit(StreamId::new(m.last_id.ms + rng() % 3, rng() % 5)),
                };
                let n = (rng() % 3) as usize + 1;
                let owned: Vec<Vec<u8>> = (0..n)
                    .flat_map(|i| {
                        let name = if rng() % 4 == 0 {
                            format!("g{i}")
                        } else {
                            format!("f{i}")
                        };
                        let len = (rng() % 12) as usize;
                        [name.into_bytes(), vec![b'0' + (rng() % 10) as u8; len]]
                    })
                    .collect();
                let fields: Vec<&[u8]> = owned.iter().map(Vec::as_slice).collect();
                match s.next_id(spec, now) {
                    Ok(id) => {
                        assert!(id > m.last_id);
                        assert_eq!(s.append(id, &fields, limits), Ok(()));
                        let p = owned
                            .chunks(2)
                            .map(|c| (c[0].clone(), c[1].clone()))
                            .collect();
                        m.entries.insert(id, p);
                        m.last_id = id;
                        m.added += 1;
                    }
                    Err(e) => {
                        assert_eq!(e, AddError::TooSmall);
                        assert!(
                            matches!(spec, IdSpec::Explicit(id) if id <= m.last_id)
                                || matches!(spec, IdSpec::AutoSeq(ms) if ms < m.last_id.ms)
                        );
                    }
                }
            } else if op < 75 {
                // XDEL of an existing or a random ID.
                let id = match m.entries.keys().nth((rng() % 50) as usize) {
                    Some(&id) if rng() % 4 != 0 => id,
                    _ => StreamId::new(rng() % 400, rng() % 4),
                };
                let had = m.entries.remove(&id).is_some();
                assert_eq!(s.delete(id), had);
                if had && id > m.max_deleted {
                    m.max_deleted = id;
                }
            } else if op < 90 {
                // XTRIM MAXLEN or MINID, exact or approximate, with or without LIMIT.
                let len = m.entries.len() as u64;
                let how = if rng() % 2 == 0 {
                    Trim::MaxLen(len.saturating_sub(rng() % 150))
                } else {
                    let k = (rng() % 150) as usize;
                    Trim::MinId(m.entries.keys().nth(k).copied().unwrap_or(m.last_id))
                };
                let approx = rng() % 2 == 0;
                let limit = if approx && rng() % 2 == 0 {
                    rng() % 300
                } else {
                    0
                };
                let exact: Vec<StreamId> = match how {
                    Trim::MaxLen(n) => m
                        .entries
                        .keys()
                        .take(len.saturating_sub(n) as usize)
                        .copied()
                        .collect(),
                    Trim::MinId(min) => m.entries.range(..min).map(|(k, _)| *k).collect(),
                };
                let removed = s.trim(how, approx, limit);
                if approx {
                    assert!(removed <= exact.len() as u64);
                    if limit > 0 {
                        assert!(removed <= limit);
                    }
                } else {
                    assert_eq!(removed, exact.len() as u64);
                }
                for id in exact.iter().take(removed as usize) {
                    m.entries.remove(id);
                }
            } else if op < 93 {
                // XSETID forward.
                let id = StreamId::new(m.last_id.ms + rng() % 3, rng() % 3).max(m.last_id);
                s.set_last_id(id);
                m.last_id = id;
                let added = m.added + rng() % 3;
                s.set_entries_added(added);
                m.added = added;
            } else {
                check(&s, &m, &mut rng);
            }
        }
        check(&s, &m, &mut rng);
        let all: Vec<StreamId> = s
            .range(StreamId::MIN, StreamId::MAX, false)
            .map(|(id, _)| id)
            .collect();
        assert_eq!(all, m.entries.keys().copied().collect::<Vec<_>>());
    }
}

/// Bytes per entry for entries of 3 fields (names shared, 8-byte values): 100,000 such
/// entries (IDs 3 to a millisecond) took 4,632,336 bytes in Redis 7.0.15 by `MEMORY USAGE
/// ... SAMPLES 0` (46.3 an entry); the stream's own count must stay below that.
#[test]
fn dense_entries() {
    let mut s = Stream::new();
    for i in 0..100_000u64 {
        let v = format!("{:08}", i % 100_000_000);
        let fields: [&[u8]; 6] = [
            b"name",
            v.as_bytes(),
            b"kind",
            v.as_bytes(),
            b"size",
            v.as_bytes(),
        ];
        assert_eq!(
            s.append(
                StreamId::new(1_700_000_000_000 + i / 3, i % 3),
                &fields,
                NodeLimits::default()
            ),
            Ok(())
        );
    }
    let per_entry = s.heap_bytes() as f64 / 100_000.0;
    assert!(per_entry < 46.3, "{per_entry} bytes per entry");
}
