//! The "intset" encoding: a sorted array of distinct integers, stored as offsets from a base
//! (the smallest value the set has held), packed at the narrowest whole number of bytes (1 to
//! 8) that holds every offset.
//!
//! Redis's `intset.c` stores the values themselves at 2, 4 or 8 bytes; storing offsets from a
//! base keeps the same binary search and the same "widen, never narrow" rule, and lets a set
//! of nearby values (ids, counters, small numbers) take one to three bytes per member.

/// Sorted, distinct integers in one exact-size buffer, so that a set is one 16-byte pointer:
/// `[width: u8][base: zigzag varint][offsets]`, every value `base + offset`, the offsets (as
/// unsigned 64-bit differences) packed little-endian at `width` bytes each, ascending and
/// distinct. An empty set is an empty buffer (no header, no allocation).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct IntSet {
    buf: Box<[u8]>,
}

/// Bytes needed to hold `offset` (at least one).
fn width_for(offset: u64) -> usize {
    (64 - offset.leading_zeros() as usize).div_ceil(8).max(1)
}

/// Read the `width`-byte little-endian offset at element `i` of `data`.
#[inline]
fn read(data: &[u8], width: usize, i: usize) -> u64 {
    let mut buf = [0u8; 8];
    buf[..width].copy_from_slice(&data[i * width..(i + 1) * width]);
    u64::from_le_bytes(buf)
}

/// The header of a set of `width`-byte offsets from `base`: the width, then the base
/// zigzag-encoded in LEB128 (a small base, negative or not, takes one byte). Returns the
/// bytes in the front of an 11-byte array and their count.
fn header(width: usize, base: i64) -> ([u8; 11], usize) {
    let mut out = [0u8; 11];
    out[0] = width as u8;
    let mut n = ((base << 1) ^ (base >> 63)) as u64;
    let mut i = 1;
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

/// The parts of a non-empty set's buffer.
#[derive(Clone, Copy)]
struct Parts<'a> {
    base: i64,
    width: usize,
    /// Length of the header.
    head: usize,
    data: &'a [u8],
}

impl Parts<'_> {
    fn len(&self) -> usize {
        self.data.len() / self.width
    }

    fn offset_at(&self, i: usize) -> u64 {
        read(self.data, self.width, i)
    }

    fn value_of(&self, offset: u64) -> i64 {
        (self.base as u64).wrapping_add(offset) as i64
    }

    /// The offset of `value` from the base, if it is not below it.
    fn offset_of(&self, value: i64) -> Option<u64> {
        (value >= self.base).then(|| (value as u64).wrapping_sub(self.base as u64))
    }

    /// Where `offset` is (`Ok`) or would go (`Err`).
    fn search(&self, offset: u64) -> Result<usize, usize> {
        if width_for(offset) > self.width {
            return Err(self.len());
        }
        // The common widths with the width a constant: no division, fixed-size loads.
        let data = self.data;
        match self.width {
            1 => data.binary_search(&(offset as u8)),
            2 => search_by(data.len() / 2, |i| read(data, 2, i), offset),
            4 => search_by(data.len() / 4, |i| read(data, 4, i), offset),
            8 => search_by(data.len() / 8, |i| read(data, 8, i), offset),
            _ => search_by(self.len(), |i| self.offset_at(i), offset),
        }
    }
}

/// Binary search of `offset` among `len` ascending offsets, the `i`th read by `at`.
#[inline]
fn search_by(len: usize, at: impl Fn(usize) -> u64, offset: u64) -> Result<usize, usize> {
    let (mut lo, mut hi) = (0, len);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        match at(mid).cmp(&offset) {
            std::cmp::Ordering::Less => lo = mid + 1,
            std::cmp::Ordering::Greater => hi = mid,
            std::cmp::Ordering::Equal => return Ok(mid),
        }
    }
    Err(lo)
}

impl IntSet {
    /// The header's fields and the packed offsets; `None` when empty.
    #[inline]
    fn parts(&self) -> Option<Parts<'_>> {
        let (&width, rest) = self.buf.split_first()?;
        let (mut n, mut shift, mut i) = (0u64, 0, 0);
        loop {
            let b = rest[i];
            n |= u64::from(b & 0x7f) << shift;
            i += 1;
            if b & 0x80 == 0 {
                break;
            }
            shift += 7;
        }
        let base = ((n >> 1) as i64) ^ -((n & 1) as i64);
        Some(Parts {
            base,
            width: usize::from(width),
            head: 1 + i,
            data: &rest[i..],
        })
    }

    pub(super) fn len(&self) -> usize {
        self.parts().map_or(0, |p| p.len())
    }

    /// Bytes per element (1 for an empty set).
    #[cfg(test)]
    pub(super) fn width(&self) -> usize {
        self.parts().map_or(1, |p| p.width)
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

    /// What [`IntSet::heap_bytes`] must be, from the members, width and base alone.
    #[cfg(test)]
    pub(super) fn recount(&self) -> usize {
        match self.parts() {
            None => 0,
            Some(p) => (header(p.width, p.base).1 + p.len() * p.width).next_multiple_of(8),
        }
    }

    pub(super) fn contains(&self, value: i64) -> bool {
        self.parts()
            .is_some_and(|p| p.offset_of(value).is_some_and(|o| p.search(o).is_ok()))
    }

    /// The element at `index` in ascending order.
    pub(super) fn get(&self, index: usize) -> Option<i64> {
        let p = self.parts()?;
        (index < p.len()).then(|| p.value_of(p.offset_at(index)))
    }

    /// Every element, ascending.
    pub(super) fn iter(&self) -> impl ExactSizeIterator<Item = i64> + '_ {
        let p = self.parts().unwrap_or(Parts {
            base: 0,
            width: 1,
            head: 0,
            data: &[],
        });
        (0..p.len()).map(move |i| p.value_of(p.offset_at(i)))
    }

    /// Add `value`, moving the base down or widening the offsets first if needed. Returns
    /// whether it was new.
    pub(super) fn insert(&mut self, value: i64) -> bool {
        let Some(p) = self.parts() else {
            let (head, n) = header(1, value);
            let mut buf = Vec::with_capacity(n + 1);
            buf.extend_from_slice(&head[..n]);
            buf.push(0);
            self.buf = buf.into_boxed_slice();
            return true;
        };
        let (base, width, at, offset) = match p.offset_of(value) {
            Some(offset) => match p.search(offset) {
                Ok(_) => return false,
                Err(at) => (p.base, p.width.max(width_for(offset)), at, offset),
            },
            // Below the base: it becomes the new base, every offset shifts up.
            None => {
                let shift = (p.base as u64).wrapping_sub(value as u64);
                let top = p.offset_at(p.len() - 1) + shift;
                (value, width_for(top).max(p.width), 0, 0)
            }
        };
        if base == p.base && width == p.width {
            // Same header: grow by exactly one element in place (one reallocation, as
            // Redis's intset does).
            let w = width;
            let from = p.head + at * w;
            let mut buf = std::mem::take(&mut self.buf).into_vec();
            buf.reserve_exact(w);
            buf.extend_from_slice(&offset.to_le_bytes()[..w]);
            buf[from..].rotate_right(w);
            self.buf = buf.into_boxed_slice();
        } else {
            // A new base or width: every offset is re-packed.
            let shift = (p.base as u64).wrapping_sub(base as u64);
            let (head, n) = header(width, base);
            let mut buf = Vec::with_capacity(n + (p.len() + 1) * width);
            buf.extend_from_slice(&head[..n]);
            for i in 0..p.len() {
                if i == at {
                    buf.extend_from_slice(&offset.to_le_bytes()[..width]);
                }
                buf.extend_from_slice(&(p.offset_at(i) + shift).to_le_bytes()[..width]);
            }
            if at == p.len() {
                buf.extend_from_slice(&offset.to_le_bytes()[..width]);
            }
            self.buf = buf.into_boxed_slice();
        }
        true
    }

    /// Remove the element at `index` (which must exist), leaving the buffer at its exact
    /// size; the last one leaves an empty buffer.
    fn remove_index(&mut self, index: usize) {
        let Some(p) = self.parts() else {
            return;
        };
        if p.len() == 1 {
            self.buf = Box::default();
            return;
        }
        let from = p.head + index * p.width;
        let to = from + p.width;
        let mut buf = std::mem::take(&mut self.buf).into_vec();
        buf.drain(from..to);
        self.buf = buf.into_boxed_slice();
    }

    pub(super) fn remove(&mut self, value: i64) -> bool {
        let found = self
            .parts()
            .and_then(|p| p.offset_of(value).map(|o| p.search(o)));
        match found {
            Some(Ok(at)) => {
                self.remove_index(at);
                true
            }
            _ => false,
        }
    }

    /// Remove the element at `index` (ascending order) and return it.
    pub(super) fn remove_at(&mut self, index: usize) -> Option<i64> {
        let value = self.get(index)?;
        self.remove_index(index);
        Some(value)
    }

    /// Remove the elements whose position (ascending) `take` accepts and return them,
    /// ascending.
    pub(super) fn split_off_where(&mut self, mut take: impl FnMut(usize) -> bool) -> Vec<i64> {
        let Some(p) = self.parts() else {
            return Vec::new();
        };
        let w = p.width;
        let mut taken = Vec::new();
        let mut kept = Vec::with_capacity(self.buf.len());
        kept.extend_from_slice(&self.buf[..p.head]);
        for i in 0..p.len() {
            if take(i) {
                taken.push(p.value_of(p.offset_at(i)));
            } else {
                kept.extend_from_slice(&p.data[i * w..(i + 1) * w]);
            }
        }
        self.buf = if kept.len() == p.head {
            Box::default()
        } else {
            kept.into_boxed_slice()
        };
        taken
    }
}
