//! ZPOPMIN ZPOPMAX ZMPOP, after Redis 7.0's `genericZpopCommand` and `zmpopGenericCommand`.

use larder_engine::zset::{End, Order};
use larder_engine::{Shard, SlotId};
use larder_resp::Protocol;

use super::{
    at_least_one, find_zset, positive_arg, remove_whole, settle, update, zset_at, COUNT_POSITIVE,
    NUMKEYS_POSITIVE,
};
use crate::args::Args;
use crate::error::{self, Error, Result};
use crate::exec::Cmd;

/// Pop up to `count` members from `end` of the sorted set at `slot`, in the order they
/// leave, raising the pop's event (and `del` when it empties the set).
fn pop_from(
    c: &Cmd<'_>,
    shard: &mut Shard,
    key: &[u8],
    slot: SlotId,
    count: usize,
    end: End,
) -> Result<Vec<(Box<[u8]>, f64)>> {
    let z = zset_at(shard, slot)?;
    if count >= z.len() {
        let order = match end {
            End::Min => Order::Ascending,
            End::Max => Order::Descending,
        };
        let mut popped = Vec::with_capacity(z.len());
        z.visit(0..z.len(), order, |m, s| popped.push((Box::from(m), s)));
        remove_whole(c, shard, key, slot, pop_event(end));
        return Ok(popped);
    }
    let popped = update(shard, slot, |z| z.pop(count, end))?;
    settle(c, shard, key, slot, Some(pop_event(end)));
    Ok(popped)
}

/// ZPOPMIN key [count]
pub(super) fn zpopmin(c: &mut Cmd<'_>) -> Result<()> {
    pop_command(c, End::Min)
}

/// ZPOPMAX key [count]
pub(super) fn zpopmax(c: &mut Cmd<'_>) -> Result<()> {
    pop_command(c, End::Max)
}

fn pop_command(c: &mut Cmd<'_>, end: End) -> Result<()> {
    let key = c.args.key()?;
    if c.args.remaining() > 1 {
        return Err(Error::Static(error::SYNTAX));
    }
    let count = c.args.opt().map(positive_arg).transpose()?;
    let nested = count.is_some() && c.out.proto == Protocol::Resp3;
    let (mut shard, hash) = c.shard_of(key);
    let Some(slot) = find_zset(c, &mut shard, key, hash)? else {
        c.out.array(0);
        return Ok(());
    };
    if count == Some(0) {
        c.out.array(0);
        return Ok(());
    }
    let popped = pop_from(c, &mut shard, key, slot, count.unwrap_or(1), end)?;
    drop(shard);
    // A flat array of member, score in RESP2 and without a count; pairs in RESP3 with one.
    let out = &mut *c.out;
    out.array(if nested {
        popped.len()
    } else {
        popped.len() * 2
    });
    for (m, s) in &popped {
        if nested {
            out.array(2);
        }
        out.bulk(m);
        out.score(*s);
    }
    Ok(())
}

/// The event a pop from `end` raises.
fn pop_event(end: End) -> &'static str {
    match end {
        End::Max => "zpopmax",
        End::Min => "zpopmin",
    }
}

/// ZMPOP numkeys key [key ...] MIN|MAX [COUNT count]
pub(super) fn zmpop(c: &mut Cmd<'_>) -> Result<()> {
    let (keys, end, count) = mpop_args(&mut c.args)?;
    if !pop_first(c, &keys, end, count)? {
        c.out.null_array();
    }
    Ok(())
}

/// ZMPOP's arguments from `numkeys` on (BZMPOP's after its timeout): the keys, the end and
/// the count (1 without `COUNT`), with Redis's errors.
pub(crate) fn mpop_args<'a>(args: &mut Args<'a>) -> Result<(Vec<&'a [u8]>, End, usize)> {
    let numkeys = at_least_one(args.next_arg()?, NUMKEYS_POSITIVE)?;
    if args.remaining() <= numkeys {
        return Err(Error::Static(error::SYNTAX));
    }
    let keys: Vec<&[u8]> = (0..numkeys)
        .map(|_| args.next_arg())
        .collect::<Result<_>>()?;
    let end = if args.eat("MAX") {
        End::Max
    } else if args.eat("MIN") {
        End::Min
    } else {
        return Err(Error::Static(error::SYNTAX));
    };
    let mut count = None;
    while let Some(opt) = args.opt() {
        if count.is_none() && opt.eq_ignore_ascii_case(b"COUNT") && args.remaining() > 0 {
            count = Some(at_least_one(args.next_arg()?, COUNT_POSITIVE)?);
        } else {
            return Err(Error::Static(error::SYNTAX));
        }
    }
    Ok((keys, end, count.unwrap_or(1)))
}

/// The core of ZMPOP (and BZMPOP): pop up to `count` members from `end` of the first of
/// `keys` that exists and reply `[key, [[member, score], ...]]`. Every key must be in the
/// command's lock plan. `Ok(false)`, having written nothing, when no key exists (ZMPOP
/// replies a null array; BZMPOP waits). WRONGTYPE when a key met first is no sorted set.
/// Records ZPOPMIN/ZPOPMAX with the count for replay, as Redis 7.0 does.
pub(crate) fn pop_first(c: &mut Cmd<'_>, keys: &[&[u8]], end: End, count: usize) -> Result<bool> {
    for &key in keys {
        let (mut shard, hash) = c.shard_of(key);
        let Some(slot) = find_zset(c, &mut shard, key, hash)? else {
            continue;
        };
        let popped = pop_from(c, &mut shard, key, slot, count, end)?;
        drop(shard);
        let name: &[u8] = match end {
            End::Max => b"ZPOPMAX",
            End::Min => b"ZPOPMIN",
        };
        if c.records_commands() {
            c.propagate(&[name, key, popped.len().to_string().as_bytes()]);
        }
        let out = &mut *c.out;
        out.array(2);
        out.bulk(key);
        out.array(popped.len());
        for (m, s) in &popped {
            out.array(2);
            out.bulk(m);
            out.score(*s);
        }
        return Ok(true);
    }
    Ok(false)
}

/// The core of BZPOPMIN and BZPOPMAX: pop one member from `end` of the sorted set `key` if
/// it exists, replying `[key, member, score]`, and record ZPOPMIN/ZPOPMAX for replay.
/// `Ok(false)`, having written nothing, when it does not exist; WRONGTYPE for another type.
pub(crate) fn pop_one(c: &mut Cmd<'_>, key: &[u8], end: End) -> Result<bool> {
    let (mut shard, hash) = c.shard_of(key);
    let Some(slot) = find_zset(c, &mut shard, key, hash)? else {
        return Ok(false);
    };
    let popped = pop_from(c, &mut shard, key, slot, 1, end)?;
    drop(shard);
    let Some((member, score)) = popped.into_iter().next() else {
        return Ok(false);
    };
    let name: &[u8] = match end {
        End::Max => b"ZPOPMAX",
        End::Min => b"ZPOPMIN",
    };
    c.propagate(&[name, key]);
    c.out.array(3);
    c.out.bulk(key);
    c.out.bulk(&member);
    c.out.score(score);
    Ok(true)
}
