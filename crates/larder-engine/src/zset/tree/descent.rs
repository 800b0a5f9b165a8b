//! The recursive steps of the tree's writes: the descent from the root to the leaf that an
//! insert, update or removal reaches, and on the way back up the split of a full node, the
//! merge of a node that fell under a quarter of its capacity into a neighbour, and the drop
//! of an empty one, keeping each inner node's counts and lasts exact. [`Tree`](super::Tree)'s
//! write methods call them at the root; they are apart because reads never touch them.

use super::{new_inner, Inner, Item, Leaf, Node, INNER_CAP, LEAF_CAP};

/// Insert into `node`; a node that was full splits, and the new right half is returned.
pub(super) fn insert_at(
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
pub(super) fn insert_by<F: FnMut(Item) -> bool>(
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
pub(super) fn remove_by<F: FnMut(Item) -> bool>(
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

/// [`Tree::update_where`](super::Tree::update_where) under `node`: `Some` when the item was found, and then `moved`
/// says whether it moved within its leaf (else it was removed).
pub(super) fn update_by<F: FnMut(Item) -> bool, G: FnMut(Item) -> bool>(
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
pub(super) fn remove_at(
    node: &mut Node,
    rank: usize,
    leaves: &mut usize,
    inners: &mut usize,
) -> Item {
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
