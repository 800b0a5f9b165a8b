//! Starting a run through the Lua C API: the script's function and the error handler are
//! taken straight from the Lua registry, KEYS and ARGV are filled in place (EVAL) or made as
//! two fresh tables (functions), and the function is called once, under `lua_pcall` with
//! the handler.
//!
//! Through `mlua` the same start made a handle for the function, one per string and per
//! table, and called a Lua runner that set the two globals between two switches of the
//! globals' read-only flag, then `xpcall`ed the script: a protected call inside another.
//!
//! EVAL's KEYS and ARGV are two tables made once per interpreter and filled again for every
//! run, not made afresh as Redis does. No script can tell: nothing a script writes outlives
//! its run (the globals and every table reachable from them are read-only), so it cannot
//! keep the table to compare with the next run's, and whatever it did to the table (a
//! metatable, fields added or removed) is undone before the next run ([`refill`]). A
//! function's arguments are made afresh for every call, as a library's upvalues can keep
//! them.

use std::cell::Cell;
use std::ffi::c_int;

use mlua::{ffi, FromLua, RegistryKey, Table, Value};

use super::reply::push_bytes;
use super::Sandbox;

// Redis's read-only tables, from the patched Lua in `vendor/lua-src` (`lapi.c`).
#[allow(unsafe_code)]
extern "C" {
    fn lua_enablereadonlytable(state: *mut ffi::lua_State, index: c_int, enabled: c_int);
    /// The vendored Lua's (vendor/lua-src/PATCHES.md): sets to nil every field of the table
    /// at `index` whose key is not an integer in 1..=n, removes its metatable, and returns
    /// how many fields it held. Allocates nothing and raises nothing.
    fn lua_trimarray(state: *mut ffi::lua_State, index: c_int, n: c_int) -> c_int;
}

/// A table that held more than this many entries in a run is replaced by a fresh one after
/// it: a cleared Lua table keeps its size, and every later refill would walk it.
const REFILL_MAX: usize = 64;

/// EVAL's KEYS and ARGV, as the registry keeps them (and the globals name them).
pub struct RunTables {
    keys: RegistryKey,
    args: RegistryKey,
    /// Which of the two ([keys, args]) held more than [`REFILL_MAX`] entries in the last run.
    big: Cell<[bool; 2]>,
}

const NAMES: [&[u8]; 2] = [b"KEYS", b"ARGV"];

impl RunTables {
    /// Makes KEYS and ARGV globals of `globals` (read-only at this point, and again after),
    /// writable themselves, as Redis's are.
    pub fn new(lua: &mlua::Lua, readonly: &mlua::Function, globals: &Table) -> mlua::Result<Self> {
        let keys = lua.create_table()?;
        let args = lua.create_table()?;
        readonly.call::<()>((globals, false))?;
        globals.raw_set("KEYS", &keys)?;
        globals.raw_set("ARGV", &args)?;
        readonly.call::<()>((globals, true))?;
        Ok(RunTables {
            keys: lua.create_registry_value(keys)?,
            args: lua.create_registry_value(args)?,
            big: Cell::new([false; 2]),
        })
    }
}

/// Which function a run calls: a compiled script or a function's callback, as the registry
/// keeps it.
pub type Callee<'a> = &'a RegistryKey;

impl Sandbox {
    /// Runs `f` under the error handler with `keys` and `args` (KEYS and ARGV for EVAL, its
    /// two arguments for a function): `(true, its first result)` or `(false, the handler's
    /// table)`, or Lua's own error value where the handler did not run (out of memory).
    ///
    /// Called with the memory cap lifted; the cap is set while the function runs and lifted
    /// again when this returns.
    #[allow(unsafe_code)]
    pub fn enter(
        &self,
        f: Callee<'_>,
        keys: &[&[u8]],
        args: &[&[u8]],
    ) -> mlua::Result<(bool, Value)> {
        if c_int::try_from(keys.len().max(args.len())).is_err() {
            return Err(mlua::Error::runtime("too many arguments for a script"));
        }
        self.lua.exec_raw_lua(|raw| {
            let state = raw.state();
            // SAFETY: `state` is the interpreter's current thread, which no other code uses
            // while this runs (the interpreter belongs to this thread and this is not a Lua
            // callback). Every call below but `lua_pcall` runs with the memory cap lifted, so
            // none can raise (an allocation fails only when the process is out of memory, as
            // everywhere `mlua` itself calls the C API unprotected); `lua_pcall` catches
            // whatever the script raises. `Restore` puts the stack top back on every path.
            unsafe {
                struct Restore(*mut ffi::lua_State, c_int);
                impl Drop for Restore {
                    fn drop(&mut self) {
                        // SAFETY: as above; the stack only shrinks back to where it was.
                        unsafe { ffi::lua_settop(self.0, self.1) }
                    }
                }
                let top = ffi::lua_gettop(state);
                let _restore = Restore(state, top);
                if ffi::lua_checkstack(state, 8) == 0 {
                    return Err(mlua::Error::StackError);
                }
                ffi::lua_rawgeti_(state, ffi::LUA_REGISTRYINDEX, self.handler_key.id());
                let handler = top + 1;
                ffi::lua_rawgeti_(state, ffi::LUA_REGISTRYINDEX, f.id());
                let nargs = match &self.tables {
                    Some(tables) => {
                        let mut big = [false; 2];
                        for (i, (key, items)) in [(&tables.keys, keys), (&tables.args, args)]
                            .into_iter()
                            .enumerate()
                        {
                            ffi::lua_rawgeti_(state, ffi::LUA_REGISTRYINDEX, key.id());
                            big[i] = refill(state, ffi::lua_gettop(state), items);
                            ffi::lua_pop(state, 1);
                        }
                        tables.big.set(big);
                        0
                    }
                    None => {
                        fresh_table(state, keys);
                        fresh_table(state, args);
                        2
                    }
                };
                self.restore_cap();
                let rc = ffi::lua_pcall(state, nargs, 1, handler);
                self.lift_cap();
                let value = Value::from_stack(-1, raw)?;
                Ok((rc == 0, value))
            }
        })
    }

    /// After a run: KEYS or ARGV that held many entries is replaced by a fresh table.
    #[allow(unsafe_code)]
    pub fn tidy_tables(&self) {
        let Some(tables) = &self.tables else {
            return;
        };
        let big = tables.big.replace([false; 2]);
        if big == [false; 2] {
            return;
        }
        self.lua.exec_raw_lua(|raw| {
            let state = raw.state();
            // SAFETY: as in `enter`, with the cap lifted (it is, after a run's result is
            // written); the globals' read-only flag is cleared only around the one write.
            unsafe {
                let top = ffi::lua_gettop(state);
                if ffi::lua_checkstack(state, 4) == 0 {
                    return;
                }
                for (i, key) in [&tables.keys, &tables.args].into_iter().enumerate() {
                    if !big[i] {
                        continue;
                    }
                    ffi::lua_createtable(state, 0, 0);
                    ffi::lua_pushvalue(state, -1);
                    ffi::lua_rawseti_(state, ffi::LUA_REGISTRYINDEX, key.id());
                    push_bytes(state, NAMES[i]);
                    ffi::lua_insert(state, -2);
                    lua_enablereadonlytable(state, ffi::LUA_GLOBALSINDEX, 0);
                    ffi::lua_rawset(state, ffi::LUA_GLOBALSINDEX);
                    lua_enablereadonlytable(state, ffi::LUA_GLOBALSINDEX, 1);
                }
                ffi::lua_settop(state, top);
            }
        });
    }
}

/// Pushes a new table of `items`.
///
/// # Safety
/// `state` has two free slots and the memory cap is lifted; `items.len()` fits a `c_int`.
#[allow(unsafe_code)]
unsafe fn fresh_table(state: *mut ffi::lua_State, items: &[&[u8]]) {
    // SAFETY: the caller's.
    unsafe {
        ffi::lua_createtable(state, items.len() as c_int, 0);
        for (i, s) in items.iter().enumerate() {
            push_bytes(state, s);
            ffi::lua_rawseti_(state, -2, (i + 1) as c_int);
        }
    }
}

/// Makes the table at `t` (an absolute index) hold exactly `items` at 1..=n and nothing
/// else, with no metatable; returns whether it held or holds more than [`REFILL_MAX`]
/// entries.
///
/// # Safety
/// As [`fresh_table`]; the table is not read-only.
#[allow(unsafe_code)]
unsafe fn refill(state: *mut ffi::lua_State, t: c_int, items: &[&[u8]]) -> bool {
    // SAFETY: the caller's; `lua_trimarray` only clears fields of the table at `t`.
    unsafe {
        let n = items.len();
        let held = lua_trimarray(state, t, n as c_int) as usize;
        for (i, s) in items.iter().enumerate() {
            push_bytes(state, s);
            ffi::lua_rawseti_(state, t, (i + 1) as c_int);
        }
        held.max(n) > REFILL_MAX
    }
}
