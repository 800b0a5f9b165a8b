//! Atomic replacement of an open cache by a newer file, without blocking readers.
//!
//! A [`SwappingCache`] holds the current [`Cache`] in an [`ArcSwap`]. Readers call
//! [`SwappingCache::load`], which is lock-free and wait-free in the common case, and keep the
//! returned guard for as long as they use borrowed values; a lookup that started on the old
//! mapping finishes on it, and the old file is unmapped when its last guard is dropped.
//!
//! Two ways to publish a new file are watched:
//! - **rename over a path** ([`SwappingCache::watch_path`]): build the new file elsewhere in the
//!   same directory (the builder already does this) and rename it onto the watched path. The
//!   watcher notices the new inode.
//! - **pointer file** ([`SwappingCache::watch_pointer`]): a small text file holding the path of
//!   the current cache file (relative paths are relative to the pointer's directory). Publish by
//!   writing a new pointer file and renaming it over the old one.
//!
//! [`SwappingCache::refresh`] checks once; [`SwappingCache::spawn_watcher`] polls in a thread.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, SystemTime};

use arc_swap::{ArcSwap, Guard};

use crate::error::Error;
use crate::reader::Cache;

/// What identifies one published file: a rename or rewrite changes at least one field.
#[derive(Clone, Debug, PartialEq, Eq)]
struct FileId {
    path: PathBuf,
    len: u64,
    modified: Option<SystemTime>,
    #[cfg(unix)]
    dev_ino: (u64, u64),
}

impl FileId {
    fn of(path: &Path) -> Result<FileId, Error> {
        let meta = std::fs::metadata(path)?;
        Ok(FileId {
            path: path.to_path_buf(),
            len: meta.len(),
            modified: meta.modified().ok(),
            #[cfg(unix)]
            dev_ino: {
                use std::os::unix::fs::MetadataExt;
                (meta.dev(), meta.ino())
            },
        })
    }
}

#[derive(Debug)]
enum Source {
    Path(PathBuf),
    Pointer(PathBuf),
}

impl Source {
    /// The cache file the source currently designates.
    fn target(&self) -> Result<PathBuf, Error> {
        match self {
            Source::Path(p) => Ok(p.clone()),
            Source::Pointer(pointer) => {
                let text = std::fs::read_to_string(pointer)?;
                let target = PathBuf::from(text.trim());
                if target.as_os_str().is_empty() {
                    return Err(std::io::Error::other(format!(
                        "pointer file {} is empty",
                        pointer.display()
                    ))
                    .into());
                }
                Ok(match pointer.parent() {
                    Some(dir) if target.is_relative() => dir.join(target),
                    _ => target,
                })
            }
        }
    }
}

/// A cache that can be replaced by a newer file while readers keep reading.
#[derive(Debug)]
pub struct SwappingCache {
    current: ArcSwap<Cache>,
    source: Source,
    /// Serialises refreshes (never taken by readers).
    seen: Mutex<FileId>,
}

impl SwappingCache {
    /// Opens `path` and swaps whenever a different file is renamed onto it.
    pub fn watch_path(path: impl AsRef<Path>) -> Result<SwappingCache, Error> {
        SwappingCache::with_source(Source::Path(path.as_ref().to_path_buf()))
    }

    /// Opens the file named in `pointer` and swaps whenever the pointer names another file or
    /// the named file is replaced.
    pub fn watch_pointer(pointer: impl AsRef<Path>) -> Result<SwappingCache, Error> {
        SwappingCache::with_source(Source::Pointer(pointer.as_ref().to_path_buf()))
    }

    fn with_source(source: Source) -> Result<SwappingCache, Error> {
        let (cache, id) = open_target(&source)?;
        Ok(SwappingCache {
            current: ArcSwap::from_pointee(cache),
            source,
            seen: Mutex::new(id),
        })
    }

    /// The current cache. Lock-free; hold the guard while using values borrowed from it.
    #[inline]
    pub fn load(&self) -> Guard<Arc<Cache>> {
        self.current.load()
    }

    /// The current cache as an owned `Arc`, for long-lived use.
    pub fn load_full(&self) -> Arc<Cache> {
        self.current.load_full()
    }

    /// Replaces the current cache with `cache` directly.
    pub fn store(&self, cache: Cache) {
        self.current.store(Arc::new(cache));
    }

    /// Checks the source once and swaps if it designates a different file. Returns whether it
    /// swapped. A new file that fails to open leaves the current one in place and returns the
    /// error.
    pub fn refresh(&self) -> Result<bool, Error> {
        let mut seen = self
            .seen
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let target = self.source.target()?;
        if FileId::of(&target)? == *seen {
            return Ok(false);
        }
        let (cache, id) = open_target(&self.source)?;
        self.current.store(Arc::new(cache));
        *seen = id;
        Ok(true)
    }

    /// Polls [`SwappingCache::refresh`] every `interval` on a background thread until the
    /// returned handle is dropped. Errors (a half-published or corrupt file) are passed to
    /// `on_error` and the current cache stays in service.
    pub fn spawn_watcher(
        self: &Arc<Self>,
        interval: Duration,
        on_error: impl Fn(&Error) + Send + 'static,
    ) -> Watcher {
        let stop = Arc::new(AtomicBool::new(false));
        let cache = Arc::clone(self);
        let flag = Arc::clone(&stop);
        let thread = std::thread::Builder::new()
            .name("larder-cache-watch".into())
            .spawn(move || {
                while !flag.load(Ordering::Acquire) {
                    if let Err(e) = cache.refresh() {
                        on_error(&e);
                    }
                    std::thread::park_timeout(interval);
                }
            })
            .ok();
        Watcher { stop, thread }
    }
}

fn open_target(source: &Source) -> Result<(Cache, FileId), Error> {
    let target = source.target()?;
    // Identify before opening: if the file is replaced in between, the next refresh sees a
    // different id and opens again, so no change is ever missed.
    let id = FileId::of(&target)?;
    let cache = Cache::open(&target)?;
    Ok((cache, id))
}

/// Stops the background watcher when dropped.
#[derive(Debug)]
pub struct Watcher {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Drop for Watcher {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(t) = self.thread.take() {
            t.thread().unpark();
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builder::{CacheBuilder, Value};
    use std::sync::atomic::AtomicU64;

    fn dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("larder-swap-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).expect("temp dir");
        d
    }

    /// Builds a file where every key maps to `generation`, so a reader can tell a torn view
    /// (keys from two files) from a clean one.
    fn build(path: &Path, generation: i64) {
        let mut b = CacheBuilder::new(path)
            .expect("new")
            .name(format!("gen{generation}"));
        for i in 0..500 {
            b.insert(format!("k{i}"), Value::I64(generation))
                .expect("insert");
        }
        b.finish().expect("finish");
    }

    #[test]
    fn swaps_on_rename_while_readers_read() {
        let d = dir("rename");
        let live = d.join("live.lcache");
        build(&live, 0);
        let cache = Arc::new(SwappingCache::watch_path(&live).expect("open"));
        let stop = Arc::new(AtomicBool::new(false));
        let reads = Arc::new(AtomicU64::new(0));
        let readers: Vec<_> = (0..3)
            .map(|_| {
                let (cache, stop, reads) = (cache.clone(), stop.clone(), reads.clone());
                std::thread::spawn(move || {
                    let mut last = 0;
                    while !stop.load(Ordering::Relaxed) {
                        let c = cache.load();
                        let first = c.get_i64("k0").expect("get").expect("present");
                        // Every key in one guard comes from one file.
                        for i in (0..500).step_by(50) {
                            assert_eq!(c.get_i64(format!("k{i}")).ok(), Some(Some(first)));
                        }
                        assert!(first >= last, "generations never go backwards");
                        last = first;
                        reads.fetch_add(1, Ordering::Relaxed);
                    }
                    last
                })
            })
            .collect();
        for generation in 1..=5 {
            // CacheBuilder writes a temp file beside `live` and renames it over `live`.
            build(&live, generation);
            assert!(cache.refresh().expect("refresh"));
            assert!(!cache.refresh().expect("refresh again"));
            std::thread::sleep(Duration::from_millis(5));
        }
        stop.store(true, Ordering::Relaxed);
        for r in readers {
            assert!(r.join().expect("reader") <= 5);
        }
        assert!(reads.load(Ordering::Relaxed) > 0);
        assert_eq!(cache.load().name(), "gen5");
    }

    #[test]
    fn follows_pointer_file_and_keeps_old_on_bad_target() {
        let d = dir("pointer");
        build(&d.join("v1.lcache"), 1);
        build(&d.join("v2.lcache"), 2);
        std::fs::write(d.join("bad.lcache"), b"not a cache").expect("write");
        let pointer = d.join("CURRENT");
        let publish = |target: &str| {
            std::fs::write(d.join("CURRENT.tmp"), target).expect("write");
            std::fs::rename(d.join("CURRENT.tmp"), &pointer).expect("rename");
        };
        publish("v1.lcache");
        let cache = Arc::new(SwappingCache::watch_pointer(&pointer).expect("open"));
        let held = cache.load_full();
        publish("v2.lcache\n");
        assert!(cache.refresh().expect("refresh"));
        assert_eq!(cache.load().get_i64("k1").ok(), Some(Some(2)));
        assert_eq!(
            held.get_i64("k1").ok(),
            Some(Some(1)),
            "old mapping still readable"
        );
        publish("bad.lcache");
        assert!(cache.refresh().is_err());
        assert_eq!(cache.load().get_i64("k1").ok(), Some(Some(2)));
    }

    #[test]
    fn watcher_thread_picks_up_new_file() {
        let d = dir("watcher");
        let live = d.join("live.lcache");
        build(&live, 1);
        let cache = Arc::new(SwappingCache::watch_path(&live).expect("open"));
        let watcher = cache.spawn_watcher(Duration::from_millis(2), |_| {});
        build(&live, 2);
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while cache.load().get_i64("k0").ok() != Some(Some(2)) {
            assert!(
                std::time::Instant::now() < deadline,
                "watcher never swapped"
            );
            std::thread::sleep(Duration::from_millis(2));
        }
        drop(watcher);
    }
}
