//! XREADGROUP: new entries for a consumer (`>`), or its own pending history (an ID), from
//! each stream named, blocking while there is nothing new (`xreadCommand` and
//! `serveClientsBlockedOnStreamKey` in Redis 7.0).
//!
//! A blocked XREADGROUP runs again when its keys are written (see `blocking.rs`): `>` is
//! resolved again against the group, as Redis does for a blocked consumer. A retry that finds
//! the key gone or of another type answers `-UNBLOCKED`, one that finds the group gone
//! `-NOGROUP`, as Redis answers clients blocked on a stream or group that was removed.

use larder_engine::feed::class;
use larder_engine::stream::group::{Group, Lookup};
use larder_engine::stream::{Stream, StreamId};

use super::{find_stream, group_of, meta, propagate_claim, propagate_consumer, propagate_group_id};
use super::{reply_entry, reply_id, stream_at, update_groups};
use crate::error::{self, Error, Result};
use crate::exec::Cmd;

const UNBALANCED: &str =
    "ERR Unbalanced XREAD list of streams: for each stream key an ID or '$' must be specified.";
const MISSING_GROUP: &str = "ERR Missing GROUP option for XREADGROUP";
const DOLLAR: &str = "ERR The $ ID is meaningless in the context of XREADGROUP: you want to read the history of this consumer by specifying a proper ID, or use the > ID to get new messages. The $ ID would just return an empty result set.";
const TIMEOUT_NEGATIVE: &str = "ERR timeout is negative";
const KEY_GONE: &str = "UNBLOCKED the stream key no longer exists";
const GROUP_GONE: &str = "NOGROUP the consumer group this client was blocked on no longer exists";
/// The COUNT of a blocked read that gave none (Redis's `XREAD_BLOCKED_DEFAULT_COUNT`).
const BLOCKED_DEFAULT_COUNT: usize = 1000;

/// XREADGROUP's arguments.
struct Request<'a> {
    group: &'a [u8],
    consumer: &'a [u8],
    /// 0: no limit.
    count: usize,
    /// Absolute deadline in Unix ms (0: for ever), if BLOCK was given.
    block: Option<u64>,
    noack: bool,
    keys: &'a [&'a [u8]],
    ids: &'a [&'a [u8]],
}

fn parse<'a>(argv: &'a [&'a [u8]], now_ms: u64) -> Result<Request<'a>> {
    let mut group = None;
    let mut count = 0;
    let mut block = None;
    let mut noack = false;
    let mut streams = None;
    let mut i = 1;
    while i < argv.len() {
        let more = argv.len() - i - 1;
        let o = argv[i];
        if o.eq_ignore_ascii_case(b"BLOCK") && more > 0 {
            i += 1;
            let ms =
                crate::args::parse_i64(argv[i]).ok_or(Error::Static(error::TIMEOUT_NOT_INTEGER))?;
            if ms < 0 {
                return Err(Error::Static(TIMEOUT_NEGATIVE));
            }
            block = Some(if ms == 0 {
                0
            } else {
                now_ms.saturating_add(ms as u64)
            });
        } else if o.eq_ignore_ascii_case(b"COUNT") && more > 0 {
            i += 1;
            count = crate::args::parse_i64(argv[i])
                .ok_or(Error::Static(error::NOT_INTEGER))?
                .max(0) as usize;
        } else if o.eq_ignore_ascii_case(b"STREAMS") && more > 0 {
            let rest = &argv[i + 1..];
            if rest.len() % 2 != 0 {
                return Err(Error::Static(UNBALANCED));
            }
            streams = Some(rest.split_at(rest.len() / 2));
            break;
        } else if o.eq_ignore_ascii_case(b"GROUP") && more >= 2 {
            group = Some((argv[i + 1], argv[i + 2]));
            i += 2;
        } else if o.eq_ignore_ascii_case(b"NOACK") {
            noack = true;
        } else {
            return Err(Error::Static(error::SYNTAX));
        }
        i += 1;
    }
    let (keys, ids) = streams.ok_or(Error::Static(error::SYNTAX))?;
    let (group, consumer) = group.ok_or(Error::Static(MISSING_GROUP))?;
    Ok(Request {
        group,
        consumer,
        count,
        block,
        noack,
        keys,
        ids,
    })
}

/// `None` for `>` (new entries), else the history ID to read after.
fn id_arg(arg: &[u8]) -> Result<Option<StreamId>> {
    match arg {
        b"$" => Err(Error::Static(DOLLAR)),
        b">" => Ok(None),
        _ => super::strict_id(arg).map(Some),
    }
}

/// XREADGROUP GROUP group consumer [COUNT count] [BLOCK ms] [NOACK] STREAMS key [key ...] id
/// [id ...]
pub(super) fn xreadgroup(c: &mut Cmd<'_>) -> Result<()> {
    let argv = c.args.argv();
    let mut req = parse(argv, c.now_ms)?;
    let retry = crate::blocking::retrying(c);
    if retry && req.count == 0 {
        req.count = BLOCKED_DEFAULT_COUNT;
    }
    // Every key must hold the group before anything is served; the IDs are checked with
    // their keys, in order.
    let mut from = Vec::with_capacity(req.keys.len());
    for (&key, &id) in req.keys.iter().zip(req.ids) {
        let (mut shard, hash) = c.shard_of(key);
        let found = match find_stream(c, &mut shard, key, hash) {
            Err(_) if retry => return Err(Error::Static(KEY_GONE)),
            r => r?,
        };
        let has_group = found
            .map(|slot| stream_at(&shard, slot).map(|s| group_of(s, req.group).is_some()))
            .transpose()?;
        match has_group {
            Some(true) => {}
            None if retry => return Err(Error::Static(KEY_GONE)),
            Some(false) if retry => return Err(Error::Static(GROUP_GONE)),
            _ => {
                return Err(Error::Owned(format!(
                "NOGROUP No such key '{}' or consumer group '{}' in XREADGROUP with GROUP option",
                super::c_str(key),
                super::c_str(req.group)
            )))
            }
        }
        from.push(id_arg(id)?);
    }
    let served: Vec<usize> = (0..req.keys.len())
        .filter(|&i| servable(c, req.keys[i], req.group, from[i]))
        .collect();
    if served.is_empty() {
        return match req.block {
            Some(deadline) => crate::blocking::wait(c, req.keys, deadline),
            None => {
                c.out.null_array();
                Ok(())
            }
        };
    }
    crate::blocking::done(c);
    if c.out.proto == larder_resp::Protocol::Resp2 {
        c.out.array(served.len());
    } else {
        c.out.map(served.len());
    }
    for i in served {
        serve(c, &req, req.keys[i], from[i])?;
    }
    Ok(())
}

/// Whether the key has something for this read: a history read always answers (perhaps
/// with nothing); `>` when the stream has an entry past the group's last delivered ID.
fn servable(c: &Cmd<'_>, key: &[u8], group: &[u8], from: Option<StreamId>) -> bool {
    if from.is_some() {
        return true;
    }
    let (mut shard, hash) = c.shard_of(key);
    let Some(slot) = shard.find(key, hash, c.now_ms) else {
        return false;
    };
    let Ok(s) = stream_at(&shard, slot) else {
        return false;
    };
    match (group_of(s, group), s.last_live_id()) {
        (Some(g), Some(last)) => last > g.last_id(),
        _ => false,
    }
}

/// An entry delivered (or delivered again) with its pending state: ID, delivery time,
/// delivery count.
type Delivered = (StreamId, u64, u64);

/// Serve one key: its name, then its entries.
fn serve(c: &mut Cmd<'_>, req: &Request<'_>, key: &[u8], from: Option<StreamId>) -> Result<()> {
    if c.out.proto == larder_resp::Protocol::Resp2 {
        c.out.array(2);
    }
    c.out.bulk(key);
    let (mut shard, hash) = c.shard_of(key);
    let Some(slot) = shard.find(key, hash, c.now_ms) else {
        c.out.array(0);
        return Ok(());
    };
    let now = c.now_ms;
    let out = &mut *c.out;
    let (lookup, delivered, last) = update_groups(&mut shard, slot, |s, groups| {
        groups
            .update(req.group, |g| {
                let lookup = g.touch_consumer(req.consumer, now);
                let delivered = match from {
                    Some(after) => history(s, g, req, after, now, out),
                    None => new_entries(s, g, req, now, out),
                };
                (lookup, delivered, (g.last_id(), g.entries_read()))
            })
            .ok_or(())
    })?
    .map_err(|()| Error::Static(GROUP_GONE))?;
    if lookup == Lookup::Created {
        c.notify(class::STREAM, "xgroup-createconsumer", key);
    }
    drop(shard);
    let moved = delivered.1;
    let claims = delivered.0;
    // A consumer created by a read that leaves nothing pending for it (NOACK, an empty
    // history) is recorded on its own; so is a seen time that was all the read changed.
    if lookup == Lookup::Created || (claims.is_empty() && !moved) {
        propagate_consumer(c, key, req.group, req.consumer);
    }
    for &(id, time, count) in &claims {
        propagate_claim(c, key, req.group, (id, req.consumer, time, count), last.0);
    }
    // Redis records a move on its own only under NOACK (the claims carry the last ID);
    // recording it always also replays the read counter exactly.
    if moved {
        propagate_group_id(c, key, req.group, last.0, last.1);
    }
    Ok(())
}

/// New entries after the group's last delivered ID, up to the count: each advances the
/// group and (without NOACK) becomes pending for the consumer. Returns what became pending
/// and whether the last delivered ID moved.
fn new_entries(
    s: &Stream,
    g: &mut Group,
    req: &Request<'_>,
    now: u64,
    out: &mut larder_resp::ReplyBuf,
) -> (Vec<Delivered>, bool) {
    let m = meta(s);
    let start = g.last_id().next().unwrap_or(StreamId::MIN);
    let limit = if req.count == 0 {
        usize::MAX
    } else {
        req.count
    };
    let entries: Vec<_> = s.range(start, StreamId::MAX, false).take(limit).collect();
    out.array(entries.len());
    let mut moved = false;
    let mut claims = Vec::with_capacity(if req.noack { 0 } else { entries.len() });
    for (id, fields) in entries {
        moved |= g.advance(id, &m);
        reply_entry(out, id, fields);
        if !req.noack {
            if let Some(n) = g.deliver(id, req.consumer, now) {
                claims.push((id, n.delivery_time_ms, n.delivery_count));
            }
        }
    }
    (claims, moved)
}

/// The consumer's pending entries after `after`, up to the count: each that the stream still
/// holds is delivered again (one more delivery, now); one it no longer holds is shown as its
/// ID with a null.
fn history(
    s: &Stream,
    g: &mut Group,
    req: &Request<'_>,
    after: StreamId,
    now: u64,
    out: &mut larder_resp::ReplyBuf,
) -> (Vec<Delivered>, bool) {
    // Redis reads from the ID after the one given (0-0 after the largest ID).
    let start = after.next().unwrap_or(StreamId::MIN);
    let limit = if req.count == 0 {
        usize::MAX
    } else {
        req.count
    };
    let ids: Vec<StreamId> = g
        .consumer(req.consumer)
        .map(|cons| cons.pending_from(start).take(limit).collect())
        .unwrap_or_default();
    out.array(ids.len());
    let mut claims = Vec::new();
    for id in ids {
        match s.get(id) {
            Some(fields) => {
                reply_entry(out, id, fields);
                g.redeliver(id, now);
                if let Some(n) = g.nack(id) {
                    claims.push((id, n.delivery_time_ms, n.delivery_count));
                }
            }
            None => {
                out.array(2);
                reply_id(out, id);
                out.null_array();
            }
        }
    }
    (claims, false)
}
