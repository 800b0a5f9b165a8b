//! Consumer-group commands with Redis 7.0 semantics: XGROUP (CREATE, SETID, DESTROY,
//! CREATECONSUMER, DELCONSUMER, HELP), XACK and XPENDING here; XREADGROUP in `read.rs`,
//! XCLAIM and XAUTOCLAIM in `claim.rs`, XINFO GROUPS / CONSUMERS in `info.rs`.
//!
//! The groups live in the stream ([`larder_engine::stream::group`], which implements every
//! operation); these handlers parse, look the key and group up, and shape replies.
//!
//! Replay: a command that changes a group records what reproduces the change exactly instead
//! of itself, as Redis propagates it: each entry that a read or claim made pending (or
//! dropped) as `XCLAIM key group consumer 0 id TIME ms RETRYCOUNT n FORCE JUSTID LASTID id`,
//! a moved last delivered ID as `XGROUP SETID ... ENTRIESREAD n`, a consumer created by a
//! read as `XGROUP CREATECONSUMER`. Beyond Redis, XREADGROUP also records its history
//! re-deliveries (as XCLAIM) and its read counter (SETID after every move), so that delivery
//! counts and lag replay exactly too. A handler changes the stream only when something will
//! change, so a request that changes nothing records nothing.

mod claim;
mod info;
mod read;
#[cfg(test)]
mod tests;

pub use info::{reply_full_groups, xinfo_consumers, xinfo_groups};

use larder_engine::feed::class;
use larder_engine::stream::group::{Group, Groups, StreamMeta};
use larder_engine::stream::{Stream, StreamId};
use larder_engine::{Object, Shard, SlotId};

use super::{reply_entry, reply_id};
use crate::error::{self, Error, Result};
use crate::exec::Cmd;
use crate::table::{flags::*, CommandSpec, Group as CmdGroup, KeySpec, Scope};

/// An ID argument that is not one.
pub(crate) const INVALID_ID: &str = "ERR Invalid stream ID specified as stream command argument";
const KEY_REQUIRED: &str = "ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you may want to use the MKSTREAM option to create an empty stream automatically.";
const BUSYGROUP: &str = "BUSYGROUP Consumer Group name already exists";
const ENTRIESREAD_RANGE: &str = "ERR value for ENTRIESREAD must be positive or -1";
const START_ID: &str = "ERR invalid start ID for the interval";
const END_ID: &str = "ERR invalid end ID for the interval";

/// `NOGROUP No such key 'k' or consumer group 'g'` (XPENDING, XCLAIM, XAUTOCLAIM).
fn no_key_or_group(key: &[u8], group: &[u8]) -> Error {
    Error::Owned(format!(
        "NOGROUP No such key '{}' or consumer group '{}'",
        c_str(key),
        c_str(group)
    ))
}

/// `NOGROUP No such consumer group 'g' for key name 'k'` (XGROUP, XINFO CONSUMERS).
fn no_group(key: &[u8], group: &[u8]) -> Error {
    Error::Owned(format!(
        "NOGROUP No such consumer group '{}' for key name '{}'",
        c_str(group),
        c_str(key)
    ))
}

/// A name as Redis's `%s` prints it: up to its first NUL byte.
fn c_str(b: &[u8]) -> String {
    let b = b.split(|&c| c == 0).next().unwrap_or_default();
    String::from_utf8_lossy(b).into_owned()
}

const XGROUP_HELP: &[&str] = &[
    "XGROUP <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "CREATE <key> <groupname> <id|$> [option]",
    "    Create a new consumer group. Options are:",
    "    * MKSTREAM",
    "      Create the empty stream if it does not exist.",
    "    * ENTRIESREAD entries_read",
    "      Set the group's entries_read counter (internal use).",
    "CREATECONSUMER <key> <groupname> <consumer>",
    "    Create a new consumer in the specified group.",
    "DELCONSUMER <key> <groupname> <consumer>",
    "    Remove the specified consumer.",
    "DESTROY <key> <groupname>",
    "    Remove the specified group.",
    "SETID <key> <groupname> <id|$> [ENTRIESREAD entries_read]",
    "    Set the current group ID and entries_read counter.",
    "HELP",
    "    Print this help.",
];

/// XGROUP's subcommands: the key is the argument after the subcommand.
const SUB_KEY: KeySpec = KeySpec {
    first: 2,
    last: 2,
    step: 1,
    scope: Scope::Keys,
};

const fn sub(
    name: &'static str,
    arity: i32,
    flags: u32,
    keys: KeySpec,
    summary: &'static str,
    handler: crate::table::Handler,
) -> CommandSpec {
    CommandSpec::new(
        name,
        arity,
        flags,
        keys,
        CmdGroup::Stream,
        summary,
        "5.0.0",
        handler,
    )
}

#[rustfmt::skip]
static XGROUP_SUBCOMMANDS: &[CommandSpec] = &[
    sub("create", -5, WRITE | DENYOOM, SUB_KEY, "Create a consumer group.", xgroup_create),
    sub("setid", -5, WRITE, SUB_KEY, "Set a consumer group to an arbitrary last delivered ID value.", xgroup_setid),
    sub("destroy", 4, WRITE, SUB_KEY, "Destroy a consumer group.", xgroup_destroy),
    CommandSpec::new("createconsumer", 5, WRITE | DENYOOM, SUB_KEY, CmdGroup::Stream, "Create a consumer in a consumer group.", "6.2.0", xgroup_createconsumer),
    sub("delconsumer", 5, WRITE, SUB_KEY, "Delete a consumer from a consumer group.", xgroup_delconsumer),
    sub("help", 2, LOADING | STALE, KeySpec::NONE, "Show helpful text about the different subcommands", xgroup_help),
];

/// The keys of XREADGROUP: after its STREAMS word.
const STREAMS_KEYS: KeySpec = KeySpec::NONE.with_scope(Scope::Streams);

/// The family's table. Arity, flags and key positions are Redis 7.0's.
#[rustfmt::skip]
pub static COMMANDS: &[CommandSpec] = &[
    CommandSpec {
        name: "xgroup",
        arity: -2,
        flags: 0,
        keys: KeySpec::NONE,
        group: CmdGroup::Stream,
        summary: "A container for consumer groups commands",
        since: "5.0.0",
        handler: xgroup_help,
        subcommands: XGROUP_SUBCOMMANDS,
    },
    CommandSpec::new("xreadgroup", -7, WRITE | BLOCKING | MOVABLE_KEYS, STREAMS_KEYS, CmdGroup::Stream,
        "Return new entries from a stream using a consumer group, or access the history of the pending entries for a given consumer. Can block.", "5.0.0", read::xreadgroup),
    CommandSpec::new("xack", -4, WRITE | FAST, KeySpec::ONE, CmdGroup::Stream,
        "Marks a pending message as correctly processed, effectively removing it from the pending entries list of the consumer group. Return value of the command is the number of messages successfully acknowledged, that is, the IDs we were actually able to resolve in the PEL.", "5.0.0", xack),
    CommandSpec::new("xpending", -3, READONLY, KeySpec::ONE, CmdGroup::Stream,
        "Return information and entries from a stream consumer group pending entries list, that are messages fetched but never acknowledged.", "5.0.0", xpending),
    CommandSpec::new("xclaim", -6, WRITE | FAST, KeySpec::ONE, CmdGroup::Stream,
        "Changes (or acquires) ownership of a message in a consumer group, as if the message was delivered to the specified consumer.", "5.0.0", claim::xclaim),
    CommandSpec::new("xautoclaim", -6, WRITE | FAST, KeySpec::ONE, CmdGroup::Stream,
        "Changes (or acquires) ownership of messages in a consumer group, as if the messages were delivered to the specified consumer.", "6.2.0", claim::xautoclaim),
];

// ---------------------------------------------------------------------------------------------
// Shared helpers

/// The stream held in `slot`, or WRONGTYPE.
pub(crate) fn stream_at(shard: &Shard, slot: SlotId) -> Result<&Stream> {
    match shard.entry(slot).object() {
        Some(Object::Stream(s)) => Ok(s),
        _ => Err(Error::Static(error::WRONGTYPE)),
    }
}

/// Find `key` as a stream: `None` when absent, WRONGTYPE for another type.
fn find_stream(c: &Cmd<'_>, shard: &mut Shard, key: &[u8], hash: u64) -> Result<Option<SlotId>> {
    match shard.find_touch(key, hash, c.now_ms, c.access()) {
        Some(slot) => stream_at(shard, slot).map(|_| Some(slot)),
        None => Ok(None),
    }
}

/// Group `name` of the stream, if it has one.
fn group_of<'s>(s: &'s Stream, name: &[u8]) -> Option<&'s Group> {
    s.groups.as_ref().and_then(|g| g.get(name))
}

/// Change the stream in `slot` and its groups through `f` (a write: new version, memory
/// re-accounted). The groups are taken out of the stream while `f` runs, so that it can read
/// the entries while it changes a group.
fn update_groups<R>(
    shard: &mut Shard,
    slot: SlotId,
    f: impl FnOnce(&Stream, &mut Groups) -> R,
) -> Result<R> {
    shard.object_mut(slot, |o| match o {
        Object::Stream(s) => {
            let mut groups = s.groups.take().unwrap_or_default();
            let r = f(s, &mut groups);
            s.groups = Some(groups);
            Ok(r)
        }
        _ => Err(Error::Static(error::WRONGTYPE)),
    })
}

/// What the read counter of a group needs to know of stream `s`.
fn meta(s: &Stream) -> StreamMeta {
    StreamMeta {
        length: s.len(),
        entries_added: s.entries_added(),
        last_id: s.last_id(),
        first_id: s.first_id(),
        max_deleted_id: s.max_deleted_id(),
    }
}

/// An ID argument in Redis's strict form (no `-` or `+`).
fn strict_id(arg: &[u8]) -> Result<StreamId> {
    StreamId::parse_strict(arg, 0).map_err(|_| Error::Static(INVALID_ID))
}

/// An integer argument with Redis's `getLongLongFromObjectOrReply` error (or `msg`).
fn int_arg(arg: &[u8], msg: &'static str) -> Result<i64> {
    crate::args::parse_i64(arg).ok_or(Error::Static(msg))
}

/// A range bound of XPENDING / XAUTOCLAIM: `-`, `+`, an ID, or `(ID` for an exclusive one.
fn interval_id(arg: &[u8], missing_seq: u64) -> Result<(StreamId, bool)> {
    match arg.strip_prefix(b"(") {
        Some(rest) if arg.len() > 1 => StreamId::parse_strict(rest, missing_seq)
            .map(|id| (id, true))
            .map_err(|_| Error::Static(INVALID_ID)),
        _ => StreamId::parse(arg, missing_seq)
            .map(|id| (id, false))
            .map_err(|_| Error::Static(INVALID_ID)),
    }
}

/// A pending entry's state as replay sets it: ID, owner, delivery time, delivery count.
type PendingState<'a> = (StreamId, &'a [u8], u64, u64);

/// The command that replays one pending entry's state exactly (Redis's
/// `streamPropagateXCLAIM`); `last_id` is the group's last delivered ID.
fn propagate_claim(
    c: &mut Cmd<'_>,
    key: &[u8],
    group: &[u8],
    pending: PendingState<'_>,
    last_id: StreamId,
) {
    if !c.records_commands() {
        return;
    }
    let (id, consumer, time_ms, count) = pending;
    let (id, time, count, last) = (
        id.to_string(),
        time_ms.to_string(),
        count.to_string(),
        last_id.to_string(),
    );
    c.propagate(&[
        b"XCLAIM",
        key,
        group,
        consumer,
        b"0",
        id.as_bytes(),
        b"TIME",
        time.as_bytes(),
        b"RETRYCOUNT",
        count.as_bytes(),
        b"FORCE",
        b"JUSTID",
        b"LASTID",
        last.as_bytes(),
    ]);
}

/// The command that replays a group's position (Redis's `streamPropagateGroupID`).
fn propagate_group_id(
    c: &mut Cmd<'_>,
    key: &[u8],
    group: &[u8],
    last_id: StreamId,
    read: Option<u64>,
) {
    if !c.records_commands() {
        return;
    }
    let id = last_id.to_string();
    let read = read.map_or_else(|| "-1".to_string(), |n| n.to_string());
    c.propagate(&[
        b"XGROUP",
        b"SETID",
        key,
        group,
        id.as_bytes(),
        b"ENTRIESREAD",
        read.as_bytes(),
    ]);
}

/// The command that replays a consumer's creation (Redis's
/// `streamPropagateConsumerCreation`).
fn propagate_consumer(c: &mut Cmd<'_>, key: &[u8], group: &[u8], consumer: &[u8]) {
    c.propagate(&[b"XGROUP", b"CREATECONSUMER", key, group, consumer]);
}

// ---------------------------------------------------------------------------------------------
// XGROUP

/// XGROUP HELP (and the container itself, never called with a subcommand).
fn xgroup_help(c: &mut Cmd<'_>) -> Result<()> {
    crate::server::reply_help(c, XGROUP_HELP)
}

/// What XGROUP CREATE / SETID read after the ID.
struct GroupOptions {
    mkstream: bool,
    entries_read: Option<u64>,
}

/// XGROUP's options from argv[5] on, as Redis parses them before looking at the key.
fn group_options(c: &Cmd<'_>, create: bool) -> Result<GroupOptions> {
    let argv = c.args.argv();
    let mut o = GroupOptions {
        mkstream: false,
        entries_read: None,
    };
    let mut i = 5;
    while i < argv.len() {
        if create && argv[i].eq_ignore_ascii_case(b"MKSTREAM") {
            o.mkstream = true;
            i += 1;
        } else if argv[i].eq_ignore_ascii_case(b"ENTRIESREAD") && i + 1 < argv.len() {
            let n = int_arg(argv[i + 1], error::NOT_INTEGER)?;
            o.entries_read = match n {
                -1 => None,
                n if n < 0 => return Err(Error::Static(ENTRIESREAD_RANGE)),
                n => Some(n as u64),
            };
            i += 2;
        } else {
            return Err(crate::server::subcommand_syntax_error(c, "XGROUP"));
        }
    }
    Ok(o)
}

/// XGROUP CREATE key group id|$ [MKSTREAM] [ENTRIESREAD n]
fn xgroup_create(c: &mut Cmd<'_>) -> Result<()> {
    let opts = group_options(c, true)?;
    let key = c.args.key()?;
    let name = c.args.next_arg()?;
    let id_arg = c.args.next_arg()?;
    let (mut shard, hash) = c.shard_of(key);
    let found = find_stream(c, &mut shard, key, hash)?;
    if found.is_none() && !opts.mkstream {
        return Err(Error::Static(KEY_REQUIRED));
    }
    if c.args.argv().len() > 8 {
        return Err(crate::server::subcommand_syntax_error(c, "XGROUP"));
    }
    let id = if id_arg == b"$" {
        match found {
            Some(slot) => stream_at(&shard, slot)?.last_id(),
            None => StreamId::MIN,
        }
    } else {
        strict_id(id_arg)?
    };
    let slot = match found {
        Some(slot) => {
            if stream_at(&shard, slot)?
                .groups
                .as_ref()
                .is_some_and(|g| g.get(name).is_some())
            {
                return Err(Error::Static(BUSYGROUP));
            }
            slot
        }
        None => {
            let slot = shard.insert_object(key, hash, Object::Stream(Box::default()), 0, c.now_ms);
            c.notify(class::NEW, "new", key);
            slot
        }
    };
    update_groups(&mut shard, slot, |_, g| {
        g.create(name, id, opts.entries_read)
    })?;
    c.notify(class::STREAM, "xgroup-create", key);
    c.out.simple("OK");
    Ok(())
}

/// The stream at `key` and its group `name` for XGROUP SETID / CREATECONSUMER /
/// DELCONSUMER / DESTROY: the key must exist, and (`need_group`) the group too.
fn xgroup_target(
    c: &Cmd<'_>,
    shard: &mut Shard,
    key: &[u8],
    hash: u64,
    name: &[u8],
    need_group: bool,
) -> Result<(SlotId, bool)> {
    let Some(slot) = find_stream(c, shard, key, hash)? else {
        return Err(Error::Static(KEY_REQUIRED));
    };
    let exists = group_of(stream_at(shard, slot)?, name).is_some();
    if need_group && !exists {
        return Err(no_group(key, name));
    }
    Ok((slot, exists))
}

/// XGROUP SETID key group id|$ [ENTRIESREAD n]
fn xgroup_setid(c: &mut Cmd<'_>) -> Result<()> {
    let opts = group_options(c, false)?;
    let key = c.args.key()?;
    let name = c.args.next_arg()?;
    let id_arg = c.args.next_arg()?;
    let (mut shard, hash) = c.shard_of(key);
    let (slot, _) = xgroup_target(c, &mut shard, key, hash, name, true)?;
    let argc = c.args.argv().len();
    if argc != 5 && argc != 7 {
        return Err(crate::server::subcommand_syntax_error(c, "XGROUP"));
    }
    let id = if id_arg == b"$" {
        stream_at(&shard, slot)?.last_id()
    } else {
        StreamId::parse(id_arg, 0).map_err(|_| Error::Static(INVALID_ID))?
    };
    update_groups(&mut shard, slot, |_, g| {
        g.update(name, |g| g.set_id(id, opts.entries_read))
    })?;
    c.notify(class::STREAM, "xgroup-setid", key);
    c.out.simple("OK");
    Ok(())
}

/// XGROUP DESTROY key group
fn xgroup_destroy(c: &mut Cmd<'_>) -> Result<()> {
    let key = c.args.key()?;
    let name = c.args.next_arg()?;
    let (mut shard, hash) = c.shard_of(key);
    let (slot, exists) = xgroup_target(c, &mut shard, key, hash, name, false)?;
    if !exists {
        c.out.int(0);
        return Ok(());
    }
    // The write also wakes clients blocked on the key: a blocked XREADGROUP of this group
    // gets its NOGROUP error.
    update_groups(&mut shard, slot, |_, g| g.destroy(name))?;
    c.notify(class::STREAM, "xgroup-destroy", key);
    c.out.int(1);
    Ok(())
}

/// XGROUP CREATECONSUMER key group consumer
fn xgroup_createconsumer(c: &mut Cmd<'_>) -> Result<()> {
    let key = c.args.key()?;
    let name = c.args.next_arg()?;
    let consumer = c.args.next_arg()?;
    let (mut shard, hash) = c.shard_of(key);
    let (slot, _) = xgroup_target(c, &mut shard, key, hash, name, true)?;
    let exists =
        group_of(stream_at(&shard, slot)?, name).is_some_and(|g| g.consumer(consumer).is_some());
    if exists {
        c.out.int(0);
        return Ok(());
    }
    let now = c.now_ms;
    update_groups(&mut shard, slot, |_, g| {
        g.update(name, |g| g.create_consumer(consumer, now))
    })?;
    c.notify(class::STREAM, "xgroup-createconsumer", key);
    c.out.int(1);
    Ok(())
}

/// XGROUP DELCONSUMER key group consumer
fn xgroup_delconsumer(c: &mut Cmd<'_>) -> Result<()> {
    let key = c.args.key()?;
    let name = c.args.next_arg()?;
    let consumer = c.args.next_arg()?;
    let (mut shard, hash) = c.shard_of(key);
    let (slot, _) = xgroup_target(c, &mut shard, key, hash, name, true)?;
    let exists =
        group_of(stream_at(&shard, slot)?, name).is_some_and(|g| g.consumer(consumer).is_some());
    if !exists {
        c.out.int(0);
        return Ok(());
    }
    let pending = update_groups(&mut shard, slot, |_, g| {
        g.update(name, |g| g.delete_consumer(consumer))
    })?;
    c.notify(class::STREAM, "xgroup-delconsumer", key);
    c.out.int(pending.flatten().unwrap_or(0) as i64);
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// XACK, XPENDING

/// XACK key group id [id ...]
fn xack(c: &mut Cmd<'_>) -> Result<()> {
    let key = c.args.key()?;
    let name = c.args.next_arg()?;
    let (mut shard, hash) = c.shard_of(key);
    let Some(slot) = find_stream(c, &mut shard, key, hash)? else {
        c.out.int(0);
        return Ok(());
    };
    let Some(group) = group_of(stream_at(&shard, slot)?, name) else {
        c.out.int(0);
        return Ok(());
    };
    // Every ID is parsed before any is acknowledged: all or nothing.
    let ids = c
        .args
        .rest()
        .iter()
        .map(|a| strict_id(a))
        .collect::<Result<Vec<_>>>()?;
    if !ids.iter().any(|&id| group.nack(id).is_some()) {
        c.out.int(0);
        return Ok(());
    }
    let acked = update_groups(&mut shard, slot, |_, g| {
        g.update(name, |g| {
            ids.iter().filter(|&&id| g.ack(id).is_some()).count()
        })
    })?;
    c.out.int(acked.unwrap_or(0) as i64);
    Ok(())
}

/// XPENDING key group [[IDLE min-idle-time] start end count [consumer]]
fn xpending(c: &mut Cmd<'_>) -> Result<()> {
    let argv = c.args.argv();
    let key = argv[1];
    let name = argv[2];
    let argc = argv.len();
    if argc != 3 && !(6..=9).contains(&argc) {
        return Err(Error::Static(error::SYNTAX));
    }
    let mut range = None;
    if argc >= 6 {
        let mut at = 3;
        let mut min_idle = 0;
        if argv[3].eq_ignore_ascii_case(b"IDLE") {
            min_idle = int_arg(argv[4], error::NOT_INTEGER)?;
            if argc < 8 {
                return Err(Error::Static(error::SYNTAX));
            }
            at += 2;
        }
        let count = int_arg(argv[at + 2], error::NOT_INTEGER)?.max(0) as u64;
        let (mut start, start_ex) = interval_id(argv[at], 0)?;
        if start_ex {
            start = start.next().ok_or(Error::Static(START_ID))?;
        }
        let (mut end, end_ex) = interval_id(argv[at + 1], u64::MAX)?;
        if end_ex {
            end = end.prev().ok_or(Error::Static(END_ID))?;
        }
        range = Some((start, end, count, min_idle, argv.get(at + 3).copied()));
    }
    let (mut shard, hash) = c.shard_of(key);
    let found = shard.find_touch(key, hash, c.now_ms, c.access());
    c.hit(found.is_some());
    let group = match found {
        Some(slot) => group_of(stream_at(&shard, slot)?, name),
        None => None,
    };
    let Some(group) = group else {
        return Err(no_key_or_group(key, name));
    };
    let out = &mut *c.out;
    match range {
        None => {
            let s = group.pending_summary();
            out.array(4);
            out.int(s.count as i64);
            match s.bounds {
                None => {
                    out.null();
                    out.null();
                    out.null_array();
                }
                Some((lo, hi)) => {
                    reply_id(out, lo);
                    reply_id(out, hi);
                    out.array(s.consumers.len());
                    for (n, pending) in s.consumers {
                        out.array(2);
                        out.bulk(n);
                        out.bulk(pending.to_string().as_bytes());
                    }
                }
            }
        }
        Some((start, end, count, min_idle, consumer)) => {
            let now = c.now_ms as i128;
            let rows: Vec<_> = match consumer {
                Some(name) => match group.consumer(name) {
                    Some(cons) => cons
                        .pending_from(start)
                        .take_while(|&id| id <= end)
                        .filter_map(|id| group.nack(id).map(|n| (id, n)))
                        .filter(|(_, n)| {
                            min_idle == 0
                                || now - i128::from(n.delivery_time_ms) >= i128::from(min_idle)
                        })
                        .take(count as usize)
                        .collect(),
                    None => Vec::new(),
                },
                None => group
                    .pending_range(start, end)
                    .filter(|(_, n)| {
                        min_idle == 0
                            || now - i128::from(n.delivery_time_ms) >= i128::from(min_idle)
                    })
                    .take(count as usize)
                    .collect(),
            };
            out.array(rows.len());
            for (id, n) in rows {
                out.array(4);
                reply_id(out, id);
                out.bulk(n.consumer());
                out.int((now - i128::from(n.delivery_time_ms)).max(0) as i64);
                out.int(n.delivery_count as i64);
            }
        }
    }
    Ok(())
}
