//! `cmsgpack`: lua-cmsgpack 0.4.0 as Redis vendors it. Tables whose keys are exactly 1..n
//! pack as arrays, others as maps; numbers that an int64 holds pack as the smallest integer
//! encoding, others as float32 when exact, else float64; tables nested 16 deep pack as nil.
//! Unpacking walks the input with an explicit stack and counts Lua stack slots as the C
//! code does, so deep or long inputs fail with Redis's texts rather than exhaust anything.

#[cfg(test)]
mod tests;

use mlua::{Lua, Table, Value};

use super::args::{
    as_number, c_double_to_i32, c_double_to_i64, output_too_large, raise, raise_bare, register,
    Args, LibFn, MAX_C_STACK, MAX_OUTPUT_BYTES,
};

/// lua-cmsgpack's `LUACMSGPACK_MAX_NESTING`.
const MAX_NESTING: usize = 16;

pub(crate) fn module(lua: &Lua) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    let funcs: [(&str, LibFn); 4] = [
        ("pack", pack),
        ("unpack", |a| unpack(a, 0, 0, a.len())),
        ("unpack_one", |a| {
            let offset = a.opt_integer(2, 0)?;
            unpack(a, 1, offset, 1)
        }),
        ("unpack_limit", |a| {
            let limit = a.check_integer(2)?;
            let offset = a.opt_integer(3, 0)?;
            unpack(a, limit, offset, 1)
        }),
    ];
    register(lua, &t, &funcs)?;
    t.raw_set("_NAME", "cmsgpack")?;
    t.raw_set("_VERSION", "lua-cmsgpack 0.4.0")?;
    t.raw_set("_COPYRIGHT", "Copyright (C) 2012, Salvatore Sanfilippo")?;
    t.raw_set("_DESCRIPTION", "MessagePack C implementation for Lua")?;
    Ok(t)
}

fn pack(a: &mut Args) -> mlua::Result<Vec<Value>> {
    let n = a.len();
    if n == 0 {
        return Err(a.arg_error(0, "MessagePack pack needs input."));
    }
    if n + n > MAX_C_STACK {
        return Err(a.arg_error(0, "Too many arguments for MessagePack pack."));
    }
    let mut out = Vec::new();
    for i in 1..=n {
        encode(a.get(i).unwrap_or(&Value::Nil), 0, &mut out)?;
    }
    Ok(vec![Value::String(a.lua().create_string(out)?)])
}

/// `mp_encode_lua_type`. Recursion is bounded by `MAX_NESTING`.
fn encode(v: &Value, level: usize, out: &mut Vec<u8>) -> mlua::Result<()> {
    if out.len() > MAX_OUTPUT_BYTES {
        return Err(output_too_large());
    }
    match v {
        Value::String(s) => encode_bytes(&s.as_bytes(), out),
        Value::Boolean(b) => out.push(if *b { 0xc3 } else { 0xc2 }),
        Value::Number(_) | Value::Integer(_) => encode_number(as_number(v).unwrap_or(0.0), out),
        Value::Table(t) if level < MAX_NESTING => encode_table(t, level, out)?,
        _ => out.push(0xc0),
    }
    Ok(())
}

fn encode_table(t: &Table, level: usize, out: &mut Vec<u8>) -> mlua::Result<()> {
    // `table_is_an_array`: every key a positive number that an int holds, and as many keys
    // as the largest of them. Entries are visited in place: a copy of a big table would
    // hold a Lua reference per entry.
    let mut max: i32 = 0;
    let mut count: i32 = 0;
    let mut keys: u64 = 0;
    let mut array = true;
    t.for_each(|k: Value, _: Value| {
        keys += 1;
        match as_number(&k) {
            Some(n) if array && n > 0.0 && f64::from(c_double_to_i32(n)) == n => {
                max = max.max(n as i32);
                count = count.wrapping_add(1);
            }
            _ => array = false,
        }
        Ok(())
    })?;
    if array && max == count {
        let len = t.raw_len();
        header(out, len as u64, 0x90, 0xdc, 0xdd);
        for j in 1..=len {
            let v: Value = t.raw_get(j)?;
            encode(&v, level + 1, out)?;
        }
    } else {
        header(out, keys, 0x80, 0xde, 0xdf);
        t.for_each(|k: Value, v: Value| {
            encode(&k, level + 1, out)?;
            encode(&v, level + 1, out)
        })?;
    }
    Ok(())
}

/// An array or map header: fix form up to 15 entries, then 16 and 32 bits.
fn header(out: &mut Vec<u8>, n: u64, fix: u8, tag16: u8, tag32: u8) {
    if n <= 15 {
        out.push(fix | n as u8);
    } else if n <= 0xffff {
        out.push(tag16);
        out.extend_from_slice(&(n as u16).to_be_bytes());
    } else {
        out.push(tag32);
        out.extend_from_slice(&(n as u32).to_be_bytes());
    }
}

fn encode_bytes(s: &[u8], out: &mut Vec<u8>) {
    let len = s.len();
    if len < 32 {
        out.push(0xa0 | len as u8);
    } else if len <= 0xff {
        out.extend_from_slice(&[0xd9, len as u8]);
    } else if len <= 0xffff {
        out.push(0xda);
        out.extend_from_slice(&(len as u16).to_be_bytes());
    } else {
        out.push(0xdb);
        out.extend_from_slice(&(len as u32).to_be_bytes());
    }
    out.extend_from_slice(s);
}

fn encode_number(n: f64, out: &mut Vec<u8>) {
    let i = c_double_to_i64(n);
    if !n.is_infinite() && i as f64 == n {
        encode_int(i, out);
    } else if f64::from(n as f32) == n {
        out.push(0xca);
        out.extend_from_slice(&(n as f32).to_be_bytes());
    } else {
        out.push(0xcb);
        out.extend_from_slice(&n.to_be_bytes());
    }
}

fn encode_int(n: i64, out: &mut Vec<u8>) {
    if n >= 0 {
        if n <= 127 {
            out.push(n as u8);
        } else if n <= 0xff {
            out.extend_from_slice(&[0xcc, n as u8]);
        } else if n <= 0xffff {
            out.push(0xcd);
            out.extend_from_slice(&(n as u16).to_be_bytes());
        } else if n <= 0xffff_ffff {
            out.push(0xce);
            out.extend_from_slice(&(n as u32).to_be_bytes());
        } else {
            out.push(0xcf);
            out.extend_from_slice(&(n as u64).to_be_bytes());
        }
    } else if n >= -32 {
        out.push(n as i8 as u8);
    } else if n >= -128 {
        out.extend_from_slice(&[0xd0, n as i8 as u8]);
    } else if n >= -32768 {
        out.push(0xd1);
        out.extend_from_slice(&(n as i16).to_be_bytes());
    } else if n >= -2_147_483_648 {
        out.push(0xd2);
        out.extend_from_slice(&(n as i32).to_be_bytes());
    } else {
        out.push(0xd3);
        out.extend_from_slice(&n.to_be_bytes());
    }
}

/// Why decoding stopped early (`MP_CUR_ERROR_*`).
enum Stop {
    Eof,
    BadFormat,
}

/// An array or map being filled (its table is in `Decoder::tables`).
struct Open {
    /// Entries still to read.
    left: u64,
    kind: OpenKind,
}

enum OpenKind {
    /// The next element's index.
    Array(i64),
    /// Where the map's entry stands.
    Map(MapKey),
}

/// A map's key between reading it and reading its value.
#[derive(Clone, Copy)]
enum MapKey {
    /// The next item read is a key.
    Awaiting,
    /// The key is in `Decoder::keys`.
    Held,
    /// The key is nil or NaN, which no table can hold: an error once the value is read.
    Invalid(&'static str),
}

/// `mp_unpack_full`. `base` is the arguments still on the C function's stack (all of them
/// for `unpack`, which leaves extra arguments in place; 1 for the others).
fn unpack(a: &Args, limit: i64, offset: i64, base: usize) -> mlua::Result<Vec<Value>> {
    let lua = a.lua();
    let s = a.check_bytes(1)?;
    let s = s.as_bytes();
    let len = s.len();
    if offset < 0 || limit < 0 {
        // Redis prints the input's length where the limit is meant.
        return Err(raise(
            lua,
            &format!(
                "Invalid request to unpack with offset of {} and limit of {}.",
                offset as i32, len as i32
            ),
        ));
    }
    if offset as u64 > len as u64 {
        return Err(raise(
            lua,
            &format!(
                "Start offset {} greater than input length {}.",
                offset as i32, len as i32
            ),
        ));
    }
    let decode_all = limit == 0 && offset == 0;
    let limit = if decode_all {
        i64::from(i32::MAX)
    } else {
        limit
    };
    let mut d = Decoder {
        lua,
        s: &s,
        pos: offset as usize,
        slots: base,
        open: Vec::new(),
        tables: lua.create_table()?,
        keys: lua.create_table()?,
    };
    let mut out = Vec::new();
    let mut count: i64 = 0;
    while d.pos < len && count < limit {
        match d.value()? {
            Ok(v) => out.push(v),
            Err(Stop::Eof) => return Err(raise(lua, "Missing bytes in input.")),
            Err(Stop::BadFormat) => return Err(raise(lua, "Bad data format in input.")),
        }
        d.slots += 1;
        count += 1;
    }
    if !decode_all {
        if d.slots + 1 > MAX_C_STACK {
            return Err(raise(lua, "stack overflow (in function mp_unpack_full)"));
        }
        let next = if d.pos == len { -1 } else { d.pos as i64 };
        out.insert(0, Value::Number(next as f64));
    }
    Ok(out)
}

struct Decoder<'a> {
    lua: &'a Lua,
    s: &'a [u8],
    pos: usize,
    /// The Lua stack slots lua-cmsgpack would be using.
    slots: usize,
    open: Vec<Open>,
    /// The open containers' tables at their depth, and the maps' keys waiting for their
    /// values: two Lua references however deep the input nests.
    tables: Table,
    keys: Table,
}

impl Decoder<'_> {
    /// One top-level value (`mp_decode_to_lua_type`, with nested containers on `open`).
    fn value(&mut self) -> mlua::Result<Result<Value, Stop>> {
        loop {
            let item = match self.item()? {
                Ok(item) => item,
                Err(stop) => return Ok(Err(stop)),
            };
            let mut value = match item {
                Item::Value(v) => v,
                Item::Open(n, kind) => {
                    let table = self.lua.create_table()?;
                    // The new table, and for arrays the slot `mp_decode_to_lua_array` checks.
                    self.slots += 1;
                    if matches!(kind, OpenKind::Array(_)) && self.slots + 1 > MAX_C_STACK {
                        return Err(raise(
                            self.lua,
                            "stack overflow (in function mp_decode_to_lua_array)",
                        ));
                    }
                    if n > 0 {
                        self.open.push(Open { left: n, kind });
                        self.tables.raw_set(self.open.len(), table)?;
                        self.enter_entry();
                        continue;
                    }
                    self.slots -= 1;
                    Value::Table(table)
                }
            };
            // Store `value` in its container; containers that fill up are stored in turn.
            loop {
                let depth = self.open.len();
                let Some(top) = self.open.last_mut() else {
                    return Ok(Ok(value));
                };
                match &mut top.kind {
                    OpenKind::Array(i) => {
                        let table: Table = self.tables.raw_get(depth)?;
                        table.raw_set(*i, value)?;
                        *i += 1;
                    }
                    OpenKind::Map(state @ MapKey::Awaiting) => {
                        *state = match &value {
                            Value::Nil => MapKey::Invalid("table index is nil"),
                            Value::Number(n) if n.is_nan() => MapKey::Invalid("table index is NaN"),
                            _ => {
                                self.keys.raw_set(depth, value)?;
                                MapKey::Held
                            }
                        };
                        self.slots += 1;
                        break;
                    }
                    OpenKind::Map(state) => {
                        if let MapKey::Invalid(msg) = *state {
                            return Err(raise_bare(msg));
                        }
                        *state = MapKey::Awaiting;
                        let key: Value = self.keys.raw_get(depth)?;
                        self.keys.raw_set(depth, Value::Nil)?;
                        let table: Table = self.tables.raw_get(depth)?;
                        table.raw_set(key, value)?;
                    }
                }
                top.left -= 1;
                self.slots -= 1;
                if top.left > 0 {
                    self.enter_entry();
                    break;
                }
                value = self.tables.raw_get(depth)?;
                self.tables.raw_set(depth, Value::Nil)?;
                self.open.pop();
                self.slots -= 1;
            }
        }
    }

    /// Before an array element: the index pushed under it.
    fn enter_entry(&mut self) {
        if let Some(Open {
            kind: OpenKind::Array(_),
            ..
        }) = self.open.last()
        {
            self.slots += 1;
        }
    }

    /// Reads the next item's header: a complete scalar, or a container to open.
    fn item(&mut self) -> mlua::Result<Result<Item, Stop>> {
        let s = self.s;
        let p = self.pos;
        let Some(&tag) = s.get(p) else {
            return Ok(Err(Stop::Eof));
        };
        if self.slots + 1 > MAX_C_STACK {
            return Err(raise(
                self.lua,
                "stack overflow (too many return values at once; \
                 use unpack_one or unpack_limit instead.)",
            ));
        }
        let need = |n: usize| {
            if s.len() - p < n {
                Err(Stop::Eof)
            } else {
                Ok(&s[p + 1..p + n])
            }
        };
        let be = |b: &[u8]| b.iter().fold(0u64, |acc, &x| acc << 8 | u64::from(x));
        let (item, used) = match tag {
            0xcc..=0xcf => {
                let n = 1 << (tag - 0xcc);
                match need(1 + n) {
                    Ok(b) => (number(be(b) as i64 as f64), 1 + n),
                    Err(e) => return Ok(Err(e)),
                }
            }
            0xd0..=0xd3 => {
                let n = 1 << (tag - 0xd0);
                match need(1 + n) {
                    Ok(b) => {
                        let bits = 64 - 8 * n as u32;
                        let v = ((be(b) << bits) as i64) >> bits;
                        (number(v as f64), 1 + n)
                    }
                    Err(e) => return Ok(Err(e)),
                }
            }
            0xc0 => (Item::Value(Value::Nil), 1),
            0xc2 => (Item::Value(Value::Boolean(false)), 1),
            0xc3 => (Item::Value(Value::Boolean(true)), 1),
            0xca => match need(5) {
                Ok(b) => (number(f64::from(f32::from_bits(be(b) as u32))), 5),
                Err(e) => return Ok(Err(e)),
            },
            0xcb => match need(9) {
                Ok(b) => (number(f64::from_bits(be(b))), 9),
                Err(e) => return Ok(Err(e)),
            },
            0xd9..=0xdb => {
                let n = 1 << (tag - 0xd9);
                let len = match need(1 + n) {
                    Ok(b) => be(b) as usize,
                    Err(e) => return Ok(Err(e)),
                };
                match need(1 + n + len) {
                    Ok(_) => {
                        let start = p + 1 + n;
                        let v = self.lua.create_string(&s[start..start + len])?;
                        (Item::Value(Value::String(v)), 1 + n + len)
                    }
                    Err(e) => return Ok(Err(e)),
                }
            }
            0xdc..=0xdf => {
                let n = if tag & 1 == 0 { 2 } else { 4 };
                let len = match need(1 + n) {
                    Ok(b) => be(b),
                    Err(e) => return Ok(Err(e)),
                };
                let kind = if tag < 0xde {
                    OpenKind::Array(1)
                } else {
                    OpenKind::Map(MapKey::Awaiting)
                };
                (Item::Open(len, kind), 1 + n)
            }
            _ if tag & 0x80 == 0 => (number(f64::from(tag)), 1),
            _ if tag & 0xe0 == 0xe0 => (number(f64::from(tag as i8)), 1),
            _ if tag & 0xe0 == 0xa0 => {
                let len = usize::from(tag & 0x1f);
                if s.len() - p < 1 + len {
                    return Ok(Err(Stop::Eof));
                }
                let v = self.lua.create_string(&s[p + 1..p + 1 + len])?;
                (Item::Value(Value::String(v)), 1 + len)
            }
            _ if tag & 0xf0 == 0x90 => (Item::Open(u64::from(tag & 0xf), OpenKind::Array(1)), 1),
            _ if tag & 0xf0 == 0x80 => (
                Item::Open(u64::from(tag & 0xf), OpenKind::Map(MapKey::Awaiting)),
                1,
            ),
            _ => return Ok(Err(Stop::BadFormat)),
        };
        self.pos = p + used;
        Ok(Ok(item))
    }
}

enum Item {
    Value(Value),
    /// A container of this many entries (elements, or key-value pairs).
    Open(u64, OpenKind),
}

fn number(n: f64) -> Item {
    Item::Value(Value::Number(n))
}
