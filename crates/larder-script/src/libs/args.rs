//! What the C libraries get from Lua's auxiliary library (`luaL_check*`, `luaL_argerror`,
//! `luaL_error`), with the same coercions and error texts, and the C conversions from
//! `double` whose results on x86-64 the libraries' outputs depend on.

use mlua::{Error, Lua, MultiValue, Table, Value};

/// Lua 5.1's `LUAI_MAXCSTACK`: the stack slots one C function may use. The libraries fail
/// with Redis's texts where their C originals would run past it.
pub(crate) const MAX_C_STACK: usize = 8000;

/// A library function: its arguments in, its results out.
pub(crate) type LibFn = fn(&mut Args) -> mlua::Result<Vec<Value>>;

/// Sets each of `funcs` as a field of `t`.
pub(crate) fn register(lua: &Lua, t: &Table, funcs: &[(&str, LibFn)]) -> mlua::Result<()> {
    for &(name, f) in funcs {
        let func = lua.create_function(move |lua, args: MultiValue| {
            f(&mut Args::new(lua, args)).map(MultiValue::from_vec)
        })?;
        t.raw_set(name, func)?;
    }
    Ok(())
}

/// The longest string an encoder builds (Redis's `proto-max-bulk-len` default). Tables
/// that share subtables can describe far more output than they hold; past this the C
/// libraries would grow their buffers until the allocator gave up, and here the call raises
/// Lua's out-of-memory text instead.
pub(crate) const MAX_OUTPUT_BYTES: usize = 512 * 1024 * 1024;

/// The error for output past [`MAX_OUTPUT_BYTES`].
pub(crate) fn output_too_large() -> Error {
    raise_bare("not enough memory")
}

/// The arguments of one library call, 1-based as in Lua.
pub(crate) struct Args<'a> {
    lua: &'a Lua,
    vals: Vec<Value>,
}

impl<'a> Args<'a> {
    pub(crate) fn new(lua: &'a Lua, args: MultiValue) -> Args<'a> {
        Args {
            lua,
            vals: args.into_vec(),
        }
    }

    pub(crate) fn lua(&self) -> &'a Lua {
        self.lua
    }

    /// A nil pushed after the arguments, as `struct.pack` does before reading them: a
    /// missing argument right after the last one is then nil rather than "no value".
    pub(crate) fn push_nil(&mut self) {
        self.vals.push(Value::Nil);
    }

    /// `lua_gettop`.
    pub(crate) fn len(&self) -> usize {
        self.vals.len()
    }

    /// Argument `n`, `None` when there is no such argument ("no value").
    pub(crate) fn get(&self, n: usize) -> Option<&Value> {
        n.checked_sub(1).and_then(|i| self.vals.get(i))
    }

    /// `lua_isnoneornil`.
    pub(crate) fn is_none_or_nil(&self, n: usize) -> bool {
        matches!(self.get(n), None | Some(Value::Nil))
    }

    /// `lua_tonumber` and `lua_isnumber` together: numbers, and strings Lua converts.
    pub(crate) fn to_number(&self, n: usize) -> mlua::Result<Option<f64>> {
        match self.get(n) {
            Some(v) => number_of(self.lua, v),
            None => Ok(None),
        }
    }

    /// `luaL_checknumber`.
    pub(crate) fn check_number(&self, n: usize) -> mlua::Result<f64> {
        self.to_number(n)?
            .ok_or_else(|| self.type_error(n, "number"))
    }

    /// `luaL_checkinteger`: the number truncated as C casts it to `lua_Integer`.
    pub(crate) fn check_integer(&self, n: usize) -> mlua::Result<i64> {
        Ok(c_double_to_i64(self.check_number(n)?))
    }

    /// `luaL_optinteger`.
    pub(crate) fn opt_integer(&self, n: usize, default: i64) -> mlua::Result<i64> {
        if self.is_none_or_nil(n) {
            Ok(default)
        } else {
            self.check_integer(n)
        }
    }

    /// `luaL_checklstring`: strings, and numbers as Lua formats them.
    pub(crate) fn check_bytes(&self, n: usize) -> mlua::Result<mlua::LuaString> {
        let s = match self.get(n) {
            Some(Value::String(s)) => Some(s.clone()),
            Some(v @ (Value::Integer(_) | Value::Number(_))) => {
                self.lua.coerce_string(v.clone())?
            }
            _ => None,
        };
        s.ok_or_else(|| self.type_error(n, "string"))
    }

    /// `luaL_typerror`.
    pub(crate) fn type_error(&self, n: usize, expected: &str) -> Error {
        let got = self.get(n).map_or("no value", type_name);
        self.arg_error(n, &format!("{expected} expected, got {got}"))
    }

    /// `luaL_argerror`: names the function as its caller called it.
    pub(crate) fn arg_error(&self, n: usize, msg: &str) -> Error {
        let called = self.lua.inspect_stack(0, |d| {
            let names = d.names();
            (names.name.map(|s| s.into_owned()), names.name_what)
        });
        let Some((name, what)) = called else {
            return raise(self.lua, &format!("bad argument #{n} ({msg})"));
        };
        let mut n = n as i64;
        if what == Some("method") {
            n -= 1;
            if n == 0 {
                let name = name.as_deref().unwrap_or("?");
                return raise(self.lua, &format!("calling '{name}' on bad self ({msg})"));
            }
        }
        let name = name.as_deref().unwrap_or("?");
        raise(self.lua, &format!("bad argument #{n} to '{name}' ({msg})"))
    }
}

/// `lua_tonumber` of one value, `None` where `lua_isnumber` is false.
pub(crate) fn number_of(lua: &Lua, v: &Value) -> mlua::Result<Option<f64>> {
    Ok(match v {
        Value::Number(x) => Some(*x),
        Value::Integer(i) => Some(*i as f64),
        Value::String(_) => lua.coerce_number(v.clone())?,
        _ => None,
    })
}

/// `luaL_error`: the message with the position of the calling Lua code (`luaL_where(L, 1)`),
/// as a Lua error. The vm shows it to scripts as this text (see [`super::raised_text`]).
pub(crate) fn raise(lua: &Lua, msg: &str) -> Error {
    Error::RuntimeError(format!("{}{msg}", where_prefix(lua)))
}

/// An error Lua itself raises without a position (`luaG_runerror` from a C function), such
/// as "table index is nil".
pub(crate) fn raise_bare(msg: &str) -> Error {
    Error::RuntimeError(msg.to_string())
}

fn where_prefix(lua: &Lua) -> String {
    lua.inspect_stack(1, |d| {
        let line = d.current_line().filter(|&l| l > 0)?;
        let src = d.source().short_src?.into_owned();
        Some(format!("{src}:{line}: "))
    })
    .flatten()
    .unwrap_or_default()
}

/// `luaL_typename`.
pub(crate) fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Nil => "nil",
        Value::Boolean(_) => "boolean",
        Value::LightUserData(_) | Value::UserData(_) | Value::Error(_) => "userdata",
        Value::Integer(_) | Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Table(_) => "table",
        Value::Function(_) => "function",
        Value::Thread(_) => "thread",
        _ => "userdata",
    }
}

/// The number a value holds when it is a Lua number (not a string).
pub(crate) fn as_number(v: &Value) -> Option<f64> {
    match v {
        Value::Number(x) => Some(*x),
        Value::Integer(i) => Some(*i as f64),
        _ => None,
    }
}

/// C's `(int64_t)d` on x86-64 (`cvttsd2si`): truncation, and `INT64_MIN` for NaN and for
/// values out of range.
pub(crate) fn c_double_to_i64(d: f64) -> i64 {
    const LIMIT: f64 = 9_223_372_036_854_775_808.0; // 2^63
    if !(-LIMIT..LIMIT).contains(&d) {
        i64::MIN
    } else {
        d as i64
    }
}

/// C's `(int32_t)d` on x86-64: truncation, and `INT32_MIN` for NaN and out of range.
pub(crate) fn c_double_to_i32(d: f64) -> i32 {
    // Truncation keeps values above -2^31 - 1 and below 2^31 (NaN is in no range).
    if !(-2_147_483_648.0..2_147_483_648.0).contains(&d.trunc()) {
        i32::MIN
    } else {
        d as i32
    }
}

/// C's `(uint64_t)d` as gcc compiles it for x86-64: below 2^63 through `cvttsd2si`, from
/// 2^63 on by subtracting 2^63 first and setting the top bit again.
pub(crate) fn c_double_to_u64(d: f64) -> u64 {
    const TOP: f64 = 9_223_372_036_854_775_808.0; // 2^63
    if d >= TOP {
        (c_double_to_i64(d - TOP) as u64) ^ (1 << 63)
    } else {
        c_double_to_i64(d) as u64
    }
}
