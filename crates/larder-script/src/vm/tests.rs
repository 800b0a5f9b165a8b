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
    let r = vm.run_script(&sha, &keys, &args, host, &mut out);
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
