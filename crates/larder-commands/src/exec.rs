//! Running one command: the generic checks in a fixed order, then the handler, then stats.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use larder_resp::{Protocol, ReplyBuf};

use larder_engine::{Db, DbGuards, SHARDS_PER_DB};

use crate::args::Args;
use crate::config::Param;
use crate::error::{self, Error};
use crate::locks::{Held, Pair, Plan, Scope, ShardGuard};
use crate::state::{bump, ClientHandle, Server, SlowEntry};
use crate::table::{flags, Resolved};
use crate::transaction::{Multi, Watched};

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
    /// instead of reading the clock again (one clock read per command, not two; the read
    /// was 6% of a pipelined GET's CPU). The layer clears both when the batch ends.
    pub batching: bool,
    /// When the previous command of this batch ended (Unix µs); see `batching`.
    pub clock_us: Option<u64>,
    /// Commands queued since MULTI; `None` outside a transaction.
    pub multi: Option<Multi>,
    /// Keys WATCHed, with the versions they had then.
    pub watched: Vec<Watched>,
    /// Pub/sub subscriptions.
    pub subs: crate::pubsub::Subscriptions,
    /// What the running command's handler said to record for replay instead of its own
    /// request ([`Cmd::propagate`]); empty: the request itself.
    pub propagate: Vec<Vec<Vec<u8>>>,
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

/// A command being run: what a handler sees.
pub struct Cmd<'a> {
    pub server: &'a Server,
    pub conn: &'a mut ConnState,
    pub args: Args<'a>,
    pub out: &'a mut ReplyBuf,
    /// Unix ms when the command started (one clock read per command).
    pub now_ms: u64,
    pub resolved: Resolved,
    /// The shards the executor locked for this command (a planned command, or any command
    /// inside EXEC); `None` when the command locks its one shard on demand.
    pub held: Option<&'a Held<'a>>,
}

impl<'a> Cmd<'a> {
    /// The selected database.
    #[inline]
    pub fn db(&self) -> &'a larder_engine::Db {
        self.server.keyspace.db(self.conn.db)
    }

    /// The shard that owns `key` in the selected database, with the key's hash: one the
    /// executor holds for this command, or else locked now. A command that runs unplanned
    /// holds at most one shard at a time.
    #[inline]
    pub fn shard_of(&self, key: &[u8]) -> (ShardGuard<'a>, u64) {
        let (shard, hash) = Db::route(key);
        (self.shard_at(self.conn.db, shard), hash)
    }

    /// Shard `shard` of database `db` (see [`Cmd::shard_of`]).
    #[inline]
    pub fn shard_at(&self, db: usize, shard: usize) -> ShardGuard<'a> {
        shard_in(self.server, self.held, db, shard)
    }

    /// The shards of two keys (RENAME, COPY, MOVE): `src` and `dst` are `(db, key)`.
    pub fn shard_pair(&self, src: (usize, &[u8]), dst: (usize, &[u8])) -> (Pair<'a>, u64, u64) {
        let (s_shard, s_hash) = Db::route(src.1);
        let (d_shard, d_hash) = Db::route(dst.1);
        let (s, d) = ((src.0, s_shard), (dst.0, d_shard));
        let pair = if s == d {
            Pair::Same(self.shard_at(s.0, s.1))
        } else if s < d {
            let src = self.shard_at(s.0, s.1);
            Pair::Two {
                src,
                dst: self.shard_at(d.0, d.1),
            }
        } else {
            let dst = self.shard_at(d.0, d.1);
            Pair::Two {
                src: self.shard_at(s.0, s.1),
                dst,
            }
        };
        (pair, s_hash, d_hash)
    }

    /// Visit shard `0..SHARDS_PER_DB` of database `db` in turn, each held (inside EXEC) or
    /// locked for the visit alone.
    pub fn lock_fn(&self, db: usize) -> impl FnMut(usize) -> ShardGuard<'a> + 'a {
        let (server, held) = (self.server, self.held);
        move |i| shard_in(server, held, db, i)
    }

    /// Raise Redis keyspace notification `event` of `class` (a `larder_engine::feed::class`
    /// bit) for `key` in the selected database. Call it while the key's shard is held, after
    /// the change it announces, so it joins that change's group in the feed.
    #[inline]
    pub fn notify(&self, class: u32, event: &'static str, key: &[u8]) {
        self.server
            .keyspace
            .feed()
            .notice(class, event, self.conn.db, key);
    }

    /// Record `argv` for replay (the append-only log, replicas) instead of the request the
    /// client sent, so that replaying it gives the same result whenever it runs: a relative
    /// deadline becomes an absolute one (EXPIRE as PEXPIREAT), a computed value is stored as
    /// such (INCRBYFLOAT as SET ... KEEPTTL). Called several times, every `argv` is recorded,
    /// in order. Costs nothing while no consumer records commands.
    pub fn propagate(&mut self, argv: &[&[u8]]) {
        if self.records_commands() {
            self.conn
                .propagate
                .push(argv.iter().map(|a| a.to_vec()).collect());
        }
    }

    /// Whether write commands are recorded now (the log, a replica): a handler that builds
    /// what [`Cmd::propagate`] records asks first, so it builds nothing when nobody listens.
    #[inline]
    pub fn records_commands(&self) -> bool {
        self.server.keyspace.feed().records_commands()
    }

    /// [`Cmd::notify`] in database `db`.
    #[inline]
    pub fn notify_in(&self, db: usize, class: u32, event: &'static str, key: &[u8]) {
        self.server.keyspace.feed().notice(class, event, db, key);
    }

    /// The compact-encoding limits in force, for engine operations that grow a collection.
    #[inline]
    pub fn limits(&self) -> larder_engine::Limits {
        crate::config::limits(&self.server.config)
    }

    /// Whether this client's reads update keys' access time (CLIENT NO-TOUCH turns it off).
    #[inline]
    pub fn access(&self) -> larder_engine::Access {
        if self.conn.handle.no_touch.load(Ordering::Relaxed) {
            larder_engine::Access::NoTouch
        } else {
            larder_engine::Access::Touch
        }
    }

    /// The buffer that holds `arg`, when the connection read this argument into one of its
    /// own ([`ConnState::owned_arg`]): storing it costs no copy. Taken, so at most one key
    /// stores it.
    #[inline]
    pub fn adopt(&mut self, arg: &[u8]) -> Option<Arc<Vec<u8>>> {
        self.conn
            .owned_arg
            .take_if(|owned| std::ptr::eq(owned.as_slice(), arg))
    }

    /// Count a keyspace hit or miss (INFO stats).
    #[inline]
    pub fn hit(&self, hit: bool) {
        let t = &self.server.stats.threads[self.conn.worker];
        bump(
            if hit {
                &t.keyspace_hits
            } else {
                &t.keyspace_misses
            },
            1,
        );
    }
}

/// Shard `shard` of database `db`: held by the command's plan, or locked now.
#[inline]
fn shard_in<'a>(
    server: &'a Server,
    held: Option<&'a Held<'a>>,
    db: usize,
    shard: usize,
) -> ShardGuard<'a> {
    match held {
        None => ShardGuard::Own(server.keyspace.db(db).lock(shard)),
        Some(held) => held_shard(server, held, db, shard),
    }
}

/// [`shard_in`] for a planned command (kept out of line: single-key commands never get here).
#[inline(never)]
fn held_shard<'a>(
    server: &'a Server,
    held: &'a Held<'a>,
    db: usize,
    shard: usize,
) -> ShardGuard<'a> {
    if let Some(g) = held.get(db, shard) {
        return ShardGuard::Held(g);
    }
    // The plan missed a shard the handler uses: a wrong key spec. Locking it now could
    // deadlock against a thread that waits for one of ours; a test runs
    // every command alone and inside EXEC (`locks::plan_tests`) to keep this unreachable.
    debug_assert!(false, "shard {db}/{shard} is not in the command's plan");
    ShardGuard::Own(server.keyspace.db(db).lock(shard))
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
        None => larder_engine::now_us(),
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
        started_us = larder_engine::now_us();
    }
    if conn.multi.is_some() && !crate::transaction::runs_inside_multi(resolved.full_name) {
        queue(server, conn, argv, out, resolved);
        finish_reply(conn, out, reply_start);
        return Outcome::Continue;
    }
    let result = if conn.handle.tracking.on() {
        crate::tracking::run(server, conn, argv, out, resolved, now_ms, run_command)
    } else {
        run_command(server, conn, argv, out, resolved, now_ms)
    };
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
    let ended_us = larder_engine::now_us();
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

/// Run a command that passed the checks: planned, or locking on demand.
#[inline]
fn run_command(
    server: &Server,
    conn: &mut ConnState,
    argv: &[&[u8]],
    out: &mut ReplyBuf,
    resolved: Resolved,
    now_ms: u64,
) -> crate::error::Result<()> {
    // A blocking command runs planned so that it registers as a waiter while its keys'
    // shards are still held (see `blocking.rs`). While a consumer records commands, a write
    // holds its shards until its command record has joined its changes' group.
    if needs_plan(&resolved.spec.keys, argv) || resolved.spec.has(flags::BLOCKING) {
        run_planned(server, conn, argv, out, resolved, now_ms)
    } else if resolved.spec.has(flags::WRITE) && server.keyspace.feed().records_commands() {
        run_locked_one(server, conn, argv, out, resolved, now_ms)
    } else {
        call(server, conn, argv, out, resolved, now_ms, None)
    }
}

/// A write of at most one key while commands are recorded: its shard locked first and held
/// until its command record has joined its changes' group and the group has committed, as
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
    if replacements.is_empty() {
        feed.command(conn.db, since, argv.iter().map(|a| a.to_vec()).collect());
    }
    for r in replacements {
        feed.command(conn.db, since, r);
    }
}

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
    keyspace.lock_many(plan.shards)
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

/// Count a command that ran (INFO commandstats) and write its error reply, if any.
#[inline]
pub(crate) fn account(
    server: &Server,
    conn: &mut ConnState,
    out: &mut ReplyBuf,
    resolved: Resolved,
    result: crate::error::Result<()>,
    elapsed_us: u64,
) {
    let thread = &server.stats.threads[conn.worker];
    let stat = &thread.per_command[resolved.stat_index];
    bump(&stat.calls, 1);
    bump(&stat.usec, elapsed_us);
    crate::latency::record(server, conn.worker, resolved.stat_index, elapsed_us);
    bump(&thread.commands, 1);
    conn.handle
        .last_command
        .store(resolved.stat_index, Ordering::Relaxed);
    match result {
        Err(e) => {
            bump(&stat.failed_calls, 1);
            reply_error(server, conn, out, &e);
        }
        Ok(()) if resolved.spec.has(flags::WRITE) => bump(&thread.writes, 1),
        Ok(()) => {}
    }
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

/// Write an error reply and count it (INFO errorstats).
pub fn reply_error(server: &Server, conn: &ConnState, out: &mut ReplyBuf, e: &Error) {
    out.error(e.message());
    bump(&server.stats.threads[conn.worker].error_replies, 1);
    let mut errors = server.stats.errors.lock();
    if let Some(n) = errors.get_mut(e.code()) {
        *n += 1;
    } else if errors.len() < 128 {
        errors.insert(e.code().to_string(), 1);
    }
}

fn slowlog_maybe(server: &Server, conn: &ConnState, argv: &[&[u8]], elapsed_us: u64, now_ms: u64) {
    let threshold = server.config.num(Param::SlowlogLogSlowerThan);
    if threshold < 0 || elapsed_us < threshold as u64 {
        return;
    }
    let max_len = server.config.num(Param::SlowlogMaxLen).max(0) as usize;
    // Secrets never reach the slow log (the same positions MONITOR redacts).
    let redacted = crate::monitor::redacted(argv);
    // Like Redis: at most 32 arguments, each cut at 128 bytes.
    let mut args: Vec<Vec<u8>> = Vec::new();
    for (i, a) in argv.iter().enumerate() {
        if redacted.contains(&i) {
            args.push(b"(redacted)".to_vec());
            continue;
        }
        if i == 31 && argv.len() > 32 {
            args.push(format!("... ({} more arguments)", argv.len() - 31).into_bytes());
            break;
        }
        if a.len() > 128 {
            let mut v = a[..128].to_vec();
            v.extend_from_slice(format!("... ({} more bytes)", a.len() - 128).as_bytes());
            args.push(v);
        } else {
            args.push(a.to_vec());
        }
    }
    let name = conn.handle.names.lock().name.clone();
    let mut log = server.slowlog.lock();
    let id = log.next_id;
    log.next_id += 1;
    log.entries.push_front(SlowEntry {
        id,
        time_s: now_ms / 1000,
        duration_us: elapsed_us,
        argv: args,
        addr: conn.handle.addr.clone(),
        name,
    });
    log.entries.truncate(max_len);
}

/// The protocol a new connection starts with.
pub const DEFAULT_PROTOCOL: Protocol = Protocol::Resp2;

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
