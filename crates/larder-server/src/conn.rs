//! One RESP connection: read, parse every complete request, execute, write all replies.

use std::borrow::Cow;
use std::io::{self, Read, Write};
use std::sync::atomic::Ordering;

use larder_commands::config::Param;
use larder_commands::state::bump;
use larder_commands::{execute, ConnState, Outcome, Server};
use larder_resp::{parse_request_resume, Limits, Parsed, Progress, Protocol, ReplyBuf};
use mio::net::TcpStream;

/// Size of one read. Matches Redis's PROTO_IOBUF_LEN.
pub const READ_CHUNK: usize = 16 * 1024;
/// Stop executing pipelined requests and write once this much output is pending, so a
/// client that pipelines faster than it reads cannot grow our memory without bound.
const OUTPUT_HIGH_WATER: usize = 4 * 1024 * 1024;
/// Reads per readiness turn before yielding to other connections, so a client streaming a
/// huge pipeline cannot starve the others on its worker.
const READS_PER_TURN: usize = 4;
/// Give back read/write buffer memory above this once a connection goes quiet.
const BUFFER_KEEP: usize = 64 * 1024;

/// Why a connection is being closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Close {
    /// The peer closed, or an I/O error.
    Peer,
    /// After a protocol error, QUIT, or CLIENT KILL of itself: once replies are written.
    AfterReply,
    /// query buffer limit, idle timeout, CLIENT KILL: at once.
    Now,
}

/// A client connection and its buffers.
pub struct Conn {
    pub stream: TcpStream,
    pub state: ConnState,
    /// Bytes received but not yet parsed (only when a request spans reads).
    rbuf: Vec<u8>,
    /// Do not parse again until `rbuf` holds this many bytes (a big bulk is streaming in).
    min_total: usize,
    /// How far the incomplete request at the front of `rbuf` has been parsed, so a huge
    /// request of many small arguments (a 1M-argument MSET) is not re-scanned from its start
    /// on every read.
    progress: Progress,
    pub out: ReplyBuf,
    /// Bytes of `out.buf` already written.
    written: usize,
    /// Set while CLIENT PAUSE holds back our next command.
    pub paused_until_ms: Option<u64>,
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
    /// Reading stopped before the socket was drained (fairness budget or output back
    /// pressure): with edge-triggered polling no new event will come for those bytes, so the
    /// worker must call `on_ready` again.
    pub more: bool,
}

impl Conn {
    pub fn new(stream: TcpStream, state: ConnState) -> Conn {
        Conn {
            stream,
            state,
            rbuf: Vec::new(),
            min_total: 0,
            progress: Progress::default(),
            out: ReplyBuf::new(Protocol::Resp2),
            written: 0,
            paused_until_ms: None,
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
        self.out.buf.len() - self.written
    }

    /// Handle readiness: read what is available, run complete requests, write replies.
    /// `scratch` is the worker's shared read buffer, used when no partial request is pending.
    pub fn on_ready(&mut self, server: &Server, scratch: &mut Vec<u8>, now_ms: u64) {
        self.more = false;
        if self.closing.is_some() {
            self.flush(server);
            return;
        }
        // Flush first: if the client was not reading, don't pile up more output.
        if self.pending_output() > 0 {
            self.flush(server);
            if self.pending_output() >= OUTPUT_HIGH_WATER {
                // Resumed by the WRITABLE event once the client reads.
                return;
            }
        }
        // Requests already buffered run first: they were held back by a pause or by output
        // back pressure, and no new readiness event will announce them.
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
        self.state
            .handle
            .last_interaction_ms
            .store(now_ms, Ordering::Relaxed);
        let limit = server.config.num(Param::ClientQueryBufferLimit).max(0) as usize;
        let mut reads = 0;
        loop {
            reads += 1;
            let drained = if self.rbuf.is_empty() {
                // Sized once per worker; not cleared, so no 16 KiB memset per read.
                if scratch.len() < READ_CHUNK {
                    scratch.resize(READ_CHUNK, 0);
                }
                match self.stream.read(scratch) {
                    Ok(0) => {
                        self.eof = true;
                        break;
                    }
                    Ok(n) => {
                        bump(
                            &server.stats.threads[self.state.worker].net_input_bytes,
                            n as u64,
                        );
                        // Fast path: parse straight from the scratch buffer; keep only a
                        // trailing partial request.
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
                        bump(
                            &server.stats.threads[self.state.worker].net_input_bytes,
                            n as u64,
                        );
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
                // Redis closes such a client without a reply.
                tracing::warn!(
                    client = %self.state.handle.addr,
                    "closing client that reached max query buffer length"
                );
                self.closing = Some(Close::Now);
                return;
            }
            self.state
                .handle
                .query_buf_bytes
                .store(self.rbuf.len(), Ordering::Relaxed);
            if self.closing.is_some() || self.paused_until_ms.is_some() {
                break;
            }
            if self.pending_output() >= OUTPUT_HIGH_WATER {
                self.more = true;
                break;
            }
            // A short read means the socket is drained (edge-triggered epoll will report new
            // data); this saves the extra read() that would return EAGAIN.
            if drained && !self.read_closed {
                break;
            }
            if reads >= READS_PER_TURN {
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

    /// Parse and run requests held in `rbuf`.
    pub fn process_buffered(&mut self, server: &Server) {
        if self.rbuf.is_empty() || self.rbuf.len() < self.min_total {
            return;
        }
        let buf = std::mem::take(&mut self.rbuf);
        let used = self.process(server, &buf);
        let mut buf = buf;
        buf.drain(..used);
        self.rbuf = buf;
    }

    /// Parse and execute complete requests at the front of `buf`; returns the bytes consumed.
    fn process(&mut self, server: &Server, buf: &[u8]) -> usize {
        let mut limits = Limits {
            proto_max_bulk_len: server.config.num(Param::ProtoMaxBulkLen).max(0) as u64,
            ..Limits::default()
        };
        let mut argv: Vec<Cow<'_, [u8]>> = Vec::new();
        let mut args: Vec<&[u8]> = Vec::new();
        let mut pos = 0;
        self.min_total = 0;
        self.paused_until_ms = None;
        while pos < buf.len() && self.closing.is_none() {
            // Re-read per request: an AUTH earlier in the same pipeline lifts the limits.
            limits.unauthenticated = !self.state.authenticated;
            match parse_request_resume(&buf[pos..], &limits, &mut argv, &mut self.progress) {
                Ok(Parsed::Complete { consumed }) => {
                    if !argv.is_empty() {
                        // Multibulk arguments borrow from `buf`; reuse one Vec for them. Inline
                        // commands with quoted (owned) arguments take the slow path.
                        args.clear();
                        let borrowed = argv.iter().all(|a| matches!(a, Cow::Borrowed(_)));
                        let outcome = if borrowed {
                            args.extend(argv.iter().filter_map(|a| match a {
                                Cow::Borrowed(b) => Some(*b),
                                Cow::Owned(_) => None,
                            }));
                            execute(server, &mut self.state, &args, &mut self.out)
                        } else {
                            let owned: Vec<&[u8]> = argv.iter().map(|a| a.as_ref()).collect();
                            execute(server, &mut self.state, &owned, &mut self.out)
                        };
                        match outcome {
                            Outcome::Continue => {}
                            Outcome::Paused { until_ms } => {
                                self.paused_until_ms = Some(until_ms);
                                break;
                            }
                        }
                        if self.state.close_after_reply {
                            self.closing = Some(Close::AfterReply);
                        }
                    }
                    pos += consumed;
                    if self.pending_output() >= OUTPUT_HIGH_WATER {
                        break;
                    }
                }
                Ok(Parsed::Incomplete { min_total }) => {
                    self.min_total = min_total;
                    break;
                }
                Err(e) => {
                    // Redis replies with the protocol error and closes the connection.
                    larder_commands::exec::reply_error(
                        server,
                        &self.state,
                        &mut self.out,
                        &larder_commands::error::Error::Owned(e.message()),
                    );
                    self.closing = Some(Close::AfterReply);
                    pos = buf.len();
                }
            }
        }
        pos
    }

    /// Write pending output. Sets `want_write` if the socket is full.
    pub fn flush(&mut self, server: &Server) {
        while self.written < self.out.buf.len() {
            match self.stream.write(&self.out.buf[self.written..]) {
                Ok(0) => {
                    self.closing = Some(Close::Peer);
                    break;
                }
                Ok(n) => {
                    self.written += n;
                    bump(
                        &server.stats.threads[self.state.worker].net_output_bytes,
                        n as u64,
                    );
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => {
                    self.closing = Some(Close::Peer);
                    break;
                }
            }
        }
        if self.written == self.out.buf.len() {
            self.out.buf.clear();
            self.written = 0;
            if self.out.buf.capacity() > BUFFER_KEEP {
                self.out.buf = Vec::new();
            }
            self.want_write = false;
        } else {
            self.want_write = true;
        }
        self.state
            .handle
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
