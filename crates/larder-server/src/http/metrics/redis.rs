//! The `redis_*` families, named, typed and described exactly as redis_exporter
//! (github.com/oliver006/redis_exporter, `exporter/exporter.go` and `exporter/info.go`) names
//! them, so its dashboards and alerts work unchanged. Like redis_exporter, they are read from
//! the INFO text (every section), here rendered in-process rather than asked for over a
//! connection; plus the few figures redis_exporter reads with CONFIG GET and SLOWLOG.

use std::collections::HashMap;

use larder_commands::config::Param;
use larder_commands::info::{self, Selection};
use larder_commands::Server;

use super::expo::{Exposition, Kind};

/// INFO fields redis_exporter exports as gauges, and its names for them (Redis's fields only:
/// its Tile38, KeyDB and module entries are left out).
const GAUGES: &[(&str, &str)] = &[
    // # Server
    ("uptime_in_seconds", "uptime_in_seconds"),
    ("process_id", "process_id"),
    ("io_threads_active", "io_threads_active"),
    // # Clients
    ("connected_clients", "connected_clients"),
    ("blocked_clients", "blocked_clients"),
    ("maxclients", "max_clients"),
    ("tracking_clients", "tracking_clients"),
    ("clients_in_timeout_table", "clients_in_timeout_table"),
    ("pubsub_clients", "pubsub_clients"),
    ("watching_clients", "watching_clients"),
    ("total_watched_keys", "total_watched_keys"),
    ("total_blocking_keys", "total_blocking_keys"),
    (
        "total_blocking_keys_on_nokey",
        "total_blocking_keys_on_nokey",
    ),
    ("client_longest_output_list", "client_longest_output_list"),
    ("client_biggest_input_buf", "client_biggest_input_buf"),
    (
        "client_recent_max_output_buffer",
        "client_recent_max_output_buffer_bytes",
    ),
    (
        "client_recent_max_input_buffer",
        "client_recent_max_input_buffer_bytes",
    ),
    // # Memory
    ("allocator_active", "allocator_active_bytes"),
    ("allocator_allocated", "allocator_allocated_bytes"),
    ("allocator_resident", "allocator_resident_bytes"),
    ("allocator_frag_ratio", "allocator_frag_ratio"),
    ("allocator_frag_bytes", "allocator_frag_bytes"),
    ("allocator_muzzy", "allocator_muzzy_bytes"),
    ("allocator_rss_ratio", "allocator_rss_ratio"),
    ("allocator_rss_bytes", "allocator_rss_bytes"),
    ("used_memory", "memory_used_bytes"),
    ("used_memory_rss", "memory_used_rss_bytes"),
    ("used_memory_peak", "memory_used_peak_bytes"),
    ("used_memory_lua", "memory_used_lua_bytes"),
    ("used_memory_vm_eval", "memory_used_vm_eval_bytes"),
    ("used_memory_scripts_eval", "memory_used_scripts_eval_bytes"),
    ("used_memory_overhead", "memory_used_overhead_bytes"),
    ("used_memory_startup", "memory_used_startup_bytes"),
    ("used_memory_dataset", "memory_used_dataset_bytes"),
    ("number_of_cached_scripts", "number_of_cached_scripts"),
    ("number_of_functions", "number_of_functions"),
    ("number_of_libraries", "number_of_libraries"),
    ("used_memory_vm_functions", "memory_used_vm_functions_bytes"),
    ("used_memory_scripts", "memory_used_scripts_bytes"),
    ("used_memory_functions", "memory_used_functions_bytes"),
    ("used_memory_vm_total", "memory_used_vm_total"),
    ("maxmemory", "memory_max_bytes"),
    ("maxmemory_reservation", "memory_max_reservation_bytes"),
    (
        "maxmemory_desired_reservation",
        "memory_max_reservation_desired_bytes",
    ),
    (
        "maxfragmentationmemory_reservation",
        "memory_max_fragmentation_reservation_bytes",
    ),
    (
        "maxfragmentationmemory_desired_reservation",
        "memory_max_fragmentation_reservation_desired_bytes",
    ),
    ("mem_fragmentation_ratio", "mem_fragmentation_ratio"),
    ("mem_fragmentation_bytes", "mem_fragmentation_bytes"),
    ("mem_clients_slaves", "mem_clients_slaves"),
    ("mem_clients_normal", "mem_clients_normal"),
    ("mem_cluster_links", "mem_cluster_links_bytes"),
    ("mem_aof_buffer", "mem_aof_buffer_bytes"),
    ("mem_replication_backlog", "mem_replication_backlog_bytes"),
    ("expired_stale_perc", "expired_stale_percentage"),
    (
        "mem_not_counted_for_evict",
        "mem_not_counted_for_eviction_bytes",
    ),
    (
        "mem_total_replication_buffers",
        "mem_total_replication_buffers_bytes",
    ),
    (
        "mem_overhead_db_hashtable_rehashing",
        "mem_overhead_db_hashtable_rehashing_bytes",
    ),
    ("lazyfree_pending_objects", "lazyfree_pending_objects"),
    ("lazyfreed_objects", "lazyfreed_objects"),
    ("active_defrag_running", "active_defrag_running"),
    ("migrate_cached_sockets", "migrate_cached_sockets_total"),
    ("active_defrag_hits", "defrag_hits"),
    ("active_defrag_misses", "defrag_misses"),
    ("active_defrag_key_hits", "defrag_key_hits"),
    ("active_defrag_key_misses", "defrag_key_misses"),
    // # Persistence
    ("loading", "loading_dump_file"),
    ("async_loading", "async_loading"),
    ("rdb_changes_since_last_save", "rdb_changes_since_last_save"),
    ("rdb_bgsave_in_progress", "rdb_bgsave_in_progress"),
    ("rdb_last_save_time", "rdb_last_save_timestamp_seconds"),
    ("rdb_last_bgsave_status", "rdb_last_bgsave_status"),
    ("rdb_last_bgsave_time_sec", "rdb_last_bgsave_duration_sec"),
    (
        "rdb_current_bgsave_time_sec",
        "rdb_current_bgsave_duration_sec",
    ),
    ("rdb_saves", "rdb_saves_total"),
    ("rdb_last_cow_size", "rdb_last_cow_size_bytes"),
    ("rdb_last_load_keys_expired", "rdb_last_load_expired_keys"),
    ("rdb_last_load_keys_loaded", "rdb_last_load_loaded_keys"),
    ("aof_enabled", "aof_enabled"),
    ("aof_rewrite_in_progress", "aof_rewrite_in_progress"),
    ("aof_rewrite_scheduled", "aof_rewrite_scheduled"),
    ("aof_last_rewrite_time_sec", "aof_last_rewrite_duration_sec"),
    (
        "aof_current_rewrite_time_sec",
        "aof_current_rewrite_duration_sec",
    ),
    ("aof_last_cow_size", "aof_last_cow_size_bytes"),
    ("aof_current_size", "aof_current_size_bytes"),
    ("aof_base_size", "aof_base_size_bytes"),
    ("aof_pending_rewrite", "aof_pending_rewrite"),
    ("aof_buffer_length", "aof_buffer_length"),
    ("aof_rewrite_buffer_length", "aof_rewrite_buffer_length"),
    ("aof_pending_bio_fsync", "aof_pending_bio_fsync"),
    ("aof_delayed_fsync", "aof_delayed_fsync"),
    ("aof_last_bgrewrite_status", "aof_last_bgrewrite_status"),
    ("aof_last_write_status", "aof_last_write_status"),
    ("module_fork_in_progress", "module_fork_in_progress"),
    ("module_fork_last_cow_size", "module_fork_last_cow_size"),
    // # Stats
    (
        "current_eviction_exceeded_time",
        "current_eviction_exceeded_time_ms",
    ),
    ("pubsub_channels", "pubsub_channels"),
    ("pubsub_patterns", "pubsub_patterns"),
    ("pubsubshard_channels", "pubsubshard_channels"),
    ("latest_fork_usec", "latest_fork_usec"),
    ("tracking_total_keys", "tracking_total_keys"),
    ("tracking_total_items", "tracking_total_items"),
    ("tracking_total_prefixes", "tracking_total_prefixes"),
    (
        "instantaneous_eventloop_cycles_per_sec",
        "instantaneous_eventloop_cycles_per_sec",
    ),
    (
        "instantaneous_eventloop_duration_usec",
        "instantaneous_eventloop_duration_usec",
    ),
    // # Replication
    ("connected_slaves", "connected_slaves"),
    ("repl_backlog_size", "replication_backlog_bytes"),
    ("repl_backlog_active", "repl_backlog_is_active"),
    (
        "repl_backlog_first_byte_offset",
        "repl_backlog_first_byte_offset",
    ),
    ("repl_backlog_histlen", "repl_backlog_history_bytes"),
    ("master_repl_offset", "master_repl_offset"),
    ("second_repl_offset", "second_repl_offset"),
    ("slave_expires_tracked_keys", "slave_expires_tracked_keys"),
    ("slave_priority", "slave_priority"),
    ("sync_full", "replica_resyncs_full"),
    ("sync_partial_ok", "replica_partial_resync_accepted"),
    ("sync_partial_err", "replica_partial_resync_denied"),
    // # Cluster
    ("cluster_stats_messages_sent", "cluster_messages_sent_total"),
    (
        "cluster_stats_messages_received",
        "cluster_messages_received_total",
    ),
];

/// INFO fields redis_exporter exports as counters, and its names for them.
const COUNTERS: &[(&str, &str)] = &[
    ("total_connections_received", "connections_received_total"),
    ("total_commands_processed", "commands_processed_total"),
    ("rejected_connections", "rejected_connections_total"),
    ("total_net_input_bytes", "net_input_bytes_total"),
    ("total_net_output_bytes", "net_output_bytes_total"),
    ("total_net_repl_input_bytes", "net_repl_input_bytes_total"),
    ("total_net_repl_output_bytes", "net_repl_output_bytes_total"),
    ("expired_subkeys", "expired_subkeys_total"),
    ("expired_keys", "expired_keys_total"),
    (
        "expired_time_cap_reached_count",
        "expired_time_cap_reached_total",
    ),
    (
        "expire_cycle_cpu_milliseconds",
        "expire_cycle_cpu_time_ms_total",
    ),
    ("evicted_keys", "evicted_keys_total"),
    ("evicted_clients", "evicted_clients_total"),
    ("evicted_scripts", "evicted_scripts_total"),
    (
        "total_eviction_exceeded_time",
        "eviction_exceeded_time_ms_total",
    ),
    ("keyspace_hits", "keyspace_hits_total"),
    ("keyspace_misses", "keyspace_misses_total"),
    ("eventloop_cycles", "eventloop_cycles_total"),
    (
        "eventloop_duration_sum",
        "eventloop_duration_sum_usec_total",
    ),
    (
        "eventloop_duration_cmd_sum",
        "eventloop_duration_cmd_sum_usec_total",
    ),
    ("used_cpu_sys", "cpu_sys_seconds_total"),
    ("used_cpu_user", "cpu_user_seconds_total"),
    ("used_cpu_sys_children", "cpu_sys_children_seconds_total"),
    ("used_cpu_user_children", "cpu_user_children_seconds_total"),
    (
        "used_cpu_sys_main_thread",
        "cpu_sys_main_thread_seconds_total",
    ),
    (
        "used_cpu_user_main_thread",
        "cpu_user_main_thread_seconds_total",
    ),
    ("unexpected_error_replies", "unexpected_error_replies"),
    ("total_error_replies", "total_error_replies"),
    ("dump_payload_sanitizations", "dump_payload_sanitizations"),
    ("total_reads_processed", "total_reads_processed"),
    ("total_writes_processed", "total_writes_processed"),
    ("io_threaded_reads_processed", "io_threaded_reads_processed"),
    (
        "io_threaded_writes_processed",
        "io_threaded_writes_processed",
    ),
    (
        "client_query_buffer_limit_disconnections",
        "client_query_buffer_limit_disconnections_total",
    ),
    (
        "client_output_buffer_limit_disconnections",
        "client_output_buffer_limit_disconnections_total",
    ),
    ("reply_buffer_shrinks", "reply_buffer_shrinks_total"),
    ("reply_buffer_expands", "reply_buffer_expands_total"),
    ("acl_access_denied_auth", "acl_access_denied_auth_total"),
    ("acl_access_denied_cmd", "acl_access_denied_cmd_total"),
    ("acl_access_denied_key", "acl_access_denied_key_total"),
    (
        "acl_access_denied_channel",
        "acl_access_denied_channel_total",
    ),
];

/// Label sets and HELP texts of redis_exporter's described families used here.
const HELP_COMMANDS: &str = "Total number of calls per command";
const HELP_DURATION: &str = "Total amount of time in seconds spent per command";
// redis_exporter's texts for these two, word for word (each describes the other's count).
const HELP_REJECTED: &str = "Total number of errors within command execution per command";
const HELP_FAILED: &str = "Total number of errors prior command execution per command";
const HELP_LATENCY: &str = "A summary of latency percentile distribution per command";
const HELP_ERRORS: &str = "Total number of errors per error type";
const HELP_DB_KEYS: &str = "Total number of keys by DB";
const HELP_DB_EXPIRING: &str = "Total number of expiring keys by DB";
const HELP_DB_TTL: &str = "Avg TTL in seconds";
const HELP_UP: &str = "Information about the Redis instance";
const HELP_START: &str = "Start time of the Redis instance since unix epoch in seconds.";

/// A field's value as redis_exporter reads it: `ok`/`true` 1, `err`/`fail`/`false` 0, else a
/// number (`None`: not exported).
fn value(v: &str) -> Option<f64> {
    match v {
        "ok" | "true" => Some(1.0),
        "err" | "fail" | "false" => Some(0.0),
        _ => v.parse().ok(),
    }
}

/// `k=v,k=v` pairs.
fn pairs(v: &str) -> impl Iterator<Item = (&str, &str)> {
    v.split(',').filter_map(|p| p.split_once('='))
}

/// Adds every `redis_*` family.
pub fn collect(server: &Server, now_ms: u64, e: &mut Exposition) {
    let text = info::render(server, Selection::all(), now_ms);
    let gauges: HashMap<&str, &str> = GAUGES.iter().copied().collect();
    let counters: HashMap<&str, &str> = COUNTERS.iter().copied().collect();
    let mut fields: HashMap<&str, &str> = HashMap::new();
    // Per command: calls and microseconds (for the latency summaries' count and sum).
    let mut calls: HashMap<&str, (u64, f64)> = HashMap::new();
    let mut percentiles: Vec<(&str, Vec<(f64, f64)>)> = Vec::new();
    let mut section = "";
    for line in text.lines() {
        let line = line.trim();
        if let Some(title) = line.strip_prefix("# ") {
            section = title;
            continue;
        }
        let Some((key, val)) = line.split_once(':') else {
            continue;
        };
        fields.insert(key, val);
        match section {
            "Server" => match key {
                "uptime_in_seconds" => {
                    if let Some(up) = value(val) {
                        let start = (now_ms / 1000) as f64 - up;
                        e.sample(
                            "redis_start_time_seconds",
                            HELP_START,
                            Kind::Gauge,
                            &[],
                            start,
                        );
                    }
                }
                "configured_hz" | "hz" => {
                    if let Some(hz) = value(val) {
                        let name = format!("redis_{key}");
                        let help = format!("{key} metric");
                        e.sample(&name, &help, Kind::Gauge, &[], hz);
                    }
                }
                _ => {}
            },
            "Commandstats" => {
                if let Some(cmd) = key.strip_prefix("cmdstat_") {
                    command_stats(e, cmd, val, &mut calls);
                }
                continue;
            }
            "Latencystats" => {
                if let Some(cmd) = key.strip_prefix("latency_percentiles_usec_") {
                    let p: Option<Vec<(f64, f64)>> = pairs(val)
                        .map(|(p, v)| Some((p.strip_prefix('p')?.parse().ok()?, v.parse().ok()?)))
                        .collect();
                    if let Some(p) = p {
                        percentiles.push((cmd, p));
                    }
                }
                continue;
            }
            "Errorstats" => {
                if let (Some(err), Some(("count", n))) =
                    (key.strip_prefix("errorstat_"), pairs(val).next())
                {
                    if let Ok(n) = n.parse::<f64>() {
                        let l = [("err", err)];
                        e.sample("redis_errors_total", HELP_ERRORS, Kind::Counter, &l, n);
                    }
                }
                continue;
            }
            "Keyspace" if key.starts_with("db") => {
                keyspace(e, key, val);
                continue;
            }
            _ => {}
        }
        let (name, kind) = if let Some(n) = gauges.get(key) {
            (*n, Kind::Gauge)
        } else if let Some(n) = counters.get(key) {
            (*n, Kind::Counter)
        } else if key.starts_with("cluster_") {
            (key, Kind::Gauge)
        } else {
            continue;
        };
        let Some(mut v) = value(val) else {
            continue;
        };
        let mut name = name.to_string();
        if name == "latest_fork_usec" {
            name = "latest_fork_seconds".into();
            v /= 1e6;
        }
        let help = format!("{name} metric");
        e.sample(&format!("redis_{name}"), &help, kind, &[], v);
    }
    for (cmd, p) in percentiles {
        if let Some(&(count, sum)) = calls.get(cmd) {
            let l = [("cmd", cmd)];
            e.summary(
                "redis_latency_percentiles_usec",
                HELP_LATENCY,
                &l,
                &p,
                sum,
                count,
            );
        }
    }
    instance_info(e, &fields);
    e.sample("redis_up", HELP_UP, Kind::Gauge, &[], 1.0);
    config_and_slowlog(server, e);
}

/// `cmdstat_<cmd>:calls=..,usec=..,usec_per_call=..,rejected_calls=..,failed_calls=..`.
fn command_stats<'a>(
    e: &mut Exposition,
    cmd: &'a str,
    val: &str,
    calls: &mut HashMap<&'a str, (u64, f64)>,
) {
    let f: HashMap<&str, f64> = pairs(val)
        .filter_map(|(k, v)| Some((k, v.parse().ok()?)))
        .collect();
    let (Some(&n), Some(&usec)) = (f.get("calls"), f.get("usec")) else {
        return;
    };
    let l = [("cmd", cmd)];
    e.sample("redis_commands_total", HELP_COMMANDS, Kind::Counter, &l, n);
    let secs = usec / 1e6;
    e.sample(
        "redis_commands_duration_seconds_total",
        HELP_DURATION,
        Kind::Counter,
        &l,
        secs,
    );
    if let (Some(&rejected), Some(&failed)) = (f.get("rejected_calls"), f.get("failed_calls")) {
        e.sample(
            "redis_commands_rejected_calls_total",
            HELP_REJECTED,
            Kind::Counter,
            &l,
            rejected,
        );
        e.sample(
            "redis_commands_failed_calls_total",
            HELP_FAILED,
            Kind::Counter,
            &l,
            failed,
        );
    }
    calls.insert(cmd, (n as u64, usec));
}

/// `db<N>:keys=..,expires=..,avg_ttl=..` (avg_ttl in ms; redis_exporter exports seconds).
fn keyspace(e: &mut Exposition, db: &str, val: &str) {
    let f: HashMap<&str, f64> = pairs(val)
        .filter_map(|(k, v)| Some((k, v.parse().ok()?)))
        .collect();
    let (Some(&keys), Some(&expires)) = (f.get("keys"), f.get("expires")) else {
        return;
    };
    let l = [("db", db)];
    e.sample("redis_db_keys", HELP_DB_KEYS, Kind::Gauge, &l, keys);
    e.sample(
        "redis_db_keys_expiring",
        HELP_DB_EXPIRING,
        Kind::Gauge,
        &l,
        expires,
    );
    if let Some(ttl) = f.get("avg_ttl") {
        e.sample(
            "redis_db_avg_ttl_seconds",
            HELP_DB_TTL,
            Kind::Gauge,
            &l,
            ttl / 1000.0,
        );
    }
}

/// `redis_instance_info`, a gauge of 1 whose labels describe the server.
fn instance_info(e: &mut Exposition, fields: &HashMap<&str, &str>) {
    const LABELS: [&str; 10] = [
        "role",
        "redis_version",
        "redis_build_id",
        "redis_mode",
        "os",
        "maxmemory_policy",
        "tcp_port",
        "run_id",
        "process_id",
        "master_replid",
    ];
    let labels: Vec<(&str, &str)> = LABELS
        .iter()
        .map(|&k| (k, fields.get(k).copied().unwrap_or("")))
        .collect();
    let help = "instance_info metric";
    e.sample("redis_instance_info", help, Kind::Gauge, &labels, 1.0);
}

/// What redis_exporter reads with CONFIG GET (`redis_config_maxclients`,
/// `redis_config_maxmemory`) and SLOWLOG (`redis_slowlog_length`, `redis_slowlog_last_id`,
/// `redis_last_slow_execution_duration_seconds`).
fn config_and_slowlog(server: &Server, e: &mut Exposition) {
    for (name, param) in [
        ("maxclients", Param::Maxclients),
        ("maxmemory", Param::Maxmemory),
    ] {
        let metric = format!("config_{name}");
        let v = server.config.num(param) as f64;
        e.sample(
            &format!("redis_{metric}"),
            &format!("{metric} metric"),
            Kind::Gauge,
            &[],
            v,
        );
    }
    let (len, last_id, last_us) = {
        let log = server.slowlog.lock();
        let newest = log.entries.front();
        (
            log.entries.len(),
            newest.map_or(0, |s| s.id),
            newest.map_or(0, |s| s.duration_us),
        )
    };
    e.sample(
        "redis_slowlog_length",
        "Total slowlog",
        Kind::Gauge,
        &[],
        len as f64,
    );
    e.sample(
        "redis_slowlog_last_id",
        "Last id of slowlog",
        Kind::Gauge,
        &[],
        last_id as f64,
    );
    e.sample(
        "redis_last_slow_execution_duration_seconds",
        "The amount of time needed for last slow execution, in seconds",
        Kind::Gauge,
        &[],
        last_us as f64 / 1e6,
    );
}
