//! `cjson.encode`: Lua values to JSON text, with an explicit stack instead of recursion so
//! that no nesting the settings allow can exhaust the thread's stack.

use mlua::{Lua, Table, Value};

use super::number::format_g;
use super::{Config, InvalidNumbers};
use crate::libs::args::{
    as_number, c_double_to_i32, output_too_large, raise, type_name, MAX_C_STACK, MAX_OUTPUT_BYTES,
};

/// A key of a table being written, copied out of Lua so that no reference is held per key.
enum Key {
    Str(Vec<u8>),
    Num(f64),
    /// A key of another type (an error once reached), by its type's name.
    Other(&'static str),
}

/// A table being written.
enum Frame {
    /// Elements `next..=len` are still to come.
    Array { len: i32, next: i32 },
    /// The remaining keys, in `next` order.
    Object {
        keys: std::vec::IntoIter<Key>,
        first: bool,
    },
}

impl Frame {
    /// Lua stack slots lua_cjson holds while inside this table: the element, or the key and
    /// the value.
    fn slots(&self) -> usize {
        match self {
            Frame::Array { .. } => 1,
            Frame::Object { .. } => 2,
        }
    }
}

pub(super) fn encode(lua: &Lua, cfg: &Config, root: Value) -> mlua::Result<Vec<u8>> {
    let mut out = Vec::new();
    let mut stack: Vec<Frame> = Vec::new();
    // The open tables, at their depth: one Lua reference however deep the nesting.
    let open = lua.create_table()?;
    // The encoder's Lua stack use: its argument plus what open tables hold.
    let mut slots = 1;
    let mut pending = Some(root);
    loop {
        if let Some(v) = pending.take() {
            if let Value::Table(t) = v {
                let depth = stack.len() + 1;
                if depth > cfg.encode_max_depth as usize || slots + 3 > MAX_C_STACK {
                    let msg = format!("Cannot serialise, excessive nesting ({depth})");
                    return Err(raise(lua, &msg));
                }
                let frame = open_table(lua, cfg, &t, &mut out)?;
                open.raw_set(depth, t)?;
                slots += frame.slots();
                stack.push(frame);
            } else {
                append_scalar(lua, cfg, &v, &mut out)?;
            }
            if out.len() > MAX_OUTPUT_BYTES {
                return Err(output_too_large());
            }
        }
        let depth = stack.len();
        let Some(top) = stack.last_mut() else { break };
        match top {
            Frame::Array { len, next } => {
                if *next <= *len {
                    if *next > 1 {
                        out.push(b',');
                    }
                    let t: Table = open.raw_get(depth)?;
                    pending = Some(t.raw_get(*next)?);
                    *next += 1;
                    continue;
                }
                out.push(b']');
            }
            Frame::Object { keys, first } => {
                if let Some(k) = keys.next() {
                    if !*first {
                        out.push(b',');
                    }
                    *first = false;
                    let key = append_key(lua, cfg, k, &mut out)?;
                    let t: Table = open.raw_get(depth)?;
                    pending = Some(t.raw_get(key)?);
                    continue;
                }
                out.push(b'}');
            }
        }
        open.raw_set(depth, Value::Nil)?;
        if let Some(done) = stack.pop() {
            slots -= done.slots();
        }
    }
    Ok(out)
}

/// Writes a table's opening bracket and returns the frame that writes the rest:
/// `lua_array_length` decides between array and object.
fn open_table(lua: &Lua, cfg: &Config, t: &Table, out: &mut Vec<u8>) -> mlua::Result<Frame> {
    let mut keys = Vec::new();
    t.for_each(|k: Value, _: Value| {
        keys.push(match &k {
            Value::String(s) => Key::Str(s.as_bytes().to_vec()),
            _ => match as_number(&k) {
                Some(n) => Key::Num(n),
                None => Key::Other(type_name(&k)),
            },
        });
        Ok(())
    })?;
    let mut max: i32 = 0;
    let mut items: i32 = 0;
    let mut is_array = true;
    for k in &keys {
        match k {
            Key::Num(n) if *n != 0.0 && n.floor() == *n && *n >= 1.0 => {
                // lua_cjson keeps the largest index in an int.
                if *n > f64::from(max) {
                    max = c_double_to_i32(*n);
                }
                items = items.wrapping_add(1);
            }
            _ => {
                is_array = false;
                break;
            }
        }
    }
    if is_array
        && cfg.sparse_ratio > 0
        && max > items.wrapping_mul(cfg.sparse_ratio)
        && max > cfg.sparse_safe
    {
        if !cfg.sparse_convert {
            return Err(raise(
                lua,
                "Cannot serialise table: excessively sparse array",
            ));
        }
        is_array = false;
    }
    if is_array && max > 0 {
        out.push(b'[');
        Ok(Frame::Array { len: max, next: 1 })
    } else {
        out.push(b'{');
        Ok(Frame::Object {
            keys: keys.into_iter(),
            first: true,
        })
    }
}

/// Writes an object's key and returns it as a Lua value, to look its value up with.
fn append_key(lua: &Lua, cfg: &Config, k: Key, out: &mut Vec<u8>) -> mlua::Result<Value> {
    match k {
        Key::Num(n) => {
            out.push(b'"');
            append_number(lua, cfg, n, out)?;
            out.extend_from_slice(b"\":");
            Ok(Value::Number(n))
        }
        Key::Str(s) => {
            append_string(&s, out);
            out.push(b':');
            Ok(Value::String(lua.create_string(s)?))
        }
        Key::Other(what) => Err(raise(
            lua,
            &format!("Cannot serialise {what}: table key must be a number or string"),
        )),
    }
}

fn append_scalar(lua: &Lua, cfg: &Config, v: &Value, out: &mut Vec<u8>) -> mlua::Result<()> {
    match v {
        Value::String(s) => append_string(&s.as_bytes(), out),
        Value::Number(_) | Value::Integer(_) => {
            append_number(lua, cfg, as_number(v).unwrap_or(0.0), out)?;
        }
        Value::Boolean(true) => out.extend_from_slice(b"true"),
        Value::Boolean(false) => out.extend_from_slice(b"false"),
        Value::Nil => out.extend_from_slice(b"null"),
        Value::LightUserData(p) if p.0.is_null() => out.extend_from_slice(b"null"),
        other => {
            let what = type_name(other);
            return Err(raise(
                lua,
                &format!("Cannot serialise {what}: type not supported"),
            ));
        }
    }
    Ok(())
}

fn append_number(lua: &Lua, cfg: &Config, n: f64, out: &mut Vec<u8>) -> mlua::Result<()> {
    let invalid = n.is_nan() || n.is_infinite();
    match cfg.encode_invalid_numbers {
        InvalidNumbers::Off if invalid => {
            return Err(raise(
                lua,
                "Cannot serialise number: must not be NaN or Inf",
            ));
        }
        // lua_cjson writes NaN itself: printf could give "-nan".
        InvalidNumbers::On if n.is_nan() => {
            out.extend_from_slice(b"nan");
            return Ok(());
        }
        InvalidNumbers::Null if invalid => {
            out.extend_from_slice(b"null");
            return Ok(());
        }
        _ => {}
    }
    let precision = usize::try_from(cfg.encode_number_precision).unwrap_or(14);
    out.extend_from_slice(format_g(n, precision).as_bytes());
    Ok(())
}

fn append_string(s: &[u8], out: &mut Vec<u8>) {
    out.reserve(s.len() + 2);
    out.push(b'"');
    for &b in s {
        match b {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'/' => out.extend_from_slice(b"\\/"),
            0x08 => out.extend_from_slice(b"\\b"),
            b'\t' => out.extend_from_slice(b"\\t"),
            b'\n' => out.extend_from_slice(b"\\n"),
            0x0c => out.extend_from_slice(b"\\f"),
            b'\r' => out.extend_from_slice(b"\\r"),
            0..=0x1f | 0x7f => out.extend_from_slice(format!("\\u{b:04x}").as_bytes()),
            _ => out.push(b),
        }
    }
    out.push(b'"');
}
