//! The libraries Redis gives scripts besides Lua's own: `cjson` (lua_cjson 2.1.0),
//! `cmsgpack` (lua-cmsgpack 0.4.0), `bit` (LuaBitOp 1.0.2) and `struct` (lua_struct), written
//! in Rust with the C versions' outputs and error texts as Redis 7.0 builds them.
//!
//! Each function is a Rust callback, so that Lua sees a C function: a tail call to it keeps
//! the caller's frame, and its errors carry the caller's position (`luaL_where(L, 1)`) and
//! name (`luaL_argerror`) as in Redis. An error is raised as `mlua::Error::RuntimeError`
//! holding the exact text Redis's library raises; [`raised_text`] gets it back.
//!
//! Every entry point is total: inputs are read with bounds checks, nothing is allocated from
//! a length field before the data behind it is there, the decoders and the JSON encoder walk
//! nesting with explicit stacks capped where the C code would run out of Lua stack (msgpack
//! packing recurses at most 16 deep), walks hold a fixed number of Lua references however big
//! or deep the data (mlua's reference stack is as small as Lua's C stack), and encoders stop
//! at 512 MiB of output.

mod args;
mod bit;
mod cjson;
mod cmsgpack;
#[cfg(test)]
mod fuzz;
mod structs;
#[cfg(test)]
mod testkit;

use mlua::{Error, Lua};

/// Install cjson, cmsgpack, bit and struct as global tables of `lua`, as Redis 7.0 does.
pub fn install(lua: &Lua) -> mlua::Result<()> {
    let globals = lua.globals();
    globals.raw_set("cjson", cjson::module(lua)?)?;
    globals.raw_set("cmsgpack", cmsgpack::module(lua)?)?;
    globals.raw_set("bit", bit::module(lua)?)?;
    globals.raw_set("struct", structs::module(lua)?)?;
    Ok(())
}

/// The text a library function raised, as the C library would have raised it (a Lua
/// string), when `err` is such an error: the root of the callback error chain is a
/// `RuntimeError`.
pub fn raised_text(err: &Error) -> Option<&str> {
    match err {
        Error::CallbackError { cause, .. } => raised_text(cause),
        Error::RuntimeError(text) => Some(text),
        _ => None,
    }
}
