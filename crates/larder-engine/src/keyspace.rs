//! Databases, shard routing, locking one shard or several, and the keyspace's counters.
//!
//! Walks over a database (KEYS, RANDOMKEY, SCAN) are in `walk.rs`, the batch prefetch hint in
//! `prefetch.rs`, maxmemory eviction in `eviction.rs` and the active expiry cycle in
//! `expiry.rs`.

use std::ops::Deref;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use parking_lot::{Mutex, MutexGuard};

use crate::entry::{Entry, Object};
use crate::evict::{lfu_decayed, AccessPolicy};
use crate::feed::{ChangeKind, Feed};
use crate::shard::{hash_key, Shard};

mod eviction;
mod expiry;
mod prefetch;
mod walk;
pub use eviction::Eviction;
pub use walk::ScanFilter;

/// Shards per database. A power of two; with 5M keys a shard holds ~20k, so the largest
/// single index resize moves a few hundred KiB and never pauses clients for long.
pub const SHARDS_PER_DB: usize = 256;
const SHARD_BITS: u32 = SHARDS_PER_DB.trailing_zeros();
/// Shard choice uses hash bits 40.. so it is independent of the 32 bits the index is built from
/// (`shard::tag_of`: the low ones).
const SHARD_SHIFT: u32 = 40;

struct ShardCell {
    shard: Mutex<Shard>,
    /// Earliest deadline in the shard (u64::MAX = none); read without the lock by the expiry
    /// cycle. Kept exact by `ShardRef`'s drop.
    deadline_hint: AtomicU64,
    /// The shard's key count, volatile key count and bytes as of its last unlock, so counting
    /// a database (DBSIZE outside a transaction, INFO, the maxmemory check) takes no lock.
    len: AtomicUsize,
    volatile_len: AtomicUsize,
    used_bytes: AtomicUsize,
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
        self.cell.len.store(self.guard.len(), Ordering::Relaxed);
        self.cell
            .volatile_len
            .store(self.guard.volatile_len(), Ordering::Relaxed);
        self.cell
            .used_bytes
            .store(self.guard.used_bytes(), Ordering::Relaxed);
        let next = self.guard.next_deadline_ms().unwrap_or(u64::MAX);
        if self.cell.deadline_hint.load(Ordering::Relaxed) != next {
            self.cell.deadline_hint.store(next, Ordering::Relaxed);
            self.keyspace.deadline_published(next);
        }
        self.keyspace.feed.unlocked();
    }
}

/// State shared by all databases and the expiry thread.
struct Shared {
    /// When the expiry thread plans to wake (Unix ms).
    expiry_wake_ms: AtomicU64,
    expiry_thread: Mutex<Option<std::thread::Thread>>,
    /// Keys removed because their deadline passed (INFO stats `expired_keys`).
    expired_keys: AtomicU64,
    /// Keys removed by maxmemory eviction (INFO stats `evicted_keys`).
    evicted_keys: AtomicU64,
    /// How accesses are recorded; every shard holds a clone.
    policy: Arc<AccessPolicy>,
    /// The change feed; every shard holds a clone.
    feed: Arc<Feed>,
    /// Whether a point-in-time capture runs (`crate::snapshot`): one at a time.
    capturing: std::sync::atomic::AtomicBool,
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
    /// When eviction last found no candidate here after a full walk (Unix ms, 0 = never):
    /// eviction skips this database for a while instead of walking its shards per command.
    evict_empty_at_ms: AtomicU64,
}

/// Several shards of one or more databases locked at once, in a fixed global order.
pub struct DbGuards<'a> {
    guards: Guards<'a>,
}

/// A locked shard with its `(db, shard)`.
type Guard<'a> = ((usize, usize), ShardRef<'a>);

/// The locked shards, sorted: one (most commands and scripts) without a list to allocate.
enum Guards<'a> {
    One(Guard<'a>),
    Many(Vec<Guard<'a>>),
}

impl<'a> std::ops::Deref for Guards<'a> {
    type Target = [Guard<'a>];
    fn deref(&self) -> &[Guard<'a>] {
        match self {
            Guards::One(g) => std::slice::from_ref(g),
            Guards::Many(v) => v,
        }
    }
}

impl std::ops::DerefMut for Guards<'_> {
    fn deref_mut(&mut self) -> &mut Self::Target {
        match self {
            Guards::One(g) => std::slice::from_mut(g),
            Guards::Many(v) => v,
        }
    }
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

    /// Two different locked shards at once.
    ///
    /// # Panics
    /// If either was not locked, or both name the same shard.
    pub fn pair(&mut self, x: (usize, usize), y: (usize, usize)) -> (&mut Shard, &mut Shard) {
        let find = |k: (usize, usize)| {
            self.guards
                .binary_search_by_key(&k, |(g, _)| *g)
                .unwrap_or_else(|_| panic!("shard {k:?} not locked"))
        };
        let (i, j) = (find(x), find(y));
        assert_ne!(i, j, "the same shard twice");
        let (lo, hi) = self.guards.split_at_mut(i.max(j));
        let (first, second) = (&mut *lo[i.min(j)].1, &mut *hi[0].1);
        if i < j {
            (first, second)
        } else {
            (second, first)
        }
    }

    /// Whether shard `shard` of database `db` is among the locked ones.
    pub fn holds(&self, db: usize, shard: usize) -> bool {
        self.guards
            .binary_search_by_key(&(db, shard), |(k, _)| *k)
            .is_ok()
    }

    /// The locked shards among `wanted` (sorted, without duplicates), with their
    /// `(db, shard)`, in that order; shards not locked are left out.
    pub fn subset(&mut self, wanted: &[(usize, usize)]) -> Vec<((usize, usize), &mut Shard)> {
        let mut out = Vec::with_capacity(wanted.len());
        let mut rest: &mut [((usize, usize), ShardRef<'a>)] = &mut self.guards;
        for &k in wanted {
            let Ok(i) = rest.binary_search_by_key(&k, |(g, _)| *g) else {
                continue;
            };
            let Some((found, tail)) = std::mem::take(&mut rest)[i..].split_first_mut() else {
                break;
            };
            out.push((found.0, &mut *found.1));
            rest = tail;
        }
        out
    }

    /// All locked shards with their `(db, shard)`, in that order.
    pub fn iter_keyed(
        &mut self,
    ) -> impl Iterator<Item = ((usize, usize), &mut Shard)> + use<'_, 'a> {
        self.guards.iter_mut().map(|(k, g)| (*k, &mut **g))
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
                shard: Mutex::new(Shard::with_policy(
                    first_shard_id + i as u32,
                    Arc::clone(&shared.policy),
                    Arc::clone(&shared.feed),
                )),
                deadline_hint: AtomicU64::new(u64::MAX),
                len: AtomicUsize::new(0),
                volatile_len: AtomicUsize::new(0),
                used_bytes: AtomicUsize::new(0),
            })
            .collect();
        Db {
            cells,
            shared,
            evict_empty_at_ms: AtomicU64::new(0),
        }
    }

    /// The keyspace's change feed, for callers that hold a database but not the keyspace
    /// (the memcached door raising keyspace notifications).
    pub fn feed(&self) -> &Arc<Feed> {
        &self.shared.feed
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

    /// Calls `f` with the object `key` holds (`None`: missing, past its deadline, or an
    /// inline string), under its shard's lock, without side effects: no hit counted, no access
    /// time touched, no lazy expiry (the expiry thread removes a key past its deadline). For
    /// background readers that are not commands (a timer deciding whether a command is due).
    pub fn peek<R>(&self, key: &[u8], f: impl FnOnce(Option<&Object>) -> R) -> R {
        self.peek_entry(key, |entry| f(entry.and_then(Entry::object)))
    }

    /// Whether `key` exists now (whatever its type, and not past its deadline), looked up as
    /// [`Db::peek`] does. Take no lock of `key`'s shard around it.
    pub fn exists_quietly(&self, key: &[u8]) -> bool {
        self.peek_entry(key, |entry| entry.is_some())
    }

    /// [`Db::peek`]'s look-up: `key`'s entry unless it is past its deadline.
    fn peek_entry<R>(&self, key: &[u8], f: impl FnOnce(Option<&Entry>) -> R) -> R {
        let (shard, hash) = self.lock_key(key);
        let entry = shard
            .find_raw(key, hash)
            .map(|slot| shard.entry(slot))
            .filter(|entry| !entry.is_expired(crate::now_ms()));
        f(entry)
    }

    /// Number of keys (expired ones not yet reclaimed included, as Redis's DBSIZE), as of each
    /// shard's last unlock: takes no lock.
    pub fn len(&self) -> usize {
        self.cells
            .iter()
            .map(|c| c.len.load(Ordering::Relaxed))
            .sum()
    }

    /// [`Db::len`] over shards reached through `lock` (held ones, inside a transaction).
    pub fn len_with<G: Deref<Target = Shard>>(mut lock: impl FnMut(usize) -> G) -> usize {
        (0..SHARDS_PER_DB).map(|i| lock(i).len()).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Number of keys with a deadline, as of each shard's last unlock.
    pub fn volatile_len(&self) -> usize {
        self.cells
            .iter()
            .map(|c| c.volatile_len.load(Ordering::Relaxed))
            .sum()
    }

    /// Approximate bytes held by this database, as of each shard's last unlock.
    pub fn used_bytes(&self) -> usize {
        self.cells
            .iter()
            .map(|c| c.used_bytes.load(Ordering::Relaxed))
            .sum()
    }

    /// Remove every key, with every shard locked at once, and record the flush in the feed.
    /// Returns the removed slabs so the caller may free them elsewhere (FLUSHDB ASYNC).
    pub fn clear(&self) -> Vec<Vec<Vec<Entry>>> {
        let mut guards: Vec<ShardRef<'_>> = (0..SHARDS_PER_DB).map(|i| self.lock(i)).collect();
        let _group = self.shared.feed.group();
        Db::clear_locked(guards.iter_mut().map(|g| &mut **g))
    }

    /// Remove every key of a database whose shards the caller holds (all of them, in shard
    /// order), and record the flush in the feed. Returns the removed slabs.
    pub fn clear_locked<'s>(shards: impl Iterator<Item = &'s mut Shard>) -> Vec<Vec<Vec<Entry>>> {
        let mut slabs = Vec::new();
        let mut db = None;
        for shard in shards {
            db.get_or_insert((shard.db_index(), Arc::clone(shard.feed())));
            slabs.push(shard.clear());
        }
        if let Some((db, feed)) = db {
            feed.record_db(ChangeKind::Flushed, db as u32, 0);
        }
        slabs
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
            evicted_keys: AtomicU64::new(0),
            policy: Arc::default(),
            feed: Arc::default(),
            capturing: std::sync::atomic::AtomicBool::new(false),
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

    /// Lock the given `(db, shard)` pairs in global order (deadlock-free: `which` is sorted
    /// in place), each once.
    pub fn lock_many(&self, which: &mut [(usize, usize)]) -> DbGuards<'_> {
        which.sort_unstable();
        let lock = |&(d, s): &(usize, usize)| ((d, s), self.dbs[d].lock(s));
        let guards = match which {
            [one] => Guards::One(lock(one)),
            _ => {
                let mut guards = Vec::with_capacity(which.len());
                for (i, k) in which.iter().enumerate() {
                    if i == 0 || which[i - 1] != *k {
                        guards.push(lock(k));
                    }
                }
                Guards::Many(guards)
            }
        };
        DbGuards { guards }
    }

    /// Lock every shard of the given databases (SWAPDB).
    pub fn lock_dbs(&self, dbs: &[usize]) -> DbGuards<'_> {
        let mut which: Vec<_> = dbs
            .iter()
            .flat_map(|&d| (0..SHARDS_PER_DB).map(move |s| (d, s)))
            .collect();
        self.lock_many(&mut which)
    }

    /// Swap the contents of two databases. Connections that selected either see the other's
    /// data from their next command on.
    pub fn swap_dbs(&self, a: usize, b: usize) {
        if a == b {
            return;
        }
        let (first, second) = (a.min(b), a.max(b));
        let mut guards = self.lock_dbs(&[first, second]);
        let _group = self.shared.feed.group();
        // Sorted by (db, shard): the first database's shards, then the second's.
        let (lo, hi) = guards.guards.split_at_mut(SHARDS_PER_DB);
        let pairs = lo
            .iter_mut()
            .zip(hi)
            .map(|((_, x), (_, y))| (&mut **x, &mut **y));
        self.swap_locked(first, second, pairs);
    }

    /// Swap databases `a` and `b` whose shards the caller holds: `pairs` gives each shard of
    /// `a` with the same-numbered shard of `b`. Records the swap in the feed.
    pub fn swap_locked<'s>(
        &self,
        a: usize,
        b: usize,
        pairs: impl Iterator<Item = (&'s mut Shard, &'s mut Shard)>,
    ) {
        for (sa, sb) in pairs {
            sa.swap_data(sb);
        }
        self.shared
            .feed
            .record_db(ChangeKind::Swapped, a as u32, b as u32);
    }

    /// The change feed every write is recorded in.
    pub fn feed(&self) -> &Arc<Feed> {
        &self.shared.feed
    }

    /// Set while a point-in-time capture runs (`crate::snapshot`).
    pub(crate) fn capture_flag(&self) -> &std::sync::atomic::AtomicBool {
        &self.shared.capturing
    }

    /// Follow a master (`on`) or stop: while following, a key past its deadline is hidden
    /// from readers but not removed, except for the thread that applies the master's stream
    /// (`evict::set_applies_master_stream`), which still sees it; the caller stops active
    /// expiry and eviction.
    pub fn set_follows_master(&self, on: bool) {
        self.shared.policy.set_follows_master(on);
    }

    /// Whether the keyspace follows a master.
    pub fn follows_master(&self) -> bool {
        self.shared.policy.follows_master()
    }

    /// Record accesses as an LFU counter (`lfu`) or as the LRU clock, with Redis's
    /// `lfu-log-factor` and `lfu-decay-time`. Cheap when nothing changes (call it freely).
    pub fn set_access_policy(&self, lfu: bool, log_factor: u32, decay_time: u32) {
        self.shared.policy.set(lfu, log_factor, decay_time);
    }

    /// The LFU counter an entry's `access` holds, decayed to `now_ms` (OBJECT FREQ).
    pub fn lfu_freq(&self, access: u32, now_ms: u64) -> u8 {
        lfu_decayed(access, now_ms, self.shared.policy.decay_time())
    }

    /// Approximate bytes held by every database (locks each shard in turn).
    pub fn used_bytes(&self) -> usize {
        self.dbs.iter().map(Db::used_bytes).sum()
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod feed_tests;
