use std::collections::HashSet;

use super::*;
use crate::xorshift::xorshift;

fn limits(max_intset: usize) -> Limits {
    Limits {
        set_max_intset_entries: max_intset,
        ..Limits::default()
    }
}

fn members(s: &Set) -> HashSet<Vec<u8>> {
    s.to_vecs().into_iter().collect()
}

/// The heap bytes counted from scratch, for comparison with the running count.
fn recount(s: &Set) -> usize {
    match &s.repr {
        Repr::Ints(i) => i.recount(),
        Repr::Table(t) => {
            let members: usize = t.iter().map(table::member_cost).sum();
            std::mem::size_of::<Table>() + t.heap_bytes_without_members() + members
        }
    }
}

#[test]
fn canonical_integers() {
    for (s, v) in [
        ("0", Some(0)),
        ("-1", Some(-1)),
        ("12", Some(12)),
        ("9223372036854775807", Some(i64::MAX)),
        ("-9223372036854775808", Some(i64::MIN)),
        ("9223372036854775808", None),
        ("-0", None),
        ("01", None),
        ("+1", None),
        (" 1", None),
        ("1 ", None),
        ("", None),
        ("-", None),
        ("1.0", None),
        ("1e3", None),
    ] {
        assert_eq!(canonical_int(s.as_bytes()), v, "{s:?}");
    }
    let mut buf = [0u8; 20];
    for v in [0, 1, -1, 10, -10, i64::MAX, i64::MIN, 12345] {
        assert_eq!(format_i64(v, &mut buf), v.to_string().as_bytes());
    }
}

#[test]
fn intset_widths_and_order() {
    let l = Limits::default();
    let width = |s: &Set| match &s.repr {
        Repr::Ints(i) => i.width(),
        Repr::Table(_) => 0,
    };
    let mut s = Set::new();
    assert!(s.insert(b"1005", &l));
    assert!(s.insert(b"1000", &l));
    assert!(!s.insert(b"1005", &l));
    assert_eq!(s.encoding(), "intset");
    assert_eq!(width(&s), 1, "offsets from the base 1000");
    assert!(s.insert(b"-3", &l));
    assert_eq!(width(&s), 2);
    assert!(s.insert(b"100000", &l));
    assert_eq!(width(&s), 3);
    assert!(s.insert(b"100000000", &l));
    assert_eq!(width(&s), 4);
    assert!(s.remove(b"100000000"));
    assert!(s.insert(b"-9223372036854775808", &l));
    assert!(s.insert(b"9223372036854775807", &l));
    assert_eq!(width(&s), 8);
    assert_eq!(
        s.to_vecs(),
        [
            &b"-9223372036854775808"[..],
            b"-3",
            b"1000",
            b"1005",
            b"100000",
            b"9223372036854775807"
        ]
    );
    assert!(s.contains(b"-3"));
    assert!(!s.contains(b"-03"));
    assert!(!s.contains(b"x"));
    assert!(s.remove(b"100000"));
    assert!(!s.remove(b"100000"));
    assert!(s.remove(b"-9223372036854775808"));
    assert!(!s.contains(b"-9223372036854775808"));
    assert_eq!(width(&s), 8, "never narrows");
    assert_eq!(s.len(), 4);
    assert_eq!(s.heap_bytes(), recount(&s));
    // A member in another form of the same number is another member.
    assert!(s.insert(b"01005", &l));
    assert_eq!(s.encoding(), "hashtable");
    assert!(s.contains(b"1005") && s.contains(b"01005"));
    assert_eq!(s.len(), 5);
}

/// The intset against a `BTreeSet` over values near the ends of the range, so that the base
/// moves down and the offsets widen in every way.
#[test]
fn intset_model() {
    let mut r = xorshift(11);
    let edges = [
        i64::MIN,
        i64::MIN + 1,
        -70_000,
        -300,
        -1,
        0,
        1,
        255,
        256,
        65_536,
        3_000_000_000,
        i64::MAX,
    ];
    for _ in 0..200 {
        let mut s = intset::IntSet::default();
        let mut model = std::collections::BTreeSet::new();
        for _ in 0..60 {
            let x = r();
            let v = edges[(x % edges.len() as u64) as usize].wrapping_add(((x >> 32) % 5) as i64);
            if x >> 60 < 11 {
                assert_eq!(s.insert(v), model.insert(v), "insert {v}");
            } else {
                assert_eq!(s.remove(v), model.remove(&v), "remove {v}");
            }
            assert_eq!(
                s.iter().collect::<Vec<_>>(),
                model.iter().copied().collect::<Vec<_>>()
            );
            assert!(model.iter().all(|&m| s.contains(m)));
            assert!(!s.contains(v) || model.contains(&v));
        }
    }
}

#[test]
fn converts_by_size_once() {
    let l = limits(3);
    let mut s = Set::from_members(&["1", "2", "3"], &l);
    assert_eq!(s.encoding(), "intset");
    s.insert(b"4", &l);
    assert_eq!(s.encoding(), "hashtable");
    s.remove(b"4");
    s.remove(b"3");
    assert_eq!(s.encoding(), "hashtable", "never converts back");
    assert_eq!(members(&s), members(&Set::from_members(&["1", "2"], &l)));
    let zero = Set::from_members(&["1"], &limits(0));
    assert_eq!(zero.encoding(), "hashtable");
}

#[test]
fn random_members_and_pops() {
    let l = limits(4);
    let mut r = xorshift(7);
    for encoding_members in [&["1", "2", "3"][..], &["a", "b", "c", "d", "e", "f"]] {
        let s = Set::from_members(encoding_members, &l);
        let all = members(&s);
        let mut seen = HashSet::new();
        for _ in 0..200 {
            let m = s.random(&mut r).map(Member::to_vec).expect("a member");
            assert!(all.contains(&m));
            seen.insert(m);
        }
        assert_eq!(seen, all, "every member comes up");
        for count in 0..=s.len() {
            let picks = s.sample_distinct(count, &mut r);
            let distinct: HashSet<usize> = picks.iter().copied().collect();
            assert_eq!((picks.len(), distinct.len()), (count, count));
            assert!(picks.iter().all(|&i| i < s.len()));
        }
        for count in 0..=s.len() + 1 {
            let mut p = s.clone();
            let popped = p.pop_many(count, &mut r);
            assert_eq!(popped.len(), count.min(s.len()));
            let mut back = members(&p);
            assert_eq!(back.len(), s.len() - popped.len());
            for m in popped {
                assert!(back.insert(m));
            }
            assert_eq!(back, all);
            assert_eq!(p.heap_bytes(), recount(&p));
        }
        let mut p = s.clone();
        let mut out = HashSet::new();
        while let Some(m) = p.pop_random(&mut r) {
            assert!(out.insert(m));
        }
        assert_eq!(out, all);
        assert!(p.is_empty());
    }
    assert!(Set::new().random(&mut r).is_none());
}

#[test]
fn algebra() {
    let l = limits(8);
    let a = Set::from_members(&["1", "2", "3", "x"], &l);
    let b = Set::from_members(&["2", "3", "4"], &l);
    let c = Set::from_members(&["3", "2", "9", "10", "11", "12", "13", "14", "15"], &l);
    assert_eq!(c.encoding(), "hashtable");
    let i = Set::intersection(&[&a, &b, &c], &l);
    assert_eq!(members(&i), members(&Set::from_members(&["2", "3"], &l)));
    assert_eq!(i.encoding(), "intset");
    let mut n = 0;
    assert_eq!(Set::intersect(&[&a, &b], 1, |_| n += 1), 1);
    assert_eq!(n, 1);
    assert_eq!(Set::intersect(&[&a, &a], 0, |_| ()), 4);
    let u = Set::union(&[&a, &b], &l);
    assert_eq!(
        members(&u),
        members(&Set::from_members(&["1", "2", "3", "4", "x"], &l))
    );
    let d = Set::difference(&a, &[&b, &c], &l);
    assert_eq!(members(&d), members(&Set::from_members(&["1", "x"], &l)));
    assert!(Set::difference(&a, &[&b, &a], &l).is_empty());
    let u = Set::union(&[&b, &c], &limits(3));
    assert_eq!(u.encoding(), "hashtable");
}

#[test]
fn scan_returns_everything_present_throughout() {
    let l = limits(2);
    let mut s = Set::from_members(&["1", "2", "3"], &limits(10));
    let mut got = Vec::new();
    assert_eq!(s.scan(0, 1, |m| got.push(m.to_vec())), 0);
    assert_eq!(got.len(), 3, "an intset in one call");
    for i in 0..100 {
        s.insert(format!("m{i}").as_bytes(), &l);
    }
    let keep: HashSet<Vec<u8>> = members(&s)
        .into_iter()
        .filter(|m| m.ends_with(b"7") || m.ends_with(b"3"))
        .collect();
    let mut seen = HashSet::new();
    let mut cursor = 0;
    let mut r = xorshift(3);
    let mut i = 0;
    loop {
        cursor = s.scan(cursor, 5, |m| {
            seen.insert(m.to_vec());
        });
        // Change the set between steps: remove members not kept, add new ones.
        for _ in 0..3 {
            if let Some(m) = s.random(&mut r).map(Member::to_vec) {
                if !keep.contains(&m) {
                    s.remove(&m);
                }
            }
        }
        s.insert(format!("new{i}").as_bytes(), &l);
        i += 1;
        if cursor == 0 {
            break;
        }
    }
    assert!(keep.is_subset(&seen));
    assert_eq!(s.heap_bytes(), recount(&s));
}

#[test]
fn equality_ignores_encoding() {
    let a = Set::from_members(&["1", "2"], &limits(10));
    let b = Set::from_members(&["2", "1"], &limits(1));
    assert_eq!(a.encoding(), "intset");
    assert_eq!(b.encoding(), "hashtable");
    assert_eq!(a, b);
    assert_ne!(a, Set::from_members(&["1"], &limits(10)));
}

/// Many random operations against a `HashSet`, with tiny limits so that conversions happen
/// by size and by a non-integer member; contents, length, encoding and the running memory
/// count are checked after every operation.
#[test]
fn model() {
    let mut r = xorshift(0x5eed);
    for round in 0..40 {
        let l = limits(round % 6);
        let mut s = Set::new();
        let mut model: HashSet<Vec<u8>> = HashSet::new();
        let mut converted = false;
        for _ in 0..400 {
            let x = r();
            let member: Vec<u8> = match x % 10 {
                0 => format!("s{}", (x >> 8) % 20).into_bytes(),
                1 => format!("0{}", (x >> 8) % 5).into_bytes(),
                2 => format!("{}", (x >> 8) as i64).into_bytes(),
                _ => format!("{}", ((x >> 8) % 40) as i64 - 20).into_bytes(),
            };
            match (x >> 4) % 8 {
                0..=3 => assert_eq!(s.insert(&member, &l), model.insert(member.clone())),
                4 | 5 => assert_eq!(s.remove(&member), model.remove(&member)),
                6 => {
                    if let Some(m) = s.pop_random(&mut r) {
                        assert!(model.remove(&m));
                    }
                }
                _ => {
                    let n = (x >> 12) as usize % 4;
                    for m in s.pop_many(n, &mut r) {
                        assert!(model.remove(&m));
                    }
                }
            }
            assert_eq!(s.contains(&member), model.contains(&member));
            assert_eq!(s.len(), model.len());
            assert_eq!(members(&s), model);
            let all_ints = model.iter().all(|m| canonical_int(m).is_some());
            if !all_ints || model.len() > l.set_max_intset_entries {
                converted = true;
            }
            if s.is_empty() {
                // Commands delete an empty set; a new one starts over as an intset.
                s = Set::new();
                converted = false;
            }
            let want = if converted { "hashtable" } else { "intset" };
            assert_eq!(s.encoding(), want);
            assert_eq!(s.heap_bytes(), recount(&s));
        }
    }
}

/// A set is one 16-byte pointer (the intset's buffer, or the boxed table), so that an entry's
/// `Object` stays within 24 bytes.
#[test]
fn set_is_two_words() {
    assert!(std::mem::size_of::<Set>() <= 16);
    // As in `Object`: beside a `Vec<u8>` (whose capacity holds the tag), no extra word.
    #[allow(dead_code)]
    enum Slot {
        Str(Vec<u8>),
        Set(Set),
    }
    assert_eq!(std::mem::size_of::<Slot>(), 24);
}

/// An intset's buffer is exactly its header (width, zigzag base) and its packed offsets.
#[test]
fn intset_buffer_is_exact() {
    let l = limits(512);
    let width = |s: &Set| match &s.repr {
        Repr::Ints(i) => i.width(),
        Repr::Table(_) => 0,
    };
    let mut s = Set::new();
    assert_eq!(s.heap_bytes(), 0);
    s.insert(b"-1", &l);
    // Width 1, base -1 (zigzag 1), one offset: 3 bytes, an 8-byte allocation.
    assert_eq!(s.heap_bytes(), 8);
    for v in 0..6 {
        s.insert(v.to_string().as_bytes(), &l);
    }
    assert_eq!(s.len(), 7);
    assert_eq!(s.heap_bytes(), 16, "2 + 7 bytes");
    s.insert(b"1000", &l);
    assert_eq!(width(&s), 2);
    assert_eq!(s.heap_bytes(), (2 + 8 * 2usize).next_multiple_of(8));
    s.insert(b"-100000", &l);
    // Base -100000 (zigzag 199999: three varint bytes), offsets up to 101000: three bytes.
    assert_eq!(width(&s), 3);
    assert_eq!(s.heap_bytes(), (4 + 9 * 3usize).next_multiple_of(8));
    for v in ["-100000", "-1", "0", "1", "2", "3", "4", "5", "1000"] {
        assert!(s.remove(v.as_bytes()), "{v}");
        assert_eq!(s.heap_bytes(), recount(&s));
    }
    assert!(s.is_empty());
    assert_eq!(s.heap_bytes(), 0);
}
