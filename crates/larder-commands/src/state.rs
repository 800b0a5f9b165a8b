//! Server-wide state that commands read and write: the keyspace, configuration, statistics,
//! connected clients, the slow log and client pauses.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use larder_engine::Keyspace;
use parking_lot::Mutex;

use crate::config::{Config, Param};
use crate::table::Registry;

/// Counters written by one worker thread only (so increments are plain load+store, no
/// contended read-modify-write) and summed for INFO.
#[derive(Default)]
pub struct ThreadStats {
    pub commands: AtomicU64,
    pub net_input_bytes: AtomicU64,
    pub net_output_bytes: AtomicU64,
    pub keyspace_hits: AtomicU64,
    pub keyspace_misses: AtomicU64,
    pub error_replies: AtomicU64,
    /// Write commands that succeeded (what `save` rules count as changes).
    pub writes: AtomicU64,
    /// Per command (registry stats index): calls, microseconds, rejected, failed.
    pub per_command: Box<[CommandStat]>,
}

/// Statistics for one command (INFO commandstats).
#[derive(Default)]
pub struct CommandStat {
    pub calls: AtomicU64,
    pub usec: AtomicU64,
    pub rejected_calls: AtomicU64,
    pub failed_calls: AtomicU64,
}

/// Add to a counter that only the calling thread writes.
#[inline]
pub fn bump(c: &AtomicU64, n: u64) {
    c.store(c.load(Ordering::Relaxed).wrapping_add(n), Ordering::Relaxed);
}

/// Server-wide counters.
pub struct Stats {
    pub threads: Box<[ThreadStats]>,
    pub connections_received: AtomicU64,
    pub rejected_connections: AtomicU64,
    pub errors: Mutex<HashMap<String, u64>>,
}

impl Stats {
    /// Sum of a per-thread counter.
    pub fn sum(&self, f: impl Fn(&ThreadStats) -> &AtomicU64) -> u64 {
        self.threads
            .iter()
            .map(|t| f(t).load(Ordering::Relaxed))
            .sum()
    }

    /// Reset everything CONFIG RESETSTAT resets.
    pub fn reset(&self) {
        for t in self.threads.iter() {
            for c in [
                &t.commands,
                &t.net_input_bytes,
                &t.net_output_bytes,
                &t.keyspace_hits,
                &t.keyspace_misses,
                &t.error_replies,
            ] {
                c.store(0, Ordering::Relaxed);
            }
            for c in t.per_command.iter() {
                for a in [&c.calls, &c.usec, &c.rejected_calls, &c.failed_calls] {
                    a.store(0, Ordering::Relaxed);
                }
            }
        }
        self.connections_received.store(0, Ordering::Relaxed);
        self.rejected_connections.store(0, Ordering::Relaxed);
        self.errors.lock().clear();
    }
}

/// What CLIENT LIST shows of a connection; shared between its worker thread and any thread
/// that lists or kills clients.
pub struct ClientHandle {
    pub id: u64,
    pub addr: String,
    pub laddr: String,
    pub fd: i64,
    pub created_ms: u64,
    pub last_interaction_ms: AtomicU64,
    pub db: AtomicUsize,
    pub resp: AtomicU8,
    /// Stats index of the last command (usize::MAX = none yet).
    pub last_command: AtomicUsize,
    pub query_buf_bytes: AtomicUsize,
    pub output_buf_bytes: AtomicUsize,
    pub names: Mutex<ClientNames>,
    /// Set by CLIENT KILL; the owning worker closes the connection when it sees it.
    pub killed: AtomicBool,
    pub no_evict: AtomicBool,
    pub no_touch: AtomicBool,
    /// Wakes the owning worker (so a kill takes effect without waiting for traffic).
    pub waker: Option<Arc<dyn Fn() + Send + Sync>>,
    /// Bytes other threads deliver to this client (pub/sub messages), and its worker's
    /// mailbox.
    pub mail: crate::mail::Mail,
    /// CLIENT TRACKING's flags and redirection.
    pub tracking: crate::tracking::TrackingFlags,
    /// The name of the ACL user the connection is authenticated as (CLIENT LIST `user=`,
    /// CLIENT KILL USER, `acl::disconnect_users`).
    pub user: Mutex<Arc<str>>,
}

impl ClientHandle {
    /// A client without a socket: the loader that replays the log, the queue's reclaim
    /// timer, tests. It is not in the client list and nothing can be mailed to it.
    pub fn detached(server: &Server) -> Arc<ClientHandle> {
        let now = larder_engine::now_ms();
        Arc::new(ClientHandle {
            id: server.clients.next_id(),
            addr: "127.0.0.1:0".into(),
            laddr: "127.0.0.1:0".into(),
            fd: -1,
            created_ms: now,
            last_interaction_ms: AtomicU64::new(now),
            db: AtomicUsize::new(0),
            resp: AtomicU8::new(2),
            last_command: AtomicUsize::new(usize::MAX),
            query_buf_bytes: AtomicUsize::new(0),
            output_buf_bytes: AtomicUsize::new(0),
            names: Mutex::new(ClientNames::default()),
            killed: AtomicBool::new(false),
            no_evict: AtomicBool::new(false),
            no_touch: AtomicBool::new(false),
            waker: None,
            mail: crate::mail::Mail::default(),
            tracking: Default::default(),
            user: parking_lot::Mutex::new(std::sync::Arc::from("default")),
        })
    }

    /// Output not yet written: what its worker holds plus what waits in its outbox.
    pub fn output_bytes(&self) -> usize {
        self.output_buf_bytes.load(Ordering::Relaxed) + self.mail.queued()
    }
}

/// Mark a client killed and wake its worker (CLIENT KILL, an output limit passed).
pub fn kill_client(h: &ClientHandle) {
    h.killed.store(true, Ordering::Release);
    if let Some(w) = &h.waker {
        w();
    }
}

/// Names a client gave itself.
#[derive(Default, Clone)]
pub struct ClientNames {
    pub name: String,
    pub lib_name: String,
    pub lib_ver: String,
}

/// Registry of connected clients.
#[derive(Default)]
pub struct Clients {
    map: Mutex<HashMap<u64, Arc<ClientHandle>>>,
    next_id: AtomicU64,
}

impl Clients {
    /// A fresh client id (monotonic, starting at 1).
    pub fn next_id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed) + 1
    }

    pub fn register(&self, h: Arc<ClientHandle>) {
        self.map.lock().insert(h.id, h);
    }

    /// The connected client `id`.
    pub fn get(&self, id: u64) -> Option<Arc<ClientHandle>> {
        self.map.lock().get(&id).cloned()
    }

    pub fn unregister(&self, id: u64) {
        self.map.lock().remove(&id);
    }

    pub fn count(&self) -> usize {
        self.map.lock().len()
    }

    /// All clients ordered by id.
    pub fn snapshot(&self) -> Vec<Arc<ClientHandle>> {
        let mut v: Vec<_> = self.map.lock().values().cloned().collect();
        v.sort_by_key(|c| c.id);
        v
    }

    /// Mark a client killed and wake its worker.
    pub fn kill(&self, h: &ClientHandle) {
        kill_client(h);
    }
}

/// One slow log entry.
#[derive(Clone)]
pub struct SlowEntry {
    pub id: u64,
    pub time_s: u64,
    pub duration_us: u64,
    pub argv: Vec<Vec<u8>>,
    pub addr: String,
    pub name: String,
}

/// The slow log (newest first).
#[derive(Default)]
pub struct SlowLog {
    pub entries: VecDeque<SlowEntry>,
    pub next_id: u64,
}

/// CLIENT PAUSE state.
#[derive(Default)]
pub struct Pause {
    /// Unix ms until which clients are paused (0 = not paused).
    pub until_ms: AtomicU64,
    /// 1 = WRITE, 2 = ALL.
    pub mode: AtomicU8,
}

impl Pause {
    pub const WRITE: u8 = 1;
    pub const ALL: u8 = 2;

    /// The deadline to hold a command until, if a pause holds it at `now_ms`: ALL holds
    /// every command (CLIENT UNPAUSE included, as in Redis: only the timeout ends it), WRITE
    /// holds writes.
    pub fn holds(&self, write: bool, now_ms: u64) -> Option<u64> {
        let until = self.until_ms.load(Ordering::Acquire);
        if until <= now_ms {
            return None;
        }
        (write || self.mode.load(Ordering::Acquire) == Pause::ALL).then_some(until)
    }

    /// [`Pause::holds`] for a caller that has not read the clock: reads it only when a pause
    /// has been set.
    pub fn holds_now(&self, write: bool) -> Option<u64> {
        if self.until_ms.load(Ordering::Relaxed) == 0 {
            return None;
        }
        self.holds(write, larder_engine::now_ms())
    }
}

/// Information the network layer provides for INFO.
#[derive(Default, Clone)]
pub struct ServerInfo {
    pub tcp_port: u16,
    pub memcached_port: u16,
    /// The HTTP door's port (0: disabled).
    pub http_port: u16,
    pub threads: usize,
    pub executable: String,
    pub config_file: String,
}

/// Everything shared by all connections.
pub struct Server {
    pub keyspace: Keyspace,
    pub config: Config,
    pub registry: Registry,
    pub stats: Stats,
    pub clients: Clients,
    pub slowlog: Mutex<SlowLog>,
    /// Per-command latency histograms and the latency monitor's events.
    pub latency: crate::latency::Latency,
    pub pause: Pause,
    pub started: Instant,
    pub started_ms: u64,
    pub run_id: String,
    pub info: Mutex<ServerInfo>,
    /// Set by SHUTDOWN; the network layer polls it and stops.
    pub shutdown_requested: AtomicBool,
    /// SHUTDOWN SAVE (`Some(true)`) or NOSAVE (`Some(false)`); `None`: by the `save` rules.
    pub shutdown_save: Mutex<Option<bool>>,
    /// Wakes the network layer after SHUTDOWN.
    pub shutdown_waker: Mutex<Option<Arc<dyn Fn() + Send + Sync>>>,
    /// Bytes allocated by the process (set by the binary's allocator hook), for INFO memory.
    pub used_memory: fn() -> usize,
    /// Connected clients (maintained by the network layer).
    pub connected_clients: AtomicUsize,
    /// Pub/sub subscriptions of every client, and the value-events consumer
    /// (`pubsub.values()`).
    pub pubsub: Arc<crate::pubsub::PubSub>,
    /// The feed consumer that publishes keyspace notifications, and its subscription id.
    pub notifier: (Arc<crate::notify::Notifier>, u64),
    /// How late the expiry thread removes keys (INFO stats `expired_lateness_*`).
    pub expiry_lateness: Lateness,
    /// Every worker's mailbox (set by the network layer), for messages to all workers.
    pub workers: Mutex<Vec<Arc<dyn crate::mail::Mailbox>>>,
    /// Clients in MONITOR mode.
    pub monitors: crate::monitor::Monitors,
    /// Client-side caching: tracking clients, the keys they read, and the feed consumer that
    /// sends their invalidations.
    pub tracking: Arc<crate::tracking::Tracking>,
    /// Blocked clients (BLPOP and friends), woken by the change feed.
    pub blocking: Arc<crate::blocking::Blocking>,
    /// The work queues' reclaim timer: the queues it looks after (`queue/timer.rs`).
    pub queues: crate::queue::Timer,
    /// The EVAL script cache and the FUNCTION libraries.
    pub scripts: crate::script::Scripts,
    /// The persistence runtime (data directory, log, snapshots), installed by the binary.
    pub persistence: std::sync::OnceLock<Arc<dyn crate::persistence::Persistence>>,
    /// The replication runtime, installed once at start (`replication.rs`).
    pub replication: std::sync::OnceLock<Arc<dyn crate::replication::Replication>>,
    /// Loading and disk-error switches, and the log's durable offset.
    pub gates: crate::persistence::Gates,
    /// Whether the expiry thread removes due keys (DEBUG SET-ACTIVE-EXPIRE turns it off;
    /// lazy expiry on access goes on regardless).
    pub active_expire: AtomicBool,
    /// Running scripts, and whether one is past `busy-reply-threshold` (`busy.rs`).
    pub busy: crate::busy::Busy,
    /// ACL users, shared by every door (`acl.rs`).
    pub acl: crate::acl::Acl,
}

/// A histogram of expiry lateness in milliseconds: 1 ms buckets up to 1 s, then one bucket for
/// everything later, the sum and the maximum. Written by the expiry thread only.
pub struct Lateness {
    buckets: Box<[AtomicU64]>,
    sum_ms: AtomicU64,
    max_ms: AtomicU64,
}

impl Default for Lateness {
    fn default() -> Self {
        Lateness {
            buckets: (0..=Lateness::SPAN_MS).map(|_| AtomicU64::new(0)).collect(),
            sum_ms: AtomicU64::new(0),
            max_ms: AtomicU64::new(0),
        }
    }
}

impl Lateness {
    const SPAN_MS: usize = 1000;

    /// Record a key removed `late_ms` after its deadline.
    pub fn record(&self, late_ms: u64) {
        bump(&self.buckets[(late_ms as usize).min(Lateness::SPAN_MS)], 1);
        bump(&self.sum_ms, late_ms);
        if late_ms > self.max_ms.load(Ordering::Relaxed) {
            self.max_ms.store(late_ms, Ordering::Relaxed);
        }
    }

    /// The lateness at percentile `p` (0–100), in ms; a value past the histogram's span reads
    /// as the span.
    pub fn percentile_ms(&self, p: f64) -> u64 {
        let counts: Vec<u64> = self
            .buckets
            .iter()
            .map(|b| b.load(Ordering::Relaxed))
            .collect();
        let total: u64 = counts.iter().sum();
        if total == 0 {
            return 0;
        }
        let want = ((p / 100.0) * total as f64).ceil().max(1.0) as u64;
        let mut seen = 0;
        for (ms, n) in counts.iter().enumerate() {
            seen += n;
            if seen >= want {
                return ms as u64;
            }
        }
        Lateness::SPAN_MS as u64
    }

    pub fn max_ms(&self) -> u64 {
        self.max_ms.load(Ordering::Relaxed)
    }

    /// Keys removed late by each whole number of ms below 1 s (index = ms) and, last, by 1 s
    /// or more; and the sum of every lateness in ms.
    pub fn counts(&self) -> (Vec<u64>, u64) {
        let counts = self
            .buckets
            .iter()
            .map(|b| b.load(Ordering::Relaxed))
            .collect();
        (counts, self.sum_ms.load(Ordering::Relaxed))
    }
}

fn no_memory_info() -> usize {
    0
}

impl Server {
    /// A server with `config` applied, `threads` worker stat slots, and every command table.
    pub fn new(config: Config, threads: usize) -> Server {
        let registry = crate::registry();
        let acl = crate::acl::Acl::new(&registry);
        let commands = registry.all().len();
        let threads = (0..threads.max(1) + 1)
            .map(|_| ThreadStats {
                per_command: (0..commands).map(|_| CommandStat::default()).collect(),
                ..ThreadStats::default()
            })
            .collect::<Box<[ThreadStats]>>();
        let latency = crate::latency::Latency::new(threads.len(), commands);
        let busy = crate::busy::Busy::new(threads.len());
        let databases = config.num(Param::Databases).max(1) as usize;
        let now = larder_engine::now_ms();
        let keyspace = Keyspace::new(databases);
        let pubsub = Arc::new(crate::pubsub::PubSub::default());
        let notifier = crate::notify::Notifier::install(keyspace.feed(), Arc::clone(&pubsub));
        pubsub.values().install(keyspace.feed());
        let tracking = Arc::new(crate::tracking::Tracking::default());
        tracking.install(keyspace.feed());
        let blocking = Arc::new(crate::blocking::Blocking::default());
        blocking.install(keyspace.feed());
        let server = Server {
            keyspace,
            config,
            registry,
            stats: Stats {
                threads,
                connections_received: AtomicU64::new(0),
                rejected_connections: AtomicU64::new(0),
                errors: Mutex::new(HashMap::new()),
            },
            clients: Clients::default(),
            slowlog: Mutex::new(SlowLog::default()),
            latency,
            pause: Pause::default(),
            started: Instant::now(),
            started_ms: now,
            run_id: run_id(now),
            info: Mutex::new(ServerInfo::default()),
            shutdown_requested: AtomicBool::new(false),
            shutdown_save: Mutex::new(None),
            shutdown_waker: Mutex::new(None),
            used_memory: no_memory_info,
            connected_clients: AtomicUsize::new(0),
            pubsub,
            notifier,
            expiry_lateness: Lateness::default(),
            workers: Mutex::new(Vec::new()),
            monitors: crate::monitor::Monitors::default(),
            tracking,
            blocking,
            queues: crate::queue::Timer::default(),
            scripts: crate::script::Scripts::default(),
            persistence: std::sync::OnceLock::new(),
            replication: std::sync::OnceLock::new(),
            gates: crate::persistence::Gates::default(),
            active_expire: AtomicBool::new(true),
            busy,
            acl,
        };
        server
            .acl
            .set_requirepass(&server.config.text(Param::Requirepass));
        server
            .acl
            .set_log_max_len(server.config.num(Param::AcllogMaxLen) as usize);
        // Track LFU counters from the first access when the server starts with an LFU policy.
        server.sync_access_policy();
        server.sync_notifications();
        server
    }

    /// Apply `notify-keyspace-events`, `client-output-buffer-limit` (the `pubsub` class to
    /// subscribers, the `normal` one to monitors) and `value-events-buffer-limit` after they
    /// changed: at startup and after CONFIG SET.
    pub fn sync_notifications(&self) {
        let (notifier, id) = &self.notifier;
        notifier.configure(
            self.keyspace.feed(),
            *id,
            self.config.num(Param::NotifyKeyspaceEvents) as u32,
        );
        let limits =
            crate::mail::parse_output_limits(&self.config.text(Param::ClientOutputBufferLimit))
                .unwrap_or(crate::mail::DEFAULT_LIMITS);
        self.pubsub.set_limit(limits[2]);
        self.monitors.set_limit(limits[0]);
        self.tracking.configure(
            limits[0],
            limits[2],
            self.config.num(Param::TrackingTableMaxKeys).max(0) as u64,
        );
        self.pubsub
            .values()
            .set_budget(self.config.num(Param::ValueEventsBufferLimit).max(0) as u64);
    }

    /// A pause was lifted (CLIENT UNPAUSE): every worker retries the requests it held.
    pub fn resume_paused(&self) {
        for w in self.workers.lock().iter() {
            w.resume();
        }
    }

    /// A client is gone: drop what the server keeps for it.
    pub fn client_closed(&self, id: u64, subs: Option<&crate::pubsub::Subscriptions>) {
        if let Some(subs) = subs {
            self.pubsub.forget(subs, id);
        }
        if let Some(h) = self.clients.get(id) {
            self.tracking.client_closed(&h);
        }
        self.monitors.remove(id);
        self.blocking.unregister(id);
        if let Some(r) = self.replication.get() {
            r.client_closed(id);
        }
        self.clients.unregister(id);
    }

    /// Tell the engine how to record accesses (LRU clock or LFU counter) after the policy or
    /// the LFU parameters changed: at startup and after CONFIG SET.
    pub fn sync_access_policy(&self) {
        self.keyspace.set_access_policy(
            crate::config::lfu_selected(&self.config),
            self.config.num(Param::LfuLogFactor) as u32,
            self.config.num(Param::LfuDecayTime) as u32,
        );
    }

    /// Ask the network layer to shut down.
    pub fn request_shutdown(&self) {
        self.shutdown_requested.store(true, Ordering::Release);
        if let Some(w) = self.shutdown_waker.lock().as_ref() {
            w();
        }
    }
}

/// A 40-hex-digit run id (as Redis's), from the clock and the process id.
fn run_id(now_ms: u64) -> String {
    let seed = now_ms ^ (u64::from(std::process::id()) << 32);
    let a = xorshift(seed | 1);
    let b = xorshift(a);
    let c = xorshift(b);
    format!("{a:016x}{b:016x}{:08x}", c as u32)
}

/// A small PRNG step (RANDOMKEY seeds, run ids); not for anything secret.
pub fn xorshift(mut x: u64) -> u64 {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    x
}
