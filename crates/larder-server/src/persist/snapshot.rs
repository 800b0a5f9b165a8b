//! Snapshots on disk: taking one (to a temporary file, fsynced, renamed, the directory
//! fsynced, then the logs it replaces removed), loading one, and checking one.

use std::fs::File;
use std::io::{BufReader, BufWriter};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use larder_commands::config::Param;
use larder_commands::script::Restore;
use larder_commands::Server;
use larder_persist::snapshot::{self, SnapshotReader, SnapshotStats};

use super::dir::DataDir;
use super::log::Log;

/// Bytes buffered between the capture and the file.
const WRITE_BUFFER: usize = 1 << 20;

/// Take a snapshot of `server`'s keyspace into `dir`. With a log, the log restarts at the
/// snapshot's point (a new file), and once the snapshot is durable the older logs and
/// snapshots go. `progress` gets the entries written so far.
pub fn take(
    server: &Server,
    dir: &DataDir,
    log: Option<&Arc<Log>>,
    progress: impl FnMut(u64),
) -> anyhow::Result<SnapshotStats> {
    let tmp = dir.path().join("snapshot-in-progress.lsnap.tmp");
    if let Some(log) = log {
        log.prepare_rotation()
            .context("creating the log file the snapshot starts")?;
    }
    let result = write(server, log, &tmp, progress);
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    let stats = result?;
    let path = dir.snapshot_path(stats.feed_seq);
    std::fs::rename(&tmp, &path).with_context(|| format!("renaming to {}", path.display()))?;
    dir.sync().context("syncing the data directory")?;
    if let Some(log) = log {
        // The writer switches files when it reaches the point; the old files may go only
        // after that (until then it may still be writing groups to the current one).
        let deadline = Instant::now() + Duration::from_secs(30);
        while log.rotated_to() < stats.feed_seq && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    remove_replaced(dir, stats.feed_seq, log.map(|l| l.rotated_to()));
    Ok(stats)
}

fn write(
    server: &Server,
    log: Option<&Arc<Log>>,
    tmp: &Path,
    progress: impl FnMut(u64),
) -> anyhow::Result<SnapshotStats> {
    if server.config.num(Param::AofTestFailWrites) != 0 {
        return Err(std::io::Error::from_raw_os_error(libc::ENOSPC))
            .with_context(|| format!("writing {}", tmp.display()));
    }
    let file = File::create(tmp).with_context(|| format!("creating {}", tmp.display()))?;
    let out = BufWriter::with_capacity(WRITE_BUFFER, file);
    let limits = larder_commands::config::limits(&server.config);
    let feed = server.keyspace.feed();
    let compress = server.config.num(Param::SnapshotCompression) != 0;
    let (out, stats) = snapshot::write_snapshot(
        &server.keyspace,
        out,
        &limits,
        compress,
        |_| {
            let seq = feed.last_seq();
            if let Some(log) = log {
                log.rotate(seq);
            }
            // Read while every shard is held, as the keys' point is taken.
            (seq, server.scripts.library_codes())
        },
        progress,
    )
    .map_err(|e| anyhow::anyhow!("writing {}: {e}", tmp.display()))?;
    let file = out
        .into_inner()
        .map_err(|e| anyhow::anyhow!("writing {}: {}", tmp.display(), e.error()))?;
    file.sync_all()
        .with_context(|| format!("syncing {}", tmp.display()))?;
    Ok(stats)
}

/// After snapshot `seq` is durable: the older snapshots, and the logs of groups it holds
/// (every log that starts before it, once the log has moved past them), are removed.
fn remove_replaced(dir: &DataDir, seq: u64, log_at: Option<u64>) {
    let Ok((snapshots, logs)) = dir.list() else {
        return;
    };
    for s in snapshots.into_iter().filter(|&s| s < seq) {
        let _ = std::fs::remove_file(dir.snapshot_path(s));
    }
    let log_at = log_at.unwrap_or(u64::MAX);
    for l in logs.into_iter().filter(|&l| l < seq && l < log_at) {
        let _ = std::fs::remove_file(dir.log_path(l));
    }
    let _ = dir.sync();
}

/// Load snapshot `path` into `server`'s keyspace, and its function libraries into the
/// registry. Returns (keys loaded, keys skipped as expired, the snapshot's feed sequence).
pub fn load(
    server: &Server,
    path: &Path,
    mut progress: impl FnMut(u64, u64),
) -> anyhow::Result<(u64, u64, u64)> {
    let file = File::open(path).with_context(|| format!("opening {}", path.display()))?;
    let limits = larder_commands::config::limits(&server.config);
    let mut loaded = 0;
    let (meta, libraries) = snapshot::load_snapshot(
        BufReader::with_capacity(WRITE_BUFFER, file),
        &server.keyspace,
        &limits,
        larder_engine::now_ms(),
        |keys, bytes| {
            loaded = keys;
            progress(keys, bytes);
        },
    )
    .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    restore_libraries(server, libraries, Restore::Replace, path)?;
    let keys = (0..server.keyspace.db_count())
        .map(|d| server.keyspace.db(d).len() as u64)
        .sum::<u64>();
    Ok((keys, loaded.saturating_sub(keys), meta.feed_seq))
}

/// Hand the function libraries read from `path` to `server`'s registry with `policy`; a
/// library that does not load stops the load, as it stops Redis's.
pub fn restore_libraries(
    server: &Server,
    codes: Vec<String>,
    policy: Restore,
    path: &Path,
) -> anyhow::Result<()> {
    let n = codes.len();
    server
        .scripts
        .restore_libraries(server, codes, policy)
        .map_err(|e| anyhow::anyhow!("{}: loading its function libraries: {e}", path.display()))?;
    if n > 0 {
        tracing::info!(file = %path.display(), libraries = n, "function libraries loaded");
    }
    Ok(())
}

/// Read a snapshot through without loading it: its summary, or what is wrong.
pub fn check(path: &Path) -> anyhow::Result<String> {
    let file = File::open(path).with_context(|| format!("opening {}", path.display()))?;
    let limits = larder_engine::Limits::default();
    let mut reader =
        SnapshotReader::open(BufReader::new(file), &limits).map_err(|e| anyhow::anyhow!("{e}"))?;
    let meta = *reader.meta();
    let libraries = match reader.libraries().len() {
        0 => String::new(),
        n => format!(" and {n} function libraries"),
    };
    let mut keys = 0u64;
    for record in reader.by_ref() {
        record.map_err(|e| anyhow::anyhow!("{e}"))?;
        keys += 1;
    }
    Ok(format!(
        "{keys} keys{libraries} in {} databases, consistent at sequence {}",
        meta.databases, meta.feed_seq
    ))
}
