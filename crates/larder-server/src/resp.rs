//! The RESP door's protocol half of a connection: parse every complete request, execute it,
//! encode the replies. The I/O rules are [`crate::conn::Conn`]'s.

use std::borrow::Cow;

use larder_commands::config::Param;
use larder_commands::state::ClientHandle;
use larder_commands::{execute, ConnState, Outcome, Server};
use larder_resp::{parse_request_resume, Limits, Parsed, Progress, Protocol, ReplyBuf};

use crate::conn::{Close, Handler, Processed};

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
}

impl RespHandler {
    pub fn new(state: ConnState) -> RespHandler {
        RespHandler {
            state,
            min_total: 0,
            progress: Progress::default(),
            reply: ReplyBuf::new(Protocol::Resp2),
        }
    }

    /// [`Handler::process`] with the output in `self.reply`.
    fn run(&mut self, server: &Server, buf: &[u8], stop_at: usize) -> Processed {
        let mut limits = Limits {
            proto_max_bulk_len: server.config.num(Param::ProtoMaxBulkLen).max(0) as u64,
            ..Limits::default()
        };
        let mut argv: Vec<Cow<'_, [u8]>> = Vec::new();
        let mut args: Vec<&[u8]> = Vec::new();
        let mut done = Processed::default();
        self.min_total = 0;
        while done.used < buf.len() && done.close.is_none() {
            // Re-read per request: an AUTH earlier in the same pipeline lifts the limits.
            limits.unauthenticated = !self.state.authenticated;
            let rest = &buf[done.used..];
            match parse_request_resume(rest, &limits, &mut argv, &mut self.progress) {
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
                            execute(server, &mut self.state, &args, &mut self.reply)
                        } else {
                            let owned: Vec<&[u8]> = argv.iter().map(|a| a.as_ref()).collect();
                            execute(server, &mut self.state, &owned, &mut self.reply)
                        };
                        match outcome {
                            Outcome::Continue => {}
                            Outcome::Paused { until_ms } => {
                                done.paused_until_ms = Some(until_ms);
                                break;
                            }
                        }
                        if self.state.close_after_reply {
                            done.close = Some(Close::AfterReply);
                        }
                    }
                    done.used += consumed;
                    if self.reply.buf.len() >= stop_at {
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
                        &mut self.reply,
                        &larder_commands::error::Error::Owned(e.message()),
                    );
                    done.close = Some(Close::AfterReply);
                    done.used = buf.len();
                }
            }
        }
        done
    }
}

impl Handler for RespHandler {
    fn process(
        &mut self,
        server: &Server,
        buf: &[u8],
        out: &mut Vec<u8>,
        stop_at: usize,
    ) -> Processed {
        std::mem::swap(&mut self.reply.buf, out);
        let done = self.run(server, buf, stop_at);
        std::mem::swap(&mut self.reply.buf, out);
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
}
