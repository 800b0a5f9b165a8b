//! DUMP and RESTORE: a value in Redis 7.0's serialization format (RDB version 10 with its
//! CRC-64), so values move between larder and Redis. The format itself lives in
//! `larder_persist::rdb`; this file parses arguments, applies RESTORE's options and shapes
//! replies.

use larder_engine::feed::class;
use larder_engine::{Shard, SlotId};
use larder_persist::rdb::{self, Value, ValueRef};

use crate::args::parse_i64;
use crate::error::{self, Error, Result};
use crate::exec::Cmd;

const BUSYKEY: &str = "BUSYKEY Target key name already exists.";
const INVALID_TTL: &str = "ERR Invalid TTL value, must be >= 0";
const INVALID_IDLETIME: &str = "ERR Invalid IDLETIME value, must be >= 0";
const INVALID_FREQ: &str = "ERR Invalid FREQ value, must be >= 0 and <= 255";
const BAD_VERSION_OR_CHECKSUM: &str = "ERR DUMP payload version or checksum are wrong";
const BAD_DATA: &str = "ERR Bad data format";

/// DUMP key: the payload, or null for a missing key. A read: it counts as a hit or a miss
/// and as an access.
pub(super) fn dump(c: &mut Cmd<'_>) -> Result<()> {
    let key = c.args.key()?;
    let limits = c.limits();
    let (mut shard, hash) = c.shard_of(key);
    let payload = shard
        .find_touch(key, hash, c.now_ms, c.access())
        .map(|slot| payload_of(&shard, slot, &limits));
    drop(shard);
    c.hit(payload.is_some());
    match payload {
        Some(Ok(p)) => c.out.bulk(&p),
        // Every type larder holds has a serialization.
        Some(Err(_)) => return Err(Error::Static(BAD_DATA)),
        None => c.out.null(),
    }
    Ok(())
}

fn payload_of(
    shard: &Shard,
    slot: SlotId,
    limits: &larder_engine::Limits,
) -> std::result::Result<Vec<u8>, rdb::Error> {
    let e = shard.entry(slot);
    let value = match e.object() {
        Some(o) => ValueRef::Object(o),
        None => ValueRef::String(e.string().unwrap_or_default()),
    };
    rdb::dump(value, limits)
}

/// How RESTORE sets the new key's access record: by idle time (LRU policies) or by LFU
/// counter (LFU policies); the other is accepted and ignored, as in Redis.
#[derive(Clone, Copy)]
enum Access {
    Default,
    IdleSeconds(u64),
    Freq(u8),
}

/// RESTORE key ttl serialized-value [REPLACE] [ABSTTL] [IDLETIME seconds] [FREQ frequency]
///
/// Checks run in Redis's order: options, then an existing key (BUSYKEY without REPLACE),
/// then the TTL, then the payload. The payload is decoded before the key's shard is locked;
/// its error, if any, is reported in its turn.
pub(super) fn restore(c: &mut Cmd<'_>) -> Result<()> {
    let key = c.args.key()?;
    let ttl_raw = c.args.next_arg()?;
    let payload = c.args.next_arg()?;
    let mut replace = false;
    let mut absttl = false;
    let mut access = Access::Default;
    while let Some(opt) = c.args.opt() {
        let has_value = c.args.remaining() >= 1;
        if opt.eq_ignore_ascii_case(b"replace") {
            replace = true;
        } else if opt.eq_ignore_ascii_case(b"absttl") {
            absttl = true;
        } else if opt.eq_ignore_ascii_case(b"idletime")
            && has_value
            && !matches!(access, Access::Freq(_))
        {
            let v = parse_i64(c.args.next_arg()?).ok_or(Error::Static(error::NOT_INTEGER))?;
            let idle = u64::try_from(v).map_err(|_| Error::Static(INVALID_IDLETIME))?;
            access = Access::IdleSeconds(idle);
        } else if opt.eq_ignore_ascii_case(b"freq")
            && has_value
            && !matches!(access, Access::IdleSeconds(_))
        {
            let v = parse_i64(c.args.next_arg()?).ok_or(Error::Static(error::NOT_INTEGER))?;
            let freq = u8::try_from(v).map_err(|_| Error::Static(INVALID_FREQ))?;
            access = Access::Freq(freq);
        } else {
            return Err(Error::Static(error::SYNTAX));
        }
    }
    let limits = c.limits();
    let decoded = rdb::restore(payload, &limits);

    let now = c.now_ms;
    let (mut shard, hash) = c.shard_of(key);
    let existing = shard.find(key, hash, now);
    if existing.is_some() && !replace {
        return Err(Error::Static(BUSYKEY));
    }
    let ttl = parse_i64(ttl_raw).ok_or(Error::Static(error::NOT_INTEGER))?;
    if ttl < 0 {
        return Err(Error::Static(INVALID_TTL));
    }
    let value = decoded.map_err(|e| {
        Error::Static(match e {
            rdb::Error::VersionOrChecksum => BAD_VERSION_OR_CHECKSUM,
            _ => BAD_DATA,
        })
    })?;
    let old = existing.map(|slot| shard.remove(slot));
    let expire_at_ms = match ttl as u64 {
        0 => 0,
        t if absttl => t,
        t => t.saturating_add(now),
    };
    if expire_at_ms != 0 && expire_at_ms <= now {
        // Already expired: nothing is created, and a key it replaced is deleted.
        if old.is_some() {
            c.notify(class::GENERIC, "del", key);
        }
        drop(shard);
        if old.is_some() {
            c.propagate(&[b"DEL", key]);
        }
        drop(old);
        c.out.simple("OK");
        return Ok(());
    }
    let slot = match value {
        Value::String(s) => shard.insert_string(key, hash, &s, expire_at_ms, now),
        Value::Object(o) => shard.insert_object(key, hash, o, expire_at_ms, now),
    };
    match access {
        Access::Freq(f) if crate::config::lfu_selected(&c.server.config) => {
            let minutes = ((now / 60_000) & 0xffff) as u32;
            shard.set_access(slot, (minutes << 8) | u32::from(f));
        }
        Access::IdleSeconds(idle) if !crate::config::lfu_selected(&c.server.config) => {
            let clock = larder_engine::lru_clock(now);
            shard.set_access(slot, clock.wrapping_sub(idle as u32));
        }
        _ => {}
    }
    c.notify(class::NEW, "new", key);
    c.notify(class::GENERIC, "restore", key);
    drop(shard);
    drop(old);
    if ttl > 0 && !absttl {
        // Replayed with the deadline it got here, as Redis 7.0 rewrites it.
        let at = expire_at_ms.to_string();
        let mut argv: Vec<&[u8]> = c.args.argv().to_vec();
        argv[2] = at.as_bytes();
        argv.push(b"ABSTTL");
        c.propagate(&argv);
    }
    c.out.simple("OK");
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use larder_engine::{Change, ChangeKind, Consumer, Interest};
    use larder_resp::Frame;
    use parking_lot::Mutex;

    use crate::testing::*;

    const GOLDEN: &str = include_str!("../../../larder-persist/testdata/redis-7.0.15-dump.txt");

    fn unhex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex"))
            .collect()
    }

    /// (key, encoding on Redis, payload) of Redis 7.0.15's golden DUMPs.
    fn goldens() -> Vec<(&'static str, &'static str, Vec<u8>)> {
        GOLDEN
            .lines()
            .filter(|l| !l.starts_with('#'))
            .filter_map(|l| {
                let mut w = l.split(' ');
                Some((w.next()?, w.next()?, unhex(w.next()?)))
            })
            .collect()
    }

    fn golden(key: &str) -> Vec<u8> {
        goldens()
            .into_iter()
            .find(|g| g.0 == key)
            .map(|g| g.2)
            .expect("golden key")
    }

    fn dumped(h: &mut Harness, key: &str) -> Vec<u8> {
        match h.run(&["DUMP", key]) {
            Frame::Bulk(b) => b,
            other => panic!("DUMP {key}: {other:?}"),
        }
    }

    fn restore(h: &mut Harness, key: &str, ttl: &str, payload: &[u8], opts: &[&str]) -> Frame {
        let mut argv: Vec<&[u8]> = vec![b"RESTORE", key.as_bytes(), ttl.as_bytes(), payload];
        argv.extend(opts.iter().map(|o| o.as_bytes()));
        h.run_bytes(&argv)
    }

    #[test]
    fn dump_of_a_missing_key_is_null() {
        let mut h = Harness::new();
        assert_eq!(h.run(&["DUMP", "nope"]), Frame::Null);
        assert_eq!(
            h.run(&["DUMP"]),
            err("ERR wrong number of arguments for 'dump' command")
        );
    }

    #[test]
    fn dump_matches_redis_for_each_type() {
        let mut h = Harness::new();
        h.run(&["SET", "s_int8", "12"]);
        h.run(&["SET", "s_lzf", &"a".repeat(100)]);
        h.run(&["APPEND", "s_raw", "hello"]);
        h.run(&[
            "RPUSH",
            "l_small",
            "a",
            "1",
            "-1",
            "300",
            "70000",
            "5000000000",
        ]);
        h.run(&["RPUSH", "l_small", "hello world", &"x".repeat(70)]);
        h.run(&["HSET", "h_small", "f1", "v1", "f2", "2", "n", "-123456"]);
        h.run(&[
            "SADD",
            "set_int",
            "1",
            "2",
            "3",
            "-5",
            "70000",
            "5000000000",
        ]);
        for key in ["s_int8", "s_lzf", "s_raw", "l_small", "h_small", "set_int"] {
            assert_eq!(dumped(&mut h, key), golden(key), "{key}");
        }
    }

    #[test]
    fn sorted_set_payloads_restore_and_dump_back() {
        let mut h = Harness::new();
        assert_eq!(restore(&mut h, "z", "0", &golden("z_small"), &[]), ok());
        assert_eq!(h.run(&["ZCARD", "z"]), int(3));
        assert_eq!(dumped(&mut h, "z"), golden("z_small"));
    }

    #[test]
    fn golden_payloads_restore_with_redis_encodings() {
        let mut h = Harness::new();
        // The limit z_big was dumped under, so it loads as the skiplist it was.
        h.run(&["CONFIG", "SET", "zset-max-listpack-entries", "1"]);
        for (key, enc, payload) in goldens() {
            assert_eq!(restore(&mut h, key, "0", &payload, &[]), ok(), "{key}");
            let want = match (key, enc) {
                (_, "int" | "embstr" | "raw") => h.run(&["OBJECT", "ENCODING", key]),
                ("h_big", _) => bulk("listpack"),
                // Three members are past that limit: converted on load, as Redis does.
                ("z_small", _) => bulk("skiplist"),
                _ => bulk(enc),
            };
            assert_eq!(h.run(&["OBJECT", "ENCODING", key]), want, "{key}");
        }
        assert_eq!(h.run(&["GET", "s_int16"]), bulk("-1000"));
        assert_eq!(h.run(&["LLEN", "l_big"]), int(1500));
        assert_eq!(
            h.run(&["LINDEX", "l_big", "1499"]),
            bulk(&format!("element-1499-{}", "x".repeat(1499 % 37)))
        );
        assert_eq!(h.run(&["HGET", "h_small", "n"]), bulk("-123456"));
        assert_eq!(h.run(&["SISMEMBER", "set_int", "5000000000"]), int(1));
        assert_eq!(h.run(&["SCARD", "set_big_int"]), int(200));
        assert_eq!(h.run(&["HGET", "h_long", "f"]), bulk(&"v".repeat(100)));
    }

    #[test]
    fn round_trips_keep_value_and_encoding() {
        let mut h = Harness::new();
        h.run(&["CONFIG", "SET", "hash-max-listpack-entries", "4"]);
        h.run(&["CONFIG", "SET", "set-max-intset-entries", "4"]);
        h.run(&["CONFIG", "SET", "list-max-listpack-size", "4"]);
        h.run(&["SET", "s", "value"]);
        h.run(&["RPUSH", "l1", "a", "b"]);
        h.run(&["RPUSH", "l2", "a", "b", "c", "d", "e", "f", "g", "h", "i"]);
        h.run(&["HSET", "h1", "f", "v"]);
        h.run(&[
            "HSET", "h2", "a", "1", "b", "2", "c", "3", "d", "4", "e", "5",
        ]);
        h.run(&["SADD", "s1", "1", "2"]);
        h.run(&["SADD", "s2", "1", "2", "3", "4", "5"]);
        h.run(&["SADD", "s3", "x", "y"]);
        for key in ["s", "l1", "l2", "h1", "h2", "s1", "s2", "s3"] {
            let payload = dumped(&mut h, key);
            let copy = format!("{key}-copy");
            assert_eq!(restore(&mut h, &copy, "0", &payload, &[]), ok());
            assert_eq!(
                h.run(&["OBJECT", "ENCODING", &copy]),
                h.run(&["OBJECT", "ENCODING", key]),
                "{key}"
            );
            assert_eq!(dumped(&mut h, &copy), payload, "{key}");
        }
        assert_eq!(h.run(&["OBJECT", "ENCODING", "h2"]), bulk("hashtable"));
        assert_eq!(h.run(&["OBJECT", "ENCODING", "s2"]), bulk("hashtable"));
        assert_eq!(h.run(&["SINTERCARD", "2", "s3", "s3-copy"]), int(2));
    }

    #[test]
    fn restore_options_and_errors() {
        let mut h = Harness::new();
        h.run(&["SET", "src", "hello"]);
        let p = dumped(&mut h, "src");
        assert_eq!(restore(&mut h, "k", "0", &p, &[]), ok());
        assert_eq!(h.run(&["TTL", "k"]), int(-1));
        let busy = err("BUSYKEY Target key name already exists.");
        assert_eq!(restore(&mut h, "k", "0", &p, &[]), busy);
        // BUSYKEY comes before the TTL and payload checks.
        assert_eq!(restore(&mut h, "k", "abc", b"junk", &[]), busy);
        assert_eq!(restore(&mut h, "k", "0", &p, &["REPLACE"]), ok());
        assert_eq!(
            restore(&mut h, "n", "-1", &p, &[]),
            err("ERR Invalid TTL value, must be >= 0")
        );
        assert_eq!(
            restore(&mut h, "n", "x", &p, &[]),
            err("ERR value is not an integer or out of range")
        );
        let checksum = err("ERR DUMP payload version or checksum are wrong");
        assert_eq!(restore(&mut h, "n", "0", b"x", &[]), checksum);
        let mut bad = p.clone();
        bad[1] ^= 1;
        assert_eq!(restore(&mut h, "n", "0", &bad, &[]), checksum);
        // A string of an unknown special encoding (0xc4).
        let mut body = vec![0u8, 0xc4, b'a'];
        body.extend_from_slice(&10u16.to_le_bytes());
        let crc = larder_persist::rdb::crc64::crc64(0, &body);
        body.extend_from_slice(&crc.to_le_bytes());
        assert_eq!(
            restore(&mut h, "n", "0", &body, &[]),
            err("ERR Bad data format")
        );
        let syntax = err("ERR syntax error");
        for opts in [
            &["FOO"][..],
            &["IDLETIME"],
            &["FREQ"],
            &["IDLETIME", "1", "FREQ", "2"],
            &["FREQ", "1", "IDLETIME", "2"],
        ] {
            assert_eq!(restore(&mut h, "n", "0", &p, opts), syntax, "{opts:?}");
        }
        assert_eq!(
            restore(&mut h, "n", "0", &p, &["IDLETIME", "-1"]),
            err("ERR Invalid IDLETIME value, must be >= 0")
        );
        assert_eq!(
            restore(&mut h, "n", "0", &p, &["FREQ", "256"]),
            err("ERR Invalid FREQ value, must be >= 0 and <= 255")
        );
        assert_eq!(
            restore(&mut h, "n", "0", &p, &["FREQ", "x"]),
            err("ERR value is not an integer or out of range")
        );
        assert_eq!(h.run(&["EXISTS", "n"]), int(0));
        assert_eq!(
            h.run(&["RESTORE", "n", "0"]),
            err("ERR wrong number of arguments for 'restore' command")
        );
    }

    #[test]
    fn ttl_absttl_idletime_and_freq() {
        let mut h = Harness::new();
        h.run(&["SET", "src", "hello"]);
        let p = dumped(&mut h, "src");
        assert_eq!(restore(&mut h, "t", "5000", &p, &[]), ok());
        let Frame::Integer(pttl) = h.run(&["PTTL", "t"]) else {
            panic!()
        };
        assert!((4000..=5000).contains(&pttl), "{pttl}");
        let at = (larder_engine::now_ms() + 60_000).to_string();
        assert_eq!(restore(&mut h, "a", &at, &p, &["ABSTTL"]), ok());
        assert_eq!(h.run(&["PEXPIRETIME", "a"]), int(at.parse().expect("ms")));
        // A deadline in the past creates nothing, and deletes the key it replaces.
        assert_eq!(restore(&mut h, "past", "1000", &p, &["ABSTTL"]), ok());
        assert_eq!(h.run(&["EXISTS", "past"]), int(0));
        assert_eq!(
            restore(&mut h, "a", "1000", &p, &["ABSTTL", "REPLACE"]),
            ok()
        );
        assert_eq!(h.run(&["EXISTS", "a"]), int(0));
        assert_eq!(restore(&mut h, "i", "0", &p, &["IDLETIME", "1000"]), ok());
        let Frame::Integer(idle) = h.run(&["OBJECT", "IDLETIME", "i"]) else {
            panic!()
        };
        assert!((1000..=1002).contains(&idle), "{idle}");
        // FREQ is ignored under an LRU policy, IDLETIME under an LFU one.
        assert_eq!(restore(&mut h, "f0", "0", &p, &["FREQ", "100"]), ok());
        h.run(&["CONFIG", "SET", "maxmemory-policy", "allkeys-lfu"]);
        assert_eq!(restore(&mut h, "f", "0", &p, &["FREQ", "100"]), ok());
        assert_eq!(h.run(&["OBJECT", "FREQ", "f"]), int(100));
        assert_eq!(restore(&mut h, "f2", "0", &p, &["IDLETIME", "100"]), ok());
        assert_eq!(h.run(&["OBJECT", "FREQ", "f2"]), int(5));
    }

    #[test]
    fn events() {
        let mut h = Harness::new();
        let n = Notices::subscribe(h.server.keyspace.feed());
        h.run(&["SET", "src", "hello"]);
        let p = dumped(&mut h, "src");
        n.take();
        restore(&mut h, "k", "0", &p, &[]);
        assert_eq!(n.take(), ["n:new@0:k", "g:restore@0:k"]);
        restore(&mut h, "k", "0", &p, &["REPLACE"]);
        assert_eq!(n.take(), ["n:new@0:k", "g:restore@0:k"]);
        restore(&mut h, "k", "1", &p, &["REPLACE", "ABSTTL"]);
        assert_eq!(n.take(), ["g:del@0:k"]);
        restore(&mut h, "k", "1", &p, &["ABSTTL"]);
        assert_eq!(n.take(), Vec::<String>::new());
    }

    #[derive(Default)]
    struct Commands(Mutex<Vec<Vec<Vec<u8>>>>);

    impl Consumer for Commands {
        fn committed(&self, _: u64, changes: &[Change]) {
            let cmds = changes.iter().filter(|c| c.kind == ChangeKind::Command);
            self.0.lock().extend(cmds.map(|c| c.argv.to_vecs()));
        }
    }

    #[test]
    fn relative_ttls_replay_as_absttl() {
        let mut h = Harness::new();
        let c = Arc::new(Commands::default());
        h.server
            .keyspace
            .feed()
            .subscribe(Interest::COMMANDS, c.clone());
        h.run(&["SET", "src", "hello"]);
        let p = dumped(&mut h, "src");
        c.0.lock().clear();
        let now = larder_engine::now_ms();
        restore(&mut h, "k", "10000", &p, &[]);
        restore(&mut h, "k2", "0", &p, &[]);
        restore(&mut h, "k2", "5", &p, &["REPLACE", "ABSTTL"]);
        restore(&mut h, "k3", "5", &p, &["ABSTTL"]);
        let got = std::mem::take(&mut *c.0.lock());
        assert_eq!(got.len(), 3, "{got:?}");
        assert_eq!(got[0][..2], [b"RESTORE".to_vec(), b"k".to_vec()]);
        let at: u64 = String::from_utf8_lossy(&got[0][2])
            .parse()
            .expect("deadline");
        assert!(at.abs_diff(now + 10_000) < 5_000);
        assert_eq!(got[0][3], p);
        assert_eq!(got[0][4], b"ABSTTL");
        assert_eq!(
            got[1],
            [&b"RESTORE"[..], b"k2", b"0", &p].map(<[u8]>::to_vec)
        );
        assert_eq!(got[2], [b"DEL".to_vec(), b"k2".to_vec()]);
    }

    #[test]
    fn bitmaps_and_hyperloglogs_dump_as_strings() {
        let mut h = Harness::new();
        h.run(&["SETBIT", "bits", "100", "1"]);
        h.run(&["PFADD", "hll", "a", "b"]);
        for key in ["bits", "hll"] {
            let p = dumped(&mut h, key);
            let copy = format!("{key}2");
            assert_eq!(restore(&mut h, &copy, "0", &p, &[]), ok());
            assert_eq!(h.run(&["GET", &copy]), h.run(&["GET", key]));
        }
        assert_eq!(h.run(&["PFCOUNT", "hll2"]), int(2));
    }
}
