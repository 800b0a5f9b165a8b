//! The `redis` table, Redis's `pcall`, `math.random` / `math.randomseed`, the error handler
//! and the library API, as Redis 7.0.15 defines them.

use larder_resp::Protocol;
use mlua::{Function, Lua, MultiValue, Table, Value, Variadic};
use sha1::{Digest, Sha1};

use super::call::{
    call_functions, log_function, set_repl_function, CallContext, HostSlot, REPL_ALL,
};
use super::{Flavor, Shared, INTERNAL_CHUNK};
use crate::convert::{error_table, format_g};
use crate::errors::{self, error_table_text};
use crate::vm::{FunctionMeta, ScriptFlags};

/// The Redis version scripts see (`redis.REDIS_VERSION`, `redis.REDIS_VERSION_NUM`).
pub const VERSION: (&str, u32) = ("7.0.15", 0x07_00_0f);

/// `redisLrand48`'s initial state (`X0`, `X1`, `X2` in Redis's `rand.c`).
pub const RAND48_SEED: [u32; 3] = [0x330E, 0xABCD, 0x1234];

/// The Lua half of the API: wrappers that raise what the Rust half returns, Redis's
/// `pcall`, the protected-table `__index` and a plain pcall.
const PRELUDE: &str = r#"
local unwrap = ...
local type, rawpcall, rawxpcall, rawresume = type, pcall, xpcall, coroutine.resume
local function pcall_result(ok, ...)
  if ok then return true, ... end
  local e = ...
  if type(e) == 'userdata' then e = unwrap(e) end
  if type(e) == 'table' then
    local m = e.err
    local t = type(m)
    if t == 'string' or t == 'number' then e = m end
  end
  return false, e
end
local function resume_result(ok, ...)
  if ok then return true, ... end
  local e = ...
  if type(e) == 'userdata' then e = unwrap(e) end
  return false, e
end
local api = {}
function api.pcall(f, ...) return pcall_result(rawpcall(f, ...)) end
function api.xpcall(f, h)
  return rawxpcall(f, function(e)
    if type(e) == 'userdata' then e = unwrap(e) end
    return h(e)
  end)
end
function api.resume(co, ...) return resume_result(rawresume(co, ...)) end
function api.protected_index(t, k)
  local kt = type(k)
  if kt ~= 'string' and kt ~= 'number' then
    error('Second argument to luaProtectedTableError must be a string or number', 2)
  end
  error("Script attempted to access nonexistent global variable '" .. k .. "'", 2)
end
function api.plain(f) return rawpcall(f) end
api.string_meta = getmetatable('')
return api
"#;

/// What [`install`] hands back to the sandbox builder.
pub struct Internal {
    pub error_meta: Table,
    pub library_api: Table,
    pub string_meta: Option<Table>,
    pub handler: Function,
    pub plain: Function,
    /// What redis.call and redis.pcall point at: kept as long as the interpreter.
    pub call_context: Box<CallContext>,
}

/// An error table returned (not raised), as redis.error_reply's argument errors.
fn error_value(lua: &Lua, msg: &str) -> mlua::Result<Value> {
    Ok(Value::Table(error_table(lua, &error_table_text(msg))?))
}

/// An error a Rust half of the API raises: the error handler and Redis's `pcall` turn it
/// into the table `{err = text}` Redis's C functions raise.
#[derive(Debug)]
pub struct Raise {
    /// The `err` text, in [`error_table_text`] form.
    pub text: String,
    /// An error reply of a command (Redis marks it `ignore_error_stats_update`).
    pub from_command: bool,
    /// A `luaL_error` message rather than an error table: the error handler prefixes the
    /// caller's position ("user_script:1: ") and "ERR ", as Lua and Redis do.
    pub positioned: bool,
}

impl std::fmt::Display for Raise {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

impl std::error::Error for Raise {}

/// Raises `{err = msg}` (with "ERR " added when `msg` has no "-CODE").
pub fn raise(msg: &str) -> mlua::Error {
    mlua::Error::external(Raise {
        text: error_table_text(msg),
        from_command: false,
        positioned: false,
    })
}

/// Raises a `luaL_error` message (math.random's argument errors).
fn lua_error(msg: String) -> mlua::Error {
    mlua::Error::external(Raise {
        text: msg,
        from_command: false,
        positioned: true,
    })
}

/// The [`Raise`] inside `e`, through the callback wrappers mlua adds.
pub fn find_raise(e: &mlua::Error) -> Option<&Raise> {
    match e {
        mlua::Error::CallbackError { cause, .. } => find_raise(cause),
        mlua::Error::WithContext { cause, .. } => find_raise(cause),
        other => other.downcast_ref::<Raise>(),
    }
}

/// The Lua value Redis's C code would have raised where a Rust function raised `err`: the
/// error table of a [`Raise`] (Lua's own string for a positioned one), or the string a
/// library raised ([`crate::libs::raised_text`]); `None` for any other error.
pub fn lua_error_value(lua: &Lua, err: &mlua::Error) -> mlua::Result<Option<Value>> {
    if let Some(r) = find_raise(err) {
        if r.positioned {
            return Ok(Some(Value::String(lua.create_string(&r.text)?)));
        }
        return Ok(Some(Value::Table(raise_table(lua, r)?)));
    }
    match crate::libs::raised_text(err) {
        Some(text) => Ok(Some(Value::String(lua.create_string(text)?))),
        None => Ok(None),
    }
}

/// The table Redis raises for `r`.
pub fn raise_table(lua: &Lua, r: &Raise) -> mlua::Result<Table> {
    let t = error_table(lua, &r.text)?;
    if r.from_command {
        t.raw_set("ignore_error_stats_update", true)?;
    }
    Ok(t)
}

/// Lua's `lua_tolstring`: strings as they are, numbers as Lua prints them, others none.
pub fn to_lua_bytes(v: &Value) -> Option<Vec<u8>> {
    match v {
        Value::String(s) => Some(s.as_bytes().to_vec()),
        Value::Number(n) => Some(format_g(*n, 14).into_bytes()),
        Value::Integer(n) => Some(n.to_string().into_bytes()),
        _ => None,
    }
}

/// Lua's `lua_tonumber`: numbers, and strings that read as numbers; 0 otherwise.
pub(super) fn to_number(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => Some(*n),
        Value::Integer(n) => Some(*n as f64),
        Value::String(s) => {
            let s = s.to_str().ok()?;
            let s = s.trim();
            if let Some(hex) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
                u64::from_str_radix(hex, 16).ok().map(|n| n as f64)
            } else {
                s.parse().ok()
            }
        }
        _ => None,
    }
}

/// Sets up `globals.redis`, `globals.pcall`, math.random / math.randomseed and the library
/// API; returns the internal pieces.
pub fn install(
    lua: &Lua,
    globals: &Table,
    shared: &Shared,
    host: &HostSlot,
    flavor: Flavor,
) -> mlua::Result<Internal> {
    // What Lua code sees of an error a Rust function raised: Redis's error table, or the
    // string a library raised.
    let unwrap = lua.create_function(|lua, e: Value| match &e {
        Value::Error(err) => lua_error_value(lua, err).map(|v| v.unwrap_or(e)),
        _ => Ok(e),
    })?;
    let prelude: Table = lua.load(PRELUDE).set_name(INTERNAL_CHUNK).call(unwrap)?;

    let redis = lua.create_table()?;
    let (call, pcall, call_context) = call_functions(lua, shared.clone(), host.clone())?;
    redis.raw_set("call", call)?;
    redis.raw_set("pcall", pcall)?;
    let log = log_function(lua, shared.clone(), host.clone())?;
    add_log_and_version(&redis, &log)?;
    redis.raw_set("setresp", setresp_function(lua, shared.clone())?)?;
    redis.raw_set("sha1hex", lua.create_function(sha1hex)?)?;
    redis.raw_set("error_reply", lua.create_function(error_reply)?)?;
    redis.raw_set(
        "status_reply",
        lua.create_function(|lua, args: MultiValue| match (args.len(), args.front()) {
            (1, Some(Value::String(s))) => {
                let t = lua.create_table_with_capacity(0, 1)?;
                t.raw_set("ok", s.clone())?;
                Ok(Value::Table(t))
            }
            _ => error_value(lua, "wrong number or type of arguments"),
        })?,
    )?;
    redis.raw_set(
        "set_repl",
        set_repl_function(lua, shared.clone(), host.clone())?,
    )?;
    for (name, v) in [
        ("REPL_NONE", 0),
        ("REPL_AOF", 1),
        ("REPL_SLAVE", 2),
        ("REPL_REPLICA", 2),
        ("REPL_ALL", REPL_ALL),
    ] {
        redis.raw_set(name, v)?;
    }
    if flavor == Flavor::Eval {
        redis.raw_set(
            "breakpoint",
            lua.create_function(|_, _: MultiValue| Ok(false))?,
        )?;
        redis.raw_set("debug", lua.create_function(|_, _: MultiValue| Ok(()))?)?;
        redis.raw_set(
            "replicate_commands",
            lua.create_function(|_, _: MultiValue| Ok(true))?,
        )?;
    }
    globals.raw_set("redis", redis)?;
    globals.raw_set("pcall", prelude.raw_get::<Function>("pcall")?)?;
    globals.raw_set("xpcall", prelude.raw_get::<Function>("xpcall")?)?;
    let coroutine: Table = globals.raw_get("coroutine")?;
    coroutine.raw_set("resume", prelude.raw_get::<Function>("resume")?)?;

    let math: Table = globals.raw_get("math")?;
    math.raw_set("random", random_function(lua, shared.clone())?)?;
    math.raw_set("randomseed", randomseed_function(lua, shared.clone())?)?;

    let error_meta = lua.create_table()?;
    error_meta.raw_set("__index", prelude.raw_get::<Function>("protected_index")?)?;

    let library_api = lua.create_table()?;
    let lib_redis = lua.create_table()?;
    lib_redis.raw_set("register_function", register_function(lua, shared.clone())?)?;
    add_log_and_version(&lib_redis, &log)?;
    lib_redis.set_metatable(Some(error_meta.clone()))?;
    library_api.raw_set("redis", lib_redis)?;

    let tostring: Function = globals.raw_get("tostring")?;
    let handler = error_handler(lua, shared.clone(), tostring)?;
    Ok(Internal {
        error_meta,
        library_api,
        string_meta: prelude.raw_get("string_meta")?,
        handler,
        plain: prelude.raw_get("plain")?,
        call_context,
    })
}

fn add_log_and_version(redis: &Table, log: &Function) -> mlua::Result<()> {
    redis.raw_set("log", log.clone())?;
    for (name, level) in [
        ("LOG_DEBUG", 0),
        ("LOG_VERBOSE", 1),
        ("LOG_NOTICE", 2),
        ("LOG_WARNING", 3),
    ] {
        redis.raw_set(name, level)?;
    }
    redis.raw_set("REDIS_VERSION_NUM", VERSION.1)?;
    redis.raw_set("REDIS_VERSION", VERSION.0)?;
    Ok(())
}

fn setresp_function(lua: &Lua, shared: Shared) -> mlua::Result<Function> {
    lua.create_function(move |_, args: Variadic<Value>| {
        if !shared.borrow().running {
            return Err(raise(
                "redis.setresp can only be called inside a script invocation",
            ));
        }
        if args.len() != 1 {
            return Err(raise("redis.setresp() requires one argument."));
        }
        let proto = match to_number(&args[0]).map(|n| n as i32) {
            Some(2) => Protocol::Resp2,
            Some(3) => Protocol::Resp3,
            _ => return Err(raise("RESP version must be 2 or 3.")),
        };
        shared.borrow_mut().proto = proto;
        Ok(Value::Nil)
    })
}

fn sha1hex(lua: &Lua, args: Variadic<Value>) -> mlua::Result<Value> {
    if args.len() != 1 {
        return Err(raise("wrong number of arguments"));
    }
    let bytes = to_lua_bytes(&args[0]).unwrap_or_default();
    let digest = Sha1::digest(&bytes);
    let mut hex = String::with_capacity(40);
    for b in digest {
        hex.push_str(&format!("{b:02x}"));
    }
    Ok(Value::String(lua.create_string(&hex)?))
}

/// redis.error_reply(msg): `{err=msg}` with "ERR " added when `msg` has no code of its
/// own ("-CODE msg" keeps CODE).
fn error_reply(lua: &Lua, args: Variadic<Value>) -> mlua::Result<Value> {
    match (args.len(), args.first()) {
        (1, Some(Value::String(s))) => {
            let s = s.to_string_lossy();
            let buf = if s.starts_with('-') {
                s
            } else {
                format!("-{s}")
            };
            Ok(Value::Table(error_table(lua, &error_table_text(&buf))?))
        }
        _ => error_value(lua, "wrong number or type of arguments"),
    }
}

/// One step of Redis's `redisLrand48` (`rand.c`): a 48-bit linear congruential generator
/// in three 16-bit words.
fn rand48_next(x: &mut [u32; 3]) -> i32 {
    const A: u64 = 0x5_DEEC_E66D;
    let state = u64::from(x[0]) | (u64::from(x[1]) << 16) | (u64::from(x[2]) << 32);
    let next = state.wrapping_mul(A).wrapping_add(0xB) & 0xFFFF_FFFF_FFFF;
    x[0] = (next & 0xFFFF) as u32;
    x[1] = ((next >> 16) & 0xFFFF) as u32;
    x[2] = ((next >> 32) & 0xFFFF) as u32;
    ((x[2] << 15) + (x[1] >> 1)) as i32
}

fn random_function(lua: &Lua, shared: Shared) -> mlua::Result<Function> {
    lua.create_function(move |_, args: Variadic<Value>| {
        let mut state = shared.borrow_mut();
        if !state.running {
            return Err(raise(
                "math.random can only be called inside a script invocation",
            ));
        }
        let r = f64::from(rand48_next(&mut state.rand48) % i32::MAX) / f64::from(i32::MAX);
        drop(state);
        let int_arg = |i: usize| -> mlua::Result<i32> {
            to_number(&args[i]).map(|n| n as i32).ok_or_else(|| {
                lua_error(format!(
                    "bad argument #{} to 'random' (number expected, got {})",
                    i + 1,
                    args[i].type_name()
                ))
            })
        };
        let v = match args.len() {
            0 => r,
            1 => {
                let u = int_arg(0)?;
                if u < 1 {
                    return Err(lua_error(
                        "bad argument #1 to 'random' (interval is empty)".into(),
                    ));
                }
                (r * f64::from(u)).floor() + 1.0
            }
            2 => {
                let (l, u) = (int_arg(0)?, int_arg(1)?);
                if l > u {
                    return Err(lua_error(
                        "bad argument #2 to 'random' (interval is empty)".into(),
                    ));
                }
                (r * (f64::from(u) - f64::from(l) + 1.0)).floor() + f64::from(l)
            }
            _ => return Err(lua_error("wrong number of arguments".into())),
        };
        Ok(Value::Number(v))
    })
}

fn randomseed_function(lua: &Lua, shared: Shared) -> mlua::Result<Function> {
    lua.create_function(move |_, args: Variadic<Value>| {
        let mut state = shared.borrow_mut();
        if !state.running {
            return Err(raise(
                "math.randomseed can only be called inside a script invocation",
            ));
        }
        let seed = args.first().and_then(to_number).ok_or_else(|| {
            lua_error("bad argument #1 to 'randomseed' (number expected, got no value)".into())
        })? as i32;
        state.rand48 = [
            0x330E,
            (seed as u32) & 0xFFFF,
            ((seed as u32) >> 16) & 0xFFFF,
        ];
        Ok(Value::Nil)
    })
}

/// redis.register_function, both forms, with Redis's errors.
fn register_function(lua: &Lua, shared: Shared) -> mlua::Result<Function> {
    lua.create_function(move |_, args: Variadic<Value>| {
        if shared.borrow().registered.is_none() {
            return Err(raise("redis.register_function can only be called on FUNCTION LOAD command"));
        }
        let parsed = match args.len() {
            1 => named_args(&args[0])?,
            2 => positional_args(&args[0], &args[1]),
            _ => Err("wrong number of arguments to redis.register_function"),
        };
        let (meta, f) = match parsed {
            Ok(x) => x,
            Err(msg) => return Err(raise(msg)),
        };
        if !valid_name(&meta.name) {
            return Err(raise("Library names can only contain letters, numbers, or underscores(_) and must be at least one character long"));
        }
        let mut state = shared.borrow_mut();
        let list = state.registered.get_or_insert_with(Vec::new);
        if list.iter().any(|(m, _)| m.name == meta.name) {
            drop(state);
            return Err(raise("Function already exists in the library"));
        }
        list.push((meta, f));
        Ok(Value::Nil)
    })
}

/// Redis's `functionsVerifyName`: letters, digits and underscores, at least one.
pub fn valid_name(name: &str) -> bool {
    !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

type Registered = (FunctionMeta, Function);

fn positional_args(name: &Value, f: &Value) -> Result<Registered, &'static str> {
    let Some(name) = to_lua_bytes(name) else {
        return Err("first argument to redis.register_function must be a string");
    };
    let Value::Function(f) = f else {
        return Err("second argument to redis.register_function must be a function");
    };
    let meta = FunctionMeta {
        name: String::from_utf8_lossy(&name).into_owned(),
        description: None,
        flags: ScriptFlags::default(),
    };
    Ok((meta, f.clone()))
}

fn named_args(arg: &Value) -> mlua::Result<Result<Registered, &'static str>> {
    let Value::Table(t) = arg else {
        return Ok(Err("calling redis.register_function with a single argument is only applicable to Lua table (representing named arguments)."));
    };
    let (mut name, mut desc, mut callback, mut flags) = (None, None, None, 0u32);
    for kv in t.pairs::<Value, Value>() {
        let (k, v) = kv?;
        let Some(key) = to_lua_bytes(&k) else {
            return Ok(Err(
                "named argument key given to redis.register_function is not a string",
            ));
        };
        match String::from_utf8_lossy(&key).to_ascii_lowercase().as_str() {
            "function_name" => {
                match to_lua_bytes(&v) {
                    Some(s) => name = Some(String::from_utf8_lossy(&s).into_owned()),
                    None => return Ok(Err(
                        "function_name argument given to redis.register_function must be a string",
                    )),
                }
            }
            "description" => {
                match to_lua_bytes(&v) {
                    Some(s) => desc = Some(String::from_utf8_lossy(&s).into_owned()),
                    None => return Ok(Err(
                        "description argument given to redis.register_function must be a string",
                    )),
                }
            }
            "callback" => match v {
                Value::Function(f) => callback = Some(f),
                _ => {
                    return Ok(Err(
                        "callback argument given to redis.register_function must be a function",
                    ))
                }
            },
            "flags" => {
                let Value::Table(list) = v else {
                    return Ok(Err("flags argument to redis.register_function must be a table representing function flags"));
                };
                match read_flags(&list)? {
                    Some(f) => flags = f,
                    None => return Ok(Err("unknown flag given")),
                }
            }
            _ => return Ok(Err("unknown argument given to redis.register_function")),
        }
    }
    let Some(name) = name else {
        return Ok(Err(
            "redis.register_function must get a function name argument",
        ));
    };
    let Some(callback) = callback else {
        return Ok(Err("redis.register_function must get a callback argument"));
    };
    let meta = FunctionMeta {
        name,
        description: desc,
        flags: ScriptFlags(flags),
    };
    Ok(Ok((meta, callback)))
}

/// The flag names Redis accepts (`scripts_flags_def`), case-insensitively here.
pub const FLAG_NAMES: &[(&str, u32)] = &[
    ("no-writes", ScriptFlags::NO_WRITES),
    ("allow-oom", ScriptFlags::ALLOW_OOM),
    ("allow-stale", ScriptFlags::ALLOW_STALE),
    ("no-cluster", ScriptFlags::NO_CLUSTER),
    ("allow-cross-slot-keys", ScriptFlags::ALLOW_CROSS_SLOT_KEYS),
];

/// The flags of a `flags = {...}` list, `None` when one is not a known flag name.
fn read_flags(list: &Table) -> mlua::Result<Option<u32>> {
    let mut flags = 0;
    for i in 1.. {
        let v: Value = list.get(i)?;
        if v.is_nil() {
            break;
        }
        let Some(s) = to_lua_bytes(&v) else {
            return Ok(None);
        };
        let s = String::from_utf8_lossy(&s);
        match FLAG_NAMES.iter().find(|(n, _)| n.eq_ignore_ascii_case(&s)) {
            Some((_, f)) => flags |= f,
            None => return Ok(None),
        }
    }
    Ok(Some(flags))
}

/// Redis's `__redis__err__handler`: turns any error into a table with `err`, and adds
/// `source` and `line` of where it was raised (the caller when a C function raised it,
/// skipping larder's own Lua wrappers).
fn error_handler(lua: &Lua, shared: Shared, tostring: Function) -> mlua::Result<Function> {
    lua.create_function(move |lua, err: Value| {
        let aborted = shared.borrow().abort.is_some();
        let t = match err {
            _ if aborted => error_table(lua, &error_table_text(errors::KILLED))?,
            Value::Table(t) => t,
            Value::Error(e) if find_raise(&e).is_some_and(|r| r.positioned) => {
                let text = find_raise(&e).map(|r| r.text.clone()).unwrap_or_default();
                // luaL_where(L, 1): the position of the C function's caller.
                let place = lua
                    .inspect_stack(2, |d| match (d.source().short_src, d.current_line()) {
                        (Some(src), Some(line)) => format!("{src}:{line}: "),
                        _ => String::new(),
                    })
                    .unwrap_or_default();
                error_table(lua, &format!("ERR {place}{text}"))?
            }
            Value::Error(e) if find_raise(&e).is_some() => {
                raise_table(lua, find_raise(&e).ok_or_else(|| raise("unreachable"))?)?
            }
            // A library's error: its text already says where it was raised.
            Value::Error(e) if crate::libs::raised_text(&e).is_some() => {
                let text = crate::libs::raised_text(&e).unwrap_or_default();
                error_table(lua, &format!("ERR {text}"))?
            }
            other => {
                let text: mlua::LuaString = tostring.call(other)?;
                let mut msg = b"ERR ".to_vec();
                msg.extend_from_slice(&text.as_bytes());
                let t = lua.create_table_with_capacity(0, 3)?;
                t.raw_set("err", lua.create_string(&msg)?)?;
                t
            }
        };
        let mut level = 1;
        if lua.inspect_stack(level, |d| d.source().what == "C") == Some(true) {
            level += 1;
        }
        while lua.inspect_stack(level, |d| {
            d.source().source.as_deref() == Some(INTERNAL_CHUNK)
        }) == Some(true)
        {
            level += 1;
        }
        let place = lua.inspect_stack(level, |d| {
            let source = d.source().source.map(|s| s.into_owned());
            let line = d.current_line().map_or(-1, |l| l as i64);
            (source, line)
        });
        if let Some((source, line)) = place {
            if aborted {
                let source = source.clone().unwrap_or_default();
                shared.borrow_mut().abort_place = Some((source, line.to_string()));
            }
            t.set("source", source)?;
            t.set("line", line)?;
        }
        Ok(t)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rand48_matches_redis() {
        // The first values redisLrand48() returns from its initial state (the C code's
        // sequence, computed by its 16-bit-word arithmetic).
        let mut x = RAND48_SEED;
        let a = rand48_next(&mut x);
        let b = rand48_next(&mut x);
        assert_eq!((a, b), (851401618, 1804928587));
    }

    #[test]
    fn names() {
        assert!(valid_name("a_1"));
        assert!(!valid_name(""));
        assert!(!valid_name("f-1"));
    }
}
