use larder_resp::{Frame, Protocol};

use crate::testing::*;

const WRONGTYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";

fn arr(items: &[&str]) -> Frame {
    Frame::Array(items.iter().map(|s| bulk(s)).collect())
}

fn all(h: &mut Harness, key: &str) -> Frame {
    h.run(&["ZRANGE", key, "0", "-1", "WITHSCORES"])
}

#[test]
fn zadd_flags_and_replies() {
    let mut h = Harness::new();
    assert_eq!(h.run(&["ZADD", "z", "1", "a", "2", "b"]), int(2));
    assert_eq!(h.run(&["ZADD", "z", "1", "a", "3", "c"]), int(1));
    assert_eq!(h.run(&["ZADD", "z", "CH", "5", "a", "3", "c"]), int(1));
    assert_eq!(h.run(&["ZADD", "z", "NX", "9", "a", "4", "d"]), int(1));
    assert_eq!(
        h.run(&["ZADD", "z", "XX", "CH", "6", "a", "7", "e"]),
        int(1)
    );
    assert_eq!(
        h.run(&["ZADD", "z", "GT", "CH", "1", "a", "7", "b"]),
        int(1)
    );
    assert_eq!(h.run(&["ZADD", "z", "LT", "CH", "1", "a"]), int(1));
    assert_eq!(
        all(&mut h, "z"),
        arr(&["a", "1", "c", "3", "d", "4", "b", "7"])
    );
    assert_eq!(h.run(&["ZADD", "z", "INCR", "1.5", "a"]), bulk("2.5"));
    assert_eq!(h.run(&["ZADD", "z", "INCR", "NX", "1", "a"]), Frame::Null);
    assert_eq!(h.run(&["ZADD", "z", "INCR", "GT", "-1", "a"]), Frame::Null);
    assert_eq!(h.run(&["ZADD", "z", "INCR", "XX", "1", "new"]), Frame::Null);
    assert_eq!(
        h.run(&["ZINCRBY", "z", "0.1", "a"]),
        bulk("2.6000000000000001")
    );
    assert_eq!(
        h.run(&["ZINCRBY", "n", "1.1", "a"]),
        bulk("1.1000000000000001")
    );
    assert_eq!(h.run(&["ZADD", "xx", "XX", "1", "a"]), int(0));
    assert_eq!(h.run(&["EXISTS", "xx"]), int(0));
    for (argv, e) in [
        (&["ZADD", "z", "1", "a", "2"][..], "ERR syntax error"),
        (&["ZADD", "z", "NX", "1"], "ERR syntax error"),
        (
            &["ZADD", "z", "NX", "XX", "1", "a"],
            "ERR XX and NX options at the same time are not compatible",
        ),
        (
            &["ZADD", "z", "GT", "LT", "1", "a"],
            "ERR GT, LT, and/or NX options at the same time are not compatible",
        ),
        (
            &["ZADD", "z", "NX", "GT", "1", "a"],
            "ERR GT, LT, and/or NX options at the same time are not compatible",
        ),
        (
            &["ZADD", "z", "INCR", "1", "a", "2", "b"],
            "ERR INCR option supports a single increment-element pair",
        ),
        (&["ZADD", "z", "x", "a"], "ERR value is not a valid float"),
        (&["ZADD", "z", "nan", "a"], "ERR value is not a valid float"),
        (
            &["ZADD", "z", "1e400", "a"],
            "ERR value is not a valid float",
        ),
        (&["ZADD", "z", " 1", "a"], "ERR value is not a valid float"),
        (
            &["ZINCRBY", "z", "x", "a"],
            "ERR value is not a valid float",
        ),
        (
            &["ZADD", "z"],
            "ERR wrong number of arguments for 'zadd' command",
        ),
    ] {
        assert_eq!(h.run(argv), err(e), "{argv:?}");
    }
    // strtod's other forms: hexadecimal, "infinity", a denormal (not an underflow to 0).
    h.run(&[
        "ZADD", "f", "0x10", "a", "-0x1.8p1", "b", "infinity", "c", "1e-320", "d",
    ]);
    assert_eq!(
        all(&mut h, "f"),
        arr(&[
            "b",
            "-3",
            "d",
            "9.9998886718268301e-321",
            "a",
            "16",
            "c",
            "inf"
        ])
    );
    assert_eq!(h.run(&["ZCOUNT", "f", "(0x10", "+inf"]), int(1));
    assert_eq!(h.run(&["ZCOUNT", "f", " 1", "1e400"]), int(2));
    assert_eq!(
        h.run(&["ZADD", "f", "1e-400", "x"]),
        err("ERR value is not a valid float")
    );
    assert_eq!(
        h.run(&["ZADD", "f", "0x", "x"]),
        err("ERR value is not a valid float")
    );
    h.run(&["ZADD", "i", "inf", "a"]);
    assert_eq!(
        h.run(&["ZINCRBY", "i", "-inf", "a"]),
        err("ERR resulting score is not a number (NaN)")
    );
    assert_eq!(h.run(&["ZSCORE", "i", "a"]), bulk("inf"));
}

#[test]
fn scores_are_formatted_like_redis_7_0() {
    let mut h = Harness::new();
    h.run(&[
        "ZADD", "z", "1.1", "a", "1e300", "b", "-0", "c", "0.1", "d", "-inf", "e",
    ]);
    assert_eq!(h.run(&["ZSCORE", "z", "a"]), bulk("1.1000000000000001"));
    assert_eq!(
        h.run(&["ZSCORE", "z", "b"]),
        bulk("1.0000000000000001e+300")
    );
    // A compact set stores -0 as 0.
    assert_eq!(h.run(&["ZSCORE", "z", "c"]), bulk("0"));
    assert_eq!(h.run(&["ZSCORE", "z", "e"]), bulk("-inf"));
    assert_eq!(h.run(&["ZSCORE", "z", "none"]), Frame::Null);
    assert_eq!(h.run(&["ZSCORE", "none", "a"]), Frame::Null);
    h.out.proto = Protocol::Resp3;
    assert_eq!(
        h.run_raw(&[b"ZSCORE", b"z", b"a"]),
        b",1.1000000000000001\r\n"
    );
    assert_eq!(h.run_raw(&[b"ZSCORE", b"z", b"x"]), b"_\r\n");
    assert_eq!(
        h.run_raw(&[b"ZMSCORE", b"z", b"d", b"x"]),
        b"*2\r\n,0.10000000000000001\r\n_\r\n"
    );
    assert_eq!(
        h.run_raw(&[b"ZRANGE", b"z", b"0", b"1", b"WITHSCORES"]),
        b"*2\r\n*2\r\n$1\r\ne\r\n,-inf\r\n*2\r\n$1\r\nc\r\n,0\r\n"
    );
}

#[test]
fn reads_ranks_and_counts() {
    let mut h = Harness::new();
    h.run(&["ZADD", "z", "1", "a", "2", "b", "2", "c", "3", "d"]);
    assert_eq!(h.run(&["ZCARD", "z"]), int(4));
    assert_eq!(h.run(&["ZCARD", "none"]), int(0));
    assert_eq!(h.run(&["ZRANK", "z", "c"]), int(2));
    assert_eq!(h.run(&["ZREVRANK", "z", "c"]), int(1));
    assert_eq!(h.run(&["ZRANK", "z", "x"]), Frame::Null);
    assert_eq!(h.run(&["ZRANK", "none", "x"]), Frame::Null);
    assert_eq!(h.run(&["ZCOUNT", "z", "2", "3"]), int(3));
    assert_eq!(h.run(&["ZCOUNT", "z", "(2", "+inf"]), int(1));
    assert_eq!(h.run(&["ZCOUNT", "z", "-inf", "(1"]), int(0));
    assert_eq!(
        h.run(&["ZCOUNT", "z", "x", "1"]),
        err("ERR min or max is not a float")
    );
    assert_eq!(
        h.run(&["ZMSCORE", "z", "a", "x", "d"]),
        Frame::Array(vec![bulk("1"), Frame::Null, bulk("3")])
    );
    assert_eq!(
        h.run(&["ZMSCORE", "none", "a"]),
        Frame::Array(vec![Frame::Null])
    );
    h.run(&["ZADD", "l", "0", "a", "0", "b", "0", "c", "0", "d"]);
    assert_eq!(h.run(&["ZLEXCOUNT", "l", "-", "+"]), int(4));
    assert_eq!(h.run(&["ZLEXCOUNT", "l", "[b", "(d"]), int(2));
    assert_eq!(h.run(&["ZLEXCOUNT", "l", "+", "-"]), int(0));
    assert_eq!(
        h.run(&["ZLEXCOUNT", "l", "b", "d"]),
        err("ERR min or max not valid string range item")
    );
}

#[test]
fn zrange_forms() {
    let mut h = Harness::new();
    h.run(&[
        "ZADD", "z", "1", "a", "2", "b", "3", "c", "4", "d", "5", "e",
    ]);
    assert_eq!(h.run(&["ZRANGE", "z", "1", "2"]), arr(&["b", "c"]));
    assert_eq!(h.run(&["ZRANGE", "z", "-2", "-1"]), arr(&["d", "e"]));
    assert_eq!(h.run(&["ZRANGE", "z", "0", "1", "REV"]), arr(&["e", "d"]));
    assert_eq!(
        h.run(&["ZREVRANGE", "z", "0", "1", "WITHSCORES"]),
        arr(&["e", "5", "d", "4"])
    );
    assert_eq!(h.run(&["ZRANGE", "z", "3", "1"]), arr(&[]));
    assert_eq!(
        h.run(&["ZRANGE", "z", "(1", "3", "BYSCORE"]),
        arr(&["b", "c"])
    );
    assert_eq!(
        h.run(&["ZRANGE", "z", "3", "(1", "BYSCORE", "REV"]),
        arr(&["c", "b"])
    );
    assert_eq!(
        h.run(&["ZRANGE", "z", "-inf", "+inf", "BYSCORE", "LIMIT", "1", "2"]),
        arr(&["b", "c"])
    );
    assert_eq!(
        h.run(&["ZRANGE", "z", "+inf", "-inf", "BYSCORE", "REV", "LIMIT", "1", "2"]),
        arr(&["d", "c"])
    );
    assert_eq!(
        h.run(&["ZRANGEBYSCORE", "z", "2", "4", "LIMIT", "-1", "2"]),
        arr(&[])
    );
    assert_eq!(
        h.run(&["ZRANGEBYSCORE", "z", "2", "4", "LIMIT", "1", "-1"]),
        arr(&["c", "d"])
    );
    assert_eq!(
        h.run(&["ZREVRANGEBYSCORE", "z", "4", "2"]),
        arr(&["d", "c", "b"])
    );
    assert_eq!(
        h.run(&["ZRANGE", "z", "[b", "(d", "BYLEX"]),
        arr(&["b", "c"])
    );
    assert_eq!(
        h.run(&["ZRANGEBYLEX", "z", "-", "+", "LIMIT", "0", "1"]),
        arr(&["a"])
    );
    assert_eq!(h.run(&["ZREVRANGEBYLEX", "z", "+", "[d"]), arr(&["e", "d"]));
    assert_eq!(h.run(&["ZRANGE", "none", "0", "-1"]), arr(&[]));
    for (argv, e) in [
        (
            &["ZRANGE", "z", "0", "1", "LIMIT", "0", "1"][..],
            "ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX",
        ),
        (
            &["ZRANGE", "z", "-", "+", "BYLEX", "WITHSCORES"],
            "ERR syntax error, WITHSCORES not supported in combination with BYLEX",
        ),
        (
            &["ZRANGEBYLEX", "z", "-", "+", "WITHSCORES"],
            "ERR syntax error, WITHSCORES not supported in combination with BYLEX",
        ),
        (
            &["ZRANGE", "z", "0", "1", "BYSCORE", "BYLEX"],
            "ERR syntax error",
        ),
        (&["ZRANGEBYSCORE", "z", "0", "1", "REV"], "ERR syntax error"),
        (
            &["ZRANGE", "z", "a", "1"],
            "ERR value is not an integer or out of range",
        ),
        (
            &["ZRANGE", "z", "a", "1", "BYSCORE"],
            "ERR min or max is not a float",
        ),
        (
            &["ZRANGE", "z", "a", "1", "BYLEX"],
            "ERR min or max not valid string range item",
        ),
        (&["ZRANGE", "z", "0", "1", "LIMIT", "0"], "ERR syntax error"),
        (
            &["ZRANGE", "z", "0", "1", "BYSCORE", "LIMIT", "x", "1"],
            "ERR value is not an integer or out of range",
        ),
    ] {
        assert_eq!(h.run(argv), err(e), "{argv:?}");
    }
}

#[test]
fn zrangestore_and_remranges() {
    let mut h = Harness::new();
    h.run(&[
        "ZADD", "z", "1", "a", "2", "b", "3", "c", "4", "d", "5", "e",
    ]);
    assert_eq!(h.run(&["ZRANGESTORE", "d", "z", "1", "3"]), int(3));
    assert_eq!(all(&mut h, "d"), arr(&["b", "2", "c", "3", "d", "4"]));
    assert_eq!(
        h.run(&[
            "ZRANGESTORE",
            "d",
            "z",
            "5",
            "(2",
            "BYSCORE",
            "REV",
            "LIMIT",
            "0",
            "2"
        ]),
        int(2)
    );
    assert_eq!(all(&mut h, "d"), arr(&["d", "4", "e", "5"]));
    assert_eq!(h.run(&["ZRANGESTORE", "d", "z", "9", "10"]), int(0));
    assert_eq!(h.run(&["EXISTS", "d"]), int(0));
    assert_eq!(
        h.run(&["ZRANGESTORE", "d", "z", "0", "1", "WITHSCORES"]),
        err("ERR syntax error")
    );
    assert_eq!(h.run(&["ZREMRANGEBYRANK", "z", "0", "1"]), int(2));
    assert_eq!(h.run(&["ZREMRANGEBYSCORE", "z", "(3", "4"]), int(1));
    assert_eq!(h.run(&["ZREMRANGEBYLEX", "z", "[a", "[c"]), int(1));
    assert_eq!(all(&mut h, "z"), arr(&["e", "5"]));
    assert_eq!(h.run(&["ZREMRANGEBYRANK", "z", "0", "-1"]), int(1));
    assert_eq!(h.run(&["EXISTS", "z"]), int(0));
    assert_eq!(
        h.run(&["ZREMRANGEBYRANK", "z", "x", "1"]),
        err("ERR value is not an integer or out of range")
    );
    assert_eq!(
        h.run(&["ZREMRANGEBYSCORE", "z", "x", "1"]),
        err("ERR min or max is not a float")
    );
    assert_eq!(
        h.run(&["ZREMRANGEBYLEX", "z", "x", "1"]),
        err("ERR min or max not valid string range item")
    );
}

#[test]
fn pops() {
    let mut h = Harness::new();
    h.run(&["ZADD", "z", "1", "a", "2", "b", "3", "c"]);
    assert_eq!(h.run(&["ZPOPMIN", "z"]), arr(&["a", "1"]));
    assert_eq!(h.run(&["ZPOPMAX", "z", "5"]), arr(&["c", "3", "b", "2"]));
    assert_eq!(h.run(&["EXISTS", "z"]), int(0));
    assert_eq!(h.run(&["ZPOPMIN", "z"]), arr(&[]));
    assert_eq!(
        h.run(&["ZPOPMIN", "z", "-1"]),
        err("ERR value is out of range, must be positive")
    );
    assert_eq!(h.run(&["ZPOPMIN", "z", "1", "2"]), err("ERR syntax error"));
    h.run(&["ZADD", "z", "1", "a", "2", "b", "3", "c"]);
    assert_eq!(h.run(&["ZPOPMIN", "z", "0"]), arr(&[]));
    assert_eq!(
        h.run(&["ZMPOP", "2", "none", "z", "MAX", "COUNT", "2"]),
        Frame::Array(vec![
            bulk("z"),
            Frame::Array(vec![arr(&["c", "3"]), arr(&["b", "2"])])
        ])
    );
    assert_eq!(h.run(&["ZMPOP", "1", "none", "MIN"]), Frame::Null);
    assert_eq!(h.run_raw(&[b"ZMPOP", b"1", b"none", b"MIN"]), b"*-1\r\n");
    for (argv, e) in [
        (
            &["ZMPOP", "0", "z", "MIN"][..],
            "ERR numkeys should be greater than 0",
        ),
        (
            &["ZMPOP", "x", "z", "MIN"],
            "ERR numkeys should be greater than 0",
        ),
        (&["ZMPOP", "2", "z", "MIN"], "ERR syntax error"),
        (&["ZMPOP", "1", "z", "MID"], "ERR syntax error"),
        (
            &["ZMPOP", "1", "z", "MIN", "COUNT", "0"],
            "ERR count should be greater than 0",
        ),
        (
            &["ZMPOP", "1", "z", "MIN", "COUNT", "1", "COUNT", "1"],
            "ERR syntax error",
        ),
    ] {
        assert_eq!(h.run(argv), err(e), "{argv:?}");
    }
    h.out.proto = Protocol::Resp3;
    assert_eq!(h.run_raw(&[b"ZPOPMIN", b"z"]), b"*2\r\n$1\r\na\r\n,1\r\n");
    h.run(&["ZADD", "z", "1", "a"]);
    assert_eq!(
        h.run_raw(&[b"ZPOPMIN", b"z", b"1"]),
        b"*1\r\n*2\r\n$1\r\na\r\n,1\r\n"
    );
}

#[test]
fn set_operations() {
    let mut h = Harness::new();
    h.run(&["ZADD", "a", "1", "x", "2", "y", "3", "z"]);
    h.run(&["ZADD", "b", "10", "y", "20", "z", "30", "w"]);
    assert_eq!(
        h.run(&["ZUNION", "2", "a", "b", "WITHSCORES"]),
        arr(&["x", "1", "y", "12", "z", "23", "w", "30"])
    );
    assert_eq!(
        h.run(&[
            "ZINTER",
            "2",
            "a",
            "b",
            "WEIGHTS",
            "2",
            "1",
            "AGGREGATE",
            "MAX",
            "WITHSCORES"
        ]),
        arr(&["y", "10", "z", "20"])
    );
    assert_eq!(
        h.run(&["ZDIFF", "2", "a", "b", "WITHSCORES"]),
        arr(&["x", "1"])
    );
    assert_eq!(h.run(&["ZINTERCARD", "2", "a", "b"]), int(2));
    assert_eq!(h.run(&["ZINTERCARD", "2", "a", "b", "LIMIT", "1"]), int(1));
    assert_eq!(
        h.run(&["ZUNIONSTORE", "d", "2", "a", "b", "AGGREGATE", "MIN"]),
        int(4)
    );
    assert_eq!(
        all(&mut h, "d"),
        arr(&["x", "1", "y", "2", "z", "3", "w", "30"])
    );
    assert_eq!(h.run(&["ZINTERSTORE", "d", "2", "a", "none"]), int(0));
    assert_eq!(h.run(&["EXISTS", "d"]), int(0));
    assert_eq!(h.run(&["ZDIFFSTORE", "a", "2", "a", "b"]), int(1));
    assert_eq!(all(&mut h, "a"), arr(&["x", "1"]));
    // inf * 0 is NaN, which counts as 0.
    h.run(&["ZADD", "i", "inf", "m"]);
    assert_eq!(
        h.run(&["ZUNION", "1", "i", "WEIGHTS", "0", "WITHSCORES"]),
        arr(&["m", "0"])
    );
    h.run(&["SET", "s", "v"]);
    for (argv, e) in [
        (
            &["ZUNION", "0", "a"][..],
            "ERR at least 1 input key is needed for 'zunion' command",
        ),
        (
            &["ZINTERSTORE", "d", "0", "a"],
            "ERR at least 1 input key is needed for 'zinterstore' command",
        ),
        (&["ZUNION", "3", "a", "b"], "ERR syntax error"),
        (
            &["ZUNION", "x", "a"],
            "ERR value is not an integer or out of range",
        ),
        (&["ZUNION", "2", "a", "s"], WRONGTYPE),
        (
            &["ZUNION", "2", "a", "b", "WEIGHTS", "1"],
            "ERR syntax error",
        ),
        (
            &["ZUNION", "2", "a", "b", "WEIGHTS", "1", "x"],
            "ERR weight value is not a float",
        ),
        (
            &["ZUNION", "2", "a", "b", "AGGREGATE", "AVG"],
            "ERR syntax error",
        ),
        (
            &["ZDIFF", "2", "a", "b", "WEIGHTS", "1", "1"],
            "ERR syntax error",
        ),
        (
            &["ZUNIONSTORE", "d", "2", "a", "b", "WITHSCORES"],
            "ERR syntax error",
        ),
        (
            &["ZINTERCARD", "1", "a", "LIMIT", "-1"],
            "ERR LIMIT can't be negative",
        ),
        (&["ZINTERCARD", "1", "a", "WITHSCORES"], "ERR syntax error"),
    ] {
        assert_eq!(h.run(argv), err(e), "{argv:?}");
    }
    h.out.proto = Protocol::Resp3;
    assert_eq!(
        h.run_raw(&[b"ZUNION", b"1", b"a", b"WITHSCORES"]),
        b"*1\r\n*2\r\n$1\r\nx\r\n,1\r\n"
    );
}

#[test]
fn randmember_and_scan() {
    let mut h = Harness::new();
    h.run(&["ZADD", "z", "1", "a", "2", "b", "3", "c"]);
    let Frame::Bulk(m) = h.run(&["ZRANDMEMBER", "z"]) else {
        panic!("a member")
    };
    assert!([&b"a"[..], b"b", b"c"].contains(&&m[..]));
    let Frame::Array(items) = h.run(&["ZRANDMEMBER", "z", "5"]) else {
        panic!("an array")
    };
    assert_eq!(items.len(), 3);
    let Frame::Array(items) = h.run(&["ZRANDMEMBER", "z", "-5", "WITHSCORES"]) else {
        panic!("an array")
    };
    assert_eq!(items.len(), 10);
    let Frame::Array(items) = h.run(&["ZRANDMEMBER", "z", "2"]) else {
        panic!("an array")
    };
    assert_eq!(items.len(), 2);
    assert_ne!(items[0], items[1]);
    assert_eq!(h.run(&["ZRANDMEMBER", "none"]), Frame::Null);
    assert_eq!(h.run(&["ZRANDMEMBER", "none", "3"]), arr(&[]));
    assert_eq!(
        h.run(&["ZRANDMEMBER", "z", "1", "x"]),
        err("ERR syntax error")
    );
    assert_eq!(
        h.run(&["ZRANDMEMBER", "z", "-9223372036854775807", "WITHSCORES"]),
        err("ERR value is out of range")
    );
    assert_eq!(
        h.run(&["ZSCAN", "z", "0"]),
        Frame::Array(vec![bulk("0"), arr(&["a", "1", "b", "2", "c", "3"])])
    );
    assert_eq!(
        h.run(&["ZSCAN", "z", "0", "MATCH", "b*"]),
        Frame::Array(vec![bulk("0"), arr(&["b", "2"])])
    );
    assert_eq!(h.run(&["ZSCAN", "z", "x"]), err("ERR invalid cursor"));
    assert_eq!(
        h.run(&["ZSCAN", "z", "0", "COUNT", "0"]),
        err("ERR syntax error")
    );
    assert_eq!(
        h.run(&["ZSCAN", "z", "0", "TYPE", "zset"]),
        err("ERR syntax error")
    );
    // A full set is walked in steps.
    h.run(&["CONFIG", "SET", "zset-max-listpack-entries", "4"]);
    for i in 0..50 {
        h.run(&["ZADD", "big", &i.to_string(), &format!("m{i}")]);
    }
    assert_eq!(h.run(&["OBJECT", "ENCODING", "big"]), bulk("skiplist"));
    let mut seen = Vec::new();
    let mut cursor = "0".to_string();
    loop {
        let Frame::Array(parts) = h.run(&["ZSCAN", "big", &cursor, "COUNT", "7"]) else {
            panic!("scan reply")
        };
        let Frame::Array(items) = &parts[1] else {
            panic!("items")
        };
        seen.extend(items.iter().step_by(2).cloned());
        cursor = parts[0].as_str().unwrap_or("0").to_string();
        if cursor == "0" {
            break;
        }
    }
    assert_eq!(seen.len(), 50);
}

#[test]
fn encodings_follow_the_config() {
    let mut h = Harness::new();
    h.run(&["ZADD", "z", "1", "a"]);
    assert_eq!(h.run(&["OBJECT", "ENCODING", "z"]), bulk("listpack"));
    h.run(&["CONFIG", "SET", "zset-max-listpack-value", "3"]);
    h.run(&["ZADD", "z", "1", "abcd"]);
    assert_eq!(h.run(&["OBJECT", "ENCODING", "z"]), bulk("skiplist"));
    h.run(&["ZADD", "y", "1", "abcd"]);
    assert_eq!(h.run(&["OBJECT", "ENCODING", "y"]), bulk("skiplist"));
    h.run(&["CONFIG", "SET", "zset-max-listpack-entries", "0"]);
    h.run(&["ZADD", "w", "-0", "a"]);
    assert_eq!(h.run(&["OBJECT", "ENCODING", "w"]), bulk("skiplist"));
    assert_eq!(h.run(&["ZSCORE", "w", "a"]), bulk("-0"));
    h.run(&["CONFIG", "SET", "zset-max-listpack-entries", "128"]);
    h.run(&["CONFIG", "SET", "zset-max-listpack-value", "64"]);
    // A stored result that fits is compact again.
    assert_eq!(h.run(&["ZUNIONSTORE", "u", "1", "w"]), int(1));
    assert_eq!(h.run(&["OBJECT", "ENCODING", "u"]), bulk("listpack"));
    assert_eq!(h.run(&["TYPE", "u"]), Frame::Simple("zset".into()));
}

#[test]
fn copy_rename_and_expiry_keep_sorted_sets() {
    let mut h = Harness::new();
    h.run(&["CONFIG", "SET", "zset-max-listpack-entries", "2"]);
    h.run(&["ZADD", "z", "1", "a", "2", "b", "3", "c"]);
    assert_eq!(h.run(&["COPY", "z", "c"]), int(1));
    assert_eq!(h.run(&["ZADD", "c", "4", "d"]), int(1));
    assert_eq!(h.run(&["ZCARD", "z"]), int(3));
    assert_eq!(h.run(&["OBJECT", "ENCODING", "c"]), bulk("skiplist"));
    assert_eq!(h.run(&["RENAME", "c", "d"]), ok());
    assert_eq!(
        h.run(&["ZRANGE", "d", "0", "-1"]),
        arr(&["a", "b", "c", "d"])
    );
    assert_eq!(h.run(&["EXPIRE", "d", "100"]), int(1));
    assert_eq!(h.run(&["ZINCRBY", "d", "1", "a"]), bulk("2"));
    assert!(matches!(h.run(&["TTL", "d"]), Frame::Integer(t) if t > 90));
    // A store over a key drops its deadline, as Redis's setKey does.
    assert_eq!(h.run(&["ZUNIONSTORE", "d", "1", "z"]), int(3));
    assert_eq!(h.run(&["TTL", "d"]), int(-1));
}

#[test]
fn wrong_types() {
    let mut h = Harness::new();
    h.run(&["SET", "s", "v"]);
    for argv in [
        &["ZADD", "s", "1", "a"][..],
        &["ZINCRBY", "s", "1", "a"],
        &["ZREM", "s", "a"],
        &["ZCARD", "s"],
        &["ZSCORE", "s", "a"],
        &["ZMSCORE", "s", "a"],
        &["ZRANK", "s", "a"],
        &["ZREVRANK", "s", "a"],
        &["ZCOUNT", "s", "0", "1"],
        &["ZLEXCOUNT", "s", "-", "+"],
        &["ZRANGE", "s", "0", "1"],
        &["ZRANGEBYSCORE", "s", "0", "1"],
        &["ZREVRANGEBYLEX", "s", "+", "-"],
        &["ZRANGESTORE", "d", "s", "0", "1"],
        &["ZREMRANGEBYRANK", "s", "0", "1"],
        &["ZPOPMIN", "s"],
        &["ZMPOP", "1", "s", "MIN"],
        &["ZRANDMEMBER", "s"],
        &["ZSCAN", "s", "0"],
        &["ZUNIONSTORE", "d", "1", "s"],
    ] {
        assert_eq!(h.run(argv), err(WRONGTYPE), "{argv:?}");
    }
}

#[test]
fn events_match_redis() {
    let mut h = Harness::new();
    let notices = Notices::subscribe(h.server.keyspace.feed());
    let check = |h: &mut Harness, argv: &[&str], want: &str| {
        notices.take();
        h.run(argv);
        assert_eq!(notices.take().join(" "), want, "{argv:?}");
    };
    check(
        &mut h,
        &["ZADD", "z", "1", "a", "2", "b"],
        "n:new@0:z z:zadd@0:z",
    );
    check(&mut h, &["ZADD", "z", "1", "a"], "");
    check(&mut h, &["ZADD", "z", "XX", "CH", "3", "a"], "z:zadd@0:z");
    check(&mut h, &["ZINCRBY", "z", "1", "a"], "z:zincr@0:z");
    check(&mut h, &["ZADD", "z", "INCR", "NX", "1", "a"], "");
    check(&mut h, &["ZREM", "z", "a", "b"], "z:zrem@0:z g:del@0:z");
    h.run(&["ZADD", "z", "1", "a", "2", "b", "3", "c"]);
    check(&mut h, &["ZPOPMIN", "z"], "z:zpopmin@0:z");
    check(&mut h, &["ZPOPMAX", "z", "5"], "z:zpopmax@0:z g:del@0:z");
    h.run(&["ZADD", "z", "1", "a", "2", "b", "3", "c"]);
    check(
        &mut h,
        &["ZREMRANGEBYRANK", "z", "0", "0"],
        "z:zremrangebyrank@0:z",
    );
    check(
        &mut h,
        &["ZREMRANGEBYSCORE", "z", "2", "2"],
        "z:zremrangebyscore@0:z",
    );
    check(
        &mut h,
        &["ZREMRANGEBYLEX", "z", "-", "+"],
        "z:zremrangebylex@0:z g:del@0:z",
    );
    h.run(&["ZADD", "s", "1", "a"]);
    check(
        &mut h,
        &["ZUNIONSTORE", "d", "1", "s"],
        "n:new@0:d z:zunionstore@0:d",
    );
    check(&mut h, &["ZINTERSTORE", "d", "1", "none"], "g:del@0:d");
    check(
        &mut h,
        &["ZDIFFSTORE", "d", "1", "s"],
        "n:new@0:d z:zdiffstore@0:d",
    );
    check(
        &mut h,
        &["ZRANGESTORE", "d", "s", "0", "-1"],
        "z:zrangestore@0:d",
    );
    check(&mut h, &["ZRANGESTORE", "d", "s", "5", "6"], "g:del@0:d");
    check(
        &mut h,
        &["ZMPOP", "2", "none", "s", "MIN"],
        "z:zpopmin@0:s g:del@0:s",
    );
}

#[test]
fn multi_key_commands_stay_in_their_plans() {
    let mut h = Harness::new();
    h.run(&["ZADD", "a", "1", "x"]);
    h.run(&["ZADD", "b", "2", "x", "3", "y"]);
    h.run(&["ZADD", "c", "4", "z"]);
    h.check_plans(&[
        "ZUNION 3 a b c WITHSCORES",
        "ZINTER 2 a b",
        "ZDIFF 3 a b c",
        "ZINTERCARD 2 a b LIMIT 1",
        "ZUNIONSTORE dst 3 a b c WEIGHTS 1 2 3",
        "ZINTERSTORE b 2 a b",
        "ZDIFFSTORE c 2 c a",
        "ZRANGESTORE dst2 b 0 -1",
        "ZMPOP 3 none c a MAX COUNT 2",
    ]);
}

#[test]
fn zmpop_propagates_as_zpop() {
    use std::sync::Arc;

    use larder_engine::{Change, ChangeKind, Consumer, Interest};
    use parking_lot::Mutex;

    #[derive(Default)]
    struct Collect(Mutex<Vec<Change>>);
    impl Consumer for Collect {
        fn committed(&self, _: u64, changes: &[Change]) {
            self.0.lock().extend(changes.iter().cloned());
        }
    }
    let mut h = Harness::new();
    let c = Arc::new(Collect::default());
    h.server
        .keyspace
        .feed()
        .subscribe(Interest::COMMANDS, c.clone());
    h.run(&["ZADD", "z", "1", "a", "2", "b"]);
    c.0.lock().clear();
    h.run(&["ZMPOP", "1", "z", "MAX", "COUNT", "5"]);
    let cmds: Vec<String> =
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
            .collect();
    assert_eq!(cmds, ["ZPOPMAX z 2"]);
}

#[test]
fn table_is_complete() {
    for spec in super::COMMANDS {
        assert_eq!(spec.group.name(), "sorted-set");
        assert_eq!(spec.group.acl_category(), "@sortedset");
    }
    assert_eq!(super::COMMANDS.len(), 32);
}

/// The short-decimal fast path gives the bits Rust's (correctly rounding) parser gives, and
/// declines every other form.
#[test]
fn simple_decimal_matches_the_full_parser() {
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for _ in 0..200_000 {
        let int_digits = (next() % 9) as usize;
        let frac_digits = (next() % 10) as usize;
        let mut t = String::new();
        match next() % 4 {
            0 => t.push('-'),
            1 => t.push('+'),
            _ => {}
        }
        for _ in 0..int_digits {
            t.push(char::from(b'0' + (next() % 10) as u8));
        }
        if frac_digits > 0 || next() % 2 == 0 {
            t.push('.');
        }
        for _ in 0..frac_digits {
            t.push(char::from(b'0' + (next() % 10) as u8));
        }
        let want: Option<f64> = t.parse().ok();
        let got = super::simple_decimal(t.as_bytes());
        match got {
            Some(v) => assert_eq!(Some(v.to_bits()), want.map(f64::to_bits), "{t}"),
            // Declined: only for no digits at all or more than 15 of them.
            None => assert!(
                want.is_none() || int_digits + frac_digits > 15,
                "{t} declined"
            ),
        }
    }
    for other in [
        "1e5",
        "inf",
        "0x10",
        "1.5.",
        "",
        "-",
        ".",
        "1 ",
        "1234567890123456",
    ] {
        assert_eq!(super::simple_decimal(other.as_bytes()), None, "{other}");
    }
}
