//! The "intset" encoding: a sorted array of distinct integers, stored as offsets from a base
//! (the smallest value the set has held), packed at the narrowest whole number of bytes (1 to
//! 8) that holds every offset.
//!
//! Redis's `intset.c` stores the values themselves at 2, 4 or 8 bytes; storing offsets from a
//! base keeps the same binary search and the same "widen, never narrow" rule, and lets a set
//! of nearby values (ids, counters, small numbers) take one to three bytes per member.

/// Sorted, distinct integers. Invariant: every value is `base + offset`, the offsets (as
/// unsigned 64-bit differences) are packed little-endian at `width` bytes each in `data`,
/// ascending and distinct; an empty set has no data.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct IntSet {
    base: i64,
    data: Vec<u8>,
    width: u8,
}

impl Default for IntSet {
    fn default() -> IntSet {
        IntSet {
            base: 0,
            data: Vec::new(),
            width: 1,
        }
    }
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

impl IntSet {
    pub(super) fn len(&self) -> usize {
        self.data.len() / self.width()
    }

    /// Bytes per element.
    pub(super) fn width(&self) -> usize {
        usize::from(self.width)
    }

    /// Heap bytes: the array's buffer.
    pub(super) fn heap_bytes(&self) -> usize {
        self.data.capacity()
    }

    /// The offset of `value` from the base, if it is not below it.
    fn offset_of(&self, value: i64) -> Option<u64> {
        (value >= self.base).then(|| (value as u64).wrapping_sub(self.base as u64))
    }

    fn value_of(&self, offset: u64) -> i64 {
        (self.base as u64).wrapping_add(offset) as i64
    }

    fn offset_at(&self, i: usize) -> u64 {
        read(&self.data, self.width(), i)
    }

    /// Where `offset` is (`Ok`) or would go (`Err`).
    fn search(&self, offset: u64) -> Result<usize, usize> {
        if width_for(offset) > self.width() {
            return Err(self.len());
        }
        let (mut lo, mut hi) = (0, self.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            match self.offset_at(mid).cmp(&offset) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return Ok(mid),
            }
        }
        Err(lo)
    }

    pub(super) fn contains(&self, value: i64) -> bool {
        self.offset_of(value)
            .is_some_and(|o| self.search(o).is_ok())
    }

    /// The element at `index` in ascending order.
    pub(super) fn get(&self, index: usize) -> Option<i64> {
        (index < self.len()).then(|| self.value_of(self.offset_at(index)))
    }

    /// Every element, ascending.
    pub(super) fn iter(&self) -> impl ExactSizeIterator<Item = i64> + '_ {
        (0..self.len()).map(|i| self.value_of(self.offset_at(i)))
    }

    /// Re-pack every offset plus `shift` at `width` bytes (enough for the largest).
    fn repack(&mut self, shift: u64, width: usize) {
        let mut data = Vec::with_capacity((self.len() + 1) * width);
        for i in 0..self.len() {
            data.extend_from_slice(&(self.offset_at(i) + shift).to_le_bytes()[..width]);
        }
        self.data = data;
        self.width = width as u8;
    }

    /// Add `value`, moving the base down or widening the offsets first if needed. Returns
    /// whether it was new.
    pub(super) fn insert(&mut self, value: i64) -> bool {
        if self.data.is_empty() {
            self.base = value;
            self.width = 1;
        }
        let offset = match self.offset_of(value) {
            Some(offset) => {
                if self.search(offset).is_ok() {
                    return false;
                }
                if width_for(offset) > self.width() {
                    self.repack(0, width_for(offset));
                }
                offset
            }
            None => {
                // Below the base: it becomes the new base, every offset shifts up.
                let shift = (self.base as u64).wrapping_sub(value as u64);
                let top = self.offset_at(self.len() - 1) + shift;
                self.repack(shift, width_for(top).max(self.width()));
                self.base = value;
                0
            }
        };
        let Err(at) = self.search(offset) else {
            return false;
        };
        let w = self.width();
        // Grow by exactly one element: a compact set holds no spare room, like Redis's
        // realloc.
        self.data.reserve_exact(w);
        self.data.extend_from_slice(&offset.to_le_bytes()[..w]);
        self.data[at * w..].rotate_right(w);
        true
    }

    /// Remove the element at `index`, giving back spare room past a quarter.
    fn remove_index(&mut self, index: usize) {
        let w = self.width();
        self.data.drain(index * w..(index + 1) * w);
        if self.data.capacity() > self.data.len() + self.data.len() / 4 + 32 {
            self.data.shrink_to_fit();
        }
    }

    pub(super) fn remove(&mut self, value: i64) -> bool {
        match self.offset_of(value).map(|o| self.search(o)) {
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
        let w = self.width();
        let mut taken = Vec::new();
        let mut kept = Vec::new();
        for i in 0..self.len() {
            if take(i) {
                taken.push(self.value_of(self.offset_at(i)));
            } else {
                kept.extend_from_slice(&self.data[i * w..(i + 1) * w]);
            }
        }
        kept.shrink_to_fit();
        self.data = kept;
        taken
    }
}
