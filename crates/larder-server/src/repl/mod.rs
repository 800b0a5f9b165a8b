//! The master side of Redis 7.0's replication protocol (see ARCHITECTURE.md,
//! "Replication"): the replication id and offset, the backlog, the stream of commands every
//! replica receives, and full and partial resyncs. Commands reach it through
//! `larder_commands::replication::Replication`, which [`Master`] implements.
//!
//! - **The stream** is a lossless change-feed consumer with `Interest::COMMANDS`, subscribed
//!   from the first resync until the backlog is freed (`repl-backlog-ttl` after the last
//!   replica left): before that the write path pays nothing. At each commit (on the
//!   committing thread, under the feed's ordering lock) it encodes the group
//!   ([`stream::Encoder`]), counts its bytes into the offset and appends them to the backlog
//!   and to every replica's pending bytes. An online replica's are posted to its outbox,
//!   under the `replica` class of `client-output-buffer-limit` (a replica over it is
//!   disconnected, never skipped), once per worker turn ([`Replication::flush_stream`], as
//!   Redis writes to replicas in `beforeSleep`), or at once from a thread that is not a
//!   worker.
//! - **A full resync** (`transfer.rs`) takes a point-in-time capture on a thread of its own:
//!   at the capture's point (every shard held, so no group commits) the replica joins with
//!   the offset read there; the stream meanwhile gathers in its pending buffer (bounded by
//!   the same limit) and is posted after the file.
//! - **A partial resync** answers `+CONTINUE` and the backlog from the asked offset.
//! - **larder replicas** (`REPLCONF capa larder-meta2`) also get each key's version and
//!   memcached flags: in their file, and beside the stream in frames that are not stream
//!   bytes, kept for partial resyncs in a side log (`meta.rs`).
//! - **A once-a-second timer** sends `PING` every `repl-ping-replica-period` seconds, drops
//!   replicas silent for `repl-timeout`, and frees the backlog after `repl-backlog-ttl`.
//!
//! Lock order: shard locks, then the feed's ordering lock, then [`Master`]'s state.

mod backlog;
mod commands;
pub(crate) mod guard;
mod meta;
mod replica;
mod stream;
mod transfer;

use std::collections::HashMap;
use std::io::Read;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use larder_commands::config::Param;
use larder_commands::mail::{Limit, Refused};
use larder_commands::replication::Replication;
use larder_commands::state::{kill_client, ClientHandle};
use larder_commands::Server;
use larder_engine::{Change, Consumer, Interest};
use parking_lot::Mutex;

use backlog::Backlog;
use meta::{MetaLog, OpenFrame};
use stream::Encoder;

/// What a replica said in REPLCONF before it asked to sync.
#[derive(Clone, Debug, Default)]
struct Handshake {
    port: u16,
    /// REPLCONF ip-address (its `replica-announce-ip`): shown instead of the connection's.
    ip: Option<String>,
    /// `capa eof`: it takes a file delimited by a mark instead of a length.
    eof: bool,
    /// `capa psync2`: `+CONTINUE` names the replication id.
    psync2: bool,
    /// `capa larder-meta2`: a larder replica, which takes versions and flags (`meta.rs`).
    meta: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// Receiving its file; the stream gathers in `pending`.
    Transfer,
    /// Its file was sent between EOF marks; the stream still gathers until its first
    /// REPLCONF ACK. A Redis replica looks for the mark at the end of what it has read, so
    /// stream bytes right behind the mark would hide it (Redis's `repl_put_online_on_ack`).
    AwaitAck,
    Online,
}

struct Replica {
    handle: Arc<ClientHandle>,
    port: u16,
    /// The address it announced, if any.
    ip: Option<String>,
    phase: Phase,
    /// Stream bytes not yet posted: until its first ACK after its file, or, once online,
    /// until the end of the worker's turn (see [`State::flush_unposted`]).
    pending: Pending,
    /// It takes versions and flags (`capa larder-meta2`).
    meta: bool,
    ack_offset: u64,
    /// When it last acknowledged (or came online), Unix ms.
    ack_ms: u64,
}

struct State {
    replid: String,
    replid2: String,
    second_offset: i64,
    offset: u64,
    backlog: Option<Backlog>,
    /// The version frames sent after the backlog's groups.
    meta: MetaLog,
    encoder: Encoder,
    replicas: Vec<Replica>,
    /// The feed subscription that exists while the backlog does.
    feed_id: Option<u64>,
    /// Since when no replica is attached (Unix ms), for `repl-backlog-ttl`.
    alone_since_ms: u64,
    /// WAIT's clients and the offsets they wait for.
    waiters: Vec<(Arc<ClientHandle>, u64)>,
    limit: Limit,
    /// An online replica has pending bytes to post.
    unposted: bool,
    /// The last group's encoding (its allocation reused).
    encoded: Vec<u8>,
    /// The versions and flags of the groups committed since the last frame went out: sent
    /// as one frame when the turn's stream bytes are posted ([`State::flush_unposted`]).
    frame: OpenFrame,
    /// The last frame's bytes (the allocation reused).
    frame_bytes: Vec<u8>,
    /// Set while this server is a replica: its stream is its master's, proxied (see
    /// [`Proxy`]), not encoded from its own changes.
    proxy: Option<Proxy>,
}

/// A replica's stream: the bytes of its master's stream, passed on to its own replicas
/// as it applies them (Redis 7 proxies the stream, so every level has the same offsets).
#[derive(Debug, Default)]
struct Proxy {
    /// The bytes of the command being applied. They join the stream when its changes
    /// commit (in the feed, with the shards held, so that a full resync's point sees the
    /// command and its bytes together) or, for a command that changed nothing, after it ran.
    /// Inside a transaction they gather from MULTI to EXEC, which joins them whole: a
    /// sub-replica's full resync never starts between the two (Redis's replica, too,
    /// advances its offset only after EXEC).
    staged: Vec<u8>,
    /// The master's connection is inside MULTI: the staged bytes wait for EXEC.
    in_multi: bool,
    /// The database the proxied stream has selected (`repl-stream-db` of a sub-replica's
    /// file).
    db: u32,
}

/// The master's replication runtime.
pub struct Master {
    server: Weak<Server>,
    /// Itself, for the feed consumer and the transfer threads.
    me: Weak<Master>,
    state: Mutex<State>,
    handshakes: Mutex<HashMap<u64, Handshake>>,
    sync_full: AtomicU64,
    sync_partial_ok: AtomicU64,
    sync_partial_err: AtomicU64,
    /// The link to the master while this server is a replica.
    link: Mutex<Option<Arc<replica::Link>>>,
    /// Links stopped whose threads may still run: a new link waits until none of them can
    /// apply anything more.
    stopped_links: Mutex<Vec<Arc<replica::Link>>>,
    /// An online replica has pending bytes a worker's turn should post.
    dirty: Flag,
}

/// A flag every worker reads once a turn and every commit may set: on a cache line of its
/// own, read before it is written, so that it does not bounce between cores (with the
/// state's lock beside it) while nothing changes.
#[repr(align(128))]
#[derive(Default)]
struct Flag(AtomicBool);

impl Flag {
    fn set(&self) {
        if !self.0.load(Ordering::Relaxed) {
            self.0.store(true, Ordering::Release);
        }
    }

    fn take(&self) -> bool {
        self.0.load(Ordering::Relaxed) && self.0.swap(false, Ordering::AcqRel)
    }
}

/// Stream bytes gathered for a replica, in chunks: the megabytes that gather during a full
/// resync never regrow (and copy) one buffer, and move into its outbox as they are.
#[derive(Default)]
struct Pending {
    chunks: Vec<Vec<u8>>,
    len: usize,
}

impl Pending {
    /// The size a chunk is started with.
    const CHUNK: usize = 64 * 1024;

    fn extend(&mut self, bytes: &[u8]) {
        match self.chunks.last_mut() {
            Some(last) if last.len() < Self::CHUNK => last.extend_from_slice(bytes),
            _ => {
                let mut chunk = Vec::with_capacity(Self::CHUNK.max(bytes.len()));
                chunk.extend_from_slice(bytes);
                self.chunks.push(chunk);
            }
        }
        self.len += bytes.len();
    }

    fn len(&self) -> usize {
        self.len
    }

    fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The chunks, leaving it empty.
    fn take(&mut self) -> Vec<Vec<u8>> {
        self.len = 0;
        std::mem::take(&mut self.chunks)
    }

    /// Post it to `h`'s outbox under `limit`, leaving it empty: the first chunk's allocation
    /// is kept for the next turn unless a burst (a big MSET, a script) made more.
    fn post_to(&mut self, h: &ClientHandle, limit: Limit) -> bool {
        if self.chunks.len() != 1 || self.chunks[0].capacity() > 4 * Self::CHUNK {
            return post_chunks(h, limit, self.take());
        }
        let ok = post(h, limit, &self.chunks[0]);
        self.chunks[0].clear();
        self.len = 0;
        ok
    }
}

/// The stream's PING.
const PING: &[u8] = b"*1\r\n$4\r\nPING\r\n";

/// Start the runtime: install it in `server` and start its timer.
pub fn start(server: &Arc<Server>) -> anyhow::Result<Arc<Master>> {
    let master = Arc::new_cyclic(|me| Master {
        server: Arc::downgrade(server),
        me: me.clone(),
        state: Mutex::new(State {
            replid: random_hex(40),
            replid2: "0".repeat(40),
            second_offset: -1,
            offset: 0,
            backlog: None,
            meta: MetaLog::default(),
            encoder: Encoder::default(),
            replicas: Vec::new(),
            feed_id: None,
            alone_since_ms: 0,
            waiters: Vec::new(),
            unposted: false,
            encoded: Vec::new(),
            frame: OpenFrame::default(),
            frame_bytes: Vec::new(),
            limit: replica_limit(server),
            proxy: None,
        }),
        handshakes: Mutex::new(HashMap::new()),
        sync_full: AtomicU64::new(0),
        sync_partial_ok: AtomicU64::new(0),
        sync_partial_err: AtomicU64::new(0),
        link: Mutex::new(None),
        stopped_links: Mutex::new(Vec::new()),
        dirty: Flag::default(),
    });
    let _ = server.replication.set(master.clone());
    guard::install_hook(server, &master);
    let configured = server.config.text(Param::Replicaof);
    if let Some((host, port)) = configured.split_once(' ') {
        let port = port.parse().unwrap_or(0);
        master
            .replicaof(Some((host, port)))
            .map_err(|e| anyhow::anyhow!("replicaof {configured}: {e}"))?;
    }
    let weak = Arc::downgrade(&master);
    std::thread::Builder::new()
        .name("repl-cron".into())
        .spawn(move || {
            let mut tick = 0u64;
            loop {
                std::thread::sleep(Duration::from_secs(1));
                let Some(m) = weak.upgrade() else { return };
                tick += 1;
                m.cron(tick);
            }
        })?;
    Ok(master)
}

/// `n` random hex digits (replication ids, EOF marks), from the kernel's generator.
fn random_hex(n: usize) -> String {
    let mut bytes = vec![0u8; n.div_ceil(2)];
    let read = std::fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut bytes));
    if read.is_err() {
        // No /dev/urandom: the clock, spread (ids must differ, not be secret).
        let mut x = larder_engine::now_us() | 1;
        for b in &mut bytes {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            *b = x as u8;
        }
    }
    let mut s: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    s.truncate(n);
    s
}

fn replica_limit(server: &Server) -> Limit {
    larder_commands::mail::parse_output_limits(&server.config.text(Param::ClientOutputBufferLimit))
        .unwrap_or(larder_commands::mail::DEFAULT_LIMITS)[1]
}

/// The replica's IP (its address without the port).
fn ip_of(addr: &str) -> &str {
    addr.rsplit_once(':').map_or(addr, |(ip, _)| ip)
}

/// Post `bytes` to `h` under `limit`; false if the replica went over it (it is being
/// closed).
fn post(h: &ClientHandle, limit: Limit, bytes: &[u8]) -> bool {
    let unsent = h.output_buf_bytes.load(Ordering::Relaxed);
    let posted = h
        .mail
        .post(h.id, limit, unsent, larder_engine::now_ms(), |out| {
            out.extend_from_slice(bytes)
        });
    posted_or_closed(h, posted)
}

/// [`post`] for chunks, moved into the outbox.
fn post_chunks(h: &ClientHandle, limit: Limit, chunks: Vec<Vec<u8>>) -> bool {
    let unsent = h.output_buf_bytes.load(Ordering::Relaxed);
    let posted = h
        .mail
        .post_chunks(h.id, limit, unsent, larder_engine::now_ms(), chunks);
    posted_or_closed(h, posted)
}

fn posted_or_closed(h: &ClientHandle, posted: Result<(), Refused>) -> bool {
    match posted {
        Ok(()) => true,
        Err(Refused::Closed | Refused::OverBudget) => false,
        Err(Refused::OverLimit) => {
            larder_commands::mail::note_over_limit(&h.addr, h.id, "replica");
            kill_client(h);
            false
        }
    }
}

impl State {
    /// A replica's staged command bytes join the stream; `db` is the proxied stream's
    /// database after the command (None: unchanged).
    fn flush_staged(&mut self, db: Option<u32>) {
        let Some(p) = &mut self.proxy else { return };
        if let Some(db) = db {
            p.db = db;
        }
        let staged = std::mem::take(&mut p.staged);
        self.feed(&staged);
        if let Some(p) = &mut self.proxy {
            // Keep the allocation for the next command.
            p.staged = staged;
            p.staged.clear();
        }
    }

    /// The database a full resync's replica starts in (`repl-stream-db`).
    fn stream_db(&self) -> u32 {
        self.proxy.as_ref().map_or(self.encoder.db(), |p| p.db)
    }

    /// Add stream bytes: the offset, the backlog, every replica.
    fn feed(&mut self, bytes: &[u8]) {
        if bytes.is_empty() {
            return;
        }
        self.offset += bytes.len() as u64;
        if let Some(b) = &mut self.backlog {
            b.append(bytes);
        }
        self.send(bytes, false);
        if self.replicas.is_empty() && self.alone_since_ms == 0 {
            self.alone_since_ms = larder_engine::now_ms();
        }
    }

    /// Add a frame of versions and flags after the stream so far (`meta.rs`): the side log
    /// and every larder replica, not the offset.
    fn feed_meta(&mut self, frame: &[u8]) {
        if frame.is_empty() {
            return;
        }
        let (first, size) = self
            .backlog
            .as_ref()
            .map_or((self.offset + 1, 0), |b| (b.first_byte_offset(), b.size()));
        self.meta.record(self.offset, frame, first, size);
        self.send(frame, true);
    }

    /// Add `bytes` to every replica's pending bytes (`only_meta`: every larder replica's).
    fn send(&mut self, bytes: &[u8], only_meta: bool) {
        let limit = self.limit;
        let mut online = false;
        self.replicas.retain_mut(|r| {
            if only_meta && !r.meta {
                return true;
            }
            r.pending.extend(bytes);
            online |= r.phase == Phase::Online;
            let over = limit.hard_bytes > 0 && r.pending.len() as u64 >= limit.hard_bytes;
            if over {
                larder_commands::mail::note_over_limit(&r.handle.addr, r.handle.id, "replica");
                kill_client(&r.handle);
            }
            !over
        });
        self.unposted |= online;
    }

    /// Send the frame of the versions gathered since the last one, if any.
    fn flush_frame(&mut self) {
        if self.frame.is_empty() {
            return;
        }
        let mut bytes = std::mem::take(&mut self.frame_bytes);
        bytes.clear();
        self.frame.finish_into(&mut bytes);
        self.feed_meta(&bytes);
        self.frame_bytes = bytes;
    }

    /// Send the gathered frame, then post every online replica's pending bytes to its
    /// outbox.
    fn flush_unposted(&mut self) {
        self.flush_frame();
        if !std::mem::take(&mut self.unposted) {
            return;
        }
        let limit = self.limit;
        self.replicas.retain_mut(|r| {
            if r.phase != Phase::Online || r.pending.is_empty() {
                return true;
            }
            r.pending.post_to(&r.handle, limit)
        });
    }
}

/// The feed consumer. It holds the master strongly: a weak reference would cost every
/// commit an upgrade and a release (two locked instructions). The master holds its server
/// weakly, so this makes no cycle; the subscription ends when the backlog goes.
struct Feeder(Arc<Master>);

impl Feeder {
    /// The consumer for `master`'s stream.
    fn of(master: &Master) -> Option<Arc<Feeder>> {
        master.me.upgrade().map(|m| Arc::new(Feeder(m)))
    }
}

impl Consumer for Feeder {
    fn committed(&self, _seq: u64, changes: &[Change]) {
        let m = &self.0;
        let mut st = m.state.lock();
        if let Some(p) = &st.proxy {
            // A commit of another thread (an eviction) while a transaction gathers leaves
            // it gathering; the link's own commit inside a transaction is its EXEC.
            if !p.in_multi || larder_engine::applies_master_stream() {
                st.flush_staged(None);
            }
            m.fed(&mut st);
            return;
        }
        // Encoded into buffers kept across commits: no allocation per write. The versions
        // wait in the open frame for the end of the turn.
        let (mut bytes, mut frame) = (
            std::mem::take(&mut st.encoded),
            std::mem::take(&mut st.frame),
        );
        bytes.clear();
        let recording = st.meta.recording();
        st.encoder
            .group(changes, &mut bytes, recording.then_some(&mut frame));
        st.feed(&bytes);
        (st.encoded, st.frame) = (bytes, frame);
        m.fed(&mut st);
    }
}

impl Master {
    fn server(&self) -> Option<Arc<Server>> {
        self.server.upgrade()
    }

    /// After `feed`: a worker posts the bytes at the end of its turn; any other thread
    /// (the cron, a replica's link, expiry) posts them now.
    fn fed(&self, st: &mut State) {
        if !st.unposted && st.frame.is_empty() {
            return;
        }
        if crate::net::on_worker_thread() {
            self.dirty.set();
        } else {
            st.flush_unposted();
        }
    }

    /// Create the backlog (and subscribe the stream) if there is none: a new history, so a
    /// new replication id, as Redis's first SYNC does.
    fn ensure_backlog(&self, server: &Server, st: &mut State) {
        if st.backlog.is_some() {
            return;
        }
        st.replid = random_hex(40);
        st.replid2 = "0".repeat(40);
        st.second_offset = -1;
        let size = server.config.num(Param::ReplBacklogSize).max(1) as usize;
        st.backlog = Some(Backlog::new(size, st.offset + 1));
        st.meta.reset();
        st.frame.clear();
        st.encoder.reselect();
        if let Some(feeder) = Feeder::of(self) {
            st.feed_id = Some(server.keyspace.feed().subscribe(Interest::COMMANDS, feeder));
        }
    }

    /// Once a second: PINGs, timeouts, the backlog's TTL, settings.
    fn cron(&self, tick: u64) {
        let Some(server) = self.server() else { return };
        let now = larder_engine::now_ms();
        let period = server.config.num(Param::ReplPingReplicaPeriod).max(1) as u64;
        let timeout_ms = server.config.num(Param::ReplTimeout).max(1) as u64 * 1000;
        let ttl_ms = server.config.num(Param::ReplBacklogTtl).max(0) as u64 * 1000;
        let mut st = self.state.lock();
        st.limit = replica_limit(&server);
        let size = server.config.num(Param::ReplBacklogSize).max(1) as usize;
        if let Some(b) = &mut st.backlog {
            if b.size() != size {
                b.resize(size);
            }
        }
        st.replicas.retain(|r| {
            let silent = r.phase != Phase::Transfer && now.saturating_sub(r.ack_ms) > timeout_ms;
            if silent {
                tracing::warn!(replica = %r.handle.addr, "disconnecting timedout replica");
                kill_client(&r.handle);
            }
            !silent
        });
        guard::refresh(&server, &st.replicas);
        // A replica passes its master's PINGs on and sends none of its own; it never frees
        // its backlog (its replicas and a promotion continue from it).
        if st.proxy.is_none() && !st.replicas.is_empty() && tick % period == 0 {
            st.feed(PING);
        }
        st.flush_unposted();
        if st.proxy.is_none()
            && st.replicas.is_empty()
            && st.backlog.is_some()
            && ttl_ms > 0
            && st.alone_since_ms != 0
            && now.saturating_sub(st.alone_since_ms) > ttl_ms
        {
            st.backlog = None;
            st.meta.reset();
            st.frame.clear();
            if let Some(id) = st.feed_id.take() {
                server.keyspace.feed().unsubscribe(id);
            }
            tracing::info!("replication backlog freed after repl-backlog-ttl without replicas");
        }
    }

    /// The replica `client` joins with nothing sent yet (called at a full resync's point,
    /// or for a partial one with the lock held). Returns the offset it starts after.
    ///
    /// A client that already closed does not join: `Server::client_closed` tells this
    /// runtime (under this lock) before it unregisters the client, so either the client is
    /// still registered here and its close removes it later, or it is gone already.
    fn join(&self, st: &mut State, client: &Arc<ClientHandle>, phase: Phase) -> u64 {
        let registered = self
            .server()
            .is_some_and(|s| s.clients.get(client.id).is_some());
        if !registered {
            return st.offset;
        }
        let (port, ip, meta) = self
            .handshakes
            .lock()
            .get(&client.id)
            .map_or((0, None, false), |h| (h.port, h.ip.clone(), h.meta));
        // The versions gathered so far go out first, to the replicas already there.
        st.flush_frame();
        if meta {
            // It holds every version up to here (its file's, or a covered partial resync's).
            st.meta.start(st.offset);
        }
        st.replicas.push(Replica {
            handle: Arc::clone(client),
            port,
            ip,
            phase,
            pending: Pending::default(),
            meta,
            ack_offset: 0,
            ack_ms: larder_engine::now_ms(),
        });
        st.alone_since_ms = 0;
        st.offset
    }

    /// A replica's file is sent: with `await_ack` it goes online at its first ACK, otherwise
    /// now, after what gathered meanwhile.
    fn transfer_done(&self, id: u64, await_ack: bool) {
        let mut st = self.state.lock();
        let Some(r) = st.replicas.iter_mut().find(|r| r.handle.id == id) else {
            return;
        };
        r.ack_ms = larder_engine::now_ms();
        if await_ack {
            r.phase = Phase::AwaitAck;
        } else {
            self.put_online(&mut st, id);
        }
    }

    /// Send replica `id` the stream that gathered for it and put it online.
    fn put_online(&self, st: &mut State, id: u64) {
        let limit = st.limit;
        let Some(i) = st.replicas.iter().position(|r| r.handle.id == id) else {
            return;
        };
        let r = &mut st.replicas[i];
        let pending = r.pending.take();
        r.phase = Phase::Online;
        if !post_chunks(&r.handle, limit, pending) {
            st.replicas.remove(i);
        }
        if let Some(server) = self.server() {
            guard::refresh(&server, &st.replicas);
        }
    }

    /// A transfer failed: drop the replica and close its connection.
    fn transfer_failed(&self, client: &ClientHandle, why: &str) {
        tracing::warn!(replica = %client.addr, error = why, "full resync failed");
        self.state
            .lock()
            .replicas
            .retain(|r| r.handle.id != client.id);
        kill_client(client);
    }

    fn partial(&self, client: &Arc<ClientHandle>, replid: &[u8], offset: i64) -> bool {
        let (psync2, meta) = self
            .handshakes
            .lock()
            .get(&client.id)
            .map_or((false, false), |h| (h.psync2, h.meta));
        let mut st = self.state.lock();
        // The versions gathered this turn join the side log, so the interleave has them.
        st.flush_frame();
        let known = replid == st.replid.as_bytes()
            || (replid == st.replid2.as_bytes() && offset <= st.second_offset);
        let Some(from) = u64::try_from(offset).ok().filter(|_| known) else {
            return false;
        };
        let Some(mut data) = st.backlog.as_ref().and_then(|b| b.read_from(from)) else {
            return false;
        };
        if meta {
            if !st.meta.covers(from) {
                tracing::info!(
                    replica = %client.addr,
                    offset,
                    "partial resync refused: the versions sent beside the stream are not \
                     kept from that offset; a full resync carries them"
                );
                return false;
            }
            data = st.meta.interleave(from, &data);
        }
        let mut reply = if psync2 {
            format!("+CONTINUE {}\r\n", st.replid).into_bytes()
        } else {
            b"+CONTINUE\r\n".to_vec()
        };
        reply.extend_from_slice(&data);
        let limit = st.limit;
        if post(client, limit, &reply) {
            self.join(&mut st, client, Phase::Online);
            if let Some(server) = self.server() {
                guard::refresh(&server, &st.replicas);
            }
        }
        true
    }
}

/// Close every attached replica (they reconnect and resync, partially when they can).
fn disconnect_replicas(st: &mut State) {
    for r in st.replicas.drain(..) {
        kill_client(&r.handle);
    }
    st.unposted = false;
    st.alone_since_ms = larder_engine::now_ms();
}
