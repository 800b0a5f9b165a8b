//! The "intset" encoding: a sorted array of distinct integers, stored as offsets from a base
//! (the smallest value the set has held) at the narrowest width, 8, 16, 32 or 64 bits, that
//! holds every offset.
//!
//! Redis's `intset.c` stores the values themselves at 16, 32 or 64 bits; storing offsets from
//! a base keeps the same binary search and the same "widen, never narrow" rule, and lets a
//! set of nearby values (ids, counters, small numbers) take one byte per member.

/// Offsets from the base, sorted, distinct, at one width.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Offsets {
    W8(Vec<u8>),
    W16(Vec<u16>),
    W32(Vec<u32>),
    W64(Vec<u64>),
}

/// Sorted, distinct integers. Invariant: every value is `base + offset` with the offset
/// (as an unsigned 64-bit difference) held in `offsets`; an empty set has no offsets.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct IntSet {
    base: i64,
    offsets: Offsets,
}

impl Default for IntSet {
    fn default() -> IntSet {
        IntSet {
            base: 0,
            offsets: Offsets::W8(Vec::new()),
        }
    }
}

/// Applies `$body` to the offsets whatever their width, with `$v` bound to the vector.
macro_rules! each_width {
    ($offsets:expr, $v:ident => $body:expr) => {
        match $offsets {
            Offsets::W8($v) => $body,
            Offsets::W16($v) => $body,
            Offsets::W32($v) => $body,
            Offsets::W64($v) => $body,
        }
    };
}

/// Bytes needed to hold `offset`.
fn width_for(offset: u64) -> usize {
    match offset {
        0..=0xff => 1,
        0x100..=0xffff => 2,
        0x1_0000..=0xffff_ffff => 4,
        _ => 8,
    }
}

/// Insert `value` at its sorted place, growing the buffer by exactly one element: a compact
/// set holds no spare room, like Redis's realloc.
fn insert_sorted<T: Ord + Copy>(v: &mut Vec<T>, value: T) -> bool {
    match v.binary_search(&value) {
        Ok(_) => false,
        Err(at) => {
            v.reserve_exact(1);
            v.insert(at, value);
            true
        }
    }
}

/// Remove the element at `at`, giving back spare room past a quarter.
fn remove_index<T>(v: &mut Vec<T>, at: usize) {
    v.remove(at);
    if v.capacity() > v.len() + v.len() / 4 + 4 {
        v.shrink_to_fit();
    }
}

impl Offsets {
    fn width(&self) -> usize {
        match self {
            Offsets::W8(_) => 1,
            Offsets::W16(_) => 2,
            Offsets::W32(_) => 4,
            Offsets::W64(_) => 8,
        }
    }

    fn len(&self) -> usize {
        each_width!(self, v => v.len())
    }

    #[allow(clippy::useless_conversion)] // u64::from on the 64-bit arm of the macro
    fn get(&self, i: usize) -> Option<u64> {
        each_width!(self, v => v.get(i).map(|&x| u64::from(x)))
    }

    /// The position of `offset`, if held.
    fn find(&self, offset: u64) -> Option<usize> {
        match self {
            Offsets::W8(v) => u8::try_from(offset)
                .ok()
                .and_then(|x| v.binary_search(&x).ok()),
            Offsets::W16(v) => u16::try_from(offset)
                .ok()
                .and_then(|x| v.binary_search(&x).ok()),
            Offsets::W32(v) => u32::try_from(offset)
                .ok()
                .and_then(|x| v.binary_search(&x).ok()),
            Offsets::W64(v) => v.binary_search(&offset).ok(),
        }
    }

    /// Every offset plus `shift`, at `width` bytes (at least the current width, and enough
    /// for the largest shifted offset).
    fn rebuilt(&self, shift: u64, width: usize) -> Offsets {
        let all = (0..self.len())
            .filter_map(|i| self.get(i))
            .map(|o| o + shift);
        match width {
            1 => Offsets::W8(all.map(|o| o as u8).collect()),
            2 => Offsets::W16(all.map(|o| o as u16).collect()),
            4 => Offsets::W32(all.map(|o| o as u32).collect()),
            _ => Offsets::W64(all.collect()),
        }
    }

    /// Insert an offset known to fit the width.
    fn insert(&mut self, offset: u64) -> bool {
        match self {
            Offsets::W8(v) => insert_sorted(v, offset as u8),
            Offsets::W16(v) => insert_sorted(v, offset as u16),
            Offsets::W32(v) => insert_sorted(v, offset as u32),
            Offsets::W64(v) => insert_sorted(v, offset),
        }
    }
}

impl IntSet {
    pub(super) fn len(&self) -> usize {
        self.offsets.len()
    }

    /// Bytes per element.
    pub(super) fn width(&self) -> usize {
        self.offsets.width()
    }

    /// Heap bytes: the array's buffer.
    pub(super) fn heap_bytes(&self) -> usize {
        each_width!(&self.offsets, v => v.capacity()) * self.width()
    }

    /// The offset of `value` from the base, if it is not below it.
    fn offset_of(&self, value: i64) -> Option<u64> {
        (value >= self.base).then(|| (value as u64).wrapping_sub(self.base as u64))
    }

    fn value_of(&self, offset: u64) -> i64 {
        (self.base as u64).wrapping_add(offset) as i64
    }

    pub(super) fn contains(&self, value: i64) -> bool {
        self.offset_of(value)
            .is_some_and(|o| self.offsets.find(o).is_some())
    }

    /// The element at `index` in ascending order.
    pub(super) fn get(&self, index: usize) -> Option<i64> {
        self.offsets.get(index).map(|o| self.value_of(o))
    }

    /// Every element, ascending.
    pub(super) fn iter(&self) -> impl ExactSizeIterator<Item = i64> + '_ {
        (0..self.len()).map(|i| self.get(i).unwrap_or_default())
    }

    /// Add `value`, moving the base down or widening the offsets first if needed. Returns
    /// whether it was new.
    pub(super) fn insert(&mut self, value: i64) -> bool {
        if self.len() == 0 {
            self.base = value;
            self.offsets = Offsets::W8(Vec::new());
        }
        match self.offset_of(value) {
            Some(offset) => {
                if width_for(offset) > self.width() {
                    if self.contains(value) {
                        return false;
                    }
                    self.offsets = self.offsets.rebuilt(0, width_for(offset));
                }
                self.offsets.insert(offset)
            }
            None => {
                // Below the base: it becomes the new base, every offset shifts up.
                let shift = (self.base as u64).wrapping_sub(value as u64);
                let top = self.offsets.get(self.len() - 1).unwrap_or(0) + shift;
                let width = width_for(top).max(self.width());
                let mut offsets = self.offsets.rebuilt(shift, width);
                offsets.insert(0);
                self.offsets = offsets;
                self.base = value;
                true
            }
        }
    }

    pub(super) fn remove(&mut self, value: i64) -> bool {
        match self.offset_of(value).and_then(|o| self.offsets.find(o)) {
            Some(at) => {
                each_width!(&mut self.offsets, v => remove_index(v, at));
                true
            }
            None => false,
        }
    }

    /// Remove the element at `index` (ascending order) and return it.
    pub(super) fn remove_at(&mut self, index: usize) -> Option<i64> {
        let value = self.get(index)?;
        each_width!(&mut self.offsets, v => remove_index(v, index));
        Some(value)
    }

    /// Remove the elements whose position (ascending) `take` accepts and return them,
    /// ascending.
    #[allow(clippy::useless_conversion)] // u64::from on the 64-bit arm of the macro
    pub(super) fn split_off_where(&mut self, mut take: impl FnMut(usize) -> bool) -> Vec<i64> {
        let base = self.base as u64;
        let mut taken = Vec::new();
        each_width!(&mut self.offsets, v => {
            let mut i = 0;
            v.retain(|&x| {
                let t = take(i);
                i += 1;
                if t {
                    taken.push(base.wrapping_add(u64::from(x)) as i64);
                }
                !t
            });
            v.shrink_to_fit();
        });
        taken
    }
}
