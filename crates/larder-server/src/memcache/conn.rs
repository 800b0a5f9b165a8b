//! One memcached connection's I/O: reads with the RESP connection's fairness rules, hands
//! the bytes to its [`Session`], and writes the answers.

use std::io::{self, Read, Write};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use larder_commands::state::{bump, ClientHandle};
use larder_commands::Server;
use larder_memcache::{Protocol, HEADER_LEN};
use mio::net::TcpStream;

use super::session::Session;
use super::{limits, Ctx, McShared, READS_PER_TURN};
use crate::conn::{Close, READ_CHUNK};

/// Stop running pipelined requests and write once this much output is pending.
const OUTPUT_HIGH_WATER: usize = 4 * 1024 * 1024;
/// Give back buffer memory above this once a connection goes quiet.
const BUFFER_KEEP: usize = 64 * 1024;

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
    /// CLIENT PAUSE holds the next buffered request until this Unix ms (re-checked sooner:
    /// CLIENT UNPAUSE may end it early).
    pub paused_until_ms: Option<u64>,
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
            paused_until_ms: None,
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
        // Requests held back by a pause or by output back pressure: no readiness event will
        // announce them.
        if !self.rbuf.is_empty() {
            self.process_buffered(server);
            if self.paused_until_ms.is_some() {
                self.flush(server);
                return;
            }
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
                // Zeroed once per worker, not per read: read() overwrites what it returns.
                if scratch.len() < READ_CHUNK {
                    scratch.resize(READ_CHUNK, 0);
                }
                match self.stream.read(&mut scratch[..READ_CHUNK]) {
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
            if self.closing.is_some() || self.paused_until_ms.is_some() {
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
        if self.eof && self.closing.is_none() && self.paused_until_ms.is_none() {
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
            self.paused_until_ms = None;
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
        self.paused_until_ms = self.session.paused_until_ms;
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
