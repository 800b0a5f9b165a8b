//! The full encoding of a hash ("hashtable"): a slab of entries found through an index.
//!
//! Each entry is one allocation, `[varint field len][field][value]`: one allocation per field
//! instead of Redis's three (dict entry, field, value). The slab position of an entry never
//! changes while the entry is present (a removed entry's position goes on a free list for
//! the next insert), so HSCAN's cursor is a slab position and a scan returns every field
//! present from its start to its end, whatever is written in between.
//!
//! Invariants: `index` holds exactly the positions of the occupied slots, `free` exactly the
//! positions of the empty ones, and `entry_bytes` is the sum of [`entry_cost`] over the
//! occupied slots.

use std::sync::OnceLock;

use hashbrown::HashTable;

use super::{get_varint, put_varint, varint_len};
use crate::evict::random_u64;

#[derive(Clone, Debug, Default)]
pub(super) struct Table {
    slots: Vec<Option<Box<[u8]>>>,
    free: Vec<u32>,
    index: HashTable<u32>,
    entry_bytes: usize,
}

/// Heap bytes of one entry: its allocation rounded up to the allocator's 8-byte granule.
fn entry_cost(e: &[u8]) -> usize {
    e.len().next_multiple_of(8)
}

/// The process's hash seed, drawn once, so that clients cannot pick colliding fields ahead.
fn seed() -> u64 {
    static SEED: OnceLock<u64> = OnceLock::new();
    *SEED.get_or_init(random_u64)
}

fn hash_field(field: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64_with_seed(field, seed())
}

fn encode(field: &[u8], value: &[u8]) -> Box<[u8]> {
    let mut e = Vec::with_capacity(varint_len(field.len()) + field.len() + value.len());
    put_varint(&mut e, field.len());
    e.extend_from_slice(field);
    e.extend_from_slice(value);
    e.into_boxed_slice()
}

/// An entry's field and value.
fn split(e: &[u8]) -> (&[u8], &[u8]) {
    let mut p = 0;
    let flen = get_varint(e, &mut p);
    e[p..].split_at(flen)
}

fn field_of(e: &[u8]) -> &[u8] {
    split(e).0
}

/// The entry in slot `id` (occupied, by the invariant on `index`).
fn entry(slots: &[Option<Box<[u8]>>], id: u32) -> &[u8] {
    slots[id as usize].as_deref().unwrap_or_default()
}

impl Table {
    pub(super) fn with_capacity(n: usize) -> Table {
        Table {
            slots: Vec::with_capacity(n),
            free: Vec::new(),
            index: HashTable::with_capacity(n),
            entry_bytes: 0,
        }
    }

    pub(super) fn len(&self) -> usize {
        self.index.len()
    }

    /// Heap bytes of the slab, the free list, the index and the entries, in O(1).
    pub(super) fn heap_bytes(&self) -> usize {
        let slab = self.slots.capacity() * std::mem::size_of::<Option<Box<[u8]>>>();
        let free = (self.free.capacity() * std::mem::size_of::<u32>()).next_multiple_of(8);
        slab + free + self.index.allocation_size() + self.entry_bytes
    }

    pub(super) fn pairs(&self) -> impl Iterator<Item = (&[u8], &[u8])> + '_ {
        self.slots.iter().flatten().map(|e| split(e))
    }

    fn find(&self, field: &[u8]) -> Option<u32> {
        let slots = &self.slots;
        self.index
            .find(hash_field(field), |&id| field_of(entry(slots, id)) == field)
            .copied()
    }

    pub(super) fn get(&self, field: &[u8]) -> Option<&[u8]> {
        self.find(field).map(|id| split(entry(&self.slots, id)).1)
    }

    /// Set `field` to `value`; returns whether the field is new.
    pub(super) fn insert(&mut self, field: &[u8], value: &[u8]) -> bool {
        let e = encode(field, value);
        let cost = entry_cost(&e);
        if let Some(id) = self.find(field) {
            let old = self.slots[id as usize].replace(e);
            self.entry_bytes = self.entry_bytes + cost - old.as_deref().map_or(0, entry_cost);
            return false;
        }
        let id = match self.free.pop() {
            Some(id) => {
                self.slots[id as usize] = Some(e);
                id
            }
            None => {
                // More than 2^32 fields is beyond any memory this runs in.
                let id = u32::try_from(self.slots.len()).unwrap_or(u32::MAX);
                if self.slots.len() == self.slots.capacity() {
                    // Grow by half, not double: the slab is a third of a field's bytes.
                    self.slots.reserve_exact((self.slots.len() / 2).max(4));
                }
                self.slots.push(Some(e));
                id
            }
        };
        self.entry_bytes += cost;
        let slots = &self.slots;
        self.index.insert_unique(hash_field(field), id, |&id| {
            hash_field(field_of(entry(slots, id)))
        });
        true
    }

    /// Remove `field`; returns whether it was there.
    pub(super) fn remove(&mut self, field: &[u8]) -> bool {
        let slots = &self.slots;
        let Ok(found) = self
            .index
            .find_entry(hash_field(field), |&id| field_of(entry(slots, id)) == field)
        else {
            return false;
        };
        let (id, _) = found.remove();
        if let Some(old) = self.slots[id as usize].take() {
            self.entry_bytes -= entry_cost(&old);
        }
        self.free.push(id);
        if self.index.is_empty() {
            *self = Table::default();
        }
        true
    }

    /// HSCAN from slab position `cursor`: gives the occupied slots from there until `count`
    /// pairs are given or `10 * count` slots are looked at (a sparse slab must not stall the
    /// server), and returns the position to go on from, 0 at the end.
    pub(super) fn scan<'a>(
        &'a self,
        cursor: u64,
        count: usize,
        mut f: impl FnMut(&'a [u8], &'a [u8]),
    ) -> u64 {
        let end = self.slots.len();
        let mut i = usize::try_from(cursor).unwrap_or(usize::MAX);
        let (mut given, mut looked) = (0, 0);
        let budget = count.max(1).saturating_mul(10);
        while i < end && given < count.max(1) && looked < budget {
            if let Some(e) = &self.slots[i] {
                let (k, v) = split(e);
                f(k, v);
                given += 1;
            }
            i += 1;
            looked += 1;
        }
        if i >= end {
            0
        } else {
            i as u64
        }
    }

    /// Whether most of the slab is empty (after many removals), so that drawing random
    /// positions would mostly miss: callers drawing many pairs collect them first.
    pub(super) fn sparse(&self) -> bool {
        self.index.len().saturating_mul(4) < self.slots.len()
    }

    /// A uniformly random pair: random slab positions until an occupied one, or a pick among
    /// the occupied ones when the slab is mostly empty.
    pub(super) fn random_pair(&self) -> Option<(&[u8], &[u8])> {
        let len = self.index.len();
        if len == 0 {
            return None;
        }
        let n = self.slots.len() as u64;
        for _ in 0..16 {
            if let Some(e) = &self.slots[(random_u64() % n) as usize] {
                return Some(split(e));
            }
        }
        let nth = (random_u64() % len as u64) as usize;
        self.pairs().nth(nth)
    }
}

#[cfg(test)]
impl Table {
    /// What `heap_bytes` must equal, counted from scratch; also checks the invariants.
    pub(super) fn recount_bytes(&self) -> usize {
        let occupied: Vec<u32> = (0..self.slots.len() as u32)
            .filter(|&i| self.slots[i as usize].is_some())
            .collect();
        assert_eq!(occupied.len(), self.index.len());
        assert_eq!(occupied.len() + self.free.len(), self.slots.len());
        for &id in &occupied {
            assert_eq!(self.find(field_of(entry(&self.slots, id))), Some(id));
        }
        let entries: usize = self.slots.iter().flatten().map(|e| entry_cost(e)).sum();
        self.slots.capacity() * std::mem::size_of::<Option<Box<[u8]>>>()
            + (self.free.capacity() * 4).next_multiple_of(8)
            + self.index.allocation_size()
            + entries
    }
}
