//! Running a command that passed the generic checks: locking its shards (a plan, through
//! `exec.rs`'s `lock_plan`, one shard held for the log, or on demand), calling its handler,
//! and recording it for replay. Apart from `exec.rs`, whose checks decide whether a command
//! runs, not how.

use larder_resp::ReplyBuf;

use larder_engine::Db;

use crate::args::Args;
use crate::locks::{Held, Plan, Scope};
use crate::state::Server;
use crate::table::{flags, Resolved};

use super::{lock_plan, Cmd, ConnState};

/// Run a command that passed the checks: planned, or locking on demand.
#[inline]
pub(super) fn run_command(
    server: &Server,
    conn: &mut ConnState,
    argv: &[&[u8]],
    out: &mut ReplyBuf,
    resolved: Resolved,
    now_ms: u64,
) -> crate::error::Result<()> {
    // A blocking command runs with its keys' shards held by the executor, so that it
    // registers as a waiter before they are unlocked (see `blocking.rs`). While a consumer
    // records commands, a write holds its shards until its command record has joined its
    // changes' group.
    if needs_plan(&resolved.spec.keys, argv) {
        run_planned(server, conn, argv, out, resolved, now_ms)
    } else if resolved.spec.has(flags::BLOCKING)
        || (resolved.spec.has(flags::WRITE) && server.keyspace.feed().records_commands())
    {
        run_locked_one(server, conn, argv, out, resolved, now_ms)
    } else {
        call(server, conn, argv, out, resolved, now_ms, None)
    }
}

/// A command of one key that must hold its shard from before its handler runs (a blocking
/// command, or a write while commands are recorded): the shard locked first and held until
/// the command record has joined its changes' group and the group has committed, as
/// `run_planned` does for a wider plan, without the plan's allocations.
fn run_locked_one(
    server: &Server,
    conn: &mut ConnState,
    argv: &[&[u8]],
    out: &mut ReplyBuf,
    resolved: Resolved,
    now_ms: u64,
) -> crate::error::Result<()> {
    let keys = &resolved.spec.keys;
    if keys.scope != Scope::Keys || keys.key_count(argv.len()) != 1 {
        // No key (FLUSHDB-like scopes are planned above): nothing to hold.
        return run_planned(server, conn, argv, out, resolved, now_ms);
    }
    let db = conn.db;
    let (shard, _) = Db::route(argv[keys.first as usize]);
    let mut guard = server.keyspace.db(db).lock(shard);
    let group = server.keyspace.feed().group();
    let since = larder_engine::feed::data_changes();
    let r = {
        let held = Held::one(db, shard, &mut guard);
        call(server, conn, argv, out, resolved, now_ms, Some(&held))
    };
    record_command(server, conn, argv, resolved, since);
    // The group commits while the shard is still locked, then the lock goes.
    drop(group);
    drop(guard);
    r
}

/// Run a planned command: lock its scope, open its feed group, run, commit, unlock.
#[inline(never)]
fn run_planned(
    server: &Server,
    conn: &mut ConnState,
    argv: &[&[u8]],
    out: &mut ReplyBuf,
    resolved: Resolved,
    now_ms: u64,
) -> crate::error::Result<()> {
    let spec = resolved.spec;
    let mut plan = Plan::default();
    plan.add(&spec.keys, argv, conn.db);
    if plan.shards.len() > 1 {
        // Warm the caches for the keys' lookups before locking (the prefetch skips
        // locked shards, ours included).
        let keys = spec.keys.keys(argv);
        let n = keys.len().min(Db::PREFETCH_BATCH);
        server.keyspace.db(conn.db).prefetch(&keys[..n]);
    }
    let mut guards = lock_plan(plan, &server.keyspace);
    let group = server.keyspace.feed().group();
    let since = larder_engine::feed::data_changes();
    let r = {
        let held = Held::new(&mut guards);
        call(server, conn, argv, out, resolved, now_ms, Some(&held))
    };
    record_command(server, conn, argv, resolved, since);
    // The group commits while every shard is still locked, then the locks go.
    drop(group);
    drop(guards);
    r
}

/// After a command ran in an open feed group: record what to replay for the data changes it
/// made since `since` (its handler's [`Cmd::propagate`] commands, or its own request).
///
/// Only writes are recorded: a read's only changes are keys it found expired, which a log
/// replays from their `Expired` records.
pub(crate) fn record_command(
    server: &Server,
    conn: &mut ConnState,
    argv: &[&[u8]],
    resolved: Resolved,
    since: usize,
) {
    let feed = server.keyspace.feed();
    let replacements = std::mem::take(&mut conn.propagate);
    if !feed.records_commands() || !resolved.spec.has(flags::WRITE) {
        return;
    }
    if replacements.is_empty() && larder_engine::feed::data_changes() != since {
        feed.command(conn.db, since, larder_engine::Argv::new(argv));
    }
    for r in replacements {
        feed.command(conn.db, since, r);
    }
}

/// Whether the executor locks the command's shards before its handler runs: a command that
/// may touch more than one shard (several keys, or a wider scope). A command of one key
/// locks that key's shard itself, on demand.
#[inline]
fn needs_plan(keys: &crate::table::KeySpec, argv: &[&[u8]]) -> bool {
    match keys.scope {
        Scope::Keys => keys.first > 0 && keys.key_count(argv.len()) > 1,
        Scope::NumKeys { .. } | Scope::Db | Scope::All | Scope::OtherDb { .. } => true,
        Scope::WalkDb | Scope::Script { .. } => false,
        Scope::AfterWords { .. } => !keys.scope.option_keys(argv).is_empty(),
        Scope::Streams => true,
    }
}

/// Run a resolved command's handler (the checks have passed): what EXEC does for each queued
/// command, and `execute` for the one it was given.
#[inline]
pub(crate) fn call<'a>(
    server: &'a Server,
    conn: &'a mut ConnState,
    argv: &'a [&'a [u8]],
    out: &'a mut ReplyBuf,
    resolved: Resolved,
    now_ms: u64,
    held: Option<&'a Held<'a>>,
) -> crate::error::Result<()> {
    let mut cmd = Cmd {
        server,
        conn,
        args: Args::new(argv),
        out,
        now_ms,
        resolved,
        held,
    };
    if resolved.is_sub {
        cmd.args.skip(1);
    }
    (resolved.spec.handler)(&mut cmd)
}
