//! Listeners and worker threads.
//!
//! Threading model: N worker threads, each with its own epoll instance (mio `Poll`) and its own
//! connections; a connection lives on one worker for its whole life, and the worker parses,
//! executes and replies without handing the request to another thread. The keyspace is shared
//! through lock-striped shards, so two workers only contend when they touch the same shard at
//! the same instant. The main thread accepts connections and deals them round-robin to the
//! workers; it also watches for SIGINT/SIGTERM and SHUTDOWN. A separate thread runs active
//! expiry. Nothing spins: every thread blocks in epoll or a timed park when idle.

use std::io::{self, Write};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crossbeam_channel::Sender;
use larder_commands::config::Param;
use larder_commands::state::ClientHandle;
use larder_commands::{ConnState, Server};
use mio::net::{TcpListener, TcpStream};
use mio::{Events, Interest, Poll, Token};

use crate::conn::{BigArg, Conn, Handler, Output, Processed};
use crate::http::{HttpHandler, HttpShared};
use crate::memcache::{McHandler, McShared};
use crate::resp::RespHandler;
use crate::tls::Tls;

mod pump;
mod worker;

use worker::Worker;

const WAKER: Token = Token(usize::MAX);
/// Listener tokens start here; a listener's token is `LISTENER_BASE + its index` in the list
/// of all doors' listeners.
const LISTENER_BASE: usize = 1 << 30;
const SIGNAL: Token = Token(usize::MAX - 1);

/// How long shutdown waits for replies in flight to drain.
const SHUTDOWN_DRAIN: Duration = Duration::from_secs(5);

/// Which protocol family a listener serves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Door {
    Resp,
    Memcache,
    Http,
}

/// A door and the sockets it listens on: what `serve` takes, one entry per door and
/// transport.
pub struct Listeners {
    pub door: Door,
    pub sockets: Vec<std::net::TcpListener>,
    /// The TLS settings of a TLS port's sockets; `None` for plain ones.
    pub tls: Option<Arc<Tls>>,
}

/// What a worker's mailbox carries.
enum Letter {
    /// A new connection for this worker to serve (a TLS one with the port's settings).
    Connect(TcpStream, SocketAddr, Door, Option<Arc<Tls>>),
    /// Bytes wait in the outbox of the client at `token` (if it is still client `id`).
    Wake { token: usize, id: u64 },
    /// CLIENT UNPAUSE ran: try the requests a pause held back now.
    Resume,
    /// Run the blocked request of the client at `token` again (if it is still client `id`).
    Unblock { token: usize, id: u64 },
    /// The log is durable further: send the replies held for it.
    Durable,
}

/// A worker thread's mailbox: letters, and the `mio::Waker` that interrupts its poll. Many
/// letters posted while the worker is busy cost one wake-up.
struct WorkerLink {
    /// The worker's index.
    id: usize,
    tx: Sender<Letter>,
    waker: Arc<mio::Waker>,
    /// Set when a wake-up is on its way and the worker has not started reading letters yet.
    woken: AtomicBool,
    /// Set while the worker holds replies until the log is durable (`appendfsync always`):
    /// only then does an fsync post it a `Letter::Durable`.
    holds_for_log: AtomicBool,
}

thread_local! {
    /// The index of the worker running on this thread (`usize::MAX` elsewhere).
    static WORKER_ID: std::cell::Cell<usize> = const { std::cell::Cell::new(usize::MAX) };
    /// Set when the worker on this thread posted a letter to itself (a client it serves
    /// woke another it serves: a blocked client, a subscriber): it reads its letters before
    /// it polls again, so no wake-up is needed.
    static POSTED_HERE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Takes the flag `POSTED_HERE`: true if letters from this worker to itself wait.
fn take_posted_here() -> bool {
    POSTED_HERE.with(|p| p.replace(false))
}

/// Whether this thread is one of the doors' workers (it ends each turn with the
/// once-a-turn work: the log's write, the replication stream's posts).
pub(crate) fn on_worker_thread() -> bool {
    WORKER_ID.with(std::cell::Cell::get) != usize::MAX
}

impl WorkerLink {
    fn post(&self, letter: Letter) {
        if self.tx.send(letter).is_err() {
            return;
        }
        if WORKER_ID.with(std::cell::Cell::get) == self.id {
            POSTED_HERE.with(|p| p.set(true));
        } else if !self.woken.swap(true, Ordering::AcqRel) {
            let _ = self.waker.wake();
        }
    }
}

impl larder_commands::mail::Mailbox for WorkerLink {
    fn wake(&self, token: usize, id: u64) {
        self.post(Letter::Wake { token, id });
    }

    fn resume(&self) {
        self.post(Letter::Resume);
    }

    fn unblock(&self, token: usize, id: u64) {
        self.post(Letter::Unblock { token, id });
    }

    fn durable(&self) {
        if self.holds_for_log.swap(false, Ordering::SeqCst) {
            self.post(Letter::Durable);
        }
    }
}

/// The protocol half of a connection of either door.
// Not boxed: most connections are RESP ones, and a box would be one more pointer to chase on
// every read; a few hundred bytes per connection is nothing beside its buffers.
#[allow(clippy::large_enum_variant)]
enum DoorHandler {
    Resp(RespHandler),
    Memcache(McHandler),
    Http(HttpHandler),
}

impl Handler for DoorHandler {
    #[inline]
    fn process(
        &mut self,
        server: &Server,
        buf: &[u8],
        out: &mut Output,
        stop_at: usize,
    ) -> Processed {
        match self {
            DoorHandler::Resp(h) => h.process(server, buf, out, stop_at),
            DoorHandler::Memcache(h) => h.process(server, buf, out, stop_at),
            DoorHandler::Http(h) => h.process(server, buf, out, stop_at),
        }
    }

    fn min_total(&self) -> usize {
        match self {
            DoorHandler::Resp(h) => h.min_total(),
            DoorHandler::Memcache(h) => h.min_total(),
            DoorHandler::Http(h) => h.min_total(),
        }
    }

    fn handle(&self) -> &ClientHandle {
        match self {
            DoorHandler::Resp(h) => h.handle(),
            DoorHandler::Memcache(h) => h.handle(),
            DoorHandler::Http(h) => h.handle(),
        }
    }

    fn input_limit(&self, server: &Server) -> usize {
        match self {
            DoorHandler::Resp(h) => h.input_limit(server),
            DoorHandler::Memcache(h) => h.input_limit(server),
            DoorHandler::Http(h) => h.input_limit(server),
        }
    }

    fn count_io(&self, read: usize, written: usize) {
        match self {
            DoorHandler::Resp(h) => h.count_io(read, written),
            DoorHandler::Memcache(h) => h.count_io(read, written),
            DoorHandler::Http(h) => h.count_io(read, written),
        }
    }

    fn yielded(&self) {
        match self {
            DoorHandler::Resp(h) => h.yielded(),
            DoorHandler::Memcache(h) => h.yielded(),
            DoorHandler::Http(h) => h.yielded(),
        }
    }

    fn durability_error(&self, reason: &str) -> Vec<u8> {
        match self {
            DoorHandler::Resp(h) => h.durability_error(reason),
            DoorHandler::Memcache(h) => h.durability_error(reason),
            DoorHandler::Http(h) => h.durability_error(reason),
        }
    }

    fn big_arg(&self) -> Option<BigArg> {
        match self {
            DoorHandler::Resp(h) => h.big_arg(),
            DoorHandler::Memcache(h) => h.big_arg(),
            DoorHandler::Http(h) => h.big_arg(),
        }
    }

    fn process_big(
        &mut self,
        server: &Server,
        front: &[u8],
        arg: &Arc<Vec<u8>>,
        out: &mut Output,
        stop_at: usize,
    ) -> Processed {
        match self {
            DoorHandler::Resp(h) => h.process_big(server, front, arg, out, stop_at),
            DoorHandler::Memcache(h) => h.process_big(server, front, arg, out, stop_at),
            DoorHandler::Http(h) => h.process_big(server, front, arg, out, stop_at),
        }
    }
}

/// A connection of either door, as a worker holds it.
type Client = Conn<DoorHandler>;

/// Start listening and serve until shutdown. Returns when every worker has stopped.
pub fn serve(server: Arc<Server>, doors: Vec<Listeners>, threads: usize) -> anyhow::Result<()> {
    let stopping = Arc::new(AtomicBool::new(false));
    let mut poll = Poll::new()?;
    let main_waker = Arc::new(mio::Waker::new(poll.registry(), WAKER)?);
    {
        let w = Arc::clone(&main_waker);
        *server.shutdown_waker.lock() = Some(Arc::new(move || {
            let _ = w.wake();
        }));
    }

    // Signals: SIGINT/SIGTERM write a byte into a pipe that the main poll watches.
    let (mut sig_read, sig_write) = mio::net::UnixStream::pair()?;
    let sig_write = std::os::unix::net::UnixStream::from(std::os::fd::OwnedFd::from(sig_write));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::low_level::pipe::register(sig, sig_write.try_clone()?)?;
    }
    poll.registry()
        .register(&mut sig_read, SIGNAL, Interest::READABLE)?;

    // Every door's listeners, each with its door. The memcached door also has shared state
    // (its listeners' addresses for `stats`) and a delayed-flush timer.
    let mut mio_listeners: Vec<(TcpListener, Door, Option<Arc<Tls>>)> = Vec::new();
    let mut mc_addrs = Vec::new();
    for Listeners { door, sockets, tls } in doors {
        for l in sockets {
            l.set_nonblocking(true)?;
            if door == Door::Memcache {
                mc_addrs.push((
                    std::os::fd::AsRawFd::as_raw_fd(&l) as i64,
                    l.local_addr().map(|a| a.to_string()).unwrap_or_default(),
                ));
            }
            let mut ml = TcpListener::from_std(l);
            let token = Token(LISTENER_BASE + mio_listeners.len());
            poll.registry()
                .register(&mut ml, token, Interest::READABLE)?;
            mio_listeners.push((ml, door, tls.clone()));
        }
    }
    let mc = (!mc_addrs.is_empty()).then(|| Arc::new(McShared::new(threads, mc_addrs)));
    let http = Arc::new(HttpShared::new(&server));
    let mc_timer = match &mc {
        Some(mc) => {
            let (server, stopping, mc) =
                (Arc::clone(&server), Arc::clone(&stopping), Arc::clone(mc));
            Some(
                std::thread::Builder::new()
                    .name("larder-mc-flush".into())
                    .spawn(move || {
                        mc.run_flush_timer(&server.keyspace, || stopping.load(Ordering::Relaxed));
                    })?,
            )
        }
        None => None,
    };

    // Expiry thread.
    let expiry = {
        let (server, stopping) = (Arc::clone(&server), Arc::clone(&stopping));
        std::thread::Builder::new()
            .name("larder-expire".into())
            .spawn(move || {
                // DEBUG SET-ACTIVE-EXPIRE 0 ends the cycle (it returns at its next wake-up,
                // which a new earlier deadline brings at once); this loop then waits for it
                // to be turned on again. A replica expires nothing: its master's DELs do.
                let active = || {
                    server.active_expire.load(Ordering::Acquire)
                        && !server.keyspace.follows_master()
                };
                while !stopping.load(Ordering::Relaxed) {
                    if !active() {
                        std::thread::sleep(std::time::Duration::from_millis(10));
                        continue;
                    }
                    server.keyspace.run_expiry(
                        100,
                        || stopping.load(Ordering::Relaxed) || !active(),
                        |_, e| {
                            if let Some(at) = e.expire_at_ms() {
                                let late = larder_engine::now_ms().saturating_sub(at);
                                server.expiry_lateness.record(late);
                            }
                        },
                    );
                }
            })?
    };

    // The work queues' reclaim timer: messages idle past their queue's visibility timeout
    // go back to the queue (larder_commands::queue::timer); it sleeps while no queue has
    // messages.
    let queue_timer = {
        let (server, stopping) = (Arc::clone(&server), Arc::clone(&stopping));
        std::thread::Builder::new()
            .name("larder-queue".into())
            .spawn(move || {
                let handle = ClientHandle::detached(&server);
                handle.names.lock().lib_name = "queue-timer".into();
                // The stats slot past the workers' (a thread of its own, not a worker's).
                let slot = server.stats.threads.len() - 1;
                let mut conn = ConnState::new(&server, handle, slot);
                conn.authenticated = true;
                larder_commands::queue::timer::run(&server, &mut conn, &|| {
                    stopping.load(Ordering::Relaxed)
                });
            })?
    };

    let mut links = Vec::new();
    let mut handles = Vec::new();
    // Workers that outnumber the CPUs take turns on them (`Worker::share_cpu`); `worker-yield`
    // yes/no decides for every machine.
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let share_cpu = match server.config.text(Param::WorkerYield).as_str() {
        "yes" => true,
        "no" => false,
        _ => threads > cpus,
    };
    if share_cpu {
        tracing::info!(
            workers = threads,
            cpus,
            "workers yield their CPU after every busy turn (worker-yield)"
        );
    }
    for w in 0..threads {
        let wpoll = Poll::new()?;
        let waker = Arc::new(mio::Waker::new(wpoll.registry(), WAKER)?);
        let (tx, rx) = crossbeam_channel::unbounded();
        let link = Arc::new(WorkerLink {
            id: w,
            tx,
            waker: Arc::clone(&waker),
            woken: AtomicBool::new(false),
            holds_for_log: AtomicBool::new(false),
        });
        links.push(Arc::clone(&link));
        server
            .workers
            .lock()
            .push(Arc::clone(&link) as Arc<dyn larder_commands::mail::Mailbox>);
        let (server, stopping, mc, http) = (
            Arc::clone(&server),
            Arc::clone(&stopping),
            mc.clone(),
            Arc::clone(&http),
        );
        handles.push(
            std::thread::Builder::new()
                .name(format!("larder-io-{w}"))
                .spawn(move || {
                    let worker = Worker::new(
                        w,
                        server,
                        wpoll,
                        link,
                        rx,
                        stopping,
                        worker::Setup {
                            mc,
                            http,
                            share_cpu,
                        },
                    );
                    if let Err(e) = std::rc::Rc::new(worker).run() {
                        tracing::error!(worker = w, error = %e, "worker failed");
                    }
                })?,
        );
    }

    let mut events = Events::with_capacity(256);
    let mut next = 0usize;
    'main: loop {
        match poll.poll(&mut events, None) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e.into()),
        }
        for ev in events.iter() {
            match ev.token() {
                SIGNAL => {
                    tracing::info!("received shutdown signal, stopping");
                    break 'main;
                }
                WAKER if server.shutdown_requested.load(Ordering::Acquire) => {
                    tracing::info!("SHUTDOWN requested, stopping");
                    break 'main;
                }
                Token(t) if t >= LISTENER_BASE && t - LISTENER_BASE < mio_listeners.len() => {
                    let (l, door, tls) = &mio_listeners[t - LISTENER_BASE];
                    let door = *door;
                    loop {
                        match l.accept() {
                            Ok((stream, addr)) => {
                                server
                                    .stats
                                    .connections_received
                                    .fetch_add(1, Ordering::Relaxed);
                                if !admit(&server, stream.peer_addr().is_ok()) {
                                    reject(stream, &server, door, tls.is_some(), mc.as_deref());
                                    continue;
                                }
                                if protected(&server, &addr) {
                                    server.connected_clients.fetch_sub(1, Ordering::AcqRel);
                                    deny(stream, &server, door, tls.is_some());
                                    continue;
                                }
                                let link = &links[next % links.len()];
                                next = next.wrapping_add(1);
                                link.post(Letter::Connect(stream, addr, door, tls.clone()));
                            }
                            Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                            Err(e) => {
                                // EMFILE and friends: log and retry on the next event.
                                tracing::warn!(error = %e, "accept failed");
                                break;
                            }
                        }
                    }
                }
                _ => {}
            }
        }
    }

    // Stop accepting, let workers finish replies in flight, then exit.
    drop(mio_listeners);
    stopping.store(true, Ordering::Release);
    // A script past the threshold ends at its next tick, so that its worker can stop.
    server.busy.shutdown();
    for link in &links {
        let _ = link.waker.wake();
    }
    drop(links);
    for h in handles {
        let _ = h.join();
    }
    if let (Some(t), Some(mc)) = (mc_timer, &mc) {
        mc.flush.wake();
        let _ = t.join();
    }
    expiry.thread().unpark();
    let _ = expiry.join();
    queue_timer.thread().unpark();
    let _ = queue_timer.join();
    Ok(())
}

/// Count a new client against maxclients.
fn admit(server: &Server, _ok: bool) -> bool {
    let max = server.config.num(Param::Maxclients).max(1) as usize;
    let n = server.connected_clients.fetch_add(1, Ordering::AcqRel);
    if n >= max {
        server.connected_clients.fetch_sub(1, Ordering::AcqRel);
        return false;
    }
    true
}

/// Redis's protected mode: with `protected-mode yes` and no password for the default user,
/// only clients on the loopback interface get in.
fn protected(server: &Server, addr: &SocketAddr) -> bool {
    server.config.num(Param::ProtectedMode) != 0
        && !addr.ip().to_canonical().is_loopback()
        && !server.acl.auth_required()
}

/// Redis's refusal of a client protected mode keeps out.
const DENIED: &str = "DENIED Redis is running in protected mode because protected mode is enabled and no password is set for the default user. In this mode connections are only accepted from the loopback interface. If you want to connect from external computers to Redis you may adopt one of the following solutions: 1) Just disable protected mode sending the command 'CONFIG SET protected-mode no' from the loopback interface by connecting to Redis from the same host the server is running, however MAKE SURE Redis is not publicly accessible from internet if you do so. Use CONFIG REWRITE to make this change permanent. 2) Alternatively you can just disable the protected mode by editing the Redis configuration file, and setting the protected mode option to 'no', and then restarting the server. 3) If you started the server manually just for testing, restart it with the '--protected-mode no' option. 4) Setup a an authentication password for the default user. NOTE: You only need to do one of the above things in order for the server to start accepting connections from the outside.";

/// Write the protected-mode refusal in the door's protocol, and close (on a TLS port without
/// a word, as `reject`).
fn deny(stream: TcpStream, server: &Server, door: Door, tls: bool) {
    let reply = match door {
        Door::Resp => format!("-{DENIED}\r\n"),
        Door::Http => format!(
            "HTTP/1.1 403 Forbidden\r\nConnection: close\r\nContent-Type: text/plain\r\nContent-Length: {}\r\n\r\n{DENIED}",
            DENIED.len()
        ),
        Door::Memcache => format!("SERVER_ERROR {DENIED}\r\n"),
    };
    refuse(stream, server, tls, reply.as_bytes());
}

/// Count a refused connection, write `reply` (unless on a TLS port, where plaintext would
/// only garble the handshake) and close.
fn refuse(stream: TcpStream, server: &Server, tls: bool, reply: &[u8]) {
    server
        .stats
        .rejected_connections
        .fetch_add(1, Ordering::Relaxed);
    if !tls {
        let _ = (&stream).write(reply);
    }
}

/// Redis (and memcached) accept, write the error, and close; on a TLS port, where plaintext
/// would only garble the handshake, the connection is closed without a word.
fn reject(stream: TcpStream, server: &Server, door: Door, tls: bool, mc: Option<&McShared>) {
    let reply: &[u8] = match door {
        Door::Resp => b"-ERR max number of clients reached\r\n",
        Door::Http => {
            b"HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"
        }
        Door::Memcache => {
            if let (Some(mc), false) = (mc, tls) {
                mc.note_rejected();
            }
            crate::memcache::TOO_MANY_CONNECTIONS
        }
    };
    refuse(stream, server, tls, reply);
}
