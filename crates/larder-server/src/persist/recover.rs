//! Recovery: the newest snapshot, then the log's groups after it, in sequence order.
//!
//! A torn tail (the last file ends inside a record: a crash during a write) is cut at the
//! last whole record, with a log line saying how much was dropped. Damage anywhere else stops
//! the start with the file, the offset and the repair command.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use larder_commands::{ConnState, Server};
use larder_persist::log::{End, Item, LogReader};
use larder_resp::{Protocol, ReplyBuf};

use super::dir::DataDir;

/// Where recovery left the store: the feed sequence and log offset to continue from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Recovered {
    pub last_seq: u64,
    pub end_offset: u64,
    pub groups: u64,
    pub commands: u64,
    pub keys_loaded: u64,
    pub keys_expired: u64,
    /// The sequence of the snapshot loaded, if any.
    pub snapshot_seq: Option<u64>,
}

/// Progress lines while loading: at most one a second.
pub struct Progress {
    what: &'static str,
    started: Instant,
    last: Instant,
    total_bytes: u64,
}

impl Progress {
    pub fn new(what: &'static str, total_bytes: u64) -> Progress {
        let now = Instant::now();
        Progress {
            what,
            started: now,
            last: now,
            total_bytes,
        }
    }

    /// Log a progress line if a second has passed since the last; returns the ETA in seconds
    /// when it did.
    pub fn tick(&mut self, done_bytes: u64, items: u64) -> Option<u64> {
        if self.last.elapsed() < Duration::from_secs(1) {
            return None;
        }
        self.last = Instant::now();
        let secs = self.started.elapsed().as_secs_f64().max(1e-3);
        let rate = done_bytes as f64 / secs;
        let eta = if rate > 0.0 {
            (self.total_bytes.saturating_sub(done_bytes) as f64 / rate) as u64
        } else {
            0
        };
        tracing::info!(
            "loading {}: {items} {} ({:.1} MB/s, {:.0}%, ETA {eta}s)",
            self.what,
            if self.what == "log" { "groups" } else { "keys" },
            rate / 1e6,
            if self.total_bytes == 0 {
                100.0
            } else {
                done_bytes as f64 * 100.0 / self.total_bytes as f64
            },
        );
        Some(eta)
    }
}

/// The error that stops a start on damage: names the file, the offset and the repair.
fn damaged(dir: &DataDir, path: &Path, what: impl std::fmt::Display) -> anyhow::Error {
    anyhow::anyhow!(
        "{}: {what}. The data directory is damaged; `larder check-data {}` says what is wrong \
         and `larder check-data {} --fix` cuts the log at the damage (losing what follows it)",
        path.display(),
        dir.path().display(),
        dir.path().display()
    )
}

/// Replay the log files `logs` (start sequences, sorted) after sequence `after` into
/// `server`. The last file's torn tail is cut. `status` gets byte progress.
pub fn replay_logs(
    server: &Arc<Server>,
    dir: &DataDir,
    logs: &[u64],
    after: u64,
    delay_us: i64,
    mut on_progress: impl FnMut(u64, u64),
) -> anyhow::Result<Recovered> {
    let mut rec = Recovered {
        last_seq: after,
        ..Recovered::default()
    };
    // The files that hold groups after `after`: the last one starting at or before it, and
    // every later one.
    let first = logs.iter().rposition(|&s| s <= after).unwrap_or(0);
    let files = &logs[first.min(logs.len())..];
    let total: u64 = files
        .iter()
        .map(|&s| std::fs::metadata(dir.log_path(s)).map_or(0, |m| m.len()))
        .sum();
    let mut progress = Progress::new("log", total);
    let mut done = 0u64;
    let handle = larder_commands::state::ClientHandle::detached(server);
    let mut conn = ConnState::new(server, handle, 0);
    conn.loader = true;
    conn.authenticated = true;
    let mut out = ReplyBuf::new(Protocol::Resp2);
    let mut errors = 0u64;
    for (i, &start) in files.iter().enumerate() {
        let path = dir.log_path(start);
        let bytes = std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?;
        let mut reader = LogReader::new(&bytes).map_err(|e| damaged(dir, &path, e))?;
        let header = reader.header();
        if header.start_seq > rec.last_seq {
            bail!(damaged(
                dir,
                &path,
                format!(
                    "the log starts after sequence {}, but recovery reached only {} (a log \
                     file is missing)",
                    header.start_seq, rec.last_seq
                )
            ));
        }
        rec.end_offset = rec.end_offset.max(header.start_offset);
        loop {
            let before = reader.position();
            let Some(group) = reader.next_group().map_err(|e| damaged(dir, &path, e))? else {
                break;
            };
            rec.end_offset = group.offset + (reader.position() - before);
            if group.seq <= rec.last_seq {
                continue;
            }
            for item in &group.items {
                match item {
                    Item::Command { db, argv } => {
                        conn.db = *db as usize;
                        out.truncate(0);
                        larder_commands::execute(server, &mut conn, argv, &mut out);
                        rec.commands += 1;
                        if out.buf.first() == Some(&b'-') {
                            errors += 1;
                            if errors <= 10 {
                                tracing::warn!(
                                    command = %String::from_utf8_lossy(argv[0]),
                                    reply = %String::from_utf8_lossy(&out.buf).trim_end(),
                                    "a logged command failed on replay"
                                );
                            }
                        }
                    }
                    Item::Version {
                        db,
                        key,
                        version,
                        flags,
                    } => restore_version(server, *db as usize, key, *version, *flags),
                }
            }
            rec.last_seq = group.seq;
            rec.groups += 1;
            if delay_us > 0 {
                std::thread::sleep(std::time::Duration::from_micros(delay_us as u64));
            }
            if progress
                .tick(done + reader.position(), rec.groups)
                .is_some()
            {
                on_progress(done + reader.position(), total);
            }
        }
        if let Some(End::Torn { valid_len, dropped }) = reader.end().cloned() {
            if i + 1 != files.len() {
                bail!(damaged(
                    dir,
                    &path,
                    format!("a record is cut at offset {valid_len}, and later log files exist")
                ));
            }
            tracing::warn!(
                file = %path.display(),
                offset = valid_len,
                dropped_bytes = dropped,
                "the log ends in a torn record (a crash during a write): cutting it there"
            );
            let f = std::fs::OpenOptions::new()
                .write(true)
                .open(&path)
                .with_context(|| format!("opening {} to cut its torn tail", path.display()))?;
            f.set_len(valid_len)?;
            f.sync_all()?;
        }
        done += bytes.len() as u64;
    }
    if errors > 0 {
        tracing::warn!(errors, "logged commands failed on replay");
    }
    Ok(rec)
}

/// Give `key` the version and flags the log says its write left.
pub(crate) fn restore_version(server: &Server, db: usize, key: &[u8], version: u64, flags: u32) {
    if db >= server.keyspace.db_count() {
        return;
    }
    let (mut shard, hash) = server.keyspace.db(db).lock_key(key);
    if let Some(slot) = shard.find_raw(key, hash) {
        shard.restore_version(slot, version, flags);
    }
}
