//! String commands: GET, SET and friends, with Redis 7.0 semantics.
//!
//! This file holds the table, the single-key get/set commands and what they share (SET's
//! option parser, `store`, the keyspace-hit counter). MGET/MSET/MSETNX are in `batch`,
//! counters (INCR, INCRBYFLOAT, ...) in `counter`, commands on parts of a string (APPEND,
//! GETRANGE, SETRANGE, LCS, ...) in `range`, and INCRBYFLOAT's software `long double` in
//! `long_double`.

mod batch;
mod counter;
pub(crate) mod long_double;
mod range;

use std::sync::Arc;

use larder_engine::feed::class;
use larder_engine::{Entry, Object, Shard, SlotId};
use larder_resp::ReplyBuf;

use crate::args::Args;
use crate::error::{self, Error, Result};
use crate::exec::Cmd;
use crate::state::bump;
use crate::table::{flags::*, CommandSpec, Group, KeySpec};

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
        Group::String,
        summary,
        since,
        handler,
    )
}

/// The string family's table. Arity, flags, key positions, summaries and versions are those
/// of Redis 7.0's COMMAND INFO / COMMAND DOCS.
#[rustfmt::skip]
pub static COMMANDS: &[CommandSpec] = &[
    cmd("get", 2, READONLY | FAST, KeySpec::ONE, "Get the value of a key", "1.0.0", get),
    cmd("set", -3, WRITE | DENYOOM, KeySpec::ONE, "Set the string value of a key", "1.0.0", set),
    cmd("setnx", 3, WRITE | DENYOOM | FAST, KeySpec::ONE, "Set the value of a key, only if the key does not exist", "1.0.0", setnx),
    cmd("setex", 4, WRITE | DENYOOM, KeySpec::ONE, "Set the value and expiration of a key", "2.0.0", setex),
    cmd("psetex", 4, WRITE | DENYOOM, KeySpec::ONE, "Set the value and expiration in milliseconds of a key", "2.6.0", psetex),
    cmd("getset", 3, WRITE | DENYOOM | FAST, KeySpec::ONE, "Set the string value of a key and return its old value", "1.0.0", getset),
    cmd("getdel", 2, WRITE | FAST, KeySpec::ONE, "Get the value of a key and delete the key", "6.2.0", getdel),
    cmd("getex", -2, WRITE | FAST, KeySpec::ONE, "Get the value of a key and optionally set its expiration", "6.2.0", getex),
    cmd("mget", -2, READONLY | FAST, KeySpec::ALL, "Get the values of all the given keys", "1.0.0", batch::mget),
    cmd("mset", -3, WRITE | DENYOOM, KeySpec::PAIRS, "Set multiple keys to multiple values", "1.0.1", batch::mset),
    cmd("msetnx", -3, WRITE | DENYOOM, KeySpec::PAIRS, "Set multiple keys to multiple values, only if none of the keys exist", "1.0.1", batch::msetnx),
    cmd("append", 3, WRITE | DENYOOM | FAST, KeySpec::ONE, "Append a value to a key", "2.0.0", range::append),
    cmd("strlen", 2, READONLY | FAST, KeySpec::ONE, "Get the length of the value stored in a key", "2.2.0", range::strlen),
    cmd("incr", 2, WRITE | DENYOOM | FAST, KeySpec::ONE, "Increment the integer value of a key by one", "1.0.0", counter::incr),
    cmd("decr", 2, WRITE | DENYOOM | FAST, KeySpec::ONE, "Decrement the integer value of a key by one", "1.0.0", counter::decr),
    cmd("incrby", 3, WRITE | DENYOOM | FAST, KeySpec::ONE, "Increment the integer value of a key by the given amount", "1.0.0", counter::incrby),
    cmd("decrby", 3, WRITE | DENYOOM | FAST, KeySpec::ONE, "Decrement the integer value of a key by the given number", "1.0.0", counter::decrby),
    cmd("incrbyfloat", 3, WRITE | DENYOOM | FAST, KeySpec::ONE, "Increment the float value of a key by the given amount", "2.6.0", counter::incrbyfloat),
    cmd("getrange", 4, READONLY, KeySpec::ONE, "Get a substring of the string stored at a key", "2.4.0", range::getrange),
    cmd("substr", 4, READONLY, KeySpec::ONE, "Get a substring of the string stored at a key", "1.0.0", range::getrange),
    cmd("setrange", 4, WRITE | DENYOOM, KeySpec::ONE, "Overwrite part of a string at key starting at the specified offset", "2.2.0", range::setrange),
    cmd("lcs", -3, READONLY, KeySpec::TWO, "Find longest common substring", "7.0.0", range::lcs),
];

/// Count keyspace hits and misses (INFO stats) in one step, for multi-key reads.
fn count_hits(c: &Cmd<'_>, hits: u64, misses: u64) {
    let t = &c.server.stats.threads[c.conn.worker];
    if hits > 0 {
        bump(&t.keyspace_hits, hits);
    }
    if misses > 0 {
        bump(&t.keyspace_misses, misses);
    }
}

/// The string held in `slot`, or WRONGTYPE.
#[inline]
pub(crate) fn string_at(shard: &Shard, slot: SlotId) -> Result<&[u8]> {
    shard
        .entry(slot)
        .string()
        .ok_or(Error::Static(error::WRONGTYPE))
}

/// Replies with `entry`'s string value: a large value kept in its arrival buffer
/// (`Object::Shared`) by reference, so it is not copied into the output, others as a copy.
/// Fails with WRONGTYPE for another type.
pub(crate) fn reply_string(out: &mut ReplyBuf, entry: &Entry) -> Result<()> {
    match entry.object() {
        Some(Object::Shared(v)) => out.bulk_shared(v),
        _ => out.bulk(entry.string().ok_or(Error::Static(error::WRONGTYPE))?),
    }
    Ok(())
}

/// GET key
fn get(c: &mut Cmd<'_>) -> Result<()> {
    let key = c.args.key()?;
    let (mut shard, hash) = c.shard_of(key);
    let found = shard.find_touch(key, hash, c.now_ms, c.access());
    c.hit(found.is_some());
    match found {
        Some(slot) => reply_string(c.out, shard.entry(slot))?,
        None => c.out.null(),
    }
    Ok(())
}

/// When a write's deadline comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Expiry {
    /// Remove any deadline.
    Clear,
    /// Keep the existing deadline (KEEPTTL).
    Keep,
    /// Absolute Unix ms.
    At(u64),
}

/// NX / XX.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Condition {
    Always,
    IfAbsent,
    IfPresent,
}

/// Parse one of EX/PX/EXAT/PXAT's argument into an absolute deadline, with Redis's checks.
/// `unit_ms` is 1000 for seconds; `absolute` for EXAT/PXAT.
pub fn parse_deadline(
    raw: &[u8],
    unit_ms: i64,
    absolute: bool,
    now_ms: u64,
    cmd_name: &str,
) -> Result<u64> {
    let v = crate::args::parse_i64(raw).ok_or(Error::Static(error::NOT_INTEGER))?;
    if v <= 0 {
        return Err(error::invalid_expire(cmd_name));
    }
    let ms = v
        .checked_mul(unit_ms)
        .ok_or_else(|| error::invalid_expire(cmd_name))?;
    let at = if absolute {
        ms
    } else {
        ms.checked_add(now_ms as i64)
            .ok_or_else(|| error::invalid_expire(cmd_name))?
    };
    Ok(at as u64)
}

/// The TTL option of SET or GETEX. Redis lets an option repeat (the last value wins) but
/// not combine with a different one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum TtlOption<'a> {
    None,
    KeepTtl,
    Persist,
    Ex(&'a [u8]),
    Px(&'a [u8]),
    ExAt(&'a [u8]),
    PxAt(&'a [u8]),
}

impl TtlOption<'_> {
    /// Whether `next` may follow the options seen so far.
    fn accepts(&self, next: &TtlOption<'_>) -> bool {
        *self == TtlOption::None || std::mem::discriminant(self) == std::mem::discriminant(next)
    }

    /// The absolute deadline an EX/PX/EXAT/PXAT value gives, validated as Redis does.
    fn deadline(&self, now_ms: u64, cmd_name: &str) -> Result<Option<u64>> {
        let (raw, unit_ms, absolute) = match *self {
            TtlOption::Ex(raw) => (raw, 1000, false),
            TtlOption::Px(raw) => (raw, 1, false),
            TtlOption::ExAt(raw) => (raw, 1000, true),
            TtlOption::PxAt(raw) => (raw, 1, true),
            TtlOption::None | TtlOption::KeepTtl | TtlOption::Persist => return Ok(None),
        };
        parse_deadline(raw, unit_ms, absolute, now_ms, cmd_name).map(Some)
    }
}

/// Which command's options `parse_extended` reads (Redis's COMMAND_SET / COMMAND_GET).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Extended {
    Set,
    GetEx,
}

/// The options of SET (`NX | XX`, `GET`, a TTL option) or GETEX (a TTL option).
struct ExtendedOptions<'a> {
    cond: Condition,
    get: bool,
    ttl: TtlOption<'a>,
}

/// Parse the options after SET's value or GETEX's key, with Redis's
/// `parseExtendedStringArgumentsOrReply` rules: syntax only; the TTL's number is checked
/// later, so a syntax error anywhere wins over a bad number.
fn parse_extended<'a>(args: &mut Args<'a>, which: Extended) -> Result<ExtendedOptions<'a>> {
    let set = which == Extended::Set;
    let mut o = ExtendedOptions {
        cond: Condition::Always,
        get: false,
        ttl: TtlOption::None,
    };
    while let Some(opt) = args.opt() {
        let is = |word: &str| opt.eq_ignore_ascii_case(word.as_bytes());
        if set && is("NX") && o.cond != Condition::IfPresent {
            o.cond = Condition::IfAbsent;
        } else if set && is("XX") && o.cond != Condition::IfAbsent {
            o.cond = Condition::IfPresent;
        } else if set && is("GET") {
            o.get = true;
        } else if set && is("KEEPTTL") && o.ttl.accepts(&TtlOption::KeepTtl) {
            o.ttl = TtlOption::KeepTtl;
        } else if !set && is("PERSIST") && o.ttl.accepts(&TtlOption::Persist) {
            o.ttl = TtlOption::Persist;
        } else {
            let with_value: fn(&'a [u8]) -> TtlOption<'a> = if is("EX") {
                TtlOption::Ex
            } else if is("PX") {
                TtlOption::Px
            } else if is("EXAT") {
                TtlOption::ExAt
            } else if is("PXAT") {
                TtlOption::PxAt
            } else {
                return Err(Error::Static(error::SYNTAX));
            };
            let next = with_value(b"");
            let value = match args.peek() {
                Some(v) if o.ttl.accepts(&next) => v,
                _ => return Err(Error::Static(error::SYNTAX)),
            };
            args.skip(1);
            o.ttl = with_value(value);
        }
    }
    Ok(o)
}

/// A string value to store: the request's bytes, copied into the key's block, or the buffer
/// the connection read a large argument into ([`Cmd::adopt`]), stored as it is.
pub(crate) enum Value<'a> {
    Bytes(&'a [u8]),
    Adopted(Arc<Vec<u8>>),
}

impl<'a> Value<'a> {
    /// The argument `arg` of the running command, adopted when the connection can give it up.
    pub(crate) fn of(c: &mut Cmd<'_>, arg: &'a [u8]) -> Value<'a> {
        match c.adopt(arg) {
            Some(owned) => Value::Adopted(owned),
            None => Value::Bytes(arg),
        }
    }
}

/// Write a string value under `key` (found at `found`, or absent) as Redis's `setKey` does:
/// any type is replaced, the access time is now (a new value is a new object in Redis), and
/// the deadline follows `expiry`. A new key raises `new` (Redis's `dbAdd`); the caller raises
/// the command's own events after it.
fn store(
    c: &Cmd<'_>,
    shard: &mut Shard,
    key: &[u8],
    hash: u64,
    found: Option<SlotId>,
    value: Value<'_>,
    expiry: Expiry,
) {
    let now_ms = c.now_ms;
    match found {
        Some(slot) => {
            match value {
                Value::Bytes(v) => shard.set_string(slot, v),
                Value::Adopted(owned) => shard.set_object(slot, Object::Shared(owned)),
            }
            // A RESP write replaces the value and its memcached flags with it (a new object).
            shard.set_flags(slot, 0);
            shard.touch(slot, now_ms);
            match expiry {
                Expiry::Keep => {}
                Expiry::Clear => {
                    if shard.entry(slot).expire_at_ms().is_some() {
                        shard.set_expire(slot, None);
                    }
                }
                Expiry::At(at) => shard.set_expire(slot, Some(at)),
            }
        }
        None => {
            let at = match expiry {
                Expiry::At(at) => at,
                Expiry::Keep | Expiry::Clear => 0,
            };
            match value {
                Value::Bytes(v) => shard.insert_string(key, hash, v, at, now_ms),
                Value::Adopted(owned) => {
                    shard.insert_object(key, hash, Object::Shared(owned), at, now_ms)
                }
            };
            c.notify(class::NEW, "new", key);
        }
    }
}

/// The events of a string write through [`store`]: `set`, then `expire` when it gave the key
/// a deadline (Redis's `setGenericCommand`).
fn notify_set(c: &Cmd<'_>, key: &[u8], expiry: Expiry) {
    c.notify(class::STRING, "set", key);
    if let Expiry::At(_) = expiry {
        c.notify(class::GENERIC, "expire", key);
    }
}

/// What to replay for a string write with a deadline: SET with the absolute deadline (as
/// Redis 7.0 rewrites SET EX/PX/EXAT, SETEX and PSETEX), so replay later sets the same one.
/// A write without a deadline replays as sent.
fn propagate_set(c: &mut Cmd<'_>, key: &[u8], value: &[u8], expiry: Expiry) {
    if let (Expiry::At(at), true) = (expiry, c.records_commands()) {
        let at = at.to_string();
        c.propagate(&[b"SET", key, value, b"PXAT", at.as_bytes()]);
    }
}

/// SET key value [NX | XX] [GET] [EX s | PX ms | EXAT ts | PXAT ts-ms | KEEPTTL]
fn set(c: &mut Cmd<'_>) -> Result<()> {
    let key = c.args.key()?;
    let raw = c.args.next_arg()?;
    let o = parse_extended(&mut c.args, Extended::Set)?;
    let value = Value::of(c, raw);
    let expiry = match o.ttl {
        TtlOption::KeepTtl => Expiry::Keep,
        ttl => match ttl.deadline(c.now_ms, c.resolved.full_name)? {
            Some(at) => Expiry::At(at),
            None => Expiry::Clear,
        },
    };
    let (mut shard, hash) = c.shard_of(key);
    let found = if o.get {
        let found = shard.find_touch(key, hash, c.now_ms, c.access());
        c.hit(found.is_some());
        match found {
            Some(slot) => reply_string(c.out, shard.entry(slot))?,
            None => c.out.null(),
        }
        found
    } else {
        shard.find(key, hash, c.now_ms)
    };
    let proceed = match o.cond {
        Condition::Always => true,
        Condition::IfAbsent => found.is_none(),
        Condition::IfPresent => found.is_some(),
    };
    if proceed {
        store(c, &mut shard, key, hash, found, value, expiry);
        notify_set(c, key, expiry);
        propagate_set(c, key, raw, expiry);
    }
    drop(shard);
    match (o.get, proceed) {
        (true, _) => {}
        (false, true) => c.out.simple("OK"),
        (false, false) => c.out.null(),
    }
    Ok(())
}

/// SETNX key value
fn setnx(c: &mut Cmd<'_>) -> Result<()> {
    let key = c.args.key()?;
    let value = c.args.next_arg()?;
    let (mut shard, hash) = c.shard_of(key);
    let created = match shard.find_touch(key, hash, c.now_ms, c.access()) {
        Some(_) => false,
        None => {
            shard.insert_string(key, hash, value, 0, c.now_ms);
            c.notify(class::NEW, "new", key);
            c.notify(class::STRING, "set", key);
            true
        }
    };
    drop(shard);
    c.out.int(i64::from(created));
    Ok(())
}

/// SETEX key seconds value
fn setex(c: &mut Cmd<'_>) -> Result<()> {
    set_with_ttl(c, 1000)
}

/// PSETEX key milliseconds value
fn psetex(c: &mut Cmd<'_>) -> Result<()> {
    set_with_ttl(c, 1)
}

fn set_with_ttl(c: &mut Cmd<'_>, unit_ms: i64) -> Result<()> {
    let key = c.args.key()?;
    let ttl = c.args.next_arg()?;
    let raw = c.args.next_arg()?;
    let at = parse_deadline(ttl, unit_ms, false, c.now_ms, c.resolved.full_name)?;
    let value = Value::of(c, raw);
    let (mut shard, hash) = c.shard_of(key);
    let found = shard.find(key, hash, c.now_ms);
    store(c, &mut shard, key, hash, found, value, Expiry::At(at));
    notify_set(c, key, Expiry::At(at));
    propagate_set(c, key, raw, Expiry::At(at));
    drop(shard);
    c.out.simple("OK");
    Ok(())
}

/// GETSET key value
fn getset(c: &mut Cmd<'_>) -> Result<()> {
    let key = c.args.key()?;
    let value = c.args.next_arg()?;
    let value = Value::of(c, value);
    let (mut shard, hash) = c.shard_of(key);
    let found = shard.find_touch(key, hash, c.now_ms, c.access());
    c.hit(found.is_some());
    match found {
        Some(slot) => reply_string(c.out, shard.entry(slot))?,
        None => c.out.null(),
    }
    store(c, &mut shard, key, hash, found, value, Expiry::Clear);
    notify_set(c, key, Expiry::Clear);
    Ok(())
}

/// GETDEL key
fn getdel(c: &mut Cmd<'_>) -> Result<()> {
    let key = c.args.key()?;
    let (mut shard, hash) = c.shard_of(key);
    let found = shard.find(key, hash, c.now_ms);
    c.hit(found.is_some());
    match found {
        Some(slot) => {
            reply_string(c.out, shard.entry(slot))?;
            shard.remove(slot);
            c.notify(class::GENERIC, "del", key);
            c.propagate(&[b"DEL", key]);
        }
        None => c.out.null(),
    }
    Ok(())
}

/// GETEX key [EX s | PX ms | EXAT ts | PXAT ts-ms | PERSIST]
fn getex(c: &mut Cmd<'_>) -> Result<()> {
    let key = c.args.key()?;
    let o = parse_extended(&mut c.args, Extended::GetEx)?;
    let (mut shard, hash) = c.shard_of(key);
    let found = shard.find_touch(key, hash, c.now_ms, c.access());
    c.hit(found.is_some());
    let Some(slot) = found else {
        // Redis looks the key up before it checks the TTL's number.
        c.out.null();
        return Ok(());
    };
    // WRONGTYPE comes before a bad TTL's error, as in Redis.
    string_at(&shard, slot)?;
    let deadline = o.ttl.deadline(c.now_ms, c.resolved.full_name)?;
    reply_string(c.out, shard.entry(slot))?;
    match (deadline, o.ttl) {
        // An absolute deadline already past deletes the key.
        (Some(at), _) if at <= c.now_ms => {
            shard.remove(slot);
            c.notify(class::GENERIC, "del", key);
            c.propagate(&[b"DEL", key]);
        }
        (Some(at), _) => {
            shard.set_expire(slot, Some(at));
            c.notify(class::GENERIC, "expire", key);
            if c.records_commands() {
                c.propagate(&[b"PEXPIREAT", key, at.to_string().as_bytes()]);
            }
        }
        (None, TtlOption::Persist) => {
            if shard.entry(slot).expire_at_ms().is_some() {
                shard.set_expire(slot, None);
                c.notify(class::GENERIC, "persist", key);
                c.propagate(&[b"PERSIST", key]);
            }
        }
        (None, _) => {}
    }
    Ok(())
}

#[cfg(test)]
mod tests;
