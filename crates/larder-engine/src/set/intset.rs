//! The "intset" encoding: a sorted array of distinct integers stored at the narrowest width
//! (16, 32 or 64 bits) that holds every one of them, as Redis's `intset.c` does.

/// Sorted, distinct integers at one width. A wider value upgrades the whole array; nothing
/// ever narrows it again (as in Redis).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum IntSet {
    W16(Vec<i16>),
    W32(Vec<i32>),
    W64(Vec<i64>),
}

impl Default for IntSet {
    fn default() -> IntSet {
        IntSet::W16(Vec::new())
    }
}

/// Applies `$body` to the array whatever its width, with `$v` bound to the vector.
macro_rules! each_width {
    ($set:expr, $v:ident => $body:expr) => {
        match $set {
            IntSet::W16($v) => $body,
            IntSet::W32($v) => $body,
            IntSet::W64($v) => $body,
        }
    };
}

/// Insert `value` (already known to fit the element type) at its sorted place, growing the
/// buffer by exactly one element: a compact set holds no spare room, like Redis's realloc.
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

fn remove_sorted<T: Ord + Copy>(v: &mut Vec<T>, value: T) -> bool {
    match v.binary_search(&value) {
        Ok(at) => {
            v.remove(at);
            if v.capacity() > v.len() + v.len() / 4 + 4 {
                v.shrink_to_fit();
            }
            true
        }
        Err(_) => false,
    }
}

impl IntSet {
    pub(super) fn len(&self) -> usize {
        each_width!(self, v => v.len())
    }

    /// Bytes per element.
    pub(super) fn width(&self) -> usize {
        match self {
            IntSet::W16(_) => 2,
            IntSet::W32(_) => 4,
            IntSet::W64(_) => 8,
        }
    }

    /// Heap bytes: the array's buffer.
    pub(super) fn heap_bytes(&self) -> usize {
        each_width!(self, v => v.capacity()) * self.width()
    }

    pub(super) fn contains(&self, value: i64) -> bool {
        match self {
            IntSet::W16(v) => i16::try_from(value).is_ok_and(|x| v.binary_search(&x).is_ok()),
            IntSet::W32(v) => i32::try_from(value).is_ok_and(|x| v.binary_search(&x).is_ok()),
            IntSet::W64(v) => v.binary_search(&value).is_ok(),
        }
    }

    /// The element at `index` in ascending order.
    #[allow(clippy::useless_conversion)] // i64::from on the 64-bit arm of the macro
    pub(super) fn get(&self, index: usize) -> Option<i64> {
        each_width!(self, v => v.get(index).map(|&x| i64::from(x)))
    }

    /// Every element, ascending.
    pub(super) fn iter(&self) -> impl ExactSizeIterator<Item = i64> + '_ {
        let (a, b, c) = match self {
            IntSet::W16(v) => (&v[..], &[][..], &[][..]),
            IntSet::W32(v) => (&[][..], &v[..], &[][..]),
            IntSet::W64(v) => (&[][..], &[][..], &v[..]),
        };
        Iter { a, b, c }
    }

    /// Add `value`, upgrading the width first if it does not fit. Returns whether it was new.
    pub(super) fn insert(&mut self, value: i64) -> bool {
        if i16::try_from(value).is_err() && matches!(self, IntSet::W16(_)) {
            let IntSet::W16(v) = self else { return false };
            *self = IntSet::W32(v.iter().map(|&x| i32::from(x)).collect());
        }
        if i32::try_from(value).is_err() && matches!(self, IntSet::W32(_)) {
            let IntSet::W32(v) = self else { return false };
            *self = IntSet::W64(v.iter().map(|&x| i64::from(x)).collect());
        }
        match self {
            IntSet::W16(v) => i16::try_from(value).is_ok_and(|x| insert_sorted(v, x)),
            IntSet::W32(v) => i32::try_from(value).is_ok_and(|x| insert_sorted(v, x)),
            IntSet::W64(v) => insert_sorted(v, value),
        }
    }

    pub(super) fn remove(&mut self, value: i64) -> bool {
        match self {
            IntSet::W16(v) => i16::try_from(value).is_ok_and(|x| remove_sorted(v, x)),
            IntSet::W32(v) => i32::try_from(value).is_ok_and(|x| remove_sorted(v, x)),
            IntSet::W64(v) => remove_sorted(v, value),
        }
    }

    /// Remove the element at `index` (ascending order) and return it.
    pub(super) fn remove_at(&mut self, index: usize) -> Option<i64> {
        let value = self.get(index)?;
        self.remove(value);
        Some(value)
    }

    /// Remove the elements whose position (ascending) `take` accepts and return them,
    /// ascending.
    #[allow(clippy::useless_conversion)] // i64::from on the 64-bit arm of the macro
    pub(super) fn split_off_where(&mut self, mut take: impl FnMut(usize) -> bool) -> Vec<i64> {
        let mut taken = Vec::new();
        each_width!(self, v => {
            let mut i = 0;
            v.retain(|&x| {
                let t = take(i);
                i += 1;
                if t {
                    taken.push(i64::from(x));
                }
                !t
            });
            v.shrink_to_fit();
        });
        taken
    }
}

/// Iterator over the elements of whichever width is in use (two of the slices are empty).
struct Iter<'a> {
    a: &'a [i16],
    b: &'a [i32],
    c: &'a [i64],
}

impl Iterator for Iter<'_> {
    type Item = i64;

    fn next(&mut self) -> Option<i64> {
        if let Some((&x, rest)) = self.a.split_first() {
            self.a = rest;
            return Some(i64::from(x));
        }
        if let Some((&x, rest)) = self.b.split_first() {
            self.b = rest;
            return Some(i64::from(x));
        }
        let (&x, rest) = self.c.split_first()?;
        self.c = rest;
        Some(x)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.a.len() + self.b.len() + self.c.len();
        (n, Some(n))
    }
}

impl ExactSizeIterator for Iter<'_> {}
