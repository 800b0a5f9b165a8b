//! The golden snapshot files of format versions 1 and 2 and their corrupt variants, in
//! `testdata/snapshot/`. `LARDER_BLESS=1 cargo test -p larder-persist golden` rewrites them
//! (only after a deliberate format change, with a new format version).

use std::path::PathBuf;

use larder_engine::list::End;
use larder_engine::{Hash, Limits, List, Object, Set, ZSet};

use super::*;

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../testdata/snapshot")
}

/// The records of the golden file.
fn golden_records() -> Vec<Record> {
    let limits = Limits::default();
    let mut list = List::new();
    list.push(End::Tail, &[b"a".as_slice(), b"bb", b"123"], &limits);
    let mut hash = Hash::new();
    hash.insert(b"field", b"value", &limits);
    hash.insert(b"n", b"7", &limits);
    let mut ints = Set::new();
    let mut strs = Set::new();
    for m in [b"3".as_slice(), b"-1", b"1000000"] {
        ints.insert(m, &limits);
    }
    for m in [b"x".as_slice(), b"yy"] {
        strs.insert(m, &limits);
    }
    let mut zset = ZSet::new();
    zset.insert(b"one", 1.0, &limits);
    zset.insert(b"half", 0.5, &limits);
    let rec = |db, key: &[u8], value, expire_at_ms, version, flags| Record {
        db,
        key: key.to_vec(),
        value,
        expire_at_ms,
        version,
        flags,
    };
    vec![
        rec(
            0,
            b"greeting",
            Value::String(b"hello".to_vec()),
            0,
            1 << 20,
            0,
        ),
        rec(
            0,
            b"counter",
            Value::String(b"42".to_vec()),
            1_900_000_000_000,
            (2 << 20) | 1,
            0,
        ),
        rec(
            0,
            b"mc:item",
            Value::String(b"memcached".to_vec()),
            0,
            12345,
            0xdead_beef,
        ),
        rec(1, b"list", Value::Object(Object::List(list)), 0, 3 << 20, 0),
        rec(
            1,
            b"hash",
            Value::Object(Object::Hash(hash)),
            1_900_000_000_001,
            4 << 20,
            0,
        ),
        rec(2, b"ints", Value::Object(Object::Set(ints)), 0, 5 << 20, 0),
        rec(2, b"strs", Value::Object(Object::Set(strs)), 0, 6 << 20, 0),
        rec(
            15,
            b"zset",
            Value::Object(Object::ZSet(zset)),
            0,
            u64::MAX,
            1,
        ),
    ]
}

fn golden_meta() -> SnapshotMeta {
    SnapshotMeta {
        created_ms: 1_764_000_000_000,
        feed_seq: 4242,
        databases: 16,
    }
}

/// The function libraries of the version 2 golden file.
fn golden_libraries() -> Vec<String> {
    vec![
        "#!lua name=mylib\nredis.register_function('myfunc', function(keys, args) return 1 end)"
            .to_string(),
        "#!lua name=uni\n-- h\u{e9}llo \u{2713} \u{65e5}\u{672c} \u{1f389}\n\
         redis.register_function('uni', function() return '\u{fc}' end)"
            .to_string(),
    ]
}

/// The version 1 golden file as the writer writes it today.
pub(super) fn golden_v1() -> Vec<u8> {
    golden_with(&[])
}

/// The version 2 golden file (the same records, and libraries) as the writer writes it.
fn golden_v2() -> Vec<u8> {
    golden_with(&golden_libraries())
}

fn golden_with(libraries: &[String]) -> Vec<u8> {
    let limits = Limits::default();
    let mut w = SnapshotWriter::with_libraries(Vec::new(), &golden_meta(), &limits, libraries)
        .expect("header");
    for r in golden_records() {
        let value = match &r.value {
            Value::String(s) => rdb::ValueRef::String(s),
            Value::Object(o) => rdb::ValueRef::Object(o),
        };
        w.entry(r.db, &r.key, value, r.expire_at_ms, r.version, r.flags)
            .expect("entry");
    }
    w.finish().expect("trailer").0
}

/// The corrupt variants: (file name, bytes).
fn variants(golden: &[u8]) -> Vec<(&'static str, Vec<u8>)> {
    let mut bit_flip = golden.to_vec();
    // A bit inside the first block's records.
    bit_flip[40 + 21 + 3] ^= 0x10;
    let mut bad_magic = golden.to_vec();
    bad_magic[0] = b'R';
    let mut bad_version = golden.to_vec();
    bad_version[8] = 3;
    vec![
        ("v1-truncated.lsnap", golden[..golden.len() - 25].to_vec()),
        ("v1-bitflip.lsnap", bit_flip),
        ("v1-bad-magic.lsnap", bad_magic),
        ("v1-bad-version.lsnap", bad_version),
    ]
}

/// The version 2 file's corrupt variants: cut inside its library section, and a bit flipped
/// in a library's code.
fn variants_v2(golden: &[u8]) -> Vec<(&'static str, Vec<u8>)> {
    let mut bit_flip = golden.to_vec();
    bit_flip[40 + 17 + 20] ^= 0x01;
    vec![
        ("v2-truncated.lsnap", golden[..100].to_vec()),
        ("v2-bitflip.lsnap", bit_flip),
    ]
}

fn read_all(bytes: &[u8]) -> Result<(SnapshotMeta, Vec<Record>)> {
    read_with_libraries(bytes).map(|(meta, _, records)| (meta, records))
}

fn read_with_libraries(bytes: &[u8]) -> Result<(SnapshotMeta, Vec<String>, Vec<Record>)> {
    let mut r = SnapshotReader::open(bytes, &Limits::default())?;
    let meta = *r.meta();
    let libraries = r.take_libraries();
    Ok((meta, libraries, r.collect::<Result<_>>()?))
}

#[test]
fn golden_file_is_what_the_writer_writes() {
    let golden = golden_v1();
    if std::env::var_os("LARDER_BLESS").is_some() {
        std::fs::create_dir_all(dir()).expect("testdata dir");
        std::fs::write(dir().join("v1-basic.lsnap"), &golden).expect("written");
        for (name, bytes) in variants(&golden) {
            std::fs::write(dir().join(name), bytes).expect("written");
        }
        std::fs::write(dir().join("v2-basic.lsnap"), golden_v2()).expect("written");
        for (name, bytes) in variants_v2(&golden_v2()) {
            std::fs::write(dir().join(name), bytes).expect("written");
        }
    }
    for (name, golden) in [("v1-basic.lsnap", golden), ("v2-basic.lsnap", golden_v2())] {
        let stored = std::fs::read(dir().join(name)).expect("golden file");
        assert!(
            stored == golden,
            "{name}: the writer's output changed: a format change needs a new format version"
        );
    }
}

#[test]
fn golden_v2_file_reads_back_with_its_libraries() {
    let stored = std::fs::read(dir().join("v2-basic.lsnap")).expect("golden file");
    assert_eq!(stored[8..12], FORMAT_VERSION.to_le_bytes());
    let (meta, libraries, records) = read_with_libraries(&stored).expect("reads");
    assert_eq!(meta, golden_meta());
    assert_eq!(libraries, golden_libraries());
    assert!(records == golden_records());
    // The version 1 file has none.
    let v1 = std::fs::read(dir().join("v1-basic.lsnap")).expect("golden file");
    assert!(read_with_libraries(&v1).expect("reads").1.is_empty());
}

#[test]
fn corrupt_v2_variants_give_their_errors() {
    let read = |name: &str| read_all(&std::fs::read(dir().join(name)).expect("variant file"));
    let r = read("v2-truncated.lsnap");
    assert!(
        matches!(r, Err(SnapshotError::Truncated { offset: 100 })),
        "{r:?}"
    );
    let r = read("v2-bitflip.lsnap");
    assert!(
        matches!(
            r,
            Err(SnapshotError::Corrupt {
                offset: 40,
                what: "function library section checksum mismatch"
            })
        ),
        "{r:?}"
    );
    let golden = std::fs::read(dir().join("v2-basic.lsnap")).expect("golden file");
    for (name, bytes) in variants_v2(&golden) {
        assert!(
            std::fs::read(dir().join(name)).expect("variant") == bytes,
            "{name}"
        );
    }
}

#[test]
fn golden_file_reads_back() {
    let stored = std::fs::read(dir().join("v1-basic.lsnap")).expect("golden file");
    let (meta, records) = read_all(&stored).expect("reads");
    assert_eq!(meta, golden_meta());
    assert!(records == golden_records());
}

#[test]
fn corrupt_variants_give_their_errors() {
    let read = |name: &str| {
        let bytes = std::fs::read(dir().join(name)).expect("variant file");
        (bytes.len() as u64, read_all(&bytes))
    };
    let (len, r) = read("v1-truncated.lsnap");
    assert!(
        matches!(r, Err(SnapshotError::Truncated { offset }) if offset == len),
        "{r:?}"
    );
    let (_, r) = read("v1-bitflip.lsnap");
    assert!(
        matches!(
            r,
            Err(SnapshotError::Corrupt {
                offset: 40,
                what: "block checksum mismatch"
            })
        ),
        "{r:?}"
    );
    let (_, r) = read("v1-bad-magic.lsnap");
    assert!(matches!(r, Err(SnapshotError::BadMagic)), "{r:?}");
    let (_, r) = read("v1-bad-version.lsnap");
    assert!(matches!(r, Err(SnapshotError::BadVersion(3))), "{r:?}");
    // The variants are the golden file's, corrupted as their names say.
    let golden = std::fs::read(dir().join("v1-basic.lsnap")).expect("golden file");
    for (name, bytes) in variants(&golden) {
        assert!(
            std::fs::read(dir().join(name)).expect("variant") == bytes,
            "{name}"
        );
    }
}
