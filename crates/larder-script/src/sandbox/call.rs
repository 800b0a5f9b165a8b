//! The functions of the `redis` table that reach the host (redis.call, redis.pcall,
//! redis.log, redis.set_repl) and the count hook.
//!
//! They are made once per interpreter. The host is reached through the [`HostSlot`], which
//! `vm` fills with the run's host for the length of a run: these functions leave what the
//! host needs in the run's [`Exchange`] (the argv bytes, the log message) and call it with
//! an [`Op`]; the host writes the command's reply into the exchange's reply buffer, which
//! is reused from call to call, and redis.call decodes it straight into Lua values.

use std::cell::{Cell, RefCell};
use std::io::Write;
use std::ptr::NonNull;
use std::rc::Rc;

use larder_resp::ReplyBuf;
use mlua::state::RawLua;
use mlua::{ffi, FromLuaMulti, Function, HookTriggers, Lua, MultiValue, Value, Variadic, VmState};

use super::api::{raise, to_lua_bytes, to_number, Raise};
use super::Shared;
use crate::convert::{error_table, format_g, reply_to_lua};
use crate::errors::{self, error_table_text};
use crate::vm::{Abort, Host};

/// Where the `redis` functions find the run's host: empty outside a run.
pub type HostSlot = Rc<HostCell>;

/// The run's host, lent while a script runs ([`HostCell::lend`]).
///
/// A plain pointer rather than a Lua function made per run in an `mlua` scope: reaching the
/// host is then a call, not a second trip through Lua for every redis.call and every tick,
/// and a run makes no function to be collected.
#[derive(Default)]
pub struct HostCell {
    host: Cell<Option<NonNull<dyn Host + 'static>>>,
    /// The host is running a request: a request that reaches Lua again must not reach it.
    busy: Cell<bool>,
}

impl HostCell {
    /// Makes `host` reachable until `f` returns (or unwinds), then what was there before
    /// (nothing, unless a run was started from inside another's request).
    #[allow(unsafe_code)]
    pub fn lend<R>(&self, host: &mut dyn Host, f: impl FnOnce() -> R) -> R {
        struct Restore<'a> {
            cell: &'a HostCell,
            host: Option<NonNull<dyn Host + 'static>>,
            busy: bool,
        }
        impl Drop for Restore<'_> {
            fn drop(&mut self) {
                self.cell.host.set(self.host);
                self.cell.busy.set(self.busy);
            }
        }
        let ptr = NonNull::from(host);
        // SAFETY: the lifetime is erased only while `host` is borrowed here: `Restore` takes
        // the pointer out of the cell before this function returns or unwinds, and
        // `reach_host`, the only reader, uses it within one call.
        let ptr: NonNull<dyn Host + 'static> = unsafe { std::mem::transmute(ptr) };
        let _restore = Restore {
            cell: self,
            host: self.host.replace(Some(ptr)),
            busy: self.busy.replace(false),
        };
        f()
    }
}

/// What the host is asked to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// The count hook fired.
    Tick,
    /// Run the command in [`Exchange::argv`], its reply into [`Exchange::reply`].
    Call,
    /// redis.log: [`Exchange::level`], the message in [`Exchange::argv`].
    Log,
    /// redis.set_repl: [`Exchange::flags`].
    Repl,
}

/// What the `redis` functions and the host pass each other, kept from call to call so that
/// a redis.call allocates nothing once the buffers have grown.
#[derive(Default, Debug)]
pub struct Exchange {
    /// The arguments of the command, one after the other (or redis.log's message).
    pub argv: Vec<u8>,
    /// Where each argument ends in `argv`.
    pub ends: Vec<usize>,
    /// The command's reply, in the script's protocol.
    pub reply: ReplyBuf,
    pub level: u8,
    pub flags: u8,
}

/// Arguments up to this many are handed to the host from the stack.
const INLINE_ARGS: usize = 16;

impl Exchange {
    /// Runs the command in `argv` on `host`, its reply into `reply`.
    pub fn call(&mut self, host: &mut dyn Host) -> Result<(), Abort> {
        let Exchange {
            argv, ends, reply, ..
        } = self;
        let mut start = 0;
        let mut slice = |end: usize| {
            let s = &argv[start..end];
            start = end;
            s
        };
        if ends.len() <= INLINE_ARGS {
            let mut inline: [&[u8]; INLINE_ARGS] = [&[]; INLINE_ARGS];
            for (i, &end) in ends.iter().enumerate() {
                inline[i] = slice(end);
            }
            host.call(&inline[..ends.len()], reply)
        } else {
            let all: Vec<&[u8]> = ends.iter().map(|&end| slice(end)).collect();
            host.call(&all, reply)
        }
    }
}

/// Appends a number argument as Redis's `luaArgsToRedisArgv` writes it (`%.17g`, which
/// writes integers below 1e17 in full and bigger ones with an exponent). `integer` is the
/// value when Lua's number is exactly an `i64` (as `mlua` reads numbers: not `-0`).
fn push_number(argv: &mut Vec<u8>, n: f64, integer: Option<i64>) {
    match integer {
        Some(i) if i.unsigned_abs() < 100_000_000_000_000_000 => {
            let _ = write!(argv, "{i}");
        }
        _ => argv.extend_from_slice(format_g(n, 17).as_bytes()),
    }
}

/// `n` as an `i64` if it is exactly one, `-0` excepted: `mlua`'s rule for `Value::Integer`
/// (which also leaves out -2^63; either way a magnitude of 1e17 or more is written with
/// `%.17g`, so the text is the same).
fn exact_integer(n: f64) -> Option<i64> {
    // 2^63 is not an i64; -2^63 is.
    if !(-9_223_372_036_854_775_808.0..9_223_372_036_854_775_808.0).contains(&n) {
        return None;
    }
    let i = n as i64;
    ((i as f64).to_bits() == n.to_bits()).then_some(i)
}

/// Reads redis.call's arguments as Redis's `luaArgsToRedisArgv`: strings as they are,
/// numbers as `%.17g`; the error for anything else or no argument at all. The arguments'
/// bytes end up one after the other in `argv`, each one's end in `ends`.
fn load_values(
    values: &MultiValue,
    argv: &mut Vec<u8>,
    ends: &mut Vec<usize>,
) -> Result<(), &'static str> {
    argv.clear();
    ends.clear();
    if values.is_empty() {
        return Err(errors::NO_ARGUMENTS);
    }
    for v in values {
        match v {
            Value::String(s) => argv.extend_from_slice(&s.as_bytes()),
            Value::Integer(i) => push_number(argv, *i as f64, Some(*i)),
            Value::Number(n) => push_number(argv, *n, exact_integer(*n)),
            _ => return Err(errors::BAD_ARGUMENT),
        }
        ends.push(argv.len());
    }
    Ok(())
}

/// A scratch buffer bigger than this (after a call with large arguments) is let go.
const SCRATCH_KEPT_BYTES: usize = 64 * 1024;

thread_local! {
    /// Where [`StackArgs`] reads redis.call's arguments; swapped with the run's exchange.
    static SCRATCH: RefCell<(Vec<u8>, Vec<usize>)> = const { RefCell::new((Vec::new(), Vec::new())) };
}

/// redis.call's arguments, read straight off the Lua stack into this thread's [`SCRATCH`]:
/// no `Value` (and no registry handle to make and release) per argument. The result of
/// the read: the error text for no argument or one of another type.
struct StackArgs(Result<(), &'static str>);

impl FromLuaMulti for StackArgs {
    fn from_lua_multi(values: MultiValue, _: &Lua) -> mlua::Result<Self> {
        Ok(StackArgs(SCRATCH.with(|s| {
            let (argv, ends) = &mut *s.borrow_mut();
            load_values(&values, argv, ends)
        })))
    }

    /// What `mlua` calls for a Rust function's arguments: the top `nargs` values of the
    /// stack of `lua`'s current state.
    #[allow(unsafe_code)]
    unsafe fn from_stack_args(
        nargs: std::ffi::c_int,
        _: usize,
        _: Option<&str>,
        lua: &RawLua,
    ) -> mlua::Result<Self> {
        let state = lua.state();
        Ok(StackArgs(SCRATCH.with(|s| {
            let (argv, ends) = &mut *s.borrow_mut();
            argv.clear();
            ends.clear();
            if nargs <= 0 {
                return Err(errors::NO_ARGUMENTS);
            }
            for idx in -nargs..0 {
                // SAFETY: `mlua` calls this with `nargs` arguments on top of `state`'s stack
                // (indices -nargs..-1); reading a value's type, a string's bytes (which Lua
                // keeps while the value is on the stack, copied out at once) or a number
                // neither changes the stack nor raises.
                unsafe {
                    match ffi::lua_type(state, idx) {
                        ffi::LUA_TSTRING => {
                            let mut len = 0;
                            let p = ffi::lua_tolstring(state, idx, &mut len);
                            argv.extend_from_slice(std::slice::from_raw_parts(p.cast::<u8>(), len));
                        }
                        ffi::LUA_TNUMBER => {
                            let n = ffi::lua_tonumber(state, idx);
                            push_number(argv, n, exact_integer(n));
                        }
                        _ => return Err(errors::BAD_ARGUMENT),
                    }
                }
                ends.push(argv.len());
            }
            Ok(())
        })))
    }
}

/// The error a run raises once the host has asked it to end. The error handler replaces it
/// with Redis's "killed" table.
pub fn aborted() -> mlua::Error {
    mlua::Error::runtime(errors::KILLED)
}

/// Asks the run's host to do `op`; outside a run, nothing. When the host ends the run (an
/// [`crate::vm::Abort`], recorded in `shared`), every instruction raises from then on and
/// this returns the error that starts it.
#[allow(unsafe_code)]
fn reach_host(lua: &Lua, host: &HostCell, shared: &Shared, op: Op) -> mlua::Result<()> {
    let Some(ptr) = host.host.get() else {
        return Ok(());
    };
    if host.busy.replace(true) {
        return Err(mlua::Error::RecursiveMutCallback);
    }
    struct Idle<'a>(&'a HostCell);
    impl Drop for Idle<'_> {
        fn drop(&mut self) {
            self.0.busy.set(false);
        }
    }
    let idle = Idle(host);
    // SAFETY: the pointer is set only while `HostCell::lend` borrows the host mutably, and
    // `busy` makes this the only reference made from it at a time.
    let host = unsafe { &mut *ptr.as_ptr() };
    let done = {
        let state = &mut *shared.borrow_mut();
        let ex = &mut state.exchange;
        match op {
            Op::Call => ex.call(host),
            Op::Tick => host.tick(),
            Op::Log => {
                host.log(ex.level, &String::from_utf8_lossy(&ex.argv));
                Ok(())
            }
            Op::Repl => {
                host.set_repl(ex.flags);
                Ok(())
            }
        }
    };
    drop(idle);
    match done {
        Ok(()) => Ok(()),
        Err(a) => {
            shared.borrow_mut().abort = Some(a);
            raise_on_every_instruction(lua)?;
            Err(aborted())
        }
    }
}

/// Installs the count hook every run has: every [`crate::vm::Vm::TICK_INSTRUCTIONS`]
/// instructions the host's `tick` runs (through the [`HostCell`]); once the host has ended
/// the run, every instruction raises.
pub fn install_tick_hook(lua: &Lua, shared: &Shared, host: &HostSlot) -> mlua::Result<()> {
    let (shared, host) = (shared.clone(), host.clone());
    lua.set_hook(
        HookTriggers::new().every_nth_instruction(crate::vm::Vm::TICK_INSTRUCTIONS),
        move |lua, _| {
            if shared.borrow().abort.is_some() {
                return Err(aborted());
            }
            reach_host(lua, &host, &shared, Op::Tick)?;
            Ok(VmState::Continue)
        },
    )
}

/// From now on every instruction raises: no `pcall` can keep the script going.
pub fn raise_on_every_instruction(lua: &Lua) -> mlua::Result<()> {
    lua.set_hook(HookTriggers::new().every_nth_instruction(1), |_, _| {
        Err(aborted())
    })
}

/// redis.call (`raising`) or redis.pcall: the reply as a Lua value; a command's error
/// reply is raised by redis.call and returned by redis.pcall, as are argument errors.
pub fn call_function(
    lua: &Lua,
    shared: Shared,
    host: HostSlot,
    raising: bool,
) -> mlua::Result<Function> {
    lua.create_function(move |lua, args: StackArgs| {
        let loaded = {
            let mut state = shared.borrow_mut();
            if !state.running {
                return Err(raise(errors::CALL_OUTSIDE_RUN));
            }
            if state.abort.is_some() {
                return Err(aborted());
            }
            let proto = state.proto;
            let ex = &mut state.exchange;
            ex.reply.buf.clear();
            ex.reply.attached.clear();
            ex.reply.proto = proto;
            SCRATCH.with(|s| {
                let (argv, ends) = &mut *s.borrow_mut();
                std::mem::swap(&mut ex.argv, argv);
                std::mem::swap(&mut ex.ends, ends);
                // The exchange keeps one large buffer, not two.
                if argv.capacity() > SCRATCH_KEPT_BYTES {
                    *argv = Vec::new();
                }
            });
            args.0
        };
        if let Err(msg) = loaded {
            let text = error_table_text(msg);
            if raising {
                return Err(mlua::Error::external(Raise {
                    text,
                    from_command: false,
                    positioned: false,
                }));
            }
            return Ok(Value::Table(error_table(lua, &text)?));
        }
        reach_host(lua, &host, &shared, Op::Call)?;
        // Out of the shared state while Lua allocates the value, and without the memory
        // cap (see `Sandbox::lift_cap`): the value is as big as the reply, already in memory.
        let reply = std::mem::take(&mut shared.borrow_mut().exchange.reply);
        let cap = lua.set_memory_limit(0)?;
        let decoded = if reply.attached.is_empty() {
            reply_to_lua(lua, &reply.buf)
        } else {
            reply_to_lua(lua, &reply.attached.splice(&reply.buf))
        };
        lua.set_memory_limit(cap)?;
        shared.borrow_mut().exchange.reply = reply;
        let (value, is_error) = decoded?;
        if raising && is_error {
            if let Value::Table(t) = &value {
                let text: mlua::LuaString = t.raw_get("err")?;
                return Err(mlua::Error::external(Raise {
                    text: text.to_string_lossy(),
                    from_command: true,
                    positioned: false,
                }));
            }
        }
        Ok(value)
    })
}

/// redis.log(level, ...): the message is the arguments after the level that are strings
/// or numbers, separated by spaces (Redis adds the space before every argument but the
/// first message one, present or not).
pub fn log_function(lua: &Lua, shared: Shared, host: HostSlot) -> mlua::Result<Function> {
    lua.create_function(move |lua, args: Variadic<Value>| {
        if args.len() < 2 {
            return Err(raise("redis.log() requires two arguments or more."));
        }
        let Some(level) = to_number(&args[0]) else {
            return Err(raise("First argument must be a number (log level)."));
        };
        let level = level as i32;
        if !(0..=3).contains(&level) {
            return Err(raise("Invalid debug level."));
        }
        {
            let mut state = shared.borrow_mut();
            let ex = &mut state.exchange;
            ex.argv.clear();
            for (j, v) in args.iter().enumerate().skip(1) {
                if let Some(s) = to_lua_bytes(v) {
                    if j != 1 {
                        ex.argv.push(b' ');
                    }
                    ex.argv.extend_from_slice(&s);
                }
            }
            ex.level = level as u8;
        }
        reach_host(lua, &host, &shared, Op::Log)?;
        Ok(Value::Nil)
    })
}

/// Redis's `PROPAGATE_AOF | PROPAGATE_REPL`.
pub const REPL_ALL: u8 = 3;

pub fn set_repl_function(lua: &Lua, shared: Shared, host: HostSlot) -> mlua::Result<Function> {
    lua.create_function(move |lua, args: Variadic<Value>| {
        if args.len() != 1 {
            return Err(raise("redis.set_repl() requires two arguments."));
        }
        let flags = to_number(&args[0]).map_or(0, |n| n as i32);
        if flags & !i32::from(REPL_ALL) != 0 {
            return Err(raise(
                "Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL or REPL_NONE.",
            ));
        }
        shared.borrow_mut().exchange.flags = flags as u8;
        reach_host(lua, &host, &shared, Op::Repl)?;
        Ok(Value::Nil)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A host that counts its ticks.
    #[derive(Default)]
    struct Counter(usize);

    impl Host for Counter {
        fn call(&mut self, _: &[&[u8]], _: &mut ReplyBuf) -> Result<(), Abort> {
            Ok(())
        }
        fn tick(&mut self) -> Result<(), Abort> {
            self.0 += 1;
            Ok(())
        }
        fn log(&mut self, _: u8, _: &str) {}
        fn set_repl(&mut self, _: u8) {}
    }

    fn tick(cell: &HostCell) -> mlua::Result<()> {
        let lua = Lua::new();
        let shared = Shared::default();
        reach_host(&lua, cell, &shared, Op::Tick)
    }

    #[test]
    fn a_host_is_reachable_only_while_lent() {
        let cell = HostCell::default();
        let mut host = Counter::default();
        tick(&cell).expect("nobody to reach: nothing happens");
        cell.lend(&mut host, || {
            tick(&cell).expect("tick");
            tick(&cell).expect("tick");
        });
        assert!(cell.host.get().is_none());
        tick(&cell).expect("tick");
        assert_eq!(host.0, 2);
    }

    #[test]
    fn a_lend_that_unwinds_leaves_the_cell_empty() {
        let cell = HostCell::default();
        let mut host = Counter::default();
        let unwound = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            cell.lend(&mut host, || panic!("the run unwinds"));
        }));
        assert!(unwound.is_err());
        assert!(cell.host.get().is_none());
        assert!(!cell.busy.get());
    }

    #[test]
    fn a_lend_inside_a_lend_gives_the_outer_host_back() {
        let cell = HostCell::default();
        let (mut outer, mut inner) = (Counter::default(), Counter::default());
        cell.lend(&mut outer, || {
            tick(&cell).expect("tick");
            cell.lend(&mut inner, || tick(&cell).expect("tick"));
            tick(&cell).expect("tick");
        });
        assert_eq!((outer.0, inner.0), (2, 1));
    }

    /// What `StackArgs` left in this thread's scratch: the arguments, or the error.
    fn scratch(read: Result<(), &'static str>) -> Result<Vec<Vec<u8>>, &'static str> {
        read?;
        Ok(SCRATCH.with(|s| {
            let (argv, ends) = &*s.borrow();
            let mut start = 0;
            ends.iter()
                .map(|&end| {
                    let a = argv[start..end].to_vec();
                    start = end;
                    a
                })
                .collect()
        }))
    }

    /// The stack reader (what `mlua` uses for a Rust function's arguments) and the reader
    /// of values agree, argument for argument and on the errors.
    #[test]
    fn arguments_read_off_the_stack_are_the_values_read() {
        let lua = Lua::new();
        let seen = Rc::new(RefCell::new(Vec::new()));
        let record = Rc::clone(&seen);
        let f = lua
            .create_function(move |_, args: StackArgs| {
                record.borrow_mut().push(scratch(args.0));
                Ok(())
            })
            .expect("function");
        lua.globals().set("f", f).expect("set");
        let lists = [
            "'GET', 'k'",
            "'x', 0 * -1, 2^63, -2^63, 1e17, 1e17 - 16, math.huge, 0.1, 3, -7",
            "'x', 0/0, -(0/0), 5e-324, 1e-300, 2^53 + 1, -1e17, 1e17 + 16, -math.huge",
            "'a\\0b', ''",
            "",
            "'x', {}",
            "'x', nil",
            "'x', true",
        ];
        for list in lists {
            lua.load(format!("f({list})")).exec().expect("call");
            let direct = seen.borrow_mut().pop().expect("called");
            // Through a coroutine and through pcall: still the arguments on top of the
            // calling thread's stack.
            lua.load(format!("coroutine.wrap(function() f({list}) end)()"))
                .exec()
                .expect("coroutine");
            assert_eq!(seen.borrow_mut().pop(), Some(direct.clone()), "{list}");
            let sep = if list.is_empty() { "" } else { ", " };
            lua.load(format!("assert(pcall(f{sep}{list}))"))
                .exec()
                .expect("pcall");
            assert_eq!(seen.borrow_mut().pop(), Some(direct.clone()), "{list}");
            seen.borrow_mut().push(direct);
            let values: MultiValue = lua.load(format!("return {list}")).eval().expect("values");
            let by_values = scratch(StackArgs::from_lua_multi(values, &lua).expect("read").0);
            let off_stack = seen.borrow_mut().pop().expect("called");
            assert_eq!(off_stack, by_values, "{list}");
        }
    }

    #[test]
    fn a_host_busy_with_a_request_is_not_reached_again() {
        let cell = HostCell::default();
        let mut host = Counter::default();
        cell.lend(&mut host, || {
            cell.busy.set(true);
            assert!(matches!(
                tick(&cell),
                Err(mlua::Error::RecursiveMutCallback)
            ));
            cell.busy.set(false);
            tick(&cell).expect("tick");
        });
        assert_eq!(host.0, 1);
    }
}
