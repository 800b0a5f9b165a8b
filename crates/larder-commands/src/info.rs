//! INFO: sections and fields with Redis's names.
//!
//! Each section is a function that appends `field:value\r\n` lines to a `String`; [`render`]
//! joins the selected sections in Redis's order with Redis's separators. Figures the server
//! does not have (fork and copy-on-write, which larder's snapshots do without)
//! are reported with the values Redis reports when the feature is idle, so monitoring tools
//! parse them.

use std::collections::VecDeque;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use crate::config::Param;
use crate::state::Server;

use crate::connection::REDIS_VERSION;

mod memory;

use memory::memory_section;
pub use memory::{bytes_to_human, memory_report};

#[cfg(target_os = "linux")]
const MULTIPLEXING_API: &str = "epoll";
#[cfg(not(target_os = "linux"))]
const MULTIPLEXING_API: &str = "kqueue";

/// Linux reports process CPU time in ticks of `USER_HZ`, which is 100 on every architecture.
const CLOCK_TICKS_PER_S: u64 = 100;

/// One INFO section.
struct Section {
    /// The argument that selects it (lower case).
    name: &'static str,
    /// The `# Title` line.
    title: &'static str,
    /// Part of `INFO` without arguments.
    default: bool,
    write: fn(&Ctx<'_>, &mut String),
}

/// Every section, in the order Redis prints them.
static SECTIONS: &[Section] = &[
    section("server", "Server", true, server_section),
    section("clients", "Clients", true, clients_section),
    section("memory", "Memory", true, memory_section),
    section("persistence", "Persistence", true, persistence_section),
    section("stats", "Stats", true, stats_section),
    section("replication", "Replication", true, replication_section),
    section("cpu", "CPU", true, cpu_section),
    section("modules", "Modules", true, empty_section),
    section("commandstats", "Commandstats", false, commandstats_section),
    section("errorstats", "Errorstats", true, errorstats_section),
    section("latencystats", "Latencystats", false, latencystats_section),
    section("cluster", "Cluster", true, cluster_section),
    section("keyspace", "Keyspace", true, keyspace_section),
];

const fn section(
    name: &'static str,
    title: &'static str,
    default: bool,
    write: fn(&Ctx<'_>, &mut String),
) -> Section {
    Section {
        name,
        title,
        default,
        write,
    }
}

/// The sections an INFO request asked for, one bit per entry of the section table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Selection(u32);

impl Selection {
    /// The sections `INFO` prints without arguments.
    pub fn default_sections() -> Selection {
        let mut bits = 0;
        for (i, s) in SECTIONS.iter().enumerate() {
            if s.default {
                bits |= 1 << i;
            }
        }
        Selection(bits)
    }

    /// Every section (`all`, `everything`: larder has no module sections).
    pub fn all() -> Selection {
        Selection((1 << SECTIONS.len()) - 1)
    }

    /// The selection for INFO's arguments: section names, `default`, `all`, `everything`, in
    /// any case. Unknown names select nothing, as in Redis; no arguments means `default`.
    pub fn parse(args: &[&[u8]]) -> Selection {
        if args.is_empty() {
            return Selection::default_sections();
        }
        let mut bits = 0;
        for a in args {
            if a.eq_ignore_ascii_case(b"all") || a.eq_ignore_ascii_case(b"everything") {
                bits |= Selection::all().0;
            } else if a.eq_ignore_ascii_case(b"default") {
                bits |= Selection::default_sections().0;
            } else if let Some(i) = SECTIONS
                .iter()
                .position(|s| s.name.as_bytes().eq_ignore_ascii_case(a))
            {
                bits |= 1 << i;
            }
        }
        Selection(bits)
    }

    fn has(self, index: usize) -> bool {
        self.0 & (1 << index) != 0
    }
}

/// What a section function sees.
struct Ctx<'a> {
    server: &'a Server,
    now_ms: u64,
}

/// The INFO text for `selection`: `# Title` lines, `field:value` lines, a blank line between
/// sections, CRLF line ends.
pub fn render(server: &Server, selection: Selection, now_ms: u64) -> String {
    let cx = Ctx { server, now_ms };
    let mut out = String::with_capacity(4096);
    let mut first = true;
    for (i, s) in SECTIONS.iter().enumerate() {
        if !selection.has(i) {
            continue;
        }
        if !first {
            out.push_str("\r\n");
        }
        first = false;
        out.push_str("# ");
        out.push_str(s.title);
        out.push_str("\r\n");
        (s.write)(&cx, &mut out);
    }
    out
}

/// Append `name:value\r\n`.
fn field(out: &mut String, name: &str, value: impl std::fmt::Display) {
    // Writing to a String cannot fail.
    let _ = write!(out, "{name}:{value}\r\n");
}

fn empty_section(_: &Ctx<'_>, _: &mut String) {}

fn server_section(cx: &Ctx<'_>, out: &mut String) {
    let s = cx.server;
    let info = s.info.lock().clone();
    let uptime_s = s.started.elapsed().as_secs();
    let hz = s.config.num(Param::Hz);
    field(out, "redis_version", REDIS_VERSION);
    field(out, "redis_git_sha1", "00000000");
    field(out, "redis_git_dirty", 0);
    field(out, "larder_version", env!("CARGO_PKG_VERSION"));
    field(out, "redis_mode", "standalone");
    field(out, "os", os_name());
    field(out, "arch_bits", usize::BITS);
    field(out, "multiplexing_api", MULTIPLEXING_API);
    field(out, "process_id", std::process::id());
    field(out, "process_supervised", "no");
    field(out, "run_id", &s.run_id);
    field(out, "tcp_port", info.tcp_port);
    field(out, "server_time_usec", larder_engine::now_us());
    field(out, "uptime_in_seconds", uptime_s);
    field(out, "uptime_in_days", uptime_s / 86_400);
    field(out, "hz", hz);
    field(out, "configured_hz", hz);
    // Redis's LRU clock has 24 bits of seconds.
    field(
        out,
        "lru_clock",
        larder_engine::lru_clock(cx.now_ms) & 0x00FF_FFFF,
    );
    field(out, "executable", &info.executable);
    field(out, "config_file", &info.config_file);
    field(out, "io_threads_active", 0);
}

/// `Linux 6.1.0 x86_64`, as Redis prints `uname`.
fn os_name() -> &'static str {
    static OS: OnceLock<String> = OnceLock::new();
    OS.get_or_init(|| {
        let read = |p: &str| {
            std::fs::read_to_string(p)
                .ok()
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty())
        };
        match (
            read("/proc/sys/kernel/ostype"),
            read("/proc/sys/kernel/osrelease"),
        ) {
            (Some(kind), Some(release)) => {
                format!("{kind} {release} {}", std::env::consts::ARCH)
            }
            _ => format!("{} {}", std::env::consts::OS, std::env::consts::ARCH),
        }
    })
}

fn clients_section(cx: &Ctx<'_>, out: &mut String) {
    let s = cx.server;
    let clients = s.clients.snapshot();
    let max_of = |f: fn(&crate::state::ClientHandle) -> usize| {
        clients.iter().map(|c| f(c)).max().unwrap_or(0)
    };
    field(
        out,
        "connected_clients",
        s.connected_clients.load(Ordering::Relaxed),
    );
    field(out, "cluster_connections", 0);
    field(out, "maxclients", s.config.num(Param::Maxclients));
    field(
        out,
        "client_recent_max_input_buffer",
        max_of(|c| c.query_buf_bytes.load(Ordering::Relaxed)),
    );
    field(
        out,
        "client_recent_max_output_buffer",
        max_of(|c| c.output_bytes()),
    );
    let waiting = s.replication.get().map_or(0, |r| r.waiting());
    field(out, "blocked_clients", s.blocking.count() + waiting);
    field(out, "tracking_clients", s.tracking.info().0);
    field(out, "clients_in_timeout_table", 0);
}

/// Memory figures shared by INFO memory and MEMORY STATS.
#[derive(Clone, Copy, Debug, Default)]
pub struct MemoryReport {
    /// Bytes allocated by the process (the binary's allocator hook), or, where no hook is
    /// installed, the keyspace's estimate plus client buffers.
    pub used_bytes: u64,
    /// Largest `used_bytes` seen by this process.
    pub peak_bytes: u64,
    /// Resident set size.
    pub rss_bytes: u64,
    /// Estimated bytes held by keys and values.
    pub dataset_bytes: u64,
    /// Query and output buffers of connected clients.
    pub clients_bytes: u64,
    /// Keys in all databases.
    pub keys: u64,
    /// Physical memory of the machine.
    pub system_bytes: u64,
}

impl MemoryReport {
    /// `used_bytes` not accounted to the dataset.
    pub fn overhead_bytes(&self) -> u64 {
        self.used_bytes.saturating_sub(self.dataset_bytes)
    }

    /// RSS / used, 0 when nothing is known.
    pub fn fragmentation_ratio(&self) -> f64 {
        ratio(self.rss_bytes, self.used_bytes)
    }
}

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 / b as f64
    }
}

fn persistence_section(cx: &Ctx<'_>, out: &mut String) {
    // Without a runtime (unit tests), as Redis with persistence off: the last save time is the
    // start time.
    let st = cx.server.persistence.get().map_or_else(
        || crate::persistence::Status {
            last_save_s: cx.server.started_ms / 1000,
            last_bgsave_ok: true,
            last_bgsave_time_s: -1,
            current_bgsave_time_s: -1,
            aof_last_rewrite_time_s: -1,
            aof_current_rewrite_time_s: -1,
            aof_last_bgrewrite_ok: true,
            aof_last_write_ok: true,
            ..Default::default()
        },
        |p| p.status(),
    );
    let flag = |b: bool| if b { 1 } else { 0 };
    let ok = |b: bool| if b { "ok" } else { "err" };
    field(out, "loading", flag(st.loading));
    field(out, "async_loading", 0);
    if st.loading {
        field(out, "loading_start_time", st.loading_start_s);
        field(out, "loading_total_bytes", st.loading_total_bytes);
        field(out, "loading_rdb_used_mem", 0);
        field(out, "loading_loaded_bytes", st.loading_loaded_bytes);
        let perc = if st.loading_total_bytes == 0 {
            0.0
        } else {
            st.loading_loaded_bytes as f64 * 100.0 / st.loading_total_bytes as f64
        };
        field(out, "loading_loaded_perc", format!("{perc:.2}"));
        field(out, "loading_eta_seconds", st.loading_eta_s);
    }
    // No fork: nothing is copied on write.
    for name in [
        "current_cow_peak",
        "current_cow_size",
        "current_cow_size_age",
    ] {
        field(out, name, 0);
    }
    field(out, "current_fork_perc", "0.00");
    field(out, "current_save_keys_processed", st.save_keys_processed);
    field(out, "current_save_keys_total", st.save_keys_total);
    field(out, "rdb_changes_since_last_save", st.changes_since_save);
    field(out, "rdb_bgsave_in_progress", flag(st.bgsave_in_progress));
    field(out, "rdb_last_save_time", st.last_save_s);
    field(out, "rdb_last_bgsave_status", ok(st.last_bgsave_ok));
    field(out, "rdb_last_bgsave_time_sec", st.last_bgsave_time_s);
    field(out, "rdb_current_bgsave_time_sec", st.current_bgsave_time_s);
    field(out, "rdb_saves", st.saves);
    field(out, "rdb_last_cow_size", 0);
    field(out, "rdb_last_load_keys_expired", st.last_load_keys_expired);
    field(out, "rdb_last_load_keys_loaded", st.last_load_keys_loaded);
    field(out, "aof_enabled", flag(st.aof_enabled));
    field(
        out,
        "aof_rewrite_in_progress",
        flag(st.aof_rewrite_in_progress),
    );
    field(out, "aof_rewrite_scheduled", flag(st.aof_rewrite_scheduled));
    field(out, "aof_last_rewrite_time_sec", st.aof_last_rewrite_time_s);
    field(
        out,
        "aof_current_rewrite_time_sec",
        st.aof_current_rewrite_time_s,
    );
    field(
        out,
        "aof_last_bgrewrite_status",
        ok(st.aof_last_bgrewrite_ok),
    );
    field(out, "aof_rewrites", st.aof_rewrites);
    field(out, "aof_rewrites_consecutive_failures", 0);
    field(out, "aof_last_write_status", ok(st.aof_last_write_ok));
    field(out, "aof_last_cow_size", 0);
    field(out, "module_fork_in_progress", 0);
    field(out, "module_fork_last_cow_size", 0);
    if st.aof_enabled {
        field(out, "aof_current_size", st.aof_current_size);
        field(out, "aof_base_size", st.aof_base_size);
        field(out, "aof_pending_rewrite", 0);
        field(out, "aof_buffer_length", st.aof_buffer_length);
        field(out, "aof_pending_bio_fsync", 0);
        field(out, "aof_delayed_fsync", 0);
        // larder's own: how many fsyncs the log made, and how many groups shared each.
        field(out, "aof_fsyncs", st.aof_fsyncs);
        field(
            out,
            "aof_groups_per_fsync",
            format!("{:.2}", st.aof_groups_per_fsync),
        );
    }
}

/// Counters sampled at INFO time, for the `instantaneous_*` rates.
#[derive(Clone, Copy)]
struct Sample {
    at: Instant,
    commands: u64,
    net_input_bytes: u64,
    net_output_bytes: u64,
}

/// Per-server state INFO keeps between calls. It lives here rather than in [`Server`] so
/// that INFO's bookkeeping stays in this module.
struct Sampler {
    /// The server's address and start instant identify it (an address alone may be reused
    /// after a server is dropped).
    server_addr: usize,
    started: Instant,
    samples: VecDeque<Sample>,
    /// `expired_keys` at the last CONFIG RESETSTAT (the engine's counter is never reset).
    expired_keys_base: u64,
    /// `evicted_keys` at the last CONFIG RESETSTAT.
    evicted_keys_base: u64,
}

/// Rates are measured from the newest sample at least this old (or the oldest there is).
const RATE_WINDOW: Duration = Duration::from_secs(1);
/// Samples closer together than this are not kept.
const SAMPLE_SPACING: Duration = Duration::from_millis(100);
/// Servers tracked at once (tests create many; a real process has one).
const MAX_SAMPLERS: usize = 64;

static SAMPLERS: Mutex<Vec<Sampler>> = Mutex::new(Vec::new());

fn with_sampler<R>(server: &Server, f: impl FnOnce(&mut Sampler) -> R) -> R {
    let addr = server as *const Server as usize;
    let mut all = SAMPLERS.lock();
    let pos = match all
        .iter()
        .position(|s| s.server_addr == addr && s.started == server.started)
    {
        Some(p) => p,
        None => {
            all.retain(|s| s.server_addr != addr);
            if all.len() >= MAX_SAMPLERS {
                all.remove(0);
            }
            all.push(Sampler {
                server_addr: addr,
                started: server.started,
                samples: VecDeque::new(),
                expired_keys_base: 0,
                evicted_keys_base: 0,
            });
            all.len() - 1
        }
    };
    let sampler = &mut all[pos];
    f(sampler)
}

/// Operations per second and input/output KiB per second since the reference sample.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct Rates {
    ops_per_sec: u64,
    input_kbps: f64,
    output_kbps: f64,
}

impl Sampler {
    /// Record `now` and measure rates against the newest sample at least [`RATE_WINDOW`]
    /// older (or the oldest kept). The first call measures nothing.
    fn rates(&mut self, now: Sample) -> Rates {
        while self.samples.len() > 1
            && self
                .samples
                .get(1)
                .is_some_and(|s| now.at.duration_since(s.at) >= RATE_WINDOW)
        {
            self.samples.pop_front();
        }
        let rates = match self.samples.front() {
            Some(from) if now.at > from.at => {
                let secs = now.at.duration_since(from.at).as_secs_f64();
                let per_sec = |a: u64, b: u64| a.saturating_sub(b) as f64 / secs;
                Rates {
                    ops_per_sec: per_sec(now.commands, from.commands).round() as u64,
                    input_kbps: per_sec(now.net_input_bytes, from.net_input_bytes) / 1024.0,
                    output_kbps: per_sec(now.net_output_bytes, from.net_output_bytes) / 1024.0,
                }
            }
            _ => Rates::default(),
        };
        let spaced = self
            .samples
            .back()
            .is_none_or(|last| now.at.duration_since(last.at) >= SAMPLE_SPACING);
        if spaced {
            self.samples.push_back(now);
        }
        rates
    }
}

/// CONFIG RESETSTAT: the server's counters, and INFO's own samples and baselines.
pub fn reset_stats(server: &Server) {
    server.stats.reset();
    server.latency.reset_histograms();
    let expired = server.keyspace.expired_keys();
    let evicted = server.keyspace.evicted_keys();
    with_sampler(server, |s| {
        s.samples.clear();
        s.expired_keys_base = expired;
        s.evicted_keys_base = evicted;
    });
}

fn stats_section(cx: &Ctx<'_>, out: &mut String) {
    let s = cx.server;
    let st = &s.stats;
    let commands = st.sum(|t| &t.commands);
    let net_input_bytes = st.sum(|t| &t.net_input_bytes);
    let net_output_bytes = st.sum(|t| &t.net_output_bytes);
    let expired_total = s.keyspace.expired_keys();
    let evicted_total = s.keyspace.evicted_keys();
    let (rates, expired_base, evicted_base) = with_sampler(s, |sampler| {
        let rates = sampler.rates(Sample {
            at: Instant::now(),
            commands,
            net_input_bytes,
            net_output_bytes,
        });
        (rates, sampler.expired_keys_base, sampler.evicted_keys_base)
    });
    let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
    field(
        out,
        "total_connections_received",
        load(&st.connections_received),
    );
    field(out, "total_commands_processed", commands);
    field(out, "instantaneous_ops_per_sec", rates.ops_per_sec);
    field(out, "total_net_input_bytes", net_input_bytes);
    field(out, "total_net_output_bytes", net_output_bytes);
    field(out, "total_net_repl_input_bytes", 0);
    field(out, "total_net_repl_output_bytes", 0);
    field(
        out,
        "instantaneous_input_kbps",
        format_args!("{:.2}", rates.input_kbps),
    );
    field(
        out,
        "instantaneous_output_kbps",
        format_args!("{:.2}", rates.output_kbps),
    );
    field(out, "instantaneous_input_repl_kbps", "0.00");
    field(out, "instantaneous_output_repl_kbps", "0.00");
    field(out, "rejected_connections", load(&st.rejected_connections));
    let repl = crate::replication::status(cx.server);
    field(out, "sync_full", repl.sync_full);
    field(out, "sync_partial_ok", repl.sync_partial_ok);
    field(out, "sync_partial_err", repl.sync_partial_err);
    field(
        out,
        "expired_keys",
        expired_total.saturating_sub(expired_base),
    );
    field(out, "expired_stale_perc", "0.00");
    field(out, "expired_time_cap_reached_count", 0);
    field(out, "expire_cycle_cpu_milliseconds", 0);
    field(
        out,
        "evicted_keys",
        evicted_total.saturating_sub(evicted_base),
    );
    field(out, "evicted_clients", 0);
    field(out, "total_eviction_exceeded_time", 0);
    field(out, "current_eviction_exceeded_time", 0);
    field(out, "keyspace_hits", st.sum(|t| &t.keyspace_hits));
    field(out, "keyspace_misses", st.sum(|t| &t.keyspace_misses));
    let (channels, patterns, shard_channels) = s.pubsub.counts();
    field(out, "pubsub_channels", channels);
    field(out, "pubsub_patterns", patterns);
    field(out, "pubsubshard_channels", shard_channels);
    // larder's own: how late the expiry thread removed keys after their deadline, and
    // clients closed for passing `client-output-buffer-limit`.
    let late = &s.expiry_lateness;
    field(out, "expired_lateness_p50_ms", late.percentile_ms(50.0));
    field(out, "expired_lateness_p99_ms", late.percentile_ms(99.0));
    field(out, "expired_lateness_max_ms", late.max_ms());
    field(
        out,
        "client_output_buffer_limit_disconnections",
        crate::mail::OUTPUT_LIMIT_DISCONNECTIONS.load(Ordering::Relaxed),
    );
    field(out, "latest_fork_usec", 0);
    field(out, "total_forks", 0);
    field(out, "migrate_cached_sockets", 0);
    field(out, "slave_expires_tracked_keys", 0);
    field(out, "active_defrag_hits", 0);
    field(out, "active_defrag_misses", 0);
    field(out, "active_defrag_key_hits", 0);
    field(out, "active_defrag_key_misses", 0);
    field(out, "total_active_defrag_time", 0);
    field(out, "current_active_defrag_time", 0);
    let (_, tracked_keys, tracked_items, prefixes) = s.tracking.info();
    field(out, "tracking_total_keys", tracked_keys);
    field(out, "tracking_total_items", tracked_items);
    field(out, "tracking_total_prefixes", prefixes);
    field(out, "unexpected_error_replies", 0);
    field(out, "total_error_replies", st.sum(|t| &t.error_replies));
    field(out, "dump_payload_sanitizations", 0);
    field(out, "io_threaded_reads_processed", 0);
    field(out, "io_threaded_writes_processed", 0);
}

fn replication_section(cx: &Ctx<'_>, out: &mut String) {
    crate::replication::info_section(cx.server, out);
}

/// User, system, children's user and children's system CPU time of this process, in clock
/// ticks, from /proc/self/stat.
fn cpu_ticks() -> Option<[u64; 4]> {
    let text = std::fs::read_to_string("/proc/self/stat").ok()?;
    // The command name (field 2) is in parentheses and may hold spaces; fields after it are
    // plain. utime, stime, cutime, cstime are fields 14..=17, so 11..=14 after the name.
    let after_name = text.get(text.rfind(')')? + 1..)?;
    let mut fields = after_name.split_whitespace().skip(11);
    let mut ticks = [0u64; 4];
    for t in &mut ticks {
        *t = fields.next()?.parse().ok()?;
    }
    Some(ticks)
}

/// Seconds with six decimals, as Redis prints rusage.
fn ticks_to_seconds(ticks: u64) -> String {
    let micros = ticks * (1_000_000 / CLOCK_TICKS_PER_S);
    format!("{}.{:06}", micros / 1_000_000, micros % 1_000_000)
}

fn cpu_section(_: &Ctx<'_>, out: &mut String) {
    let [user, sys, child_user, child_sys] = cpu_ticks().unwrap_or_default();
    field(out, "used_cpu_sys", ticks_to_seconds(sys));
    field(out, "used_cpu_user", ticks_to_seconds(user));
    field(out, "used_cpu_sys_children", ticks_to_seconds(child_sys));
    field(out, "used_cpu_user_children", ticks_to_seconds(child_user));
}

fn commandstats_section(cx: &Ctx<'_>, out: &mut String) {
    let s = cx.server;
    for (i, (name, _)) in s.registry.all().iter().enumerate() {
        let mut sums = [0u64; 4];
        for t in s.stats.threads.iter() {
            if let Some(c) = t.per_command.get(i) {
                for (sum, a) in
                    sums.iter_mut()
                        .zip([&c.calls, &c.usec, &c.rejected_calls, &c.failed_calls])
                {
                    *sum += a.load(Ordering::Relaxed);
                }
            }
        }
        let [calls, usec, rejected, failed] = sums;
        if calls == 0 && rejected == 0 && failed == 0 {
            continue;
        }
        let per_call = if calls == 0 {
            0.0
        } else {
            usec as f64 / calls as f64
        };
        let _ = write!(
            out,
            "cmdstat_{name}:calls={calls},usec={usec},usec_per_call={per_call:.2},\
             rejected_calls={rejected},failed_calls={failed}\r\n"
        );
    }
}

fn errorstats_section(cx: &Ctx<'_>, out: &mut String) {
    let mut errors: Vec<(String, u64)> = cx
        .server
        .stats
        .errors
        .lock()
        .iter()
        .map(|(k, v)| (k.clone(), *v))
        .collect();
    errors.sort_unstable();
    for (code, count) in errors {
        let _ = write!(out, "errorstat_{code}:count={count}\r\n");
    }
}

fn latencystats_section(cx: &Ctx<'_>, out: &mut String) {
    crate::latency::info_section(cx.server, out);
}

fn cluster_section(_: &Ctx<'_>, out: &mut String) {
    field(out, "cluster_enabled", 0);
}

fn keyspace_section(cx: &Ctx<'_>, out: &mut String) {
    let ks = &cx.server.keyspace;
    for i in 0..ks.db_count() {
        let db = ks.db(i);
        let keys = db.len();
        if keys == 0 {
            continue;
        }
        // avg_ttl would need a walk over every volatile key; larder does not estimate it.
        let _ = write!(
            out,
            "db{i}:keys={keys},expires={},avg_ttl=0\r\n",
            db.volatile_len()
        );
    }
}

#[cfg(test)]
mod tests;
