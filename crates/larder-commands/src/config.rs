//! Configuration parameters: one table of definitions, values readable without locks on the
//! hot path, CONFIG GET/SET semantics and redis.conf-style file parsing.

use std::sync::atomic::{AtomicI64, Ordering};

use parking_lot::RwLock;

mod params;
mod parse;
pub use params::{ALIASES, PARAMS, TLS12_CIPHERS, TLS13_SUITES, TLS_AUTH_CLIENTS, TLS_PROTOCOLS};

/// A configuration parameter. The discriminant indexes [`Config`]'s value array.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(usize)]
pub enum Param {
    Bind,
    Port,
    MemcachedPort,
    MemcachedItemSizeMax,
    MemcachedPrefixDelimiter,
    HttpPort,
    HttpMaxBody,
    HttpCorsOrigins,
    HttpRateLimit,
    HttpSseMaxWatchers,
    HttpSseBufferLimit,
    TlsPort,
    MemcachedTlsPort,
    HttpTlsPort,
    TlsCertFile,
    TlsKeyFile,
    TlsCaCertFile,
    TlsAuthClients,
    TlsProtocols,
    TlsCiphersuites,
    TlsCiphers,
    TlsReplication,
    TlsClientCertFile,
    TlsClientKeyFile,
    Threads,
    WorkerYield,
    Databases,
    Requirepass,
    ProtectedMode,
    Maxclients,
    Timeout,
    TcpKeepalive,
    ProtoMaxBulkLen,
    ClientQueryBufferLimit,
    Hz,
    SlowlogLogSlowerThan,
    SlowlogMaxLen,
    Maxmemory,
    MaxmemoryPolicy,
    MaxmemorySamples,
    LfuLogFactor,
    LfuDecayTime,
    Loglevel,
    Logfile,
    LazyfreeLazyUserFlush,
    LazyfreeLazyUserDel,
    DisableThp,
    NotifyKeyspaceEvents,
    ClientOutputBufferLimit,
    LatencyTracking,
    LatencyTrackingInfoPercentiles,
    LatencyMonitorThreshold,
    ValueEventsBufferLimit,
    TrackingTableMaxKeys,
    HashMaxListpackEntries,
    HashMaxListpackValue,
    SetMaxIntsetEntries,
    ZsetMaxListpackEntries,
    ZsetMaxListpackValue,
    ListMaxListpackSize,
    HllSparseMaxBytes,
    LuaMemoryLimit,
    StreamNodeMaxBytes,
    StreamNodeMaxEntries,
    Dir,
    Appendonly,
    Appendfsync,
    Save,
    AutoAofRewritePercentage,
    AutoAofRewriteMinSize,
    Dbfilename,
    AofTestDropUnsynced,
    AofTestFailWrites,
    KeyLoadDelay,
    EnableDebugCommand,
    SnapshotCompression,
    BusyReplyThreshold,
    Aclfile,
    AcllogMaxLen,
    ReplBacklogSize,
    ReplBacklogTtl,
    ReplDisklessSync,
    ReplPingReplicaPeriod,
    ReplTimeout,
    Replicaof,
    Masterauth,
    Masteruser,
    ReplicaReadOnly,
    ReplicaServeStaleData,
    ReplicaIgnoreMaxmemory,
    MinReplicasToWrite,
    MinReplicasMaxLag,
    ReplicaPriority,
    ReplicaAnnounceIp,
    ReplicaAnnouncePort,
    ReplicaAnnounced,
}

/// How a parameter's value is parsed and shown.
#[derive(Clone, Copy, Debug)]
pub enum Kind {
    /// An integer in `min..=max`.
    Int { min: i64, max: i64 },
    /// Bytes, accepting Redis's units (1k, 1kb, 1mb, 1gb...); shown as plain bytes.
    Memory { min: i64, max: i64 },
    /// yes/no.
    Bool,
    /// One of a fixed set of words.
    Enum(&'static [&'static str]),
    /// Free text.
    Text,
    /// Parsed by its own function into the numeric form and the text CONFIG GET shows.
    Custom(fn(&str) -> Result<(i64, String), String>),
    /// Space-separated percentiles, each in `0..=100` (`latency-tracking-info-percentiles`);
    /// the number is their count.
    Percentiles,
}

/// Whether CONFIG SET may change a parameter at run time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mutability {
    Mutable,
    /// Set at startup only (flag or config file).
    Immutable,
}

/// The definition of one parameter.
pub struct ParamDef {
    pub param: Param,
    pub name: &'static str,
    pub kind: Kind,
    pub default: &'static str,
    pub mutability: Mutability,
    pub help: &'static str,
}

const MB: i64 = 1024 * 1024;

/// `maxmemory-policy` values in Redis's order (its error message lists them so); the index is
/// the stored number.
pub const MAXMEMORY_POLICIES: &[&str] = &[
    "volatile-lru",
    "volatile-lfu",
    "volatile-random",
    "volatile-ttl",
    "allkeys-lru",
    "allkeys-lfu",
    "allkeys-random",
    "noeviction",
];

/// The `save` rules in `value`: (seconds, changes) pairs. Redis's error texts.
pub fn save_rules(value: &str) -> Result<Vec<(u64, u64)>, String> {
    let words: Vec<&str> = value.split_whitespace().collect();
    if words.len() % 2 != 0 {
        return Err("Invalid save parameters".to_string());
    }
    words
        .chunks(2)
        .map(
            |pair| match (pair[0].parse::<u64>(), pair[1].parse::<u64>()) {
                (Ok(s), Ok(c)) => Ok((s, c)),
                _ => Err("Invalid save parameters".to_string()),
            },
        )
        .collect()
}

/// The eviction policy `maxmemory-policy` selects; `None` for noeviction.
#[inline]
pub fn eviction_policy(config: &Config) -> Option<larder_engine::EvictionPolicy> {
    use larder_engine::EvictionPolicy as P;
    Some(match config.num(Param::MaxmemoryPolicy) {
        0 => P::VolatileLru,
        1 => P::VolatileLfu,
        2 => P::VolatileRandom,
        3 => P::VolatileTtl,
        4 => P::AllkeysLru,
        5 => P::AllkeysLfu,
        6 => P::AllkeysRandom,
        _ => return None,
    })
}

/// Whether the selected policy tracks access frequency (OBJECT FREQ) rather than idle time.
#[inline]
pub fn lfu_selected(config: &Config) -> bool {
    eviction_policy(config).is_some_and(larder_engine::EvictionPolicy::is_lfu)
}

/// Find a parameter by name or alias (case-insensitive).
pub fn lookup(name: &str) -> Option<&'static ParamDef> {
    PARAMS
        .iter()
        .find(|d| d.name.eq_ignore_ascii_case(name))
        .or_else(|| {
            ALIASES
                .iter()
                .find(|(alias, _)| alias.eq_ignore_ascii_case(name))
                .map(|&(_, p)| &PARAMS[p as usize])
        })
}

/// The compact-encoding limits in force (`larder_engine::Limits`), read from the parameters.
pub fn limits(config: &Config) -> larder_engine::Limits {
    let n = |p| usize::try_from(config.num(p)).unwrap_or(0);
    larder_engine::Limits {
        hash_max_listpack_entries: n(Param::HashMaxListpackEntries),
        hash_max_listpack_value: n(Param::HashMaxListpackValue),
        set_max_intset_entries: n(Param::SetMaxIntsetEntries),
        zset_max_listpack_entries: n(Param::ZsetMaxListpackEntries),
        zset_max_listpack_value: n(Param::ZsetMaxListpackValue),
        list_max_listpack_size: config.num(Param::ListMaxListpackSize),
        stream_node: larder_engine::stream::NodeLimits {
            max_bytes: usize::try_from(config.num(Param::StreamNodeMaxBytes)).unwrap_or(usize::MAX),
            max_entries: usize::try_from(config.num(Param::StreamNodeMaxEntries))
                .unwrap_or(usize::MAX),
        },
    }
}

/// Parse a memory value like Redis's `memtoll`: digits with an optional unit
/// (b, k, kb, m, mb, g, gb; case-insensitive).
pub fn parse_memory(s: &str) -> Option<i64> {
    // Redis's memory configs are unsigned: "-1" is not a memory value.
    if s.contains('-') {
        return None;
    }
    let lower = s.to_ascii_lowercase();
    let digits_end = lower
        .find(|c: char| !(c.is_ascii_digit() || c == '-'))
        .unwrap_or(lower.len());
    let (num, unit) = lower.split_at(digits_end);
    let mul: i64 = match unit {
        "" | "b" => 1,
        "k" => 1000,
        "kb" => 1024,
        "m" => 1000 * 1000,
        "mb" => 1024 * 1024,
        "g" => 1000 * 1000 * 1000,
        "gb" => 1024 * 1024 * 1024,
        _ => return None,
    };
    num.parse::<i64>().ok()?.checked_mul(mul)
}

struct Slot {
    num: AtomicI64,
    text: RwLock<String>,
}

/// A check that CONFIG SET runs before it stores new values of the parameters it watches,
/// with a lookup of each parameter's value as it would be after the CONFIG SET. An error
/// fails the CONFIG SET with nothing changed; success commits whatever the hook built from
/// them (the TLS ports' certificates: a bad file must not replace working ones).
pub struct ApplyHook {
    pub params: &'static [Param],
    #[allow(clippy::type_complexity)]
    pub apply: Box<dyn Fn(&dyn Fn(Param) -> String) -> Result<(), String> + Send + Sync>,
}

/// Current values of every parameter.
pub struct Config {
    slots: Vec<Slot>,
    hooks: RwLock<Vec<ApplyHook>>,
}

impl Default for Config {
    fn default() -> Self {
        Config::new()
    }
}

impl Config {
    /// All parameters at their defaults.
    pub fn new() -> Config {
        let slots = PARAMS
            .iter()
            .map(|_| Slot {
                num: AtomicI64::new(0),
                text: RwLock::new(String::new()),
            })
            .collect();
        let c = Config {
            slots,
            hooks: RwLock::new(Vec::new()),
        };
        for d in PARAMS {
            // Defaults are valid by construction (checked by a test).
            let _ = c.apply(d, d.default);
        }
        c
    }

    /// A copy of `other`'s values (a scratch server that loads the same data directory the
    /// same way: DEBUG LOADAOF).
    pub fn copy_of(other: &Config) -> Config {
        let c = Config::new();
        for d in PARAMS {
            let _ = c.apply(d, &other.text(d.param));
        }
        c
    }

    /// A numeric (int, memory, bool as 0/1, enum as index) parameter. Lock-free.
    #[inline]
    pub fn num(&self, p: Param) -> i64 {
        self.slots[p as usize].num.load(Ordering::Relaxed)
    }

    /// A parameter's value as CONFIG GET shows it.
    pub fn text(&self, p: Param) -> String {
        self.slots[p as usize].text.read().clone()
    }

    /// Validate and store `value`. `Err` is the reason, as CONFIG SET words it.
    pub fn apply(&self, d: &ParamDef, value: &str) -> Result<(), String> {
        let (num, shown) = parse_value(d, value)?;
        let slot = &self.slots[d.param as usize];
        *slot.text.write() = shown;
        slot.num.store(num, Ordering::Relaxed);
        Ok(())
    }
}

/// Parse a value into its numeric form (for lock-free reads) and the text CONFIG GET shows.
fn parse_value(d: &ParamDef, value: &str) -> Result<(i64, String), String> {
    Ok(match d.kind {
        Kind::Int { min, max } => {
            let v: i64 = value
                .parse()
                .map_err(|_| "argument couldn't be parsed into an integer".to_string())?;
            if v < min || v > max {
                return Err(format!(
                    "argument must be between {min} and {max} inclusive"
                ));
            }
            // Redis stores hz clamped to its supported range (CONFIG GET shows the clamped value).
            let v = if d.param == Param::Hz {
                v.clamp(1, 500)
            } else {
                v
            };
            (v, v.to_string())
        }
        Kind::Memory { min, max } => {
            let v = parse_memory(value).ok_or("argument must be a memory value")?;
            if v < min || v > max {
                return Err(format!(
                    "argument must be between {min} and {max} inclusive"
                ));
            }
            (v, v.to_string())
        }
        Kind::Bool => match value.to_ascii_lowercase().as_str() {
            "yes" => (1, "yes".to_string()),
            "no" => (0, "no".to_string()),
            _ => return Err("argument must be 'yes' or 'no'".to_string()),
        },
        Kind::Enum(words) => {
            let i = words
                .iter()
                .position(|w| w.eq_ignore_ascii_case(value))
                .ok_or_else(|| {
                    format!(
                        "argument(s) must be one of the following: {}",
                        words.join(", ")
                    )
                })?;
            (i as i64, words[i].to_string())
        }
        Kind::Text => (0, value.to_string()),
        Kind::Custom(parse) => parse(value)?,
        Kind::Percentiles => {
            let percentiles = parse_percentiles(value)?;
            let shown: Vec<String> = percentiles.iter().map(|&p| format_percentile(p)).collect();
            (percentiles.len() as i64, shown.join(" "))
        }
    })
}

/// Parse `latency-tracking-info-percentiles` as Redis does: the value split at each single
/// space (so "" is no percentiles, and doubled spaces make an empty, invalid word), each word
/// a number (`strtod` syntax, no NaN) in `0..=100`. Errors are Redis's texts.
pub fn parse_percentiles(value: &str) -> Result<Vec<f64>, String> {
    if value.is_empty() {
        return Ok(Vec::new());
    }
    value
        .split(' ')
        .map(|word| {
            let p = parse_strtod(word).ok_or_else(|| {
                "Invalid latency-tracking-info-percentiles parameters".to_string()
            })?;
            if !(0.0..=100.0).contains(&p) {
                return Err(
                    "latency-tracking-info-percentiles parameters should sit between [0.0,100.0]"
                        .to_string(),
                );
            }
            Ok(p)
        })
        .collect()
}

/// A whole word as C's `strtod` reads it (decimal, exponent, `inf`, hexadecimal integers),
/// rejecting NaN and surrounding space as Redis's `string2d` does.
fn parse_strtod(word: &str) -> Option<f64> {
    let (negative, digits) = match word.as_bytes().first() {
        Some(b'-') => (true, &word[1..]),
        Some(b'+') => (false, &word[1..]),
        _ => (false, word),
    };
    let hex = digits
        .strip_prefix("0x")
        .or_else(|| digits.strip_prefix("0X"))
        .filter(|h| !h.is_empty() && h.bytes().all(|b| b.is_ascii_hexdigit()));
    let v = match hex {
        Some(h) => u128::from_str_radix(h, 16).ok()? as f64,
        None if digits.starts_with(['+', '-']) => return None,
        None => digits.parse::<f64>().ok()?,
    };
    let v = if negative { -v } else { v };
    (!v.is_nan()).then_some(v)
}

/// A percentile as Redis shows it (CONFIG GET, INFO field names): `%f`, then trailing zeros
/// and a trailing dot dropped ("99.9", "50").
pub fn format_percentile(p: f64) -> String {
    let mut s = format!("{p:.6}");
    if s.contains('.') {
        let trimmed = s.trim_end_matches('0').trim_end_matches('.').len();
        s.truncate(trimmed);
    }
    s
}

impl Config {
    /// Installs a hook that CONFIG SET of its parameters runs (see [`ApplyHook`]).
    pub fn add_hook(&self, hook: ApplyHook) {
        self.hooks.write().push(hook);
    }

    /// CONFIG SET of several `name value` pairs, all or nothing: every pair is validated
    /// (and handed to the hooks that watch it) before any is applied. Errors carry Redis's
    /// full text.
    pub fn set_many(&self, pairs: &[(&str, &str)]) -> Result<(), String> {
        let mut seen: Vec<&str> = Vec::new();
        let mut defs = Vec::new();
        for (name, value) in pairs {
            let Some(d) = lookup(name) else {
                return Err(format!(
                    "ERR Unknown option or number of arguments for CONFIG SET - '{name}'"
                ));
            };
            if seen.iter().any(|s| s.eq_ignore_ascii_case(name)) {
                return Err(format!(
                    "ERR CONFIG SET failed (possibly related to argument '{name}') - duplicate parameter"
                ));
            }
            seen.push(name);
            if d.mutability == Mutability::Immutable {
                return Err(format!(
                    "ERR CONFIG SET failed (possibly related to argument '{name}') - can't set immutable config"
                ));
            }
            // Validate every pair first so that nothing changes if a later one fails.
            validate(d, value).map_err(|why| {
                format!("ERR CONFIG SET failed (possibly related to argument '{name}') - {why}")
            })?;
            defs.push((d, *value));
        }
        for hook in self.hooks.read().iter() {
            let Some((d, _)) = defs.iter().find(|(d, _)| hook.params.contains(&d.param)) else {
                continue;
            };
            // Each value as CONFIG GET would show it after the CONFIG SET.
            let after = |p: Param| match defs.iter().rev().find(|(d, _)| d.param == p) {
                Some((d, value)) => parse_value(d, value)
                    .map(|(_, shown)| shown)
                    .unwrap_or_default(),
                None => self.text(p),
            };
            (hook.apply)(&after).map_err(|why| {
                format!(
                    "ERR CONFIG SET failed (possibly related to argument '{}') - {why}",
                    d.name
                )
            })?;
        }
        for (d, value) in defs {
            self.apply(d, value).map_err(|why| {
                format!(
                    "ERR CONFIG SET failed (possibly related to argument '{}') - {why}",
                    d.name
                )
            })?;
        }
        Ok(())
    }

    /// `(name, value)` of every parameter whose name matches one of the glob patterns.
    pub fn matching(&self, patterns: &[&[u8]]) -> Vec<(&'static str, String)> {
        PARAMS
            .iter()
            .filter(|d| {
                patterns
                    .iter()
                    .any(|p| larder_engine::glob::matches(p, d.name.as_bytes(), true))
            })
            .map(|d| (d.name, self.text(d.param)))
            .collect()
    }
}

/// Check a value without storing it.
pub fn validate(d: &ParamDef, value: &str) -> Result<(), String> {
    parse_value(d, value).map(|_| ())
}

/// Split a redis.conf line into words: whitespace-separated, with "double" and 'single'
/// quotes. `None` for unbalanced quotes.
pub fn split_config_line(line: &str) -> Option<Vec<String>> {
    let mut out = Vec::new();
    let mut chars = line.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        let Some(&c) = chars.peek() else {
            return Some(out);
        };
        let mut word = String::new();
        if c == '"' || c == '\'' {
            chars.next();
            let mut closed = false;
            while let Some(ch) = chars.next() {
                if ch == c {
                    closed = true;
                    break;
                }
                if ch == '\\' && c == '"' {
                    match chars.next() {
                        Some('n') => word.push('\n'),
                        Some('t') => word.push('\t'),
                        Some('r') => word.push('\r'),
                        Some(o) => word.push(o),
                        None => return None,
                    }
                } else {
                    word.push(ch);
                }
            }
            if !closed {
                return None;
            }
        } else {
            while let Some(&ch) = chars.peek() {
                if ch.is_whitespace() {
                    break;
                }
                word.push(ch);
                chars.next();
            }
        }
        out.push(word);
    }
}

/// Parse a redis.conf-style file: `name value` per line, `#` comments, blank lines. Returns
/// the `(name, value)` pairs in order. An unknown name, a wrong number of words or a bad value
/// is an error naming the line.
pub fn parse_file(text: &str) -> Result<Vec<(String, String)>, String> {
    let mut out = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let bad = |why: &str| format!("line {}: '{}': {}", i + 1, raw, why);
        let words = split_config_line(line).ok_or_else(|| bad("unbalanced quotes"))?;
        let name = words[0].to_ascii_lowercase();
        let Some(d) = lookup(&name) else {
            return Err(bad("Bad directive or wrong number of arguments"));
        };
        let value = match (d.param, words.len()) {
            (_, 2) => words[1].clone(),
            // `bind` takes several addresses, `latency-tracking-info-percentiles` several
            // numbers, `replicaof` a host and a port; `requirepass ""` may be written with no
            // value.
            (Param::Bind | Param::LatencyTrackingInfoPercentiles | Param::Replicaof, n)
                if n > 2 =>
            {
                words[1..].join(" ")
            }
            _ => return Err(bad("Bad directive or wrong number of arguments")),
        };
        validate(d, &value).map_err(|why| bad(&why))?;
        out.push((name, value));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_is_in_param_order_and_defaults_are_valid() {
        for (i, d) in PARAMS.iter().enumerate() {
            assert_eq!(d.param as usize, i, "{}", d.name);
            validate(d, d.default).unwrap_or_else(|e| panic!("{}: {e}", d.name));
        }
    }

    #[test]
    fn memory_units() {
        assert_eq!(parse_memory("1gb"), Some(1 << 30));
        assert_eq!(parse_memory("512MB"), Some(512 << 20));
        assert_eq!(parse_memory("1k"), Some(1000));
        assert_eq!(parse_memory("100"), Some(100));
        assert_eq!(parse_memory("1xb"), None);
        assert_eq!(parse_memory("-1"), None);
        assert_eq!(parse_memory("-1kb"), None);
    }

    #[test]
    fn set_many_is_atomic() {
        let c = Config::new();
        let err = c
            .set_many(&[("timeout", "5"), ("maxclients", "x")])
            .expect_err("must fail");
        assert!(err.contains("'maxclients'"), "{err}");
        assert_eq!(c.num(Param::Timeout), 0);
        c.set_many(&[("timeout", "5"), ("proto-max-bulk-len", "2mb")])
            .expect("valid");
        assert_eq!(c.num(Param::Timeout), 5);
        assert_eq!(c.text(Param::ProtoMaxBulkLen), "2097152");
        assert!(c
            .set_many(&[("port", "1")])
            .expect_err("must fail")
            .contains("immutable"));
        assert!(c
            .set_many(&[("nope", "1")])
            .expect_err("must fail")
            .contains("Unknown option"));
    }

    /// A hook sees the values as they will be after the CONFIG SET, normalized, and its
    /// refusal leaves every value as it was.
    #[test]
    fn apply_hooks_see_the_new_values_and_can_refuse() {
        let c = Config::new();
        let seen = std::sync::Arc::new(parking_lot::Mutex::new(Vec::new()));
        let log = std::sync::Arc::clone(&seen);
        c.add_hook(ApplyHook {
            params: &[Param::TlsCertFile, Param::TlsAuthClients],
            apply: Box::new(move |after| {
                let (cert, auth) = (after(Param::TlsCertFile), after(Param::TlsAuthClients));
                log.lock().push(format!("{cert} {auth}"));
                if cert == "bad" {
                    return Err("no good".to_string());
                }
                Ok(())
            }),
        });
        c.set_many(&[("timeout", "5")]).expect("not watched");
        assert!(seen.lock().is_empty());
        c.set_many(&[("tls-auth-clients", "OPTIONAL"), ("tls-cert-file", "a.pem")])
            .expect("accepted");
        let err = c
            .set_many(&[("timeout", "7"), ("tls-cert-file", "bad")])
            .expect_err("refused");
        assert_eq!(
            err,
            "ERR CONFIG SET failed (possibly related to argument 'tls-cert-file') - no good"
        );
        assert_eq!(*seen.lock(), ["a.pem optional", "bad optional"]);
        assert_eq!(c.text(Param::TlsCertFile), "a.pem");
        assert_eq!(c.num(Param::Timeout), 5);
    }

    #[test]
    fn maxmemory_parameters() {
        let c = Config::new();
        assert_eq!(eviction_policy(&c), None);
        assert_eq!(c.text(Param::MaxmemorySamples), "5");
        assert_eq!(c.text(Param::LfuLogFactor), "10");
        assert_eq!(c.text(Param::LfuDecayTime), "1");
        c.set_many(&[("maxmemory-policy", "ALLKEYS-LFU")])
            .expect("valid");
        assert_eq!(c.text(Param::MaxmemoryPolicy), "allkeys-lfu");
        assert!(lfu_selected(&c));
        for (i, name) in MAXMEMORY_POLICIES.iter().enumerate() {
            c.set_many(&[("maxmemory-policy", name)]).expect("valid");
            assert_eq!(eviction_policy(&c).is_none(), i == 7, "{name}");
        }
        let e = c
            .set_many(&[("maxmemory-policy", "nosuch")])
            .expect_err("bad");
        assert!(e.ends_with("argument(s) must be one of the following: volatile-lru, volatile-lfu, volatile-random, volatile-ttl, allkeys-lru, allkeys-lfu, allkeys-random, noeviction"), "{e}");
        let e = c.set_many(&[("maxmemory", "-1")]).expect_err("bad");
        assert!(
            e.ends_with("'maxmemory') - argument must be a memory value"),
            "{e}"
        );
        let e = c.set_many(&[("maxmemory-samples", "0")]).expect_err("bad");
        assert!(
            e.ends_with("argument must be between 1 and 2147483647 inclusive"),
            "{e}"
        );
        for p in ["lfu-log-factor", "lfu-decay-time", "hz"] {
            let e = c.set_many(&[(p, "-1")]).expect_err("bad");
            assert!(
                e.ends_with("argument must be between 0 and 2147483647 inclusive"),
                "{e}"
            );
        }
        c.set_many(&[("hz", "0")]).expect("valid");
        assert_eq!((c.num(Param::Hz), c.text(Param::Hz)), (1, "1".to_string()));
        c.set_many(&[("hz", "1000")]).expect("valid");
        assert_eq!(
            (c.num(Param::Hz), c.text(Param::Hz)),
            (500, "500".to_string())
        );
        c.set_many(&[("hz", "20")]).expect("valid");
        assert_eq!(c.text(Param::Hz), "20");
    }

    #[test]
    fn percentiles_parse_and_show_like_redis() {
        assert_eq!(parse_percentiles(""), Ok(vec![]));
        assert_eq!(parse_percentiles("50 99 99.9"), Ok(vec![50.0, 99.0, 99.9]));
        assert_eq!(parse_percentiles("0x10 +1e1 5."), Ok(vec![16.0, 10.0, 5.0]));
        for bad in [" ", "50  99", "50 ", "abc", "nan", "--1", "1e", "0x"] {
            assert!(
                parse_percentiles(bad)
                    .expect_err(bad)
                    .starts_with("Invalid"),
                "{bad:?}"
            );
        }
        for out in ["-1", "100.1", "inf", "-inf"] {
            assert!(
                parse_percentiles(out)
                    .expect_err(out)
                    .ends_with("[0.0,100.0]"),
                "{out:?}"
            );
        }
        assert_eq!(format_percentile(99.9), "99.9");
        assert_eq!(format_percentile(50.0), "50");
        assert_eq!(format_percentile(99.99999), "99.99999");
        assert_eq!(format_percentile(99.9999999), "100");
        let c = Config::new();
        assert_eq!(c.text(Param::LatencyTrackingInfoPercentiles), "50 99 99.9");
        assert_eq!(c.num(Param::LatencyTrackingInfoPercentiles), 3);
        assert_eq!(
            parse_file("latency-tracking-info-percentiles 90 99.5\n"),
            Ok(vec![(
                "latency-tracking-info-percentiles".into(),
                "90 99.5".into()
            )])
        );
    }

    #[test]
    fn file_errors_name_the_line() {
        assert!(parse_file("port 7000\n# c\n\ntimeout 3\n").is_ok());
        let e = parse_file("port 7000\nfoo bar\n").expect_err("must fail");
        assert!(e.starts_with("line 2: 'foo bar'"), "{e}");
        let e = parse_file("timeout x\n").expect_err("must fail");
        assert!(e.contains("line 1"), "{e}");
        assert!(parse_file("timeout\n").is_err());
        assert_eq!(
            parse_file("requirepass \"a b\"\n").ok(),
            Some(vec![("requirepass".into(), "a b".into())])
        );
    }
}
