//! The list type: a double-ended queue of byte strings, head first, that knows its own size.
//!
//! Every operation the list commands need is a method here, with Redis's semantics for signed
//! indexes (negative counts from the tail) and for out-of-range bounds, so handlers only parse
//! arguments and shape replies. The shard re-accounts an entry's memory before and after every
//! write, so [`List::heap_bytes`] must be O(1): the list keeps the heap bytes of its elements
//! as a running count that every mutation adjusts, instead of walking them.

use std::collections::VecDeque;

/// Where LINSERT puts the new element, relative to its pivot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Place {
    Before,
    After,
}

/// A list value, head first.
///
/// Invariant: `element_bytes` is the sum of [`element_cost`] over `items`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct List {
    items: VecDeque<Box<[u8]>>,
    element_bytes: usize,
}

/// Heap bytes of one element: one allocation of its length, rounded up to the allocator's
/// 8-byte granule (an empty element allocates nothing).
fn element_cost(e: &[u8]) -> usize {
    e.len().next_multiple_of(8)
}

/// Redis's index normalisation for LRANGE and LTRIM: the inclusive range `start..=stop` of a
/// list of `len` elements, or `None` when it is empty.
fn clamp_range(start: i64, stop: i64, len: usize) -> Option<(usize, usize)> {
    let len = len as i64;
    let start = if start < 0 { start + len } else { start }.max(0);
    let stop = if stop < 0 { stop + len } else { stop };
    if start > stop || start >= len {
        return None;
    }
    Some((start as usize, stop.min(len - 1) as usize))
}

impl List {
    /// An empty list. Stored lists are never empty; this is where a new one starts.
    pub fn new() -> List {
        List::default()
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// Heap bytes owned by the list, in O(1): the deque's buffer (its capacity, not its
    /// length) plus each element's allocation rounded up to 8 bytes.
    pub fn heap_bytes(&self) -> usize {
        self.items.capacity() * std::mem::size_of::<Box<[u8]>>() + self.element_bytes
    }

    /// The elements, head first.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &[u8]> + ExactSizeIterator + '_ {
        self.items.iter().map(|e| &**e)
    }

    /// The position of a signed index (negative counts from the tail, -1 is the last), if it
    /// falls inside the list.
    pub fn position(&self, index: i64) -> Option<usize> {
        let len = self.items.len() as i64;
        let i = if index < 0 {
            index.checked_add(len)?
        } else {
            index
        };
        (0..len).contains(&i).then_some(i as usize)
    }

    /// The element at a signed index (LINDEX), or `None` past either end.
    pub fn get(&self, index: i64) -> Option<&[u8]> {
        self.position(index)
            .and_then(|i| self.items.get(i))
            .map(|e| &**e)
    }

    /// The elements from `start` to `stop` inclusive, signed indexes clamped to the list as
    /// LRANGE does: empty when `start` is past the end or after `stop`.
    pub fn range(&self, start: i64, stop: i64) -> impl ExactSizeIterator<Item = &[u8]> + '_ {
        let (from, to) =
            clamp_range(start, stop, self.items.len()).map_or((0, 0), |(f, t)| (f, t + 1));
        self.items.range(from..to).map(|e| &**e)
    }

    /// The index of the first element equal to `element`, head first.
    pub fn find(&self, element: &[u8]) -> Option<usize> {
        self.items.iter().position(|e| **e == *element)
    }

    /// Push each element onto the head in turn (LPUSH: `a b c` leaves `c b a` in front).
    /// Returns the new length.
    pub fn push_front<E: AsRef<[u8]>>(&mut self, elements: &[E]) -> usize {
        self.items.reserve(elements.len());
        for e in elements {
            let e = e.as_ref();
            self.element_bytes += element_cost(e);
            self.items.push_front(Box::from(e));
        }
        self.items.len()
    }

    /// Push each element onto the tail in turn (RPUSH). Returns the new length.
    pub fn push_back<E: AsRef<[u8]>>(&mut self, elements: &[E]) -> usize {
        self.items.reserve(elements.len());
        for e in elements {
            let e = e.as_ref();
            self.element_bytes += element_cost(e);
            self.items.push_back(Box::from(e));
        }
        self.items.len()
    }

    /// Remove and return the head element.
    pub fn pop_front(&mut self) -> Option<Box<[u8]>> {
        let e = self.items.pop_front()?;
        self.element_bytes -= element_cost(&e);
        Some(e)
    }

    /// Remove and return the tail element.
    pub fn pop_back(&mut self) -> Option<Box<[u8]>> {
        let e = self.items.pop_back()?;
        self.element_bytes -= element_cost(&e);
        Some(e)
    }

    /// Remove up to `count` elements from the head and return them head first (LPOP with a
    /// count). They leave the list at once, whether or not the iterator is consumed.
    pub fn pop_front_many(
        &mut self,
        count: usize,
    ) -> impl ExactSizeIterator<Item = Box<[u8]>> + '_ {
        let n = count.min(self.items.len());
        self.element_bytes -= self
            .items
            .range(..n)
            .map(|e| element_cost(e))
            .sum::<usize>();
        self.items.drain(..n)
    }

    /// Remove up to `count` elements from the tail and return them tail first (RPOP with a
    /// count). They leave the list at once, whether or not the iterator is consumed.
    pub fn pop_back_many(&mut self, count: usize) -> impl ExactSizeIterator<Item = Box<[u8]>> + '_ {
        let from = self.items.len() - count.min(self.items.len());
        self.element_bytes -= self
            .items
            .range(from..)
            .map(|e| element_cost(e))
            .sum::<usize>();
        self.items.drain(from..).rev()
    }

    /// Replace the element at a signed index (LSET). Returns the old element, or `None` (and
    /// changes nothing) when the index is past either end.
    pub fn set(&mut self, index: i64, element: &[u8]) -> Option<Box<[u8]>> {
        let slot = self.position(index).and_then(|i| self.items.get_mut(i))?;
        let old = std::mem::replace(slot, Box::from(element));
        self.element_bytes = self.element_bytes - element_cost(&old) + element_cost(element);
        Some(old)
    }

    /// Insert `element` before or after the element at `pivot` (an index from
    /// [`List::find`]), as LINSERT does. Returns the new length, or `None` (and changes
    /// nothing) when `pivot` is not an index of the list.
    pub fn insert(&mut self, pivot: usize, place: Place, element: &[u8]) -> Option<usize> {
        if pivot >= self.items.len() {
            return None;
        }
        let at = match place {
            Place::Before => pivot,
            Place::After => pivot + 1,
        };
        self.element_bytes += element_cost(element);
        self.items.insert(at, Box::from(element));
        Some(self.items.len())
    }

    /// Remove elements equal to `element` as LREM does: the first `count` from the head when
    /// `count > 0`, the last `|count|` from the tail when `count < 0`, all of them when
    /// `count == 0`. Returns how many were removed. O(n) whatever the count.
    pub fn remove_matching(&mut self, count: i64, element: &[u8]) -> usize {
        let limit = match count.unsigned_abs() {
            0 => usize::MAX,
            n => usize::try_from(n).unwrap_or(usize::MAX),
        };
        // Matches before `first` stay: from the tail, that is the `limit`-th match found
        // walking back; from the head, nothing is skipped and the limit stops the removal.
        let first = if count < 0 {
            let mut seen = 0;
            self.items
                .iter()
                .rposition(|e| {
                    seen += usize::from(**e == *element);
                    seen == limit
                })
                .unwrap_or(0)
        } else {
            0
        };
        let mut removed = 0;
        let mut removed_bytes = 0;
        let mut i = 0;
        self.items.retain(|e| {
            let drop = i >= first && removed < limit && **e == *element;
            i += 1;
            if drop {
                removed += 1;
                removed_bytes += element_cost(e);
            }
            !drop
        });
        self.element_bytes -= removed_bytes;
        removed
    }

    /// Keep only the elements from `start` to `stop` inclusive, signed indexes clamped as
    /// LTRIM does; an empty range empties the list.
    pub fn trim(&mut self, start: i64, stop: i64) {
        match clamp_range(start, stop, self.items.len()) {
            Some((from, to)) => {
                let cut = self.items.range(..from).chain(self.items.range(to + 1..));
                self.element_bytes -= cut.map(|e| element_cost(e)).sum::<usize>();
                self.items.truncate(to + 1);
                self.items.drain(..from);
            }
            None => {
                self.items.clear();
                self.element_bytes = 0;
            }
        }
    }
}

impl FromIterator<Box<[u8]>> for List {
    fn from_iter<I: IntoIterator<Item = Box<[u8]>>>(iter: I) -> List {
        let items: VecDeque<Box<[u8]>> = iter.into_iter().collect();
        let element_bytes = items.iter().map(|e| element_cost(e)).sum();
        List {
            items,
            element_bytes,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(items: &[&str]) -> List {
        items.iter().map(|s| Box::from(s.as_bytes())).collect()
    }

    fn strings(it: impl Iterator<Item = impl AsRef<[u8]>>) -> Vec<String> {
        it.map(|e| String::from_utf8_lossy(e.as_ref()).into_owned())
            .collect()
    }

    /// What `heap_bytes` must equal: the walk over every element that `Object::heap_bytes`
    /// did before lists counted their own bytes.
    fn walked_bytes(l: &List) -> usize {
        l.items.capacity() * std::mem::size_of::<Box<[u8]>>()
            + l.items
                .iter()
                .map(|e| e.len().next_multiple_of(8))
                .sum::<usize>()
    }

    #[test]
    fn pushes_and_pops_keep_redis_order() {
        let mut l = List::new();
        assert_eq!(l.push_back(&[b"a", b"b"]), 2);
        assert_eq!(l.push_front(&[b"x", b"y"]), 4);
        assert_eq!(strings(l.iter()), ["y", "x", "a", "b"]);
        assert_eq!(l.pop_front().as_deref(), Some(&b"y"[..]));
        assert_eq!(l.pop_back().as_deref(), Some(&b"b"[..]));
        assert_eq!(strings(l.pop_back_many(5)), ["a", "x"]);
        assert!(l.is_empty());
        assert_eq!(l.pop_front(), None);
        assert_eq!(l.pop_front_many(3).len(), 0);
        let mut l = list(&["a", "b", "c"]);
        assert_eq!(strings(l.pop_front_many(2)), ["a", "b"]);
        assert_eq!(strings(l.iter()), ["c"]);
    }

    #[test]
    fn signed_indexes() {
        let mut l = list(&["a", "b", "c"]);
        assert_eq!(l.get(0), Some(&b"a"[..]));
        assert_eq!(l.get(-1), Some(&b"c"[..]));
        assert_eq!(l.get(3), None);
        assert_eq!(l.get(-4), None);
        assert_eq!(l.get(i64::MIN), None);
        assert_eq!(l.get(i64::MAX), None);
        assert_eq!(l.set(-2, b"B").as_deref(), Some(&b"b"[..]));
        assert_eq!(l.set(3, b"x"), None);
        assert_eq!(strings(l.iter()), ["a", "B", "c"]);
    }

    #[test]
    fn ranges_clamp_like_lrange() {
        let l = list(&["0", "1", "2", "3", "4"]);
        let r = |start, stop| strings(l.range(start, stop));
        assert_eq!(r(1, 2), ["1", "2"]);
        assert_eq!(r(-2, -1), ["3", "4"]);
        assert_eq!(r(-100, 1), ["0", "1"]);
        assert_eq!(r(3, 100), ["3", "4"]);
        assert!(r(3, 1).is_empty());
        assert!(r(5, 10).is_empty());
        assert!(r(0, -6).is_empty());
        assert_eq!(r(i64::MIN, i64::MAX).len(), 5);
        let mut t = l.clone();
        t.trim(1, -2);
        assert_eq!(strings(t.iter()), ["1", "2", "3"]);
        t.trim(2, 1);
        assert!(t.is_empty());
    }

    #[test]
    fn remove_matching_by_direction() {
        let fill = || list(&["a", "x", "b", "x", "c", "x"]);
        let mut l = fill();
        assert_eq!(l.remove_matching(2, b"x"), 2);
        assert_eq!(strings(l.iter()), ["a", "b", "c", "x"]);
        let mut l = fill();
        assert_eq!(l.remove_matching(-2, b"x"), 2);
        assert_eq!(strings(l.iter()), ["a", "x", "b", "c"]);
        let mut l = fill();
        assert_eq!(l.remove_matching(0, b"x"), 3);
        assert_eq!(strings(l.iter()), ["a", "b", "c"]);
        assert_eq!(l.remove_matching(0, b"zz"), 0);
        let mut l = fill();
        assert_eq!(l.remove_matching(-9, b"x"), 3);
        assert_eq!(l.remove_matching(i64::MIN, b"a"), 1);
        assert_eq!(strings(l.iter()), ["b", "c"]);
    }

    #[test]
    fn insert_around_a_pivot() {
        let mut l = list(&["a", "c"]);
        let c = l.find(b"c");
        assert_eq!(c, Some(1));
        assert_eq!(l.insert(1, Place::Before, b"b"), Some(3));
        assert_eq!(l.insert(2, Place::After, b"d"), Some(4));
        assert_eq!(l.insert(4, Place::After, b"e"), None);
        assert_eq!(l.find(b"zz"), None);
        assert_eq!(strings(l.iter()), ["a", "b", "c", "d"]);
    }

    /// splitmix64: a fixed seed makes every run (and every failure) reproducible.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        }

        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }

        /// A signed index around the list's bounds, sometimes far outside them.
        fn index(&mut self, len: usize) -> i64 {
            match self.below(8) {
                0 => [i64::MIN, i64::MAX, i64::MIN + 1][self.below(3) as usize],
                _ => self.below(2 * len as u64 + 6) as i64 - len as i64 - 3,
            }
        }

        /// An element drawn from a small alphabet of lengths 0..=40, so that equal elements
        /// (for LREM and LINSERT) are common and rounding to 8 bytes matters.
        fn element(&mut self) -> Vec<u8> {
            let len = [0, 1, 7, 8, 9, 16, 40][self.below(7) as usize];
            vec![b'a' + self.below(3) as u8; len]
        }
    }

    /// Apply random operations and compare the O(1) count with a walk after every step, and
    /// the contents with a plain `VecDeque` model of the same operations.
    #[test]
    fn heap_bytes_matches_a_walk_after_random_operations() {
        for seed in 0..64 {
            let mut rng = Rng(seed);
            let mut l = List::new();
            let mut model: VecDeque<Vec<u8>> = VecDeque::new();
            for step in 0..400 {
                let op = rng.below(12);
                match op {
                    0 | 1 => {
                        let elements: Vec<Vec<u8>> =
                            (0..rng.below(5) + 1).map(|_| rng.element()).collect();
                        if op == 0 {
                            l.push_front(&elements);
                            elements.iter().for_each(|e| model.push_front(e.clone()));
                        } else {
                            l.push_back(&elements);
                            elements.iter().for_each(|e| model.push_back(e.clone()));
                        }
                    }
                    2 => assert_eq!(l.pop_front().map(Vec::from), model.pop_front()),
                    3 => assert_eq!(l.pop_back().map(Vec::from), model.pop_back()),
                    4 => {
                        let n = rng.below(4) as usize;
                        let got: Vec<Vec<u8>> = l.pop_front_many(n).map(Vec::from).collect();
                        let want: Vec<Vec<u8>> = (0..n).filter_map(|_| model.pop_front()).collect();
                        assert_eq!(got, want);
                    }
                    5 => {
                        let n = rng.below(4) as usize;
                        // Dropping the iterator unconsumed still removes the elements.
                        drop(l.pop_back_many(n));
                        (0..n).for_each(|_| drop(model.pop_back()));
                    }
                    6 => {
                        let (index, e) = (rng.index(l.len()), rng.element());
                        let old = l.set(index, &e);
                        let pos = l.position(index);
                        assert_eq!(old.is_some(), pos.is_some());
                        if let Some(p) = pos {
                            model[p] = e;
                        }
                    }
                    7 => {
                        let (count, e) = (rng.below(7) as i64 - 3, rng.element());
                        let removed = l.remove_matching(count, &e);
                        let limit = match count {
                            0 => usize::MAX,
                            n => n.unsigned_abs() as usize,
                        };
                        let mut hits: Vec<usize> =
                            (0..model.len()).filter(|&i| model[i] == e).collect();
                        if count < 0 {
                            hits.reverse();
                        }
                        hits.truncate(limit);
                        hits.sort_unstable();
                        hits.iter().rev().for_each(|&i| drop(model.remove(i)));
                        assert_eq!(removed, hits.len());
                    }
                    8 => {
                        let (start, stop) = (rng.index(l.len()), rng.index(l.len()));
                        l.trim(start, stop);
                        // Redis's definition: keep index i when start <= i <= stop, after
                        // adding the length to a negative bound.
                        let len = model.len() as i128;
                        let bound = |x: i64| {
                            if x < 0 {
                                i128::from(x) + len
                            } else {
                                i128::from(x)
                            }
                        };
                        let keep = bound(start)..=bound(stop);
                        model = (model.into_iter().enumerate())
                            .filter(|(i, _)| keep.contains(&(*i as i128)))
                            .map(|(_, e)| e)
                            .collect();
                    }
                    9 => {
                        let (pivot, e) = (rng.element(), rng.element());
                        let place = if rng.below(2) == 0 {
                            Place::Before
                        } else {
                            Place::After
                        };
                        match l.find(&pivot) {
                            Some(i) => {
                                assert_eq!(l.insert(i, place, &e), Some(model.len() + 1));
                                model.insert(if place == Place::After { i + 1 } else { i }, e);
                            }
                            None => assert!(!model.contains(&pivot)),
                        }
                    }
                    10 => {
                        let index = rng.index(l.len());
                        let want = l.position(index).map(|p| model[p].as_slice());
                        assert_eq!(l.get(index), want);
                    }
                    _ => {
                        // A copy (COPY, RENAME across shards) counts the same way.
                        let copy = l.clone();
                        assert_eq!(copy.heap_bytes(), walked_bytes(&copy));
                        assert_eq!(copy, l);
                    }
                }
                assert_eq!(
                    l.heap_bytes(),
                    walked_bytes(&l),
                    "seed {seed} step {step} op {op}"
                );
                assert!(
                    l.iter().eq(model.iter().map(Vec::as_slice)),
                    "seed {seed} step {step}"
                );
            }
        }
    }
}
