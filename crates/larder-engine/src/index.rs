//! A shard's key index: an open-addressing hash table of slot ids in 64-byte groups. Each group
//! holds 12 one-byte tags and the 12 slot ids they stand for, so a lookup reads one cache line
//! of index before it reads the entry. (hashbrown keeps control bytes and buckets in two
//! arrays, so a lookup there misses the cache twice before reaching the entry: in a perf
//! profile of pipelined GETs, those two loads took a third of `Shard::find`.)
//!
//! Groups are probed in triangular order from the key's home group. Each group counts the
//! inserts that passed it because it was full (its overflow count, as in folly's F14), so a
//! lookup stops at the first group that no insert passed, and removal needs no tombstones: it
//! decrements the counts on the way from the home group to the removed slot's group. A count
//! that reaches 255 stays there until the table is rebuilt (lookups then just probe on).

use crate::entry::prefetch;
use crate::shard::SlotId;

/// Positions per group.
const WIDTH: usize = 12;
/// Keys per group, on average, at which the table doubles (10 of 12, 83%).
const MAX_FILL: usize = 10;
/// Where a group keeps its overflow count, after the tags.
const OVERFLOW: usize = WIDTH;

/// One cache line: tags (0 = empty), the overflow count, 3 spare bytes, then the slots.
#[derive(Clone, Copy, Debug)]
#[repr(C, align(64))]
struct Group {
    ctrl: [u8; 16],
    slots: [SlotId; WIDTH],
}

const EMPTY_GROUP: Group = Group {
    ctrl: [0; 16],
    slots: [0; WIDTH],
};

/// Bit i set where byte i of `word` equals `tag` (exactly: no false positives).
#[inline]
fn byte_matches(word: u64, tag: u8) -> u32 {
    const LOW7: u64 = 0x7f7f_7f7f_7f7f_7f7f;
    let t = word ^ (u64::from(tag) * 0x0101_0101_0101_0101);
    // 0x80 in every byte of `t` that is zero: no carry crosses a byte, so this is exact.
    let zero = !(((t & LOW7) + LOW7) | t | LOW7);
    // Gather bit 7 of byte i into bit 56 + i (the products never overlap, so no carries).
    ((zero >> 7).wrapping_mul(0x0102_0408_1020_4080) >> 56) as u32
}

impl Group {
    /// Bit i set where position i holds `tag` (0 finds the empty positions).
    #[inline]
    fn matches(&self, tag: u8) -> u32 {
        let mut low = [0u8; 8];
        low.copy_from_slice(&self.ctrl[..8]);
        let mut high = [0u8; 8];
        high[..4].copy_from_slice(&self.ctrl[8..WIDTH]);
        byte_matches(u64::from_le_bytes(low), tag)
            | (byte_matches(u64::from_le_bytes(high), tag) & 0xf) << 8
    }
}

/// The tag byte of a hash: its top 8 bits, never 0 (0 marks an empty position).
#[inline]
fn tag_byte(hash: u64) -> u8 {
    ((hash >> 56) as u8).max(1)
}

/// Groups needed to hold `n` keys: a power of two, at least 1.
fn groups_for(n: usize) -> usize {
    n.div_ceil(MAX_FILL).max(1).next_power_of_two()
}

/// The index. `hash` arguments are the table hash of a key (see `shard::table_hash`); the
/// `rehash` closures give a slot's table hash back when the table is rebuilt.
#[derive(Debug, Default)]
pub(crate) struct SlotIndex {
    /// Empty, or a power of two of groups.
    groups: Vec<Group>,
    len: usize,
}

impl SlotIndex {
    pub(crate) fn new() -> SlotIndex {
        SlotIndex::default()
    }

    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Keys it holds before it doubles.
    #[inline]
    pub(crate) fn capacity(&self) -> usize {
        self.groups.len() * MAX_FILL
    }

    /// Bytes of table.
    pub(crate) fn memory_bytes(&self) -> usize {
        self.groups.capacity() * std::mem::size_of::<Group>()
    }

    /// The address of the group a lookup of `hash` reads first (to prefetch it).
    #[inline]
    pub(crate) fn home_addr(&self, hash: u64) -> Option<*const u8> {
        if self.groups.is_empty() {
            return None;
        }
        let g = hash as usize & (self.groups.len() - 1);
        Some(std::ptr::from_ref(&self.groups[g]).cast())
    }

    /// The slots in the home group of `hash` whose tag matches: the candidates a lookup would
    /// check first (to prefetch their entries).
    #[inline]
    pub(crate) fn home_candidates(&self, hash: u64, mut f: impl FnMut(SlotId)) {
        if self.groups.is_empty() {
            return;
        }
        let group = &self.groups[hash as usize & (self.groups.len() - 1)];
        let mut m = group.matches(tag_byte(hash));
        while m != 0 {
            f(group.slots[m.trailing_zeros() as usize]);
            m &= m - 1;
        }
    }

    /// Where the slot for which `eq` holds is: (group, position).
    #[inline]
    fn find_position(
        &self,
        hash: u64,
        mut eq: impl FnMut(SlotId) -> bool,
    ) -> Option<(usize, usize)> {
        if self.groups.is_empty() {
            return None;
        }
        let mask = self.groups.len() - 1;
        let tag = tag_byte(hash);
        let mut g = hash as usize & mask;
        for step in 1..=self.groups.len() {
            let group = &self.groups[g];
            let mut m = group.matches(tag);
            while m != 0 {
                let i = m.trailing_zeros() as usize;
                if eq(group.slots[i]) {
                    return Some((g, i));
                }
                m &= m - 1;
            }
            if group.ctrl[OVERFLOW] == 0 {
                return None;
            }
            g = (g + step) & mask;
        }
        None
    }

    /// The slot under `hash` for which `eq` holds.
    #[inline]
    pub(crate) fn find(&self, hash: u64, eq: impl FnMut(SlotId) -> bool) -> Option<SlotId> {
        self.find_position(hash, eq)
            .map(|(g, i)| self.groups[g].slots[i])
    }

    /// Adds `slot` under `hash`; the caller knows it is not there yet. A full table grows by
    /// walking itself, with `rehash` giving each slot's hash; the shard grows it beforehand
    /// from its slab instead ([`SlotIndex::rebuild_from`], cheaper), so there this is only the
    /// guarantee that an insert always finds room.
    pub(crate) fn insert(&mut self, hash: u64, slot: SlotId, rehash: impl Fn(SlotId) -> u64) {
        if self.len >= self.capacity() {
            self.rebuild(groups_for(self.len + 1).max(self.groups.len() * 2), rehash);
        }
        self.place(hash, slot);
        self.len += 1;
    }

    /// Puts `slot` in the first empty position on its probe path. There is one: the table is
    /// never more than MAX_FILL / WIDTH full, and the triangular probe visits every group.
    fn place(&mut self, hash: u64, slot: SlotId) {
        let mask = self.groups.len() - 1;
        let mut g = hash as usize & mask;
        let mut step = 0;
        loop {
            let group = &mut self.groups[g];
            let empty = group.matches(0);
            if empty != 0 {
                let i = empty.trailing_zeros() as usize;
                group.ctrl[i] = tag_byte(hash);
                group.slots[i] = slot;
                return;
            }
            group.ctrl[OVERFLOW] = group.ctrl[OVERFLOW].saturating_add(1);
            step += 1;
            g = (g + step) & mask;
        }
    }

    /// Removes `slot` (indexed under `hash`); false if it is not there.
    pub(crate) fn remove(&mut self, hash: u64, slot: SlotId) -> bool {
        let Some((found, i)) = self.find_position(hash, |s| s == slot) else {
            return false;
        };
        // Undo the overflow counts that the insert left on the groups it passed.
        let mask = self.groups.len() - 1;
        let mut g = hash as usize & mask;
        let mut step = 0;
        while g != found {
            let over = &mut self.groups[g].ctrl[OVERFLOW];
            if *over != u8::MAX {
                *over -= 1;
            }
            step += 1;
            g = (g + step) & mask;
        }
        self.groups[found].ctrl[i] = 0;
        self.len -= 1;
        true
    }

    /// The number of groups a table for at least `keys` keys has: what to pass to
    /// [`SlotIndex::rebuild_from`] to grow (`capacity() + 1`) or shrink.
    pub(crate) fn groups_for(&self, keys: usize) -> usize {
        groups_for(keys.max(self.len))
    }

    /// Rebuilds the table with `groups` groups from `entries`, which must yield every indexed
    /// (hash, slot) once. The shard passes its slab, read in order: a resize then reads memory
    /// sequentially, where walking the old table would miss the cache once per key on the
    /// entry it needs the hash of. The new table's home groups are prefetched a few keys ahead.
    pub(crate) fn rebuild_from(
        &mut self,
        groups: usize,
        entries: impl Iterator<Item = (u64, SlotId)>,
    ) {
        const AHEAD: usize = 8;
        self.groups = vec![EMPTY_GROUP; groups];
        let mask = groups - 1;
        let mut ring = [(0u64, 0 as SlotId); AHEAD];
        let mut n = 0;
        for (hash, slot) in entries {
            prefetch(std::ptr::from_ref(&self.groups[hash as usize & mask]).cast());
            if n >= AHEAD {
                let (h, s) = ring[n % AHEAD];
                self.place(h, s);
            }
            ring[n % AHEAD] = (hash, slot);
            n += 1;
        }
        for i in n.saturating_sub(AHEAD)..n {
            let (h, s) = ring[i % AHEAD];
            self.place(h, s);
        }
        debug_assert_eq!(n, self.len, "rebuild_from saw a different number of keys");
        self.len = n;
    }

    /// Moves every slot into a table of `groups` groups.
    fn rebuild(&mut self, groups: usize, rehash: impl Fn(SlotId) -> u64) {
        let old = std::mem::replace(&mut self.groups, vec![EMPTY_GROUP; groups]);
        for group in &old {
            let mut full = group.matches(0) ^ 0xfff;
            while full != 0 {
                let slot = group.slots[full.trailing_zeros() as usize];
                self.place(rehash(slot), slot);
                full &= full - 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A well-mixed table hash per slot, as the shard's would be.
    fn h(slot: SlotId) -> u64 {
        u64::from(slot).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ (u64::from(slot) << 40)
    }

    #[test]
    fn byte_matches_is_exact() {
        let bytes = [0u8, 1, 0x80, 0xff, 0x7f, 0x01, 0, 0x80];
        let word = u64::from_le_bytes(bytes);
        for tag in [0u8, 1, 0x7f, 0x80, 0xff, 2] {
            let want = bytes
                .iter()
                .enumerate()
                .filter(|(_, &b)| b == tag)
                .fold(0u32, |m, (i, _)| m | 1 << i);
            assert_eq!(byte_matches(word, tag), want, "tag {tag:#x}");
        }
    }

    #[test]
    fn group_matches_ignores_the_overflow_byte() {
        let mut g = EMPTY_GROUP;
        g.ctrl[3] = 9;
        g.ctrl[11] = 9;
        g.ctrl[OVERFLOW] = 9;
        assert_eq!(g.matches(9), 1 << 3 | 1 << 11);
        assert_eq!(g.matches(0), 0xfff & !(1 << 3 | 1 << 11));
    }

    #[test]
    fn insert_find_remove_through_growth_and_shrink() {
        let mut index = SlotIndex::new();
        let n = 50_000u32;
        for s in 0..n {
            index.insert(h(s), s, h);
        }
        assert_eq!(index.len(), n as usize);
        for s in 0..n {
            assert_eq!(index.find(h(s), |x| x == s), Some(s));
        }
        assert_eq!(index.find(h(n + 1), |x| x == n + 1), None);
        for s in (0..n).filter(|s| s % 3 != 0) {
            assert!(index.remove(h(s), s));
        }
        assert!(!index.remove(h(1), 1));
        let left = (0..n).filter(|s| s % 3 == 0).map(|s| (h(s), s));
        index.rebuild_from(index.groups_for(0), left);
        for s in 0..n {
            let want = (s % 3 == 0).then_some(s);
            assert_eq!(index.find(h(s), |x| x == s), want);
        }
        assert!(index.capacity() < 2 * index.len().max(MAX_FILL) + 2 * MAX_FILL);
    }

    #[test]
    fn colliding_hashes_overflow_and_unwind() {
        // Every slot under one hash: each group fills, and the overflow counts carry lookups
        // on; removing them all must leave no stale count behind.
        let mut index = SlotIndex::new();
        let same = |_: SlotId| 42u64 << 56 | 7;
        index.rebuild_from(index.groups_for(400), std::iter::empty());
        for s in 0..200 {
            index.insert(same(s), s, same);
        }
        for s in 0..200 {
            assert_eq!(index.find(same(s), |x| x == s), Some(s));
        }
        for s in 0..200 {
            assert!(index.remove(same(s), s));
        }
        assert!(index.groups.iter().all(|g| g.ctrl == [0; 16]));
    }

    #[test]
    fn rebuild_from_a_list_of_entries() {
        let mut index = SlotIndex::new();
        for s in 0..1000 {
            index.insert(h(s), s, h);
        }
        let groups = index.groups_for(index.capacity() + 1);
        index.rebuild_from(groups, (0..1000).map(|s| (h(s), s)));
        assert_eq!(index.groups.len(), groups);
        assert_eq!(index.len(), 1000);
        for s in 0..1000 {
            assert_eq!(index.find(h(s), |x| x == s), Some(s));
        }
        index.rebuild_from(index.groups_for(0), (0..1000).map(|s| (h(s), s)));
        assert!(index.groups.len() < groups);
        assert_eq!(index.find(h(999), |x| x == 999), Some(999));
    }

    #[test]
    fn random_operations_agree_with_a_model() {
        // Hashes drawn from 40 home groups' worth of values, so tags collide, groups fill and
        // overflow counts go up and down; the table is rebuilt (grown and shrunk) every 5000
        // steps as well as when it fills.
        let mut next = crate::xorshift::xorshift(0x9E37_79B9_7F4A_7C15);
        let hash_of = |slot: SlotId| h(slot % 40) ^ u64::from(slot % 7) << 60;
        let mut index = SlotIndex::new();
        let mut model = std::collections::BTreeSet::new();
        for step in 0..60_000u32 {
            let slot = (next() % 2_000) as SlotId;
            match next() % 10 {
                0..=4 if !model.contains(&slot) => {
                    index.insert(hash_of(slot), slot, hash_of);
                    model.insert(slot);
                }
                5..=7 => assert_eq!(index.remove(hash_of(slot), slot), model.remove(&slot)),
                _ if step % 5_000 == 0 => {
                    let keys = index.len() + (next() % 500) as usize;
                    let live = model.iter().map(|&s| (hash_of(s), s));
                    index.rebuild_from(index.groups_for(keys), live);
                }
                _ => {}
            }
            let probe = (next() % 2_000) as SlotId;
            let want = model.contains(&probe).then_some(probe);
            assert_eq!(
                index.find(hash_of(probe), |x| x == probe),
                want,
                "step {step}"
            );
            assert_eq!(index.len(), model.len());
        }
    }

    #[test]
    fn probing_covers_every_group() {
        let mut index = SlotIndex::new();
        index.rebuild_from(index.groups_for(8 * MAX_FILL), std::iter::empty());
        let groups = index.groups.len();
        let mut seen = vec![false; groups];
        let mut g = 5 % groups;
        for step in 1..=groups {
            seen[g] = true;
            g = (g + step) & (groups - 1);
        }
        assert!(seen.iter().all(|&s| s));
    }
}
