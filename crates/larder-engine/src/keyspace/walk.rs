//! Walks over one database's keys: KEYS, RANDOMKEY and SCAN (with its filter), each also over
//! shards the caller already holds (inside a transaction). Apart from locking and counting
//! because these visit every shard in turn rather than one key's.

use std::ops::{Deref, DerefMut};

use super::{Db, SHARDS_PER_DB, SHARD_BITS};
use crate::entry::{Entry, ObjectKind};
use crate::shard::{Shard, SlotId};

/// What SCAN keeps.
#[derive(Default)]
pub struct ScanFilter<'a> {
    /// Glob pattern (MATCH).
    pub pattern: Option<&'a [u8]>,
    /// Type name (TYPE).
    pub kind: Option<ObjectKind>,
}

impl ScanFilter<'_> {
    fn matches(&self, e: &Entry) -> bool {
        self.pattern
            .is_none_or(|p| crate::glob::matches(p, e.key(), false))
    }
}

impl Db {
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

    /// [`Db::scan`] over shards reached through `lock`. A key past its deadline that the
    /// step visits and the pattern matches (whatever its type) is expired there, as Redis's
    /// SCAN does: removed, and announced, unless the keyspace follows a master.
    pub fn scan_with<G: DerefMut<Target = Shard>>(
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
            let mut guard = lock(shard);
            let before = budget;
            let mut visited = 0;
            let mut expired = Vec::new();
            let next = guard.scan(slot, budget, |e| {
                visited += 1;
                if !filter.matches(e) {
                    return;
                }
                if e.is_expired(now_ms) {
                    expired.push(e.key().to_vec());
                } else if filter.kind.is_none_or(|k| e.kind() == k) {
                    keys.push(e.key().to_vec());
                }
            });
            // Removing a key moves no other key's slot, so the cursor stays good.
            for key in expired {
                guard.find(&key, super::hash_key(&key), now_ms);
            }
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
