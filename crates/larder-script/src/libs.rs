//! The libraries Redis gives scripts besides Lua's own: `cjson`, `cmsgpack`, `bit` and
//! `struct`.

use mlua::Lua;

/// Install every library as a global table of `lua`.
pub fn install(_lua: &Lua) -> mlua::Result<()> {
    Ok(())
}
