//! Tests of the reader over files the builder writes: every value type, short and long
//! strings with and without dedup, typed getters on the wrong type, the layout and the info.

use super::*;
use crate::builder::{CacheBuilder, Value};

fn temp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("larder-reader-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir.join(name)
}

fn build_all_types(path: &Path, dedup: bool) -> Cache {
    let mut b = CacheBuilder::new(path).expect("builder").name("types");
    if dedup {
        b = b.dedup(true);
    }
    b.insert("bytes", Value::Bytes(&[0, 1, 2, 255]))
        .expect("insert");
    b.insert("str", Value::Str("héllo")).expect("insert");
    b.insert("i64", Value::I64(-42)).expect("insert");
    b.insert("f64", Value::F64(2.5)).expect("insert");
    b.insert("bool", Value::Bool(true)).expect("insert");
    b.insert("f32s", Value::F32List(&[1.0, 2.0, 3.5]))
        .expect("insert");
    b.insert("f64s", Value::F64List(&[0.25, -1.0]))
        .expect("insert");
    b.insert("strs", Value::StrList(&["a", "", "ccc"]))
        .expect("insert");
    b.insert("empty", Value::StrList(&[])).expect("insert");
    b.finish().expect("finish");
    Cache::open(path).expect("open")
}

#[test]
fn reads_every_type() {
    for dedup in [false, true] {
        let c = build_all_types(&temp(&format!("types-{dedup}")), dedup);
        assert_eq!(c.len(), 9);
        assert_eq!(c.get_bytes("bytes").ok(), Some(Some(&[0u8, 1, 2, 255][..])));
        assert_eq!(c.get_str("str").ok(), Some(Some("héllo")));
        assert_eq!(c.get_bytes("str").ok(), Some(Some("héllo".as_bytes())));
        assert_eq!(c.get_i64("i64").ok(), Some(Some(-42)));
        assert_eq!(c.get_f64("f64").ok(), Some(Some(2.5)));
        assert_eq!(c.get_bool("bool").ok(), Some(Some(true)));
        assert_eq!(
            c.get_f32_list("f32s").ok(),
            Some(Some(&[1.0f32, 2.0, 3.5][..]))
        );
        assert_eq!(c.get_f64_list("f64s").ok(), Some(Some(&[0.25, -1.0][..])));
        let list = c.get_str_list("strs").expect("ok").expect("present");
        assert_eq!(list.to_vec().ok(), Some(vec!["a", "", "ccc"]));
        assert_eq!(list.get(3).ok(), Some(None));
        assert!(c
            .get_str_list("empty")
            .expect("ok")
            .expect("present")
            .is_empty());
        assert_eq!(c.get_str("missing").ok(), Some(None));
        assert!(!c.contains("missing").expect("ok"));
        assert!(c.contains("bool").expect("ok"));
        assert_eq!(c.value_type("f32s").ok(), Some(Some(ValueType::F32List)));
        assert_eq!(c.get("i64").ok(), Some(Some(ValueRef::I64(-42))));
        c.verify().expect("verify");
        assert_eq!(c.iter().count(), 9);
        assert_eq!(c.name(), "types");
    }
}

#[test]
fn long_and_short_strings_with_and_without_dedup() {
    for dedup in [false, true] {
        let path = temp(&format!("strings-{dedup}"));
        let mut b = CacheBuilder::new(&path).expect("builder").dedup(dedup);
        let long = "x".repeat(64);
        let longer = "é".repeat(200);
        for (k, v) in [
            ("a", ""),
            ("b", "63chars"),
            ("c", long.as_str()),
            ("d", &longer),
        ] {
            b.insert(k, Value::Str(v)).expect("insert");
            b.insert(format!("{k}2"), Value::Str(v)).expect("insert");
        }
        b.finish().expect("finish");
        let c = Cache::open(&path).expect("open");
        for (k, v) in [
            ("a", ""),
            ("b", "63chars"),
            ("c", long.as_str()),
            ("d", &longer),
        ] {
            for key in [k.to_owned(), format!("{k}2")] {
                assert_eq!(c.get_str(&key).ok(), Some(Some(v)), "{key}");
                assert_eq!(c.get_bytes(&key).ok(), Some(Some(v.as_bytes())), "{key}");
                assert_eq!(c.get(&key).ok(), Some(Some(ValueRef::Str(v))), "{key}");
                assert!(c.get_i64(&key).is_err());
            }
        }
        c.verify().expect("verify");
    }
}

#[test]
fn typed_getters_report_mismatch() {
    let c = build_all_types(&temp("mismatch"), false);
    let err = c.get_i64("str").expect_err("mismatch");
    assert!(matches!(
        err,
        Error::TypeMismatch {
            expected: ValueType::I64,
            found: ValueType::Str
        }
    ));
    assert!(c.get_str("bytes").is_err(), "bytes are not text");
    assert!(c.get_f64_list("f32s").is_err());
    assert!(c.get_bool("i64").is_err());
}

#[test]
fn layout_matches_header() {
    let c = build_all_types(&temp("layout"), false);
    let l = c.layout();
    let info = c.info();
    assert_eq!(l.bytes.len() as u64, info.file_bytes);
    assert_eq!(l.format_version, FORMAT_VERSION);
    assert_eq!(l.offset_width, 4);
    assert_eq!(l.data_end, HEADER_LEN as u64 + info.data_bytes);
    assert_eq!(l.index_end, info.file_bytes);
    assert_eq!(l.index_end - l.index_start, info.index_bytes);
    assert!(l.data_end <= l.index_start);
    assert!(l.home_bucket_count >= 1 && l.home_bucket_count <= info.bucket_count);
    assert_eq!(l.probe_max, info.probe_max);
    assert_eq!(l.key_count, 9);
}

#[test]
fn info_reports_header() {
    let c = build_all_types(&temp("info"), false);
    let info = c.info();
    assert_eq!(info.name, "types");
    assert_eq!(info.key_count, 9);
    assert_eq!(info.format_version, 1);
    assert_eq!(
        info.file_bytes,
        std::fs::metadata(c.path()).expect("meta").len()
    );
    assert!(info.created_unix_ms > 0);
}
