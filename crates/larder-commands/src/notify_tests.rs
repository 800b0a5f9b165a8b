//! Keyspace notifications across the command families: for each write command and each of
//! its conditional cases, the exact events, classes, databases and keys it raises, in order.
//! The expectations were recorded from redis-server 7.0.15 (`notify-keyspace-events KEAn`,
//! one `__keyspace@*__:*` subscriber, classes confirmed by enabling one class at a time).

use crate::testing::{Harness, Notices};

/// (case, setup commands separated by `;`, the command, what it raises). Arguments are
/// separated by spaces; `""` is an empty argument. Each event is `class:event@db:key`.
#[rustfmt::skip]
const CASES: &[(&str, &str, &str, &str)] = &[
    ("set_new", "", "SET k v", "n:new@0:k $:set@0:k"),
    ("set_exists", "SET k a", "SET k v", "$:set@0:k"),
    ("set_ex", "SET k a", "SET k v EX 100", "$:set@0:k g:expire@0:k"),
    ("set_ex_new", "", "SET k v EX 100", "n:new@0:k $:set@0:k g:expire@0:k"),
    ("set_px_past", "", "SET k v PXAT 1", "n:new@0:k $:set@0:k g:expire@0:k"),
    ("set_keepttl", "SET k a EX 100", "SET k v KEEPTTL", "$:set@0:k"),
    ("set_nx_hit", "SET k a", "SET k v NX", ""),
    ("set_nx_get_hit", "SET k a", "SET k v NX GET", ""),
    ("set_xx_miss", "", "SET k v XX", ""),
    ("set_get_new", "", "SET k v GET", "n:new@0:k $:set@0:k"),
    ("set_get_wrongtype", "LPUSH k a", "SET k v GET", ""),
    ("set_over_list", "LPUSH k a", "SET k v", "$:set@0:k"),
    ("setnx_new", "", "SETNX k v", "n:new@0:k $:set@0:k"),
    ("setnx_hit", "SET k a", "SETNX k v", ""),
    ("setex_new", "", "SETEX k 100 v", "n:new@0:k $:set@0:k g:expire@0:k"),
    ("psetex_old", "SET k a", "PSETEX k 100000 v", "$:set@0:k g:expire@0:k"),
    ("getset_new", "", "GETSET k v", "n:new@0:k $:set@0:k"),
    ("getset_old", "SET k a EX 100", "GETSET k v", "$:set@0:k"),
    ("getdel_hit", "SET k a", "GETDEL k", "g:del@0:k"),
    ("getdel_miss", "", "GETDEL k", ""),
    ("getex_ex", "SET k a", "GETEX k EX 100", "g:expire@0:k"),
    ("getex_past", "SET k a", "GETEX k PXAT 1", "g:del@0:k"),
    ("getex_persist", "SET k a EX 100", "GETEX k PERSIST", "g:persist@0:k"),
    ("getex_persist_nottl", "SET k a", "GETEX k PERSIST", ""),
    ("getex_plain", "SET k a", "GETEX k", ""),
    ("mset", "SET b 1", "MSET a 1 b 2 a 3", "n:new@0:a $:set@0:a $:set@0:b $:set@0:a"),
    ("msetnx_ok", "", "MSETNX a 1 b 2", "n:new@0:a $:set@0:a n:new@0:b $:set@0:b"),
    ("msetnx_dup", "", "MSETNX a 1 a 2", "n:new@0:a $:set@0:a $:set@0:a"),
    ("msetnx_fail", "SET b 1", "MSETNX a 1 b 2", ""),
    ("append_new", "", "APPEND k v", "n:new@0:k $:append@0:k"),
    ("append_old", "SET k a", "APPEND k v", "$:append@0:k"),
    ("append_empty_new", "", "APPEND k \"\"", "n:new@0:k $:append@0:k"),
    ("incr_new", "", "INCR k", "n:new@0:k $:incrby@0:k"),
    ("incr_old", "SET k 1", "INCR k", "$:incrby@0:k"),
    ("decr_old", "SET k 1", "DECR k", "$:incrby@0:k"),
    ("incrby_old", "SET k 1", "INCRBY k 5", "$:incrby@0:k"),
    ("decrby_new", "", "DECRBY k 5", "n:new@0:k $:incrby@0:k"),
    ("incr_err", "SET k a", "INCR k", ""),
    ("incrbyfloat_new", "", "INCRBYFLOAT k 1.5", "n:new@0:k $:incrbyfloat@0:k"),
    ("incrbyfloat_old", "SET k 1", "INCRBYFLOAT k 1.5", "$:incrbyfloat@0:k"),
    ("setrange_new", "", "SETRANGE k 2 v", "n:new@0:k $:setrange@0:k"),
    ("setrange_new_empty", "", "SETRANGE k 2 \"\"", ""),
    ("setrange_old_empty", "SET k a", "SETRANGE k 2 \"\"", ""),
    ("setrange_old", "SET k abc", "SETRANGE k 1 v", "$:setrange@0:k"),
    ("del", "SET a 1;SET b 1", "DEL a b c a", "g:del@0:a g:del@0:b"),
    ("unlink", "SET a 1", "UNLINK a b", "g:del@0:a"),
    ("rename", "SET a 1", "RENAME a b", "n:new@0:b g:rename_from@0:a g:rename_to@0:b"),
    ("rename_over", "SET a 1;SET b 2", "RENAME a b", "n:new@0:b g:rename_from@0:a g:rename_to@0:b"),
    ("rename_same", "SET a 1", "RENAME a a", ""),
    ("rename_ttl", "SET a 1 EX 100", "RENAME a b", "n:new@0:b g:rename_from@0:a g:rename_to@0:b"),
    ("renamenx_ok", "SET a 1", "RENAMENX a b", "n:new@0:b g:rename_from@0:a g:rename_to@0:b"),
    ("renamenx_fail", "SET a 1;SET b 2", "RENAMENX a b", ""),
    ("copy", "SET a 1", "COPY a b", "n:new@0:b g:copy_to@0:b"),
    ("copy_replace", "SET a 1;SET b 2", "COPY a b REPLACE", "n:new@0:b g:copy_to@0:b"),
    ("copy_fail", "SET a 1;SET b 2", "COPY a b", ""),
    ("copy_db", "SET a 1", "COPY a b DB 3", "n:new@3:b g:copy_to@3:b"),
    ("copy_ttl", "SET a 1 EX 100", "COPY a b", "n:new@0:b g:copy_to@0:b"),
    ("move", "SET a 1", "MOVE a 2", "n:new@2:a g:move_from@0:a g:move_to@2:a"),
    ("move_fail", "SET a 1;SELECT 2;SET a 2;SELECT 0", "MOVE a 2", ""),
    ("expire", "SET a 1", "EXPIRE a 100", "g:expire@0:a"),
    ("expire_past", "SET a 1", "EXPIRE a -1", "g:del@0:a"),
    ("expireat_past", "SET a 1", "EXPIREAT a 1", "g:del@0:a"),
    ("pexpire", "SET a 1", "PEXPIRE a 100000", "g:expire@0:a"),
    ("pexpireat", "SET a 1", "PEXPIREAT a 99999999999999", "g:expire@0:a"),
    ("expire_nx_fail", "SET a 1 EX 100", "EXPIRE a 200 NX", ""),
    ("expire_gt_past", "SET a 1", "EXPIRE a -1 GT", ""),
    ("expire_lt_past", "SET a 1", "EXPIRE a -1 LT", "g:del@0:a"),
    ("expire_xx_past", "SET a 1", "EXPIRE a -1 XX", ""),
    ("expire_miss", "", "EXPIRE a 100", ""),
    ("persist", "SET a 1 EX 100", "PERSIST a", "g:persist@0:a"),
    ("persist_no", "SET a 1", "PERSIST a", ""),
    ("flushdb", "SET a 1", "FLUSHDB", ""),
    ("flushall", "SET a 1", "FLUSHALL", ""),
    ("swapdb", "SET a 1", "SWAPDB 0 1", ""),
    ("lpush_new", "", "LPUSH l a b", "n:new@0:l l:lpush@0:l"),
    ("rpush_old", "RPUSH l a", "RPUSH l b", "l:rpush@0:l"),
    ("lpushx_miss", "", "LPUSHX l a", ""),
    ("lpushx_hit", "RPUSH l a", "LPUSHX l b", "l:lpush@0:l"),
    ("rpushx_hit", "RPUSH l a", "RPUSHX l b", "l:rpush@0:l"),
    ("lpop", "RPUSH l a b", "LPOP l", "l:lpop@0:l"),
    ("lpop_last", "RPUSH l a", "LPOP l", "l:lpop@0:l g:del@0:l"),
    ("rpop_count_all", "RPUSH l a b", "RPOP l 5", "l:rpop@0:l g:del@0:l"),
    ("rpop_count", "RPUSH l a b c", "RPOP l 2", "l:rpop@0:l"),
    ("lpop_count0", "RPUSH l a b", "LPOP l 0", ""),
    ("lpop_miss", "", "LPOP l", ""),
    ("lset", "RPUSH l a b", "LSET l 0 x", "l:lset@0:l"),
    ("lrem", "RPUSH l a b a", "LREM l 0 a", "l:lrem@0:l"),
    ("lrem_all", "RPUSH l a a", "LREM l 0 a", "l:lrem@0:l g:del@0:l"),
    ("lrem_none", "RPUSH l a a", "LREM l 0 z", ""),
    ("ltrim", "RPUSH l a b c", "LTRIM l 0 1", "l:ltrim@0:l"),
    ("ltrim_noop", "RPUSH l a b c", "LTRIM l 0 -1", "l:ltrim@0:l"),
    ("ltrim_all", "RPUSH l a b c", "LTRIM l 5 10", "l:ltrim@0:l g:del@0:l"),
    ("linsert", "RPUSH l a b", "LINSERT l BEFORE b x", "l:linsert@0:l"),
    ("linsert_nopivot", "RPUSH l a b", "LINSERT l BEFORE z x", ""),
    ("linsert_miss", "", "LINSERT l BEFORE z x", ""),
];

fn argv(line: &str) -> Vec<&str> {
    line.split_whitespace()
        .map(|a| if a == "\"\"" { "" } else { a })
        .collect()
}

#[test]
fn every_write_raises_redis_events() {
    let mut h = Harness::new();
    let notices = Notices::subscribe(h.server.keyspace.feed());
    let mut failures = Vec::new();
    for &(case, setup, cmd, want) in CASES {
        h.run(&["FLUSHALL"]);
        h.run(&["SELECT", "0"]);
        for line in setup.split(';').filter(|l| !l.is_empty()) {
            h.run(&argv(line));
        }
        notices.take();
        h.run(&argv(cmd));
        let got = notices.take().join(" ");
        if got != want {
            failures.push(format!("{case}: {cmd}\n  want {want}\n  got  {got}"));
        }
    }
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}

#[test]
fn flushes_raise_nothing() {
    let mut h = Harness::new();
    let notices = Notices::subscribe(h.server.keyspace.feed());
    h.run(&["SET", "a", "1"]);
    notices.take();
    for cmd in [&["FLUSHDB"][..], &["FLUSHALL"], &["SWAPDB", "0", "1"]] {
        h.run(&["SET", "a", "1"]);
        notices.take();
        h.run(cmd);
        assert_eq!(notices.take(), Vec::<String>::new(), "{cmd:?}");
    }
}

#[test]
fn events_inside_exec_and_other_databases() {
    let mut h = Harness::new();
    let notices = Notices::subscribe(h.server.keyspace.feed());
    h.run(&["SELECT", "5"]);
    h.run(&["MULTI"]);
    h.run(&["SET", "k", "v"]);
    h.run(&["RPUSH", "l", "a"]);
    h.run(&["LPOP", "l"]);
    h.run(&["EXEC"]);
    assert_eq!(
        notices.take(),
        [
            "n:new@5:k",
            "$:set@5:k",
            "n:new@5:l",
            "l:rpush@5:l",
            "l:lpop@5:l",
            "g:del@5:l"
        ]
    );
}

#[test]
fn nothing_recorded_when_classes_are_off() {
    let mut h = Harness::new();
    let notices = Notices::subscribe(h.server.keyspace.feed());
    h.server
        .keyspace
        .feed()
        .set_notice_classes(larder_engine::feed::class::LIST);
    h.run(&["SET", "k", "v"]);
    h.run(&["LPUSH", "l", "a"]);
    assert_eq!(notices.take(), ["l:lpush@0:l"]);
}
