use super::*;
use crate::testing::{bulk, err, int, ok, Harness};
use larder_resp::Frame;

fn text(h: &Harness, args: &[&str]) -> String {
    let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
    render(&h.server, Selection::parse(&args), larder_engine::now_ms())
}

fn titles(s: &str) -> Vec<&str> {
    s.split("\r\n").filter(|l| l.starts_with("# ")).collect()
}

/// The value of `name` in INFO text.
fn value<'a>(s: &'a str, name: &str) -> Option<&'a str> {
    s.split("\r\n")
        .find_map(|l| l.strip_prefix(name).and_then(|r| r.strip_prefix(':')))
}

#[test]
fn section_selection() {
    let h = Harness::new();
    let default = [
        "# Server",
        "# Clients",
        "# Memory",
        "# Persistence",
        "# Stats",
        "# Replication",
        "# CPU",
        "# Modules",
        "# Errorstats",
        "# Cluster",
        "# Keyspace",
    ];
    assert_eq!(titles(&text(&h, &[])), default);
    assert_eq!(titles(&text(&h, &["DEFAULT"])), default);
    let all_text = text(&h, &["all"]);
    let all = titles(&all_text);
    assert_eq!(all.len(), 13);
    assert_eq!(all[8], "# Commandstats");
    assert_eq!(all[10], "# Latencystats");
    assert_eq!(titles(&text(&h, &["everything"])), all);
    // Order is the table's, duplicates collapse, unknown names select nothing.
    assert_eq!(
        titles(&text(&h, &["keyspace", "CPU", "cpu", "nosuch"])),
        ["# CPU", "# Keyspace"]
    );
    assert_eq!(text(&h, &["nosuch"]), "");
}

#[test]
fn layout_matches_redis() {
    let h = Harness::new();
    let t = text(&h, &["cluster", "modules", "keyspace"]);
    assert_eq!(
        t,
        "# Modules\r\n\r\n# Cluster\r\ncluster_enabled:0\r\n\r\n# Keyspace\r\n"
    );
}

#[test]
fn server_fields() {
    let h = Harness::new();
    h.server.info.lock().tcp_port = 7001;
    h.server.info.lock().config_file = "/etc/larder.conf".into();
    let t = text(&h, &["server"]);
    assert_eq!(value(&t, "redis_version"), Some("7.0.15"));
    assert_eq!(value(&t, "larder_version"), Some(env!("CARGO_PKG_VERSION")));
    assert_eq!(value(&t, "redis_mode"), Some("standalone"));
    assert_eq!(value(&t, "tcp_port"), Some("7001"));
    assert_eq!(value(&t, "config_file"), Some("/etc/larder.conf"));
    assert_eq!(value(&t, "run_id"), Some(h.server.run_id.as_str()));
    assert_eq!(value(&t, "hz"), Some("10"));
    assert_eq!(value(&t, "arch_bits"), Some("64"));
    let pid = std::process::id().to_string();
    assert_eq!(value(&t, "process_id"), Some(pid.as_str()));
    assert!(value(&t, "os").is_some_and(|o| !o.is_empty()));
    assert!(value(&t, "server_time_usec")
        .and_then(|v| v.parse::<u64>().ok())
        .is_some_and(|us| us > 1_600_000_000_000_000));
}

#[test]
fn keyspace_and_stats_fields() {
    let mut h = Harness::new();
    h.run(&["SET", "a", "1"]);
    h.run(&["SET", "b", "1", "EX", "100"]);
    h.run(&["GET", "a"]);
    h.run(&["GET", "zz"]);
    h.run(&["NOSUCHCOMMAND"]);
    h.run(&["SET", "x"]);
    h.conn.db = 3;
    h.run(&["SET", "c", "1"]);
    let t = text(&h, &["keyspace", "stats", "errorstats", "commandstats"]);
    assert!(
        t.contains(
            "# Keyspace\r\ndb0:keys=2,expires=1,avg_ttl=0\r\ndb3:keys=1,expires=0,avg_ttl=0\r\n"
        ),
        "{t}"
    );
    assert_eq!(value(&t, "keyspace_hits"), Some("1"));
    assert_eq!(value(&t, "keyspace_misses"), Some("1"));
    assert_eq!(value(&t, "total_error_replies"), Some("2"));
    assert_eq!(value(&t, "total_commands_processed"), Some("5"));
    assert_eq!(value(&t, "errorstat_ERR"), Some("count=2"));
    let set = value(&t, "cmdstat_set").unwrap_or_default();
    assert!(set.starts_with("calls=3,usec="), "{set}");
    assert!(set.ends_with(",rejected_calls=1,failed_calls=0"), "{set}");
    assert!(value(&t, "cmdstat_get").is_some_and(|v| v.starts_with("calls=2,")));
    assert_eq!(value(&t, "cmdstat_info"), None);
}

// --- maxmemory eviction (the executor evicts; INFO counts) ---------------------------

/// Set maxmemory to `fraction` of what the keyspace holds now (the harness has no
/// allocator hook, so the executor measures the keyspace's own accounting).
fn limit_to(h: &mut Harness, fraction: f64) -> usize {
    let max = (h.server.keyspace.used_bytes() as f64 * fraction) as usize;
    assert_eq!(
        h.run(&["CONFIG", "SET", "maxmemory", &max.to_string()]),
        ok()
    );
    max
}

fn dbsize(h: &Harness) -> usize {
    h.server.keyspace.db(0).len()
}

#[test]
fn noeviction_rejects_denyoom_commands() {
    let mut h = Harness::new();
    h.run(&["SET", "k", "v"]);
    limit_to(&mut h, 0.5);
    assert_eq!(
        h.run(&["SET", "k2", "v"]),
        err("OOM command not allowed when used memory > 'maxmemory'.")
    );
    // Reads and deletions still run.
    assert_eq!(h.run(&["GET", "k"]), bulk("v"));
    assert_eq!(h.run(&["DEL", "k"]), int(1));
    assert_eq!(h.run(&["SET", "k2", "v"]), ok());
    let t = text(&h, &["stats"]);
    assert_eq!(value(&t, "evicted_keys"), Some("0"));
}

#[test]
fn allkeys_lru_evicts_idle_keys_first() {
    let mut h = Harness::new();
    for i in 0..2000 {
        h.run(&["SET", &format!("k{i}"), "some value of a few bytes"]);
    }
    // The first half has been idle for 100 s.
    let old = larder_engine::now_ms() - 100_000;
    for i in 0..1000 {
        let k = format!("k{i}");
        let (mut shard, hash) = crate::testing::shard_for(&h.server, k.as_bytes());
        let slot = shard.find(k.as_bytes(), hash, 0).expect("present");
        shard.touch(slot, old);
    }
    assert_eq!(
        h.run(&["CONFIG", "SET", "maxmemory-policy", "allkeys-lru"]),
        ok()
    );
    let max = limit_to(&mut h, 0.85);
    // At most 64 keys go per command: a few commands bring memory under the limit.
    for _ in 0..50 {
        assert_eq!(h.run(&["SET", "new", "v"]), ok());
        if h.server.keyspace.used_bytes() <= max {
            break;
        }
    }
    assert!(h.server.keyspace.used_bytes() <= max);
    let evicted = 2000 + 1 - dbsize(&h);
    assert!(evicted > 64, "{evicted}");
    let idle_left = (0..1000)
        .filter(|i| h.run(&["EXISTS", &format!("k{i}")]) == int(1))
        .count();
    let recent_left = (1000..2000)
        .filter(|i| h.run(&["EXISTS", &format!("k{i}")]) == int(1))
        .count();
    // Sampling is approximate, but the idle keys go first by a wide margin.
    assert!(
        1000 - recent_left < evicted / 10,
        "{idle_left} {recent_left}"
    );
    let t = text(&h, &["stats"]);
    assert_eq!(
        value(&t, "evicted_keys"),
        Some(evicted.to_string().as_str())
    );
    reset_stats(&h.server);
    let t = text(&h, &["stats"]);
    assert_eq!(value(&t, "evicted_keys"), Some("0"));
}

#[test]
fn volatile_ttl_evicts_nearest_deadline_and_spares_persistent_keys() {
    let mut h = Harness::new();
    for i in 0..200 {
        h.run(&["SET", &format!("p{i}"), "persistent"]);
    }
    for i in 0..20 {
        h.run(&[
            "SET",
            &format!("v{i}"),
            "volatile",
            "EX",
            &(1000 + i).to_string(),
        ]);
    }
    h.run(&["CONFIG", "SET", "maxmemory-policy", "volatile-ttl"]);
    let used = h.server.keyspace.used_bytes();
    h.run(&["CONFIG", "SET", "maxmemory", &(used - 1).to_string()]);
    assert_eq!(h.run(&["PING"]), Frame::Simple("PONG".into()));
    assert_eq!(h.run(&["EXISTS", "v0"]), int(0));
    assert_eq!(h.run(&["EXISTS", "v1"]), int(1));
    assert_eq!(dbsize(&h), 219);
    // Once the volatile keys are gone nothing is evictable: writes get OOM.
    limit_to(&mut h, 0.1);
    assert_eq!(
        h.run(&["SET", "x", "y"]),
        err("OOM command not allowed when used memory > 'maxmemory'.")
    );
    h.run(&["PING"]);
    assert_eq!(dbsize(&h), 200);
    assert_eq!(h.run(&["EXISTS", "p0", "p199"]), int(2));
}

#[test]
fn volatile_policy_without_volatile_keys_is_oom() {
    let mut h = Harness::new();
    h.run(&["SET", "k", "v"]);
    for policy in ["volatile-lru", "volatile-lfu", "volatile-random"] {
        h.run(&["CONFIG", "SET", "maxmemory-policy", policy]);
        limit_to(&mut h, 0.5);
        assert_eq!(
            h.run(&["SET", "k2", "v"]),
            err("OOM command not allowed when used memory > 'maxmemory'."),
            "{policy}"
        );
        h.run(&["CONFIG", "SET", "maxmemory", "0"]);
    }
    h.run(&["CONFIG", "SET", "maxmemory-policy", "allkeys-random"]);
    limit_to(&mut h, 0.5);
    assert_eq!(h.run(&["SET", "k2", "v"]), ok());
    assert_eq!(h.run(&["EXISTS", "k"]), int(0));
}

#[test]
fn reset_clears_counters_and_expired_base() {
    let mut h = Harness::new();
    h.run(&["GET", "zz"]);
    h.server.keyspace.note_expired(3);
    let t = text(&h, &["stats"]);
    assert_eq!(value(&t, "expired_keys"), Some("3"));
    reset_stats(&h.server);
    let t = text(&h, &["stats", "commandstats"]);
    assert_eq!(value(&t, "expired_keys"), Some("0"));
    assert_eq!(value(&t, "keyspace_misses"), Some("0"));
    assert_eq!(value(&t, "cmdstat_get"), None);
}

#[test]
fn memory_fields() {
    let mut h = Harness::new();
    h.run(&["SET", "k", "some value"]);
    h.server.config.set_many(&[("maxmemory", "1mb")]).ok();
    let t = text(&h, &["memory"]);
    let used: u64 = value(&t, "used_memory")
        .and_then(|v| v.parse().ok())
        .unwrap_or_default();
    assert!(used > 0);
    let peak: u64 = value(&t, "used_memory_peak")
        .and_then(|v| v.parse().ok())
        .unwrap_or_default();
    assert!(peak >= used);
    assert_eq!(value(&t, "maxmemory"), Some("1048576"));
    assert_eq!(value(&t, "maxmemory_human"), Some("1.00M"));
    assert_eq!(value(&t, "maxmemory_policy"), Some("noeviction"));
    assert!(value(&t, "mem_fragmentation_ratio").is_some());
}

#[test]
fn human_bytes() {
    assert_eq!(bytes_to_human(0), "0B");
    assert_eq!(bytes_to_human(1023), "1023B");
    assert_eq!(bytes_to_human(1536), "1.50K");
    assert_eq!(bytes_to_human(990_904), "967.68K");
    assert_eq!(bytes_to_human(3 << 30), "3.00G");
}

#[test]
fn cpu_and_persistence() {
    let h = Harness::new();
    let t = text(&h, &["cpu", "persistence", "replication"]);
    let user = value(&t, "used_cpu_user").unwrap_or_default();
    assert_eq!(user.split('.').nth(1).map(str::len), Some(6), "{user}");
    assert_eq!(value(&t, "used_cpu_sys_children"), Some("0.000000"));
    assert_eq!(value(&t, "aof_enabled"), Some("0"));
    assert_eq!(value(&t, "loading"), Some("0"));
    assert_eq!(value(&t, "role"), Some("master"));
    let replid = value(&t, "master_replid").unwrap_or_default();
    assert_eq!(replid.len(), 40);
    assert_ne!(replid, h.server.run_id);
    assert_eq!(ticks_to_seconds(1234), "12.340000");
}

#[test]
fn rates_from_samples() {
    let t0 = Instant::now();
    let at = |ms: u64, commands: u64| Sample {
        at: t0 + Duration::from_millis(ms),
        commands,
        net_input_bytes: commands * 1024,
        net_output_bytes: 0,
    };
    let mut s = Sampler {
        server_addr: 0,
        started: t0,
        samples: VecDeque::new(),
        expired_keys_base: 0,
        evicted_keys_base: 0,
    };
    assert_eq!(s.rates(at(0, 0)), Rates::default());
    let r = s.rates(at(500, 500));
    assert_eq!(r.ops_per_sec, 1000);
    assert!((r.input_kbps - 1000.0).abs() < 1e-6);
    // Samples closer than the spacing are not stored.
    s.rates(at(550, 600));
    assert_eq!(s.samples.len(), 2);
    // Old samples give way once a newer one is past the window.
    let r = s.rates(at(2000, 3500));
    assert_eq!(s.samples.front().map(|x| x.commands), Some(500));
    assert_eq!(r.ops_per_sec, 2000);
    // Counters that went backwards (RESETSTAT) do not underflow.
    assert_eq!(s.rates(at(2100, 0)).ops_per_sec, 0);
}
