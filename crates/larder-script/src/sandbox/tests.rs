//! Escape attempts, each failing as it fails on Redis 7.0.15.

use crate::vm::tests::{at, eval};

fn err(body: &str, msg: &str) -> String {
    format!("-{msg}{}\r\n", at(body, 1))
}

#[test]
fn builds_both_flavors() {
    assert!(super::Sandbox::new(super::Flavor::Eval, 0).is_ok());
    assert!(super::Sandbox::new(super::Flavor::Function, 0).is_ok());
}

#[test]
fn missing_libraries_and_functions() {
    for name in [
        "os", "io", "loadfile", "dofile", "require", "package", "module", "debug", "print",
        "getfenv", "setfenv", "newproxy",
    ] {
        let body = format!("return {name}");
        assert_eq!(
            eval(&body),
            err(
                &body,
                &format!("ERR user_script:1: Script attempted to access nonexistent global variable '{name}'")
            ),
            "{name}"
        );
    }
}

#[test]
fn globals_are_exactly_redis_s() {
    let body = "local t = {} for k,v in pairs(_G) do t[#t+1] = k end table.sort(t) return table.concat(t, ' ')";
    let want = "ARGV KEYS _G _VERSION assert bit cjson cmsgpack collectgarbage coroutine error gcinfo getmetatable ipairs load loadstring math next pairs pcall rawequal rawget rawset redis select setmetatable string struct table tonumber tostring type unpack xpcall";
    let reply = eval(body);
    // cjson, cmsgpack, bit and struct come from `libs`; the rest is the sandbox's.
    let got: Vec<&str> = reply
        .lines()
        .nth(1)
        .unwrap_or_default()
        .split(' ')
        .collect();
    for name in want.split(' ') {
        if !["bit", "cjson", "cmsgpack", "struct"].contains(&name) {
            assert!(got.contains(&name), "{name} missing from {got:?}");
        }
    }
    for name in &got {
        assert!(
            want.split(' ').any(|w| w == *name),
            "{name} is not a Redis global"
        );
    }
}

#[test]
fn protected_tables() {
    let ro = "ERR user_script:1: Attempt to modify a readonly table";
    // Raised inside a C function, the message has no position (as in Redis).
    for body in [
        "table.insert(string, 1)",
        "rawset(_G, 'x', 1)",
        "rawset(redis, 'call', 1)",
        "setmetatable(_G, nil)",
        "setmetatable(string, {})",
    ] {
        assert_eq!(
            eval(body),
            err(body, "ERR Attempt to modify a readonly table"),
            "{body}"
        );
    }
    for body in [
        "x = 1",
        "redis.call = nil",
        "string.rep = nil",
        "math.floor = nil",
        "getmetatable('').__index = {}",
        "getmetatable('').__index.upper = nil",
        "getmetatable(_G).__index = nil",
        "_G.string = {}",
        "coroutine.create = nil",
    ] {
        assert_eq!(eval(body), err(body, ro), "{body}");
    }
    // The real string library is still there afterwards.
    assert_eq!(eval("return ('a'):upper()"), "$1\r\nA\r\n");
}

#[test]
fn loadstring_and_bytecode() {
    assert_eq!(eval("return loadstring('return 1')()"), ":1\r\n");
    // Precompiled chunks are parsed as text, as in Redis: a syntax error.
    let body =
        "local f, e = loadstring(string.dump(function() return 1 end)) return {tostring(f), e}";
    assert_eq!(
        eval(body),
        "*2\r\n$3\r\nnil\r\n$60\r\n[string \"\x1bLuaQ\"]:1: unexpected symbol near 'char(27)'\r\n"
            .replace(
                "$60",
                &format!(
                    "${}",
                    "[string \"\x1bLuaQ\"]:1: unexpected symbol near 'char(27)'".len()
                )
            )
    );
    // A chunk from loadstring sees the protected globals too.
    let body = "return loadstring('x = 1')()";
    assert_eq!(
        eval(body),
        format!(
            "-ERR [string \"x = 1\"]:1: Attempt to modify a readonly table script: {}, on x = 1:1.\r\n",
            crate::vm::tests::sha(body)
        )
    );
}

#[test]
fn collectgarbage_and_gcinfo_work() {
    assert_eq!(eval("return collectgarbage('count') > 0"), ":1\r\n");
    assert_eq!(
        eval("collectgarbage('collect') return gcinfo() > 0"),
        ":1\r\n"
    );
    assert_eq!(eval("return collectgarbage('stop')"), ":0\r\n");
}

#[test]
fn coroutines_cannot_escape_the_hook() {
    // A coroutine runs Lua code too; the script still ends normally.
    let body = "local co = coroutine.wrap(function() for i=1,10 do coroutine.yield(i) end end) local s = 0 for i=1,10 do s = s + co() end return s";
    assert_eq!(eval(body), ":55\r\n");
}
