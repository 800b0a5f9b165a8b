//! Keyspace commands: DEL, EXISTS, RENAME, COPY, MOVE, KEYS, SELECT, SWAPDB, FLUSHALL and
//! friends. Whole-database commands (KEYS, FLUSHALL, SELECT, SWAPDB...) live in `keys/db.rs`,
//! the expiry commands in `keys/expire.rs`, SCAN in `keys/scan.rs`, OBJECT in
//! `keys/object.rs` and DUMP and RESTORE in `keys/dump.rs`.
//!
//! Single-key commands lock the key's shard only. For RENAME, COPY, MOVE and multi-key DEL,
//! EXISTS and TOUCH the executor locks every shard involved before the handler runs, so no
//! client sees a key in both places or in neither, or some of a DEL's keys gone and others not.

mod db;
mod dump;
mod expire;
pub(crate) mod object;
pub(crate) mod scan;

use larder_engine::feed::class;
use larder_engine::{Entry, ObjectKind, SlotId};

use crate::args::parse_i64;
use crate::error::{self, Error, Result};
use crate::exec::Cmd;
use crate::locks::Pair;
use crate::table::{flags::*, CommandSpec, Group, KeySpec, Scope};

/// `getIntFromObjectOrReply`'s range error.
const INT_RANGE: &str = "ERR value is out of range, value must between -2147483648 and 2147483647";

#[allow(clippy::too_many_arguments)]
const fn cmd(
    name: &'static str,
    arity: i32,
    flags: u32,
    keys: KeySpec,
    group: Group,
    summary: &'static str,
    since: &'static str,
    handler: crate::table::Handler,
) -> CommandSpec {
    CommandSpec::new(name, arity, flags, keys, group, summary, since, handler)
}

use Group::{Connection, Keyspace, Server};

/// The keyspace family's table.
pub static COMMANDS: &[CommandSpec] = &[
    cmd("del", -2, WRITE, KeySpec::ALL, Keyspace, "Delete a key", "1.0.0", del),
    cmd("unlink", -2, WRITE | FAST, KeySpec::ALL, Keyspace, "Delete a key asynchronously in another thread. Otherwise it is just as DEL, but non blocking.", "4.0.0", unlink),
    cmd("exists", -2, READONLY | FAST, KeySpec::ALL, Keyspace, "Determine if a key exists", "1.0.0", exists),
    cmd("touch", -2, READONLY | FAST, KeySpec::ALL, Keyspace, "Alters the last access time of a key(s). Returns the number of existing keys specified.", "3.2.1", touch),
    cmd("type", 2, READONLY | FAST, KeySpec::ONE, Keyspace, "Determine the type stored at key", "1.0.0", r#type),
    cmd("rename", 3, WRITE, KeySpec::TWO, Keyspace, "Rename a key", "1.0.0", rename),
    cmd("renamenx", 3, WRITE | FAST, KeySpec::TWO, Keyspace, "Rename a key, only if the new key does not exist", "1.0.0", renamenx),
    cmd("copy", -3, WRITE | DENYOOM, KeySpec::TWO.with_scope(Scope::OtherDb { at: 0 }), Keyspace, "Copy a key", "6.2.0", copy),
    cmd("move", 3, WRITE | FAST, KeySpec::ONE.with_scope(Scope::OtherDb { at: 2 }), Keyspace, "Move a key to another database", "1.0.0", r#move),
    cmd("keys", 2, READONLY, KeySpec::NONE.with_scope(Scope::WalkDb), Keyspace, "Find all keys matching the given pattern", "1.0.0", db::keys),
    cmd("randomkey", 1, READONLY, KeySpec::NONE.with_scope(Scope::WalkDb), Keyspace, "Return a random key from the keyspace", "1.0.0", db::randomkey),
    cmd("scan", -2, READONLY, KeySpec::NONE.with_scope(Scope::WalkDb), Keyspace, "Incrementally iterate the keys space", "2.8.0", scan::scan),
    cmd("dbsize", 1, READONLY | FAST, KeySpec::NONE.with_scope(Scope::WalkDb), Server, "Return the number of keys in the selected database", "1.0.0", db::dbsize),
    cmd("flushdb", -1, WRITE, KeySpec::NONE.with_scope(Scope::Db), Server, "Remove all keys from the current database", "1.0.0", db::flushdb),
    cmd("flushall", -1, WRITE, KeySpec::NONE.with_scope(Scope::All), Server, "Remove all keys from all databases", "1.0.0", db::flushall),
    cmd("select", 2, LOADING | STALE | FAST, KeySpec::NONE, Connection, "Change the selected database for the current connection", "1.0.0", db::select),
    cmd("swapdb", 3, WRITE | FAST, KeySpec::NONE.with_scope(Scope::All), Server, "Swaps two Redis databases", "4.0.0", db::swapdb),
    cmd("expire", -3, WRITE | FAST, KeySpec::ONE, Keyspace, "Set a key's time to live in seconds", "1.0.0", expire::expire),
    cmd("pexpire", -3, WRITE | FAST, KeySpec::ONE, Keyspace, "Set a key's time to live in milliseconds", "2.6.0", expire::pexpire),
    cmd("expireat", -3, WRITE | FAST, KeySpec::ONE, Keyspace, "Set the expiration for a key as a UNIX timestamp", "1.2.0", expire::expireat),
    cmd("pexpireat", -3, WRITE | FAST, KeySpec::ONE, Keyspace, "Set the expiration for a key as a UNIX timestamp specified in milliseconds", "2.6.0", expire::pexpireat),
    cmd("ttl", 2, READONLY | FAST, KeySpec::ONE, Keyspace, "Get the time to live for a key in seconds", "1.0.0", expire::ttl),
    cmd("pttl", 2, READONLY | FAST, KeySpec::ONE, Keyspace, "Get the time to live for a key in milliseconds", "2.6.0", expire::pttl),
    cmd("expiretime", 2, READONLY | FAST, KeySpec::ONE, Keyspace, "Get the expiration Unix timestamp for a key", "7.0.0", expire::expiretime),
    cmd("pexpiretime", 2, READONLY | FAST, KeySpec::ONE, Keyspace, "Get the expiration Unix timestamp for a key in milliseconds", "7.0.0", expire::pexpiretime),
    cmd("dump", 2, READONLY, KeySpec::ONE, Keyspace, "Return a serialized version of the value stored at the specified key.", "2.6.0", dump::dump),
    cmd("restore", -4, WRITE | DENYOOM, KeySpec::ONE, Keyspace, "Create a key using the provided serialized value, previously obtained using DUMP.", "2.6.0", dump::restore),
    cmd("persist", 2, WRITE | FAST, KeySpec::ONE, Keyspace, "Remove the expiration from a key", "2.2.0", expire::persist),
    CommandSpec {
        name: "object",
        arity: -2,
        flags: 0,
        keys: KeySpec::NONE,
        group: Keyspace,
        summary: "A container for object introspection commands",
        since: "2.2.3",
        handler: object::container,
        subcommands: object::SUBCOMMANDS,
    },
];

/// `getIntFromObjectOrReply`: a strict decimal that fits a C `int`. `msg` replaces both the
/// not-an-integer and the out-of-range texts when given (SWAPDB's "invalid first DB index").
fn parse_int(raw: &[u8], msg: Option<&'static str>) -> Result<i32> {
    let v = parse_i64(raw).ok_or(Error::Static(msg.unwrap_or(error::NOT_INTEGER)))?;
    i32::try_from(v).map_err(|_| Error::Static(msg.unwrap_or(INT_RANGE)))
}

/// A database index argument checked against `databases` (SELECT, MOVE, COPY ... DB).
fn db_index(c: &Cmd<'_>, raw: &[u8]) -> Result<usize> {
    checked_db(c, parse_int(raw, None)?)
}

fn checked_db(c: &Cmd<'_>, index: i32) -> Result<usize> {
    usize::try_from(index)
        .ok()
        .filter(|&i| i < c.server.keyspace.db_count())
        .ok_or(Error::Static(error::DB_INDEX))
}

/// DEL key [key ...]
fn del(c: &mut Cmd<'_>) -> Result<()> {
    remove_keys(c);
    Ok(())
}

/// UNLINK key [key ...]
///
/// Values are freed as soon as the shard is unlocked, which keeps the lock hold time as short
/// as UNLINK's; `lazyfree-lazy-user-del` therefore changes nothing for DEL.
fn unlink(c: &mut Cmd<'_>) -> Result<()> {
    remove_keys(c);
    Ok(())
}

fn remove_keys(c: &mut Cmd<'_>) {
    let mut removed = 0;
    for key in c.args.rest() {
        let (mut shard, hash) = c.shard_of(key);
        let entry = shard
            .find(key, hash, c.now_ms)
            .map(|slot| shard.remove(slot));
        if entry.is_some() {
            c.notify(class::GENERIC, "del", key);
        }
        drop(shard);
        // The value is dropped here, outside the lock.
        removed += i64::from(entry.is_some());
    }
    c.out.int(removed);
}

/// EXISTS key [key ...]: a key named twice counts twice.
fn exists(c: &mut Cmd<'_>) -> Result<()> {
    let mut found = 0;
    for key in c.args.rest() {
        let (mut shard, hash) = c.shard_of(key);
        let hit = shard.find(key, hash, c.now_ms).is_some();
        drop(shard);
        c.hit(hit);
        found += i64::from(hit);
    }
    c.out.int(found);
    Ok(())
}

/// TOUCH key [key ...]
fn touch(c: &mut Cmd<'_>) -> Result<()> {
    let mut found = 0;
    for key in c.args.rest() {
        let (mut shard, hash) = c.shard_of(key);
        // TOUCH touches even for a CLIENT NO-TOUCH client, as in Redis.
        let hit = shard
            .find_touch(key, hash, c.now_ms, larder_engine::Access::Touch)
            .is_some();
        drop(shard);
        c.hit(hit);
        found += i64::from(hit);
    }
    c.out.int(found);
    Ok(())
}

/// TYPE key
fn r#type(c: &mut Cmd<'_>) -> Result<()> {
    let key = c.args.key()?;
    let (mut shard, hash) = c.shard_of(key);
    let kind = shard
        .find(key, hash, c.now_ms)
        .map(|slot| shard.entry(slot).kind());
    drop(shard);
    c.hit(kind.is_some());
    c.out.simple(kind.map_or("none", ObjectKind::name));
    Ok(())
}

/// Move the source entry at `slot` to `key` in the destination shard, where `key` must be
/// absent, keeping its deadline. Returns the source entry, to be dropped after unlocking.
fn transfer(pair: &mut Pair<'_>, slot: SlotId, key: &[u8], hash: u64, now_ms: u64) -> Entry {
    match pair {
        Pair::Same(s) => {
            let old = s.remove(slot);
            s.insert_copy(&old, key, hash, now_ms);
            old
        }
        Pair::Two { src, dst } => {
            dst.insert_copy(src.entry(slot), key, hash, now_ms);
            src.remove(slot)
        }
    }
}

/// Copy the source entry at `slot` to `key` in the destination shard, where `key` must be
/// absent, keeping its deadline. The source is not modified.
fn duplicate(pair: &mut Pair<'_>, slot: SlotId, key: &[u8], hash: u64, now_ms: u64) {
    match pair {
        Pair::Same(s) => {
            // `insert_copy` cannot borrow the source from the shard it inserts into, so the
            // value is copied out first through the public accessors.
            let e = s.entry(slot);
            let at = e.expire_at_ms().unwrap_or(0);
            let flags = e.flags();
            let new = match e.object() {
                Some(o) => {
                    let o = o.clone();
                    s.insert_object(key, hash, o, at, now_ms)
                }
                None => {
                    let v = e.string().unwrap_or_default().to_vec();
                    s.insert_string(key, hash, &v, at, now_ms)
                }
            };
            s.set_flags(new, flags);
        }
        Pair::Two { src, dst } => {
            dst.insert_copy(src.entry(slot), key, hash, now_ms);
        }
    }
}

/// RENAME when the new name exists: replace it (RENAME) or do nothing (RENAMENX).
#[derive(Clone, Copy, PartialEq, Eq)]
enum OnExisting {
    Replace,
    Keep,
}

/// RENAME key newkey
fn rename(c: &mut Cmd<'_>) -> Result<()> {
    let renamed = rename_key(c, OnExisting::Replace)?;
    debug_assert!(renamed);
    c.out.simple("OK");
    Ok(())
}

/// RENAMENX key newkey
fn renamenx(c: &mut Cmd<'_>) -> Result<()> {
    let renamed = rename_key(c, OnExisting::Keep)?;
    c.out.int(i64::from(renamed));
    Ok(())
}

/// The shared part of RENAME and RENAMENX. Returns whether the key was renamed (or kept its
/// name under RENAME, when both names are the same).
fn rename_key(c: &mut Cmd<'_>, on_existing: OnExisting) -> Result<bool> {
    let src_key = c.args.key()?;
    let dst_key = c.args.key()?;
    let db = c.conn.db;
    let now = c.now_ms;
    let mut replaced = None;
    let (mut pair, src_hash, dst_hash) = c.shard_pair((db, src_key), (db, dst_key));
    let slot = pair
        .src()
        .find_touch(src_key, src_hash, now, c.access())
        .ok_or(Error::Static(error::NO_SUCH_KEY))?;
    if src_key == dst_key {
        return Ok(on_existing == OnExisting::Replace);
    }
    if let Some(old) = pair.dst().find(dst_key, dst_hash, now) {
        if on_existing == OnExisting::Keep {
            return Ok(false);
        }
        replaced = Some(pair.dst().remove(old));
    }
    let moved = transfer(&mut pair, slot, dst_key, dst_hash, now);
    // Redis re-adds the destination (`dbAdd`) even when it replaced a key of that name.
    c.notify(class::NEW, "new", dst_key);
    c.notify(class::GENERIC, "rename_from", src_key);
    c.notify(class::GENERIC, "rename_to", dst_key);
    drop(pair);
    drop((replaced, moved));
    Ok(true)
}

/// COPY source destination [DB destination-db] [REPLACE]
fn copy(c: &mut Cmd<'_>) -> Result<()> {
    let src_key = c.args.key()?;
    let dst_key = c.args.key()?;
    let src_db = c.conn.db;
    let mut dst_db = src_db;
    let mut replace = false;
    while let Some(opt) = c.args.opt() {
        if opt.eq_ignore_ascii_case(b"replace") {
            replace = true;
        } else if opt.eq_ignore_ascii_case(b"db") && c.args.remaining() >= 1 {
            let raw = c.args.next_arg()?;
            dst_db = db_index(c, raw)?;
        } else {
            return Err(Error::Static(error::SYNTAX));
        }
    }
    if src_db == dst_db && src_key == dst_key {
        return Err(Error::Static(error::SAME_OBJECT));
    }
    let now = c.now_ms;
    let mut replaced = None;
    let (mut pair, src_hash, dst_hash) = c.shard_pair((src_db, src_key), (dst_db, dst_key));
    // Redis reads the source with lookupKeyRead: it counts as a hit or miss and an access.
    let Some(slot) = pair.src().find_touch(src_key, src_hash, now, c.access()) else {
        drop(pair);
        c.hit(false);
        c.out.int(0);
        return Ok(());
    };
    let copied = match pair.dst().find(dst_key, dst_hash, now) {
        Some(_) if !replace => false,
        existing => {
            if let Some(old) = existing {
                replaced = Some(pair.dst().remove(old));
            }
            duplicate(&mut pair, slot, dst_key, dst_hash, now);
            c.notify_in(dst_db, class::NEW, "new", dst_key);
            c.notify_in(dst_db, class::GENERIC, "copy_to", dst_key);
            true
        }
    };
    drop(pair);
    drop(replaced);
    c.hit(true);
    c.out.int(i64::from(copied));
    Ok(())
}

/// MOVE key db
fn r#move(c: &mut Cmd<'_>) -> Result<()> {
    let key = c.args.key()?;
    let raw = c.args.next_arg()?;
    let dst_db = db_index(c, raw)?;
    let src_db = c.conn.db;
    if src_db == dst_db {
        return Err(Error::Static(error::SAME_OBJECT));
    }
    let now = c.now_ms;
    let mut moved = None;
    let (mut pair, hash, _) = c.shard_pair((src_db, key), (dst_db, key));
    let done = match pair.src().find_touch(key, hash, now, c.access()) {
        Some(slot) if pair.dst().find(key, hash, now).is_none() => {
            moved = Some(transfer(&mut pair, slot, key, hash, now));
            c.notify_in(dst_db, class::NEW, "new", key);
            c.notify_in(src_db, class::GENERIC, "move_from", key);
            c.notify_in(dst_db, class::GENERIC, "move_to", key);
            true
        }
        _ => false,
    };
    drop(pair);
    drop(moved);
    c.out.int(i64::from(done));
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use larder_resp::Frame;

    use crate::testing::*;

    fn stats(h: &Harness) -> (u64, u64) {
        let s = &h.server.stats;
        (s.sum(|t| &t.keyspace_hits), s.sum(|t| &t.keyspace_misses))
    }

    #[test]
    fn table_has_every_command_in_its_redis_group() {
        let r = crate::registry();
        for name in [
            "del",
            "unlink",
            "exists",
            "touch",
            "type",
            "rename",
            "renamenx",
            "copy",
            "move",
            "keys",
            "randomkey",
            "scan",
            "dbsize",
            "flushdb",
            "flushall",
            "select",
            "swapdb",
            "expire",
            "pexpire",
            "expireat",
            "pexpireat",
            "ttl",
            "pttl",
            "expiretime",
            "pexpiretime",
            "persist",
            "object",
        ] {
            assert!(r.top(name.as_bytes()).is_some(), "{name}");
        }
        let (_, object) = r.top(b"object").expect("object");
        assert_eq!(object.subcommands.len(), 5);
        let (_, select) = r.top(b"select").expect("select");
        assert_eq!(select.group.name(), "connection");
        let (_, dbsize) = r.top(b"dbsize").expect("dbsize");
        assert_eq!(dbsize.group.name(), "server");
        let (_, del) = r.top(b"del").expect("del");
        assert_eq!(del.group.name(), "generic");
    }

    #[test]
    fn del_unlink_exists_touch_type() {
        let mut h = Harness::new();
        for k in ["a", "b", "c"] {
            assert_eq!(h.run(&["SET", k, "v"]), ok());
        }
        assert_eq!(h.run(&["EXISTS", "a", "a", "x", "b"]), int(3));
        assert_eq!(h.run(&["TOUCH", "a", "x", "a"]), int(2));
        assert_eq!(h.run(&["TYPE", "a"]), Frame::Simple("string".into()));
        assert_eq!(h.run(&["TYPE", "x"]), Frame::Simple("none".into()));
        assert_eq!(h.run(&["DEL", "a", "a", "x"]), int(1));
        assert_eq!(h.run(&["UNLINK", "b", "c", "b"]), int(2));
        assert_eq!(h.run(&["EXISTS", "a", "b", "c"]), int(0));
        assert_eq!(
            h.run(&["DEL"]),
            err("ERR wrong number of arguments for 'del' command")
        );
        assert_eq!(
            h.run(&["TYPE", "a", "b"]),
            err("ERR wrong number of arguments for 'type' command")
        );
        // DEL under lazyfree-lazy-user-del behaves the same.
        h.server
            .config
            .set_many(&[("lazyfree-lazy-user-del", "yes")])
            .expect("config");
        h.run(&["SET", "a", "v"]);
        assert_eq!(h.run(&["DEL", "a"]), int(1));
    }

    #[test]
    fn hits_and_misses_like_lookup_key_read() {
        let mut h = Harness::new();
        h.run(&["SET", "k", "v"]);
        let cases: &[(&[&str], (u64, u64))] = &[
            (&["EXISTS", "k", "k", "x"], (2, 1)),
            (&["TOUCH", "k", "x"], (1, 1)),
            (&["TYPE", "k"], (1, 0)),
            (&["TYPE", "x"], (0, 1)),
            (&["TTL", "k"], (1, 0)),
            (&["PTTL", "x"], (0, 1)),
            (&["EXPIRETIME", "k"], (1, 0)),
            (&["OBJECT", "ENCODING", "k"], (1, 0)),
            (&["OBJECT", "FREQ", "k"], (1, 0)),
            (&["OBJECT", "IDLETIME", "x"], (0, 1)),
            (&["COPY", "k", "k2"], (1, 0)),
            (&["COPY", "x", "k3"], (0, 1)),
            (&["RENAME", "k2", "k4"], (0, 0)),
            (&["EXPIRE", "k", "100"], (0, 0)),
            (&["PERSIST", "k"], (0, 0)),
            (&["DEL", "k4"], (0, 0)),
            (&["DBSIZE"], (0, 0)),
        ];
        for (argv, want) in cases {
            let before = stats(&h);
            h.run(argv);
            let after = stats(&h);
            assert_eq!((after.0 - before.0, after.1 - before.1), *want, "{argv:?}");
        }
    }

    #[test]
    fn rename_and_renamenx() {
        let mut h = Harness::new();
        assert_eq!(h.run(&["RENAME", "nokey", "x"]), err("ERR no such key"));
        assert_eq!(h.run(&["RENAME", "nokey", "nokey"]), err("ERR no such key"));
        assert_eq!(h.run(&["RENAMENX", "nokey", "x"]), err("ERR no such key"));
        h.run(&["SET", "a", "1"]);
        assert_eq!(h.run(&["RENAME", "a", "a"]), ok());
        assert_eq!(h.run(&["RENAMENX", "a", "a"]), int(0));
        assert_eq!(h.run(&["GET", "a"]), bulk("1"));
        h.run(&["PEXPIRE", "a", "100000"]);
        assert_eq!(h.run(&["RENAME", "a", "b"]), ok());
        assert_eq!(h.run(&["EXISTS", "a"]), int(0));
        assert_eq!(h.run(&["GET", "b"]), bulk("1"));
        let Frame::Integer(ttl) = h.run(&["PTTL", "b"]) else {
            panic!("pttl")
        };
        assert!((99_000..=100_000).contains(&ttl), "{ttl}");
        h.run(&["SET", "c", "2"]);
        assert_eq!(h.run(&["RENAMENX", "b", "c"]), int(0));
        assert_eq!(h.run(&["GET", "b"]), bulk("1"));
        assert_eq!(h.run(&["RENAME", "b", "c"]), ok());
        assert_eq!(h.run(&["GET", "c"]), bulk("1"));
        assert_eq!(h.run(&["TTL", "c"]), int(100));
        assert_eq!(h.run(&["RENAMENX", "c", "d"]), int(1));
        assert_eq!(h.run(&["DBSIZE"]), int(1));
        // Many names, so both the same-shard and the cross-shard paths run.
        for i in 0..600 {
            let (from, to) = (format!("k{i}"), format!("n{i}"));
            h.run(&["SET", &from, &from]);
            h.run(&["SET", &to, "old"]);
            assert_eq!(h.run(&["RENAME", &from, &to]), ok());
            assert_eq!(h.run(&["GET", &to]), bulk(&from));
            assert_eq!(h.run(&["EXISTS", &from]), int(0));
        }
        assert_eq!(h.run(&["DBSIZE"]), int(601));
    }

    #[test]
    fn copy_options_and_errors() {
        let mut h = Harness::new();
        h.run(&["SET", "k", "v"]);
        assert_eq!(
            h.run(&["COPY", "k", "k"]),
            err("ERR source and destination objects are the same")
        );
        assert_eq!(
            h.run(&["COPY", "k", "k", "DB", "0"]),
            err("ERR source and destination objects are the same")
        );
        assert_eq!(
            h.run(&["COPY", "k", "j", "DB", "x"]),
            err("ERR value is not an integer or out of range")
        );
        assert_eq!(
            h.run(&["COPY", "k", "j", "DB", "99"]),
            err("ERR DB index is out of range")
        );
        assert_eq!(
            h.run(&["COPY", "k", "j", "DB", "-1"]),
            err("ERR DB index is out of range")
        );
        assert_eq!(
            h.run(&["COPY", "k", "j", "DB", "99999999999"]),
            err("ERR value is out of range, value must between -2147483648 and 2147483647")
        );
        assert_eq!(h.run(&["COPY", "k", "j", "DB"]), err("ERR syntax error"));
        assert_eq!(h.run(&["COPY", "k", "j", "foo"]), err("ERR syntax error"));
        assert_eq!(h.run(&["COPY", "nokey", "j"]), int(0));
        h.run(&["PEXPIRE", "k", "50000"]);
        assert_eq!(h.run(&["COPY", "k", "j"]), int(1));
        assert_eq!(h.run(&["GET", "j"]), bulk("v"));
        assert_eq!(h.run(&["GET", "k"]), bulk("v"));
        assert_eq!(h.run(&["TTL", "j"]), int(50));
        h.run(&["SET", "k", "w"]);
        assert_eq!(h.run(&["COPY", "k", "j"]), int(0));
        assert_eq!(h.run(&["COPY", "k", "j", "REPLACE", "replace"]), int(1));
        assert_eq!(h.run(&["GET", "j"]), bulk("w"));
        assert_eq!(h.run(&["TTL", "j"]), int(-1));
        assert_eq!(h.run(&["COPY", "k", "k", "db", "1"]), int(1));
        assert_eq!(h.run(&["COPY", "k", "k", "db", "1"]), int(0));
        h.conn.db = 1;
        assert_eq!(h.run(&["GET", "k"]), bulk("w"));
        h.conn.db = 0;
        // Grown strings stay grown; many names cover same-shard and cross-shard copies.
        h.run(&["SET", "g", "ab"]);
        {
            let (mut shard, hash) = crate::testing::shard_for(&h.server, b"g");
            let slot = shard.find(b"g", hash, 0).expect("g");
            shard.update_string(slot, |v| v.push(b'c'));
        }
        assert_eq!(h.run(&["COPY", "g", "g2"]), int(1));
        assert_eq!(h.run(&["GET", "g2"]), bulk("abc"));
        assert_eq!(h.run(&["OBJECT", "ENCODING", "g2"]), bulk("raw"));
        for i in 0..600 {
            let to = format!("c{i}");
            assert_eq!(h.run(&["COPY", "k", &to]), int(1));
            assert_eq!(h.run(&["GET", &to]), bulk("w"));
        }
        assert_eq!(h.run(&["GET", "k"]), bulk("w"));
    }

    #[test]
    fn move_between_databases() {
        let mut h = Harness::new();
        h.run(&["SET", "k", "v"]);
        assert_eq!(
            h.run(&["MOVE", "k", "0"]),
            err("ERR source and destination objects are the same")
        );
        assert_eq!(
            h.run(&["MOVE", "k", "x"]),
            err("ERR value is not an integer or out of range")
        );
        assert_eq!(
            h.run(&["MOVE", "k", "16"]),
            err("ERR DB index is out of range")
        );
        assert_eq!(
            h.run(&["MOVE", "k", "-1"]),
            err("ERR DB index is out of range")
        );
        assert_eq!(
            h.run(&["MOVE", "k", "99999999999"]),
            err("ERR value is out of range, value must between -2147483648 and 2147483647")
        );
        assert_eq!(h.run(&["MOVE", "nokey", "1"]), int(0));
        h.run(&["EXPIRE", "k", "100"]);
        assert_eq!(h.run(&["MOVE", "k", "1"]), int(1));
        assert_eq!(h.run(&["EXISTS", "k"]), int(0));
        h.run(&["SET", "k", "w"]);
        assert_eq!(h.run(&["MOVE", "k", "1"]), int(0));
        assert_eq!(h.run(&["SELECT", "1"]), ok());
        assert_eq!(h.run(&["GET", "k"]), bulk("v"));
        assert_eq!(h.run(&["TTL", "k"]), int(100));
        assert_eq!(h.run(&["MOVE", "k", "0"]), int(0));
    }

    #[test]
    fn concurrent_multi_shard_commands_keep_every_key() {
        let mut setup = Harness::new();
        let server = Arc::clone(&setup.server);
        for i in 0..16 {
            setup.run(&["SET", &format!("k{i}"), "v"]);
        }
        let threads: Vec<_> = (0..4usize)
            .map(|t| {
                let server = Arc::clone(&server);
                std::thread::spawn(move || {
                    let mut c = Harness::connect(server);
                    for n in 0..1500usize {
                        let from = format!("k{}", (n * 7 + t) % 16);
                        let to = format!("k{}", (n * 3 + t * 5 + 1) % 16);
                        match (t, n % 50) {
                            (3, 0) => assert_eq!(c.run(&["SWAPDB", "0", "1"]), ok()),
                            (2 | 3, _) => {
                                c.run(&["SELECT", if n % 2 == 0 { "0" } else { "1" }]);
                                let target = if n % 2 == 0 { "1" } else { "0" };
                                c.run(&["MOVE", &from, target]);
                            }
                            _ => {
                                c.run(&["RENAMENX", &from, &to]);
                            }
                        }
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().expect("worker");
        }
        let ks = &server.keyspace;
        assert_eq!(ks.db(0).len() + ks.db(1).len(), 16);
    }
}
