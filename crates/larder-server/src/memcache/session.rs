//! A connection's protocol state without its socket: the protocol its first byte chose, the
//! rest of a refused request to drop, and how much input the next parse needs.

use larder_commands::state::bump;
use larder_memcache::{
    detect, parse_binary, parse_text, BinaryWriter, Protocol, TextWriter, HEADER_LEN,
};

use super::{binary, limits, text, Ctx, Flow};

/// The protocol state of a connection without its socket: which protocol it speaks, and
/// what is left of a refused request. Unit tests drive it directly.
#[derive(Default)]
pub(super) struct Session {
    /// Set by the first byte received.
    pub(super) protocol: Option<Protocol>,
    /// Do not parse again until the unparsed input holds this many bytes (a binary body is
    /// arriving).
    pub(super) min_total: usize,
    /// Bytes still to drop from the input: the rest of a refused request.
    discard: usize,
    /// Set when CLIENT PAUSE held the next request back: the pause's deadline. The request
    /// stays unconsumed and runs on a later call.
    pub(super) paused_until_ms: Option<u64>,
}

impl Session {
    /// Parses and runs the complete requests at the front of `buf`, appending answers to
    /// `out` and stopping early once `out` reaches `stop_at` bytes. Returns the bytes
    /// consumed and whether the connection must close once `out` is written.
    pub(super) fn run(
        &mut self,
        cx: &Ctx<'_>,
        buf: &[u8],
        out: &mut Vec<u8>,
        stop_at: usize,
    ) -> (usize, bool) {
        let limits = limits(cx.server);
        let mut pos = 0;
        self.min_total = 0;
        self.paused_until_ms = None;
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
                    Ok(Some((req, _))) if self.held(cx, req.writes()) => break,
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
                    Ok(Some((req, _))) if self.held(cx, req.command.writes()) => break,
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

    /// Whether CLIENT PAUSE holds a request back now (as it holds RESP commands: ALL holds
    /// everything, WRITE holds writes); records the deadline if so.
    fn held(&mut self, cx: &Ctx<'_>, writes: bool) -> bool {
        self.paused_until_ms = cx.server.pause.holds_now(writes);
        self.paused_until_ms.is_some()
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
