//! `cjson`: lua_cjson 2.1.0 as Redis vendors it. Encoding and decoding keep its choices and
//! texts: `%.14g` numbers, `/` written as `\/`, the sparse-array rule, depth limits that
//! include Lua's C stack limit, `cjson.null` as a NULL light userdata, and every
//! configuration function with its return values. `cjson.new` makes an independent copy.

mod decode;
mod encode;
pub(crate) mod number;
#[cfg(test)]
mod tests;

use std::cell::Cell;
use std::rc::Rc;

use mlua::{Lua, MultiValue, Table, Value};

use super::args::{c_double_to_i64, Args};

/// What `encode_invalid_numbers` allows.
#[derive(Clone, Copy, PartialEq, Eq)]
enum InvalidNumbers {
    /// NaN and infinities are errors.
    Off,
    /// Written as `nan`, `inf`, `-inf`.
    On,
    /// Written as `null`.
    Null,
}

/// One module table's settings (lua_cjson's `json_config_t`).
#[derive(Clone, Copy)]
struct Config {
    sparse_convert: bool,
    sparse_ratio: i32,
    sparse_safe: i32,
    encode_max_depth: i32,
    decode_max_depth: i32,
    encode_invalid_numbers: InvalidNumbers,
    decode_invalid_numbers: bool,
    encode_number_precision: i32,
    encode_keep_buffer: bool,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            sparse_convert: false,
            sparse_ratio: 2,
            sparse_safe: 10,
            encode_max_depth: 1000,
            decode_max_depth: 1000,
            encode_invalid_numbers: InvalidNumbers::Off,
            decode_invalid_numbers: true,
            encode_number_precision: 14,
            encode_keep_buffer: true,
        }
    }
}

/// The settings the module's functions share. A `Cell`: no borrow is held while Lua code
/// (a finalizer during an allocation, say) could run and call back in.
type Shared = Rc<Cell<Config>>;

/// A `cjson` module table with its own settings.
pub(crate) fn module(lua: &Lua) -> mlua::Result<Table> {
    let cfg: Shared = Rc::new(Cell::new(Config::default()));
    let t = lua.create_table()?;
    add(lua, &t, &cfg, "encode", |a, cfg| {
        if a.len() != 1 {
            return Err(a.arg_error(1, "expected 1 argument"));
        }
        let v = a.get(1).cloned().unwrap_or(Value::Nil);
        let bytes = encode::encode(a.lua(), &cfg.get(), v)?;
        Ok(vec![Value::String(a.lua().create_string(bytes)?)])
    })?;
    add(lua, &t, &cfg, "decode", |a, cfg| {
        if a.len() != 1 {
            return Err(a.arg_error(1, "expected 1 argument"));
        }
        let s = a.check_bytes(1)?;
        let v = decode::decode(a.lua(), &cfg.get(), &s.as_bytes())?;
        Ok(vec![v])
    })?;
    add(lua, &t, &cfg, "encode_sparse_array", |a, cfg| {
        arg_count(a, 3)?;
        // Each setting is stored as soon as it is read, as lua_cjson does: an error in a
        // later argument keeps the earlier ones.
        let mut c = cfg.get();
        let convert = bool_option(a, 1, c.sparse_convert)?;
        c.sparse_convert = convert;
        cfg.set(c);
        let ratio = integer_option(a, 2, c.sparse_ratio, 0, i32::MAX)?;
        c.sparse_ratio = ratio;
        cfg.set(c);
        let safe = integer_option(a, 3, c.sparse_safe, 0, i32::MAX)?;
        c.sparse_safe = safe;
        cfg.set(c);
        Ok(vec![
            Value::Boolean(convert),
            Value::Number(f64::from(ratio)),
            Value::Number(f64::from(safe)),
        ])
    })?;
    add(lua, &t, &cfg, "encode_max_depth", |a, cfg| {
        arg_count(a, 1)?;
        let mut c = cfg.get();
        c.encode_max_depth = integer_option(a, 1, c.encode_max_depth, 1, i32::MAX)?;
        cfg.set(c);
        Ok(vec![Value::Number(f64::from(c.encode_max_depth))])
    })?;
    add(lua, &t, &cfg, "decode_max_depth", |a, cfg| {
        arg_count(a, 1)?;
        let mut c = cfg.get();
        c.decode_max_depth = integer_option(a, 1, c.decode_max_depth, 1, i32::MAX)?;
        cfg.set(c);
        Ok(vec![Value::Number(f64::from(c.decode_max_depth))])
    })?;
    add(lua, &t, &cfg, "encode_number_precision", |a, cfg| {
        arg_count(a, 1)?;
        let mut c = cfg.get();
        c.encode_number_precision = integer_option(a, 1, c.encode_number_precision, 1, 14)?;
        cfg.set(c);
        Ok(vec![Value::Number(f64::from(c.encode_number_precision))])
    })?;
    add(lua, &t, &cfg, "encode_keep_buffer", |a, cfg| {
        arg_count(a, 1)?;
        let mut c = cfg.get();
        c.encode_keep_buffer = bool_option(a, 1, c.encode_keep_buffer)?;
        cfg.set(c);
        Ok(vec![Value::Boolean(c.encode_keep_buffer)])
    })?;
    add(lua, &t, &cfg, "encode_invalid_numbers", |a, cfg| {
        arg_count(a, 1)?;
        let mut c = cfg.get();
        let setting = if a.is_none_or_nil(1) {
            c.encode_invalid_numbers
        } else if let Some(Value::Boolean(b)) = a.get(1) {
            if *b {
                InvalidNumbers::On
            } else {
                InvalidNumbers::Off
            }
        } else {
            match check_option(a, 1, &["off", "on", "null"])? {
                0 => InvalidNumbers::Off,
                1 => InvalidNumbers::On,
                _ => InvalidNumbers::Null,
            }
        };
        c.encode_invalid_numbers = setting;
        cfg.set(c);
        Ok(vec![match setting {
            InvalidNumbers::Off => Value::Boolean(false),
            InvalidNumbers::On => Value::Boolean(true),
            InvalidNumbers::Null => Value::String(a.lua().create_string("null")?),
        }])
    })?;
    add(lua, &t, &cfg, "decode_invalid_numbers", |a, cfg| {
        arg_count(a, 1)?;
        let mut c = cfg.get();
        c.decode_invalid_numbers = bool_option(a, 1, c.decode_invalid_numbers)?;
        cfg.set(c);
        Ok(vec![Value::Boolean(c.decode_invalid_numbers)])
    })?;
    t.raw_set(
        "new",
        lua.create_function(|lua, _: MultiValue| module(lua))?,
    )?;
    t.raw_set("null", Value::NULL)?;
    t.raw_set("_NAME", "cjson")?;
    t.raw_set("_VERSION", "2.1.0")?;
    Ok(t)
}

/// Registers `name` as a function of `t` over the module's settings.
fn add(
    lua: &Lua,
    t: &Table,
    cfg: &Shared,
    name: &str,
    f: fn(&Args, &Shared) -> mlua::Result<Vec<Value>>,
) -> mlua::Result<()> {
    let cfg = cfg.clone();
    let func = lua.create_function(move |lua, args: MultiValue| {
        let a = Args::new(lua, args);
        f(&a, &cfg).map(MultiValue::from_vec)
    })?;
    t.raw_set(name, func)
}

/// `json_arg_init`: at most `max` arguments.
fn arg_count(a: &Args, max: usize) -> mlua::Result<()> {
    if a.len() > max {
        return Err(a.arg_error(max + 1, "found too many arguments"));
    }
    Ok(())
}

/// `json_integer_option`: nil keeps `current`; the range error names argument 1, as
/// lua_cjson's does, whichever argument it is.
fn integer_option(a: &Args, n: usize, current: i32, min: i32, max: i32) -> mlua::Result<i32> {
    if a.is_none_or_nil(n) {
        return Ok(current);
    }
    // lua_cjson stores luaL_checkinteger's result in an int.
    let value = c_double_to_i64(a.check_number(n)?) as i32;
    if value < min || value > max {
        return Err(a.arg_error(1, &format!("expected integer between {min} and {max}")));
    }
    Ok(value)
}

/// `json_enum_option` for on/off settings: a boolean, "on" or "off"; nil keeps `current`.
fn bool_option(a: &Args, n: usize, current: bool) -> mlua::Result<bool> {
    match a.get(n) {
        None | Some(Value::Nil) => Ok(current),
        Some(Value::Boolean(b)) => Ok(*b),
        Some(_) => Ok(check_option(a, n, &["off", "on"])? == 1),
    }
}

/// `luaL_checkoption` without a default.
fn check_option(a: &Args, n: usize, options: &[&str]) -> mlua::Result<usize> {
    let name = a.check_bytes(n)?;
    let name = name.as_bytes();
    // C compares up to the first NUL.
    let name = name.split(|&b| b == 0).next().unwrap_or(&[]);
    match options.iter().position(|o| o.as_bytes() == name) {
        Some(i) => Ok(i),
        None => {
            let shown = String::from_utf8_lossy(name);
            Err(a.arg_error(n, &format!("invalid option '{shown}'")))
        }
    }
}
