use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use larder_engine::{Change, ChangeKind, Consumer, Interest};
use larder_resp::{Frame, Protocol};
use parking_lot::Mutex;

use crate::testing::*;

const WRONGTYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";

fn arr(items: &[&str]) -> Frame {
    Frame::Array(items.iter().map(|s| bulk(s)).collect())
}

/// The reply's bulk strings, sorted (for replies whose order is the hash's own).
fn sorted(f: Frame) -> Vec<String> {
    let items = match f {
        Frame::Array(items) => items,
        other => panic!("not an array: {other:?}"),
    };
    let mut v: Vec<String> = items
        .into_iter()
        .map(|i| match i {
            Frame::Bulk(b) => String::from_utf8_lossy(&b).into_owned(),
            other => panic!("not a bulk: {other:?}"),
        })
        .collect();
    v.sort();
    v
}

/// A flat field/value reply as a map.
fn pairs(f: Frame) -> BTreeMap<String, String> {
    let items = match f {
        Frame::Array(items) => items,
        Frame::Map(kv) => kv.into_iter().flat_map(|(k, v)| [k, v]).collect(),
        other => panic!("not an array: {other:?}"),
    };
    let text = |f: &Frame| match f {
        Frame::Bulk(b) => String::from_utf8_lossy(b).into_owned(),
        other => panic!("not a bulk: {other:?}"),
    };
    items
        .chunks_exact(2)
        .map(|p| (text(&p[0]), text(&p[1])))
        .collect()
}

fn encoding(h: &mut Harness, key: &str) -> Frame {
    h.run(&["OBJECT", "ENCODING", key])
}

#[test]
fn set_get_and_counts() {
    let mut h = Harness::new();
    assert_eq!(h.run(&["HSET", "h", "a", "1", "b", "2"]), int(2));
    assert_eq!(h.run(&["HSET", "h", "a", "10", "c", "3"]), int(1));
    assert_eq!(h.run(&["HMSET", "h", "d", "4"]), ok());
    assert_eq!(h.run(&["HGET", "h", "a"]), bulk("10"));
    assert_eq!(h.run(&["HGET", "h", "zz"]), Frame::Null);
    assert_eq!(h.run(&["HGET", "none", "a"]), Frame::Null);
    assert_eq!(
        h.run(&["HMGET", "h", "a", "zz", "b"]),
        Frame::Array(vec![bulk("10"), Frame::Null, bulk("2")])
    );
    assert_eq!(
        h.run(&["HMGET", "none", "a", "b"]),
        Frame::Array(vec![Frame::Null, Frame::Null])
    );
    assert_eq!(h.run(&["HLEN", "h"]), int(4));
    assert_eq!(h.run(&["HLEN", "none"]), int(0));
    assert_eq!(h.run(&["HSTRLEN", "h", "a"]), int(2));
    assert_eq!(h.run(&["HSTRLEN", "h", "zz"]), int(0));
    assert_eq!(h.run(&["HSTRLEN", "none", "a"]), int(0));
    assert_eq!(h.run(&["HEXISTS", "h", "a"]), int(1));
    assert_eq!(h.run(&["HEXISTS", "h", "zz"]), int(0));
    assert_eq!(h.run(&["HEXISTS", "none", "a"]), int(0));
    assert_eq!(h.run(&["HSETNX", "h", "a", "x"]), int(0));
    assert_eq!(h.run(&["HSETNX", "h", "e", "5"]), int(1));
    assert_eq!(h.run(&["HSETNX", "new", "f", "v"]), int(1));
    assert_eq!(h.run(&["HGET", "h", "a"]), bulk("10"));
    assert_eq!(h.run(&["TYPE", "h"]), Frame::Simple("hash".into()));
    assert_eq!(encoding(&mut h, "h"), bulk("listpack"));
    // Insertion order while compact.
    assert_eq!(h.run(&["HKEYS", "h"]), arr(&["a", "b", "c", "d", "e"]));
    assert_eq!(h.run(&["HVALS", "h"]), arr(&["10", "2", "3", "4", "5"]));
    assert_eq!(
        h.run(&["HGETALL", "h"]),
        arr(&["a", "10", "b", "2", "c", "3", "d", "4", "e", "5"])
    );
    assert_eq!(h.run(&["HKEYS", "none"]), arr(&[]));
    assert_eq!(h.run(&["HGETALL", "none"]), arr(&[]));
    h.out.proto = Protocol::Resp3;
    assert_eq!(
        h.run_raw(&[b"HGETALL", b"new"]),
        b"%1\r\n$1\r\nf\r\n$1\r\nv\r\n"
    );
    assert_eq!(h.run_raw(&[b"HGETALL", b"none"]), b"%0\r\n");
    assert_eq!(h.run_raw(&[b"HKEYS", b"none"]), b"*0\r\n");
    assert_eq!(h.run_raw(&[b"HGET", b"none", b"f"]), b"_\r\n");
}

#[test]
fn arity_errors() {
    let mut h = Harness::new();
    for (argv, name) in [
        (&["HSET", "h", "a"][..], "hset"),
        (&["HSET", "h", "a", "1", "b"], "hset"),
        (&["HMSET", "h", "a", "1", "b"], "hmset"),
        (&["HSETNX", "h", "a"], "hsetnx"),
        (&["HGET", "h"], "hget"),
        (&["HDEL", "h"], "hdel"),
        (&["HLEN"], "hlen"),
        (&["HINCRBY", "h", "f"], "hincrby"),
        (&["HRANDFIELD"], "hrandfield"),
        (&["HSCAN", "h"], "hscan"),
    ] {
        assert_eq!(
            h.run(argv),
            err(&format!(
                "ERR wrong number of arguments for '{name}' command"
            )),
            "{argv:?}"
        );
    }
    assert_eq!(h.run(&["EXISTS", "h"]), int(0));
}

#[test]
fn hdel_deletes_the_emptied_key() {
    let mut h = Harness::new();
    h.run(&["HSET", "h", "a", "1", "b", "2", "c", "3"]);
    assert_eq!(h.run(&["HDEL", "h", "a", "zz", "a"]), int(1));
    assert_eq!(h.run(&["HDEL", "none", "a"]), int(0));
    assert_eq!(h.run(&["HDEL", "h", "b", "c", "d"]), int(2));
    assert_eq!(h.run(&["EXISTS", "h"]), int(0));
}

#[test]
fn encodings_follow_the_limits() {
    let mut h = Harness::new();
    h.run(&["CONFIG", "SET", "hash-max-listpack-entries", "3"]);
    h.run(&["CONFIG", "SET", "hash-max-listpack-value", "5"]);
    h.run(&["HSET", "h", "a", "1", "b", "2", "c", "3"]);
    assert_eq!(encoding(&mut h, "h"), bulk("listpack"));
    h.run(&["HSET", "h", "d", "4"]);
    assert_eq!(encoding(&mut h, "h"), bulk("hashtable"));
    h.run(&["HDEL", "h", "a", "b", "c"]);
    assert_eq!(encoding(&mut h, "h"), bulk("hashtable"));
    h.run(&["HSET", "v", "a", "123456"]);
    assert_eq!(encoding(&mut h, "v"), bulk("hashtable"));
    h.run(&["HSET", "f", "123456", "a"]);
    assert_eq!(encoding(&mut h, "f"), bulk("hashtable"));
    // HSETNX on a present field converts nothing; HINCRBY's long result does.
    h.run(&["HSET", "n", "x", "1"]);
    h.run(&["HSETNX", "n", "x", "1234567"]);
    assert_eq!(encoding(&mut h, "n"), bulk("listpack"));
    h.run(&["HINCRBY", "n", "x", "9999"]);
    assert_eq!(encoding(&mut h, "n"), bulk("listpack"));
    h.run(&["HINCRBY", "n", "x", "90000"]);
    assert_eq!(h.run(&["HGET", "n", "x"]), bulk("100000"));
    assert_eq!(encoding(&mut h, "n"), bulk("hashtable"));
    assert_eq!(
        h.run(&["HGETALL", "h"]),
        arr(&["d", "4"]),
        "a table hash still answers"
    );
}

#[test]
fn hincrby_and_errors() {
    let mut h = Harness::new();
    assert_eq!(h.run(&["HINCRBY", "h", "n", "5"]), int(5));
    assert_eq!(h.run(&["HINCRBY", "h", "n", "-7"]), int(-2));
    h.run(&[
        "HSET",
        "h",
        "s",
        "abc",
        "big",
        "9223372036854775807",
        "sp",
        " 1",
    ]);
    assert_eq!(
        h.run(&["HINCRBY", "h", "s", "1"]),
        err("ERR hash value is not an integer")
    );
    assert_eq!(
        h.run(&["HINCRBY", "h", "sp", "1"]),
        err("ERR hash value is not an integer")
    );
    assert_eq!(
        h.run(&["HINCRBY", "h", "big", "1"]),
        err("ERR increment or decrement would overflow")
    );
    assert_eq!(h.run(&["HINCRBY", "h", "big", "-1"]), int(i64::MAX - 1));
    assert_eq!(
        h.run(&["HINCRBY", "h", "n", "x"]),
        err("ERR value is not an integer or out of range")
    );
    h.run(&["SET", "str", "v"]);
    // The increment is parsed before the key's type is checked.
    assert_eq!(
        h.run(&["HINCRBY", "str", "n", "x"]),
        err("ERR value is not an integer or out of range")
    );
    assert_eq!(h.run(&["HINCRBY", "str", "n", "1"]), err(WRONGTYPE));
}

#[test]
fn hincrbyfloat_like_redis() {
    let mut h = Harness::new();
    assert_eq!(h.run(&["HINCRBYFLOAT", "h", "f", "10.5"]), bulk("10.5"));
    assert_eq!(h.run(&["HINCRBYFLOAT", "h", "f", "0.1"]), bulk("10.6"));
    h.run(&["HSET", "h", "a", "0.1", "e", "5.0e3", "x", "abc", "i", "3"]);
    assert_eq!(h.run(&["HINCRBYFLOAT", "h", "a", "0.2"]), bulk("0.3"));
    assert_eq!(h.run(&["HINCRBYFLOAT", "h", "e", "2.0e2"]), bulk("5200"));
    assert_eq!(h.run(&["HINCRBYFLOAT", "h", "i", "-3"]), bulk("0"));
    assert_eq!(h.run(&["HGET", "h", "e"]), bulk("5200"));
    assert_eq!(
        h.run(&["HINCRBYFLOAT", "h", "x", "1"]),
        err("ERR hash value is not a float")
    );
    assert_eq!(
        h.run(&["HINCRBYFLOAT", "h", "a", "abc"]),
        err("ERR value is not a valid float")
    );
    assert_eq!(
        h.run(&["HINCRBYFLOAT", "h", "a", "inf"]),
        err("ERR value is NaN or Infinity")
    );
    h.run(&["HSET", "h", "huge", "1e4932"]);
    assert_eq!(
        h.run(&["HINCRBYFLOAT", "h", "huge", "1e4932"]),
        err("ERR increment would produce NaN or Infinity")
    );
    h.run(&["SET", "str", "v"]);
    assert_eq!(
        h.run(&["HINCRBYFLOAT", "str", "f", "x"]),
        err("ERR value is not a valid float")
    );
    assert_eq!(h.run(&["HINCRBYFLOAT", "str", "f", "1"]), err(WRONGTYPE));
}

#[derive(Default)]
struct Collect(Mutex<Vec<Change>>);

impl Consumer for Collect {
    fn committed(&self, _: u64, changes: &[Change]) {
        self.0.lock().extend(changes.iter().cloned());
    }
}

#[test]
fn hincrbyfloat_replays_as_hset() {
    let mut h = Harness::new();
    let c = Arc::new(Collect::default());
    h.server
        .keyspace
        .feed()
        .subscribe(Interest::COMMANDS, c.clone());
    h.run(&["HINCRBYFLOAT", "h", "f", "0.1"]);
    h.run(&["HINCRBYFLOAT", "h", "f", "0.2"]);
    h.run(&["HINCRBY", "h", "n", "2"]);
    let got: Vec<String> = (c.0.lock().iter())
        .filter(|ch| ch.kind == ChangeKind::Command)
        .map(|ch| {
            let words: Vec<String> = (ch.argv.iter())
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect();
            words.join(" ")
        })
        .collect();
    assert_eq!(got, ["HSET h f 0.1", "HSET h f 0.3", "HINCRBY h n 2"]);
}

#[test]
fn notifications() {
    let mut h = Harness::new();
    let notices = Notices::subscribe(h.server.keyspace.feed());
    let mut check = |argv: &[&str], want: &[&str]| {
        h.run(argv);
        assert_eq!(notices.take(), want, "{argv:?}");
    };
    check(&["HSET", "h", "a", "1"], &["n:new@0:h", "h:hset@0:h"]);
    check(&["HMSET", "h", "a", "2", "b", "2"], &["h:hset@0:h"]);
    check(&["HSETNX", "h", "a", "3"], &[]);
    check(&["HSETNX", "h", "c", "3"], &["h:hset@0:h"]);
    check(&["HSETNX", "n", "c", "3"], &["n:new@0:n", "h:hset@0:n"]);
    check(&["HINCRBY", "h", "i", "1"], &["h:hincrby@0:h"]);
    check(&["HINCRBY", "h", "a", "x"], &[]);
    check(&["HINCRBYFLOAT", "h", "i", "1.5"], &["h:hincrbyfloat@0:h"]);
    check(
        &["HINCRBYFLOAT", "m", "i", "1.5"],
        &["n:new@0:m", "h:hincrbyfloat@0:m"],
    );
    check(&["HDEL", "h", "zz"], &[]);
    check(&["HDEL", "h", "a", "b"], &["h:hdel@0:h"]);
    check(&["HDEL", "h", "c", "i"], &["h:hdel@0:h", "g:del@0:h"]);
    check(&["HGETALL", "n"], &[]);
}

#[test]
fn hrandfield_shapes_and_errors() {
    let mut h = Harness::new();
    h.run(&["HSET", "h", "a", "1", "b", "2", "c", "3"]);
    let all: HashSet<&str> = ["a", "b", "c"].into();
    for _ in 0..20 {
        let Frame::Bulk(f) = h.run(&["HRANDFIELD", "h"]) else {
            panic!("bulk")
        };
        assert!(all.contains(String::from_utf8_lossy(&f).as_ref()));
    }
    assert_eq!(h.run(&["HRANDFIELD", "none"]), Frame::Null);
    assert_eq!(h.run(&["HRANDFIELD", "none", "3"]), arr(&[]));
    assert_eq!(h.run(&["HRANDFIELD", "h", "0"]), arr(&[]));
    assert_eq!(sorted(h.run(&["HRANDFIELD", "h", "5"])), ["a", "b", "c"]);
    assert_eq!(sorted(h.run(&["HRANDFIELD", "h", "3"])), ["a", "b", "c"]);
    let two = sorted(h.run(&["HRANDFIELD", "h", "2"]));
    assert_eq!(two.len(), 2);
    assert_ne!(two[0], two[1]);
    let many = sorted(h.run(&["HRANDFIELD", "h", "-10"]));
    assert_eq!(many.len(), 10);
    assert!(many.iter().all(|f| all.contains(f.as_str())));
    let with = pairs(h.run(&["HRANDFIELD", "h", "-5", "WITHVALUES"]));
    assert!(with.iter().all(|(f, v)| (f.as_str(), v.as_str())
        == match f.as_str() {
            "a" => ("a", "1"),
            "b" => ("b", "2"),
            _ => ("c", "3"),
        }));
    let with = pairs(h.run(&["HRANDFIELD", "h", "3", "withvalues"]));
    assert_eq!(with.len(), 3);
    h.out.proto = Protocol::Resp3;
    let Frame::Array(nested) = h.run(&["HRANDFIELD", "h", "-4", "WITHVALUES"]) else {
        panic!("array")
    };
    assert_eq!(nested.len(), 4);
    assert!(nested
        .iter()
        .all(|p| matches!(p, Frame::Array(kv) if kv.len() == 2)));
    assert_eq!(h.run_raw(&[b"HRANDFIELD", b"none"]), b"_\r\n");
    assert_eq!(h.run_raw(&[b"HRANDFIELD", b"none", b"1"]), b"*0\r\n");
    h.out.proto = Protocol::Resp2;
    assert_eq!(
        h.run(&["HRANDFIELD", "h", "x"]),
        err("ERR value is not an integer or out of range")
    );
    assert_eq!(
        h.run(&["HRANDFIELD", "h", "-9223372036854775808"]),
        err("ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807")
    );
    assert_eq!(
        h.run(&["HRANDFIELD", "h", "1", "WITHSCORES"]),
        err("ERR syntax error")
    );
    assert_eq!(
        h.run(&["HRANDFIELD", "h", "1", "WITHVALUES", "x"]),
        err("ERR syntax error")
    );
    assert_eq!(
        h.run(&["HRANDFIELD", "h", "-4611686018427387904", "WITHVALUES"]),
        err("ERR value is out of range")
    );
    // A table-encoded hash, with each strategy of distinct picks.
    h.run(&["CONFIG", "SET", "hash-max-listpack-entries", "4"]);
    for i in 0..100 {
        h.run(&["HSET", "t", &format!("f{i}"), &format!("v{i}")]);
    }
    assert_eq!(encoding(&mut h, "t"), bulk("hashtable"));
    for n in [1, 10, 40, 99, 100, 200] {
        let got = pairs(h.run(&["HRANDFIELD", "t", &n.to_string(), "WITHVALUES"]));
        assert_eq!(got.len(), n.min(100));
        assert!(got.iter().all(|(f, v)| f[1..] == v[1..]));
    }
}

/// Run a whole HSCAN; returns the pairs seen and the number of calls.
fn hscan_all(h: &mut Harness, key: &str, opts: &[&str]) -> (Vec<(String, String)>, usize) {
    let mut cursor = "0".to_string();
    let mut seen = Vec::new();
    let mut calls = 0;
    loop {
        let mut argv = vec!["HSCAN", key, cursor.as_str()];
        argv.extend_from_slice(opts);
        let Frame::Array(parts) = h.run(&argv) else {
            panic!("scan reply")
        };
        let [Frame::Bulk(next), batch] = &parts[..] else {
            panic!("scan shape {parts:?}")
        };
        calls += 1;
        seen.extend(pairs(batch.clone()));
        cursor = String::from_utf8_lossy(next).into_owned();
        if cursor == "0" {
            break;
        }
    }
    seen.sort();
    (seen, calls)
}

#[test]
fn hscan_compact_and_table() {
    let mut h = Harness::new();
    h.run(&["HSET", "h", "a", "1", "b", "2", "k1", "3"]);
    assert_eq!(
        h.run(&["HSCAN", "h", "0", "COUNT", "1"]),
        Frame::Array(vec![bulk("0"), arr(&["a", "1", "b", "2", "k1", "3"])])
    );
    assert_eq!(
        h.run(&["HSCAN", "h", "0", "MATCH", "k*"]),
        Frame::Array(vec![bulk("0"), arr(&["k1", "3"])])
    );
    let empty = Frame::Array(vec![bulk("0"), arr(&[])]);
    assert_eq!(h.run(&["HSCAN", "none", "0"]), empty);
    // Options are not parsed for a missing key, as in Redis.
    assert_eq!(h.run(&["HSCAN", "none", "0", "COUNT", "0"]), empty);
    assert_eq!(h.run(&["HSCAN", "h", "x"]), err("ERR invalid cursor"));
    assert_eq!(
        h.run(&["HSCAN", "h", "0", "COUNT", "0"]),
        err("ERR syntax error")
    );
    assert_eq!(
        h.run(&["HSCAN", "h", "0", "COUNT", "x"]),
        err("ERR value is not an integer or out of range")
    );
    assert_eq!(
        h.run(&["HSCAN", "h", "0", "COUNT"]),
        err("ERR syntax error")
    );
    assert_eq!(
        h.run(&["HSCAN", "h", "0", "TYPE", "hash"]),
        err("ERR syntax error")
    );
    h.run(&["SET", "s", "v"]);
    assert_eq!(h.run(&["HSCAN", "s", "0"]), err(WRONGTYPE));
    assert_eq!(h.run(&["HSCAN", "s", "x"]), err("ERR invalid cursor"));

    for i in 0..1000 {
        h.run(&["HSET", "t", &format!("f{i}"), &format!("v{i}")]);
    }
    assert_eq!(encoding(&mut h, "t"), bulk("hashtable"));
    let (all, calls) = hscan_all(&mut h, "t", &[]);
    assert_eq!(all.len(), 1000);
    assert!(calls > 50, "{calls}");
    assert!(all.iter().all(|(f, v)| f[1..] == v[1..]));
    let (some, _) = hscan_all(&mut h, "t", &["MATCH", "f1*", "COUNT", "100"]);
    assert_eq!(some.len(), 111);
    // A huge cursor ends the walk.
    assert_eq!(h.run(&["HSCAN", "t", "18446744073709551615"]), empty);
    h.out.proto = Protocol::Resp3;
    assert_eq!(
        h.run(&["HSCAN", "h", "0", "MATCH", "a"]),
        Frame::Array(vec![bulk("0"), arr(&["a", "1"])])
    );
}

#[test]
fn wrong_types_and_hits() {
    let mut h = Harness::new();
    h.run(&["SET", "s", "v"]);
    h.run(&["HSET", "h", "a", "1"]);
    for argv in [
        &["HSET", "s", "a", "1"][..],
        &["HMSET", "s", "a", "1"],
        &["HSETNX", "s", "a", "1"],
        &["HGET", "s", "a"],
        &["HMGET", "s", "a"],
        &["HDEL", "s", "a"],
        &["HLEN", "s"],
        &["HSTRLEN", "s", "a"],
        &["HEXISTS", "s", "a"],
        &["HKEYS", "s"],
        &["HVALS", "s"],
        &["HGETALL", "s"],
        &["HRANDFIELD", "s"],
        &["HRANDFIELD", "s", "2"],
        &["HSCAN", "s", "0"],
        &["GET", "h"],
        &["LPUSH", "h", "x"],
    ] {
        assert_eq!(h.run(argv), err(WRONGTYPE), "{argv:?}");
    }
    let s = Arc::clone(&h.server);
    let hits = || {
        (
            s.stats.sum(|t| &t.keyspace_hits),
            s.stats.sum(|t| &t.keyspace_misses),
        )
    };
    let before = hits();
    h.run(&["HGET", "h", "a"]);
    h.run(&["HGET", "none", "a"]);
    h.run(&["HSET", "h", "b", "2"]);
    h.run(&["HLEN", "h"]);
    let after = hits();
    assert_eq!((after.0 - before.0, after.1 - before.1), (2, 1));
}

#[test]
fn copy_rename_expiry_and_binary() {
    let mut h = Harness::new();
    h.run_bytes(&[b"HSET", b"h", b"\x00\xff\r\n", b"", b"", b"\x01"]);
    assert_eq!(
        h.run_bytes(&[b"HGET", b"h", b"\x00\xff\r\n"]),
        Frame::Bulk(Vec::new())
    );
    assert_eq!(h.run_bytes(&[b"HGET", b"h", b""]), Frame::Bulk(vec![1]));
    assert_eq!(h.run(&["COPY", "h", "c"]), int(1));
    assert_eq!(h.run(&["HSET", "c", "z", "1"]), int(1));
    assert_eq!(h.run(&["HLEN", "h"]), int(2));
    assert_eq!(h.run(&["RENAME", "c", "d"]), ok());
    assert_eq!(h.run(&["HLEN", "d"]), int(3));
    assert_eq!(h.run(&["PEXPIREAT", "d", "1"]), int(1));
    assert_eq!(h.run(&["HLEN", "d"]), int(0));
    assert_eq!(h.run(&["HSET", "d", "a", "1"]), int(1));
}

#[test]
fn table_is_complete() {
    for spec in super::COMMANDS {
        assert_eq!(spec.group.name(), "hash");
        assert_eq!(spec.group.acl_category(), "@hash");
    }
    assert_eq!(super::COMMANDS.len(), 16);
}
