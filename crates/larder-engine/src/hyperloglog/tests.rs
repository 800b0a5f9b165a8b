use super::*;

/// FNV-1a, to compare whole values with what Redis 7.0.15 wrote without storing 12 KB.
fn fnv(b: &[u8]) -> u64 {
    b.iter().fold(0xcbf2_9ce4_8422_2325, |h, &x| {
        (h ^ u64::from(x)).wrapping_mul(0x100_0000_01b3)
    })
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// PFADD as the command runs it: create when missing, add each element, invalidate the cache
/// when something changed.
fn pfadd(s: &mut Option<Vec<u8>>, elements: &[String], sparse_max: usize) -> bool {
    let mut updated = false;
    let v = s.get_or_insert_with(|| {
        updated = true;
        new_sparse()
    });
    for e in elements {
        updated |= add(v, e.as_bytes(), sparse_max).expect("valid");
    }
    if updated {
        invalidate(v);
    }
    updated
}

/// PFCOUNT of one key: the cache, or a count stored into it.
fn pfcount(s: &mut [u8]) -> u64 {
    if let Some(c) = cached(s) {
        return c;
    }
    let c = count(s).expect("valid");
    set_cached(s, c);
    c
}

fn elements(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("e{i}")).collect()
}

/// Values, counts and hashes of the bytes Redis 7.0.15 gives for the same commands
/// (`hll-sparse-max-bytes 3000`): the GET before and after PFCOUNT.
#[test]
fn bytes_and_counts_match_redis_7_0() {
    /// Name, elements, length, encoding, count, FNV of the bytes before and after PFCOUNT.
    type Case = (&'static str, Vec<String>, usize, u8, u64, u64, u64);
    let cases: &[Case] = &[
        (
            "empty",
            vec![],
            18,
            1,
            0,
            0x524bc36d036c0579,
            0xfd8f436a8f6e62f9,
        ),
        (
            "abc",
            vec!["a".into(), "b".into(), "c".into()],
            27,
            1,
            3,
            0x9f58471bf30399d3,
            0x7e703c73d1c9aad2,
        ),
        (
            "e10",
            elements(10),
            48,
            1,
            10,
            0x4afcb65d27f7d346,
            0xd06c25fbeaa23420,
        ),
        (
            "e300",
            elements(300),
            713,
            1,
            302,
            0xa4cfffba965d1718,
            0xc7b1bd47db913d5b,
        ),
        (
            "e2000",
            elements(2000),
            12304,
            0,
            2000,
            0x1b5576fa1f6b8092,
            0xdd4d26f186b57d33,
        ),
        (
            "e100k",
            elements(100_000),
            12304,
            0,
            100_853,
            0xafbf1713dc5ba3c8,
            0xfd1fc23694773e63,
        ),
    ];
    for (name, els, len, enc, card, before, after) in cases {
        let mut s = None;
        assert!(pfadd(&mut s, els, 3000));
        let mut s = s.expect("created");
        assert_eq!(s.len(), *len, "{name}");
        assert_eq!(s[4], *enc, "{name}");
        assert_eq!(fnv(&s), *before, "{name}: {}", hex(&s[..s.len().min(80)]));
        assert_eq!(pfcount(&mut s), *card, "{name}");
        assert_eq!(fnv(&s), *after, "{name}");
        assert!(is_valid(&s));
    }
}

#[test]
fn small_sparse_values_byte_for_byte() {
    let mut s = None;
    pfadd(&mut s, &["a".into(), "b".into(), "c".into()], 3000);
    assert_eq!(
        hex(&s.expect("created")),
        "48594c4c01000000000000000000008060f38050b1844bfb80425a"
    );
    let mut s = None;
    pfadd(&mut s, &elements(10), 3000);
    assert_eq!(
        hex(&s.expect("created")),
        "48594c4c010000000000000000000080452580472e844fc9804412844a5184430d844103844eb984408880406a8441b1"
    );
    assert_eq!(hex(&new_sparse()), "48594c4c0100000000000000000000007fff");
}

#[test]
fn unions_and_merges_match_redis_7_0() {
    let build = |n: usize| {
        let mut s = None;
        pfadd(&mut s, &elements(n), 3000);
        s.expect("created")
    };
    let mut abc = None;
    pfadd(&mut abc, &["a".into(), "b".into(), "c".into()], 3000);
    let abc = abc.expect("created");
    let (e10, e300, e2000) = (build(10), build(300), build(2000));
    // PFCOUNT e300 e2000 abc
    let mut max = [0u8; REGISTERS];
    for s in [&e300, &e2000, &abc] {
        merge_into(&mut max, s).expect("valid");
    }
    assert_eq!(count_registers(&max), 2003);
    // PFMERGE m e300 abc e10 (m missing): stays sparse.
    let mut max = [0u8; REGISTERS];
    for s in [&e300, &abc, &e10] {
        merge_into(&mut max, s).expect("valid");
    }
    let mut m = new_sparse();
    merge_store(&mut m, &max, false, 3000).expect("valid");
    assert_eq!((m.len(), m[4], fnv(&m)), (719, 1, 0x6fbe5f2c90b8417c));
    assert_eq!(pfcount(&mut m), 305);
    // PFMERGE m2 e300 e2000: a dense source makes the destination dense.
    let mut max = [0u8; REGISTERS];
    for s in [&e300, &e2000] {
        merge_into(&mut max, s).expect("valid");
    }
    let mut m2 = new_sparse();
    merge_store(&mut m2, &max, true, 3000).expect("valid");
    assert_eq!((m2.len(), m2[4], fnv(&m2)), (12304, 0, 0x1b5576fa1f6b8092));
    assert_eq!(pfcount(&mut m2), 2000);
}

#[test]
fn murmur_and_pattern() {
    // Values from Redis's MurmurHash64A with seed 0xadc83b19.
    let (i, c) = pattern(b"a");
    assert!(i < REGISTERS && (1..=51).contains(&c));
    assert_ne!(murmur64a(b"", SEED), murmur64a(b"\0", SEED));
    // Every tail length.
    let data: Vec<u8> = (0..40).collect();
    let hashes: std::collections::HashSet<u64> =
        (0..40).map(|n| murmur64a(&data[..n], SEED)).collect();
    assert_eq!(hashes.len(), 40);
}

#[test]
fn validity_checks() {
    assert!(is_valid(&new_sparse()));
    let mut dense = new_sparse();
    to_dense(&mut dense).expect("valid");
    assert_eq!(dense.len(), DENSE_SIZE);
    assert!(is_valid(&dense));
    assert!(!is_valid(&dense[..DENSE_SIZE - 1]));
    assert!(!is_valid(b"HYLL"));
    assert!(!is_valid(b"hello world, this is not an HLL"));
    let mut bad = new_sparse();
    bad[4] = 2;
    assert!(!is_valid(&bad));
    // A sparse value whose runs do not cover every register is corrupt.
    let mut short = new_sparse();
    short[HDR + 1] = 0x00; // XZERO of 16128 registers
    assert!(is_valid(&short));
    assert_eq!(count(&short), Err(Corrupt));
    assert_eq!(to_dense(&mut short.clone()), Err(Corrupt));
    let mut max = [0u8; REGISTERS];
    assert_eq!(merge_into(&mut max, &short), Err(Corrupt));
    // Only a header: nothing covers any register.
    let mut header = new_sparse();
    header.truncate(HDR);
    assert_eq!(add(&mut header, b"x", 3000), Err(Corrupt));
    assert_eq!(would_change(&header, b"x"), Err(Corrupt));
}

/// Many random additions with random sparse limits, checked against a plain array of
/// registers: the registers, the encoding switch, `would_change`, and the count of a value
/// equal to the one recomputed from the array.
#[test]
fn random_additions_match_a_register_array() {
    let mut next = crate::xorshift::xorshift(0x1234_5678_9abc_def1);
    for round in 0..12 {
        let sparse_max = [0usize, 40, 300, 3000, 20_000][round % 5];
        let mut s = new_sparse();
        let mut regs = [0u8; REGISTERS];
        let n = 1 + next() % 4000;
        for _ in 0..n {
            let ele = (next() % 50_000).to_string();
            let (i, c) = pattern(ele.as_bytes());
            let want = c > regs[i];
            assert_eq!(would_change(&s, ele.as_bytes()), Ok(want));
            assert_eq!(add(&mut s, ele.as_bytes(), sparse_max), Ok(want));
            regs[i] = regs[i].max(c);
            if s[4] == SPARSE {
                assert!(s.len() <= sparse_max.max(HDR + 2) + 3);
            }
        }
        assert!(is_valid(&s));
        let mut got = [0u8; REGISTERS];
        merge_into(&mut got, &s).expect("valid");
        assert_eq!(got, regs);
        assert_eq!(count(&s), Ok(count_registers(&regs)));
        // The dense form of the same registers.
        let mut d = s.clone();
        to_dense(&mut d).expect("valid");
        let mut got = [0u8; REGISTERS];
        merge_into(&mut got, &d).expect("valid");
        assert_eq!(got, regs);
        assert_eq!(count(&d), count(&s));
    }
}

#[test]
fn cache_bits() {
    let mut s = new_sparse();
    assert_eq!(cached(&s), Some(0));
    invalidate(&mut s);
    assert_eq!(cached(&s), None);
    set_cached(&mut s, 12345);
    assert_eq!(cached(&s), Some(12345));
}

#[test]
fn dense_registers_round_trip() {
    let mut r = vec![0u8; DENSE_SIZE - HDR];
    for i in 0..REGISTERS {
        dense_put(&mut r, i, (i % 64) as u8);
    }
    for i in 0..REGISTERS {
        assert_eq!(dense_get(&r, i), (i % 64) as u8, "{i}");
    }
}

#[test]
fn dense_register_byte_is_where_an_add_writes() {
    let mut dense = new_sparse();
    to_dense(&mut dense).expect("valid");
    for ele in [&b"a"[..], b"visitor:17", b"", b"\xff\x00"] {
        let at = dense_register_byte(&dense, ele).expect("dense");
        let before = dense.clone();
        // A register at 0 always takes the new run length.
        assert!(add(&mut dense, ele, 3000).expect("valid"));
        let changed: Vec<usize> = (HDR..DENSE_SIZE)
            .filter(|&i| dense[i] != before[i])
            .collect();
        assert!(
            changed.contains(&at) || changed.contains(&(at + 1)),
            "{changed:?} {at}"
        );
        assert!(
            changed.iter().all(|&i| i == at || i == at + 1),
            "{changed:?} {at}"
        );
        dense = before;
    }
    // Not of a dense HyperLogLog's length: no register.
    assert_eq!(dense_register_byte(&new_sparse(), b"a"), None);
    assert_eq!(dense_register_byte(b"HYLL", b"a"), None);
}
