//! Multi-key commands: MGET, MSET, MSETNX. Each locks all its keys' shards together, so
//! an MSET is seen entirely or not at all.

use larder_engine::Shard;

use super::{count_hits, notify_set, store, Condition, Expiry, Value};
use crate::error::{self, Result};
use crate::exec::Cmd;

/// MGET key [key ...]
///
/// All the keys' shards are locked together so that MGET sees an MSET entirely or not at all.
pub(super) fn mget(c: &mut Cmd<'_>) -> Result<()> {
    let keys = c.args.rest();
    let (mut hits, mut misses) = (0, 0);
    c.out.array(keys.len());
    // Every key's shard is held by the executor (prefetched before it locked them), so MGET
    // sees an MSET entirely or not at all.
    for key in keys {
        let (mut shard, hash) = c.shard_of(key);
        reply_string_or_null(&mut shard, key, hash, c, &mut hits, &mut misses);
    }
    count_hits(c, hits, misses);
    Ok(())
}

/// One MGET element: the string, or null for a missing key or another type.
#[inline]
fn reply_string_or_null(
    shard: &mut Shard,
    key: &[u8],
    hash: u64,
    c: &mut Cmd<'_>,
    hits: &mut u64,
    misses: &mut u64,
) {
    match shard.find_touch(key, hash, c.now_ms, c.access()) {
        Some(slot) => {
            *hits += 1;
            // Another type is a nil in MGET's reply, not an error.
            if super::reply_string(c.out, shard.entry(slot)).is_err() {
                c.out.null();
            }
        }
        None => {
            *misses += 1;
            c.out.null();
        }
    }
}

/// MSET key value [key value ...]
pub(super) fn mset(c: &mut Cmd<'_>) -> Result<()> {
    mset_generic(c, Condition::Always)
}

/// MSETNX key value [key value ...]
pub(super) fn msetnx(c: &mut Cmd<'_>) -> Result<()> {
    mset_generic(c, Condition::IfAbsent)
}

/// MSET and MSETNX: every involved shard is locked before the first write, so no reader sees
/// part of the update.
fn mset_generic(c: &mut Cmd<'_>, cond: Condition) -> Result<()> {
    let pairs = c.args.rest();
    if pairs.len() % 2 != 0 {
        return Err(error::wrong_arity(c.resolved.full_name));
    }
    // Every key's shard is held by the executor before the first write, so no reader sees
    // part of the update.
    if cond == Condition::IfAbsent {
        for key in pairs.iter().step_by(2) {
            let (mut shard, hash) = c.shard_of(key);
            if shard.find_touch(key, hash, c.now_ms, c.access()).is_some() {
                drop(shard);
                c.out.int(0);
                return Ok(());
            }
        }
    }
    for pair in pairs.chunks_exact(2) {
        let [key, value] = pair else { continue };
        let (mut shard, hash) = c.shard_of(key);
        let found = shard.find(key, hash, c.now_ms);
        let value = Value::of(c, value);
        store(c, &mut shard, key, hash, found, value, Expiry::Clear);
        notify_set(c, key, Expiry::Clear);
    }
    match cond {
        Condition::IfAbsent => c.out.int(1),
        Condition::Always | Condition::IfPresent => c.out.simple("OK"),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use larder_resp::{Frame, Protocol};

    use crate::string::tests::ttl_ms;
    use crate::testing::*;

    fn null() -> Frame {
        Frame::Null
    }

    fn arr(items: Vec<Frame>) -> Frame {
        Frame::Array(items)
    }

    #[test]
    fn mget_of_more_keys_than_it_prefetches() {
        let mut h = Harness::new();
        let keys: Vec<String> = (0..300).map(|i| format!("k{i}")).collect();
        for k in keys.iter().step_by(2) {
            assert_eq!(h.run(&["SET", k, k]), ok());
        }
        let mut argv = vec!["MGET"];
        argv.extend(keys.iter().map(String::as_str));
        let want = keys
            .iter()
            .enumerate()
            .map(|(i, k)| if i % 2 == 0 { bulk(k) } else { null() })
            .collect();
        assert_eq!(h.run(&argv), arr(want));
    }

    #[test]
    fn mget_mset_msetnx() {
        let mut h = Harness::new();
        assert_eq!(h.run(&["MSET", "a", "1", "b", "2", "c", "3"]), ok());
        assert_eq!(
            h.run(&["MGET", "a", "b", "nope", "c", "a"]),
            arr(vec![bulk("1"), bulk("2"), null(), bulk("3"), bulk("1")])
        );
        assert_eq!(h.run(&["MGET", "a"]), arr(vec![bulk("1")]));
        assert_eq!(h.run(&["MGET", "nope"]), arr(vec![null()]));
        // The last value of a repeated key wins.
        assert_eq!(h.run(&["MSET", "d", "1", "d", "2"]), ok());
        assert_eq!(h.run(&["GET", "d"]), bulk("2"));
        // MSET clears TTLs.
        assert_eq!(h.run(&["SETEX", "a", "100", "x"]), ok());
        assert_eq!(h.run(&["MSET", "a", "y"]), ok());
        assert_eq!(ttl_ms(&mut h, "a"), None);
        assert_eq!(h.run(&["MSETNX", "x", "1", "a", "2"]), int(0));
        assert_eq!(h.run(&["GET", "x"]), null());
        assert_eq!(h.run(&["MSETNX", "x", "1", "y", "2"]), int(1));
        assert_eq!(h.run(&["MGET", "x", "y"]), arr(vec![bulk("1"), bulk("2")]));
        for (argv, want) in [
            (
                &["MSET", "a"][..],
                "ERR wrong number of arguments for 'mset' command",
            ),
            (
                &["MSET", "a", "1", "b"],
                "ERR wrong number of arguments for 'mset' command",
            ),
            (
                &["MSETNX", "a", "1", "b"],
                "ERR wrong number of arguments for 'msetnx' command",
            ),
            (
                &["MGET"],
                "ERR wrong number of arguments for 'mget' command",
            ),
        ] {
            assert_eq!(h.run(argv), err(want), "{argv:?}");
        }
        assert_eq!(h.run(&["GET", "b"]), bulk("2"));
        h.out.proto = Protocol::Resp3;
        assert_eq!(
            h.run_raw(&[b"MGET", b"a", b"zz"]),
            b"*2\r\n$1\r\ny\r\n_\r\n"
        );
    }

    #[test]
    fn mset_many_keys_across_shards() {
        let mut h = Harness::new();
        let keys: Vec<String> = (0..600).map(|i| format!("key:{i}")).collect();
        let mut argv = vec!["MSET"];
        for k in &keys {
            argv.push(k);
            argv.push(k);
        }
        assert_eq!(h.run(&argv), ok());
        let mut mget = vec!["MGET"];
        mget.extend(keys.iter().map(String::as_str));
        let want: Vec<_> = keys.iter().map(|k| bulk(k)).collect();
        assert_eq!(h.run(&mget), arr(want));
        argv[0] = "MSETNX";
        assert_eq!(h.run(&argv), int(0));
        assert_eq!(h.server.keyspace.db(0).len(), 600);
    }

    #[test]
    fn commands_use_the_selected_db() {
        let mut h = Harness::new();
        h.conn.db = 3;
        assert_eq!(h.run(&["MSET", "a", "1", "b", "2"]), ok());
        assert_eq!(h.run(&["SET", "c", "3"]), ok());
        assert_eq!(h.server.keyspace.db(3).len(), 3);
        assert_eq!(h.server.keyspace.db(0).len(), 0);
        h.conn.db = 0;
        assert_eq!(
            h.run(&["MGET", "a", "b", "c"]),
            arr(vec![null(), null(), null()])
        );
    }
}
