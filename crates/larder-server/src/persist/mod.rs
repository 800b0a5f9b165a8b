//! Persistence at run time: the data directory, the append-only log's writer, snapshots and
//! recovery. The formats are `larder-persist`'s; this module owns the files and threads.
//!
//! Start-up ([`start`]): lock the data directory, mark the server loading (clients get
//! `-LOADING`), and on a thread of its own load the newest snapshot and replay the log after
//! it; then continue the feed's sequence and the log's offset where they ended, start a new
//! log file, subscribe the log to the feed and open for writes.

mod dir;
mod log;
mod recover;

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Instant;

use anyhow::Context;
use larder_commands::config::Param;
use larder_commands::persistence::{Persistence, Status};
use larder_commands::Server;
use larder_engine::Interest;
use parking_lot::Mutex;

pub use dir::DataDir;
use log::{Appender, Fsync, Log, Writer};

/// The persistence runtime of one server.
pub struct Runtime {
    server: Arc<Server>,
    dir: Option<Arc<DataDir>>,
    log: Mutex<Option<Arc<Log>>>,
    writer: Mutex<Option<JoinHandle<()>>>,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    loading: bool,
    loading_started_s: u64,
    loading_total_bytes: u64,
    loading_done_bytes: u64,
    loading_eta_s: u64,
    last_save_s: u64,
    /// Write count (sum of the threads' `writes`) at the last snapshot.
    writes_at_save: u64,
    saves: u64,
    last_bgsave_ok: bool,
    last_bgsave_time_s: i64,
    last_load_keys_loaded: u64,
    last_load_keys_expired: u64,
    log_size_at_snapshot: u64,
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
        log: Mutex::new(None),
        writer: Mutex::new(None),
        state: Mutex::new(State {
            last_save_s: server.started_ms / 1000,
            last_bgsave_ok: true,
            last_bgsave_time_s: -1,
            ..State::default()
        }),
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
            .name("larder-recovery".into())
            .spawn(move || {
                if let Err(e) = rt.recover_and_open(&dir, appendonly) {
                    // Nothing can be served safely: a write now would be lost or would
                    // overwrite what recovery could not read.
                    tracing::error!("{e:#}");
                    eprintln!("larder: {e:#}");
                    std::process::exit(1);
                }
            })
            .context("starting the recovery thread")?;
    }
    Ok(runtime)
}

impl Runtime {
    fn recover_and_open(&self, dir: &Arc<DataDir>, appendonly: bool) -> anyhow::Result<()> {
        let started = Instant::now();
        let (_snapshots, logs) = dir.list()?;
        let rec = recover::replay_logs(&self.server, dir, &logs, 0, |done, total| {
            let mut st = self.state.lock();
            st.loading_done_bytes = done;
            st.loading_total_bytes = total;
        })?;
        let keys = self.keys();
        tracing::info!(
            keys,
            groups = rec.groups,
            commands = rec.commands,
            seconds = format!("{:.3}", started.elapsed().as_secs_f64()),
            "data loaded from disk"
        );
        let feed = self.server.keyspace.feed();
        feed.resume_after(rec.last_seq);
        if appendonly {
            let path = dir.log_path(rec.last_seq);
            let file = log::create_log(dir, &path, rec.last_seq, rec.end_offset)
                .with_context(|| format!("creating {}", path.display()))?;
            let log = Log::new(Arc::clone(&self.server), rec.end_offset);
            let gates = &self.server.gates;
            gates.durable.store(rec.end_offset, Ordering::SeqCst);
            gates
                .wait_durable
                .store(Fsync::of(&self.server) == Fsync::Always, Ordering::SeqCst);
            feed.subscribe(Interest::COMMANDS, Arc::new(Appender(Arc::clone(&log))));
            let writer = Writer::new(Arc::clone(&log), Arc::clone(dir), file, rec.end_offset);
            let handle = std::thread::Builder::new()
                .name("larder-log".into())
                .spawn(move || writer.run())
                .context("starting the log writer")?;
            *self.log.lock() = Some(log);
            *self.writer.lock() = Some(handle);
        }
        {
            let mut st = self.state.lock();
            st.loading = false;
            st.last_load_keys_loaded = keys as u64;
            st.writes_at_save = self.writes();
        }
        self.server.gates.loading.store(false, Ordering::SeqCst);
        Ok(())
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

    /// At shutdown: write and fsync what the log holds, and stop its writer.
    pub fn shutdown(&self) {
        if let Some(log) = self.log.lock().as_ref() {
            log.stop();
        }
        if let Some(handle) = self.writer.lock().take() {
            let _ = handle.join();
        }
    }
}

impl Persistence for Runtime {
    fn status(&self) -> Status {
        let st = self.state.lock();
        let log = self.log.lock();
        let (fsyncs, groups, current, buffered, failed) = match log.as_ref() {
            Some(l) => (
                l.stats.fsyncs.load(Ordering::Relaxed),
                l.stats.fsynced_groups.load(Ordering::Relaxed),
                l.stats.current_size.load(Ordering::Relaxed),
                l.stats.buffered.load(Ordering::Relaxed),
                l.stats.failed.load(Ordering::Relaxed),
            ),
            None => (0, 0, 0, 0, false),
        };
        let done = st.loading_done_bytes;
        Status {
            loading: st.loading,
            loading_start_s: st.loading_started_s,
            loading_total_bytes: st.loading_total_bytes,
            loading_loaded_bytes: done,
            loading_loaded_keys: self.keys() as u64,
            loading_eta_s: st.loading_eta_s,
            changes_since_save: self.writes().saturating_sub(st.writes_at_save),
            bgsave_in_progress: false,
            last_save_s: st.last_save_s,
            last_bgsave_ok: st.last_bgsave_ok,
            last_bgsave_time_s: st.last_bgsave_time_s,
            current_bgsave_time_s: -1,
            saves: st.saves,
            save_keys_processed: 0,
            save_keys_total: 0,
            last_load_keys_loaded: st.last_load_keys_loaded,
            last_load_keys_expired: st.last_load_keys_expired,
            aof_enabled: log.is_some(),
            aof_rewrite_in_progress: false,
            aof_rewrite_scheduled: false,
            aof_last_rewrite_time_s: -1,
            aof_current_rewrite_time_s: -1,
            aof_last_bgrewrite_ok: true,
            aof_rewrites: 0,
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

    fn save(&self) -> Result<(), String> {
        Err("ERR snapshots are not available yet".into())
    }

    fn bgsave(&self, _schedule: bool) -> Result<&'static str, String> {
        Err("ERR snapshots are not available yet".into())
    }

    fn rewrite(&self) -> Result<&'static str, String> {
        Err("ERR snapshots are not available yet".into())
    }

    fn reload(&self, _server: &Server) -> Result<(), String> {
        Err("ERR snapshots are not available yet".into())
    }
}
