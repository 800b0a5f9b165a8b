//! An order-statistic B+tree of `(score, id)` items: the ordered index of a full sorted set.
//!
//! The tree knows nothing of members: it is addressed by rank (position in the order), and
//! searched with a monotonic predicate over items ([`Tree::partition_point`]), which the
//! sorted set builds from its member slab. Inner nodes keep each child's item count (rank in
//! O(log n)) and its last item (search in O(log n)); leaves keep items in order. Each node
//! is one allocation of its full capacity, its arrays inline, so the tree's heap bytes follow
//! from its node counts and a descent loads one pointer a level.

use arrayvec::ArrayVec;

mod descent;
use descent::{insert_at, insert_by, remove_at, remove_by, update_by};

/// One item: a score and the id of its member in the sorted set's slab.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Item {
    pub score: f64,
    pub id: u32,
}

/// Items per leaf.
const LEAF_CAP: usize = 64;
/// Children per inner node.
const INNER_CAP: usize = 32;

#[derive(Debug, Clone)]
enum Node {
    Leaf(Box<Leaf>),
    Inner(Box<Inner>),
}

/// A leaf's items as two parallel arrays (12 bytes an item, where `(f64, u32)` takes 16),
/// inline, so that a search reaches them from the parent's pointer with no other load.
#[derive(Debug, Clone)]
struct Leaf {
    scores: ArrayVec<f64, LEAF_CAP>,
    ids: ArrayVec<u32, LEAF_CAP>,
}

impl Leaf {
    fn len(&self) -> usize {
        self.ids.len()
    }

    fn at(&self, i: usize) -> Item {
        Item {
            score: self.scores[i],
            id: self.ids[i],
        }
    }

    fn get(&self, i: usize) -> Option<Item> {
        (i < self.len()).then(|| self.at(i))
    }

    fn last(&self) -> Option<Item> {
        self.len().checked_sub(1).map(|i| self.at(i))
    }

    fn insert(&mut self, i: usize, it: Item) {
        self.scores.insert(i, it.score);
        self.ids.insert(i, it.id);
    }

    fn remove(&mut self, i: usize) -> Item {
        Item {
            score: self.scores.remove(i),
            id: self.ids.remove(i),
        }
    }

    /// Move the items from `at` on to a new leaf.
    fn split_off(&mut self, at: usize) -> Leaf {
        let mut right = new_leaf();
        right.scores.extend(self.scores.drain(at..));
        right.ids.extend(self.ids.drain(at..));
        right
    }

    fn append(&mut self, other: &Leaf) {
        self.scores.extend(other.scores.iter().copied());
        self.ids.extend(other.ids.iter().copied());
    }

    /// Give the item at `old` the new value `it`, whose place (`p`, counted with the old item
    /// still there) lies strictly between two other items of this leaf, so that neither
    /// neighbouring leaf can hold it: a rotation of the span between, no descent, no change
    /// of count. Returns false (and changes nothing) when the new place is not such a place.
    fn move_within(&mut self, old: usize, p: usize, it: Item) -> bool {
        let before = p - usize::from(old < p);
        let after = self.len() - p - usize::from(old >= p);
        if before == 0 || after == 0 {
            return false;
        }
        let at = if old < p {
            self.scores[old..p].rotate_left(1);
            self.ids[old..p].rotate_left(1);
            p - 1
        } else {
            self.scores[p..=old].rotate_right(1);
            self.ids[p..=old].rotate_right(1);
            p
        };
        self.scores[at] = it.score;
        self.ids[at] = it.id;
        true
    }

    /// The place of a key of `score` (see [`Tree::rank_by_score`]).
    fn score_place(&self, score: f64, tie: &mut impl FnMut(u32) -> bool) -> usize {
        let below = self.scores.iter().map(|&s| usize::from(s < score)).sum();
        run_end(below, self.len(), |k| self.at(k), score, tie)
    }

    fn partition_point(&self, mut pred: impl FnMut(Item) -> bool) -> usize {
        let (mut lo, mut hi) = (0, self.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if pred(self.at(mid)) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }
}

/// Past `below` (the items of a lower score), the end of the run of items of an equal
/// `score` for which `tie` holds: the place of the key among `len` items read by `at`.
#[inline]
fn run_end(
    below: usize,
    len: usize,
    at: impl Fn(usize) -> Item,
    score: f64,
    tie: &mut impl FnMut(u32) -> bool,
) -> usize {
    let mut k = below;
    while k < len {
        let it = at(k);
        if it.score != score || !tie(it.id) {
            break;
        }
        k += 1;
    }
    k
}

/// An inner node's children with their counts and lasts, inline as a leaf's items. One
/// place more than [`INNER_CAP`]: an insert adds a child before the node splits.
#[derive(Debug, Clone)]
struct Inner {
    kids: ArrayVec<Node, { INNER_CAP + 1 }>,
    counts: ArrayVec<usize, { INNER_CAP + 1 }>,
    /// The last item of each child.
    lasts: ArrayVec<Item, { INNER_CAP + 1 }>,
}

/// Heap bytes of one leaf and of one inner node (each is one allocation).
pub(crate) const LEAF_BYTES: usize = std::mem::size_of::<Leaf>();
pub(crate) const INNER_BYTES: usize = std::mem::size_of::<Inner>();

fn new_leaf() -> Leaf {
    Leaf {
        scores: ArrayVec::new(),
        ids: ArrayVec::new(),
    }
}

fn new_inner() -> Inner {
    Inner {
        kids: ArrayVec::new(),
        counts: ArrayVec::new(),
        lasts: ArrayVec::new(),
    }
}

impl Node {
    fn count(&self) -> usize {
        match self {
            Node::Leaf(l) => l.len(),
            Node::Inner(i) => i.counts.iter().sum(),
        }
    }

    /// Number of direct entries (items or children).
    fn width(&self) -> usize {
        match self {
            Node::Leaf(l) => l.len(),
            Node::Inner(i) => i.kids.len(),
        }
    }

    fn last(&self) -> Option<Item> {
        match self {
            Node::Leaf(l) => l.last(),
            Node::Inner(i) => i.lasts.last().copied(),
        }
    }
}

/// The ordered index.
#[derive(Debug, Clone)]
pub(crate) struct Tree {
    root: Node,
    len: usize,
    leaves: usize,
    inners: usize,
}

impl Default for Tree {
    fn default() -> Tree {
        Tree::new()
    }
}

impl Tree {
    pub fn new() -> Tree {
        Tree {
            root: Node::Leaf(Box::new(new_leaf())),
            len: 0,
            leaves: 1,
            inners: 0,
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    /// Heap bytes, in O(1).
    pub fn heap_bytes(&self) -> usize {
        self.leaves * LEAF_BYTES + self.inners * INNER_BYTES
    }

    /// Heap bytes counted by walking every node (tests compare it with [`Tree::heap_bytes`]).
    #[cfg(test)]
    pub fn recount_bytes(&self) -> usize {
        fn walk(n: &Node) -> usize {
            match n {
                Node::Leaf(_) => LEAF_BYTES,
                Node::Inner(i) => INNER_BYTES + i.kids.iter().map(walk).sum::<usize>(),
            }
        }
        walk(&self.root)
    }

    /// Check the structure's invariants (counts, lasts, fill), panicking on a broken one.
    #[cfg(test)]
    pub fn check(&self) {
        fn walk(n: &Node, root: bool) -> (usize, Option<Item>) {
            match n {
                Node::Leaf(l) => {
                    assert!(root || l.len() > 0);
                    assert!(l.len() <= LEAF_CAP);
                    assert_eq!(l.scores.len(), l.ids.len());
                    (l.len(), l.last())
                }
                Node::Inner(i) => {
                    assert!(i.kids.len() >= if root { 2 } else { 1 });
                    assert!(i.kids.len() <= INNER_CAP);
                    let mut total = 0;
                    for (k, kid) in i.kids.iter().enumerate() {
                        let (c, last) = walk(kid, false);
                        assert_eq!(c, i.counts[k]);
                        assert_eq!(last, Some(i.lasts[k]));
                        total += c;
                    }
                    (total, i.lasts.last().copied())
                }
            }
        }
        assert_eq!(walk(&self.root, true).0, self.len);
    }

    /// The item at `rank` (0-based, ascending).
    pub fn get(&self, mut rank: usize) -> Option<Item> {
        if rank >= self.len {
            return None;
        }
        let mut node = &self.root;
        loop {
            match node {
                Node::Leaf(l) => return l.get(rank),
                Node::Inner(i) => {
                    let mut k = 0;
                    while k + 1 < i.counts.len() && rank >= i.counts[k] {
                        rank -= i.counts[k];
                        k += 1;
                    }
                    node = &i.kids[k];
                }
            }
        }
    }

    /// The number of leading items for which `pred` holds; `pred` must hold for a prefix of
    /// the order and fail for the rest.
    pub fn partition_point(&self, mut pred: impl FnMut(Item) -> bool) -> usize {
        let mut node = &self.root;
        let mut rank = 0;
        loop {
            match node {
                Node::Leaf(l) => return rank + l.partition_point(&mut pred),
                Node::Inner(i) => {
                    let k = i.lasts.partition_point(|&it| pred(it));
                    if k == i.kids.len() {
                        return rank + i.counts.iter().sum::<usize>();
                    }
                    rank += i.counts[..k].iter().sum::<usize>();
                    node = &i.kids[k];
                }
            }
        }
    }

    /// [`Tree::partition_point`] for the sorted set's order, where items of a lower score
    /// come first and, among items of an equal score, those for which `tie(id)` holds (a
    /// prefix of them): the number of items before a key of `score`. Each node is searched
    /// by counting its scores below `score`, without a branch per comparison, and `tie`
    /// is asked only of items of an equal score.
    pub fn rank_by_score(&self, score: f64, mut tie: impl FnMut(u32) -> bool) -> usize {
        let mut node = &self.root;
        let mut rank = 0;
        loop {
            match node {
                Node::Leaf(l) => return rank + l.score_place(score, &mut tie),
                Node::Inner(i) => {
                    let below = i.lasts.iter().map(|it| usize::from(it.score < score)).sum();
                    let k = run_end(below, i.lasts.len(), |k| i.lasts[k], score, &mut tie);
                    if k == i.kids.len() {
                        return rank + i.counts.iter().sum::<usize>();
                    }
                    rank += i.counts[..k].iter().sum::<usize>();
                    node = &i.kids[k];
                }
            }
        }
    }

    /// Visit the items of ranks `start..end` in ascending order, or descending when `rev`.
    pub fn visit(&self, start: usize, end: usize, rev: bool, f: &mut dyn FnMut(Item)) {
        fn walk(n: &Node, start: usize, end: usize, rev: bool, f: &mut dyn FnMut(Item)) {
            match n {
                Node::Leaf(l) => {
                    if rev {
                        (start..end).rev().for_each(|i| f(l.at(i)));
                    } else {
                        (start..end).for_each(|i| f(l.at(i)));
                    }
                }
                Node::Inner(i) => {
                    let mut spans = Vec::with_capacity(i.kids.len());
                    let mut base = 0;
                    for (k, &c) in i.counts.iter().enumerate() {
                        let (lo, hi) = (start.max(base), end.min(base + c));
                        if lo < hi {
                            spans.push((k, lo - base, hi - base));
                        }
                        base += c;
                        if base >= end {
                            break;
                        }
                    }
                    if rev {
                        spans.reverse();
                    }
                    for (k, lo, hi) in spans {
                        walk(&i.kids[k], lo, hi, rev, f);
                    }
                }
            }
        }
        let end = end.min(self.len);
        if start < end {
            walk(&self.root, start, end, rev, f);
        }
    }

    /// Insert `item` at `rank` (the caller found the rank that keeps the order).
    pub fn insert(&mut self, rank: usize, item: Item) {
        debug_assert!(rank <= self.len);
        if let Some(right) = insert_at(
            &mut self.root,
            rank,
            item,
            &mut self.leaves,
            &mut self.inners,
        ) {
            self.grow(right, item);
        }
        self.len += 1;
    }

    /// Insert `item` where the order puts it: `before` holds for the items that sort before
    /// it (as for [`Tree::partition_point`]). One descent, guided by the children's lasts.
    pub fn insert_where(&mut self, mut before: impl FnMut(Item) -> bool, item: Item) {
        if let Some(right) = insert_by(
            &mut self.root,
            &mut before,
            item,
            &mut self.leaves,
            &mut self.inners,
        ) {
            self.grow(right, item);
        }
        self.len += 1;
    }

    /// The root split: a new root over the two halves.
    fn grow(&mut self, right: Node, item: Item) {
        let left = std::mem::replace(&mut self.root, Node::Leaf(Box::new(new_leaf())));
        let mut root = new_inner();
        for n in [left, right] {
            root.counts.push(n.count());
            root.lasts.push(n.last().unwrap_or(item));
            root.kids.push(n);
        }
        self.root = Node::Inner(Box::new(root));
        self.inners += 1;
    }

    /// Give the item with `id`, found where `old_before` turns false, the score of `new` (its
    /// place is where `new_before` turns false). When that place is in the same leaf, between
    /// two of its other items, the item moves there in one descent and this returns true;
    /// otherwise it is removed (one descent) and this returns false: the caller inserts
    /// `new` with [`Tree::insert_where`]. Redis's `zslUpdateScore` likewise updates in place
    /// when the neighbours stay ordered.
    pub fn update_where(
        &mut self,
        mut old_before: impl FnMut(Item) -> bool,
        mut new_before: impl FnMut(Item) -> bool,
        new: Item,
    ) -> bool {
        let mut moved = false;
        let found = update_by(
            &mut self.root,
            &mut old_before,
            &mut new_before,
            new,
            &mut moved,
            &mut self.leaves,
            &mut self.inners,
        );
        debug_assert!(found.is_some(), "updated item not in the tree");
        if found.is_none() || moved {
            return moved;
        }
        self.after_remove();
        false
    }

    /// Remove the item with `id` found where `before` turns false (one descent).
    pub fn remove_where(&mut self, mut before: impl FnMut(Item) -> bool, id: u32) -> Option<Item> {
        let item = remove_by(
            &mut self.root,
            &mut before,
            id,
            &mut self.leaves,
            &mut self.inners,
        )?;
        self.after_remove();
        Some(item)
    }

    /// Remove and return the item at `rank`.
    pub fn remove(&mut self, rank: usize) -> Option<Item> {
        if rank >= self.len {
            return None;
        }
        let item = remove_at(&mut self.root, rank, &mut self.leaves, &mut self.inners);
        self.after_remove();
        Some(item)
    }

    /// Bookkeeping after one item left: the length, an empty tree starts over, a root with
    /// one child gives way to it.
    fn after_remove(&mut self) {
        self.len -= 1;
        if self.len == 0 {
            *self = Tree::new();
            return;
        }
        // A root with one child gives way to it.
        loop {
            let only = match &mut self.root {
                Node::Inner(i) if i.kids.len() == 1 => i.kids.pop(),
                _ => None,
            };
            match only {
                Some(kid) => {
                    self.root = kid;
                    self.inners -= 1;
                }
                None => break,
            }
        }
    }
}

#[cfg(test)]
mod tests;
