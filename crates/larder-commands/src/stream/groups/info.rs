//! XINFO GROUPS, XINFO CONSUMERS, and the groups part of XINFO STREAM FULL, shaped as Redis
//! 7.0's `xinfoCommand` and `xinfoReplyWithStreamInfo` shape them.

use larder_engine::stream::Stream;
use larder_resp::ReplyBuf;

use super::{group_of, meta, no_group, reply_id, stream_at};
use crate::error::{self, Error, Result};
use crate::exec::Cmd;

/// The stream at the key argument (XINFO's third), counting a hit or miss: `ERR no such key`
/// when absent.
fn stream_arg<R>(
    c: &mut Cmd<'_>,
    f: impl FnOnce(&Stream, &mut ReplyBuf, u64) -> Result<R>,
) -> Result<R> {
    let key = c.args.key()?;
    let (mut shard, hash) = c.shard_of(key);
    let found = shard.find_touch(key, hash, c.now_ms, c.access());
    c.hit(found.is_some());
    let slot = found.ok_or(Error::Static(error::NO_SUCH_KEY))?;
    let s = stream_at(&shard, slot)?;
    f(s, c.out, c.now_ms)
}

/// A group's read counter and lag: a number, or null when unknown.
fn reply_opt(out: &mut ReplyBuf, v: Option<i64>) {
    match v {
        Some(n) => out.int(n),
        None => out.null(),
    }
}

/// XINFO GROUPS key
pub fn xinfo_groups(c: &mut Cmd<'_>) -> Result<()> {
    stream_arg(c, |s, out, _| {
        let m = meta(s);
        let groups: Vec<_> = s.groups.iter().flat_map(|g| g.iter()).collect();
        out.array(groups.len());
        for (name, g) in groups {
            out.map(6);
            out.bulk(b"name");
            out.bulk(name);
            out.bulk(b"consumers");
            out.int(g.consumer_count() as i64);
            out.bulk(b"pending");
            out.int(g.pending_len() as i64);
            out.bulk(b"last-delivered-id");
            reply_id(out, g.last_id());
            out.bulk(b"entries-read");
            reply_opt(out, g.entries_read().map(|n| n as i64));
            out.bulk(b"lag");
            reply_opt(out, g.lag(&m));
        }
        Ok(())
    })
}

/// XINFO CONSUMERS key group
pub fn xinfo_consumers(c: &mut Cmd<'_>) -> Result<()> {
    let argv = c.args.argv();
    let (key, name) = (argv[2], argv[3]);
    stream_arg(c, |s, out, now| {
        let g = group_of(s, name).ok_or_else(|| no_group(key, name))?;
        out.array(g.consumer_count());
        for (n, cons) in g.consumers() {
            out.map(3);
            out.bulk(b"name");
            out.bulk(n);
            out.bulk(b"pending");
            out.int(cons.pending_len() as i64);
            out.bulk(b"idle");
            out.int((i128::from(now) - i128::from(cons.seen_time_ms)).max(0) as i64);
        }
        Ok(())
    })
}

/// The value of XINFO STREAM FULL's `groups` field: each group with its PEL and consumers,
/// at most `count` pending entries listed per PEL (0: all).
pub fn reply_full_groups(out: &mut ReplyBuf, s: &Stream, count: usize) {
    let limit = if count == 0 { usize::MAX } else { count };
    let m = meta(s);
    let groups: Vec<_> = s.groups.iter().flat_map(|g| g.iter()).collect();
    out.array(groups.len());
    for (name, g) in groups {
        out.map(7);
        out.bulk(b"name");
        out.bulk(name);
        out.bulk(b"last-delivered-id");
        reply_id(out, g.last_id());
        out.bulk(b"entries-read");
        reply_opt(out, g.entries_read().map(|n| n as i64));
        out.bulk(b"lag");
        reply_opt(out, g.lag(&m));
        out.bulk(b"pel-count");
        out.int(g.pending_len() as i64);
        out.bulk(b"pending");
        let pel: Vec<_> = g
            .pending_range(
                larder_engine::stream::StreamId::MIN,
                larder_engine::stream::StreamId::MAX,
            )
            .take(limit)
            .collect();
        out.array(pel.len());
        for (id, n) in pel {
            out.array(4);
            reply_id(out, id);
            out.bulk(n.consumer());
            out.int(n.delivery_time_ms as i64);
            out.int(n.delivery_count as i64);
        }
        out.bulk(b"consumers");
        out.array(g.consumer_count());
        for (cname, cons) in g.consumers() {
            out.map(4);
            out.bulk(b"name");
            out.bulk(cname);
            out.bulk(b"seen-time");
            out.int(cons.seen_time_ms as i64);
            out.bulk(b"pel-count");
            out.int(cons.pending_len() as i64);
            out.bulk(b"pending");
            let ids: Vec<_> = cons
                .pending_from(larder_engine::stream::StreamId::MIN)
                .take(limit)
                .collect();
            out.array(ids.len());
            for id in ids {
                out.array(3);
                reply_id(out, id);
                let n = g.nack(id);
                out.int(n.map_or(0, |n| n.delivery_time_ms as i64));
                out.int(n.map_or(0, |n| n.delivery_count as i64));
            }
        }
    }
}
