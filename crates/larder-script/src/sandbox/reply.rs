//! A command's reply decoded straight onto the Lua stack, as Redis's
//! `redisProtocolToLuaType` does (the rules: [`crate::convert`]): redis.call returns what
//! this pushes, with no `mlua` value (and no registry handle for a string or a table) made
//! on the way.

use std::ffi::{c_char, c_int};

use mlua::{ffi, FromLua, Lua, Value};

use crate::convert::{malformed, Parser, REPLY_DEPTH_MAX};
use crate::errors;

/// Slots a value may take while it is built: a table, a key and a value.
const SLOTS_PER_LEVEL: c_int = 4;

/// Pushes `s` as a Lua string.
///
/// # Safety
/// `state` has a free stack slot; the memory cap is lifted.
#[allow(unsafe_code)]
pub(super) unsafe fn push_bytes(state: *mut ffi::lua_State, s: &[u8]) {
    // An empty slice's pointer is dangling: give Lua a real one, as `mlua` does.
    let p = if s.is_empty() {
        b"".as_ptr()
    } else {
        s.as_ptr()
    };
    // SAFETY: the caller's; Lua copies the bytes.
    unsafe { ffi::lua_pushlstring_(state, p.cast::<c_char>(), s.len()) }
}

/// Pushes Redis's error table `{err = text}`, with `ignore_error_stats_update = true` for
/// an error reply of a command (already counted in the error stats).
///
/// # Safety
/// As [`push_bytes`], with three free slots.
#[allow(unsafe_code)]
pub(super) unsafe fn push_error_table(state: *mut ffi::lua_State, text: &str, counted: bool) {
    // SAFETY: the caller's.
    unsafe {
        ffi::lua_createtable(state, 0, 2);
        push_bytes(state, b"err");
        push_bytes(state, text.as_bytes());
        ffi::lua_rawset(state, -3);
        if counted {
            push_bytes(state, b"ignore_error_stats_update");
            ffi::lua_pushboolean(state, 1);
            ffi::lua_rawset(state, -3);
        }
    }
}

/// Decodes the one reply at the start of `bytes` and pushes it; returns whether it was an
/// error reply (which redis.call raises). Malformed bytes are an error, never a panic; what
/// was pushed by then stays on the stack for the caller to drop.
///
/// # Safety
/// `state` is a live Lua thread this thread runs; the memory cap is lifted (no push
/// raises). Slots are checked for at every value.
#[allow(unsafe_code)]
pub(super) unsafe fn push_reply(state: *mut ffi::lua_State, bytes: &[u8]) -> mlua::Result<bool> {
    let mut p = Parser { bytes, pos: 0 };
    // SAFETY: the caller's.
    unsafe { p.push(state, 0)? };
    Ok(bytes.first() == Some(&b'-'))
}

/// [`push_reply`] as an `mlua` value, and whether it was an error reply: what the
/// conversion's tests check.
#[cfg(test)]
#[allow(unsafe_code)]
pub(crate) fn reply_to_value(lua: &Lua, bytes: &[u8]) -> mlua::Result<(Value, bool)> {
    let cap = lua.set_memory_limit(0)?;
    let decoded = lua.exec_raw_lua(|raw| {
        let state = raw.state();
        // SAFETY: `state` is the interpreter's current thread, not in a callback; the cap
        // is lifted; the stack is put back as it was.
        unsafe {
            let top = ffi::lua_gettop(state);
            let pushed = push_reply(state, bytes)
                .and_then(|is_error| Ok((Value::from_stack(-1, raw)?, is_error)));
            ffi::lua_settop(state, top);
            pushed
        }
    });
    lua.set_memory_limit(cap)?;
    decoded
}

/// `n` as a table size or index, if Lua can have one that big.
fn lua_size(n: usize) -> mlua::Result<c_int> {
    c_int::try_from(n).map_err(|_| malformed())
}

#[allow(unsafe_code)]
impl Parser<'_> {
    /// Pushes the value at the parser's position.
    ///
    /// # Safety
    /// As [`push_reply`].
    unsafe fn push(&mut self, state: *mut ffi::lua_State, depth: usize) -> mlua::Result<()> {
        if depth > REPLY_DEPTH_MAX {
            return Err(malformed());
        }
        // SAFETY: the caller's (for every call in this function); slots are made here.
        unsafe {
            if ffi::lua_checkstack(state, SLOTS_PER_LEVEL) == 0 {
                return Err(malformed());
            }
            let Some(&kind) = self.bytes.get(self.pos) else {
                return Err(malformed());
            };
            self.pos += 1;
            match kind {
                b'*' | b'%' | b'~' | b'|' => self.push_aggregate(state, kind, depth),
                _ => self.push_scalar(state, kind),
            }
        }
    }

    /// Arrays, maps, sets and attributes: the recursive kinds, kept apart from the scalars
    /// so each level of nesting costs a small stack frame.
    ///
    /// # Safety
    /// As [`push_reply`], with [`SLOTS_PER_LEVEL`] free slots.
    #[inline(never)]
    unsafe fn push_aggregate(
        &mut self,
        state: *mut ffi::lua_State,
        kind: u8,
        depth: usize,
    ) -> mlua::Result<()> {
        // SAFETY: the caller's; each element is pushed and then stored, so a level takes at
        // most a table, a key and a value.
        unsafe {
            match kind {
                b'*' => match self.len(3)? {
                    None => ffi::lua_pushboolean(state, 0),
                    Some(n) => {
                        ffi::lua_createtable(state, lua_size(n)?, 0);
                        for i in 1..=n {
                            self.push(state, depth + 1)?;
                            ffi::lua_rawseti_(state, -2, lua_size(i)?);
                        }
                    }
                },
                b'%' => {
                    let n = self.len(6)?.ok_or_else(malformed)?;
                    ffi::lua_createtable(state, 0, lua_size(n)?);
                    for _ in 0..n {
                        self.push(state, depth + 1)?;
                        self.push(state, depth + 1)?;
                        store_pair(state)?;
                    }
                    wrap(state, b"map");
                }
                b'~' => {
                    let n = self.len(3)?.ok_or_else(malformed)?;
                    ffi::lua_createtable(state, 0, lua_size(n)?);
                    for _ in 0..n {
                        self.push(state, depth + 1)?;
                        ffi::lua_pushboolean(state, 1);
                        store_pair(state)?;
                    }
                    wrap(state, b"set");
                }
                _ => {
                    // Attributes are not shown to scripts: skip them, then read the reply.
                    let n = self.len(6)?.ok_or_else(malformed)?;
                    for _ in 0..2 * n {
                        self.push(state, depth + 1)?;
                        ffi::lua_pop(state, 1);
                    }
                    return self.push(state, depth + 1);
                }
            }
        }
        Ok(())
    }

    /// # Safety
    /// As [`Parser::push_aggregate`].
    #[inline(never)]
    unsafe fn push_scalar(&mut self, state: *mut ffi::lua_State, kind: u8) -> mlua::Result<()> {
        // SAFETY: the caller's; a scalar takes at most three slots.
        unsafe {
            match kind {
                b':' => ffi::lua_pushnumber(state, self.int()? as f64),
                b'$' => match self.len(1)? {
                    None => ffi::lua_pushboolean(state, 0),
                    Some(n) => push_bytes(state, self.bulk(n)?),
                },
                b'+' => {
                    let line = self.line()?;
                    ffi::lua_createtable(state, 0, 1);
                    push_bytes(state, b"ok");
                    push_bytes(state, line);
                    ffi::lua_rawset(state, -3);
                }
                b'-' => {
                    let line = self.line()?;
                    let mut text = String::with_capacity(line.len() + 1);
                    text.push('-');
                    text.push_str(&String::from_utf8_lossy(line));
                    // Redis marks errors that already counted in the error stats.
                    push_error_table(state, &errors::error_table_text(&text), true);
                }
                b'_' => {
                    self.line()?;
                    ffi::lua_pushnil(state);
                }
                b'#' => match self.line()? {
                    b"t" => ffi::lua_pushboolean(state, 1),
                    b"f" => ffi::lua_pushboolean(state, 0),
                    _ => return Err(malformed()),
                },
                b',' => {
                    let line = self.line()?;
                    let d = std::str::from_utf8(line)
                        .ok()
                        .and_then(|s| s.parse::<f64>().ok())
                        .ok_or_else(malformed)?;
                    ffi::lua_pushnumber(state, d);
                    wrap(state, b"double");
                }
                b'(' => {
                    push_bytes(state, self.line()?);
                    wrap(state, b"big_number");
                }
                b'=' => {
                    let n = self.len(1)?.ok_or_else(malformed)?;
                    let body = self.bulk(n)?;
                    if body.len() < 4 || body[3] != b':' {
                        return Err(malformed());
                    }
                    ffi::lua_createtable(state, 0, 2);
                    push_bytes(state, b"string");
                    push_bytes(state, &body[4..]);
                    ffi::lua_rawset(state, -3);
                    push_bytes(state, b"format");
                    push_bytes(state, &body[..3]);
                    ffi::lua_rawset(state, -3);
                    wrap(state, b"verbatim_string");
                }
                _ => return Err(malformed()),
            }
        }
        Ok(())
    }
}

/// Stores the key and value on top into the table below them. A key Lua cannot index by
/// (nil, NaN) is malformed: `lua_rawset` would raise.
///
/// # Safety
/// As [`push_reply`]; the stack holds a table, a key and a value on top.
#[allow(unsafe_code)]
unsafe fn store_pair(state: *mut ffi::lua_State) -> mlua::Result<()> {
    // SAFETY: the caller's.
    unsafe {
        let bad_key = match ffi::lua_type(state, -2) {
            ffi::LUA_TNIL => true,
            ffi::LUA_TNUMBER => ffi::lua_tonumber(state, -2).is_nan(),
            _ => false,
        };
        if bad_key {
            return Err(malformed());
        }
        ffi::lua_rawset(state, -3);
    }
    Ok(())
}

/// Replaces the value on top with `{name = value}`.
///
/// # Safety
/// As [`push_reply`], with three free slots.
#[allow(unsafe_code)]
unsafe fn wrap(state: *mut ffi::lua_State, name: &[u8]) {
    // SAFETY: the caller's.
    unsafe {
        ffi::lua_createtable(state, 0, 1);
        push_bytes(state, name);
        ffi::lua_pushvalue(state, -3);
        ffi::lua_rawset(state, -3);
        ffi::lua_replace(state, -2);
    }
}

/// What [`crate::convert`] needs of a script's result table: the first of Redis's special
/// fields (from `fields[start..]`, each a name and the Lua type it must have) that is
/// there, or else the array part up to its first nil.
pub(crate) enum Shape {
    /// `fields[i]`'s value.
    Field(usize, Value),
    Array(Vec<Value>),
}

/// Looks `t`'s shape up through the Lua C API: one push of the table, a raw lookup per
/// field and per item (an `mlua` `raw_get` of each cost several times the lookup).
///
/// Called with the memory cap lifted.
#[allow(unsafe_code)]
pub(crate) fn table_shape(
    lua: &Lua,
    t: &mlua::Table,
    fields: &[(&mlua::LuaString, c_int)],
    start: usize,
) -> mlua::Result<Shape> {
    use mlua::IntoLua;
    lua.exec_raw_lua(|raw| {
        let state = raw.state();
        // SAFETY: `state` is the interpreter's current thread, not in a callback, with the
        // cap lifted (no push raises); raw gets run no metamethod; the stack is put back.
        unsafe {
            let top = ffi::lua_gettop(state);
            if ffi::lua_checkstack(state, 4) == 0 {
                return Err(mlua::Error::StackError);
            }
            let shape = (|| {
                t.push_into_stack(raw)?;
                for (i, &(name, kind)) in fields.iter().enumerate().skip(start) {
                    name.push_into_stack(raw)?;
                    ffi::lua_rawget(state, -2);
                    if ffi::lua_type(state, -1) == kind {
                        return Ok(Shape::Field(i, Value::from_stack(-1, raw)?));
                    }
                    ffi::lua_pop(state, 1);
                }
                let mut items = Vec::new();
                loop {
                    ffi::lua_rawgeti_(state, -1, lua_size(items.len() + 1)?);
                    if ffi::lua_type(state, -1) == ffi::LUA_TNIL {
                        break;
                    }
                    items.push(Value::from_stack(-1, raw)?);
                    ffi::lua_pop(state, 1);
                }
                Ok(Shape::Array(items))
            })();
            ffi::lua_settop(state, top);
            shape
        }
    })
}
