//! SORT and SORT_RO: the elements of a list, set or sorted set, sorted numerically or
//! lexicographically, by themselves or by other keys (BY), with LIMIT, projected through
//! other keys (GET), optionally stored as a list (STORE). Redis 7.0's `sortCommandGeneric`.
//!
//! BY and GET patterns name arbitrary keys of the database, so the command locks the whole
//! database (`Scope::Db`): the executor holds every shard, and the handler looks keys up
//! through `Cmd::shard_of` as usual.

use std::cmp::Ordering;

use larder_engine::feed::class;
use larder_engine::{List, Object};

use crate::error::{self, Error, Result};
use crate::exec::Cmd;
use crate::locks::Scope;
use crate::table::{flags::*, CommandSpec, Group, KeySpec};

/// A numeric sort met an element (or BY value) that is no number.
const NOT_DOUBLE: &str = "ERR One or more scores can't be converted into double";

/// SORT's key spec: the sorted key first; the whole database is locked for BY/GET/STORE.
const SORT_KEYS: KeySpec = KeySpec::ONE.with_scope(Scope::Db);

/// The family's table.
#[rustfmt::skip]
pub static COMMANDS: &[CommandSpec] = &[
    CommandSpec::new("sort", -2, WRITE | DENYOOM | MOVABLE_KEYS, SORT_KEYS, Group::Generic,
        "Sort the elements in a list, set or sorted set", "1.0.0", sort),
    CommandSpec::new("sort_ro", -2, READONLY | MOVABLE_KEYS, SORT_KEYS, Group::Generic,
        "Sort the elements in a list, set or sorted set. Read-only variant of SORT.", "7.0.0", sort_ro),
];

/// Whether the command may store its result.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Store {
    Allowed,
    Denied,
}

/// SORT's options.
struct Options<'a> {
    by: Option<&'a [u8]>,
    /// BY a pattern without `*`: keep the value's own order.
    dont_sort: bool,
    limit: Option<(i64, i64)>,
    get: Vec<&'a [u8]>,
    desc: bool,
    alpha: bool,
    store: Option<&'a [u8]>,
}

/// Redis's refusals of BY and GET patterns for a user without read access to every key.
const BY_DENIED: &str = "ERR BY option of SORT denied due to insufficient ACL permissions.";
const GET_DENIED: &str = "ERR GET option of SORT denied due to insufficient ACL permissions.";

/// `all_keys`: whether the user may read every key, which BY and GET patterns need (they
/// name keys no ACL check saw).
fn parse<'a>(argv: &'a [&'a [u8]], store: Store, all_keys: bool) -> Result<Options<'a>> {
    let mut o = Options {
        by: None,
        dont_sort: false,
        limit: None,
        get: Vec::new(),
        desc: false,
        alpha: false,
        store: None,
    };
    let mut i = 0;
    while i < argv.len() {
        let word = argv[i];
        let left = argv.len() - i - 1;
        if word.eq_ignore_ascii_case(b"asc") {
            o.desc = false;
        } else if word.eq_ignore_ascii_case(b"desc") {
            o.desc = true;
        } else if word.eq_ignore_ascii_case(b"alpha") {
            o.alpha = true;
        } else if word.eq_ignore_ascii_case(b"limit") && left >= 2 {
            let int = |a: &[u8]| crate::args::parse_i64(a).ok_or(Error::Static(error::NOT_INTEGER));
            o.limit = Some((int(argv[i + 1])?, int(argv[i + 2])?));
            i += 2;
        } else if word.eq_ignore_ascii_case(b"store") && left >= 1 && store == Store::Allowed {
            o.store = Some(argv[i + 1]);
            i += 1;
        } else if word.eq_ignore_ascii_case(b"by") && left >= 1 {
            let pattern = argv[i + 1];
            o.by = Some(pattern);
            // A pattern without `*` names one key for every element: nothing to sort by.
            o.dont_sort = !pattern.contains(&b'*');
            if !o.dont_sort && !all_keys {
                return Err(Error::Static(BY_DENIED));
            }
            i += 1;
        } else if word.eq_ignore_ascii_case(b"get") && left >= 1 {
            if !all_keys {
                return Err(Error::Static(GET_DENIED));
            }
            o.get.push(argv[i + 1]);
            i += 1;
        } else {
            return Err(Error::Static(error::SYNTAX));
        }
        i += 1;
    }
    Ok(o)
}

/// SORT key [BY pattern] [LIMIT offset count] [GET pattern ...] [ASC|DESC] [ALPHA]
/// [STORE destination]
fn sort(c: &mut Cmd<'_>) -> Result<()> {
    run(c, Store::Allowed)
}

/// SORT_RO key [BY pattern] [LIMIT offset count] [GET pattern ...] [ASC|DESC] [ALPHA]
fn sort_ro(c: &mut Cmd<'_>) -> Result<()> {
    run(c, Store::Denied)
}

/// How a value's elements come out before sorting.
enum Source {
    List,
    Set,
    ZSet,
}

/// One element and what it sorts by.
struct Item {
    element: Vec<u8>,
    score: f64,
    /// The BY value for an ALPHA sort by other keys (`None`: the key is missing).
    by: Option<Vec<u8>>,
}

fn run(c: &mut Cmd<'_>, store: Store) -> Result<()> {
    let key = c.args.key()?;
    let all_keys = c.conn.user.reads_every_key(&c.resolved, c.args.argv());
    let mut o = parse(c.args.rest(), store, all_keys)?;
    // The elements, in the value's own order.
    let (source, elements) = {
        let (mut shard, hash) = c.shard_of(key);
        match shard.find_touch(key, hash, c.now_ms, c.access()) {
            None => (Source::List, Vec::new()),
            Some(slot) => match shard.entry(slot).object() {
                Some(Object::List(l)) => (Source::List, l.iter().map(<[u8]>::to_vec).collect()),
                Some(Object::Set(s)) => (Source::Set, s.to_vecs()),
                Some(Object::ZSet(z)) => (
                    Source::ZSet,
                    z.scored().map(|(m, _)| m.to_vec()).collect::<Vec<_>>(),
                ),
                _ => return Err(Error::Static(error::WRONGTYPE)),
            },
        }
    };
    // A set has no order of its own: stored (or replicated) results must not depend on the
    // hash table's, so Redis sorts it lexicographically instead.
    if o.dont_sort && matches!(source, Source::Set) && o.store.is_some() {
        o.dont_sort = false;
        o.alpha = true;
        o.by = None;
    }
    let len = elements.len() as i64;
    let (mut start, mut end) = match o.limit {
        Some((offset, count)) => {
            let start = offset.max(0);
            let end = if count < 0 {
                len - 1
            } else {
                start.saturating_add(count) - 1
            };
            (start, end)
        }
        None => (0, len - 1),
    };
    if start >= len {
        start = len - 1;
        end = len - 2;
    }
    if end >= len {
        end = len - 1;
    }
    let mut items: Vec<Item> = elements
        .into_iter()
        .map(|element| Item {
            element,
            score: 0.0,
            by: None,
        })
        .collect();
    if o.dont_sort {
        // A list or sorted set keeps its order, which DESC reads backwards (a set's has no
        // meaning to reverse).
        if o.desc && !matches!(source, Source::Set) {
            items.reverse();
        }
    } else {
        for item in &mut items {
            let by_value = match o.by {
                Some(pattern) => lookup(c, pattern, &item.element),
                None => None,
            };
            if o.alpha {
                if o.by.is_some() {
                    item.by = by_value;
                }
            } else {
                let text = match (o.by, &by_value) {
                    (Some(_), Some(v)) => Some(&v[..]),
                    (Some(_), None) => None,
                    (None, _) => Some(&item.element[..]),
                };
                if let Some(text) = text {
                    item.score = strtod(text).ok_or(Error::Static(NOT_DOUBLE))?;
                }
            }
        }
        let by = o.by.is_some();
        let (alpha, desc) = (o.alpha, o.desc);
        items.sort_by(|a, b| {
            let order = compare(a, b, alpha, by);
            if desc {
                order.reverse()
            } else {
                order
            }
        });
    }
    let range: &[Item] = if start <= end && end >= 0 {
        &items[start as usize..=end as usize]
    } else {
        &[]
    };
    // The output: each element, or each GET pattern's value for it.
    let mut out: Vec<Option<Vec<u8>>> = Vec::with_capacity(range.len() * o.get.len().max(1));
    for item in range {
        if o.get.is_empty() {
            out.push(Some(item.element.clone()));
        }
        for pattern in &o.get {
            out.push(if *pattern == b"#" {
                Some(item.element.clone())
            } else {
                lookup(c, pattern, &item.element)
            });
        }
    }
    match o.store {
        None => {
            c.out.array(out.len());
            for v in &out {
                match v {
                    Some(v) => c.out.bulk(v),
                    None => c.out.null(),
                }
            }
        }
        Some(dst) => {
            let n = out.len();
            store_list(c, dst, out);
            c.out.int(n as i64);
        }
    }
    Ok(())
}

/// Redis's `sortCompare`: numbers by score, ties broken by the elements' bytes; ALPHA by the
/// element, or with BY by the BY value (a missing one first) and no tie-break: elements with
/// equal BY values keep their order in the source (the sort is stable, as glibc's `qsort`
/// under redis-server is), in DESC too.
fn compare(a: &Item, b: &Item, alpha: bool, by: bool) -> Ordering {
    if !alpha {
        return a
            .score
            .partial_cmp(&b.score)
            .unwrap_or(Ordering::Equal)
            .then_with(|| a.element.cmp(&b.element));
    }
    if !by {
        return a.element.cmp(&b.element);
    }
    match (&a.by, &b.by) {
        (None, None) => Ordering::Equal,
        (None, Some(_)) => Ordering::Less,
        (Some(_), None) => Ordering::Greater,
        (Some(x), Some(y)) => x.cmp(y),
    }
}

/// C's `strtod` over the text up to its first NUL, as SORT reads scores: leading whitespace
/// allowed, nothing after the number, an empty text is 0, NaN and overflow are errors.
fn strtod(text: &[u8]) -> Option<f64> {
    // Redis hands the value to strtod as a C string: it ends at the first NUL byte.
    let text = text.split(|&b| b == 0).next().unwrap_or_default();
    let t = std::str::from_utf8(text).ok()?;
    let t = t.trim_start_matches([' ', '\t', '\n', '\r', '\x0b', '\x0c']);
    if t.is_empty() {
        return Some(0.0);
    }
    let lower = t.to_ascii_lowercase();
    let unsigned = lower.trim_start_matches(['+', '-']);
    // Rust's parser takes "infinity" and "nan", as strtod does; a trailing space it rejects,
    // as SORT does (strtod stops there and the rest is not empty).
    if unsigned.starts_with("0x") {
        return None;
    }
    let v: f64 = lower.parse().ok()?;
    // An overflow ("1e400") is strtod's ERANGE: an error, unlike a written infinity.
    let overflowed = v.is_infinite() && !unsigned.starts_with("inf");
    (!v.is_nan() && !overflowed).then_some(v)
}

/// The value a BY or GET pattern names for `element` (Redis's `lookupKeyByPattern`): the
/// first `*` replaced by the element; `key->field` reads a hash field; a string key's value
/// otherwise. `None` when the key or field is missing, of another type, or the pattern has
/// no `*`.
fn lookup(c: &Cmd<'_>, pattern: &[u8], element: &[u8]) -> Option<Vec<u8>> {
    let star = pattern.iter().position(|&b| b == b'*')?;
    let arrow = pattern[star + 1..]
        .windows(2)
        .position(|w| w == b"->")
        .map(|p| star + 1 + p)
        .filter(|&p| p + 2 < pattern.len());
    let (key_pattern, field) = match arrow {
        Some(p) => (&pattern[..p], Some(&pattern[p + 2..])),
        None => (pattern, None),
    };
    let mut key = Vec::with_capacity(key_pattern.len() + element.len());
    key.extend_from_slice(&key_pattern[..star]);
    key.extend_from_slice(element);
    key.extend_from_slice(&key_pattern[star + 1..]);
    let (mut shard, hash) = c.shard_of(&key);
    let slot = shard.find(&key, hash, c.now_ms)?;
    let entry = shard.entry(slot);
    match (field, entry.object()) {
        (Some(f), Some(Object::Hash(h))) => h.get(f).map(<[u8]>::to_vec),
        (Some(_), _) => None,
        (None, _) => entry.string().map(<[u8]>::to_vec),
    }
}

/// SORT ... STORE: replace `dst` with a list of `out` (a missing GET value stored as an
/// empty string), or delete it when `out` is empty.
fn store_list(c: &mut Cmd<'_>, dst: &[u8], out: Vec<Option<Vec<u8>>>) {
    let (mut shard, hash) = c.shard_of(dst);
    if out.is_empty() {
        crate::collection::delete_destination(c, &mut shard, dst, hash);
        return;
    }
    let existing = shard.find(dst, hash, c.now_ms);
    let limits = c.limits();
    let mut list = List::new();
    let elements: Vec<Vec<u8>> = out.into_iter().map(Option::unwrap_or_default).collect();
    list.push(larder_engine::list::End::Tail, &elements, &limits);
    match existing {
        Some(slot) => {
            shard.set_object(slot, Object::List(list));
            shard.set_expire(slot, None);
        }
        None => {
            shard.insert_object(dst, hash, Object::List(list), 0, c.now_ms);
            c.notify(class::NEW, "new", dst);
        }
    }
    c.notify(class::LIST, "sortstore", dst);
}
