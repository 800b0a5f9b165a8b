//! Stream commands without consumer groups: XADD XLEN XRANGE XREVRANGE XDEL XTRIM XSETID,
//! and in `stream/read.rs` XREAD, in `stream/info.rs` XINFO, with Redis 7.0 semantics.
//!
//! A stream is an `Object::Stream` holding a [`larder_engine::stream::Stream`], which
//! implements the operations; this file parses arguments and shapes replies. Unlike the other
//! collections a stream is kept when it empties (XDEL, XTRIM), as in Redis.
//!
//! Replay: an XADD whose ID was generated (`*`, `ms-*`) is recorded with the ID it got, and an
//! approximate trim (`~`, XADD's or XTRIM's) as the exact trim it turned out to be
//! (`MAXLEN = <length left>`, `MINID = <first ID left>`), as Redis rewrites them.

use larder_engine::feed::class;
use larder_engine::stream::{AddError, Fields, IdSpec, NodeLimits, Stream, StreamId, Trim};
use larder_engine::{Object, Shard, SlotId};
use larder_resp::ReplyBuf;

use crate::args::parse_i64;
use crate::collection::{self, Collection};
use crate::error::{self, Error, Result};
use crate::exec::Cmd;
use crate::table::{flags::*, CommandSpec, Group, KeySpec, Scope};

pub mod groups;
mod info;
mod read;

pub(crate) const INVALID_ID: &str = "ERR Invalid stream ID specified as stream command argument";
const ID_ZERO: &str = "ERR The ID specified in XADD must be greater than 0-0";
const ID_TOO_SMALL: &str =
    "ERR The ID specified in XADD is equal or smaller than the target stream top item";
const EXHAUSTED: &str =
    "ERR The stream has exhausted the last possible ID, unable to add more items";
const MAXLEN_AND_MINID: &str =
    "ERR syntax error, MAXLEN and MINID options at the same time are not compatible";
const MAXLEN_NEGATIVE: &str = "ERR The MAXLEN argument must be >= 0.";
const LIMIT_NEGATIVE: &str = "ERR The LIMIT argument must be >= 0.";
const LIMIT_WITHOUT_STRATEGY: &str =
    "ERR syntax error, LIMIT cannot be used without specifying a trimming strategy";
const LIMIT_WITHOUT_APPROX: &str =
    "ERR syntax error, LIMIT cannot be used without the special ~ option";
const XTRIM_WITHOUT_STRATEGY: &str =
    "ERR syntax error, XTRIM must be called with a trimming strategy";
const INVALID_START: &str = "ERR invalid start ID for the interval";
const INVALID_END: &str = "ERR invalid end ID for the interval";
const ENTRIES_ADDED_NEGATIVE: &str = "ERR entries_added must be positive";
const SETID_BELOW_MAX_DELETED: &str =
    "ERR The ID specified in XSETID is smaller than the provided max_deleted_entry_id";
const SETID_TOO_SMALL: &str =
    "ERR The ID specified in XSETID is smaller than the target stream top item";
const SETID_ENTRIES_ADDED: &str =
    "ERR The entries_added specified in XSETID is smaller than the target stream length";

const fn cmd(
    name: &'static str,
    arity: i32,
    flags: u32,
    summary: &'static str,
    since: &'static str,
    handler: crate::table::Handler,
) -> CommandSpec {
    CommandSpec::new(
        name,
        arity,
        flags,
        KeySpec::ONE,
        Group::Stream,
        summary,
        since,
        handler,
    )
}

/// The stream family's table. Arity, flags, key positions, summaries and versions are those
/// of Redis 7.0's COMMAND INFO / COMMAND DOCS.
#[rustfmt::skip]
pub static COMMANDS: &[CommandSpec] = &[
    cmd("xadd", -5, WRITE | DENYOOM | FAST, "Appends a new entry to a stream", "5.0.0", xadd),
    cmd("xlen", 2, READONLY | FAST, "Return the number of entries in a stream", "5.0.0", xlen),
    cmd("xrange", -4, READONLY, "Return a range of elements in a stream, with IDs matching the specified IDs interval", "5.0.0", xrange),
    cmd("xrevrange", -4, READONLY, "Return a range of elements in a stream, with IDs matching the specified IDs interval, in reverse order (from greater to smaller IDs) compared to XRANGE", "5.0.0", xrevrange),
    cmd("xdel", -3, WRITE | FAST, "Removes the specified entries from the stream. Returns the number of items actually deleted, that may be different from the number of IDs passed in case certain IDs do not exist.", "5.0.0", xdel),
    cmd("xtrim", -4, WRITE, "Trims the stream to (approximately if '~' is passed) a certain size", "5.0.0", xtrim),
    cmd("xsetid", -3, WRITE | DENYOOM | FAST, "An internal command for replicating stream values", "5.0.0", xsetid),
    CommandSpec::new("xread", -4, READONLY | BLOCKING | MOVABLE_KEYS, KeySpec::NONE.with_scope(Scope::Streams), Group::Stream, "Return never seen elements in multiple streams, with IDs greater than the ones reported by the caller for each stream. Can block.", "5.0.0", read::xread),
    info::XINFO,
];

impl Collection for Stream {
    const CLASS: u32 = class::STREAM;
    fn of(o: &Object) -> Option<&Stream> {
        match o {
            Object::Stream(s) => Some(s),
            _ => None,
        }
    }
    fn of_mut(o: &mut Object) -> Option<&mut Stream> {
        match o {
            Object::Stream(s) => Some(s),
            _ => None,
        }
    }
    /// A stream is never deleted for being empty.
    fn is_empty(&self) -> bool {
        false
    }
}

/// The node limits in force (`stream-node-max-bytes`, `stream-node-max-entries`).
pub(crate) fn node_limits(c: &Cmd<'_>) -> NodeLimits {
    use crate::config::Param;
    let n = |p| usize::try_from(c.server.config.num(p)).unwrap_or(usize::MAX);
    NodeLimits {
        max_bytes: n(Param::StreamNodeMaxBytes),
        max_entries: n(Param::StreamNodeMaxEntries),
    }
}

/// The Stream held in `slot`, or WRONGTYPE.
pub(crate) fn stream_at(shard: &Shard, slot: SlotId) -> Result<&Stream> {
    collection::at(shard, slot)
}

/// Find `key` as a Stream for a write: `None` when absent, WRONGTYPE for another type.
pub(crate) fn find_stream(
    c: &Cmd<'_>,
    shard: &mut Shard,
    key: &[u8],
    hash: u64,
) -> Result<Option<SlotId>> {
    collection::find::<Stream>(c, shard, key, hash)
}

/// Find `key` as a Stream for a read (a keyspace hit or miss counted).
pub(crate) fn read_stream(
    c: &Cmd<'_>,
    shard: &mut Shard,
    key: &[u8],
    hash: u64,
) -> Result<Option<SlotId>> {
    collection::read::<Stream>(c, shard, key, hash)
}

/// Modify the Stream in `slot` through `f` (a write: new version, memory re-accounted).
pub(crate) fn update<R>(
    shard: &mut Shard,
    slot: SlotId,
    f: impl FnOnce(&mut Stream) -> R,
) -> Result<R> {
    collection::update(shard, slot, f)
}

/// Create an empty stream under `key` (absent), raising `new`.
pub(crate) fn create(c: &Cmd<'_>, shard: &mut Shard, key: &[u8], hash: u64) -> SlotId {
    let slot = shard.insert_object(key, hash, Object::Stream(Box::default()), 0, c.now_ms);
    c.notify(class::NEW, "new", key);
    slot
}

/// Parse a strict ID argument (no `-`/`+`) or fail with Redis's text.
pub(crate) fn strict_id(arg: &[u8], missing_seq: u64) -> Result<StreamId> {
    StreamId::parse_strict(arg, missing_seq).map_err(|_| Error::Static(INVALID_ID))
}

/// An ID as Redis replies it: a bulk `ms-seq`.
pub(crate) fn reply_id(out: &mut ReplyBuf, id: StreamId) {
    out.bulk(id.text().as_bytes());
}

/// One entry as Redis replies it: `[id, [field, value, ...]]`.
pub(crate) fn reply_entry(out: &mut ReplyBuf, id: StreamId, fields: Fields<'_>) {
    out.array(2);
    reply_id(out, id);
    out.array(fields.len() * 2);
    for (f, v) in fields {
        out.bulk(f);
        out.bulk(v);
    }
}

/// Entries of `s` in `start..=end` (newest first when `rev`), at most `count` (0: all), as
/// an array; returns how many.
pub(crate) fn reply_range(
    out: &mut ReplyBuf,
    s: &Stream,
    start: StreamId,
    end: StreamId,
    count: usize,
    rev: bool,
) -> usize {
    let limit = if count == 0 { usize::MAX } else { count };
    let entries: Vec<(StreamId, Fields<'_>)> = s.range(start, end, rev).take(limit).collect();
    out.array(entries.len());
    for (id, fields) in &entries {
        reply_entry(out, *id, fields.clone());
    }
    entries.len()
}

/// XADD's and XTRIM's trim options.
#[derive(Default)]
struct TrimArgs {
    how: Option<Trim>,
    approx: bool,
    /// 0: no limit.
    limit: u64,
}

/// XADD's options before the ID.
#[derive(Default)]
struct AddArgs {
    trim: TrimArgs,
    no_mkstream: bool,
    /// Index of the ID argument (XADD only).
    id_at: usize,
}

/// `streamParseAddOrTrimArgsOrReply`: the options from argv[2] on (for XADD, up to the ID).
fn parse_add_or_trim(c: &Cmd<'_>, argv: &[&[u8]], xadd: bool) -> Result<AddArgs> {
    let mut a = AddArgs::default();
    let mut limit_given = false;
    let mut i = 2;
    while i < argv.len() {
        let more = argv.len() - 1 - i;
        let opt = argv[i];
        if xadd && opt == b"*" {
            break;
        } else if (opt.eq_ignore_ascii_case(b"maxlen") || opt.eq_ignore_ascii_case(b"minid"))
            && more > 0
        {
            if a.trim.how.is_some() {
                return Err(Error::Static(MAXLEN_AND_MINID));
            }
            a.trim.approx = false;
            let next = argv[i + 1];
            if more >= 2 && next == b"~" {
                a.trim.approx = true;
                i += 1;
            } else if more >= 2 && next == b"=" {
                i += 1;
            }
            let value = argv[i + 1];
            a.trim.how = Some(if opt.eq_ignore_ascii_case(b"maxlen") {
                let n = parse_i64(value).ok_or(Error::Static(error::NOT_INTEGER))?;
                Trim::MaxLen(u64::try_from(n).map_err(|_| Error::Static(MAXLEN_NEGATIVE))?)
            } else {
                Trim::MinId(strict_id(value, 0)?)
            });
            i += 1;
        } else if opt.eq_ignore_ascii_case(b"limit") && more > 0 {
            let n = parse_i64(argv[i + 1]).ok_or(Error::Static(error::NOT_INTEGER))?;
            a.trim.limit = u64::try_from(n).map_err(|_| Error::Static(LIMIT_NEGATIVE))?;
            limit_given = true;
            i += 1;
        } else if xadd && opt.eq_ignore_ascii_case(b"nomkstream") {
            a.no_mkstream = true;
        } else if xadd {
            // An explicit ID, or a syntax error reported as an invalid ID.
            StreamId::parse_add(opt).map_err(|_| Error::Static(INVALID_ID))?;
            break;
        } else {
            return Err(Error::Static(error::SYNTAX));
        }
        i += 1;
    }
    a.id_at = i;
    if a.trim.limit != 0 && a.trim.how.is_none() {
        return Err(Error::Static(LIMIT_WITHOUT_STRATEGY));
    }
    if !xadd && a.trim.how.is_none() {
        return Err(Error::Static(XTRIM_WITHOUT_STRATEGY));
    }
    if c.conn.loader {
        // Replay trims exactly what was recorded.
        a.trim.limit = 0;
    } else if limit_given {
        if !a.trim.approx {
            return Err(Error::Static(LIMIT_WITHOUT_APPROX));
        }
    } else if a.trim.approx {
        let per_node = node_limits(c).max_entries as u64;
        a.trim.limit = match 100 * per_node {
            0 => 10_000,
            n => n.min(1_000_000),
        };
    } else {
        a.trim.limit = 0;
    }
    Ok(a)
}

/// Trim `s` as `t` says; returns the entries removed.
fn apply_trim(s: &mut Stream, t: &TrimArgs) -> u64 {
    match t.how {
        Some(how) => s.trim(how, t.approx, t.limit),
        None => 0,
    }
}

/// The exact form of an approximate trim after it ran: `MAXLEN = <length>` or
/// `MINID = <first id>`.
fn exact_trim_args(s: &Stream, how: Trim) -> [Vec<u8>; 3] {
    match how {
        Trim::MaxLen(_) => [
            b"MAXLEN".to_vec(),
            b"=".to_vec(),
            s.len().to_string().into_bytes(),
        ],
        Trim::MinId(_) => [
            b"MINID".to_vec(),
            b"=".to_vec(),
            s.edge(false)
                .map_or(s.first_id(), |(id, _)| id)
                .to_string()
                .into_bytes(),
        ],
    }
}

/// XADD key [NOMKSTREAM] [MAXLEN|MINID [=|~] threshold [LIMIT count]] *|id field value ...
fn xadd(c: &mut Cmd<'_>) -> Result<()> {
    let argv = c.args.argv();
    let a = parse_add_or_trim(c, argv, true)?;
    let fields = argv.get(a.id_at + 1..).unwrap_or_default();
    if fields.len() < 2 || fields.len() % 2 == 1 {
        return Err(error::wrong_arity("xadd"));
    }
    let spec = StreamId::parse_add(argv[a.id_at]).map_err(|_| Error::Static(INVALID_ID))?;
    if spec == IdSpec::Explicit(StreamId::MIN) {
        return Err(Error::Static(ID_ZERO));
    }
    let key = argv[1];
    let (mut shard, hash) = c.shard_of(key);
    let slot = match find_stream(c, &mut shard, key, hash)? {
        Some(slot) => slot,
        None if a.no_mkstream => {
            c.out.null();
            return Ok(());
        }
        None => create(c, &mut shard, key, hash),
    };
    let id = match stream_at(&shard, slot)?.next_id(spec, c.now_ms) {
        Ok(id) => id,
        Err(AddError::Exhausted) => return Err(Error::Static(EXHAUSTED)),
        Err(AddError::TooSmall) => return Err(Error::Static(ID_TOO_SMALL)),
    };
    let limits = node_limits(c);
    update(&mut shard, slot, |s| s.append(id, fields, limits))?
        .map_err(|_| Error::Static(ID_TOO_SMALL))?;
    reply_id(c.out, id);
    c.notify(class::STREAM, "xadd", key);
    if a.trim.how.is_some() && update(&mut shard, slot, |s| apply_trim(s, &a.trim))? > 0 {
        c.notify(class::STREAM, "xtrim", key);
    }
    let generated = !matches!(spec, IdSpec::Explicit(_));
    if (generated || a.trim.approx) && c.records_commands() {
        let s = stream_at(&shard, slot)?;
        let mut record: Vec<Vec<u8>> = vec![b"XADD".to_vec(), key.to_vec()];
        if a.no_mkstream {
            record.push(b"NOMKSTREAM".to_vec());
        }
        match a.trim.how {
            Some(how) if a.trim.approx => record.extend(exact_trim_args(s, how)),
            Some(Trim::MaxLen(n)) => {
                record.extend([b"MAXLEN".to_vec(), n.to_string().into_bytes()])
            }
            Some(Trim::MinId(m)) => record.extend([b"MINID".to_vec(), m.to_string().into_bytes()]),
            None => {}
        }
        record.push(id.to_string().into_bytes());
        record.extend(fields.iter().map(|f| f.to_vec()));
        let refs: Vec<&[u8]> = record.iter().map(Vec::as_slice).collect();
        c.propagate(&refs);
    }
    Ok(())
}

/// XLEN key
fn xlen(c: &mut Cmd<'_>) -> Result<()> {
    let key = c.args.key()?;
    let len = collection::read_with::<Stream, _>(c, key, 0, |s| s.len())?;
    c.out.int(len as i64);
    Ok(())
}

/// XRANGE key start end [COUNT count]
fn xrange(c: &mut Cmd<'_>) -> Result<()> {
    range(c, false)
}

/// XREVRANGE key end start [COUNT count]
fn xrevrange(c: &mut Cmd<'_>) -> Result<()> {
    range(c, true)
}

/// A range bound: `(id` exclusive (strict form), else `-`, `+`, `ms[-seq]`.
fn interval_id(arg: &[u8], missing_seq: u64) -> Result<(StreamId, bool)> {
    match arg {
        [b'(', rest @ ..] if !rest.is_empty() => Ok((strict_id(rest, missing_seq)?, true)),
        _ => Ok((
            StreamId::parse(arg, missing_seq).map_err(|_| Error::Static(INVALID_ID))?,
            false,
        )),
    }
}

fn range(c: &mut Cmd<'_>, rev: bool) -> Result<()> {
    let argv = c.args.argv();
    let key = argv[1];
    let (start_arg, end_arg) = if rev {
        (argv[3], argv[2])
    } else {
        (argv[2], argv[3])
    };
    let (mut start, ex) = interval_id(start_arg, 0)?;
    if ex {
        start = start.next().ok_or(Error::Static(INVALID_START))?;
    }
    let (mut end, ex) = interval_id(end_arg, u64::MAX)?;
    if ex {
        end = end.prev().ok_or(Error::Static(INVALID_END))?;
    }
    let mut count: Option<usize> = None;
    let mut j = 4;
    while j < argv.len() {
        if argv[j].eq_ignore_ascii_case(b"count") && j + 1 < argv.len() {
            let n = parse_i64(argv[j + 1]).ok_or(Error::Static(error::NOT_INTEGER))?;
            count = Some(usize::try_from(n.max(0)).unwrap_or(usize::MAX));
            j += 2;
        } else {
            return Err(Error::Static(error::SYNTAX));
        }
    }
    let (mut shard, hash) = c.shard_of(key);
    let Some(slot) = read_stream(c, &mut shard, key, hash)? else {
        c.out.array(0);
        return Ok(());
    };
    if count == Some(0) {
        c.out.null_array();
        return Ok(());
    }
    let s = stream_at(&shard, slot)?;
    reply_range(c.out, s, start, end, count.unwrap_or(0), rev);
    Ok(())
}

/// XDEL key id [id ...]
fn xdel(c: &mut Cmd<'_>) -> Result<()> {
    let argv = c.args.argv();
    let key = argv[1];
    let (mut shard, hash) = c.shard_of(key);
    let Some(slot) = find_stream(c, &mut shard, key, hash)? else {
        c.out.int(0);
        return Ok(());
    };
    let ids = argv[2..]
        .iter()
        .map(|a| strict_id(a, 0))
        .collect::<Result<Vec<StreamId>>>()?;
    let exists = ids
        .iter()
        .any(|&id| stream_at(&shard, slot).is_ok_and(|s| s.get(id).is_some()));
    let deleted = if exists {
        update(&mut shard, slot, |s| {
            ids.iter().filter(|&&id| s.delete(id)).count()
        })?
    } else {
        0
    };
    if deleted > 0 {
        c.notify(class::STREAM, "xdel", key);
    }
    c.out.int(deleted as i64);
    Ok(())
}

/// XTRIM key MAXLEN|MINID [=|~] threshold [LIMIT count]
fn xtrim(c: &mut Cmd<'_>) -> Result<()> {
    let argv = c.args.argv();
    let a = parse_add_or_trim(c, argv, false)?;
    let key = argv[1];
    let (mut shard, hash) = c.shard_of(key);
    let Some(slot) = find_stream(c, &mut shard, key, hash)? else {
        c.out.int(0);
        return Ok(());
    };
    let deleted = update(&mut shard, slot, |s| apply_trim(s, &a.trim))?;
    if deleted > 0 {
        c.notify(class::STREAM, "xtrim", key);
        if let (true, Some(how), true) = (a.trim.approx, a.trim.how, c.records_commands()) {
            let s = stream_at(&shard, slot)?;
            let mut record: Vec<Vec<u8>> = vec![b"XTRIM".to_vec(), key.to_vec()];
            record.extend(exact_trim_args(s, how));
            let refs: Vec<&[u8]> = record.iter().map(Vec::as_slice).collect();
            c.propagate(&refs);
        }
    }
    c.out.int(deleted as i64);
    Ok(())
}

/// XSETID key last-id [ENTRIESADDED entries-added] [MAXDELETEDID max-deleted-id]
fn xsetid(c: &mut Cmd<'_>) -> Result<()> {
    let argv = c.args.argv();
    let key = argv[1];
    let id = strict_id(argv[2], 0)?;
    let mut entries_added: Option<u64> = None;
    let mut max_deleted = StreamId::MIN;
    let mut i = 3;
    while i < argv.len() {
        let more = argv.len() - 1 - i;
        if argv[i].eq_ignore_ascii_case(b"entriesadded") && more > 0 {
            let n = parse_i64(argv[i + 1]).ok_or(Error::Static(error::NOT_INTEGER))?;
            entries_added =
                Some(u64::try_from(n).map_err(|_| Error::Static(ENTRIES_ADDED_NEGATIVE))?);
        } else if argv[i].eq_ignore_ascii_case(b"maxdeletedid") && more > 0 {
            max_deleted = strict_id(argv[i + 1], 0)?;
            if id < max_deleted {
                return Err(Error::Static(SETID_BELOW_MAX_DELETED));
            }
        } else {
            return Err(Error::Static(error::SYNTAX));
        }
        i += 2;
    }
    let (mut shard, hash) = c.shard_of(key);
    let Some(slot) = find_stream(c, &mut shard, key, hash)? else {
        return Err(Error::Static(error::NO_SUCH_KEY));
    };
    let s = stream_at(&shard, slot)?;
    if !s.is_empty() {
        let top = s.last_live_id().unwrap_or(StreamId::MIN);
        if id < top {
            return Err(Error::Static(SETID_TOO_SMALL));
        }
        if entries_added.is_some_and(|n| s.len() > n) {
            return Err(Error::Static(SETID_ENTRIES_ADDED));
        }
    }
    update(&mut shard, slot, |s| {
        s.set_last_id(id);
        if let Some(n) = entries_added {
            s.set_entries_added(n);
        }
        if max_deleted != StreamId::MIN {
            s.set_max_deleted_id(max_deleted);
        }
    })?;
    c.out.simple("OK");
    c.notify(class::STREAM, "xsetid", key);
    Ok(())
}

#[cfg(test)]
mod tests;
