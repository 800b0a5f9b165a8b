//! Persistence as the command layer sees it: SAVE, BGSAVE, LASTSAVE and BGREWRITEAOF, the
//! `-LOADING` and `-MISCONF` gates, INFO persistence's numbers, and the handshake between the
//! log and the network layer (a reply waits until its write's record is in the log file, and
//! under `appendfsync always` until it is fsynced).
//!
//! The runtime itself (data directory, log, snapshots, recovery) lives in the binary
//! (`larder-server/src/persist/`) and is reached through [`Persistence`], installed once at
//! start ([`Server::persistence`]). The binary always installs one; with persistence off
//! (`--appendonly no --save ""`) it has no data directory, and SAVE and BGSAVE answer an error
//! that says so. Without one (unit tests), they answer that persistence is not running.

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use parking_lot::Mutex;

use crate::error::{Error, Result};
use crate::exec::Cmd;
use crate::table::{flags::*, CommandSpec, Group, KeySpec};
use crate::Server;

/// What INFO persistence reports, filled by the runtime.
#[derive(Clone, Debug, Default)]
pub struct Status {
    pub loading: bool,
    pub loading_start_s: u64,
    pub loading_total_bytes: u64,
    pub loading_loaded_bytes: u64,
    pub loading_loaded_keys: u64,
    pub loading_eta_s: u64,
    /// Writes since the last snapshot (Redis's `rdb_changes_since_last_save`).
    pub changes_since_save: u64,
    pub bgsave_in_progress: bool,
    pub last_save_s: u64,
    pub last_bgsave_ok: bool,
    /// -1 when none ran yet.
    pub last_bgsave_time_s: i64,
    pub current_bgsave_time_s: i64,
    pub saves: u64,
    pub save_keys_processed: u64,
    pub save_keys_total: u64,
    pub last_load_keys_loaded: u64,
    pub last_load_keys_expired: u64,
    pub aof_enabled: bool,
    pub aof_rewrite_in_progress: bool,
    pub aof_rewrite_scheduled: bool,
    pub aof_last_rewrite_time_s: i64,
    pub aof_current_rewrite_time_s: i64,
    pub aof_last_bgrewrite_ok: bool,
    pub aof_rewrites: u64,
    pub aof_last_write_ok: bool,
    /// Bytes of log since the last snapshot, and at it.
    pub aof_current_size: u64,
    pub aof_base_size: u64,
    /// Log bytes committed but not yet written to the file.
    pub aof_buffer_length: u64,
    pub aof_fsyncs: u64,
    pub aof_groups_per_fsync: f64,
}

/// The persistence runtime, as commands reach it.
pub trait Persistence: Send + Sync {
    fn status(&self) -> Status;
    /// SAVE: a snapshot now; returns when it is on disk.
    fn save(&self) -> std::result::Result<(), String>;
    /// BGSAVE: start a snapshot in the background. `schedule`: if one is running, do it
    /// after it instead of failing. Returns the status line to answer.
    fn bgsave(&self, schedule: bool) -> std::result::Result<&'static str, String>;
    /// BGREWRITEAOF: start a log rewrite (a snapshot, after which the log restarts).
    fn rewrite(&self) -> std::result::Result<&'static str, String>;
    /// Write the log's pending groups to its file: a worker calls it once per turn, before
    /// it sends the turn's replies, when `Gates::log_dirty` is set.
    fn write_log(&self);
    /// DEBUG RELOAD: with every shard held by the caller, write a snapshot (the log
    /// restarts at it), empty the dataset and load the snapshot back.
    fn reload(&self, shards: &mut dyn HeldShards) -> std::result::Result<(), String>;
    /// DEBUG LOADAOF: with every shard held by the caller, bring the log to disk, empty the
    /// dataset and load it again from the data directory (snapshot, then log).
    fn loadaof(&self, shards: &mut dyn HeldShards) -> std::result::Result<(), String>;
}

/// The shards a command holds (all of them, for DEBUG RELOAD), lent one at a time.
pub trait HeldShards {
    fn with(&mut self, db: usize, shard: usize, f: &mut dyn FnMut(&mut larder_engine::Shard));
}

/// Shared switches: read on every write, so plain atomics, not the runtime's locks.
#[derive(Default)]
pub struct Gates {
    /// Set while the dataset is loading: commands without the LOADING flag get `-LOADING`.
    pub loading: AtomicBool,
    /// Set after a failed log write or fsync: writes get `-MISCONF` until a snapshot and a
    /// new log succeed.
    pub write_failed: AtomicBool,
    pub write_error: Mutex<String>,
    /// Log offset up to which the log is in its file (written: a crash of the process
    /// loses nothing before it).
    pub written: AtomicU64,
    /// Log offset up to which the log is on disk (fsynced).
    pub durable: AtomicU64,
    /// Groups are committed but not yet written: a worker writes them before its replies.
    pub log_dirty: AtomicBool,
    /// The server is a replica (REPLICAOF host port): the read-only and stale-data gates
    /// apply to clients other than the master's stream.
    pub replica: AtomicBool,
    /// A replica whose link to its master is not up (for `replica-serve-stale-data no`).
    pub master_link_down: AtomicBool,
    /// Replicas whose last acknowledgement is at most `min-replicas-max-lag` seconds old,
    /// counted by the replication runtime each second (Redis's `repl_good_slaves_count`).
    pub good_replicas: AtomicU64,
}

impl Gates {
    pub fn fail_writes(&self, reason: String) {
        *self.write_error.lock() = reason;
        self.write_failed.store(true, Ordering::Release);
    }

    pub fn accept_writes(&self) {
        self.write_failed.store(false, Ordering::Release);
    }
}

thread_local! {
    /// The log offset after the last group this thread committed and has not yet handed to a
    /// connection ([`take_committed`]).
    static COMMITTED: Cell<u64> = const { Cell::new(0) };
}

/// Called by the log on the committing thread (the one that ran the write): the group ends
/// at log offset `end`.
pub fn note_committed(end: u64) {
    COMMITTED.with(|c| c.set(end));
}

/// The log offset the replies this thread produced since the last call must wait for (under
/// `appendfsync always`), if it committed anything. The network layer calls this after it
/// ran a connection's requests, before writing their replies.
pub fn take_committed() -> Option<u64> {
    COMMITTED.with(|c| match c.replace(0) {
        0 => None,
        end => Some(end),
    })
}

/// Tell every worker that the log's durable offset moved (or that the log failed), so the
/// replies they hold for it go out.
pub fn wake_durable(server: &Server) {
    for w in server.workers.lock().iter() {
        w.durable();
    }
}

/// Whether a write's reply waits for the fsync that covers it (`appendfsync always`), not
/// only for its record to be in the log file. One relaxed load: CONFIG SET takes effect at
/// once.
#[inline]
pub fn replies_wait_for_fsync(server: &Server) -> bool {
    server.config.num(crate::config::Param::Appendfsync) == 0
}

/// Redis's reply to a command refused while loading.
pub const LOADING_ERR: &str = "LOADING Redis is loading the dataset in memory";

/// The error for a write refused after a disk error, as Redis words the AOF one.
pub fn misconf(server: &Server) -> Error {
    Error::Owned(format!(
        "MISCONF Errors writing to the AOF file: {}",
        server.gates.write_error.lock()
    ))
}

#[rustfmt::skip]
pub static COMMANDS: &[CommandSpec] = &[
    CommandSpec::new("save", 1, ADMIN | NOSCRIPT | NO_ASYNC_LOADING | NO_MULTI, KeySpec::NONE, Group::Server,
        "Synchronously save the dataset to disk", "1.0.0", save),
    CommandSpec::new("bgsave", -1, ADMIN | NOSCRIPT | NO_ASYNC_LOADING, KeySpec::NONE, Group::Server,
        "Asynchronously save the dataset to disk", "1.0.0", bgsave),
    CommandSpec::new("bgrewriteaof", 1, ADMIN | NOSCRIPT | NO_ASYNC_LOADING, KeySpec::NONE, Group::Server,
        "Asynchronously rewrite the append-only file", "1.0.0", bgrewriteaof),
    CommandSpec::new("lastsave", 1, LOADING | STALE | FAST, KeySpec::NONE, Group::Server,
        "Get the UNIX time stamp of the last successful save to disk", "1.0.0", lastsave),
];

fn runtime<'a>(c: &Cmd<'a>) -> Result<&'a dyn Persistence> {
    c.server
        .persistence
        .get()
        .map(|p| &**p)
        .ok_or(Error::Static(
            "ERR persistence is not running on this server",
        ))
}

fn save(c: &mut Cmd<'_>) -> Result<()> {
    c.args.finish()?;
    runtime(c)?.save().map_err(Error::Owned)?;
    c.out.simple("OK");
    Ok(())
}

fn bgsave(c: &mut Cmd<'_>) -> Result<()> {
    let schedule = if c.args.remaining() == 0 {
        false
    } else {
        let word = c.args.next_arg()?;
        if !word.eq_ignore_ascii_case(b"schedule") {
            return Err(Error::Static(crate::error::SYNTAX));
        }
        c.args.finish()?;
        true
    };
    let line = runtime(c)?.bgsave(schedule).map_err(Error::Owned)?;
    c.out.simple(line);
    Ok(())
}

fn bgrewriteaof(c: &mut Cmd<'_>) -> Result<()> {
    c.args.finish()?;
    let line = runtime(c)?.rewrite().map_err(Error::Owned)?;
    c.out.simple(line);
    Ok(())
}

fn lastsave(c: &mut Cmd<'_>) -> Result<()> {
    c.args.finish()?;
    let at = match c.server.persistence.get() {
        Some(p) => p.status().last_save_s,
        None => c.server.started_ms / 1000,
    };
    c.out.int(at as i64);
    Ok(())
}
