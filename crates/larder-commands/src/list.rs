//! List commands: LPUSH RPUSH LPUSHX RPUSHX LPOP RPOP LLEN LRANGE LINDEX LSET LREM LTRIM
//! LINSERT, with Redis 7.0 semantics.
//!
//! A list is an `Object::List` holding a [`larder_engine::List`], which implements the list
//! operations; this file parses arguments and shapes replies. Redis never stores an empty
//! list: every command that can empty one deletes the key in the same critical section.

use larder_engine::feed::class;
use larder_engine::{List, Object, Place, Shard, SlotId};
use larder_resp::ReplyBuf;

use crate::args::Args;
use crate::error::{self, Error, Result};
use crate::exec::Cmd;
use crate::table::{flags::*, CommandSpec, Group, KeySpec};

/// LSET's index past either end.
const INDEX_OUT_OF_RANGE: &str = "ERR index out of range";

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
        Group::List,
        summary,
        since,
        handler,
    )
}

/// The list family's table. Arity, flags, key positions, summaries and versions are those of
/// Redis 7.0's COMMAND INFO / COMMAND DOCS.
#[rustfmt::skip]
pub static COMMANDS: &[CommandSpec] = &[
    cmd("lpush", -3, WRITE | DENYOOM | FAST, "Prepend one or multiple elements to a list", "1.0.0", lpush),
    cmd("rpush", -3, WRITE | DENYOOM | FAST, "Append one or multiple elements to a list", "1.0.0", rpush),
    cmd("lpushx", -3, WRITE | DENYOOM | FAST, "Prepend an element to a list, only if the list exists", "2.2.0", lpushx),
    cmd("rpushx", -3, WRITE | DENYOOM | FAST, "Append an element to a list, only if the list exists", "2.2.0", rpushx),
    cmd("lpop", -2, WRITE | FAST, "Remove and get the first elements in a list", "1.0.0", lpop),
    cmd("rpop", -2, WRITE | FAST, "Remove and get the last elements in a list", "1.0.0", rpop),
    cmd("llen", 2, READONLY | FAST, "Get the length of a list", "1.0.0", llen),
    cmd("lrange", 4, READONLY, "Get a range of elements from a list", "1.0.0", lrange),
    cmd("lindex", 3, READONLY, "Get an element from a list by its index", "1.0.0", lindex),
    cmd("lset", 4, WRITE | DENYOOM, "Set the value of an element in a list by its index", "1.0.0", lset),
    cmd("lrem", 4, WRITE, "Remove elements from a list", "1.0.0", lrem),
    cmd("ltrim", 4, WRITE, "Trim a list to the specified range", "1.0.0", ltrim),
    cmd("linsert", 5, WRITE | DENYOOM, "Insert an element before or after another element in a list", "2.2.0", linsert),
];

/// Which end of the list a command works on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum End {
    Head,
    Tail,
}

/// Whether a push may create the list (LPUSH) or needs it to exist (LPUSHX).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Create {
    Yes,
    IfExists,
}

/// The list held in `slot`, or WRONGTYPE.
fn list_at(shard: &Shard, slot: SlotId) -> Result<&List> {
    match shard.entry(slot).object() {
        Some(Object::List(l)) => Ok(l),
        _ => Err(Error::Static(error::WRONGTYPE)),
    }
}

/// Find `key` as a list: `None` when absent, WRONGTYPE when it holds another type.
fn find_list(c: &Cmd<'_>, shard: &mut Shard, key: &[u8], hash: u64) -> Result<Option<SlotId>> {
    match shard.find_touch(key, hash, c.now_ms, c.access()) {
        Some(slot) => list_at(shard, slot).map(|_| Some(slot)),
        None => Ok(None),
    }
}

/// Modify the list in `slot` through `f` (a write: new version, memory re-accounted). The
/// caller then [`settle`]s the key.
fn update<R>(shard: &mut Shard, slot: SlotId, f: impl FnOnce(&mut List) -> R) -> Result<R> {
    list_at(shard, slot)?;
    shard
        .object_mut(slot, |o| match o {
            Object::List(l) => Some(f(l)),
            _ => None,
        })
        .ok_or(Error::Static(error::WRONGTYPE))
}

/// After a write to the list at `slot`: raise the command's `event` (none when it changed
/// nothing), then delete the key if the list is left empty, raising `del`, in Redis's order.
fn settle(c: &Cmd<'_>, shard: &mut Shard, key: &[u8], slot: SlotId, event: Option<&'static str>) {
    if let Some(event) = event {
        c.notify(class::LIST, event, key);
    }
    if matches!(shard.entry(slot).object(), Some(Object::List(l)) if l.is_empty()) {
        shard.remove(slot);
        c.notify(class::GENERIC, "del", key);
    }
}

/// LPUSH key element [element ...]
fn lpush(c: &mut Cmd<'_>) -> Result<()> {
    push(c, End::Head, Create::Yes)
}

/// RPUSH key element [element ...]
fn rpush(c: &mut Cmd<'_>) -> Result<()> {
    push(c, End::Tail, Create::Yes)
}

/// LPUSHX key element [element ...]
fn lpushx(c: &mut Cmd<'_>) -> Result<()> {
    push(c, End::Head, Create::IfExists)
}

/// RPUSHX key element [element ...]
fn rpushx(c: &mut Cmd<'_>) -> Result<()> {
    push(c, End::Tail, Create::IfExists)
}

fn push(c: &mut Cmd<'_>, end: End, create: Create) -> Result<()> {
    let key = c.args.key()?;
    let elements = c.args.rest();
    let add = |l: &mut List| match end {
        End::Head => l.push_front(elements),
        End::Tail => l.push_back(elements),
    };
    // LPUSHX and RPUSHX raise `lpush` and `rpush`, as in Redis.
    let event = match end {
        End::Head => "lpush",
        End::Tail => "rpush",
    };
    let (mut shard, hash) = c.shard_of(key);
    let len = match find_list(c, &mut shard, key, hash)? {
        Some(slot) => {
            let len = update(&mut shard, slot, add)?;
            settle(c, &mut shard, key, slot, Some(event));
            len
        }
        None if create == Create::Yes => {
            let mut l = List::new();
            let len = add(&mut l);
            let slot = shard.insert_object(key, hash, Object::List(l), 0, c.now_ms);
            c.notify(class::NEW, "new", key);
            settle(c, &mut shard, key, slot, Some(event));
            len
        }
        None => 0,
    };
    drop(shard);
    c.out.int(len as i64);
    Ok(())
}

/// LPOP key [count]
fn lpop(c: &mut Cmd<'_>) -> Result<()> {
    pop(c, End::Head)
}

/// RPOP key [count]
fn rpop(c: &mut Cmd<'_>) -> Result<()> {
    pop(c, End::Tail)
}

fn pop(c: &mut Cmd<'_>, end: End) -> Result<()> {
    let key = c.args.key()?;
    if c.args.remaining() > 1 {
        return Err(error::wrong_arity(c.resolved.full_name));
    }
    let count = match c.args.opt() {
        Some(raw) => Some(
            crate::args::parse_i64(raw)
                .filter(|&n| n >= 0)
                .ok_or(Error::Static(error::NEGATIVE_COUNT))? as usize,
        ),
        None => None,
    };
    let (mut shard, hash) = c.shard_of(key);
    let Some(slot) = find_list(c, &mut shard, key, hash)? else {
        match count {
            Some(_) => c.out.null_array(),
            None => c.out.null(),
        }
        return Ok(());
    };
    let take = |l: &mut List| match end {
        End::Head => l.pop_front(),
        End::Tail => l.pop_back(),
    };
    let event = match end {
        End::Head => "lpop",
        End::Tail => "rpop",
    };
    match count {
        None => {
            let e = update(&mut shard, slot, take)?;
            match e {
                Some(e) => c.out.bulk(&e),
                None => c.out.null(),
            }
        }
        // A count of 0 pops nothing and raises nothing.
        Some(0) => {
            c.out.array(0);
            return Ok(());
        }
        Some(n) => {
            let out = &mut *c.out;
            update(&mut shard, slot, |l| match end {
                End::Head => reply_popped(out, l.pop_front_many(n)),
                End::Tail => reply_popped(out, l.pop_back_many(n)),
            })?;
        }
    }
    settle(c, &mut shard, key, slot, Some(event));
    Ok(())
}

/// The reply to LPOP / RPOP with a count: the popped elements, in the order they left.
fn reply_popped(out: &mut ReplyBuf, popped: impl ExactSizeIterator<Item = Box<[u8]>>) {
    out.array(popped.len());
    for e in popped {
        out.bulk(&e);
    }
}

/// LLEN key
fn llen(c: &mut Cmd<'_>) -> Result<()> {
    let key = c.args.key()?;
    let (mut shard, hash) = c.shard_of(key);
    let found = shard.find_touch(key, hash, c.now_ms, c.access());
    c.hit(found.is_some());
    let len = match found {
        Some(slot) => list_at(&shard, slot)?.len(),
        None => 0,
    };
    drop(shard);
    c.out.int(len as i64);
    Ok(())
}

/// LRANGE key start stop
fn lrange(c: &mut Cmd<'_>) -> Result<()> {
    let key = c.args.key()?;
    let start = c.args.i64()?;
    let stop = c.args.i64()?;
    let (mut shard, hash) = c.shard_of(key);
    let found = shard.find_touch(key, hash, c.now_ms, c.access());
    c.hit(found.is_some());
    let Some(slot) = found else {
        c.out.array(0);
        return Ok(());
    };
    let elements = list_at(&shard, slot)?.range(start, stop);
    c.out.array(elements.len());
    for e in elements {
        c.out.bulk(e);
    }
    Ok(())
}

/// LINDEX key index
fn lindex(c: &mut Cmd<'_>) -> Result<()> {
    let key = c.args.key()?;
    let raw_index = c.args.next_arg()?;
    let (mut shard, hash) = c.shard_of(key);
    let found = shard.find_touch(key, hash, c.now_ms, c.access());
    c.hit(found.is_some());
    let Some(slot) = found else {
        c.out.null();
        return Ok(());
    };
    // Redis looks the key up before it parses the index.
    let l = list_at(&shard, slot)?;
    let index = index_arg(raw_index)?;
    match l.get(index) {
        Some(e) => c.out.bulk(e),
        None => c.out.null(),
    }
    Ok(())
}

fn index_arg(raw: &[u8]) -> Result<i64> {
    crate::args::parse_i64(raw).ok_or(Error::Static(error::NOT_INTEGER))
}

/// LSET key index element
fn lset(c: &mut Cmd<'_>) -> Result<()> {
    let key = c.args.key()?;
    let raw_index = c.args.next_arg()?;
    let element = c.args.next_arg()?;
    let (mut shard, hash) = c.shard_of(key);
    let slot = find_list(c, &mut shard, key, hash)?.ok_or(Error::Static(error::NO_SUCH_KEY))?;
    // Redis looks the key up before it parses the index.
    let index = index_arg(raw_index)?;
    if list_at(&shard, slot)?.position(index).is_none() {
        return Err(Error::Static(INDEX_OUT_OF_RANGE));
    }
    update(&mut shard, slot, |l| l.set(index, element))?;
    settle(c, &mut shard, key, slot, Some("lset"));
    drop(shard);
    c.out.simple("OK");
    Ok(())
}

/// LREM key count element
fn lrem(c: &mut Cmd<'_>) -> Result<()> {
    let key = c.args.key()?;
    let count = c.args.i64()?;
    let element = c.args.next_arg()?;
    let (mut shard, hash) = c.shard_of(key);
    let removed = match find_list(c, &mut shard, key, hash)? {
        Some(slot) => {
            let removed = update(&mut shard, slot, |l| l.remove_matching(count, element))?;
            settle(c, &mut shard, key, slot, (removed > 0).then_some("lrem"));
            removed
        }
        None => 0,
    };
    drop(shard);
    c.out.int(removed as i64);
    Ok(())
}

/// LTRIM key start stop
fn ltrim(c: &mut Cmd<'_>) -> Result<()> {
    let key = c.args.key()?;
    let start = c.args.i64()?;
    let stop = c.args.i64()?;
    let (mut shard, hash) = c.shard_of(key);
    if let Some(slot) = find_list(c, &mut shard, key, hash)? {
        update(&mut shard, slot, |l| l.trim(start, stop))?;
        // Raised even when the range keeps every element, as in Redis.
        settle(c, &mut shard, key, slot, Some("ltrim"));
    }
    drop(shard);
    c.out.simple("OK");
    Ok(())
}

/// LINSERT key BEFORE|AFTER pivot element
fn linsert(c: &mut Cmd<'_>) -> Result<()> {
    let key = c.args.key()?;
    let place = where_arg(&mut c.args)?;
    let pivot = c.args.next_arg()?;
    let element = c.args.next_arg()?;
    let (mut shard, hash) = c.shard_of(key);
    let len = match find_list(c, &mut shard, key, hash)? {
        // The pivot is looked for before the write, so that a missing pivot is no write.
        Some(slot) => match list_at(&shard, slot)?.find(pivot) {
            Some(i) => {
                let len = update(&mut shard, slot, |l| l.insert(i, place, element))?;
                if len.is_some() {
                    settle(c, &mut shard, key, slot, Some("linsert"));
                }
                len.map_or(-1, |len| len as i64)
            }
            None => -1,
        },
        None => 0,
    };
    drop(shard);
    c.out.int(len);
    Ok(())
}

/// BEFORE or AFTER.
fn where_arg(args: &mut Args<'_>) -> Result<Place> {
    if args.eat("AFTER") {
        Ok(Place::After)
    } else if args.eat("BEFORE") {
        Ok(Place::Before)
    } else {
        Err(Error::Static(error::SYNTAX))
    }
}

#[cfg(test)]
mod tests {
    use larder_resp::{Frame, Protocol};

    use crate::testing::*;

    const WRONGTYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";

    fn arr(items: &[&str]) -> Frame {
        Frame::Array(items.iter().map(|s| bulk(s)).collect())
    }

    fn range(h: &mut Harness, key: &str) -> Frame {
        h.run(&["LRANGE", key, "0", "-1"])
    }

    #[test]
    fn push_and_range() {
        let mut h = Harness::new();
        assert_eq!(h.run(&["RPUSH", "l", "a", "b"]), int(2));
        assert_eq!(h.run(&["LPUSH", "l", "x", "y"]), int(4));
        assert_eq!(range(&mut h, "l"), arr(&["y", "x", "a", "b"]));
        assert_eq!(h.run(&["LPUSHX", "l", "z"]), int(5));
        assert_eq!(h.run(&["RPUSHX", "l", "w", "v"]), int(7));
        assert_eq!(h.run(&["LPUSHX", "none", "z"]), int(0));
        assert_eq!(h.run(&["RPUSHX", "none", "z"]), int(0));
        assert_eq!(h.run(&["EXISTS", "none"]), int(0));
        assert_eq!(h.run(&["TYPE", "l"]), Frame::Simple("list".into()));
        assert_eq!(h.run(&["LLEN", "l"]), int(7));
        assert_eq!(h.run(&["LLEN", "none"]), int(0));
        assert_eq!(h.run(&["OBJECT", "ENCODING", "l"]), bulk("quicklist"));
        assert_eq!(
            h.run(&["LPUSH", "l"]),
            err("ERR wrong number of arguments for 'lpush' command")
        );
    }

    #[test]
    fn lrange_indexes() {
        let mut h = Harness::new();
        h.run(&["RPUSH", "l", "0", "1", "2", "3", "4"]);
        assert_eq!(h.run(&["LRANGE", "l", "1", "2"]), arr(&["1", "2"]));
        assert_eq!(h.run(&["LRANGE", "l", "-2", "-1"]), arr(&["3", "4"]));
        assert_eq!(h.run(&["LRANGE", "l", "-100", "1"]), arr(&["0", "1"]));
        assert_eq!(h.run(&["LRANGE", "l", "3", "100"]), arr(&["3", "4"]));
        assert_eq!(h.run(&["LRANGE", "l", "3", "1"]), arr(&[]));
        assert_eq!(h.run(&["LRANGE", "l", "5", "10"]), arr(&[]));
        assert_eq!(h.run(&["LRANGE", "l", "0", "-6"]), arr(&[]));
        assert_eq!(
            h.run(&["LRANGE", "l", "-9223372036854775808", "9223372036854775807"]),
            arr(&["0", "1", "2", "3", "4"])
        );
        assert_eq!(h.run(&["LRANGE", "none", "0", "-1"]), arr(&[]));
        assert_eq!(
            h.run(&["LRANGE", "l", "a", "1"]),
            err("ERR value is not an integer or out of range")
        );
    }

    #[test]
    fn pops() {
        let mut h = Harness::new();
        h.run(&["RPUSH", "l", "a", "b", "c", "d"]);
        assert_eq!(h.run(&["LPOP", "l"]), bulk("a"));
        assert_eq!(h.run(&["RPOP", "l"]), bulk("d"));
        assert_eq!(h.run(&["LPOP", "l", "0"]), arr(&[]));
        assert_eq!(h.run(&["RPOP", "l", "5"]), arr(&["c", "b"]));
        assert_eq!(h.run(&["EXISTS", "l"]), int(0));
        assert_eq!(h.run(&["LPOP", "l"]), Frame::Null);
        assert_eq!(h.run_raw(&[b"LPOP", b"l"]), b"$-1\r\n");
        assert_eq!(h.run_raw(&[b"LPOP", b"l", b"2"]), b"*-1\r\n");
        assert_eq!(h.run_raw(&[b"RPOP", b"l", b"0"]), b"*-1\r\n");
        h.run(&["RPUSH", "l", "a", "b", "c"]);
        assert_eq!(h.run(&["LPOP", "l", "2"]), arr(&["a", "b"]));
        assert_eq!(h.run(&["RPOP", "l", "1"]), arr(&["c"]));
        assert_eq!(h.run(&["EXISTS", "l"]), int(0));
        for bad in ["-1", "x", "1.5"] {
            assert_eq!(
                h.run(&["LPOP", "l", bad]),
                err("ERR value is out of range, must be positive")
            );
        }
        assert_eq!(
            h.run(&["LPOP", "l", "1", "2"]),
            err("ERR wrong number of arguments for 'lpop' command")
        );
        h.out.proto = Protocol::Resp3;
        assert_eq!(h.run_raw(&[b"LPOP", b"l"]), b"_\r\n");
        assert_eq!(h.run_raw(&[b"RPOP", b"l", b"3"]), b"_\r\n");
        h.run(&["RPUSH", "l", "a"]);
        assert_eq!(h.run_raw(&[b"RPOP", b"l", b"0"]), b"*0\r\n");
    }

    #[test]
    fn lindex_and_lset() {
        let mut h = Harness::new();
        h.run(&["RPUSH", "l", "a", "b", "c"]);
        assert_eq!(h.run(&["LINDEX", "l", "0"]), bulk("a"));
        assert_eq!(h.run(&["LINDEX", "l", "-1"]), bulk("c"));
        assert_eq!(h.run(&["LINDEX", "l", "3"]), Frame::Null);
        assert_eq!(h.run(&["LINDEX", "l", "-4"]), Frame::Null);
        assert_eq!(h.run(&["LINDEX", "none", "x"]), Frame::Null);
        assert_eq!(
            h.run(&["LINDEX", "l", "x"]),
            err("ERR value is not an integer or out of range")
        );
        assert_eq!(h.run(&["LSET", "l", "1", "B"]), ok());
        assert_eq!(h.run(&["LSET", "l", "-1", "C"]), ok());
        assert_eq!(range(&mut h, "l"), arr(&["a", "B", "C"]));
        assert_eq!(
            h.run(&["LSET", "l", "3", "x"]),
            err("ERR index out of range")
        );
        assert_eq!(
            h.run(&["LSET", "l", "-4", "x"]),
            err("ERR index out of range")
        );
        assert_eq!(h.run(&["LSET", "none", "x", "v"]), err("ERR no such key"));
        assert_eq!(
            h.run(&["LSET", "l", "x", "v"]),
            err("ERR value is not an integer or out of range")
        );
    }

    #[test]
    fn lrem_counts() {
        let mut h = Harness::new();
        let fill = |h: &mut Harness| {
            h.run(&["DEL", "l"]);
            h.run(&["RPUSH", "l", "a", "x", "b", "x", "c", "x"]);
        };
        fill(&mut h);
        assert_eq!(h.run(&["LREM", "l", "2", "x"]), int(2));
        assert_eq!(range(&mut h, "l"), arr(&["a", "b", "c", "x"]));
        fill(&mut h);
        assert_eq!(h.run(&["LREM", "l", "-2", "x"]), int(2));
        assert_eq!(range(&mut h, "l"), arr(&["a", "x", "b", "c"]));
        fill(&mut h);
        assert_eq!(h.run(&["LREM", "l", "0", "x"]), int(3));
        assert_eq!(range(&mut h, "l"), arr(&["a", "b", "c"]));
        assert_eq!(h.run(&["LREM", "l", "0", "zz"]), int(0));
        assert_eq!(h.run(&["LREM", "none", "0", "x"]), int(0));
        h.run(&["RPUSH", "one", "x", "x"]);
        assert_eq!(h.run(&["LREM", "one", "-9223372036854775808", "x"]), int(2));
        assert_eq!(h.run(&["EXISTS", "one"]), int(0));
        assert_eq!(
            h.run(&["LREM", "l", "a", "x"]),
            err("ERR value is not an integer or out of range")
        );
    }

    #[test]
    fn ltrim_ranges() {
        let mut h = Harness::new();
        h.run(&["RPUSH", "l", "0", "1", "2", "3", "4"]);
        assert_eq!(h.run(&["LTRIM", "l", "1", "-2"]), ok());
        assert_eq!(range(&mut h, "l"), arr(&["1", "2", "3"]));
        assert_eq!(h.run(&["LTRIM", "l", "-100", "100"]), ok());
        assert_eq!(range(&mut h, "l"), arr(&["1", "2", "3"]));
        assert_eq!(h.run(&["LTRIM", "l", "2", "1"]), ok());
        assert_eq!(h.run(&["EXISTS", "l"]), int(0));
        assert_eq!(h.run(&["LTRIM", "none", "0", "1"]), ok());
        assert_eq!(h.run(&["EXISTS", "none"]), int(0));
        assert_eq!(
            h.run(&["LTRIM", "l", "0", "x"]),
            err("ERR value is not an integer or out of range")
        );
    }

    #[test]
    fn linsert_positions() {
        let mut h = Harness::new();
        h.run(&["RPUSH", "l", "a", "c"]);
        assert_eq!(h.run(&["LINSERT", "l", "before", "c", "b"]), int(3));
        assert_eq!(h.run(&["LINSERT", "l", "AFTER", "c", "d"]), int(4));
        assert_eq!(h.run(&["LINSERT", "l", "BEFORE", "a", "0"]), int(5));
        assert_eq!(range(&mut h, "l"), arr(&["0", "a", "b", "c", "d"]));
        assert_eq!(h.run(&["LINSERT", "l", "AFTER", "zz", "x"]), int(-1));
        assert_eq!(h.run(&["LINSERT", "none", "AFTER", "a", "x"]), int(0));
        assert_eq!(h.run(&["EXISTS", "none"]), int(0));
        assert_eq!(
            h.run(&["LINSERT", "none", "MIDDLE", "a", "x"]),
            err("ERR syntax error")
        );
    }

    #[test]
    fn wrong_types() {
        let mut h = Harness::new();
        h.run(&["SET", "s", "v"]);
        h.run(&["RPUSH", "l", "a"]);
        for argv in [
            &["LPUSH", "s", "x"][..],
            &["RPUSHX", "s", "x"],
            &["LPOP", "s"],
            &["RPOP", "s", "0"],
            &["LLEN", "s"],
            &["LRANGE", "s", "0", "1"],
            &["LINDEX", "s", "x"],
            &["LSET", "s", "x", "v"],
            &["LREM", "s", "0", "v"],
            &["LTRIM", "s", "0", "1"],
            &["LINSERT", "s", "BEFORE", "a", "b"],
            // String commands on a list.
            &["GET", "l"],
            &["APPEND", "l", "x"],
            &["INCR", "l"],
            &["STRLEN", "l"],
            &["GETRANGE", "l", "0", "1"],
            &["SETRANGE", "l", "0", "x"],
            &["GETSET", "l", "x"],
        ] {
            assert_eq!(h.run(argv), err(WRONGTYPE), "{argv:?}");
        }
        // Argument errors come first where Redis parses first.
        assert_eq!(
            h.run(&["LPOP", "s", "-1"]),
            err("ERR value is out of range, must be positive")
        );
        assert_eq!(range(&mut h, "l"), arr(&["a"]));
        assert_eq!(h.run(&["SET", "l", "v"]), ok());
        assert_eq!(h.run(&["GET", "l"]), bulk("v"));
        assert_eq!(h.run(&["MGET", "l", "s"]), arr(&["v", "v"]));
    }

    #[test]
    fn copy_rename_and_expiry_keep_lists() {
        let mut h = Harness::new();
        h.run(&["RPUSH", "l", "a", "b"]);
        assert_eq!(h.run(&["COPY", "l", "c"]), int(1));
        assert_eq!(h.run(&["RPUSH", "c", "z"]), int(3));
        assert_eq!(range(&mut h, "l"), arr(&["a", "b"]));
        assert_eq!(h.run(&["RENAME", "c", "d"]), ok());
        assert_eq!(range(&mut h, "d"), arr(&["a", "b", "z"]));
        assert_eq!(h.run(&["EXPIRE", "d", "100"]), int(1));
        assert_eq!(h.run(&["LPUSH", "d", "y"]), int(4));
        assert_eq!(h.run(&["LPOP", "d"]), bulk("y"));
        assert!(matches!(h.run(&["TTL", "d"]), Frame::Integer(t) if t > 90));
    }

    #[test]
    fn hits_and_binary_elements() {
        let mut h = Harness::new();
        let s = std::sync::Arc::clone(&h.server);
        let hits = || {
            (
                s.stats.sum(|t| &t.keyspace_hits),
                s.stats.sum(|t| &t.keyspace_misses),
            )
        };
        h.run_bytes(&[b"RPUSH", b"b", b"\x00\xff\r\n", b""]);
        assert_eq!(hits(), (0, 0));
        assert_eq!(
            h.run_bytes(&[b"LRANGE", b"b", b"0", b"-1"]),
            Frame::Array(vec![Frame::Bulk(b"\x00\xff\r\n".to_vec()), bulk("")])
        );
        h.run(&["LLEN", "none"]);
        h.run(&["LINDEX", "b", "0"]);
        assert_eq!(hits(), (2, 1));
    }

    #[test]
    fn table_is_complete() {
        for spec in super::COMMANDS {
            assert_eq!(spec.group.name(), "list");
            assert_eq!(spec.group.acl_category(), "@list");
        }
        assert_eq!(super::COMMANDS.len(), 13);
    }
}
