//! ZUNION ZINTER ZDIFF, their STORE forms, and ZINTERCARD, after Redis 7.0's
//! `zunionInterDiffGenericCommand`. Plain sets are accepted as inputs, every member scoring 1.

use std::collections::{HashMap, HashSet};

use larder_engine::{Object, ZSet};

use super::{parse_score, reply_members, store_result};
use crate::args::parse_i64;
use crate::error::{self, Error, Result};
use crate::exec::Cmd;

const WEIGHT_NOT_FLOAT: &str = "ERR weight value is not a float";
const LIMIT_NEGATIVE: &str = "ERR LIMIT can't be negative";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    Union,
    Inter,
    Diff,
}

/// What the command does with the result.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Output {
    /// Reply with the members (ZUNION, ZINTER, ZDIFF).
    Reply,
    /// Store it at the destination key (the STORE forms).
    Store,
    /// Reply with its size (ZINTERCARD).
    Cardinality,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Aggregate {
    Sum,
    Min,
    Max,
}

fn aggregate(target: &mut f64, val: f64, how: Aggregate) {
    match how {
        Aggregate::Sum => {
            *target += val;
            if target.is_nan() {
                *target = 0.0;
            }
        }
        Aggregate::Min => {
            if val < *target {
                *target = val;
            }
        }
        Aggregate::Max => {
            if val > *target {
                *target = val;
            }
        }
    }
}

/// One input: its key, its cardinality (0 when missing) and its weight.
struct Source<'a> {
    key: &'a [u8],
    len: usize,
    weight: f64,
}

/// Every member of input `key` with its score (1 for a set member), in no particular order.
fn members_of(c: &Cmd<'_>, key: &[u8]) -> Vec<(Vec<u8>, f64)> {
    let (mut shard, hash) = c.shard_of(key);
    let Some(slot) = shard.find(key, hash, c.now_ms) else {
        return Vec::new();
    };
    match shard.entry(slot).object() {
        Some(Object::ZSet(z)) => z.scored().map(|(m, s)| (m.to_vec(), s)).collect(),
        Some(Object::Set(s)) => s.to_vecs().into_iter().map(|m| (m, 1.0)).collect(),
        _ => Vec::new(),
    }
}

/// The scores input `key` gives `candidates` (`None` for a member it lacks).
fn scores_in(c: &Cmd<'_>, key: &[u8], candidates: &[(Vec<u8>, f64)]) -> Vec<Option<f64>> {
    let (mut shard, hash) = c.shard_of(key);
    let slot = shard.find(key, hash, c.now_ms);
    match slot.and_then(|slot| shard.entry(slot).object()) {
        Some(Object::ZSet(z)) => candidates.iter().map(|(m, _)| z.score(m)).collect(),
        Some(Object::Set(s)) => {
            let members: HashSet<Vec<u8>> = s.to_vecs().into_iter().collect();
            candidates
                .iter()
                .map(|(m, _)| members.contains(m).then_some(1.0))
                .collect()
        }
        _ => vec![None; candidates.len()],
    }
}

fn generic(c: &mut Cmd<'_>, op: Op, output: Output) -> Result<()> {
    let card_only = output == Output::Cardinality;
    let dst = match output {
        Output::Store => Some(c.args.key()?),
        Output::Reply | Output::Cardinality => None,
    };
    let setnum = parse_i64(c.args.next_arg()?).ok_or(Error::Static(error::NOT_INTEGER))?;
    if setnum < 1 {
        return Err(Error::Owned(format!(
            "ERR at least 1 input key is needed for '{}' command",
            c.resolved.full_name
        )));
    }
    if setnum as u64 > c.args.remaining() as u64 {
        return Err(Error::Static(error::SYNTAX));
    }
    let setnum = setnum as usize;
    // Inputs are looked up (and type-checked) before the options are parsed.
    let mut srcs = Vec::with_capacity(setnum);
    for _ in 0..setnum {
        let key = c.args.next_arg()?;
        let (mut shard, hash) = c.shard_of(key);
        let found = shard.find_touch(key, hash, c.now_ms, c.access());
        c.hit(found.is_some());
        let len = match found.map(|slot| shard.entry(slot)) {
            None => 0,
            Some(e) => match e.object() {
                Some(Object::ZSet(z)) => z.len(),
                Some(Object::Set(s)) => s.len(),
                _ => return Err(Error::Static(error::WRONGTYPE)),
            },
        };
        srcs.push(Source {
            key,
            len,
            weight: 1.0,
        });
    }
    let (mut how, mut withscores, mut limit) = (Aggregate::Sum, false, 0usize);
    while let Some(opt) = c.args.opt() {
        let left = c.args.remaining();
        if op != Op::Diff && !card_only && left >= setnum && opt.eq_ignore_ascii_case(b"weights") {
            for src in srcs.iter_mut() {
                src.weight =
                    parse_score(c.args.next_arg()?).ok_or(Error::Static(WEIGHT_NOT_FLOAT))?;
            }
        } else if op != Op::Diff
            && !card_only
            && left >= 1
            && opt.eq_ignore_ascii_case(b"aggregate")
        {
            let v = c.args.next_arg()?;
            how = if v.eq_ignore_ascii_case(b"sum") {
                Aggregate::Sum
            } else if v.eq_ignore_ascii_case(b"min") {
                Aggregate::Min
            } else if v.eq_ignore_ascii_case(b"max") {
                Aggregate::Max
            } else {
                return Err(Error::Static(error::SYNTAX));
            };
        } else if dst.is_none() && !card_only && opt.eq_ignore_ascii_case(b"withscores") {
            withscores = true;
        } else if card_only && left >= 1 && opt.eq_ignore_ascii_case(b"limit") {
            limit = parse_i64(c.args.next_arg()?)
                .filter(|&n| n >= 0)
                .ok_or(Error::Static(LIMIT_NEGATIVE))? as usize;
        } else {
            return Err(Error::Static(error::SYNTAX));
        }
    }

    let mut result: Vec<(Vec<u8>, f64)> = match op {
        Op::Inter => {
            // From the smallest input, probing the others.
            srcs.sort_by_key(|s| s.len);
            if srcs[0].len == 0 {
                Vec::new()
            } else {
                let mut acc: Vec<(Vec<u8>, f64)> = members_of(c, srcs[0].key)
                    .into_iter()
                    .map(|(m, s)| {
                        let v = srcs[0].weight * s;
                        (m, if v.is_nan() { 0.0 } else { v })
                    })
                    .collect();
                for src in &srcs[1..] {
                    let found = scores_in(c, src.key, &acc);
                    acc = acc
                        .into_iter()
                        .zip(found)
                        .filter_map(|((m, mut score), f)| {
                            let v = f? * src.weight;
                            aggregate(&mut score, v, how);
                            Some((m, score))
                        })
                        .collect();
                    if acc.is_empty() {
                        break;
                    }
                }
                acc
            }
        }
        Op::Union => {
            srcs.sort_by_key(|s| s.len);
            let mut acc: HashMap<Vec<u8>, f64> = HashMap::new();
            for src in &srcs {
                if src.len == 0 {
                    continue;
                }
                for (m, s) in members_of(c, src.key) {
                    let v = src.weight * s;
                    let v = if v.is_nan() { 0.0 } else { v };
                    match acc.get_mut(&m) {
                        Some(score) => aggregate(score, v, how),
                        None => {
                            acc.insert(m, v);
                        }
                    }
                }
            }
            acc.into_iter().collect()
        }
        Op::Diff => {
            let mut acc = if srcs[0].len == 0 {
                Vec::new()
            } else {
                members_of(c, srcs[0].key)
            };
            for src in &srcs[1..] {
                if acc.is_empty() {
                    break;
                }
                if src.len == 0 {
                    continue;
                }
                let found = scores_in(c, src.key, &acc);
                acc = acc
                    .into_iter()
                    .zip(found)
                    .filter(|(_, f)| f.is_none())
                    .map(|(p, _)| p)
                    .collect();
            }
            acc
        }
    };

    if card_only {
        let n = if limit > 0 {
            result.len().min(limit)
        } else {
            result.len()
        };
        c.out.int(n as i64);
        return Ok(());
    }
    if let Some(dst) = dst {
        let limits = c.limits();
        let z = ZSet::from_pairs(result.iter().map(|(m, s)| (&m[..], *s)), &limits);
        let event = match op {
            Op::Union => "zunionstore",
            Op::Inter => "zinterstore",
            Op::Diff => "zdiffstore",
        };
        let (mut shard, hash) = c.shard_of(dst);
        let n = store_result(c, &mut shard, dst, hash, z, event);
        drop(shard);
        c.out.int(n as i64);
        return Ok(());
    }
    result.sort_by(|a, b| {
        a.1.partial_cmp(&b.1)
            .unwrap_or(std::cmp::Ordering::Equal)
            .then_with(|| a.0.cmp(&b.0))
    });
    let items: Vec<(&[u8], f64)> = result.iter().map(|(m, s)| (&m[..], *s)).collect();
    reply_members(c.out, &items, withscores);
    Ok(())
}

/// ZUNION numkeys key [key ...] [WEIGHTS weight ...] [AGGREGATE SUM|MIN|MAX] [WITHSCORES]
pub(super) fn zunion(c: &mut Cmd<'_>) -> Result<()> {
    generic(c, Op::Union, Output::Reply)
}

/// ZINTER numkeys key [key ...] [WEIGHTS weight ...] [AGGREGATE SUM|MIN|MAX] [WITHSCORES]
pub(super) fn zinter(c: &mut Cmd<'_>) -> Result<()> {
    generic(c, Op::Inter, Output::Reply)
}

/// ZDIFF numkeys key [key ...] [WITHSCORES]
pub(super) fn zdiff(c: &mut Cmd<'_>) -> Result<()> {
    generic(c, Op::Diff, Output::Reply)
}

/// ZUNIONSTORE destination numkeys key [key ...] [WEIGHTS weight ...] [AGGREGATE ...]
pub(super) fn zunionstore(c: &mut Cmd<'_>) -> Result<()> {
    generic(c, Op::Union, Output::Store)
}

/// ZINTERSTORE destination numkeys key [key ...] [WEIGHTS weight ...] [AGGREGATE ...]
pub(super) fn zinterstore(c: &mut Cmd<'_>) -> Result<()> {
    generic(c, Op::Inter, Output::Store)
}

/// ZDIFFSTORE destination numkeys key [key ...]
pub(super) fn zdiffstore(c: &mut Cmd<'_>) -> Result<()> {
    generic(c, Op::Diff, Output::Store)
}

/// ZINTERCARD numkeys key [key ...] [LIMIT limit]
pub(super) fn zintercard(c: &mut Cmd<'_>) -> Result<()> {
    generic(c, Op::Inter, Output::Cardinality)
}
