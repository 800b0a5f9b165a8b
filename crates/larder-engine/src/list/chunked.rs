//! The full form of a list: a deque of packed chunks, as Redis's quicklist is a linked list of
//! listpack nodes. Each chunk holds as many elements as the limits in force when it was
//! written allow (an element count, or a byte budget), so an element costs its bytes and a
//! two-byte header instead of a pointer and an allocation of its own. An element larger than
//! the budget sits alone in a chunk.
//!
//! Indexing walks chunk lengths from the nearer end: O(n / chunk) to find the chunk, then
//! O(chunk) inside it.

use std::collections::VecDeque;

use super::packed::{self, Packed};
use super::{fits, End};
use crate::Limits;

/// Chunks, head first, never empty.
///
/// Invariants: `len` is the sum of the chunks' lengths, `chunk_bytes` the sum of their
/// [`Packed::heap_bytes`].
#[derive(Debug, Default)]
pub(super) struct Chunked {
    chunks: VecDeque<Packed>,
    len: usize,
    chunk_bytes: usize,
}

/// A copy's chunks are sized to their contents, so their bytes are counted again.
impl Clone for Chunked {
    fn clone(&self) -> Chunked {
        let chunks = self.chunks.clone();
        let chunk_bytes = chunks.iter().map(Packed::heap_bytes).sum();
        Chunked {
            chunks,
            len: self.len,
            chunk_bytes,
        }
    }
}

impl Chunked {
    /// The chunks of `p`'s elements, for a list leaving the packed form.
    pub(super) fn from_packed(p: &Packed, limits: &Limits) -> Chunked {
        let mut c = Chunked::default();
        for e in p.iter() {
            c.push(End::Tail, e, limits);
        }
        c
    }

    pub(super) fn len(&self) -> usize {
        self.len
    }

    pub(super) fn heap_bytes(&self) -> usize {
        std::mem::size_of::<Chunked>()
            + self.chunks.capacity() * std::mem::size_of::<Packed>()
            + self.chunk_bytes
    }

    #[cfg(test)]
    pub(super) fn chunks(&self) -> &VecDeque<Packed> {
        &self.chunks
    }

    /// Run `f` on chunk `i`, keeping the counts; a chunk left empty is removed.
    fn with_chunk<R>(&mut self, i: usize, f: impl FnOnce(&mut Packed) -> R) -> R {
        let chunk = &mut self.chunks[i];
        let (len, bytes) = (chunk.len(), chunk.heap_bytes());
        let r = f(chunk);
        let (new_len, new_bytes) = (chunk.len(), chunk.heap_bytes());
        self.len = self.len + new_len - len;
        self.chunk_bytes = self.chunk_bytes + new_bytes - bytes;
        if new_len == 0 {
            self.chunk_bytes -= new_bytes;
            self.chunks.remove(i);
        }
        r
    }

    /// Add `chunk` at position `i` of the chunk deque.
    fn add_chunk(&mut self, i: usize, chunk: Packed) {
        self.len += chunk.len();
        self.chunk_bytes += chunk.heap_bytes();
        self.chunks.insert(i, chunk);
    }

    /// The chunk that holds element `index` (< len) and the element's position in it.
    fn locate(&self, index: usize) -> (usize, usize) {
        if index < self.len / 2 {
            let mut before = 0;
            for (i, c) in self.chunks.iter().enumerate() {
                if index < before + c.len() {
                    return (i, index - before);
                }
                before += c.len();
            }
        } else {
            let mut after = self.len;
            for (i, c) in self.chunks.iter().enumerate().rev() {
                after -= c.len();
                if index >= after {
                    return (i, index - after);
                }
            }
        }
        (self.chunks.len(), 0)
    }

    pub(super) fn get(&self, index: usize) -> Option<&[u8]> {
        if index >= self.len {
            return None;
        }
        let (i, at) = self.locate(index);
        self.chunks.get(i).and_then(|c| c.get(at))
    }

    /// Split chunk `i` in two halves if it no longer fits `limits` (and has two elements).
    fn split_if_over(&mut self, i: usize, limits: &Limits) {
        let chunk = &self.chunks[i];
        if chunk.len() < 2 || fits(limits, chunk.len(), chunk.bytes()) {
            return;
        }
        let half = chunk.len() / 2;
        let tail = self.with_chunk(i, |c| {
            let mut tail = c.pop_back_many(c.len() - half);
            tail.reverse();
            tail
        });
        let mut second = Packed::default();
        tail.iter().for_each(|e| second.push_back(e));
        self.add_chunk(i + 1, second);
        self.split_if_over(i + 1, limits);
        self.split_if_over(i, limits);
    }

    pub(super) fn push(&mut self, end: End, e: &[u8], limits: &Limits) {
        let i = match end {
            End::Head => 0,
            End::Tail => self.chunks.len().wrapping_sub(1),
        };
        let room = self.chunks.get(i).is_some_and(|c| {
            fits(
                limits,
                c.len() + 1,
                c.bytes() + packed::encoded_len(e.len()),
            )
        });
        if room {
            self.with_chunk(i, |c| match end {
                End::Head => c.insert(0, e),
                End::Tail => c.push_back(e),
            });
        } else {
            let mut chunk = Packed::default();
            chunk.push_back(e);
            let at = match end {
                End::Head => 0,
                End::Tail => self.chunks.len(),
            };
            self.add_chunk(at, chunk);
        }
    }

    pub(super) fn pop_with<R>(&mut self, end: End, f: impl FnOnce(&[u8]) -> R) -> Option<R> {
        let i = match end {
            End::Head => 0,
            End::Tail => self.chunks.len().checked_sub(1)?,
        };
        if i >= self.chunks.len() {
            return None;
        }
        self.with_chunk(i, |c| c.pop_with(end, f))
    }

    /// Remove up to `n` elements from `end`, in the order they leave.
    pub(super) fn pop_many(&mut self, end: End, n: usize) -> Vec<Box<[u8]>> {
        let mut out = Vec::with_capacity(n.min(self.len));
        while out.len() < n && !self.chunks.is_empty() {
            let want = n - out.len();
            match end {
                End::Head => out.extend(self.with_chunk(0, |c| c.pop_front_many(want))),
                End::Tail => {
                    let last = self.chunks.len() - 1;
                    out.extend(self.with_chunk(last, |c| c.pop_back_many(want)));
                }
            }
        }
        out
    }

    /// Replace element `index` (< len) and return the old one.
    pub(super) fn set(&mut self, index: usize, e: &[u8], limits: &Limits) -> Box<[u8]> {
        let (i, at) = self.locate(index);
        let old = self.with_chunk(i, |c| c.set(at, e));
        self.split_if_over(i, limits);
        old
    }

    /// Insert `e` as element `index` (<= len).
    pub(super) fn insert(&mut self, index: usize, e: &[u8], limits: &Limits) {
        if index == self.len {
            return self.push(End::Tail, e, limits);
        }
        let (i, at) = self.locate(index);
        self.with_chunk(i, |c| c.insert(at, e));
        self.split_if_over(i, limits);
    }

    /// Remove the elements for which `drop` is true (called once per element, head first).
    pub(super) fn remove_if(&mut self, mut drop: impl FnMut(&[u8]) -> bool) -> usize {
        let mut removed = 0;
        let mut i = 0;
        while i < self.chunks.len() {
            let before = self.chunks.len();
            removed += self.with_chunk(i, |c| c.remove_if(&mut drop));
            if self.chunks.len() == before {
                i += 1;
            }
        }
        removed
    }

    /// Keep elements `from..=to` (both < len).
    pub(super) fn keep(&mut self, from: usize, to: usize) {
        let tail = self.len - 1 - to;
        self.pop_many_dropped(End::Tail, tail);
        self.pop_many_dropped(End::Head, from);
    }

    /// Remove `n` elements from `end` without returning them: whole chunks go at once.
    fn pop_many_dropped(&mut self, end: End, mut n: usize) {
        while n > 0 {
            let i = match end {
                End::Head => 0,
                End::Tail => self.chunks.len() - 1,
            };
            let here = self.chunks[i].len();
            if here <= n {
                self.with_chunk(i, |c| *c = Packed::default());
                n -= here;
            } else {
                let (from, to) = match end {
                    End::Head => (n, here - 1),
                    End::Tail => (0, here - 1 - n),
                };
                self.with_chunk(i, |c| c.keep(from, to));
                n = 0;
            }
        }
    }

    pub(super) fn iter(&self) -> Iter<'_> {
        self.iter_range(0, self.len)
    }

    /// Elements `from..from + n` (within the list).
    pub(super) fn iter_range(&self, from: usize, n: usize) -> Iter<'_> {
        if n == 0 {
            return Iter {
                front: None,
                back: None,
                middle: self.chunks.range(0..0),
                left: 0,
            };
        }
        let (first, at) = self.locate(from);
        let (last, end_at) = self.locate(from + n - 1);
        if first == last {
            return Iter {
                front: Some(self.chunks[first].iter_range(at, end_at + 1 - at)),
                back: None,
                middle: self.chunks.range(0..0),
                left: n,
            };
        }
        let head = &self.chunks[first];
        Iter {
            front: Some(head.iter_range(at, head.len() - at)),
            back: Some(self.chunks[last].iter_range(0, end_at + 1)),
            middle: self.chunks.range(first + 1..last),
            left: n,
        }
    }
}

/// A walk over some of a chunked list's elements, either way.
#[derive(Clone)]
pub(super) struct Iter<'a> {
    front: Option<packed::Iter<'a>>,
    back: Option<packed::Iter<'a>>,
    middle: std::collections::vec_deque::Iter<'a, Packed>,
    left: usize,
}

impl<'a> Iterator for Iter<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        if self.left == 0 {
            return None;
        }
        loop {
            if let Some(e) = self.front.as_mut().and_then(Iterator::next) {
                self.left -= 1;
                return Some(e);
            }
            match self.middle.next() {
                Some(c) => self.front = Some(c.iter()),
                None => {
                    let e = self.back.as_mut().and_then(Iterator::next);
                    self.left -= usize::from(e.is_some());
                    return e;
                }
            }
        }
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
        loop {
            if let Some(e) = self.back.as_mut().and_then(DoubleEndedIterator::next_back) {
                self.left -= 1;
                return Some(e);
            }
            match self.middle.next_back() {
                Some(c) => self.back = Some(c.iter()),
                None => {
                    let e = self.front.as_mut().and_then(DoubleEndedIterator::next_back);
                    self.left -= usize::from(e.is_some());
                    return e;
                }
            }
        }
    }
}

impl ExactSizeIterator for Iter<'_> {}
