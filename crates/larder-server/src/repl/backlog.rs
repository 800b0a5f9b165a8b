//! The replication backlog: the last `repl-backlog-size` bytes of the replication stream,
//! from which a replica that lost its link continues (PSYNC's partial resync).
//!
//! Offsets are Redis's: the stream's bytes are numbered from 1, and the master's replication
//! offset is the number of the last byte it produced. A replica asks for the byte after the
//! last one it processed.

/// A ring of the stream's most recent bytes.
#[derive(Debug)]
pub struct Backlog {
    /// The bytes held: in order while fewer than `size` are; once `size` are, a ring whose
    /// oldest byte is at `next` (where the next byte goes). It grows as the stream does, so
    /// a short history takes no more memory than it needs.
    ring: Vec<u8>,
    next: usize,
    size: usize,
    /// The number of the oldest byte held (the next byte's, while empty).
    first_byte_offset: u64,
}

impl Backlog {
    /// An empty backlog of `size` bytes whose next byte is `next_offset`.
    pub fn new(size: usize, next_offset: u64) -> Backlog {
        Backlog {
            ring: Vec::new(),
            next: 0,
            size: size.max(1),
            first_byte_offset: next_offset,
        }
    }

    /// Append stream bytes, forgetting the oldest beyond the size. Every write of the stream
    /// comes through here: two copies at most, nothing per byte.
    pub fn append(&mut self, mut bytes: &[u8]) {
        self.first_byte_offset += (self.ring.len() + bytes.len()).saturating_sub(self.size) as u64;
        if bytes.len() >= self.size {
            // Only its tail stays.
            self.ring.clear();
            self.ring
                .extend_from_slice(&bytes[bytes.len() - self.size..]);
            self.next = 0;
            return;
        }
        let room = self.size - self.ring.len();
        if room > 0 {
            let n = room.min(bytes.len());
            self.ring.extend_from_slice(&bytes[..n]);
            bytes = &bytes[n..];
        }
        while !bytes.is_empty() {
            let n = (self.size - self.next).min(bytes.len());
            self.ring[self.next..self.next + n].copy_from_slice(&bytes[..n]);
            self.next = (self.next + n) % self.size;
            bytes = &bytes[n..];
        }
        if self.ring.len() == self.size {
            // The ring's next lines were last written a whole backlog ago and have left the
            // caches: ask for them now, so that a later write (under the replication lock,
            // whose release waits for pending stores) finds them there.
            for ahead in [Self::AHEAD, Self::AHEAD + 64] {
                if let Some(b) = self.ring.get((self.next + ahead) % self.size) {
                    larder_engine::prefetch(b);
                }
            }
        }
    }

    /// How far ahead of the next write [`Backlog::append`] prefetches.
    const AHEAD: usize = 512;

    /// The bytes held, oldest first, as the ring's two parts.
    fn parts(&self) -> (&[u8], &[u8]) {
        let (older, newer) = self.ring.split_at(self.next);
        (newer, older)
    }

    /// Keep at most `size` bytes from now on (CONFIG SET repl-backlog-size).
    pub fn resize(&mut self, size: usize) {
        let size = size.max(1);
        let (a, b) = self.parts();
        let mut held = Vec::with_capacity(a.len() + b.len());
        held.extend_from_slice(a);
        held.extend_from_slice(b);
        let excess = held.len().saturating_sub(size);
        held.drain(..excess);
        self.first_byte_offset += excess as u64;
        self.ring = held;
        self.next = 0;
        self.size = size;
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
        self.ring.len() as u64
    }

    /// The bytes from byte `offset` to the end, if the backlog holds them all (`offset` one
    /// past the end gives none: the replica has everything).
    pub fn read_from(&self, offset: u64) -> Option<Vec<u8>> {
        let skip = offset.checked_sub(self.first_byte_offset)?;
        if skip > self.histlen() {
            return None;
        }
        let skip = skip as usize;
        let (a, b) = self.parts();
        let mut out = Vec::with_capacity(a.len() + b.len() - skip);
        if skip < a.len() {
            out.extend_from_slice(&a[skip..]);
            out.extend_from_slice(b);
        } else {
            out.extend_from_slice(&b[skip - a.len()..]);
        }
        Some(out)
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

    #[test]
    fn agrees_with_a_model_over_random_appends_and_resizes() {
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut rand = move |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        };
        for _ in 0..200 {
            let mut size = 1 + rand(40) as usize;
            let mut b = Backlog::new(size, 1);
            // Every byte ever appended, numbered from 1.
            let mut all: Vec<u8> = Vec::new();
            for step in 0..60 {
                if rand(10) == 0 {
                    size = 1 + rand(40) as usize;
                    b.resize(size);
                } else {
                    let chunk: Vec<u8> = (0..rand(50)).map(|_| rand(256) as u8).collect();
                    b.append(&chunk);
                    all.extend_from_slice(&chunk);
                }
                let first = b.first_byte_offset() as usize;
                assert!(b.histlen() as usize <= size, "step {step}");
                assert_eq!(first - 1 + b.histlen() as usize, all.len(), "step {step}");
                for offset in first..=all.len() + 1 {
                    assert_eq!(
                        b.read_from(offset as u64).as_deref(),
                        Some(&all[offset - 1..]),
                        "step {step} offset {offset}"
                    );
                }
                assert_eq!(b.read_from(first as u64 - 1), None);
                assert_eq!(b.read_from(all.len() as u64 + 2), None);
            }
        }
    }
}
