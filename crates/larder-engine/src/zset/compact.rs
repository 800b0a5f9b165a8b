//! The compact ("listpack") encoding: one buffer of `(score, member)` entries sorted by
//! `(score, member)`. Each entry is the score (8 bytes, little-endian bits), the member's
//! length (LEB128) and the member's bytes. Operations scan the buffer: it is small by
//! definition ([`crate::Limits::zset_max_listpack_entries`]).

use std::cmp::Ordering;

/// The compact sorted set.
#[derive(Clone, Debug, Default)]
pub(crate) struct Compact {
    buf: Vec<u8>,
    len: usize,
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

impl Compact {
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn heap_bytes(&self) -> usize {
        self.buf.capacity()
    }

    /// The entries in order.
    pub fn iter(&self) -> impl Iterator<Item = At<'_>> + '_ {
        let buf = &self.buf;
        let mut pos = 0;
        std::iter::from_fn(move || {
            if pos >= buf.len() {
                return None;
            }
            let start = pos;
            let mut bits = [0u8; 8];
            bits.copy_from_slice(&buf[pos..pos + 8]);
            pos += 8;
            let mut n = 0usize;
            let mut shift = 0;
            loop {
                let b = buf[pos];
                pos += 1;
                n |= usize::from(b & 0x7f) << shift;
                shift += 7;
                if b & 0x80 == 0 {
                    break;
                }
            }
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

    /// Insert a member that is not present, returning the score as stored: as Redis's
    /// listpack stores it, -0.0 becomes 0 (an integral score is kept as an integer).
    pub fn insert(&mut self, member: &[u8], score: f64) -> f64 {
        let score = if score == 0.0 { 0.0 } else { score };
        let at = self
            .iter()
            .find(|e| cmp_key(e.score, e.member, score, member) == Ordering::Greater)
            .map_or(self.buf.len(), |e| e.start);
        let mut len_bytes = [0u8; 10];
        let mut n = member.len();
        let mut used = 0;
        loop {
            let b = (n & 0x7f) as u8;
            n >>= 7;
            if n == 0 {
                len_bytes[used] = b;
                used += 1;
                break;
            }
            len_bytes[used] = b | 0x80;
            used += 1;
        }
        let entry = score.to_bits().to_le_bytes();
        let bytes = entry
            .iter()
            .chain(&len_bytes[..used])
            .chain(member)
            .copied();
        self.buf.splice(at..at, bytes);
        self.len += 1;
        score
    }

    /// Remove the entry spanning `start..end`.
    pub fn remove_span(&mut self, start: usize, end: usize, entries: usize) {
        self.buf.drain(start..end);
        self.len -= entries;
    }

    /// Byte offset where the entry of `rank` starts (the buffer's length past the last).
    pub fn offset_of_rank(&self, rank: usize) -> usize {
        self.iter().nth(rank).map_or(self.buf.len(), |e| e.start)
    }
}
