//! What the feed records for replay (`ChangeKind::Command`): each write's request, or what its
//! handler records instead (`Cmd::propagate`), after the changes it made, in the same group.

use std::sync::Arc;

use larder_engine::{Change, ChangeKind, Consumer, Interest};
use parking_lot::Mutex;

use crate::testing::Harness;

#[derive(Default)]
struct Collect(Mutex<Vec<Vec<Change>>>);

impl Consumer for Collect {
    fn committed(&self, _: u64, changes: &[Change]) {
        self.0.lock().push(changes.to_vec());
    }
}

/// Runs `argv` and returns the commands its groups recorded, as text.
fn recorded(h: &mut Harness, c: &Collect, argv: &[&str]) -> Vec<String> {
    c.0.lock().clear();
    h.run_raw(&argv.iter().map(|a| a.as_bytes()).collect::<Vec<_>>());
    c.0.lock()
        .iter()
        .flatten()
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
fn writes_record_a_deterministic_command() {
    let mut h = Harness::new();
    let c = Arc::new(Collect::default());
    h.server
        .keyspace
        .feed()
        .subscribe(Interest::COMMANDS, c.clone());
    let now = larder_engine::now_ms();
    let deadline = |cmds: &[String]| -> u64 {
        let last = cmds[0].rsplit(' ').next().unwrap_or_default();
        last.parse().unwrap_or(0)
    };
    assert_eq!(recorded(&mut h, &c, &["SET", "k", "v"]), ["SET k v"]);
    let set_ex = recorded(&mut h, &c, &["SET", "k", "v", "EX", "100"]);
    assert!(set_ex[0].starts_with("SET k v PXAT "), "{set_ex:?}");
    assert!(deadline(&set_ex).abs_diff(now + 100_000) < 5_000);
    let setex = recorded(&mut h, &c, &["SETEX", "k", "100", "v"]);
    assert!(setex[0].starts_with("SET k v PXAT "), "{setex:?}");
    let expire = recorded(&mut h, &c, &["EXPIRE", "k", "50"]);
    assert!(expire[0].starts_with("PEXPIREAT k "), "{expire:?}");
    assert!(deadline(&expire).abs_diff(now + 50_000) < 5_000);
    assert_eq!(recorded(&mut h, &c, &["EXPIRE", "k", "-1"]), ["DEL k"]);
    assert_eq!(
        recorded(&mut h, &c, &["INCRBYFLOAT", "f", "1.5"]),
        ["SET f 1.5 KEEPTTL"]
    );
    h.run(&["SET", "g", "x"]);
    assert_eq!(recorded(&mut h, &c, &["GETDEL", "g"]), ["DEL g"]);
    // Reads and writes that change nothing record nothing.
    assert!(recorded(&mut h, &c, &["GET", "f"]).is_empty());
    assert!(recorded(&mut h, &c, &["DEL", "nope"]).is_empty());
    assert!(recorded(&mut h, &c, &["SET", "f", "y", "NX"]).is_empty());
    // A transaction's commands, in order, each after its changes, in one group.
    h.run(&["MULTI"]);
    h.run(&["RPUSH", "l", "a"]);
    h.run(&["GET", "l"]);
    h.run(&["PEXPIRE", "l", "100000"]);
    c.0.lock().clear();
    h.run_raw(&[b"EXEC"]);
    let groups = c.0.lock().clone();
    assert_eq!(groups.len(), 1);
    let kinds: Vec<ChangeKind> = groups[0].iter().map(|ch| ch.kind).collect();
    assert_eq!(
        kinds,
        [
            ChangeKind::Written,
            ChangeKind::Command,
            ChangeKind::Written,
            ChangeKind::Command
        ]
    );
    assert_eq!(
        groups[0][1].argv.to_vecs(),
        [b"RPUSH".to_vec(), b"l".to_vec(), b"a".to_vec()]
    );
    assert_eq!(groups[0][3].argv.get(0), Some(&b"PEXPIREAT"[..]));
}
