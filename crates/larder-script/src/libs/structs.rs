//! The `struct` library (Roberto Ierusalimschy's lua_struct as Redis patched it after
//! CVE-2018-11218 and CVE-2020-14147): `pack`, `unpack` and `size` over the format letters
//! `< > ! x b B h H l L T i I c s f d` with counts, on x86-64's sizes (long and size_t are 8
//! bytes, native order little-endian, maximum alignment 8). Every read is checked against the
//! data and every size against the arguments before anything is copied.

#[cfg(test)]
mod tests;

use mlua::{Lua, Table, Value};

use super::args::{
    c_double_to_i64, c_double_to_u64, number_of, raise, register, Args, LibFn, MAX_C_STACK,
};

/// lua_struct's `MAXINTSIZE`.
const MAX_INT_SIZE: usize = 32;
/// `MAXALIGN` on x86-64: the alignment `!` sets without a count.
const MAX_ALIGN: usize = 8;

pub(crate) fn module(lua: &Lua) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    let funcs: [(&str, LibFn); 3] = [("pack", pack), ("unpack", unpack), ("size", size)];
    register(lua, &t, &funcs)?;
    Ok(t)
}

/// Byte order and alignment as the format sets them.
struct Header {
    little: bool,
    align: usize,
}

impl Header {
    fn new() -> Header {
        Header {
            little: true,
            align: 1,
        }
    }
}

/// A format string as C reads it: up to its first NUL.
struct Format {
    bytes: Vec<u8>,
    i: usize,
}

impl Format {
    fn new(a: &Args) -> mlua::Result<Format> {
        let s = a.check_bytes(1)?;
        let s = s.as_bytes();
        let bytes = s.split(|&b| b == 0).next().unwrap_or(&[]).to_vec();
        Ok(Format { bytes, i: 0 })
    }

    fn next_option(&mut self) -> Option<u8> {
        let opt = self.bytes.get(self.i).copied()?;
        self.i += 1;
        Some(opt)
    }

    /// `getnum`: the count after an option, `default` when there is none.
    fn number(&mut self, lua: &Lua, default: usize) -> mlua::Result<usize> {
        if !self.bytes.get(self.i).is_some_and(u8::is_ascii_digit) {
            return Ok(default);
        }
        let mut a: i32 = 0;
        while let Some(d) = self.bytes.get(self.i).filter(|b| b.is_ascii_digit()) {
            let d = i32::from(d - b'0');
            if a > i32::MAX / 10 || a * 10 > i32::MAX - d {
                return Err(raise(lua, "integral size overflow"));
            }
            a = a * 10 + d;
            self.i += 1;
        }
        Ok(a as usize)
    }

    /// `optsize`: the size of option `opt` (0 for options without one).
    fn size_of(&mut self, lua: &Lua, opt: u8) -> mlua::Result<usize> {
        Ok(match opt {
            b'B' | b'b' | b'x' => 1,
            b'H' | b'h' => 2,
            b'L' | b'l' | b'T' | b'd' => 8,
            b'f' => 4,
            b'c' => self.number(lua, 1)?,
            b'i' | b'I' => {
                let size = self.number(lua, 4)?;
                if size > MAX_INT_SIZE {
                    return Err(raise(
                        lua,
                        &format!("integral size {size} is larger than limit of {MAX_INT_SIZE}"),
                    ));
                }
                size
            }
            _ => 0,
        })
    }

    /// `controloptions`: spaces, byte order and alignment; anything else is an error.
    fn control(&mut self, a: &Args, opt: u8, h: &mut Header) -> mlua::Result<()> {
        match opt {
            b' ' => {}
            b'>' => h.little = false,
            b'<' => h.little = true,
            b'!' => {
                let align = self.number(a.lua(), MAX_ALIGN)?;
                if !align.is_power_of_two() {
                    return Err(raise(
                        a.lua(),
                        &format!("alignment {align} is not a power of 2"),
                    ));
                }
                h.align = align;
            }
            _ => {
                let opt = char::from(opt);
                return Err(a.arg_error(1, &format!("invalid format option '{opt}'")));
            }
        }
        Ok(())
    }
}

/// `gettoalign`: padding before an item of `size` at offset `len`.
fn padding(len: usize, h: &Header, opt: u8, size: usize) -> usize {
    if size == 0 || opt == b'c' {
        return 0;
    }
    let size = size.min(h.align);
    size.wrapping_sub(len & (size - 1)) & (size - 1)
}

fn is_integer_option(opt: u8) -> bool {
    matches!(
        opt,
        b'b' | b'B' | b'h' | b'H' | b'l' | b'L' | b'T' | b'i' | b'I'
    )
}

fn pack(a: &mut Args) -> mlua::Result<Vec<Value>> {
    a.push_nil();
    let lua = a.lua();
    let mut fmt = Format::new(a)?;
    let mut h = Header::new();
    let mut arg = 2;
    let mut total: usize = 0;
    let mut out = Vec::new();
    while let Some(opt) = fmt.next_option() {
        let mut size = fmt.size_of(lua, opt)?;
        let pad = padding(total, &h, opt, size);
        total = total.wrapping_add(pad);
        out.resize(out.len() + pad, 0);
        match opt {
            _ if is_integer_option(opt) => {
                let n = a.check_number(arg)?;
                arg += 1;
                let mut value = if n < 0.0 {
                    c_double_to_i64(n) as u64
                } else {
                    c_double_to_u64(n)
                };
                let mut buf = [0u8; MAX_INT_SIZE];
                for byte in buf.iter_mut().take(size) {
                    *byte = (value & 0xff) as u8;
                    value >>= 8;
                }
                let bytes = &mut buf[..size];
                if !h.little {
                    bytes.reverse();
                }
                out.extend_from_slice(bytes);
            }
            b'x' => out.push(0),
            b'f' => {
                let f = a.check_number(arg)? as f32;
                arg += 1;
                out.extend_from_slice(&if h.little {
                    f.to_le_bytes()
                } else {
                    f.to_be_bytes()
                });
            }
            b'd' => {
                let d = a.check_number(arg)?;
                arg += 1;
                out.extend_from_slice(&if h.little {
                    d.to_le_bytes()
                } else {
                    d.to_be_bytes()
                });
            }
            b'c' | b's' => {
                let s = a.check_bytes(arg)?;
                let s = s.as_bytes();
                arg += 1;
                if size == 0 {
                    size = s.len();
                }
                // lua_struct names the argument after the string (its counter has moved on).
                if s.len() < size {
                    return Err(a.arg_error(arg, "string too short"));
                }
                out.extend_from_slice(&s[..size]);
                if opt == b's' {
                    out.push(0);
                    size += 1;
                }
            }
            _ => fmt.control(a, opt, &mut h)?,
        }
        total = total.wrapping_add(size);
    }
    Ok(vec![Value::String(lua.create_string(out)?)])
}

/// `getinteger`: `size` bytes as an integer of lua_struct's 64-bit `long`, the high bytes of
/// wider fields dropped as its shifts drop them.
fn integer_at(bytes: &[u8], little: bool, signed: bool) -> f64 {
    let mut l: u64 = 0;
    let mut add = |b: u8| l = (l << 8) | u64::from(b);
    if little {
        bytes.iter().rev().for_each(|&b| add(b));
    } else {
        bytes.iter().for_each(|&b| add(b));
    }
    if !signed {
        return l as f64;
    }
    // `~0 << (size*8 - 1)`: x86-64 takes the shift count modulo 64.
    let shift = (bytes.len() as u32).wrapping_mul(8).wrapping_sub(1);
    let mask = u64::MAX.wrapping_shl(shift);
    if l & mask != 0 {
        l |= mask;
    }
    l as i64 as f64
}

fn unpack(a: &mut Args) -> mlua::Result<Vec<Value>> {
    let lua = a.lua();
    let mut fmt = Format::new(a)?;
    let data = a.check_bytes(2)?;
    let data = data.as_bytes();
    let ld = data.len();
    // size_t arithmetic: a negative offset wraps to a huge one.
    let mut pos = a.opt_integer(3, 1)? as u64 as usize;
    if pos == 0 {
        return Err(a.arg_error(3, "offset must be 1 or greater"));
    }
    pos -= 1;
    let mut h = Header::new();
    let mut results: Vec<Value> = Vec::new();
    let too_short = || a.arg_error(2, "data string too short");
    while let Some(opt) = fmt.next_option() {
        let mut size = fmt.size_of(lua, opt)?;
        pos = pos.wrapping_add(padding(pos, &h, opt, size));
        if size > ld || pos > ld - size {
            return Err(too_short());
        }
        if a.len() + results.len() + 2 > MAX_C_STACK {
            return Err(raise(lua, "stack overflow (too many results)"));
        }
        match opt {
            _ if is_integer_option(opt) => {
                let n = integer_at(&data[pos..pos + size], h.little, opt.is_ascii_lowercase());
                results.push(Value::Number(n));
            }
            b'x' => {}
            b'f' => {
                let b: [u8; 4] = data[pos..pos + 4].try_into().unwrap_or_default();
                let f = if h.little {
                    f32::from_le_bytes(b)
                } else {
                    f32::from_be_bytes(b)
                };
                results.push(Value::Number(f64::from(f)));
            }
            b'd' => {
                let b: [u8; 8] = data[pos..pos + 8].try_into().unwrap_or_default();
                let d = if h.little {
                    f64::from_le_bytes(b)
                } else {
                    f64::from_be_bytes(b)
                };
                results.push(Value::Number(d));
            }
            b'c' => {
                if size == 0 {
                    let previous = match results.last() {
                        Some(v) => number_of(lua, v)?,
                        None => None,
                    };
                    let Some(n) = previous else {
                        return Err(raise(lua, "format 'c0' needs a previous size"));
                    };
                    results.pop();
                    size = c_double_to_u64(n) as usize;
                    if size > ld || pos > ld - size {
                        return Err(too_short());
                    }
                }
                results.push(Value::String(lua.create_string(&data[pos..pos + size])?));
            }
            b's' => {
                let Some(len) = data[pos..].iter().position(|&b| b == 0) else {
                    return Err(raise(lua, "unfinished string in data"));
                };
                results.push(Value::String(lua.create_string(&data[pos..pos + len])?));
                size = len + 1;
            }
            _ => fmt.control(a, opt, &mut h)?,
        }
        pos = pos.wrapping_add(size);
    }
    results.push(Value::Number(pos.wrapping_add(1) as i64 as f64));
    Ok(results)
}

fn size(a: &mut Args) -> mlua::Result<Vec<Value>> {
    let lua = a.lua();
    let mut fmt = Format::new(a)?;
    let mut h = Header::new();
    let mut pos: usize = 0;
    while let Some(opt) = fmt.next_option() {
        let size = fmt.size_of(lua, opt)?;
        pos = pos.wrapping_add(padding(pos, &h, opt, size));
        if opt == b's' {
            return Err(a.arg_error(1, "option 's' has no fixed size"));
        } else if opt == b'c' && size == 0 {
            return Err(a.arg_error(1, "option 'c0' has no fixed size"));
        }
        // Unknown letters and digits count for nothing here, as in lua_struct.
        if !opt.is_ascii_alphanumeric() {
            fmt.control(a, opt, &mut h)?;
        }
        pos = pos.wrapping_add(size);
    }
    Ok(vec![Value::Number(pos as i64 as f64)])
}
