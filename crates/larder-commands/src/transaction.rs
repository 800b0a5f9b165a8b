//! Transactions: MULTI EXEC DISCARD WATCH UNWATCH, with Redis 7.0 semantics.
//!
//! Between MULTI and EXEC the executor queues commands after the checks that Redis makes at
//! queue time (unknown command, arity, `no-multi` commands); a command rejected there makes
//! EXEC fail with EXECABORT. EXEC then plans the locks of every queued command (following
//! SELECT through the queue, and the watched keys), takes them in the global order, compares
//! each watched key's version with the one WATCH saw, runs the commands one after another with
//! those shards held, and commits their changes to the feed as one group before unlocking. So
//! no other client, on any thread or door, sees part of a transaction, and a watched key
//! changed by anything (a command, expiry, eviction, FLUSHDB, SWAPDB, a memcached write)
//! fails the EXEC. Runtime errors do not roll back: they are replies in EXEC's array.

use larder_engine::Db;

use crate::error::{Error, Result};
use crate::exec::{self, Cmd};
use crate::locks::{Held, Plan};
use crate::table::{flags::*, CommandSpec, Group, KeySpec, Resolved, Scope};

/// A transaction being queued.
#[derive(Default, Debug)]
pub struct Multi {
    /// Queued requests, whole (name first).
    pub queued: Vec<Vec<Vec<u8>>>,
    /// Set when a command was rejected while queueing: EXEC then aborts.
    pub dirty: bool,
}

/// A watched key and the version it had when WATCH ran (0: absent). For an absent key, also
/// its shard's stamp then: a key created and removed again before EXEC leaves the version
/// as it was, and only the shard's memory of removals tells ([`Shard::removed_since`]).
///
/// [`Shard::removed_since`]: larder_engine::Shard::removed_since
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Watched {
    pub db: usize,
    pub key: Vec<u8>,
    pub version: u64,
    pub stamp: u64,
}

impl Watched {
    /// Whether the key changed since WATCH, seen from its shard (held by EXEC).
    fn changed(&self, shard: &larder_engine::Shard, hash: u64, now_ms: u64) -> bool {
        let version = live_version(shard, &self.key, hash, now_ms);
        version != self.version || (version == 0 && shard.removed_since(hash, self.stamp))
    }
}

/// Most commands one transaction may queue (each holds its arguments until EXEC).
pub const MAX_QUEUED: usize = 1 << 20;

const fn cmd(
    name: &'static str,
    arity: i32,
    flags: u32,
    keys: KeySpec,
    summary: &'static str,
    since: &'static str,
    handler: crate::table::Handler,
) -> CommandSpec {
    CommandSpec::new(
        name,
        arity,
        flags,
        keys,
        Group::Transactions,
        summary,
        since,
        handler,
    )
}

/// The transaction family's table (Redis 7.0's COMMAND INFO).
#[rustfmt::skip]
pub static COMMANDS: &[CommandSpec] = &[
    cmd("multi", 1, NOSCRIPT | LOADING | STALE | FAST | ALLOW_BUSY, KeySpec::NONE, "Mark the start of a transaction block", "1.2.0", multi),
    cmd("exec", 1, NOSCRIPT | LOADING | STALE | SKIP_SLOWLOG, KeySpec::NONE, "Execute all commands issued after MULTI", "1.2.0", exec),
    cmd("discard", 1, NOSCRIPT | LOADING | STALE | FAST | ALLOW_BUSY, KeySpec::NONE, "Discard all commands issued after MULTI", "2.0.0", discard),
    cmd("watch", -2, NOSCRIPT | LOADING | STALE | FAST | ALLOW_BUSY, KeySpec::ALL.with_scope(Scope::Keys), "Watch the given keys to determine execution of the MULTI/EXEC block", "2.2.0", watch),
    cmd("unwatch", 1, NOSCRIPT | LOADING | STALE | FAST | ALLOW_BUSY, KeySpec::NONE, "Forget about all watched keys", "2.2.0", unwatch),
];

/// Whether a command runs at once inside MULTI instead of being queued.
pub fn runs_inside_multi(full_name: &str) -> bool {
    matches!(
        full_name,
        "exec" | "discard" | "multi" | "watch" | "quit" | "reset"
    )
}

const NESTED: &str = "ERR MULTI calls can not be nested";
const EXEC_WITHOUT_MULTI: &str = "ERR EXEC without MULTI";
const DISCARD_WITHOUT_MULTI: &str = "ERR DISCARD without MULTI";
const WATCH_INSIDE_MULTI: &str = "ERR WATCH inside MULTI is not allowed";
pub const EXECABORT: &str = "EXECABORT Transaction discarded because of previous errors.";
pub const NOT_IN_MULTI: &str = "ERR Command not allowed inside a transaction";

/// MULTI
fn multi(c: &mut Cmd<'_>) -> Result<()> {
    if c.conn.multi.is_some() {
        return Err(Error::Static(NESTED));
    }
    c.conn.multi = Some(Multi::default());
    c.out.simple("OK");
    Ok(())
}

/// DISCARD
fn discard(c: &mut Cmd<'_>) -> Result<()> {
    if c.conn.multi.take().is_none() {
        return Err(Error::Static(DISCARD_WITHOUT_MULTI));
    }
    c.conn.watched.clear();
    c.out.simple("OK");
    Ok(())
}

/// UNWATCH
fn unwatch(c: &mut Cmd<'_>) -> Result<()> {
    c.conn.watched.clear();
    c.out.simple("OK");
    Ok(())
}

/// WATCH key [key ...]: remember each key's version (0 when absent or expired).
fn watch(c: &mut Cmd<'_>) -> Result<()> {
    if c.conn.multi.is_some() {
        return Err(Error::Static(WATCH_INSIDE_MULTI));
    }
    let db = c.conn.db;
    for key in c.args.rest() {
        if c.conn.watched.iter().any(|w| w.db == db && w.key == *key) {
            continue;
        }
        // A key past its deadline is reclaimed now, so that its removal is not mistaken for
        // a change made after WATCH.
        let (mut shard, hash) = c.shard_of(key);
        let version = shard
            .find(key, hash, c.now_ms)
            .map_or(0, |slot| shard.entry(slot).version());
        let stamp = shard.stamp();
        drop(shard);
        c.conn.watched.push(Watched {
            db,
            key: key.to_vec(),
            version,
            stamp,
        });
    }
    c.out.simple("OK");
    Ok(())
}

/// The version of `key` if it is live at `now_ms`, else 0. Reads without expiring anything.
fn live_version(shard: &larder_engine::Shard, key: &[u8], hash: u64, now_ms: u64) -> u64 {
    shard
        .find_raw(key, hash)
        .map(|slot| shard.entry(slot))
        .filter(|e| !e.is_expired(now_ms))
        .map_or(0, |e| e.version())
}

/// EXEC
fn exec(c: &mut Cmd<'_>) -> Result<()> {
    let Some(multi) = c.conn.multi.take() else {
        return Err(Error::Static(EXEC_WITHOUT_MULTI));
    };
    let watched = std::mem::take(&mut c.conn.watched);
    if multi.dirty {
        return Err(Error::Static(EXECABORT));
    }
    let server = c.server;
    let requests: Vec<Vec<&[u8]>> = multi
        .queued
        .iter()
        .map(|r| r.iter().map(Vec::as_slice).collect())
        .collect();
    // Plan every queued command's shards, following SELECT through the queue.
    let mut plan = Plan::default();
    let mut resolved = Vec::with_capacity(requests.len());
    let mut db = c.conn.db;
    for argv in &requests {
        let r = server.registry.resolve(argv)?;
        plan.add(&r.spec.keys, argv, db);
        if r.full_name == "select" {
            // Parsed as SELECT parses it: a SELECT that will fail ("01", "+1") leaves the
            // database as it is, and so must the plan, or the commands after it would lock
            // shards of the database they really use on demand, out of the global order.
            if let Some(d) = argv
                .get(1)
                .and_then(|a| crate::locks::db_arg(a))
                .filter(|&d| d < server.keyspace.db_count())
            {
                db = d;
            }
        }
        resolved.push(r);
    }
    for w in &watched {
        plan.shards.push((w.db, Db::route(&w.key).0));
    }
    let mut guards = exec::lock_plan(plan, &server.keyspace);
    for w in &watched {
        let (shard, hash) = Db::route(&w.key);
        if w.changed(guards.get(w.db, shard), hash, c.now_ms) {
            c.out.null_array();
            return Ok(());
        }
    }
    let group = server.keyspace.feed().group();
    c.out.array(requests.len());
    c.conn.in_exec = true;
    for (argv, r) in requests.iter().zip(resolved) {
        // Permissions are checked again at EXEC, in case the rules changed since queuing.
        if let Err(e) = acl_recheck(c, argv, r) {
            exec::reply_error(server, c.conn, c.out, &e);
            continue;
        }
        let started_us = larder_engine::now_us();
        let since = larder_engine::feed::data_changes();
        let result = {
            // A view of the held shards per command: a handler's borrows end with it.
            let result = if crate::script::runs_script(&r) {
                // A script takes the shards as they are, to lock nothing more while it runs.
                crate::script::run_queued(server, c.conn, argv, c.out, r, c.now_ms, &mut guards)
            } else {
                let held = Held::new(&mut guards);
                exec::call(server, c.conn, argv, c.out, r, c.now_ms, Some(&held))
            };
            // A tracking client's reads are remembered while their shards are held.
            if c.conn.handle.tracking.on() {
                crate::tracking::remember(server, c.conn, argv, r);
            }
            result
        };
        exec::record_command(server, c.conn, argv, r, since);
        let ended_us = larder_engine::now_us();
        let elapsed_us = ended_us.saturating_sub(started_us);
        exec::account(server, c.conn, c.out, r, result, elapsed_us);
        if server.monitors.active() {
            crate::monitor::feed_command(server, c.conn, argv, r.spec.flags, ended_us);
        }
    }
    c.conn.in_exec = false;
    // Every change of the transaction commits as one group, with every shard still locked.
    drop(group);
    drop(guards);
    Ok(())
}

/// Redis's ACL check of each queued command at EXEC (`execCommand`).
fn acl_recheck(c: &Cmd<'_>, argv: &[&[u8]], r: Resolved) -> Result<()> {
    if c.conn.user.unrestricted() {
        return Ok(());
    }
    let Err(denied) = c.conn.user.check(&r, argv) else {
        return Ok(());
    };
    crate::acl::log_denied(
        c.server,
        c.conn,
        &denied,
        r.full_name,
        crate::acl::Context::Multi,
    );
    let reason = match denied {
        crate::acl::Denied::Command => "no permission to execute the command or subcommand",
        crate::acl::Denied::Key(_) => "no permission to touch the specified keys",
        crate::acl::Denied::Channel(_) => {
            "no permission to access one of the channels used as arguments"
        }
    };
    Err(Error::Owned(format!(
        "NOPERM ACLs rules changed between the moment the transaction was accumulated and the EXEC call. This command is no longer allowed for the following reason: {reason}"
    )))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use larder_engine::{Change, ChangeKind, Consumer, Interest};
    use larder_resp::Frame;
    use parking_lot::Mutex;

    use crate::testing::*;

    fn simple(s: &str) -> Frame {
        Frame::Simple(s.to_string())
    }

    #[derive(Default)]
    struct Collect(Mutex<Vec<Vec<Change>>>);

    impl Consumer for Collect {
        fn committed(&self, _: u64, changes: &[Change]) {
            self.0.lock().push(changes.to_vec());
        }
    }

    #[test]
    fn exec_runs_the_queue_and_commits_one_group() {
        let mut h = Harness::new();
        let c = Arc::new(Collect::default());
        h.server
            .keyspace
            .feed()
            .subscribe(Interest::CHANGES, c.clone());
        assert_eq!(h.run(&["MULTI"]), ok());
        assert_eq!(h.run(&["SET", "a", "1"]), simple("QUEUED"));
        assert_eq!(h.run(&["SELECT", "1"]), simple("QUEUED"));
        assert_eq!(h.run(&["SET", "b", "2"]), simple("QUEUED"));
        assert_eq!(h.run(&["LPUSH", "b", "x"]), simple("QUEUED"));
        assert_eq!(h.run(&["DBSIZE"]), simple("QUEUED"));
        let Frame::Array(replies) = h.run(&["EXEC"]) else {
            panic!("EXEC's reply is an array");
        };
        assert_eq!(replies.len(), 5);
        assert_eq!(replies[0], ok());
        assert!(matches!(&replies[3], Frame::Error(e) if e.starts_with("WRONGTYPE")));
        assert_eq!(replies[4], int(1));
        let groups = c.0.lock().clone();
        assert_eq!(groups.len(), 1, "{groups:?}");
        let dbs: Vec<(ChangeKind, u32)> = groups[0].iter().map(|c| (c.kind, c.db)).collect();
        assert_eq!(
            dbs,
            vec![(ChangeKind::Written, 0), (ChangeKind::Written, 1)]
        );
    }

    #[test]
    fn watch_fails_exec_after_any_change() {
        let mut h = Harness::new();
        let mut other = Harness::connect(Arc::clone(&h.server));
        h.run(&["SET", "k", "1"]);
        h.run(&["WATCH", "k", "missing"]);
        other.run(&["SET", "k", "2"]);
        h.run(&["MULTI"]);
        h.run(&["SET", "k", "3"]);
        assert_eq!(h.run(&["EXEC"]), Frame::Null);
        assert_eq!(h.run(&["GET", "k"]), bulk("2"));
        // Unchanged keys let EXEC run; EXEC ends the watch.
        h.run(&["WATCH", "k"]);
        h.run(&["MULTI"]);
        h.run(&["SET", "k", "3"]);
        assert_eq!(h.run(&["EXEC"]), Frame::Array(vec![ok()]));
        assert!(h.conn.watched.is_empty());
        // A flush counts as a change of a watched key that existed.
        h.run(&["WATCH", "k"]);
        other.run(&["FLUSHALL"]);
        h.run(&["MULTI"]);
        h.run(&["PING"]);
        assert_eq!(h.run(&["EXEC"]), Frame::Null);
    }

    /// A key absent at WATCH that is created and removed again before EXEC fails the EXEC;
    /// removals of other keys, and the reclaiming of a key already expired at WATCH, do not.
    #[test]
    fn watch_sees_a_missing_key_come_and_go() {
        let mut h = Harness::new();
        let mut other = Harness::connect(Arc::clone(&h.server));
        h.run(&["WATCH", "k"]);
        other.run(&["SET", "k", "1"]);
        other.run(&["DEL", "k"]);
        h.run(&["MULTI"]);
        h.run(&["SET", "k", "mine"]);
        assert_eq!(h.run(&["EXEC"]), Frame::Null);
        // Other keys come and go (some in the same shard): EXEC runs.
        h.run(&["WATCH", "k"]);
        for i in 0..500 {
            let key = format!("other:{i}");
            other.run(&["SET", &key, "1"]);
            other.run(&["DEL", &key]);
        }
        h.run(&["MULTI"]);
        h.run(&["SET", "k", "mine"]);
        assert_eq!(h.run(&["EXEC"]), Frame::Array(vec![ok()]));
        // A key past its deadline when WATCH runs counts as absent then.
        h.run(&["SET", "e", "v", "PX", "1"]);
        std::thread::sleep(std::time::Duration::from_millis(5));
        h.run(&["WATCH", "e"]);
        h.run(&["MULTI"]);
        h.run(&["GET", "e"]);
        assert_eq!(h.run(&["EXEC"]), Frame::Array(vec![Frame::Null]));
    }

    #[test]
    fn queue_time_errors_abort_exec() {
        let mut h = Harness::new();
        h.run(&["MULTI"]);
        assert!(matches!(h.run(&["NOPE"]), Frame::Error(_)));
        h.run(&["SET", "a", "1"]);
        assert_eq!(h.run(&["EXEC"]), err(super::EXECABORT));
        assert_eq!(h.run(&["GET", "a"]), Frame::Null);
        assert_eq!(h.run(&["EXEC"]), err("ERR EXEC without MULTI"));
        h.run(&["MULTI"]);
        assert_eq!(h.run(&["MULTI"]), err("ERR MULTI calls can not be nested"));
        assert_eq!(
            h.run(&["SHUTDOWN"]),
            err("ERR Command not allowed inside a transaction")
        );
        assert_eq!(h.run(&["EXEC"]), err(super::EXECABORT));
    }
}

#[cfg(test)]
mod regression_tests {
    use larder_resp::Frame;

    use crate::testing::*;

    fn simple(s: &str) -> Frame {
        Frame::Simple(s.into())
    }

    /// A SELECT that fails inside EXEC ("01", "+1": not integers to Redis) leaves the database
    /// as it was, and the lock plan must follow it there: before, the plan moved to the
    /// database the argument named, and the commands after it locked their real shards on
    /// demand, out of the global order (a deadlock against FLUSHALL; a debug assertion here).
    #[test]
    fn exec_plans_select_as_select_parses_it() {
        let mut h = Harness::new();
        for bad in ["01", "+1"] {
            assert_eq!(h.run(&["MULTI"]), ok());
            assert_eq!(h.run(&["SELECT", bad]), simple("QUEUED"));
            assert_eq!(h.run(&["SET", "k", bad]), simple("QUEUED"));
            assert_eq!(h.run(&["INCR", "n"]), simple("QUEUED"));
            let Frame::Array(reply) = h.run(&["EXEC"]) else {
                panic!("EXEC's reply is an array")
            };
            assert_eq!(reply[0], err("ERR value is not an integer or out of range"));
            assert_eq!(reply[1..], [ok(), int(if bad == "01" { 1 } else { 2 })]);
            assert_eq!(h.conn.db, 0);
            assert_eq!(h.run(&["GET", "k"]), bulk(bad));
        }
        assert_eq!(h.server.keyspace.db(1).len(), 0);
        // A good SELECT moves the plan and the connection.
        h.run(&["MULTI"]);
        h.run(&["SELECT", "1"]);
        h.run(&["SET", "k", "one"]);
        assert_eq!(h.run(&["EXEC"]), Frame::Array(vec![ok(), ok()]));
        assert_eq!(h.conn.db, 1);
        assert_eq!(h.run(&["GET", "k"]), bulk("one"));
    }

    /// RESET inside MULTI ends the transaction and forgets watched keys, as in Redis.
    #[test]
    fn reset_discards_the_transaction_and_unwatches() {
        let mut h = Harness::new();
        let mut other = Harness::connect(h.server.clone());
        h.run(&["SET", "w", "1"]);
        h.run(&["WATCH", "w"]);
        h.run(&["MULTI"]);
        assert_eq!(h.run(&["SET", "a", "1"]), simple("QUEUED"));
        assert_eq!(h.run(&["RESET"]), simple("RESET"));
        assert_eq!(h.run(&["EXEC"]), err("ERR EXEC without MULTI"));
        assert_eq!(h.run(&["EXISTS", "a"]), int(0));
        other.run(&["SET", "w", "2"]);
        h.run(&["MULTI"]);
        h.run(&["GET", "w"]);
        assert_eq!(h.run(&["EXEC"]), Frame::Array(vec![bulk("2")]));
    }
}
