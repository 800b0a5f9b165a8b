//! Databases, shard routing, multi-shard locking, SCAN, and the active expiry cycle.

use std::ops::Deref;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::{Mutex, MutexGuard};

use crate::entry::{Entry, Object, ObjectKind};
use crate::evict::{lfu_decayed, random_u64, AccessPolicy, EvictionPolicy};
use crate::feed::{ChangeKind, Feed};
use crate::shard::{hash_key, Candidates, Shard, SlotId};

/// Shards per database. A power of two; with 5M keys a shard holds ~20k, so the largest
/// single index resize moves a few hundred KiB and never pauses clients for long.
pub const SHARDS_PER_DB: usize = 256;
const SHARD_BITS: u32 = SHARDS_PER_DB.trailing_zeros();
/// Shard choice uses hash bits 40.. so it is independent of the 32 bits the index is built from
/// (`shard::tag_of`: the low ones).
const SHARD_SHIFT: u32 = 40;

/// Most keys one shard reclaims per active expiry pass, so a mass expiry never holds a shard
/// lock for long.
const EXPIRE_BATCH: usize = 512;

/// Eviction candidates kept between rounds (Redis's `EVPOOL_SIZE`).
const EVICTION_POOL: usize = 16;
/// How long eviction trusts that a database it found empty still is.
const EVICT_EMPTY_RECHECK_MS: u64 = 1000;

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

    /// Most keys [`Db::prefetch`] looks at per call.
    pub const PREFETCH_BATCH: usize = 32;

    /// Starts loading into the CPU caches what lookups of `keys` will read (index group,
    /// entry, key and value), in one pass per step over the whole batch, so that the cache
    /// misses of different keys overlap instead of queueing one after another as they do when
    /// each lookup runs to its end before the next begins. Only a hint: the lookups that follow
    /// give the same results with or without it. Each shard of the batch is locked once, with
    /// `try_lock`, and held for the four passes; a shard that another thread holds is skipped
    /// rather than waited for (and nothing here ever waits, so holding several cannot
    /// deadlock). Looks at the first [`Db::PREFETCH_BATCH`] keys.
    pub fn prefetch(&self, keys: &[&[u8]]) {
        const NONE: u8 = u8::MAX;
        let mut routed = [(0usize, 0u64); Db::PREFETCH_BATCH];
        let mut n = 0;
        for key in keys.iter().take(Db::PREFETCH_BATCH) {
            let (shard, hash) = Db::route(key);
            // A run of one key (a pipeline of pops from one list) is looked at once.
            if n == 0 || routed[n - 1].1 != hash {
                routed[n] = (shard, hash);
                n += 1;
            }
        }
        // One key: its lookup follows at once, there are no misses to overlap.
        if n < 2 {
            return;
        }
        // The batch's distinct shards, locked once each: key i's is `held[guard[i]]`.
        let mut guard_of = [NONE; SHARDS_PER_DB];
        let mut guard = [0u8; Db::PREFETCH_BATCH];
        let mut shards = [0usize; Db::PREFETCH_BATCH];
        let mut distinct = 0u8;
        for (g, &(shard, _)) in guard.iter_mut().zip(&routed[..n]) {
            let of = &mut guard_of[shard];
            if *of == NONE {
                crate::entry::prefetch(std::ptr::from_ref(&self.cells[shard]).cast());
                shards[usize::from(distinct)] = shard;
                *of = distinct;
                distinct += 1;
            }
            *g = *of;
        }
        let mut held: [Option<MutexGuard<'_, Shard>>; Db::PREFETCH_BATCH] =
            std::array::from_fn(|_| None);
        // A second pass, so that the cells' cache misses overlap too.
        for (h, &shard) in held.iter_mut().zip(&shards[..usize::from(distinct)]) {
            *h = self.cells[shard].shard.try_lock();
        }
        // The four steps, each over the whole batch; a key whose shard is held elsewhere is
        // left out (its `found` stays `None`).
        let shard_of = |g: u8| held[usize::from(g)].as_deref();
        let keys = guard.iter().zip(&routed[..n]);
        for (&g, &(_, hash)) in keys.clone() {
            if let Some(s) = shard_of(g) {
                s.prefetch_index(hash);
            }
        }
        let mut found = [Candidates::None; Db::PREFETCH_BATCH];
        for (f, (&g, &(_, hash))) in found.iter_mut().zip(keys.clone()) {
            if let Some(s) = shard_of(g) {
                *f = s.prefetch_entries(hash);
            }
        }
        for (f, (&g, &(_, hash))) in found.iter_mut().zip(keys.clone()) {
            if let Some(s) = shard_of(g) {
                *f = s.prefetch_block(hash, *f);
            }
        }
        for (&f, (&g, &(_, hash))) in found.iter().zip(keys) {
            if let Some(s) = shard_of(g) {
                s.prefetch_value(hash, f);
            }
        }
        // Unlock; the array's other slots were never filled, so there is nothing left for
        // its drop to do but look at each of them.
        for h in &mut held[..usize::from(distinct)] {
            drop(h.take());
        }
        std::mem::forget(held);
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
        let (shard, hash) = self.lock_key(key);
        let object = shard.find_raw(key, hash).and_then(|slot| {
            let entry = shard.entry(slot);
            if entry.is_expired(crate::now_ms()) {
                None
            } else {
                entry.object()
            }
        });
        f(object)
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

    /// Offer eviction candidates for `policy` to `visit` (with their shard). volatile-ttl
    /// offers the nearest deadline; other policies one random entry from each of up to
    /// `samples` random non-empty shards, or, when random tries find nothing (a sparse
    /// database), `samples` entries of the first non-empty shard after a random start.
    /// Returns false when the database has no candidate.
    fn eviction_sample(
        &self,
        policy: EvictionPolicy,
        samples: usize,
        mut visit: impl FnMut(usize, SlotId, &Entry),
    ) -> bool {
        let hint = |i: usize| self.cells[i].deadline_hint.load(Ordering::Relaxed);
        if policy == EvictionPolicy::VolatileTtl {
            let Some(best) = (0..SHARDS_PER_DB)
                .min_by_key(|&i| hint(i))
                .filter(|&i| hint(i) != u64::MAX)
            else {
                return false;
            };
            let mut found = false;
            self.lock(best).nearest_deadlines(1, |slot, e| {
                found = true;
                visit(best, slot, e);
            });
            return found;
        }
        let volatile = policy.volatile_only();
        let has = |shard: &Shard| {
            if volatile {
                shard.volatile_len() > 0
            } else {
                !shard.is_empty()
            }
        };
        let mut offered = 0;
        for _ in 0..samples * 2 {
            if offered == samples {
                return true;
            }
            let i = random_u64() as usize % SHARDS_PER_DB;
            if volatile && hint(i) == u64::MAX {
                continue;
            }
            let shard = self.lock(i);
            if has(&shard) {
                shard.sample(1, volatile, |slot, e| visit(i, slot, e));
                offered += 1;
            }
        }
        if offered > 0 {
            return true;
        }
        let start = random_u64() as usize;
        for k in 0..SHARDS_PER_DB {
            let i = (start + k) % SHARDS_PER_DB;
            if volatile && hint(i) == u64::MAX {
                continue;
            }
            let shard = self.lock(i);
            if has(&shard) {
                shard.sample(samples, volatile, |slot, e| visit(i, slot, e));
                return true;
            }
        }
        false
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

    /// Visit every live key (KEYS). Shards are locked one at a time.
    pub fn for_each(&self, now_ms: u64, visit: impl FnMut(&Entry)) {
        Db::for_each_with(|i| self.lock(i), now_ms, visit);
    }

    /// [`Db::for_each`] over shards reached through `lock`.
    pub fn for_each_with<G: Deref<Target = Shard>>(
        mut lock: impl FnMut(usize) -> G,
        now_ms: u64,
        mut visit: impl FnMut(&Entry),
    ) {
        for i in 0..SHARDS_PER_DB {
            let shard = lock(i);
            for e in shard.iter() {
                if !e.is_expired(now_ms) {
                    visit(e);
                }
            }
        }
    }

    /// A random live key, or `None` if the database is empty (RANDOMKEY).
    pub fn random_key(&self, seed: u64, now_ms: u64) -> Option<Vec<u8>> {
        Db::random_key_with(|i| self.lock(i), seed, now_ms)
    }

    /// [`Db::random_key`] over shards reached through `lock`.
    pub fn random_key_with<G: Deref<Target = Shard>>(
        mut lock: impl FnMut(usize) -> G,
        seed: u64,
        now_ms: u64,
    ) -> Option<Vec<u8>> {
        let start = (seed as usize) % SHARDS_PER_DB;
        for attempt in 0..SHARDS_PER_DB * 2 {
            let shard = lock((start + attempt) % SHARDS_PER_DB);
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
        Db::scan_with(|i| self.lock(i), cursor, count, filter, now_ms)
    }

    /// [`Db::scan`] over shards reached through `lock`.
    pub fn scan_with<G: Deref<Target = Shard>>(
        mut lock: impl FnMut(usize) -> G,
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
            let guard = lock(shard);
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

/// What one eviction run did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Eviction {
    /// Keys evicted.
    pub keys: usize,
    /// Approximate bytes those keys held.
    pub bytes: usize,
    /// True if the run stopped because no database had a candidate left.
    pub exhausted: bool,
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

    /// Record accesses as an LFU counter (`lfu`) or as the LRU clock, with Redis's
    /// `lfu-log-factor` and `lfu-decay-time`. Cheap when nothing changes (call it freely).
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

    pub fn set_access_policy(&self, lfu: bool, log_factor: u32, decay_time: u32) {
        self.shared.policy.set(lfu, log_factor, decay_time);
    }

    /// The LFU counter an entry's `access` holds, decayed to `now_ms` (OBJECT FREQ).
    pub fn lfu_freq(&self, access: u32, now_ms: u64) -> u8 {
        lfu_decayed(access, now_ms, self.shared.policy.decay_time())
    }

    /// Keys evicted so far.
    pub fn evicted_keys(&self) -> u64 {
        self.shared.evicted_keys.load(Ordering::Relaxed)
    }

    /// Evict keys chosen by `policy` until about `need_bytes` are freed, at most `max_keys`.
    ///
    /// Like Redis: each round samples `samples` candidates from one shard of every database
    /// (the shard with the nearest deadline for volatile-ttl) and evicts the best one (the
    /// longest idle for LRU, the lowest decayed counter for LFU, the nearest deadline for
    /// TTL, any for random). `on_evicted` sees each removed entry with its database. Shards
    /// are locked one at a time; the caller must hold none.
    pub fn evict(
        &self,
        policy: EvictionPolicy,
        samples: usize,
        now_ms: u64,
        need_bytes: usize,
        max_keys: usize,
        mut on_evicted: impl FnMut(usize, &Entry),
    ) -> Eviction {
        let mut out = Eviction::default();
        let mut exhausted_db = vec![false; self.dbs.len()];
        let lru_now = crate::clock::lru_clock(now_ms);
        let decay = self.shared.policy.decay_time();
        let score = |e: &Entry| -> u64 {
            match policy {
                EvictionPolicy::VolatileLru | EvictionPolicy::AllkeysLru => {
                    u64::from(lru_now.wrapping_sub(e.access))
                }
                EvictionPolicy::VolatileLfu | EvictionPolicy::AllkeysLfu => {
                    255 - u64::from(lfu_decayed(e.access, now_ms, decay))
                }
                EvictionPolicy::VolatileTtl => u64::MAX - e.expire_at_ms,
                EvictionPolicy::VolatileRandom | EvictionPolicy::AllkeysRandom => random_u64(),
            }
        };
        let samples = samples.max(1);
        // Candidates kept across rounds, best last: (score, db, shard, slot, version), as
        // Redis's eviction pool. A pooled key rewritten or removed since is skipped.
        let mut pool: Vec<(u64, usize, usize, SlotId, u64)> = Vec::with_capacity(EVICTION_POOL);
        let mut rounds = 0;
        let mut full = false;
        let mut skipped = false;
        while out.bytes < need_bytes && out.keys < max_keys && rounds < max_keys * 4 {
            rounds += 1;
            for (d, db) in self.dbs.iter().enumerate() {
                if exhausted_db[d] {
                    continue;
                }
                // A database found empty within the last second is skipped, unless no other
                // database has a candidate (then the OOM decision must look everywhere).
                let empty_at = db.evict_empty_at_ms.load(Ordering::Relaxed);
                if !full
                    && empty_at != 0
                    && now_ms.saturating_sub(empty_at) < EVICT_EMPTY_RECHECK_MS
                {
                    skipped = true;
                    continue;
                }
                let any = db.eviction_sample(policy, samples, |s, slot, e| {
                    let c = (score(e), d, s, slot, e.version);
                    if pool
                        .iter()
                        .any(|p| (p.1, p.2, p.3, p.4) == (d, s, slot, e.version))
                    {
                        return;
                    }
                    let at = pool.partition_point(|p| p.0 <= c.0);
                    pool.insert(at, c);
                    if pool.len() > EVICTION_POOL {
                        pool.remove(0);
                    }
                });
                if any {
                    if empty_at != 0 {
                        db.evict_empty_at_ms.store(0, Ordering::Relaxed);
                    }
                } else {
                    exhausted_db[d] = true;
                    db.evict_empty_at_ms.store(now_ms.max(1), Ordering::Relaxed);
                }
            }
            let Some((_, d, s, slot, version)) = pool.pop() else {
                if skipped && !full {
                    full = true;
                    continue;
                }
                out.exhausted = true;
                break;
            };
            let mut shard = self.dbs[d].lock(s);
            if shard.holds(slot, version) {
                let e = shard.remove_as(slot, ChangeKind::Evicted);
                drop(shard);
                out.bytes += e.memory_bytes();
                out.keys += 1;
                on_evicted(d, &e);
            }
        }
        self.shared
            .evicted_keys
            .fetch_add(out.keys as u64, Ordering::Relaxed);
        out
    }

    /// Approximate bytes held by every database (locks each shard in turn).
    pub fn used_bytes(&self) -> usize {
        self.dbs.iter().map(Db::used_bytes).sum()
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
mod tests;

#[cfg(test)]
mod feed_tests;
