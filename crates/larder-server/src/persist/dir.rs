//! The data directory: its lock, the names of its files, and the fsyncs that make a rename
//! or a new file durable.
//!
//! ```text
//! larder-data/
//!   LOCK                       held (flock) by the running server
//!   snapshot-<seq>.lsnap       a snapshot consistent at feed sequence <seq>
//!   snapshot-<seq>.lsnap.tmp   one being written (never read; removed at start)
//!   log-<seq>.llog             the log of the groups after <seq>
//! ```
//! Recovery loads the newest snapshot, then replays, in sequence order, the log files from
//! the one that starts at the snapshot's sequence.

use std::fs::{File, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};

pub const SNAPSHOT_EXT: &str = "lsnap";
pub const LOG_EXT: &str = "llog";

/// An open, locked data directory.
pub struct DataDir {
    path: PathBuf,
    /// Holds the lock for as long as the server runs (closing the file releases it).
    _lock: File,
}

impl DataDir {
    /// Create `path` if needed and lock it against a second server.
    pub fn open(path: &Path) -> anyhow::Result<DataDir> {
        std::fs::create_dir_all(path)
            .with_context(|| format!("creating data directory {}", path.display()))?;
        let path = std::fs::canonicalize(path)
            .with_context(|| format!("resolving data directory {}", path.display()))?;
        let lock_path = path.join("LOCK");
        let lock = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .with_context(|| format!("opening {}", lock_path.display()))?;
        if !try_lock(&lock)? {
            bail!(
                "data directory {} is in use by another larder server (its LOCK is held); \
                 stop that server or start this one with another --dir",
                path.display()
            );
        }
        Ok(DataDir { path, _lock: lock })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn snapshot_path(&self, seq: u64) -> PathBuf {
        self.path.join(format!("snapshot-{seq:020}.{SNAPSHOT_EXT}"))
    }

    pub fn log_path(&self, seq: u64) -> PathBuf {
        self.path.join(format!("log-{seq:020}.{LOG_EXT}"))
    }

    /// Remove the temporary files a crash left (an unfinished snapshot, a log file prepared
    /// for a rotation that never happened). Only at start: while the server runs, they are
    /// in use.
    pub fn remove_leftovers(&self) -> anyhow::Result<()> {
        for entry in std::fs::read_dir(&self.path)
            .with_context(|| format!("reading {}", self.path.display()))?
        {
            let entry = entry?;
            let name = entry.file_name();
            if name.to_str().is_some_and(|n| n.ends_with(".tmp")) {
                tracing::info!(file = ?name, "removing a temporary file left by a crash");
                let _ = std::fs::remove_file(entry.path());
            }
        }
        Ok(())
    }

    /// The snapshots and the logs in the directory, each sorted by sequence.
    pub fn list(&self) -> anyhow::Result<(Vec<u64>, Vec<u64>)> {
        let mut snapshots = Vec::new();
        let mut logs = Vec::new();
        for entry in std::fs::read_dir(&self.path)
            .with_context(|| format!("reading {}", self.path.display()))?
        {
            let entry = entry?;
            let name = entry.file_name();
            let Some(name) = name.to_str() else { continue };
            if let Some(seq) = parse_name(name, "snapshot-", SNAPSHOT_EXT) {
                snapshots.push(seq);
            } else if let Some(seq) = parse_name(name, "log-", LOG_EXT) {
                logs.push(seq);
            }
        }
        snapshots.sort_unstable();
        logs.sort_unstable();
        Ok((snapshots, logs))
    }

    /// Make the directory's entries (a new file, a rename, a removal) durable.
    pub fn sync(&self) -> io::Result<()> {
        File::open(&self.path)?.sync_all()
    }
}

fn parse_name(name: &str, prefix: &str, ext: &str) -> Option<u64> {
    name.strip_prefix(prefix)?
        .strip_suffix(ext)?
        .strip_suffix('.')?
        .parse()
        .ok()
}

/// An exclusive, non-blocking `flock`: false when another process holds it.
#[allow(unsafe_code)]
fn try_lock(file: &File) -> anyhow::Result<bool> {
    use std::os::fd::AsRawFd;
    // SAFETY: flock takes a descriptor we own (borrowed for the call) and plain flags.
    let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    if rc == 0 {
        return Ok(true);
    }
    let err = io::Error::last_os_error();
    if err.raw_os_error() == Some(libc::EWOULDBLOCK) {
        return Ok(false);
    }
    Err(err).context("locking the data directory")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_sort() {
        let tmp = std::env::temp_dir().join(format!("larder-dir-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&tmp);
        let dir = DataDir::open(&tmp).expect("open");
        for seq in [30, 4, 100] {
            File::create(dir.log_path(seq)).expect("log");
        }
        File::create(dir.snapshot_path(7)).expect("snapshot");
        let tmp_file = format!("{}.tmp", dir.snapshot_path(9).display());
        File::create(&tmp_file).expect("tmp");
        File::create(dir.path().join("unrelated.txt")).expect("other");
        let (snaps, logs) = dir.list().expect("list");
        assert_eq!(snaps, [7]);
        assert_eq!(logs, [4, 30, 100]);
        assert!(
            Path::new(&tmp_file).exists(),
            "list leaves temporary files alone"
        );
        dir.remove_leftovers().expect("leftovers");
        assert!(!Path::new(&tmp_file).exists(), "leftover tmp removed");
        // A second server is refused while the first holds the lock.
        let second = DataDir::open(&tmp);
        assert!(second.is_err());
        assert!(format!("{:#}", second.err().expect("refused")).contains("in use"));
        drop(dir);
        assert!(
            DataDir::open(&tmp).is_ok(),
            "free again once the first is gone"
        );
        let _ = std::fs::remove_dir_all(&tmp);
    }
}
