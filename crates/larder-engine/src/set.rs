//! The set type: unique members, an "intset" while every member is an integer and the set is
//! small, a hash table past [`crate::Limits`]'s thresholds.
//!
//! Every operation the set commands need is a method here (membership, random members,
//! SSCAN steps, intersection, union and difference), with Redis 7.0's encoding rules: a set
//! starts as an intset, and becomes a hash table, for good, when a member is not an integer
//! in canonical decimal form or the set grows past `set_max_intset_entries`. The shard
//! re-accounts an entry's memory before and after every write, so [`Set::heap_bytes`] is O(1).
//!
//! Randomness comes from the caller (a `FnMut() -> u64`), so the engine stays deterministic
//! under test.

mod intset;
mod table;
#[cfg(test)]
mod tests;

use intset::IntSet;
use table::Table;

use crate::decimal::format_i64;
use crate::Limits;

/// A set value. Never empty while stored: commands delete a set that empties.
#[derive(Clone, Debug, Default)]
pub struct Set {
    repr: Repr,
}

#[derive(Clone, Debug)]
enum Repr {
    Ints(IntSet),
    /// Boxed: it is larger than an entry's object slot allows, and a set this size has
    /// room for one more allocation.
    Table(Box<Table>),
}

impl Default for Repr {
    fn default() -> Repr {
        Repr::Ints(IntSet::default())
    }
}

/// One member as a set holds it: an intset's integer, or a hash table's bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Member<'a> {
    Int(i64),
    Bytes(&'a [u8]),
}

impl Member<'_> {
    /// Call `f` with the member's bytes (an integer in decimal).
    pub fn with_bytes<R>(self, f: impl FnOnce(&[u8]) -> R) -> R {
        match self {
            Member::Int(v) => {
                let mut buf = [0u8; 20];
                f(format_i64(v, &mut buf))
            }
            Member::Bytes(b) => f(b),
        }
    }

    /// The member's bytes, owned.
    pub fn to_vec(self) -> Vec<u8> {
        self.with_bytes(<[u8]>::to_vec)
    }
}

/// The integer `b` spells in canonical decimal form, by Redis's `string2ll` rules: an
/// optional '-', no '+', no leading zero, no spaces, "-0" excluded, within i64. Only such
/// members can live in an intset, so that a member reads back byte for byte.
pub fn canonical_int(b: &[u8]) -> Option<i64> {
    if b.is_empty() || b.len() > 20 {
        return None;
    }
    if b == b"0" {
        return Some(0);
    }
    let (neg, digits) = match b[0] {
        b'-' => (true, &b[1..]),
        _ => (false, b),
    };
    if digits.is_empty() || digits[0] == b'0' {
        return None;
    }
    let mut v: u64 = 0;
    for &c in digits {
        if !c.is_ascii_digit() {
            return None;
        }
        v = v.checked_mul(10)?.checked_add(u64::from(c - b'0'))?;
    }
    if neg {
        if v > i64::MAX as u64 + 1 {
            return None;
        }
        Some((v as i64).wrapping_neg())
    } else {
        i64::try_from(v).ok()
    }
}

/// A uniform number below `n` (`n > 0`) from a 64-bit random word.
#[inline]
fn below(r: u64, n: usize) -> usize {
    ((u128::from(r) * n as u128) >> 64) as usize
}

/// Members in the set's own order: ascending for an intset, dense order for a hash table.
pub enum Iter<'a> {
    Ints(Box<dyn ExactSizeIterator<Item = i64> + 'a>),
    Table(Box<dyn ExactSizeIterator<Item = &'a [u8]> + 'a>),
}

impl<'a> Iterator for Iter<'a> {
    type Item = Member<'a>;

    fn next(&mut self) -> Option<Member<'a>> {
        match self {
            Iter::Ints(i) => i.next().map(Member::Int),
            Iter::Table(i) => i.next().map(Member::Bytes),
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        match self {
            Iter::Ints(i) => i.size_hint(),
            Iter::Table(i) => i.size_hint(),
        }
    }
}

impl ExactSizeIterator for Iter<'_> {}

impl Set {
    pub fn new() -> Set {
        Set::default()
    }

    /// A set of `members`, encoded as adding them one by one under `limits` would.
    pub fn from_members<M: AsRef<[u8]>>(members: &[M], limits: &Limits) -> Set {
        let mut s = Set::new();
        for m in members {
            s.insert(m.as_ref(), limits);
        }
        s
    }

    /// Number of members.
    pub fn len(&self) -> usize {
        match &self.repr {
            Repr::Ints(i) => i.len(),
            Repr::Table(t) => t.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Where the set's bytes start (the intset's buffer, or the table's header), for a cache
    /// prefetch: an address only, never read through.
    pub(crate) fn heap_head(&self) -> *const u8 {
        match &self.repr {
            Repr::Ints(i) => i.heap_head(),
            Repr::Table(t) => std::ptr::from_ref::<Table>(t).cast(),
        }
    }

    /// Heap bytes owned by the set, in O(1).
    pub fn heap_bytes(&self) -> usize {
        match &self.repr {
            Repr::Ints(i) => i.heap_bytes(),
            Repr::Table(t) => std::mem::size_of::<Table>() + t.heap_bytes(),
        }
    }

    /// Redis's name for the current encoding: "intset" or "hashtable".
    pub fn encoding(&self) -> &'static str {
        match &self.repr {
            Repr::Ints(_) => "intset",
            Repr::Table(_) => "hashtable",
        }
    }

    /// A copy of every member, in the set's own order (integers in decimal).
    pub fn to_vecs(&self) -> Vec<Vec<u8>> {
        self.iter().map(Member::to_vec).collect()
    }

    /// Every member, in the set's own order.
    pub fn iter(&self) -> Iter<'_> {
        match &self.repr {
            Repr::Ints(i) => Iter::Ints(Box::new(i.iter())),
            Repr::Table(t) => Iter::Table(Box::new(t.iter())),
        }
    }

    /// The member at position `i` of [`Set::iter`]'s order.
    pub fn get(&self, i: usize) -> Option<Member<'_>> {
        match &self.repr {
            Repr::Ints(s) => s.get(i).map(Member::Int),
            Repr::Table(t) => t.get(i).map(Member::Bytes),
        }
    }

    /// SISMEMBER.
    pub fn contains(&self, member: &[u8]) -> bool {
        match &self.repr {
            Repr::Ints(i) => canonical_int(member).is_some_and(|v| i.contains(v)),
            Repr::Table(t) => t.contains(member),
        }
    }

    /// [`Set::contains`] for a member of another set.
    pub fn contains_member(&self, member: Member<'_>) -> bool {
        match (&self.repr, member) {
            (Repr::Ints(i), Member::Int(v)) => i.contains(v),
            (_, m) => m.with_bytes(|b| self.contains(b)),
        }
    }

    /// Add `member`, converting to a hash table first when it is not an integer or the set
    /// outgrows `limits.set_max_intset_entries`. Returns whether it was new.
    pub fn insert(&mut self, member: &[u8], limits: &Limits) -> bool {
        match canonical_int(member) {
            Some(v) => self.insert_member(Member::Int(v), limits),
            None => self.insert_member(Member::Bytes(member), limits),
        }
    }

    /// [`Set::insert`] for a member of another set (an integer stays an integer).
    pub fn insert_member(&mut self, member: Member<'_>, limits: &Limits) -> bool {
        let added = match (&mut self.repr, member) {
            (Repr::Ints(i), Member::Int(v)) => i.insert(v),
            (Repr::Ints(_), Member::Bytes(b)) => match canonical_int(b) {
                Some(v) => return self.insert_member(Member::Int(v), limits),
                None => {
                    self.convert(1);
                    return self.insert_member(member, limits);
                }
            },
            (Repr::Table(t), m) => m.with_bytes(|b| t.insert(b)),
        };
        if added && matches!(self.repr, Repr::Ints(_)) && self.len() > limits.set_max_intset_entries
        {
            self.convert(0);
        }
        added
    }

    /// Turn an intset into a hash table with room for `extra` more members.
    fn convert(&mut self, extra: usize) {
        if let Repr::Ints(i) = &self.repr {
            let mut t = Table::with_capacity(i.len() + extra);
            for v in i.iter() {
                Member::Int(v).with_bytes(|b| t.insert(b));
            }
            self.repr = Repr::Table(Box::new(t));
        }
    }

    /// Remove `member`; returns whether it was there.
    pub fn remove(&mut self, member: &[u8]) -> bool {
        match &mut self.repr {
            Repr::Ints(i) => canonical_int(member).is_some_and(|v| i.remove(v)),
            Repr::Table(t) => t.remove(member),
        }
    }

    /// Remove the member at position `i` of [`Set::iter`]'s order and return it.
    fn remove_at(&mut self, i: usize) -> Option<Vec<u8>> {
        match &mut self.repr {
            Repr::Ints(s) => s.remove_at(i).map(|v| Member::Int(v).to_vec()),
            Repr::Table(t) => t.remove_at(i).map(Vec::from),
        }
    }

    /// A uniformly chosen member (SRANDMEMBER), or `None` when the set is empty.
    pub fn random(&self, rng: &mut impl FnMut() -> u64) -> Option<Member<'_>> {
        match self.len() {
            0 => None,
            n => self.get(below(rng(), n)),
        }
    }

    /// Positions of `count` distinct members chosen uniformly (`count < len`), in random
    /// order: SRANDMEMBER with a positive count. Like Redis, a count near the set's size
    /// shuffles a list of every position; a small one draws until it has enough.
    pub fn sample_distinct(&self, count: usize, rng: &mut impl FnMut() -> u64) -> Vec<usize> {
        let len = self.len();
        let count = count.min(len);
        if count.saturating_mul(3) > len {
            let mut all: Vec<usize> = (0..len).collect();
            for i in 0..count {
                let j = i + below(rng(), len - i);
                all.swap(i, j);
            }
            all.truncate(count);
            return all;
        }
        let mut seen = hashbrown::HashSet::with_capacity(count);
        let mut out = Vec::with_capacity(count);
        while out.len() < count {
            let i = below(rng(), len);
            if seen.insert(i) {
                out.push(i);
            }
        }
        out
    }

    /// Remove and return a uniformly chosen member (SPOP).
    pub fn pop_random(&mut self, rng: &mut impl FnMut() -> u64) -> Option<Vec<u8>> {
        match self.len() {
            0 => None,
            n => self.remove_at(below(rng(), n)),
        }
    }

    /// Remove and return `count` uniformly chosen members (SPOP with a count), or every
    /// member when `count` is at least the set's size.
    pub fn pop_many(&mut self, count: usize, rng: &mut impl FnMut() -> u64) -> Vec<Vec<u8>> {
        let len = self.len();
        if count >= len {
            let all = self.to_vecs();
            *self = Set::new();
            return all;
        }
        match &mut self.repr {
            Repr::Ints(s) => {
                // One pass over the array rather than `count` removals from its middle.
                let mut chosen = vec![false; len];
                let mut all: Vec<usize> = (0..len).collect();
                for i in 0..count {
                    let j = i + below(rng(), len - i);
                    all.swap(i, j);
                    chosen[all[i]] = true;
                }
                s.split_off_where(|i| chosen[i])
                    .into_iter()
                    .map(|v| Member::Int(v).to_vec())
                    .collect()
            }
            Repr::Table(t) => (0..count)
                .filter_map(|_| {
                    let n = t.len();
                    t.remove_at(below(rng(), n)).map(Vec::from)
                })
                .collect(),
        }
    }

    /// One SSCAN step from `cursor` (0 starts), visiting about `count` members; returns the
    /// cursor to continue from, 0 when the scan is done. An intset is returned whole in one
    /// step, as Redis does for its compact encodings; a hash table's cursor is resumable and
    /// returns every member present for the whole scan at least once.
    pub fn scan(&self, cursor: u64, count: usize, mut visit: impl FnMut(Member<'_>)) -> u64 {
        match &self.repr {
            Repr::Ints(i) => {
                i.iter().for_each(|v| visit(Member::Int(v)));
                0
            }
            Repr::Table(t) => t.scan(cursor, count, |b| visit(Member::Bytes(b))),
        }
    }

    /// The members every one of `sets` holds, passed to `emit` (SINTER, SINTERCARD); stops
    /// after `limit` of them when `limit > 0`. Returns how many were emitted. Walks the
    /// smallest set, as Redis does.
    pub fn intersect(sets: &[&Set], limit: usize, mut emit: impl FnMut(Member<'_>)) -> usize {
        let mut sorted: Vec<&Set> = sets.to_vec();
        sorted.sort_by_key(|s| s.len());
        let Some((first, rest)) = sorted.split_first() else {
            return 0;
        };
        let mut n = 0;
        for m in first.iter() {
            if rest
                .iter()
                .all(|s| std::ptr::eq(*s, *first) || s.contains_member(m))
            {
                emit(m);
                n += 1;
                if limit > 0 && n >= limit {
                    break;
                }
            }
        }
        n
    }

    /// The intersection as a new set (SINTERSTORE).
    pub fn intersection(sets: &[&Set], limits: &Limits) -> Set {
        let mut out = Set::new();
        Set::intersect(sets, 0, |m| {
            out.insert_member(m, limits);
        });
        out
    }

    /// Every member of any of `sets` (SUNION, SUNIONSTORE).
    pub fn union(sets: &[&Set], limits: &Limits) -> Set {
        let mut out = Set::new();
        for s in sets {
            for m in s.iter() {
                out.insert_member(m, limits);
            }
        }
        out
    }

    /// The members of `first` that none of `others` holds (SDIFF, SDIFFSTORE).
    pub fn difference(first: &Set, others: &[&Set], limits: &Limits) -> Set {
        let mut out = Set::new();
        if others.iter().any(|s| std::ptr::eq(*s, first)) {
            return out;
        }
        let mut others = others.to_vec();
        // Larger sets first: a member is more likely to be found early.
        others.sort_by_key(|s| std::cmp::Reverse(s.len()));
        for m in first.iter() {
            if !others.iter().any(|s| s.contains_member(m)) {
                out.insert_member(m, limits);
            }
        }
        out
    }
}

impl PartialEq for Set {
    /// Same members, whatever the encoding or order.
    fn eq(&self, other: &Set) -> bool {
        self.len() == other.len() && self.iter().all(|m| other.contains_member(m))
    }
}

impl Eq for Set {}
