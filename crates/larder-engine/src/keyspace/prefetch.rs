//! [`Db::prefetch`]: a cache hint for a batch of lookups, kept apart because it is an
//! optimisation that changes no result; the lookups it prepares are in the parent module.

use parking_lot::MutexGuard;

use super::{Db, SHARDS_PER_DB};
use crate::shard::{Candidates, Shard};

impl Db {
    /// Most keys [`Db::prefetch`] looks at per call.
    pub const PREFETCH_BATCH: usize = 32;

    /// Starts loading into the CPU caches what lookups of `keys` will read (index group,
    /// entry, key and value), in one pass per step over the whole batch, so that the cache
    /// misses of different keys overlap instead of queueing one after another as they do when
    /// each lookup runs to its end before the next begins. Only a hint: the lookups that follow
    /// give the same results with or without it. Each shard of the batch is locked once, with
    /// `try_lock`, and held for its passes; a shard that another thread holds is skipped
    /// rather than waited for (and nothing here ever waits, so holding several cannot
    /// deadlock). Looks at the first [`Db::PREFETCH_BATCH`] keys.
    pub fn prefetch(&self, keys: &[&[u8]]) {
        self.prefetch_with(keys, &[]);
    }

    /// [`Db::prefetch`], and where `members[i]` is given (the element a request names after
    /// its key), a fifth pass asks for the line of key i's value that element's lookup reads
    /// (`Object::prefetch_member`: the register of a dense HyperLogLog).
    pub fn prefetch_with(&self, keys: &[&[u8]], members: &[Option<&[u8]>]) {
        const NONE: u8 = u8::MAX;
        let mut routed = [(0usize, 0u64, None); Db::PREFETCH_BATCH];
        let mut n = 0;
        let mut last: Option<&[u8]> = None;
        for (i, &key) in keys.iter().enumerate().take(Db::PREFETCH_BATCH) {
            // A run of one key (a pipeline of pushes to one list) is looked at once, and
            // hashed once.
            if last == Some(key) {
                continue;
            }
            last = Some(key);
            let (shard, hash) = Db::route(key);
            if n == 0 || routed[n - 1].1 != hash {
                routed[n] = (shard, hash, members.get(i).copied().flatten());
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
        for (g, &(shard, _, _)) in guard.iter_mut().zip(&routed[..n]) {
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
        // The steps, each over the whole batch; a key whose shard is held elsewhere is
        // left out (its `found` stays `None`).
        let shard_of = |g: u8| held[usize::from(g)].as_deref();
        let keys = guard.iter().zip(&routed[..n]);
        for (&g, &(_, hash, _)) in keys.clone() {
            if let Some(s) = shard_of(g) {
                s.prefetch_index(hash);
            }
        }
        let mut found = [Candidates::None; Db::PREFETCH_BATCH];
        for (f, (&g, &(_, hash, _))) in found.iter_mut().zip(keys.clone()) {
            if let Some(s) = shard_of(g) {
                *f = s.prefetch_entries(hash);
            }
        }
        for (f, (&g, &(_, hash, _))) in found.iter_mut().zip(keys.clone()) {
            if let Some(s) = shard_of(g) {
                *f = s.prefetch_block(hash, *f);
            }
        }
        for (&f, (&g, &(_, hash, _))) in found.iter().zip(keys.clone()) {
            if let Some(s) = shard_of(g) {
                s.prefetch_value(hash, f);
            }
        }
        if !members.is_empty() {
            for (&f, (&g, &(_, hash, member))) in found.iter().zip(keys) {
                if let (Some(s), Some(member)) = (shard_of(g), member) {
                    s.prefetch_member(hash, f, member);
                }
            }
        }
        // Unlock; the array's other slots were never filled, so there is nothing left for
        // its drop to do but look at each of them.
        for h in &mut held[..usize::from(distinct)] {
            drop(h.take());
        }
        std::mem::forget(held);
    }
}
