//! One node of a stream: up to `stream-node-max-entries` entries in one byte buffer, as
//! Redis's listpack nodes hold them.
//!
//! The buffer starts with the *master fields* (the field names of the node's first entry):
//! `varint count, (varint len, bytes)*`. Then each entry, oldest first:
//!
//! - one flags byte ([`DELETED`], [`SAME_FIELDS`]);
//! - the ID as deltas from the node's master ID (its key in the stream's map, the first
//!   entry's ID): `varint(ms - master.ms)`, `zigzag varint(seq - master.seq)` (wrapping);
//! - with [`SAME_FIELDS`] (the entry's field names equal the master's): the values only,
//!   `(varint len, bytes)*`; otherwise `varint count, (field, value)*` as length-prefixed
//!   bytes.
//!
//! A deleted entry keeps its bytes with the flag set (as in Redis); the node goes when its
//! last live entry does. The node also keeps the size the same entries would take in a Redis
//! listpack ([`Node::lp_bytes`]), so that it is cut where Redis cuts (`stream-node-max-bytes`
//! counts listpack bytes), and approximate trims remove what Redis's remove.

use super::id::{strict_i64, StreamId};

/// Entry flag: the entry was deleted (XDEL, or an exact trim inside the node).
pub const DELETED: u8 = 1;
/// Entry flag: the entry's field names are the master fields; only values are stored.
pub const SAME_FIELDS: u8 = 2;

/// Bytes of an empty listpack (header and end byte).
const LP_EMPTY: usize = 7;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Node {
    /// Master fields, then entries; see the module docs.
    buf: Vec<u8>,
    /// Offset of the first entry (the end of the master fields).
    entries_at: u32,
    /// Entries not deleted.
    pub live: u32,
    /// Entries marked deleted.
    pub deleted: u32,
    /// Listpack bytes of everything but the live and deleted counters.
    lp_fixed: u32,
    /// The ID of the node's last entry, deleted or not.
    pub last: StreamId,
}

/// One decoded entry position in a node.
#[derive(Clone, Copy, Debug)]
pub struct Slot {
    pub id: StreamId,
    /// Offset of the entry's flags byte.
    pub at: usize,
    pub flags: u8,
    /// Offset of the entry's field data (after the ID).
    pub body: usize,
}

/// An entry's field-value pairs, read from its node's buffer.
#[derive(Clone, Debug)]
pub struct Fields<'a> {
    buf: &'a [u8],
    /// Next master field name (for a [`SAME_FIELDS`] entry).
    master: usize,
    /// Next value (or field) in the entry.
    pos: usize,
    remaining: usize,
    same: bool,
}

impl<'a> Iterator for Fields<'a> {
    type Item = (&'a [u8], &'a [u8]);

    fn next(&mut self) -> Option<(&'a [u8], &'a [u8])> {
        if self.remaining == 0 {
            return None;
        }
        self.remaining -= 1;
        let field = if self.same {
            read_bytes(self.buf, &mut self.master)
        } else {
            read_bytes(self.buf, &mut self.pos)
        };
        let value = read_bytes(self.buf, &mut self.pos);
        Some((field, value))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.remaining, Some(self.remaining))
    }
}

impl ExactSizeIterator for Fields<'_> {}

impl Node {
    /// A node whose master entry is `id` with `fields` (alternating names and values), with
    /// room for `bytes` from the start: a stream's nodes fill to about the same size, so the
    /// previous full node's size spares the new one its growth by doubling (and the slack that
    /// would leave); 0 for the first node.
    pub fn with_capacity(id: StreamId, fields: &[&[u8]], bytes: usize) -> Node {
        let mut buf = Vec::with_capacity(bytes);
        let names = fields.len() / 2;
        put_varint(&mut buf, names as u64);
        let mut lp = LP_EMPTY + lp_int_size(names as i64) + lp_int_size(0);
        for name in fields.iter().step_by(2) {
            put_bytes(&mut buf, name);
            lp += lp_str_size(name);
        }
        let entries_at = buf.len() as u32;
        let mut node = Node {
            buf,
            entries_at,
            live: 0,
            deleted: 0,
            lp_fixed: lp as u32,
            last: id,
        };
        node.push(id, id, fields);
        node
    }

    /// The listpack size Redis's node holding these entries would have.
    pub fn lp_bytes(&self) -> usize {
        self.lp_fixed as usize
            + lp_int_size(i64::from(self.live))
            + lp_int_size(i64::from(self.deleted))
    }

    /// Heap bytes owned.
    pub fn heap_bytes(&self) -> usize {
        self.buf.capacity()
    }

    /// Drop spare capacity (when the node is full and will take no more entries). The
    /// bytes move to a block of their own size: an allocator may keep a block that shrinks
    /// by less than half where it is (mimalloc does), and the slack would stay resident.
    pub fn shrink(&mut self) {
        let len = self.buf.len();
        if self.buf.capacity() - len > len / 32 {
            let mut exact = Vec::with_capacity(len);
            exact.extend_from_slice(&self.buf);
            self.buf = exact;
        }
    }

    /// Bytes the node's buffer holds.
    pub fn len_bytes(&self) -> usize {
        self.buf.len()
    }

    /// Whether `fields` has the master's field names, in order.
    fn same_fields(&self, fields: &[&[u8]]) -> bool {
        let mut pos = 0;
        let count = read_varint(&self.buf, &mut pos) as usize;
        count == fields.len() / 2
            && fields
                .iter()
                .step_by(2)
                .all(|name| read_bytes(&self.buf, &mut pos) == *name)
    }

    /// Append the entry `id` (greater than every ID in the node) with `fields`
    /// (alternating names and values); `master` is the node's key.
    pub fn push(&mut self, master: StreamId, id: StreamId, fields: &[&[u8]]) {
        let same = self.same_fields(fields);
        let ms_delta = id.ms - master.ms;
        let seq_delta = id.seq.wrapping_sub(master.seq);
        let pairs = fields.len() / 2;
        self.buf.push(if same { SAME_FIELDS } else { 0 });
        put_varint(&mut self.buf, ms_delta);
        put_varint(&mut self.buf, zigzag(seq_delta as i64));
        let mut lp = lp_int_size(i64::from(if same { SAME_FIELDS } else { 0 }))
            + lp_int_size(ms_delta as i64)
            + lp_int_size(seq_delta as i64);
        let mut lp_count = pairs as i64 + 3;
        if same {
            for value in fields.iter().skip(1).step_by(2) {
                put_bytes(&mut self.buf, value);
                lp += lp_str_size(value);
            }
        } else {
            put_varint(&mut self.buf, pairs as u64);
            lp += lp_int_size(pairs as i64);
            lp_count += pairs as i64 + 1;
            for part in fields {
                put_bytes(&mut self.buf, part);
                lp += lp_str_size(part);
            }
        }
        lp += lp_int_size(lp_count);
        self.lp_fixed = self.lp_fixed.saturating_add(lp as u32);
        self.live += 1;
        self.last = id;
    }

    /// The entries, oldest first, deleted ones included; `master` is the node's key.
    pub fn slots(&self, master: StreamId) -> Slots<'_> {
        let mut at = 0;
        Slots {
            node: self,
            master,
            master_fields: read_varint(&self.buf, &mut at) as usize,
            pos: self.entries_at as usize,
        }
    }

    /// The field-value pairs of the entry at `slot`.
    pub fn fields(&self, slot: &Slot) -> Fields<'_> {
        let mut pos = slot.body;
        let mut master = 0;
        let same = slot.flags & SAME_FIELDS != 0;
        let remaining = if same {
            read_varint(&self.buf, &mut master) as usize
        } else {
            read_varint(&self.buf, &mut pos) as usize
        };
        Fields {
            buf: &self.buf,
            master,
            pos,
            remaining,
            same,
        }
    }

    /// Mark the entry at `slot` deleted (it must be live).
    pub fn delete(&mut self, slot: &Slot) {
        self.buf[slot.at] |= DELETED;
        self.live -= 1;
        self.deleted += 1;
    }
}

/// Iterator over a node's entries, oldest first.
pub struct Slots<'a> {
    node: &'a Node,
    master: StreamId,
    /// How many master fields the node has: the values a [`SAME_FIELDS`] entry holds.
    master_fields: usize,
    pos: usize,
}

impl<'a> Slots<'a> {
    /// The node these are the entries of.
    pub fn node(&self) -> &'a Node {
        self.node
    }
}

impl Iterator for Slots<'_> {
    type Item = Slot;

    #[inline]
    fn next(&mut self) -> Option<Slot> {
        let buf = &self.node.buf;
        if self.pos >= buf.len() {
            return None;
        }
        let at = self.pos;
        let flags = buf[at];
        let mut pos = at + 1;
        let ms = self.master.ms + read_varint(buf, &mut pos);
        let seq = self
            .master
            .seq
            .wrapping_add(unzigzag(read_varint(buf, &mut pos)) as u64);
        let body = pos;
        // Skip the field data: the values alone, or a count and the pairs.
        let count = if flags & SAME_FIELDS != 0 {
            self.master_fields
        } else {
            2 * read_varint(buf, &mut pos) as usize
        };
        for _ in 0..count {
            let len = read_varint(buf, &mut pos) as usize;
            pos += len;
        }
        self.pos = pos;
        Some(Slot {
            id: StreamId::new(ms, seq),
            at,
            flags,
            body,
        })
    }
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// A varint the node wrote at `pos`; advances `pos`. Most are one byte (IDs' deltas within a
/// node, short values' lengths), read inline; the rest in [`read_varint_long`].
#[inline(always)]
fn read_varint(buf: &[u8], pos: &mut usize) -> u64 {
    let b = buf[*pos];
    *pos += 1;
    if b < 0x80 {
        return u64::from(b);
    }
    read_varint_long(buf, pos, b)
}

/// The rest of a varint whose first byte, `first`, had its high bit set.
#[inline(never)]
fn read_varint_long(buf: &[u8], pos: &mut usize, first: u8) -> u64 {
    let mut v = u64::from(first & 0x7f);
    let mut shift = 7;
    loop {
        let b = buf[*pos];
        *pos += 1;
        v |= u64::from(b & 0x7f) << shift;
        if b < 0x80 {
            return v;
        }
        shift += 7;
    }
}

fn put_bytes(out: &mut Vec<u8>, b: &[u8]) {
    put_varint(out, b.len() as u64);
    out.extend_from_slice(b);
}

fn read_bytes<'a>(buf: &'a [u8], pos: &mut usize) -> &'a [u8] {
    let len = read_varint(buf, pos) as usize;
    let start = *pos;
    *pos += len;
    &buf[start..*pos]
}

fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

fn unzigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

/// Bytes of a listpack entry's back-length for an encoding of `len` bytes.
fn lp_backlen(len: usize) -> usize {
    match len {
        0..=127 => 1,
        128..=16382 => 2,
        16383..=2097150 => 3,
        2097151..=268435454 => 4,
        _ => 5,
    }
}

/// Bytes a listpack entry holding the integer `v` takes.
fn lp_int_size(v: i64) -> usize {
    let enc = match v {
        0..=127 => 1,
        -4096..=4095 => 2,
        -32768..=32767 => 3,
        -8388608..=8388607 => 4,
        -2147483648..=2147483647 => 5,
        _ => 9,
    };
    enc + lp_backlen(enc)
}

/// Bytes a listpack entry holding the string `s` takes (as an integer when it reads as one).
fn lp_str_size(s: &[u8]) -> usize {
    if !s.is_empty() && s.len() < 21 {
        if let Some(v) = strict_i64(s) {
            return lp_int_size(v);
        }
    }
    let enc = match s.len() {
        0..=63 => 1,
        64..=4095 => 2,
        _ => 5,
    } + s.len();
    enc + lp_backlen(enc)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listpack_sizes() {
        assert_eq!(lp_int_size(0), 2);
        assert_eq!(lp_int_size(128), 3);
        assert_eq!(lp_int_size(-1), 3);
        assert_eq!(lp_int_size(i64::MAX), 10);
        assert_eq!(lp_str_size(b"abc"), 5);
        assert_eq!(lp_str_size(b"12"), 2);
        assert_eq!(lp_str_size(&[b'a'; 200]), 204);
    }

    #[test]
    fn entries_round_trip() {
        let master = StreamId::new(10, 5);
        let mut node = Node::with_capacity(master, &[b"a", b"1", b"b", b"2"], 0);
        node.push(master, StreamId::new(10, 6), &[b"a", b"3", b"b", b"4"]);
        node.push(master, StreamId::new(12, 0), &[b"c", b"5"]);
        let slots: Vec<Slot> = node.slots(master).collect();
        let ids: Vec<StreamId> = slots.iter().map(|s| s.id).collect();
        assert_eq!(
            ids,
            [
                StreamId::new(10, 5),
                StreamId::new(10, 6),
                StreamId::new(12, 0)
            ]
        );
        let f: Vec<_> = node.fields(&slots[1]).collect();
        assert_eq!(f, [(&b"a"[..], &b"3"[..]), (&b"b"[..], &b"4"[..])]);
        let f: Vec<_> = node.fields(&slots[2]).collect();
        assert_eq!(f, [(&b"c"[..], &b"5"[..])]);
        node.delete(&slots[1]);
        assert_eq!((node.live, node.deleted), (2, 1));
        assert_eq!(
            node.slots(master).nth(1).map(|s| s.flags & DELETED),
            Some(DELETED)
        );
    }
}
