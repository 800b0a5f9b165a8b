//! An order-statistic B+tree of `(score, id)` items: the ordered index of a full sorted set.
//!
//! The tree knows nothing of members: it is addressed by rank (position in the order), and
//! searched with a monotonic predicate over items ([`Tree::partition_point`]), which the
//! sorted set builds from its member slab. Inner nodes keep each child's item count (rank in
//! O(log n)) and its last item (search in O(log n)); leaves keep items in order. Every node's
//! buffer is allocated once at its full capacity, so the tree's heap bytes follow from its
//! node counts.

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

/// A leaf's items as two parallel arrays (12 bytes an item, where `(f64, u32)` takes 16).
#[derive(Debug, Clone)]
struct Leaf {
    scores: Vec<f64>,
    ids: Vec<u32>,
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
        self.scores.extend_from_slice(&other.scores);
        self.ids.extend_from_slice(&other.ids);
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

#[derive(Debug, Clone)]
struct Inner {
    kids: Vec<Node>,
    counts: Vec<usize>,
    /// The last item of each child.
    lasts: Vec<Item>,
}

/// Heap bytes of one leaf and of one inner node.
pub(crate) const LEAF_BYTES: usize = std::mem::size_of::<Leaf>()
    + LEAF_CAP * (std::mem::size_of::<f64>() + std::mem::size_of::<u32>());
pub(crate) const INNER_BYTES: usize = std::mem::size_of::<Inner>()
    + INNER_CAP
        * (std::mem::size_of::<Node>()
            + std::mem::size_of::<usize>()
            + std::mem::size_of::<Item>());

fn new_leaf() -> Leaf {
    Leaf {
        scores: Vec::with_capacity(LEAF_CAP),
        ids: Vec::with_capacity(LEAF_CAP),
    }
}

fn new_inner() -> Inner {
    Inner {
        kids: Vec::with_capacity(INNER_CAP),
        counts: Vec::with_capacity(INNER_CAP),
        lasts: Vec::with_capacity(INNER_CAP),
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

/// Insert into `node`; a node that was full splits, and the new right half is returned.
fn insert_at(
    node: &mut Node,
    rank: usize,
    item: Item,
    leaves: &mut usize,
    inners: &mut usize,
) -> Option<Node> {
    match node {
        Node::Leaf(l) => leaf_insert(l, rank, item, leaves),
        Node::Inner(i) => {
            let mut k = 0;
            let mut r = rank;
            while k + 1 < i.counts.len() && r > i.counts[k] {
                r -= i.counts[k];
                k += 1;
            }
            let split = insert_at(&mut i.kids[k], r, item, leaves, inners);
            absorb(i, k, split, item, inners)
        }
    }
}

/// Insert into `node` where `before` turns false; as [`insert_at`].
fn insert_by<F: FnMut(Item) -> bool>(
    node: &mut Node,
    before: &mut F,
    item: Item,
    leaves: &mut usize,
    inners: &mut usize,
) -> Option<Node> {
    match node {
        Node::Leaf(l) => {
            let at = l.partition_point(&mut *before);
            leaf_insert(l, at, item, leaves)
        }
        Node::Inner(i) => {
            // The first child whose last item sorts after `item`; past them all, the last.
            let k = i
                .lasts
                .partition_point(|&it| before(it))
                .min(i.kids.len() - 1);
            let split = insert_by(&mut i.kids[k], before, item, leaves, inners);
            absorb(i, k, split, item, inners)
        }
    }
}

/// Insert `item` at `at` in leaf `l`; a full leaf splits and returns its right half.
fn leaf_insert(l: &mut Leaf, at: usize, item: Item, leaves: &mut usize) -> Option<Node> {
    if l.len() < LEAF_CAP {
        l.insert(at, item);
        return None;
    }
    // An append (ascending scores, the common case) leaves the full leaf full.
    let cut = if at == LEAF_CAP {
        LEAF_CAP
    } else {
        LEAF_CAP / 2
    };
    let mut right = l.split_off(cut);
    if at < cut || (at == cut && cut < LEAF_CAP) {
        l.insert(at, item);
    } else {
        right.insert(at - cut, item);
    }
    *leaves += 1;
    Some(Node::Leaf(Box::new(right)))
}

/// After an insert under child `k` of `i`: its count and last, and the right half `split`
/// it may have split off; an inner node over capacity splits in turn.
fn absorb(
    i: &mut Inner,
    k: usize,
    split: Option<Node>,
    item: Item,
    inners: &mut usize,
) -> Option<Node> {
    let Some(right) = split else {
        i.counts[k] += 1;
        if let Some(last) = i.kids[k].last() {
            i.lasts[k] = last;
        }
        return None;
    };
    i.counts[k] = i.kids[k].count();
    i.lasts[k] = i.kids[k].last().unwrap_or(item);
    i.counts.insert(k + 1, right.count());
    i.lasts.insert(k + 1, right.last().unwrap_or(item));
    i.kids.insert(k + 1, right);
    if i.kids.len() <= INNER_CAP {
        return None;
    }
    // Over by one: move the upper half to a new node.
    let mut other = new_inner();
    // As for leaves: a split caused by an append keeps this node full.
    let half = if k + 2 == i.kids.len() {
        k + 1
    } else {
        i.kids.len() / 2
    };
    other.kids.extend(i.kids.drain(half..));
    other.counts.extend(i.counts.drain(half..));
    other.lasts.extend(i.lasts.drain(half..));
    *inners += 1;
    Some(Node::Inner(Box::new(other)))
}

/// Remove the item with `id` under `node`, found where `before` turns false; `None` when
/// it is not there.
fn remove_by<F: FnMut(Item) -> bool>(
    node: &mut Node,
    before: &mut F,
    id: u32,
    leaves: &mut usize,
    inners: &mut usize,
) -> Option<Item> {
    match node {
        Node::Leaf(l) => {
            let at = l.partition_point(&mut *before);
            (l.ids.get(at) == Some(&id)).then(|| l.remove(at))
        }
        Node::Inner(i) => {
            let k = i.lasts.partition_point(|&it| before(it));
            if k == i.kids.len() {
                return None;
            }
            let item = remove_by(&mut i.kids[k], before, id, leaves, inners)?;
            removed_under(i, k, leaves, inners);
            Some(item)
        }
    }
}

/// [`Tree::update_where`] under `node`: `Some` when the item was found, and then `moved`
/// says whether it moved within its leaf (else it was removed).
fn update_by<F: FnMut(Item) -> bool, G: FnMut(Item) -> bool>(
    node: &mut Node,
    old_before: &mut F,
    new_before: &mut G,
    new: Item,
    moved: &mut bool,
    leaves: &mut usize,
    inners: &mut usize,
) -> Option<Item> {
    match node {
        Node::Leaf(l) => {
            let at = l.partition_point(&mut *old_before);
            if l.ids.get(at) != Some(&new.id) {
                return None;
            }
            let p = l.partition_point(&mut *new_before);
            if l.move_within(at, p, new) {
                *moved = true;
                return Some(new);
            }
            Some(l.remove(at))
        }
        Node::Inner(i) => {
            let k = i.lasts.partition_point(|&it| old_before(it));
            if k == i.kids.len() {
                return None;
            }
            let item = update_by(
                &mut i.kids[k],
                old_before,
                new_before,
                new,
                moved,
                leaves,
                inners,
            )?;
            if *moved {
                if let Some(last) = i.kids[k].last() {
                    i.lasts[k] = last;
                }
            } else {
                removed_under(i, k, leaves, inners);
            }
            Some(item)
        }
    }
}

/// After one item left child `k` of `i`: its count and last, and rebalancing.
fn removed_under(i: &mut Inner, k: usize, leaves: &mut usize, inners: &mut usize) {
    i.counts[k] -= 1;
    if let Some(last) = i.kids[k].last() {
        i.lasts[k] = last;
    }
    rebalance(i, k, leaves, inners);
}

/// Remove the item at `rank` under `node`, rebalancing the child it came from.
fn remove_at(node: &mut Node, rank: usize, leaves: &mut usize, inners: &mut usize) -> Item {
    match node {
        Node::Leaf(l) => l.remove(rank),
        Node::Inner(i) => {
            let mut k = 0;
            let mut r = rank;
            while k + 1 < i.counts.len() && r >= i.counts[k] {
                r -= i.counts[k];
                k += 1;
            }
            let item = remove_at(&mut i.kids[k], r, leaves, inners);
            removed_under(i, k, leaves, inners);
            item
        }
    }
}

/// After a removal under child `k`: merge it with a neighbour when it has fallen under a
/// quarter of its capacity and the two fit in one node; drop it when empty.
fn rebalance(i: &mut Inner, k: usize, leaves: &mut usize, inners: &mut usize) {
    let cap = match &i.kids[k] {
        Node::Leaf(_) => LEAF_CAP,
        Node::Inner(_) => INNER_CAP,
    };
    let width = i.kids[k].width();
    if width == 0 {
        drop_kid(i, k, leaves, inners);
        return;
    }
    if width >= cap / 4 || i.kids.len() < 2 {
        return;
    }
    // Merge with the smaller neighbour, left into right order preserved.
    let j = if k == 0 {
        1
    } else if k + 1 == i.kids.len() || i.kids[k - 1].width() <= i.kids[k + 1].width() {
        k - 1
    } else {
        k + 1
    };
    let (a, b) = (k.min(j), k.max(j));
    if i.kids[a].width() + i.kids[b].width() > cap {
        return;
    }
    let right = i.kids.remove(b);
    let right_count = i.counts.remove(b);
    let right_last = i.lasts.remove(b);
    match (&mut i.kids[a], right) {
        (Node::Leaf(l), Node::Leaf(r)) => {
            l.append(&r);
            *leaves -= 1;
        }
        (Node::Inner(l), Node::Inner(r)) => {
            let r = *r;
            l.kids.extend(r.kids);
            l.counts.extend(r.counts);
            l.lasts.extend(r.lasts);
            *inners -= 1;
        }
        // Siblings are always at the same depth.
        (_, right) => {
            i.kids.insert(b, right);
            i.counts.insert(b, right_count);
            i.lasts.insert(b, right_last);
            return;
        }
    }
    i.counts[a] += right_count;
    i.lasts[a] = right_last;
}

fn drop_kid(i: &mut Inner, k: usize, leaves: &mut usize, inners: &mut usize) {
    match i.kids.remove(k) {
        Node::Leaf(_) => *leaves -= 1,
        Node::Inner(_) => *inners -= 1,
    }
    i.counts.remove(k);
    i.lasts.remove(k);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(v: u32) -> Item {
        Item {
            score: f64::from(v),
            id: v,
        }
    }

    /// Ascending inserts (timestamps as scores) fill leaves and inner nodes instead of leaving
    /// each half empty.
    #[test]
    fn appends_fill_nodes() {
        let mut t = Tree::new();
        for v in 0..100_000u32 {
            t.insert(t.len(), item(v));
        }
        t.check();
        assert!(t.leaves <= 100_000 / LEAF_CAP + 1, "{}", t.leaves);
        assert!(
            t.inners <= 100_000 / LEAF_CAP / INNER_CAP + 5,
            "{}",
            t.inners
        );
        assert_eq!(t.get(54_321).map(|i| i.id), Some(54_321));
    }

    #[test]
    fn insert_get_remove_against_a_vec() {
        let mut t = Tree::new();
        let mut model: Vec<u32> = Vec::new();
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for step in 0..40_000u32 {
            let grow = model.len() < 2000 || next() % 3 != 0;
            if grow && step < 30_000 {
                let v = (next() % 1_000_000) as u32;
                let rank = model.partition_point(|&m| m < v);
                model.insert(rank, v);
                let r = t.partition_point(|it| it.score < f64::from(v));
                assert_eq!(r, rank);
                t.insert(r, item(v));
            } else if !model.is_empty() {
                let rank = (next() as usize) % model.len();
                let want = model.remove(rank);
                assert_eq!(t.remove(rank).map(|i| i.id), Some(want));
            }
            if step % 997 == 0 {
                t.check();
                assert_eq!(t.recount_bytes(), t.heap_bytes());
                let mut seen = Vec::new();
                t.visit(0, t.len(), false, &mut |it| seen.push(it.id));
                assert_eq!(seen, model);
                if !model.is_empty() {
                    let r = (next() as usize) % model.len();
                    assert_eq!(t.get(r).map(|i| i.id), Some(model[r]));
                    let mut back = Vec::new();
                    t.visit(r / 2, r + 5, true, &mut |it| back.push(it.id));
                    let want: Vec<u32> = model[r / 2..(r + 5).min(model.len())]
                        .iter()
                        .rev()
                        .copied()
                        .collect();
                    assert_eq!(back, want);
                }
            }
        }
        while t.len() > 0 {
            t.remove(0);
        }
        t.check();
        assert_eq!(t.heap_bytes(), LEAF_BYTES);
    }

    /// `insert_where`, `update_where` (small moves that stay in their leaf, big ones that do
    /// not) and `remove_where` against a sorted vec of `(score, id)`.
    #[test]
    fn keyed_operations_against_a_vec() {
        let mut t = Tree::new();
        let mut model: Vec<(u32, u32)> = Vec::new();
        let mut x = 0x1234_5678_9abc_def1u64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let key = |it: Item| (it.score as u32, it.id);
        let mut next_id = 0u32;
        let (mut in_place, mut moved) = (0, 0);
        for step in 0..60_000u32 {
            let op = next() % 10;
            if model.len() < 3000 && (op < 4 || model.is_empty()) {
                let v = ((next() % 100_000) as u32, next_id);
                next_id += 1;
                let at = model.partition_point(|&m| m < v);
                model.insert(at, v);
                let it = Item {
                    score: f64::from(v.0),
                    id: v.1,
                };
                t.insert_where(|o| key(o) < v, it);
            } else if op < 9 {
                let at = (next() as usize) % model.len();
                let old = model.remove(at);
                let score = if op < 7 {
                    // A small step: usually the same leaf.
                    (old.0 + (next() % 40) as u32).saturating_sub(20)
                } else {
                    (next() % 100_000) as u32
                };
                let new = (score, old.1);
                let to = model.partition_point(|&m| m < new);
                model.insert(to, new);
                let it = Item {
                    score: f64::from(score),
                    id: old.1,
                };
                if t.update_where(|o| key(o) < old, |o| key(o) < new, it) {
                    in_place += 1;
                } else {
                    moved += 1;
                    t.insert_where(|o| key(o) < new, it);
                }
            } else {
                let at = (next() as usize) % model.len();
                let v = model.remove(at);
                let got = t.remove_where(|o| key(o) < v, v.1);
                assert_eq!(got.map(key), Some(v));
                // An absent item is not removed.
                assert_eq!(t.remove_where(|o| key(o) < v, v.1), None);
            }
            assert_eq!(t.len(), model.len());
            if step % 499 == 0 {
                t.check();
                assert_eq!(t.recount_bytes(), t.heap_bytes());
                let mut seen = Vec::new();
                t.visit(0, t.len(), false, &mut |it| seen.push(key(it)));
                assert_eq!(seen, model);
            }
        }
        assert!(in_place > 1000 && moved > 1000, "{in_place} {moved}");
    }
}
