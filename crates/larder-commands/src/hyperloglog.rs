//! HyperLogLog commands: PFADD PFCOUNT PFMERGE, with Redis 7.0 semantics.
//!
//! A HyperLogLog is a string value in Redis's own format (see
//! [`larder_engine::hyperloglog`]), so GET / SET / DUMP-free copies move it between larder and
//! Redis unchanged. This file checks the values, reaches the keys and shapes the replies.

use larder_engine::feed::class;
use larder_engine::hyperloglog::{self as hll, Corrupt, REGISTERS};
use larder_engine::{Object, Shard, SlotId};

use crate::config::Param;
use crate::error::{Error, Result};
use crate::exec::Cmd;
use crate::string::string_at;
use crate::table::{flags::*, CommandSpec, Group, KeySpec};

/// A string that is not a HyperLogLog (Redis sends it with the WRONGTYPE code).
const NOT_HLL: &str = "WRONGTYPE Key is not a valid HyperLogLog string value.";
/// A sparse HyperLogLog whose runs do not add up.
const CORRUPT: &str = "INVALIDOBJ Corrupted HLL object detected";

impl From<Corrupt> for Error {
    fn from(_: Corrupt) -> Error {
        Error::Static(CORRUPT)
    }
}

const fn cmd(
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
        Group::Hyperloglog,
        summary,
        "2.8.9",
        handler,
    )
}

/// The HyperLogLog family's table. Arity, flags, key positions, summaries and versions are
/// those of Redis 7.0's COMMAND INFO / COMMAND DOCS.
#[rustfmt::skip]
pub static COMMANDS: &[CommandSpec] = &[
    cmd("pfadd", -2, WRITE | DENYOOM | FAST, KeySpec::ONE, "Adds the specified elements to the specified HyperLogLog.", pfadd),
    cmd("pfcount", -2, READONLY | MAY_REPLICATE, KeySpec::ALL, "Return the approximated cardinality of the set(s) observed by the HyperLogLog at key(s).", pfcount),
    cmd("pfmerge", -2, WRITE | DENYOOM, KeySpec::ALL, "Merge N different HyperLogLogs into a single one.", pfmerge),
    cmd("pfdebug", 3, WRITE | DENYOOM | ADMIN, PFDEBUG_KEY, "Internal commands for debugging HyperLogLog values", pfdebug),
    cmd("pfselftest", 1, ADMIN, KeySpec::NONE, "An internal command for testing HyperLogLog values", pfselftest),
];

/// PFDEBUG's key: its second argument.
const PFDEBUG_KEY: KeySpec = KeySpec {
    first: 2,
    last: 2,
    step: 1,
    scope: crate::locks::Scope::Keys,
};

/// The HyperLogLog held in `slot`: WRONGTYPE for another type, and Redis's HyperLogLog
/// variant of it for a string that is not one.
fn hll_at(shard: &Shard, slot: SlotId) -> Result<&[u8]> {
    let s = string_at(shard, slot)?;
    if !hll::is_valid(s) {
        return Err(Error::Static(NOT_HLL));
    }
    Ok(s)
}

/// `hll-sparse-max-bytes`.
fn sparse_max(c: &Cmd<'_>) -> usize {
    c.server.config.num(Param::HllSparseMaxBytes).max(0) as usize
}

/// PFADD key [element ...]
fn pfadd(c: &mut Cmd<'_>) -> Result<()> {
    let key = c.args.key()?;
    let elements = c.args.rest();
    let max = sparse_max(c);
    let (mut shard, hash) = c.shard_of(key);
    let updated = match shard.find_touch(key, hash, c.now_ms, c.access()) {
        None => {
            // Creating the key is an update, even with no element.
            let mut s = hll::new_sparse();
            for e in elements {
                hll::add(&mut s, e, max)?;
            }
            hll::invalidate(&mut s);
            shard.insert_object(key, hash, Object::Str(s), 0, c.now_ms);
            c.notify(class::NEW, "new", key);
            true
        }
        Some(slot) => {
            let s = hll_at(&shard, slot)?;
            // Each element hashed once (one element, the common case, without allocating).
            let one: [(usize, u8); 1];
            let many: Vec<(usize, u8)>;
            let patterns: &[(usize, u8)] = if let [e] = elements {
                one = [hll::pattern(e)];
                &one
            } else {
                many = elements.iter().map(|e| hll::pattern(e)).collect();
                &many
            };
            // A PFADD that changes no register is no write.
            let changes = patterns
                .iter()
                .any(|&p| hll::would_change_pattern(s, p).unwrap_or(true));
            changes
                && shard
                    .update_string(slot, |s| {
                        let mut updated = false;
                        for &p in patterns {
                            updated |= hll::add_pattern(s, p, max)?;
                        }
                        if updated {
                            hll::invalidate(s);
                        }
                        Ok::<bool, Corrupt>(updated)
                    })
                    .ok_or(Error::Static(NOT_HLL))??
        }
    };
    if updated {
        c.notify(class::STRING, "pfadd", key);
    }
    drop(shard);
    c.out.int(i64::from(updated));
    Ok(())
}

/// PFCOUNT key [key ...]
///
/// One key: its cached cardinality, or one computed and cached (a write, as in Redis, though
/// no event). Several: the cardinality of their union, nothing written.
fn pfcount(c: &mut Cmd<'_>) -> Result<()> {
    let keys = c.args.rest();
    if let [key] = keys {
        let (mut shard, hash) = c.shard_of(key);
        let found = shard.find_touch(key, hash, c.now_ms, c.access());
        c.hit(found.is_some());
        let card = match found {
            None => 0,
            Some(slot) => {
                let s = hll_at(&shard, slot)?;
                match hll::cached(s) {
                    Some(card) => card,
                    None => {
                        let card = hll::count(s)?;
                        shard.update_string(slot, |s| hll::set_cached(s, card));
                        // The cache is part of the value, so replicas and the log replay
                        // this PFCOUNT, as Redis propagates it: recorded under the shard
                        // lock, it joins the change's group (the executor records only
                        // writes' commands).
                        let feed = shard.feed();
                        if feed.records_commands() {
                            let argv = larder_engine::Argv::new(&[b"PFCOUNT".as_slice(), key]);
                            feed.command_now(c.conn.db, argv, None);
                        }
                        card
                    }
                }
            }
        };
        drop(shard);
        c.out.int(card as i64);
        return Ok(());
    }
    let (max, _) = union(c, keys)?;
    c.out.int(hll::count_registers(&max) as i64);
    Ok(())
}

/// The registers of the union of `keys` (missing ones are empty), and whether one of them is
/// dense. Each key's shard is held only while it is read.
fn union(c: &Cmd<'_>, keys: &[&[u8]]) -> Result<(Box<[u8; REGISTERS]>, bool)> {
    let mut max = Box::new([0u8; REGISTERS]);
    let mut any_dense = false;
    for &key in keys {
        let (mut shard, hash) = c.shard_of(key);
        let found = shard.find_touch(key, hash, c.now_ms, c.access());
        c.hit(found.is_some());
        if let Some(slot) = found {
            let s = hll_at(&shard, slot)?;
            any_dense |= hll::is_dense(s);
            hll::merge_into(&mut max, s)?;
        }
    }
    Ok((max, any_dense))
}

/// PFMERGE destkey [sourcekey ...]
///
/// The destination is one of the sources (Redis merges it too); it turns dense when any
/// source is dense, and raises `pfadd`.
fn pfmerge(c: &mut Cmd<'_>) -> Result<()> {
    let keys = c.args.rest();
    let dest = keys[0];
    let (max, use_dense) = union(c, keys)?;
    let limit = sparse_max(c);
    let (mut shard, hash) = c.shard_of(dest);
    match shard.find(dest, hash, c.now_ms) {
        None => {
            let mut s = hll::new_sparse();
            hll::merge_store(&mut s, &max, use_dense, limit)?;
            shard.insert_object(dest, hash, Object::Str(s), 0, c.now_ms);
            c.notify(class::NEW, "new", dest);
        }
        Some(slot) => {
            hll_at(&shard, slot)?;
            shard
                .update_string(slot, |s| hll::merge_store(s, &max, use_dense, limit))
                .ok_or(Error::Static(NOT_HLL))??;
        }
    }
    c.notify(class::STRING, "pfadd", dest);
    drop(shard);
    c.out.simple("OK");
    Ok(())
}

/// PFDEBUG GETREG | DECODE | ENCODING | TODENSE key
///
/// GETREG and TODENSE turn a sparse value dense (a write, as in Redis).
fn pfdebug(c: &mut Cmd<'_>) -> Result<()> {
    let sub = c.args.next_arg()?;
    let key = c.args.key()?;
    let (mut shard, hash) = c.shard_of(key);
    let slot = shard
        .find_touch(key, hash, c.now_ms, c.access())
        .ok_or(Error::Static("ERR The specified key does not exist"))?;
    let s = hll_at(&shard, slot)?;
    let is = |w: &str| sub.eq_ignore_ascii_case(w.as_bytes());
    if is("GETREG") || is("TODENSE") {
        let sparse = !hll::is_dense(s);
        if sparse {
            let mut dense = s.to_vec();
            hll::to_dense(&mut dense)?;
            shard.update_string(slot, |s| *s = dense);
        }
        if is("TODENSE") {
            drop(shard);
            c.out.int(i64::from(sparse));
            return Ok(());
        }
        let regs = hll::registers(hll_at(&shard, slot)?)?;
        drop(shard);
        c.out.array(REGISTERS);
        for r in regs.iter() {
            c.out.int(i64::from(*r));
        }
    } else if is("DECODE") {
        if hll::is_dense(s) {
            return Err(Error::Static("ERR HLL encoding is not sparse"));
        }
        let text = hll::decode_sparse(s);
        drop(shard);
        c.out.bulk(text.as_bytes());
    } else if is("ENCODING") {
        let name = if hll::is_dense(s) { "dense" } else { "sparse" };
        drop(shard);
        c.out.simple(name);
    } else {
        return Err(Error::Owned(format!(
            "ERR Unknown PFDEBUG subcommand '{}'",
            String::from_utf8_lossy(sub)
        )));
    }
    Ok(())
}

/// PFSELFTEST
fn pfselftest(c: &mut Cmd<'_>) -> Result<()> {
    hll::self_test().map_err(Error::Owned)?;
    c.out.simple("OK");
    Ok(())
}

#[cfg(test)]
mod tests;
