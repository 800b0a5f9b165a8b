//! Runs library test cases as `redis_cases.py` runs them in redis-server: the body inside
//! `test_prelude.lua`'s `run`, compiled as `@user_script`, and `pcall` handing back a
//! library's error as its text, as Redis's C libraries raise strings.

use mlua::{Function, Lua, MultiValue, Value};

use super::{install, raised_text};

const PRELUDE: &str = include_str!("test_prelude.lua");

/// A fresh interpreter with the libraries installed.
pub(crate) fn lua() -> Lua {
    let lua = Lua::new();
    install(&lua).expect("install");
    let fix = lua
        .create_function(|lua, results: MultiValue| {
            let mut v = results.into_vec();
            if let (Some(Value::Boolean(false)), Some(Value::Error(e))) = (v.first(), v.get(1)) {
                let text = raised_text(e).map_or_else(|| e.to_string(), str::to_string);
                v[1] = Value::String(lua.create_string(text)?);
            }
            Ok(MultiValue::from_vec(v))
        })
        .expect("fix");
    let pcall: Function = lua.globals().get("pcall").expect("pcall");
    lua.load("local p, fix = ... pcall = function(...) return fix(p(...)) end")
        .call::<()>((pcall, fix))
        .expect("pcall wrapper");
    lua
}

/// What `body` returns, rendered by the prelude.
pub(crate) fn run(lua: &Lua, body: &str) -> String {
    let script = format!("{PRELUDE}\nreturn run(function() {body} end)");
    lua.load(script)
        .set_name("@user_script")
        .eval::<String>()
        .unwrap_or_else(|e| format!("<script failed: {e}>"))
}

/// Runs every case in its own interpreter and reports all that differ.
pub(crate) fn check(cases: &[(&str, &str)]) {
    let failures: Vec<String> = cases
        .iter()
        .filter_map(|(body, want)| {
            let got = run(&lua(), body);
            (got != *want).then(|| format!("case: {body}\n want: {want}\n  got: {got}"))
        })
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} cases differ:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}
