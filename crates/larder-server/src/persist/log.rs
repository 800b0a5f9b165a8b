//! The append-only log at run time: a feed consumer that encodes every committed group into
//! a buffer ([`Appender`]), and a writer thread that writes the buffer to the current log
//! file and fsyncs it under the `appendfsync` policy.
//!
//! - `always`: the writer writes and fsyncs whatever has accumulated, then publishes the
//!   offset now on disk (`Gates::durable`) and wakes the workers; a worker holds a
//!   connection's replies until the log is durable past the connection's last write. Groups
//!   that commit during an fsync go in the next one, so many clients share each fsync and no
//!   client waits for more than the fsync in progress plus its own.
//! - `everysec`: the writer writes as groups arrive (so a crash of the process loses nothing
//!   acknowledged: the bytes are in the page cache) and fsyncs once a second.
//! - `no`: written as they arrive, fsynced when the kernel decides.
//!
//! A failed write or fsync stops the log (`Gates::fail_writes`: writes get `-MISCONF`);
//! only a new snapshot and a new log, written from memory, bring it back (a retried fsync
//! proves nothing on Linux: the kernel may have dropped the dirty pages).

use std::fs::File;
use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use larder_commands::config::Param;
use larder_commands::Server;
use larder_engine::{Change, ChangeKind, Consumer};
use larder_persist::log::{GroupWriter, Header, HEADER_LEN};
use parking_lot::{Condvar, Mutex};

use super::dir::DataDir;

/// `appendfsync`'s values, in the parameter's order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fsync {
    Always,
    Everysec,
    No,
}

impl Fsync {
    pub fn of(server: &Server) -> Fsync {
        match server.config.num(Param::Appendfsync) {
            0 => Fsync::Always,
            1 => Fsync::Everysec,
            _ => Fsync::No,
        }
    }
}

/// What the writer has to do, in order.
enum Chunk {
    /// Encoded groups for the current file.
    Bytes(Vec<u8>),
    /// Close the current file and start `log-<start_seq>`: a snapshot's point.
    Rotate { start_seq: u64, start_offset: u64 },
}

struct Pending {
    chunks: Vec<Chunk>,
    /// The log offset after the last group encoded.
    end_offset: u64,
    /// Groups encoded since the writer last took the chunks.
    groups: u64,
    /// Set when the writer should stop (after writing what is pending).
    stop: bool,
}

/// Counters for INFO persistence.
#[derive(Default)]
pub struct LogStats {
    pub fsyncs: AtomicU64,
    pub fsynced_groups: AtomicU64,
    /// Bytes in the log files since the last snapshot.
    pub current_size: AtomicU64,
    /// Bytes encoded but not yet written.
    pub buffered: AtomicU64,
    /// Bytes lost to a failed write (INFO `aof_last_write_status`).
    pub failed: std::sync::atomic::AtomicBool,
}

/// The state shared by the appender (committing threads) and the writer thread.
pub struct Log {
    pending: Mutex<Pending>,
    wake: Condvar,
    pub stats: LogStats,
    server: Arc<Server>,
    /// The start sequence of the file the writer writes now.
    rotated_to: AtomicU64,
    /// The log offset the writer has handed to the file (page cache) so far.
    written: AtomicU64,
    /// Test switch (`aof-test-drop-unsynced`): bytes reach the file only at an fsync, so a
    /// kill -9 loses exactly what a power loss would.
    drop_unsynced: bool,
}

impl Log {
    /// A log that continues at `start_offset` in the file `file` (already holding its header).
    pub fn new(server: Arc<Server>, start_seq: u64, start_offset: u64) -> Arc<Log> {
        let drop_unsynced = server.config.num(Param::AofTestDropUnsynced) != 0;
        Arc::new(Log {
            pending: Mutex::new(Pending {
                chunks: Vec::new(),
                end_offset: start_offset,
                groups: 0,
                stop: false,
            }),
            wake: Condvar::new(),
            stats: LogStats::default(),
            server,
            rotated_to: AtomicU64::new(start_seq),
            written: AtomicU64::new(start_offset),
            drop_unsynced,
        })
    }

    /// Switch to a new file after the groups committed so far. Call it where no group can
    /// commit (every shard locked: a snapshot's point); `seq` is the feed's last sequence.
    pub fn rotate(&self, seq: u64) {
        let mut p = self.pending.lock();
        let start_offset = p.end_offset;
        p.chunks.push(Chunk::Rotate {
            start_seq: seq,
            start_offset,
        });
        self.wake.notify_one();
    }

    /// The start sequence of the log file being written now.
    pub fn rotated_to(&self) -> u64 {
        self.rotated_to.load(Ordering::Acquire)
    }

    /// Wait until every group committed so far is in the file (the page cache: readable by a
    /// replay, not necessarily durable). False if that took longer than `timeout`, or the
    /// log is broken.
    pub fn wait_written(&self, timeout: Duration) -> bool {
        let end = self.pending.lock().end_offset;
        self.wake.notify_one();
        let deadline = Instant::now() + timeout;
        while self.written.load(Ordering::Acquire) < end {
            if Instant::now() >= deadline || self.stats.failed.load(Ordering::Relaxed) {
                return false;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        true
    }

    /// Ask the writer to write and fsync what is pending and stop.
    pub fn stop(&self) {
        self.pending.lock().stop = true;
        self.wake.notify_one();
    }
}

/// The feed consumer: encodes each group as one log record.
pub struct Appender(pub Arc<Log>);

impl Consumer for Appender {
    fn committed(&self, seq: u64, changes: &[Change]) {
        let log = &self.0;
        let mut p = log.pending.lock();
        let was_idle = p.chunks.is_empty();
        if !matches!(p.chunks.last(), Some(Chunk::Bytes(_))) {
            p.chunks.push(Chunk::Bytes(Vec::with_capacity(4096)));
        }
        let offset = p.end_offset;
        let Some(Chunk::Bytes(buf)) = p.chunks.last_mut() else {
            return;
        };
        let mut g = GroupWriter::new(buf, seq, offset);
        encode(&mut g, changes);
        // Every group is recorded, even one with nothing to replay (a read's notices): the
        // sequence numbers in the log stay gapless, which is what recovery checks.
        let len = g.finish() as u64;
        p.end_offset += len;
        p.groups += 1;
        let end = p.end_offset;
        drop(p);
        log.stats.buffered.fetch_add(len, Ordering::Relaxed);
        larder_commands::persistence::note_committed(end);
        if was_idle {
            log.wake.notify_one();
        }
    }
}

/// A group's items: each command after its changes, the versions its writes left after it.
/// Removals by expiry and eviction are logged as `DEL` where they happened (Redis propagates
/// them so too); a flush or swap that no command covers (memcached's flush_all) as the
/// command that does it.
fn encode(g: &mut GroupWriter<'_>, changes: &[Change]) {
    let mut written: Vec<&Change> = Vec::new();
    let mut uncovered: Vec<&Change> = Vec::new();
    for ch in changes {
        match ch.kind {
            ChangeKind::Expired | ChangeKind::Evicted => {
                g.command(ch.db, &[b"DEL".as_slice(), &ch.key]);
            }
            ChangeKind::Written => written.push(ch),
            ChangeKind::Deleted | ChangeKind::Flushed | ChangeKind::Swapped => uncovered.push(ch),
            ChangeKind::Notice => {}
            ChangeKind::Command => {
                g.command(ch.db, &ch.argv);
                for w in written.drain(..) {
                    g.version(w.db, &w.key, w.version, w.flags);
                }
                if !ch.key.is_empty() {
                    // A door's command for a key's resulting state: its final version and
                    // flags, after (so over) what its changes recorded.
                    g.version(ch.db, &ch.key, ch.version, ch.flags);
                }
                uncovered.clear();
            }
        }
    }
    for ch in uncovered {
        match ch.kind {
            ChangeKind::Deleted => g.command(ch.db, &[b"DEL".as_slice(), &ch.key]),
            ChangeKind::Flushed => g.command(ch.db, &[b"FLUSHDB".as_slice()]),
            ChangeKind::Swapped => {
                let (a, b) = (ch.db.to_string(), ch.class.to_string());
                g.command(0, &[b"SWAPDB".as_slice(), a.as_bytes(), b.as_bytes()]);
            }
            _ => {}
        }
    }
    if !written.is_empty() {
        // A write no command covered: a door forgot to record its command. Replay cannot
        // rebuild it; say so loudly rather than lose it silently.
        tracing::error!(
            keys = written.len(),
            "a write reached the log without the command that made it; it will not be replayed"
        );
    }
}

/// The writer thread's state: the open file and what is on disk.
pub struct Writer {
    log: Arc<Log>,
    dir: Arc<DataDir>,
    file: File,
    /// Bytes taken from the appender but not yet written (only with `drop_unsynced`).
    held: Vec<u8>,
    /// The log offset written to the file, and the one fsynced.
    written: u64,
    synced: u64,
    groups_unsynced: u64,
    last_sync: Instant,
    /// A write or fsync failed: what arrives is dropped until a rotation (a snapshot's new
    /// log) succeeds.
    broken: bool,
}

impl Writer {
    /// A writer appending to `file` (positioned at its end, which is log offset `offset`).
    pub fn new(log: Arc<Log>, dir: Arc<DataDir>, file: File, offset: u64) -> Writer {
        Writer {
            log,
            dir,
            file,
            held: Vec::new(),
            written: offset,
            synced: offset,
            groups_unsynced: 0,
            last_sync: Instant::now(),
            broken: false,
        }
    }

    /// The thread's loop: until stopped, take what the appender has, write it, fsync per
    /// policy.
    pub fn run(mut self) {
        loop {
            let policy = Fsync::of(&self.log.server);
            // CONFIG SET appendfsync takes effect here, within a second.
            self.log
                .server
                .gates
                .wait_durable
                .store(policy == Fsync::Always, Ordering::SeqCst);
            let (chunks, groups, end, stop) = {
                let mut p = self.log.pending.lock();
                if p.chunks.is_empty() && !p.stop {
                    let wait = match policy {
                        Fsync::Everysec if self.synced < self.written => Duration::from_millis(
                            1000u64.saturating_sub(self.last_sync.elapsed().as_millis() as u64),
                        ),
                        _ => Duration::from_secs(1),
                    };
                    self.log
                        .wake
                        .wait_for(&mut p, wait.max(Duration::from_millis(1)));
                }
                let groups = std::mem::take(&mut p.groups);
                (std::mem::take(&mut p.chunks), groups, p.end_offset, p.stop)
            };
            self.groups_unsynced += groups;
            let mut result = Ok(());
            for chunk in chunks {
                result = match chunk {
                    // While broken, the log is stopped until a snapshot restarts it: what
                    // arrives is dropped (its writers got -MISCONF, or were acknowledged
                    // before the failure under everysec).
                    Chunk::Bytes(bytes) if self.broken => {
                        self.log
                            .stats
                            .buffered
                            .fetch_sub(bytes.len() as u64, Ordering::Relaxed);
                        Ok(())
                    }
                    Chunk::Bytes(bytes) => self.write(&bytes),
                    Chunk::Rotate {
                        start_seq,
                        start_offset,
                    } => self.rotate(start_seq, start_offset),
                };
                if result.is_err() {
                    break;
                }
            }
            if self.broken {
                if stop {
                    return;
                }
                continue;
            }
            debug_assert!(result.is_err() || self.written + self.held.len() as u64 == end);
            let due = match policy {
                Fsync::Always => true,
                Fsync::Everysec => self.last_sync.elapsed() >= Duration::from_secs(1),
                Fsync::No => false,
            };
            if result.is_ok() && (due || stop) && (self.synced < end || !self.held.is_empty()) {
                result = self.sync();
            }
            if let Err(e) = result {
                self.failed(&e);
            }
            if stop {
                return;
            }
        }
    }

    fn write(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.log
            .stats
            .buffered
            .fetch_sub(bytes.len() as u64, Ordering::Relaxed);
        if self.log.server.config.num(Param::AofTestFailWrites) != 0 {
            return Err(std::io::Error::from_raw_os_error(libc::ENOSPC));
        }
        if self.log.drop_unsynced {
            self.held.extend_from_slice(bytes);
            return Ok(());
        }
        self.file.write_all(bytes)?;
        self.written += bytes.len() as u64;
        self.log.written.store(self.written, Ordering::Release);
        self.log
            .stats
            .current_size
            .fetch_add(bytes.len() as u64, Ordering::Relaxed);
        Ok(())
    }

    /// fdatasync, then publish the durable offset and wake the replies waiting for it.
    fn sync(&mut self) -> std::io::Result<()> {
        if !self.held.is_empty() {
            let held = std::mem::take(&mut self.held);
            self.file.write_all(&held)?;
            self.written += held.len() as u64;
            self.log.written.store(self.written, Ordering::Release);
            self.log
                .stats
                .current_size
                .fetch_add(held.len() as u64, Ordering::Relaxed);
        }
        self.file.sync_data()?;
        self.synced = self.written;
        self.last_sync = Instant::now();
        let stats = &self.log.stats;
        stats.fsyncs.fetch_add(1, Ordering::Relaxed);
        stats
            .fsynced_groups
            .fetch_add(std::mem::take(&mut self.groups_unsynced), Ordering::Relaxed);
        let gates = &self.log.server.gates;
        gates.durable.store(self.synced, Ordering::SeqCst);
        larder_commands::persistence::wake_durable(&self.log.server);
        Ok(())
    }

    /// Finish the current file (fsynced) and continue in a new one.
    fn rotate(&mut self, start_seq: u64, start_offset: u64) -> std::io::Result<()> {
        if !self.broken {
            self.sync()?;
        }
        let path = self.dir.log_path(start_seq);
        let file = create_log(&self.dir, &path, start_seq, start_offset)?;
        self.file = file;
        self.held.clear();
        self.written = start_offset;
        self.synced = start_offset;
        self.log.written.store(start_offset, Ordering::Release);
        self.broken = false;
        self.log
            .stats
            .current_size
            .store(HEADER_LEN as u64, Ordering::Relaxed);
        self.log.stats.failed.store(false, Ordering::Relaxed);
        self.log.rotated_to.store(start_seq, Ordering::Release);
        Ok(())
    }

    fn failed(&mut self, e: &std::io::Error) {
        tracing::error!(
            error = %e,
            "writing the append-only log failed: refusing writes (-MISCONF) until a snapshot \
             and a new log succeed"
        );
        self.log.stats.failed.store(true, Ordering::Relaxed);
        self.broken = true;
        self.held.clear();
        self.log.server.gates.fail_writes(e.to_string());
        // Replies waiting for durability get the error, not a success.
        larder_commands::persistence::wake_durable(&self.log.server);
    }
}

/// Create a new log file with its header, durable (the file and its directory entry).
pub fn create_log(
    dir: &DataDir,
    path: &std::path::Path,
    start_seq: u64,
    start_offset: u64,
) -> std::io::Result<File> {
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(true)
        .write(true)
        .open(path)?;
    let header = Header {
        start_seq,
        start_offset,
        created_ms: larder_engine::now_ms(),
    };
    file.write_all(&header.encode())?;
    file.sync_all()?;
    dir.sync()?;
    Ok(file)
}
