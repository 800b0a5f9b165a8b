//! The parameter table: every parameter larder supports, its kind, default and help.

use super::{Kind, Mutability, Param, ParamDef, MAXMEMORY_POLICIES, MB};

/// Every parameter larder supports, in [`Param`] order.
pub static PARAMS: &[ParamDef] = &[
    def(
        Param::Bind,
        "bind",
        Kind::Text,
        "127.0.0.1",
        Mutability::Immutable,
        "addresses to listen on (space-separated)",
    ),
    def(
        Param::Port,
        "port",
        Kind::Int { min: 0, max: 65535 },
        "6379",
        Mutability::Immutable,
        "RESP port",
    ),
    def(
        Param::MemcachedPort,
        "memcached-port",
        Kind::Int { min: 0, max: 65535 },
        "11211",
        Mutability::Immutable,
        "memcached port (0 disables)",
    ),
    def(
        Param::MemcachedItemSizeMax,
        "memcached-item-size-max",
        Kind::Memory {
            min: 1024,
            max: 1024 * MB,
        },
        "1048576",
        Mutability::Mutable,
        "largest value a memcached client may store (memcached's -I)",
    ),
    def(
        Param::MemcachedPrefixDelimiter,
        "memcached-prefix-delimiter",
        Kind::Custom(parse_delimiter),
        ":",
        Mutability::Mutable,
        "the character that ends a key's prefix for memcached's `stats detail` (memcached's -D)",
    ),
    def(
        Param::HttpPort,
        "http-port",
        Kind::Int { min: 0, max: 65535 },
        "7379",
        Mutability::Immutable,
        "HTTP port (0 disables)",
    ),
    def(
        Param::HttpMaxBody,
        "http-max-body",
        Kind::Memory {
            min: 1024,
            max: 1024 * MB,
        },
        "8388608",
        Mutability::Mutable,
        "largest HTTP request body (413 beyond)",
    ),
    def(
        Param::HttpCorsOrigins,
        "http-cors-origins",
        Kind::Text,
        "",
        Mutability::Mutable,
        "origins allowed to call the HTTP door from a browser (space-separated, * for any)",
    ),
    def(
        Param::HttpRateLimit,
        "http-rate-limit",
        Kind::Int {
            min: 0,
            max: i64::MAX,
        },
        "0",
        Mutability::Mutable,
        "HTTP requests per second allowed per client address (0 = unlimited; 429 beyond)",
    ),
    def(
        Param::HttpSseMaxWatchers,
        "http-sse-max-watchers",
        Kind::Int {
            min: 0,
            max: 1_000_000,
        },
        "10000",
        Mutability::Mutable,
        "most open Server-Sent Events streams (503 beyond)",
    ),
    def(
        Param::HttpSseBufferLimit,
        "http-sse-buffer-limit",
        Kind::Memory {
            min: 1024,
            max: 1024 * MB,
        },
        "1048576",
        Mutability::Mutable,
        "unsent bytes an SSE stream may hold before it is resynced",
    ),
    def(
        Param::TlsPort,
        "tls-port",
        Kind::Int { min: 0, max: 65535 },
        "0",
        Mutability::Immutable,
        "RESP port over TLS (0 disables)",
    ),
    def(
        Param::MemcachedTlsPort,
        "memcached-tls-port",
        Kind::Int { min: 0, max: 65535 },
        "0",
        Mutability::Immutable,
        "memcached port over TLS (0 disables)",
    ),
    def(
        Param::HttpTlsPort,
        "http-tls-port",
        Kind::Int { min: 0, max: 65535 },
        "0",
        Mutability::Immutable,
        "HTTPS port (0 disables)",
    ),
    def(
        Param::TlsCertFile,
        "tls-cert-file",
        Kind::Text,
        "",
        Mutability::Mutable,
        "the server's certificate chain (PEM) for every TLS port",
    ),
    def(
        Param::TlsKeyFile,
        "tls-key-file",
        Kind::Text,
        "",
        Mutability::Mutable,
        "the private key (PEM) of tls-cert-file",
    ),
    def(
        Param::TlsCaCertFile,
        "tls-ca-cert-file",
        Kind::Text,
        "",
        Mutability::Mutable,
        "CA certificates (PEM) that client certificates are verified against",
    ),
    def(
        Param::TlsAuthClients,
        "tls-auth-clients",
        Kind::Enum(TLS_AUTH_CLIENTS),
        "yes",
        Mutability::Mutable,
        "whether TLS clients must present a certificate signed by tls-ca-cert-file",
    ),
    def(
        Param::TlsProtocols,
        "tls-protocols",
        Kind::Custom(parse_tls_protocols),
        "",
        Mutability::Mutable,
        "TLS versions accepted: TLSv1.2 and/or TLSv1.3 (empty: both)",
    ),
    def(
        Param::TlsCiphersuites,
        "tls-ciphersuites",
        Kind::Custom(parse_tls_ciphersuites),
        "",
        Mutability::Mutable,
        "TLS 1.3 cipher suites, colon-separated (empty: all supported)",
    ),
    def(
        Param::TlsCiphers,
        "tls-ciphers",
        Kind::Custom(parse_tls_ciphers),
        "",
        Mutability::Mutable,
        "TLS 1.2 ciphers in OpenSSL's names, colon-separated (empty: all supported)",
    ),
    def(
        Param::Threads,
        "threads",
        Kind::Int { min: 0, max: 1024 },
        "0",
        Mutability::Immutable,
        "I/O threads (0 = chosen from the machine's cores)",
    ),
    def(
        Param::WorkerYield,
        "worker-yield",
        Kind::Enum(&["auto", "yes", "no"]),
        "auto",
        Mutability::Immutable,
        "workers yield their CPU after each busy turn: auto = when they outnumber the CPUs",
    ),
    def(
        Param::Databases,
        "databases",
        Kind::Int { min: 1, max: 4096 },
        "16",
        Mutability::Immutable,
        "number of databases",
    ),
    def(
        Param::Requirepass,
        "requirepass",
        Kind::Text,
        "",
        Mutability::Mutable,
        "password for the default user",
    ),
    def(
        Param::ProtectedMode,
        "protected-mode",
        Kind::Bool,
        "yes",
        Mutability::Mutable,
        "without a password for the default user, refuse clients not on loopback",
    ),
    def(
        Param::Maxclients,
        "maxclients",
        Kind::Int {
            min: 1,
            max: u32::MAX as i64,
        },
        "10000",
        Mutability::Mutable,
        "maximum connected clients",
    ),
    def(
        Param::Timeout,
        "timeout",
        Kind::Int {
            min: 0,
            max: i32::MAX as i64,
        },
        "0",
        Mutability::Mutable,
        "close clients idle this many seconds (0 = never)",
    ),
    def(
        Param::TcpKeepalive,
        "tcp-keepalive",
        Kind::Int {
            min: 0,
            max: i32::MAX as i64,
        },
        "300",
        Mutability::Mutable,
        "TCP keepalive seconds",
    ),
    def(
        Param::ProtoMaxBulkLen,
        "proto-max-bulk-len",
        // Redis allows up to LLONG_MAX; larder stores key lengths in 32 bits, so a bulk
        // string (and with it a key) stays under 4 GiB.
        Kind::Memory {
            min: MB,
            max: u32::MAX as i64,
        },
        "536870912",
        Mutability::Mutable,
        "largest bulk string accepted",
    ),
    def(
        Param::ClientQueryBufferLimit,
        "client-query-buffer-limit",
        Kind::Memory {
            min: MB,
            max: i64::MAX,
        },
        "1073741824",
        Mutability::Mutable,
        "largest query buffer per client",
    ),
    def(
        Param::Hz,
        "hz",
        // Redis accepts any non-negative int and clamps it to 1..=500 (see `parse_value`).
        Kind::Int {
            min: 0,
            max: i32::MAX as i64,
        },
        "10",
        Mutability::Mutable,
        "background task frequency",
    ),
    def(
        Param::SlowlogLogSlowerThan,
        "slowlog-log-slower-than",
        Kind::Int {
            min: -1,
            max: i64::MAX,
        },
        "10000",
        Mutability::Mutable,
        "microseconds; -1 disables the slow log",
    ),
    def(
        Param::SlowlogMaxLen,
        "slowlog-max-len",
        Kind::Int {
            min: 0,
            max: i64::MAX,
        },
        "128",
        Mutability::Mutable,
        "slow log entries kept",
    ),
    def(
        Param::Maxmemory,
        "maxmemory",
        Kind::Memory {
            min: 0,
            max: i64::MAX,
        },
        "0",
        Mutability::Mutable,
        "memory limit in bytes (0 = none)",
    ),
    def(
        Param::MaxmemoryPolicy,
        "maxmemory-policy",
        Kind::Enum(MAXMEMORY_POLICIES),
        "noeviction",
        Mutability::Mutable,
        "what to do at the memory limit",
    ),
    def(
        Param::MaxmemorySamples,
        "maxmemory-samples",
        Kind::Int {
            min: 1,
            max: i32::MAX as i64,
        },
        "5",
        Mutability::Mutable,
        "keys sampled per eviction (more: closer to true LRU/LFU, slower)",
    ),
    def(
        Param::LfuLogFactor,
        "lfu-log-factor",
        Kind::Int {
            min: 0,
            max: i32::MAX as i64,
        },
        "10",
        Mutability::Mutable,
        "LFU counter growth: higher needs more hits per increment",
    ),
    def(
        Param::LfuDecayTime,
        "lfu-decay-time",
        Kind::Int {
            min: 0,
            max: i32::MAX as i64,
        },
        "1",
        Mutability::Mutable,
        "minutes per LFU counter decrement (0 = never decay)",
    ),
    def(
        Param::Loglevel,
        "loglevel",
        Kind::Enum(&["debug", "verbose", "notice", "warning", "nothing"]),
        "notice",
        Mutability::Mutable,
        "log verbosity",
    ),
    def(
        Param::Logfile,
        "logfile",
        Kind::Text,
        "",
        Mutability::Immutable,
        "log file (empty = stderr)",
    ),
    def(
        Param::LazyfreeLazyUserFlush,
        "lazyfree-lazy-user-flush",
        Kind::Bool,
        "no",
        Mutability::Mutable,
        "FLUSHALL/FLUSHDB without a mode free memory in the background",
    ),
    def(
        Param::LazyfreeLazyUserDel,
        "lazyfree-lazy-user-del",
        Kind::Bool,
        "no",
        Mutability::Mutable,
        "DEL behaves like UNLINK",
    ),
    def(
        Param::DisableThp,
        "disable-thp",
        Kind::Bool,
        "yes",
        Mutability::Immutable,
        "turn transparent huge pages off for the process (page faults that zero 2 MiB stall clients)",
    ),
    def(
        Param::NotifyKeyspaceEvents,
        "notify-keyspace-events",
        Kind::Custom(crate::notify::parse_classes),
        "",
        Mutability::Mutable,
        "keyspace notification classes (Redis's letters: K E g $ l s h z x e t m d n A)",
    ),
    def(
        Param::ClientOutputBufferLimit,
        "client-output-buffer-limit",
        Kind::Custom(parse_output_limits),
        "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60",
        Mutability::Mutable,
        "output limits per client class: class hard soft seconds (normal, replica, pubsub)",
    ),
    def(
        Param::LatencyTracking,
        "latency-tracking",
        Kind::Bool,
        "yes",
        Mutability::Mutable,
        "keep a latency histogram per command (INFO latencystats, LATENCY HISTOGRAM)",
    ),
    def(
        Param::LatencyTrackingInfoPercentiles,
        "latency-tracking-info-percentiles",
        Kind::Percentiles,
        "50 99 99.9",
        Mutability::Mutable,
        "percentiles INFO latencystats reports (space-separated)",
    ),
    def(
        Param::LatencyMonitorThreshold,
        "latency-monitor-threshold",
        Kind::Int {
            min: 0,
            max: i64::MAX,
        },
        "0",
        Mutability::Mutable,
        "milliseconds; commands at least this slow are LATENCY events (0 = monitor off)",
    ),
    def(
        Param::ValueEventsBufferLimit,
        "value-events-buffer-limit",
        Kind::Memory {
            min: 0,
            max: i64::MAX,
        },
        "1048576",
        Mutability::Mutable,
        "pending output per client past which value events are dropped (0 = no limit)",
    ),
    def(
        Param::TrackingTableMaxKeys,
        "tracking-table-max-keys",
        Kind::Int {
            min: 0,
            max: i64::MAX,
        },
        "1000000",
        Mutability::Mutable,
        "keys remembered for client-side caching; past it, keys are invalidated (0 = no limit)",
    ),
    def(
        Param::HashMaxListpackEntries,
        "hash-max-listpack-entries",
        Kind::Int {
            min: 0,
            max: i64::MAX,
        },
        "512",
        Mutability::Mutable,
        "a hash with more fields leaves its compact (listpack) encoding",
    ),
    def(
        Param::HashMaxListpackValue,
        "hash-max-listpack-value",
        Kind::Int {
            min: 0,
            max: i64::MAX,
        },
        "64",
        Mutability::Mutable,
        "a hash with a longer field or value leaves its compact (listpack) encoding",
    ),
    def(
        Param::SetMaxIntsetEntries,
        "set-max-intset-entries",
        Kind::Int {
            min: 0,
            max: i64::MAX,
        },
        "512",
        Mutability::Mutable,
        "a set of integers with more members leaves its compact (intset) encoding",
    ),
    def(
        Param::ZsetMaxListpackEntries,
        "zset-max-listpack-entries",
        Kind::Int {
            min: 0,
            max: i64::MAX,
        },
        "128",
        Mutability::Mutable,
        "a sorted set with more members leaves its compact (listpack) encoding",
    ),
    def(
        Param::ZsetMaxListpackValue,
        "zset-max-listpack-value",
        Kind::Int {
            min: 0,
            max: i64::MAX,
        },
        "64",
        Mutability::Mutable,
        "a sorted set with a longer member leaves its compact (listpack) encoding",
    ),
    def(
        Param::ListMaxListpackSize,
        "list-max-listpack-size",
        Kind::Int {
            min: i32::MIN as i64,
            max: i32::MAX as i64,
        },
        "-2",
        Mutability::Mutable,
        "elements per compact list node, or -1..-5 for 4..64 KiB per node",
    ),
    def(
        Param::HllSparseMaxBytes,
        "hll-sparse-max-bytes",
        Kind::Memory {
            min: 0,
            max: i32::MAX as i64,
        },
        "3000",
        Mutability::Mutable,
        "a HyperLogLog's sparse representation past this many bytes turns dense",
    ),
    def(
        Param::LuaMemoryLimit,
        "lua-memory-limit",
        Kind::Memory {
            min: 0,
            max: i64::MAX,
        },
        "256mb",
        Mutability::Immutable,
        "memory cap of each worker thread's Lua interpreter (a script past it gets an error); 0 for no cap",
    ),
    def(
        Param::StreamNodeMaxBytes,
        "stream-node-max-bytes",
        Kind::Memory {
            min: 0,
            max: i64::MAX,
        },
        "4096",
        Mutability::Mutable,
        "a stream node holding this many bytes (as Redis's listpack counts them) takes no more entries; 0 for no limit",
    ),
    def(
        Param::StreamNodeMaxEntries,
        "stream-node-max-entries",
        Kind::Int {
            min: 0,
            max: i64::MAX,
        },
        "100",
        Mutability::Mutable,
        "a stream node holding this many entries takes no more; 0 for no limit",
    ),
    def(
        Param::Dir,
        "dir",
        Kind::Text,
        "./larder-data",
        Mutability::Immutable,
        "data directory: snapshots and the append-only log (created, and locked while running)",
    ),
    def(
        Param::Appendonly,
        "appendonly",
        Kind::Bool,
        "yes",
        Mutability::Immutable,
        "log every write to the append-only log (no: snapshots only, or pure cache with save \"\")",
    ),
    def(
        Param::Appendfsync,
        "appendfsync",
        Kind::Enum(&["always", "everysec", "no"]),
        "everysec",
        Mutability::Mutable,
        "when the log is fsynced: before each reply (always), once a second, or by the kernel",
    ),
    def(
        Param::Save,
        "save",
        Kind::Custom(parse_save),
        "3600 1 300 100 60 10000",
        Mutability::Mutable,
        "snapshot rules: pairs of <seconds> <changes> (\"\" for none)",
    ),
    def(
        Param::AutoAofRewritePercentage,
        "auto-aof-rewrite-percentage",
        Kind::Int {
            min: 0,
            max: i32::MAX as i64,
        },
        "100",
        Mutability::Mutable,
        "rewrite (snapshot, then a new log) when the log grew by this percentage (0: never)",
    ),
    def(
        Param::AutoAofRewriteMinSize,
        "auto-aof-rewrite-min-size",
        Kind::Memory {
            min: 0,
            max: i64::MAX,
        },
        "67108864",
        Mutability::Mutable,
        "smallest log that an automatic rewrite considers",
    ),
    def(
        Param::Dbfilename,
        "dbfilename",
        Kind::Text,
        "dump.rdb",
        Mutability::Immutable,
        "a Redis RDB file in dir, loaded at start when the data directory holds no data yet",
    ),
    def(
        Param::AofTestDropUnsynced,
        "aof-test-drop-unsynced",
        Kind::Bool,
        "no",
        Mutability::Immutable,
        "tests only: log bytes reach the file only when fsynced, so kill -9 loses what a power loss would",
    ),
    def(
        Param::AofTestFailWrites,
        "aof-test-fail-writes",
        Kind::Bool,
        "no",
        Mutability::Mutable,
        "tests only: writes to the log and snapshots fail with ENOSPC, as on a full disk",
    ),
    def(
        Param::KeyLoadDelay,
        "key-load-delay",
        Kind::Int {
            min: i32::MIN as i64,
            max: i32::MAX as i64,
        },
        "0",
        Mutability::Mutable,
        "tests: microseconds to sleep per key or log group while loading (Redis's)",
    ),
    def(
        Param::EnableDebugCommand,
        "enable-debug-command",
        Kind::Enum(&["no", "yes", "local"]),
        "no",
        Mutability::Immutable,
        "allow DEBUG: no, yes, or local (clients on 127.0.0.1 or ::1 only)",
    ),
    def(
        Param::SnapshotCompression,
        "snapshot-compression",
        Kind::Bool,
        "no",
        Mutability::Mutable,
        "LZF-compress strings in snapshot files (smaller files, more CPU; DUMP always does, as Redis)",
    ),
    def(
        Param::BusyReplyThreshold,
        "busy-reply-threshold",
        Kind::Int {
            min: 0,
            max: i64::MAX,
        },
        "5000",
        Mutability::Mutable,
        "milliseconds a script runs before other clients' commands get -BUSY and SCRIPT KILL may end it",
    ),
    def(
        Param::Aclfile,
        "aclfile",
        Kind::Text,
        "",
        Mutability::Immutable,
        "the file ACL LOAD and ACL SAVE read and write users from (empty: none)",
    ),
    def(
        Param::AcllogMaxLen,
        "acllog-max-len",
        Kind::Int {
            min: 0,
            max: i64::MAX,
        },
        "128",
        Mutability::Mutable,
        "entries ACL LOG keeps",
    ),
    def(
        Param::ReplBacklogSize,
        "repl-backlog-size",
        Kind::Memory {
            min: 1,
            max: i64::MAX,
        },
        "1048576",
        Mutability::Mutable,
        "bytes of the replication stream kept for partial resyncs",
    ),
    def(
        Param::ReplBacklogTtl,
        "repl-backlog-ttl",
        Kind::Int {
            min: 0,
            max: i32::MAX as i64,
        },
        "3600",
        Mutability::Mutable,
        "seconds without replicas after which the backlog is freed (0 = never)",
    ),
    def(
        Param::ReplPingReplicaPeriod,
        "repl-ping-replica-period",
        Kind::Int {
            min: 1,
            max: i32::MAX as i64,
        },
        "10",
        Mutability::Mutable,
        "seconds between the PINGs a master sends its replicas",
    ),
    def(
        Param::ReplTimeout,
        "repl-timeout",
        Kind::Int {
            min: 1,
            max: i32::MAX as i64,
        },
        "60",
        Mutability::Mutable,
        "seconds a replication transfer or link may make no progress before it is dropped",
    ),
    def(
        Param::Replicaof,
        "replicaof",
        Kind::Custom(parse_replicaof),
        "",
        Mutability::Immutable,
        "the master to replicate at start, as `host port` (REPLICAOF changes it at run time)",
    ),
    def(
        Param::Masterauth,
        "masterauth",
        Kind::Text,
        "",
        Mutability::Mutable,
        "the password a replica sends its master (AUTH), empty for none",
    ),
    def(
        Param::Masteruser,
        "masteruser",
        Kind::Text,
        "",
        Mutability::Mutable,
        "the ACL user a replica authenticates as with masterauth, empty for the default user",
    ),
    def(
        Param::ReplicaReadOnly,
        "replica-read-only",
        Kind::Bool,
        "yes",
        Mutability::Mutable,
        "a replica refuses writes from its clients (-READONLY)",
    ),
    def(
        Param::ReplicaServeStaleData,
        "replica-serve-stale-data",
        Kind::Bool,
        "yes",
        Mutability::Mutable,
        "a replica whose link to its master is down still serves its data (no: -MASTERDOWN)",
    ),
    def(
        Param::ReplicaIgnoreMaxmemory,
        "replica-ignore-maxmemory",
        Kind::Bool,
        "yes",
        Mutability::Mutable,
        "a replica evicts nothing for maxmemory (its master's DELs free memory)",
    ),
    def(
        Param::MinReplicasToWrite,
        "min-replicas-to-write",
        Kind::Int {
            min: 0,
            max: i32::MAX as i64,
        },
        "0",
        Mutability::Mutable,
        "a master refuses writes (NOREPLICAS) with fewer good replicas than this (0 = off)",
    ),
    def(
        Param::MinReplicasMaxLag,
        "min-replicas-max-lag",
        Kind::Int {
            min: 0,
            max: i32::MAX as i64,
        },
        "10",
        Mutability::Mutable,
        "seconds since its last acknowledgement within which a replica counts as good (0 = off)",
    ),
    def(
        Param::ReplicaPriority,
        "replica-priority",
        Kind::Int {
            min: 0,
            max: i32::MAX as i64,
        },
        "100",
        Mutability::Mutable,
        "Sentinel promotes the replica with the lowest priority first (0 = never)",
    ),
    def(
        Param::ReplicaAnnounceIp,
        "replica-announce-ip",
        Kind::Text,
        "",
        Mutability::Mutable,
        "the IP a replica tells its master to show for it (empty: its connection's)",
    ),
    def(
        Param::ReplicaAnnouncePort,
        "replica-announce-port",
        Kind::Int { min: 0, max: 65535 },
        "0",
        Mutability::Mutable,
        "the port a replica tells its master to show for it (0: its own port)",
    ),
    def(
        Param::ReplicaAnnounced,
        "replica-announced",
        Kind::Bool,
        "yes",
        Mutability::Mutable,
        "whether Sentinel lists this replica (SENTINEL REPLICAS)",
    ),
];

/// Redis's older names for parameters, accepted wherever the name is (CONFIG GET and SET,
/// the config file) and listed by CONFIG GET patterns, as Redis 7.0 does.
pub static ALIASES: &[(&str, Param)] = &[
    ("hash-max-ziplist-entries", Param::HashMaxListpackEntries),
    ("hash-max-ziplist-value", Param::HashMaxListpackValue),
    ("zset-max-ziplist-entries", Param::ZsetMaxListpackEntries),
    ("zset-max-ziplist-value", Param::ZsetMaxListpackValue),
    ("list-max-ziplist-size", Param::ListMaxListpackSize),
    ("lua-time-limit", Param::BusyReplyThreshold),
    ("repl-ping-slave-period", Param::ReplPingReplicaPeriod),
    ("slaveof", Param::Replicaof),
    ("slave-read-only", Param::ReplicaReadOnly),
    ("slave-serve-stale-data", Param::ReplicaServeStaleData),
    ("slave-ignore-maxmemory", Param::ReplicaIgnoreMaxmemory),
    ("min-slaves-to-write", Param::MinReplicasToWrite),
    ("min-slaves-max-lag", Param::MinReplicasMaxLag),
    ("slave-priority", Param::ReplicaPriority),
    ("slave-announce-ip", Param::ReplicaAnnounceIp),
    ("slave-announce-port", Param::ReplicaAnnouncePort),
];

/// `replicaof host port` (or `no one`, or nothing: not a replica), shown as `host port`.
fn parse_replicaof(value: &str) -> Result<(i64, String), String> {
    let words: Vec<&str> = value.split_whitespace().collect();
    match words.as_slice() {
        [] => Ok((0, String::new())),
        [no, one] if no.eq_ignore_ascii_case("no") && one.eq_ignore_ascii_case("one") => {
            Ok((0, String::new()))
        }
        [host, port] => {
            let port: u16 = port
                .parse()
                .map_err(|_| "Invalid master port".to_string())?;
            Ok((i64::from(port), format!("{host} {port}")))
        }
        _ => Err("wrong number of arguments".to_string()),
    }
}

/// `tls-auth-clients`' values; the stored number is the index.
pub const TLS_AUTH_CLIENTS: &[&str] = &["no", "yes", "optional"];

/// The TLS versions `tls-protocols` may name.
pub const TLS_PROTOCOLS: &[&str] = &["TLSv1.2", "TLSv1.3"];

/// The TLS 1.3 suites `tls-ciphersuites` may name (OpenSSL and IANA use the same names).
pub const TLS13_SUITES: &[&str] = &[
    "TLS_AES_256_GCM_SHA384",
    "TLS_AES_128_GCM_SHA256",
    "TLS_CHACHA20_POLY1305_SHA256",
];

/// The TLS 1.2 ciphers `tls-ciphers` may name, in OpenSSL's spelling.
pub const TLS12_CIPHERS: &[&str] = &[
    "ECDHE-ECDSA-AES256-GCM-SHA384",
    "ECDHE-ECDSA-AES128-GCM-SHA256",
    "ECDHE-ECDSA-CHACHA20-POLY1305",
    "ECDHE-RSA-AES256-GCM-SHA384",
    "ECDHE-RSA-AES128-GCM-SHA256",
    "ECDHE-RSA-CHACHA20-POLY1305",
];

/// A list of names separated by `sep`, each one of `known` (case-insensitive), written back
/// in `known`'s spelling; the number is how many. `what` names the list in the error.
fn parse_names(
    value: &str,
    sep: char,
    known: &[&str],
    what: &str,
) -> Result<(i64, String), String> {
    let mut shown: Vec<&str> = Vec::new();
    for word in value.split(sep).filter(|w| !w.is_empty()) {
        let Some(name) = known.iter().find(|k| k.eq_ignore_ascii_case(word)) else {
            return Err(format!(
                "unsupported {what} '{word}' (supported: {})",
                known.join(" ")
            ));
        };
        if !shown.contains(name) {
            shown.push(name);
        }
    }
    Ok((shown.len() as i64, shown.join(&sep.to_string())))
}

/// `tls-protocols`' parser: space-separated versions.
fn parse_tls_protocols(value: &str) -> Result<(i64, String), String> {
    parse_names(value, ' ', TLS_PROTOCOLS, "TLS protocol")
}

/// `tls-ciphersuites`' parser: colon-separated TLS 1.3 suites.
fn parse_tls_ciphersuites(value: &str) -> Result<(i64, String), String> {
    parse_names(value, ':', TLS13_SUITES, "TLS 1.3 cipher suite")
}

/// `tls-ciphers`' parser: colon-separated TLS 1.2 ciphers.
fn parse_tls_ciphers(value: &str) -> Result<(i64, String), String> {
    parse_names(value, ':', TLS12_CIPHERS, "TLS 1.2 cipher")
}

/// `save`'s parser: pairs of seconds and changes, as Redis 7.0 takes them (an empty string
/// for none). The number is the count of rules; the text is normalized.
fn parse_save(value: &str) -> Result<(i64, String), String> {
    let rules = super::save_rules(value)?;
    let text = rules
        .iter()
        .map(|(s, c)| format!("{s} {c}"))
        .collect::<Vec<_>>()
        .join(" ");
    Ok((rules.len() as i64, text))
}

/// `memcached-prefix-delimiter`: one ASCII character (its byte is the number).
fn parse_delimiter(value: &str) -> Result<(i64, String), String> {
    match value.as_bytes() {
        [b] if b.is_ascii() && !b.is_ascii_whitespace() => Ok((i64::from(*b), value.to_string())),
        _ => Err("argument must be one printable ASCII character".to_string()),
    }
}

/// `client-output-buffer-limit`'s parser for the parameter table.
fn parse_output_limits(value: &str) -> Result<(i64, String), String> {
    let limits = crate::mail::parse_output_limits(value)?;
    Ok((0, crate::mail::format_output_limits(&limits)))
}

const fn def(
    param: Param,
    name: &'static str,
    kind: Kind,
    default: &'static str,
    mutability: Mutability,
    help: &'static str,
) -> ParamDef {
    ParamDef {
        param,
        name,
        kind,
        default,
        mutability,
        help,
    }
}
