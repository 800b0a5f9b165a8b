//! Whole-payload tests: golden DUMP output of Redis 7.0.15 (`testdata/`), round trips under
//! small and default limits, and corrupt or random payloads, which must fail cleanly.

use larder_engine::list::End;
use larder_engine::{Hash, Limits, List, Object, Set};

use super::*;

const GOLDEN: &str = include_str!("../../testdata/redis-7.0.15-dump.txt");

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("valid in this test"))
        .collect()
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// (key, Redis's encoding, payload) for every golden line.
fn goldens() -> Vec<(&'static str, &'static str, Vec<u8>)> {
    GOLDEN
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|l| {
            let mut w = l.split(' ');
            let (k, e, p) = (
                w.next().expect("valid in this test"),
                w.next().expect("valid in this test"),
                w.next().expect("valid in this test"),
            );
            (k, e, unhex(p))
        })
        .collect()
}

fn golden(key: &str) -> Vec<u8> {
    goldens()
        .into_iter()
        .find(|g| g.0 == key)
        .expect("valid in this test")
        .2
}

fn strs(v: &[&str]) -> Vec<Vec<u8>> {
    v.iter().map(|s| s.as_bytes().to_vec()).collect()
}

fn list_of(elems: &[Vec<u8>], limits: &Limits) -> List {
    let mut l = List::new();
    l.push(End::Tail, elems, limits);
    l
}

fn hash_of(pairs: &[(&str, &str)], limits: &Limits) -> Hash {
    let mut h = Hash::new();
    for (f, v) in pairs {
        h.insert(f.as_bytes(), v.as_bytes(), limits);
    }
    h
}

/// The value each golden key holds on Redis, built as the capture script built it.
fn expected(key: &str) -> Option<(Value, Limits)> {
    let d = Limits::default();
    let s = |v: &str| Some((Value::String(v.as_bytes().to_vec()), d));
    let text =
        "The quick brown fox jumps over the lazy dog; the quick brown fox jumps again and again. ";
    let obj = |o: Object, l: Limits| Some((Value::Object(o), l));
    match key {
        "s_int8" => s("12"),
        "s_int16" => s("-1000"),
        "s_int32" => s("100000"),
        "s_big" => s("12345678901"),
        "s_raw" => s("hello"),
        "s_empty" => s(""),
        "s_lzf" => s(&"a".repeat(100)),
        "s_21" => s("abcdefghijklmnopqrstu"),
        "s_lead0" => s("012"),
        "s_text" => s(&text.repeat(3)),
        "l_small" => {
            let x70 = "x".repeat(70);
            let e = [
                "a",
                "1",
                "-1",
                "300",
                "70000",
                "5000000000",
                "hello world",
                &x70,
            ];
            obj(Object::List(list_of(&strs(&e), &d)), d)
        }
        "l_ints" => {
            let e: Vec<Vec<u8>> = (0..20).map(|i| i.to_string().into_bytes()).collect();
            obj(Object::List(list_of(&e, &d)), d)
        }
        "l_big" => {
            let e: Vec<Vec<u8>> = (0..1500)
                .map(|i| format!("element-{i}-{}", "x".repeat(i % 37)).into_bytes())
                .collect();
            obj(Object::List(list_of(&e, &d)), d)
        }
        "l_fill5" => {
            let l = Limits {
                list_max_listpack_size: 5,
                ..d
            };
            let e: Vec<Vec<u8>> = (0..23).map(|i| (i * i).to_string().into_bytes()).collect();
            obj(Object::List(list_of(&e, &l)), l)
        }
        "h_small" => obj(
            Object::Hash(hash_of(&[("f1", "v1"), ("f2", "2"), ("n", "-123456")], &d)),
            d,
        ),
        "h_big" => obj(
            Object::Hash(hash_of(&[("a", "1"), ("b", "2"), ("c", "3")], &d)),
            d,
        ),
        "h_long" => obj(Object::Hash(hash_of(&[("f", &"v".repeat(100))], &d)), d),
        "set_int" => {
            let m = ["1", "2", "3", "-5", "70000", "5000000000"];
            obj(Object::Set(Set::from_members(&m, &d)), d)
        }
        "set_big_int" => {
            let m: Vec<String> = (0..600).step_by(3).map(|i: i32| i.to_string()).collect();
            obj(Object::Set(Set::from_members(&m, &d)), d)
        }
        "set_str" => obj(Object::Set(Set::from_members(&["a", "b", "c"], &d)), d),
        _ => None,
    }
}

/// Redis's OBJECT ENCODING for the value RESTORE builds from each golden payload under the
/// default limits (`h_big` was dumped as a hash table but has few enough fields to load as a
/// listpack).
fn encoding_after_restore(key: &str, dumped_as: &'static str) -> &'static str {
    match key {
        "h_big" => "listpack",
        _ => dumped_as,
    }
}

fn encoding_of(v: &Value) -> &'static str {
    match v {
        Value::String(_) => "string",
        Value::Object(o) => o.encoding().unwrap_or("string"),
    }
}

fn value_ref(v: &Value) -> ValueRef<'_> {
    match v {
        Value::String(s) => ValueRef::String(s),
        Value::Object(o) => ValueRef::Object(o),
    }
}

#[test]
fn golden_payloads_restore_to_the_values_redis_held() {
    let mut seen = 0;
    for (key, enc, payload) in goldens() {
        let Some((want, _)) = expected(key) else {
            continue;
        };
        seen += 1;
        let got = restore(&payload, &Limits::default()).unwrap_or_else(|e| panic!("{key}: {e}"));
        assert_eq!(got, want, "{key}");
        if let Value::Object(_) = got {
            assert_eq!(encoding_of(&got), encoding_after_restore(key, enc), "{key}");
        }
    }
    assert_eq!(seen, 20);
}

/// Larder's DUMP of the same values is Redis's byte for byte wherever Redis's output does not
/// depend on its hash table order (strings, lists, listpack hashes, intsets), LZF included.
#[test]
fn dumps_match_redis_byte_for_byte() {
    let ordered = [
        "s_int8",
        "s_int16",
        "s_int32",
        "s_big",
        "s_raw",
        "s_empty",
        "s_lzf",
        "s_21",
        "s_lead0",
        "s_text",
        "l_small",
        "l_ints",
        "l_big",
        "l_fill5",
        "h_small",
        "set_int",
        "set_big_int",
    ];
    for key in ordered {
        let (value, limits) = expected(key).expect("valid in this test");
        let ours = dump(value_ref(&value), &limits).expect("valid in this test");
        assert_eq!(hex(&ours), hex(&golden(key)), "{key}");
    }
}

/// Payloads larder writes for values it holds in hash tables (their order is larder's own,
/// so Redis's bytes differ): each was checked by hand to RESTORE in redis-server 7.0.15 and
/// read back equal (HGETALL / SMEMBERS), and is kept here so a change to them is noticed.
#[test]
fn larder_payloads_for_hash_tables() {
    let d = Limits::default();
    let small = Limits {
        hash_max_listpack_entries: 2,
        set_max_intset_entries: 2,
        ..d
    };
    let cases: [(Object, &str); 3] = [
        (
            Object::Hash(hash_of(&[("a", "1"), ("b", "2"), ("c", "3")], &small)),
            "04030161c0010162c0020163c0030a00cbeed56c07580a2c",
        ),
        (
            Object::Set(Set::from_members(&["a", "b", "c"], &small)),
            "02030161016201630a00ad9b6c54ee4a24ad",
        ),
        (
            Object::Set(Set::from_members(&["1", "2", "3"], &small)),
            "0203c001c002c0030a002dd97ad31204135c",
        ),
    ];
    for (object, want) in cases {
        assert_eq!(object.encoding(), Some("hashtable"));
        let p = dump(ValueRef::Object(&object), &d).expect("valid in this test");
        assert_eq!(hex(&p), want);
        assert_eq!(
            restore(&p, &small).expect("valid in this test"),
            Value::Object(object)
        );
    }
    let long = hash_of(&[("f", &"v".repeat(100))], &d);
    let p = dump(ValueRef::Object(&Object::Hash(long)), &d).expect("valid in this test");
    assert_eq!(hex(&p), hex(&golden("h_long")));
}

#[test]
fn restore_follows_the_limits_in_force() {
    let d = Limits::default();
    let tiny = Limits {
        hash_max_listpack_entries: 2,
        hash_max_listpack_value: 4,
        set_max_intset_entries: 3,
        list_max_listpack_size: 2,
        ..d
    };
    // A listpack hash with too many fields converts; long values alone do not convert it.
    let Value::Object(Object::Hash(h)) =
        restore(&golden("h_small"), &tiny).expect("valid in this test")
    else {
        panic!()
    };
    assert_eq!(h.encoding(), "hashtable");
    let long_values = Limits {
        hash_max_listpack_value: 0,
        ..d
    };
    let Value::Object(Object::Hash(h)) =
        restore(&golden("h_small"), &long_values).expect("valid in this test")
    else {
        panic!()
    };
    assert_eq!(h.encoding(), "listpack");
    // A field-by-field hash converts on a long value.
    let Value::Object(Object::Hash(h)) =
        restore(&golden("h_big"), &long_values).expect("valid in this test")
    else {
        panic!()
    };
    assert_eq!(h.encoding(), "hashtable");
    let Value::Object(Object::Set(s)) =
        restore(&golden("set_int"), &tiny).expect("valid in this test")
    else {
        panic!()
    };
    assert_eq!(s.encoding(), "hashtable");
    assert_eq!(s.len(), 6);
    let Value::Object(Object::List(l)) =
        restore(&golden("l_big"), &tiny).expect("valid in this test")
    else {
        panic!()
    };
    assert_eq!(l.len(), 1500);
    assert!(!l.is_packed());
}

#[test]
fn older_encodings_load() {
    let d = Limits::default();
    let wrap = |kind: u8, body: &[u8]| {
        let mut p = vec![kind];
        p.extend_from_slice(body);
        p.extend_from_slice(&RDB_VERSION.to_le_bytes());
        let crc = crc64::crc64(0, &p);
        p.extend_from_slice(&crc.to_le_bytes());
        p
    };
    let mut blob = Vec::new();
    let zl = ziplist::encode_strings(&[b"a", b"b", b"c"]);
    length::put_string(&mut blob, &zl);
    let want = Value::Object(Object::List(list_of(&strs(&["a", "b", "c"]), &d)));
    // LIST_ZIPLIST (10).
    assert_eq!(
        restore(&wrap(10, &blob), &d).expect("valid in this test"),
        want
    );
    // LIST_QUICKLIST (14): two ziplist nodes.
    let mut ql = vec![2u8];
    for part in [&[&b"a"[..], b"b"][..], &[b"c"]] {
        length::put_string(&mut ql, &ziplist::encode_strings(part));
    }
    assert_eq!(
        restore(&wrap(14, &ql), &d).expect("valid in this test"),
        want
    );
    // LIST (1).
    let mut plain = vec![3u8];
    for e in ["a", "b", "c"] {
        length::put_string(&mut plain, e.as_bytes());
    }
    assert_eq!(
        restore(&wrap(1, &plain), &d).expect("valid in this test"),
        want
    );
    // HASH_ZIPLIST (13).
    let mut hz = Vec::new();
    length::put_string(&mut hz, &ziplist::encode_strings(&[b"f", b"v", b"g", b"w"]));
    let h = hash_of(&[("f", "v"), ("g", "w")], &d);
    assert_eq!(
        restore(&wrap(13, &hz), &d).expect("valid in this test"),
        Value::Object(Object::Hash(h))
    );
    // A plain quicklist node (LIST_QUICKLIST_2 container 1).
    let mut q2 = vec![2u8, 1];
    length::put_string(&mut q2, b"big element");
    q2.push(2);
    length::put_string(&mut q2, &listpack::encode([&b"x"[..]]));
    let want = Value::Object(Object::List(list_of(&strs(&["big element", "x"]), &d)));
    assert_eq!(
        restore(&wrap(18, &q2), &d).expect("valid in this test"),
        want
    );
    // Empty collections, duplicates and odd pairs are bad data.
    let bad: Vec<(u8, Vec<u8>)> = vec![
        (1, vec![0]),
        (2, vec![0]),
        (4, vec![0]),
        (18, vec![0]),
        (2, vec![2, 1, b'a', 1, b'a']),
        (4, vec![2, 1, b'a', 1, b'1', 1, b'a', 1, b'2']),
        (18, vec![1, 3, 1, b'x']),
        (16, {
            let mut b = Vec::new();
            length::put_string(&mut b, &listpack::encode([&b"f"[..], b"v", b"f", b"w"]));
            b
        }),
        (16, {
            let mut b = Vec::new();
            length::put_string(&mut b, &listpack::encode([&b"f"[..]]));
            b
        }),
        (16, {
            let mut b = Vec::new();
            length::put_string(&mut b, &listpack::encode(std::iter::empty()));
            b
        }),
        (11, {
            let mut b = Vec::new();
            length::put_string(&mut b, &intset::encode(&[]));
            b
        }),
        (6, vec![0]),
        (15, vec![0]),
        (200, vec![0]),
    ];
    for (kind, body) in bad {
        assert_eq!(
            restore(&wrap(kind, &body), &d),
            Err(Error::BadData),
            "{kind} {body:?}"
        );
    }
}

/// Redis's sorted-set payloads load with their members, scores and encoding, and a small
/// one dumps back to Redis's bytes; a malformed one is bad data.
#[test]
fn sorted_sets_restore_and_dump() {
    let d = Limits::default();
    let small = restore(&golden("z_small"), &d).expect("Redis's payload loads");
    let Value::Object(Object::ZSet(z)) = &small else {
        panic!("not a sorted set: {small:?}");
    };
    assert_eq!(z.encoding(), "listpack");
    let members: Vec<(&[u8], f64)> = z.scored().collect();
    assert_eq!(members, [(&b"c"[..], -3.0), (b"a", 1.0), (b"b", 2.5)]);
    assert_eq!(
        dump(ValueRef::Object(&Object::ZSet(z.clone())), &d),
        Ok(golden("z_small"))
    );
    let big = restore(&golden("z_big"), &d).expect("Redis's payload loads");
    let Value::Object(Object::ZSet(z)) = &big else {
        panic!("not a sorted set: {big:?}");
    };
    // Two members fit the default limits: loaded compact, as Redis converts on load.
    assert_eq!(z.encoding(), "listpack");
    assert_eq!(
        z.scored().collect::<Vec<_>>(),
        [(&b"a"[..], 1.0), (b"b", 2.5)]
    );
    let one = Limits {
        zset_max_listpack_entries: 1,
        ..Limits::default()
    };
    let Ok(Value::Object(Object::ZSet(z))) = restore(&golden("z_big"), &one) else {
        panic!("Redis's payload loads");
    };
    assert_eq!(z.encoding(), "skiplist");
    let bad = with_footer(vec![5, 2, 1, b'a', 0, 0, 0, 0, 0, 0, 0xf8, 0x7f]);
    assert_eq!(restore(&bad, &d), Err(Error::BadData));
}

#[test]
fn footer_errors() {
    let d = Limits::default();
    let good = golden("s_raw");
    assert!(restore(&good, &d).is_ok());
    for cut in 0..10 {
        assert_eq!(restore(&good[..cut], &d), Err(Error::VersionOrChecksum));
    }
    let mut bad_crc = good.clone();
    *bad_crc.last_mut().expect("valid in this test") ^= 1;
    assert_eq!(restore(&bad_crc, &d), Err(Error::VersionOrChecksum));
    let mut newer = good.clone();
    let n = newer.len();
    newer[n - 10] = 11;
    assert_eq!(restore(&newer, &d), Err(Error::VersionOrChecksum));
    // An older version with a good checksum loads.
    let mut older = good[..n - 10].to_vec();
    older.extend_from_slice(&9u16.to_le_bytes());
    let crc = crc64::crc64(0, &older);
    older.extend_from_slice(&crc.to_le_bytes());
    assert!(restore(&older, &d).is_ok());
}

fn with_footer(mut body: Vec<u8>) -> Vec<u8> {
    body.extend_from_slice(&RDB_VERSION.to_le_bytes());
    let crc = crc64::crc64(0, &body);
    body.extend_from_slice(&crc.to_le_bytes());
    body
}

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Truncations, bit flips, byte changes, insertions and absurd lengths of every golden
/// payload (with the checksum fixed up so the reader sees them), and random bytes: the reader
/// returns an error or a value, never panics, and a value it returns dumps and reads back.
#[test]
fn corrupt_and_random_payloads_fail_cleanly() {
    let d = Limits::default();
    let small = Limits {
        hash_max_listpack_entries: 3,
        set_max_intset_entries: 3,
        list_max_listpack_size: 3,
        ..d
    };
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let bodies: Vec<Vec<u8>> = goldens()
        .into_iter()
        .map(|(_, _, p)| p[..p.len() - 10].to_vec())
        .collect();
    let mut loaded = 0;
    for round in 0..40_000 {
        let mut body = bodies[round % bodies.len()].clone();
        let edits = 1 + rng.below(4);
        for _ in 0..edits {
            if body.is_empty() {
                break;
            }
            let at = rng.below(body.len() as u64) as usize;
            match rng.below(6) {
                0 => body.truncate(at),
                1 => body[at] ^= 1 << rng.below(8),
                2 => body[at] = rng.next() as u8,
                3 => body.insert(at, rng.next() as u8),
                4 => {
                    let n = [0x80u8, 0xff, 0xff, 0xff, 0xff];
                    body.splice(at..at, n);
                }
                _ => {
                    body.remove(at);
                }
            }
        }
        if round % 7 == 0 {
            let len = rng.below(64) as usize;
            body = (0..len).map(|_| rng.next() as u8).collect();
            if !body.is_empty() {
                body[0] = rng.below(20) as u8;
            }
        }
        let limits = if round % 2 == 0 { d } else { small };
        if let Ok(v) = restore(&with_footer(body), &limits) {
            loaded += 1;
            let again = dump(value_ref(&v), &limits).expect("valid in this test");
            assert_eq!(restore(&again, &limits).expect("valid in this test"), v);
        }
    }
    assert!(loaded > 100, "{loaded}");
}

/// Random values of every type under small and default limits, so both encodings of each
/// occur: DUMP then RESTORE gives an equal value in the encoding the limits call for.
#[test]
fn random_values_round_trip() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let tiny = Limits {
        hash_max_listpack_entries: 4,
        hash_max_listpack_value: 8,
        set_max_intset_entries: 4,
        list_max_listpack_size: 3,
        ..Limits::default()
    };
    let mut encodings = std::collections::BTreeSet::new();
    for round in 0..3000 {
        let limits = if round % 2 == 0 {
            tiny
        } else {
            Limits::default()
        };
        let n = 1 + rng.below(if round % 10 == 0 { 700 } else { 12 }) as usize;
        let elem = |rng: &mut Rng| -> Vec<u8> {
            match rng.below(5) {
                0 => (rng.next() as i64 >> rng.below(64))
                    .to_string()
                    .into_bytes(),
                1 => rng.below(300).to_string().into_bytes(),
                2 => vec![b'a' + rng.below(26) as u8; rng.below(20) as usize],
                3 => (0..rng.below(100)).map(|_| rng.next() as u8).collect(),
                _ => format!("member:{}", rng.below(1000)).into_bytes(),
            }
        };
        let elems: Vec<Vec<u8>> = (0..n).map(|_| elem(&mut rng)).collect();
        let value = match round % 4 {
            0 => Value::String(elems.concat()),
            1 => Value::Object(Object::List(list_of(&elems, &limits))),
            2 => {
                let mut h = Hash::new();
                for pair in elems.chunks(2) {
                    h.insert(&pair[0], pair.get(1).map_or(&b""[..], |v| v), &limits);
                }
                Value::Object(Object::Hash(h))
            }
            _ => {
                let ints: Vec<Vec<u8>> = elems
                    .iter()
                    .map(|e| (e.len() as i64 * 7919 - 5000).to_string().into_bytes())
                    .collect();
                let members = if round % 8 == 3 { &ints } else { &elems };
                Value::Object(Object::Set(Set::from_members(members, &limits)))
            }
        };
        let payload = dump(value_ref(&value), &limits).expect("valid in this test");
        let back = restore(&payload, &limits).expect("valid in this test");
        assert_eq!(back, value, "round {round}");
        let enc = encoding_of(&back);
        // A hash table hash may come back as a listpack only if it would fit one.
        if let (Value::Object(Object::Hash(a)), Value::Object(Object::Hash(b))) = (&value, &back) {
            if a.encoding() != b.encoding() {
                assert_eq!(b.encoding(), "listpack");
                assert!(a.len() <= limits.hash_max_listpack_entries);
            }
        } else {
            assert_eq!(enc, encoding_of(&value), "round {round}");
        }
        encodings.insert(enc);
    }
    let all: std::collections::BTreeSet<_> =
        ["string", "quicklist", "listpack", "hashtable", "intset"].into();
    assert_eq!(encodings, all);
}
