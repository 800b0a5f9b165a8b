//! The stream type: entries with increasing IDs, each a list of field-value pairs, in compact
//! nodes kept in an ordered map by their first ID, with Redis 7.0's metadata (last ID, first
//! ID, max deleted ID, entries added) and the consumer groups ([`group`]).
//!
//! Every operation the stream commands need is here with Redis 7.0's semantics: ID
//! generation ([`Stream::next_id`]), append, point and range reads both ways
//! ([`Stream::get`], [`Stream::range`]), delete, trims by length or minimum ID, exact or
//! approximate ([`Stream::trim`]). A node holds at most [`NodeLimits`]' entries and bytes
//! (see [`node`] for its layout); range reads find their first node in O(log n) and trims
//! drop whole nodes, so both are O(log n + k). [`Stream::heap_bytes`] is O(1).

pub mod group;
mod id;
mod node;
#[cfg(test)]
mod tests;

use std::collections::btree_map::{self, BTreeMap};
use std::ops::Bound;

pub use id::{IdSpec, IdText, InvalidId, StreamId};
pub use node::Fields;
use node::{Node, Slot, Slots, DELETED};

/// Heap bytes a node costs beside its buffer: its share of the ordered map (key and value).
const NODE_OVERHEAD: usize = std::mem::size_of::<(StreamId, Node)>() + 16;

/// Redis's `STREAM_LISTPACK_MAX_SIZE`: the node byte limit when `max_bytes` is 0 or larger.
const LISTPACK_MAX_SIZE: usize = 1 << 30;

/// When the tail node is full and an append starts a new one: Redis's
/// `stream-node-max-bytes` (listpack bytes; 0 or above 1 GiB = 1 GiB) and `stream-node-max-entries`
/// (entries, deleted ones included; 0 = no limit).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NodeLimits {
    pub max_bytes: usize,
    pub max_entries: usize,
}

impl Default for NodeLimits {
    fn default() -> NodeLimits {
        NodeLimits {
            max_bytes: 4096,
            max_entries: 100,
        }
    }
}

/// Why an ID cannot be added.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AddError {
    /// The ID is not greater than the stream's last ID.
    TooSmall,
    /// The stream's last ID is the largest possible one.
    Exhausted,
}

/// How to trim (XTRIM, XADD's trim options).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Trim {
    /// Keep at most this many entries.
    MaxLen(u64),
    /// Drop entries with IDs below this one.
    MinId(StreamId),
}

/// A stream value. Unlike the other collections a stream may be empty while stored.
#[derive(Clone, Debug, Default)]
pub struct Stream {
    /// Nodes by their master ID (the first ID ever appended to the node).
    nodes: BTreeMap<StreamId, Node>,
    length: u64,
    last_id: StreamId,
    first_id: StreamId,
    max_deleted_id: StreamId,
    entries_added: u64,
    /// Heap bytes of the nodes and the map.
    heap: usize,
    /// The consumer groups, if any were created.
    pub groups: Option<Box<group::Groups>>,
}

/// Streams are equal when their metadata, live entries and groups are: node boundaries and
/// deleted entries still in their nodes do not count.
impl PartialEq for Stream {
    fn eq(&self, other: &Stream) -> bool {
        self.length == other.length
            && self.last_id == other.last_id
            && self.first_id == other.first_id
            && self.max_deleted_id == other.max_deleted_id
            && self.entries_added == other.entries_added
            && self.groups == other.groups
            && self
                .range(StreamId::MIN, StreamId::MAX, false)
                .zip(other.range(StreamId::MIN, StreamId::MAX, false))
                .all(|((a, fa), (b, fb))| a == b && fa.eq(fb))
    }
}

impl Eq for Stream {}

impl Stream {
    pub fn new() -> Stream {
        Stream::default()
    }

    /// Live entries.
    pub fn len(&self) -> u64 {
        self.length
    }

    pub fn is_empty(&self) -> bool {
        self.length == 0
    }

    /// The largest ID ever added (or set by XSETID); 0-0 for a new stream.
    pub fn last_id(&self) -> StreamId {
        self.last_id
    }

    /// The first live entry's ID; 0-0 when empty.
    pub fn first_id(&self) -> StreamId {
        self.first_id
    }

    /// The largest ID deleted by XDEL (or set by XSETID MAXDELETEDID); 0-0 if none.
    pub fn max_deleted_id(&self) -> StreamId {
        self.max_deleted_id
    }

    /// Entries ever added (Redis's `entries_added`).
    pub fn entries_added(&self) -> u64 {
        self.entries_added
    }

    /// Number of nodes (XINFO STREAM's `radix-tree-nodes` stand-in).
    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }

    /// Approximate heap bytes owned by the entries and the groups, in O(1).
    pub fn heap_bytes(&self) -> usize {
        self.heap
            + self
                .groups
                .as_ref()
                .map_or(0, |g| std::mem::size_of::<group::Groups>() + g.heap_bytes())
    }

    /// The ID an XADD with `spec` would add at time `now_ms`, without adding it.
    pub fn next_id(&self, spec: IdSpec, now_ms: u64) -> Result<StreamId, AddError> {
        if self.last_id == StreamId::MAX {
            return Err(AddError::Exhausted);
        }
        let id = match spec {
            IdSpec::Auto if now_ms > self.last_id.ms => StreamId::new(now_ms, 0),
            IdSpec::Auto => self.last_id.next().ok_or(AddError::Exhausted)?,
            IdSpec::AutoSeq(ms) if ms == self.last_id.ms => StreamId::new(
                ms,
                self.last_id.seq.checked_add(1).ok_or(AddError::TooSmall)?,
            ),
            IdSpec::AutoSeq(ms) => StreamId::new(ms, 0),
            IdSpec::Explicit(id) => id,
        };
        if id <= self.last_id {
            return Err(AddError::TooSmall);
        }
        Ok(id)
    }

    /// Append an entry with `fields` (alternating names and values, at least one pair) as
    /// `id`, which must be greater than [`Stream::last_id`] (see [`Stream::next_id`]).
    pub fn append(
        &mut self,
        id: StreamId,
        fields: &[&[u8]],
        limits: NodeLimits,
    ) -> Result<(), AddError> {
        if id <= self.last_id {
            return Err(AddError::TooSmall);
        }
        let new_bytes: usize = fields.iter().map(|f| f.len()).sum();
        let mut tail = self.nodes.last_entry();
        let full = tail.as_ref().is_none_or(|t| {
            let node = t.get();
            let max_bytes = match limits.max_bytes {
                0 => LISTPACK_MAX_SIZE,
                n => n.min(LISTPACK_MAX_SIZE),
            };
            node.lp_bytes() + new_bytes >= max_bytes
                || (limits.max_entries != 0
                    && (node.live + node.deleted) as usize >= limits.max_entries)
        });
        if full {
            let mut hint = 0;
            if let Some(t) = tail.as_mut() {
                let node = t.get_mut();
                self.heap -= node.heap_bytes();
                node.shrink();
                self.heap += node.heap_bytes();
                hint = node.len_bytes();
            }
            let node = Node::with_capacity(id, fields, hint);
            self.heap += node.heap_bytes() + NODE_OVERHEAD;
            self.nodes.insert(id, node);
        } else if let Some(mut t) = tail {
            let master = *t.key();
            let node = t.get_mut();
            self.heap -= node.heap_bytes();
            node.push(master, id, fields);
            self.heap += node.heap_bytes();
        }
        self.length += 1;
        self.entries_added += 1;
        self.last_id = id;
        if self.length == 1 {
            self.first_id = id;
        }
        Ok(())
    }

    /// The node that would hold `id`: the last one whose master ID is at most `id`.
    fn node_of(&self, id: StreamId) -> Option<(&StreamId, &Node)> {
        self.nodes.range(..=id).next_back()
    }

    /// The live entry `id`'s fields.
    pub fn get(&self, id: StreamId) -> Option<Fields<'_>> {
        let (master, node) = self.node_of(id)?;
        if node.last < id {
            return None;
        }
        let slot = node.slots(*master).find(|s| s.id >= id)?;
        (slot.id == id && slot.flags & DELETED == 0).then(|| node.fields(&slot))
    }

    /// Live entries with IDs in `start..=end`, oldest first, or newest first when `rev`.
    /// Take a count with [`Iterator::take`].
    pub fn range(&self, start: StreamId, end: StreamId, rev: bool) -> Range<'_> {
        let nodes = if start > end {
            self.nodes.range(StreamId::MIN..StreamId::MIN)
        } else {
            let from = self.node_of(start).map_or(start, |(k, _)| *k);
            self.nodes
                .range((Bound::Included(from), Bound::Included(end)))
        };
        Range {
            nodes,
            current: None,
            slots: Vec::new(),
            start,
            end,
            rev,
            done: start > end,
        }
    }

    /// The first (or last, when `last`) live entry.
    pub fn edge(&self, last: bool) -> Option<(StreamId, Fields<'_>)> {
        self.range(StreamId::MIN, StreamId::MAX, last).next()
    }

    /// The ID of the newest live entry, as `edge(true)` finds it: read from the last node's
    /// header when none of its entries is deleted (a node goes with its last live entry, so
    /// the last node always has one), else its newest live entry, decoded oldest first.
    pub fn last_live_id(&self) -> Option<StreamId> {
        let (&master, node) = self.nodes.last_key_value()?;
        if node.deleted == 0 {
            return Some(node.last);
        }
        node.slots(master)
            .filter(|s| s.flags & DELETED == 0)
            .last()
            .map(|s| s.id)
    }

    /// Delete the live entry `id`; false if there is none.
    pub fn delete(&mut self, id: StreamId) -> bool {
        let Some((&master, _)) = self.node_of(id) else {
            return false;
        };
        let Some(node) = self.nodes.get_mut(&master) else {
            return false;
        };
        let Some(slot) = node.slots(master).find(|s| s.id >= id) else {
            return false;
        };
        if slot.id != id || slot.flags & DELETED != 0 {
            return false;
        }
        node.delete(&slot);
        if node.live == 0 {
            self.remove_node(master);
        }
        self.length -= 1;
        if id > self.max_deleted_id {
            self.max_deleted_id = id;
        }
        if self.length == 0 {
            self.first_id = StreamId::MIN;
        } else if id == self.first_id {
            self.first_id = self.edge(false).map_or(StreamId::MIN, |(i, _)| i);
        }
        true
    }

    fn remove_node(&mut self, master: StreamId) {
        if let Some(node) = self.nodes.remove(&master) {
            self.heap -= node.heap_bytes() + NODE_OVERHEAD;
        }
    }

    /// Trim as Redis's `streamTrim`: whole nodes first; with `approx` only whole nodes;
    /// `limit` (0 = none) caps the entries removed, counting whole nodes. Returns the number
    /// of entries removed.
    pub fn trim(&mut self, how: Trim, approx: bool, limit: u64) -> u64 {
        let mut deleted = 0u64;
        while let Some(mut first) = self.nodes.first_entry() {
            if let Trim::MaxLen(max) = how {
                if self.length <= max {
                    break;
                }
            }
            let master = *first.key();
            let node = first.get_mut();
            let entries = u64::from(node.live);
            if limit != 0 && deleted + entries > limit {
                break;
            }
            let remove_node = match how {
                Trim::MaxLen(max) => self.length - entries >= max,
                Trim::MinId(min) => node.last < min,
            };
            if remove_node {
                self.remove_node(master);
                self.length -= entries;
                deleted += entries;
                continue;
            }
            if approx {
                break;
            }
            let slots: Vec<Slot> = node.slots(master).collect();
            for slot in &slots {
                let stop = match how {
                    Trim::MaxLen(max) => self.length <= max,
                    Trim::MinId(min) => slot.id >= min,
                };
                if stop {
                    break;
                }
                if slot.flags & DELETED == 0 {
                    node.delete(slot);
                    self.length -= 1;
                    deleted += 1;
                }
            }
            break;
        }
        if self.length == 0 {
            self.first_id = StreamId::MIN;
        } else if deleted > 0 {
            self.first_id = self.edge(false).map_or(StreamId::MIN, |(i, _)| i);
        }
        deleted
    }

    /// The heap bytes counted from scratch (tests check the running count against it).
    #[cfg(test)]
    fn recount_heap(&self) -> usize {
        self.nodes
            .values()
            .map(|n| n.heap_bytes() + NODE_OVERHEAD)
            .sum::<usize>()
            + self
                .groups
                .as_ref()
                .map_or(0, |g| std::mem::size_of::<group::Groups>() + g.heap_bytes())
    }

    /// XSETID's and the RDB loader's setters; the caller checks what Redis checks.
    pub fn set_last_id(&mut self, id: StreamId) {
        self.last_id = id;
    }

    pub fn set_entries_added(&mut self, n: u64) {
        self.entries_added = n;
    }

    pub fn set_max_deleted_id(&mut self, id: StreamId) {
        self.max_deleted_id = id;
    }
}

/// Live entries of a range; see [`Stream::range`].
pub struct Range<'a> {
    nodes: btree_map::Range<'a, StreamId, Node>,
    /// The node being read, as a cursor over its entries: forward reads advance it, backward
    /// ones only take the node from it.
    current: Option<Slots<'a>>,
    /// Backward only: the current node's entries up to `end` not yet visited, oldest first
    /// (popped from the back). Forward reads decode entries one at a time from the cursor,
    /// so a read of a few entries from the middle of a node decodes no more than it needs.
    slots: Vec<Slot>,
    start: StreamId,
    end: StreamId,
    rev: bool,
    done: bool,
}

impl<'a> Range<'a> {
    /// The next entry of the current node in the range's direction, deleted or not.
    fn next_slot(&mut self) -> Option<Slot> {
        if self.rev {
            self.slots.pop()
        } else {
            self.current.as_mut()?.next()
        }
    }

    /// Move to the next node; false when there is none.
    fn enter_next_node(&mut self) -> bool {
        let next = if self.rev {
            self.nodes.next_back()
        } else {
            self.nodes.next()
        };
        let Some((&master, node)) = next else {
            self.current = None;
            return false;
        };
        if self.rev {
            let end = self.end;
            self.slots.clear();
            self.slots
                .extend(node.slots(master).take_while(|s| s.id <= end));
        }
        self.current = Some(node.slots(master));
        true
    }
}

impl<'a> Iterator for Range<'a> {
    type Item = (StreamId, Fields<'a>);

    fn next(&mut self) -> Option<(StreamId, Fields<'a>)> {
        while !self.done {
            let Some(slot) = self.next_slot() else {
                if !self.enter_next_node() {
                    self.done = true;
                }
                continue;
            };
            let beyond = if self.rev {
                slot.id < self.start
            } else {
                slot.id > self.end
            };
            if beyond {
                self.done = true;
                break;
            }
            let before = if self.rev {
                slot.id > self.end
            } else {
                slot.id < self.start
            };
            if before || slot.flags & DELETED != 0 {
                continue;
            }
            let node = self.current.as_ref()?.node();
            return Some((slot.id, node.fields(&slot)));
        }
        None
    }
}
