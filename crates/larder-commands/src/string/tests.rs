//! Tests of the single-key get/set commands in `string.rs` and of SET's options. Apart
//! because they outgrew the code they test; `ttl_ms` here serves the submodules' tests too.

use larder_resp::{Frame, Protocol};

use crate::testing::*;

fn null() -> Frame {
    Frame::Null
}

/// The remaining TTL of `key`, if it has one (shared with the submodules' tests).
pub(super) fn ttl_ms(h: &mut Harness, key: &str) -> Option<u64> {
    let (mut shard, hash) = crate::testing::shard_in(&h.server, h.conn.db, key.as_bytes());
    let now = larder_engine::now_ms();
    let slot = shard.find(key.as_bytes(), hash, now)?;
    shard
        .entry(slot)
        .expire_at_ms()
        .map(|at| at.saturating_sub(now))
}

fn hits(h: &Harness) -> (u64, u64) {
    let s = &h.server.stats;
    (s.sum(|t| &t.keyspace_hits), s.sum(|t| &t.keyspace_misses))
}

#[test]
fn get_set_basics() {
    let mut h = Harness::new();
    assert_eq!(h.run(&["GET", "k"]), null());
    assert_eq!(h.run(&["SET", "k", "v"]), ok());
    assert_eq!(h.run(&["get", "k"]), bulk("v"));
    assert_eq!(h.run(&["SET", "k", "w", "GET"]), bulk("v"));
    assert_eq!(h.run(&["SET", "k", "x", "NX"]), null());
    assert_eq!(h.run(&["SET", "k", "x", "NX", "GET"]), bulk("w"));
    assert_eq!(h.run(&["SET", "n", "x", "XX"]), null());
    assert_eq!(h.run(&["SET", "n", "x", "XX", "GET"]), null());
    assert_eq!(h.run(&["GET", "n"]), null());
    assert_eq!(h.run(&["SET", "n", "x", "NX", "GET"]), null());
    assert_eq!(h.run(&["GET", "n"]), bulk("x"));
    assert_eq!(h.run(&["SET", "n", "y", "XX"]), ok());
    assert_eq!(h.run(&["GET", "n"]), bulk("y"));
    assert_eq!(h.run(&["SET", "e", ""]), ok());
    assert_eq!(h.run(&["GET", "e"]), bulk(""));
    h.out.proto = Protocol::Resp3;
    assert_eq!(h.run_raw(&[b"GET", b"missing"]), b"_\r\n");
    assert_eq!(
        h.run_raw(&[b"SET", b"k", b"v", b"XX", b"NX"]),
        b"-ERR syntax error\r\n"
    );
    h.out.proto = Protocol::Resp2;
    assert_eq!(h.run_raw(&[b"GET", b"missing"]), b"$-1\r\n");
    h.run_bytes(&[b"SET", b"bin\x00", b"\x00\xff\r\n"]);
    assert_eq!(
        h.run_bytes(&[b"GET", b"bin\x00"]),
        Frame::Bulk(b"\x00\xff\r\n".to_vec())
    );
}

#[test]
fn set_option_errors() {
    let mut h = Harness::new();
    for (argv, want) in [
        (&["SET", "k", "v", "NX", "XX"][..], "ERR syntax error"),
        (&["SET", "k", "v", "XX", "NX"], "ERR syntax error"),
        (
            &["SET", "k", "v", "EX", "0"],
            "ERR invalid expire time in 'set' command",
        ),
        (
            &["SET", "k", "v", "PX", "-1"],
            "ERR invalid expire time in 'set' command",
        ),
        (
            &["SET", "k", "v", "EXAT", "0"],
            "ERR invalid expire time in 'set' command",
        ),
        (
            &["SET", "k", "v", "EX", "9223372036854775807"],
            "ERR invalid expire time in 'set' command",
        ),
        (
            &["SET", "k", "v", "PX", "9223372036854775807"],
            "ERR invalid expire time in 'set' command",
        ),
        (
            &["SET", "k", "v", "EX", "x"],
            "ERR value is not an integer or out of range",
        ),
        (
            &["SET", "k", "v", "EX", "10", "PX", "5"],
            "ERR syntax error",
        ),
        (
            &["SET", "k", "v", "EX", "10", "KEEPTTL"],
            "ERR syntax error",
        ),
        (
            &["SET", "k", "v", "KEEPTTL", "PXAT", "5"],
            "ERR syntax error",
        ),
        (
            &["SET", "k", "v", "EXAT", "5", "PXAT", "5"],
            "ERR syntax error",
        ),
        (&["SET", "k", "v", "EX"], "ERR syntax error"),
        (&["SET", "k", "v", "PERSIST"], "ERR syntax error"),
        (&["SET", "k", "v", "BOGUS"], "ERR syntax error"),
        // Syntax is checked before the TTL's number.
        (
            &["SET", "k", "v", "EX", "abc", "XX", "NX"],
            "ERR syntax error",
        ),
        (
            &["SET", "k"],
            "ERR wrong number of arguments for 'set' command",
        ),
    ] {
        assert_eq!(h.run(argv), err(want), "{argv:?}");
    }
    assert_eq!(h.run(&["GET", "k"]), null());
}

#[test]
fn set_repeated_options_like_redis() {
    let mut h = Harness::new();
    assert_eq!(h.run(&["SET", "k", "v", "NX", "NX"]), ok());
    assert_eq!(h.run(&["SET", "k", "w", "GET", "GET"]), bulk("v"));
    assert_eq!(h.run(&["SET", "k", "v", "ex", "10", "EX", "20"]), ok());
    let ttl = ttl_ms(&mut h, "k").expect("ttl");
    assert!((19_000..=20_000).contains(&ttl), "{ttl}");
    assert_eq!(h.run(&["SET", "k", "v", "KEEPTTL", "keepttl"]), ok());
    assert!(ttl_ms(&mut h, "k").is_some());
    assert_eq!(h.run(&["SET", "k", "v", "XX", "XX"]), ok());
    assert_eq!(ttl_ms(&mut h, "k"), None);
}

#[test]
fn set_ttl_options() {
    let mut h = Harness::new();
    assert_eq!(h.run(&["SET", "k", "v", "PX", "100000"]), ok());
    let ttl = ttl_ms(&mut h, "k").expect("ttl");
    assert!((99_000..=100_000).contains(&ttl), "{ttl}");
    // A plain SET clears the TTL; KEEPTTL keeps it.
    assert_eq!(h.run(&["SET", "k", "v", "EX", "100"]), ok());
    assert_eq!(h.run(&["SET", "k", "w", "KEEPTTL"]), ok());
    assert!(ttl_ms(&mut h, "k").is_some());
    assert_eq!(h.run(&["SET", "k", "x"]), ok());
    assert_eq!(ttl_ms(&mut h, "k"), None);
    let at_s = larder_engine::now_ms() / 1000 + 1000;
    assert_eq!(h.run(&["SET", "k", "v", "EXAT", &at_s.to_string()]), ok());
    let ttl = ttl_ms(&mut h, "k").expect("ttl");
    assert!((998_000..=1_000_000).contains(&ttl), "{ttl}");
    let at_ms = larder_engine::now_ms() + 50_000;
    assert_eq!(h.run(&["SET", "k", "v", "PXAT", &at_ms.to_string()]), ok());
    let ttl = ttl_ms(&mut h, "k").expect("ttl");
    assert!((49_000..=50_000).contains(&ttl), "{ttl}");
    // A deadline in the past: the key is set and already gone.
    assert_eq!(h.run(&["SET", "k", "v", "PXAT", "1"]), ok());
    assert_eq!(h.run(&["GET", "k"]), null());
    // SET ... GET with KEEPTTL on an expiring key.
    assert_eq!(h.run(&["SET", "k", "v", "EX", "100"]), ok());
    assert_eq!(h.run(&["SET", "k", "w", "GET", "KEEPTTL"]), bulk("v"));
    assert!(ttl_ms(&mut h, "k").is_some());
}

#[test]
fn setnx_setex_psetex() {
    let mut h = Harness::new();
    assert_eq!(h.run(&["SETNX", "k", "v"]), int(1));
    assert_eq!(h.run(&["SETNX", "k", "w"]), int(0));
    assert_eq!(h.run(&["GET", "k"]), bulk("v"));
    assert_eq!(h.run(&["SETEX", "k", "100", "x"]), ok());
    assert_eq!(h.run(&["GET", "k"]), bulk("x"));
    let ttl = ttl_ms(&mut h, "k").expect("ttl");
    assert!((99_000..=100_000).contains(&ttl), "{ttl}");
    assert_eq!(h.run(&["PSETEX", "p", "5000", "y"]), ok());
    let ttl = ttl_ms(&mut h, "p").expect("ttl");
    assert!((4_000..=5_000).contains(&ttl), "{ttl}");
    for (argv, want) in [
        (
            &["SETEX", "k", "0", "v"][..],
            "ERR invalid expire time in 'setex' command",
        ),
        (
            &["SETEX", "k", "-1", "v"],
            "ERR invalid expire time in 'setex' command",
        ),
        (
            &["SETEX", "k", "9223372036854775807", "v"],
            "ERR invalid expire time in 'setex' command",
        ),
        (
            &["PSETEX", "k", "0", "v"],
            "ERR invalid expire time in 'psetex' command",
        ),
        (
            &["PSETEX", "k", "9223372036854775807", "v"],
            "ERR invalid expire time in 'psetex' command",
        ),
        (
            &["SETEX", "k", "abc", "v"],
            "ERR value is not an integer or out of range",
        ),
        (
            &["SETEX", "k", "10"],
            "ERR wrong number of arguments for 'setex' command",
        ),
        (
            &["SETNX", "k"],
            "ERR wrong number of arguments for 'setnx' command",
        ),
    ] {
        assert_eq!(h.run(argv), err(want), "{argv:?}");
    }
    assert_eq!(h.run(&["GET", "k"]), bulk("x"));
    // SETNX treats an expired key as absent.
    assert_eq!(h.run(&["SET", "old", "v", "PXAT", "1"]), ok());
    assert_eq!(h.run(&["SETNX", "old", "new"]), int(1));
    assert_eq!(h.run(&["GET", "old"]), bulk("new"));
}

#[test]
fn getset_getdel() {
    let mut h = Harness::new();
    assert_eq!(h.run(&["GETSET", "k", "v"]), null());
    assert_eq!(h.run(&["GET", "k"]), bulk("v"));
    assert_eq!(h.run(&["SETEX", "k", "100", "v"]), ok());
    assert_eq!(h.run(&["GETSET", "k", "w"]), bulk("v"));
    assert_eq!(ttl_ms(&mut h, "k"), None, "GETSET clears the TTL");
    assert_eq!(h.run(&["GETDEL", "k"]), bulk("w"));
    assert_eq!(h.run(&["GETDEL", "k"]), null());
    assert_eq!(h.run(&["GET", "k"]), null());
    h.out.proto = Protocol::Resp3;
    assert_eq!(h.run_raw(&[b"GETDEL", b"k"]), b"_\r\n");
    assert_eq!(h.run_raw(&[b"GETSET", b"k", b"v"]), b"_\r\n");
}

#[test]
fn getex_options() {
    let mut h = Harness::new();
    assert_eq!(h.run(&["GETEX", "missing"]), null());
    // The key is looked up before the TTL's number is checked.
    assert_eq!(h.run(&["GETEX", "missing", "EX", "abc"]), null());
    assert_eq!(h.run(&["SET", "k", "v"]), ok());
    assert_eq!(h.run(&["GETEX", "k"]), bulk("v"));
    assert_eq!(ttl_ms(&mut h, "k"), None);
    assert_eq!(h.run(&["GETEX", "k", "EX", "100"]), bulk("v"));
    let ttl = ttl_ms(&mut h, "k").expect("ttl");
    assert!((99_000..=100_000).contains(&ttl), "{ttl}");
    assert_eq!(h.run(&["GETEX", "k"]), bulk("v"));
    assert!(ttl_ms(&mut h, "k").is_some(), "plain GETEX keeps the TTL");
    assert_eq!(h.run(&["GETEX", "k", "PERSIST", "persist"]), bulk("v"));
    assert_eq!(ttl_ms(&mut h, "k"), None);
    assert_eq!(h.run(&["GETEX", "k", "PERSIST"]), bulk("v"));
    assert_eq!(
        h.run(&["GETEX", "k", "px", "5000", "PX", "7000"]),
        bulk("v")
    );
    let ttl = ttl_ms(&mut h, "k").expect("ttl");
    assert!((6_000..=7_000).contains(&ttl), "{ttl}");
    let at_s = larder_engine::now_ms() / 1000 + 1000;
    assert_eq!(h.run(&["GETEX", "k", "EXAT", &at_s.to_string()]), bulk("v"));
    assert!(ttl_ms(&mut h, "k").expect("ttl") > 990_000);
    let at_ms = larder_engine::now_ms() + 30_000;
    assert_eq!(
        h.run(&["GETEX", "k", "PXAT", &at_ms.to_string()]),
        bulk("v")
    );
    assert!(ttl_ms(&mut h, "k").expect("ttl") > 29_000);
    for (argv, want) in [
        (
            &["GETEX", "k", "EX", "abc"][..],
            "ERR value is not an integer or out of range",
        ),
        (
            &["GETEX", "k", "EX", "0"],
            "ERR invalid expire time in 'getex' command",
        ),
        (
            &["GETEX", "k", "PXAT", "-5"],
            "ERR invalid expire time in 'getex' command",
        ),
        (&["GETEX", "k", "EX", "10", "PERSIST"], "ERR syntax error"),
        (&["GETEX", "k", "PERSIST", "EX", "10"], "ERR syntax error"),
        (&["GETEX", "k", "EX", "10", "PX", "10"], "ERR syntax error"),
        (&["GETEX", "k", "NX"], "ERR syntax error"),
        (&["GETEX", "k", "GET"], "ERR syntax error"),
        (&["GETEX", "k", "KEEPTTL"], "ERR syntax error"),
        (&["GETEX", "k", "EX"], "ERR syntax error"),
        (&["GETEX", "missing", "EX"], "ERR syntax error"),
        (
            &["GETEX"],
            "ERR wrong number of arguments for 'getex' command",
        ),
    ] {
        assert_eq!(h.run(argv), err(want), "{argv:?}");
    }
    // An absolute deadline in the past returns the value and deletes the key.
    assert_eq!(h.run(&["GETEX", "k", "EXAT", "1"]), bulk("v"));
    assert_eq!(h.run(&["GET", "k"]), null());
    assert_eq!(h.run(&["SET", "k", "v"]), ok());
    assert_eq!(h.run(&["GETEX", "k", "PXAT", "100"]), bulk("v"));
    assert_eq!(h.run(&["GET", "k"]), null());
}

#[test]
fn keyspace_hits_and_misses() {
    let mut h = Harness::new();
    h.run(&["SET", "a", "1"]);
    assert_eq!(hits(&h), (0, 0));
    h.run(&["GET", "a"]);
    h.run(&["GET", "b"]);
    assert_eq!(hits(&h), (1, 1));
    h.run(&["MGET", "a", "b", "a", "c"]);
    assert_eq!(hits(&h), (3, 3));
    h.run(&["SET", "a", "2", "GET"]);
    h.run(&["GETSET", "z", "2"]);
    assert_eq!(hits(&h), (4, 4));
    h.run(&["GETEX", "a"]);
    h.run(&["GETDEL", "a"]);
    assert_eq!(hits(&h), (6, 4));
    h.run(&["SETNX", "q", "1"]);
    h.run(&["MSET", "q", "1"]);
    assert_eq!(hits(&h), (6, 4));
}

#[test]
fn expired_keys_are_absent_for_every_command() {
    let mut h = Harness::new();
    for cmd in [
        &["GET", "k"][..],
        &["GETEX", "k"],
        &["GETDEL", "k"],
        &["GETSET", "k", "n"],
    ] {
        assert_eq!(h.run(&["SET", "k", "v", "PXAT", "1"]), ok());
        assert_eq!(h.run(cmd), null(), "{cmd:?}");
    }
    assert_eq!(h.run(&["SET", "k", "v", "PXAT", "1"]), ok());
    assert_eq!(h.run(&["SET", "k", "w", "XX"]), null());
    assert_eq!(h.run(&["MSETNX", "k", "1"]), int(1));
}

/// SET and friends store the buffer the connection read a large last argument into
/// (`ConnState::owned_arg`) instead of a copy; anything else leaves it alone.
#[test]
fn set_adopts_the_connections_buffer() {
    use std::sync::Arc;
    let mut h = Harness::new();
    let run_owned = |h: &mut Harness, argv: &[&[u8]], owned: &Arc<Vec<u8>>| {
        h.conn.owned_arg = Some(Arc::clone(owned));
        let reply = h.run_bytes(argv);
        h.conn.owned_arg = None;
        reply
    };
    for cmd in [
        &[&b"SET"[..], b"k"][..],
        &[b"SETEX", b"k", b"100"],
        &[b"PSETEX", b"k", b"100000"],
        &[b"GETSET", b"k"],
        &[b"MSET", b"a", b"1", b"k"],
    ] {
        let owned = Arc::new(vec![7u8; 40_000]);
        let mut argv = cmd.to_vec();
        argv.push(owned.as_slice());
        run_owned(&mut h, &argv, &owned);
        assert_eq!(
            Arc::strong_count(&owned),
            2,
            "{:?} did not keep the buffer",
            cmd[0]
        );
        let (shard, hash) = crate::testing::shard_for(&h.server, b"k");
        let slot = shard.find_raw(b"k", hash).expect("stored");
        assert!(matches!(
            shard.entry(slot).object(),
            Some(larder_engine::Object::Shared(b)) if Arc::ptr_eq(b, &owned)
        ));
    }
    // A copy of the bytes elsewhere in the request is not the buffer: copied, not adopted.
    let owned = Arc::new(vec![8u8; 40_000]);
    let copy = owned.to_vec();
    run_owned(&mut h, &[b"SET", b"k", &copy], &owned);
    assert_eq!(Arc::strong_count(&owned), 1);
    // SET ... NX that does not write, and commands that only read, leave it.
    run_owned(&mut h, &[b"SET", b"k", &owned, b"NX"], &owned);
    run_owned(&mut h, &[b"ECHO", &owned], &owned);
    assert_eq!(Arc::strong_count(&owned), 1);
    assert_eq!(h.run(&["STRLEN", "k"]), int(40_000));
    // The adopted value is an ordinary string: grown in place after it is unshared,
    // and a COPY of it is independent.
    let owned = Arc::new(b"x".repeat(40_000));
    run_owned(&mut h, &[b"SET", b"s", &owned], &owned);
    drop(owned);
    assert_eq!(h.run(&["COPY", "s", "t"]), int(1));
    assert_eq!(h.run(&["APPEND", "s", "yz"]), int(40_002));
    assert_eq!(h.run(&["SETRANGE", "t", "0", "Q"]), int(40_000));
    assert_eq!(h.run(&["GETRANGE", "s", "39998", "-1"]), bulk("xxyz"));
    assert_eq!(h.run(&["GETRANGE", "t", "0", "1"]), bulk("Qx"));
    assert_eq!(h.run(&["OBJECT", "ENCODING", "t"]), bulk("raw"));
    assert_eq!(
        h.run(&["INCR", "t"]),
        err("ERR value is not an integer or out of range")
    );
}
