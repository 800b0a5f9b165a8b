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
    e.num("limit_maxbytes", server.config.num(Param::Maxmemory).max(0));
    e.num("accepting_conns", 1);
    e.num("threads", threads);
    e.num("conn_yields", s.sum("conn_yields"));
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
}

/// `stats settings`.
pub fn settings(server: &Server, mc: &McShared, emit: &mut dyn FnMut(&str, &[u8])) {
    let mut e = Emit(emit);
    let c = &server.config;
    let info = server.info.lock().clone();
    e.num("maxbytes", c.num(Param::Maxmemory));
    e.num("maxconns", c.num(Param::Maxclients));
    e.num("tcpport", info.memcached_port);
    e.num("udpport", 0);
    e.num("verbosity", mc.verbosity());
    e.num("oldest", 0);
    let evicting = larder_commands::config::eviction_policy(c).is_some();
    e.text("evictions", if evicting { "on" } else { "off" });
    e.text("domain_socket", "NULL");
    e.text("umask", "700");
    e.num("num_threads", info.threads);
    e.num("num_threads_per_udp", info.threads);
    e.text(
        "stat_key_prefix",
        &server.config.text(Param::MemcachedPrefixDelimiter),
    );
    e.text(
        "detail_enabled",
        if mc.detail.enabled() { "yes" } else { "no" },
    );
    e.num("reqs_per_event", crate::conn::READS_PER_TURN);
    e.text("cas_enabled", "yes");
    e.num("tcp_backlog", 511);
    e.text("binding_protocol", "auto-negotiate");
    // Both logins are always served; they are required while the default user has a
    // password (docs/security.md).
    let auth = if server.acl.auth_required() {
        "yes"
    } else {
        "no"
    };
    e.text("auth_enabled_sasl", auth);
    e.text("auth_enabled_ascii", auth);
    e.num("item_size_max", c.num(Param::MemcachedItemSizeMax));
    e.text("maxconns_fast", "yes");
    let t = mc.tune.get();
    e.text("slab_reassign", "no");
    e.num("slab_automove", t.slab_automove);
    e.text(
        "slab_automove_ratio",
        &format!("{:.2}", t.slab_automove_ratio),
    );
    e.num("slab_automove_window", 30);
    e.text("flush_enabled", "yes");
    e.text("dump_enabled", "no");
    e.text("lru_crawler", "no");
    e.text("meta_response_old", "no");
    e.text("lru_maintainer_thread", "yes");
    e.text("lru_segmented", if t.lru_segmented { "yes" } else { "no" });
    e.num("hot_lru_pct", t.hot_lru_pct);
    e.num("warm_lru_pct", t.warm_lru_pct);
    e.text("hot_max_factor", &format!("{:.2}", t.hot_max_factor));
    e.text("warm_max_factor", &format!("{:.2}", t.warm_max_factor));
    e.text("temp_lru", if t.temp_lru { "yes" } else { "no" });
    e.num("temporary_ttl", t.temporary_ttl);
    e.num("idle_timeout", c.num(Param::Timeout));
    e.num("watcher_logbuf_size", super::watch::WATCHER_BUF);
    e.num("worker_logbuf_size", super::watch::WORKER_BUF);
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
