use std::io::{Read, Write};
use std::net::TcpListener;

use super::input::{cell_value, json_to_owned, jsonl_record, Owned};
use super::redis_input::redis_string;
use super::*;

fn temp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("larder-cache-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir.join(name)
}

fn quiet() -> Progress {
    Progress::new(true)
}

#[test]
fn json_types_map_as_documented() {
    let cases = [
        (r#""s""#, Owned::Str("s".into())),
        ("42", Owned::I64(42)),
        ("-1.5", Owned::F64(-1.5)),
        ("true", Owned::Bool(true)),
        ("[1, 2.5]", Owned::F64List(vec![1.0, 2.5])),
        (
            r#"["a", "b"]"#,
            Owned::StrList(vec!["a".into(), "b".into()]),
        ),
    ];
    for (json, want) in cases {
        let v: serde_json::Value = serde_json::from_str(json).expect("json");
        assert_eq!(json_to_owned(&v, false).ok(), Some(want), "{json}");
    }
    let v: serde_json::Value = serde_json::from_str("[1, 2]").expect("json");
    assert_eq!(
        json_to_owned(&v, true).ok(),
        Some(Owned::F32List(vec![1.0, 2.0]))
    );
    for bad in ["null", r#"{"a": 1}"#, r#"[1, "a"]"#, "18446744073709551615"] {
        let v: serde_json::Value = serde_json::from_str(bad).expect("json");
        assert!(json_to_owned(&v, false).is_err(), "{bad}");
    }
}

#[test]
fn builds_from_jsonl() {
    let out = temp("jsonl.lcache");
    let input = b"{\"key\": \"a\", \"value\": \"x\"}\n\n{\"key\": \"n\", \"value\": 7}\n\
                  {\"key\": \"v\", \"value\": [0.5, 1]}\n{\"key\": \"t\", \"value\": [\"p\", \"q\"]}\n";
    let mut b = CacheBuilder::new(&out).expect("builder");
    import_jsonl(&input[..], false, &mut b, &mut quiet()).expect("import");
    b.finish().expect("finish");
    let c = Cache::open(&out).expect("open");
    assert_eq!(c.get_str("a").ok(), Some(Some("x")));
    assert_eq!(c.get_i64("n").ok(), Some(Some(7)));
    assert_eq!(c.get_f64_list("v").ok(), Some(Some(&[0.5, 1.0][..])));
    let err = jsonl_record(b"{\"value\": 1}", false).expect_err("missing key");
    assert!(err.to_string().contains("missing \"key\""));
}

#[test]
fn builds_from_csv_with_declared_types() {
    let out = temp("csv.lcache");
    let input = "id,score,tags\nu1,0.5,a;b\nu2,1.25,c\n";
    let opts = CsvOptions {
        key_column: "id".into(),
        value_column: "score".into(),
        value_type: CellType::F64,
        list_separator: ";".into(),
        has_header: true,
    };
    let mut b = CacheBuilder::new(&out).expect("builder");
    import_csv(input.as_bytes(), &opts, &mut b, &mut quiet()).expect("import");
    b.finish().expect("finish");
    let c = Cache::open(&out).expect("open");
    assert_eq!(c.get_f64("u2").ok(), Some(Some(1.25)));

    let opts = CsvOptions {
        value_column: "2".into(),
        value_type: CellType::StrList,
        key_column: "0".into(),
        has_header: false,
        ..opts
    };
    let mut b = CacheBuilder::new(&out).expect("builder");
    import_csv("u1,0.5,a;b\n".as_bytes(), &opts, &mut b, &mut quiet()).expect("import");
    b.finish().expect("finish");
    let c = Cache::open(&out).expect("open");
    let list = c.get_str_list("u1").expect("ok").expect("present");
    assert_eq!(list.to_vec().ok(), Some(vec!["a", "b"]));
    assert!(cell_value(b"maybe", CellType::Bool, ";").is_err());
    assert_eq!(
        cell_value(b"1;2", CellType::F32List, ";").ok(),
        Some(Owned::F32List(vec![1.0, 2.0]))
    );
}

#[test]
fn redis_strings_infer_only_canonical_ints() {
    assert_eq!(redis_string(b"42", true), Owned::I64(42));
    assert_eq!(redis_string(b"042", true), Owned::Str("042".into()));
    assert_eq!(redis_string(b"42", false), Owned::Str("42".into()));
    assert_eq!(redis_string(b"\xff", true), Owned::Bytes(vec![0xff]));
}

/// A scripted Redis-protocol server for one connection: answers SCAN (two pages), TYPE,
/// GET, LRANGE and HGETALL from a fixed keyspace.
fn fake_redis() -> String {
    use larder_resp::Frame;
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    std::thread::spawn(move || {
        let Ok((mut sock, _)) = listener.accept() else {
            return;
        };
        let mut buf = Vec::new();
        let mut chunk = [0u8; 4096];
        loop {
            let (argv, used) = match larder_resp::decode(&buf) {
                Ok(Some((Frame::Array(argv), used))) => (argv, used),
                Ok(None) => {
                    match sock.read(&mut chunk) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => buf.extend_from_slice(&chunk[..n]),
                    }
                    continue;
                }
                _ => return,
            };
            buf.drain(..used);
            let argv: Vec<String> = argv
                .iter()
                .map(|a| a.as_str().unwrap_or("").to_owned())
                .collect();
            let reply: Vec<u8> = match (argv[0].as_str(), argv.get(1).map(String::as_str)) {
                ("SCAN", Some("0")) => {
                    b"*2\r\n$1\r\n7\r\n*3\r\n$3\r\nstr\r\n$3\r\nnum\r\n$3\r\nset\r\n".to_vec()
                }
                ("SCAN", _) => {
                    b"*2\r\n$1\r\n0\r\n*3\r\n$4\r\nlist\r\n$4\r\nhash\r\n$4\r\ngone\r\n".to_vec()
                }
                ("TYPE", Some("str" | "num")) => b"+string\r\n".to_vec(),
                ("TYPE", Some("set")) => b"+set\r\n".to_vec(),
                ("TYPE", Some("list")) => b"+list\r\n".to_vec(),
                ("TYPE", Some("hash")) => b"+hash\r\n".to_vec(),
                ("TYPE", _) => b"+none\r\n".to_vec(),
                ("GET", Some("str")) => b"$5\r\nhello\r\n".to_vec(),
                ("GET", Some("num")) => b"$2\r\n12\r\n".to_vec(),
                ("LRANGE", _) => b"*2\r\n$1\r\na\r\n$1\r\nb\r\n".to_vec(),
                ("HGETALL", _) => b"*4\r\n$1\r\nf\r\n$1\r\n1\r\n$1\r\ng\r\n$2\r\nhi\r\n".to_vec(),
                _ => b"-ERR unknown\r\n".to_vec(),
            };
            if sock.write_all(&reply).is_err() {
                return;
            }
        }
    });
    format!("redis://{addr}")
}

#[test]
fn builds_from_a_redis_server() {
    let url = fake_redis();
    let out = temp("redis.lcache");
    let mut b = CacheBuilder::new(&out).expect("builder");
    let opts = RedisOptions {
        pattern: Some("*".into()),
        infer_ints: true,
        scan_count: 10,
    };
    let skipped = import_redis(&url, &opts, &mut b, &mut quiet()).expect("import");
    assert_eq!(skipped, vec![("set".to_owned(), 1)]);
    b.finish().expect("finish");
    let c = Cache::open(&out).expect("open");
    assert_eq!(c.len(), 5);
    assert_eq!(c.get_str("str").ok(), Some(Some("hello")));
    assert_eq!(c.get_i64("num").ok(), Some(Some(12)));
    let list = c.get_str_list("list").expect("ok").expect("present");
    assert_eq!(list.to_vec().ok(), Some(vec!["a", "b"]));
    assert_eq!(c.get_i64("hash.f").ok(), Some(Some(1)));
    assert_eq!(c.get_str("hash.g").ok(), Some(Some("hi")));
}

#[test]
fn subcommands_run_end_to_end() {
    let input = temp("e2e.jsonl");
    std::fs::write(&input, "{\"key\": \"k\", \"value\": [\"x\"]}\n").expect("write");
    let out = temp("e2e.lcache");
    let cli = <Cli as clap::Parser>::try_parse_from([
        "cache",
        "build",
        out.to_str().expect("utf8"),
        "--from",
        input.to_str().expect("utf8"),
        "--name",
        "e2e",
        "--quiet",
    ])
    .expect("parse");
    run(cli.cmd).expect("build");
    for args in [
        vec!["get", "k"],
        vec!["info"],
        vec!["verify"],
        vec!["bench", "--runs", "1"],
    ] {
        let mut argv = vec!["cache", args[0], out.to_str().expect("utf8")];
        argv.extend(&args[1..]);
        let cli = <Cli as clap::Parser>::try_parse_from(argv).expect("parse");
        run(cli.cmd).expect("subcommand");
    }
    let cli = <Cli as clap::Parser>::try_parse_from([
        "cache",
        "get",
        out.to_str().expect("utf8"),
        "nope",
    ])
    .expect("parse");
    assert!(run(cli.cmd).is_err());
}

#[derive(clap::Parser)]
struct Cli {
    #[command(subcommand)]
    cmd: CacheCommand,
}
