//! The hash type: field → value, compact ("listpack") while small, a hash table past
//! [`crate::Limits`]'s thresholds.
//!
//! - **Compact**: one exact-size byte buffer: the pair count (varint), then `[varint field
//!   len][field][varint value len][value]` pairs in insertion order, searched linearly; an
//!   empty hash has an empty buffer (no allocation). A write reallocates the buffer to its
//!   new size, as Redis's listpack does, except a value replaced by one of its length, which
//!   is written over the old. Keeping the count inside the buffer makes `Hash` one
//!   16-byte pointer, so an `Object` holding it fits in 24 bytes.
//! - **Table** ([`table`]): a slab of entries, each one allocation holding field and value
//!   together, found through a `hashbrown::HashTable` of slab positions. An entry never moves
//!   while it is present, which makes the slab position a resumable HSCAN cursor.
//!
//! A hash converts from compact to table once, when a write passes a limit (a field or value
//! longer than `hash_max_listpack_value`, more fields than `hash_max_listpack_entries`), and
//! never back, as in Redis 7.0. [`Hash::heap_bytes`] is O(1): the table keeps a running count
//! of its entries' bytes.

mod table;
#[cfg(test)]
mod tests;

use crate::evict::random_u64;
use crate::Limits;
use table::Table;

/// A hash value. Never empty while stored: commands delete a hash that empties.
#[derive(Clone, Debug)]
pub struct Hash {
    repr: Repr,
}

#[derive(Clone, Debug)]
enum Repr {
    Compact(Compact),
    Table(Box<Table>),
}

impl Default for Hash {
    fn default() -> Hash {
        Hash {
            repr: Repr::Compact(Compact::default()),
        }
    }
}

/// Equal contents, whatever the encodings and orders.
impl PartialEq for Hash {
    fn eq(&self, other: &Hash) -> bool {
        self.len() == other.len() && self.pairs().all(|(f, v)| other.get(f) == Some(v))
    }
}

impl Eq for Hash {}

impl Hash {
    pub fn new() -> Hash {
        Hash::default()
    }

    /// Number of fields.
    pub fn len(&self) -> usize {
        match &self.repr {
            Repr::Compact(c) => c.len(),
            Repr::Table(t) => t.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Heap bytes owned by the hash, in O(1): allocations rounded up to the allocator's
    /// 8-byte granule.
    pub fn heap_bytes(&self) -> usize {
        match &self.repr {
            Repr::Compact(c) => c.buf.len().next_multiple_of(8),
            Repr::Table(t) => std::mem::size_of::<Table>().next_multiple_of(8) + t.heap_bytes(),
        }
    }

    /// Where the hash's bytes start (the compact buffer, or the table's header), for a cache
    /// prefetch: an address only, never read through.
    pub(crate) fn heap_head(&self) -> *const u8 {
        match &self.repr {
            Repr::Compact(c) => c.buf.as_ptr(),
            Repr::Table(t) => std::ptr::from_ref::<Table>(t).cast(),
        }
    }

    /// Redis's name for the current encoding: "listpack" or "hashtable".
    pub fn encoding(&self) -> &'static str {
        match &self.repr {
            Repr::Compact(_) => "listpack",
            Repr::Table(_) => "hashtable",
        }
    }

    /// Every field with its value, in the hash's own order (insertion order while compact).
    pub fn pairs(&self) -> impl Iterator<Item = (&[u8], &[u8])> + '_ {
        let (compact, table) = match &self.repr {
            Repr::Compact(c) => (Some(c.pairs()), None),
            Repr::Table(t) => (None, Some(t.pairs())),
        };
        compact
            .into_iter()
            .flatten()
            .chain(table.into_iter().flatten())
    }

    /// The value of `field`.
    pub fn get(&self, field: &[u8]) -> Option<&[u8]> {
        match &self.repr {
            Repr::Compact(c) => c.find(field).map(|s| &c.buf[s.value..s.end]),
            Repr::Table(t) => t.get(field),
        }
    }

    pub fn contains(&self, field: &[u8]) -> bool {
        self.get(field).is_some()
    }

    /// Set `field` to `value` (Redis's `hashTypeSet`): converts to a table first when either
    /// is longer than `hash_max_listpack_value`, and after the write when the hash has more
    /// than `hash_max_listpack_entries` fields. Returns whether the field is new.
    pub fn insert(&mut self, field: &[u8], value: &[u8], limits: &Limits) -> bool {
        if let Repr::Compact(_) = self.repr {
            let max = limits.hash_max_listpack_value;
            if field.len() > max || value.len() > max {
                self.convert();
            }
        }
        let added = match &mut self.repr {
            Repr::Compact(c) => c.insert(field, value),
            Repr::Table(t) => t.insert(field, value),
        };
        if let Repr::Compact(c) = &self.repr {
            if c.len() > limits.hash_max_listpack_entries {
                self.convert();
            }
        }
        added
    }

    /// Remove `field`; returns whether it was there.
    pub fn remove(&mut self, field: &[u8]) -> bool {
        match &mut self.repr {
            Repr::Compact(c) => c.remove(field),
            Repr::Table(t) => t.remove(field),
        }
    }

    /// Convert to the table encoding (no-op when already there).
    fn convert(&mut self) {
        if let Repr::Compact(c) = &self.repr {
            let mut t = Table::with_capacity(c.len());
            for (f, v) in c.pairs() {
                t.insert(f, v);
            }
            self.repr = Repr::Table(Box::new(t));
        }
    }

    /// One step of HSCAN from `cursor`: calls `f` with about `count` pairs and returns the
    /// cursor of the next step, 0 when the walk is over. A compact hash gives every pair in
    /// one step (cursor 0, as Redis does for a listpack); a table walks its slab, so that a
    /// field present for the whole walk is given at least once whatever writes happen
    /// between steps.
    pub fn scan<'a>(
        &'a self,
        cursor: u64,
        count: usize,
        mut f: impl FnMut(&'a [u8], &'a [u8]),
    ) -> u64 {
        match &self.repr {
            Repr::Compact(c) => {
                c.pairs().for_each(|(k, v)| f(k, v));
                0
            }
            Repr::Table(t) => t.scan(cursor, count, f),
        }
    }

    /// A uniformly random pair, `None` when empty.
    pub fn random_pair(&self) -> Option<(&[u8], &[u8])> {
        match &self.repr {
            Repr::Compact(c) if c.len() > 0 => {
                let i = random_u64() % c.len() as u64;
                c.pairs().nth(i as usize)
            }
            Repr::Compact(_) => None,
            Repr::Table(t) => t.random_pair(),
        }
    }

    /// `count` random pairs, repetitions allowed (HRANDFIELD with a negative count), drawn
    /// as the iterator is consumed; empty when the hash is.
    pub fn random_pairs(&self, count: usize) -> impl Iterator<Item = (&[u8], &[u8])> + '_ {
        let count = if self.is_empty() { 0 } else { count };
        // A compact hash, or a table whose slab is mostly empty, is walked once, not once
        // per draw.
        let all: Vec<_> = match &self.repr {
            Repr::Table(t) if count == 0 || !t.sparse() => Vec::new(),
            _ => self.pairs().collect(),
        };
        (0..count).filter_map(move |_| match &self.repr {
            Repr::Table(t) if all.is_empty() => t.random_pair(),
            _ => Some(all[(random_u64() % all.len() as u64) as usize]),
        })
    }

    /// `min(count, len)` distinct random pairs (HRANDFIELD with a positive count): the whole
    /// hash in its own order when `count >= len`.
    pub fn random_distinct(&self, count: usize) -> Vec<(&[u8], &[u8])> {
        let len = self.len();
        if count >= len {
            return self.pairs().collect();
        }
        // Redis's strategy split: remove random pairs from a copy of them all when most are
        // wanted (or when draws would be slow: a compact hash, a sparse slab), draw and
        // deduplicate when few are.
        let walk = match &self.repr {
            Repr::Compact(_) => true,
            Repr::Table(t) => t.sparse(),
        };
        if walk || count.saturating_mul(3) > len {
            let mut all: Vec<_> = self.pairs().collect();
            while all.len() > count {
                let i = (random_u64() % all.len() as u64) as usize;
                all.swap_remove(i);
            }
            return all;
        }
        let mut seen = std::collections::HashSet::with_capacity(count);
        let mut out = Vec::with_capacity(count);
        while out.len() < count {
            match self.random_pair() {
                Some(p) if seen.insert(p.0) => out.push(p),
                Some(_) => {}
                None => break,
            }
        }
        out
    }
}

impl<F: AsRef<[u8]>, V: AsRef<[u8]>> FromIterator<(F, V)> for Hash {
    /// A hash of these pairs with the default limits (a later pair replaces an earlier one
    /// with the same field).
    fn from_iter<I: IntoIterator<Item = (F, V)>>(iter: I) -> Hash {
        let limits = Limits::default();
        let mut h = Hash::new();
        for (f, v) in iter {
            h.insert(f.as_ref(), v.as_ref(), &limits);
        }
        h
    }
}

/// The compact encoding: the pair count (varint), then `[varint flen][field][varint
/// vlen][value]` pairs, in one exact-size buffer; empty (no header) when there are no pairs.
#[derive(Clone, Debug, Default)]
struct Compact {
    buf: Box<[u8]>,
}

/// Where one pair lies in a compact buffer: `start..value` is the field with its length
/// prefix and the value's, `value..end` the value.
#[derive(Clone, Copy, Debug)]
struct Span {
    start: usize,
    value: usize,
    end: usize,
}

/// LEB128: 7 bits a byte, low first.
fn put_varint(buf: &mut Vec<u8>, mut n: usize) {
    while n >= 0x80 {
        buf.push(n as u8 | 0x80);
        n >>= 7;
    }
    buf.push(n as u8);
}

fn varint_len(n: usize) -> usize {
    (usize::BITS - (n | 1).leading_zeros()).div_ceil(7) as usize
}

/// The varint at `*pos`, advancing past it.
#[inline]
fn get_varint(buf: &[u8], pos: &mut usize) -> usize {
    let mut n = 0;
    let mut shift = 0;
    loop {
        let b = buf[*pos];
        *pos += 1;
        n |= usize::from(b & 0x7f) << shift;
        if b < 0x80 {
            return n;
        }
        shift += 7;
    }
}

/// The encoded pair `[flen][field][vlen][value]` appended to `buf`.
fn put_pair(buf: &mut Vec<u8>, field: &[u8], value: &[u8]) {
    put_varint(buf, field.len());
    buf.extend_from_slice(field);
    put_varint(buf, value.len());
    buf.extend_from_slice(value);
}

fn pair_len(field: &[u8], value: &[u8]) -> usize {
    varint_len(field.len()) + field.len() + varint_len(value.len()) + value.len()
}

impl Compact {
    /// Number of pairs, from the header: O(1).
    fn len(&self) -> usize {
        if self.buf.is_empty() {
            return 0;
        }
        get_varint(&self.buf, &mut 0)
    }

    /// Offset of the first pair: past the header.
    fn body(&self) -> usize {
        if self.buf.is_empty() {
            0
        } else {
            varint_len(self.len())
        }
    }

    /// The pair starting at `pos`, with its field.
    fn span_at(&self, pos: usize) -> (Span, &[u8]) {
        let mut p = pos;
        let flen = get_varint(&self.buf, &mut p);
        let field = &self.buf[p..p + flen];
        p += flen;
        let vlen = get_varint(&self.buf, &mut p);
        (
            Span {
                start: pos,
                value: p,
                end: p + vlen,
            },
            field,
        )
    }

    fn spans(&self) -> impl Iterator<Item = (Span, &[u8])> + '_ {
        let mut pos = self.body();
        std::iter::from_fn(move || {
            (pos < self.buf.len()).then(|| {
                let (s, f) = self.span_at(pos);
                pos = s.end;
                (s, f)
            })
        })
    }

    fn pairs(&self) -> impl Iterator<Item = (&[u8], &[u8])> + '_ {
        self.spans().map(|(s, f)| (f, &self.buf[s.value..s.end]))
    }

    fn find(&self, field: &[u8]) -> Option<Span> {
        // One pass of length prefixes; the field's bytes are looked at only where the length
        // matches, and then the last byte first: fields of one hash often share a prefix
        // ("f0", "f1", ..., "user:17"), so most misses end there without a call to `memcmp`.
        let buf = &*self.buf;
        let last = field.last();
        let mut pos = self.body();
        while pos < buf.len() {
            let start = pos;
            let flen = get_varint(buf, &mut pos);
            let mut value = pos + flen;
            let vlen = get_varint(buf, &mut value);
            if flen == field.len() {
                let f = &buf[pos..pos + flen];
                if f.last() == last && f == field {
                    return Some(Span {
                        start,
                        value,
                        end: value + vlen,
                    });
                }
            }
            pos = value + vlen;
        }
        None
    }

    /// Replace bytes `range` of the body (offsets in the current buffer) with `with`, and the
    /// header with `count`, reallocating the buffer to its exact new size (empty when
    /// `count` is 0).
    fn splice(&mut self, count: usize, range: std::ops::Range<usize>, with: &[u8]) {
        self.splice_with(count, range, with.len(), |buf| buf.extend_from_slice(with));
    }

    /// [`Compact::splice`] with the `len` new bytes written by `put` (so a caller need not
    /// gather them in a buffer of their own first).
    fn splice_with(
        &mut self,
        count: usize,
        range: std::ops::Range<usize>,
        len: usize,
        put: impl FnOnce(&mut Vec<u8>),
    ) {
        if count == 0 {
            self.buf = Box::default();
            return;
        }
        let body = self.body();
        let size = varint_len(count) + self.buf.len() - body - range.len() + len;
        let mut buf = Vec::with_capacity(size);
        put_varint(&mut buf, count);
        buf.extend_from_slice(&self.buf[body..range.start]);
        put(&mut buf);
        buf.extend_from_slice(&self.buf[range.end..]);
        debug_assert_eq!(buf.len(), size);
        self.buf = buf.into_boxed_slice();
    }

    fn insert(&mut self, field: &[u8], value: &[u8]) -> bool {
        let len = self.len();
        match self.find(field) {
            // A value of the old one's length is written over it: no new buffer.
            Some(s) if s.end - s.value == value.len() => {
                self.buf[s.value..s.end].copy_from_slice(value);
                false
            }
            Some(s) => {
                // The value's length prefix ends at `s.value`; replace it with the value.
                let prefix = varint_len(s.end - s.value);
                let new = varint_len(value.len()) + value.len();
                self.splice_with(len, s.value - prefix..s.end, new, |buf| {
                    put_varint(buf, value.len());
                    buf.extend_from_slice(value);
                });
                false
            }
            None => {
                let end = self.buf.len();
                self.splice_with(len + 1, end..end, pair_len(field, value), |buf| {
                    put_pair(buf, field, value);
                });
                true
            }
        }
    }

    fn remove(&mut self, field: &[u8]) -> bool {
        match self.find(field) {
            Some(s) => {
                self.splice(self.len() - 1, s.start..s.end, &[]);
                true
            }
            None => false,
        }
    }
}
