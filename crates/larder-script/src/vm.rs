//! One interpreter pair (Redis keeps one Lua state for EVAL and one for functions) and
//! running scripts and functions in it against a [`Host`].

mod run;

use std::collections::HashMap;
use std::time::{Duration, Instant};

use mlua::{Function, HookTriggers, Lua, RegistryKey, Table, Value, VmState};

use crate::errors;
use crate::sandbox::{Flavor, Sandbox};

pub use run::Host;

/// What [`Vm::new`] needs.
#[derive(Clone, Debug, Default)]
pub struct VmOptions {
    /// Cap on each interpreter's memory (mlua `set_memory_limit`); 0 = none.
    pub memory_limit_bytes: usize,
}

pub use crate::shebang::ScriptFlags;

/// Why a run ends early at the host's request. The vm makes it impossible for the script
/// to catch (after the host returns one, every further Lua instruction raises again),
/// writes nothing into the client's reply for `Retry`, and returns it from `run_*`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Abort {
    /// The host must run the script again with more shards locked; the client sees
    /// nothing of this run.
    Retry,
    /// SCRIPT KILL / FUNCTION KILL: the vm writes Redis's "killed" error reply.
    Killed,
    /// The server is shutting down: the vm writes the same error as Killed.
    Shutdown,
}

/// What the script ran as, for error texts.
pub enum Origin<'a> {
    /// An EVAL script: its SHA1 (written in hex in error texts).
    Eval { id: &'a ScriptId },
    /// FCALL: the function's name.
    Function { name: &'a str },
}

/// One function a library registered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FunctionMeta {
    pub name: String,
    pub description: Option<String>,
    pub flags: ScriptFlags,
}

/// A loaded function: its library and its callback (in the Lua registry: see
/// [`Vm::scripts`]).
struct Loaded {
    library: String,
    callback: RegistryKey,
}

/// A script's SHA1 as the maps of compiled and cached scripts key it: its 20 bytes, not the
/// 40 hex digits (a key kept inline in the map, with no allocation of its own).
pub type ScriptId = [u8; 20];

/// The [`ScriptId`] of a SHA1 written in hex (either case, as Redis's script dictionary
/// compares them); `None` for anything else, which names no script.
pub fn script_id(sha: &str) -> Option<ScriptId> {
    script_id_bytes(sha.as_bytes())
}

/// [`script_id`] of the bytes a client sent: eight digits at a time, each byte of a word
/// one digit (EVALSHA decodes its name on every call).
pub fn script_id_bytes(hex: &[u8]) -> Option<ScriptId> {
    if hex.len() != 40 {
        return None;
    }
    let mut id = [0u8; 20];
    for (out, chunk) in id.chunks_exact_mut(4).zip(hex.chunks_exact(8)) {
        let word = u64::from_le_bytes(chunk.try_into().ok()?);
        out.copy_from_slice(&hex_word(word)?.to_le_bytes());
    }
    Some(id)
}

/// The four bytes eight hex digits stand for (the first digit in the lowest byte of `x`,
/// the first byte in the lowest byte of the result), or `None` if a byte is not a digit.
fn hex_word(x: u64) -> Option<u32> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    if x & HIGH != 0 {
        return None;
    }
    // Every byte is below 0x80, so adding up to 0x7f to each cannot carry into the next:
    // `x + (0x80 - c) * ONES` has a byte's high bit set exactly where that byte is >= c.
    let at_least = |v: u64, c: u64| v.wrapping_add((0x80 - c) * ONES) & HIGH;
    let digit = at_least(x, 0x30) & !at_least(x, 0x3a);
    // Letters in either case; bit 5 forced on maps 'A'..='F' to 'a'..='f'.
    let lower = x | (0x20 * ONES);
    let letter = at_least(lower, 0x61) & !at_least(lower, 0x67);
    if digit | letter != HIGH {
        return None;
    }
    // A digit's value is its low nibble, a letter's its low nibble plus 9.
    let nibbles = (x & (0x0f * ONES)) + (letter >> 7) * 9;
    // Byte 2i: digit 2i in its high nibble, digit 2i+1 in its low one.
    let pairs = ((nibbles << 4) | (nibbles >> 8)) & 0x00ff_00ff_00ff_00ff;
    let packed = (pairs | (pairs >> 8)) & 0x0000_ffff_0000_ffff;
    Some((packed | (packed >> 16)) as u32)
}

/// The SHA1 of `id` in lower-case hex, as scripts are named in error texts.
pub fn script_hex(id: &ScriptId) -> String {
    let mut s = String::with_capacity(40);
    for b in id {
        s.push(char::from(b"0123456789abcdef"[usize::from(b >> 4)]));
        s.push(char::from(b"0123456789abcdef"[usize::from(b & 0x0f)]));
    }
    s
}

/// A map keyed by [`ScriptId`], with hashbrown's seeded hasher (foldhash): a script is
/// looked up twice per run, and SipHash of the 20 bytes cost more than the lookups.
pub type IdMap<V> = hashbrown::HashMap<ScriptId, V>;

/// How long a library's top level may run (Redis's `LOAD_TIMEOUT_MS`).
const LOAD_TIMEOUT: Duration = Duration::from_millis(500);

/// One interpreter pair (the lead keeps one per worker thread, in a thread-local).
pub struct Vm {
    eval: Sandbox,
    func: Sandbox,
    /// Compiled scripts, kept in the Lua registry: an mlua `Function` handle takes a slot of
    /// a stack limited to about 8,000, so 10,000 cached scripts would not fit as handles.
    scripts: IdMap<RegistryKey>,
    functions: HashMap<String, Loaded>,
    /// The function interpreter's memory when last read; `None` once anything used it since.
    /// [`Vm::used_memory`] runs after every script, and reading the idle interpreter's count
    /// would touch its state (out of the CPU caches while only EVAL runs) each time.
    func_memory: std::cell::Cell<Option<usize>>,
}

impl Vm {
    /// The count hook's period: the host's `tick` runs every this many Lua instructions
    /// (Redis's count hook period).
    pub const TICK_INSTRUCTIONS: u32 = 100_000;

    pub fn new(opts: &VmOptions) -> mlua::Result<Vm> {
        Ok(Vm {
            eval: Sandbox::new(Flavor::Eval, opts.memory_limit_bytes)?,
            func: Sandbox::new(Flavor::Function, opts.memory_limit_bytes)?,
            scripts: IdMap::default(),
            functions: HashMap::new(),
            func_memory: std::cell::Cell::new(None),
        })
    }

    /// Compile an EVAL body as Redis does (`f_<sha>`, chunk name `@user_script`, a shebang
    /// line skipped but its line feed kept so line numbers stay); the error is the client's
    /// error text, e.g. "ERR Error compiling script (new function): ...".
    pub fn compile_script(&mut self, sha: &str, body: &[u8]) -> Result<(), String> {
        let Some(id) = script_id(sha) else {
            return Err(format!("ERR not a script's SHA1: {sha}"));
        };
        if self.scripts.contains_key(&id) {
            return Ok(());
        }
        let code = skip_shebang(body)?;
        let compile = || {
            self.eval
                .lua
                .load(code)
                .set_name("@user_script")
                .into_function()
        };
        let f = match compile() {
            // Garbage a script left may be what fills the memory cap: collect, then retry.
            Err(mlua::Error::MemoryError(_)) => {
                self.eval.collect_garbage();
                compile()
            }
            other => other,
        }
        .map_err(|e| errors::compile_script(&lua_message(&e)))?;
        let key = self
            .eval
            .lua
            .create_registry_value(f)
            .map_err(|e| errors::compile_script(&lua_message(&e)))?;
        self.scripts.insert(id, key);
        Ok(())
    }

    pub fn has_script(&self, id: &ScriptId) -> bool {
        self.scripts.contains_key(id)
    }

    /// Drop every compiled script (SCRIPT FLUSH).
    pub fn forget_scripts(&mut self) {
        self.scripts.clear();
        self.eval.lua.expire_registry_values();
        // A full collection gives the memory back now, as Redis's new interpreter does.
        self.eval.collect_garbage();
    }

    /// Run compiled script `id` with KEYS and ARGV; the result or Redis's error reply is
    /// written into `out` (the client's protocol is `out.proto`). A script error is an
    /// error reply and `Ok(())`; a script that is not compiled gets Redis's NOSCRIPT error.
    pub fn run_script(
        &mut self,
        id: &ScriptId,
        keys: &[&[u8]],
        args: &[&[u8]],
        host: &mut dyn Host,
        out: &mut larder_resp::ReplyBuf,
    ) -> Result<(), Abort> {
        let Some(f) = self.scripts.get(id) else {
            out.error("NOSCRIPT No matching script. Please use EVAL.");
            return Ok(());
        };
        run::run(&self.eval, f, Origin::Eval { id }, keys, args, host, out)
    }

    /// Load one library's code (shebang line included, already checked by the lead) into
    /// the function interpreter: runs its top level with only the library API
    /// (`redis.register_function`, `redis.log`, the log levels, the version) reachable, and
    /// returns what it registered, or Redis's error text. Replaces a library of the same
    /// name; on error nothing changes.
    pub fn load_library(&mut self, name: &str, code: &str) -> Result<Vec<FunctionMeta>, String> {
        self.func_memory.set(None);
        let body = skip_shebang(code.as_bytes())?;
        let sb = &self.func;
        let Some(api) = sb.library_api.clone() else {
            return Err(errors::registering("ERR no function interpreter"));
        };
        let f = sb
            .lua
            .load(body)
            .set_name("@user_function")
            .into_function()
            .map_err(|e| errors::compile_function(&lua_message(&e)))?;
        sb.shared.borrow_mut().registered = Some(Vec::new());
        let outcome = load_top_level(sb, &api, f);
        let registered = sb.shared.borrow_mut().registered.take().unwrap_or_default();
        outcome?;
        if registered.is_empty() {
            return Err(errors::NO_FUNCTIONS.to_string());
        }
        self.functions.retain(|_, l| l.library != name);
        let mut metas = Vec::with_capacity(registered.len());
        for (meta, callback) in registered {
            let callback = sb
                .lua
                .create_registry_value(callback)
                .map_err(|e| errors::registering(&lua_message(&e)))?;
            self.functions.insert(
                meta.name.clone(),
                Loaded {
                    library: name.to_string(),
                    callback,
                },
            );
            metas.push(meta);
        }
        Ok(metas)
    }

    /// Forget every library (FUNCTION FLUSH / DELETE rebuilds from the registry).
    pub fn clear_libraries(&mut self) {
        self.func_memory.set(None);
        self.functions.clear();
        self.func.lua.expire_registry_values();
        self.func.collect_garbage();
    }

    /// Run a loaded function with `keys` and `args` (its two arguments); as run_script.
    pub fn run_function(
        &mut self,
        name: &str,
        keys: &[&[u8]],
        args: &[&[u8]],
        host: &mut dyn Host,
        out: &mut larder_resp::ReplyBuf,
    ) -> Result<(), Abort> {
        let Some(loaded) = self.functions.get(name) else {
            out.error("ERR Function not found");
            return Ok(());
        };
        let origin = Origin::Function { name };
        self.func_memory.set(None);
        run::run(&self.func, &loaded.callback, origin, keys, args, host, out)
    }

    /// Bytes both interpreters use (INFO used_memory_lua / used_memory_vm_functions).
    pub fn used_memory(&self) -> usize {
        let func = self.func_memory.get().unwrap_or_else(|| {
            let used = self.func.lua.used_memory();
            self.func_memory.set(Some(used));
            used
        });
        self.eval.lua.used_memory() + func
    }
}

/// The body with a `#!` line cut, its line feed kept (Redis keeps line numbers).
fn skip_shebang(body: &[u8]) -> Result<&[u8], String> {
    if !body.starts_with(b"#!") {
        return Ok(body);
    }
    match body.iter().position(|&b| b == b'\n') {
        Some(nl) => Ok(&body[nl..]),
        None => Err("ERR Invalid script shebang".to_string()),
    }
}

/// Lua's own message for a compile error (mlua wraps it).
fn lua_message(e: &mlua::Error) -> String {
    match e {
        mlua::Error::SyntaxError { message, .. } => message.clone(),
        mlua::Error::MemoryError(m) => m.clone(),
        other => other.to_string(),
    }
}

/// Runs a library's top level with the library API as its globals, under Redis's load
/// time limit; the error is FUNCTION LOAD's text.
fn load_top_level(sb: &Sandbox, api: &Table, f: Function) -> Result<(), String> {
    let fail = |e: mlua::Error| errors::registering(&format!("ERR {}", lua_message(&e)));
    sb.globals_read_through(api).map_err(fail)?;
    let started = Instant::now();
    let timed_out = std::rc::Rc::new(std::cell::Cell::new(false));
    let flag = timed_out.clone();
    let hook = sb.lua.set_hook(
        HookTriggers::new().every_nth_instruction(Vm::TICK_INSTRUCTIONS),
        move |lua: &Lua, _| {
            if flag.get() || started.elapsed() > LOAD_TIMEOUT {
                flag.set(true);
                // Every instruction from now on, as Redis's line hook: pcall cannot hold it.
                let again = flag.clone();
                lua.set_hook(HookTriggers::new().every_nth_instruction(1), move |_, _| {
                    again.set(true);
                    Err(mlua::Error::runtime(errors::LOAD_TIMEOUT))
                })?;
                return Err(mlua::Error::runtime(errors::LOAD_TIMEOUT));
            }
            Ok(VmState::Continue)
        },
    );
    let result = hook.and_then(|()| sb.plain_call(&f));
    let hook_back = sb.install_tick_hook();
    let restored = sb.globals_read_through(&sb.globals);
    if timed_out.get() {
        // The error may have been raised again on its way out of the pcall.
        return Err(errors::registering(&format!(
            "ERR {}",
            errors::LOAD_TIMEOUT
        )));
    }
    let (ok, err) = result.map_err(fail)?;
    restored.and(hook_back).map_err(fail)?;
    if ok {
        return Ok(());
    }
    Err(errors::registering(&load_error_text(&sb.lua, err)))
}

/// Redis's `luaExtractErrorInformation` for an error without the handler: a string is
/// "ERR <string>", a table its `err`.
fn load_error_text(lua: &Lua, err: Value) -> String {
    if let Value::Error(e) = &err {
        if let Some(r) = crate::sandbox::find_raise(e) {
            return r.text.clone();
        }
    }
    match err {
        Value::Table(t) => match t.get::<Value>("err") {
            Ok(Value::String(s)) => s.to_string_lossy(),
            Ok(Value::Number(n)) => crate::convert::format_g(n, 14),
            _ => "ERR unknown error".to_string(),
        },
        other => {
            let text = lua
                .coerce_string(other.clone())
                .ok()
                .flatten()
                .map(|s| s.to_string_lossy())
                .unwrap_or_else(|| other.to_string().unwrap_or_default());
            format!("ERR {text}")
        }
    }
}

#[cfg(test)]
#[path = "vm/tests.rs"]
pub(crate) mod tests;

#[cfg(test)]
#[path = "vm/run_tests.rs"]
mod run_tests;
