use std::collections::BTreeSet;
use std::sync::Arc;

use larder_engine::{Change, ChangeKind, Consumer, Interest};
use larder_resp::{Frame, Protocol};
use parking_lot::Mutex;

use crate::testing::*;

const WRONGTYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";

/// The members of an array or set reply, sorted.
fn sorted(f: Frame) -> Vec<String> {
    let items = match f {
        Frame::Array(v) | Frame::Set(v) => v,
        other => panic!("not a collection: {other:?}"),
    };
    let mut out: Vec<String> = items
        .into_iter()
        .map(|i| match i {
            Frame::Bulk(b) => String::from_utf8_lossy(&b).into_owned(),
            other => panic!("not a bulk: {other:?}"),
        })
        .collect();
    out.sort();
    out
}

fn strs(items: &[&str]) -> Vec<String> {
    let mut v: Vec<String> = items.iter().map(|s| s.to_string()).collect();
    v.sort();
    v
}

fn members(h: &mut Harness, key: &str) -> Vec<String> {
    sorted(h.run(&["SMEMBERS", key]))
}

fn encoding(h: &mut Harness, key: &str) -> Frame {
    h.run(&["OBJECT", "ENCODING", key])
}

#[test]
fn sadd_srem_scard_sismember() {
    let mut h = Harness::new();
    assert_eq!(h.run(&["SADD", "s", "a", "b", "a"]), int(2));
    assert_eq!(h.run(&["SADD", "s", "b", "c"]), int(1));
    assert_eq!(h.run(&["SCARD", "s"]), int(3));
    assert_eq!(h.run(&["SCARD", "none"]), int(0));
    assert_eq!(h.run(&["SISMEMBER", "s", "a"]), int(1));
    assert_eq!(h.run(&["SISMEMBER", "s", "z"]), int(0));
    assert_eq!(h.run(&["SISMEMBER", "none", "a"]), int(0));
    assert_eq!(
        h.run(&["SMISMEMBER", "s", "a", "z", "c"]),
        Frame::Array(vec![int(1), int(0), int(1)])
    );
    assert_eq!(
        h.run(&["SMISMEMBER", "none", "a"]),
        Frame::Array(vec![int(0)])
    );
    assert_eq!(h.run(&["TYPE", "s"]), Frame::Simple("set".into()));
    assert_eq!(h.run(&["SREM", "s", "a", "z", "a"]), int(1));
    assert_eq!(h.run(&["SREM", "none", "a"]), int(0));
    assert_eq!(members(&mut h, "s"), strs(&["b", "c"]));
    assert_eq!(h.run(&["SREM", "s", "b", "c", "d"]), int(2));
    assert_eq!(h.run(&["EXISTS", "s"]), int(0));
    assert_eq!(
        h.run(&["SADD", "s"]),
        err("ERR wrong number of arguments for 'sadd' command")
    );
    assert_eq!(
        h.run(&["SMISMEMBER", "s"]),
        err("ERR wrong number of arguments for 'smismember' command")
    );
}

#[test]
fn encodings_follow_redis() {
    let mut h = Harness::new();
    h.run(&["SADD", "i", "1", "-2", "300000"]);
    assert_eq!(encoding(&mut h, "i"), bulk("intset"));
    assert_eq!(
        h.run(&["SMEMBERS", "i"]),
        Frame::Array(vec![bulk("-2"), bulk("1"), bulk("300000")])
    );
    h.run(&["SADD", "i", "x"]);
    assert_eq!(encoding(&mut h, "i"), bulk("hashtable"));
    h.run(&["SREM", "i", "x"]);
    assert_eq!(encoding(&mut h, "i"), bulk("hashtable"));
    h.run(&["SADD", "z", "01"]);
    assert_eq!(encoding(&mut h, "z"), bulk("hashtable"));
    assert_eq!(
        h.run(&["CONFIG", "SET", "set-max-intset-entries", "3"]),
        ok()
    );
    h.run(&["SADD", "n", "1", "2", "3"]);
    assert_eq!(encoding(&mut h, "n"), bulk("intset"));
    h.run(&["SADD", "n", "4"]);
    assert_eq!(encoding(&mut h, "n"), bulk("hashtable"));
    assert_eq!(members(&mut h, "n"), strs(&["1", "2", "3", "4"]));
}

#[test]
fn smembers_and_resp3_sets() {
    let mut h = Harness::new();
    assert_eq!(h.run_raw(&[b"SMEMBERS", b"none"]), b"*0\r\n");
    h.out.proto = Protocol::Resp3;
    assert_eq!(h.run_raw(&[b"SMEMBERS", b"none"]), b"~0\r\n");
    h.run(&["SADD", "s", "1"]);
    assert_eq!(h.run_raw(&[b"SMEMBERS", b"s"]), b"~1\r\n$1\r\n1\r\n");
    assert_eq!(h.run_raw(&[b"SUNION", b"s", b"none"]), b"~1\r\n$1\r\n1\r\n");
    assert_eq!(h.run_raw(&[b"SINTER", b"s", b"none"]), b"~0\r\n");
    assert_eq!(h.run_raw(&[b"SDIFF", b"none", b"s"]), b"~0\r\n");
    assert_eq!(h.run_raw(&[b"SPOP", b"none"]), b"_\r\n");
    assert_eq!(h.run_raw(&[b"SPOP", b"none", b"2"]), b"~0\r\n");
    assert_eq!(h.run_raw(&[b"SRANDMEMBER", b"none"]), b"_\r\n");
    assert_eq!(h.run_raw(&[b"SRANDMEMBER", b"none", b"2"]), b"*0\r\n");
    assert_eq!(
        h.run_raw(&[b"SRANDMEMBER", b"s", b"2"]),
        b"*1\r\n$1\r\n1\r\n"
    );
    assert_eq!(h.run_raw(&[b"SPOP", b"s", b"0"]), b"~0\r\n");
    assert_eq!(h.run_raw(&[b"SPOP", b"s", b"5"]), b"~1\r\n$1\r\n1\r\n");
}

#[test]
fn srandmember_counts() {
    let mut h = Harness::new();
    for members in [
        &["1", "2", "3", "4", "5", "6", "7", "8", "9", "10"][..],
        &["a", "b", "c", "d", "e", "f", "g", "h", "i", "j"],
    ] {
        h.run(&["DEL", "s"]);
        let mut argv = vec!["SADD", "s"];
        argv.extend_from_slice(members);
        h.run(&argv);
        let all = strs(members);
        let one = sorted(Frame::Array(vec![h.run(&["SRANDMEMBER", "s"])]));
        assert!(all.contains(&one[0]));
        for count in [1, 2, 3, 4, 9, 10, 11, 100] {
            let got = sorted(h.run(&["SRANDMEMBER", "s", &count.to_string()]));
            let distinct: BTreeSet<&String> = got.iter().collect();
            assert_eq!(got.len(), count.min(10), "count {count}");
            assert_eq!(distinct.len(), got.len(), "distinct for count {count}");
            assert!(got.iter().all(|m| all.contains(m)));
        }
        let got = sorted(h.run(&["SRANDMEMBER", "s", "-30"]));
        assert_eq!(got.len(), 30);
        assert!(got.iter().all(|m| all.contains(m)));
        let mut seen = BTreeSet::new();
        for _ in 0..50 {
            seen.extend(sorted(h.run(&["SRANDMEMBER", "s", "-5"])));
        }
        assert_eq!(seen.len(), 10, "every member comes up");
        assert_eq!(h.run(&["SRANDMEMBER", "s", "0"]), Frame::Array(vec![]));
    }
    assert_eq!(h.run(&["SRANDMEMBER", "none"]), Frame::Null);
    assert_eq!(
        h.run(&["SRANDMEMBER", "s", "x"]),
        err("ERR value is not an integer or out of range")
    );
    assert_eq!(
        h.run(&["SRANDMEMBER", "s", "-9223372036854775808"]),
        err("ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807")
    );
    assert_eq!(
        h.run(&["SRANDMEMBER", "s", "1", "2"]),
        err("ERR syntax error")
    );
}

#[test]
fn spop_single_and_counts() {
    let mut h = Harness::new();
    h.run(&["SADD", "s", "a", "b", "c"]);
    let mut popped = Vec::new();
    for _ in 0..3 {
        let Frame::Bulk(m) = h.run(&["SPOP", "s"]) else {
            panic!("a member")
        };
        popped.push(String::from_utf8_lossy(&m).into_owned());
    }
    popped.sort();
    assert_eq!(popped, strs(&["a", "b", "c"]));
    assert_eq!(h.run(&["EXISTS", "s"]), int(0));
    assert_eq!(h.run(&["SPOP", "s"]), Frame::Null);
    for n in 0..=12 {
        for encoding in [
            &["1", "2", "3", "4", "5", "6", "7", "8", "9", "10"][..],
            &["a", "b", "c", "d", "e", "f", "g", "h", "i", "j"],
        ] {
            h.run(&["DEL", "s"]);
            let mut argv = vec!["SADD", "s"];
            argv.extend_from_slice(encoding);
            h.run(&argv);
            let got = sorted(h.run(&["SPOP", "s", &n.to_string()]));
            assert_eq!(got.len(), n.min(10));
            let mut rest = if n >= 10 {
                vec![]
            } else {
                members(&mut h, "s")
            };
            rest.extend(got);
            rest.sort();
            assert_eq!(rest, strs(encoding));
            assert_eq!(h.run(&["EXISTS", "s"]), int(i64::from(n < 10)));
        }
    }
    for bad in ["-1", "x"] {
        assert_eq!(
            h.run(&["SPOP", "s", bad]),
            err("ERR value is out of range, must be positive")
        );
    }
    assert_eq!(h.run(&["SPOP", "s", "1", "2"]), err("ERR syntax error"));
}

#[test]
fn smove_cases() {
    let mut h = Harness::new();
    h.run(&["SADD", "a", "1", "2"]);
    h.run(&["SADD", "b", "x"]);
    h.run(&["SET", "str", "v"]);
    assert_eq!(h.run(&["SMOVE", "a", "b", "1"]), int(1));
    assert_eq!(members(&mut h, "a"), strs(&["2"]));
    assert_eq!(members(&mut h, "b"), strs(&["1", "x"]));
    assert_eq!(h.run(&["SMOVE", "a", "b", "nope"]), int(0));
    assert_eq!(h.run(&["SMOVE", "a", "a", "2"]), int(1));
    assert_eq!(h.run(&["SMOVE", "a", "a", "3"]), int(0));
    assert_eq!(h.run(&["SMOVE", "none", "str", "2"]), int(0));
    assert_eq!(h.run(&["SMOVE", "str", "a", "2"]), err(WRONGTYPE));
    assert_eq!(h.run(&["SMOVE", "a", "str", "2"]), err(WRONGTYPE));
    assert_eq!(h.run(&["SMOVE", "a", "c", "2"]), int(1));
    assert_eq!(h.run(&["EXISTS", "a"]), int(0));
    assert_eq!(members(&mut h, "c"), strs(&["2"]));
    assert_eq!(encoding(&mut h, "c"), bulk("intset"));
    assert_eq!(h.run(&["SMOVE", "b", "c", "x"]), int(1));
    assert_eq!(encoding(&mut h, "c"), bulk("hashtable"));
}

#[test]
fn intersections_unions_differences() {
    let mut h = Harness::new();
    h.run(&["SADD", "a", "1", "2", "3", "x"]);
    h.run(&["SADD", "b", "2", "3", "4"]);
    h.run(&["SADD", "c", "3", "2", "y"]);
    assert_eq!(sorted(h.run(&["SINTER", "a", "b", "c"])), strs(&["2", "3"]));
    assert_eq!(sorted(h.run(&["SINTER", "a"])), strs(&["1", "2", "3", "x"]));
    assert_eq!(
        sorted(h.run(&["SINTER", "a", "a"])),
        strs(&["1", "2", "3", "x"])
    );
    assert_eq!(sorted(h.run(&["SINTER", "a", "none"])), strs(&[]));
    assert_eq!(h.run(&["SINTERCARD", "3", "a", "b", "c"]), int(2));
    assert_eq!(h.run(&["SINTERCARD", "2", "a", "b", "LIMIT", "1"]), int(1));
    assert_eq!(h.run(&["SINTERCARD", "2", "a", "b", "limit", "0"]), int(2));
    assert_eq!(h.run(&["SINTERCARD", "2", "a", "none"]), int(0));
    assert_eq!(
        sorted(h.run(&["SUNION", "a", "b", "none"])),
        strs(&["1", "2", "3", "4", "x"])
    );
    assert_eq!(sorted(h.run(&["SDIFF", "a", "b", "c"])), strs(&["1", "x"]));
    assert_eq!(
        sorted(h.run(&["SDIFF", "a", "none"])),
        strs(&["1", "2", "3", "x"])
    );
    assert_eq!(sorted(h.run(&["SDIFF", "a", "b", "a"])), strs(&[]));
    assert_eq!(sorted(h.run(&["SDIFF", "none", "a"])), strs(&[]));

    assert_eq!(h.run(&["SINTERSTORE", "d", "a", "b"]), int(2));
    assert_eq!(members(&mut h, "d"), strs(&["2", "3"]));
    assert_eq!(encoding(&mut h, "d"), bulk("intset"));
    assert_eq!(h.run(&["EXPIRE", "d", "100"]), int(1));
    assert_eq!(h.run(&["SUNIONSTORE", "d", "a", "c"]), int(5));
    assert_eq!(h.run(&["TTL", "d"]), int(-1));
    assert_eq!(encoding(&mut h, "d"), bulk("hashtable"));
    assert_eq!(h.run(&["SDIFFSTORE", "d", "a", "c"]), int(2));
    assert_eq!(members(&mut h, "d"), strs(&["1", "x"]));
    // The destination may be one of the sources.
    assert_eq!(h.run(&["SUNIONSTORE", "a", "a", "b"]), int(5));
    assert_eq!(members(&mut h, "a"), strs(&["1", "2", "3", "4", "x"]));
    // An empty result deletes the destination, whatever it held.
    h.run(&["SET", "str", "v"]);
    assert_eq!(h.run(&["SINTERSTORE", "str", "a", "none"]), int(0));
    assert_eq!(h.run(&["EXISTS", "str"]), int(0));
    h.run(&["SET", "str", "v"]);
    assert_eq!(h.run(&["SUNIONSTORE", "str", "b"]), int(3));
    assert_eq!(h.run(&["TYPE", "str"]), Frame::Simple("set".into()));
    assert_eq!(h.run(&["SDIFFSTORE", "e", "a", "a"]), int(0));
    assert_eq!(h.run(&["EXISTS", "e"]), int(0));
}

#[test]
fn sintercard_errors() {
    let mut h = Harness::new();
    for (argv, want) in [
        (
            &["SINTERCARD", "0", "a"][..],
            "ERR numkeys should be greater than 0",
        ),
        (
            &["SINTERCARD", "x", "a"],
            "ERR numkeys should be greater than 0",
        ),
        (
            &["SINTERCARD", "-1", "a"],
            "ERR numkeys should be greater than 0",
        ),
        (
            &["SINTERCARD", "3", "a", "b"],
            "ERR Number of keys can't be greater than number of args",
        ),
        (&["SINTERCARD", "1", "a", "LIMIT"], "ERR syntax error"),
        (
            &["SINTERCARD", "1", "a", "LIMIT", "-1"],
            "ERR LIMIT can't be negative",
        ),
        (
            &["SINTERCARD", "1", "a", "LIMIT", "x"],
            "ERR LIMIT can't be negative",
        ),
        (&["SINTERCARD", "1", "a", "FOO", "1"], "ERR syntax error"),
        (
            &["SINTERCARD", "1"],
            "ERR wrong number of arguments for 'sintercard' command",
        ),
    ] {
        assert_eq!(h.run(argv), err(want), "{argv:?}");
    }
}

#[test]
fn wrong_types() {
    let mut h = Harness::new();
    h.run(&["SET", "str", "v"]);
    h.run(&["SADD", "s", "a"]);
    for argv in [
        &["SADD", "str", "x"][..],
        &["SREM", "str", "x"],
        &["SCARD", "str"],
        &["SISMEMBER", "str", "x"],
        &["SMISMEMBER", "str", "x"],
        &["SMEMBERS", "str"],
        &["SRANDMEMBER", "str"],
        &["SRANDMEMBER", "str", "-2"],
        &["SPOP", "str"],
        &["SPOP", "str", "2"],
        &["SINTER", "s", "str"],
        &["SINTER", "none", "str"],
        &["SINTERCARD", "2", "none", "str"],
        &["SINTERSTORE", "d", "none", "str"],
        &["SUNION", "s", "str"],
        &["SUNIONSTORE", "d", "str"],
        &["SDIFF", "none", "str"],
        &["SDIFFSTORE", "d", "s", "str"],
        &["SSCAN", "str", "0"],
        &["SSCAN", "str", "0", "COUNT", "0"],
        &["GET", "s"],
        &["LPUSH", "s", "x"],
    ] {
        assert_eq!(h.run(argv), err(WRONGTYPE), "{argv:?}");
    }
    // A store that failed left the destination alone.
    assert_eq!(h.run(&["EXISTS", "d"]), int(0));
}

#[test]
fn sscan_small_and_large() {
    let mut h = Harness::new();
    h.run(&["SADD", "i", "1", "2", "3"]);
    assert_eq!(
        h.run(&["SSCAN", "i", "0", "COUNT", "1"]),
        Frame::Array(vec![
            bulk("0"),
            Frame::Array(vec![bulk("1"), bulk("2"), bulk("3")])
        ])
    );
    assert_eq!(
        h.run(&["SSCAN", "none", "0", "COUNT", "0"]),
        Frame::Array(vec![bulk("0"), Frame::Array(vec![])])
    );
    assert_eq!(h.run(&["SSCAN", "i", "x"]), err("ERR invalid cursor"));
    assert_eq!(
        h.run(&["SSCAN", "i", "0", "COUNT", "0"]),
        err("ERR syntax error")
    );
    assert_eq!(
        h.run(&["SSCAN", "i", "0", "COUNT", "x"]),
        err("ERR value is not an integer or out of range")
    );
    assert_eq!(
        h.run(&["SSCAN", "i", "0", "COUNT"]),
        err("ERR syntax error")
    );
    assert_eq!(
        h.run(&["SSCAN", "i", "0", "TYPE", "set"]),
        err("ERR syntax error")
    );
    let mut argv: Vec<String> = vec!["SADD".into(), "big".into()];
    argv.extend((0..1000).map(|i| format!("m{i}")));
    h.run(&argv.iter().map(String::as_str).collect::<Vec<_>>());
    let mut cursor = "0".to_string();
    let mut seen = BTreeSet::new();
    let mut calls = 0;
    loop {
        let Frame::Array(parts) = h.run(&["SSCAN", "big", &cursor, "MATCH", "m1*", "COUNT", "50"])
        else {
            panic!("reply")
        };
        let [Frame::Bulk(next), batch] = &parts[..] else {
            panic!("shape")
        };
        seen.extend(sorted(batch.clone()));
        // Members removed and added during the scan do not hide the others.
        h.run(&["SREM", "big", &format!("m{}", 2 * calls + 2)]);
        h.run(&["SADD", "big", &format!("new{calls}")]);
        calls += 1;
        cursor = String::from_utf8_lossy(next).into_owned();
        if cursor == "0" {
            break;
        }
    }
    assert!(calls > 10, "a real cursor: {calls} calls");
    let want: BTreeSet<String> = (0..1000)
        .map(|i| format!("m{i}"))
        .filter(|m| m.starts_with("m1"))
        .collect();
    // m10 .. m18 (even) may have been removed before they were seen.
    for m in want {
        let n: usize = m[1..].parse().unwrap_or(0);
        assert!(
            seen.contains(&m) || (n % 2 == 0 && n <= 2 * calls + 2),
            "{m} missing"
        );
    }
}

#[derive(Default)]
struct Collect(Mutex<Vec<Change>>);

impl Consumer for Collect {
    fn committed(&self, _: u64, changes: &[Change]) {
        self.0.lock().extend(changes.iter().cloned());
    }
}

fn recorded(h: &mut Harness, c: &Collect, argv: &[&str]) -> Vec<String> {
    c.0.lock().clear();
    h.run(argv);
    c.0.lock()
        .iter()
        .filter(|ch| ch.kind == ChangeKind::Command)
        .map(|ch| {
            ch.argv
                .iter()
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect()
}

#[test]
fn spop_propagates_srem_or_del() {
    let mut h = Harness::new();
    let c = Arc::new(Collect::default());
    h.server
        .keyspace
        .feed()
        .subscribe(Interest::COMMANDS, c.clone());
    h.run(&["SADD", "s", "a", "b", "c", "d"]);
    let one = recorded(&mut h, &c, &["SPOP", "s"]);
    assert_eq!(one.len(), 1);
    assert!(one[0].starts_with("SREM s "), "{one:?}");
    let two = recorded(&mut h, &c, &["SPOP", "s", "2"]);
    assert_eq!(two.len(), 2);
    assert!(two.iter().all(|r| r.starts_with("SREM s ")), "{two:?}");
    assert_eq!(recorded(&mut h, &c, &["SPOP", "s", "5"]), ["DEL s"]);
    assert!(recorded(&mut h, &c, &["SPOP", "s"]).is_empty());
    assert!(recorded(&mut h, &c, &["SPOP", "s", "3"]).is_empty());
    assert_eq!(recorded(&mut h, &c, &["SADD", "s", "x"]), ["SADD s x"]);
    assert!(recorded(&mut h, &c, &["SADD", "s", "x"]).is_empty());
}

#[test]
fn notifications() {
    let mut h = Harness::new();
    let n = Notices::subscribe(h.server.keyspace.feed());
    h.run(&["SADD", "a", "1", "2", "3"]);
    assert_eq!(n.take(), ["n:new@0:a", "s:sadd@0:a"]);
    h.run(&["SADD", "a", "1"]);
    h.run(&["SREM", "a", "9"]);
    assert!(n.take().is_empty());
    h.run(&["SADD", "b", "2"]);
    n.take();
    h.run(&["SMOVE", "a", "b", "1"]);
    assert_eq!(n.take(), ["s:srem@0:a", "s:sadd@0:b"]);
    h.run(&["SMOVE", "a", "b", "2"]);
    assert_eq!(n.take(), ["s:srem@0:a"]);
    h.run(&["SMOVE", "a", "c", "3"]);
    assert_eq!(
        n.take(),
        ["s:srem@0:a", "g:del@0:a", "n:new@0:c", "s:sadd@0:c"]
    );
    h.run(&["SMOVE", "c", "c", "3"]);
    h.run(&["SMOVE", "none", "c", "3"]);
    assert!(n.take().is_empty());
    h.run(&["SINTERSTORE", "d", "b", "b"]);
    assert_eq!(n.take(), ["n:new@0:d", "s:sinterstore@0:d"]);
    h.run(&["SUNIONSTORE", "d", "b", "c"]);
    assert_eq!(n.take(), ["s:sunionstore@0:d"]);
    h.run(&["SDIFFSTORE", "d", "none", "b"]);
    assert_eq!(n.take(), ["g:del@0:d"]);
    h.run(&["SDIFFSTORE", "d", "none", "b"]);
    assert!(n.take().is_empty());
    h.run(&["SREM", "c", "3"]);
    assert_eq!(n.take(), ["s:srem@0:c", "g:del@0:c"]);
    h.run(&["SADD", "e", "1", "2", "3"]);
    n.take();
    h.run(&["SPOP", "e", "0"]);
    assert!(n.take().is_empty());
    h.run(&["SPOP", "e"]);
    assert_eq!(n.take(), ["s:spop@0:e"]);
    h.run(&["SPOP", "e", "1"]);
    assert_eq!(n.take(), ["s:spop@0:e"]);
    h.run(&["SPOP", "e", "9"]);
    assert_eq!(n.take(), ["s:spop@0:e", "g:del@0:e"]);
}

#[test]
fn hits_and_misses() {
    let mut h = Harness::new();
    let s = Arc::clone(&h.server);
    let hits = || {
        (
            s.stats.sum(|t| &t.keyspace_hits),
            s.stats.sum(|t| &t.keyspace_misses),
        )
    };
    h.run(&["SADD", "a", "1"]);
    h.run(&["SREM", "none", "1"]);
    assert_eq!(hits(), (0, 0));
    h.run(&["SCARD", "a"]);
    h.run(&["SISMEMBER", "none", "1"]);
    h.run(&["SUNION", "a", "none"]);
    assert_eq!(hits(), (2, 2));
}

/// Multi-key forms, with keys on many shards, alone and inside EXEC.
#[test]
fn multi_key_plans() {
    let mut h = Harness::new();
    h.check_plans(&[
        "SADD k1 1 2 3",
        "SADD k2 2 3 x",
        "SADD k3 3 y",
        "SMOVE k1 k9 1",
        "SMOVE k9 k9 1",
        "SMOVE k1 k1 2",
        "SINTER k1 k2 k3 k4",
        "SINTERCARD 3 k1 k2 k3 LIMIT 1",
        "SINTERCARD 9 k1",
        "SINTERSTORE k5 k1 k2 k3",
        "SINTERSTORE k1 k1 k2",
        "SUNION k1 k2 k3 nope",
        "SUNIONSTORE k6 k1 k2 k3",
        "SUNIONSTORE k2 k2 k3",
        "SDIFF k1 k2 k3",
        "SDIFFSTORE k7 k2 k1 k3",
        "SDIFFSTORE k2 k2 k2",
    ]);
    let mut h = Harness::new();
    h.run(&["SADD", "k1", "1", "2"]);
    h.run(&["SADD", "k2", "2", "3"]);
    h.run(&["MULTI"]);
    h.run(&["SMOVE", "k1", "k2", "1"]);
    h.run(&["SINTERSTORE", "k3", "k1", "k2"]);
    h.run(&["SUNIONSTORE", "k4", "k1", "k2"]);
    assert_eq!(h.run(&["EXEC"]), Frame::Array(vec![int(1), int(1), int(3)]));
}

#[test]
fn table_is_complete() {
    for spec in super::COMMANDS {
        assert_eq!(spec.group.name(), "set");
        assert_eq!(spec.group.acl_category(), "@set");
    }
    assert_eq!(super::COMMANDS.len(), 17);
}
