//! Running one command: the generic checks in a fixed order, then the handler, then stats.
//!
//! The handler's view of a command is in `exec/cmd.rs`, locking and calling it in
//! `exec/run.rs`, and counting it afterwards in `exec/account.rs`.

mod account;
mod cmd;
mod run;

use std::sync::atomic::Ordering;
use std::sync::Arc;

use larder_engine::{DbGuards, SHARDS_PER_DB};
use larder_resp::{Protocol, ReplyBuf};

use crate::config::Param;
use crate::error::{self, Error};
use crate::locks::Plan;
use crate::state::{bump, ClientHandle, Server};
use crate::table::{flags, Resolved};
use crate::transaction::{Multi, Watched};

pub(crate) use account::account;
pub use account::reply_error;
use account::slowlog_maybe;
pub use cmd::Cmd;
use run::run_command;
pub(crate) use run::{call, record_command};

/// CLIENT REPLY mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReplyMode {
    On,
    Off,
    /// Set by CLIENT REPLY SKIP: skip the reply of the next command.
    SkipNext,
    /// Skipping the reply of the command now running (a `SkipNext` carried over).
    Skip,
}

/// Per-connection state that commands read and change.
pub struct ConnState {
    pub id: u64,
    pub db: usize,
    pub authenticated: bool,
    /// The ACL user the connection runs as (the default user until AUTH), and the
    /// `Acl::generation` it was fetched at.
    pub user: Arc<crate::acl::User>,
    pub acl_generation: u64,
    pub reply_mode: ReplyMode,
    /// Index of the worker thread that owns the connection (stats shard).
    pub worker: usize,
    pub handle: Arc<ClientHandle>,
    /// Close the connection once pending replies are written (QUIT, protocol errors, KILL).
    pub close_after_reply: bool,
    /// The buffer holding the running command's last argument, when the connection read a
    /// large one into a buffer of its own: a command that stores that argument whole takes
    /// the buffer ([`Cmd::adopt`]) instead of copying it. Set for one command only.
    pub owned_arg: Option<Arc<Vec<u8>>>,
    /// The registry index of the last command run, tried first when resolving the next
    /// (`Registry::top_hinted`).
    pub last_top: usize,
    /// Set by the network layer while it runs a batch of pipelined requests: each command
    /// then records when it ended in `clock_us`, and the next takes that as its start
    /// instead of reading the clock again (one clock read per command, not two: the read
    /// shows in a pipelined GET's profile). The layer clears both when the batch ends.
    pub batching: bool,
    /// When the previous command of this batch ended (Unix µs); see `batching`.
    pub clock_us: Option<u64>,
    /// When the running command started (Unix µs), set by [`execute`] for the command it
    /// runs: a script takes it as its start instead of reading the clock again.
    pub started_us: Option<u64>,
    /// Commands queued since MULTI; `None` outside a transaction.
    pub multi: Option<Multi>,
    /// Keys WATCHed, with the versions they had then.
    pub watched: Vec<Watched>,
    /// Pub/sub subscriptions.
    pub subs: crate::pubsub::Subscriptions,
    /// What the running command's handler said to record for replay instead of its own
    /// request ([`Cmd::propagate`]); empty: the request itself.
    pub propagate: Vec<larder_engine::Argv>,
    /// In MONITOR mode (until RESET or close).
    pub monitor: bool,
    /// The deadline (Unix ms, 0 for none) of the blocking command this connection is blocked
    /// on; the network layer runs that request again when woken or at the deadline.
    pub blocked: Option<u64>,
    /// Set by the running command when it blocks (`blocking::wait`).
    pub block_now: bool,
    /// The IDs a blocked XREAD waits past, resolved (`$` as the stream's last ID) when it
    /// first blocked: its retries read past these, as Redis remembers them.
    pub xread_ids: Vec<larder_engine::stream::StreamId>,
    /// EXEC is running this connection's queued commands (blocking commands do not block).
    pub in_exec: bool,
    /// The connection replays the log at start: it runs while the server is loading, and
    /// is not held by CLIENT PAUSE.
    pub loader: bool,
}

impl ConnState {
    /// State for a new connection.
    pub fn new(server: &Server, handle: Arc<ClientHandle>, worker: usize) -> ConnState {
        ConnState {
            id: handle.id,
            db: 0,
            authenticated: !server.acl.auth_required(),
            user: server.acl.default_user(),
            acl_generation: server.acl.generation(),
            reply_mode: ReplyMode::On,
            worker,
            handle,
            close_after_reply: false,
            owned_arg: None,
            last_top: usize::MAX,
            batching: false,
            clock_us: None,
            started_us: None,
            multi: None,
            watched: Vec::new(),
            subs: crate::pubsub::Subscriptions::default(),
            propagate: Vec::new(),
            monitor: false,
            blocked: None,
            block_now: false,
            xread_ids: Vec::new(),
            in_exec: false,
            loader: false,
        }
    }
}

/// What the network layer must do after a command.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Go on with the next command.
    Continue,
    /// The command was not run because clients are paused; keep it queued and retry at
    /// `until_ms` (or earlier, on CLIENT UNPAUSE).
    Paused { until_ms: u64 },
    /// A blocking command found nothing and waits (see `blocking.rs`): keep the request
    /// unconsumed, read no more requests, and run it again when the client is woken
    /// (`Mailbox::unblock`) or at `until_ms` (0: no deadline).
    Blocked { until_ms: u64 },
}

/// The connection's user, fetched again by name when any user changed since it was last
/// (`Acl::generation`). A user deleted meanwhile closes the connection, as Redis
/// disconnects its clients (`acl::disconnect_users` does so at once; this catches a
/// command already on its way).
#[inline]
pub fn refresh_user(server: &Server, conn: &mut ConnState) -> bool {
    let generation = server.acl.generation();
    if generation == conn.acl_generation {
        return true;
    }
    conn.acl_generation = generation;
    match server.acl.user(conn.user.name.as_bytes()) {
        Some(user) => {
            conn.user = user;
            true
        }
        None => {
            conn.close_after_reply = true;
            false
        }
    }
}

/// Redis's ACL check in `processCommand`: after authentication, before anything else. A
/// user allowed everything (the default user, usually) costs one load and one branch.
#[inline]
fn acl_gate(
    server: &Server,
    conn: &mut ConnState,
    resolved: Resolved,
    argv: &[&[u8]],
) -> Result<(), Error> {
    if !refresh_user(server, conn) {
        return Err(Error::Static(USER_GONE));
    }
    if conn.user.unrestricted() {
        return Ok(());
    }
    acl_check(server, conn, resolved, argv)
}

/// The reply to a command of a connection whose user was deleted (it is being closed).
const USER_GONE: &str = "NOPERM the user of this connection was deleted";

fn acl_check(
    server: &Server,
    conn: &ConnState,
    resolved: Resolved,
    argv: &[&[u8]],
) -> Result<(), Error> {
    conn.user.check(&resolved, argv).map_err(|denied| {
        let context = if conn.multi.is_some() {
            crate::acl::Context::Multi
        } else {
            crate::acl::Context::Toplevel
        };
        crate::acl::log_denied(server, conn, &denied, resolved.full_name, context);
        denied.error(resolved.full_name)
    })
}

/// Commands a client may run before authenticating.
fn allowed_unauthenticated(spec_flags: u32) -> bool {
    spec_flags & flags::NO_AUTH != 0
}

/// Run one command and write its reply into `out`.
///
/// Checks run in a fixed order before any handler: unknown command, arity, authentication,
/// client pause, memory limit.
pub fn execute(
    server: &Server,
    conn: &mut ConnState,
    argv: &[&[u8]],
    out: &mut ReplyBuf,
) -> Outcome {
    if argv.is_empty() {
        return Outcome::Continue;
    }
    let reply_start = out.buf.len();
    let thread = &server.stats.threads[conn.worker];
    let resolved = match server.registry.resolve_hinted(argv, &mut conn.last_top) {
        Ok(r) => r,
        Err(e) => {
            // Arity or unknown subcommand on a known command counts as a rejected call.
            if let Some((idx, _)) = server.registry.top(argv[0]) {
                if let Some(c) = thread.per_command.get(server.registry.stat_base(idx)) {
                    bump(&c.rejected_calls, 1);
                }
            }
            flag_transaction(conn);
            reply_error(server, conn, out, &e);
            finish_reply(conn, out, reply_start);
            return Outcome::Continue;
        }
    };
    let spec = resolved.spec;
    // DEBUG where `enable-debug-command` refuses it: after the arity, before anything else.
    if let Some(e) = crate::server::debug::refused(server, conn, resolved.full_name) {
        bump(&thread.per_command[resolved.stat_index].rejected_calls, 1);
        flag_transaction(conn);
        reply_error(server, conn, out, &e);
        finish_reply(conn, out, reply_start);
        return Outcome::Continue;
    }
    if !conn.authenticated && server.acl.auth_required() && !allowed_unauthenticated(spec.flags) {
        bump(&thread.per_command[resolved.stat_index].rejected_calls, 1);
        flag_transaction(conn);
        reply_error(server, conn, out, &Error::Static(error::NOAUTH));
        finish_reply(conn, out, reply_start);
        return Outcome::Continue;
    }
    if let Err(e) = acl_gate(server, conn, resolved, argv) {
        bump(&thread.per_command[resolved.stat_index].rejected_calls, 1);
        flag_transaction(conn);
        reply_error(server, conn, out, &e);
        finish_reply(conn, out, reply_start);
        return Outcome::Continue;
    }
    if conn.monitor {
        if let Err(e) = crate::monitor::gate(server, conn, resolved.full_name, spec.flags) {
            bump(&thread.per_command[resolved.stat_index].rejected_calls, 1);
            flag_transaction(conn);
            reply_error(server, conn, out, &e);
            finish_reply(conn, out, reply_start);
            return Outcome::Continue;
        }
    }
    if conn.subs.any()
        && conn.handle.resp.load(Ordering::Relaxed) == 2
        && !crate::pubsub::allowed_when_subscribed(resolved.full_name)
    {
        bump(&thread.per_command[resolved.stat_index].rejected_calls, 1);
        let msg = format!(
            "ERR Can't execute '{}': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context",
            resolved.full_name
        );
        reply_error(server, conn, out, &Error::Owned(msg));
        finish_reply(conn, out, reply_start);
        return Outcome::Continue;
    }
    // A script past `busy-reply-threshold` (`busy.rs`). Redis checks this after the loading
    // and disk-error refusals, which then win, and evicts nothing while busy: so before
    // eviction (which would lock shards the script may hold) and before the pause.
    if let Some(e) = crate::busy::gate(server, conn, spec.flags, argv) {
        let e = persistence_gate(server, spec.flags).unwrap_or(e);
        bump(&thread.per_command[resolved.stat_index].rejected_calls, 1);
        let e = crate::busy::reject(conn, resolved.full_name, e);
        reply_error(server, conn, out, &e);
        finish_reply(conn, out, reply_start);
        return Outcome::Continue;
    }
    // One clock read serves the command's notion of now and the start of its duration; in a
    // batch, the previous command's end is that read.
    let mut started_us = match conn.clock_us.take() {
        Some(us) => us,
        None => larder_engine::command_us(),
    };
    let now_ms = started_us / 1000;
    let writes = spec.flags & (flags::WRITE | flags::MAY_REPLICATE) != 0;
    if let Some(until_ms) = server.pause.holds(writes, now_ms) {
        // Monitors are replicas to Redis, which CLIENT PAUSE does not hold.
        if !conn.monitor && !conn.loader {
            return Outcome::Paused { until_ms };
        }
    }
    // As Redis's processCommand: over maxmemory, evict by policy before any command; reject
    // a DENYOOM command with OOM only if nothing could be evicted (noeviction, or no
    // candidate left, e.g. volatile-* without volatile keys). At most MAX_EVICT_PER_COMMAND
    // keys per command, so a large overshoot is worked off over several commands instead of
    // stalling this worker (Redis bounds it by time, `maxmemory-eviction-tenacity`).
    // Nothing is evicted while the data loads (Redis's `isSafeToPerformEvictions`), and the
    // log's replay is never refused: the data was accepted once. Nor while a script is busy
    // (Redis's `isInsideYieldingLongCommand`): its shards stay locked.
    // A replica evicts nothing (`replica-ignore-maxmemory`): its master's DELs free memory.
    let replica = server.gates.replica.load(Ordering::Relaxed);
    let max = if conn.loader
        || server.gates.loading.load(Ordering::Relaxed)
        || server.busy.is_busy()
        || (replica && server.config.num(Param::ReplicaIgnoreMaxmemory) != 0)
    {
        0
    } else {
        server.config.num(Param::Maxmemory)
    };
    if max > 0 {
        const MAX_EVICT_PER_COMMAND: usize = 64;
        let measure = || used_memory(server);
        let used = measure();
        if used as i64 > max {
            let need = used - max as usize;
            let evicted = crate::config::eviction_policy(&server.config).map(|policy| {
                server.keyspace.evict(
                    policy,
                    server.config.num(Param::MaxmemorySamples).max(1) as usize,
                    now_ms,
                    need,
                    MAX_EVICT_PER_COMMAND,
                    |_, _| {},
                )
            });
            // Freed bytes are an estimate (tables shrink too): when the candidates ran out
            // before the estimate covered the excess, measure again.
            let out_of_memory = match evicted {
                None => true,
                Some(e) => e.exhausted && e.bytes < need && measure() as i64 > max,
            };
            if out_of_memory && spec.has(flags::DENYOOM) {
                bump(&thread.per_command[resolved.stat_index].rejected_calls, 1);
                flag_transaction(conn);
                reply_error(server, conn, out, &Error::Static(error::OOM));
                finish_reply(conn, out, reply_start);
                return Outcome::Continue;
            }
        }
    }

    if replica && !conn.loader {
        if let Some(e) = crate::replication::replica_gate(server, spec.flags) {
            bump(&thread.per_command[resolved.stat_index].rejected_calls, 1);
            flag_transaction(conn);
            reply_error(server, conn, out, &e);
            finish_reply(conn, out, reply_start);
            return Outcome::Continue;
        }
    }
    if let Some(e) = persistence_gate(server, spec.flags).filter(|_| !conn.loader) {
        bump(&thread.per_command[resolved.stat_index].rejected_calls, 1);
        flag_transaction(conn);
        reply_error(server, conn, out, &e);
        finish_reply(conn, out, reply_start);
        return Outcome::Continue;
    }
    if max > 0 {
        // Eviction is not part of the command's duration (as Redis times `call()` alone).
        started_us = larder_engine::command_us();
    }
    if conn.multi.is_some() && !crate::transaction::runs_inside_multi(resolved.full_name) {
        queue(server, conn, argv, out, resolved);
        finish_reply(conn, out, reply_start);
        return Outcome::Continue;
    }
    conn.started_us = Some(started_us);
    let result = if conn.handle.tracking.on() {
        crate::tracking::run(server, conn, argv, out, resolved, now_ms, run_command)
    } else {
        run_command(server, conn, argv, out, resolved, now_ms)
    };
    conn.started_us = None;
    if conn.block_now {
        // Counted, timed and shown to monitors once, when it is finally served (Redis too
        // counts a blocked call when it is unblocked).
        conn.block_now = false;
        out.truncate(reply_start);
        return Outcome::Blocked {
            until_ms: conn.blocked.unwrap_or(0),
        };
    }
    if conn.blocked.take().is_some() {
        // A blocked command that ended without being served (an error).
        server.blocking.unregister(conn.id);
    }
    // Wall-clock microseconds, as Redis's `ustime()`; a clock step back counts as 0.
    let ended_us = larder_engine::command_us();
    let elapsed_us = ended_us.saturating_sub(started_us);
    if conn.batching {
        conn.clock_us = Some(ended_us);
    }
    account(server, conn, out, resolved, result, elapsed_us);
    if server.monitors.active() {
        crate::monitor::feed_command(server, conn, argv, spec.flags, ended_us);
    }
    if !spec.has(flags::SKIP_SLOWLOG) {
        slowlog_maybe(server, conn, argv, elapsed_us, now_ms);
    }
    finish_reply(conn, out, reply_start);
    Outcome::Continue
}

/// Bytes in use as `maxmemory` counts them: the allocator's count when the binary installs
/// one; otherwise (unit tests, embedded use) the keyspace's own accounting.
pub(crate) fn used_memory(server: &Server) -> usize {
    match (server.used_memory)() {
        0 => server.keyspace.used_bytes(),
        hooked => hooked,
    }
}

/// Whether memory in use is over a `maxmemory` that is set (a script's OOM state, taken
/// when it starts, as Redis's `pre_command_oom_state`).
pub(crate) fn over_maxmemory(server: &Server) -> bool {
    let max = server.config.num(Param::Maxmemory);
    max > 0 && used_memory(server) as i64 > max
}

/// Redis's refusals while the dataset loads (`-LOADING`, for commands without the LOADING
/// flag) and after a failed log write (`-MISCONF`, for writes and PING, as Redis's
/// `writeCommandsDeniedByDiskError`). Two relaxed loads when neither applies.
#[inline]
pub(crate) fn persistence_gate(server: &Server, spec_flags: u32) -> Option<Error> {
    let gates = &server.gates;
    if gates.loading.load(Ordering::Relaxed) && spec_flags & flags::LOADING == 0 {
        return Some(Error::Static(crate::persistence::LOADING_ERR));
    }
    if gates.write_failed.load(Ordering::Relaxed) && spec_flags & flags::WRITE != 0 {
        return Some(crate::persistence::misconf(server));
    }
    if spec_flags & flags::WRITE != 0 && !crate::replication::enough_good_replicas(server) {
        return Some(Error::Static(crate::error::NOREPLICAS));
    }
    None
}

/// Mark the transaction being queued, if any, as failed: EXEC will answer EXECABORT.
fn flag_transaction(conn: &mut ConnState) {
    if let Some(m) = conn.multi.as_mut() {
        m.dirty = true;
    }
}

/// Queue a command between MULTI and EXEC (its checks passed), or reject it as Redis does at
/// queue time.
fn queue(
    server: &Server,
    conn: &mut ConnState,
    argv: &[&[u8]],
    out: &mut ReplyBuf,
    resolved: Resolved,
) {
    let rejected = if resolved.spec.has(flags::NO_MULTI) {
        Some(crate::transaction::NOT_IN_MULTI)
    } else if conn
        .multi
        .as_ref()
        .is_some_and(|m| m.queued.len() >= crate::transaction::MAX_QUEUED)
    {
        Some("ERR too many commands queued in this transaction")
    } else {
        None
    };
    if let Some(msg) = rejected {
        bump(
            &server.stats.threads[conn.worker].per_command[resolved.stat_index].rejected_calls,
            1,
        );
        flag_transaction(conn);
        reply_error(server, conn, out, &Error::Static(msg));
        return;
    }
    if let Some(m) = conn.multi.as_mut() {
        m.queued.push(argv.iter().map(|a| a.to_vec()).collect());
    }
    out.simple("QUEUED");
}

/// Apply CLIENT REPLY: drop the reply of this command if replies are off or skipped.
fn finish_reply(conn: &mut ConnState, out: &mut ReplyBuf, reply_start: usize) {
    match conn.reply_mode {
        ReplyMode::On => {}
        ReplyMode::Off => out.truncate(reply_start),
        // CLIENT REPLY SKIP just ran (its own reply is empty): skip the next command's.
        ReplyMode::SkipNext => conn.reply_mode = ReplyMode::Skip,
        ReplyMode::Skip => {
            out.truncate(reply_start);
            conn.reply_mode = ReplyMode::On;
        }
    }
}

/// The protocol a new connection starts with.
pub const DEFAULT_PROTOCOL: Protocol = Protocol::Resp2;

/// Lock a plan's shards in the global order (database, then shard): the one place commands'
/// shards are locked together. A database number past the last (an argument the handler will
/// reject) is left out.
pub(crate) fn lock_plan(mut plan: Plan, keyspace: &larder_engine::Keyspace) -> DbGuards<'_> {
    if plan.all {
        plan.shards = (0..keyspace.db_count())
            .flat_map(|d| (0..SHARDS_PER_DB).map(move |s| (d, s)))
            .collect();
    }
    plan.shards.retain(|&(d, _)| d < keyspace.db_count());
    keyspace.lock_many(&mut plan.shards)
}

/// Lock one shard of database `db` (< `db_count`) the way [`lock_plan`] would, without a
/// plan to build: a one-key script's run.
pub(crate) fn lock_one(
    db: usize,
    shard: usize,
    keyspace: &larder_engine::Keyspace,
) -> DbGuards<'_> {
    keyspace.lock_many(&mut [(db, shard)])
}

#[cfg(test)]
mod tests {
    use crate::testing::*;

    #[test]
    fn slowlog_redacts_passwords() {
        let mut h = Harness::new();
        assert_eq!(
            h.run(&["CONFIG", "SET", "slowlog-log-slower-than", "0"]),
            ok()
        );
        h.run(&["AUTH", "default", "hunter2"]);
        h.run(&["HELLO", "2", "AUTH", "default", "hunter2"]);
        let log = h.server.slowlog.lock();
        let secrets = log
            .entries
            .iter()
            .flat_map(|e| e.argv.iter())
            .filter(|a| a.as_slice() == b"hunter2")
            .count();
        assert_eq!(secrets, 0);
        assert!(log
            .entries
            .iter()
            .any(|e| e.argv.iter().any(|a| a == b"(redacted)")));
    }

    /// In a batch, a command starts when the previous one ended (one clock read each);
    /// outside one, every command reads the clock at its start.
    #[test]
    fn batched_commands_chain_their_clock_reads() {
        let mut h = Harness::new();
        h.run(&["CONFIG", "SET", "slowlog-log-slower-than", "0"]);
        h.run(&["PING"]);
        assert_eq!(h.conn.clock_us, None, "recorded outside a batch");
        h.conn.batching = true;
        h.run(&["PING"]);
        let ended = h.conn.clock_us.expect("recorded in a batch");
        assert!(ended.abs_diff(larder_engine::now_us()) < 10_000_000);
        // Taken as the next command's start: a start a second back makes it a second long.
        h.conn.clock_us = Some(ended - 1_000_000);
        h.run(&["ECHO", "x"]);
        let newest = h.server.slowlog.lock().entries[0].duration_us;
        assert!(newest >= 1_000_000, "{newest}");
    }
}
