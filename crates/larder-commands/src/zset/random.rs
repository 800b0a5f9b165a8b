//! ZRANDMEMBER and ZSCAN.

use std::cell::Cell;

use larder_engine::zset::Order;
use larder_resp::Protocol;

use super::{
    read_zset, reply_member, reply_members, zset_at, COUNT_RANGE, INVALID_CURSOR, OUT_OF_RANGE,
};
use crate::args::parse_i64;
use crate::error::{self, Error, Result};
use crate::exec::Cmd;

thread_local! {
    static RANDOM_STATE: Cell<u64> = const { Cell::new(0) };
}

/// A pseudo-random number (per-thread xorshift, seeded from the clock).
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

/// ZRANDMEMBER key [count [WITHSCORES]]
pub(super) fn zrandmember(c: &mut Cmd<'_>) -> Result<()> {
    let key = c.args.key()?;
    let Some(raw) = c.args.opt() else {
        let (mut shard, hash) = c.shard_of(key);
        match read_zset(c, &mut shard, key, hash)? {
            Some(slot) => {
                let z = zset_at(&shard, slot)?;
                let rank = (next_random() % z.len() as u64) as usize;
                match z.get(rank) {
                    Some((m, _)) => c.out.bulk(m),
                    None => c.out.null(),
                }
            }
            None => c.out.null(),
        }
        return Ok(());
    };
    let l = parse_i64(raw).ok_or(Error::Static(error::NOT_INTEGER))?;
    if l == i64::MIN {
        return Err(Error::Static(COUNT_RANGE));
    }
    let withscores = match c.args.remaining() {
        0 => false,
        1 if c.args.eat("WITHSCORES") => true,
        _ => return Err(Error::Static(error::SYNTAX)),
    };
    if withscores && !(-(i64::MAX / 2)..=i64::MAX / 2).contains(&l) {
        return Err(Error::Static(OUT_OF_RANGE));
    }
    let (mut shard, hash) = c.shard_of(key);
    let Some(slot) = read_zset(c, &mut shard, key, hash)? else {
        c.out.array(0);
        return Ok(());
    };
    let z = zset_at(&shard, slot)?;
    let count = l.unsigned_abs() as usize;
    if count == 0 {
        c.out.array(0);
        return Ok(());
    }
    let len = z.len();
    if l < 0 {
        // Repeats allowed: `count` independent picks, written as they are drawn.
        let out = &mut *c.out;
        let flat = withscores && out.proto == Protocol::Resp2;
        out.array(if flat { count * 2 } else { count });
        for _ in 0..count {
            let rank = (next_random() % len as u64) as usize;
            let (m, s) = z.get(rank).unwrap_or_default();
            reply_member(out, m, s, withscores);
        }
        return Ok(());
    }
    let mut picked: Vec<(&[u8], f64)> = Vec::new();
    if count >= len {
        z.visit(0..len, Order::Ascending, |m, s| picked.push((m, s)));
    } else if count * 3 > len {
        // Most of the set: a partial Fisher-Yates shuffle over rank indexes.
        let mut ranks: Vec<usize> = (0..len).collect();
        for i in 0..count {
            let j = i + (next_random() % (len - i) as u64) as usize;
            ranks.swap(i, j);
        }
        for &r in &ranks[..count] {
            if let Some(p) = z.get(r) {
                picked.push(p);
            }
        }
    } else {
        // A small part of a large set: random ranks until `count` distinct ones.
        let mut seen = std::collections::HashSet::with_capacity(count);
        while seen.len() < count {
            let r = (next_random() % len as u64) as usize;
            if seen.insert(r) {
                if let Some(p) = z.get(r) {
                    picked.push(p);
                }
            }
        }
    }
    reply_members(c.out, &picked, withscores);
    Ok(())
}

/// ZSCAN key cursor [MATCH pattern] [COUNT count]
pub(super) fn zscan(c: &mut Cmd<'_>) -> Result<()> {
    let key = c.args.key()?;
    let cursor =
        crate::keys::scan::parse_cursor(c.args.next_arg()?).ok_or(Error::Static(INVALID_CURSOR))?;
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
    let (mut shard, hash) = c.shard_of(key);
    let Some(slot) = read_zset(c, &mut shard, key, hash)? else {
        c.out.array(2);
        c.out.bulk(b"0");
        c.out.array(0);
        return Ok(());
    };
    let z = zset_at(&shard, slot)?;
    let mut found: Vec<(&[u8], f64)> = Vec::new();
    let next = z.scan(cursor, count, |m, s| {
        if pattern.is_none_or(|p| larder_engine::glob::matches(p, m, false)) {
            found.push((m, s));
        }
    });
    let out = &mut *c.out;
    out.array(2);
    out.bulk(next.to_string().as_bytes());
    out.array(found.len() * 2);
    for (m, s) in found {
        out.bulk(m);
        out.score_bulk(s);
    }
    Ok(())
}
