//! memcached's `stats` answers: the counters the door keeps, and the general, `settings` and
//! `conns` groups, written through a callback so that the text and binary protocols share
//! them.

use std::sync::atomic::{AtomicU64, Ordering};

use larder_commands::config::Param;
use larder_commands::Server;

use super::McShared;

macro_rules! counters {
    ($($(#[$doc:meta])* $name:ident,)*) => {
        /// Counters of one worker thread (written by that thread only, summed for `stats`).
        #[derive(Default)]
        pub struct Counters {
            $($(#[$doc])* pub $name: AtomicU64,)*
        }

        impl Counters {
            fn all(&self) -> impl Iterator<Item = (&'static str, &AtomicU64)> {
                [$((stringify!($name), &self.$name),)*].into_iter()
            }
        }
    };
}

counters! {
    /// Keys requested by get, gets, gat, gats, mg and the binary gets.
    cmd_get,
    /// Storage requests (set, add, replace, append, prepend, cas, ms and the binary ones).
    cmd_set,
    /// flush_all and binary FLUSH.
    cmd_flush,
    /// touch, gat, gats, binary TOUCH and GAT.
    cmd_touch,
    /// Meta commands (mg, ms, md, ma, mn, me).
    cmd_meta,
    get_hits,
    get_misses,
    /// Misses that found the item expired (and removed it).
    get_expired,
    /// Misses because of flush_all: always 0, since larder removes flushed items at once.
    get_flushed,
    delete_misses,
    delete_hits,
    incr_misses,
    incr_hits,
    decr_misses,
    decr_hits,
    cas_misses,
    cas_hits,
    cas_badval,
    touch_hits,
    touch_misses,
    /// Values refused for size.
    store_too_large,
    /// Stores refused because used memory is over maxmemory.
    store_no_memory,
    /// Logins tried: SASL AUTH and STEP that ended the exchange, and the text protocol's
    /// authenticating `set`.
    auth_cmds,
    /// Logins refused.
    auth_errors,
    bytes_read,
    bytes_written,
    /// Times a connection gave up the worker with requests still unread (fairness).
    conn_yields,
    /// Items stored.
    total_items,
}

/// The door's counters, one slot per worker thread.
pub struct Stats {
    threads: Box<[Counters]>,
}

impl Stats {
    /// Counters for `threads` workers.
    pub fn new(threads: usize) -> Stats {
        Stats {
            threads: (0..threads.max(1)).map(|_| Counters::default()).collect(),
        }
    }

    /// The counters of worker `worker` (the last slot for out-of-range indices, which only
    /// tests use).
    pub fn thread(&self, worker: usize) -> &Counters {
        let last = self.threads.len() - 1;
        &self.threads[worker.min(last)]
    }

    fn sum(&self, name: &str) -> u64 {
        self.threads
            .iter()
            .flat_map(|t| t.all())
            .filter(|(n, _)| *n == name)
            .map(|(_, c)| c.load(Ordering::Relaxed))
            .sum()
    }

    /// `stats reset`: every counter back to 0.
    pub fn reset(&self) {
        for t in self.threads.iter() {
            for (_, c) in t.all() {
                c.store(0, Ordering::Relaxed);
            }
        }
    }
}

/// The version memcached clients see: the memcached release whose behaviour larder follows.
pub const VERSION: &str = "1.6.18";

/// User and system CPU seconds of the process, from /proc/self/stat.
fn cpu_seconds() -> (String, String) {
    const TICKS_PER_S: u64 = 100;
    let ticks = std::fs::read_to_string("/proc/self/stat")
        .ok()
        .and_then(|text| {
            let after_name = text.get(text.rfind(')')? + 1..)?.to_string();
            let mut fields = after_name.split_whitespace().skip(11);
            let user: u64 = fields.next()?.parse().ok()?;
            let sys: u64 = fields.next()?.parse().ok()?;
            Some((user, sys))
        })
        .unwrap_or_default();
    let fmt = |t: u64| {
        let micros = t * (1_000_000 / TICKS_PER_S);
        format!("{}.{:06}", micros / 1_000_000, micros % 1_000_000)
    };
    (fmt(ticks.0), fmt(ticks.1))
}

/// A stats sink: `STAT` lines or binary STAT packets.
struct Emit<'a>(&'a mut dyn FnMut(&str, &[u8]));

impl Emit<'_> {
    fn num(&mut self, name: &str, v: impl std::fmt::Display) {
        (self.0)(name, v.to_string().as_bytes());
    }

    fn text(&mut self, name: &str, v: &str) {
        (self.0)(name, v.as_bytes());
    }
}

/// The general statistics, in memcached's order.
pub fn general(server: &Server, mc: &McShared, now_ms: u64, emit: &mut dyn FnMut(&str, &[u8])) {
    let mut e = Emit(emit);
    e.num("pid", std::process::id());
    e.num("uptime", server.started.elapsed().as_secs());
    e.num("time", now_ms / 1000);
    e.text("version", VERSION);
    e.text("larder_version", env!("CARGO_PKG_VERSION"));
    e.text("libevent", "none");
    e.num("pointer_size", usize::BITS);
    let (user, sys) = cpu_seconds();
    e.text("rusage_user", &user);
    e.text("rusage_system", &sys);
    let s = &mc.stats;
    let db = server.keyspace.db(0);
    let threads = server.info.lock().threads;
    let curr = mc.curr_connections();
    e.num("max_connections", server.config.num(Param::Maxclients));
    e.num("curr_connections", curr);
    e.num("total_connections", mc.total_connections());
    e.num("rejected_connections", mc.rejected_connections());
    e.num("connection_structures", curr);
    for name in [
        "cmd_get",
        "cmd_set",
        "cmd_flush",
        "cmd_touch",
        "cmd_meta",
        "get_hits",
        "get_misses",
        "get_expired",
        "get_flushed",
        "delete_misses",
        "delete_hits",
        "incr_misses",
        "incr_hits",
        "decr_misses",
        "decr_hits",
        "cas_misses",
        "cas_hits",
        "cas_badval",
        "touch_hits",
        "touch_misses",
        "store_too_large",
        "store_no_memory",
    ] {
        e.num(name, s.sum(name));
    }
    e.num("auth_cmds", s.sum("auth_cmds"));
    e.num("auth_errors", s.sum("auth_errors"));
    e.num("bytes_read", s.sum("bytes_read"));
    e.num("bytes_written", s.sum("bytes_written"));
    e.num("limit_maxbytes", maxbytes(server));
    e.num("accepting_conns", 1);
    e.num("threads", threads);
    e.num("conn_yields", s.sum("conn_yields"));
    e.num("lru_crawler_running", u8::from(mc.crawler.running()));
    e.num("lru_crawler_starts", mc.crawler.starts());
    for (name, v) in mc.watch.stats() {
        e.num(name, v);
    }
    e.num("bytes", db.used_bytes());
    e.num("curr_items", db.len());
    e.num("total_items", s.sum("total_items"));
    e.num("expired_unfetched", 0);
    e.num("evicted_unfetched", 0);
    e.num("evictions", server.keyspace.evicted_keys());
    e.num("reclaimed", 0);
    e.num("crawler_reclaimed", mc.crawler.reclaimed());
    e.num("crawler_items_checked", mc.crawler.checked());
}

/// The memory limit memcached clients see: `maxmemory`, or when it is 0 (no limit) the
/// machine's physical memory, the only bound larder then runs against.
pub fn maxbytes(server: &Server) -> u64 {
    match u64::try_from(server.config.num(Param::Maxmemory)) {
        Ok(n) if n > 0 => n,
        _ => physical_memory(),
    }
}

/// Physical memory in bytes, from /proc/meminfo (0 if unreadable).
fn physical_memory() -> u64 {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|text| {
            let line = text.lines().find(|l| l.starts_with("MemTotal:"))?;
            let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
            Some(kib * 1024)
        })
        .unwrap_or(0)
}

/// `stats settings`: every setting memcached 1.6.18 prints, in its order, with larder's
/// value where larder has the setting and memcached's default where the setting has no
/// meaning in larder (docs/memcached.md lists which).
pub fn settings(server: &Server, mc: &McShared, emit: &mut dyn FnMut(&str, &[u8])) {
    let mut e = Emit(emit);
    let c = &server.config;
    let info = server.info.lock().clone();
    let yes_no = |b: bool| if b { "yes" } else { "no" };
    e.num("maxbytes", maxbytes(server));
    e.num("maxconns", c.num(Param::Maxclients));
    e.num("tcpport", info.memcached_port);
    e.num("udpport", 0);
    let hosts: Vec<&str> = mc
        .listeners
        .iter()
        .filter_map(|(_, addr)| addr.rsplit_once(':').map(|(host, _)| host))
        .collect();
    if !hosts.is_empty() {
        e.text("inter", &hosts.join(","));
    }
    e.num("verbosity", mc.verbosity());
    e.num("oldest", 0);
    let evicting = larder_commands::config::eviction_policy(c).is_some();
    e.text("evictions", if evicting { "on" } else { "off" });
    e.text("domain_socket", "NULL");
    e.text("umask", "700");
    e.text("shutdown_command", "no");
    e.text("growth_factor", "1.25");
    e.num("chunk_size", 48);
    e.num("num_threads", info.threads);
    e.num("num_threads_per_udp", info.threads);
    e.text("stat_key_prefix", &c.text(Param::MemcachedPrefixDelimiter));
    e.text("detail_enabled", yes_no(mc.detail.enabled()));
    e.num("reqs_per_event", crate::conn::READS_PER_TURN);
    e.text("cas_enabled", "yes");
    e.num("tcp_backlog", 511);
    e.text("binding_protocol", "auto-negotiate");
    // Both logins are always served; they are required while the default user has a
    // password (docs/security.md).
    let auth = yes_no(server.acl.auth_required());
    e.text("auth_enabled_sasl", auth);
    e.text("auth_enabled_ascii", auth);
    e.num("item_size_max", c.num(Param::MemcachedItemSizeMax));
    e.text("maxconns_fast", "yes");
    e.num("hashpower_init", 0);
    // larder has no slab pages to move and no segmented LRU (`tune.rs`): memcached's
    // defaults are shown for their parameters, with automove, the segmented LRU and the
    // temporary LRU off.
    e.text("slab_reassign", "no");
    e.num("slab_automove", 0);
    e.text("slab_automove_ratio", "0.80");
    e.num("slab_automove_window", 30);
    e.num("slab_chunk_max", super::slabs::CHUNK_MAX);
    let crawler = &mc.crawler;
    e.text("lru_crawler", yes_no(crawler.enabled()));
    // One pass over every item without pauses (`crawler/mod.rs`).
    e.num("lru_crawler_sleep", 0);
    e.num("lru_crawler_tocrawl", 0);
    e.num("tail_repair_time", 0);
    e.text("flush_enabled", "yes");
    e.text("dump_enabled", "yes");
    e.text("hash_algorithm", "xxh3");
    e.text("lru_maintainer_thread", "yes");
    e.text("lru_segmented", "no");
    e.num("hot_lru_pct", 20);
    e.num("warm_lru_pct", 40);
    e.text("hot_max_factor", "0.20");
    e.text("warm_max_factor", "2.00");
    e.text("temp_lru", "no");
    e.num("temporary_ttl", 61);
    e.num("idle_timeout", c.num(Param::Timeout));
    e.num("watcher_logbuf_size", super::watch::WATCHER_BUF);
    e.num("worker_logbuf_size", super::watch::WORKER_BUF);
    e.num("read_buf_mem_limit", 0);
    e.text("track_sizes", "no");
    e.text("inline_ascii_response", "no");
    e.num("ext_item_size", 512);
    e.num("ext_item_age", u32::MAX);
    e.num("ext_low_ttl", 0);
    e.num("ext_recache_rate", 2000);
    e.num("ext_wbuf_size", 4_194_304);
    e.num("ext_compact_under", 0);
    e.num("ext_drop_under", 0);
    e.num("ext_max_sleep", 1_000_000);
    e.text("ext_max_frag", "0.80");
    e.text("slab_automove_freeratio", "0.010");
    e.text("ext_drop_unread", "no");
    // The door's TLS port (memcached-tls-port) with the server's certificate, if set.
    let tls = c.num(Param::MemcachedTlsPort) != 0;
    let file = |p: Param| match c.text(p) {
        f if tls && !f.is_empty() => f,
        _ => "(null)".to_string(),
    };
    e.text("ssl_enabled", yes_no(tls));
    e.text("ssl_chain_cert", &file(Param::TlsCertFile));
    e.text("ssl_key", &file(Param::TlsKeyFile));
    e.num("ssl_verify_mode", 0);
    e.num("ssl_keyformat", 1);
    e.text("ssl_ciphers", "NULL");
    e.text("ssl_ca_cert", "NULL");
    e.num("ssl_wbuf_size", 16_384);
    e.text("ssl_session_cache", "no");
    e.text("ssl_kernel_tls", "no");
    e.text("ssl_min_version", "tlsv1.2");
    e.text("num_napi_ids", "(null)");
    e.text("memory_file", "(null)");
}

/// `stats conns`: the listening sockets, then one block per memcached connection.
/// `self_id` is the asking connection, which memcached shows as parsing its command.
pub fn conns(mc: &McShared, self_id: u64, now_ms: u64, emit: &mut dyn FnMut(&str, &[u8])) {
    let mut e = Emit(emit);
    for (fd, addr) in &mc.listeners {
        e.text(&format!("{fd}:addr"), &format!("tcp:{addr}"));
        e.text(&format!("{fd}:state"), "conn_listening");
    }
    for h in mc.conn_handles() {
        let fd = h.fd;
        e.text(&format!("{fd}:addr"), &format!("tcp:{}", h.addr));
        e.text(&format!("{fd}:listen_addr"), &format!("tcp:{}", h.laddr));
        let state = if h.id == self_id {
            "conn_parse_cmd"
        } else if h.output_buf_bytes.load(Ordering::Relaxed) > 0 {
            "conn_mwrite"
        } else if h.query_buf_bytes.load(Ordering::Relaxed) > 0 {
            "conn_nread"
        } else {
            "conn_waiting"
        };
        e.text(&format!("{fd}:state"), state);
        let idle_s = now_ms.saturating_sub(h.last_interaction_ms.load(Ordering::Relaxed)) / 1000;
        e.num(&format!("{fd}:secs_since_last_cmd"), idle_s);
    }
}
