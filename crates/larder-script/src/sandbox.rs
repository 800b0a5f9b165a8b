//! The sandboxed interpreter, as Redis 7.0.15 builds it (`script_lua.c`, `eval.c`,
//! `function_lua.c`).
//!
//! Loaded: Lua's base, table, string and math libraries, and [`crate::libs::install`]'s
//! cjson, cmsgpack, bit and struct. The globals are exactly Redis's (no `os`, `io`,
//! `print`, `dofile`, `loadfile`, `require`, `package`, `module`, `debug`, `getfenv`,
//! `setfenv`, `newproxy`). Every table reachable from the globals, their metatables and the
//! string metatable are read-only (Redis's patched Lua, vendored in `vendor/lua-src`):
//! writing them raises "Attempt to modify a readonly table"; reading a global that does not
//! exist raises "Script attempted to access nonexistent global variable". Precompiled chunks
//! are never loaded.
//!
//! The `redis` table's functions that reach the host go through the run's host
//! ([`Sandbox::host`], see [`call`]), which no script can reach and `vm` lends for each run.

mod api;
pub mod call;
mod enter;
pub(crate) mod reply;

use std::cell::RefCell;
use std::rc::Rc;

use larder_resp::Protocol;
use mlua::{Function, Lua, LuaOptions, RegistryKey, StdLib, Table, Value};

pub use api::{find_raise, VERSION};
use call::{Exchange, HostSlot};
pub use enter::Callee;
use enter::RunTables;

/// The globals a script sees, as Redis 7.0.15 has them (besides KEYS and ARGV, which each
/// EVAL run sets).
const GLOBALS: &[&str] = &[
    "_G",
    "_VERSION",
    "assert",
    "bit",
    "cjson",
    "cmsgpack",
    "collectgarbage",
    "coroutine",
    "error",
    "gcinfo",
    "getmetatable",
    "ipairs",
    "load",
    "loadstring",
    "math",
    "next",
    "pairs",
    "pcall",
    "rawequal",
    "rawget",
    "rawset",
    "redis",
    "select",
    "setmetatable",
    "string",
    "struct",
    "table",
    "tonumber",
    "tostring",
    "type",
    "unpack",
    "xpcall",
];

/// The chunk name of larder's own Lua code; the error handler skips its frames when it
/// looks for the line a script failed on.
pub const INTERNAL_CHUNK: &str = "=larder";

/// Which of Redis's two interpreters this is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flavor {
    /// EVAL's: scripts are chunks of the globals; KEYS and ARGV are globals.
    Eval,
    /// Functions': an empty read-only globals table over the real globals, and while a
    /// library loads, over the library API (only `redis.register_function`, `redis.log`,
    /// the log levels and the version) instead.
    Function,
}

/// What a run shares with the `redis` API functions and the hooks.
#[derive(Debug)]
pub struct RunState {
    /// A script (or library) is running.
    pub running: bool,
    /// The protocol the script chose with redis.setresp.
    pub proto: Protocol,
    /// The host asked the run to end; every Lua line raises from then on.
    pub abort: Option<crate::vm::Abort>,
    /// Where the error that ended an aborted run was raised (`source`, `line`), which the
    /// killed reply names.
    pub abort_place: Option<(String, String)>,
    /// Functions registered by the library now loading; `None` when none is loading.
    pub registered: Option<Vec<(crate::vm::FunctionMeta, Function)>>,
    /// Redis's `redisLrand48` state for math.random.
    pub rand48: [u32; 3],
    /// What the `redis` functions hand the host and get back.
    pub exchange: Exchange,
}

impl Default for RunState {
    fn default() -> Self {
        RunState {
            running: false,
            proto: Protocol::Resp2,
            abort: None,
            abort_place: None,
            registered: None,
            rand48: api::RAND48_SEED,
            exchange: Exchange::default(),
        }
    }
}

/// Shared between the interpreter's callbacks and its owner.
pub type Shared = Rc<RefCell<RunState>>;

/// One sandboxed interpreter.
pub struct Sandbox {
    pub lua: Lua,
    pub flavor: Flavor,
    /// Redis's read-only switch: `readonly(t, enabled)`.
    pub readonly: Function,
    /// The real globals (EVAL's `_G`; for functions, what the visible globals read through).
    pub globals: Table,
    /// Functions only: the metatable of the visible globals, whose `__index` is the real
    /// globals or, while a library loads, the library API.
    pub globals_meta: Option<Table>,
    /// Functions only: the globals a loading library sees.
    pub library_api: Option<Table>,
    /// The run's host (see [`call`]); empty outside a run.
    pub host: HostSlot,
    /// Redis's `__redis__err__handler`, in the registry ([`Sandbox::enter`]).
    handler_key: RegistryKey,
    /// EVAL only: KEYS and ARGV, filled again for every run ([`Sandbox::enter`]).
    tables: Option<RunTables>,
    /// Lua's own pcall of a function without arguments: `(ok, result or error)`.
    plain: Function,
    pub shared: Shared,
    /// The memory cap (0: none).
    pub memory_limit_bytes: usize,
    /// The names a script's result is looked up by (`convert::lua_to_reply`).
    pub field_names: crate::convert::FieldNames,
    /// What redis.call and redis.pcall point at (it holds a handle to `lua`: the state is
    /// closed only once it goes).
    _call_context: Box<call::CallContext>,
}

impl Sandbox {
    /// A fresh interpreter of `flavor`; `memory_limit_bytes` caps it (0: no cap).
    pub fn new(flavor: Flavor, memory_limit_bytes: usize) -> mlua::Result<Sandbox> {
        let lua = Lua::new_with(
            StdLib::TABLE | StdLib::STRING | StdLib::MATH,
            LuaOptions::new(),
        )?;
        let shared: Shared = Rc::new(RefCell::new(RunState::default()));
        let globals = lua.globals();
        let readonly: Function = globals.raw_get("__readonlytable")?;
        globals.raw_set("__readonlytable", Value::Nil)?;
        crate::libs::install(&lua)?;

        let host = HostSlot::default();
        let internal = api::install(&lua, &globals, &shared, &host, flavor)?;

        // Exactly Redis's globals.
        let present: Vec<Value> = globals
            .pairs::<Value, Value>()
            .map(|kv| kv.map(|(k, _)| k))
            .collect::<mlua::Result<_>>()?;
        for k in present {
            let keep = matches!(&k, Value::String(s) if GLOBALS.contains(&&*s.to_string_lossy()));
            if !keep {
                globals.raw_set(k, Value::Nil)?;
            }
        }
        globals.set_metatable(Some(internal.error_meta.clone()))?;

        let mut globals_meta = None;
        let mut library_api = None;
        if flavor == Flavor::Function {
            let lib = internal.library_api;
            lib.set_metatable(Some(internal.error_meta.clone()))?;
            protect(&readonly, &lib)?;
            library_api = Some(lib);
        }
        protect(&readonly, &globals)?;
        if let Some(m) = &internal.string_meta {
            protect(&readonly, m)?;
        }
        if flavor == Flavor::Function {
            let visible = lua.create_table()?;
            let meta = lua.create_table()?;
            meta.raw_set("__index", globals.clone())?;
            readonly.call::<()>((meta.clone(), true))?;
            visible.set_metatable(Some(meta.clone()))?;
            readonly.call::<()>((visible.clone(), true))?;
            lua.set_globals(visible)?;
            globals_meta = Some(meta);
        }
        let tables = match flavor {
            Flavor::Eval => Some(RunTables::new(&lua, &readonly, &globals)?),
            Flavor::Function => None,
        };
        let handler_key = lua.create_registry_value(internal.handler)?;
        let field_names = crate::convert::FieldNames::new(&lua)?;
        call::install_tick_hook(&lua, &shared, &host)?;
        if memory_limit_bytes > 0 {
            lua.set_memory_limit(memory_limit_bytes)?;
        }
        Ok(Sandbox {
            lua,
            flavor,
            readonly,
            globals,
            globals_meta,
            library_api,
            host,
            handler_key,
            tables,
            plain: internal.plain,
            shared,
            memory_limit_bytes,
            field_names,
            _call_context: internal.call_context,
        })
    }

    /// Points the visible globals of a function interpreter at `target` (the library API
    /// while a library loads, the real globals otherwise).
    pub fn globals_read_through(&self, target: &Table) -> mlua::Result<()> {
        if let Some(meta) = &self.globals_meta {
            self.readonly.call::<()>((meta.clone(), false))?;
            meta.raw_set("__index", target.clone())?;
            self.readonly.call::<()>((meta.clone(), true))?;
        }
        Ok(())
    }
}

impl Sandbox {
    /// Puts back the count hook every run has (after a library load or an aborted run
    /// replaced it).
    pub fn install_tick_hook(&self) -> mlua::Result<()> {
        call::install_tick_hook(&self.lua, &self.shared, &self.host)
    }

    /// A full garbage collection. The cap is lifted meanwhile: at the cap, the collector
    /// itself could not start, and the garbage would stay.
    pub fn collect_garbage(&self) {
        self.lift_cap();
        let _ = self.lua.gc_collect();
        self.restore_cap();
    }

    /// Lifts the memory cap for Rust-side work that allocates a bounded amount (a run's
    /// arguments, converting its result): under a cap mlua makes every
    /// allocation a protected call, without one it need not, as no allocation can fail.
    /// Scripts run only under the cap ([`Sandbox::restore_cap`]).
    pub fn lift_cap(&self) {
        if self.memory_limit_bytes > 0 {
            let _ = self.lua.set_memory_limit(0);
        }
    }

    /// Puts the memory cap back.
    pub fn restore_cap(&self) {
        if self.memory_limit_bytes > 0 {
            let _ = self.lua.set_memory_limit(self.memory_limit_bytes);
        }
    }

    /// Calls `f` without arguments under Lua's own pcall: `(true, result)` or
    /// `(false, error value)`.
    pub fn plain_call(&self, f: &Function) -> mlua::Result<(bool, Value)> {
        self.plain.call(f.clone())
    }
}

/// Makes `t`, every table reachable from it and their metatables read-only, as Redis's
/// `luaSetTableProtectionRecursively`.
fn protect(readonly: &Function, t: &Table) -> mlua::Result<()> {
    let mut seen = std::collections::HashSet::new();
    let mut todo = vec![t.clone()];
    while let Some(t) = todo.pop() {
        if !seen.insert(t.to_pointer() as usize) {
            continue;
        }
        for kv in t.pairs::<Value, Value>() {
            if let (_, Value::Table(v)) = kv? {
                todo.push(v);
            }
        }
        if let Some(m) = t.metatable() {
            todo.push(m);
        }
        readonly.call::<()>((t, true))?;
    }
    Ok(())
}

#[cfg(test)]
#[path = "sandbox/tests.rs"]
mod tests;
