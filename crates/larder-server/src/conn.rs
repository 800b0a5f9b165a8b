//! One client connection's I/O, whatever its protocol: reads under a fairness budget, output
//! back pressure, writes, and the rules for closing. What the bytes mean is the [`Handler`]'s
//! business (RESP in `resp.rs`, memcached in `memcache/conn.rs`), so both doors share one set
//! of I/O rules. The contract a door implements is in `conn/handler.rs`; the bookkeeping of
//! pending output and partial writes in `conn/output.rs`.

mod handler;
mod output;

use std::io::{self, IoSlice, Read, Write};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use larder_commands::state::bump;
use larder_commands::Server;
use mio::net::TcpStream;

pub use self::handler::{BigArg, Close, Handler, Processed};
pub use self::output::Output;
use self::output::{Sent, MAX_IOV};
use crate::tls::TlsSession;

/// Size of one read. Matches Redis's PROTO_IOBUF_LEN.
pub const READ_CHUNK: usize = 16 * 1024;
/// Stop running pipelined requests and write once this much output is pending, so a client
/// that pipelines faster than it reads cannot grow our memory without bound.
pub const OUTPUT_HIGH_WATER: usize = 4 * 1024 * 1024;
/// Reads per readiness turn before yielding to other connections, so a client streaming a
/// huge pipeline cannot starve the others on its worker.
pub const READS_PER_TURN: usize = 4;
/// Bytes read per readiness turn before yielding, whatever the number of reads: large
/// arguments are read up to 1 MiB at a time, and four of those per turn let one pipelining
/// client hold the worker for several milliseconds while the others wait.
pub const BYTES_PER_TURN: usize = 256 * 1024;
/// Give back read/write buffer memory above this once a connection goes quiet.
const BUFFER_KEEP: usize = 64 * 1024;
/// A last argument at least this long is read into a buffer of its own, which the command
/// may keep ([`Handler::big_arg`]). Redis's PROTO_MBULK_BIG_ARG.
pub const BIG_ARG: usize = 32 * 1024;
/// A large argument's buffer is allocated at its full size up to this; a larger one grows as
/// its bytes arrive, so a header that announces 512 MiB does not reserve it all at once.
const BIG_ARG_UPFRONT: usize = 4 << 20;
/// Most bytes one read takes of a large argument.
const BIG_ARG_READ: usize = 1 << 20;

/// Reads at most `want` bytes from `stream` onto the end of `buf`, into its spare capacity:
/// unlike `resize` then `read`, it does not zero the room first (for large values that
/// memset showed in the server's profile).
#[allow(unsafe_code)]
fn read_appending(stream: &TcpStream, buf: &mut Vec<u8>, want: usize) -> io::Result<usize> {
    buf.reserve(want);
    let spare = buf.spare_capacity_mut();
    let want = want.min(spare.len());
    // SAFETY: `spare` is `buf`'s unused capacity, valid for writes of `want` bytes; `recv`
    // writes at most that many and reports how many it wrote.
    let n = unsafe {
        libc::recv(
            std::os::fd::AsRawFd::as_raw_fd(stream),
            spare.as_mut_ptr().cast(),
            want,
            0,
        )
    };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    let n = n as usize;
    // SAFETY: `recv` initialised the first `n` bytes of the spare capacity (n <= want).
    unsafe { buf.set_len(buf.len() + n) };
    Ok(n)
}

/// How much of a client's outbox is moved into its output at a time.
const MAIL_BATCH: usize = 256 * 1024;

/// Where one read of a connection's input goes.
enum ReadInto {
    Big,
    Scratch,
    Buffer,
}

/// A large last argument read into a buffer of its own.
enum Big {
    /// Arriving: `buf` fills up to `len + trailer` bytes, and no further, so that it never
    /// holds the next request's bytes.
    Reading {
        buf: Vec<u8>,
        len: usize,
        total: usize,
    },
    /// Complete, its request held back by CLIENT PAUSE.
    Ready(Arc<Vec<u8>>),
}

/// A client connection: its socket, buffers and protocol handler.
pub struct Conn<H> {
    pub stream: TcpStream,
    /// The TLS session over `stream`, on a TLS port: every read and write goes through it.
    pub tls: Option<Box<TlsSession>>,
    pub handler: H,
    /// The worker serving the connection (indexes the per-thread counters).
    worker: usize,
    /// Bytes received but not yet parsed (only when a request spans reads).
    rbuf: Vec<u8>,
    /// The large last argument of the request at the front of `rbuf`, when there is one.
    big: Option<Big>,
    out: Output,
    /// How much of `out` is written.
    sent: Sent,
    /// Set while CLIENT PAUSE holds back the next request, or a blocking command waits
    /// (until then; `u64::MAX`: no deadline).
    pub paused_until_ms: Option<u64>,
    /// The held request is a blocked command (`paused_until_ms` is its deadline).
    pub blocked: bool,
    /// Where the worker has the connection filed among its held ones (`net::worker::Held`):
    /// the `paused_until_ms` it was filed under and its place in the filing order, if it is.
    pub paused_filed: Option<(u64, u64)>,
    /// The handler is answering the request at the front of the input over several turns
    /// ([`Processed::again`]).
    again: bool,
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
    /// pressure), or requests wait in `rbuf`: with edge-triggered polling no new event will
    /// come for them, so the worker must call `on_ready` again.
    pub more: bool,
    /// The log offset the pending replies wait for: they acknowledge writes whose records
    /// are not in the log file yet (or, under `appendfsync always`, not on disk yet).
    pub durable_wait: Option<u64>,
    /// The replies of this turn wait for its end ([`Conn::flush_or_defer`]).
    pub flush_deferred: bool,
    /// The last read found the socket drained (a short read or `WouldBlock`) and no
    /// readiness event has come since (every `on_ready` clears it): a woken blocked client
    /// then has nothing unread on its socket (`on_unblock`).
    drained: bool,
}

impl<H: Handler> Conn<H> {
    /// A new connection served by worker `worker`.
    pub fn new(
        stream: TcpStream,
        tls: Option<Box<TlsSession>>,
        worker: usize,
        handler: H,
    ) -> Conn<H> {
        Conn {
            stream,
            tls,
            handler,
            worker,
            rbuf: Vec::new(),
            big: None,
            out: Output::default(),
            sent: Sent::default(),
            paused_until_ms: None,
            blocked: false,
            paused_filed: None,
            again: false,
            closing: None,
            want_write: false,
            write_registered: false,
            eof: false,
            read_closed: false,
            more: false,
            durable_wait: None,
            flush_deferred: false,
            drained: false,
        }
    }

    /// Pending output bytes.
    pub fn pending_output(&self) -> usize {
        self.sent.pending(&self.out)
    }

    /// Handles readiness: reads what is available, runs complete requests, writes answers.
    /// `scratch` is the worker's shared read buffer, used when no partial request is pending.
    pub fn on_ready(&mut self, server: &Server, scratch: &mut Vec<u8>, now_ms: u64) {
        self.more = false;
        // This call may announce new input (edge-triggered): drained again only once a read
        // below says so.
        self.drained = false;
        // Killed (CLIENT KILL, ACL changes) since the worker last looked: no request of
        // it runs any more, as Redis's CLOSE_ASAP client's do not, even if the kill's
        // wake-up has not been read yet.
        if self.closing.is_none() && self.handler.handle().killed.load(Ordering::Acquire) {
            self.closing = Some(Close::Now);
        }
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
                // A blocked client that hangs up is gone: Redis frees it on EOF too.
                if self.blocked && self.read_closed {
                    self.closing = Some(Close::Peer);
                }
                self.flush(server);
                return;
            }
            if self.pending_output() >= OUTPUT_HIGH_WATER {
                self.flush(server);
                self.more = true;
                return;
            }
        }
        self.handler
            .handle()
            .last_interaction_ms
            .store(now_ms, Ordering::Relaxed);
        // What other threads posted before this read goes ahead of the replies to what it
        // brings (`Mail::move_ahead`); a backlog past one batch keeps its place in the outbox.
        if self.closing.is_none() {
            self.handler
                .handle()
                .mail
                .move_ahead(&mut self.out.bytes, MAIL_BATCH);
        }
        let limit = self.handler.input_limit(server);
        let mut reads = 0;
        let mut read_bytes = 0;
        loop {
            reads += 1;
            // Where this read goes: a large argument's own buffer, the worker's scratch buffer
            // (no partial request pending), or the connection's buffer (one is).
            let (into, want, result) = if let Some(Big::Reading { buf, total, .. }) = &mut self.big
            {
                // No more than the rest of the argument: the next request goes to the scratch
                // buffer once it is complete.
                let want = (*total - buf.len()).min(BIG_ARG_READ);
                if buf.spare_capacity_mut().len() < want {
                    // Past the up-front size: double, but never beyond the argument's size.
                    let cap = (buf.capacity() * 2).clamp(buf.len() + want, *total);
                    buf.reserve_exact(cap - buf.len());
                }
                let result = match &mut self.tls {
                    None => read_appending(&self.stream, buf, want),
                    Some(tls) => {
                        tls.peer_closed = self.read_closed;
                        tls.read_appending(&mut &self.stream, buf, want)
                    }
                };
                (ReadInto::Big, want, result)
            } else if self.rbuf.is_empty() {
                // Sized once per worker; not cleared, so no 16 KiB memset per read.
                if scratch.len() < READ_CHUNK {
                    scratch.resize(READ_CHUNK, 0);
                }
                let result = match &mut self.tls {
                    None => self.stream.read(&mut scratch[..READ_CHUNK]),
                    Some(tls) => {
                        tls.peer_closed = self.read_closed;
                        tls.read(&mut &self.stream, &mut scratch[..READ_CHUNK])
                    }
                };
                (ReadInto::Scratch, READ_CHUNK, result)
            } else {
                // A request spans reads. If a large argument is arriving, make room for all of
                // it (up to 1 MiB at a time) at once, so the buffer is not regrown, and copied,
                // read after read.
                let pending = self.handler.min_total().saturating_sub(self.rbuf.len());
                let want = READ_CHUNK.max(pending.min(1 << 20));
                let result = match &mut self.tls {
                    None => read_appending(&self.stream, &mut self.rbuf, want),
                    Some(tls) => {
                        tls.peer_closed = self.read_closed;
                        tls.read_appending(&mut &self.stream, &mut self.rbuf, want)
                    }
                };
                (ReadInto::Buffer, want, result)
            };
            let n = match result {
                Ok(0) => {
                    self.eof = true;
                    break;
                }
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    self.drained = true;
                    break;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    self.read_failed(&e);
                    return;
                }
            };
            self.count_input(server, n);
            read_bytes += n;
            match into {
                ReadInto::Big => self.run_big(server),
                ReadInto::Scratch => {
                    // Fast path: parse straight from the scratch buffer; keep only a trailing
                    // partial request.
                    let used = self.process(server, &scratch[..n]);
                    if used < n && self.closing.is_none() {
                        self.rbuf.extend_from_slice(&scratch[used..n]);
                        self.start_big();
                    }
                }
                ReadInto::Buffer => self.process_buffered(server),
            }
            let drained = n < want;
            self.drained = drained && !self.read_closed;
            if self.query_buf_len() > limit {
                // Redis closes such a client without a reply.
                tracing::warn!(
                    client = %self.handler.handle().addr,
                    "closing client that reached max query buffer length"
                );
                self.closing = Some(Close::Now);
                return;
            }
            self.handler
                .handle()
                .query_buf_bytes
                .store(self.query_buf_len(), Ordering::Relaxed);
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
            if reads >= READS_PER_TURN || read_bytes >= BYTES_PER_TURN {
                self.handler.yielded();
                self.more = true;
                break;
            }
        }
        self.flush_or_defer(server);
        // After the peer's EOF, a request still being answered is finished first.
        if self.eof && self.closing.is_none() && self.paused_until_ms.is_none() && !self.again {
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

    /// A blocked client was woken (`Letter::Unblock`): run its held requests again. When its
    /// socket is known to be drained (the client waits for these very replies), this skips
    /// the read that would only return `EAGAIN`; otherwise it is `on_ready`.
    pub fn on_unblock(&mut self, server: &Server, scratch: &mut Vec<u8>, now_ms: u64) {
        if !self.drained
            || self.closing.is_some()
            || self.big.is_some()
            || self.pending_output() > 0
            || self.rbuf.is_empty()
        {
            self.on_ready(server, scratch, now_ms);
            return;
        }
        self.more = false;
        self.handler
            .handle()
            .last_interaction_ms
            .store(now_ms, Ordering::Relaxed);
        self.process_buffered(server);
        if self.paused_until_ms.is_some() && self.blocked && self.read_closed {
            self.closing = Some(Close::Peer);
        }
        if self.pending_output() >= OUTPUT_HIGH_WATER && !self.rbuf.is_empty() {
            self.more = true;
        }
        self.flush_or_defer(server);
        if self.rbuf.is_empty() && self.rbuf.capacity() > BUFFER_KEEP {
            self.rbuf = Vec::new();
        }
    }

    /// A read failed: the peer is gone, or its TLS session went wrong (logged and counted if
    /// it failed in its handshake: plaintext or garbage on a TLS port, a bad certificate).
    fn read_failed(&mut self, e: &io::Error) {
        if let Some(tls) = &self.tls {
            if tls.is_handshaking() {
                let failures = crate::tls::note_handshake_failure();
                tracing::debug!(
                    client = %self.handler.handle().addr,
                    error = %e,
                    failures,
                    "TLS handshake failed"
                );
            } else {
                tracing::debug!(client = %self.handler.handle().addr, error = %e, "TLS error");
            }
        }
        self.closing = Some(Close::Peer);
    }

    /// Whether the TLS session's handshake has been under way since `created_ms` for longer
    /// than allowed at `now_ms`.
    pub fn handshake_expired(&self, created_ms: u64, now_ms: u64) -> bool {
        self.tls.as_ref().is_some_and(|t| t.is_handshaking())
            && now_ms.saturating_sub(created_ms) > crate::tls::HANDSHAKE_TIMEOUT_MS
    }

    /// Whether the connection is a TLS one still in its handshake.
    pub fn handshaking(&self) -> bool {
        self.tls.as_ref().is_some_and(|t| t.is_handshaking())
    }

    fn count_input(&self, server: &Server, n: usize) {
        bump(&server.stats.threads[self.worker].net_input_bytes, n as u64);
        self.handler.count_io(n, 0);
    }

    /// Input held: unparsed bytes and a large argument's.
    fn query_buf_len(&self) -> usize {
        self.rbuf.len()
            + match &self.big {
                None => 0,
                Some(Big::Reading { buf, .. }) => buf.len(),
                Some(Big::Ready(arg)) => arg.len(),
            }
    }

    /// Parses and runs requests held in `rbuf`.
    fn process_buffered(&mut self, server: &Server) {
        if self.big.is_some() {
            self.paused_until_ms = None;
            self.blocked = false;
            self.run_big(server);
            return;
        }
        if self.rbuf.is_empty() || self.rbuf.len() < self.handler.min_total() {
            self.paused_until_ms = None;
            self.blocked = false;
            return;
        }
        let buf = std::mem::take(&mut self.rbuf);
        let used = self.process(server, &buf);
        let mut buf = buf;
        buf.drain(..used);
        self.rbuf = buf;
        if !self.rbuf.is_empty() && self.closing.is_none() {
            self.start_big();
        }
    }

    /// If the handler says a large last argument has begun to arrive, moves what `rbuf`
    /// holds of it into a buffer of its own, allocated once at its full size.
    fn start_big(&mut self) {
        let Some(arg) = self.handler.big_arg() else {
            return;
        };
        let total = arg.len.saturating_add(arg.trailer);
        // What the input holds of it: the handler's word is checked, not trusted.
        let have = self.rbuf.len().checked_sub(arg.start);
        if self.big.is_some() || arg.len < BIG_ARG || have.is_none_or(|have| have >= total) {
            return;
        }
        let mut buf = Vec::with_capacity(total.min(BIG_ARG_UPFRONT));
        buf.extend_from_slice(&self.rbuf[arg.start..]);
        self.rbuf.truncate(arg.start);
        self.big = Some(Big::Reading {
            buf,
            len: arg.len,
            total,
        });
    }

    /// Runs the request of the large argument if the argument is complete.
    fn run_big(&mut self, server: &Server) {
        let arg = match self.big.take() {
            Some(Big::Reading {
                mut buf,
                len,
                total,
            }) if buf.len() == total => {
                buf.truncate(len);
                Arc::new(buf)
            }
            Some(Big::Ready(arg)) => arg,
            other => {
                self.big = other;
                return;
            }
        };
        let stop_at = self.sent.total() + OUTPUT_HIGH_WATER;
        let done = self
            .handler
            .process_big(server, &self.rbuf, &arg, &mut self.out, stop_at);
        self.paused_until_ms = done.paused_until_ms;
        self.blocked = done.blocked;
        if done.close.is_some() {
            self.closing = done.close;
        }
        if done.paused_until_ms.is_some() {
            self.big = Some(Big::Ready(arg));
        } else {
            // The handler consumed the whole front (`Handler::process_big`).
            debug_assert_eq!(done.used, self.rbuf.len());
            self.rbuf.clear();
        }
    }

    /// Parses and runs complete requests at the front of `buf`; returns the bytes consumed.
    fn process(&mut self, server: &Server, buf: &[u8]) -> usize {
        let stop_at = self.sent.total() + OUTPUT_HIGH_WATER;
        let done = self.handler.process(server, buf, &mut self.out, stop_at);
        self.paused_until_ms = done.paused_until_ms;
        self.blocked = done.blocked;
        self.again = done.again;
        if done.again {
            self.more = true;
        }
        if done.close.is_some() {
            self.closing = done.close;
        }
        done.used
    }

    /// Leaves the replies of this turn for its end (`Worker::settle`), as Redis writes every
    /// reply in `beforeSleep`. The worker first reads the letters its requests posted to
    /// itself (a blocked client woken, a subscriber's message), so the clients they serve
    /// get their replies first: a producer's reply does not stand between its message and
    /// the consumer. And a peer that sent requests on several connections is woken once
    /// per turn, not once per connection served: on loopback the sender pays for each
    /// wake-up (`sock_def_readable`), which showed in the server's profile.
    /// Without replies pending, the outbox (what other threads posted) goes out now.
    fn flush_or_defer(&mut self, server: &Server) {
        if self.pending_output() > 0 {
            // The records this connection's writes wait for are this thread's now.
            self.note_committed();
            self.flush_deferred = true;
        } else {
            self.flush(server);
        }
    }

    /// Adds the end of the log records this thread committed since the last look to what
    /// the pending replies wait for.
    fn note_committed(&mut self) {
        if let Some(end) = larder_commands::persistence::take_committed() {
            self.durable_wait = Some(self.durable_wait.unwrap_or(0).max(end));
        }
    }

    /// Writes pending output. Sets `want_write` if the socket is full.
    pub fn flush(&mut self, server: &Server) {
        self.flush_deferred = false;
        if self.held_for_log(server) {
            return;
        }
        loop {
            self.write_pending(server);
            // Once the output is written, what other threads posted goes next, a batch at a
            // time: a backlog stays in the outbox's chunks until the socket takes it.
            if self.pending_output() > 0 || self.closing.is_some() {
                break;
            }
            self.reset_output();
            if !self
                .handler
                .handle()
                .mail
                .move_into(&mut self.out.bytes, MAIL_BATCH)
            {
                break;
            }
        }
        // Ciphertext the socket did not take yet (TLS) waits for WRITABLE as output does.
        let backlog = match &mut self.tls {
            None => false,
            Some(tls) => match tls.flush(&mut &self.stream) {
                Ok(done) => !done,
                Err(_) => {
                    self.closing = Some(Close::Peer);
                    false
                }
            },
        };
        if self.pending_output() == 0 && !backlog {
            self.reset_output();
            self.want_write = false;
        } else {
            self.want_write = true;
        }
        self.handler
            .handle()
            .output_buf_bytes
            .store(self.pending_output(), Ordering::Relaxed);
    }

    /// Whether the pending replies must wait for the log: they acknowledge a write this
    /// thread committed whose record is not in the log file yet (its worker writes the log
    /// once per turn, before it sends the turn's replies), or, under `appendfsync always`,
    /// not on disk yet. If the log failed instead, the replies are replaced by an error and
    /// the connection closes after it.
    fn held_for_log(&mut self, server: &Server) -> bool {
        let gates = &server.gates;
        self.note_committed();
        let Some(wait) = self.durable_wait else {
            return false;
        };
        let reached = if larder_commands::persistence::replies_wait_for_fsync(server) {
            &gates.durable
        } else {
            &gates.written
        };
        if reached.load(Ordering::SeqCst) >= wait {
            self.durable_wait = None;
            return false;
        }
        if gates.write_failed.load(Ordering::SeqCst) {
            self.durable_wait = None;
            self.reset_output();
            let reason = gates.write_error.lock().clone();
            self.out
                .bytes
                .extend_from_slice(&self.handler.durability_error(&reason));
            self.closing = Some(Close::AfterReply);
            return false;
        }
        self.want_write = false;
        true
    }

    /// Empty output: forget what was written, keep a buffer of moderate size.
    fn reset_output(&mut self) {
        self.out.bytes.clear();
        self.out.attached.clear();
        self.sent = Sent::default();
        if self.out.bytes.capacity() > BUFFER_KEEP {
            self.out.bytes = Vec::new();
        }
    }

    /// Write pending output until it is all written or the socket is full.
    fn write_pending(&mut self, server: &Server) {
        while self.pending_output() > 0 {
            let result = match &mut self.tls {
                None if self.sent.att_next == self.out.attached.len() => {
                    (&self.stream).write(&self.out.bytes[self.sent.bytes..])
                }
                None => {
                    let mut iov = [IoSlice::new(&[]); MAX_IOV];
                    let n = self.sent.gather(&self.out, &mut iov);
                    (&self.stream).write_vectored(&iov[..n])
                }
                // Attachments are copied into the session's records with the bytes around
                // them.
                Some(tls) => {
                    let mut iov = [IoSlice::new(&[]); MAX_IOV];
                    let n = self.sent.gather(&self.out, &mut iov);
                    tls.write_vectored(&mut &self.stream, &iov[..n])
                }
            };
            match result {
                Ok(0) => {
                    self.closing = Some(Close::Peer);
                    break;
                }
                Ok(n) => {
                    self.sent.advance(&self.out, n);
                    bump(
                        &server.stats.threads[self.worker].net_output_bytes,
                        n as u64,
                    );
                    self.handler.count_io(0, n);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => {
                    self.closing = Some(Close::Peer);
                    break;
                }
            }
        }
    }

    /// Move what other threads posted to this client
    /// ([`ClientHandle::mail`](larder_commands::state::ClientHandle::mail)) into its output and
    /// write it.
    pub fn deliver_mail(&mut self, server: &Server) {
        if self.closing.is_some() {
            return;
        }
        // Writes what is pending, then the outbox (see `flush`).
        self.flush(server);
    }

    /// Whether the connection can be dropped now.
    pub fn should_drop(&self) -> bool {
        match self.closing {
            None => false,
            Some(Close::Peer) | Some(Close::Now) => true,
            Some(Close::AfterReply) => {
                self.pending_output() == 0 && !self.tls.as_ref().is_some_and(|t| t.wants_write())
            }
        }
    }
}
