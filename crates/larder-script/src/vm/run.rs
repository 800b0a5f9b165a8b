//! One run of a script or function: the per-run host functions (a cheap mlua `scope`), the
//! count hook, KEYS/ARGV, and turning the result or the error into the client's reply.

use std::cell::RefCell;

use larder_resp::{Protocol, ReplyBuf};
use mlua::{Function, HookTriggers, Lua, MultiValue, Table, Value, VmState};

use super::{Abort, Origin, Vm};
use crate::convert::{self, error_table, format_g, reply_to_lua};
use crate::errors::{self, error_table_text};
use crate::sandbox::{Flavor, Sandbox, Shared};

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

/// Buffers kept from run to run so redis.call allocates only its argv.
#[derive(Default)]
pub struct Reuse {
    /// The reply of the command being called.
    reply: ReplyBuf,
    /// The bytes of the numbers among a call's arguments.
    numbers: Vec<u8>,
}

/// The error a run raises once the host has asked it to end. The error handler replaces it
/// with Redis's "killed" table.
fn aborted() -> mlua::Error {
    mlua::Error::runtime(errors::KILLED)
}

/// From now on every instruction raises: no `pcall` can keep the script going.
fn raise_on_every_instruction(lua: &Lua) -> mlua::Result<()> {
    lua.set_hook(HookTriggers::new().every_nth_instruction(1), |_, _| {
        Err(aborted())
    })
}

fn record_abort(lua: &Lua, shared: &Shared, a: Abort) -> mlua::Error {
    shared.borrow_mut().abort = Some(a);
    if let Err(e) = raise_on_every_instruction(lua) {
        return e;
    }
    aborted()
}

/// Runs `f` (an EVAL chunk, or a function's callback) in `sb` and writes its reply.
#[allow(clippy::too_many_arguments)]
pub fn run(
    sb: &Sandbox,
    reuse: &mut Reuse,
    f: &Function,
    origin: Origin<'_>,
    keys: &[&[u8]],
    args: &[&[u8]],
    host: &mut dyn Host,
    out: &mut ReplyBuf,
) -> Result<(), Abort> {
    let funcname = match origin {
        Origin::Eval { sha } => sha,
        Origin::Function { name } => name,
    };
    {
        let mut state = sb.shared.borrow_mut();
        state.running = true;
        state.proto = Protocol::Resp2;
        state.abort = None;
    }
    let ctx = RefCell::new((host, reuse));
    let result = sb.lua.scope(|scope| {
        let lua = &sb.lua;
        let shared = sb.shared.clone();
        let ctx = &ctx;
        let call = scope.create_function(move |lua, argv: MultiValue| {
            let mut guard = ctx.borrow_mut();
            let (host, reuse) = &mut *guard;
            redis_call(lua, &shared, &mut **host, reuse, argv)
        })?;
        let shared = sb.shared.clone();
        let ctl = scope.create_function(move |lua, (op, a, b): (u8, Value, Value)| {
            let mut guard = ctx.borrow_mut();
            let host = &mut *guard.0;
            match op {
                0 => host.tick().map_err(|a| record_abort(lua, &shared, a)),
                1 => {
                    let level = match a {
                        Value::Integer(n) => n as u8,
                        Value::Number(n) => n as u8,
                        _ => 0,
                    };
                    if let Value::String(s) = b {
                        host.log(level, &s.to_string_lossy());
                    }
                    Ok(())
                }
                _ => {
                    if let Value::Integer(n) = a {
                        host.set_repl(n as u8);
                    } else if let Value::Number(n) = a {
                        host.set_repl(n as u8);
                    }
                    Ok(())
                }
            }
        })?;
        let defaults = (
            sb.slot.raw_get::<Value>("call")?,
            sb.slot.raw_get::<Value>("ctl")?,
        );
        sb.slot.raw_set("call", call)?;
        sb.slot.raw_set("ctl", ctl.clone())?;
        let outcome = start(sb, lua, f, ctl, keys, args);
        lua.remove_hook();
        sb.slot.raw_set("call", defaults.0)?;
        sb.slot.raw_set("ctl", defaults.1)?;
        let (ok, value) = outcome?;
        if sb.shared.borrow().abort == Some(Abort::Retry) {
            return Ok(());
        }
        let proto = sb.shared.borrow().proto;
        if ok {
            convert::lua_to_reply(value, proto, out)?;
        } else {
            write_error(value, funcname, out);
        }
        Ok(())
    });
    let abort = {
        let mut state = sb.shared.borrow_mut();
        state.running = false;
        state.abort.take()
    };
    match abort {
        Some(Abort::Retry) => return Err(Abort::Retry),
        Some(a) => {
            if result.is_err() {
                out.error(&errors::run_failed(
                    &error_table_text(errors::KILLED),
                    None,
                    funcname,
                ));
            }
            return Err(a);
        }
        None => {}
    }
    if let Err(e) = result {
        let msg = match e {
            mlua::Error::MemoryError(m) => m,
            other => other.to_string(),
        };
        out.error(&errors::run_failed_plain(&msg, funcname));
    }
    Ok(())
}

/// Sets KEYS and ARGV (EVAL) or builds the function's arguments, installs the count hook
/// and runs `f` under the error handler.
fn start(
    sb: &Sandbox,
    lua: &Lua,
    f: &Function,
    ctl: Function,
    keys: &[&[u8]],
    args: &[&[u8]],
) -> mlua::Result<(bool, Value)> {
    let keys_t = strings_table(lua, keys)?;
    let args_t = strings_table(lua, args)?;
    let shared = sb.shared.clone();
    lua.set_hook(
        HookTriggers::new().every_nth_instruction(Vm::TICK_INSTRUCTIONS),
        move |_, _| {
            if shared.borrow().abort.is_some() {
                return Err(aborted());
            }
            ctl.call::<()>(0)?;
            Ok(VmState::Continue)
        },
    )?;
    match sb.flavor {
        Flavor::Eval => {
            sb.readonly.call::<()>((sb.globals.clone(), false))?;
            let set = sb
                .globals
                .raw_set("KEYS", keys_t)
                .and_then(|()| sb.globals.raw_set("ARGV", args_t));
            sb.readonly.call::<()>((sb.globals.clone(), true))?;
            set?;
            sb.runner.call((f, &sb.handler))
        }
        Flavor::Function => sb.runner.call((f, &sb.handler, keys_t, args_t)),
    }
}

fn strings_table(lua: &Lua, items: &[&[u8]]) -> mlua::Result<Table> {
    let t = lua.create_table_with_capacity(items.len(), 0)?;
    for (i, s) in items.iter().enumerate() {
        t.raw_set(i + 1, lua.create_string(s)?)?;
    }
    Ok(t)
}

/// redis.call / redis.pcall's per-run half: `(reply, 0)`, `(error table, 1)` for a
/// command's error reply, `(error table, 2)` for bad arguments.
fn redis_call(
    lua: &Lua,
    shared: &Shared,
    host: &mut dyn Host,
    reuse: &mut Reuse,
    argv: MultiValue,
) -> mlua::Result<(Value, u8)> {
    let proto = {
        let state = shared.borrow();
        if state.abort.is_some() {
            return Err(aborted());
        }
        state.proto
    };
    if argv.is_empty() {
        let t = error_table(lua, &error_table_text(errors::NO_ARGUMENTS))?;
        return Ok((Value::Table(t), 2));
    }
    // Numbers are formatted into one buffer first; strings are borrowed.
    reuse.numbers.clear();
    let mut number_ends = Vec::new();
    for v in argv.iter() {
        match v {
            Value::String(_) => {}
            Value::Number(n) => {
                reuse.numbers.extend_from_slice(format_g(*n, 17).as_bytes());
                number_ends.push(reuse.numbers.len());
            }
            Value::Integer(n) => {
                reuse.numbers.extend_from_slice(n.to_string().as_bytes());
                number_ends.push(reuse.numbers.len());
            }
            _ => {
                let t = error_table(lua, &error_table_text(errors::BAD_ARGUMENT))?;
                return Ok((Value::Table(t), 2));
            }
        }
    }
    let strings: Vec<_> = argv
        .iter()
        .filter_map(|v| match v {
            Value::String(s) => Some(s.as_bytes()),
            _ => None,
        })
        .collect();
    let mut args: Vec<&[u8]> = Vec::with_capacity(argv.len());
    let (mut si, mut ni, mut start) = (0, 0, 0);
    for v in argv.iter() {
        if matches!(v, Value::String(_)) {
            args.push(&strings[si]);
            si += 1;
        } else {
            let end = number_ends[ni];
            args.push(&reuse.numbers[start..end]);
            start = end;
            ni += 1;
        }
    }
    reuse.reply.buf.clear();
    reuse.reply.attached.clear();
    reuse.reply.proto = proto;
    let called = host.call(&args, &mut reuse.reply);
    drop(args);
    drop(strings);
    called.map_err(|a| record_abort(lua, shared, a))?;
    let (value, is_error) = if reuse.reply.attached.is_empty() {
        reply_to_lua(lua, &reuse.reply.buf)?
    } else {
        reply_to_lua(lua, &reuse.reply.attached.splice(&reuse.reply.buf))?
    };
    Ok((value, u8::from(is_error)))
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
