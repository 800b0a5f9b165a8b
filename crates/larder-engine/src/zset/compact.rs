//! The compact ("listpack") encoding: one exact-size buffer holding the entry count (LEB128)
//! and then the `(score, member)` entries sorted by `(score, member)`. Each entry is the
//! score (8 bytes, little-endian bits), the member's length (LEB128) and the member's bytes.
//! An empty set has an empty buffer (no header, no allocation). Operations scan the buffer:
//! it is small by definition ([`crate::Limits::zset_max_listpack_entries`]); every write
//! reallocates it to its new size, as Redis's listpack does. Keeping the count inside the
//! buffer makes the encoding one 16-byte pointer.

use std::cmp::Ordering;

/// The compact sorted set.
#[derive(Clone, Debug, Default)]
pub(crate) struct Compact {
    buf: Box<[u8]>,
}

/// One decoded entry: its byte span in the buffer, its score and its member.
#[derive(Clone, Copy)]
pub(crate) struct At<'a> {
    pub start: usize,
    pub end: usize,
    pub score: f64,
    pub member: &'a [u8],
}

/// `(score, member)` order, with -0.0 equal to 0.0.
pub(crate) fn cmp_key(s1: f64, m1: &[u8], s2: f64, m2: &[u8]) -> Ordering {
    s1.partial_cmp(&s2)
        .unwrap_or(Ordering::Equal)
        .then_with(|| m1.cmp(m2))
}

/// LEB128 of `n` appended to `buf`.
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

/// The LEB128 at `*pos`, advancing past it.
fn get_varint(buf: &[u8], pos: &mut usize) -> usize {
    let mut n = 0usize;
    let mut shift = 0;
    loop {
        let b = buf[*pos];
        *pos += 1;
        n |= usize::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return n;
        }
        shift += 7;
    }
}

impl Compact {
    /// Number of entries, from the header: O(1).
    pub fn len(&self) -> usize {
        if self.buf.is_empty() {
            return 0;
        }
        get_varint(&self.buf, &mut 0)
    }

    /// Where the buffer starts, for a cache prefetch: an address only, never read through.
    pub(crate) fn heap_head(&self) -> *const u8 {
        self.buf.as_ptr()
    }

    /// The buffer's allocation, rounded up to the allocator's 8-byte granule.
    pub fn heap_bytes(&self) -> usize {
        self.buf.len().next_multiple_of(8)
    }

    /// Offset of the first entry: past the header.
    fn body(&self) -> usize {
        if self.buf.is_empty() {
            0
        } else {
            varint_len(self.len())
        }
    }

    /// The entries in order.
    pub fn iter(&self) -> impl Iterator<Item = At<'_>> + '_ {
        let buf = &self.buf;
        let mut pos = self.body();
        std::iter::from_fn(move || {
            if pos >= buf.len() {
                return None;
            }
            let start = pos;
            let mut bits = [0u8; 8];
            bits.copy_from_slice(&buf[pos..pos + 8]);
            pos += 8;
            let n = get_varint(buf, &mut pos);
            let member = &buf[pos..pos + n];
            pos += n;
            Some(At {
                start,
                end: pos,
                score: f64::from_bits(u64::from_le_bytes(bits)),
                member,
            })
        })
    }

    pub fn find(&self, member: &[u8]) -> Option<At<'_>> {
        self.iter().find(|e| e.member == member)
    }

    /// Replace bytes `range` of the body (offsets in the current buffer) with `with`, and the
    /// header with `count`, reallocating the buffer to its exact new size (empty when
    /// `count` is 0).
    fn splice(&mut self, count: usize, range: std::ops::Range<usize>, with: &[u8]) {
        if count == 0 {
            self.buf = Box::default();
            return;
        }
        let body = self.body();
        let size = varint_len(count) + self.buf.len() - body - range.len() + with.len();
        let mut buf = Vec::with_capacity(size);
        put_varint(&mut buf, count);
        buf.extend_from_slice(&self.buf[body..range.start]);
        buf.extend_from_slice(with);
        buf.extend_from_slice(&self.buf[range.end..]);
        debug_assert_eq!(buf.len(), size);
        self.buf = buf.into_boxed_slice();
    }

    /// Insert a member that is not present, returning the score as stored: as Redis's
    /// listpack stores it, -0.0 becomes 0 (an integral score is kept as an integer).
    pub fn insert(&mut self, member: &[u8], score: f64) -> f64 {
        let score = if score == 0.0 { 0.0 } else { score };
        let at = self
            .iter()
            .find(|e| cmp_key(e.score, e.member, score, member) == Ordering::Greater)
            .map_or(self.buf.len(), |e| e.start);
        let mut entry = Vec::with_capacity(8 + varint_len(member.len()) + member.len());
        entry.extend_from_slice(&score.to_bits().to_le_bytes());
        put_varint(&mut entry, member.len());
        entry.extend_from_slice(member);
        self.splice(self.len() + 1, at..at, &entry);
        score
    }

    /// Remove the `entries` entries spanning `start..end`.
    pub fn remove_span(&mut self, start: usize, end: usize, entries: usize) {
        self.splice(self.len() - entries, start..end, &[]);
    }

    /// Byte offset where the entry of `rank` starts (the buffer's length past the last).
    pub fn offset_of_rank(&self, rank: usize) -> usize {
        self.iter().nth(rank).map_or(self.buf.len(), |e| e.start)
    }

    /// [`Compact::heap_bytes`] counted from the entries: the header plus every entry's
    /// bytes, checking the header's count.
    #[cfg(test)]
    pub fn recount_bytes(&self) -> usize {
        let n = self.iter().count();
        assert_eq!(n, self.len(), "the header counts the entries");
        assert_eq!(self.buf.is_empty(), n == 0, "an empty set has no header");
        let header = if n == 0 { 0 } else { varint_len(n) };
        let entries: usize = self.iter().map(|e| e.end - e.start).sum();
        assert_eq!(header + entries, self.buf.len());
        (header + entries).next_multiple_of(8)
    }
}
