//! RDB file tests: the golden files `testdata/rdb/*.rdb` made by redis-server 7.0.15
//! (`testdata/rdb/make.py`) against the contents the server reported, corrupt variants of
//! them, hand-built files for what the server does not write, and random mutations.

use std::collections::BTreeMap;
use std::io::Read;

use larder_engine::stream::StreamId;
use larder_engine::{Keyspace, Limits, Object};

use super::super::crc64::crc64;
use super::super::Value;
use super::*;

const AT_2100: u64 = 4_102_444_800_000;

/// The limits make.py writes dump.rdb under.
fn dump_limits() -> Limits {
    Limits {
        hash_max_listpack_entries: 8,
        hash_max_listpack_value: 16,
        set_max_intset_entries: 8,
        zset_max_listpack_entries: 8,
        zset_max_listpack_value: 16,
        list_max_listpack_size: 4,
        ..Limits::default()
    }
}

fn golden(name: &str) -> Vec<u8> {
    let path = format!("{}/../../testdata/rdb/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// One key as redis-server reported it (see make.py for the line format).
#[derive(Debug)]
struct Expected {
    kind: String,
    encoding: String,
    expire: Option<u64>,
    items: Vec<Vec<u8>>,
}

fn unhex(s: &str) -> Vec<u8> {
    let s = s.strip_prefix('x').expect("x-prefixed hex");
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex"))
        .collect()
}

fn expected(name: &str) -> BTreeMap<(usize, Vec<u8>), Expected> {
    let text = String::from_utf8(golden(name)).expect("utf-8");
    let mut out = BTreeMap::new();
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let f: Vec<&str> = line.split('\t').collect();
        assert_eq!(f.len(), 6, "{line}");
        let expire: i64 = f[4].parse().expect("PEXPIRETIME");
        let e = Expected {
            kind: f[2].to_string(),
            encoding: f[3].to_string(),
            expire: u64::try_from(expire).ok(),
            items: f[5]
                .split(' ')
                .filter(|s| !s.is_empty())
                .map(unhex)
                .collect(),
        };
        out.insert((f[0].parse().expect("db"), unhex(f[1])), e);
    }
    out
}

fn text_score(b: &[u8]) -> f64 {
    std::str::from_utf8(b)
        .expect("score")
        .parse()
        .expect("score")
}

/// A loaded value against what the server reported: type, elements (and scores) in the
/// server's order, and, when `encodings` (the file is loaded under the limits it was written
/// under), the encoding.
fn check_value(key: &[u8], value: &Value, e: &Expected, encodings: bool) {
    let what = key.escape_ascii().to_string();
    let o = match value {
        Value::String(s) => {
            assert_eq!(e.kind, "string", "{what}");
            assert_eq!(e.items, std::slice::from_ref(s), "{what}");
            return;
        }
        Value::Object(o) => o,
    };
    if encodings {
        assert_eq!(o.encoding(), Some(e.encoding.as_str()), "{what}");
    }
    match o {
        Object::List(l) => {
            assert_eq!(e.kind, "list", "{what}");
            let got: Vec<Vec<u8>> = l.iter().map(<[u8]>::to_vec).collect();
            assert_eq!(got, e.items, "{what}");
        }
        Object::Hash(h) => {
            assert_eq!(e.kind, "hash", "{what}");
            let mut pairs: Vec<(&[u8], &[u8])> = h.pairs().collect();
            pairs.sort();
            let got: Vec<Vec<u8>> = pairs
                .into_iter()
                .flat_map(|(f, v)| [f.to_vec(), v.to_vec()])
                .collect();
            assert_eq!(got, e.items, "{what}");
        }
        Object::Set(s) => {
            assert_eq!(e.kind, "set", "{what}");
            let mut got: Vec<Vec<u8>> = s.iter().map(|m| m.with_bytes(<[u8]>::to_vec)).collect();
            got.sort();
            assert_eq!(got, e.items, "{what}");
        }
        Object::ZSet(z) => {
            assert_eq!(e.kind, "zset", "{what}");
            let got: Vec<(Vec<u8>, f64)> = z.scored().map(|(m, s)| (m.to_vec(), s)).collect();
            let want: Vec<(Vec<u8>, f64)> = e
                .items
                .chunks_exact(2)
                .map(|p| (p[0].clone(), text_score(&p[1])))
                .collect();
            assert_eq!(got, want, "{what}");
        }
        Object::Str(_) | Object::Shared(_) => panic!("{what}: a string object"),
        Object::Stream(_) => panic!("{what}: a stream"),
    }
}

fn read_all(bytes: &[u8], limits: Limits) -> Result<(RdbReader<&[u8]>, Vec<RdbItem>), FileError> {
    let mut reader = RdbReader::new(bytes, limits)?;
    let mut items = Vec::new();
    while let Some(item) = reader.next_item()? {
        items.push(item);
    }
    Ok((reader, items))
}

fn aux<'a>(reader: &'a RdbReader<&[u8]>, name: &str) -> Option<&'a [u8]> {
    reader
        .aux()
        .iter()
        .find(|(n, _)| n == name.as_bytes())
        .map(|(_, v)| &v[..])
}

/// Every key of a golden file, read under `limits`, is the key the server reported.
fn check_golden(name: &str, limits: Limits, encodings: bool) -> usize {
    let bytes = golden(&format!("{name}.rdb"));
    let want = expected(&format!("{name}.expected"));
    let (reader, items) = read_all(&bytes, limits).expect("golden file reads");
    assert_eq!(reader.version(), 10);
    assert_eq!(aux(&reader, "redis-ver"), Some(&b"7.0.15"[..]));
    assert!(aux(&reader, "ctime").is_some());
    assert_eq!(reader.offset(), bytes.len() as u64);
    assert_eq!(items.len(), want.len(), "{name}");
    for item in &items {
        let e = want
            .get(&(item.db, item.key.clone()))
            .unwrap_or_else(|| panic!("{name}: unexpected key {:?}", item.key));
        assert_eq!(item.expire_at_ms, e.expire, "{:?}", item.key);
        check_value(&item.key, &item.value, e, encodings);
    }
    items.len()
}

#[test]
fn golden_dump_reads_as_the_server_reported_it() {
    let n = check_golden("dump", dump_limits(), true);
    assert!(n > 40, "{n}");
    // Under the default limits every value reads the same, in other encodings.
    check_golden("dump", Limits::default(), false);
}

#[test]
fn golden_dump_holds_every_encoding_redis_writes() {
    // The value types met in the file, from the items' offsets.
    let bytes = golden("dump.rdb");
    let (_, items) = read_all(&bytes, dump_limits()).expect("golden file reads");
    let mut types: Vec<u8> = items.iter().map(|i| bytes[i.offset as usize]).collect();
    types.sort_unstable();
    types.dedup();
    // STRING, SET, HASH, ZSET_2, SET_INTSET, HASH_LISTPACK, ZSET_LISTPACK, LIST_QUICKLIST_2.
    assert_eq!(types, [0, 2, 4, 5, 11, 16, 17, 18]);
    // Under allkeys-lru every key has an IDLE opcode (a one-byte idle time) before it, and
    // an EXPIRETIME_MS before that when it has a deadline.
    for i in &items {
        let at = i.offset as usize;
        assert_eq!(bytes[at - 2], OPCODE_IDLE, "{:?}", i.key);
        if let Some(ms) = i.expire_at_ms {
            assert_eq!(bytes[at - 11], OPCODE_EXPIRETIME_MS, "{:?}", i.key);
            assert_eq!(bytes[at - 10..at - 2], ms.to_le_bytes());
        }
    }
    let dbs: Vec<usize> = items.iter().map(|i| i.db).collect();
    assert!(dbs.contains(&1) && dbs.contains(&15));
}

#[test]
fn golden_without_checksum_or_compression_reads() {
    let bytes = golden("nochecksum.rdb");
    assert_eq!(bytes[bytes.len() - 8..], [0u8; 8]);
    check_golden("nochecksum", Limits::default(), true);
    // Under allkeys-lfu every key has a FREQ opcode (and its byte) before it.
    let (_, items) = read_all(&bytes, Limits::default()).expect("reads");
    for i in &items {
        assert_eq!(bytes[i.offset as usize - 2], OPCODE_FREQ, "{:?}", i.key);
    }
}

#[test]
fn golden_empty_file_has_no_keys() {
    let bytes = golden("empty.rdb");
    let (reader, items) = read_all(&bytes, Limits::default()).expect("reads");
    assert!(items.is_empty());
    assert!(aux(&reader, "aof-base").is_some());
    assert_eq!(check_golden("empty", Limits::default(), true), 0);
}

#[test]
fn streams_load_and_functions_are_read_as_codes() {
    let bytes = golden("stream.rdb");
    let (_, items) = read_all(&bytes, Limits::default()).expect("reads");
    let keys: Vec<&[u8]> = items.iter().map(|i| &i.key[..]).collect();
    assert_eq!(keys, [&b"a_string"[..], b"events"]);
    let Value::Object(Object::Stream(s)) = &items[1].value else {
        panic!("not a stream: {:?}", items[1].value);
    };
    let mut entries = s.range(StreamId::MIN, StreamId::MAX, false);
    let (id, fields) = entries.next().expect("one entry");
    assert_eq!(id.to_string(), "1-1");
    assert_eq!(fields.collect::<Vec<_>>(), [(&b"f"[..], &b"v"[..])]);
    assert!(entries.next().is_none());

    // Function libraries come back as their codes, with the keys after them.
    let bytes = golden("function.rdb");
    let (reader, items) = read_all(&bytes, Limits::default()).expect("reads");
    assert_eq!(
        reader.functions(),
        ["#!lua name=mylib\nredis.register_function('myfunc', function(keys, args) return 1 end)"]
    );
    assert_eq!(items.len(), 1);
    // 7.0's release candidates stored name, engine, description and code apart.
    let f = file(
        "0010",
        b"\xf6\x03lib\x03LUA\x01\x04desc\x06return\xf6\x01m\x03LUA\x00\x01x\x00\x01k\x01v",
    );
    let (reader, items) = read_all(&f, Limits::default()).expect("pre-GA functions");
    assert_eq!(
        reader.functions(),
        ["#!LUA name=lib\nreturn", "#!LUA name=m\nx"]
    );
    assert_eq!(items.len(), 1);
    let e = first_error(&file("0010", b"\xf5\x02\xff\xfe"));
    assert!(
        matches!(e.kind, ErrorKind::BadData(_)) && e.offset == 9,
        "{e}"
    );
}

fn lookup(ks: &Keyspace, db: usize, key: &[u8]) -> Option<(Value, Option<u64>)> {
    let (mut shard, hash) = ks.db(db).lock_key(key);
    let slot = shard.find(key, hash, 0)?;
    let e = shard.entry(slot);
    let v = match (e.string(), e.object()) {
        (Some(s), _) => Value::String(s.to_vec()),
        (None, Some(o)) => Value::Object(o.clone()),
        (None, None) => unreachable!("an entry holds a string or an object"),
    };
    Some((v, e.expire_at_ms()))
}

#[test]
fn load_rdb_fills_the_keyspace() {
    let bytes = golden("dump.rdb");
    let want = expected("dump.expected");
    let ks = Keyspace::new(16);
    let mut calls = Vec::new();
    let stats = load_rdb(&bytes[..], &ks, &dump_limits(), 0, |k, b| {
        calls.push((k, b))
    })
    .expect("loads");
    assert_eq!(stats.keys, want.len() as u64);
    assert_eq!((stats.expired_skipped, stats.empty_skipped), (0, 0));
    assert_eq!(stats.bytes, bytes.len() as u64);
    assert_eq!(stats.version, 10);
    assert_eq!(calls.last(), Some(&(stats.keys, stats.bytes)));
    let total: usize = (0..16).map(|db| ks.db(db).len()).sum();
    assert_eq!(total, want.len());
    for ((db, key), e) in &want {
        let (value, at) = lookup(&ks, *db, key).expect("loaded");
        assert_eq!(at, e.expire);
        check_value(key, &value, e, true);
    }
    // Loading it again into the same keyspace finds the first key present.
    let err = load_rdb(&bytes[..], &ks, &dump_limits(), 0, |_, _| {}).expect_err("dup");
    assert!(
        matches!(err.kind, ErrorKind::DuplicateKey { db: 0, .. }),
        "{err}"
    );
}

#[test]
fn load_rdb_skips_keys_past_their_deadline() {
    let bytes = golden("dump.rdb");
    let ks = Keyspace::new(16);
    // ttl_string (AT_2100), ttl15 (+15) and ttl_hash (+123) are past; ttl_list (+1000) not.
    let now = AT_2100 + 500;
    let stats = load_rdb(&bytes[..], &ks, &dump_limits(), now, |_, _| {}).expect("loads");
    assert_eq!(stats.expired_skipped, 3);
    assert_eq!(stats.keys, expected("dump.expected").len() as u64 - 3);
    assert!(lookup(&ks, 0, b"ttl_string").is_none());
    assert!(lookup(&ks, 15, b"ttl15").is_none());
    let (_, at) = lookup(&ks, 0, b"ttl_list").expect("kept");
    assert_eq!(at, Some(AT_2100 + 1000));
    // A deadline equal to now is not past (Redis compares `expiretime < now`).
    let ks = Keyspace::new(16);
    let stats = load_rdb(&bytes[..], &ks, &dump_limits(), AT_2100, |_, _| {}).expect("loads");
    assert_eq!(stats.expired_skipped, 0);
}

#[test]
fn load_rdb_refuses_a_database_the_keyspace_lacks() {
    let bytes = golden("dump.rdb");
    let ks = Keyspace::new(4);
    let err = load_rdb(&bytes[..], &ks, &dump_limits(), 0, |_, _| {}).expect_err("db 15");
    assert!(
        matches!(
            err.kind,
            ErrorKind::DbOutOfRange {
                db: 15,
                databases: 4
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("database 15"), "{err}");
}

/// Every prefix of a golden file is truncated exactly where it ends.
#[test]
fn truncated_files_fail_where_they_end() {
    for name in ["nochecksum.rdb", "dump.rdb", "empty.rdb"] {
        let bytes = golden(name);
        for len in 0..bytes.len() {
            let err = read_all(&bytes[..len], Limits::default())
                .err()
                .unwrap_or_else(|| panic!("{name} cut at {len} read"));
            assert!(
                matches!(err.kind, ErrorKind::Truncated),
                "{name} {len}: {err}"
            );
            assert_eq!(err.offset, len as u64, "{name}");
        }
    }
}

#[test]
fn a_wrong_checksum_is_refused() {
    let mut bytes = golden("dump.rdb");
    let n = bytes.len();
    bytes[n - 1] ^= 0x40;
    let err = read_all(&bytes, Limits::default()).err().expect("bad crc");
    assert!(matches!(err.kind, ErrorKind::Checksum { .. }), "{err}");
    assert_eq!(err.offset, n as u64 - 8);
    // A flipped byte inside a string value reads, but fails the checksum.
    let mut bytes = golden("dump.rdb");
    let at = bytes
        .windows(11)
        .position(|w| w == b"hello world")
        .expect("s_raw");
    bytes[at] = b'j';
    let err = read_all(&bytes, Limits::default()).err().expect("bad crc");
    assert!(matches!(err.kind, ErrorKind::Checksum { .. }), "{err}");
}

#[test]
fn a_corrupt_value_names_its_key_and_offset() {
    let bytes = golden("nochecksum.rdb");
    let (_, items) = read_all(&bytes, Limits::default()).expect("reads");
    let h = items.iter().find(|i| i.key == b"h").expect("h");
    // HASH_LISTPACK, key "h" (2 bytes), blob length (1 byte), then the listpack's size.
    assert_eq!(bytes[h.offset as usize], 16);
    let mut bad = bytes.clone();
    bad[h.offset as usize + 4] ^= 0x01;
    let err = read_all(&bad, Limits::default()).err().expect("bad value");
    assert!(
        matches!(&err.kind, ErrorKind::BadValue { key, rdb_type: 16 } if key == b"h"),
        "{err}"
    );
    assert_eq!(err.offset, h.offset);
    assert!(
        err.to_string().contains(&format!("offset {}", h.offset)),
        "{err}"
    );
}

/// A file of `body` after a `REDIS<version>` header, with EOF and checksum added.
fn file(version: &str, body: &[u8]) -> Vec<u8> {
    let mut f = format!("REDIS{version}").into_bytes();
    f.extend_from_slice(body);
    f.push(OPCODE_EOF);
    let crc = crc64(0, &f);
    f.extend_from_slice(&crc.to_le_bytes());
    f
}

fn first_error(bytes: &[u8]) -> FileError {
    read_all(bytes, Limits::default()).err().expect("an error")
}

#[test]
fn headers_and_versions() {
    assert!(matches!(first_error(b"RDB0010").kind, ErrorKind::Truncated));
    assert!(matches!(
        first_error(b"REDIX0010\xff").kind,
        ErrorKind::NotRdb
    ));
    assert!(matches!(
        first_error(b"REDIS00a0\xff").kind,
        ErrorKind::NotRdb
    ));
    let e = first_error(&file("0011", b""));
    assert!(matches!(e.kind, ErrorKind::Version(11)), "{e}");
    assert_eq!(e.offset, 5);
    assert!(e.to_string().contains("1 to 10"), "{e}");
    assert!(matches!(
        first_error(&file("0000", b"")).kind,
        ErrorKind::Version(0)
    ));
    // Version 4 files end at EOF, without a checksum.
    let (r, items) = read_all(b"REDIS0004\x00\x01k\x01v\xff", Limits::default()).expect("v4");
    assert_eq!((r.version(), items.len()), (4, 1));
    // A zero checksum is "not computed".
    let mut f = file("0010", b"\x00\x01k\x01v");
    let n = f.len();
    f[n - 8..].fill(0);
    assert_eq!(read_all(&f, Limits::default()).expect("crc 0").1.len(), 1);
}

#[test]
fn opcodes_redis_no_longer_writes() {
    // EXPIRETIME in seconds, SELECTDB, FREQ and IDLE before a key, an integer-encoded key,
    // an LZF key, AUX fields.
    let mut body = vec![OPCODE_AUX, 0x01, b'a', 0xc0, 0x07];
    body.extend_from_slice(&[OPCODE_SELECTDB, 0x02, OPCODE_RESIZEDB, 0x02, 0x01]);
    body.push(OPCODE_EXPIRETIME);
    body.extend_from_slice(&1_000_000u32.to_le_bytes());
    body.extend_from_slice(&[OPCODE_FREQ, 0x05, OPCODE_IDLE, 0x41, 0x00]);
    body.extend_from_slice(&[0x00, 0xc1, 0x39, 0x30, 0x01, b'v']);
    // An LZF key: one literal 'z', then a back reference of 19 bytes at distance 1.
    body.extend_from_slice(&[0x00, 0xc3, 0x05, 0x14, 0x00, b'z', 0xe0, 0x0a, 0x00]);
    body.extend_from_slice(&[0x01, b'x']);
    // Deadlines before 1970 (negative) are long past.
    body.push(OPCODE_EXPIRETIME);
    body.extend_from_slice(&(-5i32).to_le_bytes());
    body.extend_from_slice(&[0x00, 0x01, b'p', 0x00]);
    body.push(OPCODE_EXPIRETIME_MS);
    body.extend_from_slice(&(-5i64).to_le_bytes());
    body.extend_from_slice(&[0x00, 0x01, b'q', 0x00]);
    let f = file("0009", &body);
    let (r, items) = read_all(&f, Limits::default()).expect("reads");
    assert_eq!(r.aux(), [(b"a".to_vec(), b"7".to_vec())]);
    assert_eq!(items.len(), 4);
    assert_eq!(
        (items[2].expire_at_ms, items[3].expire_at_ms),
        (Some(0), Some(0))
    );
    assert_eq!(items[0].db, 2);
    assert_eq!(items[0].key, b"12345");
    assert_eq!(items[0].expire_at_ms, Some(1_000_000_000));
    assert_eq!(items[0].value, Value::String(b"v".to_vec()));
    // The deadline was for that key only.
    assert_eq!(items[1].key, [b'z'; 20]);
    assert_eq!(items[1].expire_at_ms, None);
    assert_eq!(items[1].value, Value::String(b"x".to_vec()));
}

#[test]
fn module_data_and_unknown_types_are_errors_at_their_offset() {
    let e = first_error(&file("0010", &[OPCODE_MODULE_AUX, 0x01]));
    assert!(matches!(
        e.kind,
        ErrorKind::Unsupported {
            code: OPCODE_MODULE_AUX,
            ..
        }
    ));
    assert_eq!(e.offset, 9);
    let e = first_error(&file("0010", b"\x00\x01a\x01b\x07\x01m\x00"));
    assert!(
        matches!(&e.kind, ErrorKind::Unsupported { code: 7, key: Some(k), .. } if k == b"m"),
        "{e}"
    );
    assert_eq!(e.offset, 14);
    let e = first_error(&file("0010", b"\x00\x01a\x01b\x14\x01k"));
    assert!(matches!(e.kind, ErrorKind::UnknownType(20)), "{e}");
    assert_eq!(e.offset, 14);
    // A length where only the special string encodings may be.
    let e = first_error(&file("0010", &[OPCODE_SELECTDB, 0xc0, 0x01]));
    assert!(matches!(e.kind, ErrorKind::BadData(_)), "{e}");
    assert_eq!(e.offset, 10);
    // A huge string length is truncation, not an allocation.
    let e = first_error(&file(
        "0010",
        b"\x00\x01k\x81\xff\xff\xff\xff\xff\xff\xff\xf0",
    ));
    assert!(matches!(e.kind, ErrorKind::Truncated), "{e}");
    // A huge count too.
    let e = first_error(b"REDIS0010\x02\x01k\x81\x7f\xff\xff\xff\xff\xff\xff\xff\x01a");
    assert!(matches!(e.kind, ErrorKind::Truncated), "{e}");
}

#[test]
fn empty_collections_are_skipped_as_redis_does() {
    let lp_empty = [0x07u8, 0, 0, 0, 0, 0, 0xff];
    let intset_empty = [2u8, 0, 0, 0, 0, 0, 0, 0];
    let mut body = Vec::new();
    for t in [1u8, 2, 4, 5] {
        body.extend_from_slice(&[t, 0x01, b'a' + t, 0x00]);
    }
    body.extend_from_slice(&[16, 0x01, b'h', 0x07]);
    body.extend_from_slice(&lp_empty);
    body.extend_from_slice(&[11, 0x01, b's', 0x08]);
    body.extend_from_slice(&intset_empty);
    body.extend_from_slice(&[18, 0x01, b'l', 0x01, 0x02, 0x07]);
    body.extend_from_slice(&lp_empty);
    body.extend_from_slice(&[0x00, 0x01, b'k', 0x01, b'v']);
    let f = file("0010", &body);
    let ks = Keyspace::new(1);
    let stats = load_rdb(&f[..], &ks, &Limits::default(), 0, |_, _| {}).expect("loads");
    assert_eq!((stats.keys, stats.empty_skipped), (1, 7));
    // A broken one is still an error.
    let mut bad = body.clone();
    bad[4 * 4 + 4] = 0x06;
    let e = first_error(&file("0010", &bad));
    assert!(
        matches!(e.kind, ErrorKind::BadValue { rdb_type: 16, .. }),
        "{e}"
    );
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

/// 20,000 random mutations of the golden files (bit flips, byte changes, insertions,
/// deletions, truncations, absurd lengths): reading never panics, an error's offset is
/// within the file, and a file that reads loads into a keyspace.
#[test]
fn mutated_files_never_panic() {
    let files = [golden("dump.rdb"), golden("nochecksum.rdb")];
    let limits = [dump_limits(), Limits::default()];
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let (mut ok, mut bad_value) = (0, 0);
    for round in 0..20_000 {
        let mut f = files[round % 2].clone();
        for _ in 0..1 + rng.below(3) {
            let at = rng.below(f.len() as u64) as usize;
            match rng.below(7) {
                0 => f.truncate(at.max(9)),
                1 => f[at] ^= 1 << rng.below(8),
                2 => f[at] = rng.next() as u8,
                3 => f.insert(at, rng.next() as u8),
                4 => f
                    .splice(
                        at..at,
                        [0x81u8, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff],
                    )
                    .for_each(drop),
                5 => {
                    f.remove(at);
                }
                _ => f.splice(at..at, [0xc3u8, 0x3f, 0x81, 0x7f]).for_each(drop),
            }
            if f.is_empty() {
                break;
            }
        }
        let lim = limits[round % 2];
        match read_all(&f, lim) {
            Ok((_, items)) => {
                ok += 1;
                // What reads loads, unless a key repeats or is in a database past 15.
                let ks = Keyspace::new(16);
                match load_rdb(&f[..], &ks, &lim, 0, |_, _| {}) {
                    Ok(stats) => assert_eq!(stats.keys as usize, items.len()),
                    Err(e) => assert!(
                        matches!(
                            e.kind,
                            ErrorKind::DuplicateKey { .. } | ErrorKind::DbOutOfRange { .. }
                        ),
                        "{e}"
                    ),
                }
            }
            Err(e) => {
                assert!(e.offset <= f.len() as u64, "{e}");
                bad_value += usize::from(matches!(e.kind, ErrorKind::BadValue { .. }));
            }
        }
    }
    // Both the checksum and the value decoder were reached.
    assert!(ok > 10 && bad_value > 100, "{ok} {bad_value}");
}

/// A reader that hands out a few bytes per call and is interrupted now and then, so that
/// every read crosses buffer refills.
struct Trickle<'a> {
    data: &'a [u8],
    calls: u64,
}

impl Read for Trickle<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.calls += 1;
        if self.calls % 5 == 0 {
            return Err(std::io::ErrorKind::Interrupted.into());
        }
        let n = buf
            .len()
            .min(self.data.len())
            .min(1 + (self.calls % 7) as usize);
        buf[..n].copy_from_slice(&self.data[..n]);
        self.data = &self.data[n..];
        Ok(n)
    }
}

#[test]
fn reads_in_small_pieces_give_the_same_items() {
    for name in ["dump.rdb", "nochecksum.rdb"] {
        let bytes = golden(name);
        let (_, whole) = read_all(&bytes, dump_limits()).expect("reads");
        let trickle = Trickle {
            data: &bytes,
            calls: 0,
        };
        let pieces: Vec<RdbItem> = RdbReader::new(trickle, dump_limits())
            .expect("header")
            .collect::<Result<_, _>>()
            .expect("reads");
        assert_eq!(pieces, whole, "{name}");
    }
}

#[test]
fn values_larger_than_the_read_ahead_stream_through() {
    // A 300 KB string (incompressible), and a list of its three thirds.
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let big: Vec<u8> = (0..300_000).map(|_| rng.next() as u8).collect();
    let mut body = vec![0x00, 0x01, b's'];
    super::super::length::put_string(&mut body, &big);
    let mut list = larder_engine::List::new();
    let thirds = [&big[..100_000], &big[100_000..200_000], &big[200_000..]];
    list.push(larder_engine::list::End::Tail, &thirds, &Limits::default());
    let list = Object::List(list);
    let mut v = Vec::new();
    super::super::write_value(
        &mut v,
        super::super::ValueRef::Object(&list),
        &Limits::default(),
    )
    .expect("writes");
    body.extend_from_slice(&[v[0], 0x01, b'l']);
    body.extend_from_slice(&v[1..]);
    let f = file("0010", &body);
    let (_, items) = read_all(&f, Limits::default()).expect("reads");
    assert_eq!(items.len(), 2);
    assert_eq!(items[0].value, Value::String(big));
    assert_eq!(items[1].value, Value::Object(list));
    assert!(f.len() > 600_000);
    let e = read_all(&f[..f.len() - 100_000], Limits::default())
        .err()
        .expect("truncated");
    assert!(matches!(e.kind, ErrorKind::Truncated), "{e}");
}

/// An error while reading the underlying file is reported with its offset.
#[test]
fn io_errors_carry_the_offset() {
    struct Failing(usize);
    impl Read for Failing {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let header = b"REDIS0010\xfa\x01a\x01b";
            if self.0 >= header.len() {
                return Err(std::io::Error::other("disk on fire"));
            }
            let n = buf.len().min(header.len() - self.0);
            buf[..n].copy_from_slice(&header[self.0..self.0 + n]);
            self.0 += n;
            Ok(n)
        }
    }
    let mut r = RdbReader::new(Failing(0), Limits::default()).expect("header");
    let e = r.next_item().expect_err("io error");
    assert!(matches!(e.kind, ErrorKind::Io(_)), "{e}");
    assert_eq!(e.offset, 14);
    assert!(e.to_string().contains("disk on fire"), "{e}");
}

/// The corrupt variants make.py commits: each fails with the error it was made for, at the
/// offset where the damage is, and loading one fails the same way.
#[test]
fn committed_corrupt_variants_fail_where_they_are_damaged() {
    let dump = golden("dump.rdb");
    let (_, items) = read_all(&dump, dump_limits()).expect("reads");
    let set_int = items.iter().find(|i| i.key == b"set_int").expect("set_int");
    let small = golden("nochecksum.rdb");
    let (_, small_items) = read_all(&small, Limits::default()).expect("reads");
    let h = small_items.iter().find(|i| i.key == b"h").expect("h");
    type Case = (&'static str, u64, fn(&ErrorKind) -> bool);
    let cases: [Case; 4] = [
        ("dump-truncated.rdb", 6000, |k| {
            matches!(k, ErrorKind::Truncated)
        }),
        ("dump-badcrc.rdb", dump.len() as u64 - 8, |k| {
            matches!(k, ErrorKind::Checksum { .. })
        }),
        (
            "dump-badvalue.rdb",
            set_int.offset,
            |k| matches!(k, ErrorKind::BadValue { key, rdb_type: 11 } if key == b"set_int"),
        ),
        (
            "nochecksum-badvalue.rdb",
            h.offset,
            |k| matches!(k, ErrorKind::BadValue { key, rdb_type: 16 } if key == b"h"),
        ),
    ];
    for (name, offset, kind) in cases {
        let bytes = golden(name);
        let e = read_all(&bytes, dump_limits()).err().expect(name);
        assert!(kind(&e.kind), "{name}: {e}");
        assert_eq!(e.offset, offset, "{name}: {e}");
        let ks = Keyspace::new(16);
        let e = load_rdb(&bytes[..], &ks, &dump_limits(), 0, |_, _| {}).expect_err(name);
        assert!(kind(&e.kind), "{name}: {e}");
        assert_eq!(e.offset, offset, "{name}");
    }
}
