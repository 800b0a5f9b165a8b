//! List commands: LPUSH RPUSH LPUSHX RPUSHX LPOP RPOP LLEN LRANGE LINDEX LSET LREM LTRIM
//! LINSERT LPOS, and in `moves.rs` LMOVE RPOPLPUSH LMPOP, with Redis 7.0 semantics.
//!
//! A list is an `Object::List` holding a [`larder_engine::List`], which implements the list
//! operations; this file parses arguments and shapes replies. Redis never stores an empty
//! list: every command that can empty one deletes the key in the same critical section.
//!
//! The blocking commands reuse the cores of LMOVE and LMPOP: [`move_element`] and
//! [`pop_first`].

use larder_engine::feed::class;
use larder_engine::list::End;
use larder_engine::{List, Object, Place, Shard, SlotId};
use larder_resp::ReplyBuf;

use crate::args::Args;
use crate::collection;
use crate::error::{self, Error, Result};
use crate::exec::Cmd;
use crate::table::{flags::*, CommandSpec, Group, KeySpec, Scope};

mod moves;

pub(crate) use moves::{end_arg, move_element, mpop_args, pop_first};

/// LSET's index past either end.
const INDEX_OUT_OF_RANGE: &str = "ERR index out of range";
/// LPOS's `RANK 0`.
const RANK_ZERO: &str = "ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use negative to start from the end of the list";
/// LPOS's `COUNT` that is negative or no integer.
const COUNT_NEGATIVE: &str = "ERR COUNT can't be negative";
/// LPOS's `MAXLEN` that is negative or no integer.
const MAXLEN_NEGATIVE: &str = "ERR MAXLEN can't be negative";

const fn cmd(
    name: &'static str,
    arity: i32,
    flags: u32,
    summary: &'static str,
    since: &'static str,
    handler: crate::table::Handler,
) -> CommandSpec {
    CommandSpec::new(
        name,
        arity,
        flags,
        KeySpec::ONE,
        Group::List,
        summary,
        since,
        handler,
    )
}

/// The list family's table. Arity, flags, key positions, summaries and versions are those of
/// Redis 7.0's COMMAND INFO / COMMAND DOCS.
#[rustfmt::skip]
pub static COMMANDS: &[CommandSpec] = &[
    cmd("lpush", -3, WRITE | DENYOOM | FAST, "Prepend one or multiple elements to a list", "1.0.0", lpush),
    cmd("rpush", -3, WRITE | DENYOOM | FAST, "Append one or multiple elements to a list", "1.0.0", rpush),
    cmd("lpushx", -3, WRITE | DENYOOM | FAST, "Prepend an element to a list, only if the list exists", "2.2.0", lpushx),
    cmd("rpushx", -3, WRITE | DENYOOM | FAST, "Append an element to a list, only if the list exists", "2.2.0", rpushx),
    cmd("lpop", -2, WRITE | FAST, "Remove and get the first elements in a list", "1.0.0", lpop),
    cmd("rpop", -2, WRITE | FAST, "Remove and get the last elements in a list", "1.0.0", rpop),
    cmd("llen", 2, READONLY | FAST, "Get the length of a list", "1.0.0", llen),
    cmd("lrange", 4, READONLY, "Get a range of elements from a list", "1.0.0", lrange),
    cmd("lindex", 3, READONLY, "Get an element from a list by its index", "1.0.0", lindex),
    cmd("lset", 4, WRITE | DENYOOM, "Set the value of an element in a list by its index", "1.0.0", lset),
    cmd("lrem", 4, WRITE, "Remove elements from a list", "1.0.0", lrem),
    cmd("ltrim", 4, WRITE, "Trim a list to the specified range", "1.0.0", ltrim),
    cmd("linsert", 5, WRITE | DENYOOM, "Insert an element before or after another element in a list", "2.2.0", linsert),
    cmd("lpos", -3, READONLY, "Return the index of matching elements on a list", "6.0.6", lpos),
    CommandSpec::new("lmove", 5, WRITE | DENYOOM, KeySpec::TWO, Group::List, "Pop an element from a list, push it to another list and return it", "6.2.0", moves::lmove),
    CommandSpec::new("rpoplpush", 3, WRITE | DENYOOM, KeySpec::TWO, Group::List, "Remove the last element in a list, prepend it to another list and return it", "1.2.0", moves::rpoplpush),
    CommandSpec::new("lmpop", -4, WRITE | MOVABLE_KEYS, KeySpec::NONE.with_scope(Scope::NumKeys { at: 1 }), Group::List, "Pop elements from a list", "7.0.0", moves::lmpop),
];

/// Whether a push may create the list (LPUSH) or needs it to exist (LPUSHX).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Create {
    Yes,
    IfExists,
}

/// The List held in `slot`, or WRONGTYPE.
pub(crate) fn list_at(shard: &Shard, slot: SlotId) -> Result<&List> {
    collection::at(shard, slot)
}

/// Find `key` as a List for a write: `None` when absent, WRONGTYPE for another type.
pub(crate) fn find_list(
    c: &Cmd<'_>,
    shard: &mut Shard,
    key: &[u8],
    hash: u64,
) -> Result<Option<SlotId>> {
    collection::find::<List>(c, shard, key, hash)
}

/// Modify the List in `slot` through `f`; the caller then [`settle`]s the key.
pub(crate) fn update<R>(
    shard: &mut Shard,
    slot: SlotId,
    f: impl FnOnce(&mut List) -> R,
) -> Result<R> {
    collection::update(shard, slot, f)
}

/// After a write: raise `event`, then delete the key if the List is left empty.
pub(crate) fn settle(
    c: &Cmd<'_>,
    shard: &mut Shard,
    key: &[u8],
    slot: SlotId,
    event: Option<&'static str>,
) {
    collection::settle::<List>(c, shard, key, slot, event)
}

/// LPUSH key element [element ...]
fn lpush(c: &mut Cmd<'_>) -> Result<()> {
    push(c, End::Head, Create::Yes)
}

/// RPUSH key element [element ...]
fn rpush(c: &mut Cmd<'_>) -> Result<()> {
    push(c, End::Tail, Create::Yes)
}

/// LPUSHX key element [element ...]
fn lpushx(c: &mut Cmd<'_>) -> Result<()> {
    push(c, End::Head, Create::IfExists)
}

/// RPUSHX key element [element ...]
fn rpushx(c: &mut Cmd<'_>) -> Result<()> {
    push(c, End::Tail, Create::IfExists)
}

fn push(c: &mut Cmd<'_>, end: End, create: Create) -> Result<()> {
    let key = c.args.key()?;
    let elements = c.args.rest();
    let limits = c.limits();
    let add = |l: &mut List| l.push(end, elements, &limits);
    // LPUSHX and RPUSHX raise `lpush` and `rpush`, as in Redis.
    let event = match end {
        End::Head => "lpush",
        End::Tail => "rpush",
    };
    let (mut shard, hash) = c.shard_of(key);
    let len = match find_list(c, &mut shard, key, hash)? {
        Some(slot) => {
            let len = update(&mut shard, slot, add)?;
            settle(c, &mut shard, key, slot, Some(event));
            len
        }
        None if create == Create::Yes => {
            let mut l = List::new();
            let len = add(&mut l);
            let slot = shard.insert_object(key, hash, Object::List(l), 0, c.now_ms);
            c.notify(class::NEW, "new", key);
            settle(c, &mut shard, key, slot, Some(event));
            len
        }
        None => 0,
    };
    drop(shard);
    c.out.int(len as i64);
    Ok(())
}

/// LPOP key [count]
fn lpop(c: &mut Cmd<'_>) -> Result<()> {
    pop(c, End::Head)
}

/// RPOP key [count]
fn rpop(c: &mut Cmd<'_>) -> Result<()> {
    pop(c, End::Tail)
}

fn pop(c: &mut Cmd<'_>, end: End) -> Result<()> {
    let key = c.args.key()?;
    if c.args.remaining() > 1 {
        return Err(error::wrong_arity(c.resolved.full_name));
    }
    let count = match c.args.opt() {
        Some(raw) => Some(
            crate::args::parse_i64(raw)
                .filter(|&n| n >= 0)
                .ok_or(Error::Static(error::NEGATIVE_COUNT))? as usize,
        ),
        None => None,
    };
    let (mut shard, hash) = c.shard_of(key);
    let Some(slot) = find_list(c, &mut shard, key, hash)? else {
        match count {
            Some(_) => c.out.null_array(),
            None => c.out.null(),
        }
        return Ok(());
    };
    let event = match end {
        End::Head => "lpop",
        End::Tail => "rpop",
    };
    match count {
        None => {
            let out = &mut *c.out;
            if update(&mut shard, slot, |l| l.pop_with(end, |e| out.bulk(e)))?.is_none() {
                out.null();
            }
        }
        // A count of 0 pops nothing and raises nothing.
        Some(0) => {
            c.out.array(0);
            return Ok(());
        }
        Some(n) => {
            let out = &mut *c.out;
            update(&mut shard, slot, |l| reply_popped(out, l.pop_many(end, n)))?;
        }
    }
    settle(c, &mut shard, key, slot, Some(event));
    Ok(())
}

/// The reply to LPOP / RPOP with a count: the popped elements, in the order they left.
fn reply_popped(out: &mut ReplyBuf, popped: impl ExactSizeIterator<Item = Box<[u8]>>) {
    out.array(popped.len());
    for e in popped {
        out.bulk(&e);
    }
}

/// LLEN key
fn llen(c: &mut Cmd<'_>) -> Result<()> {
    let key = c.args.key()?;
    let len = collection::read_with(c, key, 0, List::len)?;
    c.out.int(len as i64);
    Ok(())
}

/// LRANGE key start stop
fn lrange(c: &mut Cmd<'_>) -> Result<()> {
    let key = c.args.key()?;
    let start = c.args.i64()?;
    let stop = c.args.i64()?;
    let (mut shard, hash) = c.shard_of(key);
    let found = shard.find_touch(key, hash, c.now_ms, c.access());
    c.hit(found.is_some());
    let Some(slot) = found else {
        c.out.array(0);
        return Ok(());
    };
    let elements = list_at(&shard, slot)?.range(start, stop);
    c.out.array(elements.len());
    for e in elements {
        c.out.bulk(e);
    }
    Ok(())
}

/// LINDEX key index
fn lindex(c: &mut Cmd<'_>) -> Result<()> {
    let key = c.args.key()?;
    let raw_index = c.args.next_arg()?;
    let (mut shard, hash) = c.shard_of(key);
    let found = shard.find_touch(key, hash, c.now_ms, c.access());
    c.hit(found.is_some());
    let Some(slot) = found else {
        c.out.null();
        return Ok(());
    };
    // Redis looks the key up before it parses the index.
    let l = list_at(&shard, slot)?;
    let index = index_arg(raw_index)?;
    match l.get(index) {
        Some(e) => c.out.bulk(e),
        None => c.out.null(),
    }
    Ok(())
}

fn index_arg(raw: &[u8]) -> Result<i64> {
    crate::args::parse_i64(raw).ok_or(Error::Static(error::NOT_INTEGER))
}

/// LSET key index element
fn lset(c: &mut Cmd<'_>) -> Result<()> {
    let key = c.args.key()?;
    let raw_index = c.args.next_arg()?;
    let element = c.args.next_arg()?;
    let (mut shard, hash) = c.shard_of(key);
    let slot = find_list(c, &mut shard, key, hash)?.ok_or(Error::Static(error::NO_SUCH_KEY))?;
    // Redis looks the key up before it parses the index.
    let index = index_arg(raw_index)?;
    if list_at(&shard, slot)?.position(index).is_none() {
        return Err(Error::Static(INDEX_OUT_OF_RANGE));
    }
    let limits = c.limits();
    update(&mut shard, slot, |l| l.set_in(index, element, &limits))?;
    settle(c, &mut shard, key, slot, Some("lset"));
    drop(shard);
    c.out.simple("OK");
    Ok(())
}

/// LREM key count element
fn lrem(c: &mut Cmd<'_>) -> Result<()> {
    let key = c.args.key()?;
    let count = c.args.i64()?;
    let element = c.args.next_arg()?;
    let (mut shard, hash) = c.shard_of(key);
    let removed = match find_list(c, &mut shard, key, hash)? {
        Some(slot) => {
            let removed = update(&mut shard, slot, |l| l.remove_matching(count, element))?;
            settle(c, &mut shard, key, slot, (removed > 0).then_some("lrem"));
            removed
        }
        None => 0,
    };
    drop(shard);
    c.out.int(removed as i64);
    Ok(())
}

/// LTRIM key start stop
fn ltrim(c: &mut Cmd<'_>) -> Result<()> {
    let key = c.args.key()?;
    let start = c.args.i64()?;
    let stop = c.args.i64()?;
    let (mut shard, hash) = c.shard_of(key);
    if let Some(slot) = find_list(c, &mut shard, key, hash)? {
        update(&mut shard, slot, |l| l.trim(start, stop))?;
        // Raised even when the range keeps every element, as in Redis.
        settle(c, &mut shard, key, slot, Some("ltrim"));
    }
    drop(shard);
    c.out.simple("OK");
    Ok(())
}

/// LINSERT key BEFORE|AFTER pivot element
fn linsert(c: &mut Cmd<'_>) -> Result<()> {
    let key = c.args.key()?;
    let place = where_arg(&mut c.args)?;
    let pivot = c.args.next_arg()?;
    let element = c.args.next_arg()?;
    let (mut shard, hash) = c.shard_of(key);
    let len = match find_list(c, &mut shard, key, hash)? {
        // The pivot is looked for before the write, so that a missing pivot is no write.
        Some(slot) => match list_at(&shard, slot)?.find(pivot) {
            Some(i) => {
                let limits = c.limits();
                let len = update(&mut shard, slot, |l| {
                    l.insert_in(i, place, element, &limits)
                })?;
                if len.is_some() {
                    settle(c, &mut shard, key, slot, Some("linsert"));
                }
                len.map_or(-1, |len| len as i64)
            }
            None => -1,
        },
        None => 0,
    };
    drop(shard);
    c.out.int(len);
    Ok(())
}

/// LPOS key element [RANK rank] [COUNT num-matches] [MAXLEN len]
fn lpos(c: &mut Cmd<'_>) -> Result<()> {
    let key = c.args.key()?;
    let element = c.args.next_arg()?;
    let (mut rank, mut count, mut maxlen) = (1i64, None, 0usize);
    // Options are read (and rejected) in order, before the key is looked up; a later one
    // overrides an earlier one.
    while let Some(opt) = c.args.opt() {
        let value = c.args.opt();
        let Some(value) = value else {
            return Err(Error::Static(error::SYNTAX));
        };
        if opt.eq_ignore_ascii_case(b"RANK") {
            rank = index_arg(value)?;
            if rank == 0 {
                return Err(Error::Static(RANK_ZERO));
            }
        } else if opt.eq_ignore_ascii_case(b"COUNT") {
            count = Some(non_negative(value, COUNT_NEGATIVE)?);
        } else if opt.eq_ignore_ascii_case(b"MAXLEN") {
            maxlen = non_negative(value, MAXLEN_NEGATIVE)?;
        } else {
            return Err(Error::Static(error::SYNTAX));
        }
    }
    // A negative rank counts matches from the tail. Redis negates it as a C long, so
    // i64::MIN stays negative and every match satisfies it: like -1.
    let (from, skip) = match rank {
        i64::MIN => (End::Tail, 0),
        r if r < 0 => (End::Tail, (-r - 1) as usize),
        r => (End::Head, (r - 1) as usize),
    };
    let (mut shard, hash) = c.shard_of(key);
    let found = shard.find_touch(key, hash, c.now_ms, c.access());
    c.hit(found.is_some());
    let Some(slot) = found else {
        match count {
            Some(_) => c.out.array(0),
            None => c.out.null(),
        }
        return Ok(());
    };
    let mut matches = list_at(&shard, slot)?
        .positions(element, from, maxlen)
        .skip(skip);
    match count {
        None => match matches.next() {
            Some(i) => c.out.int(i as i64),
            None => c.out.null(),
        },
        Some(n) => {
            let n = if n == 0 { usize::MAX } else { n };
            let found: Vec<usize> = matches.take(n).collect();
            c.out.array(found.len());
            for i in found {
                c.out.int(i as i64);
            }
        }
    }
    Ok(())
}

/// A count that must be a non-negative integer, rejected with `message` otherwise.
fn non_negative(raw: &[u8], message: &'static str) -> Result<usize> {
    crate::args::parse_i64(raw)
        .and_then(|n| usize::try_from(n).ok())
        .ok_or(Error::Static(message))
}

/// BEFORE or AFTER.
fn where_arg(args: &mut Args<'_>) -> Result<Place> {
    if args.eat("AFTER") {
        Ok(Place::After)
    } else if args.eat("BEFORE") {
        Ok(Place::Before)
    } else {
        Err(Error::Static(error::SYNTAX))
    }
}

#[cfg(test)]
mod tests;
