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
    /// Whether `maxmemory-policy` is an LFU one: entries then hold an access counter, not
    /// an access time, so meta `l` and `me la=` have no answer (they report 0).
    lfu: bool,
}

impl<'a> Ctx<'a> {
    /// The context of requests read now by worker `worker` for connection `conn_id`. Runs a
    /// delayed flush that has come due first.
    fn new(server: &'a Server, mc: &'a McShared, worker: usize, conn_id: u64) -> Ctx<'a> {
        let now_ms = larder_engine::now_ms();
        mc.flush.run_due(&server.keyspace, now_ms);
        Ctx {
            server,
            mc,
            counters: mc.stats.thread(worker),
            worker,
            now_ms,
            item_size_max: limits(server).item_size_max,
            conn_id,
            lfu: larder_commands::config::lfu_selected(&server.config),
        }
    }

    /// The memcached door always uses database 0.
    fn db(&self) -> &larder_engine::Db {
        self.server.keyspace.db(0)
    }

    /// Before a store, as the RESP door does before a command (`exec.rs`): over maxmemory,
    /// evict by `maxmemory-policy` (at most 64 keys per request, so a large overshoot is worked
    /// off over several requests). Returns true when memory is still over the limit and
    /// nothing could be evicted (noeviction, or no candidate left): the store is refused with
    /// memcached's out-of-memory answer.
    fn out_of_memory(&self) -> bool {
        const MAX_EVICT_PER_REQUEST: usize = 64;
        let max = self.server.config.num(Param::Maxmemory);
        if max <= 0 {
            return false;
        }
        let measure = || match (self.server.used_memory)() {
            0 => self.server.keyspace.used_bytes(),
            hooked => hooked,
        };
        let used = measure();
        if used as i64 <= max {
            return false;
        }
        let need = used - max as usize;
        let Some(policy) = larder_commands::config::eviction_policy(&self.server.config) else {
            return true;
        };
        let samples = self.server.config.num(Param::MaxmemorySamples).max(1) as usize;
        let e = self.server.keyspace.evict(
            policy,
            samples,
            self.now_ms,
            need,
            MAX_EVICT_PER_REQUEST,
            |_, _| {},
        );
        // Freed bytes are an estimate: when the candidates ran out first, measure again.
        e.exhausted && e.bytes < need && measure() as i64 > max
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
    session: Session,
    /// Bytes received but not yet parsed (only when a request spans reads).
    rbuf: Vec<u8>,
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
            session: Session::default(),
            rbuf: Vec::new(),
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
                let want = READ_CHUNK.max(
                    self.session
                        .min_total
                        .saturating_sub(self.rbuf.len())
                        .min(1 << 20),
                );
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
        if self.rbuf.is_empty() || self.rbuf.len() < self.session.min_total {
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
        let cx = Ctx::new(server, &self.mc, self.worker, self.handle.id);
        let first = self.session.protocol.is_none();
        let stop_at = self.written + OUTPUT_HIGH_WATER;
        let (used, close) = self.session.run(&cx, buf, &mut self.out, stop_at);
        if close {
            self.closing = Some(Close::AfterReply);
        }
        if first {
            if let Some(p) = self.session.protocol {
                self.handle.names.lock().lib_name = match p {
                    Protocol::Text => "memcached-text".into(),
                    Protocol::Binary => "memcached-binary".into(),
                };
            }
        }
        used
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

/// The protocol state of a connection without its socket: which protocol it speaks, and
/// what is left of a refused request. Unit tests drive it directly.
#[derive(Default)]
struct Session {
    /// Set by the first byte received.
    protocol: Option<Protocol>,
    /// Do not parse again until the unparsed input holds this many bytes (a binary body is
    /// arriving).
    min_total: usize,
    /// Bytes still to drop from the input: the rest of a refused request.
    discard: usize,
}

impl Session {
    /// Parses and runs the complete requests at the front of `buf`, appending answers to
    /// `out` and stopping early once `out` reaches `stop_at` bytes. Returns the bytes
    /// consumed and whether the connection must close once `out` is written.
    fn run(
        &mut self,
        cx: &Ctx<'_>,
        buf: &[u8],
        out: &mut Vec<u8>,
        stop_at: usize,
    ) -> (usize, bool) {
        let limits = limits(cx.server);
        let mut pos = 0;
        self.min_total = 0;
        while pos < buf.len() {
            let rest = &buf[pos..];
            if self.discard > 0 {
                let n = self.discard.min(rest.len());
                self.discard -= n;
                pos += n;
                continue;
            }
            let protocol = *self.protocol.get_or_insert_with(|| detect(rest[0]));
            let step = match protocol {
                Protocol::Text => match parse_text(rest, &limits) {
                    Ok(Some((req, used))) => Step::Ran(text::execute(cx, &req, out), used),
                    Ok(None) => Step::Incomplete,
                    Err(e) => {
                        if e.kind == larder_memcache::TextErrorKind::ObjectTooLarge {
                            bump(&cx.counters.store_too_large, 1);
                            bump(&cx.counters.cmd_set, 1);
                        }
                        TextWriter::new(out).error(&e);
                        Step::Refused {
                            skip: e.skip,
                            close: e.closes_connection(),
                        }
                    }
                },
                Protocol::Binary => match parse_binary(rest, &limits) {
                    Ok(Some((req, used))) => Step::Ran(binary::execute(cx, &req, out), used),
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
                            bump(&cx.counters.cmd_set, 1);
                        }
                        BinaryWriter::new(out).error(&e);
                        Step::Refused {
                            skip: e.skip,
                            close: e.closes_connection(),
                        }
                    }
                },
            };
            match step {
                Step::Ran(flow, used) => {
                    pos += used;
                    if flow == Flow::Close {
                        return (pos, true);
                    }
                }
                Step::Incomplete => break,
                Step::Refused { skip, close } => {
                    if close {
                        return (buf.len(), true);
                    }
                    // A refused request may be longer than what has arrived (a value over
                    // the size limit): drop the rest as it comes.
                    let n = skip.min(rest.len());
                    self.discard = skip - n;
                    pos += n;
                }
            }
            if out.len() >= stop_at {
                break;
            }
        }
        // `min_total` counts from `pos`, the first unparsed byte, which starts `rbuf` next.
        (pos, false)
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

#[cfg(test)]
mod tests {
    use super::*;
    use larder_commands::config::Config;

    /// The door without sockets: a server, the door's state and one session.
    struct Door {
        server: Server,
        mc: McShared,
        session: Session,
    }

    impl Door {
        fn new() -> Door {
            Door {
                server: Server::new(Config::new(), 1),
                mc: McShared::new(1, Vec::new()),
                session: Session::default(),
            }
        }

        /// Runs `input`; returns the answers, the bytes consumed and whether to close.
        fn feed(&mut self, input: &[u8]) -> (Vec<u8>, usize, bool) {
            let cx = Ctx::new(&self.server, &self.mc, 0, 1);
            let mut out = Vec::new();
            let (used, close) = self.session.run(&cx, input, &mut out, usize::MAX);
            (out, used, close)
        }

        /// Runs complete text requests and returns the answers.
        fn text(&mut self, input: &str) -> String {
            let (out, used, _) = self.feed(input.as_bytes());
            assert_eq!(used, input.len(), "{input:?} not fully consumed");
            String::from_utf8_lossy(&out).into_owned()
        }
    }

    fn packet(opcode: u8, extras: &[u8], key: &[u8], value: &[u8], cas: u64) -> Vec<u8> {
        let h = larder_memcache::BinaryHeader {
            magic: 0x80,
            opcode,
            key_len: key.len() as u16,
            extras_len: extras.len() as u8,
            data_type: 0,
            vbucket_or_status: 0,
            body_len: (extras.len() + key.len() + value.len()) as u32,
            opaque: 0xABCD,
            cas,
        };
        let mut v = h.to_bytes().to_vec();
        v.extend_from_slice(extras);
        v.extend_from_slice(key);
        v.extend_from_slice(value);
        v
    }

    /// (status, opaque, cas, value) of each response packet.
    fn responses(mut buf: &[u8]) -> Vec<(u16, u32, u64, Vec<u8>)> {
        let mut out = Vec::new();
        while let Some(head) = buf.first_chunk::<HEADER_LEN>() {
            let h = larder_memcache::BinaryHeader::parse(head);
            assert_eq!(h.magic, 0x81);
            let end = HEADER_LEN + h.body_len as usize;
            let skip = HEADER_LEN + usize::from(h.extras_len) + usize::from(h.key_len);
            out.push((
                h.vbucket_or_status,
                h.opaque,
                h.cas,
                buf[skip..end].to_vec(),
            ));
            buf = &buf[end..];
        }
        out
    }

    #[test]
    fn text_commands_table() {
        let mut d = Door::new();
        let cases: &[(&str, &str)] = &[
            ("set a 5 0 1\r\n1\r\n", "STORED\r\n"),
            (
                "get a b a\r\n",
                "VALUE a 5 1\r\n1\r\nVALUE a 5 1\r\n1\r\nEND\r\n",
            ),
            ("add a 0 0 1\r\nx\r\n", "NOT_STORED\r\n"),
            ("replace b 0 0 1\r\nx\r\n", "NOT_STORED\r\n"),
            ("incr a 41\r\n", "42\r\n"),
            ("decr a 50\r\n", "0\r\n"),
            ("incr b 1\r\n", "NOT_FOUND\r\n"),
            ("append a 0 0 2\r\n!!\r\n", "STORED\r\n"),
            ("prepend a 0 0 1\r\n<\r\n", "STORED\r\n"),
            ("get a\r\n", "VALUE a 5 4\r\n<0!!\r\nEND\r\n"),
            (
                "incr a 1\r\n",
                "CLIENT_ERROR cannot increment or decrement non-numeric value\r\n",
            ),
            ("touch a 100\r\n", "TOUCHED\r\n"),
            ("touch b 100\r\n", "NOT_FOUND\r\n"),
            ("delete a\r\n", "DELETED\r\n"),
            ("delete a\r\n", "NOT_FOUND\r\n"),
            ("cas a 0 0 1 1\r\nx\r\n", "NOT_FOUND\r\n"),
            ("version\r\n", "VERSION 1.6.18\r\n"),
            ("verbosity 1\r\n", "OK\r\n"),
            ("flush_all\r\n", "OK\r\n"),
            (
                "set n 0 0 1 noreply\r\n1\r\nincr n 1 noreply\r\nmn\r\n",
                "MN\r\n",
            ),
            ("get n\r\n", "VALUE n 0 1\r\n2\r\nEND\r\n"),
            ("gat 0\r\n", "END\r\n"),
            ("bogus\r\n", "ERROR\r\n"),
            ("stats items\r\n", "END\r\n"),
            ("stats reset\r\n", "RESET\r\n"),
            ("stats nope\r\n", "ERROR\r\n"),
        ];
        for (req, want) in cases {
            assert_eq!(d.text(req), *want, "{req:?}");
        }
        assert_eq!(d.mc.verbosity(), 1);
    }

    #[test]
    fn cas_round_trip() {
        let mut d = Door::new();
        d.text("set k 0 0 1\r\na\r\n");
        let gets = d.text("gets k\r\n");
        let cas: u64 = gets
            .lines()
            .next()
            .and_then(|l| l.split(' ').nth(4))
            .and_then(|c| c.parse().ok())
            .expect("cas");
        assert_eq!(
            d.text(&format!("cas k 0 0 1 {}\r\nb\r\n", cas + 1)),
            "EXISTS\r\n"
        );
        assert_eq!(d.text(&format!("cas k 0 0 1 {cas}\r\nb\r\n")), "STORED\r\n");
        assert_eq!(d.text(&format!("cas k 0 0 1 {cas}\r\nc\r\n")), "EXISTS\r\n");
    }

    #[test]
    fn meta_commands() {
        let mut d = Door::new();
        assert_eq!(d.text("ms k 2 F9 T0\r\nhi\r\n"), "HD\r\n");
        assert_eq!(d.text("mg k v f s t\r\n"), "VA 2 f9 s2 t-1\r\nhi\r\n");
        assert_eq!(d.text("mg nope v\r\n"), "EN\r\n");
        assert_eq!(d.text("mg nope v q\r\nmn\r\n"), "MN\r\n");
        assert_eq!(d.text("ma c N0 J5 v\r\n"), "VA 1\r\n5\r\n");
        assert_eq!(d.text("ma c v D2\r\n"), "VA 1\r\n7\r\n");
        assert_eq!(d.text("md k q\r\nmd k\r\n"), "NF\r\n");
        assert_eq!(d.text("me k\r\n"), "EN\r\n");
        assert_eq!(d.text("mn\r\n"), "MN\r\n");
    }

    #[test]
    fn quit_closes_after_earlier_answers() {
        let mut d = Door::new();
        let input = b"version\r\nquit\r\nversion\r\n";
        let (out, used, close) = d.feed(input);
        assert_eq!(out, b"VERSION 1.6.18\r\n");
        assert_eq!(used, b"version\r\nquit\r\n".len());
        assert!(close);
    }

    #[test]
    fn oversized_value_is_dropped_as_it_arrives() {
        let mut d = Door::new();
        let line = b"set big 0 0 2000000\r\n";
        let mut first = line.to_vec();
        first.extend_from_slice(&[b'x'; 1000]);
        let (out, used, close) = d.feed(&first);
        assert_eq!(out, b"SERVER_ERROR object too large for cache\r\n");
        assert_eq!((used, close), (first.len(), false));
        // The rest of the value (and its \r\n) is discarded; the next request runs.
        let mut rest = vec![b'x'; 2_000_000 - 1000];
        rest.extend_from_slice(b"\r\nversion\r\n");
        let (out, used, _) = d.feed(&rest);
        assert_eq!(out, b"VERSION 1.6.18\r\n");
        assert_eq!(used, rest.len());
    }

    #[test]
    fn partial_requests_wait() {
        let mut d = Door::new();
        let (out, used, _) = d.feed(b"set k 0 0 5\r\nhel");
        assert_eq!((out.as_slice(), used), (&b""[..], 0));
        assert_eq!(
            d.text("set k 0 0 5\r\nhello\r\nget k\r\n"),
            "STORED\r\nVALUE k 0 5\r\nhello\r\nEND\r\n"
        );
    }

    #[test]
    fn line_too_long_closes() {
        let mut d = Door::new();
        let long = format!("set {} 0 0 1\r\n", "k".repeat(3000));
        let (out, _, close) = d.feed(long.as_bytes());
        assert_eq!(out, b"CLIENT_ERROR line too long\r\n");
        assert!(close);
    }

    #[test]
    fn binary_commands() {
        let mut d = Door::new();
        let set = packet(0x01, &[0, 0, 0, 7, 0, 0, 0, 0], b"k", b"v", 0);
        let (out, used, _) = d.feed(&set);
        assert_eq!(used, set.len());
        let r = responses(&out);
        assert_eq!((r[0].0, r[0].1), (0, 0xABCD));
        let cas = r[0].2;
        assert_ne!(cas, 0);
        let (out, _, _) = d.feed(&packet(0x00, &[], b"k", b"", 0));
        assert_eq!(responses(&out), vec![(0, 0xABCD, cas, b"v".to_vec())]);
        // A stale CAS, a quiet miss, then NOOP.
        let mut input = packet(0x01, &[0; 8], b"k", b"w", cas + 1);
        input.extend(packet(0x09, &[], b"missing", b"", 0));
        input.extend(packet(0x0a, &[], b"", b"", 0));
        let (out, _, _) = d.feed(&input);
        let r = responses(&out);
        assert_eq!(r.len(), 2);
        assert_eq!(
            (r[0].0, r[0].3.as_slice()),
            (2, &b"Data exists for key."[..])
        );
        assert_eq!(r[1].0, 0);
        // Counter created from its initial value, then incremented.
        let mut extras = Vec::new();
        extras.extend_from_slice(&3u64.to_be_bytes());
        extras.extend_from_slice(&10u64.to_be_bytes());
        extras.extend_from_slice(&0u32.to_be_bytes());
        let (out, _, _) = d.feed(&packet(0x05, &extras, b"n", b"", 0));
        assert_eq!(responses(&out)[0].3, 10u64.to_be_bytes());
        let (out, _, _) = d.feed(&packet(0x05, &extras, b"n", b"", 0));
        assert_eq!(responses(&out)[0].3, 13u64.to_be_bytes());
        // VERSION, then QUIT closes.
        let (out, _, _) = d.feed(&packet(0x0b, &[], b"", b"", 0));
        assert_eq!(responses(&out)[0].3, b"1.6.18");
        let (out, _, close) = d.feed(&packet(0x07, &[], b"", b"", 0));
        assert_eq!(responses(&out).len(), 1);
        assert!(close);
    }

    #[test]
    fn binary_partial_body_sets_min_total() {
        let mut d = Door::new();
        let set = packet(0x01, &[0; 8], b"k", &[b'v'; 100], 0);
        let (out, used, _) = d.feed(&set[..50]);
        assert_eq!((out.len(), used), (0, 0));
        assert_eq!(d.session.min_total, set.len());
        let (out, used, _) = d.feed(&set);
        assert_eq!((responses(&out)[0].0, used), (0, set.len()));
    }

    #[test]
    fn binary_bad_magic_closes_without_answer() {
        let mut d = Door::new();
        let (out, _, _) = d.feed(&packet(0x0a, &[], b"", b"", 0));
        assert_eq!(out.len(), HEADER_LEN);
        let mut bad = packet(0x0a, &[], b"", b"", 0);
        bad[0] = 0x81;
        let (out, used, close) = d.feed(&bad);
        assert_eq!((out.len(), used, close), (0, bad.len(), true));
    }

    #[test]
    fn one_protocol_per_connection() {
        let mut d = Door::new();
        assert_eq!(d.text("version\r\n"), "VERSION 1.6.18\r\n");
        // After text, a binary magic byte is just an unknown text command.
        let (out, _, _) = d.feed(&[0x80, b'\r', b'\n']);
        assert_eq!(out, b"ERROR\r\n");
    }
}
