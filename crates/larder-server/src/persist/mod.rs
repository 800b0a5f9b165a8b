//! Persistence at run time: the data directory, the append-only log, snapshots and
//! recovery. The formats are `larder-persist`'s; this module owns the files and threads.
//!
//! Start-up ([`start`]): lock the data directory, mark the server loading (clients get
//! `-LOADING`), and on a thread of its own load the newest snapshot and replay the log after
//! it; then continue the feed's sequence and the log's offset where they ended, start a new
//! log file, subscribe the log to the feed and open for writes.
//!
//! Snapshots run on the saver thread ([`Runtime::saver`]): on BGSAVE, BGREWRITEAOF, a `save`
//! rule, the log's growth (`auto-aof-rewrite-*`), and every 5 s after a disk error until one
//! succeeds. A snapshot and a log rewrite are the same operation here: the snapshot is
//! consistent at one point of the feed, and the log restarts at that point.

pub mod check;
mod dir;
pub mod import;
mod log;
mod recover;
mod reload;
mod snapshot;
// The replication issue's seam: nothing in the server streams the log yet.
#[cfg_attr(not(test), allow(dead_code))]
mod tail;

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::Context;
use larder_commands::config::{save_rules, Param};
use larder_commands::persistence::{HeldShards, Persistence, Status};
use larder_commands::Server;
use larder_engine::Interest;
use parking_lot::{Condvar, Mutex};

pub use dir::DataDir;
use log::{Appender, Log, Syncer};
pub(crate) use recover::restore_version;

/// The error SAVE, BGSAVE and DEBUG RELOAD answer when persistence is off.
const NO_DIR: &str =
    "ERR persistence is off (--appendonly no --save \"\"): there is no data directory";

/// How long after a failed snapshot the saver tries again (Redis's
/// `CONFIG_BGSAVE_RETRY_DELAY`).
const RETRY_AFTER: Duration = Duration::from_secs(5);

/// The persistence runtime of one server.
pub struct Runtime {
    server: Arc<Server>,
    dir: Option<Arc<DataDir>>,
    log: std::sync::OnceLock<Arc<Log>>,
    /// The log's fsync thread, joined at shutdown.
    syncer: Mutex<Option<JoinHandle<()>>>,
    state: Mutex<State>,
    /// Wakes the saver thread (a request, or shutdown).
    wake: Condvar,
}

/// What a snapshot was asked for, for INFO's two sets of fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Save,
    Rewrite,
}

#[derive(Default)]
struct State {
    loading: bool,
    loading_started_s: u64,
    loading_total_bytes: u64,
    loading_done_bytes: u64,
    loading_eta_s: u64,
    last_save_s: u64,
    /// Write count (sum of the threads' `writes`) at the last snapshot's start.
    writes_at_save: u64,
    saves: u64,
    last_bgsave_ok: bool,
    last_bgsave_time_s: i64,
    rewrites: u64,
    last_rewrite_ok: bool,
    last_rewrite_time_s: i64,
    last_load_keys_loaded: u64,
    last_load_keys_expired: u64,
    log_size_at_snapshot: u64,
    /// The snapshot running now, its start and progress.
    running: Option<(Kind, Instant)>,
    keys_written: u64,
    keys_total: u64,
    /// Asked for while another ran (BGSAVE SCHEDULE, BGREWRITEAOF during a BGSAVE).
    scheduled: Option<Kind>,
    /// Asked for now: the saver takes it.
    requested: Option<Kind>,
    /// When the last failed snapshot ended (the saver waits before trying again).
    failed_at: Option<Instant>,
    stopping: bool,
}

/// Open the data directory (unless persistence is off), install the runtime and start
/// recovery in the background. The server answers `-LOADING` until recovery ends.
pub fn start(server: &Arc<Server>) -> anyhow::Result<Arc<Runtime>> {
    let appendonly = server.config.num(Param::Appendonly) != 0;
    let saves = server.config.num(Param::Save) > 0;
    let dir = if appendonly || saves {
        let path = server.config.text(Param::Dir);
        Some(Arc::new(DataDir::open(std::path::Path::new(&path))?))
    } else {
        None
    };
    let runtime = Arc::new(Runtime {
        server: Arc::clone(server),
        dir,
        log: std::sync::OnceLock::new(),
        syncer: Mutex::new(None),
        state: Mutex::new(State {
            last_save_s: server.started_ms / 1000,
            last_bgsave_ok: true,
            last_bgsave_time_s: -1,
            last_rewrite_ok: true,
            last_rewrite_time_s: -1,
            ..State::default()
        }),
        wake: Condvar::new(),
    });
    if server
        .persistence
        .set(Arc::clone(&runtime) as Arc<dyn Persistence>)
        .is_err()
    {
        anyhow::bail!("persistence started twice");
    }
    if let Some(dir) = runtime.dir.clone() {
        tracing::info!(dir = %dir.path().display(), appendonly, "data directory");
        server.gates.loading.store(true, Ordering::SeqCst);
        {
            let mut st = runtime.state.lock();
            st.loading = true;
            st.loading_started_s = larder_engine::now_ms() / 1000;
        }
        let rt = Arc::clone(&runtime);
        std::thread::Builder::new()
            .name("larder-saver".into())
            .spawn(move || {
                if let Err(e) = rt.recover_and_open(&dir, appendonly) {
                    // Nothing can be served safely: a write now would be lost or would
                    // overwrite what recovery could not read.
                    tracing::error!("{e:#}");
                    eprintln!("larder: {e:#}");
                    std::process::exit(1);
                }
                rt.saver(&dir);
            })
            .context("starting the saver thread")?;
    }
    Ok(runtime)
}

impl Runtime {
    fn recover_and_open(&self, dir: &Arc<DataDir>, appendonly: bool) -> anyhow::Result<()> {
        let started = Instant::now();
        dir.remove_leftovers()?;
        let (snapshots, logs) = dir.list()?;
        let delay_us = self.server.config.num(Param::KeyLoadDelay);
        let mut after = 0;
        let mut keys_expired = 0;
        if let Some(&seq) = snapshots.last() {
            let path = dir.snapshot_path(seq);
            let total = std::fs::metadata(&path).map_or(0, |m| m.len());
            self.state.lock().loading_total_bytes = total;
            let mut progress = recover::Progress::new("snapshot", total);
            let mut delayed_keys = 0;
            let (keys, expired, at) = snapshot::load(&self.server, &path, |keys, bytes| {
                if delay_us > 0 {
                    // Progress comes every few thousand keys: the delay of those keys.
                    let n = keys.saturating_sub(delayed_keys);
                    delayed_keys = keys;
                    std::thread::sleep(Duration::from_micros(delay_us as u64 * n));
                }
                if let Some(eta) = progress.tick(bytes, keys) {
                    let mut st = self.state.lock();
                    st.loading_done_bytes = bytes;
                    st.loading_eta_s = eta;
                }
            })
            .map_err(|e| {
                anyhow::anyhow!(
                    "{e:#}. The data directory is damaged; `larder check-data {}` says what \
                     is wrong",
                    dir.path().display()
                )
            })?;
            tracing::info!(
                keys,
                expired,
                seconds = format!("{:.3}", started.elapsed().as_secs_f64()),
                "snapshot loaded"
            );
            after = at;
            keys_expired = expired;
        }
        let rec =
            recover::replay_logs(&self.server, dir, &logs, after, delay_us, |done, total| {
                let mut st = self.state.lock();
                st.loading_done_bytes = done;
                st.loading_total_bytes = total;
            })?;
        if after == 0 && rec.groups == 0 {
            // Nothing of larder's yet: a Redis dump to migrate from, if there is one. It
            // becomes the directory's first snapshot, so the data is larder's own from now on.
            let rdb = dir.path().join(self.server.config.text(Param::Dbfilename));
            if rdb.is_file() {
                let stats = import::load(&self.server, &rdb)?;
                keys_expired = stats.expired_skipped;
                snapshot::take(&self.server, dir, None, |_| {})?;
            }
        }
        let keys = self.keys();
        tracing::info!(
            keys,
            groups = rec.groups,
            commands = rec.commands,
            seconds = format!("{:.3}", started.elapsed().as_secs_f64()),
            "DB loaded from disk"
        );
        let feed = self.server.keyspace.feed();
        feed.resume_after(rec.last_seq);
        if appendonly {
            let path = dir.log_path(rec.last_seq);
            let file = log::create_log(dir, &path, rec.last_seq, rec.end_offset)
                .with_context(|| format!("creating {}", path.display()))?;
            let log = Log::new(
                Arc::clone(&self.server),
                Arc::clone(dir),
                file,
                rec.last_seq,
                rec.end_offset,
            );
            feed.subscribe(Interest::COMMANDS, Arc::new(Appender(Arc::clone(&log))));
            let syncer = Syncer(Arc::clone(&log));
            let handle = std::thread::Builder::new()
                .name("larder-log".into())
                .spawn(move || syncer.run())
                .context("starting the log's fsync thread")?;
            let _ = self.log.set(log);
            *self.syncer.lock() = Some(handle);
        }
        {
            let mut st = self.state.lock();
            st.loading = false;
            st.last_load_keys_loaded = keys as u64;
            st.last_load_keys_expired = keys_expired;
            st.writes_at_save = self.writes();
        }
        self.server.gates.loading.store(false, Ordering::SeqCst);
        Ok(())
    }

    /// The saver thread: snapshots on request, by rule, and after failures, until shutdown.
    fn saver(&self, dir: &Arc<DataDir>) {
        loop {
            let kind = {
                let mut st = self.state.lock();
                loop {
                    if st.stopping {
                        return;
                    }
                    if let Some(kind) = st.requested.take() {
                        break kind;
                    }
                    if let Some(kind) = self.due(&st) {
                        break kind;
                    }
                    self.wake.wait_for(&mut st, Duration::from_millis(100));
                }
            };
            let _ = self.snapshot(dir, kind);
        }
    }

    /// Whether a rule asks for a snapshot now.
    fn due(&self, st: &State) -> Option<Kind> {
        let failed = self.server.gates.write_failed.load(Ordering::Acquire);
        if let Some(at) = st.failed_at {
            if at.elapsed() < RETRY_AFTER {
                return None;
            }
            if failed {
                // Writes are refused until a snapshot and a new log succeed.
                return Some(Kind::Rewrite);
            }
        } else if failed {
            return Some(Kind::Rewrite);
        }
        if let Some(kind) = st.scheduled {
            return Some(kind);
        }
        let changes = self.writes().saturating_sub(st.writes_at_save);
        let now_s = larder_engine::now_ms() / 1000;
        let rules = save_rules(&self.server.config.text(Param::Save)).unwrap_or_default();
        if rules
            .iter()
            .any(|&(secs, n)| changes >= n && now_s.saturating_sub(st.last_save_s) >= secs)
            && changes > 0
        {
            return Some(Kind::Save);
        }
        let pct = self.server.config.num(Param::AutoAofRewritePercentage);
        let min = self.server.config.num(Param::AutoAofRewriteMinSize).max(0) as u64;
        if pct > 0 {
            if let Some(log) = self.log.get() {
                let size = log.stats.current_size.load(Ordering::Relaxed);
                let base = st.log_size_at_snapshot.max(1);
                if size >= min && (size - base.min(size)) * 100 / base >= pct as u64 {
                    return Some(Kind::Rewrite);
                }
            }
        }
        None
    }

    /// Take a snapshot now (on the calling thread), recording it for INFO.
    fn snapshot(&self, dir: &DataDir, kind: Kind) -> anyhow::Result<()> {
        {
            let mut st = self.state.lock();
            if st.running.is_some() {
                anyhow::bail!("Background save already in progress");
            }
            st.running = Some((kind, Instant::now()));
            st.keys_written = 0;
            st.keys_total = self.keys() as u64;
            if st.scheduled == Some(kind) {
                st.scheduled = None;
            }
        }
        let writes_before = self.writes();
        let started = Instant::now();
        let log = self.log.get().cloned();
        let result = snapshot::take(&self.server, dir, log.as_ref(), |n| {
            self.state.lock().keys_written = n;
        });
        let secs = started.elapsed().as_secs() as i64;
        let mut st = self.state.lock();
        st.running = None;
        match &result {
            Ok(stats) => {
                st.failed_at = None;
                st.last_save_s = larder_engine::now_ms() / 1000;
                st.writes_at_save = writes_before;
                st.log_size_at_snapshot = log
                    .as_ref()
                    .map_or(0, |l| l.stats.current_size.load(Ordering::Relaxed));
                match kind {
                    Kind::Save => {
                        st.saves += 1;
                        st.last_bgsave_ok = true;
                        st.last_bgsave_time_s = secs;
                    }
                    Kind::Rewrite => {
                        st.rewrites += 1;
                        st.last_rewrite_ok = true;
                        st.last_rewrite_time_s = secs;
                    }
                }
                tracing::info!(
                    keys = stats.keys,
                    pre_images = stats.pre_images,
                    bytes = stats.bytes,
                    seq = stats.feed_seq,
                    seconds = format!("{:.3}", started.elapsed().as_secs_f64()),
                    "snapshot saved"
                );
                if self.server.gates.write_failed.load(Ordering::Acquire) {
                    let log_ok = log.as_ref().is_none_or(|l| {
                        l.rotated_to() >= stats.feed_seq && !l.stats.failed.load(Ordering::Relaxed)
                    });
                    if log_ok {
                        tracing::info!(
                            "a snapshot and a new log succeeded: accepting writes again"
                        );
                        self.server.gates.accept_writes();
                    }
                }
            }
            Err(e) => {
                st.failed_at = Some(Instant::now());
                match kind {
                    Kind::Save => st.last_bgsave_ok = false,
                    Kind::Rewrite => st.last_rewrite_ok = false,
                }
                tracing::error!("snapshot failed: {e:#}");
            }
        }
        result.map(|_| ())
    }

    /// Keys in every database.
    fn keys(&self) -> usize {
        let ks = &self.server.keyspace;
        (0..ks.db_count()).map(|d| ks.db(d).len()).sum()
    }

    /// Write commands run so far (Redis's `dirty` counter, summed from the threads).
    fn writes(&self) -> u64 {
        self.server
            .stats
            .threads
            .iter()
            .map(|t| t.writes.load(Ordering::Relaxed))
            .sum()
    }

    /// At shutdown: a last snapshot when `save` rules are set (as Redis saves on shutdown),
    /// unless SHUTDOWN NOSAVE; then write and fsync what the log holds and stop its fsync thread.
    pub fn shutdown(&self, save: Option<bool>) {
        let rules = self.server.config.num(Param::Save) > 0;
        if let Some(dir) = &self.dir {
            if save.unwrap_or(rules) && !self.state.lock().loading {
                // A background snapshot in progress finishes first.
                let deadline = Instant::now() + Duration::from_secs(120);
                while self.state.lock().running.is_some() && Instant::now() < deadline {
                    std::thread::sleep(Duration::from_millis(10));
                }
                if let Err(e) = self.snapshot(dir, Kind::Save) {
                    tracing::error!("the snapshot at shutdown failed: {e:#}");
                }
            }
        }
        {
            let mut st = self.state.lock();
            st.stopping = true;
            self.wake.notify_all();
        }
        if let Some(log) = self.log.get() {
            log.stop();
        }
        if let Some(handle) = self.syncer.lock().take() {
            let _ = handle.join();
        }
    }

    fn start_background(&self, kind: Kind, schedule: bool) -> Result<&'static str, String> {
        let Some(_) = &self.dir else {
            return Err(NO_DIR.into());
        };
        let mut st = self.state.lock();
        if st.loading {
            return Err(larder_commands::persistence::LOADING_ERR.into());
        }
        if let Some((running, _)) = st.running {
            // Redis's replies (bgsaveCommand, bgrewriteaofCommand), with a log rewrite in the
            // place of Redis's AOF child.
            return match (kind, running) {
                (Kind::Save, Kind::Save) => Err("ERR Background save already in progress".into()),
                (Kind::Save, Kind::Rewrite) if schedule => {
                    st.scheduled = Some(Kind::Save);
                    Ok("Background saving scheduled")
                }
                (Kind::Save, Kind::Rewrite) => Err("ERR Another child process is active (AOF?): can't BGSAVE right now. Use BGSAVE SCHEDULE in order to schedule a BGSAVE whenever possible.".into()),
                (Kind::Rewrite, Kind::Rewrite) => Err(
                    "ERR Background append only file rewriting already in progress".into(),
                ),
                (Kind::Rewrite, Kind::Save) => {
                    st.scheduled = Some(Kind::Rewrite);
                    Ok("Background append only file rewriting scheduled")
                }
            };
        }
        st.requested = Some(kind);
        self.wake.notify_all();
        Ok(match kind {
            Kind::Save => "Background saving started",
            Kind::Rewrite => "Background append only file rewriting started",
        })
    }
}

impl Persistence for Runtime {
    fn status(&self) -> Status {
        let st = self.state.lock();
        let log = self.log.get();
        let (fsyncs, groups, current, buffered, failed) = match log.as_ref() {
            Some(l) => (
                l.stats.fsyncs.load(Ordering::Relaxed),
                l.stats.fsynced_groups.load(Ordering::Relaxed),
                l.stats.current_size.load(Ordering::Relaxed),
                l.buffered(),
                l.stats.failed.load(Ordering::Relaxed),
            ),
            None => (0, 0, 0, 0, false),
        };
        let running = |k: Kind| st.running.filter(|(r, _)| *r == k);
        let elapsed = |k: Kind| running(k).map_or(-1, |(_, t)| t.elapsed().as_secs() as i64);
        Status {
            loading: st.loading,
            loading_start_s: st.loading_started_s,
            loading_total_bytes: st.loading_total_bytes,
            loading_loaded_bytes: st.loading_done_bytes,
            loading_loaded_keys: self.keys() as u64,
            loading_eta_s: st.loading_eta_s,
            changes_since_save: self.writes().saturating_sub(st.writes_at_save),
            bgsave_in_progress: running(Kind::Save).is_some(),
            last_save_s: st.last_save_s,
            last_bgsave_ok: st.last_bgsave_ok,
            last_bgsave_time_s: st.last_bgsave_time_s,
            current_bgsave_time_s: elapsed(Kind::Save),
            saves: st.saves,
            save_keys_processed: if st.running.is_some() {
                st.keys_written
            } else {
                0
            },
            save_keys_total: if st.running.is_some() {
                st.keys_total
            } else {
                0
            },
            last_load_keys_loaded: st.last_load_keys_loaded,
            last_load_keys_expired: st.last_load_keys_expired,
            aof_enabled: log.is_some(),
            aof_rewrite_in_progress: running(Kind::Rewrite).is_some(),
            aof_rewrite_scheduled: st.scheduled == Some(Kind::Rewrite),
            aof_last_rewrite_time_s: st.last_rewrite_time_s,
            aof_current_rewrite_time_s: elapsed(Kind::Rewrite),
            aof_last_bgrewrite_ok: st.last_rewrite_ok,
            aof_rewrites: st.rewrites,
            aof_last_write_ok: !failed,
            aof_current_size: current,
            aof_base_size: st.log_size_at_snapshot,
            aof_buffer_length: buffered,
            aof_fsyncs: fsyncs,
            aof_groups_per_fsync: if fsyncs == 0 {
                0.0
            } else {
                groups as f64 / fsyncs as f64
            },
        }
    }

    fn write_log(&self) {
        if let Some(log) = self.log.get() {
            log.write_pending();
            if larder_commands::persistence::replies_wait_for_fsync(&self.server) {
                log.sync();
            }
        }
    }

    fn save(&self) -> Result<(), String> {
        let Some(dir) = &self.dir else {
            return Err(NO_DIR.into());
        };
        if self.state.lock().loading {
            return Err(larder_commands::persistence::LOADING_ERR.into());
        }
        self.snapshot(dir, Kind::Save)
            .map_err(|e| format!("ERR {e:#}"))
    }

    fn bgsave(&self, schedule: bool) -> Result<&'static str, String> {
        self.start_background(Kind::Save, schedule)
    }

    fn rewrite(&self) -> Result<&'static str, String> {
        if self.log.get().is_none() {
            // Redis rewrites an AOF even when appendonly is off (it writes a fresh one);
            // larder's log rewrite is a snapshot, which is what BGSAVE does.
            return self
                .start_background(Kind::Save, false)
                .map(|_| "Background append only file rewriting started");
        }
        self.start_background(Kind::Rewrite, false)
    }

    fn reload(&self, shards: &mut dyn HeldShards) -> Result<(), String> {
        let Some(dir) = &self.dir else {
            return Err(NO_DIR.into());
        };
        if self.state.lock().running.is_some() {
            return Err("ERR Background save already in progress".into());
        }
        let log = self.log.get().cloned();
        let keys = reload::reload(&self.server, dir, log.as_ref(), shards)
            .map_err(|e| format!("ERR Error trying to load the RDB dump: {e:#}"))?;
        tracing::info!(keys, "DEBUG RELOAD: dataset saved and loaded back");
        Ok(())
    }

    fn loadaof(&self, shards: &mut dyn HeldShards) -> Result<(), String> {
        let (Some(dir), Some(log)) = (&self.dir, self.log.get().cloned()) else {
            return Err("ERR the append-only log is off (--appendonly no)".into());
        };
        let keys = reload::loadaof(&self.server, dir, &log, shards)
            .map_err(|e| format!("ERR Error loading the append-only log: {e:#}"))?;
        tracing::info!(
            keys,
            "DEBUG LOADAOF: dataset loaded back from the data directory"
        );
        Ok(())
    }
}
