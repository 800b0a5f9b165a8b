//! Databases, shard routing, multi-shard locking, SCAN, and the active expiry cycle.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::{Mutex, MutexGuard};

use crate::entry::{Entry, ObjectKind};
use crate::shard::{hash_key, Shard, SlotId};

/// Shards per database. A power of two; with 5M keys a shard holds ~20k, so the largest
/// single index resize moves a few hundred KiB and never pauses clients for long.
pub const SHARDS_PER_DB: usize = 256;
const SHARD_BITS: u32 = SHARDS_PER_DB.trailing_zeros();
/// Shard choice uses hash bits 40.. so it is independent of the index's bucket bits (low) and
/// of hashbrown's control byte (top 7 bits).
const SHARD_SHIFT: u32 = 40;

/// Most keys one shard reclaims per active expiry pass, so a mass expiry never holds a shard
/// lock for long.
const EXPIRE_BATCH: usize = 512;

struct ShardCell {
    shard: Mutex<Shard>,
    /// Earliest deadline in the shard (u64::MAX = none); read without the lock by the expiry
    /// cycle. Kept exact by `ShardRef`'s drop.
    deadline_hint: AtomicU64,
}

/// A locked shard. Dropping it publishes the shard's earliest deadline to the expiry cycle.
pub struct ShardRef<'a> {
    guard: MutexGuard<'a, Shard>,
    cell: &'a ShardCell,
    keyspace: &'a Shared,
}

impl std::ops::Deref for ShardRef<'_> {
    type Target = Shard;
    #[inline]
    fn deref(&self) -> &Shard {
        &self.guard
    }
}

impl std::ops::DerefMut for ShardRef<'_> {
    #[inline]
    fn deref_mut(&mut self) -> &mut Shard {
        &mut self.guard
    }
}

impl Drop for ShardRef<'_> {
    #[inline]
    fn drop(&mut self) {
        let next = self.guard.next_deadline_ms().unwrap_or(u64::MAX);
        if self.cell.deadline_hint.load(Ordering::Relaxed) != next {
            self.cell.deadline_hint.store(next, Ordering::Relaxed);
            self.keyspace.deadline_published(next);
        }
    }
}

/// State shared by all databases and the expiry thread.
struct Shared {
    /// When the expiry thread plans to wake (Unix ms).
    expiry_wake_ms: AtomicU64,
    expiry_thread: Mutex<Option<std::thread::Thread>>,
    /// Keys removed because their deadline passed (INFO stats `expired_keys`).
    expired_keys: AtomicU64,
}

impl Shared {
    #[inline]
    fn deadline_published(&self, at_ms: u64) {
        if at_ms < self.expiry_wake_ms.load(Ordering::Relaxed) {
            self.expiry_wake_ms.store(at_ms, Ordering::Relaxed);
            if let Some(t) = self.expiry_thread.lock().as_ref() {
                t.unpark();
            }
        }
    }
}

/// One numbered database: a fixed array of shards.
pub struct Db {
    cells: Box<[ShardCell]>,
    shared: Arc<Shared>,
}

/// Several shards of one or more databases locked at once, in a fixed global order.
pub struct DbGuards<'a> {
    guards: Vec<((usize, usize), ShardRef<'a>)>,
}

impl<'a> DbGuards<'a> {
    /// The locked shard `shard` of database `db`.
    ///
    /// # Panics
    /// If that shard was not locked: a broken invariant in the caller.
    pub fn get(&mut self, db: usize, shard: usize) -> &mut ShardRef<'a> {
        let i = self
            .guards
            .binary_search_by_key(&(db, shard), |(k, _)| *k)
            .unwrap_or_else(|_| panic!("shard {db}/{shard} not locked"));
        &mut self.guards[i].1
    }

    /// All locked shards.
    pub fn iter_mut(&mut self) -> impl Iterator<Item = &mut ShardRef<'a>> {
        self.guards.iter_mut().map(|(_, g)| g)
    }
}

impl Db {
    fn new(first_shard_id: u32, shared: Arc<Shared>) -> Db {
        let cells = (0..SHARDS_PER_DB)
            .map(|i| ShardCell {
                shard: Mutex::new(Shard::new(first_shard_id + i as u32)),
                deadline_hint: AtomicU64::new(u64::MAX),
            })
            .collect();
        Db { cells, shared }
    }

    /// Hash a key and pick its shard.
    #[inline]
    pub fn route(key: &[u8]) -> (usize, u64) {
        let hash = hash_key(key);
        (((hash >> SHARD_SHIFT) as usize) & (SHARDS_PER_DB - 1), hash)
    }

    /// Lock one shard.
    #[inline]
    pub fn lock(&self, shard: usize) -> ShardRef<'_> {
        let cell = &self.cells[shard];
        ShardRef {
            guard: cell.shard.lock(),
            cell,
            keyspace: &self.shared,
        }
    }

    /// Lock the shard that owns `key`; returns it with the key's hash.
    #[inline]
    pub fn lock_key(&self, key: &[u8]) -> (ShardRef<'_>, u64) {
        let (shard, hash) = Db::route(key);
        (self.lock(shard), hash)
    }

    /// Number of keys (expired ones not yet reclaimed included, as Redis's DBSIZE).
    pub fn len(&self) -> usize {
        self.cells.iter().map(|c| c.shard.lock().len()).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Number of keys with a deadline.
    pub fn volatile_len(&self) -> usize {
        self.cells
            .iter()
            .map(|c| c.shard.lock().volatile_len())
            .sum()
    }

    /// Approximate bytes held by this database.
    pub fn used_bytes(&self) -> usize {
        self.cells.iter().map(|c| c.shard.lock().used_bytes()).sum()
    }

    /// Remove every key. Returns the removed slabs so the caller may free them elsewhere
    /// (FLUSHDB ASYNC).
    pub fn clear(&self) -> Vec<Vec<Vec<Entry>>> {
        (0..SHARDS_PER_DB).map(|i| self.lock(i).clear()).collect()
    }

    /// Visit every live key (KEYS). Shards are locked one at a time.
    pub fn for_each(&self, now_ms: u64, mut visit: impl FnMut(&Entry)) {
        for i in 0..SHARDS_PER_DB {
            let shard = self.lock(i);
            for e in shard.iter() {
                if !e.is_expired(now_ms) {
                    visit(e);
                }
            }
        }
    }

    /// A random live key, or `None` if the database is empty (RANDOMKEY).
    pub fn random_key(&self, seed: u64, now_ms: u64) -> Option<Vec<u8>> {
        let start = (seed as usize) % SHARDS_PER_DB;
        for attempt in 0..SHARDS_PER_DB * 2 {
            let shard = self.lock((start + attempt) % SHARDS_PER_DB);
            if shard.is_empty() {
                continue;
            }
            let n = (seed >> 8).wrapping_add(attempt as u64) as usize;
            if let Some(e) = shard.nth_live(n) {
                if !e.is_expired(now_ms) {
                    return Some(e.key().to_vec());
                }
            }
        }
        None
    }

    /// One SCAN step. The cursor is `slot << SHARD_BITS | shard`, so it is the position in a
    /// walk over shards in order, each shard in slot order. A key present for the whole scan
    /// keeps its slot, so it is returned at least once; growth and shrinking of the index
    /// never move slots. Returns the next cursor (0 when done) and the matching keys.
    pub fn scan(
        &self,
        cursor: u64,
        count: usize,
        filter: &ScanFilter<'_>,
        now_ms: u64,
    ) -> (u64, Vec<Vec<u8>>) {
        let mut shard = (cursor & (SHARDS_PER_DB as u64 - 1)) as usize;
        let mut slot = (cursor >> SHARD_BITS) as SlotId;
        let mut keys = Vec::new();
        let mut budget = count.max(1);
        while shard < SHARDS_PER_DB {
            let guard = self.lock(shard);
            let before = budget;
            let mut visited = 0;
            let next = guard.scan(slot, budget, |e| {
                visited += 1;
                if filter.accepts(e, now_ms) {
                    keys.push(e.key().to_vec());
                }
            });
            budget = before.saturating_sub(visited);
            match next {
                Some(s) => return (((s as u64) << SHARD_BITS) | shard as u64, keys),
                None => {
                    shard += 1;
                    slot = 0;
                }
            }
            if budget == 0 && shard < SHARDS_PER_DB {
                return ((shard as u64), keys);
            }
        }
        (0, keys)
    }
}

/// What SCAN keeps.
#[derive(Default)]
pub struct ScanFilter<'a> {
    /// Glob pattern (MATCH).
    pub pattern: Option<&'a [u8]>,
    /// Type name (TYPE).
    pub kind: Option<ObjectKind>,
}

impl ScanFilter<'_> {
    fn accepts(&self, e: &Entry, now_ms: u64) -> bool {
        !e.is_expired(now_ms)
            && self.kind.is_none_or(|k| e.kind() == k)
            && self
                .pattern
                .is_none_or(|p| crate::glob::matches(p, e.key(), false))
    }
}

/// All databases.
pub struct Keyspace {
    dbs: Box<[Db]>,
    shared: Arc<Shared>,
}

impl Keyspace {
    /// A keyspace with `databases` empty databases.
    pub fn new(databases: usize) -> Keyspace {
        let shared = Arc::new(Shared {
            expiry_wake_ms: AtomicU64::new(u64::MAX),
            expiry_thread: Mutex::new(None),
            expired_keys: AtomicU64::new(0),
        });
        let dbs = (0..databases.max(1))
            .map(|i| Db::new((i * SHARDS_PER_DB) as u32, Arc::clone(&shared)))
            .collect();
        Keyspace { dbs, shared }
    }

    /// Number of databases.
    #[inline]
    pub fn db_count(&self) -> usize {
        self.dbs.len()
    }

    /// Database `index`.
    ///
    /// # Panics
    /// If `index >= db_count()`; callers validate SELECT arguments first.
    #[inline]
    pub fn db(&self, index: usize) -> &Db {
        &self.dbs[index]
    }

    /// Lock the given `(db, shard)` pairs in global order (deadlock-free), deduplicated.
    pub fn lock_many(&self, mut which: Vec<(usize, usize)>) -> DbGuards<'_> {
        which.sort_unstable();
        which.dedup();
        let guards = which
            .into_iter()
            .map(|(d, s)| ((d, s), self.dbs[d].lock(s)))
            .collect();
        DbGuards { guards }
    }

    /// Lock every shard of the given databases (SWAPDB).
    pub fn lock_dbs(&self, dbs: &[usize]) -> DbGuards<'_> {
        let which = dbs
            .iter()
            .flat_map(|&d| (0..SHARDS_PER_DB).map(move |s| (d, s)))
            .collect();
        self.lock_many(which)
    }

    /// Swap the contents of two databases. Connections that selected either see the other's
    /// data from their next command on.
    pub fn swap_dbs(&self, a: usize, b: usize) {
        if a == b {
            return;
        }
        let mut guards = self.lock_dbs(&[a, b]);
        for s in 0..SHARDS_PER_DB {
            let mut sa = std::mem::replace(&mut **guards.get(a, s), Shard::new(0));
            std::mem::swap(&mut sa, &mut **guards.get(b, s));
            **guards.get(a, s) = sa;
        }
    }

    /// Keys removed by expiry so far (lazy and active).
    pub fn expired_keys(&self) -> u64 {
        self.shared.expired_keys.load(Ordering::Relaxed)
    }

    /// Count keys expired lazily by a command.
    pub fn note_expired(&self, n: u64) {
        self.shared.expired_keys.fetch_add(n, Ordering::Relaxed);
    }

    /// One active expiry pass over all shards whose earliest deadline is due. Returns the
    /// number of keys removed and the next deadline (u64::MAX if none).
    pub fn expire_cycle(
        &self,
        now_ms: u64,
        mut on_expired: impl FnMut(usize, &Entry),
    ) -> (usize, u64) {
        let mut removed = 0;
        let mut next = u64::MAX;
        for (d, db) in self.dbs.iter().enumerate() {
            for (s, cell) in db.cells.iter().enumerate() {
                let hint = cell.deadline_hint.load(Ordering::Relaxed);
                if hint <= now_ms {
                    let mut shard = db.lock(s);
                    removed += shard.expire_due(now_ms, EXPIRE_BATCH, |e| on_expired(d, e));
                    next = next.min(shard.next_deadline_ms().unwrap_or(u64::MAX));
                } else {
                    next = next.min(hint);
                }
            }
        }
        self.shared
            .expired_keys
            .fetch_add(removed as u64, Ordering::Relaxed);
        (removed, next)
    }

    /// Run the active expiry cycle on the current thread until `stop` returns true. Sleeps
    /// until the earliest deadline (at most `idle_ms`), and is woken early when a command sets
    /// an earlier one, so keys disappear within about a millisecond of their deadline.
    pub fn run_expiry(
        &self,
        idle_ms: u64,
        stop: impl Fn() -> bool,
        mut on_expired: impl FnMut(usize, &Entry),
    ) {
        *self.shared.expiry_thread.lock() = Some(std::thread::current());
        while !stop() {
            let now = crate::clock::now_ms();
            // Publish "awake until further notice" before scanning so that a deadline set
            // during the pass is noticed on the next one.
            self.shared.expiry_wake_ms.store(0, Ordering::Relaxed);
            let (removed, next) = self.expire_cycle(now, &mut on_expired);
            let now = crate::clock::now_ms();
            let wake = if removed > 0 && next <= now {
                now
            } else {
                next.min(now + idle_ms)
            };
            self.shared
                .expiry_wake_ms
                .store(wake.max(now + 1), Ordering::Relaxed);
            // Re-check hints published while we were scanning (they saw wake=0 and did not
            // unpark us).
            let missed = self
                .dbs
                .iter()
                .flat_map(|db| db.cells.iter())
                .any(|c| c.deadline_hint.load(Ordering::Relaxed) < wake);
            if missed && removed == 0 && next > now {
                std::thread::park_timeout(Duration::from_millis(1));
                continue;
            }
            let sleep_ms = wake.saturating_sub(now).max(1);
            std::thread::park_timeout(Duration::from_millis(sleep_ms));
        }
        *self.shared.expiry_thread.lock() = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(ks: &Keyspace, db: usize, k: &[u8], at: u64) {
        let (mut s, h) = ks.db(db).lock_key(k);
        if let Some(slot) = s.find(k, h, 0) {
            s.remove(slot);
        }
        s.insert_string(k, h, b"v", at, 0);
    }

    #[test]
    fn scan_sees_every_key_once_without_churn() {
        let ks = Keyspace::new(1);
        for i in 0..5000 {
            set(&ks, 0, format!("key:{i}").as_bytes(), 0);
        }
        let mut cursor = 0;
        let mut all = Vec::new();
        loop {
            let (next, keys) = ks.db(0).scan(cursor, 37, &ScanFilter::default(), 0);
            all.extend(keys);
            if next == 0 {
                break;
            }
            cursor = next;
        }
        all.sort();
        let before = all.len();
        all.dedup();
        assert_eq!(before, all.len());
        assert_eq!(all.len(), 5000);
    }

    #[test]
    fn scan_filters() {
        let ks = Keyspace::new(1);
        set(&ks, 0, b"user:1", 0);
        set(&ks, 0, b"user:2", 0);
        set(&ks, 0, b"other", 0);
        set(&ks, 0, b"user:gone", 1);
        let f = ScanFilter {
            pattern: Some(b"user:*"),
            kind: Some(ObjectKind::String),
        };
        let mut cursor = 0;
        let mut all = Vec::new();
        loop {
            let (next, keys) = ks.db(0).scan(cursor, 1000, &f, 10);
            all.extend(keys);
            if next == 0 {
                break;
            }
            cursor = next;
        }
        all.sort();
        assert_eq!(all, vec![b"user:1".to_vec(), b"user:2".to_vec()]);
    }

    #[test]
    fn expire_cycle_reclaims_due_keys_only() {
        let ks = Keyspace::new(2);
        for i in 0..100 {
            set(&ks, 1, format!("a{i}").as_bytes(), 50);
            set(&ks, 1, format!("b{i}").as_bytes(), 500);
        }
        let mut seen = 0;
        let (removed, next) = ks.expire_cycle(100, |db, _| {
            assert_eq!(db, 1);
            seen += 1;
        });
        assert_eq!((removed, seen, next), (100, 100, 500));
        assert_eq!(ks.db(1).len(), 100);
        assert_eq!(ks.expired_keys(), 100);
    }

    #[test]
    fn expiry_thread_reclaims_on_time() {
        let ks = Arc::new(Keyspace::new(1));
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let t = {
            let (ks, stop) = (Arc::clone(&ks), Arc::clone(&stop));
            std::thread::spawn(move || {
                ks.run_expiry(100, || stop.load(Ordering::Relaxed), |_, _| {})
            })
        };
        std::thread::sleep(Duration::from_millis(20));
        let deadline = crate::clock::now_ms() + 30;
        set(&ks, 0, b"k", deadline);
        let t0 = std::time::Instant::now();
        while !ks.db(0).is_empty() && t0.elapsed() < Duration::from_secs(2) {
            std::thread::sleep(Duration::from_millis(1));
        }
        assert_eq!(ks.db(0).len(), 0, "key not reclaimed");
        stop.store(true, Ordering::Relaxed);
        t.thread().unpark();
        t.join().expect("expiry thread");
    }

    #[test]
    fn swapdb_swaps() {
        let ks = Keyspace::new(2);
        set(&ks, 0, b"a", 0);
        ks.swap_dbs(0, 1);
        assert_eq!(ks.db(0).len(), 0);
        assert_eq!(ks.db(1).len(), 1);
    }
}
