//! The list commands that move elements between keys: LMOVE, RPOPLPUSH and LMPOP, and their
//! cores, which the blocking forms (BLMOVE, BRPOPLPUSH, BLMPOP) run once a key they wait on
//! has elements.
//!
//! Their keys may live on different shards: the key specs declare them (LMOVE's two keys,
//! LMPOP's `numkeys` keys), so the executor locks every shard involved before the handler
//! runs, and the move is atomic.

use larder_engine::feed::class;
use larder_engine::list::End;
use larder_engine::{List, Object};

use super::{find_list, list_at, settle, update};
use crate::args::Args;
use crate::error::{self, Error, Result};
use crate::exec::Cmd;

/// LMPOP's `numkeys` that is not a positive integer.
const NUMKEYS_NOT_POSITIVE: &str = "ERR numkeys should be greater than 0";
/// LMPOP's `COUNT` that is not a positive integer.
const COUNT_NOT_POSITIVE: &str = "ERR count should be greater than 0";

/// The event a pop from `end` raises.
fn pop_event(end: End) -> &'static str {
    match end {
        End::Head => "lpop",
        End::Tail => "rpop",
    }
}

/// The event a push onto `end` raises.
fn push_event(end: End) -> &'static str {
    match end {
        End::Head => "lpush",
        End::Tail => "rpush",
    }
}

/// LEFT or RIGHT (any case), or a syntax error.
pub(crate) fn end_arg(args: &mut Args<'_>) -> Result<End> {
    if args.eat("LEFT") {
        Ok(End::Head)
    } else if args.eat("RIGHT") {
        Ok(End::Tail)
    } else {
        Err(Error::Static(error::SYNTAX))
    }
}

/// LMOVE source destination LEFT|RIGHT LEFT|RIGHT
pub(super) fn lmove(c: &mut Cmd<'_>) -> Result<()> {
    let src = c.args.key()?;
    let dst = c.args.key()?;
    let from = end_arg(&mut c.args)?;
    let to = end_arg(&mut c.args)?;
    if !super::move_element(c, src, dst, from, to)? {
        c.out.null();
    }
    Ok(())
}

/// RPOPLPUSH source destination
pub(super) fn rpoplpush(c: &mut Cmd<'_>) -> Result<()> {
    let src = c.args.key()?;
    let dst = c.args.key()?;
    if !super::move_element(c, src, dst, End::Tail, End::Head)? {
        c.out.null();
    }
    Ok(())
}

/// The core of LMOVE (and RPOPLPUSH, BLMOVE, BRPOPLPUSH): pop one element from `from` of the
/// list at `src` and push it onto `to` of the list at `dst` (created if absent), in the
/// selected database. Both keys must be in the command's lock plan (the key spec's first two
/// keys).
///
/// Returns `Ok(true)` after replying with the moved element, or `Ok(false)`, having written
/// nothing and changed nothing, when `src` does not exist (LMOVE replies null there; a
/// blocking form waits). WRONGTYPE when `src` is no list, or when `src` exists and `dst` is
/// no list; then nothing changed either. `src == dst` rotates the list.
///
/// Raises Redis 7.0's events in its order: `new` (a created `dst`), `lpush`/`rpush` on
/// `dst`, `lpop`/`rpop` on `src`, and `del` when `src` is left empty. Propagation is the
/// caller's: LMOVE replays as itself; a blocking form records LMOVE or RPOPLPUSH.
pub(crate) fn move_element(
    c: &mut Cmd<'_>,
    src: &[u8],
    dst: &[u8],
    from: End,
    to: End,
) -> Result<bool> {
    let db = c.conn.db;
    let limits = c.limits();
    let (mut pair, src_hash, dst_hash) = c.shard_pair((db, src), (db, dst));
    let Some(src_slot) = find_list(c, pair.src(), src, src_hash)? else {
        return Ok(false);
    };
    // The destination is checked before anything changes, as Redis does.
    let dst_slot = find_list(c, pair.dst(), dst, dst_hash)?;
    // Stored lists are never empty; an empty one would be no source, as in Redis.
    let Some(element) = update(pair.src(), src_slot, |l| l.pop(from))? else {
        return Ok(false);
    };
    match dst_slot {
        Some(slot) => {
            update(pair.dst(), slot, |l| l.push(to, &[&*element], &limits))?;
        }
        None => {
            let mut l = List::new();
            l.push(to, &[&*element], &limits);
            pair.dst()
                .insert_object(dst, dst_hash, Object::List(l), 0, c.now_ms);
            c.notify(class::NEW, "new", dst);
        }
    }
    c.notify(class::LIST, push_event(to), dst);
    // Slots are stable: the destination's insert left the source's where it was.
    settle(c, pair.src(), src, src_slot, Some(pop_event(from)));
    drop(pair);
    c.out.bulk(&element);
    Ok(true)
}

/// LMPOP numkeys key [key ...] LEFT|RIGHT [COUNT count]
pub(super) fn lmpop(c: &mut Cmd<'_>) -> Result<()> {
    let (keys, end, count) = mpop_args(c.args.rest())?;
    if !super::pop_first(c, keys, end, count)? {
        c.out.null_array();
    }
    Ok(())
}

/// LMPOP's arguments from `numkeys` on (BLMPOP's after its timeout): the keys, the end and
/// the count (1 without `COUNT`), with Redis's errors.
pub(crate) fn mpop_args<'a>(argv: &'a [&'a [u8]]) -> Result<(&'a [&'a [u8]], End, usize)> {
    let (first, argv) = argv.split_first().ok_or(Error::Static(error::SYNTAX))?;
    let numkeys = crate::args::parse_i64(first)
        .filter(|&n| n > 0)
        .ok_or(Error::Static(NUMKEYS_NOT_POSITIVE))?;
    // The direction must follow the keys.
    let numkeys = usize::try_from(numkeys)
        .ok()
        .filter(|&n| n < argv.len())
        .ok_or(Error::Static(error::SYNTAX))?;
    let (keys, options) = argv.split_at(numkeys);
    let end = match options[0] {
        w if w.eq_ignore_ascii_case(b"LEFT") => End::Head,
        w if w.eq_ignore_ascii_case(b"RIGHT") => End::Tail,
        _ => return Err(Error::Static(error::SYNTAX)),
    };
    let mut count = None;
    let mut rest = options[1..].iter();
    while let Some(opt) = rest.next() {
        match rest.next() {
            Some(value) if count.is_none() && opt.eq_ignore_ascii_case(b"COUNT") => {
                count = Some(
                    crate::args::parse_i64(value)
                        .filter(|&n| n > 0)
                        .ok_or(Error::Static(COUNT_NOT_POSITIVE))? as usize,
                );
            }
            _ => return Err(Error::Static(error::SYNTAX)),
        }
    }
    Ok((keys, end, count.unwrap_or(1)))
}

/// The core of LMPOP (and BLMPOP): pop up to `count` elements from `end` of the first of
/// `keys` that exists, in the selected database, and reply `[key, [elements]]` (the elements
/// in the order they left). Every key must be in the command's lock plan.
///
/// Returns `Ok(true)` after replying, or `Ok(false)`, having written nothing, when none of
/// the keys exists (LMPOP replies a null array; BLMPOP waits). WRONGTYPE when a key met
/// before the first list is no list. Raises `lpop`/`rpop`, then `del` when the list is left
/// empty, and records `LPOP key n` / `RPOP key n` for replay, as Redis 7.0 does.
pub(crate) fn pop_first(c: &mut Cmd<'_>, keys: &[&[u8]], end: End, count: usize) -> Result<bool> {
    for &key in keys {
        let (mut shard, hash) = c.shard_of(key);
        let Some(slot) = find_list(c, &mut shard, key, hash)? else {
            continue;
        };
        let n = count.min(list_at(&shard, slot)?.len());
        let out = &mut *c.out;
        update(&mut shard, slot, |l| {
            out.array(2);
            out.bulk(key);
            let popped = l.pop_many(end, n);
            out.array(popped.len());
            for e in popped {
                out.bulk(&e);
            }
        })?;
        settle(c, &mut shard, key, slot, Some(pop_event(end)));
        drop(shard);
        let verb: &[u8] = match end {
            End::Head => b"LPOP",
            End::Tail => b"RPOP",
        };
        if c.records_commands() {
            c.propagate(&[verb, key, n.to_string().as_bytes()]);
        }
        return Ok(true);
    }
    Ok(false)
}
