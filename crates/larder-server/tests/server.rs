//! Start the real `larder` binary on a free port and drive it with redis-rs (a Rust client
//! that knows nothing of larder) and with raw sockets.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A larder process that is killed on drop.
struct TestServer {
    child: Child,
    port: u16,
}

impl TestServer {
    fn start(args: &[&str]) -> TestServer {
        let mut child = Command::new(env!("CARGO_BIN_EXE_larder"))
            .args([
                "--port",
                "0",
                "--bind",
                "127.0.0.1",
                "--memcached-port",
                "0",
                "--http-port",
                "0",
                // No data directory: these tests are about the protocol (persistence has its
                // own, in tests/python/test_persistence.py).
                "--appendonly",
                "no",
                "--save",
                "",
            ])
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn larder");
        // The startup log line carries the bound port.
        let stderr = child.stderr.take().expect("stderr");
        let mut lines = BufReader::new(stderr).lines();
        let deadline = Instant::now() + Duration::from_secs(10);
        let port = loop {
            assert!(Instant::now() < deadline, "no startup line");
            let line = lines.next().expect("larder exited").expect("read stderr");
            if let Some(rest) = line.split("port=").nth(1) {
                let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
                break digits.parse().expect("port");
            }
        };
        // Keep draining stderr so the server never blocks on a full pipe.
        std::thread::spawn(move || for _ in lines {});
        TestServer { child, port }
    }

    fn client(&self, protocol: &str) -> redis::Connection {
        let url = format!("redis://127.0.0.1:{}/?protocol={protocol}", self.port);
        redis::Client::open(url)
            .expect("client")
            .get_connection()
            .expect("connect")
    }

    fn raw(&self) -> TcpStream {
        let s = TcpStream::connect(("127.0.0.1", self.port)).expect("connect");
        s.set_read_timeout(Some(Duration::from_secs(5)))
            .expect("timeout");
        s
    }

    /// SIGTERM and wait: the server must exit 0.
    fn stop(mut self) -> std::process::ExitStatus {
        let pid = self.child.id().to_string();
        Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .expect("kill");
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(status) = self.child.try_wait().expect("wait") {
                return status;
            }
            assert!(Instant::now() < deadline, "server did not stop");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn redis_rs_resp2_and_resp3() {
    let server = TestServer::start(&[]);
    for proto in ["resp2", "resp3"] {
        let mut c = server.client(proto);
        let _: () = redis::cmd("SET")
            .arg("k")
            .arg("v")
            .query(&mut c)
            .expect("set");
        let v: String = redis::cmd("GET").arg("k").query(&mut c).expect("get");
        assert_eq!(v, "v");
        let missing: Option<String> = redis::cmd("GET").arg("nope").query(&mut c).expect("get");
        assert_eq!(missing, None);
        let n: i64 = redis::cmd("INCRBY")
            .arg("n")
            .arg(5)
            .query(&mut c)
            .expect("incrby");
        assert!(n >= 5);
        let err = redis::cmd("GET")
            .query::<String>(&mut c)
            .expect_err("arity");
        assert!(
            err.to_string()
                .contains("wrong number of arguments for 'get' command"),
            "{err}"
        );
    }
    assert!(server.stop().success());
}

#[test]
fn pipeline_of_ten_thousand_in_one_write() {
    let server = TestServer::start(&[]);
    let mut s = server.raw();
    let mut req = Vec::new();
    for i in 0..10_000 {
        larder_resp_encode(
            &[
                b"SET",
                format!("k{i}").as_bytes(),
                format!("{i}").as_bytes(),
            ],
            &mut req,
        );
    }
    for i in 0..10_000 {
        larder_resp_encode(&[b"GET", format!("k{i}").as_bytes()], &mut req);
    }
    s.write_all(&req).expect("write");
    let mut expected = Vec::new();
    for _ in 0..10_000 {
        expected.extend_from_slice(b"+OK\r\n");
    }
    for i in 0..10_000 {
        let v = format!("{i}");
        expected.extend_from_slice(format!("${}\r\n{v}\r\n", v.len()).as_bytes());
    }
    let mut got = vec![0u8; expected.len()];
    s.read_exact(&mut got).expect("read replies");
    assert!(got == expected, "replies out of order or wrong");
}

#[test]
fn protocol_error_replies_then_closes() {
    let server = TestServer::start(&[]);
    let mut s = server.raw();
    s.write_all(b"*1\r\n$4\r\nPING\r\n*x\r\n").expect("write");
    let mut got = Vec::new();
    s.read_to_end(&mut got).expect("read until close");
    let text = String::from_utf8_lossy(&got);
    assert!(
        text.ends_with("-ERR Protocol error: invalid multibulk length\r\n"),
        "{text}"
    );
}

#[test]
fn inline_commands_work() {
    let server = TestServer::start(&[]);
    let mut s = server.raw();
    s.write_all(b"SET greeting \"hello world\"\r\nGET greeting\r\n")
        .expect("write");
    let mut got = vec![0u8; b"+OK\r\n$11\r\nhello world\r\n".len()];
    s.read_exact(&mut got).expect("read");
    assert_eq!(got, b"+OK\r\n$11\r\nhello world\r\n");
}

#[test]
fn config_file_errors_name_the_line() {
    let dir = std::env::temp_dir().join(format!("larder-conf-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let path = dir.join("bad.conf");
    std::fs::write(&path, "port 0\nno-such-thing 1\n").expect("write");
    let out = Command::new(env!("CARGO_BIN_EXE_larder"))
        .args(["--config", path.to_str().expect("utf8")])
        .output()
        .expect("run");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("line 2") && err.contains("no-such-thing"),
        "{err}"
    );
}

fn larder_resp_encode(args: &[&[u8]], out: &mut Vec<u8>) {
    out.extend_from_slice(format!("*{}\r\n", args.len()).as_bytes());
    for a in args {
        out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
}
