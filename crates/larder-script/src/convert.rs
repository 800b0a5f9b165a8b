//! Conversions between RESP replies and Lua values, as Redis 7.0's `script_lua.c` does them.
//!
//! - replies to Lua ([`crate::sandbox::reply`], which pushes them onto the Lua stack; the
//!   integer and length parsing here): the bytes of one reply a command wrote (in the
//!   script's protocol) to the Lua value redis.call returns, decoded straight from the bytes
//!   as Redis's `redisProtocolToLuaType` does: integers to numbers, bulk strings to strings, nil bulk and
//!   nil array to `false`, status to `{ok=...}`, errors to `{err=...}`, and under RESP3 null
//!   to `nil`, booleans to booleans, doubles to `{double=n}`, maps to `{map={...}}`, sets to
//!   `{set={...}}`, big numbers to `{big_number=s}`, verbatim strings to
//!   `{verbatim_string={format=, string=}}`; attributes are skipped.
//! - [`lua_to_reply`]: a script's result to the client's reply, as `luaReplyToRedisReply`.

use larder_resp::{Protocol, ReplyBuf};
use mlua::{Lua, LuaString, Table, Value};

use crate::errors;

/// How deep a reply from a command may nest before its decoder refuses it (commands
/// nest a few levels; the parser recurses, so the bound keeps the thread stack safe).
pub(crate) const REPLY_DEPTH_MAX: usize = 128;

/// Redis converts a result on the Lua stack, which holds at most this many slots
/// (`LUAI_MAXCSTACK`); `luaReplyToRedisReply` asks for 4 free ones at every value.
const LUA_STACK_SLOTS: usize = 8000;
/// Slots in use when the conversion of a script's result starts (error handler, result).
const FIRST_SLOT: usize = 2;

/// A table `{err = text}` as Redis builds for an error reply, `text` already in
/// [`errors::error_table_text`] form.
pub fn error_table(lua: &Lua, text: &str) -> mlua::Result<Table> {
    let t = lua.create_table_with_capacity(0, 2)?;
    t.raw_set("err", text)?;
    Ok(t)
}

pub(crate) struct Parser<'a> {
    pub(crate) bytes: &'a [u8],
    pub(crate) pos: usize,
}

pub(crate) fn malformed() -> mlua::Error {
    mlua::Error::runtime("malformed reply from a script's command")
}

impl<'a> Parser<'a> {
    /// The line after the type byte, without its CRLF.
    pub(crate) fn line(&mut self) -> mlua::Result<&'a [u8]> {
        let rest = &self.bytes[self.pos..];
        let end = memchr_crlf(rest).ok_or_else(malformed)?;
        self.pos += end + 2;
        Ok(&rest[..end])
    }

    /// An integer line as `str::parse::<i64>` reads one (an optional sign, then digits).
    pub(crate) fn int(&mut self) -> mlua::Result<i64> {
        let line = self.line()?;
        let (negative, digits) = match line {
            [b'-', rest @ ..] => (true, rest),
            [b'+', rest @ ..] => (false, rest),
            _ => (false, line),
        };
        if digits.is_empty() {
            return Err(malformed());
        }
        let mut n: i64 = 0;
        for &c in digits {
            if !c.is_ascii_digit() {
                return Err(malformed());
            }
            let d = i64::from(c - b'0');
            // Built negative: i64::MIN has no positive twin.
            n = n
                .checked_mul(10)
                .and_then(|n| n.checked_sub(d))
                .ok_or_else(malformed)?;
        }
        if negative {
            Ok(n)
        } else {
            n.checked_neg().ok_or_else(malformed)
        }
    }

    /// A length that must be no more than what remains (each element takes at least 3
    /// bytes, each byte of a string one).
    pub(crate) fn len(&mut self, per_item: usize) -> mlua::Result<Option<usize>> {
        let n = self.int()?;
        if n < 0 {
            return Ok(None);
        }
        let n = usize::try_from(n).map_err(|_| malformed())?;
        let remaining = self.bytes.len() - self.pos;
        if n.checked_mul(per_item).is_none_or(|need| need > remaining) {
            return Err(malformed());
        }
        Ok(Some(n))
    }

    pub(crate) fn bulk(&mut self, n: usize) -> mlua::Result<&'a [u8]> {
        let end = self.pos + n;
        if self.bytes.get(end..end + 2) != Some(b"\r\n") {
            return Err(malformed());
        }
        let s = &self.bytes[self.pos..end];
        self.pos = end + 2;
        Ok(s)
    }
}

fn memchr_crlf(s: &[u8]) -> Option<usize> {
    s.windows(2).position(|w| w == b"\r\n")
}

/// C's `printf("%.<precision>g", n)`: Lua prints numbers with precision 14, Redis passes
/// numbers to commands with 17.
pub fn format_g(n: f64, precision: usize) -> String {
    if n.is_nan() {
        return if n.is_sign_negative() { "-nan" } else { "nan" }.to_string();
    }
    if n.is_infinite() {
        return if n < 0.0 { "-inf" } else { "inf" }.to_string();
    }
    if n == 0.0 {
        return if n.is_sign_negative() { "-0" } else { "0" }.to_string();
    }
    let p = precision.max(1);
    let sci = format!("{:.*e}", p - 1, n);
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i64 = exp.parse().unwrap_or(0);
    if exp < -4 || exp >= p as i64 {
        let mantissa = strip_zeros(mantissa);
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{mantissa}e{sign}{:02}", exp.abs())
    } else {
        let decimals = (p as i64 - 1 - exp).max(0) as usize;
        strip_zeros(&format!("{n:.decimals$}")).to_string()
    }
}

/// `1.500` -> `1.5`, `2.000` -> `2`; integers unchanged.
fn strip_zeros(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

/// What is left to write for [`lua_to_reply`]'s explicit stack (results nest as deep as a
/// script likes, so the conversion does not recurse).
struct Pending {
    value: Value,
    /// The Lua stack slot Redis would hold this value in.
    slot: usize,
}

/// The field names [`lua_to_reply`] looks up in every table, made once per interpreter: a
/// name made for each lookup cost more than the lookup.
pub struct FieldNames {
    err: LuaString,
    ok: LuaString,
    double: LuaString,
    big_number: LuaString,
    verbatim_string: LuaString,
    format: LuaString,
    string: LuaString,
    map: LuaString,
    set: LuaString,
}

impl FieldNames {
    pub fn new(lua: &Lua) -> mlua::Result<FieldNames> {
        Ok(FieldNames {
            err: lua.create_string("err")?,
            ok: lua.create_string("ok")?,
            double: lua.create_string("double")?,
            big_number: lua.create_string("big_number")?,
            verbatim_string: lua.create_string("verbatim_string")?,
            format: lua.create_string("format")?,
            string: lua.create_string("string")?,
            map: lua.create_string("map")?,
            set: lua.create_string("set")?,
        })
    }
}

/// Writes a script's result `value` into `out` (the client's protocol) as Redis's
/// `luaReplyToRedisReply`; `names` are the interpreter's [`FieldNames`]. `script_proto` is the protocol the script chose with
/// redis.setresp: under RESP2 `true` is `:1` and `false` a null; under RESP3 they are
/// booleans (which a RESP2 client sees as `:1` / `:0`).
pub fn lua_to_reply(
    lua: &Lua,
    value: Value,
    script_proto: Protocol,
    out: &mut ReplyBuf,
    names: &FieldNames,
) -> mlua::Result<()> {
    let Value::Table(t) = value else {
        // A plain value (most results): no stack to make.
        scalar_to_reply(value, script_proto, out);
        return Ok(());
    };
    let mut stack = vec![Pending {
        value: Value::Table(t),
        slot: FIRST_SLOT,
    }];
    while let Some(Pending { value, slot }) = stack.pop() {
        if slot + 4 > LUA_STACK_SLOTS {
            out.error(errors::STACK_LIMIT);
            continue;
        }
        match value {
            Value::Table(t) => table_to_reply(lua, t, slot, out, &mut stack, names)?,
            other => scalar_to_reply(other, script_proto, out),
        }
    }
    Ok(())
}

/// [`lua_to_reply`] of anything but a table.
fn scalar_to_reply(value: Value, script_proto: Protocol, out: &mut ReplyBuf) {
    match value {
        Value::String(s) => out.bulk(&s.as_bytes()),
        Value::Boolean(b) => match script_proto {
            Protocol::Resp2 if b => out.int(1),
            Protocol::Resp2 => out.null(),
            Protocol::Resp3 => out.boolean(b),
        },
        Value::Number(n) => out.int(number_to_int(n)),
        Value::Integer(n) => out.int(n),
        _ => out.null(),
    }
}

/// A Lua number as C's `(long long)` cast on x86-64 gives it: truncated toward zero, and
/// `i64::MIN` for NaN and values out of range.
fn number_to_int(n: f64) -> i64 {
    // 2^63: the first double past i64::MAX.
    const LIMIT: f64 = 9_223_372_036_854_775_808.0;
    if !(-LIMIT..LIMIT).contains(&n) {
        i64::MIN
    } else {
        n as i64
    }
}

/// Redis's `addReplyDouble` (`%.17g`), whose NaN keeps its sign ("-nan" for Lua's 0/0).
fn double_reply(d: f64, out: &mut ReplyBuf) {
    if !d.is_nan() {
        return out.score(d);
    }
    let text = format_g(d, 17);
    match out.proto {
        Protocol::Resp2 => out.bulk(text.as_bytes()),
        Protocol::Resp3 => {
            out.raw(b",");
            out.raw(text.as_bytes());
            out.raw(b"\r\n");
        }
    }
}

fn table_to_reply(
    lua: &Lua,
    t: Table,
    slot: usize,
    out: &mut ReplyBuf,
    stack: &mut Vec<Pending>,
    names: &FieldNames,
) -> mlua::Result<()> {
    use crate::sandbox::reply::{table_shape, Shape};
    use mlua::ffi::{LUA_TNUMBER, LUA_TSTRING, LUA_TTABLE};
    // Redis's checks, in its order, each for a field of one type.
    const ERR: usize = 0;
    const OK: usize = 1;
    const DOUBLE: usize = 2;
    const BIG_NUMBER: usize = 3;
    const VERBATIM: usize = 4;
    const MAP: usize = 5;
    const SET: usize = 6;
    let fields = [
        (&names.err, LUA_TSTRING),
        (&names.ok, LUA_TSTRING),
        (&names.double, LUA_TNUMBER),
        (&names.big_number, LUA_TSTRING),
        (&names.verbatim_string, LUA_TTABLE),
        (&names.map, LUA_TTABLE),
        (&names.set, LUA_TTABLE),
    ];
    let mut start = 0;
    loop {
        match table_shape(lua, &t, &fields, start)? {
            Shape::Field(ERR, Value::String(err)) => {
                out.error(&format!("-{}", err.to_string_lossy()));
            }
            Shape::Field(OK, Value::String(ok)) => out.simple(&ok.to_string_lossy()),
            Shape::Field(DOUBLE, Value::Number(d)) => double_reply(d, out),
            Shape::Field(DOUBLE, Value::Integer(n)) => double_reply(n as f64, out),
            Shape::Field(BIG_NUMBER, Value::String(digits)) => {
                let digits = digits.to_string_lossy().replace(['\r', '\n'], " ");
                out.big_number(&digits);
            }
            Shape::Field(VERBATIM, Value::Table(v)) => {
                let (format, text) = (
                    v.raw_get::<Value>(&names.format)?,
                    v.raw_get::<Value>(&names.string)?,
                );
                let (Value::String(format), Value::String(text)) = (format, text) else {
                    // Not a verbatim string after all: Redis goes on to the next checks.
                    start = VERBATIM + 1;
                    continue;
                };
                let format = format.to_string_lossy();
                out.verbatim(
                    if format.len() == 3 { &format } else { "txt" },
                    &text.as_bytes(),
                );
            }
            Shape::Field(MAP, Value::Table(map)) => {
                let pairs: Vec<(Value, Value)> = map.pairs().collect::<mlua::Result<_>>()?;
                out.map(pairs.len());
                // Key before value, first pair first: push in reverse.
                for (k, v) in pairs.into_iter().rev() {
                    stack.push(Pending {
                        value: v,
                        slot: slot + 3,
                    });
                    stack.push(Pending {
                        value: k,
                        slot: slot + 4,
                    });
                }
            }
            Shape::Field(SET, Value::Table(set)) => {
                let members: Vec<Value> = set
                    .pairs::<Value, Value>()
                    .map(|kv| kv.map(|(k, _)| k))
                    .collect::<mlua::Result<_>>()?;
                out.set(members.len());
                for m in members.into_iter().rev() {
                    stack.push(Pending {
                        value: m,
                        slot: slot + 3,
                    });
                }
            }
            Shape::Field(..) => return Err(mlua::Error::runtime("unexpected result field")),
            Shape::Array(items) => {
                // An array, cut at the first nil.
                out.array(items.len());
                for v in items.into_iter().rev() {
                    stack.push(Pending {
                        value: v,
                        slot: slot + 1,
                    });
                }
            }
        }
        return Ok(());
    }
}

#[cfg(test)]
#[path = "convert/tests.rs"]
mod tests;
