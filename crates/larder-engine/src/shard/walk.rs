//! Visits over a shard's entries by position or deadline rather than by key: eviction
//! samples, the nearest deadlines, the active expiry pass, SCAN steps, and iteration (KEYS,
//! RANDOMKEY). Apart from the lookups because each walks the slab or the expiry index.

use super::{Shard, SlotId};
use crate::entry::Entry;
use crate::evict::random_u64;
use crate::feed::ChangeKind;

impl Shard {
    /// Up to `n` live entries picked at random for eviction: random slot positions, vacant
    /// ones skipped; a sparse slab falls back to a walk from a random position (or, for
    /// `volatile_only`, from a random point of the expiry index). Entries may repeat.
    pub fn sample(&self, n: usize, volatile_only: bool, mut visit: impl FnMut(SlotId, &Entry)) {
        let total = self.slot_count();
        let live = if volatile_only {
            self.expires.len()
        } else {
            self.len()
        };
        if total == 0 || live == 0 || n == 0 {
            return;
        }
        let mut found = 0;
        for _ in 0..n * 8 {
            if found == n {
                return;
            }
            let slot = (random_u64() % total as u64) as SlotId;
            let e = self.slot(slot);
            if e.is_vacant() || (volatile_only && e.expire_at_ms == 0) {
                continue;
            }
            visit(slot, e);
            found += 1;
        }
        let want = n - found;
        if want == 0 {
            return;
        }
        if volatile_only {
            let (Some(&(first, _)), Some(&(last, _))) = (self.expires.first(), self.expires.last())
            else {
                return;
            };
            let at = first + random_u64() % (last - first + 1);
            for &(_, slot) in self
                .expires
                .range((at, 0)..)
                .chain(self.expires.range(..(at, 0)))
                .take(want)
            {
                visit(slot, self.slot(slot));
            }
        } else {
            let start = (random_u64() % total as u64) as usize;
            let mut got = 0;
            for i in 0..total {
                let slot = ((start + i) % total) as SlotId;
                let e = self.slot(slot);
                if !e.is_vacant() {
                    visit(slot, e);
                    got += 1;
                    if got == want {
                        return;
                    }
                }
            }
        }
    }

    /// The `n` entries with the nearest deadlines (volatile-ttl), nearest first.
    pub fn nearest_deadlines(&self, n: usize, mut visit: impl FnMut(SlotId, &Entry)) {
        for &(_, slot) in self.expires.iter().take(n) {
            visit(slot, self.slot(slot));
        }
    }

    /// Whether `slot` still holds the entry with `version` (it was not removed or rewritten
    /// since it was sampled).
    pub fn holds(&self, slot: SlotId, version: u64) -> bool {
        (slot as usize) < self.slot_count() && self.slot(slot).version == version && version != 0
    }

    /// Remove up to `max` entries whose deadline is at or before `now_ms`, calling `on_expired`
    /// with each. Returns how many were removed.
    pub fn expire_due(
        &mut self,
        now_ms: u64,
        max: usize,
        mut on_expired: impl FnMut(&Entry),
    ) -> usize {
        let mut n = 0;
        while n < max {
            let Some(&(at, slot)) = self.expires.first() else {
                break;
            };
            if at > now_ms {
                break;
            }
            let e = self.remove_as(slot, ChangeKind::Expired);
            on_expired(&e);
            n += 1;
        }
        n
    }

    /// Visit live entries in slot order starting at `from`, until `budget` slots have been
    /// looked at. Returns the slot to continue from, or `None` when the shard is done.
    pub fn scan(
        &self,
        from: SlotId,
        budget: usize,
        mut visit: impl FnMut(&Entry),
    ) -> Option<SlotId> {
        let total = self.slot_count();
        let mut slot = from as usize;
        let mut seen = 0;
        while slot < total {
            let e = self.slot(slot as SlotId);
            if !e.is_vacant() {
                visit(e);
                seen += 1;
                if seen >= budget {
                    return (slot + 1 < total).then_some((slot + 1) as SlotId);
                }
            }
            slot += 1;
        }
        None
    }

    /// Iterate over live entries (unordered; KEYS, RANDOMKEY, DEBUG).
    pub fn iter(&self) -> impl Iterator<Item = &Entry> {
        self.chunks.iter().flatten().filter(|e| !e.is_vacant())
    }

    /// The entry at position `n` among live entries in slot order, wrapping; for RANDOMKEY.
    pub fn nth_live(&self, n: usize) -> Option<&Entry> {
        if self.is_empty() {
            return None;
        }
        self.iter().nth(n % self.len())
    }
}
