//! The batched lookups' steps (`Db::prefetch`): each starts loading what the next one reads,
//! so a batch of keys waits for its cache misses together instead of one after another.

use super::{slot_in, table_hash, tag_of, Shard};
use crate::entry::{prefetch, Entry};

/// What the batched lookups (`Db::prefetch`) found in a key's home group: no candidate,
/// one (kept for the later steps), or several (the later steps scan the group again).
#[derive(Clone, Copy)]
pub(crate) enum Candidates<'a> {
    None,
    One(&'a Entry),
    Several,
}

impl Shard {
    /// Batched lookups, first step (see `Db::prefetch`): start loading the index group a
    /// lookup of the key with this `hash` reads first.
    #[inline]
    pub(crate) fn prefetch_index(&self, hash: u64) {
        if let Some(p) = self.index.home_addr(table_hash(tag_of(hash))) {
            prefetch(p);
        }
    }

    /// Second step: start loading the entries that the (by now cached) group offers as
    /// candidates. An entry is 40 bytes, so it may straddle two cache lines. Returns the
    /// candidates, so that the next steps need not scan the group again.
    #[inline]
    pub(crate) fn prefetch_entries(&self, hash: u64) -> Candidates<'_> {
        let chunks = &self.chunks;
        let mut found = Candidates::None;
        self.index
            .home_candidates(table_hash(tag_of(hash)), |slot| {
                let e = slot_in(chunks, slot);
                let p: *const u8 = std::ptr::from_ref(e).cast();
                prefetch(p);
                prefetch(p.wrapping_add(std::mem::size_of::<Entry>() - 1));
                found = match found {
                    Candidates::None => Candidates::One(e),
                    _ => Candidates::Several,
                };
            });
        found
    }

    /// Third step: start loading the key and value of the candidate whose 32-bit tag
    /// matches; returns it when it was the only candidate (for the fourth step).
    #[inline]
    pub(crate) fn prefetch_block<'a>(&'a self, hash: u64, found: Candidates<'a>) -> Candidates<'a> {
        match found {
            Candidates::One(e) if e.hash_tag == tag_of(hash) => {
                e.prefetch_block();
                found
            }
            Candidates::Several => {
                self.home_matches(hash, Entry::prefetch_block);
                found
            }
            _ => Candidates::None,
        }
    }

    /// Fourth step: start loading the rest of the matching candidate's value.
    #[inline]
    pub(crate) fn prefetch_value(&self, hash: u64, found: Candidates<'_>) {
        match found {
            Candidates::One(e) => e.prefetch_value(),
            Candidates::Several => self.home_matches(hash, Entry::prefetch_value),
            Candidates::None => {}
        }
    }

    /// Fifth step: start loading the line of the matching candidate's value that a lookup
    /// of `member` reads.
    #[inline]
    pub(crate) fn prefetch_member(&self, hash: u64, found: Candidates<'_>, member: &[u8]) {
        match found {
            Candidates::One(e) => e.prefetch_member(member),
            Candidates::Several => self.home_matches(hash, |e| e.prefetch_member(member)),
            Candidates::None => {}
        }
    }

    /// Calls `f` on the entries of the home group of `hash` whose 32-bit tag matches.
    #[inline]
    fn home_matches(&self, hash: u64, f: impl Fn(&Entry)) {
        let chunks = &self.chunks;
        let tag = tag_of(hash);
        self.index.home_candidates(table_hash(tag), |slot| {
            let e = slot_in(chunks, slot);
            if e.hash_tag == tag {
                f(e);
            }
        });
    }
}
