//! The RESP door's protocol half of a connection: parse every complete request, execute it,
//! encode the replies. The I/O rules are [`crate::conn::Conn`]'s.

use std::borrow::Cow;
use std::sync::Arc;

use larder_commands::config::Param;
use larder_commands::state::ClientHandle;
use larder_commands::{execute, ConnState, Outcome, Server};
use larder_engine::Db;
use larder_resp::{
    parse_request, parse_request_resume, Limits, Parsed, Progress, Protocol, ReplyBuf,
};

use crate::conn::{BigArg, Close, Handler, Output, Processed};

/// A RESP connection's protocol state.
pub struct RespHandler {
    pub state: ConnState,
    /// Do not parse again until the unparsed input holds this many bytes (a big bulk is
    /// streaming in).
    min_total: usize,
    /// How far the incomplete request at the front of the input has been parsed, so a huge
    /// request of many small arguments (a 1M-argument MSET) is not re-scanned from its start
    /// on every read.
    progress: Progress,
    /// The reply encoder. Its buffer is empty between calls: [`Handler::process`] lends it
    /// the connection's output buffer.
    reply: ReplyBuf,
    /// Empty, with the capacity of the argument lists `run` used last, so it need not
    /// allocate them again for every read.
    spare_argv: Vec<Cow<'static, [u8]>>,
    spare_args: Vec<&'static [u8]>,
    batch: Vec<(usize, usize, usize)>,
}

impl RespHandler {
    pub fn new(state: ConnState) -> RespHandler {
        RespHandler {
            state,
            min_total: 0,
            progress: Progress::default(),
            reply: ReplyBuf::new(Protocol::Resp2),
            spare_argv: Vec::new(),
            spare_args: Vec::new(),
            batch: Vec::new(),
        }
    }

    /// Lends the connection's output to `self.reply` (its buffers are empty between calls),
    /// or gives it back.
    fn swap_output(&mut self, out: &mut Output) {
        std::mem::swap(&mut self.reply.buf, &mut out.bytes);
        std::mem::swap(&mut self.reply.attached, &mut out.attached);
    }

    /// [`Handler::process`] with the output in `self.reply`.
    fn run(&mut self, server: &Server, buf: &[u8], stop_at: usize) -> Processed {
        let mut limits = Limits {
            proto_max_bulk_len: server.config.num(Param::ProtoMaxBulkLen).max(0) as u64,
            ..Limits::default()
        };
        let mut argv: Vec<Cow<'_, [u8]>> = recycle(std::mem::take(&mut self.spare_argv));
        // The arguments of a batch of requests, back to back, and each request's span of
        // them with the input bytes it took.
        let mut args: Vec<&[u8]> = recycle(std::mem::take(&mut self.spare_args));
        let mut batch = std::mem::take(&mut self.batch);
        // Commands of this batch chain their clock reads (`ConnState::batching`).
        self.state.batching = true;
        let mut done = Processed::default();
        self.min_total = 0;
        'requests: while done.used < buf.len() && done.close.is_none() {
            // Re-read per request: an AUTH earlier in the same pipeline lifts the limits.
            limits.unauthenticated = !self.state.authenticated && server.acl.auth_required();
            let rest = &buf[done.used..];
            match parse_request_resume(rest, &limits, &mut argv, &mut self.progress) {
                Ok(Parsed::Complete { consumed }) => {
                    if argv.is_empty() {
                        done.used += consumed;
                        continue;
                    }
                    args.clear();
                    if !borrowed(&argv, &mut args) {
                        // Inline commands with quoted (owned) arguments take the slow path.
                        let owned: Vec<&[u8]> = argv.iter().map(|a| a.as_ref()).collect();
                        if !self.exec(server, &owned, consumed, &mut done, stop_at) {
                            break;
                        }
                        continue;
                    }
                    batch.clear();
                    batch.push((0, args.len(), consumed));
                    // A request that may block ends a batch: had it blocked, the requests
                    // after it would be parsed again once it is woken.
                    let may_block = |name: &[u8]| server.registry.may_block(name);
                    if !limits.unauthenticated && !may_block(args[0]) {
                        let rest = &rest[consumed..];
                        look_ahead(rest, &limits, &mut argv, &mut args, &mut batch, may_block);
                    }
                    if batch.len() > 1 {
                        self.prefetch(server, &args, &batch);
                    }
                    for (i, &(from, to, consumed)) in batch.iter().enumerate() {
                        // RESET may end the authentication the batch was parsed under: parse
                        // the rest again under the unauthenticated limits.
                        if i > 0 && !self.state.authenticated && server.acl.auth_required() {
                            continue 'requests;
                        }
                        if !self.exec(server, &args[from..to], consumed, &mut done, stop_at) {
                            break 'requests;
                        }
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
                        &mut self.reply,
                        &larder_commands::error::Error::Owned(e.message()),
                    );
                    done.close = Some(Close::AfterReply);
                    done.used = buf.len();
                }
            }
        }
        // Kept for the next call unless a huge request (a 1M-argument MSET) grew them.
        if argv.capacity() <= SPARE_ARGS_MAX && args.capacity() <= SPARE_ARGS_MAX {
            self.spare_argv = recycle(argv);
            self.spare_args = recycle(args);
        }
        batch.clear();
        self.batch = batch;
        self.state.batching = false;
        self.state.clock_us = None;
        done
    }

    /// Runs one request that took `consumed` input bytes. False: stop before the next one
    /// (CLIENT PAUSE holds it, the connection closes, or the output reached `stop_at`).
    fn exec(
        &mut self,
        server: &Server,
        args: &[&[u8]],
        consumed: usize,
        done: &mut Processed,
        stop_at: usize,
    ) -> bool {
        match execute(server, &mut self.state, args, &mut self.reply) {
            Outcome::Continue => {}
            Outcome::Paused { until_ms } => {
                done.paused_until_ms = Some(until_ms);
                return false;
            }
            Outcome::Blocked { until_ms } => {
                done.paused_until_ms = Some(if until_ms == 0 { u64::MAX } else { until_ms });
                done.blocked = true;
                return false;
            }
        }
        if self.state.close_after_reply {
            done.close = Some(Close::AfterReply);
        }
        done.used += consumed;
        done.close.is_none() && self.reply.len() < stop_at
    }

    /// Warms the CPU caches for the keys of a batch of pipelined requests
    /// (`Db::prefetch_with`), one key per request ([`first_key`]) with the argument after it
    /// as the member it looks up: right for the single-key commands and scripts that make up
    /// most pipelines, and only a wasted hint for the others.
    fn prefetch(&self, server: &Server, args: &[&[u8]], batch: &[(usize, usize, usize)]) {
        let mut keys = [&[][..]; Db::PREFETCH_BATCH];
        let mut members = [None; Db::PREFETCH_BATCH];
        let mut n = 0;
        for &(from, to, _) in batch {
            if n == keys.len() {
                break;
            }
            let request = &args[from..to];
            if let Some(key) = first_key(request) {
                keys[n] = key;
                // The argument after the key, where the key is the second argument.
                members[n] = request
                    .get(1)
                    .filter(|k| std::ptr::eq(**k, key))
                    .and(request.get(2).copied());
                n += 1;
            }
        }
        if n > 1 {
            server
                .keyspace
                .db(self.state.db)
                .prefetch_with(&keys[..n], &members[..n]);
        }
    }
}

/// The key a request most likely reads first, for the prefetch: a script's first declared
/// key (EVAL, EVALSHA, FCALL and their `_RO` forms: `name script numkeys key ...`), else the
/// second argument. A guess, never a parse: a wrong one costs a cache line.
fn first_key<'a>(request: &[&'a [u8]]) -> Option<&'a [u8]> {
    let name = request.first()?;
    let script = matches!(name.first(), Some(b'e' | b'E' | b'f' | b'F'))
        && [
            &b"evalsha"[..],
            b"eval",
            b"fcall",
            b"evalsha_ro",
            b"eval_ro",
            b"fcall_ro",
        ]
        .iter()
        .any(|n| name.eq_ignore_ascii_case(n));
    if script {
        // No declared key ("0"): nothing worth a hint.
        return (request.len() >= 4 && request[2] != b"0").then(|| request[3]);
    }
    request.get(1).copied()
}

/// The most arguments `RespHandler` keeps room for between calls.
const SPARE_ARGS_MAX: usize = 1024;

/// An empty vector with `v`'s allocation, for items of another lifetime: the in-place
/// `collect` of an empty iterator keeps the buffer, since both item types have one layout.
pub(crate) fn recycle<A, B>(mut v: Vec<A>) -> Vec<B> {
    v.clear();
    v.into_iter()
        .map(|_| unreachable!("the vector is empty"))
        .collect()
}

/// Appends the arguments to `args` if all of them borrow from the input; false if one is owned.
fn borrowed<'a>(argv: &[Cow<'a, [u8]>], args: &mut Vec<&'a [u8]>) -> bool {
    let start = args.len();
    for a in argv {
        match a {
            Cow::Borrowed(b) => args.push(b),
            Cow::Owned(_) => {
                args.truncate(start);
                return false;
            }
        }
    }
    true
}

/// Parses the complete multibulk requests at the front of `input` (up to a batch of
/// `Db::PREFETCH_BATCH` in all), adding their arguments to `args` and their spans to `batch`.
/// Stops at the first request that is incomplete, inline or malformed: the main loop parses
/// that one again when it gets there, and answers it exactly as it would have. Stops after
/// a request whose name `may_block` accepts.
fn look_ahead<'a>(
    mut input: &'a [u8],
    limits: &Limits,
    argv: &mut Vec<Cow<'a, [u8]>>,
    args: &mut Vec<&'a [u8]>,
    batch: &mut Vec<(usize, usize, usize)>,
    may_block: impl Fn(&[u8]) -> bool,
) {
    while batch.len() < Db::PREFETCH_BATCH && input.first() == Some(&b'*') {
        match parse_request(input, limits, argv) {
            Ok(Parsed::Complete { consumed }) if !argv.is_empty() => {
                let from = args.len();
                if !borrowed(argv, args) {
                    return;
                }
                batch.push((from, args.len(), consumed));
                if may_block(args[from]) {
                    return;
                }
                input = &input[consumed..];
            }
            _ => return,
        }
    }
}

impl Handler for RespHandler {
    fn process(
        &mut self,
        server: &Server,
        buf: &[u8],
        out: &mut Output,
        stop_at: usize,
    ) -> Processed {
        self.swap_output(out);
        let done = self.run(server, buf, stop_at);
        self.swap_output(out);
        done
    }

    fn min_total(&self) -> usize {
        self.min_total
    }

    fn handle(&self) -> &ClientHandle {
        &self.state.handle
    }

    fn input_limit(&self, server: &Server) -> usize {
        server.config.num(Param::ClientQueryBufferLimit).max(0) as usize
    }

    fn big_arg(&self) -> Option<BigArg> {
        if self.min_total == 0 {
            // The last `process` did not stop at an incomplete request.
            return None;
        }
        let (start, len) = self.progress.pending_last_bulk()?;
        Some(BigArg {
            start,
            len,
            trailer: 2,
        })
    }

    fn process_big(
        &mut self,
        server: &Server,
        front: &[u8],
        arg: &Arc<Vec<u8>>,
        out: &mut Output,
        stop_at: usize,
    ) -> Processed {
        self.swap_output(out);
        let mut args = Vec::new();
        self.progress.parsed_args(front, &mut args);
        args.push(arg.as_slice());
        // SET and friends may take the buffer as the stored value (`Cmd::adopt`).
        self.state.owned_arg = Some(Arc::clone(arg));
        let mut done = Processed::default();
        self.exec(server, &args, front.len(), &mut done, stop_at);
        self.state.owned_arg = None;
        if done.paused_until_ms.is_none() {
            self.progress.reset();
            self.min_total = 0;
        }
        self.swap_output(out);
        done
    }
}

#[cfg(test)]
mod tests {
    use super::first_key;

    #[test]
    fn first_key_finds_a_scripts_declared_key() {
        let key = |r: &[&'static [u8]]| first_key(r);
        assert_eq!(key(&[b"GET", b"k"]), Some(&b"k"[..]));
        assert_eq!(key(&[b"PING"]), None);
        assert_eq!(
            key(&[b"EVALSHA", b"sha", b"1", b"k", b"a"]),
            Some(&b"k"[..])
        );
        assert_eq!(
            key(&[b"evalsha_ro", b"sha", b"2", b"k1", b"k2"]),
            Some(&b"k1"[..])
        );
        assert_eq!(key(&[b"Eval", b"return 1", b"1", b"k"]), Some(&b"k"[..]));
        assert_eq!(key(&[b"FCALL", b"f", b"1", b"k"]), Some(&b"k"[..]));
        assert_eq!(key(&[b"fcall_ro", b"f", b"1", b"k"]), Some(&b"k"[..]));
        assert_eq!(key(&[b"EVALSHA", b"sha", b"0", b"arg"]), None);
        assert_eq!(key(&[b"EVALSHA", b"sha", b"1"]), None);
        assert_eq!(key(&[b"EXISTS", b"k"]), Some(&b"k"[..]));
        assert_eq!(key(&[b"FLUSHALL", b"ASYNC"]), Some(&b"ASYNC"[..]));
    }
}
