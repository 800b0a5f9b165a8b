//! The append-only log at run time: a feed consumer that encodes every committed group into
//! a buffer ([`Appender`]); the workers, once per event-loop turn and before they send the
//! turn's replies, write that buffer to the current log file ([`Log::write_pending`]); and an
//! fsync thread ([`Syncer`]) that makes it durable under the `appendfsync` policy.
//!
//! - Every policy: a reply that acknowledges a write leaves only after the write's record is
//!   in the file (the page cache), so a crash of the process loses nothing acknowledged. One
//!   `write` per worker turn carries every group of the turn, as Redis writes its AOF buffer
//!   once per event-loop iteration (`beforeSleep`).
//! - `always`: the reply also waits for the fsync that covers the record. The fsync thread
//!   syncs whatever has been written, then publishes the offset now on disk
//!   (`Gates::durable`) and wakes the workers holding replies. Groups written during an fsync
//!   go in the next one, so many clients share each fsync and no client waits for more than
//!   the fsync in progress plus its own.
//! - `everysec`: fsynced once a second by the fsync thread, off the workers' path.
//! - `no`: fsynced when the kernel decides.
//!
//! A failed write or fsync stops the log (`Gates::fail_writes`: writes get `-MISCONF`);
//! only a new snapshot and a new log, written from memory, bring it back (a retried fsync
//! proves nothing on Linux: the kernel may have dropped the dirty pages).

use std::fs::File;
use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use larder_commands::config::Param;
use larder_commands::Server;
use larder_engine::{Change, Consumer};
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

/// Groups encoded but not yet written. Locked by committing threads (briefly) and by the
/// writer while it takes the chunks.
struct Pending {
    chunks: Vec<Chunk>,
    /// The log offset after the last group encoded.
    end_offset: u64,
    /// Groups encoded since the writer last took the chunks.
    groups: u64,
    /// Bytes encoded but not yet written (INFO `aof_buffer_length`).
    buffered: u64,
    /// An empty buffer a writer handed back, for the next chunk: a busy log's chunk grows
    /// to a turn's worth of records once, not again every turn.
    spare: Vec<u8>,
}

/// The largest chunk buffer kept for reuse.
const SPARE_MAX: usize = 4 << 20;

/// The open file and what is on it. Locked by whoever writes (a worker, the fsync thread).
struct FileState {
    file: Arc<File>,
    /// Bytes taken but not yet written (only with `aof-test-drop-unsynced`: they reach the
    /// file at an fsync).
    held: Vec<u8>,
    /// The log offset written to the file (or held).
    written: u64,
    /// Groups written since the last fsync.
    groups_unsynced: u64,
    /// A write or fsync failed: what arrives is dropped until a rotation (a snapshot's new
    /// log) succeeds.
    broken: bool,
    /// The next log file, created (and made durable, empty) ahead of a rotation by the
    /// thread that takes the snapshot, so the worker that reaches the rotation only writes
    /// its header and renames it: no fsync on a worker's path.
    next: Option<File>,
    /// Files rotated away whose tail the next fsync must cover, and whether the directory
    /// (a rename) must be synced with it.
    retired: Vec<Arc<File>>,
    dir_dirty: bool,
}

/// Counters for INFO persistence.
#[derive(Default)]
pub struct LogStats {
    pub fsyncs: AtomicU64,
    pub fsynced_groups: AtomicU64,
    /// Bytes in the log files since the last snapshot.
    pub current_size: AtomicU64,
    /// The last write or fsync failed (INFO `aof_last_write_status`).
    pub failed: AtomicBool,
}

/// The log: shared by the appender (committing threads), the workers (writing) and the fsync
/// thread.
pub struct Log {
    pending: Mutex<Pending>,
    file: Mutex<FileState>,
    dir: Arc<DataDir>,
    /// Wakes the fsync thread (written data under `always`, or stop).
    wake: Condvar,
    wake_lock: Mutex<()>,
    stop: AtomicBool,
    pub stats: LogStats,
    server: Arc<Server>,
    /// The start sequence of the file being written now.
    rotated_to: AtomicU64,
    /// Test switch (`aof-test-drop-unsynced`): bytes reach the file only at an fsync, so a
    /// kill -9 loses exactly what a power loss would.
    drop_unsynced: bool,
}

impl Log {
    /// A log that continues in `file` (holding its header), at log offset `start_offset`.
    pub fn new(
        server: Arc<Server>,
        dir: Arc<DataDir>,
        file: File,
        start_seq: u64,
        start_offset: u64,
    ) -> Arc<Log> {
        let drop_unsynced = server.config.num(Param::AofTestDropUnsynced) != 0;
        server.gates.written.store(start_offset, Ordering::SeqCst);
        server.gates.durable.store(start_offset, Ordering::SeqCst);
        Arc::new(Log {
            pending: Mutex::new(Pending {
                chunks: Vec::new(),
                spare: Vec::new(),
                end_offset: start_offset,
                groups: 0,
                buffered: 0,
            }),
            file: Mutex::new(FileState {
                file: Arc::new(file),
                held: Vec::new(),
                written: start_offset,
                groups_unsynced: 0,
                broken: false,
                next: None,
                retired: Vec::new(),
                dir_dirty: false,
            }),
            dir,
            wake: Condvar::new(),
            wake_lock: Mutex::new(()),
            stop: AtomicBool::new(false),
            stats: LogStats {
                current_size: AtomicU64::new(HEADER_LEN as u64),
                ..LogStats::default()
            },
            server,
            rotated_to: AtomicU64::new(start_seq),
            drop_unsynced,
        })
    }

    /// Create the file the next rotation switches to (before a snapshot's point, off the
    /// workers' path: the creation's fsyncs happen here).
    pub fn prepare_rotation(&self) -> std::io::Result<()> {
        let path = self.dir.path().join(NEXT_LOG);
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(true)
            .write(true)
            .open(&path)?;
        file.sync_all()?;
        self.dir.sync()?;
        self.file.lock().next = Some(file);
        Ok(())
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
        self.server.gates.log_dirty.store(true, Ordering::Release);
    }

    /// The start sequence of the log file being written now.
    pub fn rotated_to(&self) -> u64 {
        self.rotated_to.load(Ordering::Acquire)
    }

    /// Bytes encoded but not yet written (INFO `aof_buffer_length`).
    pub fn buffered(&self) -> u64 {
        self.pending.lock().buffered
    }

    /// Write every group committed so far to the file (the page cache: readable by a replay,
    /// not necessarily durable). False if the log is broken.
    pub fn write_now(&self) -> bool {
        self.write_pending();
        !self.stats.failed.load(Ordering::Relaxed)
    }

    /// Ask the fsync thread to write and fsync what is pending and stop.
    pub fn stop(&self) {
        self.stop.store(true, Ordering::SeqCst);
        let _guard = self.wake_lock.lock();
        self.wake.notify_all();
    }

    /// Write every pending group to the file, with one `write` (rotations included), and
    /// publish the written offset. Called by each worker once per turn before it sends
    /// replies, and by the fsync thread.
    pub fn write_pending(&self) {
        let mut f = self.file.lock();
        // Taken under the file lock, so two writers cannot write chunks out of order.
        let (chunks, groups) = {
            let mut p = self.pending.lock();
            self.server.gates.log_dirty.store(false, Ordering::Relaxed);
            p.buffered = 0;
            (std::mem::take(&mut p.chunks), std::mem::take(&mut p.groups))
        };
        if chunks.is_empty() {
            return;
        }
        f.groups_unsynced += groups;
        let mut result = Ok(());
        let mut spare = Vec::new();
        for chunk in chunks {
            result = match chunk {
                Chunk::Bytes(mut bytes) => {
                    let r = if f.broken {
                        // Stopped until a snapshot restarts the log: dropped (its writers got
                        // -MISCONF, or were acknowledged before the failure).
                        Ok(())
                    } else {
                        larder_persist::log::seal(&mut bytes);
                        self.write(&mut f, &bytes)
                    };
                    if bytes.capacity() > spare.capacity() && bytes.capacity() <= SPARE_MAX {
                        bytes.clear();
                        spare = bytes;
                    }
                    r
                }
                Chunk::Rotate {
                    start_seq,
                    start_offset,
                } => self.rotate_file(&mut f, start_seq, start_offset),
            };
            if result.is_err() {
                break;
            }
        }
        if spare.capacity() > 0 {
            let mut p = self.pending.lock();
            if p.spare.capacity() < spare.capacity() {
                p.spare = spare;
            }
        }
        match result {
            Ok(()) => {
                self.server.gates.written.store(f.written, Ordering::SeqCst);
                drop(f);
                // Another worker may hold replies for records this call wrote (it found
                // nothing left to write at the end of its turn).
                larder_commands::persistence::wake_durable(&self.server);
            }
            Err(e) => self.failed(&mut f, &e),
        }
    }

    fn write(&self, f: &mut FileState, bytes: &[u8]) -> std::io::Result<()> {
        if self.server.config.num(Param::AofTestFailWrites) != 0 {
            return Err(std::io::Error::from_raw_os_error(libc::ENOSPC));
        }
        if self.drop_unsynced {
            f.held.extend_from_slice(bytes);
        } else {
            (&*f.file).write_all(bytes)?;
            self.stats
                .current_size
                .fetch_add(bytes.len() as u64, Ordering::Relaxed);
        }
        f.written += bytes.len() as u64;
        Ok(())
    }

    /// Continue in a new file: the prepared one gets its header and its name (no fsync here:
    /// the next [`Log::sync`] covers the old file's tail, the new file and the rename).
    fn rotate_file(
        &self,
        f: &mut FileState,
        start_seq: u64,
        start_offset: u64,
    ) -> std::io::Result<()> {
        if !f.broken {
            self.flush_held(f)?;
        }
        let path = self.dir.log_path(start_seq);
        let file = match f.next.take() {
            Some(file) => {
                use std::os::unix::fs::FileExt;
                let header = Header {
                    start_seq,
                    start_offset,
                    created_ms: larder_engine::now_ms(),
                };
                file.write_all_at(&header.encode(), 0)?;
                std::fs::rename(self.dir.path().join(NEXT_LOG), &path)?;
                f.dir_dirty = true;
                let mut file = file;
                std::io::Seek::seek(&mut file, std::io::SeekFrom::Start(HEADER_LEN as u64))?;
                file
            }
            // Not prepared (DEBUG RELOAD): created here, durable at once.
            None => create_log(&self.dir, &path, start_seq, start_offset)?,
        };
        let old = std::mem::replace(&mut f.file, Arc::new(file));
        if !f.broken {
            f.retired.push(old);
        }
        f.held.clear();
        f.written = start_offset;
        f.broken = false;
        self.stats
            .current_size
            .store(HEADER_LEN as u64, Ordering::Relaxed);
        self.stats.failed.store(false, Ordering::Relaxed);
        self.rotated_to.store(start_seq, Ordering::Release);
        Ok(())
    }

    /// With `aof-test-drop-unsynced`: what was held reaches the file now (before an fsync).
    fn flush_held(&self, f: &mut FileState) -> std::io::Result<()> {
        if !f.held.is_empty() {
            let held = std::mem::take(&mut f.held);
            (&*f.file).write_all(&held)?;
            self.stats
                .current_size
                .fetch_add(held.len() as u64, Ordering::Relaxed);
        }
        Ok(())
    }

    /// fdatasync what has been written, off the file lock (writers go on meanwhile), then
    /// publish the durable offset and wake the replies waiting for it. Under `always` the
    /// worker that wrote calls it at once (as Redis's event loop fsyncs before it replies):
    /// whatever other workers wrote meanwhile rides along, and what they write during it
    /// waits for the next.
    pub fn sync(&self) {
        let (file, retired, dir_dirty, upto, groups) = {
            let mut f = self.file.lock();
            if f.broken
                || (self.server.gates.durable.load(Ordering::SeqCst) >= f.written
                    && f.retired.is_empty())
            {
                return;
            }
            if let Err(e) = self.flush_held(&mut f) {
                self.failed(&mut f, &e);
                return;
            }
            (
                Arc::clone(&f.file),
                std::mem::take(&mut f.retired),
                std::mem::take(&mut f.dir_dirty),
                f.written,
                std::mem::take(&mut f.groups_unsynced),
            )
        };
        let result = if self.server.config.num(Param::AofTestFailWrites) != 0 {
            Err(std::io::Error::from_raw_os_error(libc::EIO))
        } else {
            let mut r = Ok(());
            for old in &retired {
                r = r.and_then(|()| old.sync_data());
            }
            r = r.and_then(|()| file.sync_data());
            if dir_dirty {
                r = r.and_then(|()| self.dir.sync());
            }
            r
        };
        let mut f = self.file.lock();
        match result {
            // A rotation in between: this file is retired now, and the next sync covers it.
            Ok(()) if Arc::ptr_eq(&file, &f.file) => {
                self.stats
                    .fsynced_groups
                    .fetch_add(groups, Ordering::Relaxed);
                self.synced(upto);
            }
            Ok(()) => {}
            Err(e) => self.failed(&mut f, &e),
        }
    }

    fn synced(&self, upto: u64) {
        self.stats.fsyncs.fetch_add(1, Ordering::Relaxed);
        self.server.gates.durable.store(upto, Ordering::SeqCst);
        larder_commands::persistence::wake_durable(&self.server);
    }

    fn failed(&self, f: &mut FileState, e: &std::io::Error) {
        tracing::error!(
            error = %e,
            "writing the append-only log failed: refusing writes (-MISCONF) until a snapshot \
             and a new log succeed"
        );
        self.stats.failed.store(true, Ordering::Relaxed);
        f.broken = true;
        f.held.clear();
        self.server.gates.fail_writes(e.to_string());
        // Replies waiting for the log get the error, not a success.
        larder_commands::persistence::wake_durable(&self.server);
    }
}

/// The feed consumer: encodes each group as one log record.
pub struct Appender(pub Arc<Log>);

impl Consumer for Appender {
    fn committed(&self, seq: u64, changes: &[Change]) {
        let log = &self.0;
        let mut p = log.pending.lock();
        if !matches!(p.chunks.last(), Some(Chunk::Bytes(_))) {
            let buf = match std::mem::take(&mut p.spare) {
                b if b.capacity() > 0 => b,
                _ => Vec::with_capacity(16 * 1024),
            };
            p.chunks.push(Chunk::Bytes(buf));
        }
        let offset = p.end_offset;
        let Some(Chunk::Bytes(buf)) = p.chunks.last_mut() else {
            return;
        };
        let mut g = GroupWriter::new(buf, seq, offset);
        encode(&mut g, changes);
        // Every group is recorded, even one with nothing to replay (a read's notices): the
        // sequence numbers in the log stay gapless, which is what recovery checks.
        // The checksum is left to the writer (`write_pending`): this runs under the feed's
        // ordering lock, which every committing thread waits for.
        let len = g.finish_unsealed() as u64;
        p.end_offset += len;
        p.groups += 1;
        p.buffered += len;
        let end = p.end_offset;
        drop(p);
        // Written only when it changes: every commit reads this line, and a store would take
        // it from the other workers each time.
        let dirty = &log.server.gates.log_dirty;
        if !dirty.load(Ordering::Relaxed) {
            dirty.store(true, Ordering::Release);
        }
        larder_commands::persistence::note_committed(end);
    }
}

/// A group's items: each command after its changes, the versions its writes left after it
/// (`larder_engine::replay`, shared with the replication stream).
fn encode(g: &mut GroupWriter<'_>, changes: &[Change]) {
    let stray = larder_engine::replay::replay(changes, g);
    if stray > 0 {
        // A write no command covered: a door forgot to record its command. Replay cannot
        // rebuild it; say so loudly rather than lose it silently.
        tracing::error!(
            keys = stray,
            "a write reached the log without the command that made it; it will not be replayed"
        );
    }
}

/// The fsync thread: under `everysec`, an fsync once a second, off the workers' path; under
/// every policy, it writes (and under `always` fsyncs) what threads other than the workers
/// committed (the expiry thread's removals) at least every 100 ms.
pub struct Syncer(pub Arc<Log>);

impl Syncer {
    pub fn run(self) {
        let log = self.0;
        let mut last_sync = Instant::now();
        loop {
            let policy = Fsync::of(&log.server);
            let stopping = log.stop.load(Ordering::SeqCst);
            if !stopping {
                let wait = match policy {
                    Fsync::Everysec => Duration::from_millis(100)
                        .min(Duration::from_secs(1).saturating_sub(last_sync.elapsed())),
                    _ => Duration::from_millis(100),
                };
                let mut guard = log.wake_lock.lock();
                log.wake
                    .wait_for(&mut guard, wait.max(Duration::from_millis(1)));
            }
            log.write_pending();
            let due = match policy {
                Fsync::Always => true,
                Fsync::Everysec => last_sync.elapsed() >= Duration::from_secs(1),
                Fsync::No => false,
            };
            if due || stopping {
                log.sync();
                last_sync = Instant::now();
            }
            if stopping {
                return;
            }
        }
    }
}

/// The name of a log file prepared for the next rotation.
const NEXT_LOG: &str = "log-next.llog.tmp";

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
