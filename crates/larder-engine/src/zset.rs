//! The sorted set type: members ordered by (score, member), compact ("listpack") while small,
//! an ordered index plus a member → score map past [`crate::Limits`]'s thresholds.
//!
//! Every operation the sorted-set commands (and geo) need is here, with Redis 7.0's semantics:
//! ZADD's flags ([`ZSet::add`]), ranks, score and lex ranges resolved to rank ranges
//! ([`ZSet::score_ranks`], [`ZSet::lex_ranks`]), visiting and removing rank ranges, pops.
//! Scores are never NaN; equal scores order members byte-wise; -0.0 equals 0.0.
//!
//! Encodings: [`compact`] keeps one sorted exact-size buffer that carries its own count (so
//! a `ZSet` is one 16-byte pointer); [`full`] keeps each member once in a slab,
//! a hash index of ids and an order-statistic B+tree ([`tree`]) of `(score, id)`, so rank,
//! insert and range starts are O(log n). [`ZSet::heap_bytes`] is O(1): every part keeps its
//! size as capacities and running counts.

mod compact;
mod full;
mod tree;

use std::ops::Range;

use compact::Compact;
use full::Full;

use crate::Limits;

/// A sorted set value. Never empty while stored: commands delete a sorted set that empties.
#[derive(Clone, Debug)]
pub struct ZSet {
    repr: Repr,
}

#[derive(Clone, Debug)]
enum Repr {
    Compact(Compact),
    Full(Box<Full>),
}

impl Default for ZSet {
    fn default() -> ZSet {
        ZSet::new()
    }
}

impl PartialEq for ZSet {
    fn eq(&self, other: &ZSet) -> bool {
        self.len() == other.len()
            && self
                .scored()
                .zip(other.scored())
                .all(|((m1, s1), (m2, s2))| m1 == m2 && s1.to_bits() == s2.to_bits())
    }
}

impl Eq for ZSet {}

/// A score interval, each end inclusive or exclusive (ZRANGEBYSCORE's `(1.5 2`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ScoreRange {
    pub min: f64,
    pub min_ex: bool,
    pub max: f64,
    pub max_ex: bool,
}

impl ScoreRange {
    /// Whether `s` is past the lower end.
    pub fn above_min(&self, s: f64) -> bool {
        if self.min_ex {
            s > self.min
        } else {
            s >= self.min
        }
    }

    /// Whether `s` is before the upper end.
    pub fn below_max(&self, s: f64) -> bool {
        if self.max_ex {
            s < self.max
        } else {
            s <= self.max
        }
    }
}

/// One end of a lex interval (ZRANGEBYLEX's `-`, `+`, `[a`, `(a`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LexBound<'a> {
    NegInf,
    PosInf,
    Incl(&'a [u8]),
    Excl(&'a [u8]),
}

/// A lex interval.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LexRange<'a> {
    pub min: LexBound<'a>,
    pub max: LexBound<'a>,
}

impl LexRange<'_> {
    /// Whether the interval itself is empty (`[b [a`, `(a [a`, `+ ...`, `... -`), as Redis's
    /// `zslIsInLexRange` decides before looking at members.
    pub fn is_empty(&self) -> bool {
        use LexBound::*;
        match (self.min, self.max) {
            (PosInf, _) | (_, NegInf) => true,
            (NegInf, _) | (_, PosInf) => false,
            (Incl(a), Incl(b)) => a > b,
            (Incl(a) | Excl(a), Incl(b) | Excl(b)) => a >= b,
        }
    }

    /// Whether `m` is past the lower end.
    pub fn above_min(&self, m: &[u8]) -> bool {
        match self.min {
            LexBound::NegInf => true,
            LexBound::PosInf => false,
            LexBound::Incl(b) => m >= b,
            LexBound::Excl(b) => m > b,
        }
    }

    /// Whether `m` is before the upper end.
    pub fn below_max(&self, m: &[u8]) -> bool {
        match self.max {
            LexBound::NegInf => false,
            LexBound::PosInf => true,
            LexBound::Incl(b) => m <= b,
            LexBound::Excl(b) => m < b,
        }
    }
}

/// Which way ranks count and ranges are visited: lowest score first, or highest first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Order {
    Ascending,
    Descending,
}

/// Which end of the order a pop takes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum End {
    Min,
    Max,
}

/// ZADD's options.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AddFlags {
    /// Only add new members.
    pub nx: bool,
    /// Only update existing members.
    pub xx: bool,
    /// Only update when the new score is greater.
    pub gt: bool,
    /// Only update when the new score is less.
    pub lt: bool,
    /// Add the score to the current one.
    pub incr: bool,
}

/// What [`ZSet::add`] did.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Added {
    /// A new member, with this score (as computed: a compact set stores -0 as 0, but
    /// Redis replies the -0 it computed).
    New(f64),
    /// An existing member's score changed to this (as computed).
    Updated(f64),
    /// An existing member kept its score, which is this.
    Same(f64),
    /// Nothing: the flags ruled it out (Redis's `ZADD_OUT_NOP`).
    Skipped,
}

/// ZADD INCR's sum was NaN (`inf + -inf`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NanScore;

impl ZSet {
    /// An empty sorted set in the compact encoding.
    pub fn new() -> ZSet {
        ZSet {
            repr: Repr::Compact(Compact::default()),
        }
    }

    /// An empty sorted set in the full encoding.
    pub fn new_full() -> ZSet {
        ZSet {
            repr: Repr::Full(Box::default()),
        }
    }

    /// An empty sorted set about to receive `size` members of at most `max_len` bytes: full
    /// when they would not fit the compact encoding under `limits`.
    pub fn with_hint(size: usize, max_len: usize, limits: &Limits) -> ZSet {
        if size > limits.zset_max_listpack_entries || max_len > limits.zset_max_listpack_value {
            ZSet::new_full()
        } else {
            ZSet::new()
        }
    }

    /// A sorted set of `pairs` (distinct members), compact when they fit `limits` (the
    /// result of ZUNIONSTORE and friends).
    pub fn from_pairs<'a>(
        pairs: impl IntoIterator<Item = (&'a [u8], f64)>,
        limits: &Limits,
    ) -> ZSet {
        let pairs: Vec<(&[u8], f64)> = pairs.into_iter().collect();
        let max_len = pairs.iter().map(|(m, _)| m.len()).max().unwrap_or(0);
        let mut z = ZSet::with_hint(pairs.len(), max_len, limits);
        for (m, s) in pairs {
            z.insert(m, s, limits);
        }
        z
    }

    /// Number of members.
    pub fn len(&self) -> usize {
        match &self.repr {
            Repr::Compact(c) => c.len(),
            Repr::Full(f) => f.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Where the sorted set's bytes start (the compact buffer, or the full form's header),
    /// for a cache prefetch: an address only, never read through.
    pub(crate) fn heap_head(&self) -> *const u8 {
        match &self.repr {
            Repr::Compact(c) => c.heap_head(),
            Repr::Full(f) => std::ptr::from_ref::<Full>(f).cast(),
        }
    }

    /// Heap bytes owned by the sorted set, in O(1).
    pub fn heap_bytes(&self) -> usize {
        match &self.repr {
            Repr::Compact(c) => c.heap_bytes(),
            Repr::Full(f) => std::mem::size_of::<Full>() + f.heap_bytes(),
        }
    }

    /// Redis's name for the current encoding: "listpack" or "skiplist".
    pub fn encoding(&self) -> &'static str {
        match &self.repr {
            Repr::Compact(_) => "listpack",
            Repr::Full(_) => "skiplist",
        }
    }

    /// Every member with its score, lowest first.
    pub fn scored(&self) -> impl Iterator<Item = (&[u8], f64)> + '_ {
        let mut all = Vec::with_capacity(self.len());
        self.visit(0..self.len(), Order::Ascending, |m, s| all.push((m, s)));
        all.into_iter()
    }

    /// The score of `member`.
    pub fn score(&self, member: &[u8]) -> Option<f64> {
        match &self.repr {
            Repr::Compact(c) => c.find(member).map(|e| e.score),
            Repr::Full(f) => f.score(member),
        }
    }

    /// The rank of `member` in `order` (0 for the first) and its score.
    pub fn rank(&self, member: &[u8], order: Order) -> Option<(usize, f64)> {
        let (rank, score) = match &self.repr {
            Repr::Compact(c) => c
                .iter()
                .enumerate()
                .find(|(_, e)| e.member == member)
                .map(|(i, e)| (i, e.score))?,
            Repr::Full(f) => {
                let id = f.id_of(member)?;
                (f.rank_of(id), f.score_of(id))
            }
        };
        Some(match order {
            Order::Ascending => (rank, score),
            Order::Descending => (self.len() - 1 - rank, score),
        })
    }

    /// The member of `rank` (ascending) with its score.
    pub fn get(&self, rank: usize) -> Option<(&[u8], f64)> {
        match &self.repr {
            Repr::Compact(c) => c.iter().nth(rank).map(|e| (e.member, e.score)),
            Repr::Full(f) => f.tree.get(rank).map(|it| (f.member(it.id), it.score)),
        }
    }

    /// How many leading members (in order) satisfy `pred`, which must hold for a prefix.
    pub fn partition_point(&self, mut pred: impl FnMut(&[u8], f64) -> bool) -> usize {
        match &self.repr {
            Repr::Compact(c) => c.iter().take_while(|e| pred(e.member, e.score)).count(),
            Repr::Full(f) => f.tree.partition_point(|it| pred(f.member(it.id), it.score)),
        }
    }

    /// The ranks of the members whose scores fall in `r`.
    pub fn score_ranks(&self, r: &ScoreRange) -> Range<usize> {
        let start = self.partition_point(|_, s| !r.above_min(s));
        let end = self.partition_point(|_, s| r.below_max(s));
        start..end.max(start)
    }

    /// The ranks of the members inside `r`, for a range visited in `order`. Meaningful when
    /// all scores are equal (members are then in lex order), as in Redis; otherwise a compact
    /// set answers as Redis's listpack walk does (from the first member past the start, up to
    /// the first one past the end, walking in `order`), and a full one by binary search.
    pub fn lex_ranks(&self, r: &LexRange<'_>, order: Order) -> Range<usize> {
        // Redis's `zslIsInLexRange`: an empty interval, or one past either end, is empty.
        let ends = self
            .get(0)
            .zip(self.len().checked_sub(1).and_then(|i| self.get(i)));
        match ends {
            Some(((first, _), (last, _))) if !r.is_empty() => {
                if !r.above_min(last) || !r.below_max(first) {
                    return 0..0;
                }
            }
            _ => return 0..0,
        }
        if let Repr::Compact(c) = &self.repr {
            let members: Vec<&[u8]> = c.iter().map(|e| e.member).collect();
            return match order {
                Order::Ascending => {
                    let Some(start) = members.iter().position(|m| r.above_min(m)) else {
                        return 0..0;
                    };
                    let n = members[start..]
                        .iter()
                        .take_while(|m| r.below_max(m))
                        .count();
                    start..start + n
                }
                Order::Descending => {
                    let Some(last) = members.iter().rposition(|m| r.below_max(m)) else {
                        return 0..0;
                    };
                    let n = members[..=last]
                        .iter()
                        .rev()
                        .take_while(|m| r.above_min(m))
                        .count();
                    last + 1 - n..last + 1
                }
            };
        }
        let start = self.partition_point(|m, _| !r.above_min(m));
        let end = self.partition_point(|m, _| r.below_max(m));
        start..end.max(start)
    }

    /// Visit the members of `ranks` (ascending ranks) in `order`.
    pub fn visit<'a>(
        &'a self,
        ranks: Range<usize>,
        order: Order,
        mut f: impl FnMut(&'a [u8], f64),
    ) {
        let rev = order == Order::Descending;
        let end = ranks.end.min(self.len());
        if ranks.start >= end {
            return;
        }
        match &self.repr {
            Repr::Compact(c) => {
                let picked = c.iter().skip(ranks.start).take(end - ranks.start);
                if rev {
                    let all: Vec<_> = picked.collect();
                    all.iter().rev().for_each(|e| f(e.member, e.score));
                } else {
                    picked.for_each(|e| f(e.member, e.score));
                }
            }
            Repr::Full(full) => {
                full.tree.visit(ranks.start, end, rev, &mut |it| {
                    f(full.member(it.id), it.score)
                });
            }
        }
    }

    /// Make room for one more member of `len` bytes: leave the compact encoding when it
    /// would pass a limit.
    fn make_room(&mut self, len: usize, limits: &Limits) {
        if let Repr::Compact(c) = &self.repr {
            if c.len() + 1 > limits.zset_max_listpack_entries
                || len > limits.zset_max_listpack_value
            {
                let mut full = Full::default();
                for e in c.iter() {
                    full.insert(e.member, e.score);
                }
                self.repr = Repr::Full(Box::new(full));
            }
        }
    }

    /// Set `member`'s score, adding it if absent; returns its previous score.
    pub fn insert(&mut self, member: &[u8], score: f64, limits: &Limits) -> Option<f64> {
        if let Repr::Full(f) = &mut self.repr {
            return match f.id_of(member) {
                Some(id) => {
                    let old = f.score_of(id);
                    if old.to_bits() != score.to_bits() {
                        f.set_score_of(id, score);
                    }
                    Some(old)
                }
                None => {
                    f.insert(member, score);
                    None
                }
            };
        }
        let old = self.score(member);
        match old {
            Some(old) if old.to_bits() == score.to_bits() => {}
            Some(_) => {
                self.set_score(member, score);
            }
            None => {
                self.insert_new(member, score, limits);
            }
        }
        old
    }

    /// Add a member known to be absent; returns the score as stored (a compact set stores
    /// -0 as 0).
    fn insert_new(&mut self, member: &[u8], score: f64, limits: &Limits) -> f64 {
        self.make_room(member.len(), limits);
        match &mut self.repr {
            Repr::Compact(c) => c.insert(member, score),
            Repr::Full(f) => {
                f.insert(member, score);
                score
            }
        }
    }

    /// Change a present member's score; returns the score as stored.
    fn set_score(&mut self, member: &[u8], score: f64) -> f64 {
        match &mut self.repr {
            Repr::Compact(c) => {
                if let Some((start, end)) = c.find(member).map(|e| (e.start, e.end)) {
                    c.remove_span(start, end, 1);
                }
                c.insert(member, score)
            }
            Repr::Full(f) => {
                f.set_score(member, score);
                score
            }
        }
    }

    /// ZADD for one member, with Redis 7.0's `zsetAdd` rules.
    pub fn add(
        &mut self,
        member: &[u8],
        score: f64,
        flags: AddFlags,
        limits: &Limits,
    ) -> Result<Added, NanScore> {
        if score.is_nan() {
            return Err(NanScore);
        }
        // The full encoding looks the member up once, and updates by its id.
        let found = match &self.repr {
            Repr::Compact(c) => c.find(member).map(|e| (e.score, None)),
            Repr::Full(f) => f.id_of(member).map(|id| (f.score_of(id), Some(id))),
        };
        match found {
            Some((cur, id)) => {
                if flags.nx {
                    return Ok(Added::Skipped);
                }
                let score = if flags.incr { score + cur } else { score };
                if score.is_nan() {
                    return Err(NanScore);
                }
                if (flags.lt && score >= cur) || (flags.gt && score <= cur) {
                    return Ok(Added::Skipped);
                }
                if score == cur {
                    return Ok(Added::Same(score));
                }
                match (&mut self.repr, id) {
                    (Repr::Full(f), Some(id)) => f.set_score_of(id, score),
                    _ => {
                        self.set_score(member, score);
                    }
                }
                Ok(Added::Updated(score))
            }
            None if flags.xx => Ok(Added::Skipped),
            None => {
                self.insert_new(member, score, limits);
                Ok(Added::New(score))
            }
        }
    }

    /// Remove `member`, returning its score.
    pub fn remove(&mut self, member: &[u8]) -> Option<f64> {
        match &mut self.repr {
            Repr::Compact(c) => {
                let (start, end, score) = c.find(member).map(|e| (e.start, e.end, e.score))?;
                c.remove_span(start, end, 1);
                Some(score)
            }
            Repr::Full(f) => f.remove(member),
        }
    }

    /// Remove the members of `ranks`, calling `f` with each in ascending order; returns how
    /// many were removed.
    pub fn remove_ranks(&mut self, ranks: Range<usize>, mut f: impl FnMut(&[u8], f64)) -> usize {
        let end = ranks.end.min(self.len());
        if ranks.start >= end {
            return 0;
        }
        match &mut self.repr {
            Repr::Compact(c) => {
                let a = c.offset_of_rank(ranks.start);
                let b = c.offset_of_rank(end);
                c.iter()
                    .skip(ranks.start)
                    .take(end - ranks.start)
                    .for_each(|e| f(e.member, e.score));
                c.remove_span(a, b, end - ranks.start);
            }
            Repr::Full(full) => full.remove_ranks(ranks.start, end, &mut f),
        }
        end - ranks.start
    }

    /// Remove up to `count` members from `end`, in the order they leave.
    pub fn pop(&mut self, count: usize, end: End) -> Vec<(Box<[u8]>, f64)> {
        let max = end == End::Max;
        let n = count.min(self.len());
        let ranks = if max {
            self.len() - n..self.len()
        } else {
            0..n
        };
        let mut out = Vec::with_capacity(n);
        self.remove_ranks(ranks, |m, s| out.push((Box::from(m), s)));
        if max {
            out.reverse();
        }
        out
    }

    /// ZSCAN: up to about `count` members from `cursor` on, and the next cursor (0 when done).
    /// A compact set is returned whole; a full one is walked by slab slot, so a member present
    /// for the whole scan is returned exactly once.
    pub fn scan<'a>(&'a self, cursor: u64, count: usize, mut f: impl FnMut(&'a [u8], f64)) -> u64 {
        match &self.repr {
            Repr::Compact(c) => {
                c.iter().for_each(|e| f(e.member, e.score));
                0
            }
            Repr::Full(full) => full.scan(cursor, count.max(1), &mut f),
        }
    }

    /// Heap bytes counted from scratch (tests compare it with [`ZSet::heap_bytes`]).
    #[cfg(test)]
    fn recount_bytes(&self) -> usize {
        match &self.repr {
            Repr::Compact(c) => c.recount_bytes(),
            Repr::Full(f) => std::mem::size_of::<Full>() + f.recount_bytes(),
        }
    }

    #[cfg(test)]
    fn check(&self) {
        if let Repr::Full(f) = &self.repr {
            f.check();
        }
    }
}

#[cfg(test)]
mod tests;
