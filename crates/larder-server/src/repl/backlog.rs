//! The replication backlog: the last `repl-backlog-size` bytes of the replication stream,
//! from which a replica that lost its link continues (PSYNC's partial resync).
//!
//! Offsets are Redis's: the stream's bytes are numbered from 1, and the master's replication
//! offset is the number of the last byte it produced. A replica asks for the byte after the
//! last one it processed.

use std::collections::VecDeque;

/// A ring of the stream's most recent bytes.
#[derive(Debug)]
pub struct Backlog {
    bytes: VecDeque<u8>,
    size: usize,
    /// The number of the oldest byte held (the next byte's, while empty).
    first_byte_offset: u64,
}

impl Backlog {
    /// An empty backlog of `size` bytes whose next byte is `next_offset`.
    pub fn new(size: usize, next_offset: u64) -> Backlog {
        Backlog {
            bytes: VecDeque::new(),
            size: size.max(1),
            first_byte_offset: next_offset,
        }
    }

    /// Append stream bytes, forgetting the oldest beyond the size.
    pub fn append(&mut self, bytes: &[u8]) {
        let skipped = bytes.len().saturating_sub(self.size);
        let bytes = &bytes[skipped..];
        self.first_byte_offset += skipped as u64;
        let excess = (self.bytes.len() + bytes.len()).saturating_sub(self.size);
        self.bytes.drain(..excess);
        self.first_byte_offset += excess as u64;
        self.bytes.extend(bytes);
    }

    /// Keep at most `size` bytes from now on (CONFIG SET repl-backlog-size).
    pub fn resize(&mut self, size: usize) {
        self.size = size.max(1);
        let excess = self.bytes.len().saturating_sub(self.size);
        self.bytes.drain(..excess);
        self.first_byte_offset += excess as u64;
    }

    pub fn size(&self) -> usize {
        self.size
    }

    /// The number of the oldest byte held.
    pub fn first_byte_offset(&self) -> u64 {
        self.first_byte_offset
    }

    /// Bytes held.
    pub fn histlen(&self) -> u64 {
        self.bytes.len() as u64
    }

    /// The bytes from byte `offset` to the end, if the backlog holds them all (`offset` one
    /// past the end gives none: the replica has everything).
    pub fn read_from(&self, offset: u64) -> Option<Vec<u8>> {
        let skip = offset.checked_sub(self.first_byte_offset)?;
        if skip > self.histlen() {
            return None;
        }
        Some(self.bytes.range(skip as usize..).copied().collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_last_bytes_and_reads_from_an_offset() {
        let mut b = Backlog::new(8, 101);
        assert_eq!(b.read_from(101), Some(Vec::new()));
        assert_eq!(b.read_from(100), None);
        b.append(b"abcde");
        assert_eq!((b.first_byte_offset(), b.histlen()), (101, 5));
        assert_eq!(b.read_from(103).as_deref(), Some(&b"cde"[..]));
        assert_eq!(b.read_from(106), Some(Vec::new()));
        assert_eq!(b.read_from(107), None);
        b.append(b"fghij");
        // Ten bytes written, eight kept: 103..=110.
        assert_eq!((b.first_byte_offset(), b.histlen()), (103, 8));
        assert_eq!(b.read_from(102), None);
        assert_eq!(b.read_from(103).as_deref(), Some(&b"cdefghij"[..]));
        // A write larger than the backlog keeps its tail.
        b.append(b"0123456789");
        assert_eq!(b.first_byte_offset(), 113);
        assert_eq!(b.read_from(113).as_deref(), Some(&b"23456789"[..]));
        b.resize(3);
        assert_eq!(b.read_from(118).as_deref(), Some(&b"789"[..]));
        assert_eq!(b.read_from(117), None);
    }
}
