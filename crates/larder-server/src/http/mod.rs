//! The HTTP door: HTTP/1.1 with keep-alive on the same workers, connections and keyspace as
//! the RESP and memcached doors (one more entry in `net::serve`'s list of doors). The codec is
//! `larder-http`; this module routes requests and answers them.
//!
//! - `/v1/kv/{key}`: the key API over the item operations the memcached door uses
//!   ([`crate::items`]); the ETag is the key's version ([`kv`]).
//! - `/v1/hash|set|zset/{key}[/{member}]` and `/v1/keys`: collections and key listing, run as
//!   commands through the executor ([`collections`]).
//! - `POST /`, `/pipeline`, `/multi-exec`: the command API of the Upstash REST protocol
//!   ([`command`]).
//! - `/v1/watch`, `/v1/subscribe`: Server-Sent Events from the change feed and pub/sub
//!   ([`watch`]); the connection then streams through its outbox like a RESP subscriber.
//! - `/metrics`, `/healthz`, `/livez`, `/readyz` ([`metrics`]) and the console at `/ui` ([`ui`]).
//!
//! A request is served on the worker that read it, without a hop to another thread: its
//! shards are locked and released as for any command. Authentication (`Authorization: Bearer
//! <user>:<password>`, checked as AUTH checks), CORS and rate limits are in [`limits`].

use std::sync::Arc;

use larder_commands::state::ClientHandle;
use larder_commands::{execute, ConnState, Outcome, Server};
use larder_http::{parse_request, Limits, Method, Parsed, Request, Response};
use larder_resp::{Frame, Protocol, ReplyBuf};

use crate::acl_door::Login;
use crate::conn::{Close, Handler, Output, Processed};

mod collections;
mod command;
mod kv;
mod limits;
mod metrics;
mod queue;
#[cfg(test)]
mod tests;
mod ui;
mod watch;

/// State shared by every connection of the HTTP door.
#[derive(Default)]
pub struct HttpShared {
    /// Per-address request budgets (`http-rate-limit`).
    pub rates: limits::Rates,
    /// Watches, subscriptions over SSE and long polls.
    pub watch: watch::Registry,
    /// Requests answered, by worker, route class and status, and their latencies.
    pub metrics: metrics::DoorStats,
}

impl HttpShared {
    pub fn new(server: &Arc<Server>) -> HttpShared {
        HttpShared {
            watch: watch::Registry::new(server),
            metrics: metrics::DoorStats::new(server.stats.threads.len()),
            ..HttpShared::default()
        }
    }
}

/// What serving a request left the connection doing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// The response is written; go on with the next request.
    Done,
    /// The response head is written and the body streams from now on (SSE): the connection
    /// reads no more requests, and its outbox carries the events.
    Stream,
    /// Nothing is written yet: run the request again when the client is woken
    /// (`Mail::unblock`) or at this Unix ms (a long poll).
    Wait { until_ms: u64 },
    /// The response is written; close the connection after it.
    Close,
}

/// One HTTP connection's protocol state.
pub struct HttpHandler {
    /// The client as CLIENT LIST shows it, and the connection commands run on (its database,
    /// authentication and protocol are reset for every request).
    pub state: ConnState,
    shared: Arc<HttpShared>,
    min_total: usize,
    /// `100 Continue` went out for the request at the front of the input.
    continue_sent: bool,
    /// The connection streams Server-Sent Events: input is ignored from now on.
    streaming: bool,
    /// Input bytes to read and drop before closing: the body of a request refused with `413`
    /// (see [`limits::DISCARD_MAX`]).
    discard: u64,
    /// The token that authenticated the last request and the `Acl::generation` it was
    /// checked at, so a keep-alive client's next requests with the same one are not checked
    /// again (checked again once any ACL user changes).
    pub(crate) authorized_token: Option<(Vec<u8>, u64)>,
    /// Whether the token logged the connection in as a user.
    login: Login,
    /// The deadline of the long poll at the front of the input (Unix ms), fixed by its
    /// first run and kept across the runs wake-ups cause.
    wait_until: Option<u64>,
}

impl Drop for HttpHandler {
    fn drop(&mut self) {
        if self.streaming || self.wait_until.is_some() {
            self.shared.watch.leave(self.state.handle.id);
        }
    }
}

impl HttpHandler {
    pub fn new(state: ConnState, shared: Arc<HttpShared>) -> HttpHandler {
        state.handle.names.lock().lib_name = "http".into();
        HttpHandler {
            state,
            shared,
            min_total: 0,
            continue_sent: false,
            streaming: false,
            discard: 0,
            authorized_token: None,
            login: Login::default(),
            wait_until: None,
        }
    }

    /// Serves one complete request, writing its response to `out`, and counts it (its route
    /// class, status and latency) once it is answered.
    fn serve(&mut self, server: &Server, req: &Request<'_>, out: &mut Vec<u8>) -> Action {
        let started = std::time::Instant::now();
        let at = out.len();
        let action = self.answer(server, req, out);
        if !matches!(action, Action::Wait { .. }) {
            if let Some(status) = metrics::status_of(&out[at..]) {
                let route = metrics::Route::of(req.path);
                self.shared
                    .metrics
                    .record(self.state.worker, route, status, started.elapsed());
            }
        }
        action
    }

    fn answer(&mut self, server: &Server, req: &Request<'_>, out: &mut Vec<u8>) -> Action {
        let now_ms = larder_engine::now_ms();
        let handle = &self.state.handle;
        handle
            .last_interaction_ms
            .store(now_ms, std::sync::atomic::Ordering::Relaxed);
        // Every request starts in database 0 (a SELECT in a pipeline lasts for that request).
        self.state.db = 0;
        handle.db.store(0, std::sync::atomic::Ordering::Relaxed);
        let mut cx = Cx {
            server,
            shared: &self.shared,
            state: &mut self.state,
            authorized_token: &mut self.authorized_token,
            login: &mut self.login,
            wait_until: &mut self.wait_until,
            req,
            out,
            now_ms,
            keep_alive: req.keep_alive(),
            origin: None,
        };
        if let Some(action) = limits::screen(&mut cx) {
            return action;
        }
        route(&mut cx)
    }
}

/// What a request's handler needs: the server, the door's state, the request, and where its
/// response goes.
pub struct Cx<'a, 'r> {
    pub server: &'a Server,
    pub shared: &'a HttpShared,
    /// The connection's command state, for requests that run commands.
    pub state: &'a mut ConnState,
    authorized_token: &'a mut Option<(Vec<u8>, u64)>,
    login: &'a mut Login,
    /// The long poll's deadline (see [`watch::long_poll`]).
    pub(crate) wait_until: &'a mut Option<u64>,
    pub req: &'a Request<'r>,
    pub out: &'a mut Vec<u8>,
    pub now_ms: u64,
    /// Whether the connection stays open after this response.
    pub keep_alive: bool,
    /// The request's `Origin`, when CORS allows it: echoed in every response.
    pub origin: Option<&'r [u8]>,
}

impl<'r> Cx<'_, 'r> {
    /// Starts the response: status line, `Connection: close` when the connection ends, and
    /// the CORS headers. A response to HEAD gets the head only.
    pub fn start(&mut self, status: u16) -> Response<'_> {
        let head_only = self.req.method == Method::Head;
        let mut r = Response::start(self.out, status, self.keep_alive, head_only);
        if let Some(origin) = self.origin {
            r.header_bytes("Access-Control-Allow-Origin", origin)
                .header("Vary", "Origin")
                .header("Access-Control-Expose-Headers", limits::EXPOSED_HEADERS);
        }
        r
    }

    /// The action after a complete response.
    pub fn done(&self) -> Action {
        if self.keep_alive {
            Action::Done
        } else {
            Action::Close
        }
    }

    /// An error response: `{"error": message}`.
    pub fn error(&mut self, status: u16, message: &str) -> Action {
        let body = serde_json::json!({ "error": message }).to_string();
        self.start(status)
            .body(Some("application/json"), body.as_bytes());
        self.done()
    }

    /// A JSON response.
    pub fn json(&mut self, status: u16, value: &serde_json::Value) -> Action {
        let body = value.to_string();
        self.start(status)
            .body(Some("application/json"), body.as_bytes());
        self.done()
    }

    /// Runs one command through the executor (every generic check, statistics, the slow log,
    /// MONITOR, keyspace events and the log, as for a RESP client) and returns its reply.
    /// `resp3` asks for RESP3 replies (maps, doubles, sets); otherwise RESP2's.
    pub fn command(&mut self, argv: &[&[u8]], resp3: bool) -> Frame {
        let proto = if resp3 {
            Protocol::Resp3
        } else {
            Protocol::Resp2
        };
        self.state.handle.resp.store(
            if resp3 { 3 } else { 2 },
            std::sync::atomic::Ordering::Relaxed,
        );
        let mut reply = ReplyBuf::new(proto);
        // Nothing blocks on the HTTP door: a blocking command with nothing to serve answers
        // as at its timeout, as inside EXEC.
        self.state.in_exec = true;
        let outcome = execute(self.server, self.state, argv, &mut reply);
        self.state.in_exec = false;
        if let Outcome::Paused { .. } | Outcome::Blocked { .. } = outcome {
            // CLIENT PAUSE: the door does not hold requests back.
            return Frame::Error("ERR the server is paused (CLIENT PAUSE)".into());
        }
        let bytes = if reply.attached.is_empty() {
            std::mem::take(&mut reply.buf)
        } else {
            reply.attached.splice(&reply.buf)
        };
        match larder_resp::decode(&bytes) {
            Ok(Some((frame, _))) => frame,
            _ => Frame::Error("ERR the command gave no reply".into()),
        }
    }

    /// Checks `argv`, the RESP equivalent of what the request is about to do without the
    /// executor, for the request's user (`crate::acl_door::check`): `Err` holds the NOPERM
    /// error, answered `403`.
    pub fn check(&self, argv: &[&[u8]]) -> Result<(), larder_commands::error::Error> {
        crate::acl_door::check(self.server, self.state, argv)
    }

    /// Whether the data is still loading: data endpoints answer 503 meanwhile.
    pub fn loading(&self) -> bool {
        self.server
            .gates
            .loading
            .load(std::sync::atomic::Ordering::Acquire)
    }
}

/// Dispatches a request by its path.
fn route(cx: &mut Cx<'_, '_>) -> Action {
    let path = cx.req.path;
    let mut segs = larder_http::path_segments(path);
    let first = segs.next().unwrap_or("");
    let open = matches!(first, "healthz" | "livez" | "readyz" | "ui");
    let authorized = open || limits::authorized(cx);
    if let Some(action) = limits::rate(cx) {
        return action;
    }
    match first {
        "healthz" | "livez" | "readyz" => metrics::serve_health(cx, first),
        "ui" => ui::serve(cx),
        _ => {
            if !authorized {
                return limits::unauthorized(cx);
            }
            // Metrics are read while the data loads, as INFO is.
            if first == "metrics" {
                if let Err(e) = cx.check(&[b"INFO"]) {
                    return cx.error(403, e.message());
                }
                return metrics::serve_metrics(cx);
            }
            if cx.loading() {
                return cx.error(503, "LOADING Redis is loading the dataset in memory");
            }
            match first {
                "v1" => {
                    let kind = segs.next().unwrap_or("");
                    let rest: Vec<&str> = segs.collect();
                    if let Some(action) = refuse_on_replica(cx, kind, &rest) {
                        return action;
                    }
                    match kind {
                        "kv" => kv::serve(cx, &rest),
                        "hash" | "set" | "zset" => collections::serve(cx, kind, &rest),
                        "keys" if rest.is_empty() => collections::keys(cx),
                        "watch" if rest.is_empty() => watch::watch(cx),
                        "subscribe" if rest.is_empty() => watch::subscribe(cx),
                        "queue" => queue::serve(cx, &rest),
                        _ => cx.error(404, "no such endpoint"),
                    }
                }
                _ => command::serve(cx),
            }
        }
    }
}

/// A write to a data endpoint while this server is a replica: `409` with Redis's READONLY
/// text and the master's address (`{"error": ..., "master": "host:port"}`). Reads, watches
/// and queue publish/subscribe (Pub/Sub, which a replica serves) pass; so does the command
/// endpoint, whose commands the executor refuses as for a RESP client.
fn refuse_on_replica(cx: &mut Cx<'_, '_>, kind: &str, rest: &[&str]) -> Option<Action> {
    let writes = match kind {
        "kv" | "hash" | "set" | "zset" => {
            !matches!(cx.req.method, Method::Get | Method::Head | Method::Options)
        }
        // Taking a message (GET on the queue) removes it.
        "queue" => !matches!(rest.get(1), Some(&("stats" | "workers" | "sub" | "pub"))),
        _ => false,
    };
    if !writes {
        return None;
    }
    let refusal = crate::repl::guard::read_only_refusal(cx.server)?;
    let (host, port) = larder_commands::replication::master_of(cx.server)?;
    Some(cx.json(
        409,
        &serde_json::json!({ "error": refusal, "master": format!("{host}:{port}") }),
    ))
}

impl Handler for HttpHandler {
    fn process(
        &mut self,
        server: &Server,
        buf: &[u8],
        out: &mut Output,
        stop_at: usize,
    ) -> Processed {
        let mut done = Processed::default();
        self.min_total = 0;
        if self.streaming {
            // A streaming client has nothing more to ask.
            done.used = buf.len();
            return done;
        }
        if self.discard > 0 {
            let n = self.discard.min(buf.len() as u64);
            self.discard -= n;
            done.used = n as usize;
            if self.discard == 0 {
                done.close = Some(Close::AfterReply);
            }
            return done;
        }
        let limits = Limits {
            max_body: server
                .config
                .num(larder_commands::config::Param::HttpMaxBody)
                .max(0) as usize,
            ..Limits::default()
        };
        while done.used < buf.len() && done.close.is_none() && out.bytes.len() < stop_at {
            let started = std::time::Instant::now();
            match parse_request(&buf[done.used..], &limits) {
                Ok(Parsed::Complete { request, consumed }) => {
                    let action = self.serve(server, &request, &mut out.bytes);
                    if !matches!(action, Action::Wait { .. }) && self.wait_until.take().is_some() {
                        // A long poll answered by something else than the poll (a limit).
                        self.shared.watch.end_poll(self.state.handle.id);
                    }
                    match action {
                        Action::Done => {}
                        Action::Close => done.close = Some(Close::AfterReply),
                        Action::Stream => {
                            self.streaming = true;
                            done.used = buf.len();
                            return done;
                        }
                        Action::Wait { until_ms } => {
                            done.paused_until_ms = Some(until_ms);
                            done.blocked = true;
                            return done;
                        }
                    }
                    self.continue_sent = false;
                    done.used += consumed;
                }
                Ok(Parsed::Incomplete {
                    min_total,
                    expect_continue,
                }) => {
                    if expect_continue && !self.continue_sent {
                        out.bytes
                            .extend_from_slice(b"HTTP/1.1 100 Continue\r\n\r\n");
                        self.continue_sent = true;
                    }
                    self.min_total = min_total;
                    break;
                }
                Err(e) => {
                    let body = serde_json::json!({ "error": e.message }).to_string();
                    Response::start(&mut out.bytes, e.status, false, false)
                        .body(Some("application/json"), body.as_bytes());
                    self.shared.metrics.record(
                        self.state.worker,
                        metrics::Route::Invalid,
                        e.status,
                        started.elapsed(),
                    );
                    let here = (buf.len() - done.used) as u64;
                    done.used = buf.len();
                    match e.skip.map(|skip| skip.saturating_sub(here)) {
                        Some(left) if left > 0 && left <= limits::DISCARD_MAX => {
                            self.discard = left;
                        }
                        _ => done.close = Some(Close::AfterReply),
                    }
                }
            }
        }
        done
    }

    fn min_total(&self) -> usize {
        self.min_total
    }

    fn handle(&self) -> &ClientHandle {
        &self.state.handle
    }

    /// A request head and the largest body, plus the reads of one turn.
    fn input_limit(&self, server: &Server) -> usize {
        let body = server
            .config
            .num(larder_commands::config::Param::HttpMaxBody)
            .max(0) as usize;
        body + Limits::default().max_head
            + crate::conn::READ_CHUNK * (crate::conn::READS_PER_TURN + 1)
    }

    fn durability_error(&self, reason: &str) -> Vec<u8> {
        let body = serde_json::json!({
            "error": format!("MISCONF Errors writing to the AOF file: {reason}")
        })
        .to_string();
        let mut out = Vec::new();
        Response::start(&mut out, 503, false, false)
            .body(Some("application/json"), body.as_bytes());
        out
    }
}

/// Standard base64 with padding (RFC 4648 §4), as JSON carries bytes that are not UTF-8.
pub fn base64_encode(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// The bytes of standard base64 text; `None` when it is not valid base64.
pub fn base64_decode(text: &str) -> Option<Vec<u8>> {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.decode(text).ok()
}

/// An entity tag for a version: `"<version>"`.
pub fn etag(version: u64) -> String {
    format!("\"{version}\"")
}

/// What an `If-Match` or `If-None-Match` header lists.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Tags {
    /// `*`: any current representation.
    Any,
    /// The versions named (weak tags compare as strong ones).
    Versions(Vec<u64>),
}

/// Parses an `If-Match` / `If-None-Match` value; `None` when it names no version larder
/// could have given (the condition then cannot hold).
pub fn parse_tags(v: &[u8]) -> Option<Tags> {
    let v = std::str::from_utf8(v).ok()?.trim();
    if v == "*" {
        return Some(Tags::Any);
    }
    let mut out = Vec::new();
    for t in v.split(',') {
        let t = t.trim();
        let t = t.strip_prefix("W/").unwrap_or(t);
        let t = t.trim_matches('"');
        if let Ok(n) = t.parse::<u64>() {
            out.push(n);
        }
    }
    Some(Tags::Versions(out))
}
