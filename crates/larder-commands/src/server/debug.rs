//! DEBUG: the subset Redis's own tests and replay checks use. DIGEST and DIGEST-VALUE (Redis
//! 7.0's digests, byte for byte: see `digest`), OBJECT, SLEEP, SET-ACTIVE-EXPIRE, POPULATE,
//! PROTOCOL, LOG, HELP, and RELOAD / LOADAOF, which wait for the persistence runtime
//! ([`reload`], [`loadaof`]).
//! Other subcommands answer Redis's unknown-subcommand error.
//!
//! DEBUG runs only where `enable-debug-command` allows it (`yes`, or `local` for a client on
//! 127.0.0.1 or ::1); the executor checks that right after the arity, as Redis's
//! `processCommand` does ([`refused`]). The command's scope is the whole keyspace: every shard
//! is locked before the handler runs, so DIGEST sees one consistent moment of every database.

pub mod digest;

use std::sync::atomic::Ordering;
use std::time::Duration;

use larder_engine::{Entry, SHARDS_PER_DB};
use larder_persist::rdb::{self, ValueRef};

use super::{reply_help, subcommand_syntax_error};
use crate::config::Param;
use crate::error::{self, Error, Result};
use crate::exec::{Cmd, ConnState};
use crate::state::Server;

/// Redis 7.0's `processCommand` text for a DEBUG its `enable-debug-command` refuses.
pub const NOT_ALLOWED: &str = "ERR DEBUG command not allowed. If the enable-debug-command option is set to \"local\", you can run it from a local connection, otherwise you need to set this option in the configuration file, and then restart the server.";
const RELOAD_OPTIONS: &str =
    "ERR DEBUG RELOAD only supports the MERGE, NOFLUSH and NOSAVE options.";
const RELOAD_UNSUPPORTED: &str = "ERR DEBUG RELOAD and LOADAOF need the persistence runtime";
const RELOAD_OPTIONS_UNSUPPORTED: &str = "ERR DEBUG RELOAD MERGE, NOFLUSH and NOSAVE are not supported: they would load a dataset that differs from what the append-only log describes";

/// `enable-debug-command` values, in its enum's order.
const ALLOWED_NO: i64 = 0;
const ALLOWED_YES: i64 = 1;

/// The error DEBUG gets before anything else runs, if `enable-debug-command` does not allow
/// this connection to run it: `no`, or `local` for a client that is not on the loopback
/// address (Redis's `islocalClient`: exactly 127.0.0.1 or ::1). `name` is the resolved
/// command's full name; anything but DEBUG passes.
#[inline]
pub fn refused(server: &Server, conn: &ConnState, name: &str) -> Option<Error> {
    if name != "debug" {
        return None;
    }
    let allowed = match server.config.num(Param::EnableDebugCommand) {
        ALLOWED_NO => false,
        ALLOWED_YES => true,
        _ => is_local(&conn.handle.addr),
    };
    (!allowed).then_some(Error::Static(NOT_ALLOWED))
}

/// Whether a peer address (`ip:port`, as the network layer records it) is 127.0.0.1 or ::1.
fn is_local(addr: &str) -> bool {
    match addr.parse::<std::net::SocketAddr>() {
        Ok(a) => match a.ip() {
            std::net::IpAddr::V4(ip) => ip == std::net::Ipv4Addr::LOCALHOST,
            std::net::IpAddr::V6(ip) => ip == std::net::Ipv6Addr::LOCALHOST,
        },
        Err(_) => false,
    }
}

/// DEBUG subcommand [arg ...]: dispatched here, as Redis's `debugCommand` does, so that a
/// subcommand with the wrong number of arguments gets the same error as an unknown one.
pub(super) fn debug(c: &mut Cmd<'_>) -> Result<()> {
    let argv = c.args.argv();
    let argc = argv.len();
    let sub = argv
        .get(1)
        .copied()
        .unwrap_or_default()
        .to_ascii_lowercase();
    match (sub.as_slice(), argc) {
        (b"help", 2) => help(c),
        (b"reload", _) => reload_command(c),
        (b"loadaof", _) => loadaof(c),
        (b"object", 3) => object(c),
        (b"digest", 2) => dataset_digest(c),
        (b"digest-value", _) => digest_value(c),
        (b"sleep", 3) => sleep(c),
        (b"set-active-expire", 3) => set_active_expire(c),
        (b"log", 3) => log(c),
        (b"populate", 3..=5) => populate(c),
        (b"protocol", 3) => protocol(c),
        _ => Err(subcommand_syntax_error(c, "DEBUG")),
    }
}

/// DEBUG HELP: Redis's lines for the subcommands larder has.
fn help(c: &mut Cmd<'_>) -> Result<()> {
    reply_help(
        c,
        &[
            "DEBUG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
            "DIGEST",
            "    Output a hex signature representing the current DB content.",
            "DIGEST-VALUE <key> [<key> ...]",
            "    Output a hex signature of the values of all the specified keys.",
            "LOG <message>",
            "    Write <message> to the server log.",
            "LOADAOF",
            "    Flush the AOF buffers on disk and reload the AOF in memory.",
            "OBJECT <key>",
            "    Show low level info about `key` and associated value.",
            "POPULATE <count> [<prefix>] [<size>]",
            "    Create <count> string keys named key:<num>. If <prefix> is specified then",
            "    it is used instead of the 'key' prefix. These are not propagated to",
            "    replicas. Cluster slots are not respected so keys not belonging to the",
            "    current node can be created in cluster mode.",
            "PROTOCOL <type>",
            "    Reply with a test value of the specified type. <type> can be: string,",
            "    integer, double, bignum, null, array, set, map, attrib, push, verbatim,",
            "    true, false.",
            "RELOAD [option ...]",
            "    Save the RDB on disk and reload it back to memory. Valid <option> values:",
            "    * MERGE: conflicting keys will be loaded from RDB.",
            "    * NOFLUSH: the existing database will not be removed before load, but",
            "      conflicting keys will generate an exception and kill the server.",
            "    * NOSAVE: the database will be loaded from an existing RDB file.",
            "SET-ACTIVE-EXPIRE <0|1>",
            "    Setting it to 0 disables expiring keys in background when they are not",
            "    accessed (otherwise the Redis behavior). Setting it to 1 reenables back the",
            "    default.",
            "SLEEP <seconds>",
            "    Stop the server for <seconds>. Decimals allowed.",
            "HELP",
            "    Prints this help.",
        ],
    )
}

// ---------------------------------------------------------------------------------------------
// RELOAD, LOADAOF

/// What DEBUG RELOAD was asked to do (its options).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReloadOptions {
    /// Save a snapshot first (no NOSAVE).
    pub save: bool,
    /// Empty the dataset before loading (no NOFLUSH).
    pub flush: bool,
    /// Keys in the snapshot replace existing ones instead of being an error (MERGE).
    pub merge: bool,
}

/// DEBUG RELOAD [MERGE] [NOFLUSH] [NOSAVE]: options checked as Redis does, then [`reload`].
fn reload_command(c: &mut Cmd<'_>) -> Result<()> {
    let mut opts = ReloadOptions {
        save: true,
        flush: true,
        merge: false,
    };
    for opt in c.args.argv().iter().skip(2) {
        match opt.to_ascii_lowercase().as_slice() {
            b"merge" => opts.merge = true,
            b"noflush" => opts.flush = false,
            b"nosave" => opts.save = false,
            _ => return Err(Error::Static(RELOAD_OPTIONS)),
        }
    }
    reload(c, opts)
}

/// The shards DEBUG holds (all of them), lent to the persistence runtime.
struct Held<'c, 'a>(&'c Cmd<'a>);

impl crate::persistence::HeldShards for Held<'_, '_> {
    fn with(&mut self, db: usize, shard: usize, f: &mut dyn FnMut(&mut larder_engine::Shard)) {
        let mut guard = self.0.shard_at(db, shard);
        f(&mut guard);
    }
}

fn runtime<'a>(c: &Cmd<'a>) -> Result<&'a dyn crate::persistence::Persistence> {
    c.server
        .persistence
        .get()
        .map(|p| &**p)
        .ok_or(Error::Static(RELOAD_UNSUPPORTED))
}

/// DEBUG RELOAD's work: save a snapshot, empty the dataset, load the snapshot back (every
/// shard is held while it runs). Only the plain form: NOSAVE, NOFLUSH and MERGE would load a
/// dataset that differs from what the log describes.
pub fn reload(c: &mut Cmd<'_>, opts: ReloadOptions) -> Result<()> {
    if !opts.save || !opts.flush || opts.merge {
        return Err(Error::Static(RELOAD_OPTIONS_UNSUPPORTED));
    }
    let rt = runtime(c)?;
    rt.reload(&mut Held(c)).map_err(Error::Owned)?;
    c.out.simple("OK");
    Ok(())
}

/// DEBUG LOADAOF: bring the log to disk, empty the dataset and load it again from the data
/// directory (every shard is held while it runs).
pub fn loadaof(c: &mut Cmd<'_>) -> Result<()> {
    let rt = runtime(c)?;
    rt.loadaof(&mut Held(c)).map_err(Error::Owned)?;
    c.out.simple("OK");
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// DIGEST, DIGEST-VALUE, OBJECT

/// DEBUG DIGEST: the whole dataset's digest, 40 zeros when it is empty. Keys past their
/// deadline that expiry has not removed yet count, as in Redis.
fn dataset_digest(c: &mut Cmd<'_>) -> Result<()> {
    let mut dataset = digest::Dataset::default();
    for db in 0..c.server.keyspace.db_count() {
        let mut shard_at = c.lock_fn(db);
        let mut started = false;
        for s in 0..SHARDS_PER_DB {
            let shard = shard_at(s);
            for entry in shard.iter() {
                if !started {
                    dataset.database(db);
                    started = true;
                }
                dataset.key(entry);
            }
        }
    }
    c.out.simple(&digest::hex(&dataset.digest));
    Ok(())
}

/// DEBUG DIGEST-VALUE [key ...]: each value's digest (40 zeros for a missing key). Keys past
/// their deadline count until expiry removes them, as in Redis.
fn digest_value(c: &mut Cmd<'_>) -> Result<()> {
    let keys = &c.args.argv()[2..];
    c.out.array(keys.len());
    for key in keys {
        let (shard, hash) = c.shard_of(key);
        let mut d = [0u8; 20];
        if let Some(slot) = shard.find_raw(key, hash) {
            digest::value_digest(&mut d, shard.entry(slot));
        }
        drop(shard);
        c.out.simple(&digest::hex(&d));
    }
    Ok(())
}

/// DEBUG OBJECT key: Redis's status line. `serializedlength` is the value's RDB length (its
/// serialization without the type byte, as Redis's `rdbSavedObjectLen`); `lru` is the access
/// clock in Redis's 24 bits. A list adds Redis's quicklist fields, read from the nodes its
/// RDB form cuts it into. A key past its deadline is still found, as in Redis.
fn object(c: &mut Cmd<'_>) -> Result<()> {
    let key = c.args.argv()[2];
    let limits = c.limits();
    let now = larder_engine::lru_clock(c.now_ms);
    let (shard, hash) = c.shard_of(key);
    let slot = shard
        .find_raw(key, hash)
        .ok_or(Error::Static(error::NO_SUCH_KEY))?;
    let line = object_line(shard.entry(slot), &limits, now);
    drop(shard);
    c.out.simple(&line);
    Ok(())
}

/// Redis's `LRU_CLOCK_MAX`: the access clock DEBUG OBJECT shows has 24 bits.
const LRU_CLOCK_MAX: u32 = (1 << 24) - 1;

/// The DEBUG OBJECT line for `entry` at LRU clock `now`.
fn object_line(entry: &Entry, limits: &larder_engine::Limits, now: u32) -> String {
    let value = match entry.object() {
        Some(o) => ValueRef::Object(o),
        None => ValueRef::String(entry.string().unwrap_or_default()),
    };
    let mut rdb_form = Vec::new();
    // Writing to a Vec fails only for a value RDB cannot hold; its length is then unknown.
    let serialized = match rdb::write_value(&mut rdb_form, value, limits) {
        Ok(()) => rdb_form.len().saturating_sub(1),
        Err(_) => 0,
    };
    let encoding = crate::keys::object::encoding_name(entry);
    let mut line = format!(
        "Value at:{:p} refcount:{} encoding:{encoding} serializedlength:{serialized} lru:{} lru_seconds_idle:{}",
        entry,
        crate::keys::object::refcount_of(entry),
        entry.access() & LRU_CLOCK_MAX,
        now.wrapping_sub(entry.access()),
    );
    if encoding == "quicklist" {
        if let Some(q) = quicklist_fields(&rdb_form, limits) {
            line.push_str(&q);
        }
    }
    line
}

/// Redis's quicklist fields of DEBUG OBJECT (nodes, average elements per node, the fill,
/// compression, the nodes' total bytes), from a list's RDB form: its node count, then each
/// node's container and listpack (or plain element).
fn quicklist_fields(rdb_form: &[u8], limits: &larder_engine::Limits) -> Option<String> {
    let mut r = rdb::Reader::new(rdb_form);
    r.u8().ok()?;
    let nodes = r.length().ok()?;
    let (mut elements, mut bytes) = (0u64, 0u64);
    for _ in 0..nodes {
        let container = r.length().ok()?;
        let node = r.string().ok()?;
        bytes += node.len() as u64;
        // A packed node is a listpack: its element count is the u16 at offset 4.
        elements += match (container, node.get(4..6)) {
            (2, Some(n)) => u64::from(u16::from_le_bytes([n[0], n[1]])),
            _ => 1,
        };
    }
    let avg = if nodes == 0 {
        0.0
    } else {
        elements as f64 / nodes as f64
    };
    let fill = limits.list_max_listpack_size.clamp(-5, (1 << 15) - 1);
    Some(format!(
        " ql_nodes:{nodes} ql_avg_node:{avg:.2} ql_listpack_max:{fill} ql_compressed:0 ql_uncompressed_size:{bytes}"
    ))
}

// ---------------------------------------------------------------------------------------------
// SLEEP, SET-ACTIVE-EXPIRE, LOG

/// DEBUG SLEEP seconds (decimals allowed; read as C's `strtod` reads it, so text that is not
/// a number sleeps 0 seconds, and so does a negative time). Redis stalls the whole server for
/// that long; this stalls the connection's worker thread (its other clients wait too) while
/// the command holds every shard, so other workers' commands on keys wait as well.
fn sleep(c: &mut Cmd<'_>) -> Result<()> {
    let seconds = strtod_prefix(c.args.argv()[2]);
    let micros = seconds * 1_000_000.0;
    if micros.is_finite() && micros >= 1.0 {
        std::thread::sleep(Duration::from_micros(micros as u64));
    }
    c.out.simple("OK");
    Ok(())
}

/// DEBUG SET-ACTIVE-EXPIRE 0|1: turn the expiry thread's removal of due keys off (0) or back
/// on (any other number, read as C's `atoi`). Lazy expiry, on access, goes on either way.
fn set_active_expire(c: &mut Cmd<'_>) -> Result<()> {
    let on = atoi_prefix(c.args.argv()[2]) != 0;
    c.server.active_expire.store(on, Ordering::Release);
    c.out.simple("OK");
    Ok(())
}

/// DEBUG LOG message: write the message to the server log.
fn log(c: &mut Cmd<'_>) -> Result<()> {
    let message = String::from_utf8_lossy(c.args.argv()[2]);
    tracing::warn!("DEBUG LOG: {message}");
    c.out.simple("OK");
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// POPULATE, PROTOCOL

/// Redis formats POPULATE's key names into a 128-byte buffer: longer names are cut.
const POPULATE_NAME_MAX: usize = 127;
const PROTOCOL_TYPES: &str = "ERR Wrong protocol type name. Please use one of the following: string|integer|double|bignum|null|array|set|map|attrib|push|verbatim|true|false";
/// Redis's DEBUG PROTOCOL double: its own test value, not an approximation of pi.
#[allow(clippy::approx_constant)]
const PROTOCOL_DOUBLE: f64 = 3.141;
const RESP2_UNSUPPORTED: &str = "ERR RESP2 is not supported by this command";

/// A count or size argument as Redis's `getPositiveLongFromObjectOrReply` reads it: one
/// error for text that is not an integer and for a negative one.
fn positive(arg: &[u8]) -> Result<u64> {
    crate::args::parse_i64(arg)
        .and_then(|v| u64::try_from(v).ok())
        .ok_or(Error::Static(error::NEGATIVE_COUNT))
}

/// DEBUG POPULATE count [prefix] [size]: string keys `prefix:0` .. `prefix:<count-1>`
/// (prefix `key`) in the selected database, each holding `value:<n>`, or, with a size, that
/// text cut or padded with zero bytes to `size` bytes. Keys that exist are left alone. No
/// keyspace event is raised, as in Redis.
fn populate(c: &mut Cmd<'_>) -> Result<()> {
    let argv = c.args.argv();
    let count = positive(argv[2])?;
    let size = match argv.get(4) {
        Some(a) => {
            usize::try_from(positive(a)?).map_err(|_| Error::Static(error::NEGATIVE_COUNT))?
        }
        None => 0,
    };
    let prefix = argv.get(3).copied().unwrap_or(b"key");
    let mut name = Vec::new();
    let mut value = Vec::new();
    for n in 0..count {
        name.clear();
        name.extend_from_slice(prefix);
        name.extend_from_slice(format!(":{n}").as_bytes());
        name.truncate(POPULATE_NAME_MAX);
        let (mut shard, hash) = c.shard_of(&name);
        if shard.find(&name, hash, c.now_ms).is_some() {
            continue;
        }
        value.clear();
        value.extend_from_slice(format!("value:{n}").as_bytes());
        if size > 0 {
            value.resize(size, 0);
        }
        shard.insert_string(&name, hash, &value, 0, c.now_ms);
    }
    c.out.simple("OK");
    Ok(())
}

/// DEBUG PROTOCOL type: one reply of each RESP type, as Redis writes them (in RESP2 each
/// falls back to its RESP2 form; an attribute is left out, and a push is an error).
fn protocol(c: &mut Cmd<'_>) -> Result<()> {
    let resp3 = c.out.proto == larder_resp::Protocol::Resp3;
    match c.args.argv()[2].to_ascii_lowercase().as_slice() {
        b"string" => c.out.bulk(b"Hello World"),
        b"integer" => c.out.int(12345),
        b"double" => c.out.double(PROTOCOL_DOUBLE),
        b"bignum" => c.out.big_number("1234567999999999999999999999999999999"),
        b"null" => c.out.null(),
        b"array" => {
            c.out.array(3);
            (0..3).for_each(|j| c.out.int(j));
        }
        b"set" => {
            c.out.set(3);
            (0..3).for_each(|j| c.out.int(j));
        }
        b"map" => {
            c.out.map(3);
            for j in 0..3 {
                c.out.int(j);
                c.out.boolean(j == 1);
            }
        }
        b"attrib" => {
            if resp3 {
                c.out.raw(b"|1\r\n");
                c.out.bulk(b"key-popularity");
                c.out.array(2);
                c.out.bulk(b"key:123");
                c.out.int(90);
            }
            c.out.bulk(b"Some real reply following the attribute");
        }
        b"push" => {
            if !resp3 {
                return Err(Error::Static(RESP2_UNSUPPORTED));
            }
            c.out.push(2);
            c.out.bulk(b"server-cpu-usage");
            c.out.int(42);
            c.out.bulk(b"Some real reply following the push reply");
        }
        b"true" => c.out.boolean(true),
        b"false" => c.out.boolean(false),
        b"verbatim" => c.out.verbatim("txt", b"This is a verbatim\nstring"),
        _ => return Err(Error::Static(PROTOCOL_TYPES)),
    }
    Ok(())
}

/// The number at the start of `b` as C's `strtod` finds it: leading white space, a sign,
/// digits with an optional fraction and exponent, or `inf`/`nan`; 0 when there is none.
fn strtod_prefix(b: &[u8]) -> f64 {
    let s = String::from_utf8_lossy(b);
    let s = s.trim_start();
    let bytes = s.as_bytes();
    let mut end = 0;
    if matches!(bytes.first(), Some(b'+' | b'-')) {
        end = 1;
    }
    let lower = s[end..].to_ascii_lowercase();
    for word in ["infinity", "inf", "nan"] {
        if lower.starts_with(word) {
            return s[..end + word.len()].parse().unwrap_or(0.0);
        }
    }
    let digits = |from: usize| {
        bytes[from..]
            .iter()
            .take_while(|c| c.is_ascii_digit())
            .count()
    };
    let int = digits(end);
    end += int;
    let mut mantissa = int;
    if bytes.get(end) == Some(&b'.') {
        let frac = digits(end + 1);
        mantissa += frac;
        if mantissa > 0 {
            end += 1 + frac;
        }
    }
    if mantissa == 0 {
        return 0.0;
    }
    if matches!(bytes.get(end), Some(b'e' | b'E')) {
        let sign = usize::from(matches!(bytes.get(end + 1), Some(b'+' | b'-')));
        let exp = digits(end + 1 + sign);
        if exp > 0 {
            end += 1 + sign + exp;
        }
    }
    s[..end].parse().unwrap_or(0.0)
}

/// The number at the start of `b` as C's `atoi` finds it (white space, a sign, digits); 0
/// when there is none. Saturates where C's would be undefined.
fn atoi_prefix(b: &[u8]) -> i64 {
    let start = b.iter().take_while(|c| c.is_ascii_whitespace()).count();
    let b = &b[start..];
    let (negative, b) = match b.first() {
        Some(b'-') => (true, &b[1..]),
        Some(b'+') => (false, &b[1..]),
        _ => (false, b),
    };
    let mut v: i64 = 0;
    for d in b.iter().take_while(|c| c.is_ascii_digit()) {
        v = v.saturating_mul(10).saturating_add(i64::from(d - b'0'));
    }
    if negative {
        -v
    } else {
        v
    }
}

#[cfg(test)]
mod tests;
