//! The blocking commands' table and handlers: BLPOP BRPOP BLMOVE BRPOPLPUSH BLMPOP BZPOPMIN
//! BZPOPMAX BZMPOP. Each
//! tries to serve from the first of its keys that can, as its non-blocking form would (the
//! list family's cores), and otherwise waits ([`super::wait`]).

use larder_engine::feed::class;
use larder_engine::list::End as ListEnd;
use larder_engine::zset::End as ZEnd;
use larder_engine::{Object, Shard, SlotId};

use crate::error::{self, Error, Result};
use crate::exec::Cmd;
use crate::locks::Scope;
use crate::table::{flags::*, CommandSpec, Group, KeySpec};

/// Keys from the first argument to the one before the timeout.
const KEYS_BEFORE_TIMEOUT: KeySpec = KeySpec {
    first: 1,
    last: -2,
    step: 1,
    scope: crate::locks::Scope::Keys,
};

/// The family's table. Arity, flags and key positions are Redis 7.0's.
#[rustfmt::skip]
pub static COMMANDS: &[CommandSpec] = &[
    CommandSpec::new("blpop", -3, WRITE | NOSCRIPT | BLOCKING, KEYS_BEFORE_TIMEOUT, Group::List,
        "Remove and get the first element in a list, or block until one is available", "2.0.0", blpop),
    CommandSpec::new("brpop", -3, WRITE | NOSCRIPT | BLOCKING, KEYS_BEFORE_TIMEOUT, Group::List,
        "Remove and get the last element in a list, or block until one is available", "2.0.0", brpop),
    CommandSpec::new("brpoplpush", 4, WRITE | DENYOOM | NOSCRIPT | BLOCKING, KeySpec::TWO, Group::List,
        "Pop an element from a list, push it to another list and return it; or block until one is available", "2.2.0", brpoplpush),
    CommandSpec::new("blmove", 6, WRITE | DENYOOM | NOSCRIPT | BLOCKING, KeySpec::TWO, Group::List,
        "Pop an element from a list, push it to another list and return it; or block until one is available", "6.2.0", blmove),
    CommandSpec::new("blmpop", -5, WRITE | BLOCKING | MOVABLE_KEYS, KeySpec::NONE.with_scope(Scope::NumKeys { at: 2 }), Group::List,
        "Pop elements from a list, or block until one is available", "7.0.0", blmpop),
    CommandSpec::new("bzpopmin", -3, WRITE | NOSCRIPT | BLOCKING | FAST, KEYS_BEFORE_TIMEOUT, Group::SortedSet,
        "Remove and return the member with the lowest score from one or more sorted sets, or block until one is available", "5.0.0", bzpopmin),
    CommandSpec::new("bzpopmax", -3, WRITE | NOSCRIPT | BLOCKING | FAST, KEYS_BEFORE_TIMEOUT, Group::SortedSet,
        "Remove and return the member with the highest score from one or more sorted sets, or block until one is available", "5.0.0", bzpopmax),
    CommandSpec::new("bzmpop", -5, WRITE | BLOCKING | MOVABLE_KEYS, KeySpec::NONE.with_scope(Scope::NumKeys { at: 2 }), Group::SortedSet,
        "Remove and return members with scores in a sorted set or block until one is available", "7.0.0", bzmpop),
];

/// BLPOP key [key ...] timeout
fn blpop(c: &mut Cmd<'_>) -> Result<()> {
    pop(c, ListEnd::Head)
}

/// BRPOP key [key ...] timeout
fn brpop(c: &mut Cmd<'_>) -> Result<()> {
    pop(c, ListEnd::Tail)
}

/// The list at `slot`: `Ok(None)` when it holds another type and the client is woken to try
/// again (Redis 7.0 keeps waiting), WRONGTYPE on the first try.
fn list_at(c: &Cmd<'_>, shard: &Shard, slot: SlotId) -> Result<bool> {
    match shard.entry(slot).object() {
        Some(Object::List(_)) => Ok(true),
        _ if super::retrying(c) => Ok(false),
        _ => Err(Error::Static(error::WRONGTYPE)),
    }
}

fn pop(c: &mut Cmd<'_>, end: ListEnd) -> Result<()> {
    let argv = c.args.rest();
    let (keys, timeout) = argv.split_at(argv.len() - 1);
    let deadline = super::deadline_ms(timeout[0], c.now_ms)?;
    for &key in keys {
        let (mut shard, hash) = c.shard_of(key);
        let Some(slot) = shard.find_touch(key, hash, c.now_ms, c.access()) else {
            continue;
        };
        if !list_at(c, &shard, slot)? {
            continue;
        }
        super::done(c);
        // The reply is written from the element's bytes before they leave the list.
        let out = &mut *c.out;
        let popped = shard.object_mut(slot, |o| match o {
            Object::List(l) => l.pop_with(end, |element| {
                out.array(2);
                out.bulk(key);
                out.bulk(element);
            }),
            _ => None,
        });
        // Stored lists are never empty, so a list pops an element.
        if popped.is_none() {
            return Err(Error::Static(error::WRONGTYPE));
        }
        let (event, replay): (&str, &[u8]) = match end {
            ListEnd::Head => ("lpop", b"LPOP"),
            ListEnd::Tail => ("rpop", b"RPOP"),
        };
        c.notify(class::LIST, event, key);
        if matches!(shard.entry(slot).object(), Some(Object::List(l)) if l.is_empty()) {
            shard.remove(slot);
            c.notify(class::GENERIC, "del", key);
        }
        drop(shard);
        c.propagate(&[replay, key]);
        return Ok(());
    }
    super::wait(c, keys, deadline)
}

/// Whether `key` holds a value of another type than a list while this run is a blocked
/// client's retry: then the key is passed over, as Redis 7.0 keeps such a client waiting.
fn passed_over(c: &Cmd<'_>, key: &[u8]) -> bool {
    passed_over_as(c, key, |o| matches!(o, Object::List(_)))
}

/// [`passed_over`] for a command that pops from values `wanted` accepts.
fn passed_over_as(c: &Cmd<'_>, key: &[u8], wanted: impl Fn(&Object) -> bool) -> bool {
    if !super::retrying(c) {
        return false;
    }
    let (mut shard, hash) = c.shard_of(key);
    shard
        .find(key, hash, c.now_ms)
        .is_some_and(|slot| !shard.entry(slot).object().is_some_and(&wanted))
}

fn is_zset(o: &Object) -> bool {
    matches!(o, Object::ZSet(_))
}

/// BRPOPLPUSH source destination timeout
fn brpoplpush(c: &mut Cmd<'_>) -> Result<()> {
    let src = c.args.key()?;
    let dst = c.args.key()?;
    let deadline = super::deadline_ms(c.args.next_arg()?, c.now_ms)?;
    bmove(c, src, dst, (ListEnd::Tail, ListEnd::Head), deadline, None)
}

/// BLMOVE source destination LEFT|RIGHT LEFT|RIGHT timeout
fn blmove(c: &mut Cmd<'_>) -> Result<()> {
    let src = c.args.key()?;
    let dst = c.args.key()?;
    let from_arg = c.args.peek();
    let from = crate::list::end_arg(&mut c.args)?;
    let to_arg = c.args.peek();
    let to = crate::list::end_arg(&mut c.args)?;
    let deadline = super::deadline_ms(c.args.next_arg()?, c.now_ms)?;
    bmove(c, src, dst, (from, to), deadline, from_arg.zip(to_arg))
}

/// Move one element from `src` to `dst` (the ends in `ends`) or wait on `src`. `words` are
/// BLMOVE's direction arguments, for the LMOVE it replays as; BRPOPLPUSH has none and
/// replays as RPOPLPUSH.
fn bmove(
    c: &mut Cmd<'_>,
    src: &[u8],
    dst: &[u8],
    ends: (ListEnd, ListEnd),
    deadline: u64,
    words: Option<(&[u8], &[u8])>,
) -> Result<()> {
    if !passed_over(c, src) && crate::list::move_element(c, src, dst, ends.0, ends.1)? {
        super::done(c);
        match words {
            Some((from, to)) => c.propagate(&[b"LMOVE", src, dst, from, to]),
            None => c.propagate(&[b"RPOPLPUSH", src, dst]),
        }
        return Ok(());
    }
    if c.conn.in_exec {
        // Inside EXEC nothing blocks; Redis answers these two with a null bulk here, where
        // the other blocking commands (and their own timeout) answer a null array.
        super::done(c);
        c.out.null();
        return Ok(());
    }
    super::wait(c, &[src], deadline)
}

/// BLMPOP timeout numkeys key [key ...] LEFT|RIGHT [COUNT count]
fn blmpop(c: &mut Cmd<'_>) -> Result<()> {
    let deadline = super::deadline_ms(c.args.next_arg()?, c.now_ms)?;
    let (keys, end, count) = crate::list::mpop_args(c.args.rest())?;
    let ready: Vec<&[u8]> = keys
        .iter()
        .copied()
        .filter(|k| !passed_over(c, k))
        .collect();
    if crate::list::pop_first(c, &ready, end, count)? {
        super::done(c);
        return Ok(());
    }
    super::wait(c, keys, deadline)
}

/// BZPOPMIN key [key ...] timeout
fn bzpopmin(c: &mut Cmd<'_>) -> Result<()> {
    bzpop(c, ZEnd::Min)
}

/// BZPOPMAX key [key ...] timeout
fn bzpopmax(c: &mut Cmd<'_>) -> Result<()> {
    bzpop(c, ZEnd::Max)
}

fn bzpop(c: &mut Cmd<'_>, end: ZEnd) -> Result<()> {
    let argv = c.args.rest();
    let (keys, timeout) = argv.split_at(argv.len() - 1);
    let deadline = super::deadline_ms(timeout[0], c.now_ms)?;
    for &key in keys {
        if !passed_over_as(c, key, is_zset) && crate::zset::pop_one(c, key, end)? {
            super::done(c);
            return Ok(());
        }
    }
    super::wait(c, keys, deadline)
}

/// BZMPOP timeout numkeys key [key ...] MIN|MAX [COUNT count]
fn bzmpop(c: &mut Cmd<'_>) -> Result<()> {
    let deadline = super::deadline_ms(c.args.next_arg()?, c.now_ms)?;
    let (keys, end, count) = crate::zset::mpop_args(&mut c.args)?;
    let ready: Vec<&[u8]> = keys
        .iter()
        .copied()
        .filter(|k| !passed_over_as(c, k, is_zset))
        .collect();
    if crate::zset::pop_first(c, &ready, end, count)? {
        super::done(c);
        return Ok(());
    }
    super::wait(c, &keys, deadline)
}
