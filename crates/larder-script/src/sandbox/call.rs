//! The functions of the `redis` table that reach the host (redis.call, redis.pcall,
//! redis.log, redis.set_repl) and the count hook.
//!
//! They are made once per interpreter. The host is reached through the [`HostSlot`], which
//! `vm` fills with the run's host for the length of a run: these functions leave what the
//! host needs in the run's [`Exchange`] (the argv bytes, the log message) and call it with
//! an [`Op`]; the host writes the command's reply into the exchange's reply buffer, which
//! is reused from call to call.
//!
//! redis.call and redis.pcall are C functions over the Lua API ([`redis_call`]): they read
//! their arguments off the Lua stack and push the reply decoded straight from its bytes
//! ([`super::reply`]), where an `mlua` function would make a value (a registry handle for
//! a string or a table) of each argument and of the reply, and wrap the call in its own
//! machinery.

use std::cell::Cell;
use std::ffi::c_int;
use std::io::Write;
use std::ptr::NonNull;
use std::rc::Rc;

use larder_resp::ReplyBuf;
use mlua::{ffi, FromLua, Function, HookTriggers, Lua, Value, Variadic, VmState};

use super::api::{raise, to_lua_bytes, to_number};
use super::reply::{push_bytes, push_error_table, push_reply};
use super::Shared;
use crate::convert::format_g;
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

/// An argument buffer bigger than this (after a call with large arguments) is let go.
const ARGV_KEPT_BYTES: usize = 64 * 1024;

/// Reads a C function's `nargs` arguments (stack slots 1..=nargs) as Redis's
/// `luaArgsToRedisArgv`: strings as they are, numbers as `%.17g`; the error for anything
/// else or no argument at all. The arguments' bytes end up one after the other in `argv`,
/// each one's end in `ends`.
///
/// # Safety
/// `state` is the Lua thread running the C function, with `nargs` arguments.
#[allow(unsafe_code)]
unsafe fn read_args(
    state: *mut ffi::lua_State,
    nargs: c_int,
    argv: &mut Vec<u8>,
    ends: &mut Vec<usize>,
) -> Result<(), &'static str> {
    argv.clear();
    ends.clear();
    if nargs <= 0 {
        return Err(errors::NO_ARGUMENTS);
    }
    for idx in 1..=nargs {
        // SAFETY: the caller's; reading a value's type, a string's bytes (which Lua keeps
        // while the value is on the stack, copied out at once) or a number neither changes
        // the stack nor raises.
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

/// What redis.call and redis.pcall reach through their one upvalue, a light userdata: made
/// once per interpreter and kept by the sandbox, which outlives every call of them.
pub struct CallContext {
    lua: Lua,
    shared: Shared,
    host: HostSlot,
}

/// redis.call and redis.pcall, and the context they point at (which the caller keeps for
/// as long as the interpreter lives).
#[allow(unsafe_code)]
pub fn call_functions(
    lua: &Lua,
    shared: Shared,
    host: HostSlot,
) -> mlua::Result<(Function, Function, Box<CallContext>)> {
    let ctx = Box::new(CallContext {
        lua: lua.clone(),
        shared,
        host,
    });
    let ptr = std::ptr::from_ref::<CallContext>(&ctx)
        .cast_mut()
        .cast::<std::ffi::c_void>();
    let make = |f: ffi::lua_CFunction| -> mlua::Result<Function> {
        let cap = lua.set_memory_limit(0)?;
        let made = lua.exec_raw_lua(|raw| {
            let state = raw.state();
            // SAFETY: the interpreter's current thread, outside any callback, with the cap
            // lifted (nothing raises); the stack is put back as it was.
            unsafe {
                if ffi::lua_checkstack(state, 2) == 0 {
                    return Err(mlua::Error::StackError);
                }
                ffi::lua_pushlightuserdata(state, ptr);
                ffi::lua_pushcclosure(state, f, 1);
                let f = Function::from_stack(-1, raw);
                ffi::lua_pop(state, 1);
                f
            }
        });
        lua.set_memory_limit(cap)?;
        made
    };
    Ok((make(redis_call)?, make(redis_pcall)?, ctx))
}

/// redis.call: the reply as Lua values; a command's error reply, or an argument error, is
/// raised (as Redis's table `{err = ...}`).
#[allow(unsafe_code)]
unsafe extern "C-unwind" fn redis_call(state: *mut ffi::lua_State) -> c_int {
    // SAFETY: Lua calls this with its upvalue, as `call_functions` made it.
    unsafe { call_entry(state, true) }
}

/// redis.pcall: as redis.call, but errors are returned.
#[allow(unsafe_code)]
unsafe extern "C-unwind" fn redis_pcall(state: *mut ffi::lua_State) -> c_int {
    // SAFETY: as `redis_call`.
    unsafe { call_entry(state, false) }
}

/// The body of redis.call and redis.pcall. Everything is done in [`call_guarded`], whose
/// frame (with every value that has a destructor) is gone before `lua_error` jumps out of
/// this one; the memory cap is lifted meanwhile, so no push can raise.
///
/// # Safety
/// `state` is running the C function `call_functions` made, its upvalue the context.
#[allow(unsafe_code)]
unsafe fn call_entry(state: *mut ffi::lua_State, raising: bool) -> c_int {
    // SAFETY: the upvalue is the pointer to the sandbox's `CallContext`, which outlives
    // the interpreter's every call.
    let ctx = unsafe {
        &*ffi::lua_touserdata(state, ffi::lua_upvalueindex(1))
            .cast_const()
            .cast::<CallContext>()
    };
    let cap = ctx.lua.set_memory_limit(0).unwrap_or(0);
    // SAFETY: the caller's.
    let returned = unsafe { call_guarded(state, ctx, raising) };
    let _ = ctx.lua.set_memory_limit(cap);
    match returned {
        Some(n) => n,
        // SAFETY: the error value is on top; no frame with a destructor is left between
        // here and Lua's protected call.
        None => unsafe { ffi::lua_error(state) },
    }
}

/// Runs [`call_body`], turning a panic into an error (the run then ends with it: a panic
/// is a bug, and a server thread must not unwind through Lua).
///
/// # Safety
/// As [`call_entry`], with the cap lifted.
#[allow(unsafe_code)]
#[inline(never)]
unsafe fn call_guarded(
    state: *mut ffi::lua_State,
    ctx: &CallContext,
    raising: bool,
) -> Option<c_int> {
    let top = {
        // SAFETY: the caller's.
        unsafe { ffi::lua_gettop(state) }
    };
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        // SAFETY: the caller's.
        unsafe { call_body(state, ctx, raising) }
    }))
    .unwrap_or_else(|_| {
        // SAFETY: as above; the stack goes back to the arguments.
        unsafe {
            ffi::lua_settop(state, top);
            push_error_table(state, "ERR internal error in redis.call", false);
        }
        None
    })
}

/// redis.call's work: `Some(n)` to return the `n` values on top, `None` to raise the one on
/// top.
///
/// # Safety
/// As [`call_guarded`].
#[allow(unsafe_code)]
unsafe fn call_body(state: *mut ffi::lua_State, ctx: &CallContext, raising: bool) -> Option<c_int> {
    // Every block below relies on the caller's guarantees; a C function has 20 free stack
    // slots (LUA_MINSTACK), more than an error table takes, and the reply's decoder checks
    // for its own.
    // SAFETY: reads the stack top.
    let nargs = unsafe { ffi::lua_gettop(state) };
    let loaded = {
        let mut st = ctx.shared.borrow_mut();
        if !st.running {
            drop(st);
            let text = error_table_text(errors::CALL_OUTSIDE_RUN);
            // SAFETY: a push into the free slots, the cap lifted.
            unsafe { push_error_table(state, &text, false) };
            return None;
        }
        if st.abort.is_some() {
            drop(st);
            // SAFETY: as above.
            unsafe { push_bytes(state, errors::KILLED.as_bytes()) };
            return None;
        }
        let proto = st.proto;
        let ex = &mut st.exchange;
        ex.reply.buf.clear();
        ex.reply.attached.clear();
        ex.reply.proto = proto;
        // SAFETY: the function's `nargs` arguments are on the stack.
        unsafe { read_args(state, nargs, &mut ex.argv, &mut ex.ends) }
    };
    if let Err(msg) = loaded {
        // SAFETY: a push into the free slots, the cap lifted.
        unsafe { push_error_table(state, &error_table_text(msg), false) };
        return if raising { None } else { Some(1) };
    }
    if let Err(e) = reach_host(&ctx.lua, &ctx.host, &ctx.shared, Op::Call) {
        if ctx.shared.borrow().abort.is_some() {
            // `reach_host` made every instruction of the interpreter's current thread
            // raise; a coroutine running this call is another thread.
            let current = ctx.lua.exec_raw_lua(|raw| raw.state());
            if current != state {
                // SAFETY: a hook on this live thread; `raise_hook` only raises.
                unsafe { ffi::lua_sethook(state, Some(raise_hook), ffi::LUA_MASKCOUNT, 1) };
            }
        }
        let text = e.to_string();
        // SAFETY: a push into the free slots, the cap lifted.
        unsafe { push_bytes(state, text.as_bytes()) };
        return None;
    }
    let reply = {
        let mut st = ctx.shared.borrow_mut();
        let ex = &mut st.exchange;
        if ex.argv.capacity() > ARGV_KEPT_BYTES {
            ex.argv = Vec::new();
        }
        std::mem::take(&mut ex.reply)
    };
    // SAFETY: the cap is lifted; the decoder makes its own slots.
    let decoded = unsafe {
        if reply.attached.is_empty() {
            push_reply(state, &reply.buf)
        } else {
            push_reply(state, &reply.attached.splice(&reply.buf))
        }
    };
    ctx.shared.borrow_mut().exchange.reply = reply;
    match decoded {
        Ok(is_error) if raising && is_error => None,
        Ok(_) => Some(1),
        Err(e) => {
            // SAFETY: back to the arguments, then a push into the free slots.
            unsafe {
                ffi::lua_settop(state, nargs);
                push_error_table(state, &error_table_text(&e.to_string()), false);
            }
            None
        }
    }
}

/// The count hook of a coroutine whose run was ended: every instruction raises.
#[allow(unsafe_code)]
unsafe extern "C-unwind" fn raise_hook(state: *mut ffi::lua_State, _: *mut ffi::lua_Debug) {
    // SAFETY: Lua calls hooks with their thread, which may raise from them. Under the
    // memory cap the push may raise a memory error instead, which ends the coroutine all
    // the same (the error handler writes the killed error whatever it gets); this frame
    // holds nothing to drop.
    unsafe {
        push_bytes(state, errors::KILLED.as_bytes());
        ffi::lua_error(state)
    }
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
    use mlua::MultiValue;
    use std::cell::RefCell;

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

    /// The arguments as `read_args` lays them out, or its error.
    type Read = Result<Vec<Vec<u8>>, &'static str>;

    fn split(argv: &[u8], ends: &[usize]) -> Vec<Vec<u8>> {
        let mut start = 0;
        ends.iter()
            .map(|&end| {
                let a = argv[start..end].to_vec();
                start = end;
                a
            })
            .collect()
    }

    /// Redis's `luaArgsToRedisArgv` over `mlua` values: the reference `read_args` is
    /// checked against.
    fn read_values(values: &MultiValue) -> Read {
        if values.is_empty() {
            return Err(errors::NO_ARGUMENTS);
        }
        let mut out = Vec::new();
        for v in values {
            let mut argv = Vec::new();
            match v {
                Value::String(s) => argv.extend_from_slice(&s.as_bytes()),
                Value::Integer(i) => push_number(&mut argv, *i as f64, Some(*i)),
                Value::Number(n) => push_number(&mut argv, *n, exact_integer(*n)),
                _ => return Err(errors::BAD_ARGUMENT),
            }
            out.push(argv);
        }
        Ok(out)
    }

    thread_local! {
        static READ: RefCell<Vec<Read>> = const { RefCell::new(Vec::new()) };
    }

    /// A C function that records what `read_args` reads of its arguments.
    #[allow(unsafe_code)]
    unsafe extern "C-unwind" fn record(state: *mut ffi::lua_State) -> c_int {
        let (mut argv, mut ends) = (Vec::new(), Vec::new());
        // SAFETY: Lua calls this with its arguments on the stack.
        let read = unsafe { read_args(state, ffi::lua_gettop(state), &mut argv, &mut ends) };
        READ.with(|r| r.borrow_mut().push(read.map(|()| split(&argv, &ends))));
        0
    }

    /// The stack reader and the reader of values agree, argument for argument and on the
    /// errors, called directly, from a coroutine and through pcall.
    #[test]
    #[allow(unsafe_code)]
    fn arguments_read_off_the_stack_are_the_values_read() {
        let lua = Lua::new();
        // SAFETY: `record` is a C function that only reads its arguments.
        let f = unsafe { lua.create_c_function(record) }.expect("function");
        lua.globals().set("f", f).expect("set");
        let last = || READ.with(|r| r.borrow_mut().pop()).expect("called");
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
            let direct = last();
            lua.load(format!("coroutine.wrap(function() f({list}) end)()"))
                .exec()
                .expect("coroutine");
            assert_eq!(last(), direct, "{list}");
            let sep = if list.is_empty() { "" } else { ", " };
            lua.load(format!("assert(pcall(f{sep}{list}))"))
                .exec()
                .expect("pcall");
            assert_eq!(last(), direct, "{list}");
            let values: MultiValue = lua.load(format!("return {list}")).eval().expect("values");
            assert_eq!(direct, read_values(&values), "{list}");
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
