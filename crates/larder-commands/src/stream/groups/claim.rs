//! XCLAIM and XAUTOCLAIM: pending entries change owner (`xclaimCommand`,
//! `xautoclaimCommand` in Redis 7.0). Each entry claimed or dropped is recorded for replay as
//! the XCLAIM that sets its exact state.

use larder_engine::feed::class;
use larder_engine::stream::group::{Claim, ClaimCount, Claimed, Group};
use larder_engine::stream::{Stream, StreamId};

use super::{find_stream, group_of, int_arg, interval_id, no_key_or_group, propagate_claim};
use super::{propagate_group_id, reply_entry, reply_id, stream_at, update_groups};
use crate::error::{self, Error, Result};
use crate::exec::Cmd;

const XCLAIM_MIN_IDLE: &str = "ERR Invalid min-idle-time argument for XCLAIM";
const XCLAIM_IDLE: &str = "ERR Invalid IDLE option argument for XCLAIM";
const XCLAIM_TIME: &str = "ERR Invalid TIME option argument for XCLAIM";
const XCLAIM_RETRYCOUNT: &str = "ERR Invalid RETRYCOUNT option argument for XCLAIM";
const XAUTOCLAIM_MIN_IDLE: &str = "ERR Invalid min-idle-time argument for XAUTOCLAIM";
const XAUTOCLAIM_COUNT: &str = "ERR COUNT must be > 0";
/// XAUTOCLAIM's largest COUNT: Redis's `LONG_MAX / max(sizeof(streamID), attempts_factor)`.
const XAUTOCLAIM_COUNT_MAX: i64 = i64::MAX / 16;

/// The stream at `key` and whether it holds group `name`; NOGROUP when either is missing.
fn target(c: &Cmd<'_>, key: &[u8], name: &[u8]) -> Result<()> {
    let (mut shard, hash) = c.shard_of(key);
    let found = find_stream(c, &mut shard, key, hash)?;
    match found {
        Some(slot) if group_of(stream_at(&shard, slot)?, name).is_some() => Ok(()),
        _ => Err(no_key_or_group(key, name)),
    }
}

/// XCLAIM key group consumer min-idle-time id [id ...] [IDLE ms] [TIME unix-ms]
/// [RETRYCOUNT count] [FORCE] [JUSTID] [LASTID id]
pub(super) fn xclaim(c: &mut Cmd<'_>) -> Result<()> {
    let argv = c.args.argv();
    let (key, name, consumer) = (argv[1], argv[2], argv[3]);
    target(c, key, name)?;
    let min_idle = int_arg(argv[4], XCLAIM_MIN_IDLE)?.max(0) as u64;
    // The IDs run up to the first argument that is not one; options follow.
    let mut ids = Vec::new();
    let mut j = 5;
    while j < argv.len() {
        match StreamId::parse_strict(argv[j], 0) {
            Ok(id) => ids.push(id),
            Err(_) => break,
        }
        j += 1;
    }
    let now = c.now_ms as i64;
    let mut time: Option<i64> = None;
    let mut count = ClaimCount::Increment;
    let mut retry: Option<i64> = None;
    let (mut force, mut justid) = (false, false);
    let mut last_id = StreamId::MIN;
    while j < argv.len() {
        let more = argv.len() - 1 - j;
        let o = argv[j];
        if o.eq_ignore_ascii_case(b"FORCE") {
            force = true;
        } else if o.eq_ignore_ascii_case(b"JUSTID") {
            justid = true;
        } else if o.eq_ignore_ascii_case(b"IDLE") && more > 0 {
            j += 1;
            time = Some(now.wrapping_sub(int_arg(argv[j], XCLAIM_IDLE)?));
        } else if o.eq_ignore_ascii_case(b"TIME") && more > 0 {
            j += 1;
            time = Some(int_arg(argv[j], XCLAIM_TIME)?);
        } else if o.eq_ignore_ascii_case(b"RETRYCOUNT") && more > 0 {
            j += 1;
            retry = Some(int_arg(argv[j], XCLAIM_RETRYCOUNT)?);
        } else if o.eq_ignore_ascii_case(b"LASTID") && more > 0 {
            j += 1;
            last_id = super::strict_id(argv[j])?;
        } else {
            return Err(Error::Owned(format!(
                "ERR Unrecognized XCLAIM option '{}'",
                super::c_str(o)
            )));
        }
        j += 1;
    }
    // A delivery time in the future (or before 1970) is taken as now, as Redis does.
    let delivery_time_ms = match time {
        Some(t) if (0..=now).contains(&t) => t as u64,
        _ => now as u64,
    };
    match retry {
        Some(n) if n >= 0 => count = ClaimCount::Set(n as u64),
        _ if justid => count = ClaimCount::Keep,
        _ => {}
    }
    let claim = Claim {
        consumer,
        min_idle_ms: min_idle,
        delivery_time_ms,
        count,
        force,
        now_ms: c.now_ms,
    };
    let (mut shard, hash) = c.shard_of(key);
    let Some(slot) = find_stream(c, &mut shard, key, hash)? else {
        return Err(no_key_or_group(key, name));
    };
    let s = stream_at(&shard, slot)?;
    let Some(g) = group_of(s, name) else {
        return Err(no_key_or_group(key, name));
    };
    // Nothing changes unless some ID would be claimed or dropped, or LASTID moves the group:
    // then the stream is not written at all (and nothing is recorded for replay).
    if last_id <= g.last_id() && !ids.iter().any(|&id| would_claim(s, g, id, &claim)) {
        c.out.array(0);
        return Ok(());
    }
    let out = &mut *c.out;
    let (claims, created, moved, last) = update_groups(&mut shard, slot, |s, groups| {
        groups.update(name, |g| {
            let moved = g.raise_last_id(last_id);
            let mut created = false;
            let claims: Vec<Claimed> = ids
                .iter()
                .filter_map(|&id| g.claim(id, &claim, s.get(id).is_some(), &mut created))
                .collect();
            reply_claims(out, s, &claims, justid);
            (claims, created, moved, (g.last_id(), g.entries_read()))
        })
    })?
    .ok_or_else(|| no_key_or_group(key, name))?;
    if created {
        c.notify(class::STREAM, "xgroup-createconsumer", key);
    }
    drop(shard);
    record(c, key, name, &claims, last.0);
    if moved && claims.is_empty() {
        propagate_group_id(c, key, name, last.0, last.1);
    }
    Ok(())
}

/// Whether XCLAIM would change entry `id` (read only: the same tests as the claim itself).
fn would_claim(s: &Stream, g: &Group, id: StreamId, claim: &Claim<'_>) -> bool {
    let pending = g.nack(id);
    if s.get(id).is_none() {
        return pending.is_some();
    }
    match pending {
        None => claim.force,
        Some(n) => {
            claim.min_idle_ms == 0
                || i128::from(claim.now_ms) - i128::from(n.delivery_time_ms)
                    >= i128::from(claim.min_idle_ms)
        }
    }
}

/// The claimed entries (dropped ones are not shown): each as its entry, or its ID (JUSTID).
fn reply_claims(out: &mut larder_resp::ReplyBuf, s: &Stream, claims: &[Claimed], justid: bool) {
    let owned = claims.iter().filter(|c| matches!(c, Claimed::Owned(..)));
    out.array(owned.clone().count());
    for c in owned {
        if let Claimed::Owned(id, _) = c {
            match (justid, s.get(*id)) {
                (false, Some(fields)) => reply_entry(out, *id, fields),
                _ => reply_id(out, *id),
            }
        }
    }
}

/// Record each claimed or dropped entry for replay as the XCLAIM that sets its state.
fn record(c: &mut Cmd<'_>, key: &[u8], name: &[u8], claims: &[Claimed], last_id: StreamId) {
    for cl in claims {
        let (Claimed::Owned(id, n) | Claimed::Gone(id, n)) = cl;
        let pending = (*id, n.consumer(), n.delivery_time_ms, n.delivery_count);
        propagate_claim(c, key, name, pending, last_id);
    }
}

/// XAUTOCLAIM key group consumer min-idle-time start [COUNT count] [JUSTID]
pub(super) fn xautoclaim(c: &mut Cmd<'_>) -> Result<()> {
    let argv = c.args.argv();
    let (key, name, consumer) = (argv[1], argv[2], argv[3]);
    let min_idle = int_arg(argv[4], XAUTOCLAIM_MIN_IDLE)?.max(0) as u64;
    let (mut start, start_ex) = interval_id(argv[5], 0)?;
    if start_ex {
        start = start.next().ok_or(Error::Static(super::START_ID))?;
    }
    let mut limit = 100u64;
    let mut justid = false;
    let mut j = 6;
    while j < argv.len() {
        let more = argv.len() - 1 - j;
        if argv[j].eq_ignore_ascii_case(b"COUNT") && more > 0 {
            let n = crate::args::parse_i64(argv[j + 1]).ok_or(Error::Static(XAUTOCLAIM_COUNT))?;
            if !(1..=XAUTOCLAIM_COUNT_MAX).contains(&n) {
                return Err(Error::Static(XAUTOCLAIM_COUNT));
            }
            limit = n as u64;
            j += 1;
        } else if argv[j].eq_ignore_ascii_case(b"JUSTID") {
            justid = true;
        } else {
            return Err(Error::Static(error::SYNTAX));
        }
        j += 1;
    }
    let (mut shard, hash) = c.shard_of(key);
    let Some(slot) = find_stream(c, &mut shard, key, hash)? else {
        return Err(no_key_or_group(key, name));
    };
    let s = stream_at(&shard, slot)?;
    let Some(g) = group_of(s, name) else {
        return Err(no_key_or_group(key, name));
    };
    let count = if justid {
        ClaimCount::Keep
    } else {
        ClaimCount::Increment
    };
    let now = c.now_ms;
    // A walk that would claim or drop nothing changes nothing: answer it without a write.
    let attempts = limit.saturating_mul(10);
    let idle_enough = |delivered: u64| {
        min_idle == 0 || i128::from(now) - i128::from(delivered) >= i128::from(min_idle)
    };
    let acts = g
        .pending_range(start, StreamId::MAX)
        .take(attempts.min(usize::MAX as u64) as usize)
        .any(|(id, n)| s.get(id).is_none() || idle_enough(n.delivery_time_ms));
    if !acts {
        let next = g
            .pending_range(start, StreamId::MAX)
            .nth(attempts.min(usize::MAX as u64) as usize)
            .map_or(StreamId::MIN, |(id, _)| id);
        let out = &mut *c.out;
        out.array(3);
        reply_id(out, next);
        out.array(0);
        out.array(0);
        return Ok(());
    }
    let out = &mut *c.out;
    let (done, last) = update_groups(&mut shard, slot, |s, groups| {
        groups.update(name, |g| {
            let done = g.autoclaim(start, limit, consumer, min_idle, count, now, |id| {
                s.get(id).is_some()
            });
            out.array(3);
            reply_id(out, done.next);
            reply_claims(out, s, &done.claims, justid);
            let gone: Vec<StreamId> = done
                .claims
                .iter()
                .filter_map(|c| match c {
                    Claimed::Gone(id, _) => Some(*id),
                    Claimed::Owned(..) => None,
                })
                .collect();
            out.array(gone.len());
            for id in gone {
                reply_id(out, id);
            }
            (done, g.last_id())
        })
    })?
    .ok_or_else(|| no_key_or_group(key, name))?;
    if done.created {
        c.notify(class::STREAM, "xgroup-createconsumer", key);
    }
    drop(shard);
    record(c, key, name, &done.claims, last);
    Ok(())
}
