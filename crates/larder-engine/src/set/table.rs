//! The "hashtable" encoding: members in a dense array, found through a hash table of their
//! positions.
//!
//! The dense array makes a random member one uniform pick (SPOP, SRANDMEMBER) and gives SSCAN
//! a cursor that survives changes (see [`Table::scan`]). The hash table holds only 4-byte
//! positions, so its empty buckets cost little; each member is one allocation of its own
//! length. Removing a member moves the last one into its place.

use hashbrown::HashTable;

/// Hash a member with the keyspace's hash function.
#[inline]
fn hash_of(member: &[u8]) -> u64 {
    crate::shard::hash_key(member)
}

/// Heap bytes of one member's allocation: its length rounded up to the allocator's 8-byte
/// granule (an empty member allocates nothing).
#[inline]
pub(super) fn member_cost(m: &[u8]) -> usize {
    m.len().next_multiple_of(8)
}

/// Invariants: `index` holds each position of `members` exactly once, found under the hash of
/// the member at that position; members are distinct; `member_bytes` is the sum of
/// [`member_cost`] over `members`.
#[derive(Clone, Debug, Default)]
pub(super) struct Table {
    members: Vec<Box<[u8]>>,
    index: HashTable<u32>,
    member_bytes: usize,
}

impl Table {
    pub(super) fn with_capacity(n: usize) -> Table {
        Table {
            members: Vec::with_capacity(n),
            index: HashTable::with_capacity(n),
            member_bytes: 0,
        }
    }

    pub(super) fn len(&self) -> usize {
        self.members.len()
    }

    /// Heap bytes: the dense array, the members, the hash table.
    pub(super) fn heap_bytes(&self) -> usize {
        self.heap_bytes_without_members() + self.member_bytes
    }

    /// Heap bytes of the dense array and the hash table.
    pub(super) fn heap_bytes_without_members(&self) -> usize {
        self.members.capacity() * std::mem::size_of::<Box<[u8]>>() + self.index.allocation_size()
    }

    fn find(&self, member: &[u8], hash: u64) -> Option<usize> {
        let members = &self.members;
        self.index
            .find(hash, |&i| *members[i as usize] == *member)
            .map(|&i| i as usize)
    }

    pub(super) fn contains(&self, member: &[u8]) -> bool {
        self.find(member, hash_of(member)).is_some()
    }

    /// The member at dense position `i`.
    pub(super) fn get(&self, i: usize) -> Option<&[u8]> {
        self.members.get(i).map(|m| &**m)
    }

    /// Members in dense order.
    pub(super) fn iter(&self) -> impl ExactSizeIterator<Item = &[u8]> + '_ {
        self.members.iter().map(|m| &**m)
    }

    /// Add `member`; returns whether it was new.
    pub(super) fn insert(&mut self, member: &[u8]) -> bool {
        let hash = hash_of(member);
        if self.find(member, hash).is_some() {
            return false;
        }
        let Ok(pos) = u32::try_from(self.members.len()) else {
            // Redis sets hold at most 2^32 - 1 members as well.
            panic!("set exceeds 2^32 members");
        };
        let members = &self.members;
        self.index
            .insert_unique(hash, pos, |&i| hash_of(&members[i as usize]));
        self.member_bytes += member_cost(member);
        self.members.push(Box::from(member));
        true
    }

    /// Remove `member`; returns whether it was there.
    pub(super) fn remove(&mut self, member: &[u8]) -> bool {
        let hash = hash_of(member);
        let members = &self.members;
        match self
            .index
            .find_entry(hash, |&i| *members[i as usize] == *member)
        {
            Ok(entry) => {
                let (pos, _) = entry.remove();
                self.take_at(pos as usize);
                true
            }
            Err(_) => false,
        }
    }

    /// Remove the member at dense position `pos` and return it.
    pub(super) fn remove_at(&mut self, pos: usize) -> Option<Box<[u8]>> {
        let member = self.members.get(pos)?;
        let hash = hash_of(member);
        let entry = self.index.find_entry(hash, |&i| i as usize == pos).ok()?;
        entry.remove();
        Some(self.take_at(pos))
    }

    /// Take the member at `pos` out of the dense array (its index entry is already gone),
    /// moving the last member into its place and re-pointing that member's index entry.
    fn take_at(&mut self, pos: usize) -> Box<[u8]> {
        let last = self.members.len() - 1;
        let member = self.members.swap_remove(pos);
        self.member_bytes -= member_cost(&member);
        if pos != last {
            let moved = hash_of(&self.members[pos]);
            if let Some(i) = self.index.find_mut(moved, |&i| i as usize == last) {
                *i = pos as u32;
            }
        }
        if self.members.capacity() > 64 && self.members.len() < self.members.capacity() / 4 {
            self.members.shrink_to(self.members.len() * 2);
            let members = &self.members;
            self.index
                .shrink_to(members.len(), |&i| hash_of(&members[i as usize]));
        }
        member
    }

    /// One SSCAN step. The cursor counts the dense positions not visited yet: the scan
    /// visits positions from the top down, and a removal only ever moves the last member
    /// (already visited, or not yet reached) into a lower position, so a member present for
    /// the whole scan is always returned at least once. `0` starts a scan; the returned
    /// cursor is `0` when it is done.
    pub(super) fn scan(&self, cursor: u64, count: usize, mut visit: impl FnMut(&[u8])) -> u64 {
        let len = self.members.len() as u64;
        let mut at = if cursor == 0 { len } else { cursor.min(len) };
        let mut n = 0;
        while at > 0 && n < count.max(1) {
            at -= 1;
            visit(&self.members[at as usize]);
            n += 1;
        }
        at
    }
}
