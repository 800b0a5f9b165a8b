//! Running a script through the executor: which shards it holds, starting it again with more
//! when it reaches a key outside them, and putting back what an abandoned run wrote.
//!
//! A script's run holds its shards from its first line to its last, so no other client sees
//! it half done, whichever shards its keys live on. How much it holds is its [`Width`]:
//! - `Keys`: the shards of its declared keys (KEYS) in the selected database. Scripts on
//!   disjoint keys run in parallel on different threads.
//! - `Db`: every shard of the selected database.
//! - `All`: every shard of every database (what Redis's one thread amounts to).
//!
//! A script may reach keys it did not declare (Redis allows it outside cluster mode), SELECT
//! another database, or run a command whose scope is wider than its keys (KEYS, FLUSHDB,
//! PUBLISH, whose delivery cannot be taken back). When a command needs a shard the run does
//! not hold, the run is abandoned (`Abort::Retry`): every key it wrote is put back from the
//! image taken before its first write (`Shard::image`), its records leave the feed group
//! (`feed::rollback`), nothing reaches the client, and the script runs again at the width
//! that command needs. Locking more while holding some could deadlock against a thread that
//! waits in the global order for one of ours; starting again cannot. The script remembers
//! its width (`Script::width`, `Function::width`), so only its first wider run pays twice.
//! A run at `All` never starts again and takes no images.

use std::cell::Cell;
use std::sync::atomic::{AtomicU8, Ordering};

use larder_engine::{feed, Db, DbGuards, KeyImage};
use larder_resp::ReplyBuf;
use larder_script::shebang::ScriptFlags;
use larder_script::vm::{script_hex, Abort, Host, ScriptId, Vm};

use crate::error::{self, Error, Result};
use crate::exec::{self, ConnState};
use crate::locks::{Held, Plan, Scope};
use crate::state::Server;
use crate::table::{flags, CommandSpec};

/// How much of the keyspace a script's run holds (see the module's documentation).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
#[repr(u8)]
pub enum Width {
    Keys = 0,
    Db = 1,
    All = 2,
}

impl Width {
    pub(super) fn from_u8(w: u8) -> Width {
        match w {
            0 => Width::Keys,
            1 => Width::Db,
            _ => Width::All,
        }
    }
}

/// A key bigger than this is not imaged: a run about to write one starts again at `All`,
/// where nothing is imaged, instead of copying it.
const IMAGE_MAX_BYTES: usize = 64 * 1024;

/// What a run executes.
#[derive(Clone, Copy)]
pub(crate) enum Target<'a> {
    /// A cached EVAL script, by SHA1, with its body (compiled on first use on a thread).
    Script { id: &'a ScriptId, body: &'a [u8] },
    /// A function, by name.
    Function { name: &'a str },
}

/// One script run's request.
pub(crate) struct Job<'a> {
    pub target: Target<'a>,
    /// The whole request (EVAL ...), for MONITOR.
    pub argv: &'a [&'a [u8]],
    pub keys: &'a [&'a [u8]],
    pub args: &'a [&'a [u8]],
    pub flags: ScriptFlags,
    /// EVAL_RO, FCALL_RO, or a `no-writes` script: write commands are refused.
    pub read_only: bool,
    /// The width this thread knows for the script.
    pub width: &'a Cell<u8>,
    /// The width every thread learns from (new threads start from it).
    pub shared_width: &'a AtomicU8,
    /// The commands its redis.calls named last time, by position.
    pub hints: &'a super::interp::CallHints,
    /// When the command started (Unix ms).
    pub now_ms: u64,
}

/// Run `job` for the client `conn`, writing its reply into `out`. `lent`: the shards EXEC
/// holds (every one), when the script is queued in a transaction.
pub(crate) fn run(
    server: &Server,
    conn: &mut ConnState,
    out: &mut ReplyBuf,
    job: &Job<'_>,
    lent: Option<&mut DbGuards<'_>>,
    interp: &mut super::interp::Interp,
) -> Result<()> {
    if server.monitors.active() {
        crate::monitor::feed_script_call(server, conn, job.argv, larder_engine::now_us());
    }
    let db = conn.db;
    let was_in_exec = std::mem::replace(&mut conn.in_exec, true);
    let kind = match job.target {
        Target::Script { .. } => crate::busy::ScriptKind::Eval,
        Target::Function { .. } => crate::busy::ScriptKind::Function,
    };
    // One for all the runs of this request: a run started again wider keeps its clock, so
    // the busy threshold counts from the request's first run.
    let started_us = conn.started_us.take().unwrap_or_else(larder_engine::now_us);
    let mut running = server.busy.start_at(kind, conn.id, started_us);
    let mut runs = Runs {
        interp,
        running: &mut running,
        clock_us: Some(started_us),
    };
    let result = match lent {
        Some(guards) => run_once(server, conn, out, job, Width::All, guards, &mut runs).map(|_| ()),
        None => loop {
            let width = Width::from_u8(job.width.get());
            let mut guards = match (width, job.keys) {
                // The usual script: one key, one shard, no list to build.
                (Width::Keys, [key]) => exec::lock_one(db, Db::route(key).0, &server.keyspace),
                _ => {
                    let mut plan = Plan::default();
                    match width {
                        Width::Keys => plan
                            .shards
                            .extend(job.keys.iter().map(|k| (db, Db::route(k).0))),
                        Width::Db => {
                            plan.add(&crate::table::KeySpec::NONE.with_scope(Scope::Db), &[], db)
                        }
                        Width::All => plan.all = true,
                    }
                    exec::lock_plan(plan, &server.keyspace)
                }
            };
            let group = server.keyspace.feed().group();
            let outcome = run_once(server, conn, out, job, width, &mut guards, &mut runs);
            // Commits the run's group (or, after a rollback, only its expirations) while
            // every shard is still locked.
            drop(group);
            drop(guards);
            conn.db = db;
            match outcome {
                Ok(Ran::Done) => break Ok(()),
                Ok(Ran::Wider(w)) => {
                    job.width.set(job.width.get().max(w as u8));
                    job.shared_width.fetch_max(w as u8, Ordering::Relaxed);
                }
                Err(e) => break Err(e),
            }
        },
    };
    conn.db = db;
    conn.in_exec = was_in_exec;
    result
}

/// Buffers a run fills and empties, kept by the thread from run to run.
#[derive(Default)]
pub(crate) struct Scratch {
    plan: Plan,
    images: Vec<(usize, KeyImage)>,
}

/// What the runs of one request share: the thread's interpreter and the busy state.
struct Runs<'i, 'b, 's> {
    interp: &'i mut super::interp::Interp,
    running: &'b mut crate::busy::Running<'s>,
    /// The request's start, for its first run's first command; a run started again reads
    /// the clock.
    clock_us: Option<u64>,
}

/// How a run ended.
enum Ran {
    Done,
    /// Abandoned: run again at this width.
    Wider(Width),
}

/// One run at `width` with `guards` locked, inside the caller's feed group.
fn run_once(
    server: &Server,
    conn: &mut ConnState,
    out: &mut ReplyBuf,
    job: &Job<'_>,
    width: Width,
    guards: &mut DbGuards<'_>,
    runs: &mut Runs<'_, '_, '_>,
) -> Result<Ran> {
    let mark = feed::mark();
    let mut host = RunHost {
        server,
        db: conn.db,
        conn,
        guards,
        width,
        images: (width != Width::All).then(|| std::mem::take(&mut runs.interp.scratch.images)),
        read_only: job.read_only,
        allow_oom: job.flags.has(ScriptFlags::ALLOW_OOM)
            && !job.flags.has(ScriptFlags::EVAL_COMPAT_MODE),
        oom: exec::over_maxmemory(server),
        wrote: false,
        now_ms: job.now_ms,
        wider: width,
        running: &mut *runs.running,
        plan: std::mem::take(&mut runs.interp.scratch.plan),
        hints: job.hints,
        calls: 0,
        clock_us: runs
            .clock_us
            .take()
            .unwrap_or_else(larder_engine::command_us),
        function: match job.target {
            Target::Function { name } => Some((name, job.argv)),
            Target::Script { .. } => None,
        },
    };
    let ran = (|| -> std::result::Result<(), Abort> {
        let vm: &mut Vm = &mut runs.interp.vm;
        match job.target {
            Target::Script { id, body } => {
                if !vm.has_script(id) {
                    // Compiled on another thread (or before SCRIPT FLUSH ... LOAD): it
                    // compiled there, so it compiles here.
                    if let Err(e) = vm.compile_script(&script_hex(id), body) {
                        out.error(&e);
                        return Ok(());
                    }
                }
                vm.run_script(id, job.keys, job.args, &mut host, out)
            }
            Target::Function { name } => vm.run_function(name, job.keys, job.args, &mut host, out),
        }
    })();
    let ended = match ran {
        Ok(()) | Err(Abort::Killed) => Ok(Ran::Done),
        Err(Abort::Shutdown) => {
            // The server stops: leave nothing of the run behind (its reply is written).
            host.undo(mark);
            Ok(Ran::Done)
        }
        Err(Abort::Retry) if host.images.is_none() => {
            // At `All` every shard is held: no command can need more.
            Err(Error::Static("ERR script needed a shard it could not hold"))
        }
        Err(Abort::Retry) => {
            host.undo(mark);
            Ok(Ran::Wider(host.wider))
        }
    };
    // The buffers go back for the thread's next run.
    runs.interp.scratch.plan = std::mem::take(&mut host.plan);
    if let Some(mut images) = host.images.take() {
        images.clear();
        runs.interp.scratch.images = images;
    }
    ended
}

/// A script's way to the keyspace for one run.
struct RunHost<'r, 'g, 'k, 's> {
    server: &'r Server,
    conn: &'r mut ConnState,
    /// The database the run started in (what a `Db` width holds).
    db: usize,
    guards: &'g mut DbGuards<'k>,
    width: Width,
    /// Keys as they were before the run first wrote them, while the run may be abandoned.
    images: Option<Vec<(usize, KeyImage)>>,
    read_only: bool,
    allow_oom: bool,
    /// Over `maxmemory` when the run started.
    oom: bool,
    wrote: bool,
    now_ms: u64,
    /// The width a retry needs.
    wider: Width,
    running: &'g mut crate::busy::Running<'s>,
    /// Scratch: the shards of the command being checked.
    plan: Plan,
    hints: &'r super::interp::CallHints,
    /// redis.calls so far in this run.
    calls: usize,
    /// When the script's last command ended (Unix µs).
    clock_us: u64,
    /// A function's name and FCALL request, shown by FUNCTION STATS once it is busy; taken
    /// at the first tick (a script that runs that long), not at every start.
    function: Option<(&'r str, &'r [&'r [u8]])>,
}

impl RunHost<'_, '_, '_, '_> {
    /// Put back every key the run wrote and drop its records from the feed group.
    fn undo(&mut self, mark: usize) {
        if let Some(images) = self.images.as_mut() {
            while let Some((db, image)) = images.pop() {
                let (shard, _) = Db::route(image.key());
                self.guards.get(db, shard).put_back(image, self.now_ms);
            }
        }
        feed::rollback(mark);
    }

    /// Redis's checks before a script's command (`scriptCall`): the error text, if refused.
    fn refuse(&self, spec: &CommandSpec) -> Option<Error> {
        if spec.has(flags::NOSCRIPT) {
            return Some(Error::Static(
                "ERR This Redis command is not allowed from script",
            ));
        }
        if !spec.has(flags::STALE) && super::eval::running_stale(self.server, self.conn) {
            return Some(Error::Static(
                "ERR Can not execute the command on a stale replica",
            ));
        }
        if self.read_only && spec.flags & (flags::WRITE | flags::MAY_REPLICATE) != 0 {
            return Some(Error::Static(
                "ERR Write commands are not allowed from read-only scripts.",
            ));
        }
        if spec.has(flags::WRITE) && !self.wrote {
            // Once the script has written it cannot stop half way on server state.
            if super::eval::read_only_replica(self.server, self.conn) {
                return Some(Error::Static(crate::replication::READONLY));
            }
            if let Some(e) = exec::persistence_gate(self.server, spec.flags) {
                return Some(e);
            }
        }
        if self.oom && !self.allow_oom && !self.wrote && spec.has(flags::DENYOOM) {
            return Some(Error::Static(error::OOM));
        }
        None
    }

    /// Whether the run holds what `argv` may touch; if not, the width that would.
    fn needs(&mut self, spec: &CommandSpec, full_name: &str, argv: &[&[u8]]) -> Option<Width> {
        self.plan.shards.clear();
        self.plan.all = false;
        self.plan.add(&spec.keys, argv, self.conn.db);
        self.plan.shards.sort_unstable();
        self.plan.shards.dedup();
        if self.width == Width::All {
            return None;
        }
        // Delivered messages cannot be taken back: publish only where no retry can follow.
        let irreversible = matches!(full_name, "publish" | "spublish");
        // A wide write could not be imaged key by key.
        let wide_write = spec.has(flags::WRITE)
            && matches!(spec.keys.scope, Scope::Db | Scope::All | Scope::WalkDb);
        if self.plan.all || irreversible || wide_write {
            return Some(Width::All);
        }
        let guards = &*self.guards;
        let missing = self.plan.shards.iter().any(|&(d, s)| !guards.holds(d, s));
        if !missing {
            return None;
        }
        let one_db = self.plan.shards.iter().all(|&(d, _)| d == self.db);
        Some(if one_db { Width::Db } else { Width::All })
    }

    /// Image the keys `argv` may write, before it runs. `Err`: a key too big to image.
    fn image(&mut self, spec: &CommandSpec, argv: &[&[u8]]) -> std::result::Result<(), ()> {
        let Some(images) = self.images.as_mut() else {
            return Ok(());
        };
        let db = self.conn.db;
        for key in command_keys(spec, argv) {
            if images.iter().any(|(d, i)| *d == db && i.key() == key) {
                continue;
            }
            let (shard, hash) = Db::route(key);
            let shard = self.guards.get(db, shard);
            let image = shard
                .image(key, hash, self.now_ms, IMAGE_MAX_BYTES)
                .ok_or(())?;
            images.push((db, image));
        }
        Ok(())
    }
}

impl Host for RunHost<'_, '_, '_, '_> {
    fn call(&mut self, argv: &[&[u8]], out: &mut ReplyBuf) -> std::result::Result<(), Abort> {
        let server = self.server;
        let Some(&name) = argv.first() else {
            out.error("ERR Please specify at least one argument for this redis lib call");
            return Ok(());
        };
        let hint = self.hints.0.get(self.calls);
        self.calls += 1;
        let mut last = hint.map_or(usize::MAX, Cell::get);
        let resolved = server.registry.resolve_hinted(argv, &mut last);
        if let Some(hint) = hint {
            hint.set(last);
        }
        let resolved = match resolved {
            Ok(r) => r,
            Err(_) => {
                let known = server.registry.top(name).is_some_and(|(_, spec)| {
                    spec.subcommands.is_empty()
                        || argv.get(1).is_some_and(|s| spec.subcommand(s).is_some())
                });
                out.error(if known {
                    "ERR Wrong number of args calling Redis command from script"
                } else {
                    "ERR Unknown Redis command called from script"
                });
                return Ok(());
            }
        };
        let spec = resolved.spec;
        if let Some(e) = self.refuse(spec) {
            out.error(e.message());
            return Ok(());
        }
        // The script runs as its caller's user (Redis's `scriptVerifyACL`).
        if !self.conn.user.unrestricted() {
            if let Err(denied) = self.conn.user.check(&resolved, argv) {
                let context = crate::acl::Context::Lua;
                crate::acl::log_denied(server, self.conn, &denied, resolved.full_name, context);
                out.error(script_acl_error(&denied));
                return Ok(());
            }
        }
        if let Some(w) = self.needs(spec, resolved.full_name, argv) {
            self.wider = self.wider.max(w);
            return Err(Abort::Retry);
        }
        if spec.has(flags::WRITE) {
            if self.image(spec, argv).is_err() {
                self.wider = Width::All;
                return Err(Abort::Retry);
            }
            self.wrote = true;
            self.running.wrote();
        }
        // One clock read per command: it starts when the script's previous command ended
        // (or the run started), as commands of a pipelined batch do.
        let started_us = self.clock_us;
        let since = feed::data_changes();
        let result = {
            let held = match self.plan.shards[..] {
                // Most commands touch one shard: lend it without building a list.
                [(db, shard)] if !self.plan.all => Held::one(db, shard, self.guards.get(db, shard)),
                _ if self.plan.all => Held::from_shards(self.guards.iter_keyed().collect()),
                _ => Held::from_shards(self.guards.subset(&self.plan.shards)),
            };
            exec::call(
                server,
                self.conn,
                argv,
                out,
                resolved,
                self.now_ms,
                Some(&held),
            )
        };
        exec::record_command(server, self.conn, argv, resolved, since);
        let ended_us = larder_engine::command_us();
        let elapsed_us = ended_us.saturating_sub(started_us);
        self.clock_us = ended_us;
        exec::account(server, self.conn, out, resolved, result, elapsed_us);
        if server.monitors.active() {
            crate::monitor::feed_script(server, self.conn.db, argv, spec.flags, ended_us);
        }
        if !out.attached.is_empty() {
            // The interpreter reads replies as bytes: put large values inline.
            out.buf = out.attached.splice(&out.buf);
            out.attached.clear();
        }
        Ok(())
    }

    fn tick(&mut self) -> std::result::Result<(), Abort> {
        if let Some((name, argv)) = self.function.take() {
            self.running.describe(name, argv);
        }
        self.running.tick(self.server).map_err(|stop| match stop {
            crate::busy::Stop::Killed => Abort::Killed,
            crate::busy::Stop::Shutdown => Abort::Shutdown,
        })
    }

    fn log(&mut self, level: u8, msg: &str) {
        match level {
            0 => tracing::debug!(target: "larder::script", "{msg}"),
            1 | 2 => tracing::info!(target: "larder::script", "{msg}"),
            _ => tracing::warn!(target: "larder::script", "{msg}"),
        }
    }

    fn set_repl(&mut self, _flags: u8) {
        // Effects are always recorded: the log and replicas replay the script's writes, not
        // the script (Redis 7.0 accepts the call and ignores REPL_NONE only for AOF/replicas
        // it does not have either).
    }
}

/// The error `redis.call` raises for a command the caller's user may not run (Redis's
/// `getAclErrorMessage`).
fn script_acl_error(denied: &crate::acl::Denied) -> &'static str {
    match denied {
        crate::acl::Denied::Command => {
            "ERR The user executing the script can't run this command or subcommand"
        }
        crate::acl::Denied::Key(_) => {
            "ERR The user executing the script can't access at least one of the keys mentioned in the command arguments"
        }
        crate::acl::Denied::Channel(_) => {
            "ERR The user executing the script can't publish to the channel mentioned in the command"
        }
    }
}

/// The keys a command may write: its key arguments, the keys after a `numkeys`, and the keys
/// after option words (STORE destinations, XREADGROUP's streams). Not collected: a script's
/// every write asks.
fn command_keys<'a, 'b>(
    spec: &'b CommandSpec,
    argv: &'b [&'a [u8]],
) -> impl Iterator<Item = &'a [u8]> + use<'a, 'b> {
    let after_numkeys = match spec.keys.scope {
        Scope::NumKeys { at } => {
            let at = usize::from(at);
            let n = argv
                .get(at)
                .and_then(|a| crate::args::parse_i64(a))
                .and_then(|n| usize::try_from(n).ok())
                .unwrap_or(0);
            argv.get(at + 1..).unwrap_or_default().iter().take(n)
        }
        _ => [].iter().take(0),
    };
    spec.keys
        .key_iter(argv)
        .chain(spec.keys.scope.option_keys(argv))
        .chain(after_numkeys.copied())
}
