//! ZRANGE and its older forms (ZRANGEBYSCORE ZREVRANGEBYSCORE ZRANGEBYLEX ZREVRANGEBYLEX
//! ZREVRANGE), ZRANGESTORE, and ZREMRANGEBYRANK / ZREMRANGEBYSCORE / ZREMRANGEBYLEX, after
//! Redis 7.0's `zrangeGenericCommand` and `zremrangeGenericCommand`.

use std::ops::Range;

use larder_engine::zset::Order;
use larder_engine::ZSet;

use super::{
    find_zset, lex_range, read_zset, remove_whole, reply_members, score_range, settle,
    store_result, update, zset_at,
};
use crate::args::parse_i64;
use crate::error::{self, Error, Result};
use crate::exec::Cmd;

const LIMIT_NEEDS_BY: &str =
    "ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX";
const WITHSCORES_BYLEX: &str =
    "ERR syntax error, WITHSCORES not supported in combination with BYLEX";

/// How a range is given.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum By {
    /// Not fixed by the command: ZRANGE's BYSCORE / BYLEX may choose.
    Auto,
    Rank,
    Score,
    Lex,
}

/// The direction, when the command fixes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Dir {
    Auto,
    Forward,
    Reverse,
}

/// A parsed range request.
struct Request<'a> {
    key: &'a [u8],
    by: By,
    rev: bool,
    withscores: bool,
    offset: i64,
    limit: i64,
    min: &'a [u8],
    max: &'a [u8],
}

/// Parse `<key> <min> <max> [options]` (the cursor is at the key) as `zrangeGenericCommand`.
fn parse<'a>(c: &mut Cmd<'a>, mut by: By, mut dir: Dir, store: bool) -> Result<Request<'a>> {
    let key = c.args.key()?;
    let min = c.args.next_arg()?;
    let max = c.args.next_arg()?;
    let (mut withscores, mut offset, mut limit) = (false, 0i64, -1i64);
    while let Some(opt) = c.args.opt() {
        let left = c.args.remaining();
        if !store && opt.eq_ignore_ascii_case(b"withscores") {
            withscores = true;
        } else if opt.eq_ignore_ascii_case(b"limit") && left >= 2 {
            offset = c.args.i64()?;
            limit = c.args.i64()?;
        } else if dir == Dir::Auto && opt.eq_ignore_ascii_case(b"rev") {
            dir = Dir::Reverse;
        } else if by == By::Auto && opt.eq_ignore_ascii_case(b"bylex") {
            by = By::Lex;
        } else if by == By::Auto && opt.eq_ignore_ascii_case(b"byscore") {
            by = By::Score;
        } else {
            return Err(Error::Static(error::SYNTAX));
        }
    }
    let by = if by == By::Auto { By::Rank } else { by };
    if limit != -1 && by == By::Rank {
        return Err(Error::Static(LIMIT_NEEDS_BY));
    }
    if withscores && by == By::Lex {
        return Err(Error::Static(WITHSCORES_BYLEX));
    }
    let rev = dir == Dir::Reverse;
    // A reversed score or lex range is given as `max min`.
    let (min, max) = if rev && by != By::Rank {
        (max, min)
    } else {
        (min, max)
    };
    Ok(Request {
        key,
        by,
        rev,
        withscores,
        offset,
        limit,
        min,
        max,
    })
}

/// Redis's rank normalisation: the ascending ranks `start..=end` of a set of `len` members
/// (counted from the top when `rev`), or an empty range.
pub(super) fn rank_range(start: i64, end: i64, len: usize, rev: bool) -> Range<usize> {
    let llen = len as i64;
    let start = if start < 0 { start + llen } else { start }.max(0);
    let end = if end < 0 { end + llen } else { end };
    if start > end || start >= llen {
        return 0..0;
    }
    let end = end.min(llen - 1);
    if rev {
        (llen - 1 - end) as usize..(llen - start) as usize
    } else {
        start as usize..(end + 1) as usize
    }
}

/// The members a request selects, in reply order.
fn select<'z>(z: &'z ZSet, r: &Request<'_>) -> Result<Vec<(&'z [u8], f64)>> {
    let order = if r.rev {
        Order::Descending
    } else {
        Order::Ascending
    };
    let ranks = match r.by {
        By::Auto | By::Rank => {
            let start = parse_i64(r.min).ok_or(Error::Static(error::NOT_INTEGER))?;
            let end = parse_i64(r.max).ok_or(Error::Static(error::NOT_INTEGER))?;
            rank_range(start, end, z.len(), r.rev)
        }
        By::Score => z.score_ranks(&score_range(r.min, r.max)?),
        By::Lex => z.lex_ranks(&lex_range(r.min, r.max)?, order),
    };
    let mut ranks = ranks;
    if r.by != By::Rank {
        // LIMIT: a negative offset selects nothing, a negative count means all.
        if r.offset < 0 || r.offset as u64 >= ranks.len() as u64 {
            ranks = 0..0;
        } else {
            let skip = r.offset as usize;
            let take = if r.limit < 0 {
                usize::MAX
            } else {
                r.limit as usize
            };
            let n = (ranks.len() - skip).min(take);
            ranks = if r.rev {
                ranks.end - skip - n..ranks.end - skip
            } else {
                ranks.start + skip..ranks.start + skip + n
            };
        }
    }
    let mut out = Vec::with_capacity(ranks.len());
    z.visit(ranks, order, |m, s| out.push((m, s)));
    Ok(out)
}

/// Check the range arguments before the key is looked up, as Redis parses them first.
fn check_args(r: &Request<'_>) -> Result<()> {
    match r.by {
        By::Auto | By::Rank => {
            parse_i64(r.min).ok_or(Error::Static(error::NOT_INTEGER))?;
            parse_i64(r.max).ok_or(Error::Static(error::NOT_INTEGER))?;
        }
        By::Score => {
            score_range(r.min, r.max)?;
        }
        By::Lex => {
            lex_range(r.min, r.max)?;
        }
    }
    Ok(())
}

fn reply_range(c: &mut Cmd<'_>, by: By, dir: Dir) -> Result<()> {
    let r = parse(c, by, dir, false)?;
    check_args(&r)?;
    let (mut shard, hash) = c.shard_of(r.key);
    let Some(slot) = read_zset(c, &mut shard, r.key, hash)? else {
        c.out.array(0);
        return Ok(());
    };
    let items = select(zset_at(&shard, slot)?, &r)?;
    reply_members(c.out, &items, r.withscores);
    Ok(())
}

/// ZRANGE key start stop [BYSCORE|BYLEX] [REV] [LIMIT offset count] [WITHSCORES]
pub(super) fn zrange(c: &mut Cmd<'_>) -> Result<()> {
    reply_range(c, By::Auto, Dir::Auto)
}

/// ZREVRANGE key start stop [WITHSCORES]
pub(super) fn zrevrange(c: &mut Cmd<'_>) -> Result<()> {
    reply_range(c, By::Rank, Dir::Reverse)
}

/// ZRANGEBYSCORE key min max [WITHSCORES] [LIMIT offset count]
pub(super) fn zrangebyscore(c: &mut Cmd<'_>) -> Result<()> {
    reply_range(c, By::Score, Dir::Forward)
}

/// ZREVRANGEBYSCORE key max min [WITHSCORES] [LIMIT offset count]
pub(super) fn zrevrangebyscore(c: &mut Cmd<'_>) -> Result<()> {
    reply_range(c, By::Score, Dir::Reverse)
}

/// ZRANGEBYLEX key min max [LIMIT offset count]
pub(super) fn zrangebylex(c: &mut Cmd<'_>) -> Result<()> {
    reply_range(c, By::Lex, Dir::Forward)
}

/// ZREVRANGEBYLEX key max min [LIMIT offset count]
pub(super) fn zrevrangebylex(c: &mut Cmd<'_>) -> Result<()> {
    reply_range(c, By::Lex, Dir::Reverse)
}

/// ZRANGESTORE dst src min max [BYSCORE|BYLEX] [REV] [LIMIT offset count]
pub(super) fn zrangestore(c: &mut Cmd<'_>) -> Result<()> {
    let dst = c.args.key()?;
    let r = parse(c, By::Auto, Dir::Auto, true)?;
    check_args(&r)?;
    let limits = c.limits();
    let (mut shard, hash) = c.shard_of(r.key);
    let (items, hint): (Vec<(Vec<u8>, f64)>, usize) = match read_zset(c, &mut shard, r.key, hash)? {
        Some(slot) => {
            let z = zset_at(&shard, slot)?;
            let items = select(z, &r)?;
            // Redis sizes the destination from the rank range's length (unknown, so
            // compact, for score and lex ranges).
            let hint = if r.by == By::Rank { items.len() } else { 0 };
            (
                items.into_iter().map(|(m, s)| (m.to_vec(), s)).collect(),
                hint,
            )
        }
        None => (Vec::new(), 0),
    };
    drop(shard);
    let mut z = ZSet::with_hint(hint, 0, &limits);
    for (m, s) in &items {
        z.insert(m, *s, &limits);
    }
    let (mut shard, hash) = c.shard_of(dst);
    let n = store_result(c, &mut shard, dst, hash, z, "zrangestore");
    drop(shard);
    c.out.int(n as i64);
    Ok(())
}

/// ZREMRANGEBYRANK key start stop
pub(super) fn zremrangebyrank(c: &mut Cmd<'_>) -> Result<()> {
    remrange(c, By::Rank)
}

/// ZREMRANGEBYSCORE key min max
pub(super) fn zremrangebyscore(c: &mut Cmd<'_>) -> Result<()> {
    remrange(c, By::Score)
}

/// ZREMRANGEBYLEX key min max
pub(super) fn zremrangebylex(c: &mut Cmd<'_>) -> Result<()> {
    remrange(c, By::Lex)
}

fn remrange(c: &mut Cmd<'_>, by: By) -> Result<()> {
    let key = c.args.key()?;
    let (min, max) = (c.args.next_arg()?, c.args.next_arg()?);
    let ranks_of = |z: &ZSet| -> Result<Range<usize>> {
        Ok(match by {
            By::Score => z.score_ranks(&score_range(min, max)?),
            By::Lex => z.lex_ranks(&lex_range(min, max)?, Order::Ascending),
            By::Auto | By::Rank => {
                let start = parse_i64(min).ok_or(Error::Static(error::NOT_INTEGER))?;
                let end = parse_i64(max).ok_or(Error::Static(error::NOT_INTEGER))?;
                rank_range(start, end, z.len(), false)
            }
        })
    };
    // The range is parsed before the key is looked up.
    ranks_of(&ZSet::new())?;
    let (mut shard, hash) = c.shard_of(key);
    let removed = match find_zset(c, &mut shard, key, hash)? {
        Some(slot) => {
            let z = zset_at(&shard, slot)?;
            let (ranks, len) = (ranks_of(z)?, z.len());
            let event = match by {
                By::Score => "zremrangebyscore",
                By::Lex => "zremrangebylex",
                By::Auto | By::Rank => "zremrangebyrank",
            };
            if ranks.len() == len {
                remove_whole(c, &mut shard, key, slot, event);
                len
            } else {
                let removed = if ranks.is_empty() {
                    0
                } else {
                    update(&mut shard, slot, |z| z.remove_ranks(ranks, |_, _| {}))?
                };
                settle(c, &mut shard, key, slot, (removed > 0).then_some(event));
                removed
            }
        }
        None => 0,
    };
    drop(shard);
    c.out.int(removed as i64);
    Ok(())
}
