//! Maxmemory eviction over the whole keyspace: sampling candidates from a database's shards
//! and [`Keyspace::evict`]'s pool of the best ones, as Redis does. Apart from the keyspace's
//! structure because it is one policy-driven algorithm over it; the policies themselves and
//! the access counters are in `crate::evict`.

use std::sync::atomic::Ordering;

use super::{Db, Keyspace, SHARDS_PER_DB};
use crate::entry::Entry;
use crate::evict::{lfu_decayed, random_u64, EvictionPolicy};
use crate::feed::ChangeKind;
use crate::shard::{Shard, SlotId};

/// Eviction candidates kept between rounds (Redis's `EVPOOL_SIZE`).
const EVICTION_POOL: usize = 16;
/// How long eviction trusts that a database it found empty still is.
const EVICT_EMPTY_RECHECK_MS: u64 = 1000;

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

impl Db {
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
}

impl Keyspace {
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
}
