//! Streams in RDB form: STREAM_LISTPACKS_2 (19), what Redis 7.0 writes, and STREAM_LISTPACKS
//! (15), what Redis 5 and 6 wrote, which 7.0 still loads.
//!
//! The codec works on a representation of its own, [`StreamDump`], independent of the
//! engine's stream type. It keeps what the bytes hold: the nodes (Redis's radix tree of
//! listpacks, keyed by each node's master ID) with their master field names and their
//! entries, deleted ones (tombstones) included, so that a payload Redis wrote reads and
//! writes back byte for byte. [`cut_into_nodes`] cuts a stream's live entries into nodes as
//! Redis's XADD would have.
//!
//! Layout (lengths are RDB lengths, IDs in metadata are two lengths, ms then seq):
//!
//! ```text
//! node count, then per node: master ID (a 16-byte string, ms and seq big-endian), listpack
//! length, last ID, [first ID, max deleted ID, entries added]          (the [...] only in 19)
//! group count, then per group (in name order):
//!   name, last delivered ID, [entries read, 2^64-1 when unknown]      (only in 19)
//!   PEL count, per entry: ID (16 raw bytes), delivery time (i64 LE ms), delivery count
//!   consumer count, per consumer (in name order):
//!     name, seen time (i64 LE ms), PEL count, per entry: ID (16 raw bytes)
//! ```
//!
//! A node's listpack is the master entry `count deleted n field_1 .. field_n 0` (count: live
//! entries, deleted: tombstones), then per entry `flags ms-delta seq-delta [n field_1 ..
//! field_n] value_1 .. value_n lp-count`: the deltas are from the master ID (wrapping, as
//! signed 64-bit integers), the field names are left out when flag `SAMEFIELDS` (2) says they
//! are the master's, flag `DELETED` (1) marks a tombstone, and lp-count is the number of
//! listpack elements the entry took before it (3 + n, or 4 + 2n with field names).

mod convert;
mod read;

#[cfg(test)]
mod engine_tests;
#[cfg(test)]
mod tests;

use super::length::{put_len, put_string};
use super::listpack;

pub use convert::{from_dump, to_dump};
pub use larder_engine::stream::NodeLimits;
pub use read::read;

pub const TYPE_STREAM_LISTPACKS: u8 = 15;
pub const TYPE_STREAM_LISTPACKS_2: u8 = 19;

const FLAG_DELETED: i64 = 1;
const FLAG_SAMEFIELDS: i64 = 2;

/// The 32-bit limit Redis puts on a listpack (`STREAM_LISTPACK_MAX_SIZE`).
const LISTPACK_MAX_SIZE: usize = 1 << 30;
/// An empty listpack: header and terminator.
const LISTPACK_EMPTY: usize = 7;

/// A stream entry ID.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Id {
    pub ms: u64,
    pub seq: u64,
}

impl Id {
    pub const MAX: Id = Id {
        ms: u64::MAX,
        seq: u64::MAX,
    };

    pub fn new(ms: u64, seq: u64) -> Id {
        Id { ms, seq }
    }

    /// The radix tree key form: ms then seq, big-endian.
    pub fn to_be_bytes(self) -> [u8; 16] {
        let mut b = [0u8; 16];
        b[..8].copy_from_slice(&self.ms.to_be_bytes());
        b[8..].copy_from_slice(&self.seq.to_be_bytes());
        b
    }

    pub fn from_be_bytes(b: [u8; 16]) -> Id {
        let mut ms = [0u8; 8];
        let mut seq = [0u8; 8];
        ms.copy_from_slice(&b[..8]);
        seq.copy_from_slice(&b[8..]);
        Id::new(u64::from_be_bytes(ms), u64::from_be_bytes(seq))
    }
}

/// One entry of a node. `fields: None` means the master entry's field names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EntryDump {
    pub id: Id,
    pub deleted: bool,
    pub fields: Option<Vec<Vec<u8>>>,
    pub values: Vec<Vec<u8>>,
}

/// One node: a listpack in Redis's radix tree, keyed by `master_id`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeDump {
    pub master_id: Id,
    pub master_fields: Vec<Vec<u8>>,
    pub entries: Vec<EntryDump>,
}

impl NodeDump {
    /// The field names of `e`, an entry of this node.
    pub fn names<'a>(&'a self, e: &'a EntryDump) -> &'a [Vec<u8>] {
        e.fields.as_deref().unwrap_or(&self.master_fields)
    }
}

/// A pending entry of a group: delivered, not acknowledged yet.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PendingDump {
    pub id: Id,
    pub delivery_time_ms: i64,
    pub delivery_count: u64,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConsumerDump {
    pub name: Vec<u8>,
    pub seen_time_ms: i64,
    /// The IDs of the group's pending entries this consumer owns.
    pub pel: Vec<Id>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupDump {
    pub name: Vec<u8>,
    pub last_id: Id,
    /// Redis 7.0's logical read counter; `None` when it cannot be known.
    pub entries_read: Option<u64>,
    pub pel: Vec<PendingDump>,
    pub consumers: Vec<ConsumerDump>,
}

/// A live entry: its ID and (field, value) pairs.
pub type EntryRef<'a> = (Id, Vec<(&'a [u8], &'a [u8])>);

/// A stream as its RDB form holds it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StreamDump {
    pub nodes: Vec<NodeDump>,
    /// Live entries.
    pub length: u64,
    pub last_id: Id,
    pub first_id: Id,
    pub max_deleted_id: Id,
    pub entries_added: u64,
    pub groups: Vec<GroupDump>,
}

impl StreamDump {
    /// The live entries in ID order, each with its (field, value) pairs.
    pub fn entries(&self) -> impl Iterator<Item = EntryRef<'_>> {
        self.nodes.iter().flat_map(|node| {
            node.entries.iter().filter(|e| !e.deleted).map(move |e| {
                let pairs = node
                    .names(e)
                    .iter()
                    .zip(&e.values)
                    .map(|(f, v)| (&f[..], &v[..]))
                    .collect();
                (e.id, pairs)
            })
        })
    }
}

/// Cuts live entries, in increasing ID order, into nodes as Redis's `streamAppendItem`
/// does when they are added one by one: a new node when the current one's listpack bytes
/// plus the new entry's field and value bytes reach `max_bytes`, or when it holds
/// `max_entries` entries. Field names equal to the node's first entry's are shared.
pub fn cut_into_nodes<'a, I, F>(entries: I, limits: NodeLimits) -> Vec<NodeDump>
where
    I: IntoIterator<Item = (Id, F)>,
    F: IntoIterator<Item = (&'a [u8], &'a [u8])>,
{
    let max_bytes = if limits.max_bytes == 0 || limits.max_bytes > LISTPACK_MAX_SIZE {
        LISTPACK_MAX_SIZE
    } else {
        limits.max_bytes
    };
    let mut nodes: Vec<NodeDump> = Vec::new();
    // The current node's listpack bytes, leaving out its count element (which grows).
    let mut bytes_but_count = 0usize;
    for (id, pairs) in entries {
        let (names, values): (Vec<Vec<u8>>, Vec<Vec<u8>>) = pairs
            .into_iter()
            .map(|(f, v)| (f.to_vec(), v.to_vec()))
            .unzip();
        let elements_len: usize = names.iter().chain(&values).map(Vec::len).sum();
        let room = nodes.last().filter(|node| {
            let lp_bytes = bytes_but_count + int_size(node.entries.len() as i64);
            lp_bytes + elements_len < max_bytes
                && (limits.max_entries == 0 || node.entries.len() < limits.max_entries)
        });
        if room.is_none() {
            bytes_but_count = LISTPACK_EMPTY + int_size(0) + int_size(names.len() as i64);
            bytes_but_count += names.iter().map(|f| listpack::entry_size(f)).sum::<usize>();
            bytes_but_count += int_size(0);
            nodes.push(NodeDump {
                master_id: id,
                master_fields: names.clone(),
                entries: Vec::new(),
            });
        }
        let node = nodes.last_mut().expect("a node was pushed above");
        let fields = (names != node.master_fields).then_some(names);
        let entry = EntryDump {
            id,
            deleted: false,
            fields,
            values,
        };
        bytes_but_count += entry_elements(node, &entry)
            .iter()
            .map(|e| listpack::entry_size(e))
            .sum::<usize>();
        node.entries.push(entry);
    }
    nodes
}

/// The listpack bytes of integer `v`.
fn int_size(v: i64) -> usize {
    listpack::entry_size(v.to_string().as_bytes())
}

fn int(v: i64) -> Vec<u8> {
    v.to_string().into_bytes()
}

/// The listpack elements of `e` in `node` (integers in decimal: the listpack encoder stores
/// them as integers, as `lpAppendInteger` does).
fn entry_elements(node: &NodeDump, e: &EntryDump) -> Vec<Vec<u8>> {
    let names = node.names(e);
    let same = *names == node.master_fields;
    let mut flags = if same { FLAG_SAMEFIELDS } else { 0 };
    if e.deleted {
        flags |= FLAG_DELETED;
    }
    let mut out = vec![
        int(flags),
        int(e.id.ms.wrapping_sub(node.master_id.ms) as i64),
        int(e.id.seq.wrapping_sub(node.master_id.seq) as i64),
    ];
    if !same {
        out.push(int(names.len() as i64));
    }
    for (i, v) in e.values.iter().enumerate() {
        if !same {
            out.push(names[i].clone());
        }
        out.push(v.clone());
    }
    let lp_count = if same {
        3 + names.len()
    } else {
        4 + 2 * names.len()
    };
    out.push(int(lp_count as i64));
    out
}

/// The listpack of one node.
pub fn encode_node(node: &NodeDump) -> Vec<u8> {
    let live = node.entries.iter().filter(|e| !e.deleted).count();
    let mut elems = vec![
        int(live as i64),
        int((node.entries.len() - live) as i64),
        int(node.master_fields.len() as i64),
    ];
    elems.extend(node.master_fields.iter().cloned());
    elems.push(int(0));
    for e in &node.entries {
        elems.extend(entry_elements(node, e));
    }
    listpack::encode(elems.iter().map(Vec::as_slice))
}

fn put_id(out: &mut Vec<u8>, id: Id) {
    put_len(out, id.ms);
    put_len(out, id.seq);
}

/// Append the type byte (STREAM_LISTPACKS_2) and `s` as Redis 7.0's `rdbSaveObject` writes
/// it: groups, consumers and pending entries in the order of Redis's radix trees (names and
/// IDs ascending, bytewise).
pub fn write(out: &mut Vec<u8>, s: &StreamDump) {
    out.push(TYPE_STREAM_LISTPACKS_2);
    put_len(out, s.nodes.len() as u64);
    for node in &s.nodes {
        put_string(out, &node.master_id.to_be_bytes());
        put_string(out, &encode_node(node));
    }
    put_len(out, s.length);
    put_id(out, s.last_id);
    put_id(out, s.first_id);
    put_id(out, s.max_deleted_id);
    put_len(out, s.entries_added);
    put_len(out, s.groups.len() as u64);
    let mut groups: Vec<&GroupDump> = s.groups.iter().collect();
    groups.sort_by(|a, b| a.name.cmp(&b.name));
    for g in groups {
        put_string(out, &g.name);
        put_id(out, g.last_id);
        put_len(out, g.entries_read.unwrap_or(u64::MAX));
        let mut pel: Vec<&PendingDump> = g.pel.iter().collect();
        pel.sort_by_key(|p| p.id);
        put_len(out, pel.len() as u64);
        for p in pel {
            out.extend_from_slice(&p.id.to_be_bytes());
            out.extend_from_slice(&p.delivery_time_ms.to_le_bytes());
            put_len(out, p.delivery_count);
        }
        let mut consumers: Vec<&ConsumerDump> = g.consumers.iter().collect();
        consumers.sort_by(|a, b| a.name.cmp(&b.name));
        put_len(out, consumers.len() as u64);
        for c in consumers {
            put_string(out, &c.name);
            out.extend_from_slice(&c.seen_time_ms.to_le_bytes());
            let mut ids = c.pel.clone();
            ids.sort_unstable();
            put_len(out, ids.len() as u64);
            for id in ids {
                out.extend_from_slice(&id.to_be_bytes());
            }
        }
    }
}
