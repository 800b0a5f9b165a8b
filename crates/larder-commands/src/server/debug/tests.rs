use std::sync::atomic::Ordering;
use std::sync::Arc;

use larder_resp::Frame;

use super::{atoi_prefix, is_local, strtod_prefix, NOT_ALLOWED};
use crate::config::{lookup, Config};
use crate::exec::ConnState;
use crate::testing::*;

const ZEROS: &str = "0000000000000000000000000000000000000000";

fn config(pairs: &[(&str, &str)]) -> Config {
    let c = Config::new();
    for (name, value) in pairs {
        let d = lookup(name).expect("parameter");
        c.apply(d, value).expect("valid value");
    }
    c
}

fn debug_on() -> Harness {
    Harness::with_config(config(&[("enable-debug-command", "yes")]))
}

fn simple(s: &str) -> Frame {
    Frame::Simple(s.into())
}

fn text(f: Frame) -> String {
    match f {
        Frame::Simple(s) => s,
        other => panic!("not a status reply: {other:?}"),
    }
}

/// A connection whose peer is `addr`.
fn connect_from(server: &Arc<crate::Server>, addr: &str) -> Harness {
    let mut h = Harness::connect(Arc::clone(server));
    let handle = detached_handle(server);
    let mut handle = Arc::try_unwrap(handle).ok().expect("fresh handle");
    handle.addr = addr.into();
    let handle = Arc::new(handle);
    server.clients.register(Arc::clone(&handle));
    h.conn = ConnState::new(server, handle, 0);
    h
}

#[test]
fn refused_unless_enabled_with_redis_text() {
    let mut h = Harness::new();
    assert_eq!(h.run(&["DEBUG", "SLEEP", "0"]), err(NOT_ALLOWED));
    assert_eq!(h.run(&["debug", "help"]), err(NOT_ALLOWED));
    // The arity check comes first, as in Redis.
    assert_eq!(
        h.run(&["DEBUG"]),
        err("ERR wrong number of arguments for 'debug' command")
    );
    // Refused at queue time: the transaction is aborted.
    h.run(&["MULTI"]);
    assert_eq!(h.run(&["DEBUG", "DIGEST"]), err(NOT_ALLOWED));
    assert_eq!(
        h.run(&["EXEC"]),
        err("EXECABORT Transaction discarded because of previous errors.")
    );
    // It cannot be turned on at run time.
    assert_eq!(
        h.run(&["CONFIG", "SET", "enable-debug-command", "yes"]),
        err("ERR CONFIG SET failed (possibly related to argument 'enable-debug-command') - can't set immutable config")
    );
    assert_eq!(
        h.run(&["CONFIG", "GET", "enable-debug-command"]),
        Frame::Array(vec![bulk("enable-debug-command"), bulk("no")])
    );
}

#[test]
fn refusal_comes_before_authentication() {
    let mut h = Harness::with_config(config(&[("requirepass", "pw")]));
    h.conn.authenticated = false;
    assert_eq!(h.run(&["DEBUG", "DIGEST"]), err(NOT_ALLOWED));
    let mut h = Harness::with_config(config(&[
        ("requirepass", "pw"),
        ("enable-debug-command", "yes"),
    ]));
    h.conn.authenticated = false;
    assert_eq!(
        h.run(&["DEBUG", "DIGEST"]),
        err("NOAUTH Authentication required.")
    );
}

#[test]
fn local_allows_loopback_peers_only() {
    let h = Harness::with_config(config(&[("enable-debug-command", "local")]));
    let server = Arc::clone(&h.server);
    for (addr, allowed) in [
        ("127.0.0.1:5000", true),
        ("[::1]:5000", true),
        ("10.1.2.3:5000", false),
        ("127.0.0.2:5000", false),
        ("[::ffff:127.0.0.1]:5000", false),
    ] {
        let mut c = connect_from(&server, addr);
        let want = if allowed { ok() } else { err(NOT_ALLOWED) };
        assert_eq!(c.run(&["DEBUG", "SLEEP", "0"]), want, "{addr}");
    }
    assert!(is_local("127.0.0.1:1") && is_local("[::1]:1"));
    assert!(!is_local("") && !is_local("localhost:1") && !is_local("/tmp/sock"));
}

#[test]
fn unknown_subcommands_and_wrong_arities_get_redis_error() {
    let mut h = debug_on();
    for argv in [
        &["DEBUG", "nosuch"][..],
        &["DEBUG", "sleep"],
        &["DEBUG", "sleep", "1", "2"],
        &["DEBUG", "object"],
        &["DEBUG", "digest", "x"],
        &["DEBUG", "set-active-expire"],
        &["DEBUG", "help", "x"],
    ] {
        assert_eq!(
            h.run(argv),
            err(&format!(
                "ERR unknown subcommand or wrong number of arguments for '{}'. Try DEBUG HELP.",
                argv[1]
            ))
        );
    }
    let Frame::Array(lines) = h.run(&["DEBUG", "HELP"]) else {
        panic!("HELP is an array");
    };
    assert_eq!(
        lines[0],
        simple("DEBUG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:")
    );
    assert_eq!(lines.last(), Some(&simple("    Prints this help.")));
}

/// Vectors printed by redis-server 7.0.15 (`DEBUG DIGEST`, `DEBUG DIGEST-VALUE`) for the
/// same commands.
#[test]
fn digests_match_redis_vectors() {
    let mut h = debug_on();
    assert_eq!(h.run(&["DEBUG", "DIGEST"]), simple(ZEROS));
    h.run(&["SET", "a", "1"]);
    assert_eq!(
        h.run(&["DEBUG", "DIGEST"]),
        simple("943d800368fb9c0e951138f1bc0e313ac769d91f")
    );
    assert_eq!(
        h.run(&["DEBUG", "DIGEST-VALUE", "a", "nosuch"]),
        Frame::Array(vec![
            simple("b4fc66738120fba0b5aa500ab5c2bf89cea1c5da"),
            simple(ZEROS)
        ])
    );
    h.run(&["DEL", "a"]);
    h.run(&["RPUSH", "l", "a", "1", "bb", "-7"]);
    h.run(&["SADD", "si", "3", "1", "2"]);
    h.run(&["SADD", "ss", "x", "y", "5"]);
    h.run(&["ZADD", "z", "1.5", "m", "2", "n", "-0.1", "7"]);
    h.run(&["ZADD", "zf", "1.1", "m"]);
    h.run(&["CONFIG", "SET", "zset-max-listpack-entries", "0"]);
    h.run(&["ZADD", "zf", "3", "q"]);
    assert_eq!(h.run(&["OBJECT", "ENCODING", "zf"]), bulk("skiplist"));
    h.run(&["HSET", "h", "f", "v", "g", "12"]);
    h.run(&["SET", "e", "v"]);
    h.run(&["PEXPIREAT", "e", "99999999999999"]);
    let want = [
        "0c15c3c0e9bac61d115270f69f49a64f71caf3af",
        "2a462a3f51a1db89738ebbeef0c47ce1bbc85246",
        "9ab0175c08c7ea91e0aa7ce3701a4de6bb59341a",
        "a35664e56f94d0c7768f16f99614059cc5d36c89",
        "6410f6421da003056a053afc2cb5f6375c3a8fef",
        "8530acc75d5274eb0fc0da86f28ed5533274a6d4",
        "311b17018163335616e089f6b951c82c477335ac",
    ];
    assert_eq!(
        h.run(&[
            "DEBUG",
            "DIGEST-VALUE",
            "l",
            "si",
            "ss",
            "z",
            "zf",
            "h",
            "e"
        ]),
        Frame::Array(want.iter().map(|d| simple(d)).collect())
    );
    assert_eq!(
        h.run(&["DEBUG", "DIGEST"]),
        simple("3ab274ba4f9223952256de24f4047926526abafb")
    );
    h.run(&["SELECT", "3"]);
    h.run(&["SET", "k", "v"]);
    assert_eq!(
        h.run(&["DEBUG", "DIGEST"]),
        simple("8fd3b1e8a506882adb62e8f76ce505c266340343")
    );
}

/// Random sets and hashes built in different orders have one digest; a list's order counts.
#[test]
fn digest_ignores_insertion_order_of_unordered_types() {
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    for round in 0..20 {
        let n = 1 + round * 7;
        let members: Vec<String> = (0..n)
            .map(|_| {
                seed = crate::state::xorshift(seed);
                if seed % 3 == 0 {
                    (seed % 1000).to_string()
                } else {
                    format!("m{}", seed % 100_000)
                }
            })
            .collect();
        let (mut a, mut b) = (debug_on(), debug_on());
        for m in &members {
            a.run(&["SADD", "s", m]);
            a.run(&["HSET", "h", m, &format!("v{m}")]);
            a.run(&["ZADD", "z", &(m.len() as f64 / 3.0).to_string(), m]);
        }
        for m in members.iter().rev() {
            b.run(&["SADD", "s", m]);
            b.run(&["HSET", "h", m, &format!("v{m}")]);
            b.run(&["ZADD", "z", &(m.len() as f64 / 3.0).to_string(), m]);
        }
        assert_eq!(a.run(&["DEBUG", "DIGEST"]), b.run(&["DEBUG", "DIGEST"]));
        a.run(&["RPUSH", "l", "x", "y"]);
        b.run(&["RPUSH", "l", "y", "x"]);
        assert_ne!(a.run(&["DEBUG", "DIGEST"]), b.run(&["DEBUG", "DIGEST"]));
    }
}

#[test]
fn digest_counts_keys_past_their_deadline_until_removed() {
    let mut h = debug_on();
    h.run(&["SET", "k", "v"]);
    let before = h.run(&["DEBUG", "DIGEST-VALUE", "k"]);
    h.run(&["PEXPIREAT", "k", "1"]);
    // A past deadline deletes the key at once (as Redis's PEXPIREAT does).
    assert_eq!(h.run(&["DEBUG", "DIGEST"]), simple(ZEROS));
    h.run(&["SET", "k", "v", "PXAT", "99999999999999"]);
    let volatile = h.run(&["DEBUG", "DIGEST-VALUE", "k"]);
    assert_ne!(before, volatile);
    h.run(&["PERSIST", "k"]);
    assert_eq!(h.run(&["DEBUG", "DIGEST-VALUE", "k"]), before);
}

#[test]
fn object_line_has_redis_fields() {
    let mut h = debug_on();
    assert_eq!(
        h.run(&["DEBUG", "OBJECT", "nosuch"]),
        err("ERR no such key")
    );
    h.run(&["SET", "a", "1"]);
    let line = text(h.run(&["DEBUG", "OBJECT", "a"]));
    assert!(line.starts_with("Value at:0x"), "{line}");
    assert!(
        line.contains(" refcount:2147483647 encoding:int serializedlength:2 lru:"),
        "{line}"
    );
    assert!(line.ends_with(" lru_seconds_idle:0"), "{line}");
    h.run(&["SET", "s", &"x".repeat(100)]);
    let line = text(h.run(&["DEBUG", "OBJECT", "s"]));
    // 100 equal bytes compress with LZF, as Redis's rdbcompression does.
    assert!(
        line.contains(" refcount:1 encoding:raw serializedlength:"),
        "{line}"
    );
    h.run(&["RPUSH", "l", "a", "b", "c"]);
    let line = text(h.run(&["DEBUG", "OBJECT", "l"]));
    assert!(line.contains(" encoding:quicklist "), "{line}");
    assert!(
        line.contains(
            " ql_nodes:1 ql_avg_node:3.00 ql_listpack_max:-2 ql_compressed:0 ql_uncompressed_size:"
        ),
        "{line}"
    );
}

#[test]
fn sleep_and_set_active_expire() {
    let mut h = debug_on();
    let t = std::time::Instant::now();
    assert_eq!(h.run(&["DEBUG", "SLEEP", "0.05"]), ok());
    assert!(t.elapsed() >= std::time::Duration::from_millis(50));
    for arg in ["0", "-1", "abc", "nan", "-inf"] {
        assert_eq!(h.run(&["DEBUG", "SLEEP", arg]), ok());
    }
    assert!(h.server.active_expire.load(Ordering::Relaxed));
    assert_eq!(h.run(&["DEBUG", "SET-ACTIVE-EXPIRE", "0"]), ok());
    assert!(!h.server.active_expire.load(Ordering::Relaxed));
    assert_eq!(h.run(&["DEBUG", "set-active-expire", "1"]), ok());
    assert!(h.server.active_expire.load(Ordering::Relaxed));
    assert_eq!(h.run(&["DEBUG", "set-active-expire", "x"]), ok());
    assert!(!h.server.active_expire.load(Ordering::Relaxed));
}

#[test]
fn reload_and_loadaof_need_the_persistence_runtime() {
    // The harness installs none (the binary does; tests/python/test_debug.py and
    // test_persistence.py drive the real thing).
    let mut h = debug_on();
    assert_eq!(
        h.run(&["DEBUG", "RELOAD", "bogus"]),
        err("ERR DEBUG RELOAD only supports the MERGE, NOFLUSH and NOSAVE options.")
    );
    let Frame::Error(e) = h.run(&["DEBUG", "reload", "nosave", "MERGE"]) else {
        panic!("NOSAVE and MERGE are refused");
    };
    assert!(e.contains("are not supported"), "{e}");
    for argv in [&["DEBUG", "RELOAD"][..], &["DEBUG", "LOADAOF"]] {
        assert_eq!(
            h.run(argv),
            err("ERR DEBUG RELOAD and LOADAOF need the persistence runtime")
        );
    }
}

#[test]
fn debug_runs_inside_transactions() {
    let mut h = debug_on();
    h.run(&["SET", "k", "v"]);
    let alone = h.run(&["DEBUG", "DIGEST"]);
    h.check_plans(&[
        "DEBUG DIGEST",
        "DEBUG DIGEST-VALUE k k2",
        "DEBUG OBJECT k",
        "DEBUG SLEEP 0",
    ]);
    h.run(&["MULTI"]);
    h.run(&["DEBUG", "DIGEST"]);
    assert_eq!(h.run(&["EXEC"]), Frame::Array(vec![alone]));
}

#[test]
fn strtod_and_atoi_read_prefixes() {
    for (s, want) in [
        ("1.5", 1.5),
        ("  2", 2.0),
        ("3abc", 3.0),
        (".5", 0.5),
        ("5.", 5.0),
        ("1e2x", 100.0),
        ("1e", 1.0),
        ("-0.25", -0.25),
        ("abc", 0.0),
        (".", 0.0),
        ("", 0.0),
        ("inf", f64::INFINITY),
    ] {
        assert_eq!(strtod_prefix(s.as_bytes()), want, "{s}");
    }
    assert!(strtod_prefix(b"nan").is_nan());
    for (s, want) in [("1", 1), (" -3x", -3), ("x", 0), ("+7", 7), ("", 0)] {
        assert_eq!(atoi_prefix(s.as_bytes()), want, "{s}");
    }
}

fn raw(h: &mut Harness, argv: &[&str]) -> String {
    let argv: Vec<&[u8]> = argv.iter().map(|a| a.as_bytes()).collect();
    String::from_utf8_lossy(&h.run_raw(&argv)).into_owned()
}

/// The bytes redis-server 7.0.15 writes for each type, in RESP2 and RESP3.
#[test]
fn protocol_writes_redis_bytes() {
    let mut h = debug_on();
    let cases: &[(&str, &str, &str)] = &[
        ("string", "$11\r\nHello World\r\n", "$11\r\nHello World\r\n"),
        ("integer", ":12345\r\n", ":12345\r\n"),
        ("double", "$5\r\n3.141\r\n", ",3.141\r\n"),
        (
            "bignum",
            "$37\r\n1234567999999999999999999999999999999\r\n",
            "(1234567999999999999999999999999999999\r\n",
        ),
        ("null", "$-1\r\n", "_\r\n"),
        ("array", "*3\r\n:0\r\n:1\r\n:2\r\n", "*3\r\n:0\r\n:1\r\n:2\r\n"),
        ("SET", "*3\r\n:0\r\n:1\r\n:2\r\n", "~3\r\n:0\r\n:1\r\n:2\r\n"),
        (
            "map",
            "*6\r\n:0\r\n:0\r\n:1\r\n:1\r\n:2\r\n:0\r\n",
            "%3\r\n:0\r\n#f\r\n:1\r\n#t\r\n:2\r\n#f\r\n",
        ),
        (
            "verbatim",
            "$25\r\nThis is a verbatim\nstring\r\n",
            "=29\r\ntxt:This is a verbatim\nstring\r\n",
        ),
        (
            "attrib",
            "$39\r\nSome real reply following the attribute\r\n",
            "|1\r\n$14\r\nkey-popularity\r\n*2\r\n$7\r\nkey:123\r\n:90\r\n$39\r\nSome real reply following the attribute\r\n",
        ),
        (
            "push",
            "-ERR RESP2 is not supported by this command\r\n",
            ">2\r\n$16\r\nserver-cpu-usage\r\n:42\r\n$40\r\nSome real reply following the push reply\r\n",
        ),
        ("true", ":1\r\n", "#t\r\n"),
        ("false", ":0\r\n", "#f\r\n"),
        (
            "bogus",
            "-ERR Wrong protocol type name. Please use one of the following: string|integer|double|bignum|null|array|set|map|attrib|push|verbatim|true|false\r\n",
            "-ERR Wrong protocol type name. Please use one of the following: string|integer|double|bignum|null|array|set|map|attrib|push|verbatim|true|false\r\n",
        ),
    ];
    for (name, resp2, resp3) in cases {
        h.out.proto = larder_resp::Protocol::Resp2;
        assert_eq!(raw(&mut h, &["DEBUG", "PROTOCOL", name]), *resp2, "{name}");
        h.out.proto = larder_resp::Protocol::Resp3;
        assert_eq!(raw(&mut h, &["DEBUG", "PROTOCOL", name]), *resp3, "{name}");
    }
}

#[test]
fn populate_creates_missing_keys_only() {
    let mut h = debug_on();
    h.run(&["SET", "key:1", "mine"]);
    assert_eq!(h.run(&["DEBUG", "POPULATE", "3"]), ok());
    assert_eq!(h.run(&["DBSIZE"]), int(3));
    assert_eq!(h.run(&["GET", "key:0"]), bulk("value:0"));
    assert_eq!(h.run(&["GET", "key:1"]), bulk("mine"));
    assert_eq!(h.run(&["DEBUG", "POPULATE", "2", "p"]), ok());
    assert_eq!(h.run(&["GET", "p:1"]), bulk("value:1"));
    assert_eq!(h.run(&["DEBUG", "POPULATE", "2", "z", "10"]), ok());
    assert_eq!(
        h.run(&["GET", "z:1"]),
        Frame::Bulk(b"value:1\0\0\0".to_vec())
    );
    assert_eq!(h.run(&["DEBUG", "POPULATE", "1", "t", "3"]), ok());
    assert_eq!(h.run(&["GET", "t:0"]), bulk("val"));
    assert_eq!(h.run(&["DEBUG", "POPULATE", "0"]), ok());
    assert_eq!(
        h.run(&["DEBUG", "POPULATE", "-1"]),
        err("ERR value is out of range, must be positive")
    );
    assert_eq!(
        h.run(&["DEBUG", "POPULATE", "x"]),
        err("ERR value is out of range, must be positive")
    );
    assert_eq!(
        h.run(&["DEBUG", "POPULATE", "1", "k", "-2"]),
        err("ERR value is out of range, must be positive")
    );
    assert_eq!(h.run(&["DBSIZE"]), int(8));
    let long = "p".repeat(200);
    assert_eq!(h.run(&["DEBUG", "POPULATE", "2", &long]), ok());
    // Names are cut at 127 bytes, as Redis's buffer cuts them: both land on one key.
    assert_eq!(h.run(&["DBSIZE"]), int(9));
    assert_eq!(h.run(&["EXISTS", &long[..127]]), int(1));
}
