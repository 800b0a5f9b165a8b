use larder_resp::{Frame, Protocol};

use crate::testing::*;

fn raw(h: &mut Harness, argv: &[&str]) -> String {
    let argv: Vec<&[u8]> = argv.iter().map(|a| a.as_bytes()).collect();
    String::from_utf8_lossy(&h.run_raw(&argv)).into_owned()
}

fn resp3() -> Harness {
    let mut h = Harness::new();
    h.out.proto = Protocol::Resp3;
    h
}

fn bulks(items: &[&str]) -> Frame {
    Frame::Array(items.iter().map(|s| bulk(s)).collect())
}

/// The names in an array-of-bulks reply.
fn names(f: Frame) -> Vec<String> {
    match f {
        Frame::Array(items) => items
            .into_iter()
            .map(|i| match i {
                Frame::Bulk(b) => String::from_utf8_lossy(&b).into_owned(),
                other => panic!("not a bulk: {other:?}"),
            })
            .collect(),
        other => panic!("not an array: {other:?}"),
    }
}

fn map_get<'a>(f: &'a Frame, key: &str) -> Option<&'a Frame> {
    match f {
        Frame::Map(pairs) => pairs.iter().find(|(k, _)| *k == bulk(key)).map(|(_, v)| v),
        _ => None,
    }
}

#[test]
fn info_is_bulk_in_resp2_and_verbatim_in_resp3() {
    let mut h = Harness::new();
    h.run(&["SET", "k", "v"]);
    assert_eq!(
        h.run(&["INFO", "keyspace"]),
        bulk("# Keyspace\r\ndb0:keys=1,expires=0,avg_ttl=0\r\n")
    );
    let Frame::Bulk(all) = h.run(&["INFO"]) else {
        panic!("INFO is a bulk string in RESP2");
    };
    assert!(all.starts_with(b"# Server\r\nredis_version:7.0.15\r\n"));
    assert_eq!(h.run(&["info", "NOSUCH"]), bulk(""));
    h.out.proto = Protocol::Resp3;
    assert_eq!(
        raw(&mut h, &["INFO", "keyspace"]),
        "=48\r\ntxt:# Keyspace\r\ndb0:keys=1,expires=0,avg_ttl=0\r\n\r\n"
    );
    assert_eq!(raw(&mut h, &["INFO", "nosuch"]), "=4\r\ntxt:\r\n");
}

#[test]
fn info_counts_commands_under_their_full_names() {
    let mut h = Harness::new();
    h.run(&["COMMAND", "COUNT"]);
    h.run(&["CONFIG", "GET", "timeout"]);
    h.run(&["CONFIG", "GET"]);
    let Frame::Bulk(t) = h.run(&["INFO", "commandstats"]) else {
        panic!("bulk");
    };
    let t = String::from_utf8_lossy(&t);
    assert!(t.contains("\r\ncmdstat_command:calls=1,"), "{t}");
    assert!(t.contains("\r\ncmdstat_config|get:calls=1,"), "{t}");
    assert!(t.contains("rejected_calls=1,failed_calls=0"), "{t}");
}

#[test]
fn time_is_two_bulk_strings() {
    let mut h = Harness::new();
    let Frame::Array(parts) = h.run(&["TIME"]) else {
        panic!("array");
    };
    let nums: Vec<u64> = parts
        .iter()
        .map(|p| match p {
            Frame::Bulk(b) => String::from_utf8_lossy(b).parse().unwrap_or(0),
            _ => 0,
        })
        .collect();
    assert_eq!(nums.len(), 2);
    let now_s = larder_engine::now_ms() / 1000;
    assert!(nums[0] + 2 >= now_s && nums[0] <= now_s + 2);
    assert!(nums[1] < 1_000_000);
    assert_eq!(
        h.run(&["TIME", "x"]),
        err("ERR wrong number of arguments for 'time' command")
    );
}

#[test]
fn shutdown_flags_and_abort() {
    let mut h = Harness::new();
    let syntax = err("ERR syntax error");
    assert_eq!(h.run(&["SHUTDOWN", "FOO"]), syntax);
    assert_eq!(h.run(&["SHUTDOWN", "NOSAVE", "SAVE"]), syntax);
    assert_eq!(h.run(&["SHUTDOWN", "ABORT", "NOW"]), syntax);
    assert_eq!(h.run(&["SHUTDOWN", "force", "abort"]), syntax);
    assert_eq!(
        h.run(&["SHUTDOWN", "abort"]),
        err("ERR No shutdown in progress.")
    );
    let requested = || {
        h.server
            .shutdown_requested
            .load(std::sync::atomic::Ordering::Acquire)
    };
    assert!(!requested());
    let mut h2 = Harness::connect(std::sync::Arc::clone(&h.server));
    assert!(h2
        .run_raw(&[b"SHUTDOWN", b"NOSAVE", b"NOW", b"NOW", b"FORCE"])
        .is_empty());
    assert!(requested());
    let mut h3 = Harness::new();
    assert!(h3.run_raw(&[b"shutdown"]).is_empty());
    assert!(h3
        .server
        .shutdown_requested
        .load(std::sync::atomic::Ordering::Acquire));
}

#[test]
fn command_info_matches_redis_bytes() {
    let mut h = Harness::new();
    let get2 = "*10\r\n$3\r\nget\r\n:2\r\n*2\r\n+readonly\r\n+fast\r\n:1\r\n:1\r\n:1\r\n*3\r\n+@read\r\n+@string\r\n+@fast\r\n*0\r\n*1\r\n*6\r\n$5\r\nflags\r\n*2\r\n+RO\r\n+access\r\n$12\r\nbegin_search\r\n*4\r\n$4\r\ntype\r\n$5\r\nindex\r\n$4\r\nspec\r\n*2\r\n$5\r\nindex\r\n:1\r\n$9\r\nfind_keys\r\n*4\r\n$4\r\ntype\r\n$5\r\nrange\r\n$4\r\nspec\r\n*6\r\n$7\r\nlastkey\r\n:0\r\n$7\r\nkeystep\r\n:1\r\n$5\r\nlimit\r\n:0\r\n*0\r\n";
    assert_eq!(
        raw(&mut h, &["COMMAND", "INFO", "GET"]),
        format!("*1\r\n{get2}")
    );
    let time = "*10\r\n$4\r\ntime\r\n:1\r\n*3\r\n+loading\r\n+stale\r\n+fast\r\n:0\r\n:0\r\n:0\r\n*1\r\n+@fast\r\n*1\r\n$23\r\nnondeterministic_output\r\n*0\r\n*0\r\n";
    let info = "*10\r\n$4\r\ninfo\r\n:-1\r\n*2\r\n+loading\r\n+stale\r\n:0\r\n:0\r\n:0\r\n*2\r\n+@slow\r\n+@dangerous\r\n*3\r\n$23\r\nnondeterministic_output\r\n$25\r\nrequest_policy:all_shards\r\n$23\r\nresponse_policy:special\r\n*0\r\n*0\r\n";
    let shutdown = "*10\r\n$8\r\nshutdown\r\n:-1\r\n*6\r\n+admin\r\n+noscript\r\n+loading\r\n+stale\r\n+no_multi\r\n+allow_busy\r\n:0\r\n:0\r\n:0\r\n*3\r\n+@admin\r\n+@slow\r\n+@dangerous\r\n*0\r\n*0\r\n*0\r\n";
    let config_get = "*10\r\n$10\r\nconfig|get\r\n:-3\r\n*4\r\n+admin\r\n+noscript\r\n+loading\r\n+stale\r\n:0\r\n:0\r\n:0\r\n*3\r\n+@admin\r\n+@slow\r\n+@dangerous\r\n*0\r\n*0\r\n*0\r\n";
    let command_list = "*10\r\n$12\r\ncommand|list\r\n:-2\r\n*2\r\n+loading\r\n+stale\r\n:0\r\n:0\r\n:0\r\n*2\r\n+@slow\r\n+@connection\r\n*1\r\n$29\r\nnondeterministic_output_order\r\n*0\r\n*0\r\n";
    assert_eq!(
        raw(
            &mut h,
            &[
                "COMMAND",
                "INFO",
                "time",
                "info",
                "shutdown",
                "CONFIG|GET",
                "command|list",
                "nosuch",
                "config|nosuch",
                "get|x"
            ]
        ),
        format!("*8\r\n{time}{info}{shutdown}{config_get}{command_list}$-1\r\n$-1\r\n$-1\r\n")
    );
    // A container: no flags, only @slow, its subcommands nested.
    let config = raw(&mut h, &["COMMAND", "INFO", "config"]);
    assert!(
        config.starts_with("*1\r\n*10\r\n$6\r\nconfig\r\n:-2\r\n*0\r\n:0\r\n:0\r\n:0\r\n*1\r\n+@slow\r\n*0\r\n*0\r\n*5\r\n*10\r\n$10\r\nconfig|get\r\n"),
        "{config}"
    );
    assert!(config.contains(config_get));
    // RESP3: sets for flags, categories, tips and key specs, maps in key specs, null.
    h.out.proto = Protocol::Resp3;
    assert_eq!(
        raw(&mut h, &["COMMAND", "INFO", "get", "nosuch"]),
        "*2\r\n*10\r\n$3\r\nget\r\n:2\r\n~2\r\n+readonly\r\n+fast\r\n:1\r\n:1\r\n:1\r\n~3\r\n+@read\r\n+@string\r\n+@fast\r\n~0\r\n~1\r\n%3\r\n$5\r\nflags\r\n~2\r\n+RO\r\n+access\r\n$12\r\nbegin_search\r\n%2\r\n$4\r\ntype\r\n$5\r\nindex\r\n$4\r\nspec\r\n%1\r\n$5\r\nindex\r\n:1\r\n$9\r\nfind_keys\r\n%2\r\n$4\r\ntype\r\n$5\r\nrange\r\n$4\r\nspec\r\n%3\r\n$7\r\nlastkey\r\n:0\r\n$7\r\nkeystep\r\n:1\r\n$5\r\nlimit\r\n:0\r\n~0\r\n_\r\n"
    );
}

#[test]
fn command_key_specs() {
    let mut h = Harness::new();
    let usage = raw(&mut h, &["COMMAND", "INFO", "memory|usage"]);
    assert!(usage.starts_with("*1\r\n*10\r\n$12\r\nmemory|usage\r\n:-3\r\n*1\r\n+readonly\r\n:2\r\n:2\r\n:1\r\n*2\r\n+@read\r\n+@slow\r\n*0\r\n*1\r\n"), "{usage}");
    assert!(usage.contains("$5\r\nindex\r\n:2\r\n"), "{usage}");
    let set = raw(&mut h, &["COMMAND", "INFO", "set"]);
    assert!(
        set.contains("*3\r\n+@write\r\n+@string\r\n+@slow\r\n"),
        "{set}"
    );
    // Redis 7.0's key spec flags (`command_meta`): SET GET also reads the old value.
    assert!(
        set.contains("*4\r\n+RW\r\n+access\r\n+update\r\n+variable_flags\r\n"),
        "{set}"
    );
}

#[test]
fn command_without_subcommand_lists_everything() {
    let mut h = Harness::new();
    let Frame::Integer(count) = h.run(&["COMMAND", "COUNT"]) else {
        panic!("integer");
    };
    let Frame::Array(all) = h.run(&["COMMAND"]) else {
        panic!("array");
    };
    assert_eq!(all.len() as i64, count);
    assert_eq!(h.run(&["COMMAND", "INFO"]), Frame::Array(all.clone()));
    // COMMAND reports its own subcommands although it dispatches them itself.
    let Some(Frame::Array(cmd)) = all.iter().find(|c| match c {
        Frame::Array(f) => f.first() == Some(&bulk("command")),
        _ => false,
    }) else {
        panic!("command listed");
    };
    assert!(matches!(&cmd[9], Frame::Array(subs) if subs.len() == 7));
    assert_eq!(
        h.run(&["COMMAND", "COUNT", "x"]),
        err("ERR wrong number of arguments for 'command|count' command")
    );
    assert_eq!(
        h.run(&["COMMAND", "FOO"]),
        err("ERR unknown subcommand 'FOO'. Try COMMAND HELP.")
    );
    assert_eq!(
        h.run(&["COMMAND", "GETKEYS", "get"]),
        err("ERR wrong number of arguments for 'command|getkeys' command")
    );
    let Frame::Array(help) = h.run(&["command", "help"]) else {
        panic!("array");
    };
    assert_eq!(help.len(), 21);
    assert_eq!(
        help[0],
        Frame::Simple("COMMAND <subcommand> [<arg> [value] [opt] ...]. Subcommands are:".into())
    );
}

#[test]
fn command_list_and_filters() {
    let mut h = Harness::new();
    let all = names(h.run(&["COMMAND", "LIST"]));
    for n in [
        "get",
        "info",
        "config",
        "config|get",
        "command|docs",
        "memory|usage",
    ] {
        assert!(all.iter().any(|a| a == n), "{n} in {all:?}");
    }
    assert_eq!(
        names(h.run(&["COMMAND", "LIST", "FILTERBY", "PATTERN", "CONF*"])),
        [
            "config",
            "config|get",
            "config|set",
            "config|resetstat",
            "config|rewrite",
            "config|help"
        ]
    );
    let admin = names(h.run(&["COMMAND", "LIST", "filterby", "aclcat", "ADMIN"]));
    assert!(admin.contains(&"config|set".to_string()));
    assert!(admin.contains(&"shutdown".to_string()));
    assert!(admin.contains(&"slowlog|get".to_string()));
    assert!(!admin.contains(&"slowlog|help".to_string()));
    assert!(!admin.contains(&"info".to_string()));
    let dangerous = names(h.run(&["COMMAND", "LIST", "FILTERBY", "ACLCAT", "dangerous"]));
    assert!(dangerous.contains(&"info".to_string()));
    let connection = names(h.run(&["COMMAND", "LIST", "FILTERBY", "ACLCAT", "connection"]));
    assert!(connection.contains(&"command|info".to_string()));
    assert_eq!(
        h.run(&["COMMAND", "LIST", "FILTERBY", "ACLCAT", "nosuch"]),
        Frame::Array(vec![])
    );
    assert_eq!(
        h.run(&["COMMAND", "LIST", "FILTERBY", "MODULE", "x"]),
        Frame::Array(vec![])
    );
    let syntax = err("ERR syntax error");
    assert_eq!(h.run(&["COMMAND", "LIST", "FILTERBY", "FOO", "x"]), syntax);
    assert_eq!(h.run(&["COMMAND", "LIST", "FILTERBY"]), syntax);
    assert_eq!(h.run(&["COMMAND", "LIST", "x"]), syntax);
    assert_eq!(
        h.run(&["COMMAND", "LIST", "FILTERBY", "ACLCAT", "admin", "x"]),
        syntax
    );
}

#[test]
fn command_getkeys() {
    let mut h = Harness::new();
    assert_eq!(h.run(&["COMMAND", "GETKEYS", "get", "a"]), bulks(&["a"]));
    assert_eq!(
        h.run(&["COMMAND", "GETKEYS", "SET", "a", "1", "b"]),
        bulks(&["a"])
    );
    assert_eq!(
        h.run(&["COMMAND", "GETKEYS", "MEMORY", "usage", "k", "SAMPLES", "x"]),
        bulks(&["k"])
    );
    assert_eq!(
        h.run(&["COMMAND", "GETKEYS", "nosuch", "a"]),
        err("ERR Invalid command specified")
    );
    assert_eq!(
        h.run(&["COMMAND", "GETKEYS", "memory", "nosub"]),
        err("ERR Invalid command specified")
    );
    assert_eq!(
        h.run(&["COMMAND", "GETKEYS", "get", "a", "b"]),
        err("ERR Invalid number of arguments specified for command")
    );
    assert_eq!(
        h.run(&["COMMAND", "GETKEYS", "time", "x"]),
        err("ERR The command has no key arguments")
    );
    assert_eq!(
        h.run(&["COMMAND", "GETKEYS", "config", "get", "x"]),
        err("ERR The command has no key arguments")
    );
    assert_eq!(
        h.run(&["COMMAND", "GETKEYSANDFLAGS", "set", "a", "b"]),
        Frame::Array(vec![Frame::Array(vec![
            bulk("a"),
            Frame::Array(vec![
                Frame::Simple("OW".into()),
                Frame::Simple("update".into())
            ])
        ])])
    );
    h.out.proto = Protocol::Resp3;
    assert_eq!(
        raw(&mut h, &["COMMAND", "GETKEYSANDFLAGS", "get", "a"]),
        "*1\r\n*2\r\n$1\r\na\r\n~2\r\n+RO\r\n+access\r\n"
    );
}

#[test]
fn command_docs() {
    let mut h = resp3();
    assert_eq!(
        raw(&mut h, &["COMMAND", "DOCS", "time", "nosuch"]),
        "%1\r\n$4\r\ntime\r\n%3\r\n$7\r\nsummary\r\n$30\r\nReturn the current server time\r\n$5\r\nsince\r\n$5\r\n2.6.0\r\n$5\r\ngroup\r\n$6\r\nserver\r\n"
    );
    let docs = h.run(&["COMMAND", "DOCS", "config", "CONFIG|GET"]);
    let config = map_get(&docs, "config").cloned().unwrap_or(Frame::Null);
    let Some(Frame::Map(subs)) = map_get(&config, "subcommands") else {
        panic!("subcommands in {config:?}");
    };
    assert_eq!(subs.len(), 5);
    assert_eq!(subs[0].0, bulk("config|get"));
    let get = map_get(&docs, "config|get").cloned().unwrap_or(Frame::Null);
    assert_eq!(
        map_get(&get, "summary"),
        Some(&bulk("Get the values of configuration parameters"))
    );
    assert_eq!(map_get(&get, "group"), Some(&bulk("server")));
    let Frame::Map(all) = h.run(&["COMMAND", "DOCS"]) else {
        panic!("map");
    };
    let Frame::Integer(count) = h.run(&["COMMAND", "COUNT"]) else {
        panic!("integer");
    };
    assert_eq!(all.len() as i64, count);
    // RESP2: a flat array.
    h.out.proto = Protocol::Resp2;
    let Frame::Array(flat) = h.run(&["COMMAND", "DOCS", "get"]) else {
        panic!("array");
    };
    assert_eq!(flat[0], bulk("get"));
    assert_eq!(flat.len(), 2);
}

#[test]
fn config_get() {
    let mut h = Harness::new();
    assert_eq!(
        h.run(&["CONFIG", "GET", "maxmemory"]),
        bulks(&["maxmemory", "0"])
    );
    // An exact name is echoed as typed; duplicates collapse.
    assert_eq!(
        h.run(&["CONFIG", "GET", "MAXMEMORY", "maxmemory", "nosuch"]),
        bulks(&["MAXMEMORY", "0"])
    );
    assert_eq!(
        h.run(&["CONFIG", "GET", "maxmemory*", "TIMEOUT"]),
        bulks(&[
            "maxmemory",
            "0",
            "maxmemory-policy",
            "noeviction",
            "maxmemory-samples",
            "5",
            "TIMEOUT",
            "0"
        ])
    );
    assert_eq!(
        h.run(&["CONFIG", "GET", "SLOWLOG-*", "slowlog-max-len"]),
        bulks(&["slowlog-log-slower-than", "10000", "slowlog-max-len", "128"])
    );
    assert_eq!(h.run(&["CONFIG", "GET", "nosuch*"]), Frame::Array(vec![]));
    assert_eq!(
        h.run(&["CONFIG", "GET"]),
        err("ERR wrong number of arguments for 'config|get' command")
    );
    assert_eq!(
        h.run(&["CONFIG"]),
        err("ERR wrong number of arguments for 'config' command")
    );
    assert_eq!(
        h.run(&["CONFIG", "FOO"]),
        err("ERR unknown subcommand 'FOO'. Try CONFIG HELP.")
    );
    h.out.proto = Protocol::Resp3;
    assert_eq!(
        raw(&mut h, &["CONFIG", "GET", "timeout", "maxmemory"]),
        "%2\r\n$7\r\ntimeout\r\n$1\r\n0\r\n$9\r\nmaxmemory\r\n$1\r\n0\r\n"
    );
}

#[test]
fn config_set() {
    let mut h = Harness::new();
    assert_eq!(
        h.run(&["CONFIG", "SET", "maxmemory", "10mb", "TIMEOUT", "5"]),
        ok()
    );
    assert_eq!(
        h.run(&["CONFIG", "GET", "maxmemory", "timeout"]),
        bulks(&["maxmemory", "10485760", "timeout", "5"])
    );
    assert_eq!(
        h.run(&["CONFIG", "SET", "maxmemory", "10mb", "timeout"]),
        err("ERR syntax error")
    );
    assert_eq!(
        h.run(&["CONFIG", "SET", "maxmemory"]),
        err("ERR wrong number of arguments for 'config|set' command")
    );
    assert_eq!(
        h.run(&["CONFIG", "SET", "nosuch", "1"]),
        err("ERR Unknown option or number of arguments for CONFIG SET - 'nosuch'")
    );
    assert_eq!(
        h.run(&["CONFIG", "SET", "maxmemory", "abc"]),
        err("ERR CONFIG SET failed (possibly related to argument 'maxmemory') - argument must be a memory value")
    );
    assert_eq!(
        h.run(&["CONFIG", "SET", "timeout", "6", "TIMEOUT", "7"]),
        err("ERR CONFIG SET failed (possibly related to argument 'TIMEOUT') - duplicate parameter")
    );
    // All or nothing.
    assert_eq!(
        h.run(&["CONFIG", "SET", "timeout", "9", "hz", "x"]),
        err("ERR CONFIG SET failed (possibly related to argument 'hz') - argument couldn't be parsed into an integer")
    );
    assert_eq!(
        h.run(&["CONFIG", "GET", "timeout"]),
        bulks(&["timeout", "5"])
    );
    let Frame::Array(help) = h.run(&["CONFIG", "HELP"]) else {
        panic!("array");
    };
    assert_eq!(help.len(), 11);
    assert_eq!(help[10], Frame::Simple("    Prints this help.".into()));
}

#[test]
fn config_resetstat_keeps_the_slowlog() {
    let mut h = Harness::new();
    h.run(&["CONFIG", "SET", "slowlog-log-slower-than", "0"]);
    h.run(&["GET", "missing"]);
    h.run(&["NOSUCH"]);
    assert_eq!(h.run(&["CONFIG", "RESETSTAT"]), ok());
    assert_eq!(
        h.run(&["CONFIG", "RESETSTAT", "x"]),
        err("ERR wrong number of arguments for 'config|resetstat' command")
    );
    let Frame::Bulk(t) = h.run(&["INFO", "stats", "errorstats", "commandstats"]) else {
        panic!("bulk");
    };
    let t = String::from_utf8_lossy(&t);
    assert!(t.contains("\r\nkeyspace_misses:0\r\n"), "{t}");
    assert!(t.contains("\r\ntotal_error_replies:1\r\n"), "{t}");
    assert!(!t.contains("cmdstat_get"), "{t}");
    assert!(t.contains("errorstat_ERR:count=1"), "{t}");
    let Frame::Integer(n) = h.run(&["SLOWLOG", "LEN"]) else {
        panic!("integer");
    };
    assert!(n >= 3, "{n}");
}

fn temp_path(name: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!(
        "larder-{}-{}-{name}",
        std::process::id(),
        larder_engine::now_us()
    ))
}

#[test]
fn config_rewrite() {
    let mut h = Harness::new();
    assert_eq!(
        h.run(&["CONFIG", "REWRITE"]),
        err("ERR The server is running without a config file")
    );
    let path = temp_path("rewrite.conf");
    std::fs::write(
        &path,
        "# larder config\nport 6379\n\ntimeout 5\nunknown-directive x y\nTIMEOUT 6\nmaxmemory 1mb\n",
    )
    .ok();
    h.server.info.lock().config_file = path.to_string_lossy().into_owned();
    h.run(&["CONFIG", "SET", "timeout", "10", "maxmemory", "0"]);
    h.run(&[
        "CONFIG",
        "SET",
        "proto-max-bulk-len",
        "2mb",
        "requirepass",
        "a \"b\"",
    ]);
    h.run(&["CONFIG", "SET", "client-query-buffer-limit", "1073741825"]);
    assert_eq!(h.run(&["CONFIG", "REWRITE"]), ok());
    let want = "# larder config\nport 6379\n\ntimeout 10\nunknown-directive x y\nmaxmemory 0\n\
                # Generated by CONFIG REWRITE\nrequirepass \"a \\\"b\\\"\"\n\
                proto-max-bulk-len 2mb\nclient-query-buffer-limit 1073741825\n";
    assert_eq!(std::fs::read_to_string(&path).ok().as_deref(), Some(want));
    // The file reads back to the same values, and a second rewrite changes nothing.
    let line = want.lines().find(|l| l.starts_with("requirepass"));
    assert_eq!(
        line.and_then(crate::config::split_config_line),
        Some(vec!["requirepass".to_string(), "a \"b\"".to_string()])
    );
    assert_eq!(h.run(&["CONFIG", "REWRITE"]), ok());
    assert_eq!(std::fs::read_to_string(&path).ok().as_deref(), Some(want));
    std::fs::remove_file(&path).ok();
    // A missing file is created with the non-default values only.
    assert_eq!(h.run(&["CONFIG", "REWRITE"]), ok());
    let created = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        created.starts_with("# Generated by CONFIG REWRITE\nrequirepass"),
        "{created}"
    );
    assert!(created.contains("timeout 10\n"), "{created}");
    std::fs::remove_file(&path).ok();
    // A directory cannot be read as a file.
    h.server.info.lock().config_file = std::env::temp_dir().to_string_lossy().into_owned();
    let Frame::Error(e) = h.run(&["CONFIG", "REWRITE"]) else {
        panic!("error");
    };
    assert!(e.starts_with("ERR Rewriting config file: "), "{e}");
    assert!(!e.contains("os error"), "{e}");
}

#[test]
fn slowlog() {
    let mut h = Harness::new();
    h.run(&["CONFIG", "SET", "slowlog-log-slower-than", "0"]);
    h.run(&["SET", "k", "v"]);
    let Frame::Array(entries) = h.run(&["SLOWLOG", "GET", "1"]) else {
        panic!("array");
    };
    assert_eq!(entries.len(), 1);
    let Frame::Array(e) = &entries[0] else {
        panic!("entry");
    };
    assert_eq!(e.len(), 6);
    assert_eq!(e[0], int(1));
    assert!(matches!(e[1], Frame::Integer(t) if t > 1_600_000_000));
    assert!(matches!(e[2], Frame::Integer(d) if d >= 0));
    assert_eq!(e[3], bulks(&["SET", "k", "v"]));
    assert_eq!(e[4], bulk("127.0.0.1:0"));
    assert_eq!(e[5], bulk(""));
    let Frame::Array(all) = h.run(&["SLOWLOG", "GET", "-1"]) else {
        panic!("array");
    };
    assert_eq!(all.len(), 3);
    let Frame::Array(default) = h.run(&["SLOWLOG", "GET"]) else {
        panic!("array");
    };
    assert_eq!(default.len(), 4);
    assert_eq!(h.run(&["SLOWLOG", "GET", "0"]), Frame::Array(vec![]));
    let count = err("ERR count should be greater than or equal to -1");
    assert_eq!(h.run(&["SLOWLOG", "GET", "-2"]), count);
    assert_eq!(h.run(&["SLOWLOG", "GET", "abc"]), count);
    assert_eq!(
        h.run(&["SLOWLOG", "get", "1", "2"]),
        err("ERR unknown subcommand or wrong number of arguments for 'get'. Try SLOWLOG HELP.")
    );
    assert_eq!(
        h.run(&["SLOWLOG", "LEN", "x"]),
        err("ERR wrong number of arguments for 'slowlog|len' command")
    );
    assert_eq!(h.run(&["SLOWLOG", "RESET"]), ok());
    // The RESET itself is logged once it has run, as in Redis.
    assert_eq!(h.run(&["SLOWLOG", "LEN"]), int(1));
    assert_eq!(
        h.run(&["SLOWLOG"]),
        err("ERR wrong number of arguments for 'slowlog' command")
    );
    let Frame::Array(help) = h.run(&["SLOWLOG", "HELP"]) else {
        panic!("array");
    };
    assert_eq!(help.len(), 12);
}

#[test]
fn memory_usage() {
    let mut h = Harness::new();
    h.run(&["SET", "k", "some value"]);
    let Frame::Integer(n) = h.run(&["MEMORY", "USAGE", "k"]) else {
        panic!("integer");
    };
    assert!(n > 10, "{n}");
    assert_eq!(h.run(&["MEMORY", "USAGE", "k", "SAMPLES", "0"]), int(n));
    assert_eq!(
        h.run(&["MEMORY", "USAGE", "k", "samples", "1", "SAMPLES", "5"]),
        int(n)
    );
    assert_eq!(h.run(&["MEMORY", "USAGE", "missing"]), Frame::Null);
    let syntax = err("ERR syntax error");
    assert_eq!(h.run(&["MEMORY", "USAGE", "k", "SAMPLES", "-1"]), syntax);
    assert_eq!(h.run(&["MEMORY", "USAGE", "k", "SAMPLES"]), syntax);
    assert_eq!(h.run(&["MEMORY", "USAGE", "k", "FOO", "1"]), syntax);
    assert_eq!(h.run(&["MEMORY", "USAGE", "missing", "FOO"]), syntax);
    assert_eq!(
        h.run(&["MEMORY", "USAGE", "k", "SAMPLES", "x"]),
        err("ERR value is not an integer or out of range")
    );
    assert_eq!(
        h.run(&["MEMORY", "USAGE"]),
        err("ERR wrong number of arguments for 'memory|usage' command")
    );
    // Neither a hit nor a miss.
    let Frame::Bulk(t) = h.run(&["INFO", "stats"]) else {
        panic!("bulk");
    };
    let t = String::from_utf8_lossy(&t);
    assert!(
        t.contains("\r\nkeyspace_hits:0\r\nkeyspace_misses:0\r\n"),
        "{t}"
    );
    h.out.proto = Protocol::Resp3;
    assert_eq!(raw(&mut h, &["MEMORY", "USAGE", "missing"]), "_\r\n");
}

#[test]
fn memory_reports() {
    let mut h = resp3();
    h.run(&["SET", "k", "v"]);
    let stats = h.run(&["MEMORY", "STATS"]);
    assert_eq!(map_get(&stats, "keys.count"), Some(&int(1)));
    assert!(matches!(
        map_get(&stats, "dataset.percentage"),
        Some(Frame::Double(_))
    ));
    assert!(matches!(map_get(&stats, "total.allocated"), Some(Frame::Integer(n)) if *n > 0));
    let Frame::Verbatim { format, text } = h.run(&["MEMORY", "DOCTOR"]) else {
        panic!("verbatim");
    };
    assert_eq!(format, "txt");
    assert!(text.starts_with(b"Hi Sam, "));
    assert!(matches!(
        h.run(&["MEMORY", "MALLOC-STATS"]),
        Frame::Verbatim { .. }
    ));
    assert_eq!(h.run(&["MEMORY", "PURGE"]), ok());
    let Frame::Array(help) = h.run(&["MEMORY", "HELP"]) else {
        panic!("array");
    };
    assert_eq!(help.len(), 14);
    assert_eq!(
        h.run(&["MEMORY", "NOPE"]),
        err("ERR unknown subcommand 'NOPE'. Try MEMORY HELP.")
    );
    h.out.proto = Protocol::Resp2;
    assert!(matches!(h.run(&["MEMORY", "DOCTOR"]), Frame::Bulk(_)));
    let Frame::Array(flat) = h.run(&["MEMORY", "STATS"]) else {
        panic!("array");
    };
    assert_eq!(flat.len(), 36);
}

#[test]
fn every_command_is_exercised() {
    // Table guardrail: every command and subcommand of this family has a test above.
    let tested = [
        "info",
        "command",
        "command|help",
        "command|info",
        "command|count",
        "command|getkeys",
        "command|getkeysandflags",
        "command|list",
        "command|docs",
        "config|get",
        "config|set",
        "config|resetstat",
        "config|rewrite",
        "config|help",
        "time",
        "slowlog|get",
        "slowlog|len",
        "slowlog|reset",
        "slowlog|help",
        "memory|usage",
        "memory|stats",
        "memory|doctor",
        "memory|malloc-stats",
        "memory|purge",
        "memory|help",
        // DEBUG's tests are in `debug/tests.rs`.
        "debug",
        "shutdown",
    ];
    let mut listed = Vec::new();
    for spec in super::COMMANDS {
        let subs = super::command::subcommands_of(spec);
        if subs.is_empty() || spec.name == "command" {
            listed.push(spec.name.to_string());
        }
        for s in subs {
            listed.push(format!("{}|{}", spec.name, s.name));
        }
    }
    assert_eq!(listed, tested);
}

#[test]
fn redis_command_meta_is_sorted_for_its_binary_search() {
    let names: Vec<&str> = super::command_meta::META.iter().map(|m| m.name).collect();
    assert!(
        names.windows(2).all(|w| w[0] < w[1]),
        "not sorted or not unique"
    );
    assert!(names.contains(&"set") && names.contains(&"config|get"));
}
