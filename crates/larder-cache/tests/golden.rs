//! Golden files: a version-1 file with every type, and corrupt variants of it, checked in under
//! `testdata/cache/`. They pin the on-disk format: if a change to the crate makes these tests
//! fail, it broke compatibility with files already in the field.
//!
//! `cargo test -p larder-cache --test golden -- --ignored regenerate` rewrites them; only do that
//! together with a format version bump.

use std::path::{Path, PathBuf};

use larder_cache::{Cache, CacheBuilder, Error, Value, ValueRef, ValueType};

fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/cache")
}

fn golden(name: &str) -> PathBuf {
    golden_dir().join(name)
}

fn temp_dir() -> PathBuf {
    let d = std::env::temp_dir().join(format!("larder-golden-{}", std::process::id()));
    std::fs::create_dir_all(&d).expect("temp dir");
    d
}

const LONG: &str = "a string long enough to be deduplicated";

/// Builds the all-types file. Deterministic: fixed creation time, fixed insertion order.
fn build_all_types(path: &Path) {
    let mut b = CacheBuilder::new(path)
        .expect("builder")
        .name("golden-v1")
        .dedup(true)
        .created_unix_ms(1_767_225_600_000);
    b.insert("bytes", Value::Bytes(&[0, 1, 2, 0xfe, 0xff]))
        .expect("insert");
    b.insert("str", Value::Str("héllo wörld")).expect("insert");
    b.insert("empty_str", Value::Str("")).expect("insert");
    b.insert("i64", Value::I64(-9_007_199_254_740_993))
        .expect("insert");
    b.insert("f64", Value::F64(std::f64::consts::PI))
        .expect("insert");
    b.insert("bool_true", Value::Bool(true)).expect("insert");
    b.insert("bool_false", Value::Bool(false)).expect("insert");
    b.insert("f32_list", Value::F32List(&[1.5, -2.25, 1e-3]))
        .expect("insert");
    b.insert("f64_list", Value::F64List(&[0.1, 0.2, 0.3, 1e300]))
        .expect("insert");
    b.insert("str_list", Value::StrList(&["alpha", "", "gamma δ"]))
        .expect("insert");
    b.insert("shared_1", Value::Str(LONG)).expect("insert");
    b.insert("shared_2", Value::Str(LONG)).expect("insert");
    b.insert(b"binary\x00key", Value::I64(7)).expect("insert");
    b.finish().expect("finish");
}

fn check_all_types(c: &Cache) {
    assert_eq!(c.len(), 13);
    assert_eq!(c.name(), "golden-v1");
    let info = c.info();
    assert_eq!(info.created_unix_ms, 1_767_225_600_000);
    assert!(info.dedup);
    assert_eq!(info.value_count, 12, "one value shared by two keys");
    assert_eq!(
        c.get_bytes("bytes").ok(),
        Some(Some(&[0u8, 1, 2, 0xfe, 0xff][..]))
    );
    assert_eq!(c.get_str("str").ok(), Some(Some("héllo wörld")));
    assert_eq!(c.get_str("empty_str").ok(), Some(Some("")));
    assert_eq!(c.get_i64("i64").ok(), Some(Some(-9_007_199_254_740_993)));
    assert_eq!(c.get_f64("f64").ok(), Some(Some(std::f64::consts::PI)));
    assert_eq!(c.get_bool("bool_true").ok(), Some(Some(true)));
    assert_eq!(c.get_bool("bool_false").ok(), Some(Some(false)));
    assert_eq!(
        c.get_f32_list("f32_list").ok(),
        Some(Some(&[1.5f32, -2.25, 1e-3][..]))
    );
    assert_eq!(
        c.get_f64_list("f64_list").ok(),
        Some(Some(&[0.1, 0.2, 0.3, 1e300][..]))
    );
    let list = c.get_str_list("str_list").expect("ok").expect("present");
    assert_eq!(list.to_vec().ok(), Some(vec!["alpha", "", "gamma δ"]));
    assert_eq!(c.get_str("shared_1").ok(), Some(Some(LONG)));
    assert_eq!(c.get_str("shared_2").ok(), Some(Some(LONG)));
    assert_eq!(c.get_i64(b"binary\x00key").ok(), Some(Some(7)));
    assert_eq!(c.get_i64("absent").ok(), Some(None));
    assert!(matches!(
        c.get_f64("i64"),
        Err(Error::TypeMismatch {
            expected: ValueType::F64,
            found: ValueType::I64
        })
    ));
    assert_eq!(c.get("bool_true").ok(), Some(Some(ValueRef::Bool(true))));
    let mut keys: Vec<Vec<u8>> = c
        .iter()
        .map(|e| e.expect("entry").0.to_vec())
        .collect::<Vec<_>>();
    keys.sort();
    assert_eq!(keys.len(), 13);
    c.verify().expect("verify");
}

#[test]
fn reads_golden_v1_all_types() {
    let c = Cache::open(golden("v1-all-types.lcache")).expect("open golden file");
    check_all_types(&c);
}

#[test]
fn builder_still_produces_the_golden_bytes() {
    let path = temp_dir().join("rebuilt.lcache");
    build_all_types(&path);
    let rebuilt = std::fs::read(&path).expect("read");
    let golden = std::fs::read(golden("v1-all-types.lcache")).expect("read golden");
    assert!(
        rebuilt == golden,
        "the builder's output for version 1 changed"
    );
}

#[test]
fn rejects_golden_truncated() {
    match Cache::open(golden("v1-truncated.lcache")) {
        Err(Error::Truncated {
            expected_bytes,
            actual_bytes,
        }) => {
            assert!(actual_bytes < expected_bytes)
        }
        other => panic!("expected Truncated, got {other:?}"),
    }
}

#[test]
fn rejects_golden_unknown_version() {
    let err = Cache::open(golden("v2-unknown-version.lcache")).expect_err("must refuse");
    assert!(matches!(
        err,
        Error::UnsupportedVersion {
            found: 2,
            supported: 1
        }
    ));
    assert!(err
        .to_string()
        .contains("unsupported cache file format version 2"));
}

#[test]
fn golden_bit_flip_fails_verify() {
    // The flip is in a value's bytes, so open succeeds and only the checksum catches it.
    let c = Cache::open(golden("v1-bitflip.lcache")).expect("header intact");
    assert!(matches!(
        c.verify(),
        Err(Error::ChecksumMismatch {
            section: "data",
            ..
        })
    ));
}

#[test]
fn rejects_golden_bad_header_checksum() {
    let err = Cache::open(golden("v1-bad-header.lcache")).expect_err("must refuse");
    assert!(matches!(
        err,
        Error::ChecksumMismatch {
            section: "header",
            ..
        }
    ));
}

/// Flips every byte of a small file in turn (XOR 0xff, then a single bit) and checks that open,
/// every getter, iteration and verify return (values or errors) without panicking.
#[test]
fn every_byte_flip_is_an_error_not_a_crash() {
    let original = std::fs::read(golden("v1-all-types.lcache")).expect("read golden");
    let path = temp_dir().join("flipped.lcache");
    let keys: [&[u8]; 14] = [
        b"bytes",
        b"str",
        b"empty_str",
        b"i64",
        b"f64",
        b"bool_true",
        b"bool_false",
        b"f32_list",
        b"f64_list",
        b"str_list",
        b"shared_1",
        b"shared_2",
        b"binary\x00key",
        b"absent",
    ];
    let mut undetected = 0;
    for i in 0..original.len() {
        for mask in [0xffu8, 0x01] {
            let mut bytes = original.clone();
            bytes[i] ^= mask;
            std::fs::write(&path, &bytes).expect("write");
            let Ok(c) = Cache::open(&path) else {
                continue;
            };
            for k in keys {
                let _ = c.get(k);
                let _ = c.contains(k);
                let _ = c.get_bytes(k);
                let _ = c.get_str(k);
                let _ = c.get_i64(k);
                let _ = c.get_f64(k);
                let _ = c.get_bool(k);
                let _ = c.get_f32_list(k);
                let _ = c.get_f64_list(k);
                if let Ok(Some(list)) = c.get_str_list(k) {
                    let _ = list.to_vec();
                }
            }
            let _ = c.iter().count();
            let _ = c.info();
            if c.verify().is_ok() {
                undetected += 1;
            }
        }
    }
    // Every byte is covered by the header, data or index checksum, except alignment padding
    // between the data and the index, which no reader looks at.
    assert!(undetected <= 2 * 63, "{undetected} flips went unnoticed");
}

/// Rewrites header fields to hostile values with a valid header checksum, so the reader's own
/// bounds checks (not the checksum) must catch them.
#[test]
fn hostile_header_fields_are_errors_not_crashes() {
    let original = std::fs::read(golden("v1-all-types.lcache")).expect("read golden");
    let path = temp_dir().join("hostile.lcache");
    let len = original.len() as u64;
    let values = [
        0,
        1,
        7,
        8,
        63,
        64,
        511,
        512,
        513,
        len - 8,
        len - 1,
        len,
        len + 8,
        u64::MAX,
    ];
    let mut opened = 0;
    for field in (24..152).step_by(8).chain([20, 152]) {
        for v in values {
            let mut bytes = original.clone();
            if field == 20 || field == 152 {
                bytes[field] = v as u8;
            } else {
                bytes[field..field + 8].copy_from_slice(&v.to_le_bytes());
            }
            let sum = xxhash_rust::xxh3::xxh3_64(&bytes[..504]);
            bytes[504..512].copy_from_slice(&sum.to_le_bytes());
            std::fs::write(&path, &bytes).expect("write");
            let Ok(c) = Cache::open(&path) else {
                continue;
            };
            opened += 1;
            for k in [
                "bytes", "str", "i64", "f64_list", "str_list", "shared_2", "absent",
            ] {
                let _ = c.get(k);
                if let Ok(Some(list)) = c.get_str_list(k) {
                    let _ = list.to_vec();
                }
            }
            let _ = c.iter().count();
            let _ = c.verify();
        }
    }
    assert!(
        opened > 0,
        "some fields (counts, stats, probe_max) are not structural"
    );
}

#[test]
fn truncation_at_every_length_is_an_error() {
    let original = std::fs::read(golden("v1-all-types.lcache")).expect("read golden");
    let path = temp_dir().join("truncated.lcache");
    for len in 0..original.len() {
        std::fs::write(&path, &original[..len]).expect("write");
        assert!(Cache::open(&path).is_err(), "length {len} accepted");
    }
}

/// The golden files are exactly what today's builder writes. With `LARDER_UPDATE_GOLDEN=1`
/// (only with a format version bump) the test rewrites them instead of comparing.
#[test]
fn golden_files_are_reproducible() {
    let update = std::env::var_os("LARDER_UPDATE_GOLDEN").is_some_and(|v| v == "1");
    let dir = if update {
        golden_dir()
    } else {
        temp_dir().join("regenerated")
    };
    regenerate(&dir);
    if !update {
        for name in [
            "v1-all-types.lcache",
            "v1-truncated.lcache",
            "v1-bitflip.lcache",
            "v1-bad-header.lcache",
            "v2-unknown-version.lcache",
        ] {
            let fresh = std::fs::read(dir.join(name)).expect("read fresh");
            let committed = std::fs::read(golden(name)).expect("read committed");
            assert!(
                fresh == committed,
                "{name} differs from what the builder writes today"
            );
        }
    }
}

fn regenerate(dir: &Path) {
    std::fs::create_dir_all(dir).expect("mkdir");
    let golden = |name: &str| dir.join(name);
    let all = golden("v1-all-types.lcache");
    build_all_types(&all);
    let bytes = std::fs::read(&all).expect("read");

    std::fs::write(golden("v1-truncated.lcache"), &bytes[..bytes.len() - 10]).expect("write");

    // Flip one bit inside the text of "str" (a value, so only the data checksum notices).
    let at = bytes
        .windows(5)
        .position(|w| w == b"h\xc3\xa9ll")
        .expect("value present");
    let mut flipped = bytes.clone();
    flipped[at] ^= 0x01;
    std::fs::write(golden("v1-bitflip.lcache"), &flipped).expect("write");

    let mut bad_header = bytes.clone();
    bad_header[32] ^= 0x01; // key_count
    std::fs::write(golden("v1-bad-header.lcache"), &bad_header).expect("write");

    let mut v2 = bytes.clone();
    v2[8..12].copy_from_slice(&2u32.to_le_bytes());
    std::fs::write(golden("v2-unknown-version.lcache"), &v2).expect("write");
}
