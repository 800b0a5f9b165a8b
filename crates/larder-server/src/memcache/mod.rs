//! The memcached door: connections on the memcached port, speaking the text, meta and binary
//! protocols against database 0 of the same keyspace the RESP door serves.
//!
//! - [`McConn`] is one connection: it reads, tells binary from text by the first byte (as
//!   memcached does, once per connection), parses with `larder-memcache`, runs each request
//!   and writes the replies. Its I/O rules are the RESP connection's (`conn.rs`): a bounded
//!   number of reads per readiness turn, output back pressure, pipelining, requests split
//!   across reads.
//! - `text` and `binary` map parsed requests onto the engine operations of `ops` and encode
//!   the answers; `stats` renders `stats`; `flush` is `flush_all` with a delay.
//! - [`McShared`] is the door's server-wide state: counters, the pending flush, verbosity and
//!   the list of memcached connections.
//!
//! It is not a RESP translator: memcached commands never become RESP argv; they call shard
//! operations directly.

mod binary;
mod flush;
mod ops;
mod stats;
mod text;

use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

use larder_commands::config::Param;
use larder_commands::state::{bump, ClientHandle};
use larder_commands::Server;
use larder_engine::Keyspace;
use larder_memcache::{
    detect, parse_binary, parse_text, BinaryWriter, Limits, Protocol, TextWriter, HEADER_LEN,
};
use mio::net::TcpStream;
use parking_lot::Mutex;

use crate::conn::{Close, READ_CHUNK};

/// Reads per readiness turn before yielding to the worker's other connections.
pub const READS_PER_TURN: usize = 4;
/// Stop running pipelined requests and write once this much output is pending.
const OUTPUT_HIGH_WATER: usize = 4 * 1024 * 1024;
/// Give back buffer memory above this once a connection goes quiet.
const BUFFER_KEEP: usize = 64 * 1024;

/// What memcached answers a connection over the limit before closing it.
pub const TOO_MANY_CONNECTIONS: &[u8] = b"ERROR Too many open connections\r\n";

/// The memcached door's server-wide state.
pub struct McShared {
    /// Per-worker counters.
    pub stats: stats::Stats,
    /// The pending delayed `flush_all`.
    pub flush: flush::FlushTimer,
    verbosity: AtomicU32,
    conns: Mutex<HashMap<u64, Arc<ClientHandle>>>,
    total_connections: AtomicU64,
    rejected_connections: AtomicU64,
    /// The listening sockets: file descriptor and address (`stats conns`).
    pub listeners: Vec<(i64, String)>,
}

impl McShared {
    /// State for a door served by `threads` workers on `listeners`.
    pub fn new(threads: usize, listeners: Vec<(i64, String)>) -> McShared {
        McShared {
            stats: stats::Stats::new(threads),
            flush: flush::FlushTimer::default(),
            verbosity: AtomicU32::new(0),
            conns: Mutex::new(HashMap::new()),
            total_connections: AtomicU64::new(0),
            rejected_connections: AtomicU64::new(0),
            listeners,
        }
    }

    /// Open memcached connections.
    pub fn curr_connections(&self) -> usize {
        self.conns.lock().len()
    }

    /// Connections accepted since start.
    pub fn total_connections(&self) -> u64 {
        self.total_connections.load(Ordering::Relaxed)
    }

    /// Connections refused because of maxclients.
    pub fn rejected_connections(&self) -> u64 {
        self.rejected_connections.load(Ordering::Relaxed)
    }

    /// Counts a connection refused because of maxclients.
    pub fn note_rejected(&self) {
        self.rejected_connections.fetch_add(1, Ordering::Relaxed);
    }

    /// The open memcached connections, oldest first.
    pub fn conn_handles(&self) -> Vec<Arc<ClientHandle>> {
        let mut v: Vec<_> = self.conns.lock().values().cloned().collect();
        v.sort_by_key(|h| h.id);
        v
    }

    /// The level last set by `verbosity` (memcached logs nothing with it over the network
    /// either; it is only shown by `stats settings`).
    pub fn verbosity(&self) -> u32 {
        self.verbosity.load(Ordering::Relaxed)
    }

    fn set_verbosity(&self, level: u32) {
        self.verbosity.store(level, Ordering::Relaxed);
    }

    /// Runs the delayed-flush timer until `stop` returns true (on its own thread).
    pub fn run_flush_timer(&self, keyspace: &Keyspace, stop: impl Fn() -> bool) {
        self.flush.run(keyspace, stop);
    }
}

/// What the connection does after a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Flow {
    Continue,
    /// Close once the replies so far are written (quit, binary QUIT).
    Close,
}

/// What a request handler needs: the server, the door's state and the request's clock.
struct Ctx<'a> {
    server: &'a Server,
    mc: &'a McShared,
    counters: &'a stats::Counters,
    worker: usize,
    now_ms: u64,
    item_size_max: usize,
    conn_id: u64,
}

impl Ctx<'_> {
    /// The memcached door always uses database 0.
    fn db(&self) -> &larder_engine::Db {
        self.server.keyspace.db(0)
    }

    /// Whether a store must be refused: used memory is over maxmemory (memcached would
    /// evict; larder's policy is noeviction).
    fn out_of_memory(&self) -> bool {
        let max = self.server.config.num(Param::Maxmemory);
        max > 0 && (self.server.used_memory)() as i64 > max
    }

    /// Counts a keyspace hit or miss for INFO as well as the door's own counters.
    fn count_get(&self, hit: bool) {
        let t = &self.server.stats.threads[self.worker];
        let (server, door) = if hit {
            (&t.keyspace_hits, &self.counters.get_hits)
        } else {
            (&t.keyspace_misses, &self.counters.get_misses)
        };
        bump(server, 1);
        bump(door, 1);
    }
}

/// One memcached client connection.
pub struct McConn {
    pub stream: TcpStream,
    /// What CLIENT LIST shows and CLIENT KILL marks.
    pub handle: Arc<ClientHandle>,
    worker: usize,
    mc: Arc<McShared>,
    /// Set by the first byte received.
    protocol: Option<Protocol>,
    /// Bytes received but not yet parsed (only when a request spans reads).
    rbuf: Vec<u8>,
    /// Do not parse again until `rbuf` holds this many bytes (a binary body is arriving).
    min_total: usize,
    /// Bytes still to drop from the input: the rest of a refused request.
    discard: usize,
    out: Vec<u8>,
    /// Bytes of `out` already written.
    written: usize,
    pub closing: Option<Close>,
    /// Output is pending and the socket is full: WRITABLE interest is wanted.
    pub want_write: bool,
    /// Whether WRITABLE interest is currently registered.
    pub write_registered: bool,
    /// Peer sent EOF: finish what is buffered, then close.
    eof: bool,
    /// The poller saw the peer's FIN: read until EOF instead of trusting a short read to mean
    /// "drained" (with edge-triggered polling no further event would come).
    pub read_closed: bool,
    /// Reading stopped before the socket was drained; the worker must call `on_ready` again.
    pub more: bool,
}

impl McConn {
    /// A new connection served by worker `worker`.
    pub fn new(
        stream: TcpStream,
        handle: Arc<ClientHandle>,
        worker: usize,
        mc: Arc<McShared>,
    ) -> McConn {
        mc.conns.lock().insert(handle.id, Arc::clone(&handle));
        mc.total_connections.fetch_add(1, Ordering::Relaxed);
        McConn {
            stream,
            handle,
            worker,
            mc,
            protocol: None,
            rbuf: Vec::new(),
            min_total: 0,
            discard: 0,
            out: Vec::new(),
            written: 0,
            closing: None,
            want_write: false,
            write_registered: false,
            eof: false,
            read_closed: false,
            more: false,
        }
    }

    /// Pending output bytes.
    pub fn pending_output(&self) -> usize {
        self.out.len() - self.written
    }

    /// Handles readiness: reads what is available, runs complete requests, writes replies.
    /// `scratch` is the worker's shared read buffer, used when no partial request is pending.
    pub fn on_ready(&mut self, server: &Server, scratch: &mut Vec<u8>, now_ms: u64) {
        self.more = false;
        if self.closing.is_some() {
            self.flush(server);
            return;
        }
        if self.pending_output() > 0 {
            self.flush(server);
            if self.pending_output() >= OUTPUT_HIGH_WATER {
                return;
            }
        }
        // Requests held back by output back pressure: no readiness event will announce them.
        if !self.rbuf.is_empty() {
            self.process_buffered(server);
            if self.pending_output() >= OUTPUT_HIGH_WATER {
                self.flush(server);
                self.more = true;
                return;
            }
        }
        self.handle
            .last_interaction_ms
            .store(now_ms, Ordering::Relaxed);
        let limit = self.rbuf_limit(server);
        let mut reads = 0;
        loop {
            reads += 1;
            let drained = if self.rbuf.is_empty() {
                scratch.clear();
                scratch.resize(READ_CHUNK, 0);
                match self.stream.read(scratch) {
                    Ok(0) => {
                        self.eof = true;
                        break;
                    }
                    Ok(n) => {
                        self.count_input(server, n);
                        let used = self.process(server, &scratch[..n]);
                        if used < n && self.closing.is_none() {
                            self.rbuf.extend_from_slice(&scratch[used..n]);
                        }
                        n < READ_CHUNK
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(_) => {
                        self.closing = Some(Close::Peer);
                        return;
                    }
                }
            } else {
                let want =
                    READ_CHUNK.max(self.min_total.saturating_sub(self.rbuf.len()).min(1 << 20));
                let start = self.rbuf.len();
                self.rbuf.resize(start + want, 0);
                match self.stream.read(&mut self.rbuf[start..]) {
                    Ok(0) => {
                        self.rbuf.truncate(start);
                        self.eof = true;
                        break;
                    }
                    Ok(n) => {
                        self.rbuf.truncate(start + n);
                        self.count_input(server, n);
                        self.process_buffered(server);
                        n < want
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                        self.rbuf.truncate(start);
                        break;
                    }
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {
                        self.rbuf.truncate(start);
                        continue;
                    }
                    Err(_) => {
                        self.closing = Some(Close::Peer);
                        return;
                    }
                }
            };
            if self.rbuf.len() > limit {
                // Unreachable through the codec's own limits; a guard, not a protocol rule.
                tracing::warn!(client = %self.handle.addr, "closing memcached client with an oversized request");
                self.closing = Some(Close::Now);
                return;
            }
            self.handle
                .query_buf_bytes
                .store(self.rbuf.len(), Ordering::Relaxed);
            if self.closing.is_some() {
                break;
            }
            if self.pending_output() >= OUTPUT_HIGH_WATER {
                self.more = true;
                break;
            }
            if drained && !self.read_closed {
                break;
            }
            if reads >= READS_PER_TURN {
                bump(&self.mc.stats.thread(self.worker).conn_yields, 1);
                self.more = true;
                break;
            }
        }
        self.flush(server);
        if self.eof && self.closing.is_none() {
            self.closing = Some(if self.pending_output() > 0 {
                Close::AfterReply
            } else {
                Close::Peer
            });
        }
        if self.rbuf.is_empty() && self.rbuf.capacity() > BUFFER_KEEP {
            self.rbuf = Vec::new();
        }
    }

    /// The most a partial request can hold: a get line or a storage line with its value,
    /// plus the reads of one turn.
    fn rbuf_limit(&self, server: &Server) -> usize {
        let limits = limits(server);
        limits
            .get_line_len_max
            .max(limits.item_size_max + limits.line_len_max + 2)
            .max(limits.binary_body_max + HEADER_LEN)
            + READ_CHUNK * (READS_PER_TURN + 1)
    }

    fn count_input(&self, server: &Server, n: usize) {
        bump(&server.stats.threads[self.worker].net_input_bytes, n as u64);
        bump(&self.mc.stats.thread(self.worker).bytes_read, n as u64);
    }

    /// Parses and runs requests held in `rbuf`.
    fn process_buffered(&mut self, server: &Server) {
        if self.rbuf.is_empty() || self.rbuf.len() < self.min_total {
            return;
        }
        let buf = std::mem::take(&mut self.rbuf);
        let used = self.process(server, &buf);
        let mut buf = buf;
        buf.drain(..used);
        self.rbuf = buf;
    }

    /// Parses and runs complete requests at the front of `buf`; returns the bytes consumed.
    fn process(&mut self, server: &Server, buf: &[u8]) -> usize {
        let now_ms = larder_engine::now_ms();
        self.mc.flush.run_due(&server.keyspace, now_ms);
        let limits = limits(server);
        let cx = Ctx {
            server,
            mc: &self.mc,
            counters: self.mc.stats.thread(self.worker),
            worker: self.worker,
            now_ms,
            item_size_max: limits.item_size_max,
            conn_id: self.handle.id,
        };
        let mut pos = 0;
        self.min_total = 0;
        while pos < buf.len() && self.closing.is_none() {
            let rest = &buf[pos..];
            if self.discard > 0 {
                let n = self.discard.min(rest.len());
                self.discard -= n;
                pos += n;
                continue;
            }
            let protocol = *self.protocol.get_or_insert_with(|| {
                let p = detect(rest[0]);
                self.handle.names.lock().lib_name = match p {
                    Protocol::Text => "memcached-text".into(),
                    Protocol::Binary => "memcached-binary".into(),
                };
                p
            });
            let outcome = match protocol {
                Protocol::Text => match parse_text(rest, &limits) {
                    Ok(Some((req, used))) => {
                        Step::Ran(text::execute(&cx, &req, &mut self.out), used)
                    }
                    Ok(None) => Step::Incomplete,
                    Err(e) => {
                        if e.kind == larder_memcache::TextErrorKind::ObjectTooLarge {
                            bump(&cx.counters.store_too_large, 1);
                            bump(&cx.counters.cmd_set, 1);
                        }
                        TextWriter::new(&mut self.out).error(&e);
                        Step::Refused {
                            skip: e.skip,
                            close: e.closes_connection(),
                        }
                    }
                },
                Protocol::Binary => match parse_binary(rest, &limits) {
                    Ok(Some((req, used))) => {
                        Step::Ran(binary::execute(&cx, &req, &mut self.out), used)
                    }
                    Ok(None) => {
                        // Read the whole body before parsing again.
                        if let Some(head) = rest.first_chunk::<HEADER_LEN>() {
                            let body = larder_memcache::BinaryHeader::parse(head).body_len;
                            self.min_total = HEADER_LEN + body as usize;
                        }
                        Step::Incomplete
                    }
                    Err(e) => {
                        if e.kind == larder_memcache::BinaryErrorKind::TooLarge {
                            bump(&cx.counters.store_too_large, 1);
                        }
                        BinaryWriter::new(&mut self.out).error(&e);
                        Step::Refused {
                            skip: e.skip,
                            close: e.closes_connection(),
                        }
                    }
                },
            };
            match outcome {
                Step::Ran(flow, used) => {
                    pos += used;
                    if flow == Flow::Close {
                        self.closing = Some(Close::AfterReply);
                    }
                }
                Step::Incomplete => break,
                Step::Refused { skip, close } => {
                    if close {
                        self.closing = Some(Close::AfterReply);
                        return buf.len();
                    }
                    // A refused request may be longer than what has arrived (a value over
                    // the size limit): drop the rest as it comes.
                    let n = skip.min(rest.len());
                    self.discard = skip - n;
                    pos += n;
                }
            }
            if self.pending_output() >= OUTPUT_HIGH_WATER {
                break;
            }
        }
        // `min_total` counts from `pos`, the first unparsed byte, which starts `rbuf` next.
        pos
    }

    /// Writes pending output. Sets `want_write` if the socket is full.
    pub fn flush(&mut self, server: &Server) {
        while self.written < self.out.len() {
            match self.stream.write(&self.out[self.written..]) {
                Ok(0) => {
                    self.closing = Some(Close::Peer);
                    break;
                }
                Ok(n) => {
                    self.written += n;
                    bump(
                        &server.stats.threads[self.worker].net_output_bytes,
                        n as u64,
                    );
                    bump(&self.mc.stats.thread(self.worker).bytes_written, n as u64);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => {
                    self.closing = Some(Close::Peer);
                    break;
                }
            }
        }
        if self.written == self.out.len() {
            self.out.clear();
            self.written = 0;
            if self.out.capacity() > BUFFER_KEEP {
                self.out = Vec::new();
            }
            self.want_write = false;
        } else {
            self.want_write = true;
        }
        self.handle
            .output_buf_bytes
            .store(self.pending_output(), Ordering::Relaxed);
    }

    /// Whether the connection can be dropped now.
    pub fn should_drop(&self) -> bool {
        match self.closing {
            None => false,
            Some(Close::Peer) | Some(Close::Now) => true,
            Some(Close::AfterReply) => self.pending_output() == 0,
        }
    }
}

impl Drop for McConn {
    fn drop(&mut self) {
        self.mc.conns.lock().remove(&self.handle.id);
    }
}

/// The result of one parse-and-run step.
enum Step {
    /// A request ran; it took this many bytes.
    Ran(Flow, usize),
    /// More bytes are needed.
    Incomplete,
    /// The request was refused and answered: skip this many bytes, maybe close.
    Refused { skip: usize, close: bool },
}

/// The codec limits, with the configured item size.
fn limits(server: &Server) -> Limits {
    let item_size_max = server
        .config
        .num(Param::MemcachedItemSizeMax)
        .clamp(1024, i64::from(u32::MAX)) as usize;
    Limits {
        item_size_max,
        binary_body_max: item_size_max + 1024,
        ..Limits::default()
    }
}
