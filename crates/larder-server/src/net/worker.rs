//! A worker thread: its poll, its connections, its mailbox, and the loop that serves them.
//!
//! The worker's state sits in a `RefCell` and each connection in an `Rc<RefCell<_>>`, borrowed
//! only while one step runs, never across a call that may run a command: a busy script's
//! hook serves the worker's other connections from inside that call (`pump.rs`), and the
//! connection running the script, borrowed by the loop, is the one the pump cannot borrow.

use std::cell::RefCell;
use std::collections::{BTreeSet, VecDeque};
use std::io;
use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::Receiver;
use larder_commands::config::Param;
use larder_commands::state::{ClientHandle, ClientNames};
use larder_commands::{ConnState, Server};
use mio::net::TcpStream;
use mio::{Events, Interest, Poll, Token};
use parking_lot::Mutex;

use super::{Client, Door, DoorHandler, Letter, WorkerLink, SHUTDOWN_DRAIN, WAKER, WORKER_ID};
use crate::conn::{Close, Conn, Handler};
use crate::http::{HttpHandler, HttpShared};
use crate::memcache::{McHandler, McShared};
use crate::resp::RespHandler;
use crate::tls::Tls;

/// What every worker is given beside its own poll and mailbox.
pub(super) struct Setup {
    /// The memcached door's shared state, when the door is open.
    pub(super) mc: Option<Arc<McShared>>,
    pub(super) http: Arc<HttpShared>,
    /// See [`Worker::share_cpu`].
    pub(super) share_cpu: bool,
}

/// A connection as the worker holds it (see the module's note on borrowing).
pub(super) type Shared = Rc<RefCell<Client>>;

pub(super) struct Worker {
    id: usize,
    pub(super) server: Arc<Server>,
    pub(super) link: Arc<WorkerLink>,
    pub(super) rx: Receiver<Letter>,
    stopping: Arc<AtomicBool>,
    mc: Option<Arc<McShared>>,
    http: Arc<HttpShared>,
    /// More workers than the CPUs this process may run on: after a turn that served
    /// connections the worker yields its CPU, so that workers sharing one take turns at the
    /// granularity of a loop turn rather than of the kernel's time slice (a request for a
    /// worker that lost the CPU otherwise waits for the other's whole slice).
    share_cpu: bool,
    pub(super) st: RefCell<State>,
}

/// The worker's held connections (their next request held by CLIENT PAUSE, or a blocked
/// command), by when to run them again (`u64::MAX`: only when woken). Entries due at the
/// same time keep the order they were filed in, as Redis runs postponed clients in the
/// order they were held. Each connection records where it is filed (`Conn::paused_filed`):
/// one that holds nothing costs a comparison, a held one a look-up in the set, so no turn
/// scans every held connection (a job queue may keep thousands of workers blocked).
#[derive(Default)]
pub(super) struct Held {
    /// (when, filing order, token).
    by_time: BTreeSet<(u64, u64, usize)>,
    seq: u64,
}

impl Held {
    /// When the earliest held connection is due (Unix ms).
    fn earliest(&self) -> Option<u64> {
        self.by_time.first().map(|&(at, _, _)| at)
    }

    /// Files connection `t` under `until` (`None`: takes it out), moving it from where it
    /// was filed (`filed`).
    fn file(&mut self, filed: &mut Option<(u64, u64)>, t: usize, until: Option<u64>) {
        match (*filed, until) {
            (None, None) => return,
            // Filed where it should be (an entry `take_due` took out is filed again).
            (Some((at, n)), Some(u)) if at == u && self.by_time.contains(&(at, n, t)) => return,
            _ => {}
        }
        if let Some((at, n)) = filed.take() {
            self.by_time.remove(&(at, n, t));
        }
        if let Some(at) = until {
            self.seq += 1;
            self.by_time.insert((at, self.seq, t));
            *filed = Some((at, self.seq));
        }
    }

    /// Moves the connections due at `now_ms` (every one: `None`) to `retry`.
    fn take_due(&mut self, now_ms: Option<u64>, retry: &mut Vec<usize>) {
        while let Some(&(at, _, t)) = self.by_time.first() {
            if now_ms.is_some_and(|now| at > now) {
                break;
            }
            self.by_time.pop_first();
            retry.push(t);
        }
    }
}

pub(super) struct State {
    pub(super) poll: Poll,
    pub(super) conns: slab::Slab<Shared>,
    /// Connections to run again without waiting for an event.
    pub(super) retry: Vec<usize>,
    /// Held connections: those due are run at the poll's timeout, every one when a
    /// `Letter::Resume` says a pause was lifted.
    pub(super) paused: Held,
    /// Connections whose replies wait for the log to be durable (`appendfsync always`).
    pub(super) held_for_log: Vec<usize>,
    /// Connections a letter served this turn (a blocked client woken, a subscriber's
    /// messages): settled before the others, so a woken client's reply leaves before the
    /// reply of the client whose write woke it, whatever their tokens' order.
    pub(super) woken: Vec<usize>,
    /// The connections the loop is running this turn, each with whether the peer closed.
    pub(super) batch: VecDeque<(usize, bool)>,
    /// Readiness the pump took from the poll for connections it does not serve (the one
    /// running the script, other doors, held requests), with whether the peer closed: the
    /// loop runs them as soon as the script ends, since no new event will announce it.
    pub(super) deferred: Vec<(usize, bool)>,
    /// Letters the pump read but leaves to the loop (`Unblock`, `Resume`: Redis too serves
    /// blocked and paused clients only once the script ends).
    pub(super) letters: Vec<Letter>,
    /// TLS connections that were in their handshake when last counted (at accept and by
    /// housekeeping): while there are any, the loop wakes to close those that take too long.
    handshakes: usize,
}

impl Worker {
    pub(super) fn new(
        id: usize,
        server: Arc<Server>,
        poll: Poll,
        link: Arc<WorkerLink>,
        rx: Receiver<Letter>,
        stopping: Arc<AtomicBool>,
        setup: Setup,
    ) -> Worker {
        let Setup {
            mc,
            http,
            share_cpu,
        } = setup;
        Worker {
            id,
            server,
            link,
            rx,
            stopping,
            mc,
            http,
            share_cpu,
            st: RefCell::new(State {
                poll,
                conns: slab::Slab::new(),
                retry: Vec::new(),
                paused: Held::default(),
                held_for_log: Vec::new(),
                woken: Vec::new(),
                batch: VecDeque::new(),
                deferred: Vec::new(),
                letters: Vec::new(),
                handshakes: 0,
            }),
        }
    }

    /// The connection at token `t`, if any.
    pub(super) fn conn(&self, t: usize) -> Option<Shared> {
        self.st.borrow().conns.get(t).cloned()
    }

    /// Serve until shutdown, with this worker's pump installed for busy scripts.
    pub(super) fn run(self: Rc<Self>) -> io::Result<()> {
        WORKER_ID.with(|w| w.set(self.link.id));
        let mut pump = super::pump::Pump::new(Rc::clone(&self));
        larder_commands::busy::set_pump(Some(Box::new(move |server: &Server| pump.turn(server))));
        let result = self.serve();
        larder_commands::busy::set_pump(None);
        result
    }

    fn serve(&self) -> io::Result<()> {
        let mut events = Events::with_capacity(1024);
        let mut scratch = Vec::new();
        let mut last_housekeeping = Instant::now();
        let mut touched: Vec<usize> = Vec::new();
        loop {
            let timeout = self.poll_timeout();
            match self.st.borrow_mut().poll.poll(&mut events, timeout) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
            if self.stopping.load(Ordering::Acquire) {
                self.drain_and_close();
                return Ok(());
            }
            let now_ms = larder_engine::now_ms();
            touched.clear();
            let mut woken = false;
            {
                // This turn's readiness, then what the pump left while a script ran.
                let st = &mut *self.st.borrow_mut();
                for ev in events.iter() {
                    if ev.token() == WAKER {
                        woken = true;
                    } else {
                        st.batch.push_back((ev.token().0, ev.is_read_closed()));
                    }
                }
                st.batch.extend(std::mem::take(&mut st.deferred));
            }
            self.run_batch(&mut scratch, now_ms, &mut touched);
            woken |= !self.st.borrow().letters.is_empty();
            let mut resume = false;
            if woken {
                resume = self.read_letters(now_ms, &mut touched, &mut scratch);
                self.check_killed(&mut touched);
            }
            {
                let st = &mut *self.st.borrow_mut();
                st.paused
                    .take_due(if resume { None } else { Some(now_ms) }, &mut st.retry);
                // Connections that stopped before draining their socket, or are paused.
                for t in std::mem::take(&mut st.retry) {
                    if !touched.contains(&t) {
                        st.batch.push_back((t, false));
                    }
                }
            }
            self.run_batch(&mut scratch, now_ms, &mut touched);
            // The turn's replication stream, in one post per replica, then the letters
            // this worker posted to itself while it ran requests (`POSTED_HERE`): a
            // replica served here gets its wake-up so, and a letter's commands (a blocked
            // client served) may feed the stream again.
            loop {
                if let Some(r) = self.server.replication.get() {
                    r.flush_stream();
                }
                if !super::take_posted_here() {
                    break;
                }
                if self.read_letters(now_ms, &mut touched, &mut scratch) {
                    let st = &mut *self.st.borrow_mut();
                    st.paused.take_due(None, &mut st.retry);
                }
            }
            // The turn's log records go to the file before the turn's replies go out
            // (Redis's `beforeSleep`): one write for every group this worker committed.
            if self.server.gates.log_dirty.load(Ordering::Relaxed) {
                if let Some(p) = self.server.persistence.get() {
                    p.write_log();
                }
            }
            let mut woken = std::mem::take(&mut self.st.borrow_mut().woken);
            for &t in &woken {
                self.settle(t);
            }
            woken.sort_unstable();
            touched.sort_unstable();
            touched.dedup();
            for &t in &touched {
                if woken.binary_search(&t).is_err() {
                    self.settle(t);
                }
            }
            woken.clear();
            self.st.borrow_mut().woken = woken;
            if last_housekeeping.elapsed() >= Duration::from_millis(100) {
                last_housekeeping = Instant::now();
                self.housekeeping(now_ms);
            }
            if self.share_cpu && !touched.is_empty() {
                std::thread::yield_now();
            }
        }
    }

    /// Run the connections in `batch` (readiness, or input to continue) one by one. A
    /// script that gets busy among them has the pump serve the rest (`pump.rs`), which takes
    /// them off the batch: their readiness events will not come again.
    fn run_batch(&self, scratch: &mut Vec<u8>, now_ms: u64, touched: &mut Vec<usize>) {
        loop {
            let next = self.st.borrow_mut().batch.pop_front();
            let Some((t, read_closed)) = next else {
                return;
            };
            if let Some(c) = self.conn(t) {
                let mut c = c.borrow_mut();
                c.read_closed |= read_closed;
                c.on_ready(&self.server, scratch, now_ms);
                touched.push(t);
            }
        }
    }

    /// How long to block: forever unless a retry, pause or idle-timeout check needs a wake-up.
    fn poll_timeout(&self) -> Option<Duration> {
        let st = self.st.borrow();
        if !st.deferred.is_empty() || !st.letters.is_empty() {
            return Some(Duration::ZERO);
        }
        let retry_now = st.retry.iter().any(|&t| {
            st.conns.get(t).is_some_and(|c| {
                let c = c.borrow();
                c.more && !c.want_write
            })
        });
        if retry_now {
            return Some(Duration::ZERO);
        }
        if !st.retry.is_empty() {
            return Some(Duration::from_millis(1));
        }
        // Held requests wake at the pause's end, or earlier by a `Letter::Resume`.
        let pause = st
            .paused
            .earliest()
            .map(|at| Duration::from_millis(at.saturating_sub(larder_engine::now_ms()).max(1)));
        let idle = ((self.server.config.num(Param::Timeout) > 0 && !st.conns.is_empty())
            || st.handshakes > 0)
            .then_some(Duration::from_millis(500));
        match (pause, idle) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// The letters the pump left, then everything in the mailbox: new connections, and
    /// clients whose outbox has bytes. True if a letter asked to retry the requests a pause
    /// held.
    fn read_letters(&self, now_ms: u64, touched: &mut Vec<usize>, scratch: &mut Vec<u8>) -> bool {
        let mut resume = false;
        // Cleared before reading, so a letter posted from here on wakes the poll again.
        self.link.woken.store(false, Ordering::Release);
        let mut left = std::mem::take(&mut self.st.borrow_mut().letters).into_iter();
        while let Some(letter) = left.next().or_else(|| self.rx.try_recv().ok()) {
            match letter {
                Letter::Connect(stream, addr, door, tls) => {
                    self.accept(stream, addr, door, tls.as_deref(), now_ms)
                }
                Letter::Resume => resume = true,
                Letter::Wake { token, id } => {
                    if let Some(c) = self.conn(token) {
                        let mut c = c.borrow_mut();
                        if c.handler.handle().id == id {
                            c.deliver_mail(&self.server);
                            touched.push(token);
                            self.st.borrow_mut().woken.push(token);
                        }
                    }
                }
                Letter::Unblock { token, id } => {
                    if let Some(c) = self.conn(token) {
                        let mut c = c.borrow_mut();
                        if c.handler.handle().id == id && c.blocked {
                            c.on_unblock(&self.server, scratch, now_ms);
                            touched.push(token);
                            self.st.borrow_mut().woken.push(token);
                        }
                    }
                }
                Letter::Durable => self.release_held(touched),
            }
        }
        resume
    }

    /// Send the replies that waited for the log and may go now (settle holds the rest again);
    /// one a running script holds waits for the loop.
    pub(super) fn release_held(&self, touched: &mut Vec<usize>) {
        let st = &mut *self.st.borrow_mut();
        st.held_for_log.retain(|&t| {
            let Some(c) = st.conns.get(t) else {
                return false;
            };
            let Ok(mut c) = c.try_borrow_mut() else {
                return true;
            };
            c.flush(&self.server);
            touched.push(t);
            false
        });
    }

    pub(super) fn accept(
        &self,
        mut stream: TcpStream,
        addr: SocketAddr,
        door: Door,
        tls: Option<&Tls>,
        now_ms: u64,
    ) {
        let tls = match tls.map(Tls::session).transpose() {
            Ok(session) => session.map(Box::new),
            Err(e) => {
                tracing::warn!(error = %e, "TLS session not started");
                self.server.connected_clients.fetch_sub(1, Ordering::AcqRel);
                return;
            }
        };
        let _ = stream.set_nodelay(true);
        let keepalive = self.server.config.num(Param::TcpKeepalive);
        if keepalive > 0 {
            let ka = socket2::TcpKeepalive::new().with_time(Duration::from_secs(keepalive as u64));
            let _ = socket2::SockRef::from(&stream).set_tcp_keepalive(&ka);
        }
        let st = &mut *self.st.borrow_mut();
        let entry = st.conns.vacant_entry();
        let token = Token(entry.key());
        if st
            .poll
            .registry()
            .register(&mut stream, token, Interest::READABLE)
            .is_err()
        {
            self.server.connected_clients.fetch_sub(1, Ordering::AcqRel);
            return;
        }
        let waker = Arc::clone(&self.link.waker);
        let mail = larder_commands::mail::Mail::new(
            Arc::clone(&self.link) as Arc<dyn larder_commands::mail::Mailbox>,
            token.0,
        );
        let laddr = stream
            .local_addr()
            .map(|a| a.to_string())
            .unwrap_or_default();
        let handle = Arc::new(ClientHandle {
            id: self.server.clients.next_id(),
            addr: addr.to_string(),
            laddr,
            fd: std::os::fd::AsRawFd::as_raw_fd(&stream) as i64,
            created_ms: now_ms,
            last_interaction_ms: AtomicU64::new(now_ms),
            db: AtomicUsize::new(0),
            resp: AtomicU8::new(2),
            last_command: AtomicUsize::new(usize::MAX),
            query_buf_bytes: AtomicUsize::new(0),
            output_buf_bytes: AtomicUsize::new(0),
            names: Mutex::new(ClientNames::default()),
            killed: AtomicBool::new(false),
            no_evict: AtomicBool::new(false),
            no_touch: AtomicBool::new(false),
            waker: Some(Arc::new(move || {
                let _ = waker.wake();
            })),
            mail,
            tracking: Default::default(),
            user: parking_lot::Mutex::new(std::sync::Arc::from("default")),
        });
        self.server.clients.register(Arc::clone(&handle));
        let handler = match (door, &self.mc) {
            (Door::Memcache, Some(mc)) => {
                DoorHandler::Memcache(McHandler::new(handle, self.id, Arc::clone(mc)))
            }
            (Door::Http, _) => DoorHandler::Http(HttpHandler::new(
                ConnState::new(&self.server, handle, self.id),
                Arc::clone(&self.http),
            )),
            _ => DoorHandler::Resp(RespHandler::new(ConnState::new(
                &self.server,
                handle,
                self.id,
            ))),
        };
        if tls.is_some() {
            st.handshakes += 1;
        }
        entry.insert(Rc::new(RefCell::new(Conn::new(
            stream, tls, self.id, handler,
        ))));
    }

    fn check_killed(&self, touched: &mut Vec<usize>) {
        for (t, c) in self.st.borrow().conns.iter() {
            let mut c = c.borrow_mut();
            if c.handler.handle().killed.load(Ordering::Acquire) && c.closing.is_none() {
                c.closing = Some(Close::Now);
                touched.push(t);
            }
        }
    }

    /// After handling a connection: drop it if done, else keep its interest right.
    pub(super) fn settle(&self, t: usize) {
        let st = &mut *self.st.borrow_mut();
        let Some(shared) = st.conns.get(t) else {
            return;
        };
        let Ok(mut c) = shared.try_borrow_mut() else {
            // Running a script (settle from the pump never gets here): the loop settles it.
            return;
        };
        if c.flush_deferred {
            c.flush(&self.server);
        }
        if c.durable_wait.is_some() {
            // Announce the wait, then look again: either the log's writer sees the flag and
            // posts `Durable`, or this flush sees the offset it published (both SeqCst).
            self.link.holds_for_log.store(true, Ordering::SeqCst);
            c.flush(&self.server);
            if c.durable_wait.is_some() && !st.held_for_log.contains(&t) {
                st.held_for_log.push(t);
            }
        }
        if c.should_drop() {
            drop(c);
            self.close(st, t);
            return;
        }
        let until = c.paused_until_ms;
        st.paused.file(&mut c.paused_filed, t, until);
        // (A connection woken twice in a turn is settled twice: filed once.)
        if until.is_none() && c.more && !st.retry.contains(&t) {
            st.retry.push(t);
        }
        let want_write = c.want_write;
        if want_write != c.write_registered {
            let interest = if want_write {
                Interest::READABLE | Interest::WRITABLE
            } else {
                Interest::READABLE
            };
            if st
                .poll
                .registry()
                .reregister(&mut c.stream, Token(t), interest)
                .is_ok()
            {
                c.write_registered = want_write;
            }
        }
    }

    fn close(&self, st: &mut State, t: usize) {
        if !st.conns.contains(t) {
            return;
        }
        let shared = st.conns.remove(t);
        let mut c = shared.borrow_mut();
        let filed = &mut c.paused_filed;
        st.paused.file(filed, t, None);
        let _ = st.poll.registry().deregister(&mut c.stream);
        let subs = match &c.handler {
            DoorHandler::Resp(h) => Some(&h.state.subs),
            DoorHandler::Http(h) => Some(&h.state.subs),
            DoorHandler::Memcache(_) => None,
        };
        self.server.client_closed(c.handler.handle().id, subs);
        self.server.connected_clients.fetch_sub(1, Ordering::AcqRel);
    }

    /// Idle timeouts, killed clients, and TLS handshakes that take too long.
    fn housekeeping(&self, now_ms: u64) {
        let timeout_s = self.server.config.num(Param::Timeout);
        let st = &mut *self.st.borrow_mut();
        let mut doomed = Vec::new();
        let mut handshakes = 0;
        for (t, c) in st.conns.iter() {
            let c = c.borrow();
            if c.handler.handle().killed.load(Ordering::Acquire) {
                doomed.push(t);
                continue;
            }
            if c.handshaking() {
                if c.handshake_expired(c.handler.handle().created_ms, now_ms) {
                    let failures = crate::tls::note_handshake_failure();
                    tracing::debug!(
                        client = %c.handler.handle().addr,
                        failures,
                        "closing TLS client whose handshake timed out"
                    );
                    doomed.push(t);
                    continue;
                }
                handshakes += 1;
            }
            // Monitors are replicas to Redis, which the idle timeout does not close.
            if timeout_s > 0
                && c.pending_output() == 0
                && c.paused_until_ms.is_none()
                && !self.server.monitors.contains(c.handler.handle().id)
            {
                let last = c
                    .handler
                    .handle()
                    .last_interaction_ms
                    .load(Ordering::Relaxed);
                if now_ms.saturating_sub(last) > timeout_s as u64 * 1000 {
                    tracing::debug!(client = %c.handler.handle().addr, "closing idle client");
                    doomed.push(t);
                }
            }
        }
        st.handshakes = handshakes;
        for t in doomed {
            self.close(st, t);
        }
    }

    /// Shutdown: write what is pending (bounded in time), then close everything.
    fn drain_and_close(&self) {
        let deadline = Instant::now() + SHUTDOWN_DRAIN;
        // Replies held for the log go once their records are written (and, under `always`,
        // fsynced).
        if let Some(p) = self.server.persistence.get() {
            p.write_log();
        }
        let st = &mut *self.st.borrow_mut();
        loop {
            let mut pending = false;
            for (_, c) in st.conns.iter() {
                let mut c = c.borrow_mut();
                if c.pending_output() > 0 {
                    c.flush(&self.server);
                    pending |= c.pending_output() > 0 && c.closing != Some(Close::Peer);
                }
            }
            if !pending || Instant::now() >= deadline {
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        let keys: Vec<usize> = st.conns.iter().map(|(t, _)| t).collect();
        for t in keys {
            self.close(st, t);
        }
    }
}
