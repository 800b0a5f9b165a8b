//! Round trips of [`write_rdb`] through [`RdbReader`] and [`load_rdb`].

use std::collections::BTreeMap;

use larder_engine::feed::Value as Copied;
use larder_engine::list::End;
use larder_engine::{Hash, List, Object, Set, ZSet};

use super::super::{load_rdb, RdbReader, OPCODE_SELECTDB};
use super::*;

const FAR_MS: u64 = 4_000_000_000_000;

/// (db, key) -> (value, deadline).
type Contents = BTreeMap<(usize, Vec<u8>), (Copied, u64)>;

fn contents(ks: &Keyspace) -> Contents {
    let all: Vec<usize> = (0..ks.db_count()).collect();
    let mut out = Contents::new();
    for ((d, _), shard) in ks.lock_dbs(&all).iter_keyed() {
        for e in shard.iter() {
            let at = e.expire_at_ms().unwrap_or(0);
            out.insert((d, e.key().to_vec()), (Copied::of(e), at));
        }
    }
    out
}

fn put(ks: &Keyspace, db: usize, key: &str, value: std::result::Result<&[u8], Object>, at: u64) {
    let key = key.as_bytes();
    let (mut s, h) = ks.db(db).lock_key(key);
    match value {
        Ok(v) => s.insert_string(key, h, v, at, 0),
        Err(o) => s.insert_object(key, h, o, at, 0),
    };
}

fn fill(ks: &Keyspace, limits: &Limits) {
    for db in [0, 3, 15] {
        let k = |name: &str| format!("{name}:{db}");
        put(ks, db, &k("int"), Ok(b"12345"), 0);
        put(ks, db, &k("long"), Ok("abc".repeat(500).as_bytes()), FAR_MS);
        let mut l = List::new();
        for i in 0..300 {
            l.push(End::Tail, &[format!("e{i}")], limits);
        }
        put(ks, db, &k("list"), Err(Object::List(l)), FAR_MS + 1);
        let mut h = Hash::new();
        for i in 0..200 {
            h.insert(format!("f{i}").as_bytes(), b"v", limits);
        }
        put(ks, db, &k("hash"), Err(Object::Hash(h)), 0);
        let mut s = Set::new();
        for i in 0..5 {
            s.insert(format!("{i}").as_bytes(), limits);
        }
        put(ks, db, &k("set"), Err(Object::Set(s)), 0);
        let mut z = ZSet::new();
        for i in 0..200 {
            z.insert(format!("m{i}").as_bytes(), f64::from(i) / 3.0, limits);
        }
        put(ks, db, &k("zset"), Err(Object::ZSet(z)), 0);
    }
}

fn repl_info() -> PointInfo {
    PointInfo {
        repl: Some(ReplInfo {
            stream_db: 0,
            id: "a".repeat(40),
            offset: 1234,
        }),
        libraries: vec!["#!lua name=lib\nredis.register_function('f', function() end)".into()],
        used_mem: 1 << 20,
    }
}

#[test]
fn round_trip_through_the_reader_and_the_loader() {
    let limits = Limits::default();
    let ks = Keyspace::new(16);
    fill(&ks, &limits);
    let before = contents(&ks);
    let (file, keys, bytes) =
        write_rdb(&ks, Vec::new(), &limits, false, |_| repl_info()).expect("written");
    assert_eq!(keys, before.len() as u64);
    assert_eq!(bytes, file.len() as u64);
    assert_eq!(&file[..9], b"REDIS0010");

    let mut reader = RdbReader::new(&file[..], limits).expect("header");
    let mut n = 0;
    while reader.next_item().expect("item").is_some() {
        n += 1;
    }
    assert_eq!(n, before.len());
    assert_eq!(
        reader.offset(),
        file.len() as u64,
        "checksum read and right"
    );
    let names: Vec<&[u8]> = reader.aux().iter().map(|(n, _)| &n[..]).collect();
    let want: [&[u8]; 8] = [
        b"redis-ver",
        b"redis-bits",
        b"ctime",
        b"used-mem",
        b"repl-stream-db",
        b"repl-id",
        b"repl-offset",
        b"aof-base",
    ];
    assert_eq!(names, want);
    assert_eq!(reader.aux()[6].1, b"1234");
    assert_eq!(reader.functions().len(), 1);
    // One SELECTDB per database, the walk going database by database.
    let selects = file
        .windows(2)
        .filter(|w| w[0] == OPCODE_SELECTDB && [0, 3, 15].contains(&w[1]))
        .count();
    assert!(selects >= 3);

    let loaded = Keyspace::new(16);
    let stats = load_rdb(&file[..], &loaded, &limits, 1000, |_, _| {}).expect("loads");
    assert_eq!(stats.keys, before.len() as u64);
    assert!(contents(&loaded) == before);
}

#[test]
fn writes_during_the_capture_do_not_reach_the_file() {
    let limits = Limits::default();
    let ks = Keyspace::new(2);
    for i in 0..2000 {
        put(&ks, i % 2, &format!("k{i}"), Ok(b"old"), 0);
    }
    let before = contents(&ks);
    // A writer that changes every key when the header reaches it (after the point, before
    // the walk): each change hands the point-in-time entry over first.
    struct Rewriter<'a>(&'a Keyspace, bool);
    impl Write for Rewriter<'_> {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            if !std::mem::replace(&mut self.1, true) {
                for i in 0..2000 {
                    let key = format!("k{i}");
                    let (mut s, h) = self.0.db(i % 2).lock_key(key.as_bytes());
                    let slot = s.find_raw(key.as_bytes(), h).expect("present");
                    s.set_string(slot, b"new");
                }
            }
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut file = Vec::new();
    {
        let tee = Tee(&mut file, Rewriter(&ks, false));
        write_rdb(&ks, tee, &limits, false, |_| PointInfo::default()).expect("written");
    }
    let loaded = Keyspace::new(2);
    load_rdb(&file[..], &loaded, &limits, 1000, |_, _| {}).expect("loads");
    assert!(contents(&loaded) == before);
}

/// Writes to a buffer and to a second writer.
struct Tee<'a, W: Write>(&'a mut Vec<u8>, W);

impl<W: Write> Write for Tee<'_, W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.extend_from_slice(buf);
        self.1.write(buf)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.1.flush()
    }
}

#[test]
fn an_empty_keyspace_is_a_header_and_eof() {
    let limits = Limits::default();
    let ks = Keyspace::new(16);
    let (file, keys, _) =
        write_rdb(&ks, Vec::new(), &limits, false, |_| PointInfo::default()).expect("written");
    assert_eq!(keys, 0);
    assert_eq!(file[file.len() - 9], super::super::OPCODE_EOF);
    let mut reader = RdbReader::new(&file[..], limits).expect("header");
    assert!(reader.next_item().expect("eof").is_none());
}

/// (db, key) -> (version, flags).
fn metas(ks: &Keyspace) -> BTreeMap<(usize, Vec<u8>), (u64, u32)> {
    let all: Vec<usize> = (0..ks.db_count()).collect();
    let mut out = BTreeMap::new();
    for ((d, _), shard) in ks.lock_dbs(&all).iter_keyed() {
        for e in shard.iter() {
            out.insert((d, e.key().to_vec()), (e.version(), e.flags()));
        }
    }
    out
}

#[test]
fn versions_and_flags_travel_in_an_aux_field_before_each_key() {
    let limits = Limits::default();
    let ks = Keyspace::new(16);
    fill(&ks, &limits);
    for (i, key) in ["int:0", "long:3", "list:15"].iter().enumerate() {
        let db = [0, 3, 15][i];
        let (mut s, h) = ks.db(db).lock_key(key.as_bytes());
        let slot = s.find_raw(key.as_bytes(), h).expect("present");
        s.restore_version(slot, (1000 + i as u64) << 20, 42 + i as u32);
    }
    let before = metas(&ks);
    let (file, keys, _) =
        write_rdb(&ks, Vec::new(), &limits, true, |_| repl_info()).expect("written");
    assert_eq!(keys, before.len() as u64);
    // Every key is preceded by its field; the file's own AUX list does not collect them.
    let mut reader = RdbReader::new(&file[..], limits).expect("header");
    while let Some(item) = reader.next_item().expect("item") {
        assert_eq!(item.meta, before.get(&(item.db, item.key.clone())).copied());
    }
    assert_eq!(reader.aux().len(), 8);

    let loaded = Keyspace::new(16);
    load_rdb(&file[..], &loaded, &limits, 1000, |_, _| {}).expect("loads");
    assert!(contents(&loaded) == contents(&ks));
    assert_eq!(metas(&loaded), before);
    assert_eq!(metas(&loaded)[&(3, b"long:3".to_vec())], ((1001 << 20), 43));

    // Without the fields a loaded key gets a fresh version and no flags.
    let (plain, ..) = write_rdb(&ks, Vec::new(), &limits, false, |_| repl_info()).expect("written");
    assert!(plain.len() < file.len());
    let fresh = Keyspace::new(16);
    load_rdb(&plain[..], &fresh, &limits, 1000, |_, _| {}).expect("loads");
    assert_eq!(metas(&fresh)[&(0, b"int:0".to_vec())].1, 0);
}

#[test]
fn a_meta_field_parses_or_is_refused() {
    let mut out = Vec::new();
    encode_meta(&mut out, 1 << 40, 7);
    assert_eq!(out[0], super::super::OPCODE_AUX);
    assert_eq!(&out[1..4], b"\x02lm");
    assert_eq!(parse_meta(&out[5..]), Some((1 << 40, 7)));
    assert_eq!(parse_meta(b"12"), None);
    assert_eq!(parse_meta(b"x 1"), None);
    assert_eq!(parse_meta(b"1 99999999999"), None);
}
