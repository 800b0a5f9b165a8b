//! A connection's protocol state without its socket: the protocol its first byte chose, the
//! rest of a refused request to drop, and how much input the next parse needs.

use larder_commands::state::bump;
use larder_memcache::{
    detect, parse_binary, parse_text, BinaryCommand, BinaryRequest, BinaryWriter, Protocol,
    TextWriter, HEADER_LEN,
};

use larder_commands::ConnState;

use super::job::Job;
use super::{auth, binary, limits, text, watch, Ctx, Flow};
use crate::acl_door::{Admission, Login};
use crate::items;

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
    /// A SASL AUTH without data is waiting for its STEP.
    sasl_started: bool,
    /// Whether the client logged in.
    login: Login,
    /// The request at the front of the input that runs over several turns, and its length.
    pending: Option<(Job, usize)>,
    /// Set when `run` returned with `pending` unfinished: call again without new input.
    pub(super) again: bool,
    /// The connection is a watcher (`watch`): what it sends is read and dropped, as
    /// memcached stops reading a watcher's requests.
    pub(super) watching: bool,
}

impl Session {
    /// Parses and runs the complete requests at the front of `buf`, appending answers to
    /// `out` and stopping early once `out` reaches `stop_at` bytes. Returns the bytes
    /// consumed and whether the connection must close once `out` is written.
    pub(super) fn run(
        &mut self,
        cx: &Ctx<'_>,
        conn: &mut ConnState,
        buf: &[u8],
        out: &mut Vec<u8>,
        stop_at: usize,
    ) -> (usize, bool) {
        let limits = limits(cx.server);
        let mut pos = 0;
        self.min_total = 0;
        self.paused_until_ms = None;
        self.again = false;
        if self.watching {
            return (buf.len(), false);
        }
        let _door = watch::door(cx);
        while pos < buf.len() {
            if let Some((job, used)) = &mut self.pending {
                if !job.step(cx, out, stop_at) {
                    self.again = true;
                    return (pos, false);
                }
                // Its answer is complete: the request is consumed.
                pos += *used;
                self.pending = None;
                continue;
            }
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
                    Ok(Some((req, used))) => match self.login.admitted(cx.server, conn) {
                        Admission::In => {
                            let flow = if watch::refused_after_pipeline(&req, out) {
                                Flow::Continue
                            } else {
                                text::execute(cx, conn, &req, out)
                            };
                            if cx.server.monitors.active() {
                                monitor_text(cx, rest);
                            }
                            match cx.take_job() {
                                Some(job) => Step::Started(job, used),
                                None => Step::Ran(flow, used),
                            }
                        }
                        Admission::Out => {
                            Step::Ran(auth::text(cx, conn, &mut self.login, &req, out), used)
                        }
                        Admission::Gone => Step::Ran(Flow::Close, used),
                    },
                    Ok(None) => Step::Incomplete,
                    Err(e) => {
                        if e.kind == larder_memcache::TextErrorKind::ObjectTooLarge {
                            bump(&cx.counters.store_too_large, 1);
                            bump(&cx.counters.cmd_set, 1);
                        }
                        if e.closes_connection()
                            || self.login.admitted(cx.server, conn) == Admission::In
                        {
                            if let Some(key) = e.stale_key(rest) {
                                key.with_bytes(|key| drop_stale(cx, conn, key));
                            }
                            TextWriter::new(out).error(&e);
                        } else {
                            // Before login memcached answers every line so.
                            auth::unauthenticated(out);
                        }
                        Step::Refused {
                            skip: e.skip,
                            close: e.closes_connection(),
                        }
                    }
                },
                Protocol::Binary => match parse_binary(rest, &limits) {
                    Ok(Some((req, _))) if self.held(cx, req.command.writes()) => break,
                    Ok(Some((req, used))) => {
                        let sasl = matches!(
                            req.command,
                            BinaryCommand::SaslListMechs | BinaryCommand::Sasl { .. }
                        );
                        let admission = self.login.admitted(cx.server, conn);
                        let flow = match admission {
                            Admission::Gone => Flow::Close,
                            _ if sasl => {
                                auth::sasl(
                                    cx,
                                    conn,
                                    &mut self.login,
                                    &mut self.sasl_started,
                                    &req,
                                    out,
                                );
                                Flow::Continue
                            }
                            Admission::In => binary::execute(cx, conn, &req, out),
                            Admission::Out => auth::binary_refused(&req, out),
                        };
                        // What ran: SASL (without its credentials) and admitted requests.
                        if cx.server.monitors.active() && (sasl || admission == Admission::In) {
                            monitor_binary(cx, &req);
                        }
                        Step::Ran(flow, used)
                    }
                    Ok(None) => {
                        // Read what the parser needs (the whole body, or a storage request's
                        // extras and key) before parsing again.
                        if let Some(head) = rest.first_chunk::<HEADER_LEN>() {
                            let head = larder_memcache::BinaryHeader::parse(head);
                            self.min_total = head.bytes_needed(rest.len());
                        }
                        Step::Incomplete
                    }
                    Err(e) => {
                        if e.kind == larder_memcache::BinaryErrorKind::TooLarge {
                            bump(&cx.counters.store_too_large, 1);
                            bump(&cx.counters.cmd_set, 1);
                        }
                        if let Some(key) = e.stale_key(rest) {
                            if self.login.admitted(cx.server, conn) == Admission::In {
                                drop_stale(cx, conn, key);
                            }
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
                    match flow {
                        Flow::Close => return (pos, true),
                        // What follows `watch` is dropped.
                        Flow::Watch => {
                            self.watching = true;
                            return (buf.len(), false);
                        }
                        Flow::Continue => {}
                    }
                }
                // Stays unconsumed until the job is done (the loop's first step).
                Step::Started(job, used) => self.pending = Some((job, used)),
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

/// memcached's refusal of an item too large to store also unlinks the item its key holds,
/// so that no stale value outlives a failed `set`: done when the user may write the key.
fn drop_stale(cx: &Ctx<'_>, conn: &ConnState, key: &[u8]) {
    if crate::acl_door::check(cx.server, conn, &[b"SET", key, b"0"]).is_ok() {
        items::delete(cx.db(), key, cx.now_ms, &items::Delete::default());
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
    /// A request of this many bytes started a job that runs over several turns.
    Started(Job, usize),
}

/// Show a text or meta request that ran to the monitors (`larder_commands::monitor`): the
/// words of its command line, as sent, without the data block.
fn monitor_text(cx: &Ctx<'_>, request: &[u8]) {
    let line = request.split(|&b| b == b'\n').next().unwrap_or(request);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let words = line.split(|&b| b == b' ').filter(|w| !w.is_empty());
    larder_commands::monitor::feed_memcached(cx.server, cx.addr, words, larder_engine::now_us());
}

/// Show a binary request that ran to the monitors: its opcode's name (quiet variants kept,
/// lower case) and its fields, in the order of the text command that does the same.
fn monitor_binary(cx: &Ctx<'_>, req: &BinaryRequest<'_>) {
    let words = binary_words(req);
    larder_commands::monitor::feed_memcached(
        cx.server,
        cx.addr,
        words.iter().map(Vec::as_slice),
        larder_engine::now_us(),
    );
}

/// A binary request as words: `"setq" "k" "0" "0" "5"` (key, flags, exptime, value length
/// and any CAS), `"increment" "k" "1" "0"` (key, delta, initial, exptime unless it only
/// increments), `"getk" "k"`, `"flush" "0"`...
fn binary_words(req: &BinaryRequest<'_>) -> Vec<Vec<u8>> {
    let num = |n: &dyn std::fmt::Display| n.to_string().into_bytes();
    let mut w = vec![format!("{:?}", req.opcode)
        .to_ascii_lowercase()
        .into_bytes()];
    match req.command {
        BinaryCommand::Get { key } | BinaryCommand::Delete { key, .. } => w.push(key.to_vec()),
        BinaryCommand::Touch { key, exptime } | BinaryCommand::GetAndTouch { key, exptime } => {
            w.extend([key.to_vec(), num(&exptime)]);
        }
        BinaryCommand::Store {
            key,
            flags,
            exptime,
            value,
            compare_cas,
            ..
        } => {
            w.extend([key.to_vec(), num(&flags), num(&exptime), num(&value.len())]);
            w.extend(compare_cas.map(|c| num(&c)));
        }
        BinaryCommand::Counter {
            key,
            delta,
            initial,
            exptime,
            ..
        } => {
            w.extend([key.to_vec(), num(&delta), num(&initial)]);
            w.extend(exptime.map(|e| num(&e)));
        }
        BinaryCommand::Flush { delay } => w.push(num(&delay)),
        BinaryCommand::Stat { group } if !group.is_empty() => w.push(group.to_vec()),
        // The mechanism only: the credentials are never shown.
        BinaryCommand::Sasl { mechanism, .. } => w.push(mechanism.to_vec()),
        BinaryCommand::Stat { .. }
        | BinaryCommand::SaslListMechs
        | BinaryCommand::Quit
        | BinaryCommand::Noop
        | BinaryCommand::Version => {}
    }
    w
}
