use larder_resp::{Frame, Protocol};

use crate::config::Config;
use crate::testing::*;

const WRONGTYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";
const SYNTAX: &str = "ERR syntax error";
const NOT_INT: &str = "ERR value is not an integer or out of range";
const OFFSET: &str = "ERR bit offset is not an integer or out of range";
const BAD_TYPE: &str =
    "ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is.";

fn ints(v: &[i64]) -> Frame {
    Frame::Array(v.iter().map(|&i| int(i)).collect())
}

#[test]
fn setbit_getbit() {
    let mut h = Harness::new();
    assert_eq!(h.run(&["SETBIT", "b", "7", "1"]), int(0));
    assert_eq!(h.run(&["SETBIT", "b", "7", "1"]), int(1));
    assert_eq!(h.run(&["SETBIT", "b", "100", "0"]), int(0));
    assert_eq!(h.run(&["STRLEN", "b"]), int(13));
    assert_eq!(h.run(&["GETBIT", "b", "7"]), int(1));
    assert_eq!(h.run(&["GETBIT", "b", "6"]), int(0));
    assert_eq!(h.run(&["GETBIT", "b", "1000000"]), int(0));
    assert_eq!(h.run(&["GETBIT", "nokey", "3"]), int(0));
    assert_eq!(h.run(&["OBJECT", "ENCODING", "b"]), bulk("raw"));
    assert_eq!(h.run(&["TYPE", "b"]), Frame::Simple("string".into()));
    for (argv, want) in [
        (&["SETBIT", "b", "-1", "1"][..], OFFSET),
        (&["SETBIT", "b", "4294967296", "1"], OFFSET),
        (&["SETBIT", "b", "x", "1"], OFFSET),
        (
            &["SETBIT", "b", "0", "2"],
            "ERR bit is not an integer or out of range",
        ),
        (
            &["SETBIT", "b", "0", "-1"],
            "ERR bit is not an integer or out of range",
        ),
        (&["GETBIT", "b", "x"], OFFSET),
        (&["GETBIT", "nokey", "-1"], OFFSET),
        (
            &["SETBIT", "b", "0"],
            "ERR wrong number of arguments for 'setbit' command",
        ),
    ] {
        assert_eq!(h.run(argv), err(want), "{argv:?}");
    }
    h.run(&["RPUSH", "l", "a"]);
    assert_eq!(h.run(&["SETBIT", "l", "0", "1"]), err(WRONGTYPE));
    assert_eq!(h.run(&["GETBIT", "l", "0"]), err(WRONGTYPE));
    // Bits of a plain SET string, and SETBIT keeps the deadline.
    h.run(&["SET", "s", "A", "EX", "100"]);
    assert_eq!(h.run(&["GETBIT", "s", "1"]), int(1));
    assert_eq!(h.run(&["SETBIT", "s", "6", "1"]), int(0));
    assert_eq!(h.run(&["GET", "s"]), bulk("C"));
    assert_eq!(h.run(&["TTL", "s"]), int(100));
}

#[test]
fn offsets_respect_proto_max_bulk_len() {
    let config = Config::new();
    config
        .set_many(&[("proto-max-bulk-len", "1mb")])
        .expect("config");
    let mut h = Harness::with_config(config);
    assert_eq!(h.run(&["SETBIT", "b", "8388607", "1"]), int(0));
    assert_eq!(h.run(&["STRLEN", "b"]), int(1 << 20));
    assert_eq!(h.run(&["SETBIT", "b", "8388608", "1"]), err(OFFSET));
    assert_eq!(
        h.run(&["BITFIELD", "b", "GET", "u8", "8388608"]),
        err(OFFSET)
    );
    assert_eq!(
        h.run(&["BITFIELD", "b", "GET", "u8", "#1048576"]),
        err(OFFSET)
    );
    assert_eq!(
        h.run(&["BITFIELD", "b", "GET", "u8", "#1048575"]),
        ints(&[1])
    );
    assert_eq!(h.run(&["BITCOUNT", "b"]), int(1));
}

#[test]
fn bitcount() {
    let mut h = Harness::new();
    h.run(&["SET", "f", "foobar"]);
    for (argv, want) in [
        (&["BITCOUNT", "f"][..], int(26)),
        (&["BITCOUNT", "f", "0", "0"], int(4)),
        (&["BITCOUNT", "f", "1", "1"], int(6)),
        (&["BITCOUNT", "f", "1", "1", "BIT"], int(1)),
        (&["BITCOUNT", "f", "5", "30", "bit"], int(17)),
        (&["BITCOUNT", "f", "0", "-1", "byte"], int(26)),
        (&["BITCOUNT", "f", "-1", "-2", "foo"], int(0)),
        (&["BITCOUNT", "nokey", "a"], int(0)),
        (&["BITCOUNT", "f", "0"], err(SYNTAX)),
        (&["BITCOUNT", "f", "0", "1", "2", "3"], err(SYNTAX)),
        (&["BITCOUNT", "f", "0", "-1", "foo"], err(SYNTAX)),
        (&["BITCOUNT", "f", "a", "b"], err(NOT_INT)),
        (&["BITCOUNT", "f", "0", "x"], err(NOT_INT)),
    ] {
        assert_eq!(h.run(argv), want, "{argv:?}");
    }
    h.run(&["RPUSH", "l", "a"]);
    assert_eq!(h.run(&["BITCOUNT", "l", "x", "y"]), err(WRONGTYPE));
}

#[test]
fn bitpos() {
    let mut h = Harness::new();
    h.run_bytes(&[b"SET", b"p", b"\xff\xf0\x00"]);
    h.run_bytes(&[b"SET", b"q", b"\x00\xff\xf0"]);
    h.run_bytes(&[b"SET", b"ones", b"\xff\xff"]);
    h.run(&["SET", "e", ""]);
    for (argv, want) in [
        (&["BITPOS", "p", "0"][..], int(12)),
        (&["BITPOS", "q", "1", "0"], int(8)),
        (&["BITPOS", "q", "1", "2"], int(16)),
        (&["BITPOS", "q", "1", "2", "-1", "BYTE"], int(16)),
        (&["BITPOS", "q", "1", "7", "15", "BIT"], int(8)),
        (&["BITPOS", "q", "0", "9", "-1", "bit"], int(20)),
        (&["BITPOS", "ones", "0"], int(16)),
        (&["BITPOS", "ones", "0", "0"], int(16)),
        (&["BITPOS", "ones", "0", "0", "-1"], int(-1)),
        (&["BITPOS", "e", "0"], int(-1)),
        (&["BITPOS", "e", "1"], int(-1)),
        (&["BITPOS", "nokey", "0"], int(0)),
        (&["BITPOS", "nokey", "1", "a", "b", "c", "d"], int(-1)),
        (
            &["BITPOS", "p", "2"],
            err("ERR The bit argument must be 1 or 0."),
        ),
        (&["BITPOS", "p", "x"], err(NOT_INT)),
        (&["BITPOS", "p", "1", "0", "-1", "foo"], err(SYNTAX)),
        (&["BITPOS", "p", "1", "0", "x", "foo"], err(SYNTAX)),
        (&["BITPOS", "p", "1", "0", "x", "bit"], err(NOT_INT)),
        (&["BITPOS", "p", "1", "x"], err(NOT_INT)),
        (&["BITPOS", "p", "0", "0", "1", "2", "3"], err(SYNTAX)),
    ] {
        assert_eq!(h.run(argv), want, "{argv:?}");
    }
}

#[test]
fn bitop() {
    let mut h = Harness::new();
    h.run(&["SET", "a", "foobar"]);
    h.run(&["SET", "b", "abcdef"]);
    h.run(&["SET", "c", "xy"]);
    assert_eq!(h.run(&["BITOP", "AND", "d", "a", "b"]), int(6));
    assert_eq!(h.run(&["GET", "d"]), bulk("`bc`ab"));
    assert_eq!(h.run(&["BITOP", "or", "d", "a", "c"]), int(6));
    assert_eq!(h.run(&["GET", "d"]), bulk("\u{7e}\u{7f}obar"));
    assert_eq!(h.run(&["BITOP", "AND", "d", "a", "c", "nokey"]), int(6));
    assert_eq!(h.run(&["GET", "d"]), Frame::Bulk(vec![0, 0, 0, 0, 0, 0]));
    assert_eq!(h.run(&["BITOP", "XOR", "d", "c", "c"]), int(2));
    assert_eq!(h.run(&["GET", "d"]), Frame::Bulk(vec![0, 0]));
    assert_eq!(h.run(&["BITOP", "NOT", "d", "c"]), int(2));
    assert_eq!(h.run(&["GET", "d"]), Frame::Bulk(vec![!b'x', !b'y']));
    // An empty result deletes the destination; the destination may be a source.
    h.run(&["SET", "d", "v", "EX", "100"]);
    assert_eq!(h.run(&["BITOP", "NOT", "d", "nokey"]), int(0));
    assert_eq!(h.run(&["EXISTS", "d"]), int(0));
    h.run(&["SET", "d", "v", "EX", "100"]);
    assert_eq!(h.run(&["BITOP", "OR", "d", "d", "c"]), int(2));
    assert_eq!(h.run(&["GET", "d"]), bulk("~y"));
    assert_eq!(h.run(&["TTL", "d"]), int(-1));
    // Any type is replaced.
    h.run(&["RPUSH", "l", "x"]);
    assert_eq!(h.run(&["BITOP", "AND", "l", "a"]), int(6));
    assert_eq!(h.run(&["TYPE", "l"]), Frame::Simple("string".into()));
    h.run(&["RPUSH", "l2", "x"]);
    for (argv, want) in [
        (&["BITOP", "AND", "d", "a", "l2"][..], WRONGTYPE),
        (
            &["BITOP", "NOT", "d", "a", "b"],
            "ERR BITOP NOT must be called with a single source key.",
        ),
        (&["BITOP", "FOO", "d", "a"], SYNTAX),
        (
            &["BITOP", "AND", "d"],
            "ERR wrong number of arguments for 'bitop' command",
        ),
    ] {
        assert_eq!(h.run(argv), err(want), "{argv:?}");
    }
    // Keys on many shards, alone and inside EXEC.
    h.check_plans(&[
        "BITOP AND dest a b c k1 k2 k3 k4 k5",
        "BITOP OR a a",
        "BITOP NOT k9 a",
        "BITOP XOR x1 x2 x3 x4 x5 x6 x7 x8",
    ]);
}

#[test]
fn bitfield() {
    let mut h = Harness::new();
    assert_eq!(
        h.run(&["BITFIELD", "bf", "SET", "u5", "7", "23"]),
        ints(&[0])
    );
    assert_eq!(h.run(&["GET", "bf"]), Frame::Bulk(vec![0x01, 0x70]));
    assert_eq!(
        h.run(&["BITFIELD", "bf", "GET", "u5", "7", "GET", "i5", "7", "GET", "u4", "#1"]),
        ints(&[23, -9, 1])
    );
    assert_eq!(
        h.run(&[
            "BITFIELD", "c", "INCRBY", "u2", "100", "1", "OVERFLOW", "SAT", "INCRBY", "u2", "102",
            "5", "OVERFLOW", "FAIL", "INCRBY", "u2", "104", "7", "OVERFLOW", "WRAP", "INCRBY",
            "u2", "106", "5"
        ]),
        Frame::Array(vec![int(1), int(3), Frame::Null, int(1)])
    );
    assert_eq!(
        h.run(&["BITFIELD", "c", "GET", "u8", "#12", "GET", "u8", "100"]),
        ints(&[7, 113])
    );
    assert_eq!(h.run(&["BITFIELD", "bf"]), Frame::Array(vec![]));
    assert_eq!(h.run(&["BITFIELD_RO", "bf", "GET", "u8", "0"]), ints(&[1]));
    assert_eq!(
        h.run(&["BITFIELD_RO", "nokey", "GET", "i64", "0"]),
        ints(&[0])
    );
    assert_eq!(h.run(&["EXISTS", "nokey"]), int(0));
    for (argv, want) in [
        (&["BITFIELD", "bf", "GET", "u64", "0"][..], BAD_TYPE),
        (&["BITFIELD", "bf", "GET", "i65", "0"], BAD_TYPE),
        (&["BITFIELD", "bf", "GET", "x8", "0"], BAD_TYPE),
        (&["BITFIELD", "bf", "GET", "u8", "#x"], OFFSET),
        (&["BITFIELD", "bf", "GET", "u8", "-1"], OFFSET),
        (
            &["BITFIELD", "bf", "OVERFLOW", "foo", "GET", "u8", "0"],
            "ERR Invalid OVERFLOW type specified",
        ),
        (&["BITFIELD", "bf", "bad"], SYNTAX),
        (&["BITFIELD", "bf", "GET", "u8"], SYNTAX),
        (&["BITFIELD", "bf", "SET", "u8", "0"], SYNTAX),
        (&["BITFIELD", "bf", "SET", "i8", "0", "x"], NOT_INT),
        (
            &["BITFIELD_RO", "bf", "SET", "u8", "0", "1"],
            "ERR BITFIELD_RO only supports the GET subcommand",
        ),
        (
            &[
                "BITFIELD_RO",
                "bf",
                "GET",
                "u8",
                "0",
                "INCRBY",
                "u8",
                "0",
                "1",
            ],
            "ERR BITFIELD_RO only supports the GET subcommand",
        ),
    ] {
        assert_eq!(h.run(argv), err(want), "{argv:?}");
    }
    h.run(&["RPUSH", "l", "a"]);
    for argv in [
        &["BITFIELD", "l", "GET", "u8", "0"][..],
        &["BITFIELD", "l", "SET", "u8", "0", "1"],
        &["BITFIELD_RO", "l", "GET", "u8", "0"],
    ] {
        assert_eq!(h.run(argv), err(WRONGTYPE), "{argv:?}");
    }
    // Parse errors win over the type.
    assert_eq!(h.run(&["BITFIELD", "l", "GET", "u99", "0"]), err(BAD_TYPE));
}

#[test]
fn bitfield_null_is_resp3_null() {
    let mut h = Harness::new();
    h.out.proto = Protocol::Resp3;
    assert_eq!(
        h.run_raw(&[
            b"BITFIELD",
            b"k",
            b"OVERFLOW",
            b"FAIL",
            b"SET",
            b"u1",
            b"0",
            b"2"
        ]),
        b"*1\r\n_\r\n"
    );
    h.out.proto = Protocol::Resp2;
    assert_eq!(
        h.run_raw(&[
            b"BITFIELD",
            b"k",
            b"OVERFLOW",
            b"FAIL",
            b"SET",
            b"u1",
            b"0",
            b"2"
        ]),
        b"*1\r\n$-1\r\n"
    );
    // The failed write still created the (zeroed) string, as in Redis.
    assert_eq!(h.run(&["GET", "k"]), Frame::Bulk(vec![0]));
}

#[test]
fn events_like_redis() {
    let mut h = Harness::new();
    let notices = Notices::subscribe(h.server.keyspace.feed());
    let cases: &[(&str, &[&str], &[&str])] = &[
        (
            "setbit new",
            &["SETBIT", "b", "3", "0"],
            &["n:new@0:b", "$:setbit@0:b"],
        ),
        ("setbit same", &["SETBIT", "b", "3", "0"], &[]),
        (
            "setbit grow",
            &["SETBIT", "b", "30", "0"],
            &["$:setbit@0:b"],
        ),
        (
            "setbit change",
            &["SETBIT", "b", "3", "1"],
            &["$:setbit@0:b"],
        ),
        (
            "bitfield same",
            &["BITFIELD", "b", "SET", "u1", "3", "1"],
            &[],
        ),
        ("bitfield get", &["BITFIELD", "b", "GET", "u1", "3"], &[]),
        (
            "bitfield set",
            &["BITFIELD", "b", "SET", "u1", "4", "1"],
            &["$:setbit@0:b"],
        ),
        (
            "bitfield new",
            &["BITFIELD", "n", "SET", "u1", "4", "0"],
            &["n:new@0:n", "$:setbit@0:n"],
        ),
        (
            "bitfield fail new",
            &[
                "BITFIELD", "m", "OVERFLOW", "FAIL", "INCRBY", "u1", "0", "2",
            ],
            &["n:new@0:m"],
        ),
        (
            "bitop new",
            &["BITOP", "OR", "d", "b"],
            &["n:new@0:d", "$:set@0:d"],
        ),
        (
            "bitop old",
            &["BITOP", "AND", "d", "b", "n"],
            &["$:set@0:d"],
        ),
        (
            "bitop empty",
            &["BITOP", "AND", "d", "nokey"],
            &["g:del@0:d"],
        ),
        ("bitop empty again", &["BITOP", "AND", "d", "nokey"], &[]),
    ];
    for (case, argv, want) in cases {
        h.run(argv);
        assert_eq!(notices.take(), *want, "{case}");
    }
}
