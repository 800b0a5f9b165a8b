use super::*;
use crate::sandbox::reply::reply_to_value;

/// Decodes `bytes` and evaluates the Lua expression `check` with the result as `r`.
fn decoded(bytes: &[u8], check: &str) -> (String, bool) {
    let lua = Lua::new();
    let (v, is_error) = reply_to_value(&lua, bytes).expect("decodes");
    lua.globals().set("r", v).expect("set");
    let s: String = lua.load(check).eval().expect("check runs");
    (s, is_error)
}

#[test]
fn resp2_replies_to_lua() {
    assert_eq!(
        decoded(b":42\r\n", "type(r)..r"),
        ("number42".into(), false)
    );
    assert_eq!(
        decoded(b"$3\r\nabc\r\n", "type(r)..r"),
        ("stringabc".into(), false)
    );
    assert_eq!(decoded(b"$-1\r\n", "tostring(r)"), ("false".into(), false));
    assert_eq!(decoded(b"*-1\r\n", "tostring(r)"), ("false".into(), false));
    assert_eq!(decoded(b"+OK\r\n", "r.ok"), ("OK".into(), false));
    assert_eq!(
        decoded(
            b"-WRONGTYPE bad kind\r\n",
            "r.err .. tostring(r.ignore_error_stats_update)"
        ),
        ("WRONGTYPE bad kindtrue".into(), true)
    );
    assert_eq!(
        decoded(b"-NOCODE\r\n", "r.err"),
        ("ERR NOCODE".into(), true)
    );
    assert_eq!(
        decoded(
            b"*3\r\n:1\r\n$1\r\nx\r\n$-1\r\n",
            "#r .. r[2] .. tostring(r[3])"
        ),
        ("3xfalse".into(), false)
    );
    assert_eq!(
        decoded(b"*0\r\n", "type(r) .. #r"),
        ("table0".into(), false)
    );
    assert_eq!(
        decoded(b"*1\r\n*1\r\n:7\r\n", "tostring(r[1][1])"),
        ("7".into(), false)
    );
}

#[test]
fn resp3_replies_to_lua() {
    assert_eq!(decoded(b"_\r\n", "tostring(r)"), ("nil".into(), false));
    assert_eq!(decoded(b"#t\r\n", "tostring(r)"), ("true".into(), false));
    assert_eq!(decoded(b"#f\r\n", "tostring(r)"), ("false".into(), false));
    assert_eq!(
        decoded(b",1.5\r\n", "tostring(r.double)"),
        ("1.5".into(), false)
    );
    assert_eq!(
        decoded(b",inf\r\n", "tostring(r.double)"),
        ("inf".into(), false)
    );
    assert_eq!(
        decoded(b"(123456789012345678901\r\n", "r.big_number"),
        ("123456789012345678901".into(), false)
    );
    assert_eq!(
        decoded(
            b"=8\r\ntxt:abcd\r\n",
            "r.verbatim_string.format .. '|' .. r.verbatim_string.string"
        ),
        ("txt|abcd".into(), false)
    );
    assert_eq!(
        decoded(b"%1\r\n$1\r\nk\r\n:2\r\n", "tostring(r.map.k)"),
        ("2".into(), false)
    );
    assert_eq!(
        decoded(
            b"~2\r\n$1\r\na\r\n$1\r\nb\r\n",
            "tostring(r.set.a and r.set.b)"
        ),
        ("true".into(), false)
    );
    // Attributes are skipped.
    assert_eq!(
        decoded(b"|1\r\n$1\r\na\r\n$1\r\nb\r\n:5\r\n", "tostring(r)"),
        ("5".into(), false)
    );
}

#[test]
fn malformed_replies_are_errors_not_panics() {
    let lua = Lua::new();
    for bad in [
        &b""[..],
        b"$5\r\nab\r\n",
        b"*99999999999\r\n",
        b"*2\r\n:1\r\n",
        b"?x\r\n",
        b":abc\r\n",
        b"=2\r\nab\r\n",
        b"#x\r\n",
        b"%1\r\n",
    ] {
        assert!(reply_to_value(&lua, bad).is_err(), "{bad:?}");
    }
    let deep = "*1\r\n".repeat(REPLY_DEPTH_MAX + 2) + ":1\r\n";
    assert!(reply_to_value(&lua, deep.as_bytes()).is_err());
}

/// Converts the value of the Lua expression `expr` for a client of `client` with the
/// script in `script` protocol.
fn encoded(expr: &str, script: Protocol, client: Protocol) -> String {
    let lua = Lua::new();
    let v: Value = lua.load(expr).eval().expect("expr");
    let mut out = ReplyBuf::new(client);
    let names = FieldNames::new(&lua).expect("names");
    lua_to_reply(&lua, v, script, &mut out, &names).expect("converts");
    String::from_utf8_lossy(&out.take_bytes()).into_owned()
}

fn all(expr: &str) -> [String; 3] {
    [
        encoded(expr, Protocol::Resp2, Protocol::Resp2),
        encoded(expr, Protocol::Resp3, Protocol::Resp2),
        encoded(expr, Protocol::Resp3, Protocol::Resp3),
    ]
}

#[test]
fn lua_scalars_to_replies() {
    assert_eq!(
        all("'abc'"),
        ["$3\r\nabc\r\n", "$3\r\nabc\r\n", "$3\r\nabc\r\n"]
    );
    assert_eq!(all("3.99"), [":3\r\n", ":3\r\n", ":3\r\n"]);
    assert_eq!(all("-3.99"), [":-3\r\n", ":-3\r\n", ":-3\r\n"]);
    assert_eq!(all("true"), [":1\r\n", ":1\r\n", "#t\r\n"]);
    // Out of i64's range, C's cast on x86-64 gives i64::MIN (as redis-server 7.0.15).
    for n in ["1e20", "-1e20", "1/0", "-1/0", "0/0", "2^63"] {
        assert_eq!(all(n)[0], ":-9223372036854775808\r\n", "{n}");
    }
    assert_eq!(all("false"), ["$-1\r\n", ":0\r\n", "#f\r\n"]);
    assert_eq!(all("nil"), ["$-1\r\n", "$-1\r\n", "_\r\n"]);
    assert_eq!(all("print"), ["$-1\r\n", "$-1\r\n", "_\r\n"]);
    // A RESP2 script's false is a null in the client's protocol.
    assert_eq!(encoded("false", Protocol::Resp2, Protocol::Resp3), "_\r\n");
}

#[test]
fn lua_tables_to_replies() {
    assert_eq!(all("{1, 2, nil, 4}")[0], "*2\r\n:1\r\n:2\r\n");
    assert_eq!(all("{err='x'}")[0], "-x\r\n");
    assert_eq!(all("{err='MY code'}")[2], "-MY code\r\n");
    assert_eq!(all("{err=12}")[0], "*0\r\n");
    assert_eq!(all("{ok='a\\r\\nb'}")[0], "+a  b\r\n");
    assert_eq!(all("{{err='E inner'}, 2}")[0], "*2\r\n-E inner\r\n:2\r\n");
    assert_eq!(
        all("{double=3.5}"),
        ["$3\r\n3.5\r\n", "$3\r\n3.5\r\n", ",3.5\r\n"]
    );
    assert_eq!(all("{double=0.1}")[2], ",0.10000000000000001\r\n");
    assert_eq!(all("{double='x'}")[0], "*0\r\n");
    // Integral doubles too (answers from redis-server 7.0.15).
    assert_eq!(
        all("{double=-2}"),
        ["$2\r\n-2\r\n", "$2\r\n-2\r\n", ",-2\r\n"]
    );
    assert_eq!(all("{double=-1/0}")[2], ",-inf\r\n");
    assert_eq!(all("{double=0/0}")[2], ",-nan\r\n");
    assert_eq!(all("{double=-(0/0)}")[1], "$3\r\nnan\r\n");
    assert_eq!(
        all("{map={a=1}}"),
        [
            "*2\r\n$1\r\na\r\n:1\r\n",
            "*2\r\n$1\r\na\r\n:1\r\n",
            "%1\r\n$1\r\na\r\n:1\r\n"
        ]
    );
    assert_eq!(
        all("{set={a=true}}"),
        [
            "*1\r\n$1\r\na\r\n",
            "*1\r\n$1\r\na\r\n",
            "~1\r\n$1\r\na\r\n"
        ]
    );
    assert_eq!(
        all("{big_number='123'}"),
        ["$3\r\n123\r\n", "$3\r\n123\r\n", "(123\r\n"]
    );
    assert_eq!(all("{big_number='1\\r\\n2'}")[0], "$4\r\n1  2\r\n");
    assert_eq!(
        all("{verbatim_string={format='txt', string='hi'}}"),
        ["$2\r\nhi\r\n", "$2\r\nhi\r\n", "=6\r\ntxt:hi\r\n"]
    );
    // A verbatim table without its fields is an empty array.
    assert_eq!(all("{verbatim_string={format='txt'}}")[0], "*0\r\n");
    // err wins over ok, ok over double...
    assert_eq!(all("{ok='o', err='e'}")[0], "-e\r\n");
    assert_eq!(all("{ok='o', double=1}")[0], "+o\r\n");
    // Keys other than 1..n are ignored in arrays.
    assert_eq!(all("{1, x=2}")[0], "*1\r\n:1\r\n");
}

#[test]
fn nesting_stops_at_redis_lua_stack_limit() {
    let nest = |n: usize| {
        format!("(function() local t = {{}} local c = t for i=1,{n} do c[1] = {{}} c = c[1] end return t end)()")
    };
    let ok = encoded(&nest(7994), Protocol::Resp2, Protocol::Resp2);
    assert!(!ok.contains("stack limit"));
    assert!(ok.ends_with("*0\r\n"));
    let cut = encoded(&nest(7995), Protocol::Resp2, Protocol::Resp2);
    assert!(cut.ends_with("*1\r\n-ERR reached lua stack limit\r\n"));
    assert_eq!(cut.matches('*').count(), 7995);
}

#[test]
fn numbers_truncate() {
    assert_eq!(number_to_int(3.99), 3);
    assert_eq!(number_to_int(-3.99), -3);
    assert_eq!(number_to_int(f64::NAN), i64::MIN);
    assert_eq!(number_to_int(1e300), i64::MIN);
    assert_eq!(number_to_int(-9_223_372_036_854_775_808.0), i64::MIN);
}

#[test]
fn printf_g() {
    let cases: &[(f64, usize, &str)] = &[
        (1.5, 17, "1.5"),
        (0.1, 17, "0.10000000000000001"),
        (3.0, 17, "3"),
        (1e20, 17, "1e+20"),
        (1e15, 14, "1e+15"),
        (123456789012.0, 14, "123456789012"),
        (0.0001, 14, "0.0001"),
        (0.00001, 14, "1e-05"),
        (-2.5, 14, "-2.5"),
        (f64::INFINITY, 17, "inf"),
        (-0.0, 14, "-0"),
    ];
    for &(n, p, want) in cases {
        assert_eq!(format_g(n, p), want, "{n} %.{p}g");
    }
}

#[test]
fn integer_lines_read_as_str_parse_reads_them() {
    for line in [
        "0",
        "42",
        "-7",
        "+5",
        "-0",
        "9223372036854775807",
        "-9223372036854775808",
        "9223372036854775808",
        "-9223372036854775809",
        "99999999999999999999",
        "",
        "-",
        "+",
        "1a",
        " 1",
        "1 ",
        "--1",
        "0x10",
    ] {
        let bytes = format!("{line}\r\n");
        let mut p = Parser {
            bytes: bytes.as_bytes(),
            pos: 0,
        };
        assert_eq!(p.int().ok(), line.parse::<i64>().ok(), "{line:?}");
    }
}
