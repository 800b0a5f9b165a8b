//! Bitmap commands on strings: SETBIT GETBIT BITCOUNT BITPOS BITOP BITFIELD BITFIELD_RO, with
//! Redis 7.0 semantics.
//!
//! A bitmap is a string value; the bit algorithms live in [`larder_engine::bitmap`]. This file
//! parses arguments (in Redis's order, so the same error wins), reaches the keys, and shapes
//! the replies. A write that grows or changes a string stores it as a grown string
//! (`Object::Str`, Redis's "raw").

use larder_engine::bitmap::{self, BitOp, BitOpAcc, FieldOp, FieldType, FieldView, Overflow, Unit};
use larder_engine::feed::class;
use larder_engine::Object;

use crate::args::{parse_i64, Args};
use crate::config::Param;
use crate::error::{self, Error, Result};
use crate::exec::Cmd;
use crate::locks::Scope;
use crate::string::string_at;
use crate::table::{flags::*, CommandSpec, Group, KeySpec};

const BIT_OFFSET: &str = "ERR bit offset is not an integer or out of range";
const BIT_VALUE: &str = "ERR bit is not an integer or out of range";
const BIT_ARG: &str = "ERR The bit argument must be 1 or 0.";
const BITOP_NOT_ONE_KEY: &str = "ERR BITOP NOT must be called with a single source key.";
const BITFIELD_TYPE: &str = "ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is.";
const BITFIELD_OVERFLOW: &str = "ERR Invalid OVERFLOW type specified";
const BITFIELD_RO_GET_ONLY: &str = "ERR BITFIELD_RO only supports the GET subcommand";

/// BITOP's keys: the destination and every source (argv 2 to the end).
const BITOP_KEYS: KeySpec = KeySpec {
    first: 2,
    last: -1,
    step: 1,
    scope: Scope::Keys,
};

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
        Group::Bitmap,
        summary,
        since,
        handler,
    )
}

/// The bitmap family's table. Arity, flags, key positions, summaries and versions are those
/// of Redis 7.0's COMMAND INFO / COMMAND DOCS.
#[rustfmt::skip]
pub static COMMANDS: &[CommandSpec] = &[
    cmd("setbit", 4, WRITE | DENYOOM, KeySpec::ONE, "Sets or clears the bit at offset in the string value stored at key", "2.2.0", setbit),
    cmd("getbit", 3, READONLY | FAST, KeySpec::ONE, "Returns the bit value at offset in the string value stored at key", "2.2.0", getbit),
    cmd("bitcount", -2, READONLY, KeySpec::ONE, "Count set bits in a string", "2.6.0", bitcount),
    cmd("bitpos", -3, READONLY, KeySpec::ONE, "Find first bit set or clear in a string", "2.8.7", bitpos),
    cmd("bitop", -4, WRITE | DENYOOM, BITOP_KEYS, "Perform bitwise operations between strings", "2.6.0", bitop),
    cmd("bitfield", -2, WRITE | DENYOOM, KeySpec::ONE, "Perform arbitrary bitfield integer operations on strings", "3.2.0", bitfield),
    cmd("bitfield_ro", -2, READONLY | FAST, KeySpec::ONE, "Perform arbitrary bitfield integer operations on strings. Read-only variant of BITFIELD", "6.0.0", bitfield_ro),
];

/// A bit offset argument, as Redis's `getBitOffsetFromArgument`: a non-negative integer whose
/// byte is below proto-max-bulk-len. With `hash_bits`, BITFIELD's `#n` form means `n * bits`.
fn bit_offset(c: &Cmd<'_>, raw: &[u8], hash_bits: Option<u32>) -> Result<u64> {
    let (multiplier, digits) = match (hash_bits, raw.first()) {
        (Some(bits), Some(b'#')) => (Some(bits), &raw[1..]),
        _ => (None, raw),
    };
    let mut offset = parse_i64(digits).ok_or(Error::Static(BIT_OFFSET))?;
    if let Some(bits) = multiplier {
        offset = offset.wrapping_mul(i64::from(bits));
    }
    let max = c.server.config.num(Param::ProtoMaxBulkLen);
    if offset < 0 || (offset >> 3) >= max {
        return Err(Error::Static(BIT_OFFSET));
    }
    Ok(offset as u64)
}

/// `BYTE | BIT`, the optional unit of BITCOUNT and BITPOS ranges.
fn unit_arg(raw: &[u8]) -> Result<Unit> {
    if raw.eq_ignore_ascii_case(b"BIT") {
        Ok(Unit::Bit)
    } else if raw.eq_ignore_ascii_case(b"BYTE") {
        Ok(Unit::Byte)
    } else {
        Err(Error::Static(error::SYNTAX))
    }
}

/// SETBIT key offset value
fn setbit(c: &mut Cmd<'_>) -> Result<()> {
    let key = c.args.key()?;
    let raw = c.args.next_arg()?;
    let offset = bit_offset(c, raw, None)?;
    let on = parse_i64(c.args.next_arg()?)
        .filter(|v| v & !1 == 0)
        .ok_or(Error::Static(BIT_VALUE))?
        == 1;
    let bytes = (offset >> 3) as usize + 1;
    let (mut shard, hash) = c.shard_of(key);
    let old = match shard.find_touch(key, hash, c.now_ms, c.access()) {
        None => {
            let mut v = vec![0u8; bytes];
            bitmap::set_bit(&mut v, offset, on);
            shard.insert_object(key, hash, Object::Str(v), 0, c.now_ms);
            c.notify(class::NEW, "new", key);
            c.notify(class::STRING, "setbit", key);
            false
        }
        Some(slot) => {
            let s = string_at(&shard, slot)?;
            let old = bitmap::get_bit(s, offset);
            // Growing the string is a change even when the bit already has the value.
            if s.len() < bytes || old != on {
                shard
                    .update_string(slot, |s| bitmap::set_bit(s, offset, on))
                    .ok_or(Error::Static(error::WRONGTYPE))?;
                c.notify(class::STRING, "setbit", key);
            } else {
                shard.unshare_string(slot);
            }
            old
        }
    };
    drop(shard);
    c.out.int(i64::from(old));
    Ok(())
}

/// GETBIT key offset
fn getbit(c: &mut Cmd<'_>) -> Result<()> {
    let key = c.args.key()?;
    let raw = c.args.next_arg()?;
    let offset = bit_offset(c, raw, None)?;
    let (mut shard, hash) = c.shard_of(key);
    let found = shard.find_touch(key, hash, c.now_ms, c.access());
    c.hit(found.is_some());
    let bit = match found {
        Some(slot) => bitmap::get_bit(string_at(&shard, slot)?, offset),
        None => false,
    };
    drop(shard);
    c.out.int(i64::from(bit));
    Ok(())
}

/// BITCOUNT key [start end [BYTE | BIT]]
fn bitcount(c: &mut Cmd<'_>) -> Result<()> {
    let key = c.args.key()?;
    let (mut shard, hash) = c.shard_of(key);
    let found = shard.find_touch(key, hash, c.now_ms, c.access());
    c.hit(found.is_some());
    // Redis looks the key up before it reads the range: a missing key is 0 whatever follows.
    let Some(slot) = found else {
        drop(shard);
        c.out.int(0);
        return Ok(());
    };
    let s = string_at(&shard, slot)?;
    let n = match c.args.remaining() {
        0 => bitmap::popcount(s),
        2 | 3 => {
            let start = c.args.i64()?;
            let end = c.args.i64()?;
            if start < 0 && end < 0 && start > end {
                0
            } else {
                let unit = match c.args.opt() {
                    Some(raw) => unit_arg(raw)?,
                    None => Unit::Byte,
                };
                bitmap::count_range(s, start, end, unit)
            }
        }
        _ => return Err(Error::Static(error::SYNTAX)),
    };
    drop(shard);
    c.out.int(n as i64);
    Ok(())
}

/// BITPOS key bit [start [end [BYTE | BIT]]]
fn bitpos(c: &mut Cmd<'_>) -> Result<()> {
    let key = c.args.key()?;
    let bit = c.args.i64()?;
    if bit != 0 && bit != 1 {
        return Err(Error::Static(BIT_ARG));
    }
    let bit = bit == 1;
    let (mut shard, hash) = c.shard_of(key);
    let found = shard.find_touch(key, hash, c.now_ms, c.access());
    c.hit(found.is_some());
    // A missing key is an endless run of zeros.
    let Some(slot) = found else {
        drop(shard);
        c.out.int(if bit { -1 } else { 0 });
        return Ok(());
    };
    let s = string_at(&shard, slot)?;
    let pos = match c.args.remaining() {
        0 => bitmap::bitpos(s, bit, None, None, Unit::Byte),
        1..=3 => {
            let start = c.args.i64()?;
            // The unit is checked before the end is parsed.
            let (end, unit) = match c.args.remaining() {
                2 => {
                    let raw_end = c.args.next_arg()?;
                    let unit = unit_arg(c.args.next_arg()?)?;
                    let end = parse_i64(raw_end).ok_or(Error::Static(error::NOT_INTEGER))?;
                    (Some(end), unit)
                }
                1 => (Some(c.args.i64()?), Unit::Byte),
                _ => (None, Unit::Byte),
            };
            bitmap::bitpos(s, bit, Some(start), end, unit)
        }
        _ => return Err(Error::Static(error::SYNTAX)),
    };
    drop(shard);
    c.out.int(pos);
    Ok(())
}

/// BITOP AND | OR | XOR | NOT destkey key [key ...]
///
/// The sources are read one shard at a time (the executor holds every shard of the command),
/// folded into the result as they come; the destination is then replaced by it like SET does
/// (any type, deadline cleared), or deleted when the result is empty.
fn bitop(c: &mut Cmd<'_>) -> Result<()> {
    let name = c.args.next_arg()?;
    let op = [
        ("AND", BitOp::And),
        ("OR", BitOp::Or),
        ("XOR", BitOp::Xor),
        ("NOT", BitOp::Not),
    ]
    .into_iter()
    .find(|(n, _)| name.eq_ignore_ascii_case(n.as_bytes()))
    .map(|(_, op)| op)
    .ok_or(Error::Static(error::SYNTAX))?;
    let dest = c.args.key()?;
    let sources = c.args.rest();
    if op == BitOp::Not && sources.len() != 1 {
        return Err(Error::Static(BITOP_NOT_ONE_KEY));
    }
    let mut acc = BitOpAcc::new(op);
    for &key in sources {
        let (mut shard, hash) = c.shard_of(key);
        let found = shard.find_touch(key, hash, c.now_ms, c.access());
        c.hit(found.is_some());
        match found {
            Some(slot) => acc.add(string_at(&shard, slot)?),
            None => acc.add(&[]),
        }
    }
    let result = acc.finish();
    let len = result.len();
    let (mut shard, hash) = c.shard_of(dest);
    if len > 0 {
        match shard.find(dest, hash, c.now_ms) {
            Some(slot) => {
                shard.set_object(slot, Object::Str(result));
                shard.set_flags(slot, 0);
                shard.touch(slot, c.now_ms);
                if shard.entry(slot).expire_at_ms().is_some() {
                    shard.set_expire(slot, None);
                }
            }
            None => {
                shard.insert_object(dest, hash, Object::Str(result), 0, c.now_ms);
                c.notify(class::NEW, "new", dest);
            }
        }
        c.notify(class::STRING, "set", dest);
    } else {
        crate::collection::delete_destination(c, &mut shard, dest, hash);
    }
    drop(shard);
    c.out.int(len as i64);
    Ok(())
}

/// One parsed BITFIELD operation.
struct FieldCall {
    op: FieldOp,
    ty: FieldType,
    offset: u64,
    overflow: Overflow,
}

/// BITFIELD's operations, all parsed before anything runs (as in Redis), with the last bit a
/// write reaches (`None` when every operation is a GET).
fn parse_fields(c: &mut Cmd<'_>) -> Result<(Vec<FieldCall>, Option<u64>)> {
    let mut calls = Vec::new();
    let mut overflow = Overflow::Wrap;
    let mut highest_write: Option<u64> = None;
    while let Some(sub) = c.args.opt() {
        let left = c.args.remaining();
        let is = |w: &str| sub.eq_ignore_ascii_case(w.as_bytes());
        let write = if is("GET") && left >= 2 {
            false
        } else if (is("SET") || is("INCRBY")) && left >= 3 {
            true
        } else if is("OVERFLOW") && left >= 1 {
            overflow = overflow_arg(&mut c.args)?;
            continue;
        } else {
            return Err(Error::Static(error::SYNTAX));
        };
        let ty = FieldType::parse(c.args.next_arg()?).ok_or(Error::Static(BITFIELD_TYPE))?;
        let raw = c.args.next_arg()?;
        let offset = bit_offset(c, raw, Some(ty.bits))?;
        let op = if write {
            let last = offset + u64::from(ty.bits) - 1;
            highest_write = Some(highest_write.map_or(last, |h| h.max(last)));
            let v = c.args.i64()?;
            if is("SET") {
                FieldOp::Set(v)
            } else {
                FieldOp::IncrBy(v)
            }
        } else {
            FieldOp::Get
        };
        calls.push(FieldCall {
            op,
            ty,
            offset,
            overflow,
        });
    }
    Ok((calls, highest_write))
}

fn overflow_arg(args: &mut Args<'_>) -> Result<Overflow> {
    let raw = args.next_arg()?;
    [
        ("WRAP", Overflow::Wrap),
        ("SAT", Overflow::Sat),
        ("FAIL", Overflow::Fail),
    ]
    .into_iter()
    .find(|(n, _)| raw.eq_ignore_ascii_case(n.as_bytes()))
    .map(|(_, o)| o)
    .ok_or(Error::Static(BITFIELD_OVERFLOW))
}

/// BITFIELD key [GET type offset | SET type offset value | INCRBY type offset increment |
/// OVERFLOW WRAP|SAT|FAIL ...]
fn bitfield(c: &mut Cmd<'_>) -> Result<()> {
    bitfield_generic(c, false)
}

/// BITFIELD_RO key [GET type offset ...]
fn bitfield_ro(c: &mut Cmd<'_>) -> Result<()> {
    bitfield_generic(c, true)
}

fn bitfield_generic(c: &mut Cmd<'_>, read_only: bool) -> Result<()> {
    let key = c.args.key()?;
    let (calls, highest_write) = parse_fields(c)?;
    let (mut shard, hash) = c.shard_of(key);
    let Some(highest) = highest_write else {
        // Only GETs: a read.
        let found = shard.find_touch(key, hash, c.now_ms, c.access());
        c.hit(found.is_some());
        let base = match found {
            Some(slot) => string_at(&shard, slot)?,
            None => &[][..],
        };
        let view = FieldView::new(base);
        let values: Vec<i64> = calls.iter().map(|f| view.get(f.ty, f.offset)).collect();
        drop(shard);
        c.out.array(values.len());
        for v in values {
            c.out.int(v);
        }
        return Ok(());
    };
    if read_only {
        return Err(Error::Static(BITFIELD_RO_GET_ONLY));
    }
    let needed = (highest >> 3) as usize + 1;
    let found = shard.find_touch(key, hash, c.now_ms, c.access());
    let base = match found {
        Some(slot) => string_at(&shard, slot)?,
        None => &[][..],
    };
    // Creating or growing the string is a change of its own (Redis's `dirty`).
    let dirty = found.is_none() || base.len() < needed;
    let mut view = FieldView::new(base);
    let mut changes = 0usize;
    let replies: Vec<Option<i64>> = calls
        .iter()
        .map(|f| match f.op {
            FieldOp::Get => Some(view.get(f.ty, f.offset)),
            op => view
                .write(f.ty, f.offset, op, f.overflow)
                .map(|(reply, changed)| {
                    if dirty || changed {
                        changes += 1;
                    }
                    reply
                }),
        })
        .collect();
    let writes = view.into_writes();
    let apply = |s: &mut Vec<u8>| {
        if s.len() < needed {
            s.resize(needed, 0);
        }
        for (&i, &b) in &writes {
            s[i as usize] = b;
        }
    };
    if dirty || changes > 0 {
        match found {
            Some(slot) => {
                shard
                    .update_string(slot, apply)
                    .ok_or(Error::Static(error::WRONGTYPE))?;
            }
            None => {
                let mut v = Vec::new();
                apply(&mut v);
                shard.insert_object(key, hash, Object::Str(v), 0, c.now_ms);
                c.notify(class::NEW, "new", key);
            }
        }
    } else if let Some(slot) = found {
        shard.unshare_string(slot);
    }
    if changes > 0 {
        c.notify(class::STRING, "setbit", key);
    }
    drop(shard);
    c.out.array(replies.len());
    for r in replies {
        match r {
            Some(v) => c.out.int(v),
            None => c.out.null(),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
