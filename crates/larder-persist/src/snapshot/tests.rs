//! Tests of the snapshot writer, reader, `write_snapshot` and `load_snapshot`.

use std::collections::BTreeMap;
use std::io::Write;

use larder_engine::feed::Value as Copied;
use larder_engine::list::End;
use larder_engine::{Hash, List, Object, Set, ZSet};

use super::*;

/// A keyspace's contents: (db, key) -> (value, encoding, deadline, version, flags).
type Contents = BTreeMap<(usize, Vec<u8>), (Copied, Option<&'static str>, u64, u64, u32)>;

fn contents_of(guards: &mut DbGuards<'_>) -> Contents {
    let mut out = Contents::new();
    for ((d, _), shard) in guards.iter_keyed() {
        for e in shard.iter() {
            out.insert(
                (d, e.key().to_vec()),
                (
                    Copied::of(e),
                    e.object().and_then(Object::encoding),
                    e.expire_at_ms().unwrap_or(0),
                    e.version(),
                    e.flags(),
                ),
            );
        }
    }
    out
}

fn contents(ks: &Keyspace) -> Contents {
    let all: Vec<usize> = (0..ks.db_count()).collect();
    contents_of(&mut ks.lock_dbs(&all))
}

fn put(
    ks: &Keyspace,
    db: usize,
    key: &[u8],
    value: std::result::Result<&[u8], Object>,
    at: u64,
    flags: u32,
) {
    let (mut s, h) = ks.db(db).lock_key(key);
    if let Some(slot) = s.find_raw(key, h) {
        s.remove(slot);
    }
    let slot = match value {
        Ok(v) => s.insert_string(key, h, v, at, 0),
        Err(o) => s.insert_object(key, h, o, at, 0),
    };
    s.set_flags(slot, flags);
}

fn list(n: usize, limits: &Limits) -> Object {
    let mut l = List::new();
    for i in 0..n {
        l.push(End::Tail, &[format!("element-{i}")], limits);
    }
    Object::List(l)
}

fn hash(n: usize, long: bool, limits: &Limits) -> Object {
    let mut h = Hash::new();
    for i in 0..n {
        let v = if long {
            "v".repeat(100)
        } else {
            format!("{i}")
        };
        h.insert(format!("f{i}").as_bytes(), v.as_bytes(), limits);
    }
    Object::Hash(h)
}

fn set(n: usize, ints: bool, limits: &Limits) -> Object {
    let mut s = Set::new();
    for i in 0..n {
        let m = if ints {
            format!("{}", i * 3)
        } else {
            format!("m{i}")
        };
        s.insert(m.as_bytes(), limits);
    }
    Object::Set(s)
}

fn zset(n: usize, limits: &Limits) -> Object {
    let mut z = ZSet::new();
    for i in 0..n {
        z.insert(format!("m{i}").as_bytes(), i as f64 * 1.5 - 7.0, limits);
    }
    Object::ZSet(z)
}

/// Every type in its compact and full encodings, with and without deadlines and flags,
/// across `dbs` databases.
fn fill_all_types(ks: &Keyspace, limits: &Limits) {
    let far = 4_000_000_000_000;
    for db in 0..ks.db_count() {
        let k = |name: &str| format!("{name}:{db}").into_bytes();
        put(ks, db, &k("int"), Ok(b"12345"), 0, 0);
        put(ks, db, &k("neg"), Ok(b"-9"), far, 7);
        put(ks, db, &k("empty"), Ok(b""), 0, 0);
        put(
            ks,
            db,
            &k("long"),
            Ok("abc".repeat(500).as_bytes()),
            far + 1,
            0,
        );
        put(ks, db, &k("bin"), Ok(&[0, 255, 10, 13]), 0, u32::MAX);
        put(
            ks,
            db,
            &k("grown"),
            Err(Object::Str(b"grown in place".to_vec())),
            0,
            0,
        );
        put(ks, db, &k("list-small"), Err(list(3, limits)), 0, 0);
        put(ks, db, &k("list-big"), Err(list(2000, limits)), far, 0);
        put(ks, db, &k("hash-lp"), Err(hash(5, false, limits)), 0, 3);
        put(ks, db, &k("hash-ht"), Err(hash(600, false, limits)), 0, 0);
        put(ks, db, &k("hash-long"), Err(hash(2, true, limits)), 0, 0);
        put(ks, db, &k("set-int"), Err(set(10, true, limits)), 0, 0);
        put(ks, db, &k("set-big"), Err(set(600, true, limits)), 0, 0);
        put(ks, db, &k("set-str"), Err(set(10, false, limits)), far, 0);
        put(ks, db, &k("zset-lp"), Err(zset(5, limits)), 0, 0);
        put(ks, db, &k("zset-sl"), Err(zset(300, limits)), 0, 0);
    }
}

#[test]
fn round_trip_every_type_and_encoding_in_16_databases() {
    let limits = Limits::default();
    let ks = Keyspace::new(16);
    fill_all_types(&ks, &limits);
    // A client-chosen version survives too.
    {
        let (mut s, h) = ks.db(3).lock_key(b"int:3");
        let slot = s.find_raw(b"int:3", h).expect("present");
        s.set_version(slot, 42);
    }
    let before = contents(&ks);
    let encodings: std::collections::BTreeSet<_> = before.values().filter_map(|v| v.1).collect();
    let want = ["hashtable", "intset", "listpack", "quicklist", "skiplist"];
    assert!(encodings == want.into_iter().collect(), "{encodings:?}");
    let mut seen = 0;
    let (file, stats) = write_snapshot(
        &ks,
        Vec::new(),
        &limits,
        true,
        |_| (77, Vec::new()),
        |n| seen = n,
    )
    .expect("snapshot written");
    assert_eq!(stats.keys, before.len() as u64);
    assert_eq!(seen, stats.keys);
    assert_eq!(stats.bytes, file.len() as u64);
    assert_eq!((stats.feed_seq, stats.pre_images), (77, 0));
    let loaded = Keyspace::new(16);
    let (meta, _) = load_snapshot(&file[..], &loaded, &limits, 1000, |_, _| {}).expect("loads");
    assert_eq!((meta.feed_seq, meta.databases), (77, 16));
    assert!(contents(&loaded) == before);
    // Loading moved each shard's version counter above what it restored.
    let (mut s, h) = loaded.db(3).lock_key(b"int:3");
    let slot = s.find_raw(b"int:3", h).expect("present");
    assert_eq!(s.entry(slot).version(), 42);
    s.set_string(slot, b"1");
    let shard = larder_engine::Db::route(b"int:3").0;
    let same_shard = before
        .iter()
        .filter(|((d, k), _)| *d == 3 && larder_engine::Db::route(k).0 == shard);
    assert!(same_shard
        .map(|(_, v)| v.3)
        .all(|v| v < s.entry(slot).version()));
}

#[test]
fn writer_and_reader_agree_record_by_record() {
    let limits = Limits::default();
    let meta = SnapshotMeta {
        created_ms: 1_700_000_000_000,
        feed_seq: 9,
        databases: 4,
    };
    let mut w = SnapshotWriter::new(Vec::new(), &meta, &limits).expect("header");
    let mut want = Vec::new();
    // Enough records for several blocks, one larger than a block on its own.
    for i in 0..5000u64 {
        let value = if i == 17 {
            vec![b'x'; 200_000]
        } else {
            format!("value-{i}").into_bytes()
        };
        let rec = Record {
            db: (i % 4) as u32,
            key: format!("key-{i}").into_bytes(),
            value: Value::String(value),
            expire_at_ms: if i % 3 == 0 { 0 } else { i + 1 },
            version: i + 1,
            flags: (i % 5) as u32,
        };
        let Value::String(v) = &rec.value else {
            unreachable!()
        };
        w.entry(
            rec.db,
            &rec.key,
            rdb::ValueRef::String(v),
            rec.expire_at_ms,
            rec.version,
            rec.flags,
        )
        .expect("entry");
        want.push(rec);
    }
    let (file, _) = w.finish().expect("trailer");
    let mut r = SnapshotReader::open(&file[..], &limits).expect("header");
    assert_eq!(*r.meta(), meta);
    let got: Vec<Record> = r.by_ref().collect::<Result<_>>().expect("records");
    assert!(got == want);
    assert_eq!(r.offset(), file.len() as u64);
}

#[test]
fn expired_entries_are_skipped_on_load_and_missing_databases_are_an_error() {
    let limits = Limits::default();
    let ks = Keyspace::new(3);
    put(&ks, 0, b"gone", Ok(b"x"), 500, 0);
    put(&ks, 0, b"kept", Ok(b"x"), 1500, 0);
    put(&ks, 2, b"in-db-2", Ok(b"x"), 0, 0);
    let (file, _) = write_snapshot(&ks, Vec::new(), &limits, false, |_| (0, Vec::new()), |_| {})
        .expect("written");
    let loaded = Keyspace::new(3);
    load_snapshot(&file[..], &loaded, &limits, 1000, |_, _| {}).expect("loads");
    let keys: Vec<_> = contents(&loaded).into_keys().collect();
    assert_eq!(keys, vec![(0, b"kept".to_vec()), (2, b"in-db-2".to_vec())]);
    let err = load_snapshot(&file[..], &Keyspace::new(2), &limits, 0, |_, _| {});
    assert!(
        matches!(err, Err(SnapshotError::Database { db: 2, have: 2, .. })),
        "{err:?}"
    );
}

#[test]
fn function_libraries_round_trip_as_format_version_2() {
    let limits = Limits::default();
    let ks = Keyspace::new(2);
    put(&ks, 1, b"k", Ok(b"v"), 0, 0);
    let libraries = vec![
        "#!lua name=one\nredis.register_function('one', function() return 1 end)".to_string(),
        format!("#!lua name=big\n-- {}\n", "\u{e9}\u{2713}".repeat(20_000)),
        String::new(),
    ];
    let (file, stats) = write_snapshot(
        &ks,
        Vec::new(),
        &limits,
        true,
        |_| (5, libraries.clone()),
        |_| {},
    )
    .expect("written");
    assert_eq!(file[8..12], FORMAT_VERSION.to_le_bytes());
    assert_eq!(file[40], b'F');
    assert_eq!((stats.bytes, stats.keys), (file.len() as u64, 1));
    let loaded = Keyspace::new(2);
    let (meta, codes) = load_snapshot(&file[..], &loaded, &limits, 0, |_, _| {}).expect("loads");
    assert_eq!((meta.feed_seq, codes), (5, libraries.clone()));
    assert!(contents(&loaded) == contents(&ks));
    // No library: version 1, which older readers read.
    let (file, _) = write_snapshot(&ks, Vec::new(), &limits, true, |_| (5, Vec::new()), |_| {})
        .expect("written");
    assert_eq!(file[8..12], FIRST_FORMAT_VERSION.to_le_bytes());
    let (_, codes) =
        load_snapshot(&file[..], &Keyspace::new(2), &limits, 0, |_, _| {}).expect("loads");
    assert!(codes.is_empty());
}

#[test]
fn a_damaged_library_section_is_reported_where_it_is() {
    let limits = Limits::default();
    let meta = SnapshotMeta {
        created_ms: 0,
        feed_seq: 0,
        databases: 1,
    };
    let codes = vec!["#!lua name=a\n".to_string(), "#!lua name=b\n".to_string()];
    let w = SnapshotWriter::with_libraries(Vec::new(), &meta, &limits, &codes).expect("header");
    let (file, _) = w.finish().expect("trailer");
    let read = |bytes: &[u8]| {
        let mut r = SnapshotReader::open(bytes, &limits)?;
        let codes = r.take_libraries();
        r.collect::<Result<Vec<_>>>()
            .map(|recs| (codes, recs.len()))
    };
    assert_eq!(read(&file).expect("reads"), (codes, 0));
    // Every cut is truncation, at the end of the bytes.
    for cut in 40..file.len() {
        let r = read(&file[..cut]);
        assert!(
            matches!(r, Err(SnapshotError::Truncated { offset }) if offset == cut as u64),
            "cut at {cut}: {r:?}"
        );
    }
    // A flipped bit in the codes: the section's checksum.
    let mut bad = file.clone();
    bad[40 + 17 + 3] ^= 4;
    let r = read(&bad);
    assert!(
        matches!(r, Err(SnapshotError::Corrupt { offset: 40, what }) if what.contains("checksum")),
        "{r:?}"
    );
    // A version 2 header without the section.
    let mut bad = file[..40].to_vec();
    bad.extend_from_slice(&file[file.len() - 25..]);
    let r = read(&bad);
    assert!(
        matches!(r, Err(SnapshotError::Corrupt { offset: 40, .. })),
        "{r:?}"
    );
    // Codes that are not UTF-8 or do not parse, with a right checksum.
    for (body, at, what) in [
        (
            &[2, b'a', 0xff][..],
            57,
            "function library code is not UTF-8",
        ),
        (&[1, b'a', 5, b'b'][..], 59, "bad function library code"),
    ] {
        let mut section = vec![b'F'];
        section.extend_from_slice(&(body.len() as u64).to_le_bytes());
        let crc = rdb::crc64::crc64(rdb::crc64::crc64(0, &section), body);
        section.extend_from_slice(&crc.to_le_bytes());
        section.extend_from_slice(body);
        let mut bad = file[..40].to_vec();
        bad.extend_from_slice(&section);
        let r = read(&bad);
        assert!(
            matches!(r, Err(SnapshotError::Corrupt { offset, what: w }) if offset == at && w == what),
            "{r:?}"
        );
    }
}

#[test]
fn a_key_twice_is_an_error() {
    let limits = Limits::default();
    let meta = SnapshotMeta {
        created_ms: 0,
        feed_seq: 0,
        databases: 1,
    };
    let mut w = SnapshotWriter::new(Vec::new(), &meta, &limits).expect("header");
    for _ in 0..2 {
        w.entry(0, b"k", rdb::ValueRef::String(b"v"), 0, 1, 0)
            .expect("entry");
    }
    let (file, _) = w.finish().expect("trailer");
    let err = load_snapshot(&file[..], &Keyspace::new(1), &limits, 0, |_, _| {});
    assert!(
        matches!(
            err,
            Err(SnapshotError::Corrupt {
                offset: 76,
                what: "a key appears twice"
            })
        ),
        "{err:?}"
    );
}

/// A sink that fails once `room` bytes were written.
struct Full {
    room: usize,
}

impl Write for Full {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if buf.len() > self.room {
            return Err(std::io::Error::other("disk full"));
        }
        self.room -= buf.len();
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn a_failed_write_ends_the_capture_with_the_error() {
    let limits = Limits::default();
    let ks = Keyspace::new(2);
    fill_all_types(&ks, &limits);
    let (file, _) = write_snapshot(&ks, Vec::new(), &limits, true, |_| (0, Vec::new()), |_| {})
        .expect("written");
    for room in [0, 39, 100, file.len() / 2, file.len() - 1] {
        let r = write_snapshot(
            &ks,
            Full { room },
            &limits,
            false,
            |_| (0, Vec::new()),
            |_| {},
        );
        assert!(matches!(r, Err(SnapshotError::Io(_))), "{room}");
    }
    // The failed captures ended: another may run.
    assert!(write_snapshot(&ks, Vec::new(), &limits, true, |_| (0, Vec::new()), |_| {}).is_ok());
}

#[test]
fn a_second_snapshot_while_one_runs_is_refused() {
    struct Nothing;
    impl larder_engine::snapshot::PreImage for Nothing {
        fn save(&self, _: u32, _: &Entry) {}
    }
    let ks = Keyspace::new(1);
    let _running = ks.begin_capture(Arc::new(Nothing), |_| {}).expect("first");
    let r = write_snapshot(
        &ks,
        Vec::new(),
        &Limits::default(),
        false,
        |_| (0, Vec::new()),
        |_| {},
    );
    assert!(matches!(r, Err(SnapshotError::Busy)));
}

/// A tiny deterministic generator.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

#[test]
fn a_snapshot_during_heavy_writes_is_the_keyspace_at_the_point() {
    let limits = Limits::default();
    let mut pre_images = 0;
    for round in 0..4u64 {
        let ks = Keyspace::new(4);
        fill_all_types(&ks, &limits);
        for i in 0..20_000 {
            put(&ks, i % 4, format!("pre:{i}").as_bytes(), Ok(b"v"), 0, 0);
        }
        let stop = std::sync::atomic::AtomicBool::new(false);
        let mut at_point = Contents::new();
        let (file, stats) = std::thread::scope(|scope| {
            for t in 0..3u64 {
                let (ks, stop, limits) = (&ks, &stop, &limits);
                scope.spawn(move || {
                    let mut rng = Rng(round * 100 + t + 1);
                    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                        let db = rng.below(4) as usize;
                        let key = format!("pre:{}", rng.below(25_000));
                        let (mut s, h) = ks.db(db).lock_key(key.as_bytes());
                        match (s.find(key.as_bytes(), h, 0), rng.below(6)) {
                            (Some(slot), 0) => {
                                s.remove(slot);
                            }
                            (Some(slot), 1) => s.set_flags(slot, rng.below(9) as u32),
                            (Some(slot), 2) => s.set_expire(slot, Some(5_000_000_000_000)),
                            (Some(slot), _) => s.set_string(slot, format!("w{t}").as_bytes()),
                            (None, _) => {
                                s.insert_object(key.as_bytes(), h, list(3, limits), 0, 0);
                            }
                        }
                        drop(s);
                        if rng.below(5000) == 0 {
                            ks.swap_dbs(1, 2);
                        }
                    }
                });
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
            let r = write_snapshot(
                &ks,
                Vec::new(),
                &limits,
                true,
                |g| {
                    at_point = contents_of(g);
                    (round, Vec::new())
                },
                |_| std::thread::yield_now(),
            );
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
            r
        })
        .expect("written");
        assert_eq!(stats.keys, at_point.len() as u64);
        pre_images += stats.pre_images;
        let loaded = Keyspace::new(4);
        load_snapshot(&file[..], &loaded, &limits, 0, |_, _| {}).expect("loads");
        assert!(contents(&loaded) == at_point, "round {round}");
    }
    // The writers did race the walk: some entries came from the write path.
    assert!(pre_images > 0);
}

#[test]
fn every_truncation_is_reported_as_such() {
    let file = super::golden_tests::golden_v1();
    for cut in 0..file.len() {
        let err = SnapshotReader::open(&file[..cut], &Limits::default())
            .and_then(|r| r.collect::<Result<Vec<_>>>());
        match err {
            Err(SnapshotError::Truncated { offset }) => assert_eq!(offset, cut as u64),
            other => panic!("cut at {cut}: {other:?}"),
        }
    }
}

#[test]
fn every_bit_flip_is_caught() {
    let file = super::golden_tests::golden_v1();
    for byte in 0..file.len() {
        for bit in 0..8 {
            let mut bad = file.clone();
            bad[byte] ^= 1 << bit;
            let r = SnapshotReader::open(&bad[..], &Limits::default())
                .and_then(|r| r.collect::<Result<Vec<_>>>());
            assert!(
                r.is_err(),
                "flip of bit {bit} at byte {byte} went unnoticed"
            );
        }
    }
}

#[test]
fn mutated_files_never_panic() {
    let limits = Limits::default();
    let ks = Keyspace::new(2);
    fill_all_types(&ks, &limits);
    let (file, _) = write_snapshot(&ks, Vec::new(), &limits, false, |_| (0, Vec::new()), |_| {})
        .expect("written");
    let small = super::golden_tests::golden_v1();
    let mut rng = Rng(0x5eed);
    for i in 0..20_000 {
        let base = if i % 2 == 0 { &file } else { &small };
        let mut bad = base.clone();
        for _ in 0..1 + rng.below(4) {
            let at = rng.below(bad.len() as u64) as usize;
            match rng.below(4) {
                0 => bad[at] = rng.below(256) as u8,
                1 => bad.truncate(at),
                2 => bad.insert(at, rng.below(256) as u8),
                _ => {
                    bad.remove(at);
                }
            }
            if bad.is_empty() {
                break;
            }
        }
        if let Ok(r) = SnapshotReader::open(&bad[..], &limits) {
            for rec in r {
                if rec.is_err() {
                    break;
                }
            }
        }
    }
    // A block length near u64::MAX in an otherwise fine file: no huge allocation.
    let mut huge = small.clone();
    huge[40 + 5..40 + 13].copy_from_slice(&u64::MAX.to_le_bytes());
    let r = SnapshotReader::open(&huge[..], &limits).and_then(|r| r.collect::<Result<Vec<_>>>());
    assert!(matches!(r, Err(SnapshotError::Truncated { .. })), "{r:?}");
}
