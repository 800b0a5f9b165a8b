//! Set commands: SADD SREM SCARD SISMEMBER SMISMEMBER SMEMBERS SRANDMEMBER SPOP SMOVE SINTER
//! SINTERCARD SINTERSTORE SUNION SUNIONSTORE SDIFF SDIFFSTORE SSCAN, with Redis 7.0 semantics.
//!
//! A set is an `Object::Set` holding a [`larder_engine::Set`], which implements the set
//! operations; this file parses arguments and shapes replies. The multi-key commands (SMOVE,
//! the intersections, unions and differences) are in `set/multi.rs`. Redis never stores an
//! empty set: every command that can empty one deletes the key in the same critical section.

mod multi;
#[cfg(test)]
mod tests;

use std::cell::Cell;

use larder_engine::feed::class;
use larder_engine::set::Member;
use larder_engine::{Object, Set, Shard, SlotId};
use larder_resp::ReplyBuf;

use crate::args::parse_i64;
use crate::collection;
use crate::error::{self, Error, Result};
use crate::exec::Cmd;
use crate::locks::Scope;
use crate::table::{flags::*, CommandSpec, Group, KeySpec};

/// SSCAN's unparsable cursor.
const INVALID_CURSOR: &str = "ERR invalid cursor";

#[allow(clippy::too_many_arguments)]
const fn cmd(
    name: &'static str,
    arity: i32,
    flags: u32,
    keys: KeySpec,
    summary: &'static str,
    since: &'static str,
    handler: crate::table::Handler,
) -> CommandSpec {
    CommandSpec::new(
        name,
        arity,
        flags,
        keys,
        Group::Set,
        summary,
        since,
        handler,
    )
}

/// SINTERCARD's keys: `numkeys` at argv[1], then the keys.
const NUMKEYS: KeySpec = KeySpec {
    first: 0,
    last: 0,
    step: 0,
    scope: Scope::NumKeys { at: 1 },
};

/// The set family's table. Arity, flags, key positions, summaries and versions are those of
/// Redis 7.0's COMMAND INFO / COMMAND DOCS.
#[rustfmt::skip]
pub static COMMANDS: &[CommandSpec] = &[
    cmd("sadd", -3, WRITE | DENYOOM | FAST, KeySpec::ONE, "Add one or more members to a set", "1.0.0", sadd),
    cmd("srem", -3, WRITE | FAST, KeySpec::ONE, "Remove one or more members from a set", "1.0.0", srem),
    cmd("scard", 2, READONLY | FAST, KeySpec::ONE, "Get the number of members in a set", "1.0.0", scard),
    cmd("sismember", 3, READONLY | FAST, KeySpec::ONE, "Determine if a given value is a member of a set", "1.0.0", sismember),
    cmd("smismember", -3, READONLY | FAST, KeySpec::ONE, "Returns the membership associated with the given elements for a set", "6.2.0", smismember),
    cmd("smembers", 2, READONLY, KeySpec::ONE, "Get all the members in a set", "1.0.0", smembers),
    cmd("srandmember", -2, READONLY, KeySpec::ONE, "Get one or multiple random members from a set", "1.0.0", srandmember),
    cmd("spop", -2, WRITE | FAST, KeySpec::ONE, "Remove and return one or multiple random members from a set", "1.0.0", spop),
    cmd("smove", 4, WRITE | FAST, KeySpec::TWO, "Move a member from one set to another", "1.0.0", multi::smove),
    cmd("sinter", -2, READONLY, KeySpec::ALL, "Intersect multiple sets", "1.0.0", multi::sinter),
    cmd("sintercard", -3, READONLY | MOVABLE_KEYS, NUMKEYS, "Intersect multiple sets and return the cardinality of the result", "7.0.0", multi::sintercard),
    cmd("sinterstore", -3, WRITE | DENYOOM, KeySpec::ALL, "Intersect multiple sets and store the resulting set in a key", "1.0.0", multi::sinterstore),
    cmd("sunion", -2, READONLY, KeySpec::ALL, "Add multiple sets", "1.0.0", multi::sunion),
    cmd("sunionstore", -3, WRITE | DENYOOM, KeySpec::ALL, "Add multiple sets and store the resulting set in a key", "1.0.0", multi::sunionstore),
    cmd("sdiff", -2, READONLY, KeySpec::ALL, "Subtract multiple sets", "1.0.0", multi::sdiff),
    cmd("sdiffstore", -3, WRITE | DENYOOM, KeySpec::ALL, "Subtract multiple sets and store the resulting set in a key", "1.0.0", multi::sdiffstore),
    cmd("sscan", -3, READONLY, KeySpec::ONE, "Incrementally iterate Set elements", "2.8.0", sscan),
];

thread_local! {
    static RANDOM_STATE: Cell<u64> = const { Cell::new(0) };
}

/// A pseudo-random word for SPOP and SRANDMEMBER (per-thread xorshift, seeded from the clock).
fn next_random() -> u64 {
    RANDOM_STATE.with(|s| {
        let mut x = s.get();
        if x == 0 {
            x = larder_engine::now_us() | 1;
        }
        x = crate::state::xorshift(x);
        s.set(x);
        x
    })
}

/// The Set held in `slot`, or WRONGTYPE.
fn set_at(shard: &Shard, slot: SlotId) -> Result<&Set> {
    collection::at(shard, slot)
}

/// Find `key` as a Set for a write: `None` when absent, WRONGTYPE for another type.
fn find_set(c: &Cmd<'_>, shard: &mut Shard, key: &[u8], hash: u64) -> Result<Option<SlotId>> {
    collection::find::<Set>(c, shard, key, hash)
}

/// [`find_set`] for a read: counts the keyspace hit or miss.
fn read_set(c: &Cmd<'_>, shard: &mut Shard, key: &[u8], hash: u64) -> Result<Option<SlotId>> {
    collection::read::<Set>(c, shard, key, hash)
}

/// Modify the Set in `slot` through `f`; the caller then [`settle`]s the key.
fn update<R>(shard: &mut Shard, slot: SlotId, f: impl FnOnce(&mut Set) -> R) -> Result<R> {
    collection::update(shard, slot, f)
}

/// After a write: raise `event`, then delete the key if the Set is left empty.
fn settle(c: &Cmd<'_>, shard: &mut Shard, key: &[u8], slot: SlotId, event: Option<&'static str>) {
    collection::settle::<Set>(c, shard, key, slot, event)
}

/// Reply with one member as a bulk string.
fn bulk_member(out: &mut ReplyBuf, m: Member<'_>) {
    m.with_bytes(|b| out.bulk(b));
}

/// Reply with every member of `s` as a set (RESP3) or an array (RESP2).
fn reply_members(out: &mut ReplyBuf, s: &Set) {
    out.set(s.len());
    for m in s.iter() {
        bulk_member(out, m);
    }
}

/// SADD key member [member ...]
fn sadd(c: &mut Cmd<'_>) -> Result<()> {
    let key = c.args.key()?;
    let members = c.args.rest();
    let limits = c.limits();
    let (mut shard, hash) = c.shard_of(key);
    let added = match find_set(c, &mut shard, key, hash)? {
        // A command that changes nothing is no write (no new version, nothing to replay).
        Some(slot)
            if members
                .iter()
                .all(|m| set_at(&shard, slot).is_ok_and(|s| s.contains(m))) =>
        {
            0
        }
        Some(slot) => {
            let added = update(&mut shard, slot, |s| {
                members.iter().filter(|m| s.insert(m, &limits)).count()
            })?;
            settle(c, &mut shard, key, slot, (added > 0).then_some("sadd"));
            added
        }
        None => {
            let s = Set::from_members(members, &limits);
            let added = s.len();
            shard.insert_object(key, hash, Object::Set(s), 0, c.now_ms);
            c.notify(class::NEW, "new", key);
            c.notify(class::SET, "sadd", key);
            added
        }
    };
    drop(shard);
    c.out.int(added as i64);
    Ok(())
}

/// SREM key member [member ...]
fn srem(c: &mut Cmd<'_>) -> Result<()> {
    let key = c.args.key()?;
    let members = c.args.rest();
    let (mut shard, hash) = c.shard_of(key);
    let removed = match find_set(c, &mut shard, key, hash)? {
        Some(slot)
            if !members
                .iter()
                .any(|m| set_at(&shard, slot).is_ok_and(|s| s.contains(m))) =>
        {
            0
        }
        Some(slot) => {
            let removed = update(&mut shard, slot, |s| {
                members.iter().filter(|m| s.remove(m)).count()
            })?;
            settle(c, &mut shard, key, slot, (removed > 0).then_some("srem"));
            removed
        }
        None => 0,
    };
    drop(shard);
    c.out.int(removed as i64);
    Ok(())
}

/// SCARD key
fn scard(c: &mut Cmd<'_>) -> Result<()> {
    let key = c.args.key()?;
    let len = collection::read_with(c, key, 0, Set::len)?;
    c.out.int(len as i64);
    Ok(())
}

/// SISMEMBER key member
fn sismember(c: &mut Cmd<'_>) -> Result<()> {
    let key = c.args.key()?;
    let member = c.args.next_arg()?;
    let found = collection::read_with(c, key, false, |s: &Set| s.contains(member))?;
    c.out.int(i64::from(found));
    Ok(())
}

/// SMISMEMBER key member [member ...]
fn smismember(c: &mut Cmd<'_>) -> Result<()> {
    let key = c.args.key()?;
    let members = c.args.rest();
    let (mut shard, hash) = c.shard_of(key);
    let set = collection::read_value::<Set>(c, &mut shard, key, hash)?;
    c.out.array(members.len());
    for m in members {
        c.out.int(i64::from(set.is_some_and(|s| s.contains(m))));
    }
    Ok(())
}

/// SMEMBERS key
fn smembers(c: &mut Cmd<'_>) -> Result<()> {
    let key = c.args.key()?;
    let (mut shard, hash) = c.shard_of(key);
    match read_set(c, &mut shard, key, hash)? {
        Some(slot) => reply_members(c.out, set_at(&shard, slot)?),
        None => c.out.set(0),
    }
    Ok(())
}

/// SRANDMEMBER key [count]
fn srandmember(c: &mut Cmd<'_>) -> Result<()> {
    let key = c.args.key()?;
    if c.args.remaining() > 1 {
        return Err(Error::Static(error::SYNTAX));
    }
    let count = match c.args.opt() {
        // Redis reads the count as a long in -LONG_MAX..=LONG_MAX before the key.
        Some(raw) => Some(match parse_i64(raw) {
            None => return Err(Error::Static(error::NOT_INTEGER)),
            Some(i64::MIN) => return Err(Error::Static(SRANDMEMBER_RANGE)),
            Some(n) => n,
        }),
        None => None,
    };
    let (mut shard, hash) = c.shard_of(key);
    let slot = read_set(c, &mut shard, key, hash)?;
    let mut rng = next_random;
    let Some(count) = count else {
        match slot {
            Some(slot) => match set_at(&shard, slot)?.random(&mut rng) {
                Some(m) => bulk_member(c.out, m),
                None => c.out.null(),
            },
            None => c.out.null(),
        }
        return Ok(());
    };
    let Some(slot) = slot else {
        c.out.array(0);
        return Ok(());
    };
    let s = set_at(&shard, slot)?;
    let out = &mut *c.out;
    if count < 0 || count == 1 {
        // Repeats allowed: each pick samples the whole set.
        let n = count.unsigned_abs() as usize;
        out.array(n);
        for _ in 0..n {
            match s.random(&mut rng) {
                Some(m) => bulk_member(out, m),
                None => out.null(),
            }
        }
    } else if count as usize >= s.len() {
        out.array(s.len());
        s.iter().for_each(|m| bulk_member(out, m));
    } else {
        let picks = s.sample_distinct(count as usize, &mut rng);
        out.array(picks.len());
        for i in picks {
            if let Some(m) = s.get(i) {
                bulk_member(out, m);
            }
        }
    }
    Ok(())
}

/// SRANDMEMBER's count of `i64::MIN` (Redis reads it into -LONG_MAX..=LONG_MAX).
const SRANDMEMBER_RANGE: &str =
    "ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807";

/// SPOP key [count]
fn spop(c: &mut Cmd<'_>) -> Result<()> {
    let key = c.args.key()?;
    if c.args.remaining() > 1 {
        return Err(Error::Static(error::SYNTAX));
    }
    let count = match c.args.opt() {
        // Redis gives the same error for a count that is not an integer.
        Some(raw) => Some(match parse_i64(raw) {
            Some(n) if n >= 0 => usize::try_from(n).unwrap_or(usize::MAX),
            _ => return Err(Error::Static(error::NEGATIVE_COUNT)),
        }),
        None => None,
    };
    let (mut shard, hash) = c.shard_of(key);
    let Some(slot) = find_set(c, &mut shard, key, hash)? else {
        match count {
            Some(_) => c.out.set(0),
            None => c.out.null(),
        }
        return Ok(());
    };
    let mut rng = next_random;
    match count {
        None => {
            let popped = update(&mut shard, slot, |s| s.pop_random(&mut rng))?;
            match popped {
                Some(m) => {
                    c.out.bulk(&m);
                    c.propagate(&[b"SREM", key, &m]);
                }
                None => c.out.null(),
            }
        }
        Some(0) => {
            c.out.set(0);
            return Ok(());
        }
        Some(n) => {
            let whole = n >= set_at(&shard, slot)?.len();
            let popped = update(&mut shard, slot, |s| s.pop_many(n, &mut rng))?;
            c.out.set(popped.len());
            for m in &popped {
                c.out.bulk(m);
            }
            // Redis 7.0 replays SPOP as what it did: one DEL for the whole set, else an
            // SREM per member.
            if whole {
                c.propagate(&[b"DEL", key]);
            } else {
                for m in &popped {
                    c.propagate(&[b"SREM", key, m]);
                }
            }
        }
    }
    settle(c, &mut shard, key, slot, Some("spop"));
    Ok(())
}

/// SSCAN key cursor [MATCH pattern] [COUNT count]
fn sscan(c: &mut Cmd<'_>) -> Result<()> {
    let key = c.args.key()?;
    let cursor =
        crate::keys::scan::parse_cursor(c.args.next_arg()?).ok_or(Error::Static(INVALID_CURSOR))?;
    let (mut shard, hash) = c.shard_of(key);
    let Some(slot) = read_set(c, &mut shard, key, hash)? else {
        c.out.array(2);
        c.out.bulk(b"0");
        c.out.array(0);
        return Ok(());
    };
    // Redis parses the options after the lookup.
    let mut count = 10usize;
    let mut pattern = None;
    while let Some(opt) = c.args.opt() {
        if c.args.remaining() == 0 {
            return Err(Error::Static(error::SYNTAX));
        }
        if opt.eq_ignore_ascii_case(b"count") {
            let n = parse_i64(c.args.next_arg()?).ok_or(Error::Static(error::NOT_INTEGER))?;
            if n < 1 {
                return Err(Error::Static(error::SYNTAX));
            }
            count = usize::try_from(n).unwrap_or(usize::MAX);
        } else if opt.eq_ignore_ascii_case(b"match") {
            let p = c.args.next_arg()?;
            pattern = (p != b"*").then_some(p);
        } else {
            return Err(Error::Static(error::SYNTAX));
        }
    }
    let s = set_at(&shard, slot)?;
    let mut found: Vec<Vec<u8>> = Vec::new();
    let next = s.scan(cursor, count, |m| {
        m.with_bytes(|b| {
            if pattern.is_none_or(|p| larder_engine::glob::matches(p, b, false)) {
                found.push(b.to_vec());
            }
        })
    });
    drop(shard);
    c.out.array(2);
    c.out.bulk(next.to_string().as_bytes());
    c.out.array(found.len());
    for m in &found {
        c.out.bulk(m);
    }
    Ok(())
}
