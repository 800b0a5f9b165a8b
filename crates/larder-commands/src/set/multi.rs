//! The set commands of several keys: SMOVE, SINTER, SINTERCARD, SINTERSTORE, SUNION,
//! SUNIONSTORE, SDIFF, SDIFFSTORE.
//!
//! The executor has locked every shard the keys live on before the handler runs (their key
//! specs say which), so a handler looks its keys up one at a time through [`Shards`], which
//! borrows each held shard once, and the command is atomic.

use larder_engine::feed::class;
use larder_engine::{Db, Object, Set, Shard, SlotId};

use super::{read_set, reply_members, set_at, settle, update};
use crate::args::parse_i64;
use crate::error::{self, Error, Result};
use crate::exec::Cmd;
use crate::locks::ShardGuard;

const NUMKEYS_NOT_POSITIVE: &str = "ERR numkeys should be greater than 0";
const TOO_MANY_KEYS: &str = "ERR Number of keys can't be greater than number of args";
const LIMIT_NEGATIVE: &str = "ERR LIMIT can't be negative";

/// The shards a command's keys live on, each borrowed once for the whole command.
struct Shards<'a> {
    held: Vec<(usize, ShardGuard<'a>)>,
}

impl<'a> Shards<'a> {
    fn new() -> Shards<'a> {
        Shards { held: Vec::new() }
    }

    /// The shard of `key` in the selected database, with the key's hash.
    fn of(&mut self, c: &Cmd<'a>, key: &[u8]) -> (usize, u64) {
        let (shard, hash) = Db::route(key);
        if let Some(i) = self.held.iter().position(|(s, _)| *s == shard) {
            return (i, hash);
        }
        self.held.push((shard, c.shard_at(c.conn.db, shard)));
        (self.held.len() - 1, hash)
    }

    fn get(&mut self, i: usize) -> &mut Shard {
        &mut self.held[i].1
    }

    fn set(&self, at: (usize, SlotId)) -> Result<&Set> {
        set_at(&self.held[at.0].1, at.1)
    }
}

/// Look each of `keys` up as a set for a read, in order: WRONGTYPE on the first key of
/// another type; `None` for a missing key.
fn lookup<'a>(
    c: &Cmd<'a>,
    shards: &mut Shards<'a>,
    keys: &[&[u8]],
) -> Result<Vec<Option<(usize, SlotId)>>> {
    let mut found = Vec::with_capacity(keys.len());
    for key in keys {
        let (i, hash) = shards.of(c, key);
        found.push(read_set(c, shards.get(i), key, hash)?.map(|slot| (i, slot)));
    }
    Ok(found)
}

/// SMOVE source destination member
pub(super) fn smove(c: &mut Cmd<'_>) -> Result<()> {
    let src = c.args.key()?;
    let dst = c.args.key()?;
    let member = c.args.next_arg()?;
    let mut shards = Shards::new();
    let (si, s_hash) = shards.of(c, src);
    let (di, d_hash) = shards.of(c, dst);
    let now = c.now_ms;
    let access = c.access();
    // Redis looks both keys up first; a missing source is 0 whatever the destination holds.
    let s_slot = shards.get(si).find_touch(src, s_hash, now, access);
    let d_slot = shards.get(di).find_touch(dst, d_hash, now, access);
    let Some(s_slot) = s_slot else {
        drop(shards);
        c.out.int(0);
        return Ok(());
    };
    set_at(shards.get(si), s_slot)?;
    if let Some(d_slot) = d_slot {
        set_at(shards.get(di), d_slot)?;
    }
    if src == dst {
        let found = shards.set((si, s_slot))?.contains(member);
        drop(shards);
        c.out.int(i64::from(found));
        return Ok(());
    }
    let limits = c.limits();
    let shard = shards.get(si);
    if !set_at(shard, s_slot)?.contains(member) {
        drop(shards);
        c.out.int(0);
        return Ok(());
    }
    update(shard, s_slot, |s| s.remove(member))?;
    settle(c, shard, src, s_slot, Some("srem"));
    let shard = shards.get(di);
    match d_slot {
        Some(d_slot) => {
            if !set_at(shard, d_slot)?.contains(member) {
                update(shard, d_slot, |s| s.insert(member, &limits))?;
                c.notify(class::SET, "sadd", dst);
            }
        }
        None => {
            let s = Set::from_members(&[member], &limits);
            shard.insert_object(dst, d_hash, Object::Set(s), 0, now);
            c.notify(class::NEW, "new", dst);
            c.notify(class::SET, "sadd", dst);
        }
    }
    drop(shards);
    c.out.int(1);
    Ok(())
}

/// The sets of `keys` that exist (`None` for a missing key), borrowed from `shards`.
fn sets_of<'s>(
    shards: &'s Shards<'_>,
    found: &[Option<(usize, SlotId)>],
) -> Result<Vec<Option<&'s Set>>> {
    found
        .iter()
        .map(|f| f.map(|at| shards.set(at)).transpose())
        .collect()
}

/// SINTER key [key ...]
pub(super) fn sinter(c: &mut Cmd<'_>) -> Result<()> {
    let keys = c.args.rest();
    let mut shards = Shards::new();
    let found = lookup(c, &mut shards, keys)?;
    let sets = sets_of(&shards, &found)?;
    let Some(sets) = sets.into_iter().collect::<Option<Vec<&Set>>>() else {
        // A missing key is an empty set: so is the intersection.
        c.out.set(0);
        return Ok(());
    };
    // The length comes first: collect the members, then reply.
    let mut members = Vec::new();
    Set::intersect(&sets, 0, |m| members.push(m.to_vec()));
    c.out.set(members.len());
    for m in &members {
        c.out.bulk(m);
    }
    Ok(())
}

/// SINTERCARD numkeys key [key ...] [LIMIT limit]
pub(super) fn sintercard(c: &mut Cmd<'_>) -> Result<()> {
    let numkeys = match parse_i64(c.args.next_arg()?) {
        Some(n) if n > 0 => n as usize,
        _ => return Err(Error::Static(NUMKEYS_NOT_POSITIVE)),
    };
    if numkeys > c.args.remaining() {
        return Err(Error::Static(TOO_MANY_KEYS));
    }
    let all = c.args.rest();
    let (keys, mut opts) = all.split_at(numkeys);
    let mut limit = 0usize;
    while let Some((opt, rest)) = opts.split_first() {
        match rest.split_first() {
            Some((value, rest)) if opt.eq_ignore_ascii_case(b"limit") => {
                limit = match parse_i64(value) {
                    Some(n) if n >= 0 => n as usize,
                    _ => return Err(Error::Static(LIMIT_NEGATIVE)),
                };
                opts = rest;
            }
            _ => return Err(Error::Static(error::SYNTAX)),
        }
    }
    let mut shards = Shards::new();
    let found = lookup(c, &mut shards, keys)?;
    let sets = sets_of(&shards, &found)?;
    let n = match sets.into_iter().collect::<Option<Vec<&Set>>>() {
        Some(sets) => Set::intersect(&sets, limit, |_| ()),
        None => 0,
    };
    drop(shards);
    c.out.int(n as i64);
    Ok(())
}

/// What a store command computes.
#[derive(Clone, Copy)]
enum Op {
    Inter,
    Union,
    Diff,
}

impl Op {
    fn event(self) -> &'static str {
        match self {
            Op::Inter => "sinterstore",
            Op::Union => "sunionstore",
            Op::Diff => "sdiffstore",
        }
    }
}

/// The result of `op` over the sets of `keys` (a missing key is an empty set).
fn compute<'a>(c: &Cmd<'a>, shards: &mut Shards<'a>, keys: &[&[u8]], op: Op) -> Result<Set> {
    let found = lookup(c, shards, keys)?;
    let sets = sets_of(shards, &found)?;
    let limits = c.limits();
    Ok(match op {
        Op::Inter => match sets.into_iter().collect::<Option<Vec<&Set>>>() {
            Some(sets) => Set::intersection(&sets, &limits),
            None => Set::new(),
        },
        Op::Union => Set::union(&sets.into_iter().flatten().collect::<Vec<_>>(), &limits),
        Op::Diff => match sets.split_first() {
            Some((Some(first), rest)) => {
                let rest: Vec<&Set> = rest.iter().flatten().copied().collect();
                Set::difference(first, &rest, &limits)
            }
            _ => Set::new(),
        },
    })
}

/// SUNION / SDIFF: reply with the result as a set.
fn algebra(c: &mut Cmd<'_>, op: Op) -> Result<()> {
    let keys = c.args.rest();
    let mut shards = Shards::new();
    let result = compute(c, &mut shards, keys, op)?;
    drop(shards);
    reply_members(c.out, &result);
    Ok(())
}

/// SUNION key [key ...]
pub(super) fn sunion(c: &mut Cmd<'_>) -> Result<()> {
    algebra(c, Op::Union)
}

/// SDIFF key [key ...]
pub(super) fn sdiff(c: &mut Cmd<'_>) -> Result<()> {
    algebra(c, Op::Diff)
}

/// SINTERSTORE / SUNIONSTORE / SDIFFSTORE destination key [key ...]: store the result in
/// `destination` (replacing whatever it held, deadline included), or delete `destination`
/// when the result is empty.
fn store(c: &mut Cmd<'_>, op: Op) -> Result<()> {
    let dst = c.args.key()?;
    let keys = c.args.rest();
    let mut shards = Shards::new();
    let result = compute(c, &mut shards, keys, op)?;
    let len = result.len();
    let (i, hash) = shards.of(c, dst);
    let shard = shards.get(i);
    if len == 0 {
        crate::collection::delete_destination(c, shard, dst, hash);
    } else {
        // The destination is looked up for a write: no hit or miss is counted.
        match shard.find(dst, hash, c.now_ms) {
            Some(slot) => {
                shard.set_object(slot, Object::Set(result));
                if shard.entry(slot).expire_at_ms().is_some() {
                    shard.set_expire(slot, None);
                }
            }
            None => {
                shard.insert_object(dst, hash, Object::Set(result), 0, c.now_ms);
                c.notify(class::NEW, "new", dst);
            }
        }
        c.notify(class::SET, op.event(), dst);
    }
    drop(shards);
    c.out.int(len as i64);
    Ok(())
}

/// SINTERSTORE destination key [key ...]
pub(super) fn sinterstore(c: &mut Cmd<'_>) -> Result<()> {
    store(c, Op::Inter)
}

/// SUNIONSTORE destination key [key ...]
pub(super) fn sunionstore(c: &mut Cmd<'_>) -> Result<()> {
    store(c, Op::Union)
}

/// SDIFFSTORE destination key [key ...]
pub(super) fn sdiffstore(c: &mut Cmd<'_>) -> Result<()> {
    store(c, Op::Diff)
}
