//! Tests of `tree.rs`.

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
    let mut next = crate::xorshift::xorshift(0x2545_f491_4f6c_dd1d);
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
    let mut next = crate::xorshift::xorshift(0x1234_5678_9abc_def1);
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

/// `rank_by_score` against a sorted vec of `(score, id)`, with so few distinct scores that
/// runs of equal scores span leaves and inner nodes' lasts, for present and absent keys.
#[test]
fn rank_by_score_against_a_vec() {
    let mut t = Tree::new();
    let mut model: Vec<(u32, u32)> = Vec::new();
    let mut next = crate::xorshift::xorshift(0x0dd_ba11_cafe_f00d);
    let key = |it: Item| (it.score as u32, it.id);
    for id in 0..20_000u32 {
        let v = ((next() % 40) as u32, id);
        let at = model.partition_point(|&m| m < v);
        model.insert(at, v);
        let it = Item {
            score: f64::from(v.0),
            id,
        };
        t.insert_where(|o| key(o) < v, it);
        if id % 97 == 0 {
            for _ in 0..20 {
                let probe = if next() % 2 == 0 {
                    model[(next() as usize) % model.len()]
                } else {
                    ((next() % 42) as u32, (next() % 21_000) as u32)
                };
                let want = model.partition_point(|&m| m < probe);
                let mut asked = 0;
                let got = t.rank_by_score(f64::from(probe.0), |id| {
                    asked += 1;
                    id < probe.1
                });
                assert_eq!(got, want, "{probe:?}");
                assert_eq!(got, t.partition_point(|o| key(o) < probe));
                // `tie` is asked only of items of an equal score, at most a node's worth
                // of them on each level.
                if model.iter().all(|m| m.0 != probe.0) {
                    assert_eq!(asked, 0);
                }
                assert!(asked <= LEAF_CAP + 3 * (INNER_CAP + 1), "{asked}");
            }
        }
    }
    t.check();
}
