//! The list type: a sequence of byte strings, head first, that knows its own size.
//!
//! Every operation the list commands need is a method here, with Redis's semantics for signed
//! indexes (negative counts from the tail) and for out-of-range bounds, so handlers only parse
//! arguments and shape replies.
//!
//! Two forms, as Redis's quicklist is one listpack node or several: a small list is *packed*,
//! every element in one buffer of length-prefixed bytes (`packed.rs`); a write that takes it
//! past [`Limits::list_max_listpack_size`] (an element count, or a byte budget when negative)
//! turns it into a *chunked* list, a deque of such buffers each within the limits
//! (`chunked.rs`), once, never back. OBJECT ENCODING says "quicklist" for both, as Redis 7.0
//! does for every list.
//!
//! The shard re-accounts an entry's memory before and after every write, so
//! [`List::heap_bytes`] is O(1): the packed form's is its buffer, the chunked form keeps the
//! heap bytes of its chunks as a running count that every mutation adjusts.

mod chunked;
mod packed;

use crate::Limits;
use chunked::Chunked;
use packed::Packed;

/// Where LINSERT puts the new element, relative to its pivot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Place {
    Before,
    After,
}

/// One end of a list: where a push adds, a pop takes, or a scan starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum End {
    Head,
    Tail,
}

/// Redis's cap on a compact node's bytes when the limit is an element count
/// (`SIZE_SAFETY_LIMIT` in quicklist.c).
const COUNT_MODE_BYTES_MAX: usize = 8192;

/// A list value, head first. Equality compares elements, whatever the forms.
#[derive(Clone, Debug, Default)]
pub struct List {
    repr: Repr,
}

#[derive(Clone, Debug)]
enum Repr {
    Packed(Packed),
    Chunked(Box<Chunked>),
}

impl Default for Repr {
    fn default() -> Repr {
        Repr::Packed(Packed::default())
    }
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

/// Whether a packed list of `count` elements in `bytes` bytes fits `limits`.
fn fits(limits: &Limits, count: usize, bytes: usize) -> bool {
    match limits.list_node_bytes() {
        Some(budget) => bytes <= budget,
        None => {
            let max = usize::try_from(limits.list_max_listpack_size).unwrap_or(0);
            count <= max.max(1) && bytes <= COUNT_MODE_BYTES_MAX
        }
    }
}

/// A walk over a list's elements, either way.
#[derive(Clone)]
pub struct Iter<'a>(IterRepr<'a>);

#[derive(Clone)]
enum IterRepr<'a> {
    Packed(packed::Iter<'a>),
    Chunked(chunked::Iter<'a>),
}

impl<'a> Iterator for Iter<'a> {
    type Item = &'a [u8];

    #[inline]
    fn next(&mut self) -> Option<&'a [u8]> {
        match &mut self.0 {
            IterRepr::Packed(i) => i.next(),
            IterRepr::Chunked(i) => i.next(),
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        match &self.0 {
            IterRepr::Packed(i) => i.size_hint(),
            IterRepr::Chunked(i) => i.size_hint(),
        }
    }
}

impl DoubleEndedIterator for Iter<'_> {
    #[inline]
    fn next_back(&mut self) -> Option<Self::Item> {
        match &mut self.0 {
            IterRepr::Packed(i) => i.next_back(),
            IterRepr::Chunked(i) => i.next_back(),
        }
    }
}

impl ExactSizeIterator for Iter<'_> {}

impl List {
    /// An empty list. Stored lists are never empty; this is where a new one starts.
    pub fn new() -> List {
        List::default()
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        match &self.repr {
            Repr::Packed(p) => p.len(),
            Repr::Chunked(c) => c.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Redis 7.0's name for the encoding (OBJECT ENCODING): "quicklist", whatever the form.
    pub fn encoding(&self) -> &'static str {
        "quicklist"
    }

    /// Whether the list is in its compact form (one buffer).
    pub fn is_packed(&self) -> bool {
        matches!(self.repr, Repr::Packed(_))
    }

    /// Heap bytes owned by the list, in O(1), allocations rounded up to 8 bytes: the packed
    /// buffer, or the chunked form's header, its deque's buffer (capacity, not length) and
    /// its chunks' buffers.
    pub fn heap_bytes(&self) -> usize {
        match &self.repr {
            Repr::Packed(p) => p.heap_bytes(),
            Repr::Chunked(c) => c.heap_bytes(),
        }
    }

    /// Where the list's bytes start (the packed buffer, or the chunked form's header), for
    /// a cache prefetch: an address only, never read through.
    pub(crate) fn heap_head(&self) -> *const u8 {
        match &self.repr {
            Repr::Packed(p) => p.heap_head(),
            Repr::Chunked(c) => std::ptr::from_ref::<Chunked>(c).cast(),
        }
    }

    /// The elements, head first.
    pub fn iter(&self) -> Iter<'_> {
        Iter(match &self.repr {
            Repr::Packed(p) => IterRepr::Packed(p.iter()),
            Repr::Chunked(c) => IterRepr::Chunked(c.iter()),
        })
    }

    /// The position of a signed index (negative counts from the tail, -1 is the last), if it
    /// falls inside the list.
    pub fn position(&self, index: i64) -> Option<usize> {
        let len = self.len() as i64;
        let i = if index < 0 {
            index.checked_add(len)?
        } else {
            index
        };
        (0..len).contains(&i).then_some(i as usize)
    }

    /// The element at a signed index (LINDEX), or `None` past either end.
    pub fn get(&self, index: i64) -> Option<&[u8]> {
        let i = self.position(index)?;
        match &self.repr {
            Repr::Packed(p) => p.get(i),
            Repr::Chunked(c) => c.get(i),
        }
    }

    /// The elements from `start` to `stop` inclusive, signed indexes clamped to the list as
    /// LRANGE does: empty when `start` is past the end or after `stop`.
    pub fn range(&self, start: i64, stop: i64) -> Iter<'_> {
        let (from, to) = clamp_range(start, stop, self.len()).map_or((0, 0), |(f, t)| (f, t + 1));
        Iter(match &self.repr {
            Repr::Packed(p) => IterRepr::Packed(p.iter_range(from, to - from)),
            Repr::Chunked(c) => IterRepr::Chunked(c.iter_range(from, to - from)),
        })
    }

    /// The index of the first element equal to `element`, head first.
    pub fn find(&self, element: &[u8]) -> Option<usize> {
        self.iter().position(|e| e == element)
    }

    /// The indexes (counted from the head) of the elements equal to `element`, in the order a
    /// scan that starts at `from` meets them, looking at no more than `maxlen` elements
    /// (0: all of them), as LPOS does.
    pub fn positions<'a>(
        &'a self,
        element: &'a [u8],
        from: End,
        maxlen: usize,
    ) -> impl Iterator<Item = usize> + 'a {
        let len = self.len();
        let limit = if maxlen == 0 { len } else { maxlen.min(len) };
        let (head, tail) = match from {
            End::Head => (Some(self.iter().enumerate().take(limit)), None),
            End::Tail => (None, Some(self.iter().enumerate().rev().take(limit))),
        };
        let scan = head.into_iter().flatten().chain(tail.into_iter().flatten());
        scan.filter(move |(_, e)| *e == element).map(|(i, _)| i)
    }

    /// Turn a packed list into chunks within `limits`, for good.
    fn unpack(&mut self, limits: &Limits) -> &mut Chunked {
        if let Repr::Packed(p) = &self.repr {
            self.repr = Repr::Chunked(Box::new(Chunked::from_packed(p, limits)));
        }
        match &mut self.repr {
            Repr::Chunked(c) => c,
            Repr::Packed(_) => unreachable!("a packed list was just replaced by chunks"),
        }
    }

    /// Whether a packed list can take `n` more elements of `bytes` encoded bytes in all.
    fn packed_room(&self, limits: &Limits, n: usize, bytes: usize) -> bool {
        match &self.repr {
            Repr::Packed(p) => fits(limits, p.len() + n, p.bytes() + bytes),
            Repr::Chunked(_) => false,
        }
    }

    /// Push each element onto `end` in turn (LPUSH `a b c` leaves `c b a` in front), leaving
    /// the packed form if the list passes `limits`. Returns the new length.
    pub fn push<E: AsRef<[u8]>>(&mut self, end: End, elements: &[E], limits: &Limits) -> usize {
        let bytes = elements
            .iter()
            .map(|e| packed::encoded_len(e.as_ref().len()))
            .sum();
        if self.packed_room(limits, elements.len(), bytes) {
            if let Repr::Packed(p) = &mut self.repr {
                match end {
                    End::Tail => elements.iter().for_each(|e| p.push_back(e.as_ref())),
                    End::Head => elements.iter().for_each(|e| p.insert(0, e.as_ref())),
                }
            }
        } else {
            let c = self.unpack(limits);
            elements
                .iter()
                .for_each(|e| c.push(end, e.as_ref(), limits));
        }
        self.len()
    }

    /// [`List::push`] onto the head with Redis's default limits.
    pub fn push_front<E: AsRef<[u8]>>(&mut self, elements: &[E]) -> usize {
        self.push(End::Head, elements, &Limits::default())
    }

    /// [`List::push`] onto the tail with Redis's default limits.
    pub fn push_back<E: AsRef<[u8]>>(&mut self, elements: &[E]) -> usize {
        self.push(End::Tail, elements, &Limits::default())
    }

    /// Remove and return the element at `end`.
    pub fn pop(&mut self, end: End) -> Option<Box<[u8]>> {
        self.pop_with(end, |e| Box::from(e))
    }

    /// Remove the element at `end`, handing its bytes to `f` (which can write a reply from
    /// them without copying them out first); `None` when the list is empty.
    pub fn pop_with<R>(&mut self, end: End, f: impl FnOnce(&[u8]) -> R) -> Option<R> {
        match &mut self.repr {
            Repr::Packed(p) => p.pop_with(end, f),
            Repr::Chunked(c) => c.pop_with(end, f),
        }
    }

    /// Remove and return the head element.
    pub fn pop_front(&mut self) -> Option<Box<[u8]>> {
        self.pop(End::Head)
    }

    /// Remove and return the tail element.
    pub fn pop_back(&mut self) -> Option<Box<[u8]>> {
        self.pop(End::Tail)
    }

    /// Remove up to `count` elements from `end` and return them in the order they left
    /// (LPOP / RPOP with a count). They leave the list at once, whether or not the iterator
    /// is consumed.
    pub fn pop_many(
        &mut self,
        end: End,
        count: usize,
    ) -> impl ExactSizeIterator<Item = Box<[u8]>> + 'static {
        let popped: Vec<Box<[u8]>> = match &mut self.repr {
            Repr::Packed(p) => match end {
                End::Head => p.pop_front_many(count),
                End::Tail => p.pop_back_many(count),
            },
            Repr::Chunked(c) => c.pop_many(end, count),
        };
        popped.into_iter()
    }

    /// [`List::pop_many`] from the head.
    pub fn pop_front_many(&mut self, count: usize) -> impl ExactSizeIterator<Item = Box<[u8]>> {
        self.pop_many(End::Head, count)
    }

    /// [`List::pop_many`] from the tail: tail first.
    pub fn pop_back_many(&mut self, count: usize) -> impl ExactSizeIterator<Item = Box<[u8]>> {
        self.pop_many(End::Tail, count)
    }

    /// Replace the element at a signed index (LSET), leaving the packed form if the list
    /// passes `limits`. Returns the old element, or `None` (and changes nothing) when the
    /// index is past either end.
    pub fn set_in(&mut self, index: i64, element: &[u8], limits: &Limits) -> Option<Box<[u8]>> {
        let i = self.position(index)?;
        if let Repr::Packed(p) = &self.repr {
            let old = p.get(i).map_or(0, |e| packed::encoded_len(e.len()));
            let new = packed::encoded_len(element.len());
            if !fits(limits, p.len(), (p.bytes() + new).saturating_sub(old)) {
                self.unpack(limits);
            }
        }
        match &mut self.repr {
            Repr::Packed(p) => Some(p.set(i, element)),
            Repr::Chunked(c) => Some(c.set(i, element, limits)),
        }
    }

    /// [`List::set_in`] with Redis's default limits.
    pub fn set(&mut self, index: i64, element: &[u8]) -> Option<Box<[u8]>> {
        self.set_in(index, element, &Limits::default())
    }

    /// Insert `element` before or after the element at `pivot` (an index from
    /// [`List::find`]), as LINSERT does, leaving the packed form if the list passes
    /// `limits`. Returns the new length, or `None` (and changes nothing) when `pivot` is not
    /// an index of the list.
    pub fn insert_in(
        &mut self,
        pivot: usize,
        place: Place,
        element: &[u8],
        limits: &Limits,
    ) -> Option<usize> {
        if pivot >= self.len() {
            return None;
        }
        let at = match place {
            Place::Before => pivot,
            Place::After => pivot + 1,
        };
        if self.packed_room(limits, 1, packed::encoded_len(element.len())) {
            if let Repr::Packed(p) = &mut self.repr {
                p.insert(at, element);
            }
        } else {
            self.unpack(limits).insert(at, element, limits);
        }
        Some(self.len())
    }

    /// [`List::insert_in`] with Redis's default limits.
    pub fn insert(&mut self, pivot: usize, place: Place, element: &[u8]) -> Option<usize> {
        self.insert_in(pivot, place, element, &Limits::default())
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
            self.iter()
                .rposition(|e| {
                    seen += usize::from(e == element);
                    seen == limit
                })
                .unwrap_or(0)
        } else {
            0
        };
        let mut removed = 0;
        let mut i = 0;
        let drop = |e: &[u8]| {
            let drop = i >= first && removed < limit && e == element;
            i += 1;
            removed += usize::from(drop);
            drop
        };
        match &mut self.repr {
            Repr::Packed(p) => {
                p.remove_if(drop);
            }
            Repr::Chunked(c) => {
                c.remove_if(drop);
            }
        }
        removed
    }

    /// Keep only the elements from `start` to `stop` inclusive, signed indexes clamped as
    /// LTRIM does; an empty range empties the list.
    pub fn trim(&mut self, start: i64, stop: i64) {
        let range = clamp_range(start, stop, self.len());
        match (&mut self.repr, range) {
            (Repr::Packed(p), Some((from, to))) => p.keep(from, to),
            (Repr::Packed(p), None) => *p = Packed::default(),
            (Repr::Chunked(c), Some((from, to))) => c.keep(from, to),
            (Repr::Chunked(c), None) => **c = Chunked::default(),
        }
    }
}

impl PartialEq for List {
    fn eq(&self, other: &List) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter())
    }
}

impl Eq for List {}

/// A list of these elements, head first, under Redis's default limits.
impl FromIterator<Box<[u8]>> for List {
    fn from_iter<I: IntoIterator<Item = Box<[u8]>>>(iter: I) -> List {
        let mut l = List::new();
        for e in iter {
            l.push_back(&[e]);
        }
        l
    }
}

#[cfg(test)]
mod tests;
