//! Hash commands: HSET HSETNX HGET HMGET HMSET HDEL HLEN HSTRLEN HEXISTS HKEYS HVALS HGETALL
//! HINCRBY HINCRBYFLOAT HRANDFIELD HSCAN, with Redis 7.0 semantics.
//!
//! A hash is an `Object::Hash` holding a [`larder_engine::Hash`], which implements the
//! structure and its encodings; this file parses arguments and shapes replies. Redis never
//! stores an empty hash: HDEL deletes the key in the same critical section when it empties.

use larder_engine::feed::class;
use larder_engine::{Hash, Object, Shard, SlotId};
use larder_resp::Protocol;

use crate::args::parse_i64;
use crate::collection;
use crate::error::{self, Error, Result};
use crate::exec::Cmd;
use crate::string::long_double::LongDouble;
use crate::table::{flags::*, CommandSpec, Group, KeySpec};

/// HINCRBY on a value that is not an integer.
const NOT_INTEGER_VALUE: &str = "ERR hash value is not an integer";
/// HINCRBYFLOAT on a value that is not a float.
const NOT_FLOAT_VALUE: &str = "ERR hash value is not a float";
/// HINCRBYFLOAT by an infinite increment.
const NAN_OR_INFINITY_INCREMENT: &str = "ERR value is NaN or Infinity";
/// HRANDFIELD's count of `i64::MIN` (Redis accepts `-LONG_MAX..=LONG_MAX`).
const COUNT_RANGE: &str =
    "ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807";
/// HRANDFIELD ... WITHVALUES with a count whose reply length would overflow.
const OUT_OF_RANGE: &str = "ERR value is out of range";
const INVALID_CURSOR: &str = "ERR invalid cursor";

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
        Group::Hash,
        summary,
        since,
        handler,
    )
}

/// The hash family's table. Arity, flags, key positions, summaries and versions are those of
/// Redis 7.0's COMMAND INFO / COMMAND DOCS.
#[rustfmt::skip]
pub static COMMANDS: &[CommandSpec] = &[
    cmd("hset", -4, WRITE | DENYOOM | FAST, "Set the string value of a hash field", "2.0.0", hset),
    cmd("hsetnx", 4, WRITE | DENYOOM | FAST, "Set the value of a hash field, only if the field does not exist", "2.0.0", hsetnx),
    cmd("hget", 3, READONLY | FAST, "Get the value of a hash field", "2.0.0", hget),
    cmd("hmget", -3, READONLY | FAST, "Get the values of all the given hash fields", "2.0.0", hmget),
    cmd("hmset", -4, WRITE | DENYOOM | FAST, "Set multiple hash fields to multiple values", "2.0.0", hmset),
    cmd("hdel", -3, WRITE | FAST, "Delete one or more hash fields", "2.0.0", hdel),
    cmd("hlen", 2, READONLY | FAST, "Get the number of fields in a hash", "2.0.0", hlen),
    cmd("hstrlen", 3, READONLY | FAST, "Get the length of the value of a hash field", "3.2.0", hstrlen),
    cmd("hexists", 3, READONLY | FAST, "Determine if a hash field exists", "2.0.0", hexists),
    cmd("hkeys", 2, READONLY, "Get all the fields in a hash", "2.0.0", hkeys),
    cmd("hvals", 2, READONLY, "Get all the values in a hash", "2.0.0", hvals),
    cmd("hgetall", 2, READONLY, "Get all the fields and values in a hash", "2.0.0", hgetall),
    cmd("hincrby", 4, WRITE | DENYOOM | FAST, "Increment the integer value of a hash field by the given number", "2.0.0", hincrby),
    cmd("hincrbyfloat", 4, WRITE | DENYOOM | FAST, "Increment the float value of a hash field by the given amount", "2.6.0", hincrbyfloat),
    cmd("hrandfield", -2, READONLY, "Get one or multiple random fields from a hash", "6.2.0", hrandfield),
    cmd("hscan", -3, READONLY, "Incrementally iterate hash fields and associated values", "2.8.0", hscan),
];

/// The Hash held in `slot`, or WRONGTYPE.
fn hash_at(shard: &Shard, slot: SlotId) -> Result<&Hash> {
    collection::at(shard, slot)
}

/// Find `key` as a Hash for a write: `None` when absent, WRONGTYPE for another type.
fn find_hash(c: &Cmd<'_>, shard: &mut Shard, key: &[u8], hash: u64) -> Result<Option<SlotId>> {
    collection::find::<Hash>(c, shard, key, hash)
}

/// [`find_hash`] for a read: counts the keyspace hit or miss.
fn read_hash(c: &Cmd<'_>, shard: &mut Shard, key: &[u8], hash: u64) -> Result<Option<SlotId>> {
    collection::read::<Hash>(c, shard, key, hash)
}

/// Modify the Hash in `slot` through `f`; the caller then [`settle`]s the key.
fn update<R>(shard: &mut Shard, slot: SlotId, f: impl FnOnce(&mut Hash) -> R) -> Result<R> {
    collection::update(shard, slot, f)
}

/// Write to the hash at `key` through `f`, creating it (and raising `new`) when absent, as
/// Redis's `hashTypeLookupWriteOrCreate` does. The caller raises the command's event.
fn write_or_create<R>(
    c: &Cmd<'_>,
    shard: &mut Shard,
    key: &[u8],
    hash: u64,
    f: impl FnOnce(&mut Hash) -> R,
) -> Result<R> {
    match find_hash(c, shard, key, hash)? {
        Some(slot) => update(shard, slot, f),
        None => {
            let mut h = Hash::new();
            let r = f(&mut h);
            shard.insert_object(key, hash, Object::Hash(h), 0, c.now_ms);
            c.notify(class::NEW, "new", key);
            Ok(r)
        }
    }
}

/// HSET key field value [field value ...]
fn hset(c: &mut Cmd<'_>) -> Result<()> {
    let added = set_pairs(c)?;
    c.out.int(added as i64);
    Ok(())
}

/// HMSET key field value [field value ...]
fn hmset(c: &mut Cmd<'_>) -> Result<()> {
    set_pairs(c)?;
    c.out.simple("OK");
    Ok(())
}

/// HSET and HMSET: returns how many fields are new.
fn set_pairs(c: &mut Cmd<'_>) -> Result<usize> {
    let key = c.args.key()?;
    let pairs = c.args.rest();
    if pairs.len() % 2 != 0 {
        return Err(error::wrong_arity(c.resolved.full_name));
    }
    let limits = c.limits();
    let (mut shard, hash) = c.shard_of(key);
    let added = write_or_create(c, &mut shard, key, hash, |h| {
        pairs
            .chunks_exact(2)
            .filter(|p| h.insert(p[0], p[1], &limits))
            .count()
    })?;
    c.notify(class::HASH, "hset", key);
    Ok(added)
}

/// HSETNX key field value
fn hsetnx(c: &mut Cmd<'_>) -> Result<()> {
    let key = c.args.key()?;
    let field = c.args.next_arg()?;
    let value = c.args.next_arg()?;
    let limits = c.limits();
    let (mut shard, hash) = c.shard_of(key);
    let set = match find_hash(c, &mut shard, key, hash)? {
        Some(slot) if hash_at(&shard, slot)?.contains(field) => false,
        _ => {
            write_or_create(c, &mut shard, key, hash, |h| {
                h.insert(field, value, &limits)
            })?;
            c.notify(class::HASH, "hset", key);
            true
        }
    };
    drop(shard);
    c.out.int(i64::from(set));
    Ok(())
}

/// HGET key field
fn hget(c: &mut Cmd<'_>) -> Result<()> {
    let key = c.args.key()?;
    let field = c.args.next_arg()?;
    let (mut shard, hash) = c.shard_of(key);
    let value = match read_hash(c, &mut shard, key, hash)? {
        Some(slot) => hash_at(&shard, slot)?.get(field),
        None => None,
    };
    match value {
        Some(v) => c.out.bulk(v),
        None => c.out.null(),
    }
    Ok(())
}

/// HMGET key field [field ...]
fn hmget(c: &mut Cmd<'_>) -> Result<()> {
    let key = c.args.key()?;
    let fields = c.args.rest();
    let (mut shard, hash) = c.shard_of(key);
    let h = collection::read_value::<Hash>(c, &mut shard, key, hash)?;
    c.out.array(fields.len());
    for f in fields {
        match h.and_then(|h| h.get(f)) {
            Some(v) => c.out.bulk(v),
            None => c.out.null(),
        }
    }
    Ok(())
}

/// HDEL key field [field ...]
fn hdel(c: &mut Cmd<'_>) -> Result<()> {
    let key = c.args.key()?;
    let fields = c.args.rest();
    let (mut shard, hash) = c.shard_of(key);
    let mut deleted = 0;
    if let Some(slot) = find_hash(c, &mut shard, key, hash)? {
        deleted = update(&mut shard, slot, |h| {
            fields.iter().filter(|f| h.remove(f)).count()
        })?;
        if deleted > 0 {
            c.notify(class::HASH, "hdel", key);
            if hash_at(&shard, slot)?.is_empty() {
                shard.remove(slot);
                c.notify(class::GENERIC, "del", key);
            }
        }
    }
    drop(shard);
    c.out.int(deleted as i64);
    Ok(())
}

/// A read of one number from the hash at `key` (0 when absent): HLEN, HSTRLEN, HEXISTS.
fn read_number(c: &mut Cmd<'_>, f: impl FnOnce(&Hash) -> usize) -> Result<()> {
    let key = c.args.key()?;
    let n = collection::read_with(c, key, 0, f)?;
    c.out.int(n as i64);
    Ok(())
}

/// HLEN key
fn hlen(c: &mut Cmd<'_>) -> Result<()> {
    read_number(c, Hash::len)
}

/// HSTRLEN key field
fn hstrlen(c: &mut Cmd<'_>) -> Result<()> {
    let field = c.args.argv()[2];
    read_number(c, |h| h.get(field).map_or(0, <[u8]>::len))
}

/// HEXISTS key field
fn hexists(c: &mut Cmd<'_>) -> Result<()> {
    let field = c.args.argv()[2];
    read_number(c, |h| usize::from(h.contains(field)))
}

/// What HKEYS, HVALS and HGETALL reply with.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Parts {
    Fields,
    Values,
    Both,
}

/// HKEYS key
fn hkeys(c: &mut Cmd<'_>) -> Result<()> {
    get_all(c, Parts::Fields)
}

/// HVALS key
fn hvals(c: &mut Cmd<'_>) -> Result<()> {
    get_all(c, Parts::Values)
}

/// HGETALL key: a map in RESP3.
fn hgetall(c: &mut Cmd<'_>) -> Result<()> {
    get_all(c, Parts::Both)
}

fn get_all(c: &mut Cmd<'_>, parts: Parts) -> Result<()> {
    let key = c.args.key()?;
    let (mut shard, hash) = c.shard_of(key);
    let h = collection::read_value::<Hash>(c, &mut shard, key, hash)?;
    let len = h.map_or(0, Hash::len);
    match parts {
        Parts::Both => c.out.map(len),
        Parts::Fields | Parts::Values => c.out.array(len),
    }
    for (f, v) in h.into_iter().flat_map(Hash::pairs) {
        if parts != Parts::Values {
            c.out.bulk(f);
        }
        if parts != Parts::Fields {
            c.out.bulk(v);
        }
    }
    Ok(())
}

/// HINCRBY key field increment
fn hincrby(c: &mut Cmd<'_>) -> Result<()> {
    let key = c.args.key()?;
    let field = c.args.next_arg()?;
    // Redis parses the increment before it looks the key up.
    let by = c.args.i64()?;
    let limits = c.limits();
    let (mut shard, hash) = c.shard_of(key);
    let current = match find_hash(c, &mut shard, key, hash)? {
        Some(slot) => match hash_at(&shard, slot)?.get(field) {
            Some(v) => parse_i64(v).ok_or(Error::Static(NOT_INTEGER_VALUE))?,
            None => 0,
        },
        None => 0,
    };
    let value = current
        .checked_add(by)
        .ok_or(Error::Static(error::OVERFLOW))?;
    let text = value.to_string();
    write_or_create(c, &mut shard, key, hash, |h| {
        h.insert(field, text.as_bytes(), &limits)
    })?;
    c.notify(class::HASH, "hincrby", key);
    drop(shard);
    c.out.int(value);
    Ok(())
}

/// HINCRBYFLOAT key field increment: computed in x87 extended precision and formatted as
/// INCRBYFLOAT does; replayed as HSET of the result.
fn hincrbyfloat(c: &mut Cmd<'_>) -> Result<()> {
    let key = c.args.key()?;
    let field = c.args.next_arg()?;
    let by = LongDouble::parse(c.args.next_arg()?).ok_or(Error::Static(error::NOT_FLOAT))?;
    if !matches!(by, LongDouble::Finite { .. }) {
        return Err(Error::Static(NAN_OR_INFINITY_INCREMENT));
    }
    let limits = c.limits();
    let (mut shard, hash) = c.shard_of(key);
    let current = match find_hash(c, &mut shard, key, hash)? {
        Some(slot) => match hash_at(&shard, slot)?.get(field) {
            Some(v) => LongDouble::parse(v).ok_or(Error::Static(NOT_FLOAT_VALUE))?,
            None => LongDouble::ZERO,
        },
        None => LongDouble::ZERO,
    };
    let text = current
        .add(by)
        .to_human()
        .ok_or(Error::Static(error::NAN_OR_INFINITY))?;
    write_or_create(c, &mut shard, key, hash, |h| {
        h.insert(field, &text, &limits)
    })?;
    c.notify(class::HASH, "hincrbyfloat", key);
    c.propagate(&[b"HSET", key, field, &text]);
    drop(shard);
    c.out.bulk(&text);
    Ok(())
}

/// HRANDFIELD key [count [WITHVALUES]]
fn hrandfield(c: &mut Cmd<'_>) -> Result<()> {
    let key = c.args.key()?;
    let Some(raw) = c.args.opt() else {
        let (mut shard, hash) = c.shard_of(key);
        let field = match read_hash(c, &mut shard, key, hash)? {
            Some(slot) => hash_at(&shard, slot)?.random_pair().map(|(f, _)| f),
            None => None,
        };
        match field {
            Some(f) => c.out.bulk(f),
            None => c.out.null(),
        }
        return Ok(());
    };
    // The count and the option are checked before the key is looked up.
    let count = parse_i64(raw).ok_or(Error::Static(error::NOT_INTEGER))?;
    if count == i64::MIN {
        return Err(Error::Static(COUNT_RANGE));
    }
    let with_values = match c.args.remaining() {
        0 => false,
        1 if c.args.eat("WITHVALUES") => true,
        _ => return Err(Error::Static(error::SYNTAX)),
    };
    if with_values && !(-(i64::MAX / 2)..=i64::MAX / 2).contains(&count) {
        return Err(Error::Static(OUT_OF_RANGE));
    }
    let (mut shard, hash) = c.shard_of(key);
    let Some(slot) = read_hash(c, &mut shard, key, hash)? else {
        c.out.array(0);
        return Ok(());
    };
    let h = hash_at(&shard, slot)?;
    let n = count.unsigned_abs() as usize;
    let nested = with_values && c.out.proto == Protocol::Resp3;
    let header = |c: &mut Cmd<'_>, len: usize| {
        c.out
            .array(if with_values && !nested { len * 2 } else { len })
    };
    let reply = |c: &mut Cmd<'_>, (f, v): (&[u8], &[u8])| {
        if nested {
            c.out.array(2);
        }
        c.out.bulk(f);
        if with_values {
            c.out.bulk(v);
        }
    };
    if count < 0 || n == 1 {
        header(c, n);
        for p in h.random_pairs(n) {
            reply(c, p);
        }
    } else {
        let picked = h.random_distinct(n);
        header(c, picked.len());
        for p in picked {
            reply(c, p);
        }
    }
    Ok(())
}

/// HSCAN key cursor [MATCH pattern] [COUNT count]
fn hscan(c: &mut Cmd<'_>) -> Result<()> {
    let key = c.args.key()?;
    let cursor =
        crate::keys::scan::parse_cursor(c.args.next_arg()?).ok_or(Error::Static(INVALID_CURSOR))?;
    let (mut shard, hash) = c.shard_of(key);
    let Some(slot) = read_hash(c, &mut shard, key, hash)? else {
        c.out.array(2);
        c.out.bulk(b"0");
        c.out.array(0);
        return Ok(());
    };
    // Redis parses the options after the key's lookup and type check.
    let mut count = 10;
    let mut pattern = None;
    while let Some(opt) = c.args.opt() {
        if c.args.remaining() == 0 {
            return Err(Error::Static(error::SYNTAX));
        }
        if opt.eq_ignore_ascii_case(b"count") {
            let n = c.args.i64()?;
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
    let mut found: Vec<(&[u8], &[u8])> = Vec::new();
    let h = hash_at(&shard, slot)?;
    let next = h.scan(cursor, count, |f, v| {
        if pattern.is_none_or(|p| larder_engine::glob::matches(p, f, false)) {
            found.push((f, v));
        }
    });
    c.out.array(2);
    c.out.bulk(next.to_string().as_bytes());
    c.out.array(found.len() * 2);
    for (f, v) in found {
        c.out.bulk(f);
        c.out.bulk(v);
    }
    Ok(())
}

#[cfg(test)]
mod tests;
