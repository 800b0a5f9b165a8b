//! Running one command: the generic checks in a fixed order, then the handler, then stats.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use larder_resp::{Protocol, ReplyBuf};

use crate::args::Args;
use crate::config::Param;
use crate::error::{self, Error};
use crate::state::{bump, ClientHandle, Server, SlowEntry};
use crate::table::{flags, Resolved};

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
}

impl ConnState {
    /// State for a new connection.
    pub fn new(server: &Server, handle: Arc<ClientHandle>, worker: usize) -> ConnState {
        ConnState {
            id: handle.id,
            db: 0,
            authenticated: server.config.text(Param::Requirepass).is_empty(),
            reply_mode: ReplyMode::On,
            worker,
            handle,
            close_after_reply: false,
            owned_arg: None,
            last_top: usize::MAX,
            batching: false,
            clock_us: None,
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
}

impl<'a> Cmd<'a> {
    /// The selected database.
    #[inline]
    pub fn db(&self) -> &'a larder_engine::Db {
        self.server.keyspace.db(self.conn.db)
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
            reply_error(server, conn, out, &e);
            finish_reply(conn, out, reply_start);
            return Outcome::Continue;
        }
    };
    let spec = resolved.spec;
    if !conn.authenticated && !allowed_unauthenticated(spec.flags) {
        bump(&thread.per_command[resolved.stat_index].rejected_calls, 1);
        reply_error(server, conn, out, &Error::Static(error::NOAUTH));
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
        return Outcome::Paused { until_ms };
    }
    // As Redis's processCommand: over maxmemory, evict by policy before any command; reject
    // a DENYOOM command with OOM only if nothing could be evicted (noeviction, or no
    // candidate left, e.g. volatile-* without volatile keys). At most MAX_EVICT_PER_COMMAND
    // keys per command, so a large overshoot is worked off over several commands instead of
    // stalling this worker (Redis bounds it by time, `maxmemory-eviction-tenacity`).
    let max = server.config.num(Param::Maxmemory);
    if max > 0 {
        const MAX_EVICT_PER_COMMAND: usize = 64;
        // The allocator's count when the binary installs one; otherwise (unit tests, embedded
        // use) the keyspace's own accounting, which is only summed when a limit is set.
        let measure = || match (server.used_memory)() {
            0 => server.keyspace.used_bytes(),
            hooked => hooked,
        };
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
                reply_error(server, conn, out, &Error::Static(error::OOM));
                finish_reply(conn, out, reply_start);
                return Outcome::Continue;
            }
        }
    }

    if max > 0 {
        // Eviction is not part of the command's duration (as Redis times `call()` alone).
        started_us = larder_engine::now_us();
    }
    let mut cmd = Cmd {
        server,
        conn,
        args: Args::new(argv),
        out,
        now_ms,
        resolved,
    };
    if resolved.is_sub {
        cmd.args.skip(1);
    }
    let result = (spec.handler)(&mut cmd);
    let conn = cmd.conn;
    let out = cmd.out;
    // Wall-clock microseconds, as Redis's `ustime()`; a clock step back counts as 0.
    let ended_us = larder_engine::now_us();
    let elapsed_us = ended_us.saturating_sub(started_us);
    if conn.batching {
        conn.clock_us = Some(ended_us);
    }

    let stat = &thread.per_command[resolved.stat_index];
    bump(&stat.calls, 1);
    bump(&stat.usec, elapsed_us);
    crate::latency::record(server, conn.worker, resolved.stat_index, elapsed_us);
    bump(&thread.commands, 1);
    conn.handle
        .last_command
        .store(resolved.stat_index, Ordering::Relaxed);
    if let Err(e) = result {
        bump(&stat.failed_calls, 1);
        reply_error(server, conn, out, &e);
    }
    if !spec.has(flags::SKIP_SLOWLOG) {
        slowlog_maybe(server, conn, argv, elapsed_us, now_ms);
    }
    finish_reply(conn, out, reply_start);
    Outcome::Continue
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

/// Positions of secrets that must never reach the slow log: AUTH's arguments and HELLO's
/// `AUTH username password`, as Redis redacts them.
fn redacted_args(argv: &[&[u8]]) -> Vec<usize> {
    if argv[0].eq_ignore_ascii_case(b"auth") {
        return (1..argv.len()).collect();
    }
    if argv[0].eq_ignore_ascii_case(b"hello") {
        if let Some(i) = argv.iter().position(|a| a.eq_ignore_ascii_case(b"auth")) {
            return (i + 1..argv.len().min(i + 3)).collect();
        }
    }
    Vec::new()
}

fn slowlog_maybe(server: &Server, conn: &ConnState, argv: &[&[u8]], elapsed_us: u64, now_ms: u64) {
    let threshold = server.config.num(Param::SlowlogLogSlowerThan);
    if threshold < 0 || elapsed_us < threshold as u64 {
        return;
    }
    let max_len = server.config.num(Param::SlowlogMaxLen).max(0) as usize;
    let redacted = redacted_args(argv);
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
