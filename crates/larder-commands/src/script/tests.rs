//! The executor's side of scripts: widths, starting again, undo, EXEC.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use larder_engine::{Change, ChangeKind, Consumer, Db, Interest};
use larder_resp::Frame;
use parking_lot::Mutex;

use super::run::Width;
use crate::testing::*;

#[derive(Default)]
struct Groups(Mutex<Vec<Vec<Change>>>);

impl Consumer for Groups {
    fn committed(&self, _: u64, changes: &[Change]) {
        self.0.lock().push(changes.to_vec());
    }
}

/// Two keys on different shards.
fn two_shards() -> (&'static str, &'static str) {
    let keys = ["a", "b", "c", "d", "e", "f", "g", "h"];
    let first = keys[0];
    let other = keys
        .iter()
        .find(|k| Db::route(k.as_bytes()).0 != Db::route(first.as_bytes()).0)
        .expect("eight keys do not all share a shard");
    (first, other)
}

fn width_of(h: &Harness, body: &str) -> Width {
    let sha = super::sha1_hex(body.as_bytes());
    let id = larder_script::vm::script_id(&sha).expect("a SHA1");
    let script = h.server.scripts.get(&id).expect("cached");
    match script.width.load(Ordering::Relaxed) {
        0 => Width::Keys,
        1 => Width::Db,
        _ => Width::All,
    }
}

#[test]
fn declared_keys_run_narrow() {
    let mut h = Harness::new();
    let body = "return redis.call('INCR', KEYS[1])";
    assert_eq!(h.run(&["EVAL", body, "1", "k"]), int(1));
    assert_eq!(h.run(&["EVAL", body, "1", "k"]), int(2));
    assert_eq!(width_of(&h, body), Width::Keys);
}

#[test]
fn an_undeclared_key_starts_the_run_again_and_undoes_its_writes() {
    let mut h = Harness::new();
    let groups = Arc::new(Groups::default());
    h.server
        .keyspace
        .feed()
        .subscribe(Interest::CHANGES, groups.clone());
    let (declared, other) = two_shards();
    let body = format!(
        "redis.call('INCR', KEYS[1]); redis.call('SET', '{other}', 'x'); return redis.call('GET', KEYS[1])"
    );
    // Run once: the first INCR ran at `Keys`, was put back, and ran again at `Db`.
    assert_eq!(h.run(&["EVAL", &body, "1", declared]), bulk("1"));
    assert_eq!(width_of(&h, &body), Width::Db);
    assert_eq!(h.run(&["GET", other]), bulk("x"));
    // One group, with one write of each key: nothing of the abandoned run was committed.
    let got = groups.0.lock().clone();
    assert_eq!(got.len(), 1, "{got:?}");
    let written: Vec<(ChangeKind, Vec<u8>)> =
        got[0].iter().map(|c| (c.kind, c.key.clone())).collect();
    assert_eq!(
        written,
        vec![
            (ChangeKind::Written, declared.as_bytes().to_vec()),
            (ChangeKind::Written, other.as_bytes().to_vec())
        ]
    );
    // Remembered: the next run starts at `Db` and does not start again.
    assert_eq!(h.run(&["EVAL", &body, "1", declared]), bulk("2"));
    assert_eq!(groups.0.lock().len(), 2);
}

#[test]
fn undo_restores_value_deadline_and_version() {
    let mut h = Harness::new();
    let (declared, other) = two_shards();
    h.run(&["SET", declared, "v", "PX", "100000"]);
    let before = h.run(&["PTTL", declared]);
    let body = format!("redis.call('SET', KEYS[1], 'new'); return redis.call('GET', '{other}')");
    assert_eq!(h.run(&["EVAL", &body, "1", declared]), Frame::Null);
    // The kept write is the second run's (no deadline: SET without options drops it).
    assert_eq!(h.run(&["GET", declared]), bulk("new"));
    assert_eq!(h.run(&["PTTL", declared]), int(-1));
    assert!(matches!(before, Frame::Integer(ms) if ms > 0));
}

#[test]
fn select_and_publish_need_every_shard() {
    let mut h = Harness::new();
    let body = "redis.call('SELECT', 3); redis.call('SET', 'k', 'in3'); return 1";
    assert_eq!(h.run(&["EVAL", body, "0"]), int(1));
    assert_eq!(width_of(&h, body), Width::All);
    // The caller's database is its own.
    assert_eq!(h.run(&["GET", "k"]), Frame::Null);
    h.run(&["SELECT", "3"]);
    assert_eq!(h.run(&["GET", "k"]), bulk("in3"));
    let body = "return redis.call('PUBLISH', 'ch', 'm')";
    assert_eq!(h.run(&["EVAL", body, "0"]), int(0));
    assert_eq!(width_of(&h, body), Width::All);
}

#[test]
fn a_big_key_is_not_imaged() {
    let mut h = Harness::new();
    let big = "x".repeat(100_000);
    h.run(&["SET", "big", &big]);
    let body = "return redis.call('APPEND', KEYS[1], 'y')";
    assert_eq!(h.run(&["EVAL", body, "1", "big"]), int(100_001));
    assert_eq!(width_of(&h, body), Width::All);
}

#[test]
fn a_script_error_keeps_earlier_writes() {
    let mut h = Harness::new();
    let body = "redis.call('SET', KEYS[1], 'v'); return redis.call('INCR', KEYS[1])";
    let r = h.run(&["EVAL", body, "1", "k"]);
    assert!(
        matches!(&r, Frame::Error(e) if e.starts_with("ERR value is not an integer")),
        "{r:?}"
    );
    assert_eq!(h.run(&["GET", "k"]), bulk("v"));
}

#[test]
fn scripts_run_inside_exec() {
    let mut h = Harness::new();
    let (declared, other) = two_shards();
    h.run(&["MULTI"]);
    let body = format!("redis.call('INCR', '{other}'); return redis.call('INCR', KEYS[1])");
    h.run(&["EVAL", &body, "1", declared]);
    h.run(&["EVAL", &body, "1", declared]);
    assert_eq!(h.run(&["EXEC"]), Frame::Array(vec![int(1), int(2)]));
    assert_eq!(h.run(&["GET", other]), bulk("2"));
}

#[test]
fn read_only_forms_refuse_writes() {
    let mut h = Harness::new();
    let r = h.run(&["EVAL_RO", "return redis.call('SET', KEYS[1], 1)", "1", "k"]);
    assert!(
        matches!(&r, Frame::Error(e) if e.starts_with("ERR Write commands are not allowed from read-only scripts.")),
        "{r:?}"
    );
    let r = h.run(&["EVAL_RO", "#!lua\nreturn 1", "0"]);
    assert_eq!(
        r,
        err("ERR Can not execute a script with write flag using *_ro command.")
    );
    assert_eq!(
        h.run(&["EVAL_RO", "#!lua flags=no-writes\nreturn 1", "0"]),
        int(1)
    );
}

#[test]
fn functions_load_call_and_go() {
    let mut h = Harness::new();
    let code = "#!lua name=lib\nredis.register_function('incr_it', function(keys) return redis.call('INCR', keys[1]) end)\nredis.register_function{function_name='peek', callback=function(keys) return redis.call('GET', keys[1]) end, flags={'no-writes'}}";
    assert_eq!(h.run(&["FUNCTION", "LOAD", code]), bulk("lib"));
    assert_eq!(
        h.run(&["FUNCTION", "LOAD", code]),
        err("ERR Library 'lib' already exists")
    );
    assert_eq!(h.run(&["FCALL", "INCR_IT", "1", "k"]), int(1));
    assert_eq!(h.run(&["FCALL_RO", "peek", "1", "k"]), bulk("1"));
    assert_eq!(
        h.run(&["FCALL_RO", "incr_it", "1", "k"]),
        err("ERR Can not execute a script with write flag using *_ro command.")
    );
    assert_eq!(h.server.scripts.library_codes().len(), 1);
    assert_eq!(h.run(&["FUNCTION", "DELETE", "lib"]), ok());
    assert_eq!(
        h.run(&["FCALL", "incr_it", "1", "k"]),
        err("ERR Function not found")
    );
    assert_eq!(
        h.run(&["FUNCTION", "DELETE", "lib"]),
        err("ERR Library not found")
    );
}

#[test]
fn every_command_is_exercised() {
    // Table guardrail: the family's commands and the tests above and in tests/python.
    let tested = [
        "eval",
        "evalsha",
        "eval_ro",
        "evalsha_ro",
        "fcall",
        "fcall_ro",
        "script|debug",
        "script|exists",
        "script|flush",
        "script|help",
        "script|kill",
        "script|load",
        "function|delete",
        "function|dump",
        "function|flush",
        "function|help",
        "function|kill",
        "function|list",
        "function|load",
        "function|restore",
        "function|stats",
    ];
    let mut h = Harness::new();
    assert_eq!(
        h.run(&["SCRIPT", "LOAD", "return 7"]),
        bulk(&super::sha1_hex(b"return 7"))
    );
    let sha = super::sha1_hex(b"return 7");
    assert_eq!(h.run(&["EVALSHA", &sha, "0"]), int(7));
    assert_eq!(h.run(&["EVALSHA_RO", &sha.to_uppercase(), "0"]), int(7));
    assert_eq!(
        h.run(&["SCRIPT", "EXISTS", &sha, "nope"]),
        Frame::Array(vec![int(1), int(0)])
    );
    assert_eq!(h.run(&["SCRIPT", "DEBUG", "NO"]), ok());
    assert_eq!(h.run(&["SCRIPT", "FLUSH", "ASYNC"]), ok());
    assert_eq!(
        h.run(&["EVALSHA", &sha, "0"]),
        err("NOSCRIPT No matching script. Please use EVAL.")
    );
    assert_eq!(
        h.run(&["SCRIPT", "KILL"]),
        err("NOTBUSY No scripts in execution right now.")
    );
    assert!(matches!(h.run(&["SCRIPT", "HELP"]), Frame::Array(_)));
    assert!(matches!(h.run(&["FUNCTION", "HELP"]), Frame::Array(_)));
    assert!(matches!(
        h.run(&["FUNCTION", "STATS"]),
        Frame::Array(_) | Frame::Map(_)
    ));
    assert_eq!(h.run(&["FUNCTION", "FLUSH"]), ok());
    assert_eq!(h.run(&["FUNCTION", "LIST"]), Frame::Array(vec![]));
    let listed: Vec<String> = super::COMMANDS
        .iter()
        .flat_map(|spec| {
            if spec.subcommands.is_empty() {
                vec![spec.name.to_string()]
            } else {
                spec.subcommands
                    .iter()
                    .map(|s| format!("{}|{}", spec.name, s.name))
                    .collect()
            }
        })
        .collect();
    assert_eq!(listed, tested);
}
