//! The replica role: a link to a master (REPLICAOF host port) on a thread of its own, and
//! the [`Master`] state changes it makes (see ARCHITECTURE.md, "Replication").
//!
//! The link connects, shakes hands (`PING`, `AUTH`, `REPLCONF listening-port` and `capa eof
//! capa psync2 capa larder-meta capa larder-meta2`), asks `PSYNC <replid> <offset+1>` with the history it has
//! (`? -1` after a failed load, or once a master that refused PSYNC was sent `SYNC`), loads
//! the file of a full resync into the emptied keyspace as it reads it, and applies the
//! stream through `exec::execute` on a connection flagged as the loader (`session.rs`). Each command's bytes join this server's own stream as the command
//! commits ([`super::Proxy`]), so its replicas get its master's stream with the same
//! replication id and offsets. A larder master's frames of versions and flags (`meta.rs`)
//! are applied and passed on beside the stream. When the link drops it reconnects about
//! once a second.

mod prefetch;
mod session;
mod wire;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use larder_commands::replication::LinkStatus;
use larder_commands::Server;
use parking_lot::Mutex;

use super::backlog::Backlog;
use super::{disconnect_replicas, random_hex, Feeder, Master, Proxy, State};

/// Where the link stands (ROLE's words).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    Connect,
    Connecting,
    Handshake,
    Sync,
    Connected,
}

impl Phase {
    fn word(self) -> &'static str {
        match self {
            Phase::Connect => "connect",
            Phase::Connecting => "connecting",
            Phase::Handshake => "handshake",
            Phase::Sync => "sync",
            Phase::Connected => "connected",
        }
    }
}

#[derive(Debug)]
struct Shown {
    phase: Phase,
    /// Unix ms of the master's last bytes (0: no link).
    last_io_ms: u64,
    /// Unix ms when the link went down (0: it was never up).
    down_since_ms: u64,
    /// A full resync's file size (-1 before its header, 0 when EOF-marked), bytes read.
    sync_total: i64,
    sync_read: u64,
}

/// A link to a master; dropped by [`Link::stop`] (REPLICAOF elsewhere or NO ONE).
pub struct Link {
    host: String,
    port: u16,
    stopped: AtomicBool,
    /// The CLIENT LIST id of the master's connection (0 between connections).
    client_id: AtomicU64,
    /// Bytes of the stream read (INFO's `slave_read_repl_offset`).
    read_offset: AtomicU64,
    /// Whether the replication id and offset describe data this server holds: false from
    /// a `+FULLRESYNC` until its file is loaded, and for the rest of the link after a `SYNC` (a file with
    /// no id or offset), so a retry asks `PSYNC ? -1`.
    history_valid: AtomicBool,
    /// Held by the link's thread while it changes this server's data or replication state
    /// (the commands of the stream read so far, the end of a resync), which it does only
    /// while not stopped. Every later link takes it once before it asks for a resync, so
    /// the stopped one cannot apply a command after that: a command read just before
    /// REPLICAOF elsewhere and applied after the new master was asked for the bytes from
    /// the offset before it was applied, and counted, twice. (REPLICAOF itself does not wait
    /// for it: it may run inside EXEC holding shards that the command being applied waits
    /// for.)
    turn: Mutex<()>,
    /// Its thread has returned.
    ended: AtomicBool,
    shown: Mutex<Shown>,
}

/// Start following `host` `port`, once none of the `stopped` links applies anything more.
pub fn start(
    master: Arc<Master>,
    server: Arc<Server>,
    host: &str,
    port: u16,
    stopped: Vec<Arc<Link>>,
) -> std::io::Result<Arc<Link>> {
    let link = Arc::new(Link {
        host: host.to_string(),
        port,
        stopped: AtomicBool::new(false),
        client_id: AtomicU64::new(0),
        read_offset: AtomicU64::new(master.state.lock().offset),
        history_valid: AtomicBool::new(true),
        turn: Mutex::new(()),
        ended: AtomicBool::new(false),
        shown: Mutex::new(Shown {
            phase: Phase::Connect,
            last_io_ms: 0,
            down_since_ms: 0,
            sync_total: -1,
            sync_read: 0,
        }),
    });
    let l = Arc::clone(&link);
    std::thread::Builder::new()
        .name("repl-link".into())
        .spawn(move || {
            for old in stopped {
                drop(old.turn.lock());
            }
            session::run(&master, &server, &l);
            l.ended.store(true, Ordering::Release);
        })?;
    Ok(link)
}

impl Link {
    pub fn host(&self) -> &str {
        &self.host
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// Stop the link: it starts applying nothing more (see `turn`).
    pub fn stop(&self) {
        self.stopped.store(true, Ordering::Release);
    }

    /// The link's turn to change state, unless it was stopped.
    fn turn(&self) -> Result<parking_lot::MutexGuard<'_, ()>, String> {
        let turn = self.turn.lock();
        if self.stopped() {
            return Err("the link was stopped".into());
        }
        Ok(turn)
    }

    fn stopped(&self) -> bool {
        self.stopped.load(Ordering::Acquire)
    }

    /// Whether its thread has returned.
    pub fn ended(&self) -> bool {
        self.ended.load(Ordering::Acquire)
    }

    pub fn client_id(&self) -> u64 {
        self.client_id.load(Ordering::Relaxed)
    }

    pub fn connected(&self) -> bool {
        self.shown.lock().phase == Phase::Connected
    }

    fn set_phase(&self, server: &Server, phase: Phase) {
        let mut s = self.shown.lock();
        let now = larder_engine::now_ms();
        if phase == Phase::Connected {
            s.down_since_ms = 0;
        } else if s.phase == Phase::Connected {
            s.down_since_ms = now;
        }
        if phase == Phase::Connect {
            s.last_io_ms = 0;
        }
        s.phase = phase;
        server
            .gates
            .master_link_down
            .store(phase != Phase::Connected, Ordering::Relaxed);
    }

    fn io(&self) {
        self.shown.lock().last_io_ms = larder_engine::now_ms();
    }

    fn sync_progress(&self, total: i64, read: u64) {
        let mut s = self.shown.lock();
        s.sync_total = total;
        s.sync_read = read;
        s.last_io_ms = larder_engine::now_ms();
    }

    /// `read` bytes of a full resync's file read so far.
    fn sync_read(&self, read: u64) {
        let mut s = self.shown.lock();
        s.sync_read = read;
        s.last_io_ms = larder_engine::now_ms();
    }

    /// What INFO and ROLE show, with the replication offset `offset`.
    pub fn status(&self, offset: u64) -> LinkStatus {
        let s = self.shown.lock();
        let now = larder_engine::now_ms();
        let ago = |ms: u64| match ms {
            0 => -1,
            ms => (now.saturating_sub(ms) / 1000) as i64,
        };
        LinkStatus {
            host: self.host.clone(),
            port: self.port,
            state: s.phase.word(),
            last_io_s: ago(s.last_io_ms),
            down_since_s: ago(s.down_since_ms),
            read_offset: self.read_offset.load(Ordering::Relaxed),
            offset: offset as i64,
            sync_total_bytes: s.sync_total,
            sync_read_bytes: s.sync_read,
            sync_last_io_s: ago(s.last_io_ms),
        }
    }
}

impl Master {
    /// REPLICAOF NO ONE: the history so far becomes `replid2` (valid up to the next byte),
    /// under a new replication id, so former siblings continue with a partial resync; its
    /// replicas reconnect to learn the new id.
    pub(super) fn promote(&self) {
        let mut st = self.state.lock();
        if st.proxy.take().is_none() {
            return;
        }
        st.replid2 = std::mem::replace(&mut st.replid, random_hex(40));
        st.second_offset = st.offset as i64 + 1;
        st.encoder.reselect();
        if let Some(server) = self.server() {
            self.keep_backlog(&server, &mut st);
        }
        disconnect_replicas(&mut st);
    }

    /// Make sure a backlog exists from the current offset on and the feed calls
    /// [`Feeder`] (without touching the replication id, unlike `ensure_backlog`).
    fn keep_backlog(&self, server: &Server, st: &mut State) {
        if st.backlog.is_none() {
            let size = server
                .config
                .num(larder_commands::config::Param::ReplBacklogSize);
            st.backlog = Some(Backlog::new(size.max(1) as usize, st.offset + 1));
        }
        if st.feed_id.is_none() {
            if let Some(feeder) = Feeder::of(self) {
                st.feed_id = Some(
                    server
                        .keyspace
                        .feed()
                        .subscribe(larder_engine::Interest::COMMANDS, feeder),
                );
            }
        }
    }

    /// The PSYNC arguments: this server's history (a former master's own, or what it
    /// replicated), or `? -1` when it holds none.
    fn psync_args(&self, link: &Link) -> (String, String) {
        if !link.history_valid.load(Ordering::Acquire) {
            return ("?".into(), "-1".into());
        }
        let st = self.state.lock();
        (st.replid.clone(), (st.offset + 1).to_string())
    }

    /// A full resync's file is loaded: the master's history from `offset` on is this
    /// server's, with a fresh backlog; its own replicas resync.
    ///
    /// Not once `link` is stopped: checked under the state's lock, which REPLICAOF NO ONE
    /// takes after it stops the link, so a promotion is never undone by a late resync.
    fn full_synced(
        &self,
        server: &Server,
        link: &Link,
        replid: &str,
        offset: u64,
        db: u32,
    ) -> Result<(), String> {
        let mut st = self.state.lock();
        if link.stopped() {
            return Err("the link was stopped".into());
        }
        st.replid = replid.to_string();
        st.replid2 = "0".repeat(40);
        st.second_offset = -1;
        st.offset = offset;
        st.backlog = None;
        self.keep_backlog(server, &mut st);
        // Its file gave it every version up to `offset`; its replicas may continue from there.
        st.meta.reset();
        st.meta.start(offset);
        st.proxy = Some(Proxy {
            staged: Vec::new(),
            in_multi: false,
            db,
        });
        disconnect_replicas(&mut st);
        Ok(())
    }

    /// `+CONTINUE [newid]`: the master's history goes on; a new id (the master was
    /// promoted) shifts the old one to `replid2`, as the master did. Not once `link` is
    /// stopped (as `full_synced`).
    fn continued(&self, server: &Server, link: &Link, newid: Option<&str>) -> Result<(), String> {
        let mut st = self.state.lock();
        if link.stopped() {
            return Err("the link was stopped".into());
        }
        self.keep_backlog(server, &mut st);
        if let Some(p) = &mut st.proxy {
            // A transaction the last link left open is sent again from its MULTI.
            p.staged.clear();
            p.in_multi = false;
        }
        let offset = st.offset;
        st.meta.start(offset);
        if let Some(id) = newid.filter(|id| *id != st.replid) {
            st.replid2 = std::mem::replace(&mut st.replid, id.to_string());
            st.second_offset = st.offset as i64 + 1;
            disconnect_replicas(&mut st);
        }
        Ok(())
    }

    /// The replication offset now.
    fn offset_now(&self) -> u64 {
        self.state.lock().offset
    }

    /// A frame of versions and flags from the master, applied: pass it on.
    fn proxy_meta(&self, frame: &[u8]) {
        let mut st = self.state.lock();
        st.feed_meta(frame);
        self.fed(&mut st);
    }

    /// Stage a command's bytes before it runs (see [`Proxy`]).
    fn stage(&self, bytes: &[u8]) {
        if let Some(p) = &mut self.state.lock().proxy {
            p.staged.extend_from_slice(bytes);
        }
    }

    /// The staged command ran; the stream's database is now `db`, and the master's
    /// connection is inside MULTI if `in_multi` (the bytes wait for EXEC). Returns the
    /// offset applied so far (a transaction counts once whole).
    fn applied(&self, db: u32, in_multi: bool) -> u64 {
        let mut st = self.state.lock();
        if let Some(p) = &mut st.proxy {
            p.in_multi = in_multi;
        }
        if !in_multi {
            st.flush_staged(Some(db));
            self.fed(&mut st);
        }
        st.offset
    }
}
