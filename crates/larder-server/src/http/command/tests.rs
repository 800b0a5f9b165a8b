//! The command API's request parsing, without a server.

use serde_json::json;

use super::*;

fn args(argv: &[Cow<'_, [u8]>]) -> Vec<String> {
    argv.iter()
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect()
}

#[test]
fn commands_from_json() {
    let body = json!(["SET", "k", "v", "EX", 100, "x", 1.5, true]);
    let argv = json_command(&body, "the command").expect("a command");
    assert_eq!(
        args(&argv),
        ["SET", "k", "v", "EX", "100", "x", "1.5", "true"]
    );
    assert_eq!(
        json_command(&json!([]), "the command"),
        Err("ERR the command is empty".into())
    );
    let e = json_command(&json!(["SET", "k", null]), "command 2").expect_err("null");
    assert!(e.contains("argument 3 of command 2 is null"), "{e}");
    let e = json_command(&json!(["SET", "k", {"a": 1}]), "the command").expect_err("object");
    assert!(e.contains("is an object"), "{e}");
    let e = json_command(&json!({"cmd": "GET"}), "the command").expect_err("not an array");
    assert!(e.contains("must be a JSON array"), "{e}");
}

#[test]
fn batches_are_bounded() {
    let ok = json!([["PING"], ["GET", "k"]]);
    assert_eq!(json_batch(&ok).map(|b| b.len()), Ok(2));
    let big = Value::Array(vec![json!(["PING"]); MAX_BATCH + 1]);
    let (status, e) = json_batch(&big).expect_err("too many");
    assert_eq!(status, 413);
    assert!(e.contains("at most 10000"), "{e}");
    let (status, e) = json_batch(&json!([["PING"], "GET"])).expect_err("not an array");
    assert_eq!(status, 400);
    assert!(e.contains("command 2 must be a JSON array"), "{e}");
    assert_eq!(
        json_batch(&json!({})).map(|b| b.len()).map_err(|e| e.0),
        Err(400)
    );
}

#[test]
fn connection_commands_are_refused() {
    let refuse = |argv: &[&str]| {
        let argv: Vec<Cow<'_, [u8]>> = argv.iter().map(|a| Cow::Borrowed(a.as_bytes())).collect();
        refused(&argv)
    };
    assert!(refuse(&["subscribe", "ch"])
        .is_some_and(|e| e.contains("SUBSCRIBE") && e.contains("/v1/subscribe")));
    assert!(refuse(&["Multi"]).is_some_and(|e| e.contains("/multi-exec")));
    for argv in [
        &["MONITOR"][..],
        &["reset"],
        &["QUIT"],
        &["HELLO", "3"],
        &["client", "reply", "off"],
        &["CLIENT", "TRACKING", "on"],
        &["watch", "k"],
        &["PSUBSCRIBE", "*"],
    ] {
        assert!(refuse(argv).is_some(), "{argv:?}");
    }
    for argv in [
        &["GET", "k"][..],
        &["SELECT", "1"],
        &["CLIENT", "ID"],
        &["PUBLISH", "ch", "m"],
        &["AUTH", "pw"],
    ] {
        assert_eq!(refuse(argv), None, "{argv:?}");
    }
}
