//! What the run machinery keeps from run to run (the host's cell, the exchange
//! buffers, the count hook, the lifted memory cap) never shows in a later run.

use super::tests::{eval_with, sha, FakeHost};
use super::*;
use larder_resp::{Protocol, ReplyBuf};

fn capped() -> Vm {
    Vm::new(&VmOptions {
        memory_limit_bytes: 8 << 20,
    })
    .expect("vm")
}

#[test]
fn arguments_reach_the_host_as_redis_formats_them() {
    let mut vm = capped();
    let mut host = FakeHost::default();
    // As redis-server 7.0.15's `%.17g`: integers below 1e17 in full, the rest with an
    // exponent.
    let body = "redis.call('echo', 1e17, 99999999999999999, -123456789012, 2^63, 0.1) \
                redis.call('echo', 'a') return 1";
    let (r, _) = eval_with(&mut vm, &mut host, body, &[], &[], Protocol::Resp2);
    assert_eq!(r, ":1\r\n");
    let want: [&[u8]; 6] = [
        b"echo",
        b"1e+17",
        b"1e+17",
        b"-123456789012",
        b"9.2233720368547758e+18",
        b"0.10000000000000001",
    ];
    assert_eq!(host.calls[0], want);
    assert_eq!(host.calls[1], [&b"echo"[..], b"a"]);
    // More arguments than fit on the stack, and long ones.
    let long = "x".repeat(100_000);
    let body = "return redis.call('echo', unpack(ARGV))";
    let args: Vec<String> = (0..40).map(|i| format!("{i}{long}")).collect();
    let args: Vec<&str> = std::iter::once("")
        .chain(args.iter().map(|s| s.as_str()))
        .collect();
    let mut host = FakeHost::default();
    let (r, _) = eval_with(&mut vm, &mut host, body, &[], &args, Protocol::Resp2);
    assert_eq!(r, "$0\r\n\r\n");
    assert_eq!(host.calls[0].len(), 42);
    assert_eq!(host.calls[0][41], format!("39{long}").into_bytes());
}

#[test]
fn every_run_gets_fresh_keys_and_argv() {
    let mut vm = capped();
    let mut host = FakeHost::default();
    let spoil = "setmetatable(KEYS, {__index = function() return 'meta' end}) \
                 KEYS.extra = 1 ARGV[2] = 'two' return #ARGV";
    let (r, _) = eval_with(&mut vm, &mut host, spoil, &["k"], &["a"], Protocol::Resp2);
    assert_eq!(r, ":2\r\n");
    let body = "return {#KEYS, #ARGV, tostring(KEYS[7]), tostring(KEYS.extra), \
                tostring(getmetatable(KEYS))}";
    let (r, _) = eval_with(
        &mut vm,
        &mut host,
        body,
        &["k1", "k2"],
        &[],
        Protocol::Resp2,
    );
    assert_eq!(
        r,
        "*5\r\n:2\r\n:0\r\n$3\r\nnil\r\n$3\r\nnil\r\n$3\r\nnil\r\n"
    );
    // A library may keep a function's arguments: a later call does not change them.
    let code = "#!lua name=keep\nlocal kept = {}\n\
                redis.register_function('keep', function(k, a) kept[#kept + 1] = a return #kept end)\n\
                redis.register_function('show', function(k, a) return kept[1] end)";
    vm.load_library("keep", code).expect("loads");
    let mut out = ReplyBuf::new(Protocol::Resp2);
    for args in [&[&b"first"[..]][..], &[b"second", b"x"]] {
        vm.run_function("keep", &[], args, &mut host, &mut out)
            .expect("runs");
    }
    vm.run_function("show", &[], &[], &mut host, &mut out)
        .expect("runs");
    assert_eq!(out.buf, b":1\r\n:2\r\n*1\r\n$5\r\nfirst\r\n");
}

/// EVAL of `body` with `keys` (no arguments, RESP2): its reply, the run having ended normally.
fn eval_ok(vm: &mut Vm, host: &mut FakeHost, keys: &[&str], body: &str) -> String {
    let (r, ended) = eval_with(vm, host, body, keys, &[], Protocol::Resp2);
    assert_eq!(ended, Ok(()));
    r
}

#[test]
fn keys_and_argv_are_filled_in_place_and_replaced_after_a_big_run() {
    let mut vm = capped();
    let mut host = FakeHost::default();
    let mut eval = |keys: &[&str], body: &str| eval_ok(&mut vm, &mut host, keys, body);
    let id = "return tostring(KEYS)";
    let first = eval(&["a"], id);
    assert_eq!(eval(&["b", "c"], id), first, "filled in place");
    // Many keys: this run still fills the same table, the next gets a fresh one.
    let many: Vec<String> = (0..100).map(|i| format!("k{i}")).collect();
    let many: Vec<&str> = many.iter().map(String::as_str).collect();
    assert_eq!(eval(&many, id), first);
    let second = eval(&["a"], id);
    assert_ne!(second, first, "replaced after a big run");
    // A script that grows the table: its next run clears it, and the one after that gets a
    // fresh table.
    assert_eq!(
        eval(&[], "for i = 1, 1000 do KEYS[i] = i end return #KEYS"),
        ":1000\r\n"
    );
    assert_eq!(eval(&["z"], "return #KEYS"), ":1\r\n");
    let third = eval(&["a"], id);
    assert_ne!(third, second);
    assert_eq!(eval(&["a"], id), third);
}

#[test]
fn used_memory_follows_the_function_interpreter() {
    let mut vm = capped();
    let mut host = FakeHost::default();
    let mut out = ReplyBuf::new(Protocol::Resp2);
    let start = vm.used_memory();
    let code = "#!lua name=grow\nlocal kept = {}\n\
                redis.register_function('grow', function() \
                  for i = 1, 20000 do kept[#kept + 1] = 'v' .. i end return #kept end)";
    vm.load_library("grow", code).expect("loads");
    let loaded = vm.used_memory();
    assert!(loaded > start, "{loaded} after loading, {start} before");
    // EVAL runs between: the function interpreter's count is kept, not stale after it.
    let (r, _) = eval_with(&mut vm, &mut host, "return 1", &[], &[], Protocol::Resp2);
    assert_eq!(r, ":1\r\n");
    vm.run_function("grow", &[], &[], &mut host, &mut out)
        .expect("runs");
    let grown = vm.used_memory();
    assert!(
        grown > loaded + 200_000,
        "{grown} after growing, {loaded} before"
    );
    vm.clear_libraries();
    let cleared = vm.used_memory();
    assert!(
        cleared < grown - 200_000,
        "{cleared} after clearing, {grown} before"
    );
}

#[test]
fn a_refill_clears_every_field_a_script_added_and_the_metatable() {
    let mut vm = capped();
    let mut host = FakeHost::default();
    let mut eval = |keys: &[&str], body: &str| eval_ok(&mut vm, &mut host, keys, body);
    let spoil = "KEYS.x = 1 KEYS[0] = 2 KEYS[-1] = 3 KEYS[1.5] = 4 KEYS[3] = 5 KEYS[2^40] = 6 \
                 KEYS[true] = 7 KEYS[KEYS] = 8 KEYS[2] = nil \
                 setmetatable(KEYS, {__index = function() return 'meta' end}) return 1";
    assert_eq!(eval(&["a", "b"], spoil), ":1\r\n");
    let look = "local n = 0 for k, v in pairs(KEYS) do n = n + 1 end \
                return {n, KEYS[1], KEYS[2] or 'nil', KEYS[3] or 'nil', tostring(getmetatable(KEYS))}";
    assert_eq!(
        eval(&["p", "q"], look),
        "*5\r\n:2\r\n$1\r\np\r\n$1\r\nq\r\n$3\r\nnil\r\n$3\r\nnil\r\n"
    );
    assert_eq!(eval(&["a", "b", "c"], spoil), ":1\r\n");
    assert_eq!(
        eval(&["p"], look),
        "*5\r\n:1\r\n$1\r\np\r\n$3\r\nnil\r\n$3\r\nnil\r\n$3\r\nnil\r\n"
    );
}

#[test]
fn the_count_hook_comes_back_after_an_abort_and_a_library_load() {
    let mut vm = capped();
    let spin = "local n = 0 for i = 1, 1e6 do n = n + 1 end return n";
    let mut host = FakeHost::default();
    let (r, ended) = eval_with(&mut vm, &mut host, spin, &[], &[], Protocol::Resp2);
    assert_eq!((r.as_str(), ended), (":1000000\r\n", Ok(())));
    let ticks = host.ticks;
    assert!(ticks >= 10, "{ticks}");
    // Killed...
    let mut killer = FakeHost {
        abort_after_ticks: Some((0, Abort::Killed)),
        ..FakeHost::default()
    };
    let (_, ended) = eval_with(&mut vm, &mut killer, spin, &[], &[], Protocol::Resp2);
    assert_eq!(ended, Err(Abort::Killed));
    // ... and the next run ticks as before, and is not killed.
    let mut host = FakeHost::default();
    let (r, ended) = eval_with(&mut vm, &mut host, spin, &[], &[], Protocol::Resp2);
    assert_eq!(
        (r.as_str(), ended, host.ticks),
        (":1000000\r\n", Ok(()), ticks)
    );
    // A library's load has its own hook; its functions then tick as scripts do.
    let code = format!("#!lua name=spin\nredis.register_function('spin', function() {spin} end)");
    vm.load_library("spin", &code).expect("loads");
    let mut host = FakeHost::default();
    let mut out = ReplyBuf::new(Protocol::Resp2);
    vm.run_function("spin", &[], &[], &mut host, &mut out)
        .expect("runs");
    assert_eq!(
        (out.buf.as_slice(), host.ticks),
        (&b":1000000\r\n"[..], ticks)
    );
}

#[test]
fn the_memory_cap_holds_after_runs_that_lift_it() {
    let mut vm = capped();
    let mut host = FakeHost::default();
    // Many runs with arguments and calls (each lifts the cap for its own bookkeeping)...
    for i in 0..200 {
        let body = "return redis.call('echo', ARGV[1])";
        let arg = i.to_string();
        let (r, _) = eval_with(&mut vm, &mut host, body, &[], &[&arg], Protocol::Resp2);
        assert_eq!(r, format!("${}\r\n{arg}\r\n", arg.len()));
    }
    // ... and a script still cannot pass it.
    let body = "local t = {} for i = 1, 1e8 do t[i] = string.rep('x', 100) .. i end";
    let (r, _) = eval_with(&mut vm, &mut host, body, &[], &[], Protocol::Resp2);
    assert!(r.contains("not enough memory"), "{r}");
    assert!(vm.used_memory() < 8 << 20);
    assert!(vm.has_script(&script_id(&sha(body)).expect("a SHA1")));
}

/// Lua code that runs while the result is turned into the reply (a metamethod of the error
/// table) reaches no host: a command there that would have needed a retry cannot leave the
/// run's reply behind and start it again.
#[test]
fn nothing_reaches_the_host_while_the_reply_is_written() {
    let mut vm = capped();
    let mut host = FakeHost {
        abort_calls: Some(Abort::Retry),
        ..FakeHost::default()
    };
    let body = "error(setmetatable({}, {__index = function() \
                redis.call('set', 'other', 'v') return 'x' end}))";
    let (r, ok) = eval_with(&mut vm, &mut host, body, &[], &[], Protocol::Resp2);
    assert_eq!(ok, Ok(()));
    assert!(host.calls.is_empty(), "{:?}", host.calls);
    assert!(r.starts_with('-'), "{r}");
    assert_eq!(r.matches("\r\n").count(), 1, "one reply: {r}");
    // A retry asked for while the script runs leaves no reply at all.
    let (r, ok) = eval_with(
        &mut vm,
        &mut host,
        "return redis.call('ping')",
        &[],
        &[],
        Protocol::Resp2,
    );
    assert_eq!((r.as_str(), ok), ("", Err(Abort::Retry)));
}
