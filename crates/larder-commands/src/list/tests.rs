//! Socket-free tests of the list commands.

use larder_resp::{Frame, Protocol};

use crate::testing::*;

const WRONGTYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";

fn arr(items: &[&str]) -> Frame {
    Frame::Array(items.iter().map(|s| bulk(s)).collect())
}

fn range(h: &mut Harness, key: &str) -> Frame {
    h.run(&["LRANGE", key, "0", "-1"])
}

#[test]
fn push_and_range() {
    let mut h = Harness::new();
    assert_eq!(h.run(&["RPUSH", "l", "a", "b"]), int(2));
    assert_eq!(h.run(&["LPUSH", "l", "x", "y"]), int(4));
    assert_eq!(range(&mut h, "l"), arr(&["y", "x", "a", "b"]));
    assert_eq!(h.run(&["LPUSHX", "l", "z"]), int(5));
    assert_eq!(h.run(&["RPUSHX", "l", "w", "v"]), int(7));
    assert_eq!(h.run(&["LPUSHX", "none", "z"]), int(0));
    assert_eq!(h.run(&["RPUSHX", "none", "z"]), int(0));
    assert_eq!(h.run(&["EXISTS", "none"]), int(0));
    assert_eq!(h.run(&["TYPE", "l"]), Frame::Simple("list".into()));
    assert_eq!(h.run(&["LLEN", "l"]), int(7));
    assert_eq!(h.run(&["LLEN", "none"]), int(0));
    assert_eq!(h.run(&["OBJECT", "ENCODING", "l"]), bulk("quicklist"));
    assert_eq!(
        h.run(&["LPUSH", "l"]),
        err("ERR wrong number of arguments for 'lpush' command")
    );
}

#[test]
fn lrange_indexes() {
    let mut h = Harness::new();
    h.run(&["RPUSH", "l", "0", "1", "2", "3", "4"]);
    assert_eq!(h.run(&["LRANGE", "l", "1", "2"]), arr(&["1", "2"]));
    assert_eq!(h.run(&["LRANGE", "l", "-2", "-1"]), arr(&["3", "4"]));
    assert_eq!(h.run(&["LRANGE", "l", "-100", "1"]), arr(&["0", "1"]));
    assert_eq!(h.run(&["LRANGE", "l", "3", "100"]), arr(&["3", "4"]));
    assert_eq!(h.run(&["LRANGE", "l", "3", "1"]), arr(&[]));
    assert_eq!(h.run(&["LRANGE", "l", "5", "10"]), arr(&[]));
    assert_eq!(h.run(&["LRANGE", "l", "0", "-6"]), arr(&[]));
    assert_eq!(
        h.run(&["LRANGE", "l", "-9223372036854775808", "9223372036854775807"]),
        arr(&["0", "1", "2", "3", "4"])
    );
    assert_eq!(h.run(&["LRANGE", "none", "0", "-1"]), arr(&[]));
    assert_eq!(
        h.run(&["LRANGE", "l", "a", "1"]),
        err("ERR value is not an integer or out of range")
    );
}

#[test]
fn pops() {
    let mut h = Harness::new();
    h.run(&["RPUSH", "l", "a", "b", "c", "d"]);
    assert_eq!(h.run(&["LPOP", "l"]), bulk("a"));
    assert_eq!(h.run(&["RPOP", "l"]), bulk("d"));
    assert_eq!(h.run(&["LPOP", "l", "0"]), arr(&[]));
    assert_eq!(h.run(&["RPOP", "l", "5"]), arr(&["c", "b"]));
    assert_eq!(h.run(&["EXISTS", "l"]), int(0));
    assert_eq!(h.run(&["LPOP", "l"]), Frame::Null);
    assert_eq!(h.run_raw(&[b"LPOP", b"l"]), b"$-1\r\n");
    assert_eq!(h.run_raw(&[b"LPOP", b"l", b"2"]), b"*-1\r\n");
    assert_eq!(h.run_raw(&[b"RPOP", b"l", b"0"]), b"*-1\r\n");
    h.run(&["RPUSH", "l", "a", "b", "c"]);
    assert_eq!(h.run(&["LPOP", "l", "2"]), arr(&["a", "b"]));
    assert_eq!(h.run(&["RPOP", "l", "1"]), arr(&["c"]));
    assert_eq!(h.run(&["EXISTS", "l"]), int(0));
    for bad in ["-1", "x", "1.5"] {
        assert_eq!(
            h.run(&["LPOP", "l", bad]),
            err("ERR value is out of range, must be positive")
        );
    }
    assert_eq!(
        h.run(&["LPOP", "l", "1", "2"]),
        err("ERR wrong number of arguments for 'lpop' command")
    );
    h.out.proto = Protocol::Resp3;
    assert_eq!(h.run_raw(&[b"LPOP", b"l"]), b"_\r\n");
    assert_eq!(h.run_raw(&[b"RPOP", b"l", b"3"]), b"_\r\n");
    h.run(&["RPUSH", "l", "a"]);
    assert_eq!(h.run_raw(&[b"RPOP", b"l", b"0"]), b"*0\r\n");
}

#[test]
fn lindex_and_lset() {
    let mut h = Harness::new();
    h.run(&["RPUSH", "l", "a", "b", "c"]);
    assert_eq!(h.run(&["LINDEX", "l", "0"]), bulk("a"));
    assert_eq!(h.run(&["LINDEX", "l", "-1"]), bulk("c"));
    assert_eq!(h.run(&["LINDEX", "l", "3"]), Frame::Null);
    assert_eq!(h.run(&["LINDEX", "l", "-4"]), Frame::Null);
    assert_eq!(h.run(&["LINDEX", "none", "x"]), Frame::Null);
    assert_eq!(
        h.run(&["LINDEX", "l", "x"]),
        err("ERR value is not an integer or out of range")
    );
    assert_eq!(h.run(&["LSET", "l", "1", "B"]), ok());
    assert_eq!(h.run(&["LSET", "l", "-1", "C"]), ok());
    assert_eq!(range(&mut h, "l"), arr(&["a", "B", "C"]));
    assert_eq!(
        h.run(&["LSET", "l", "3", "x"]),
        err("ERR index out of range")
    );
    assert_eq!(
        h.run(&["LSET", "l", "-4", "x"]),
        err("ERR index out of range")
    );
    assert_eq!(h.run(&["LSET", "none", "x", "v"]), err("ERR no such key"));
    assert_eq!(
        h.run(&["LSET", "l", "x", "v"]),
        err("ERR value is not an integer or out of range")
    );
}

#[test]
fn lrem_counts() {
    let mut h = Harness::new();
    let fill = |h: &mut Harness| {
        h.run(&["DEL", "l"]);
        h.run(&["RPUSH", "l", "a", "x", "b", "x", "c", "x"]);
    };
    fill(&mut h);
    assert_eq!(h.run(&["LREM", "l", "2", "x"]), int(2));
    assert_eq!(range(&mut h, "l"), arr(&["a", "b", "c", "x"]));
    fill(&mut h);
    assert_eq!(h.run(&["LREM", "l", "-2", "x"]), int(2));
    assert_eq!(range(&mut h, "l"), arr(&["a", "x", "b", "c"]));
    fill(&mut h);
    assert_eq!(h.run(&["LREM", "l", "0", "x"]), int(3));
    assert_eq!(range(&mut h, "l"), arr(&["a", "b", "c"]));
    assert_eq!(h.run(&["LREM", "l", "0", "zz"]), int(0));
    assert_eq!(h.run(&["LREM", "none", "0", "x"]), int(0));
    h.run(&["RPUSH", "one", "x", "x"]);
    assert_eq!(h.run(&["LREM", "one", "-9223372036854775808", "x"]), int(2));
    assert_eq!(h.run(&["EXISTS", "one"]), int(0));
    assert_eq!(
        h.run(&["LREM", "l", "a", "x"]),
        err("ERR value is not an integer or out of range")
    );
}

#[test]
fn ltrim_ranges() {
    let mut h = Harness::new();
    h.run(&["RPUSH", "l", "0", "1", "2", "3", "4"]);
    assert_eq!(h.run(&["LTRIM", "l", "1", "-2"]), ok());
    assert_eq!(range(&mut h, "l"), arr(&["1", "2", "3"]));
    assert_eq!(h.run(&["LTRIM", "l", "-100", "100"]), ok());
    assert_eq!(range(&mut h, "l"), arr(&["1", "2", "3"]));
    assert_eq!(h.run(&["LTRIM", "l", "2", "1"]), ok());
    assert_eq!(h.run(&["EXISTS", "l"]), int(0));
    assert_eq!(h.run(&["LTRIM", "none", "0", "1"]), ok());
    assert_eq!(h.run(&["EXISTS", "none"]), int(0));
    assert_eq!(
        h.run(&["LTRIM", "l", "0", "x"]),
        err("ERR value is not an integer or out of range")
    );
}

#[test]
fn linsert_positions() {
    let mut h = Harness::new();
    h.run(&["RPUSH", "l", "a", "c"]);
    assert_eq!(h.run(&["LINSERT", "l", "before", "c", "b"]), int(3));
    assert_eq!(h.run(&["LINSERT", "l", "AFTER", "c", "d"]), int(4));
    assert_eq!(h.run(&["LINSERT", "l", "BEFORE", "a", "0"]), int(5));
    assert_eq!(range(&mut h, "l"), arr(&["0", "a", "b", "c", "d"]));
    assert_eq!(h.run(&["LINSERT", "l", "AFTER", "zz", "x"]), int(-1));
    assert_eq!(h.run(&["LINSERT", "none", "AFTER", "a", "x"]), int(0));
    assert_eq!(h.run(&["EXISTS", "none"]), int(0));
    assert_eq!(
        h.run(&["LINSERT", "none", "MIDDLE", "a", "x"]),
        err("ERR syntax error")
    );
}

#[test]
fn wrong_types() {
    let mut h = Harness::new();
    h.run(&["SET", "s", "v"]);
    h.run(&["RPUSH", "l", "a"]);
    for argv in [
        &["LPUSH", "s", "x"][..],
        &["RPUSHX", "s", "x"],
        &["LPOP", "s"],
        &["RPOP", "s", "0"],
        &["LLEN", "s"],
        &["LRANGE", "s", "0", "1"],
        &["LINDEX", "s", "x"],
        &["LSET", "s", "x", "v"],
        &["LREM", "s", "0", "v"],
        &["LTRIM", "s", "0", "1"],
        &["LINSERT", "s", "BEFORE", "a", "b"],
        // String commands on a list.
        &["GET", "l"],
        &["APPEND", "l", "x"],
        &["INCR", "l"],
        &["STRLEN", "l"],
        &["GETRANGE", "l", "0", "1"],
        &["SETRANGE", "l", "0", "x"],
        &["GETSET", "l", "x"],
    ] {
        assert_eq!(h.run(argv), err(WRONGTYPE), "{argv:?}");
    }
    // Argument errors come first where Redis parses first.
    assert_eq!(
        h.run(&["LPOP", "s", "-1"]),
        err("ERR value is out of range, must be positive")
    );
    assert_eq!(range(&mut h, "l"), arr(&["a"]));
    assert_eq!(h.run(&["SET", "l", "v"]), ok());
    assert_eq!(h.run(&["GET", "l"]), bulk("v"));
    assert_eq!(h.run(&["MGET", "l", "s"]), arr(&["v", "v"]));
}

#[test]
fn copy_rename_and_expiry_keep_lists() {
    let mut h = Harness::new();
    h.run(&["RPUSH", "l", "a", "b"]);
    assert_eq!(h.run(&["COPY", "l", "c"]), int(1));
    assert_eq!(h.run(&["RPUSH", "c", "z"]), int(3));
    assert_eq!(range(&mut h, "l"), arr(&["a", "b"]));
    assert_eq!(h.run(&["RENAME", "c", "d"]), ok());
    assert_eq!(range(&mut h, "d"), arr(&["a", "b", "z"]));
    assert_eq!(h.run(&["EXPIRE", "d", "100"]), int(1));
    assert_eq!(h.run(&["LPUSH", "d", "y"]), int(4));
    assert_eq!(h.run(&["LPOP", "d"]), bulk("y"));
    assert!(matches!(h.run(&["TTL", "d"]), Frame::Integer(t) if t > 90));
}

#[test]
fn hits_and_binary_elements() {
    let mut h = Harness::new();
    let s = std::sync::Arc::clone(&h.server);
    let hits = || {
        (
            s.stats.sum(|t| &t.keyspace_hits),
            s.stats.sum(|t| &t.keyspace_misses),
        )
    };
    h.run_bytes(&[b"RPUSH", b"b", b"\x00\xff\r\n", b""]);
    assert_eq!(hits(), (0, 0));
    assert_eq!(
        h.run_bytes(&[b"LRANGE", b"b", b"0", b"-1"]),
        Frame::Array(vec![Frame::Bulk(b"\x00\xff\r\n".to_vec()), bulk("")])
    );
    h.run(&["LLEN", "none"]);
    h.run(&["LINDEX", "b", "0"]);
    assert_eq!(hits(), (2, 1));
}

#[test]
fn table_is_complete() {
    for spec in super::COMMANDS {
        assert_eq!(spec.group.name(), "list");
        assert_eq!(spec.group.acl_category(), "@list");
    }
    assert_eq!(super::COMMANDS.len(), 17);
}

fn ints(v: &[i64]) -> Frame {
    Frame::Array(v.iter().map(|&i| int(i)).collect())
}

#[test]
fn lpos_options() {
    let mut h = Harness::new();
    h.run(&["RPUSH", "l", "a", "b", "c", "a", "b", "c", "a"]);
    assert_eq!(h.run(&["LPOS", "l", "a"]), int(0));
    assert_eq!(h.run(&["LPOS", "l", "c"]), int(2));
    assert_eq!(h.run(&["LPOS", "l", "a", "RANK", "2"]), int(3));
    assert_eq!(h.run(&["LPOS", "l", "a", "RANK", "-1"]), int(6));
    assert_eq!(h.run(&["LPOS", "l", "a", "RANK", "-3"]), int(0));
    assert_eq!(h.run(&["LPOS", "l", "a", "RANK", "4"]), Frame::Null);
    assert_eq!(h.run(&["LPOS", "l", "a", "COUNT", "0"]), ints(&[0, 3, 6]));
    assert_eq!(h.run(&["LPOS", "l", "a", "COUNT", "2"]), ints(&[0, 3]));
    assert_eq!(
        h.run(&["LPOS", "l", "a", "count", "2", "rank", "-1"]),
        ints(&[6, 3])
    );
    assert_eq!(
        h.run(&["LPOS", "l", "a", "RANK", "2", "COUNT", "5"]),
        ints(&[3, 6])
    );
    assert_eq!(h.run(&["LPOS", "l", "c", "MAXLEN", "2"]), Frame::Null);
    assert_eq!(h.run(&["LPOS", "l", "c", "MAXLEN", "3"]), int(2));
    assert_eq!(
        h.run(&["LPOS", "l", "c", "RANK", "-1", "MAXLEN", "2"]),
        int(5)
    );
    assert_eq!(
        h.run(&["LPOS", "l", "a", "COUNT", "0", "MAXLEN", "4"]),
        ints(&[0, 3])
    );
    assert_eq!(h.run(&["LPOS", "l", "zz"]), Frame::Null);
    assert_eq!(h.run(&["LPOS", "l", "zz", "COUNT", "0"]), ints(&[]));
    assert_eq!(h.run(&["LPOS", "none", "a"]), Frame::Null);
    assert_eq!(h.run(&["LPOS", "none", "a", "COUNT", "1"]), ints(&[]));
    // Redis negates the rank as a C long: the most negative one acts as -1.
    assert_eq!(
        h.run(&["LPOS", "l", "a", "RANK", "-9223372036854775808"]),
        int(6)
    );
    let rank0 = "ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use negative to start from the end of the list";
    assert_eq!(h.run(&["LPOS", "l", "a", "RANK", "0"]), err(rank0));
    assert_eq!(
        h.run(&["LPOS", "l", "a", "RANK", "x"]),
        err("ERR value is not an integer or out of range")
    );
    for bad in ["-1", "x"] {
        assert_eq!(
            h.run(&["LPOS", "l", "a", "COUNT", bad]),
            err("ERR COUNT can't be negative")
        );
        assert_eq!(
            h.run(&["LPOS", "l", "a", "MAXLEN", bad]),
            err("ERR MAXLEN can't be negative")
        );
    }
    assert_eq!(h.run(&["LPOS", "l", "a", "RANK"]), err("ERR syntax error"));
    assert_eq!(
        h.run(&["LPOS", "l", "a", "FOO", "1"]),
        err("ERR syntax error")
    );
    // Options are checked before the key.
    h.run(&["SET", "s", "v"]);
    assert_eq!(h.run(&["LPOS", "s", "a", "RANK", "0"]), err(rank0));
    assert_eq!(h.run(&["LPOS", "s", "a"]), err(WRONGTYPE));
    h.out.proto = Protocol::Resp3;
    assert_eq!(h.run_raw(&[b"LPOS", b"l", b"zz"]), b"_\r\n");
}

#[test]
fn lmove_and_rpoplpush() {
    let mut h = Harness::new();
    let notices = Notices::subscribe(h.server.keyspace.feed());
    h.run(&["RPUSH", "src", "a", "b", "c"]);
    notices.take();
    assert_eq!(h.run(&["LMOVE", "src", "dst", "LEFT", "RIGHT"]), bulk("a"));
    assert_eq!(
        notices.take(),
        ["n:new@0:dst", "l:rpush@0:dst", "l:lpop@0:src"]
    );
    assert_eq!(h.run(&["LMOVE", "src", "dst", "right", "left"]), bulk("c"));
    assert_eq!(range(&mut h, "dst"), arr(&["c", "a"]));
    assert_eq!(h.run(&["RPOPLPUSH", "src", "dst"]), bulk("b"));
    assert_eq!(
        notices.take(),
        [
            "l:lpush@0:dst",
            "l:rpop@0:src",
            "l:lpush@0:dst",
            "l:rpop@0:src",
            "g:del@0:src"
        ]
    );
    assert_eq!(h.run(&["EXISTS", "src"]), int(0));
    assert_eq!(range(&mut h, "dst"), arr(&["b", "c", "a"]));
    // The same list: a rotation, never deleted, even with one element.
    assert_eq!(h.run(&["LMOVE", "dst", "dst", "LEFT", "RIGHT"]), bulk("b"));
    assert_eq!(range(&mut h, "dst"), arr(&["c", "a", "b"]));
    assert_eq!(h.run(&["RPOPLPUSH", "dst", "dst"]), bulk("b"));
    assert_eq!(range(&mut h, "dst"), arr(&["b", "c", "a"]));
    h.run(&["RPUSH", "one", "x"]);
    notices.take();
    assert_eq!(h.run(&["LMOVE", "one", "one", "LEFT", "LEFT"]), bulk("x"));
    assert_eq!(notices.take(), ["l:lpush@0:one", "l:lpop@0:one"]);
    assert_eq!(range(&mut h, "one"), arr(&["x"]));
    // A missing source is a null reply, whatever the destination holds.
    h.run(&["SET", "s", "v"]);
    notices.take();
    assert_eq!(h.run(&["LMOVE", "none", "s", "LEFT", "LEFT"]), Frame::Null);
    assert_eq!(h.run(&["RPOPLPUSH", "none", "dst"]), Frame::Null);
    assert_eq!(h.run(&["EXISTS", "none"]), int(0));
    assert!(notices.take().is_empty());
    assert_eq!(
        h.run(&["LMOVE", "dst", "s", "LEFT", "LEFT"]),
        err(WRONGTYPE)
    );
    assert_eq!(
        h.run(&["LMOVE", "s", "dst", "LEFT", "LEFT"]),
        err(WRONGTYPE)
    );
    assert_eq!(h.run(&["RPOPLPUSH", "dst", "s"]), err(WRONGTYPE));
    assert_eq!(range(&mut h, "dst"), arr(&["b", "c", "a"]));
    assert_eq!(
        h.run(&["LMOVE", "dst", "x", "UP", "LEFT"]),
        err("ERR syntax error")
    );
    assert_eq!(
        h.run(&["LMOVE", "dst", "x", "LEFT", "DOWN"]),
        err("ERR syntax error")
    );
    assert_eq!(
        h.run(&["LMOVE", "dst", "x", "LEFT"]),
        err("ERR wrong number of arguments for 'lmove' command")
    );
    h.out.proto = Protocol::Resp3;
    assert_eq!(h.run_raw(&[b"RPOPLPUSH", b"none", b"x"]), b"_\r\n");
    h.out.proto = Protocol::Resp2;
    assert_eq!(h.run_raw(&[b"RPOPLPUSH", b"none", b"x"]), b"$-1\r\n");
}

fn popped(key: &str, items: &[&str]) -> Frame {
    Frame::Array(vec![bulk(key), arr(items)])
}

#[test]
fn lmpop_forms() {
    let mut h = Harness::new();
    let notices = Notices::subscribe(h.server.keyspace.feed());
    h.run(&["RPUSH", "l2", "a", "b", "c"]);
    notices.take();
    assert_eq!(
        h.run(&["LMPOP", "2", "l1", "l2", "LEFT"]),
        popped("l2", &["a"])
    );
    assert_eq!(
        h.run(&["LMPOP", "2", "l1", "l2", "right", "COUNT", "5"]),
        popped("l2", &["c", "b"])
    );
    assert_eq!(notices.take(), ["l:lpop@0:l2", "l:rpop@0:l2", "g:del@0:l2"]);
    assert_eq!(h.run_raw(&[b"LMPOP", b"1", b"l2", b"LEFT"]), b"*-1\r\n");
    h.run(&["SET", "s", "v"]);
    h.run(&["RPUSH", "l3", "x"]);
    assert_eq!(h.run(&["LMPOP", "2", "none", "s", "LEFT"]), err(WRONGTYPE));
    // A wrong type after the first list is never looked at.
    assert_eq!(
        h.run(&["LMPOP", "2", "l3", "s", "LEFT"]),
        popped("l3", &["x"])
    );
    let numkeys = err("ERR numkeys should be greater than 0");
    for bad in ["0", "-1", "x"] {
        assert_eq!(h.run(&["LMPOP", bad, "l", "LEFT"]), numkeys);
    }
    let count = err("ERR count should be greater than 0");
    for bad in ["0", "-1", "x"] {
        assert_eq!(h.run(&["LMPOP", "1", "l", "LEFT", "COUNT", bad]), count);
    }
    for argv in [
        &["LMPOP", "2", "l", "LEFT"][..],
        &["LMPOP", "3", "l", "s", "LEFT"],
        &["LMPOP", "9223372036854775807", "l", "LEFT"],
        &["LMPOP", "1", "l", "MIDDLE"],
        &["LMPOP", "1", "l", "LEFT", "COUNT"],
        &["LMPOP", "1", "l", "LEFT", "COUNT", "1", "COUNT", "2"],
        &["LMPOP", "1", "l", "LEFT", "FOO", "1"],
    ] {
        assert_eq!(h.run(argv), err("ERR syntax error"), "{argv:?}");
    }
    assert_eq!(
        h.run(&["LMPOP", "1", "l"]),
        err("ERR wrong number of arguments for 'lmpop' command")
    );
    h.out.proto = Protocol::Resp3;
    assert_eq!(h.run_raw(&[b"LMPOP", b"1", b"l", b"LEFT"]), b"_\r\n");
}

/// LMPOP replays as the pop it made; LMOVE as itself.
#[test]
fn lmpop_propagates_the_pop() {
    use larder_engine::{Change, ChangeKind, Consumer, Interest};

    #[derive(Default)]
    struct Commands(parking_lot::Mutex<Vec<String>>);
    impl Consumer for Commands {
        fn committed(&self, _: u64, changes: &[Change]) {
            let commands = changes.iter().filter(|c| c.kind == ChangeKind::Command);
            self.0.lock().extend(commands.map(|c| {
                let words: Vec<String> = (c.argv.iter())
                    .map(|a| String::from_utf8_lossy(a).into_owned())
                    .collect();
                words.join(" ")
            }));
        }
    }
    let mut h = Harness::new();
    let commands = std::sync::Arc::new(Commands::default());
    (h.server.keyspace.feed()).subscribe(Interest::COMMANDS, commands.clone());
    h.run(&["RPUSH", "l", "a", "b", "c"]);
    h.run(&["LMPOP", "2", "x", "l", "RIGHT", "COUNT", "2"]);
    h.run(&["LMPOP", "1", "l", "LEFT", "COUNT", "7"]);
    h.run(&["LMPOP", "1", "l", "LEFT"]);
    h.run(&["RPUSH", "l", "a"]);
    h.run(&["LMOVE", "l", "m", "LEFT", "RIGHT"]);
    assert_eq!(
        *commands.0.lock(),
        [
            "RPUSH l a b c",
            "RPOP l 2",
            "LPOP l 1",
            "RPUSH l a",
            "LMOVE l m LEFT RIGHT"
        ]
    );
}

/// The multi-key commands' keys on different shards, alone and inside EXEC.
#[test]
fn moves_stay_inside_their_plans() {
    let mut h = Harness::new();
    let keys: Vec<String> = (0..40).map(|i| format!("key{i}")).collect();
    let mut requests = Vec::new();
    for pair in keys.chunks(2) {
        let (a, b) = (&pair[0], &pair[1]);
        requests.push(format!("RPUSH {a} 1 2 3"));
        requests.push(format!("LMOVE {a} {b} LEFT RIGHT"));
        requests.push(format!("RPOPLPUSH {b} {a}"));
        requests.push(format!("LMPOP 3 none {b} {a} LEFT COUNT 2"));
        requests.push(format!("LMOVE {a} {a} RIGHT LEFT"));
    }
    let requests: Vec<&str> = requests.iter().map(String::as_str).collect();
    h.check_plans(&requests);
    let total: i64 = keys
        .iter()
        .map(|k| match h.run(&["LLEN", k]) {
            Frame::Integer(n) => n,
            other => panic!("{other:?}"),
        })
        .sum();
    // Each pair got 3 elements twice (alone and in EXEC) and LMPOP took 2 twice.
    assert_eq!(total, 20 * 2);
}

/// CONFIG SET list-max-listpack-size applies to the next write; OBJECT ENCODING stays
/// "quicklist" and every command sees the same elements in both forms.
#[test]
fn both_forms_behave_alike() {
    let mut h = Harness::new();
    assert_eq!(
        h.run(&["CONFIG", "SET", "list-max-listpack-size", "4"]),
        ok()
    );
    h.run(&["RPUSH", "small", "a", "b", "c"]);
    h.run(&["RPUSH", "big", "a", "b", "c", "d", "e"]);
    for key in ["small", "big"] {
        assert_eq!(h.run(&["OBJECT", "ENCODING", key]), bulk("quicklist"));
        assert_eq!(
            h.run(&["LINSERT", key, "AFTER", "a", "x"]),
            int(if key == "small" { 4 } else { 6 })
        );
        assert_eq!(h.run(&["LSET", key, "-1", "z"]), ok());
        assert_eq!(h.run(&["LINDEX", key, "1"]), bulk("x"));
        assert_eq!(
            h.run(&["LPOS", key, "z"]),
            int(if key == "small" { 3 } else { 5 })
        );
        assert_eq!(h.run(&["LREM", key, "0", "x"]), int(1));
        assert_eq!(h.run(&["LPOP", key, "2"]), arr(&["a", "b"]));
    }
    assert_eq!(range(&mut h, "small"), arr(&["z"]));
    assert_eq!(range(&mut h, "big"), arr(&["c", "d", "z"]));
    let list = |h: &Harness, key: &[u8]| {
        let (shard, hash) = shard_for(&h.server, key);
        let slot = shard.find_raw(key, hash).expect("stored");
        match shard.entry(slot).object() {
            Some(larder_engine::Object::List(l)) => l.is_packed(),
            _ => panic!("not a list"),
        }
    };
    assert!(list(&h, b"small"));
    assert!(!list(&h, b"big"));
}
