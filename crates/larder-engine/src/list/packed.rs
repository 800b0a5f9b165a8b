//! The compact form of a small list: every element in one contiguous buffer, as Redis's
//! listpack keeps a quicklist node.
//!
//! An element is stored as `[len: varint][bytes][len: reverse varint]`: the length in LEB128
//! (low 7 bits first, high bit set while more follow) before the bytes, and again after them
//! in an order that reads backwards from the element's last byte (that byte holds the low 7
//! bits, with its high bit set while more bytes precede it). Either end is reached in O(1),
//! and a walk goes both ways; an element of fewer than 128 bytes costs two bytes more than
//! its own length.

/// Bytes of the LEB128 (or reverse) encoding of `n`.
fn varint_len(n: usize) -> usize {
    let bits = usize::BITS - (n | 1).leading_zeros();
    bits.div_ceil(7) as usize
}

/// Bytes one element of `len` bytes takes in the buffer.
pub(super) fn encoded_len(len: usize) -> usize {
    2 * varint_len(len) + len
}

/// Append the encoding of `e` to `buf`.
fn encode(buf: &mut Vec<u8>, e: &[u8]) {
    let mut n = e.len();
    loop {
        let low = (n & 0x7f) as u8;
        n >>= 7;
        if n == 0 {
            buf.push(low);
            break;
        }
        buf.push(low | 0x80);
    }
    buf.extend_from_slice(e);
    // Reverse varint: most significant group first, every byte after the first flagged, so
    // that a backwards read stops at the unflagged one.
    let k = varint_len(e.len());
    for i in (0..k).rev() {
        let group = ((e.len() >> (7 * i)) & 0x7f) as u8;
        buf.push(if i + 1 == k { group } else { group | 0x80 });
    }
}

/// Elements packed into one buffer, head first.
///
/// Invariant: `buf` is exactly the concatenated encodings of `count` elements.
#[derive(Clone, Debug, Default)]
pub(super) struct Packed {
    buf: Vec<u8>,
    count: usize,
}

/// The element whose encoding starts at `at`: its bytes' range and where the next one starts.
fn forward(buf: &[u8], at: usize) -> (usize, usize, usize) {
    let (mut len, mut shift, mut i) = (0usize, 0, at);
    loop {
        let b = buf[i];
        len |= usize::from(b & 0x7f) << shift;
        i += 1;
        if b & 0x80 == 0 {
            break;
        }
        shift += 7;
    }
    let end = i + len;
    (i, end, end + varint_len(len))
}

/// The element whose encoding ends just before `at`: where it starts and its bytes' range.
fn backward(buf: &[u8], at: usize) -> (usize, usize, usize) {
    let (mut len, mut shift, mut i) = (0usize, 0, at);
    loop {
        i -= 1;
        let b = buf[i];
        len |= usize::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            break;
        }
        shift += 7;
    }
    let start = i - len;
    (start - varint_len(len), start, i)
}

impl Packed {
    pub(super) fn len(&self) -> usize {
        self.count
    }

    /// Bytes of the encoded elements.
    pub(super) fn bytes(&self) -> usize {
        self.buf.len()
    }

    /// Heap bytes: the buffer's allocation, rounded up to the allocator's 8-byte granule.
    pub(super) fn heap_bytes(&self) -> usize {
        self.buf.capacity().next_multiple_of(8)
    }

    pub(super) fn iter(&self) -> Iter<'_> {
        Iter {
            buf: &self.buf,
            front: 0,
            back: self.buf.len(),
            left: self.count,
        }
    }

    /// The elements at positions `from..from + n`: a walk from the nearer end.
    pub(super) fn iter_range(&self, from: usize, n: usize) -> Iter<'_> {
        let (front, _) = self.offset(from);
        let (back, _) = self.offset(from + n);
        Iter {
            buf: &self.buf,
            front,
            back,
            left: n,
        }
    }

    /// Byte offset of the encoding of the element at `index` (`count` for the end) and the
    /// offset where the one after it starts (the same at the end).
    fn offset(&self, index: usize) -> (usize, usize) {
        if index >= self.count {
            return (self.buf.len(), self.buf.len());
        }
        if index <= self.count / 2 {
            let mut at = 0;
            for _ in 0..index {
                at = forward(&self.buf, at).2;
            }
            (at, forward(&self.buf, at).2)
        } else {
            let mut at = self.buf.len();
            for _ in index..self.count - 1 {
                at = backward(&self.buf, at).0;
            }
            (backward(&self.buf, at).0, at)
        }
    }

    pub(super) fn get(&self, index: usize) -> Option<&[u8]> {
        (index < self.count).then(|| {
            let (at, _) = self.offset(index);
            let (s, e, _) = forward(&self.buf, at);
            &self.buf[s..e]
        })
    }

    /// Grow the buffer to exactly what `extra` more bytes need: a small list's buffer is
    /// sized to its contents, as a listpack is.
    fn reserve(&mut self, extra: usize) {
        self.buf.reserve_exact(extra);
    }

    /// Give back spare capacity after a removal once it is more than a third of the buffer.
    fn shrink(&mut self) {
        if self.buf.capacity() - self.buf.len() > self.buf.len() / 2 {
            self.buf.shrink_to_fit();
        }
    }

    pub(super) fn push_back(&mut self, e: &[u8]) {
        self.reserve(encoded_len(e.len()));
        encode(&mut self.buf, e);
        self.count += 1;
    }

    /// Insert `e` as the element at `index` (`count` appends).
    pub(super) fn insert(&mut self, index: usize, e: &[u8]) {
        let (at, _) = self.offset(index);
        let mut enc = Vec::with_capacity(encoded_len(e.len()));
        encode(&mut enc, e);
        self.reserve(enc.len());
        self.buf.splice(at..at, enc);
        self.count += 1;
    }

    /// Replace the element at `index` (which must exist) and return the old one.
    pub(super) fn set(&mut self, index: usize, e: &[u8]) -> Box<[u8]> {
        let (at, next) = self.offset(index);
        let (s, end, _) = forward(&self.buf, at);
        let old = Box::from(&self.buf[s..end]);
        let mut enc = Vec::with_capacity(encoded_len(e.len()));
        encode(&mut enc, e);
        if enc.len() > next - at {
            self.reserve(enc.len() - (next - at));
        }
        self.buf.splice(at..next, enc);
        self.shrink();
        old
    }

    pub(super) fn pop_front(&mut self) -> Option<Box<[u8]>> {
        let mut popped = self.pop_front_many(1);
        popped.pop()
    }

    pub(super) fn pop_back(&mut self) -> Option<Box<[u8]>> {
        if self.count == 0 {
            return None;
        }
        let (start, s, e) = backward(&self.buf, self.buf.len());
        let old = Box::from(&self.buf[s..e]);
        self.buf.truncate(start);
        self.count -= 1;
        self.shrink();
        Some(old)
    }

    /// Remove the first `n` elements (at most all) and return them head first.
    pub(super) fn pop_front_many(&mut self, n: usize) -> Vec<Box<[u8]>> {
        let n = n.min(self.count);
        let out: Vec<Box<[u8]>> = self.iter().take(n).map(Box::from).collect();
        let (cut, _) = self.offset(n);
        self.buf.drain(..cut);
        self.count -= n;
        self.shrink();
        out
    }

    /// Remove the last `n` elements (at most all) and return them tail first.
    pub(super) fn pop_back_many(&mut self, n: usize) -> Vec<Box<[u8]>> {
        let n = n.min(self.count);
        let out: Vec<Box<[u8]>> = self.iter().rev().take(n).map(Box::from).collect();
        let (cut, _) = self.offset(self.count - n);
        self.buf.truncate(cut);
        self.count -= n;
        self.shrink();
        out
    }

    /// Keep the elements at positions `from..=to`.
    pub(super) fn keep(&mut self, from: usize, to: usize) {
        let (start, _) = self.offset(from);
        let (end, _) = self.offset(to + 1);
        self.buf.truncate(end);
        self.buf.drain(..start);
        self.count = to + 1 - from;
        self.shrink();
    }

    /// Remove the elements for which `drop` (called once per element, head first) is true.
    /// Returns how many were removed.
    pub(super) fn remove_if(&mut self, mut drop: impl FnMut(&[u8]) -> bool) -> usize {
        let mut kept = Vec::with_capacity(self.buf.len());
        let mut removed = 0;
        let mut at = 0;
        while at < self.buf.len() {
            let (s, e, next) = forward(&self.buf, at);
            if drop(&self.buf[s..e]) {
                removed += 1;
            } else {
                kept.extend_from_slice(&self.buf[at..next]);
            }
            at = next;
        }
        if removed > 0 {
            kept.shrink_to_fit();
            self.buf = kept;
            self.count -= removed;
        }
        removed
    }
}

/// A walk over packed elements, either way.
#[derive(Clone)]
pub(super) struct Iter<'a> {
    buf: &'a [u8],
    front: usize,
    back: usize,
    left: usize,
}

impl<'a> Iterator for Iter<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        if self.left == 0 {
            return None;
        }
        let (s, e, next) = forward(self.buf, self.front);
        self.front = next;
        self.left -= 1;
        Some(&self.buf[s..e])
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

impl DoubleEndedIterator for Iter<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        if self.left == 0 {
            return None;
        }
        let (start, s, e) = backward(self.buf, self.back);
        self.back = start;
        self.left -= 1;
        Some(&self.buf[s..e])
    }
}

impl ExactSizeIterator for Iter<'_> {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_both_ways() {
        for len in [0, 1, 127, 128, 300, 16_383, 16_384, 70_000] {
            let e = vec![b'x'; len];
            let mut p = Packed::default();
            p.push_back(b"a");
            p.push_back(&e);
            p.push_back(b"");
            assert_eq!(
                p.bytes(),
                encoded_len(1) + encoded_len(len) + encoded_len(0)
            );
            assert_eq!(p.iter().nth(1), Some(&e[..]));
            assert_eq!(p.iter().rev().nth(1), Some(&e[..]));
            assert_eq!(p.get(1), Some(&e[..]));
            assert_eq!(p.pop_back().as_deref(), Some(&b""[..]));
            assert_eq!(p.pop_back().as_deref(), Some(&e[..]));
            assert_eq!(p.pop_front().as_deref(), Some(&b"a"[..]));
            assert_eq!(p.bytes(), 0);
        }
        assert_eq!(encoded_len(10), 12);
        assert_eq!(encoded_len(200), 204);
    }
}
