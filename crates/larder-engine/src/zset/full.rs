//! The full ("skiplist") encoding: members in a slab addressed by a `u32` id, a hash index
//! from member to id, and an order-statistic tree of `(score, id)` items.
//!
//! Each member is stored once (its slab slot); the index and the tree hold ids. The score is
//! kept in the slab (member → score lookups) and in the tree (ordering without touching the
//! member unless two scores tie).

use std::cmp::Ordering;

use hashbrown::HashTable;

use super::tree::{Item, Tree};

/// Heap bytes of a member's own allocation: its length rounded up to the allocator's 8-byte
/// granule (an empty member allocates nothing).
pub(crate) fn member_cost(m: &[u8]) -> usize {
    m.len().next_multiple_of(8)
}

fn hash_of(m: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(m)
}

/// Whether `it` sorts before `(score, member)`; `members` is the slab its id indexes.
#[inline]
fn before(members: &[Box<[u8]>], it: Item, score: f64, member: &[u8]) -> bool {
    match it.score.partial_cmp(&score) {
        Some(Ordering::Less) => true,
        Some(Ordering::Greater) => false,
        _ => *members[it.id as usize] < *member,
    }
}

#[derive(Clone, Debug, Default)]
pub(crate) struct Full {
    members: Vec<Box<[u8]>>,
    scores: Vec<f64>,
    free: Vec<u32>,
    index: HashTable<u32>,
    pub(crate) tree: Tree,
    member_bytes: usize,
    /// Bumped by every renumbering (`compact`); ZSCAN cursors carry it.
    epoch: u16,
}

impl Full {
    pub fn len(&self) -> usize {
        self.tree.len()
    }

    pub fn heap_bytes(&self) -> usize {
        self.members.capacity() * std::mem::size_of::<Box<[u8]>>()
            + self.scores.capacity() * std::mem::size_of::<f64>()
            + self.free.capacity() * std::mem::size_of::<u32>()
            + self.index.allocation_size()
            + self.tree.heap_bytes()
            + self.member_bytes
    }

    #[cfg(test)]
    pub fn recount_bytes(&self) -> usize {
        self.members.capacity() * std::mem::size_of::<Box<[u8]>>()
            + self.scores.capacity() * std::mem::size_of::<f64>()
            + self.free.capacity() * std::mem::size_of::<u32>()
            + self.index.allocation_size()
            + self.tree.recount_bytes()
            + self.members.iter().map(|m| member_cost(m)).sum::<usize>()
    }

    #[cfg(test)]
    pub fn check(&self) {
        self.tree.check();
        assert_eq!(self.index.len(), self.tree.len());
        let empty_id = self.id_of(b"");
        let free: std::collections::HashSet<u32> = self.free.iter().copied().collect();
        let mut occupied = 0;
        for (i, m) in self.members.iter().enumerate() {
            if m.is_empty() && empty_id != Some(i as u32) {
                assert!(
                    free.contains(&(i as u32)),
                    "free slot {i} is not on the free list"
                );
            } else {
                occupied += 1;
            }
        }
        assert_eq!(occupied, self.tree.len());
    }

    pub fn member(&self, id: u32) -> &[u8] {
        &self.members[id as usize]
    }

    pub fn id_of(&self, member: &[u8]) -> Option<u32> {
        let members = &self.members;
        self.index
            .find(hash_of(member), |&id| &*members[id as usize] == member)
            .copied()
    }

    pub fn score(&self, member: &[u8]) -> Option<f64> {
        self.id_of(member).map(|id| self.scores[id as usize])
    }

    /// The rank of member `id`.
    pub fn rank_of(&self, id: u32) -> usize {
        let members = &self.members;
        let member = &*members[id as usize];
        self.tree.rank_by_score(self.scores[id as usize], |other| {
            other != id && *members[other as usize] < *member
        })
    }

    /// Add a member that is not present.
    pub fn insert(&mut self, member: &[u8], score: f64) {
        let id = match self.free.pop() {
            Some(id) => {
                self.members[id as usize] = member.into();
                self.scores[id as usize] = score;
                id
            }
            None => {
                self.members.push(member.into());
                self.scores.push(score);
                (self.members.len() - 1) as u32
            }
        };
        self.member_bytes += member_cost(member);
        let members = &self.members;
        self.index
            .insert_unique(hash_of(member), id, |&i| hash_of(&members[i as usize]));
        let (tree, members) = (&mut self.tree, &self.members);
        tree.insert_where(|it| before(members, it, score, member), Item { score, id });
    }

    /// The score of member `id`.
    pub fn score_of(&self, id: u32) -> f64 {
        self.scores[id as usize]
    }

    /// Change the score of a present member.
    pub fn set_score(&mut self, member: &[u8], score: f64) {
        if let Some(id) = self.id_of(member) {
            self.set_score_of(id, score);
        }
    }

    /// Change the score of member `id`: in place when it keeps its leaf of the tree, else
    /// one descent to remove it and one to insert it.
    pub fn set_score_of(&mut self, id: u32, score: f64) {
        let old = std::mem::replace(&mut self.scores[id as usize], score);
        let (tree, members) = (&mut self.tree, &self.members);
        let member = &*members[id as usize];
        let new = Item { score, id };
        if !tree.update_where(
            |it| before(members, it, old, member),
            |it| before(members, it, score, member),
            new,
        ) {
            tree.insert_where(|it| before(members, it, score, member), new);
        }
    }

    /// Remove a member, returning its score.
    pub fn remove(&mut self, member: &[u8]) -> Option<f64> {
        let id = self.id_of(member)?;
        let score = self.scores[id as usize];
        let members = &self.members;
        self.tree
            .remove_where(|it| before(members, it, score, member), id);
        self.forget(id);
        Some(score)
    }

    /// Drop member `id` from the index and the slab (the tree no longer holds it).
    fn forget(&mut self, id: u32) {
        let members = &self.members;
        if let Ok(e) = self
            .index
            .find_entry(hash_of(&members[id as usize]), |&i| i == id)
        {
            e.remove();
        }
        let m = std::mem::take(&mut self.members[id as usize]);
        self.member_bytes -= member_cost(&m);
        self.free.push(id);
        if self.tree.len() == 0 {
            // Start over rather than keep a slab of free slots.
            self.members = Vec::new();
            self.scores = Vec::new();
            self.free = Vec::new();
            self.index = HashTable::new();
            return;
        }
        // A set that shrank to under half its slab is renumbered (see `compact`).
        let live = self.tree.len();
        if self.members.len() >= 64 && live * 2 < self.members.len() {
            self.compact();
        }
    }

    /// Renumber the members 0..n in rank order and rebuild the slab, index and tree at their
    /// size: O(n), after at least n removals. ZSCAN cursors carry the epoch they were made
    /// in; one from before a renumbering starts over (SCAN allows repeats, never misses).
    fn compact(&mut self) {
        let live = self.tree.len();
        let mut order = Vec::with_capacity(live);
        self.tree.visit(0, live, false, &mut |it| order.push(it));
        let mut members: Vec<Box<[u8]>> = Vec::with_capacity(live);
        let mut scores = Vec::with_capacity(live);
        let mut tree = Tree::new();
        let mut index = HashTable::with_capacity(live);
        for (new_id, it) in order.into_iter().enumerate() {
            let m = std::mem::take(&mut self.members[it.id as usize]);
            let h = hash_of(&m);
            members.push(m);
            scores.push(it.score);
            let id = new_id as u32;
            tree.insert(
                new_id,
                Item {
                    score: it.score,
                    id,
                },
            );
            index.insert_unique(h, id, |&i: &u32| hash_of(&members[i as usize]));
        }
        self.members = members;
        self.scores = scores;
        self.tree = tree;
        self.index = index;
        self.free = Vec::new();
        self.epoch = self.epoch.wrapping_add(1);
    }

    /// Remove the members of ranks `start..end`, calling `f` with each in ascending order.
    pub fn remove_ranks(&mut self, start: usize, end: usize, f: &mut dyn FnMut(&[u8], f64)) {
        for _ in start..end.min(self.len()) {
            let Some(it) = self.tree.remove(start) else {
                break;
            };
            f(&self.members[it.id as usize], it.score);
            self.forget(it.id);
        }
    }

    /// ZSCAN: `(member, score)` of up to `count` occupied slab slots from `cursor` on, and
    /// the next cursor (0 past the end). A cursor is the renumbering epoch (high 16 bits) and
    /// a slab id; one from an older epoch starts over.
    pub fn scan<'a>(&'a self, cursor: u64, count: usize, f: &mut dyn FnMut(&'a [u8], f64)) -> u64 {
        const ID_BITS: u32 = 48;
        let epoch = (cursor >> ID_BITS) as u16;
        let mut id = if epoch == self.epoch {
            usize::try_from(cursor & ((1 << ID_BITS) - 1)).unwrap_or(usize::MAX)
        } else {
            0
        };
        let mut seen = 0;
        // A free slot holds an empty member; so may one occupied slot (the member "").
        let empty_id = self.id_of(b"");
        let free_slot = |i: usize| self.members[i].is_empty() && empty_id != Some(i as u32);
        // As Redis bounds a step over a sparse table: at most ten slots per member asked for.
        let stop = id.saturating_add(count.saturating_mul(10));
        while id < self.members.len() && seen < count && id < stop {
            if !free_slot(id) {
                f(&self.members[id], self.scores[id]);
                seen += 1;
            }
            id += 1;
        }
        if id >= self.members.len() {
            0
        } else {
            (u64::from(self.epoch) << ID_BITS) | id as u64
        }
    }
}
