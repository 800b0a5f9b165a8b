//! The command API of the Upstash REST protocol, so that Upstash's SDKs work unchanged:
//!
//! - `POST /` with a JSON array (`["SET","k","v","EX",100]`): one command, answered
//!   `{"result": ...}`, or `{"error": "ERR ..."}` with `400`.
//! - `GET|POST|PUT /{command}/{arg}/...`: each path segment percent-decoded is one
//!   argument; a POST or PUT body, when not empty, is one more, raw; then each query parameter
//!   (but `_token`) as its name and, when not empty, its value (`/set/k?EX=100`).
//! - `POST /pipeline` with an array of commands: `[{"result": ...}, {"error": ...}]`, in
//!   order, errors in place.
//! - `POST /multi-exec`: the commands as one transaction (MULTI, each queued, EXEC, through
//!   the executor as for any client), answered as a pipeline; a command rejected while queued
//!   aborts the whole, as Redis's EXECABORT, with `400`.
//!
//! Replies are RESP2's shapes in JSON ([`reply`]). Every command runs through the executor as
//! a RESP client's would ([`Cx::command`]). A request is stateless: it starts and ends in
//! database 0 with no transaction or watched key on the connection, and commands that only
//! make sense on a connection of one's own (subscriptions, MONITOR, MULTI outside
//! `/multi-exec`, HELLO, RESET, ...) are refused.

use std::borrow::Cow;
use std::sync::atomic::Ordering;

use larder_http::{path_segments, percent_decode, Method, Query};
use larder_resp::Frame;
use serde_json::Value;

use super::kv::method_not_allowed;
use super::{Action, Cx};

mod reply;
#[cfg(test)]
mod tests;

/// Most commands one `/pipeline` or `/multi-exec` request may carry.
pub const MAX_BATCH: usize = 10_000;

/// One command's arguments, borrowed from the request where they can be.
type Argv<'a> = Vec<Cow<'a, [u8]>>;

/// Serves `POST /`, `/pipeline`, `/multi-exec` and the path form `/{command}/{arg}...`.
pub fn serve(cx: &mut Cx<'_, '_>) -> Action {
    let base64 = match encoding(cx) {
        Ok(b) => b,
        Err(msg) => return cx.error(400, &msg),
    };
    reset(cx);
    let segments: Vec<&str> = path_segments(cx.req.path).collect();
    let action = match segments.as_slice() {
        [""] => json_endpoint(cx, |cx, body| single(cx, body, base64)),
        ["pipeline"] => json_endpoint(cx, |cx, body| pipeline(cx, body, base64)),
        ["multi-exec"] => json_endpoint(cx, |cx, body| multi_exec(cx, body, base64)),
        _ => path_form(cx, &segments, base64),
    };
    reset(cx);
    action
}

/// Whether replies are base64 (`Upstash-Encoding: base64`); an error for an encoding or
/// response format (`Upstash-Response-Format`) other than those the door speaks.
fn encoding(cx: &Cx<'_, '_>) -> Result<bool, String> {
    if let Some(format) = cx.req.header("upstash-response-format") {
        if !format.trim_ascii().eq_ignore_ascii_case(b"json") {
            return Err(format!(
                "ERR unsupported Upstash-Response-Format '{}': only json",
                String::from_utf8_lossy(format)
            ));
        }
    }
    match cx.req.header("upstash-encoding").map(<[u8]>::trim_ascii) {
        None => Ok(false),
        Some(e) if e.eq_ignore_ascii_case(b"base64") => Ok(true),
        Some(e) => Err(format!(
            "ERR unsupported Upstash-Encoding '{}': only base64",
            String::from_utf8_lossy(e)
        )),
    }
}

/// Leaves the connection as a new request expects it: database 0, no transaction, no
/// watched keys.
fn reset(cx: &mut Cx<'_, '_>) {
    cx.state.db = 0;
    cx.state.handle.db.store(0, Ordering::Relaxed);
    cx.state.multi = None;
    cx.state.watched.clear();
}

/// The endpoints that take a JSON body: POST (or PUT) only, the body parsed before `f`.
fn json_endpoint(cx: &mut Cx<'_, '_>, f: impl FnOnce(&mut Cx<'_, '_>, &Value) -> Action) -> Action {
    if !matches!(cx.req.method, Method::Post | Method::Put) {
        return method_not_allowed(cx, "POST, PUT");
    }
    match serde_json::from_slice::<Value>(&cx.req.body) {
        Ok(body) => f(cx, &body),
        Err(e) => cx.error(400, &format!("ERR the body is not valid JSON: {e}")),
    }
}

/// A command given as a JSON array: its arguments, strings as their UTF-8 bytes and numbers
/// and booleans as their text. `what` names it in errors.
fn json_command<'v>(value: &'v Value, what: &str) -> Result<Argv<'v>, String> {
    let Value::Array(items) = value else {
        return Err(format!("ERR {what} must be a JSON array of arguments"));
    };
    if items.is_empty() {
        return Err(format!("ERR {what} is empty"));
    }
    items
        .iter()
        .enumerate()
        .map(|(i, v)| match v {
            Value::String(s) => Ok(Cow::Borrowed(s.as_bytes())),
            Value::Number(n) => Ok(Cow::Owned(n.to_string().into_bytes())),
            Value::Bool(b) => Ok(Cow::Owned(b.to_string().into_bytes())),
            other => Err(format!(
                "ERR argument {} of {what} is {}: arguments are strings, numbers or booleans",
                i + 1,
                kind(other)
            )),
        })
        .collect()
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The commands of a `/pipeline` or `/multi-exec` body.
fn json_batch(body: &Value) -> Result<Vec<Argv<'_>>, (u16, String)> {
    let Value::Array(commands) = body else {
        return Err((
            400,
            "ERR the body must be a JSON array of commands, each an array".into(),
        ));
    };
    if commands.len() > MAX_BATCH {
        return Err((
            413,
            format!(
                "ERR {} commands in one request: at most {MAX_BATCH}",
                commands.len()
            ),
        ));
    }
    commands
        .iter()
        .enumerate()
        .map(|(i, c)| json_command(c, &format!("command {}", i + 1)).map_err(|e| (400, e)))
        .collect()
}

/// `POST /`.
fn single(cx: &mut Cx<'_, '_>, body: &Value, base64: bool) -> Action {
    match json_command(body, "the command") {
        Ok(argv) => answer(cx, &argv, base64),
        Err(e) => cx.error(400, &e),
    }
}

/// `/{command}/{arg}/...`.
fn path_form(cx: &mut Cx<'_, '_>, segments: &[&str], base64: bool) -> Action {
    // HEAD must change nothing, and any command may: it is refused rather than run.
    if !matches!(cx.req.method, Method::Get | Method::Post | Method::Put) {
        return method_not_allowed(cx, "GET, POST, PUT");
    }
    let mut argv: Argv<'_> = Vec::with_capacity(segments.len() + 1);
    for s in segments {
        match percent_decode(s, false) {
            Some(arg) => argv.push(arg),
            None => return cx.error(400, "ERR malformed percent-encoding in the path"),
        }
    }
    let req = cx.req;
    if matches!(req.method, Method::Post | Method::Put) && !req.body.is_empty() {
        argv.push(Cow::Borrowed(&req.body));
    }
    for (name, value) in Query(req.query).pairs() {
        if name.as_ref() == b"_token" {
            continue;
        }
        argv.push(name);
        if !value.is_empty() {
            argv.push(value);
        }
    }
    answer(cx, &argv, base64)
}

/// Runs one command and answers `{"result": ...}`, or `{"error": ...}` with `400` (`406`
/// when the reply is binary and base64 was not asked for: the command has run).
fn answer(cx: &mut Cx<'_, '_>, argv: &[Cow<'_, [u8]>], base64: bool) -> Action {
    match run(cx, argv) {
        Frame::Error(e) => cx.error(400, &e),
        frame => match reply::to_json(frame, base64) {
            Ok(v) => cx.json(200, &serde_json::json!({ "result": v })),
            Err(reply::NotUtf8) => cx.error(406, &not_utf8(argv)),
        },
    }
}

/// `POST /pipeline`: every command in order, each answered in place.
fn pipeline(cx: &mut Cx<'_, '_>, body: &Value, base64: bool) -> Action {
    let commands = match json_batch(body) {
        Ok(c) => c,
        Err((status, e)) => return cx.error(status, &e),
    };
    let results: Vec<Value> = commands
        .iter()
        .map(|argv| {
            let frame = run(cx, argv);
            entry(frame, argv, base64)
        })
        .collect();
    cx.json(200, &Value::Array(results))
}

/// `POST /multi-exec`: MULTI, every command queued, EXEC. A command rejected while queued
/// (unknown, wrong arity, refused by the door) aborts the transaction: nothing runs.
fn multi_exec(cx: &mut Cx<'_, '_>, body: &Value, base64: bool) -> Action {
    let commands = match json_batch(body) {
        Ok(c) => c,
        Err((status, e)) => return cx.error(status, &e),
    };
    if let Frame::Error(e) = cx.command(&[b"MULTI"], false) {
        return cx.error(400, &e);
    }
    let mut first_error = None;
    for (i, argv) in commands.iter().enumerate() {
        let error = match refused(argv) {
            Some(e) => e,
            None => match run(cx, argv) {
                Frame::Simple(s) if s == "QUEUED" => continue,
                Frame::Error(e) => e,
                other => format!("ERR unexpected reply while queueing: {other:?}"),
            },
        };
        first_error.get_or_insert_with(|| {
            format!(
                "{} Command {} ({}): {error}",
                larder_commands::transaction::EXECABORT,
                i + 1,
                name(argv)
            )
        });
    }
    if let Some(e) = first_error {
        cx.command(&[b"DISCARD"], false);
        return cx.error(400, &e);
    }
    match cx.command(&[b"EXEC"], false) {
        Frame::Array(replies) => {
            let results: Vec<Value> = replies
                .into_iter()
                .zip(&commands)
                .map(|(frame, argv)| entry(frame, argv, base64))
                .collect();
            cx.json(200, &Value::Array(results))
        }
        Frame::Error(e) => cx.error(400, &e),
        other => cx.error(500, &format!("ERR unexpected reply to EXEC: {other:?}")),
    }
}

/// One command's entry in a pipeline's or transaction's answer.
fn entry(frame: Frame, argv: &[Cow<'_, [u8]>], base64: bool) -> Value {
    match frame {
        Frame::Error(e) => serde_json::json!({ "error": e }),
        frame => match reply::to_json(frame, base64) {
            Ok(v) => serde_json::json!({ "result": v }),
            Err(reply::NotUtf8) => serde_json::json!({ "error": not_utf8(argv) }),
        },
    }
}

fn not_utf8(argv: &[Cow<'_, [u8]>]) -> String {
    format!(
        "ERR the reply to {} holds bytes that are not UTF-8: send the header \
         Upstash-Encoding: base64 to read binary values",
        name(argv)
    )
}

/// The command's name as errors show it.
fn name(argv: &[Cow<'_, [u8]>]) -> String {
    argv.first()
        .map(|n| String::from_utf8_lossy(n).to_uppercase())
        .unwrap_or_default()
}

/// Runs one command through the executor, unless the door refuses it.
fn run(cx: &mut Cx<'_, '_>, argv: &[Cow<'_, [u8]>]) -> Frame {
    if let Some(e) = refused(argv) {
        return Frame::Error(e);
    }
    let args: Vec<&[u8]> = argv.iter().map(AsRef::as_ref).collect();
    cx.command(&args, false)
}

/// Why the command API refuses a command: it needs a connection that outlives one request.
fn refused(argv: &[Cow<'_, [u8]>]) -> Option<String> {
    let name = argv.first()?.to_ascii_lowercase();
    let sub = || {
        argv.get(1)
            .map(|s| s.to_ascii_lowercase())
            .unwrap_or_default()
    };
    let upper = String::from_utf8_lossy(&name).to_uppercase();
    match name.as_slice() {
        b"subscribe" | b"psubscribe" | b"ssubscribe" | b"unsubscribe" | b"punsubscribe"
        | b"sunsubscribe" => Some(format!(
            "ERR {upper} is not available on the command API: stream channels with \
             GET /v1/subscribe (Server-Sent Events)"
        )),
        b"multi" | b"exec" | b"discard" | b"watch" | b"unwatch" => Some(format!(
            "ERR {upper} is not available on the command API: send a transaction's commands \
             to POST /multi-exec"
        )),
        b"monitor" | b"reset" | b"quit" | b"hello" => Some(format!(
            "ERR {upper} is not available on the command API: each request stands alone"
        )),
        b"client"
            if matches!(
                sub().as_slice(),
                b"reply" | b"tracking" | b"caching" | b"no-evict" | b"no-touch"
            ) =>
        {
            Some(format!(
                "ERR CLIENT {} is not available on the command API: each request stands alone",
                String::from_utf8_lossy(&sub()).to_uppercase()
            ))
        }
        _ => None,
    }
}
