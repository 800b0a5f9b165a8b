//! Whether a value that did not load is a well-formed empty collection. Redis 7.0 never
//! writes one, but its loader skips such keys ("empty keys skipped") instead of failing, and
//! so does larder's; [`read_value`](super::super::read_value) refuses them, so this tells the
//! two cases apart after the fact.

use super::super::length::Reader;
use super::super::{intset, listpack, ziplist, zipmap};

/// Whether `value` (type byte and body) is a collection of no elements.
pub fn is_empty(value: &[u8]) -> bool {
    let mut r = Reader::new(value);
    let Ok(t) = r.u8() else {
        return false;
    };
    match t {
        // LIST, SET, ZSET, HASH, ZSET_2: a count.
        1..=5 => r.length() == Ok(0),
        9 => blob(&mut r).is_some_and(|b| zipmap::decode(&b).is_ok_and(|v| v.is_empty())),
        10 | 12 | 13 => {
            blob(&mut r).is_some_and(|b| ziplist::decode(&b).is_ok_and(|v| v.is_empty()))
        }
        11 => blob(&mut r).is_some_and(|b| intset::decode(&b).is_ok_and(|v| v.is_empty())),
        16 | 17 => blob(&mut r).is_some_and(|b| listpack::decode(&b).is_ok_and(|v| v.is_empty())),
        14 | 18 => empty_quicklist(&mut r, t == 18),
        _ => false,
    }
}

fn blob(r: &mut Reader<'_>) -> Option<Vec<u8>> {
    r.string().ok()
}

/// A quicklist whose nodes are all empty listpacks (or ziplists): Redis skips empty nodes,
/// then the key for having no elements.
fn empty_quicklist(r: &mut Reader<'_>, v2: bool) -> bool {
    let Ok(nodes) = r.length() else {
        return false;
    };
    for _ in 0..nodes {
        if v2 && r.length() != Ok(2) {
            return false;
        }
        let Some(node) = blob(r) else {
            return false;
        };
        let empty = if v2 {
            listpack::decode(&node).is_ok_and(|v| v.is_empty())
        } else {
            ziplist::decode(&node).is_ok_and(|v| v.is_empty())
        };
        if !empty {
            return false;
        }
    }
    true
}
