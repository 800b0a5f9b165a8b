//! A stream's consumer groups, with Redis 7.0's semantics: each group has a last delivered
//! ID, a read counter for its lag (`entries_read`), a pending entries list (PEL: every entry
//! delivered and not yet acknowledged, with its owner, last delivery time and delivery
//! count) and its consumers, each with its own PEL (the IDs of the group PEL it owns).
//!
//! Invariant: an ID is in a consumer's PEL exactly when the group PEL holds it with that
//! consumer as owner. Every operation that moves a pending entry changes both, so the two
//! never disagree (the model test in `group/tests.rs` checks it after every operation).
//!
//! Groups, consumers and PELs are ordered as Redis's radix trees order them (bytes of the
//! name, IDs numerically), so every listing comes out in Redis's order. Claiming (XCLAIM,
//! XAUTOCLAIM) is in `group/claim.rs`; lag and read-counter arithmetic in `group/lag.rs`.

mod claim;
mod lag;
#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, BTreeSet};
use std::mem::size_of;
use std::sync::Arc;

use super::StreamId;

pub use claim::{AutoClaimed, Claim, ClaimCount, Claimed};
pub use lag::StreamMeta;

/// Heap bytes a B-tree spends on one element besides the element itself (its share of node
/// headers, edges and slack), an estimate for memory accounting.
const TREE_SLACK_BYTES: usize = 16;
/// Bytes of one group PEL element.
const PEL_BYTES: usize = size_of::<StreamId>() + size_of::<Nack>() + TREE_SLACK_BYTES;
/// Bytes of one consumer PEL element.
const CONSUMER_PEL_BYTES: usize = size_of::<StreamId>() + TREE_SLACK_BYTES;
/// Bytes of a consumer besides its name and PEL (the map element and the name's `Arc`
/// counts).
const CONSUMER_BYTES: usize =
    size_of::<Arc<[u8]>>() + size_of::<Consumer>() + 2 * size_of::<usize>() + TREE_SLACK_BYTES;
/// Bytes of a group besides its name, consumers and PEL.
const GROUP_BYTES: usize = size_of::<Box<[u8]>>() + size_of::<Group>() + TREE_SLACK_BYTES;

/// The consumer groups of one stream, by name.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Groups {
    groups: BTreeMap<Box<[u8]>, Group>,
    /// Heap bytes of everything here, kept up to date by every change.
    bytes: usize,
}

/// One consumer group.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Group {
    last_id: StreamId,
    /// Entries of the stream read up to `last_id` (Redis's `entries_read`), `None` when not
    /// known (Redis's -1).
    entries_read: Option<u64>,
    pel: BTreeMap<StreamId, Nack>,
    consumers: BTreeMap<Arc<[u8]>, Consumer>,
    /// Heap bytes of the PEL and the consumers.
    bytes: usize,
}

/// A pending entry: delivered to `consumer`, not acknowledged yet.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Nack {
    consumer: Arc<[u8]>,
    /// When it was last delivered (Unix ms).
    pub delivery_time_ms: u64,
    /// How many times it was delivered.
    pub delivery_count: u64,
}

impl Nack {
    /// The name of the consumer that owns it.
    pub fn consumer(&self) -> &[u8] {
        &self.consumer
    }
}

/// One consumer of a group. Redis 7.0 keeps only its seen time (7.2 added an active time).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Consumer {
    /// When it last read or claimed (Unix ms).
    pub seen_time_ms: u64,
    pel: BTreeSet<StreamId>,
}

impl Consumer {
    fn new(now_ms: u64) -> Consumer {
        Consumer {
            seen_time_ms: now_ms,
            pel: BTreeSet::new(),
        }
    }

    /// Its pending entries.
    pub fn pending_len(&self) -> usize {
        self.pel.len()
    }

    /// Its pending IDs from `start` on, in order.
    pub fn pending_from(&self, start: StreamId) -> impl Iterator<Item = StreamId> + '_ {
        self.pel.range(start..).copied()
    }
}

/// What a consumer lookup did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lookup {
    /// The consumer existed; its seen time is now.
    Seen,
    /// The consumer was created (Redis raises `xgroup-createconsumer`).
    Created,
}

/// The XPENDING summary: how many entries are pending, the lowest and highest pending IDs,
/// and each consumer with pending entries and how many.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PendingSummary<'a> {
    pub count: usize,
    pub bounds: Option<(StreamId, StreamId)>,
    pub consumers: Vec<(&'a [u8], usize)>,
}

impl Groups {
    pub fn new() -> Groups {
        Groups::default()
    }

    /// Heap bytes of all groups.
    pub fn heap_bytes(&self) -> usize {
        self.bytes
    }

    pub fn len(&self) -> usize {
        self.groups.len()
    }

    pub fn is_empty(&self) -> bool {
        self.groups.is_empty()
    }

    /// The groups in name order.
    pub fn iter(&self) -> impl Iterator<Item = (&[u8], &Group)> {
        self.groups.iter().map(|(n, g)| (&**n, g))
    }

    pub fn get(&self, name: &[u8]) -> Option<&Group> {
        self.groups.get(name)
    }

    /// Create group `name` at `last_id`: false if it exists (BUSYGROUP).
    pub fn create(&mut self, name: &[u8], last_id: StreamId, entries_read: Option<u64>) -> bool {
        if self.groups.contains_key(name) {
            return false;
        }
        self.bytes += GROUP_BYTES + name.len();
        self.groups
            .insert(name.into(), Group::new(last_id, entries_read));
        true
    }

    /// Remove group `name` with its PEL and consumers: false if there was none.
    pub fn destroy(&mut self, name: &[u8]) -> bool {
        match self.groups.remove(name) {
            Some(g) => {
                self.bytes -= GROUP_BYTES + name.len() + g.bytes;
                true
            }
            None => false,
        }
    }

    /// Change group `name` through `f`, keeping the byte count: `None` if there is no such
    /// group.
    pub fn update<R>(&mut self, name: &[u8], f: impl FnOnce(&mut Group) -> R) -> Option<R> {
        let g = self.groups.get_mut(name)?;
        let before = g.bytes;
        let r = f(g);
        self.bytes = self.bytes - before + g.bytes;
        Some(r)
    }
}

impl Group {
    fn new(last_id: StreamId, entries_read: Option<u64>) -> Group {
        Group {
            last_id,
            entries_read,
            pel: BTreeMap::new(),
            consumers: BTreeMap::new(),
            bytes: 0,
        }
    }

    /// The last ID delivered to the group.
    pub fn last_id(&self) -> StreamId {
        self.last_id
    }

    /// Entries read up to [`Group::last_id`], if known.
    pub fn entries_read(&self) -> Option<u64> {
        self.entries_read
    }

    /// XGROUP SETID: move the group's position (entries before it are not delivered again,
    /// entries after it are, even if already pending).
    pub fn set_id(&mut self, last_id: StreamId, entries_read: Option<u64>) {
        self.last_id = last_id;
        self.entries_read = entries_read;
    }

    /// XCLAIM LASTID: raise the last delivered ID to `id` if it is greater; true if it did.
    /// The read counter is left as it is, as Redis does.
    pub fn raise_last_id(&mut self, id: StreamId) -> bool {
        if id > self.last_id {
            self.last_id = id;
            true
        } else {
            false
        }
    }

    /// Entries pending in the group.
    pub fn pending_len(&self) -> usize {
        self.pel.len()
    }

    /// The pending entry `id`, if any.
    pub fn nack(&self, id: StreamId) -> Option<&Nack> {
        self.pel.get(&id)
    }

    /// Pending entries from `start` to `end` inclusive, in order.
    pub fn pending_range(
        &self,
        start: StreamId,
        end: StreamId,
    ) -> impl Iterator<Item = (StreamId, &Nack)> {
        let range = if start <= end {
            Some(self.pel.range(start..=end))
        } else {
            None
        };
        range.into_iter().flatten().map(|(id, n)| (*id, n))
    }

    /// The XPENDING summary.
    pub fn pending_summary(&self) -> PendingSummary<'_> {
        let bounds = self
            .pel
            .first_key_value()
            .zip(self.pel.last_key_value())
            .map(|((lo, _), (hi, _))| (*lo, *hi));
        PendingSummary {
            count: self.pel.len(),
            bounds,
            consumers: self
                .consumers
                .iter()
                .filter(|(_, c)| !c.pel.is_empty())
                .map(|(n, c)| (&**n, c.pel.len()))
                .collect(),
        }
    }

    /// The consumers in name order.
    pub fn consumers(&self) -> impl Iterator<Item = (&[u8], &Consumer)> {
        self.consumers.iter().map(|(n, c)| (&**n, c))
    }

    pub fn consumer_count(&self) -> usize {
        self.consumers.len()
    }

    pub fn consumer(&self, name: &[u8]) -> Option<&Consumer> {
        self.consumers.get(name)
    }

    /// XGROUP CREATECONSUMER: false if it exists.
    pub fn create_consumer(&mut self, name: &[u8], now_ms: u64) -> bool {
        if self.consumers.contains_key(name) {
            return false;
        }
        self.bytes += CONSUMER_BYTES + name.len();
        self.consumers.insert(name.into(), Consumer::new(now_ms));
        true
    }

    /// The consumer a read or claim acts for: its seen time becomes `now_ms`, and it is
    /// created if it does not exist (Redis's lookup-or-create).
    pub fn touch_consumer(&mut self, name: &[u8], now_ms: u64) -> Lookup {
        match self.consumers.get_mut(name) {
            Some(c) => {
                c.seen_time_ms = now_ms;
                Lookup::Seen
            }
            None => {
                self.create_consumer(name, now_ms);
                Lookup::Created
            }
        }
    }

    /// XGROUP DELCONSUMER: remove the consumer and its pending entries (from the group PEL
    /// too); how many it had, `None` if there was no such consumer.
    pub fn delete_consumer(&mut self, name: &[u8]) -> Option<usize> {
        let (key, c) = self.consumers.remove_entry(name)?;
        for id in &c.pel {
            self.pel.remove(id);
        }
        self.bytes -= CONSUMER_BYTES + key.len() + c.pel.len() * (PEL_BYTES + CONSUMER_PEL_BYTES);
        Some(c.pel.len())
    }

    /// The shared name of an existing consumer.
    fn consumer_key(&self, name: &[u8]) -> Option<Arc<[u8]>> {
        self.consumers
            .get_key_value(name)
            .map(|(k, _)| Arc::clone(k))
    }

    /// Entry `id` delivered by a read of new entries (`>`) to `consumer`, which must exist
    /// ([`Group::touch_consumer`]): it is pending for that consumer with one delivery at
    /// `now_ms`. An entry already pending (the group was moved back with SETID) changes
    /// owner, as Redis does. Returns its pending state.
    pub fn deliver(&mut self, id: StreamId, consumer: &[u8], now_ms: u64) -> Option<&Nack> {
        self.assign(id, consumer, |n| {
            n.delivery_time_ms = now_ms;
            n.delivery_count = 1;
        })
    }

    /// A read of the consumer's history served entry `id` again: one more delivery, at
    /// `now_ms`. False if it is not pending.
    pub fn redeliver(&mut self, id: StreamId, now_ms: u64) -> bool {
        match self.pel.get_mut(&id) {
            Some(n) => {
                n.delivery_time_ms = now_ms;
                n.delivery_count += 1;
                true
            }
            None => false,
        }
    }

    /// Make `id` pending for `consumer` (which must exist), creating its PEL entry (one
    /// delivery, at time 0, before `set` runs) or moving it from its owner, then `set` its
    /// delivery state. `None` if the consumer does not exist.
    fn assign(
        &mut self,
        id: StreamId,
        consumer: &[u8],
        set: impl FnOnce(&mut Nack),
    ) -> Option<&Nack> {
        let owner = self.consumer_key(consumer)?;
        let nack = match self.pel.entry(id) {
            std::collections::btree_map::Entry::Occupied(o) => {
                let n = o.into_mut();
                if n.consumer != owner {
                    if let Some(old) = self.consumers.get_mut(&n.consumer) {
                        old.pel.remove(&id);
                    }
                    n.consumer = Arc::clone(&owner);
                    if let Some(new) = self.consumers.get_mut(&owner) {
                        new.pel.insert(id);
                    }
                }
                n
            }
            std::collections::btree_map::Entry::Vacant(v) => {
                self.bytes += PEL_BYTES + CONSUMER_PEL_BYTES;
                if let Some(new) = self.consumers.get_mut(&owner) {
                    new.pel.insert(id);
                }
                v.insert(Nack {
                    consumer: owner,
                    delivery_time_ms: 0,
                    delivery_count: 1,
                })
            }
        };
        set(nack);
        Some(nack)
    }

    /// XACK (and a claim of an entry no longer in the stream): `id` is no longer pending.
    /// Returns its pending state, `None` if it was not pending.
    pub fn ack(&mut self, id: StreamId) -> Option<Nack> {
        let n = self.pel.remove(&id)?;
        if let Some(c) = self.consumers.get_mut(&n.consumer) {
            c.pel.remove(&id);
        }
        self.bytes -= PEL_BYTES + CONSUMER_PEL_BYTES;
        Some(n)
    }

    /// Heap bytes recounted from scratch: the tests hold the running count to it.
    #[cfg(test)]
    fn recount(&self) -> usize {
        let consumers: usize = self
            .consumers
            .iter()
            .map(|(n, c)| CONSUMER_BYTES + n.len() + c.pel.len() * CONSUMER_PEL_BYTES)
            .sum();
        consumers + self.pel.len() * PEL_BYTES
    }
}
