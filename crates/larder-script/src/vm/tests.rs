use super::*;
use larder_resp::{Protocol, ReplyBuf};

/// A host that records what scripts call and answers from a small canned table.
#[derive(Default)]
pub(crate) struct FakeHost {
    pub calls: Vec<Vec<Vec<u8>>>,
    pub logs: Vec<(u8, String)>,
    pub repl: Vec<u8>,
    pub ticks: usize,
    /// Make `tick` (after this many ticks) or `call` return this.
    pub abort_after_ticks: Option<(usize, Abort)>,
    pub abort_calls: Option<Abort>,
}

impl Host for FakeHost {
    fn call(&mut self, argv: &[&[u8]], out: &mut ReplyBuf) -> Result<(), Abort> {
        self.calls.push(argv.iter().map(|a| a.to_vec()).collect());
        if let Some(a) = self.abort_calls {
            return Err(a);
        }
        match argv[0].to_ascii_lowercase().as_slice() {
            b"ping" => out.simple("PONG"),
            b"get" => out.null(),
            b"echo" => out.bulk(argv.get(1).copied().unwrap_or_default()),
            b"incr" => out.int(1),
            b"fail" => {
                out.error("WRONGTYPE Operation against a key holding the wrong kind of value")
            }
            b"hgetall" => {
                out.map(1);
                out.bulk(b"f");
                out.bulk(b"v");
            }
            b"smembers" => {
                out.set(1);
                out.bulk(b"m");
            }
            b"dbl" => out.score(1.5),
            b"bool" => out.boolean(true),
            b"big" => out.big_number("12345678901234567890"),
            b"verb" => out.verbatim("txt", b"some text"),
            b"nullarr" => out.null_array(),
            b"list" => {
                out.array(3);
                out.int(1);
                out.bulk(b"two");
                out.null();
            }
            b"shared" => out.bulk_shared(&std::sync::Arc::new(b"attached".to_vec())),
            _ => out.error("ERR Unknown Redis command called from script"),
        }
        Ok(())
    }
    fn tick(&mut self) -> Result<(), Abort> {
        self.ticks += 1;
        match self.abort_after_ticks {
            Some((n, a)) if self.ticks > n => Err(a),
            _ => Ok(()),
        }
    }
    fn log(&mut self, level: u8, msg: &str) {
        self.logs.push((level, msg.to_string()));
    }
    fn set_repl(&mut self, flags: u8) {
        self.repl.push(flags);
    }
}

pub(crate) fn sha(body: &str) -> String {
    use sha1::{Digest, Sha1};
    Sha1::digest(body.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Runs `body` as EVAL with `keys`/`args` for a client speaking `proto`; the reply as text
/// and how the run ended.
pub(crate) fn eval_with(
    vm: &mut Vm,
    host: &mut FakeHost,
    body: &str,
    keys: &[&str],
    args: &[&str],
    proto: Protocol,
) -> (String, Result<(), Abort>) {
    let sha = sha(body);
    let mut out = ReplyBuf::new(proto);
    if let Err(e) = vm.compile_script(&sha, body.as_bytes()) {
        out.error(&e);
        return (
            String::from_utf8_lossy(&out.take_bytes()).into_owned(),
            Ok(()),
        );
    }
    let keys: Vec<&[u8]> = keys.iter().map(|k| k.as_bytes()).collect();
    let args: Vec<&[u8]> = args.iter().map(|k| k.as_bytes()).collect();
    let id = script_id(&sha).expect("a SHA1");
    let r = vm.run_script(&id, &keys, &args, host, &mut out);
    (String::from_utf8_lossy(&out.take_bytes()).into_owned(), r)
}

pub(crate) fn eval(body: &str) -> String {
    let mut vm = Vm::new(&VmOptions::default()).expect("vm");
    eval_with(
        &mut vm,
        &mut FakeHost::default(),
        body,
        &[],
        &[],
        Protocol::Resp2,
    )
    .0
}

/// The error text Redis appends to a script's runtime error.
pub(crate) fn at(body: &str, line: u32) -> String {
    format!(" script: {}, on @user_script:{line}.", sha(body))
}

#[test]
fn smoke() {
    assert_eq!(eval("return 1"), ":1\r\n");
    let b = "return redis.call('echo', KEYS[1])";
    let mut vm = Vm::new(&VmOptions::default()).expect("vm");
    let mut host = FakeHost::default();
    let (r, _) = eval_with(&mut vm, &mut host, b, &["k"], &[], Protocol::Resp2);
    assert_eq!(r, "$1\r\nk\r\n");
    let b = "x = 1";
    assert_eq!(
        eval(b),
        format!(
            "-ERR user_script:1: Attempt to modify a readonly table{}\r\n",
            at(b, 1)
        )
    );
    let b = "return y";
    assert_eq!(
        eval(b),
        format!(
            "-ERR user_script:1: Script attempted to access nonexistent global variable 'y'{}\r\n",
            at(b, 1)
        )
    );
    let b = "return redis.call('nosuch')";
    assert_eq!(
        eval(b),
        format!(
            "-ERR Unknown Redis command called from script{}\r\n",
            at(b, 1)
        )
    );
}

fn run_err(body: &str, msg: &str) {
    assert_eq!(eval(body), format!("-{msg}{}\r\n", at(body, 1)), "{body}");
}

#[test]
fn runtime_error_texts() {
    run_err("error('x')", "ERR user_script:1: x");
    run_err("error({err='X y'})", "X y");
    run_err("error({err='X y', source='s', line=3})", "X y");
    run_err("error('x', 0)", "ERR x");
    run_err("error()", "ERR nil");
    run_err("error(12)", "ERR user_script:1: 12");
    run_err("error({err=12})", "12");
    run_err(
        "return redis.call('nosuch')",
        "ERR Unknown Redis command called from script",
    );
    run_err(
        "return redis.call('fail')",
        "WRONGTYPE Operation against a key holding the wrong kind of value",
    );
    run_err(
        "return redis.call()",
        "ERR Please specify at least one argument for this redis lib call",
    );
    run_err(
        "return redis.call({})",
        "ERR Lua redis lib command arguments must be strings or integers",
    );
    run_err(
        "return redis.call('get', true)",
        "ERR Lua redis lib command arguments must be strings or integers",
    );
    run_err(
        "return redis.call('get', nil)",
        "ERR Lua redis lib command arguments must be strings or integers",
    );
    run_err(
        "return redis.setresp(4)",
        "ERR RESP version must be 2 or 3.",
    );
    run_err(
        "return redis.setresp()",
        "ERR redis.setresp() requires one argument.",
    );
    run_err(
        "redis.set_repl(8)",
        "ERR Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL or REPL_NONE.",
    );
    run_err(
        "redis.set_repl()",
        "ERR redis.set_repl() requires two arguments.",
    );
    run_err(
        "redis.log()",
        "ERR redis.log() requires two arguments or more.",
    );
    run_err(
        "redis.log('x','y')",
        "ERR First argument must be a number (log level).",
    );
    run_err("redis.log(9,'y')", "ERR Invalid debug level.");
    run_err("return redis.sha1hex()", "ERR wrong number of arguments");
    run_err(
        "return math.random(0)",
        "ERR user_script:1: bad argument #1 to 'random' (interval is empty)",
    );
    let body = "local a = 1\nlocal b = nil + a";
    assert_eq!(
        eval(body),
        format!(
            "-ERR user_script:2: attempt to perform arithmetic on a nil value{}\r\n",
            at(body, 2)
        )
    );
}

/// Errors the libraries raise reach Lua code as the strings Redis's C libraries raise
/// (answers from redis-server 7.0.15).
#[test]
fn library_errors_are_strings() {
    let decode = "Expected value but found invalid token at character 1";
    run_err(
        "return cjson.decode('x')",
        &format!("ERR user_script:1: {decode}"),
    );
    run_err(
        "local function f() return cjson.decode('x') end return f()",
        &format!("ERR user_script:1: {decode}"),
    );
    run_err(
        "return struct.unpack('>I4', 'ab')",
        "ERR user_script:1: bad argument #2 to 'unpack' (data string too short)",
    );
    let cases = [
        (
            "local ok, e = pcall(cjson.decode, 'x') return e",
            decode.to_string(),
        ),
        (
            "local ok, e = pcall(function() local x = cjson.decode('x') return x end) return e",
            format!("user_script:1: {decode}"),
        ),
        (
            "return select(2, xpcall(function() return cjson.decode('x') end, \
             function(e) return type(e) .. ':' .. e end))",
            format!("string:user_script:1: {decode}"),
        ),
        (
            "return select(2, xpcall(function() return redis.call('nosuch') end, \
             function(e) return type(e) .. ':' .. e.err end))",
            "table:ERR Unknown Redis command called from script".to_string(),
        ),
        (
            "local co = coroutine.create(function() return cjson.decode('x') end) \
             return select(2, coroutine.resume(co))",
            format!("user_script:1: {decode}"),
        ),
        (
            "local co = coroutine.create(function() return redis.call('nosuch') end) \
             return type(select(2, coroutine.resume(co)))",
            "table".to_string(),
        ),
    ];
    for (body, want) in cases {
        assert_eq!(
            eval(body),
            format!("${}\r\n{want}\r\n", want.len()),
            "{body}"
        );
    }
}

#[test]
fn compile_errors_and_shebang() {
    assert_eq!(
        eval("return +"),
        "-ERR Error compiling script (new function): user_script:1: unexpected symbol near '+'\r\n"
    );
    // The shebang line is skipped but its line feed keeps line numbers.
    let body = "#!lua flags=no-writes\nerror('x')";
    assert_eq!(
        eval(body),
        format!("-ERR user_script:2: x{}\r\n", at(body, 2))
    );
}

#[test]
fn redis_api_values() {
    assert_eq!(eval("return redis.error_reply('boom')"), "-ERR boom\r\n");
    assert_eq!(eval("return redis.error_reply('-boom x')"), "-boom x\r\n");
    assert_eq!(eval("return redis.error_reply('MY boom')"), "-MY boom\r\n");
    assert_eq!(
        eval("return redis.error_reply(1)"),
        "-ERR wrong number or type of arguments\r\n"
    );
    assert_eq!(eval("return redis.status_reply('fine')"), "+fine\r\n");
    assert_eq!(
        eval("return redis.status_reply(1)"),
        "-ERR wrong number or type of arguments\r\n"
    );
    assert_eq!(
        eval("return redis.sha1hex('')"),
        "$40\r\nda39a3ee5e6b4b0d3255bfef95601890afd80709\r\n"
    );
    assert_eq!(
        eval("return redis.sha1hex(1)"),
        "$40\r\n356a192b7913b04c54574d18c28d46e6395428ab\r\n"
    );
    assert_eq!(eval("return redis.REDIS_VERSION"), "$6\r\n7.0.15\r\n");
    assert_eq!(eval("return redis.REDIS_VERSION_NUM"), ":458767\r\n");
    assert_eq!(eval("return redis.replicate_commands()"), ":1\r\n");
    assert_eq!(eval("return redis.breakpoint()"), "$-1\r\n");
    assert_eq!(eval("return redis.debug('x')"), "$-1\r\n");
    assert_eq!(
        eval("return {redis.LOG_DEBUG, redis.LOG_VERBOSE, redis.LOG_NOTICE, redis.LOG_WARNING, redis.REPL_NONE, redis.REPL_AOF, redis.REPL_SLAVE, redis.REPL_REPLICA, redis.REPL_ALL}"),
        "*9\r\n:0\r\n:1\r\n:2\r\n:3\r\n:0\r\n:1\r\n:2\r\n:2\r\n:3\r\n"
    );
    // Redis's pcall shows a raised error table as its text.
    assert_eq!(
        eval("local ok, e = pcall(redis.call, 'nosuch') return {tostring(ok), type(e), e}"),
        "*3\r\n$5\r\nfalse\r\n$6\r\nstring\r\n$44\r\nERR Unknown Redis command called from script\r\n"
    );
    assert_eq!(
        eval("local ok, e = pcall(error, {err='X y'}) return e"),
        "$3\r\nX y\r\n"
    );
    assert_eq!(
        eval("local ok, e = pcall(error, {a=1}) return type(e)"),
        "$5\r\ntable\r\n"
    );
    assert_eq!(
        eval("return redis.pcall('fail')"),
        "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"
    );
    assert_eq!(
        eval("return redis.pcall()"),
        "-ERR Please specify at least one argument for this redis lib call\r\n"
    );
    assert_eq!(
        eval("return redis.pcall('fail').ignore_error_stats_update"),
        ":1\r\n"
    );
    // math.random continues Redis's rand48 sequence from its initial state.
    assert_eq!(
        eval("return {math.random(1000), math.random(1000)}"),
        "*2\r\n:397\r\n:841\r\n"
    );
}

#[test]
fn call_arguments_and_logs() {
    let mut vm = Vm::new(&VmOptions::default()).expect("vm");
    let mut host = FakeHost::default();
    let body = "redis.call('echo', 1.5, 3, 0.1, 1e20, 'x') redis.log(redis.LOG_WARNING, 'a', {}, 'b', 2) redis.set_repl(redis.REPL_AOF) return 1";
    let (r, ok) = eval_with(&mut vm, &mut host, body, &[], &[], Protocol::Resp2);
    assert_eq!((r.as_str(), ok), (":1\r\n", Ok(())));
    let args: Vec<&[u8]> = host.calls[0].iter().map(|a| a.as_slice()).collect();
    assert_eq!(
        args,
        [
            &b"echo"[..],
            b"1.5",
            b"3",
            b"0.10000000000000001",
            b"1e+20",
            b"x"
        ]
    );
    assert_eq!(host.logs, [(3, "a b 2".to_string())]);
    assert_eq!(host.repl, [1]);
}

/// Numbers at the edges of `%.17g` and of `i64`, as redis-server 7.0.15 sends them on
/// (checked with SET and GET in a script there).
#[test]
fn call_arguments_at_the_edges_of_numbers() {
    let mut vm = Vm::new(&VmOptions::default()).expect("vm");
    let mut host = FakeHost::default();
    let body = "redis.call('echo', 0 * -1, 2^63, -2^63, 1e17, math.huge, -math.huge, \
                99999999999999984, 123, -7, 1.5) return 1";
    let (r, ok) = eval_with(&mut vm, &mut host, body, &[], &[], Protocol::Resp2);
    assert_eq!((r.as_str(), ok), (":1\r\n", Ok(())));
    let args: Vec<&str> = host.calls[0]
        .iter()
        .map(|a| std::str::from_utf8(a).expect("ascii"))
        .collect();
    assert_eq!(
        args,
        [
            "echo",
            "-0",
            "9.2233720368547758e+18",
            "-9.2233720368547758e+18",
            "1e+17",
            "inf",
            "-inf",
            "99999999999999984",
            "123",
            "-7",
            "1.5"
        ]
    );
}

#[test]
fn keys_argv_and_resp3() {
    let mut vm = Vm::new(&VmOptions::default()).expect("vm");
    let mut host = FakeHost::default();
    let body = "return {#KEYS, #ARGV, KEYS[1], ARGV[1], ARGV[2]}";
    let (r, _) = eval_with(
        &mut vm,
        &mut host,
        body,
        &["k"],
        &["a", "b"],
        Protocol::Resp2,
    );
    assert_eq!(r, "*5\r\n:1\r\n:2\r\n$1\r\nk\r\n$1\r\na\r\n$1\r\nb\r\n");
    // The next run sees its own KEYS.
    let (r, _) = eval_with(&mut vm, &mut host, body, &[], &[], Protocol::Resp2);
    assert_eq!(r, "*2\r\n:0\r\n:0\r\n");
    // Under redis.setresp(3) the host replies in RESP3 and RESP3 types reach Lua.
    let body = "redis.setresp(3) local m = redis.call('hgetall') local b = redis.call('bool') local d = redis.call('dbl') return {m.map.f, tostring(b), d.double, redis.call('get') == nil}";
    let (r, _) = eval_with(&mut vm, &mut host, body, &[], &[], Protocol::Resp3);
    assert_eq!(r, "*4\r\n$1\r\nv\r\n$4\r\ntrue\r\n:1\r\n#t\r\n");
    // ... and the next run starts in RESP2 again.
    let (r, _) = eval_with(
        &mut vm,
        &mut host,
        "return redis.call('get')",
        &[],
        &[],
        Protocol::Resp3,
    );
    assert_eq!(r, "_\r\n");
    let (r, _) = eval_with(
        &mut vm,
        &mut host,
        "return tostring(redis.call('get'))",
        &[],
        &[],
        Protocol::Resp3,
    );
    assert_eq!(r, "$5\r\nfalse\r\n");
    // A reply with an attached (shared) value reads like any other.
    let (r, _) = eval_with(
        &mut vm,
        &mut host,
        "return redis.call('shared')",
        &[],
        &[],
        Protocol::Resp2,
    );
    assert_eq!(r, "$8\r\nattached\r\n");
}

#[test]
fn abort_ends_the_run_even_through_pcall() {
    let mut vm = Vm::new(&VmOptions::default()).expect("vm");
    let body = "while true do pcall(function() while true do end end) end";
    let mut host = FakeHost {
        abort_after_ticks: Some((3, Abort::Killed)),
        ..FakeHost::default()
    };
    let (r, ended) = eval_with(&mut vm, &mut host, body, &[], &[], Protocol::Resp2);
    assert_eq!(ended, Err(Abort::Killed));
    assert_eq!(
        r,
        format!(
            "-ERR Script killed by user with SCRIPT KILL... script: {}, on @user_script:1.\r\n",
            sha(body)
        )
    );
    // Retry writes nothing, even when redis.call is wrapped in pcall in a loop, and in a
    // coroutine, which is another Lua thread than the run's.
    let spin = "while true do pcall(redis.call, 'ping') end";
    let in_coroutine = format!(
        "local co = coroutine.create(function() {spin} end) \
         local ok = coroutine.resume(co) {spin}"
    );
    for body in [spin, &in_coroutine] {
        let mut host = FakeHost {
            abort_calls: Some(Abort::Retry),
            ..FakeHost::default()
        };
        let (r, ended) = eval_with(&mut vm, &mut host, body, &[], &[], Protocol::Resp2);
        assert_eq!((r.as_str(), ended), ("", Err(Abort::Retry)), "{body}");
        assert_eq!(host.calls.len(), 1, "{body}");
    }
    // The interpreter is fine afterwards.
    let (r, ended) = eval_with(
        &mut vm,
        &mut FakeHost::default(),
        "return 7",
        &[],
        &[],
        Protocol::Resp2,
    );
    assert_eq!((r.as_str(), ended), (":7\r\n", Ok(())));
}

#[test]
fn memory_cap_is_an_error_reply() {
    let mut vm = Vm::new(&VmOptions {
        memory_limit_bytes: 8 << 20,
    })
    .expect("vm");
    let mut host = FakeHost::default();
    let body = "local t = {} for i = 1, 1e8 do t[i] = string.rep('x', 100) .. i end return #t";
    let (r, ended) = eval_with(&mut vm, &mut host, body, &[], &[], Protocol::Resp2);
    assert_eq!(ended, Ok(()));
    assert!(
        r.starts_with("-ERR Error running script ") && r.contains("not enough memory"),
        "{r}"
    );
    let body = "return string.rep('x', 2^30)";
    let (r, _) = eval_with(&mut vm, &mut host, body, &[], &[], Protocol::Resp2);
    assert!(r.starts_with("-ERR "), "{r}");
    let (r, _) = eval_with(&mut vm, &mut host, "return 1", &[], &[], Protocol::Resp2);
    assert_eq!(r, ":1\r\n");
    assert!(vm.used_memory() < 8 << 20);
}

#[test]
fn script_cache() {
    let mut vm = Vm::new(&VmOptions::default()).expect("vm");
    let hex = sha("return 1");
    let id = script_id(&hex).expect("a SHA1");
    assert!(!vm.has_script(&id));
    vm.compile_script(&hex, b"return 1").expect("compiles");
    assert!(vm.has_script(&id));
    assert!(
        script_id(&hex.to_uppercase()).is_some_and(|upper| vm.has_script(&upper)),
        "hex in either case"
    );
    // Scripts are named by their SHA1: anything else names none.
    assert!(vm.compile_script("abc", b"return 1").is_err());
    assert!(script_id("abc").is_none());
    vm.forget_scripts();
    assert!(!vm.has_script(&id));
    let mut out = ReplyBuf::new(Protocol::Resp2);
    assert_eq!(
        vm.run_script(&id, &[], &[], &mut FakeHost::default(), &mut out),
        Ok(())
    );
    assert_eq!(
        out.buf,
        b"-NOSCRIPT No matching script. Please use EVAL.\r\n"
    );
}

/// More scripts than mlua has handle slots (about 8,000): every one stays runnable.
#[test]
fn ten_thousand_cached_scripts() {
    let mut vm = Vm::new(&VmOptions::default()).expect("vm");
    for i in 0..10_000 {
        let body = format!("return {i}");
        vm.compile_script(&sha(&body), body.as_bytes())
            .expect("compiles");
    }
    for i in [0, 7_999, 8_001, 9_999] {
        let mut out = ReplyBuf::new(Protocol::Resp2);
        let hex = sha(&format!("return {i}"));
        let r = vm.run_script(
            &script_id(&hex).expect("a SHA1"),
            &[],
            &[],
            &mut FakeHost::default(),
            &mut out,
        );
        assert_eq!(r, Ok(()));
        assert_eq!(out.buf, format!(":{i}\r\n").into_bytes());
    }
    vm.forget_scripts();
    vm.compile_script(&sha("return 'again'"), b"return 'again'")
        .expect("compiles after a flush");
}

fn fcall(vm: &mut Vm, name: &str, keys: &[&str], args: &[&str]) -> String {
    let keys: Vec<&[u8]> = keys.iter().map(|k| k.as_bytes()).collect();
    let args: Vec<&[u8]> = args.iter().map(|k| k.as_bytes()).collect();
    let mut out = ReplyBuf::new(Protocol::Resp2);
    let r = vm.run_function(name, &keys, &args, &mut FakeHost::default(), &mut out);
    assert_eq!(r, Ok(()));
    String::from_utf8_lossy(&out.buf).into_owned()
}

#[test]
fn libraries_load_and_run() {
    let mut vm = Vm::new(&VmOptions::default()).expect("vm");
    let code = "#!lua name=l10\nredis.register_function('f10', function(k, a) return error('in f') end)\nredis.register_function('f11', function(k, a) return redis.call('nosuch') end)\nredis.register_function{function_name='f12', callback=function(k, a) return {k[1], a[1]} end, flags={'no-writes', 'ALLOW-OOM'}, description='d'}\nredis.register_function('f13', function(k, a) return KEYS end)";
    let metas = vm.load_library("l10", code).expect("loads");
    assert_eq!(metas.len(), 4);
    assert_eq!(
        metas[2],
        FunctionMeta {
            name: "f12".into(),
            description: Some("d".into()),
            flags: ScriptFlags(ScriptFlags::NO_WRITES | ScriptFlags::ALLOW_OOM)
        }
    );
    assert_eq!(
        fcall(&mut vm, "f10", &[], &[]),
        "-ERR user_function:2: in f script: f10, on @user_function:2.\r\n"
    );
    assert_eq!(
        fcall(&mut vm, "f11", &[], &[]),
        "-ERR Unknown Redis command called from script script: f11, on @user_function:3.\r\n"
    );
    assert_eq!(
        fcall(&mut vm, "f12", &["k"], &["a"]),
        "*2\r\n$1\r\nk\r\n$1\r\na\r\n"
    );
    assert_eq!(
        fcall(&mut vm, "f13", &[], &[]),
        "-ERR user_function:5: Script attempted to access nonexistent global variable 'KEYS' script: f13, on @user_function:5.\r\n"
    );
    // Replacing the library drops its old functions.
    vm.load_library(
        "l10",
        "#!lua name=l10\nredis.register_function('g', function() return 2 end)",
    )
    .expect("loads");
    assert_eq!(fcall(&mut vm, "g", &[], &[]), ":2\r\n");
    assert_eq!(
        fcall(&mut vm, "f12", &[], &[]),
        "-ERR Function not found\r\n"
    );
    vm.clear_libraries();
    assert_eq!(fcall(&mut vm, "g", &[], &[]), "-ERR Function not found\r\n");
}

#[test]
fn library_load_errors() {
    let mut vm = Vm::new(&VmOptions::default()).expect("vm");
    let cases = [
        ("error('boom')", "ERR Error registering functions: ERR user_function:2: Script attempted to access nonexistent global variable 'error'"),
        ("redis.register_function('f-1', function() end)", "ERR Error registering functions: ERR Library names can only contain letters, numbers, or underscores(_) and must be at least one character long"),
        ("return 1", "ERR No functions registered"),
        ("redis.call('ping')", "ERR Error registering functions: ERR user_function:2: Script attempted to access nonexistent global variable 'call'"),
        ("local x = string.len('a')", "ERR Error registering functions: ERR user_function:2: Script attempted to access nonexistent global variable 'string'"),
        ("redis.register_function{function_name='f6', callback=function() end, flags={'no-writes','bogus'}}", "ERR Error registering functions: ERR unknown flag given"),
        ("redis.register_function('f7', function() end)\nredis.register_function('f7', function() end)", "ERR Error registering functions: ERR Function already exists in the library"),
        ("redis.register_function()", "ERR Error registering functions: ERR wrong number of arguments to redis.register_function"),
        ("x = 1", "ERR Error registering functions: ERR user_function:2: Attempt to modify a readonly table"),
        ("redis.register_function(", "ERR Error compiling function: user_function:2: unexpected symbol near '<eof>'"),
        ("redis.register_function{callback=function() end}", "ERR Error registering functions: ERR redis.register_function must get a function name argument"),
        ("redis.register_function{function_name='x'}", "ERR Error registering functions: ERR redis.register_function must get a callback argument"),
        ("redis.register_function{function_name='x', callback=function() end, other=1}", "ERR Error registering functions: ERR unknown argument given to redis.register_function"),
        ("redis.register_function('x', 1)", "ERR Error registering functions: ERR second argument to redis.register_function must be a function"),
        ("redis.register_function(1)", "ERR Error registering functions: ERR calling redis.register_function with a single argument is only applicable to Lua table (representing named arguments)."),
        ("while true do end", "ERR Error registering functions: ERR FUNCTION LOAD timeout"),
    ];
    for (body, want) in cases {
        let code = format!("#!lua name=lib\n{body}");
        assert_eq!(
            vm.load_library("lib", &code),
            Err(want.to_string()),
            "{body}"
        );
    }
    // A failed load leaves no functions behind, and the interpreter still loads.
    assert!(vm
        .load_library(
            "lib",
            "#!lua name=lib\nredis.register_function('ok', function() return 1 end)"
        )
        .is_ok());
    assert_eq!(fcall(&mut vm, "ok", &[], &[]), ":1\r\n");
    assert_eq!(
        fcall(&mut vm, "f7", &[], &[]),
        "-ERR Function not found\r\n"
    );
}

#[test]
fn register_function_outside_a_load() {
    let mut vm = Vm::new(&VmOptions::default()).expect("vm");
    let code = "#!lua name=lib\nlocal r = redis.register_function\nredis.register_function('f', function() return r('g', function() end) end)";
    vm.load_library("lib", code).expect("loads");
    assert_eq!(
        fcall(&mut vm, "f", &[], &[]),
        "-ERR redis.register_function can only be called on FUNCTION LOAD command script: f, on @user_function:3.\r\n"
    );
}

#[test]
fn script_ids_are_the_sha1_bytes_in_either_case() {
    let lower = "6f460df31e5dbaaea1b9713d087820cf949eca23";
    let id = script_id(lower).expect("hex");
    assert_eq!(id[0], 0x6f);
    assert_eq!(id[19], 0x23);
    assert_eq!(script_id(&lower.to_uppercase()), Some(id));
    assert_eq!(script_hex(&id), lower);
    for bad in [
        "",
        "6f460df31e5dbaaea1b9713d087820cf949eca2",
        "6f460df31e5dbaaea1b9713d087820cf949eca234",
        "6f460df31e5dbaaea1b9713d087820cf949ecaz3",
        "6f460df31e5dbaaea1b9713d087820cf949eca2é",
    ] {
        assert_eq!(script_id(bad), None, "{bad}");
    }
}

#[test]
fn every_byte_at_every_position_decodes_as_a_hex_digit_or_is_refused() {
    let digit = |b: u8| {
        char::from(b)
            .to_digit(16)
            .and_then(|d| u8::try_from(d).ok())
    };
    let base = *b"0123456789abcdefABCDEF0123456789aBcDeF01";
    for pos in 0..40 {
        for b in 0..=255u8 {
            let mut hex = base;
            hex[pos] = b;
            let expected: Option<ScriptId> = (|| {
                let mut id = [0u8; 20];
                for (i, pair) in hex.chunks_exact(2).enumerate() {
                    id[i] = digit(pair[0])? << 4 | digit(pair[1])?;
                }
                Some(id)
            })();
            assert_eq!(script_id_bytes(&hex), expected, "byte {b:#04x} at {pos}");
        }
    }
}
