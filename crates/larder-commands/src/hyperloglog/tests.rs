use larder_resp::Frame;

use crate::config::Config;
use crate::testing::*;

const NOT_HLL: &str = "WRONGTYPE Key is not a valid HyperLogLog string value.";
const WRONGTYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";
const CORRUPT: &str = "INVALIDOBJ Corrupted HLL object detected";

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex"))
        .collect()
}

fn raw_get(h: &mut Harness, key: &str) -> Vec<u8> {
    match h.run(&["GET", key]) {
        Frame::Bulk(b) => b,
        other => panic!("{other:?}"),
    }
}

#[test]
fn pfadd_pfcount_and_redis_bytes() {
    let mut h = Harness::new();
    assert_eq!(h.run(&["PFADD", "h", "a", "b", "c"]), int(1));
    // The exact bytes Redis 7.0.15 holds after the same PFADD.
    assert_eq!(
        raw_get(&mut h, "h"),
        unhex("48594c4c01000000000000000000008060f38050b1844bfb80425a")
    );
    assert_eq!(h.run(&["PFADD", "h", "a", "b"]), int(0));
    assert_eq!(h.run(&["PFADD", "h"]), int(0));
    assert_eq!(h.run(&["PFCOUNT", "h"]), int(3));
    // The count is cached in the header.
    assert_eq!(
        raw_get(&mut h, "h"),
        unhex("48594c4c01000000030000000000000060f38050b1844bfb80425a")
    );
    assert_eq!(h.run(&["PFADD", "new"]), int(1));
    assert_eq!(h.run(&["PFCOUNT", "new"]), int(0));
    assert_eq!(h.run(&["PFCOUNT", "nokey"]), int(0));
    assert_eq!(h.run(&["TYPE", "h"]), Frame::Simple("string".into()));
    assert_eq!(h.run(&["OBJECT", "ENCODING", "h"]), bulk("raw"));
}

#[test]
fn values_written_by_redis_are_read() {
    let mut h = Harness::new();
    // PFADD e10 e0..e9 in Redis 7.0.15, cache stale.
    let e10 = unhex(
        "48594c4c010000000000000000000080452580472e844fc9804412844a5184430d844103844eb98440888040\
         6a8441b1",
    );
    h.run_bytes(&[b"SET", b"r", &e10]);
    assert_eq!(h.run(&["PFCOUNT", "r"]), int(10));
    assert_eq!(h.run(&["PFADD", "r", "e3"]), int(0));
    assert_eq!(
        h.run(&["PFADD", "mine", "e0", "e1", "e2", "e3", "e4", "e5", "e6", "e7", "e8", "e9"]),
        int(1)
    );
    assert_eq!(raw_get(&mut h, "mine"), e10);
}

#[test]
fn union_and_merge() {
    let mut h = Harness::new();
    h.run(&["PFADD", "a", "1", "2", "3"]);
    h.run(&["PFADD", "b", "3", "4", "5"]);
    assert_eq!(h.run(&["PFCOUNT", "a", "b", "nokey"]), int(5));
    assert_eq!(h.run(&["PFMERGE", "m", "a", "b"]), ok());
    assert_eq!(h.run(&["PFCOUNT", "m"]), int(5));
    // The destination is merged too.
    h.run(&["PFADD", "c", "x"]);
    assert_eq!(h.run(&["PFMERGE", "c", "a"]), ok());
    assert_eq!(h.run(&["PFCOUNT", "c"]), int(4));
    assert_eq!(h.run(&["PFMERGE", "empty"]), ok());
    assert_eq!(h.run(&["PFCOUNT", "empty"]), int(0));
    h.check_plans(&[
        "PFMERGE m a b c k1 k2 k3 k4",
        "PFCOUNT a b c k1 k2 k3",
        "PFMERGE a a",
    ]);
}

#[test]
fn sparse_turns_dense_at_the_configured_size() {
    let config = Config::new();
    config
        .set_many(&[("hll-sparse-max-bytes", "100")])
        .expect("config");
    let mut h = Harness::with_config(config);
    let mut n = 0;
    while raw_get_or_empty(&mut h, "h").get(4) != Some(&0) {
        h.run(&["PFADD", "h", &format!("x{n}")]);
        n += 1;
        assert!(n < 200);
    }
    assert_eq!(h.run(&["STRLEN", "h"]), int(12304));
    assert_eq!(h.run(&["PFCOUNT", "h"]), int(n));
    // A dense source makes the merge destination dense.
    h.run(&["PFADD", "s", "a"]);
    assert_eq!(h.run(&["PFMERGE", "s", "h"]), ok());
    assert_eq!(h.run(&["STRLEN", "s"]), int(12304));
}

fn raw_get_or_empty(h: &mut Harness, key: &str) -> Vec<u8> {
    match h.run(&["GET", key]) {
        Frame::Bulk(b) => b,
        _ => Vec::new(),
    }
}

#[test]
fn errors() {
    let mut h = Harness::new();
    h.run(&["SET", "s", "not an hll at all, sorry"]);
    h.run(&["RPUSH", "l", "a"]);
    h.run(&["PFADD", "ok", "a"]);
    for (argv, want) in [
        (&["PFADD", "s", "a"][..], NOT_HLL),
        (&["PFCOUNT", "s"], NOT_HLL),
        (&["PFCOUNT", "ok", "s"], NOT_HLL),
        (&["PFMERGE", "ok", "s"], NOT_HLL),
        (&["PFMERGE", "s", "ok"], NOT_HLL),
        (&["PFADD", "l", "a"], WRONGTYPE),
        (&["PFCOUNT", "l"], WRONGTYPE),
        (&["PFCOUNT", "ok", "l"], WRONGTYPE),
        (&["PFMERGE", "ok", "l"], WRONGTYPE),
        (
            &["PFADD"],
            "ERR wrong number of arguments for 'pfadd' command",
        ),
        (
            &["PFCOUNT"],
            "ERR wrong number of arguments for 'pfcount' command",
        ),
        (
            &["PFMERGE"],
            "ERR wrong number of arguments for 'pfmerge' command",
        ),
    ] {
        assert_eq!(h.run(argv), err(want), "{argv:?}");
    }
    // A sparse value whose runs cover too few registers.
    let mut bad = unhex("48594c4c0100000000000000000000807fff");
    bad[17] = 0;
    h.run_bytes(&[b"SET", b"bad", &bad]);
    assert_eq!(h.run(&["PFCOUNT", "bad"]), err(CORRUPT));
    assert_eq!(h.run(&["PFCOUNT", "bad", "ok"]), err(CORRUPT));
    assert_eq!(h.run(&["PFMERGE", "x", "bad"]), err(CORRUPT));
    // A dense one of the wrong length is not an HLL at all.
    let mut dense = unhex("48594c4c0000000000000000000000");
    dense.resize(100, 0);
    h.run_bytes(&[b"SET", b"d", &dense]);
    assert_eq!(h.run(&["PFCOUNT", "d"]), err(NOT_HLL));
}

#[test]
fn events_like_redis() {
    let mut h = Harness::new();
    let notices = Notices::subscribe(h.server.keyspace.feed());
    let cases: &[(&str, &[&str], &[&str])] = &[
        (
            "pfadd new",
            &["PFADD", "h", "a"],
            &["n:new@0:h", "$:pfadd@0:h"],
        ),
        ("pfadd same", &["PFADD", "h", "a"], &[]),
        ("pfadd more", &["PFADD", "h", "b"], &["$:pfadd@0:h"]),
        ("pfcount", &["PFCOUNT", "h"], &[]),
        (
            "pfmerge new",
            &["PFMERGE", "m", "h"],
            &["n:new@0:m", "$:pfadd@0:m"],
        ),
        ("pfmerge old", &["PFMERGE", "m", "h"], &["$:pfadd@0:m"]),
    ];
    for (case, argv, want) in cases {
        h.run(argv);
        assert_eq!(notices.take(), *want, "{case}");
    }
}

/// PFCOUNT writes the cache once (a new version, so WATCH sees it), then only reads.
#[test]
fn pfcount_caches_as_a_write() {
    let mut h = Harness::new();
    h.run(&["PFADD", "h", "a"]);
    let version = |h: &Harness| {
        let (mut shard, hash) = shard_for(&h.server, b"h");
        let slot = shard.find(b"h", hash, 0).expect("h");
        shard.entry(slot).version()
    };
    let v0 = version(&h);
    assert_eq!(h.run(&["PFCOUNT", "h"]), int(1));
    let v1 = version(&h);
    assert_ne!(v0, v1);
    assert_eq!(h.run(&["PFCOUNT", "h"]), int(1));
    assert_eq!(version(&h), v1);
    assert_eq!(h.run(&["PFADD", "h", "a"]), int(0));
    assert_eq!(version(&h), v1);
}

#[test]
fn pfdebug_and_pfselftest() {
    let mut h = Harness::new();
    h.run(&["PFADD", "h", "a", "b", "c"]);
    assert_eq!(
        h.run(&["PFDEBUG", "ENCODING", "h"]),
        Frame::Simple("sparse".into())
    );
    assert_eq!(
        h.run(&["PFDEBUG", "DECODE", "h"]),
        bulk("Z:8436 v:1,1 Z:4274 v:2,1 Z:3068 v:1,1 Z:603")
    );
    let Frame::Array(regs) = h.run(&["PFDEBUG", "GETREG", "h"]) else {
        panic!("array")
    };
    assert_eq!(regs.len(), 16384);
    assert_eq!(regs.iter().filter(|r| **r != int(0)).count(), 3);
    assert_eq!(
        h.run(&["PFDEBUG", "ENCODING", "h"]),
        Frame::Simple("dense".into())
    );
    assert_eq!(h.run(&["PFDEBUG", "TODENSE", "h"]), int(0));
    assert_eq!(
        h.run(&["PFDEBUG", "DECODE", "h"]),
        err("ERR HLL encoding is not sparse")
    );
    assert_eq!(h.run(&["PFCOUNT", "h"]), int(3));
    h.run(&["PFADD", "g", "x"]);
    assert_eq!(h.run(&["PFDEBUG", "TODENSE", "g"]), int(1));
    assert_eq!(h.run(&["STRLEN", "g"]), int(12304));
    assert_eq!(
        h.run(&["PFDEBUG", "FOO", "g"]),
        err("ERR Unknown PFDEBUG subcommand 'FOO'")
    );
    assert_eq!(
        h.run(&["PFDEBUG", "FOO", "nokey"]),
        err("ERR The specified key does not exist")
    );
    h.run(&["SET", "s", "x"]);
    assert_eq!(h.run(&["PFDEBUG", "ENCODING", "s"]), err(NOT_HLL));
    assert_eq!(h.run(&["PFSELFTEST"]), ok());
}
