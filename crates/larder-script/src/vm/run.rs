//! One run of a script or function: the host lent to the `redis` functions, KEYS/ARGV,
//! and turning the result or the error into the client's reply.

use larder_resp::{Protocol, ReplyBuf};
use mlua::Value;

use super::{Abort, Origin};
use crate::convert::{self, format_g};
use crate::errors::{self, error_table_text};
use crate::sandbox::{Callee, Sandbox};

/// What a script reaches the server through; implemented by larder-commands per run.
pub trait Host {
    /// redis.call / redis.pcall: run `argv` and write exactly one reply into `out`
    /// (encoded in `out.proto`: the script's protocol, RESP2 unless the script called
    /// redis.setresp(3)). An error is written as an error reply (`-ERR ...`) like any
    /// other reply; the vm turns it into Redis's error table and raises it for redis.call.
    /// Checks Redis makes before running a script's command (unknown command, arity,
    /// "not allowed from script", writes in a read-only script, OOM) are the host's and
    /// come back as error replies too.
    fn call(&mut self, argv: &[&[u8]], out: &mut ReplyBuf) -> Result<(), Abort>;
    /// Called every `Vm::TICK_INSTRUCTIONS` Lua instructions (a count hook).
    fn tick(&mut self) -> Result<(), Abort>;
    /// redis.log(level, msg); level is Redis's (0 debug .. 3 warning), already checked.
    fn log(&mut self, level: u8, msg: &str);
    /// redis.set_repl(flags) with flags already checked (Redis's REPL_* bits).
    fn set_repl(&mut self, flags: u8);
}

/// Runs `f` (an EVAL chunk, or a function's callback) in `sb` and writes its reply.
///
/// `host` is lent to the `redis` functions through [`Sandbox::host`] for the length of the
/// run; everything else the run uses is made once per interpreter.
pub fn run(
    sb: &Sandbox,
    f: Callee<'_>,
    origin: Origin<'_>,
    keys: &[&[u8]],
    args: &[&[u8]],
    host: &mut dyn Host,
    out: &mut ReplyBuf,
) -> Result<(), Abort> {
    // Only an error names the script: an EVAL script's hex is written then.
    let funcname = || match origin {
        Origin::Eval { id } => std::borrow::Cow::Owned(crate::vm::script_hex(id)),
        Origin::Function { name } => std::borrow::Cow::Borrowed(name),
    };
    {
        let mut state = sb.shared.borrow_mut();
        state.running = true;
        state.proto = Protocol::Resp2;
        state.abort = None;
        state.abort_place = None;
    }
    let start_len = out.buf.len();
    sb.lift_cap();
    // The host is reachable while the script runs, not while its result is turned into the
    // reply: Lua code a metamethod runs there reaches nothing (a command that needed a retry
    // then would leave a reply behind).
    let outcome = sb.host.lend(host, || sb.enter(f, keys, args));
    let result = (|| -> mlua::Result<()> {
        let (ok, value) = outcome?;
        let state = sb.shared.borrow();
        if state.abort == Some(Abort::Retry) {
            return Ok(());
        }
        let proto = state.proto;
        drop(state);
        if ok {
            convert::lua_to_reply(&sb.lua, value, proto, out, &sb.field_names)?;
        } else {
            write_error(value, &funcname(), out);
        }
        Ok(())
    })();
    sb.tidy_tables();
    sb.restore_cap();
    let (abort, place) = {
        let mut state = sb.shared.borrow_mut();
        state.running = false;
        (state.abort.take(), state.abort_place.take())
    };
    if let Some(a) = abort {
        // The hook that raised on every instruction goes; the run's own comes back.
        let _ = sb.install_tick_hook();
        if a == Abort::Retry {
            // Nothing of an abandoned run reaches the client.
            out.truncate(start_len);
            return Err(Abort::Retry);
        }
        // The error may have been raised again on its way out of the script: the reply is
        // the killed error, where the handler last saw it.
        let place = place.as_ref().map(|(s, l)| (s.as_str(), l.as_str()));
        out.truncate(start_len);
        out.error(&errors::run_failed(
            &error_table_text(errors::KILLED),
            place,
            &funcname(),
        ));
        return Err(a);
    }
    if let Err(e) = result {
        let msg = match e {
            mlua::Error::MemoryError(m) => m,
            other => other.to_string(),
        };
        out.error(&errors::run_failed_plain(&msg, &funcname()));
    }
    if sb.lua.used_memory() > memory_high_water(sb) {
        // A script that ran into the memory cap leaves its garbage: collect it now so the
        // next run (or compile) has room.
        sb.collect_garbage();
    }
    Ok(())
}

/// Past this many bytes after a run, the interpreter collects its garbage at once: half
/// its memory cap.
fn memory_high_water(sb: &Sandbox) -> usize {
    match sb.memory_limit_bytes {
        0 => usize::MAX,
        n => n / 2,
    }
}

/// Writes the reply for a run that raised `err` (the error handler's table, or whatever
/// reached the top when the handler could not run).
fn write_error(err: Value, funcname: &str, out: &mut ReplyBuf) {
    let Value::Table(t) = err else {
        let msg = match &err {
            Value::String(s) => s.to_string_lossy(),
            _ => "execution failure".to_string(),
        };
        out.error(&errors::run_failed_plain(&msg, funcname));
        return;
    };
    let field = |name: &str| -> Option<String> {
        match t.get::<Value>(name).ok()? {
            Value::String(s) => Some(s.to_string_lossy()),
            Value::Number(n) => Some(format_g(n, 14)),
            Value::Integer(n) => Some(n.to_string()),
            _ => None,
        }
    };
    let Some(msg) = field("err") else {
        out.error(&errors::run_failed_plain("execution failure", funcname));
        return;
    };
    let source = field("source");
    let line = field("line");
    let place = match (&source, &line) {
        (Some(s), Some(l)) => Some((s.as_str(), l.as_str())),
        _ => None,
    };
    out.error(&format!("-{}", errors::run_failed(&msg, place, funcname)));
}
