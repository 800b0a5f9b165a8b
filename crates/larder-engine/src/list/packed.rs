//! The compact form of a small list: every element in one contiguous buffer, as Redis's
//! listpack keeps a quicklist node.
//!
//! An element is stored as `[len: varint][bytes][len: reverse varint]`: the length in LEB128
//! (low 7 bits first, high bit set while more follow) before the bytes, and again after them
//! in an order that reads backwards from the element's last byte (that byte holds the low 7
//! bits, with its high bit set while more bytes precede it). Either end is reached in O(1),
//! and a walk goes both ways; an element of fewer than 128 bytes costs two bytes more than
//! its own length. The element count sits in a varint header in front of the elements, so
//! the list is one exact-size `Box<[u8]>`: 16 bytes in its entry's object.

use super::End;

/// Bytes of the LEB128 (or reverse) encoding of `n`.
fn varint_len(n: usize) -> usize {
    let bits = usize::BITS - (n | 1).leading_zeros();
    bits.div_ceil(7) as usize
}

/// Bytes one element of `len` bytes takes in the buffer.
pub(super) fn encoded_len(len: usize) -> usize {
    2 * varint_len(len) + len
}

/// Write the encoding of `e` into `out`, which is exactly [`encoded_len`] bytes long.
fn encode_into(out: &mut [u8], e: &[u8]) {
    if let Ok(n) = u8::try_from(e.len()) {
        if n < 0x80 {
            // One length byte each side, the same forwards and backwards.
            out[0] = n;
            out[1..=e.len()].copy_from_slice(e);
            out[e.len() + 1] = n;
            return;
        }
    }
    let k = varint_len(e.len());
    let mut n = e.len();
    for b in &mut out[..k] {
        let low = (n & 0x7f) as u8;
        n >>= 7;
        *b = if n == 0 { low } else { low | 0x80 };
    }
    out[k..k + e.len()].copy_from_slice(e);
    // Reverse varint: most significant group first, every byte after the first flagged, so
    // that a backwards read stops at the unflagged one.
    for (j, b) in out[k + e.len()..].iter_mut().enumerate() {
        let i = k - 1 - j;
        let group = ((e.len() >> (7 * i)) & 0x7f) as u8;
        *b = if j == 0 { group } else { group | 0x80 };
    }
}

/// Elements packed into one exact-size buffer, head first: `[count: varint][elements]`, the
/// element count in LEB128 at the front so that the whole list is one 16-byte pointer, as a
/// listpack keeps its count in its header. An empty list is an empty buffer (no header, no
/// allocation).
///
/// Invariant: `buf` is empty, or the varint of a count `n > 0` followed by exactly the
/// concatenated encodings of `n` elements.
#[derive(Clone, Debug, Default)]
pub(super) struct Packed {
    buf: Box<[u8]>,
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

/// The LEB128 encoding of `n` in the front of a 10-byte array, and its length.
fn varint(n: usize) -> ([u8; 10], usize) {
    let mut out = [0u8; 10];
    let (mut n, mut i) = (n, 0);
    loop {
        let low = (n & 0x7f) as u8;
        n >>= 7;
        if n == 0 {
            out[i] = low;
            return (out, i + 1);
        }
        out[i] = low | 0x80;
        i += 1;
    }
}

impl Packed {
    /// The element count and the length of the header that holds it (0 when empty).
    #[inline]
    fn header(&self) -> (usize, usize) {
        if self.buf.is_empty() {
            return (0, 0);
        }
        let (mut n, mut shift, mut i) = (0usize, 0, 0);
        loop {
            let b = self.buf[i];
            n |= usize::from(b & 0x7f) << shift;
            i += 1;
            if b & 0x80 == 0 {
                return (n, i);
            }
            shift += 7;
        }
    }

    /// The encoded elements, after the header.
    #[inline]
    fn body(&self) -> &[u8] {
        &self.buf[self.header().1..]
    }

    pub(super) fn len(&self) -> usize {
        self.header().0
    }

    /// Bytes of the encoded elements (the header not included).
    pub(super) fn bytes(&self) -> usize {
        self.buf.len() - self.header().1
    }

    /// Where the buffer starts, for a cache prefetch: an address only, never read through.
    pub(super) fn heap_head(&self) -> *const u8 {
        self.buf.as_ptr()
    }

    /// Heap bytes: the buffer's allocation (its exact length), rounded up to the allocator's
    /// 8-byte granule.
    pub(super) fn heap_bytes(&self) -> usize {
        self.buf.len().next_multiple_of(8)
    }

    pub(super) fn iter(&self) -> Iter<'_> {
        let (count, h) = self.header();
        let buf = &self.buf[h..];
        Iter {
            buf,
            front: 0,
            back: buf.len(),
            left: count,
        }
    }

    /// The elements at positions `from..from + n`: a walk from the nearer end.
    pub(super) fn iter_range(&self, from: usize, n: usize) -> Iter<'_> {
        let (front, _) = self.offset(from);
        let (back, _) = self.offset(from + n);
        Iter {
            buf: self.body(),
            front,
            back,
            left: n,
        }
    }

    /// Byte offset in the body of the encoding of the element at `index` (`count` for the
    /// end) and the offset where the one after it starts (the same at the end).
    fn offset(&self, index: usize) -> (usize, usize) {
        let (count, h) = self.header();
        let body = &self.buf[h..];
        if index >= count {
            return (body.len(), body.len());
        }
        if index <= count / 2 {
            let mut at = 0;
            for _ in 0..index {
                at = forward(body, at).2;
            }
            (at, forward(body, at).2)
        } else {
            let mut at = body.len();
            for _ in index..count - 1 {
                at = backward(body, at).0;
            }
            (backward(body, at).0, at)
        }
    }

    pub(super) fn get(&self, index: usize) -> Option<&[u8]> {
        (index < self.len()).then(|| {
            let (at, _) = self.offset(index);
            let body = self.body();
            let (s, e, _) = forward(body, at);
            &body[s..e]
        })
    }

    /// Replace the body bytes `range` with `with` and make `count` the element count,
    /// leaving the buffer at exactly its new size (one reallocation, as a listpack's).
    fn splice(&mut self, range: std::ops::Range<usize>, with: &[u8], count: usize) {
        self.splice_with(range, with.len(), count, |d| d.copy_from_slice(with));
    }

    /// [`Packed::splice`] with `with_len` new bytes that `fill` writes in place: the bytes
    /// around move once (`copy_within`), the buffer is resized once.
    fn splice_with(
        &mut self,
        range: std::ops::Range<usize>,
        with_len: usize,
        count: usize,
        fill: impl FnOnce(&mut [u8]),
    ) {
        if count == 0 {
            self.buf = Box::default();
            return;
        }
        let (_, h) = self.header();
        let (head, nh) = varint(count);
        let mut v = std::mem::take(&mut self.buf).into_vec();
        let old_len = v.len();
        let new_len = nh + old_len - h - range.len() + with_len;
        // Old layout: [header h][prefix][range][tail]; new: [header nh][prefix][with][tail].
        let prefix = h..h + range.start;
        let tail = h + range.end..old_len;
        let tail_to = nh + range.start + with_len;
        if new_len > old_len {
            v.reserve_exact(new_len - old_len);
            v.resize(new_len, 0);
        }
        // Neither move overwrites bytes the other has still to read: a header that grows
        // moves the prefix right after the tail has gone (further right); one that shrinks
        // moves it left before the tail comes.
        if nh <= h {
            v.copy_within(prefix, nh);
            v.copy_within(tail, tail_to);
        } else {
            v.copy_within(tail, tail_to);
            v.copy_within(prefix, nh);
        }
        fill(&mut v[nh + range.start..tail_to]);
        v[..nh].copy_from_slice(&head[..nh]);
        v.truncate(new_len);
        self.buf = v.into_boxed_slice();
    }

    pub(super) fn push_back(&mut self, e: &[u8]) {
        self.insert(self.len(), e);
    }

    /// Insert `e` as the element at `index` (`count` appends).
    pub(super) fn insert(&mut self, index: usize, e: &[u8]) {
        let (count, h) = self.header();
        // The ends, where pushes go, need no walk.
        let at = match index {
            0 => 0,
            i if i >= count => self.buf.len() - h,
            i => self.offset(i).0,
        };
        self.splice_with(at..at, encoded_len(e.len()), count + 1, |d| {
            encode_into(d, e)
        });
    }

    /// Replace the element at `index` (which must exist) and return the old one.
    pub(super) fn set(&mut self, index: usize, e: &[u8]) -> Box<[u8]> {
        let (at, next) = self.offset(index);
        let body = self.body();
        let (s, end, _) = forward(body, at);
        let old = Box::from(&body[s..end]);
        let count = self.len();
        self.splice_with(at..next, encoded_len(e.len()), count, |d| encode_into(d, e));
        old
    }

    #[cfg(test)]
    pub(super) fn pop_front(&mut self) -> Option<Box<[u8]>> {
        self.pop_with(End::Head, |e| Box::from(e))
    }

    #[cfg(test)]
    pub(super) fn pop_back(&mut self) -> Option<Box<[u8]>> {
        self.pop_with(End::Tail, |e| Box::from(e))
    }

    /// Remove the element at `end`, handing its bytes to `f` before they leave the buffer
    /// (a reply is written from them without a copy of its own).
    pub(super) fn pop_with<R>(&mut self, end: End, f: impl FnOnce(&[u8]) -> R) -> Option<R> {
        let count = self.len();
        if count == 0 {
            return None;
        }
        let body = self.body();
        let (range, r) = match end {
            End::Head => {
                let (s, e, next) = forward(body, 0);
                (0..next, f(&body[s..e]))
            }
            End::Tail => {
                let (start, s, e) = backward(body, body.len());
                (start..body.len(), f(&body[s..e]))
            }
        };
        self.splice(range, &[], count - 1);
        Some(r)
    }

    /// Remove the first `n` elements (at most all) and return them head first.
    pub(super) fn pop_front_many(&mut self, n: usize) -> Vec<Box<[u8]>> {
        let count = self.len();
        let n = n.min(count);
        let out: Vec<Box<[u8]>> = self.iter().take(n).map(Box::from).collect();
        let (cut, _) = self.offset(n);
        self.splice(0..cut, &[], count - n);
        out
    }

    /// Remove the last `n` elements (at most all) and return them tail first.
    pub(super) fn pop_back_many(&mut self, n: usize) -> Vec<Box<[u8]>> {
        let count = self.len();
        let n = n.min(count);
        let out: Vec<Box<[u8]>> = self.iter().rev().take(n).map(Box::from).collect();
        let (cut, _) = self.offset(count - n);
        self.splice(cut..self.bytes(), &[], count - n);
        out
    }

    /// Keep the elements at positions `from..=to`.
    pub(super) fn keep(&mut self, from: usize, to: usize) {
        let (start, _) = self.offset(from);
        let (end, _) = self.offset(to + 1);
        let body: Vec<u8> = self.body()[start..end].to_vec();
        self.splice(0..self.bytes(), &body, to + 1 - from);
    }

    /// Remove the elements for which `drop` (called once per element, head first) is true.
    /// Returns how many were removed.
    pub(super) fn remove_if(&mut self, mut drop: impl FnMut(&[u8]) -> bool) -> usize {
        let (count, h) = self.header();
        let body = &self.buf[h..];
        let end = body.len();
        let mut kept = Vec::with_capacity(end);
        let mut removed = 0;
        let mut at = 0;
        while at < end {
            let (s, e, next) = forward(body, at);
            if drop(&body[s..e]) {
                removed += 1;
            } else {
                kept.extend_from_slice(&body[at..next]);
            }
            at = next;
        }
        if removed > 0 {
            self.splice(0..end, &kept, count - removed);
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

    /// The count header grows and shrinks across varint widths (1, 2 and 3 bytes) with the
    /// elements intact, and the buffer is always exactly header plus elements.
    #[test]
    fn count_header_across_widths() {
        let mut p = Packed::default();
        assert_eq!(p.heap_bytes(), 0);
        let check = |p: &Packed, n: usize| {
            assert_eq!(p.len(), n);
            assert_eq!(p.buf.len(), varint(n).1 * usize::from(n > 0) + 2 * n);
            assert_eq!(p.bytes(), 2 * n);
            assert_eq!(p.heap_bytes(), p.buf.len().next_multiple_of(8));
        };
        for n in 0..16_400usize {
            check(&p, n);
            p.push_back(&[]);
        }
        p.insert(127, b"x");
        assert_eq!(p.get(127), Some(&b"x"[..]));
        assert_eq!(p.set(127, b""), Box::from(&b"x"[..]));
        check(&p, 16_401);
        assert_eq!(p.pop_front_many(16_401 - 128).len(), 16_401 - 128);
        check(&p, 128);
        assert_eq!(p.pop_back().as_deref(), Some(&b""[..]));
        check(&p, 127);
        p.keep(0, 0);
        check(&p, 1);
        assert_eq!(p.remove_if(|_| true), 1);
        check(&p, 0);
        assert!(p.buf.is_empty());
    }

    #[test]
    fn one_pointer() {
        assert_eq!(std::mem::size_of::<Packed>(), 16);
    }
}
