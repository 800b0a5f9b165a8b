//! OBJECT ENCODING | FREQ | IDLETIME | REFCOUNT | HELP. Looking a key up here counts as a
//! keyspace hit or miss but not as an access (it does not reset the idle time).

use larder_engine::{Entry, ObjectKind};

use crate::args::parse_i64;
use crate::error::{Error, Result};
use crate::exec::Cmd;
use crate::table::{flags::*, CommandSpec, Group, KeySpec};

const LFU_SELECTED: &str = "ERR An LFU maxmemory policy is selected, idle time not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.";
const LFU_NOT_SELECTED: &str = "ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.";

/// The key of an OBJECT subcommand: argv[2].
const SUB_KEY: KeySpec = KeySpec {
    first: 2,
    last: 2,
    step: 1,
    scope: crate::locks::Scope::Keys,
};

/// Redis's `OBJ_SHARED_REFCOUNT`: the refcount of the shared integers 0..=9999.
const SHARED_REFCOUNT: i64 = i32::MAX as i64;
/// Strings up to this length are "embstr" (`OBJ_ENCODING_EMBSTR_SIZE_LIMIT`).
const EMBSTR_MAX: usize = 44;

const fn sub(
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
        Group::Keyspace,
        summary,
        since,
        handler,
    )
}

/// OBJECT's subcommands.
pub(super) static SUBCOMMANDS: &[CommandSpec] = &[
    sub(
        "encoding",
        3,
        READONLY,
        SUB_KEY,
        "Inspect the internal encoding of a Redis object",
        "2.2.3",
        encoding,
    ),
    sub(
        "freq",
        3,
        READONLY,
        SUB_KEY,
        "Get the logarithmic access frequency counter of a Redis object",
        "4.0.0",
        freq,
    ),
    sub(
        "help",
        2,
        LOADING | STALE,
        KeySpec::NONE,
        "Show helpful text about the different subcommands",
        "6.2.0",
        help,
    ),
    sub(
        "idletime",
        3,
        READONLY,
        SUB_KEY,
        "Get the time since a Redis object was last accessed",
        "2.2.3",
        idletime,
    ),
    sub(
        "refcount",
        3,
        READONLY,
        SUB_KEY,
        "Get the number of references to the value of the key",
        "2.2.3",
        refcount,
    ),
];

/// OBJECT itself; never called, the registry dispatches to a subcommand.
pub(super) fn container(_: &mut Cmd<'_>) -> Result<()> {
    Err(Error::Static("ERR unknown subcommand. Try OBJECT HELP."))
}

/// Look the key up without touching it and apply `f` to its entry under the lock; `None` (and
/// a miss) when absent. The caller replies null for `None`.
fn inspect<R>(c: &mut Cmd<'_>, f: impl FnOnce(&Entry) -> R) -> Result<Option<R>> {
    let key = c.args.key()?;
    let (mut shard, hash) = c.shard_of(key);
    let r = shard
        .find(key, hash, c.now_ms)
        .map(|slot| f(shard.entry(slot)));
    drop(shard);
    c.hit(r.is_some());
    Ok(r)
}

/// How Redis 7.0 would encode the value: strings as "int", "embstr" or "raw"; collections by
/// their own encoding (`Object::encoding`).
pub(crate) fn encoding_name(e: &Entry) -> &'static str {
    if let Some(name) = e.object().and_then(|o| o.encoding()) {
        return name;
    }
    match e.kind() {
        ObjectKind::String if e.is_grown_string() => "raw",
        ObjectKind::String => match e.string() {
            Some(v) if shared_integer(v).is_some() => "int",
            Some(v) if v.len() <= EMBSTR_MAX => "embstr",
            _ => "raw",
        },
        ObjectKind::List => "quicklist",
        ObjectKind::Hash | ObjectKind::Set => "hashtable",
        ObjectKind::ZSet => "skiplist",
        ObjectKind::Stream => "stream",
    }
}

/// The value as Redis's `tryObjectEncoding` would store it as an integer (at most 20 bytes,
/// canonical decimal, fits i64).
fn shared_integer(v: &[u8]) -> Option<i64> {
    if v.len() > 20 {
        return None;
    }
    parse_i64(v)
}

pub(crate) fn refcount_of(e: &Entry) -> i64 {
    if e.is_grown_string() {
        return 1;
    }
    match e.string().and_then(shared_integer) {
        Some(0..=9999) => SHARED_REFCOUNT,
        _ => 1,
    }
}

/// OBJECT ENCODING key
fn encoding(c: &mut Cmd<'_>) -> Result<()> {
    match inspect(c, encoding_name)? {
        Some(name) => c.out.bulk(name.as_bytes()),
        None => c.out.null(),
    }
    Ok(())
}

/// OBJECT REFCOUNT key
fn refcount(c: &mut Cmd<'_>) -> Result<()> {
    match inspect(c, refcount_of)? {
        Some(n) => c.out.int(n),
        None => c.out.null(),
    }
    Ok(())
}

/// OBJECT IDLETIME key: seconds since the last access. Under an LFU policy `access` holds a
/// counter instead, so an existing key is an error (after the lookup, as in Redis).
fn idletime(c: &mut Cmd<'_>) -> Result<()> {
    let now = larder_engine::lru_clock(c.now_ms);
    let lfu = crate::config::lfu_selected(&c.server.config);
    match inspect(c, |e| now.wrapping_sub(e.access()))? {
        Some(_) if lfu => Err(Error::Static(LFU_SELECTED)),
        Some(idle_s) => {
            c.out.int(i64::from(idle_s));
            Ok(())
        }
        None => {
            c.out.null();
            Ok(())
        }
    }
}

/// OBJECT FREQ key: the decayed logarithmic access counter; only LFU policies track it, so
/// otherwise an existing key is an error (after the lookup, as in Redis).
fn freq(c: &mut Cmd<'_>) -> Result<()> {
    let lfu = crate::config::lfu_selected(&c.server.config);
    let now_ms = c.now_ms;
    let keyspace = &c.server.keyspace;
    match inspect(c, |e| keyspace.lfu_freq(e.access(), now_ms))? {
        Some(_) if !lfu => Err(Error::Static(LFU_NOT_SELECTED)),
        Some(counter) => {
            c.out.int(i64::from(counter));
            Ok(())
        }
        None => {
            c.out.null();
            Ok(())
        }
    }
}

/// OBJECT HELP
fn help(c: &mut Cmd<'_>) -> Result<()> {
    const LINES: &[&str] = &[
        "OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "ENCODING <key>",
        "    Return the kind of internal representation used in order to store the value",
        "    associated with a <key>.",
        "FREQ <key>",
        "    Return the access frequency index of the <key>. The returned integer is",
        "    proportional to the logarithm of the recent access frequency of the key.",
        "IDLETIME <key>",
        "    Return the idle time of the <key>, that is the approximated number of",
        "    seconds elapsed since the last access to the key.",
        "REFCOUNT <key>",
        "    Return the number of references of the value associated with the specified",
        "    <key>.",
        "HELP",
        "    Prints this help.",
    ];
    crate::server::reply_help(c, LINES)
}

#[cfg(test)]
mod tests {
    use larder_resp::{Frame, Protocol};

    use crate::testing::*;

    #[test]
    fn encodings_and_refcounts() {
        let mut h = Harness::new();
        let long = "a".repeat(45);
        let cases = [
            ("123", "int", 2147483647),
            ("0", "int", 2147483647),
            ("9999", "int", 2147483647),
            ("10000", "int", 1),
            ("-5", "int", 1),
            ("9223372036854775807", "int", 1),
            ("12345678901234567890", "embstr", 1),
            ("01", "embstr", 1),
            ("+1", "embstr", 1),
            ("v", "embstr", 1),
            ("", "embstr", 1),
            (&long[1..], "embstr", 1),
            (&long, "raw", 1),
        ];
        for (value, enc, refs) in cases {
            h.run(&["SET", "k", value]);
            assert_eq!(h.run(&["OBJECT", "ENCODING", "k"]), bulk(enc), "{value}");
            assert_eq!(h.run(&["object", "refcount", "k"]), int(refs), "{value}");
        }
        // A string grown in place is "raw", whatever it holds.
        h.run(&["SET", "g", "5"]);
        {
            let (mut shard, hash) = crate::testing::shard_for(&h.server, b"g");
            let slot = shard.find(b"g", hash, 0).expect("g");
            shard.update_string(slot, |v| v.push(b'1'));
        }
        assert_eq!(h.run(&["OBJECT", "ENCODING", "g"]), bulk("raw"));
        assert_eq!(h.run(&["OBJECT", "REFCOUNT", "g"]), int(1));
        assert_eq!(h.run(&["OBJECT", "ENCODING", "nokey"]), Frame::Null);
        assert_eq!(h.run(&["OBJECT", "REFCOUNT", "nokey"]), Frame::Null);
        assert_eq!(h.run(&["OBJECT", "IDLETIME", "nokey"]), Frame::Null);
        assert_eq!(h.run(&["OBJECT", "FREQ", "nokey"]), Frame::Null);
        h.out.proto = Protocol::Resp3;
        assert_eq!(h.run_raw(&[b"OBJECT", b"ENCODING", b"nokey"]), b"_\r\n");
        h.out.proto = Protocol::Resp2;
        assert_eq!(h.run_raw(&[b"OBJECT", b"ENCODING", b"nokey"]), b"$-1\r\n");
    }

    #[test]
    fn freq_and_idletime_under_lfu() {
        let mut h = Harness::new();
        assert_eq!(
            h.run(&[
                "CONFIG",
                "SET",
                "maxmemory-policy",
                "allkeys-lfu",
                "lfu-log-factor",
                "0"
            ]),
            ok()
        );
        h.run(&["SET", "k", "v"]);
        assert_eq!(h.run(&["OBJECT", "FREQ", "k"]), int(5));
        for _ in 0..10 {
            h.run(&["GET", "k"]);
        }
        // Factor 0: every access counts; OBJECT itself does not.
        assert_eq!(h.run(&["OBJECT", "FREQ", "k"]), int(15));
        assert_eq!(h.run(&["OBJECT", "FREQ", "k"]), int(15));
        assert_eq!(
            h.run(&["OBJECT", "IDLETIME", "k"]),
            err(super::LFU_SELECTED)
        );
        assert_eq!(h.run(&["OBJECT", "IDLETIME", "nokey"]), Frame::Null);
        assert_eq!(h.run(&["OBJECT", "FREQ", "nokey"]), Frame::Null);
        // Decay: one per lfu-decay-time minutes since the last decrement.
        {
            let (mut shard, hash) = crate::testing::shard_for(&h.server, b"k");
            let slot = shard.find(b"k", hash, 0).expect("k");
            let minutes = ((larder_engine::now_ms() / 60_000) as u32).wrapping_sub(3) & 0xffff;
            shard.set_access(slot, (minutes << 8) | 15);
        }
        assert_eq!(h.run(&["OBJECT", "FREQ", "k"]), int(12));
        h.run(&["CONFIG", "SET", "lfu-decay-time", "0"]);
        assert_eq!(h.run(&["OBJECT", "FREQ", "k"]), int(15));
        h.run(&["CONFIG", "SET", "maxmemory-policy", "volatile-lru"]);
        assert_eq!(
            h.run(&["OBJECT", "FREQ", "k"]),
            err(super::LFU_NOT_SELECTED)
        );
        assert!(matches!(
            h.run(&["OBJECT", "IDLETIME", "k"]),
            Frame::Integer(_)
        ));
    }

    #[test]
    fn idletime_freq_help_and_errors() {
        let mut h = Harness::new();
        h.run(&["SET", "k", "v"]);
        assert_eq!(h.run(&["OBJECT", "IDLETIME", "k"]), int(0));
        // Age the access time; OBJECT and TYPE/TTL/EXISTS must not reset it, GET must.
        let age = |h: &Harness| {
            let (mut shard, hash) = crate::testing::shard_for(&h.server, b"k");
            let slot = shard.find(b"k", hash, 0).expect("k");
            shard.touch(slot, larder_engine::now_ms() - 10_000);
        };
        age(&h);
        for argv in [
            &["OBJECT", "ENCODING", "k"][..],
            &["TYPE", "k"],
            &["TTL", "k"],
            &["EXISTS", "k"],
        ] {
            h.run(argv);
            let Frame::Integer(idle) = h.run(&["OBJECT", "IDLETIME", "k"]) else {
                panic!("idletime")
            };
            assert!((9..=11).contains(&idle), "{argv:?}: {idle}");
        }
        h.run(&["GET", "k"]);
        assert_eq!(h.run(&["OBJECT", "IDLETIME", "k"]), int(0));
        age(&h);
        h.run(&["TOUCH", "k"]);
        assert_eq!(h.run(&["OBJECT", "IDLETIME", "k"]), int(0));
        assert_eq!(
            h.run(&["OBJECT", "FREQ", "k"]),
            err(super::LFU_NOT_SELECTED)
        );
        let Frame::Array(lines) = h.run(&["OBJECT", "HELP"]) else {
            panic!("help")
        };
        assert_eq!(lines.len(), 15);
        assert_eq!(
            lines[0],
            Frame::Simple("OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:".into())
        );
        assert_eq!(
            h.run(&["OBJECT", "HELP", "x"]),
            err("ERR wrong number of arguments for 'object|help' command")
        );
        assert_eq!(
            h.run(&["OBJECT", "foo"]),
            err("ERR unknown subcommand 'foo'. Try OBJECT HELP.")
        );
        assert_eq!(
            h.run(&["OBJECT"]),
            err("ERR wrong number of arguments for 'object' command")
        );
        assert_eq!(
            h.run(&["OBJECT", "ENCODING"]),
            err("ERR wrong number of arguments for 'object|encoding' command")
        );
    }
}
