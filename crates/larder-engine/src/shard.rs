//! One shard: a hash index over a slab of entries, and an expiry index.
//!
//! This file holds the shard's structure: lookups, inserts, removals and value writes. Writes
//! to an entry's metadata are in `meta.rs`, walks over the slab or the expiry index (sampling,
//! active expiry, SCAN) in `walk.rs`, the batched lookups' prefetch steps in `prefetch.rs`,
//! point-in-time capture and restore in `snapshot.rs`, and key images in `image.rs`.

use std::collections::BTreeSet;
use std::sync::Arc;

use crate::entry::{Entry, Object};
use crate::evict::AccessPolicy;
use crate::feed::{ChangeKind, Feed};
use crate::index::SlotIndex;

/// Whether a read records the access time of the key it finds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// Record it (the default).
    Touch,
    /// Leave it as it was (CLIENT NO-TOUCH).
    NoTouch,
}

/// Stable position of an entry inside its shard. It does not move while the key lives, which
/// is what makes SCAN's guarantee hold while the index grows or shrinks.
pub type SlotId = u32;

/// Slots are kept in chunks so that growing the slab never moves more than one chunk.
const CHUNK_SLOTS: usize = 4096;
const CHUNK_SHIFT: u32 = CHUNK_SLOTS.trailing_zeros();

/// The 32 bits of a key's hash stored in its entry.
#[inline]
fn tag_of(hash: u64) -> u32 {
    hash as u32
}

/// The hash the index sees, rebuilt from the entry's tag alone, so growing or shrinking the
/// index rebuilds each slot's hash from the slab (dense, mostly cached) without reading a key
/// or hashing it again. The multiply spreads the tag's bits to the top (the index's tag byte)
/// while the low bits (home group) stay well mixed.
#[inline]
fn table_hash(tag: u32) -> u64 {
    u64::from(tag).wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

/// Hash a key. One hash is computed per key per command: its bits pick the shard and the
/// index bucket.
#[inline]
pub(crate) fn hash_key(key: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(key)
}

/// The fill, between half of `capacity` and all of it, at which the shard at `position` grows
/// a table early (see [`Shard::grow_early`]).
fn early_fill(capacity: usize, position: usize) -> usize {
    capacity / 2 + capacity / 2 * position / crate::keyspace::SHARDS_PER_DB
}

/// The entry in `slot` of a slab (a free function so that index closures can borrow the slab
/// while the index is borrowed mutably).
#[inline]
fn slot_in(chunks: &[Vec<Entry>], slot: SlotId) -> &Entry {
    &chunks[(slot >> CHUNK_SHIFT) as usize][slot as usize & (CHUNK_SLOTS - 1)]
}

/// A hash table of entries plus an ordered index of expiry deadlines.
///
/// Invariants:
/// - `index` holds exactly the slot ids of live (non-vacant) entries, each once, under
///   `table_hash` of their entry's `hash_tag`, which is the low 32 bits of its key's hash.
/// - `expires` holds `(deadline, slot)` for exactly the live entries with a deadline.
/// - Vacant slots are in `free`; slot ids of live entries never change.
#[derive(Debug)]
pub struct Shard {
    index: SlotIndex,
    chunks: Vec<Vec<Entry>>,
    free: Vec<SlotId>,
    expires: BTreeSet<(u64, SlotId)>,
    version_seq: u64,
    /// Unique shard number across the keyspace, mixed into versions so they are unique.
    id: u32,
    /// Bytes held by entries (approximate), for INFO memory and eviction.
    used_bytes: usize,
    /// How accesses are recorded (LRU clock or LFU counter); shared by the keyspace.
    policy: Arc<AccessPolicy>,
    /// Where every change is recorded (see `feed.rs`); shared by the keyspace.
    feed: Arc<Feed>,
    /// The last removals, newest last: (the key's 32-bit tag, the shard's stamp after it). A
    /// key that is absent now may have existed since a stamp taken earlier: WATCH on a key
    /// that did not exist needs to know ([`Shard::removed_since`]).
    removed: std::collections::VecDeque<(u32, u64)>,
    /// The stamp of the newest removal dropped from `removed` (0: none).
    removed_floor: u64,
    /// The state of a point-in-time capture still visiting this shard's data (see
    /// `crate::snapshot`), or `None`: then a change costs one branch in [`Shard::slot_mut`].
    capture: Option<Box<snapshot::ShardCapture>>,
}

/// Removals a shard remembers for [`Shard::removed_since`].
const REMOVED_KEPT: usize = 64;

impl Shard {
    /// An empty shard with the default access policy. The keyspace makes its own; this is
    /// for measuring a shard alone (`examples/index_resize.rs`).
    pub fn new(id: u32) -> Shard {
        Shard::with_policy(id, Arc::default(), Arc::default())
    }

    pub(crate) fn with_policy(id: u32, policy: Arc<AccessPolicy>, feed: Arc<Feed>) -> Shard {
        Shard {
            index: SlotIndex::new(),
            chunks: Vec::new(),
            free: Vec::new(),
            expires: BTreeSet::new(),
            version_seq: 0,
            id,
            used_bytes: 0,
            policy,
            feed,
            removed: std::collections::VecDeque::new(),
            removed_floor: 0,
            capture: None,
        }
    }

    /// Buckets the key index can fill before it grows.
    pub fn index_capacity(&self) -> usize {
        self.index.capacity()
    }

    /// Number of keys, expired-but-not-yet-reclaimed ones included.
    #[inline]
    pub fn len(&self) -> usize {
        self.index.len()
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.index.is_empty()
    }

    /// Number of keys with a deadline.
    pub fn volatile_len(&self) -> usize {
        self.expires.len()
    }

    /// The earliest deadline in this shard, if any.
    pub fn next_deadline_ms(&self) -> Option<u64> {
        self.expires.first().map(|&(at, _)| at)
    }

    /// Approximate bytes held by this shard's entries and tables.
    pub fn used_bytes(&self) -> usize {
        self.used_bytes
            + self.index.memory_bytes()
            + self.slab_capacity() * std::mem::size_of::<Entry>()
            + self.expires.len() * 24
    }

    /// Slots allocated in the slab. Every chunk but the last is full (chunks grow by doubling
    /// up to `CHUNK_SLOTS` before the next one starts), so this is O(1).
    #[inline]
    fn slab_capacity(&self) -> usize {
        match self.chunks.last() {
            None => 0,
            Some(last) => (self.chunks.len() - 1) * CHUNK_SLOTS + last.capacity(),
        }
    }

    /// Number of slots (live and vacant) in the slab: slot ids are below this.
    fn slot_count(&self) -> usize {
        match self.chunks.len() {
            0 => 0,
            n => ((n - 1) << CHUNK_SHIFT) + self.chunks[n - 1].len(),
        }
    }

    #[inline]
    fn slot(&self, slot: SlotId) -> &Entry {
        slot_in(&self.chunks, slot)
    }

    /// The entry in `slot`, to be changed: every change to an entry's data goes through here
    /// (or through [`Shard::alloc_slot`], [`Shard::clear`] and [`Shard::swap_data`]), which is
    /// where a running capture saves the entry's point-in-time image first.
    #[inline]
    fn slot_mut(&mut self, slot: SlotId) -> &mut Entry {
        if self.capture.is_some() {
            self.capture_before_change(slot);
        }
        self.meta_mut(slot)
    }

    /// The entry in `slot`, for a change to metadata that no snapshot holds (the access
    /// clock, memcached's item state bits): no capture hook.
    #[inline]
    fn meta_mut(&mut self, slot: SlotId) -> &mut Entry {
        &mut self.chunks[(slot >> CHUNK_SHIFT) as usize][slot as usize & (CHUNK_SLOTS - 1)]
    }

    /// The entry in a slot returned by [`Shard::find`] or [`Shard::insert`].
    #[inline]
    pub fn entry(&self, slot: SlotId) -> &Entry {
        self.slot(slot)
    }

    /// Find a key without looking at its deadline.
    #[inline]
    pub fn find_raw(&self, key: &[u8], hash: u64) -> Option<SlotId> {
        let chunks = &self.chunks;
        let tag = tag_of(hash);
        self.index.find(table_hash(tag), |slot| {
            let e = slot_in(chunks, slot);
            e.hash_tag == tag && e.key() == key
        })
    }

    /// Find a live key. An expired key is removed on the way (lazy expiry) and not returned.
    #[inline]
    pub fn find(&mut self, key: &[u8], hash: u64, now_ms: u64) -> Option<SlotId> {
        let slot = self.find_raw(key, hash)?;
        if self.slot(slot).is_expired(now_ms) {
            return self.expired_found(slot);
        }
        Some(slot)
    }

    /// A reader found an entry past its deadline: remove it; on a keyspace that follows a
    /// master, keep it, hidden from clients and visible to the master's stream (Redis 7's
    /// replica: only the master's DEL removes a key).
    #[cold]
    #[inline(never)]
    fn expired_found(&mut self, slot: SlotId) -> Option<SlotId> {
        if self.policy.follows_master() {
            return crate::evict::AccessPolicy::applies_master_stream().then_some(slot);
        }
        self.expire_lazily(slot);
        None
    }

    /// Remove an entry a reader found past its deadline (kept out of `find`'s inlined code).
    #[cold]
    #[inline(never)]
    fn expire_lazily(&mut self, slot: SlotId) {
        self.remove_as(slot, ChangeKind::Expired);
    }

    /// Like [`Shard::find`], also recording the access for LRU/`OBJECT IDLETIME` unless the
    /// client asked not to (CLIENT NO-TOUCH).
    #[inline]
    pub fn find_touch(
        &mut self,
        key: &[u8],
        hash: u64,
        now_ms: u64,
        access: Access,
    ) -> Option<SlotId> {
        let slot = self.find(key, hash, now_ms)?;
        if access == Access::Touch {
            self.touch(slot, now_ms);
        }
        Some(slot)
    }

    fn next_version(&mut self) -> u64 {
        self.version_seq += 1;
        (self.version_seq << 20) | u64::from(self.id)
    }

    fn alloc_slot(&mut self, entry: Entry) -> SlotId {
        if self.capture.is_some() {
            // The slot the entry goes to (a vacant one, or the next new one) may be one a
            // capture has still to visit: it must not see the new entry there.
            let next = match self.free.last() {
                Some(&slot) => slot,
                None => self.slot_count() as SlotId,
            };
            self.capture_before_change(next);
        }
        if let Some(slot) = self.free.pop() {
            *self.slot_mut(slot) = entry;
            return slot;
        }
        let position = self.position();
        match self.chunks.last_mut() {
            Some(chunk) if chunk.len() < CHUNK_SLOTS => {
                // As the index (see `grow_early`): a chunk doubles at a fill set by the
                // shard's position, so the 256 shards' doublings (a memmove and fresh pages
                // each) do not all fall in the same stretch of a bulk load.
                let cap = chunk.capacity();
                if (256..CHUNK_SLOTS).contains(&cap) && chunk.len() >= early_fill(cap, position) {
                    // `reserve_exact` counts from the length: this asks for twice the capacity.
                    chunk.reserve_exact((2 * cap).min(CHUNK_SLOTS) - chunk.len());
                }
                chunk.push(entry);
            }
            _ => {
                // A new chunk starts small so that tiny shards stay tiny; it grows by doubling
                // up to CHUNK_SLOTS, which bounds the memmove a growth step costs.
                let mut chunk = Vec::with_capacity(if self.chunks.is_empty() { 4 } else { 64 });
                chunk.push(entry);
                self.chunks.push(chunk);
            }
        }
        let chunk = self.chunks.len() - 1;
        ((chunk << CHUNK_SHIFT) | (self.chunks[chunk].len() - 1)) as SlotId
    }

    /// Insert a key that is known to be absent (check with [`Shard::find`] first).
    pub fn insert_string(
        &mut self,
        key: &[u8],
        hash: u64,
        value: &[u8],
        expire_at_ms: u64,
        now_ms: u64,
    ) -> SlotId {
        self.insert_entry(Entry::new_string(key, value), hash, expire_at_ms, now_ms)
    }

    /// Insert a key holding an object; the key must be absent.
    pub fn insert_object(
        &mut self,
        key: &[u8],
        hash: u64,
        object: Object,
        expire_at_ms: u64,
        now_ms: u64,
    ) -> SlotId {
        self.insert_entry(Entry::new_object(key, object), hash, expire_at_ms, now_ms)
    }

    /// Insert a prepared entry (RENAME, COPY, MOVE); the key must be absent. The entry gets a
    /// new version; its deadline is replaced by `expire_at_ms`.
    pub(crate) fn insert_entry(
        &mut self,
        mut entry: Entry,
        hash: u64,
        expire_at_ms: u64,
        now_ms: u64,
    ) -> SlotId {
        entry.version = self.next_version();
        entry.expire_at_ms = expire_at_ms;
        let slot = self.place_entry(entry, hash, now_ms);
        self.record(ChangeKind::Written, slot);
        slot
    }

    /// Put `entry` (with its version and deadline set) in a slot and index it, recording
    /// nothing in the feed; the key must be absent.
    fn place_entry(&mut self, mut entry: Entry, hash: u64, now_ms: u64) -> SlotId {
        debug_assert!(self.find_raw(entry.key(), hash).is_none());
        let tag = tag_of(hash);
        entry.hash_tag = tag;
        entry.access = self.policy.initial(now_ms);
        let expire_at_ms = entry.expire_at_ms;
        self.used_bytes += entry.memory_bytes();
        // Grow first: a rebuild reads the slab, which must not hold the new entry yet.
        self.grow_early();
        if self.index.len() >= self.index.capacity() {
            self.rebuild_index(self.index.capacity() + 1);
        }
        let slot = self.alloc_slot(entry);
        if expire_at_ms != 0 {
            self.expires.insert((expire_at_ms, slot));
        }
        let chunks = &self.chunks;
        self.index.insert(table_hash(tag), slot, |s| {
            table_hash(slot_in(chunks, s).hash_tag)
        });
        slot
    }

    /// The database this shard belongs to.
    #[inline]
    pub fn db_index(&self) -> usize {
        self.id as usize / crate::keyspace::SHARDS_PER_DB
    }

    /// The feed this shard records its changes in.
    pub fn feed(&self) -> &Arc<Feed> {
        &self.feed
    }

    /// Record a change of the live entry in `slot` in the feed.
    #[inline]
    fn record(&self, kind: ChangeKind, slot: SlotId) {
        if self.feed.records_changes() {
            self.feed
                .record(kind, self.db_index() as u32, self.slot(slot));
        }
    }

    /// The shard's position among its database's shards.
    fn position(&self) -> usize {
        self.id as usize % crate::keyspace::SHARDS_PER_DB
    }

    /// Grows the index before it is full, at a fill that differs from shard to shard.
    ///
    /// Keys hash evenly over a database's shards, so their indexes fill in step: left to grow
    /// when full, all 256 would resize within the same few thousand inserts of a bulk load,
    /// and a client queued behind that stretch waits for many resizes back to back (probe
    /// delays of 13–28 ms at ~3.5M keys in `bench/load_pause.py`). Growing at a fill between
    /// 1/2 and 1 set by the shard's position in its database spreads those resizes over a
    /// 2× range of database sizes, at the cost of some shards holding the next index size
    /// early (4 bytes per bucket). Small indexes grow as usual.
    fn grow_early(&mut self) {
        const MIN_CAPACITY: usize = 256;
        let cap = self.index.capacity();
        let len = self.index.len();
        if cap < MIN_CAPACITY || len >= cap {
            return;
        }
        if len >= early_fill(cap, self.position()) {
            self.rebuild_index(cap + 1);
        }
    }

    /// Rebuilds the index with room for `keys` keys (at least the present ones), from the
    /// slab's live entries in slab order (see `SlotIndex::rebuild_from`).
    fn rebuild_index(&mut self, keys: usize) {
        let groups = self.index.groups_for(keys);
        let live = self.chunks.iter().enumerate().flat_map(|(c, chunk)| {
            chunk
                .iter()
                .enumerate()
                .filter(|(_, e)| !e.is_vacant())
                .map(move |(i, e)| (table_hash(e.hash_tag), ((c << CHUNK_SHIFT) | i) as SlotId))
        });
        self.index.rebuild_from(groups, live);
    }

    /// Insert a copy of `entry` under `key` (which must be absent), keeping its deadline.
    pub fn insert_copy(&mut self, entry: &Entry, key: &[u8], hash: u64, now_ms: u64) -> SlotId {
        let copy = entry.clone_with_key(key);
        let at = copy.expire_at_ms;
        self.insert_entry(copy, hash, at, now_ms)
    }

    /// Remove a live entry and return it (a deletion, as DEL's).
    pub fn remove(&mut self, slot: SlotId) -> Entry {
        self.remove_as(slot, ChangeKind::Deleted)
    }

    /// Remove a live entry for the reason `kind` (`Deleted`, `Expired` or `Evicted`, as the
    /// feed records it) and return it.
    pub fn remove_as(&mut self, slot: SlotId, kind: ChangeKind) -> Entry {
        debug_assert!(kind.removes());
        self.record(kind, slot);
        self.unlink(slot)
    }

    /// Take a live entry out of the shard (index, deadlines, memory) without recording it.
    fn unlink(&mut self, slot: SlotId) -> Entry {
        let tag = self.slot(slot).hash_tag;
        self.note_removed(tag);
        if !self.index.remove(table_hash(tag), slot) {
            // Invariant: every live slot is indexed.
            unreachable!("slot {slot} not in index");
        }
        let entry = std::mem::replace(self.slot_mut(slot), Entry::vacant());
        if entry.expire_at_ms != 0 {
            self.expires.remove(&(entry.expire_at_ms, slot));
        }
        self.used_bytes = self.used_bytes.saturating_sub(entry.memory_bytes());
        self.free.push(slot);
        self.maybe_shrink();
        entry
    }

    /// Remember that the key with `tag` was removed now (see [`Shard::removed_since`]).
    fn note_removed(&mut self, tag: u32) {
        self.version_seq += 1;
        if self.removed.len() == REMOVED_KEPT {
            if let Some((_, stamp)) = self.removed.pop_front() {
                self.removed_floor = stamp;
            }
        }
        self.removed.push_back((tag, self.version_seq));
    }

    /// A stamp of the shard's history now, for [`Shard::removed_since`]. It grows with every
    /// write and removal.
    pub fn stamp(&self) -> u64 {
        self.version_seq
    }

    /// Whether the key with `hash` may have been removed after `stamp` (from
    /// [`Shard::stamp`]). Exact for the last removals the shard remembers; once it forgot
    /// removals made after `stamp`, the answer is a conservative yes. Another key with the
    /// same 32-bit tag also answers yes.
    pub fn removed_since(&self, hash: u64, stamp: u64) -> bool {
        let tag = tag_of(hash);
        self.removed_floor > stamp
            || self
                .removed
                .iter()
                .rev()
                .take_while(|&&(_, s)| s > stamp)
                .any(|&(t, _)| t == tag)
    }

    /// Give memory back when the index is mostly empty. Slot ids do not move.
    fn maybe_shrink(&mut self) {
        if self.index.is_empty() {
            self.chunks.clear();
            self.free.clear();
            self.index = SlotIndex::new();
            return;
        }
        let cap = self.index.capacity();
        if cap > 64 && self.index.len() * 8 < cap {
            self.rebuild_index(self.index.len() * 2);
        }
    }

    /// Exchange every key with `other` (SWAPDB), each shard keeping its own identity (the
    /// database and shard number that versions are made of). The version counters both move
    /// to the larger one, so a key's next version is still greater than its last.
    pub fn swap_data(&mut self, other: &mut Shard) {
        if self.capture.is_some() || other.capture.is_some() {
            self.capture_swap(other);
        }
        std::mem::swap(&mut self.index, &mut other.index);
        std::mem::swap(&mut self.chunks, &mut other.chunks);
        std::mem::swap(&mut self.free, &mut other.free);
        std::mem::swap(&mut self.expires, &mut other.expires);
        std::mem::swap(&mut self.used_bytes, &mut other.used_bytes);
        let seq = self.version_seq.max(other.version_seq);
        self.version_seq = seq;
        other.version_seq = seq;
    }

    /// Remove every key (the caller records the flush: [`crate::Db::clear_locked`]).
    pub fn clear(&mut self) -> Vec<Vec<Entry>> {
        if self.capture.is_some() {
            self.capture_detach();
        }
        // A few keys are remembered one by one; past that, every earlier stamp answers yes.
        if self.len() <= REMOVED_KEPT {
            let tags: Vec<u32> = self.iter().map(|e| e.hash_tag).collect();
            for tag in tags {
                self.note_removed(tag);
            }
        } else {
            self.version_seq += 1;
            self.removed.clear();
            self.removed_floor = self.version_seq;
        }
        self.index = SlotIndex::new();
        self.free = Vec::new();
        self.expires = BTreeSet::new();
        self.used_bytes = 0;
        std::mem::take(&mut self.chunks)
    }

    fn account<R>(&mut self, slot: SlotId, f: impl FnOnce(&mut Entry) -> R) -> R {
        let version = self.next_version();
        let e = self.slot_mut(slot);
        let before = e.memory_bytes();
        let r = f(e);
        e.version = version;
        let after = e.memory_bytes();
        self.used_bytes = (self.used_bytes + after).saturating_sub(before);
        self.record(ChangeKind::Written, slot);
        r
    }

    /// Replace the value with an inline string. The deadline is kept.
    pub fn set_string(&mut self, slot: SlotId, value: &[u8]) {
        self.account(slot, |e| e.set_string(value));
    }

    /// Replace the value with an object. The deadline is kept.
    pub fn set_object(&mut self, slot: SlotId, object: Object) {
        self.account(slot, |e| e.set_object(object));
    }

    /// Modify the string in place through `f` (APPEND, SETRANGE). Returns `None` if the key
    /// holds another type.
    pub fn update_string<R>(
        &mut self,
        slot: SlotId,
        f: impl FnOnce(&mut Vec<u8>) -> R,
    ) -> Option<R> {
        self.slot(slot).string()?;
        self.account(slot, |e| e.string_mut().map(f))
    }

    /// Keep the string in the grown representation (Redis's "raw") without changing it, as
    /// Redis's `lookupStringForBitCommand` unshares the value SETBIT and BITFIELD may write
    /// even when they leave it as it was. Not a write: the version stays and the feed records
    /// nothing. A no-op for other types.
    pub fn unshare_string(&mut self, slot: SlotId) {
        if self.slot(slot).string().is_none() || self.slot(slot).is_grown_string() {
            return;
        }
        let e = self.slot_mut(slot);
        let before = e.memory_bytes();
        e.string_mut();
        let after = e.memory_bytes();
        self.used_bytes = (self.used_bytes + after).saturating_sub(before);
    }

    /// Modify the object value in place through `f` (list pushes, pops, ...). Counts as a
    /// write (bumps the version) and keeps the memory accounting.
    ///
    /// # Panics
    /// If the key holds an inline string: callers check the type first (a broken invariant).
    pub fn object_mut<R>(&mut self, slot: SlotId, f: impl FnOnce(&mut Object) -> R) -> R {
        self.account(slot, |e| match e.object_mut() {
            Some(o) => f(o),
            None => unreachable!("object_mut on an inline string"),
        })
    }
}

mod image;
mod meta;
mod prefetch;
mod snapshot;
mod walk;
pub use image::KeyImage;
pub(crate) use prefetch::Candidates;
pub(crate) use snapshot::Orphan;
pub use snapshot::{RestoreValue, Restored};

#[cfg(test)]
mod tests;
