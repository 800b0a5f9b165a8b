//! Sorted-set commands, with Redis 7.0 semantics: ZADD ZINCRBY ZREM ZCARD ZSCORE ZMSCORE
//! ZRANK ZREVRANK ZCOUNT ZLEXCOUNT here; the range commands in [`range`], the pops in [`pop`],
//! ZRANDMEMBER and ZSCAN in [`random`], the multi-key set operations in [`store`].
//!
//! A sorted set is an `Object::ZSet` holding a [`larder_engine::ZSet`], which implements the
//! operations; these files parse arguments and shape replies. Redis never stores an empty
//! sorted set: every command that can empty one deletes the key in the same critical section.

mod pop;
pub(crate) use pop::{mpop_args, pop_first, pop_one};
mod random;
mod range;
mod store;
#[cfg(test)]
mod tests;

use larder_engine::feed::class;
use larder_engine::zset::{AddFlags, Added, LexBound, LexRange, Order, ScoreRange};
use larder_engine::{Object, Shard, SlotId, ZSet};
use larder_resp::{Protocol, ReplyBuf};

use crate::args::parse_i64;
use crate::collection;
use crate::error::{self, Error, Result};
use crate::exec::Cmd;
use crate::table::{flags::*, CommandSpec, Group, KeySpec, Scope};

const XX_AND_NX: &str = "ERR XX and NX options at the same time are not compatible";
const GT_LT_NX: &str = "ERR GT, LT, and/or NX options at the same time are not compatible";
const INCR_PAIR: &str = "ERR INCR option supports a single increment-element pair";
const NAN_RESULT: &str = "ERR resulting score is not a number (NaN)";
const MIN_MAX_FLOAT: &str = "ERR min or max is not a float";
const MIN_MAX_LEX: &str = "ERR min or max not valid string range item";
const NUMKEYS_POSITIVE: &str = "ERR numkeys should be greater than 0";
const COUNT_POSITIVE: &str = "ERR count should be greater than 0";
const OUT_OF_RANGE: &str = "ERR value is out of range";
const INVALID_CURSOR: &str = "ERR invalid cursor";
const COUNT_RANGE: &str =
    "ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807";

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
        Group::SortedSet,
        summary,
        since,
        handler,
    )
}

const ONE: KeySpec = KeySpec::ONE;
/// `numkeys key ...` at argv[1] (ZUNION, ZINTER, ZDIFF, ZINTERCARD, ZMPOP).
const NUMKEYS_1: KeySpec = KeySpec::NONE.with_scope(Scope::NumKeys { at: 1 });
/// `destination numkeys key ...` (ZUNIONSTORE, ZINTERSTORE, ZDIFFSTORE).
const DEST_NUMKEYS_2: KeySpec = KeySpec::ONE.with_scope(Scope::NumKeys { at: 2 });

/// The sorted-set family's table. Arity, flags, key positions, summaries and versions are
/// those of Redis 7.0's COMMAND INFO / COMMAND DOCS.
#[rustfmt::skip]
pub static COMMANDS: &[CommandSpec] = &[
    cmd("zadd", -4, WRITE | DENYOOM | FAST, ONE, "Add one or more members to a sorted set, or update its score if it already exists", "1.2.0", zadd),
    cmd("zincrby", 4, WRITE | DENYOOM | FAST, ONE, "Increment the score of a member in a sorted set", "1.2.0", zincrby),
    cmd("zrem", -3, WRITE | FAST, ONE, "Remove one or more members from a sorted set", "1.2.0", zrem),
    cmd("zcard", 2, READONLY | FAST, ONE, "Get the number of members in a sorted set", "1.2.0", zcard),
    cmd("zscore", 3, READONLY | FAST, ONE, "Get the score associated with the given member in a sorted set", "1.2.0", zscore),
    cmd("zmscore", -3, READONLY | FAST, ONE, "Get the score associated with the given members in a sorted set", "6.2.0", zmscore),
    cmd("zrank", 3, READONLY | FAST, ONE, "Determine the index of a member in a sorted set", "2.0.0", zrank),
    cmd("zrevrank", 3, READONLY | FAST, ONE, "Determine the index of a member in a sorted set, with scores ordered from high to low", "2.0.0", zrevrank),
    cmd("zcount", 4, READONLY | FAST, ONE, "Count the members in a sorted set with scores within the given values", "2.0.0", zcount),
    cmd("zlexcount", 4, READONLY | FAST, ONE, "Count the number of members in a sorted set between a given lexicographical range", "2.8.9", zlexcount),
    cmd("zrange", -4, READONLY, ONE, "Return a range of members in a sorted set", "1.2.0", range::zrange),
    cmd("zrangestore", -5, WRITE | DENYOOM, KeySpec::TWO, "Store a range of members from sorted set into another key", "6.2.0", range::zrangestore),
    cmd("zrangebyscore", -4, READONLY, ONE, "Return a range of members in a sorted set, by score", "1.0.5", range::zrangebyscore),
    cmd("zrevrangebyscore", -4, READONLY, ONE, "Return a range of members in a sorted set, by score, with scores ordered from high to low", "2.2.0", range::zrevrangebyscore),
    cmd("zrangebylex", -4, READONLY, ONE, "Return a range of members in a sorted set, by lexicographical range", "2.8.9", range::zrangebylex),
    cmd("zrevrangebylex", -4, READONLY, ONE, "Return a range of members in a sorted set, by lexicographical range, ordered from higher to lower strings.", "2.8.9", range::zrevrangebylex),
    cmd("zrevrange", -4, READONLY, ONE, "Return a range of members in a sorted set, by index, with scores ordered from high to low", "1.2.0", range::zrevrange),
    cmd("zremrangebyrank", 4, WRITE, ONE, "Remove all members in a sorted set within the given indexes", "2.0.0", range::zremrangebyrank),
    cmd("zremrangebyscore", 4, WRITE, ONE, "Remove all members in a sorted set within the given scores", "1.2.0", range::zremrangebyscore),
    cmd("zremrangebylex", 4, WRITE, ONE, "Remove all members in a sorted set between the given lexicographical range", "2.8.9", range::zremrangebylex),
    cmd("zpopmin", -2, WRITE | FAST, ONE, "Remove and return members with the lowest scores in a sorted set", "5.0.0", pop::zpopmin),
    cmd("zpopmax", -2, WRITE | FAST, ONE, "Remove and return members with the highest scores in a sorted set", "5.0.0", pop::zpopmax),
    cmd("zmpop", -4, WRITE | MOVABLE_KEYS, NUMKEYS_1, "Remove and return members with scores in a sorted set", "7.0.0", pop::zmpop),
    cmd("zrandmember", -2, READONLY, ONE, "Get one or multiple random elements from a sorted set", "6.2.0", random::zrandmember),
    cmd("zscan", -3, READONLY, ONE, "Incrementally iterate sorted sets elements and associated scores", "2.8.0", random::zscan),
    cmd("zunion", -3, READONLY | MOVABLE_KEYS, NUMKEYS_1, "Add multiple sorted sets", "6.2.0", store::zunion),
    cmd("zinter", -3, READONLY | MOVABLE_KEYS, NUMKEYS_1, "Intersect multiple sorted sets", "6.2.0", store::zinter),
    cmd("zdiff", -3, READONLY | MOVABLE_KEYS, NUMKEYS_1, "Subtract multiple sorted sets", "6.2.0", store::zdiff),
    cmd("zunionstore", -4, WRITE | DENYOOM | MOVABLE_KEYS, DEST_NUMKEYS_2, "Add multiple sorted sets and store the resulting sorted set in a new key", "2.0.0", store::zunionstore),
    cmd("zinterstore", -4, WRITE | DENYOOM | MOVABLE_KEYS, DEST_NUMKEYS_2, "Intersect multiple sorted sets and store the resulting sorted set in a new key", "2.0.0", store::zinterstore),
    cmd("zdiffstore", -4, WRITE | DENYOOM | MOVABLE_KEYS, DEST_NUMKEYS_2, "Subtract multiple sorted sets and store the resulting sorted set in a new key", "6.2.0", store::zdiffstore),
    cmd("zintercard", -3, READONLY | MOVABLE_KEYS, NUMKEYS_1, "Intersect multiple sorted sets and return the cardinality of the result", "7.0.0", store::zintercard),
];

// ---------------------------------------------------------------------------------------------
// Lookups and writes.

/// The ZSet held in `slot`, or WRONGTYPE.
pub(crate) fn zset_at(shard: &Shard, slot: SlotId) -> Result<&ZSet> {
    collection::at(shard, slot)
}

/// Find `key` as a ZSet for a write: `None` when absent, WRONGTYPE for another type.
fn find_zset(c: &Cmd<'_>, shard: &mut Shard, key: &[u8], hash: u64) -> Result<Option<SlotId>> {
    collection::find::<ZSet>(c, shard, key, hash)
}

/// [`find_zset`] for a read: counts the keyspace hit or miss.
pub(crate) fn read_zset(
    c: &Cmd<'_>,
    shard: &mut Shard,
    key: &[u8],
    hash: u64,
) -> Result<Option<SlotId>> {
    collection::read::<ZSet>(c, shard, key, hash)
}

/// Modify the ZSet in `slot` through `f`; the caller then [`settle`]s the key.
fn update<R>(shard: &mut Shard, slot: SlotId, f: impl FnOnce(&mut ZSet) -> R) -> Result<R> {
    collection::update(shard, slot, f)
}

/// After a write: raise `event`, then delete the key if the ZSet is left empty.
fn settle(c: &Cmd<'_>, shard: &mut Shard, key: &[u8], slot: SlotId, event: Option<&'static str>) {
    collection::settle::<ZSet>(c, shard, key, slot, event)
}

/// Delete the key of a sorted set a command is about to empty, instead of emptying it: the
/// removal carries the members it held (a value subscriber sees them go), and Redis's events
/// follow, `event` then `del`.
fn remove_whole(c: &Cmd<'_>, shard: &mut Shard, key: &[u8], slot: SlotId, event: &'static str) {
    shard.remove(slot);
    c.notify(class::ZSET, event, key);
    c.notify(class::GENERIC, "del", key);
}

/// Store `z` under `key` as Redis's `setKey` does (any old value replaced, its deadline
/// dropped; `new` raised for a new key), or delete `key` when `z` is empty (raising `del` if
/// it existed). Raises `event` after a store. Returns the stored length.
pub(crate) fn store_result(
    c: &Cmd<'_>,
    shard: &mut Shard,
    key: &[u8],
    hash: u64,
    z: ZSet,
    event: &'static str,
) -> usize {
    let len = z.len();
    if len == 0 {
        collection::delete_destination(c, shard, key, hash);
        return 0;
    }
    match shard.find(key, hash, c.now_ms) {
        Some(slot) => {
            shard.set_object(slot, Object::ZSet(z));
            shard.set_flags(slot, 0);
            shard.touch(slot, c.now_ms);
            if shard.entry(slot).expire_at_ms().is_some() {
                shard.set_expire(slot, None);
            }
        }
        None => {
            shard.insert_object(key, hash, Object::ZSet(z), 0, c.now_ms);
            c.notify(class::NEW, "new", key);
        }
    }
    c.notify(class::ZSET, event, key);
    len
}

// ---------------------------------------------------------------------------------------------
// Argument parsing.

/// C's `isspace`.
fn is_c_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\x0b' | b'\x0c' | b'\r')
}

/// Powers of ten that a double holds exactly.
const EXACT_POW10: [f64; 23] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
    1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
];

/// The common score text, `[-+]digits[.digits]` with at most 15 digits, parsed exactly: the
/// digits make an integer a double holds exactly, and one division by an exact power of ten
/// rounds correctly (Clinger's fast path, as Rust's and glibc's parsers take it too). `None`
/// for any other form.
fn simple_decimal(b: &[u8]) -> Option<f64> {
    let (neg, body) = match b.first() {
        Some(b'-') => (true, &b[1..]),
        Some(b'+') => (false, &b[1..]),
        _ => (false, b),
    };
    let (mut m, mut digits, mut frac, mut dot) = (0u64, 0usize, 0usize, false);
    for &c in body {
        if c == b'.' && !dot {
            dot = true;
        } else if c.is_ascii_digit() {
            m = m * 10 + u64::from(c - b'0');
            digits += 1;
            frac += usize::from(dot);
        } else {
            return None;
        }
        if digits > 15 {
            return None;
        }
    }
    if digits == 0 {
        return None;
    }
    // `m` < 10^15 < 2^53: exact as a double.
    #[allow(clippy::cast_precision_loss)]
    let v = m as f64 / EXACT_POW10[frac];
    Some(if neg { -v } else { v })
}

/// C's `strtod` over the whole text (no leading space): decimal forms, `inf`/`infinity`, and
/// hexadecimal ones (`0x10`, `-0x1.8p3`). NaN is rejected.
fn strtod(b: &[u8]) -> Option<f64> {
    if let Some(v) = simple_decimal(b) {
        return Some(v);
    }
    let (neg, body) = match b.first() {
        Some(b'-') => (true, &b[1..]),
        Some(b'+') => (false, &b[1..]),
        _ => (false, b),
    };
    let Some(hex) = body
        .strip_prefix(b"0x")
        .or_else(|| body.strip_prefix(b"0X"))
    else {
        // Plain decimal text (digits, point, exponent, signs) needs none of `parse_f64`'s
        // special cases (and its lowercased copy): Rust's parser takes exactly what strtod
        // takes whole there.
        if !b.is_empty()
            && b.len() <= 5120
            && b.iter()
                .all(|&c| c.is_ascii_digit() || matches!(c, b'.' | b'e' | b'E' | b'+' | b'-'))
        {
            return std::str::from_utf8(b).ok()?.parse().ok();
        }
        return crate::args::parse_f64(b);
    };
    let (mantissa, exp) = match hex.iter().position(|&c| c == b'p' || c == b'P') {
        Some(i) => (&hex[..i], Some(&hex[i + 1..])),
        None => (hex, None),
    };
    let mut v = 0.0f64;
    let mut scale = 0i32;
    let (mut digits, mut dot) = (0, false);
    for &c in mantissa {
        if c == b'.' && !dot {
            dot = true;
            continue;
        }
        let d = char::from(c).to_digit(16)?;
        v = v * 16.0 + f64::from(d);
        digits += 1;
        if dot {
            scale -= 4;
        }
    }
    if digits == 0 {
        return None;
    }
    if let Some(e) = exp {
        let e = std::str::from_utf8(e).ok()?;
        if e.is_empty() || e.starts_with('+') && e.len() == 1 {
            return None;
        }
        scale = scale.checked_add(e.parse::<i32>().ok()?.clamp(-10_000, 10_000))?;
    }
    let v = v * 2f64.powi(scale);
    Some(if neg { -v } else { v })
}

/// A score or increment as Redis's `getDoubleFromObject` reads it: `strtod` over the whole
/// text, no leading space, no NaN, and no overflow or underflow to zero (ERANGE).
pub(crate) fn parse_score(b: &[u8]) -> Option<f64> {
    if b.first().is_some_and(|&c| is_c_space(c)) {
        return None;
    }
    let v = strtod(b)?;
    if v.is_nan() {
        return None;
    }
    if v.is_finite() && v != 0.0 {
        return Some(v);
    }
    let text = b.strip_prefix(b"+").or(b.strip_prefix(b"-")).unwrap_or(b);
    if v.is_infinite()
        && !(text.eq_ignore_ascii_case(b"inf") || text.eq_ignore_ascii_case(b"infinity"))
    {
        return None;
    }
    if v == 0.0 {
        let mantissa = text
            .split(|&c| c == b'e' || c == b'E')
            .next()
            .unwrap_or_default();
        if mantissa.iter().any(|c| (b'1'..=b'9').contains(c)) {
            return None;
        }
    }
    Some(v)
}

/// A score or increment argument (`ERR value is not a valid float`).
fn score_arg(b: &[u8]) -> Result<f64> {
    parse_score(b).ok_or(Error::Static(error::NOT_FLOAT))
}

/// One end of a score range as `zslParseRange` reads it after the optional `(`: `strtod`
/// over the whole text, leading spaces allowed, an empty text is 0, NaN rejected.
fn range_float(b: &[u8]) -> Option<f64> {
    if b.is_empty() {
        return Some(0.0);
    }
    let start = b.iter().position(|&c| !is_c_space(c))?;
    let v = strtod(&b[start..])?;
    (!v.is_nan()).then_some(v)
}

/// ZRANGEBYSCORE's `min max` (`(` for an exclusive end).
fn score_range(min: &[u8], max: &[u8]) -> Result<ScoreRange> {
    let end = |b: &[u8]| match b.strip_prefix(b"(") {
        Some(rest) => range_float(rest).map(|v| (v, true)),
        None => range_float(b).map(|v| (v, false)),
    };
    let ((min, min_ex), (max, max_ex)) =
        end(min).zip(end(max)).ok_or(Error::Static(MIN_MAX_FLOAT))?;
    Ok(ScoreRange {
        min,
        min_ex,
        max,
        max_ex,
    })
}

/// One end of a lex range: `-`, `+`, `[member` or `(member`.
fn lex_bound(b: &[u8]) -> Option<LexBound<'_>> {
    match b {
        b"-" => Some(LexBound::NegInf),
        b"+" => Some(LexBound::PosInf),
        [b'[', rest @ ..] => Some(LexBound::Incl(rest)),
        [b'(', rest @ ..] => Some(LexBound::Excl(rest)),
        _ => None,
    }
}

/// ZRANGEBYLEX's `min max`.
fn lex_range<'a>(min: &'a [u8], max: &'a [u8]) -> Result<LexRange<'a>> {
    let (min, max) = lex_bound(min)
        .zip(lex_bound(max))
        .ok_or(Error::Static(MIN_MAX_LEX))?;
    Ok(LexRange { min, max })
}

/// A count that must be 0 or more (`ERR value is out of range, must be positive`).
fn positive_arg(b: &[u8]) -> Result<usize> {
    parse_i64(b)
        .filter(|&n| n >= 0)
        .map(|n| n as usize)
        .ok_or(Error::Static(error::NEGATIVE_COUNT))
}

/// An integer in `1..=i64::MAX`, with `msg` as the error for anything else.
fn at_least_one(b: &[u8], msg: &'static str) -> Result<usize> {
    parse_i64(b)
        .filter(|&n| n >= 1)
        .map(|n| n as usize)
        .ok_or(Error::Static(msg))
}

// ---------------------------------------------------------------------------------------------
// Replies.

/// Members with their scores, the way Redis 7.0 replies ranges: with scores, a flat array in
/// RESP2 and an array of `[member, score]` pairs in RESP3.
fn reply_members(out: &mut ReplyBuf, items: &[(&[u8], f64)], withscores: bool) {
    let flat = withscores && out.proto == Protocol::Resp2;
    out.array(if flat { items.len() * 2 } else { items.len() });
    for &(m, s) in items {
        reply_member(out, m, s, withscores);
    }
}

/// One member of a range reply (see [`reply_members`]).
fn reply_member(out: &mut ReplyBuf, m: &[u8], s: f64, withscores: bool) {
    if withscores && out.proto == Protocol::Resp3 {
        out.array(2);
    }
    out.bulk(m);
    if withscores {
        out.score(s);
    }
}

// ---------------------------------------------------------------------------------------------
// Handlers.

/// ZADD key [NX|XX] [GT|LT] [CH] [INCR] score member [score member ...]
fn zadd(c: &mut Cmd<'_>) -> Result<()> {
    add_generic(c, AddFlags::default())
}

/// ZINCRBY key increment member
fn zincrby(c: &mut Cmd<'_>) -> Result<()> {
    add_generic(
        c,
        AddFlags {
            incr: true,
            ..AddFlags::default()
        },
    )
}

/// ZADD and ZINCRBY (`flags` holds INCR for ZINCRBY), after Redis's `zaddGenericCommand`:
/// ZINCRBY's arguments go through ZADD's option parser too.
fn add_generic(c: &mut Cmd<'_>, mut flags: AddFlags) -> Result<()> {
    let key = c.args.key()?;
    let mut ch = false;
    loop {
        if c.args.eat("NX") {
            flags.nx = true;
        } else if c.args.eat("XX") {
            flags.xx = true;
        } else if c.args.eat("CH") {
            ch = true;
        } else if c.args.eat("INCR") {
            flags.incr = true;
        } else if c.args.eat("GT") {
            flags.gt = true;
        } else if c.args.eat("LT") {
            flags.lt = true;
        } else {
            break;
        }
    }
    let rest = c.args.rest();
    if rest.is_empty() || rest.len() % 2 != 0 {
        return Err(Error::Static(error::SYNTAX));
    }
    if flags.nx && flags.xx {
        return Err(Error::Static(XX_AND_NX));
    }
    if ((flags.gt || flags.lt) && flags.nx) || (flags.gt && flags.lt) {
        return Err(Error::Static(GT_LT_NX));
    }
    if flags.incr && rest.len() > 2 {
        return Err(Error::Static(INCR_PAIR));
    }
    // One pair (the common case) needs no allocation.
    let one: [f64; 1];
    let many: Vec<f64>;
    let scores: &[f64] = if rest.len() == 2 {
        one = [score_arg(rest[0])?];
        &one
    } else {
        many = rest
            .chunks(2)
            .map(|p| score_arg(p[0]))
            .collect::<Result<Vec<f64>>>()?;
        &many
    };
    let limits = c.limits();
    let adds = Adds {
        pairs: rest,
        scores,
        flags,
        limits: &limits,
    };
    let event = if flags.incr { "zincr" } else { "zadd" };
    let Tally {
        added,
        updated,
        processed,
        last,
        nan,
    } = apply_adds(c, key, &adds, rest[1].len(), event)?;
    if nan {
        return Err(Error::Static(NAN_RESULT));
    }
    if flags.incr {
        if processed > 0 {
            c.out.score(last);
        } else {
            c.out.null();
        }
    } else {
        c.out.int(if ch { added + updated } else { added });
    }
    Ok(())
}

/// ZADD's write (also GEOADD's): apply `adds` to the sorted set at `key`, creating it (in
/// the encoding a first member of `first_len` bytes allows) unless XX, raising `event`
/// when something changed.
pub(crate) fn apply_adds(
    c: &Cmd<'_>,
    key: &[u8],
    adds: &Adds<'_>,
    first_len: usize,
    event: &'static str,
) -> Result<Tally> {
    let (flags, limits) = (adds.flags, adds.limits);
    let (mut shard, hash) = c.shard_of(key);
    let tally = match find_zset(c, &mut shard, key, hash)? {
        Some(slot) => {
            let tally = update(&mut shard, slot, |z| adds.apply(z))?;
            let changed = tally.added + tally.updated > 0;
            settle(c, &mut shard, key, slot, changed.then_some(event));
            tally
        }
        None if flags.xx => Tally::default(),
        None => {
            // Redis creates the key before adding (`new` comes first), in the encoding its
            // first member allows; it is stored once, whole.
            let mut z = if limits.zset_max_listpack_entries == 0
                || limits.zset_max_listpack_value < first_len
            {
                ZSet::new_full()
            } else {
                ZSet::new()
            };
            let tally = adds.apply(&mut z);
            if !z.is_empty() {
                shard.insert_object(key, hash, Object::ZSet(z), 0, c.now_ms);
                c.notify(class::NEW, "new", key);
                c.notify(class::ZSET, event, key);
            }
            tally
        }
    };
    Ok(tally)
}

/// ZADD's score-member pairs (the member second in each pair; the first is not read) with
/// their parsed scores, applied to a sorted set.
pub(crate) struct Adds<'a> {
    pub(crate) pairs: &'a [&'a [u8]],
    pub(crate) scores: &'a [f64],
    pub(crate) flags: AddFlags,
    pub(crate) limits: &'a larder_engine::Limits,
}

/// What ZADD did: members added and updated, pairs processed (not ruled out by a flag), the
/// last score (ZADD INCR's reply), and whether an increment gave NaN (which stops it).
#[derive(Default)]
pub(crate) struct Tally {
    pub(crate) added: i64,
    pub(crate) updated: i64,
    pub(crate) processed: usize,
    pub(crate) last: f64,
    pub(crate) nan: bool,
}

impl Adds<'_> {
    fn apply(&self, z: &mut ZSet) -> Tally {
        let mut t = Tally::default();
        for (pair, &score) in self.pairs.chunks(2).zip(self.scores) {
            match z.add(pair[1], score, self.flags, self.limits) {
                Err(_) => {
                    t.nan = true;
                    break;
                }
                Ok(Added::Skipped) => {}
                Ok(Added::New(s)) => {
                    t.added += 1;
                    t.processed += 1;
                    t.last = s;
                }
                Ok(Added::Updated(s)) => {
                    t.updated += 1;
                    t.processed += 1;
                    t.last = s;
                }
                Ok(Added::Same(s)) => {
                    t.processed += 1;
                    t.last = s;
                }
            }
        }
        t
    }
}

/// ZREM key member [member ...]
fn zrem(c: &mut Cmd<'_>) -> Result<()> {
    let key = c.args.key()?;
    let members = c.args.rest();
    let (mut shard, hash) = c.shard_of(key);
    let removed = match find_zset(c, &mut shard, key, hash)? {
        Some(slot) => {
            let z = zset_at(&shard, slot)?;
            let mut present: Vec<&[u8]> = members
                .iter()
                .copied()
                .filter(|m| z.score(m).is_some())
                .collect();
            present.sort_unstable();
            present.dedup();
            if present.len() == z.len() {
                remove_whole(c, &mut shard, key, slot, "zrem");
                present.len()
            } else {
                let removed = update(&mut shard, slot, |z| {
                    present.iter().filter(|m| z.remove(m).is_some()).count()
                })?;
                settle(c, &mut shard, key, slot, (removed > 0).then_some("zrem"));
                removed
            }
        }
        None => 0,
    };
    drop(shard);
    c.out.int(removed as i64);
    Ok(())
}

/// ZCARD key
fn zcard(c: &mut Cmd<'_>) -> Result<()> {
    let key = c.args.key()?;
    let len = collection::read_with(c, key, 0, ZSet::len)?;
    c.out.int(len as i64);
    Ok(())
}

/// ZSCORE key member
fn zscore(c: &mut Cmd<'_>) -> Result<()> {
    let key = c.args.key()?;
    let member = c.args.next_arg()?;
    let score = collection::read_with(c, key, None, |z: &ZSet| z.score(member))?;
    match score {
        Some(s) => c.out.score(s),
        None => c.out.null(),
    }
    Ok(())
}

/// ZMSCORE key member [member ...]
fn zmscore(c: &mut Cmd<'_>) -> Result<()> {
    let key = c.args.key()?;
    let members = c.args.rest();
    let (mut shard, hash) = c.shard_of(key);
    let slot = read_zset(c, &mut shard, key, hash)?;
    c.out.array(members.len());
    for m in members {
        let score = match slot {
            Some(slot) => zset_at(&shard, slot)?.score(m),
            None => None,
        };
        match score {
            Some(s) => c.out.score(s),
            None => c.out.null(),
        }
    }
    Ok(())
}

/// ZRANK key member
fn zrank(c: &mut Cmd<'_>) -> Result<()> {
    rank_generic(c, Order::Ascending)
}

/// ZREVRANK key member
fn zrevrank(c: &mut Cmd<'_>) -> Result<()> {
    rank_generic(c, Order::Descending)
}

fn rank_generic(c: &mut Cmd<'_>, order: Order) -> Result<()> {
    let key = c.args.key()?;
    let member = c.args.next_arg()?;
    let (mut shard, hash) = c.shard_of(key);
    let rank = match read_zset(c, &mut shard, key, hash)? {
        Some(slot) => zset_at(&shard, slot)?.rank(member, order),
        None => None,
    };
    drop(shard);
    match rank {
        Some((r, _)) => c.out.int(r as i64),
        None => c.out.null(),
    }
    Ok(())
}

/// ZCOUNT key min max
fn zcount(c: &mut Cmd<'_>) -> Result<()> {
    let key = c.args.key()?;
    let range = score_range(c.args.next_arg()?, c.args.next_arg()?)?;
    let (mut shard, hash) = c.shard_of(key);
    let n = match read_zset(c, &mut shard, key, hash)? {
        Some(slot) => zset_at(&shard, slot)?.score_ranks(&range).len(),
        None => 0,
    };
    drop(shard);
    c.out.int(n as i64);
    Ok(())
}

/// ZLEXCOUNT key min max
fn zlexcount(c: &mut Cmd<'_>) -> Result<()> {
    let key = c.args.key()?;
    let range = lex_range(c.args.next_arg()?, c.args.next_arg()?)?;
    let (mut shard, hash) = c.shard_of(key);
    let n = match read_zset(c, &mut shard, key, hash)? {
        Some(slot) => zset_at(&shard, slot)?
            .lex_ranks(&range, Order::Ascending)
            .len(),
        None => 0,
    };
    drop(shard);
    c.out.int(n as i64);
    Ok(())
}
