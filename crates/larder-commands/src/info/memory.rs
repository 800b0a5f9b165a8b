//! INFO's memory section and the measurement MEMORY STATS and `maxmemory` share.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::config::Param;
use crate::state::Server;

use super::{field, ratio, Ctx, MemoryReport};

/// Measure memory now. Locks every shard once (to sum the dataset), so it is for INFO and
/// MEMORY STATS, not for hot paths.
pub fn memory_report(server: &Server) -> MemoryReport {
    static PEAK_BYTES: AtomicU64 = AtomicU64::new(0);
    let ks = &server.keyspace;
    let mut dataset_bytes = 0u64;
    let mut keys = 0u64;
    for i in 0..ks.db_count() {
        let db = ks.db(i);
        dataset_bytes += db.used_bytes() as u64;
        keys += db.len() as u64;
    }
    let clients_bytes: u64 = server
        .clients
        .snapshot()
        .iter()
        .map(|c| (c.query_buf_bytes.load(Ordering::Relaxed) + c.output_bytes()) as u64)
        .sum();
    let hooked = (server.used_memory)() as u64;
    let used_bytes = if hooked > 0 {
        hooked
    } else {
        dataset_bytes + clients_bytes
    };
    let peak_bytes = PEAK_BYTES
        .fetch_max(used_bytes, Ordering::Relaxed)
        .max(used_bytes);
    MemoryReport {
        used_bytes,
        peak_bytes,
        rss_bytes: rss_bytes(),
        dataset_bytes,
        clients_bytes,
        keys,
        system_bytes: system_memory_bytes(),
    }
}

/// Resident set size from /proc (`VmRSS` is in kB, so no page size is assumed); 0 where
/// /proc is missing.
fn rss_bytes() -> u64 {
    proc_kb_field("/proc/self/status", "VmRSS:").map_or(0, |kb| kb * 1024)
}

fn system_memory_bytes() -> u64 {
    proc_kb_field("/proc/meminfo", "MemTotal:").map_or(0, |kb| kb * 1024)
}

/// A `Name:   123 kB` line of a /proc file.
fn proc_kb_field(path: &str, name: &str) -> Option<u64> {
    let text = std::fs::read_to_string(path).ok()?;
    let line = text.lines().find(|l| l.starts_with(name))?;
    line[name.len()..].split_whitespace().next()?.parse().ok()
}

/// Redis's `bytesToHuman`: `512B`, `1.50K`, `2.00M`, ...
pub fn bytes_to_human(n: u64) -> String {
    const UNITS: [(u64, &str); 5] = [
        (1 << 50, "P"),
        (1 << 40, "T"),
        (1 << 30, "G"),
        (1 << 20, "M"),
        (1 << 10, "K"),
    ];
    for (size, unit) in UNITS {
        if n >= size {
            return format!("{:.2}{unit}", n as f64 / size as f64);
        }
    }
    format!("{n}B")
}

pub(super) fn memory_section(cx: &Ctx<'_>, out: &mut String) {
    let s = cx.server;
    let m = memory_report(s);
    let maxmemory = s.config.num(Param::Maxmemory).max(0) as u64;
    field(out, "used_memory", m.used_bytes);
    field(out, "used_memory_human", bytes_to_human(m.used_bytes));
    field(out, "used_memory_rss", m.rss_bytes);
    field(out, "used_memory_rss_human", bytes_to_human(m.rss_bytes));
    field(out, "used_memory_peak", m.peak_bytes);
    field(out, "used_memory_peak_human", bytes_to_human(m.peak_bytes));
    field(
        out,
        "used_memory_peak_perc",
        format_args!("{:.2}%", 100.0 * ratio(m.used_bytes, m.peak_bytes)),
    );
    field(out, "used_memory_overhead", m.overhead_bytes());
    field(out, "used_memory_dataset", m.dataset_bytes);
    field(
        out,
        "used_memory_dataset_perc",
        format_args!(
            "{:.2}%",
            (100.0 * ratio(m.dataset_bytes, m.used_bytes)).min(100.0)
        ),
    );
    field(out, "total_system_memory", m.system_bytes);
    field(
        out,
        "total_system_memory_human",
        bytes_to_human(m.system_bytes),
    );
    // One interpreter per worker thread runs both EVAL scripts and functions: their memory
    // is reported as the eval VMs', and the function VMs' as 0.
    let scripts = &s.scripts;
    let vm = scripts.vm_bytes() as u64;
    let (functions, libraries, functions_bytes) = scripts.library_sizes();
    let cache = scripts.cache_bytes() as u64;
    field(out, "used_memory_lua", vm);
    field(out, "used_memory_vm_eval", vm);
    field(out, "used_memory_lua_human", bytes_to_human(vm));
    field(out, "used_memory_scripts_eval", cache);
    field(out, "number_of_cached_scripts", scripts.cached());
    field(out, "number_of_functions", functions);
    field(out, "number_of_libraries", libraries);
    field(out, "used_memory_vm_functions", 0);
    field(out, "used_memory_vm_total", vm);
    field(out, "used_memory_vm_total_human", bytes_to_human(vm));
    field(out, "used_memory_functions", functions_bytes);
    field(out, "used_memory_scripts", cache + functions_bytes as u64);
    field(
        out,
        "used_memory_scripts_human",
        bytes_to_human(cache + functions_bytes as u64),
    );
    field(out, "maxmemory", maxmemory);
    field(out, "maxmemory_human", bytes_to_human(maxmemory));
    field(
        out,
        "maxmemory_policy",
        s.config.text(Param::MaxmemoryPolicy),
    );
    // The binary's global allocator (a counting wrapper around mimalloc).
    field(out, "mem_allocator", "mimalloc");
    field(
        out,
        "mem_fragmentation_ratio",
        format_args!("{:.2}", m.fragmentation_ratio()),
    );
    field(
        out,
        "mem_fragmentation_bytes",
        m.rss_bytes as i64 - m.used_bytes as i64,
    );
    field(out, "mem_not_counted_for_evict", 0);
    // Redis 7.0 shares one buffer between the backlog and the replicas' output; larder's
    // backlog and replicas' outboxes are apart, so the total is their sum.
    let repl = crate::replication::status(cx.server);
    field(out, "mem_replication_backlog", repl.backlog_histlen);
    field(
        out,
        "mem_total_replication_buffers",
        repl.backlog_histlen + repl.replica_output_bytes,
    );
    field(out, "mem_clients_slaves", repl.replica_output_bytes);
    field(out, "mem_clients_normal", m.clients_bytes);
    field(out, "mem_aof_buffer", 0);
    field(out, "lazyfree_pending_objects", 0);
    field(out, "lazyfreed_objects", 0);
}
