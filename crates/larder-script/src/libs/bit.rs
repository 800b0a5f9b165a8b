//! `bit`: LuaBitOp 1.0.2. Arguments become 32-bit integers the way LuaBitOp converts a
//! double (adding 2^52 + 2^51 and keeping the low word: round to nearest even, modulo 2^32)
//! and results come back as signed 32-bit numbers.

#[cfg(test)]
mod tests;

use mlua::{Lua, Table, Value};

use super::args::{register, Args, LibFn};

pub(crate) fn module(lua: &Lua) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    let funcs: [(&str, LibFn); 12] = [
        ("tobit", |a| Ok(ret(barg(a, 1)?))),
        ("bnot", |a| Ok(ret(!barg(a, 1)?))),
        ("band", |a| fold(a, |x, y| x & y)),
        ("bor", |a| fold(a, |x, y| x | y)),
        ("bxor", |a| fold(a, |x, y| x ^ y)),
        ("lshift", |a| shift(a, |b, n| b << n)),
        ("rshift", |a| shift(a, |b, n| b >> n)),
        ("arshift", |a| shift(a, |b, n| ((b as i32) >> n) as u32)),
        ("rol", |a| shift(a, u32::rotate_left)),
        ("ror", |a| shift(a, u32::rotate_right)),
        ("bswap", |a| Ok(ret(barg(a, 1)?.swap_bytes()))),
        ("tohex", tohex),
    ];
    register(lua, &t, &funcs)?;
    Ok(t)
}

/// LuaBitOp's `barg`: `lua_tonumber` (0 for what is not a number) converted through the
/// 2^52 + 2^51 trick; a zero result from a non-number is a type error.
fn barg(a: &Args, n: usize) -> mlua::Result<u32> {
    let number = a.to_number(n)?;
    let b = to_bits32(number.unwrap_or(0.0));
    if b == 0 && number.is_none() {
        return Err(a.type_error(n, "number"));
    }
    Ok(b)
}

/// The low 32 bits of `x + 2^52 + 2^51`'s representation.
pub(crate) fn to_bits32(x: f64) -> u32 {
    (x + 6_755_399_441_055_744.0).to_bits() as u32
}

fn ret(b: u32) -> Vec<Value> {
    vec![Value::Number(f64::from(b as i32))]
}

/// band, bor, bxor: argument 1, then the others from the last to the second, as LuaBitOp
/// reads them (which decides the argument a type error names).
fn fold(a: &Args, op: fn(u32, u32) -> u32) -> mlua::Result<Vec<Value>> {
    let mut b = barg(a, 1)?;
    for i in (2..=a.len()).rev() {
        b = op(b, barg(a, i)?);
    }
    Ok(ret(b))
}

fn shift(a: &Args, op: fn(u32, u32) -> u32) -> mlua::Result<Vec<Value>> {
    let b = barg(a, 1)?;
    let n = barg(a, 2)? & 31;
    Ok(ret(op(b, n)))
}

fn tohex(a: &mut Args) -> mlua::Result<Vec<Value>> {
    let mut b = barg(a, 1)?;
    let mut n = if a.get(2).is_none() {
        8
    } else {
        barg(a, 2)? as i32
    };
    let digits: &[u8; 16] = if n < 0 {
        n = n.wrapping_neg();
        b"0123456789ABCDEF"
    } else {
        b"0123456789abcdef"
    };
    // -2^31 stays negative after negation; Redis's build then compares it as unsigned
    // (the C is undefined there) and writes 8 digits.
    let n = (n as u32).min(8) as usize;
    let mut buf = vec![0u8; n];
    for slot in buf.iter_mut().rev() {
        *slot = digits[(b & 15) as usize];
        b >>= 4;
    }
    Ok(vec![Value::String(a.lua().create_string(buf)?)])
}
