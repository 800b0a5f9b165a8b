//! ACL users and the ACL command, without sockets.

use larder_resp::Frame;

use super::rules::hash_password;
use crate::testing::{bulk, err, int, ok, Harness};

fn setuser(h: &mut Harness, args: &[&str]) -> Frame {
    let mut argv = vec!["ACL", "SETUSER"];
    argv.extend_from_slice(args);
    h.run(&argv)
}

fn list(h: &mut Harness) -> Vec<String> {
    match h.run(&["ACL", "LIST"]) {
        Frame::Array(items) => items
            .into_iter()
            .map(|f| match f {
                Frame::Bulk(b) => String::from_utf8(b).expect("utf-8"),
                other => panic!("{other:?}"),
            })
            .collect(),
        other => panic!("{other:?}"),
    }
}

fn dryrun(h: &mut Harness, args: &[&str]) -> Frame {
    let mut argv = vec!["ACL", "DRYRUN"];
    argv.extend_from_slice(args);
    h.run(&argv)
}

#[test]
fn default_user_and_new_users_describe_as_redis() {
    let mut h = Harness::new();
    assert_eq!(list(&mut h), ["user default on nopass ~* &* +@all"]);
    assert_eq!(setuser(&mut h, &["u"]), ok());
    assert_eq!(list(&mut h)[1], "user u off resetchannels -@all");
    assert_eq!(
        setuser(
            &mut h,
            &["u", "reset", "on", ">p1", "~k*", "%R~r*", "&ch", "+get", "+@hash"]
        ),
        ok()
    );
    let hash = hash_password(b"p1");
    assert_eq!(
        list(&mut h)[1],
        format!("user u on sanitize-payload #{hash} ~k* %R~r* resetchannels &ch -@all +@hash +get")
    );
    assert_eq!(
        h.run(&["ACL", "USERS"]),
        Frame::Array(vec![bulk("default"), bulk("u")])
    );
}

#[test]
fn rules_round_trip_through_acl_list() {
    let mut h = Harness::new();
    let rules = [
        "on",
        "nopass",
        "allkeys",
        "allchannels",
        "+@all",
        "-@dangerous",
        "+config|get",
        "-flushall",
        "+select|0",
        "(~x* %W~y* -@all +set +client|id)",
    ];
    assert_eq!(setuser(&mut h, &["a"]), ok());
    for r in rules {
        assert_eq!(setuser(&mut h, &["a", r]), ok(), "{r}");
    }
    let line = list(&mut h)[0].clone();
    let words: Vec<&str> = line.split(' ').skip(1).collect();
    // Set the described rules on a fresh user: it must describe the same way.
    let mut args = vec!["b"];
    args.extend(&words[1..]);
    assert_eq!(setuser(&mut h, &args), ok());
    let again = list(&mut h)[1].clone();
    assert_eq!(again.replacen("user b", "user a", 1), line);
}

#[test]
fn setuser_errors_are_redis_texts_and_change_nothing() {
    let mut h = Harness::new();
    assert_eq!(setuser(&mut h, &["u", "on", ">x"]), ok());
    let before = list(&mut h);
    let cases: &[(&str, &str)] = &[
        ("bogus", "Syntax error"),
        ("+nosuch", "Unknown command or category name in ACL"),
        ("-@nosuch", "Unknown command or category name in ACL"),
        ("+config|get|x", "Allowing first-arg of a subcommand is not supported"),
        ("+get|", "Syntax error"),
        ("<nopass", "The password you are trying to remove from the user does not exist"),
        ("#abc", "The password hash must be exactly 64 characters and contain only lowercase hexadecimal characters"),
        ("%X~k", "Syntax error"),
    ];
    for (rule, why) in cases {
        assert_eq!(
            setuser(&mut h, &["u", "off", rule]),
            err(&format!(
                "ERR Error in ACL SETUSER modifier '{rule}': {why}"
            )),
        );
    }
    assert_eq!(
        setuser(&mut h, &["u", "allkeys", "~a"]),
        err("ERR Error in ACL SETUSER modifier '~a': Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid and does not have any effect. Try 'resetkeys' to start with an empty list of patterns")
    );
    assert_eq!(
        setuser(&mut h, &["u", "allchannels", "&a"]),
        err("ERR Error in ACL SETUSER modifier '&a': Adding a pattern after the * pattern (or the 'allchannels' flag) is not valid and does not have any effect. Try 'resetchannels' to start with an empty list of channels")
    );
    assert_eq!(
        setuser(&mut h, &["u", "(~a", "+get"]),
        err("ERR Unmatched parenthesis in acl selector starting at '(~a'.")
    );
    assert_eq!(
        setuser(&mut h, &["a b"]),
        err("ERR Usernames can't contain spaces or null characters")
    );
    assert_eq!(list(&mut h), before);
}

#[test]
fn authenticate_checks_on_and_passwords() {
    let h = Harness::new();
    let acl = &h.server.acl;
    assert!(acl.authenticate(b"default", b"anything").is_some());
    assert!(!acl.auth_required());
    acl.set_user(b"u", &[b"on", b">secret"]).expect("valid");
    assert!(acl.authenticate(b"u", b"secret").is_some());
    assert!(acl.authenticate(b"u", b"wrong").is_none());
    assert!(acl.authenticate(b"nobody", b"secret").is_none());
    let hash = hash_password(b"other");
    acl.set_user(b"u", &[format!("#{hash}").as_bytes(), b"off"])
        .expect("valid");
    assert!(acl.authenticate(b"u", b"other").is_none());
    acl.set_user(b"u", &[b"on"]).expect("valid");
    assert!(acl.authenticate(b"u", b"other").is_some());
    let g = acl.generation();
    acl.set_requirepass("pw");
    assert!(acl.generation() > g && acl.auth_required());
    assert!(acl.authenticate(b"default", b"pw").is_some());
    assert!(acl.authenticate(b"default", b"x").is_none());
    acl.set_requirepass("");
    assert!(!acl.auth_required());
    acl.set_user(b"default", &[b"off"]).expect("valid");
    assert!(acl.auth_required());
}

#[test]
fn checks_commands_and_selectors() {
    let h = Harness::new();
    let acl = &h.server.acl;
    let reg = &h.server.registry;
    acl.set_user(
        b"u",
        &[
            b"on",
            b"+get",
            b"+config",
            b"-config|set",
            b"+select|1",
            b"&news.*",
            b"~k*",
        ],
    )
    .expect("valid");
    let u = acl.user(b"u").expect("u");
    assert!(!u.unrestricted());
    let check = |argv: &[&[u8]]| {
        let r = reg.resolve(argv).expect("resolves");
        u.check(&r, argv)
    };
    assert!(check(&[b"GET", b"k1"]).is_ok());
    assert_eq!(check(&[b"SET", b"k", b"v"]), Err(super::Denied::Command));
    assert_eq!(
        check(&[b"CONFIG", b"SET", b"a", b"b"]),
        Err(super::Denied::Command)
    );
    assert!(check(&[b"CONFIG", b"GET", b"x"]).is_ok());
    assert!(check(&[b"SELECT", b"1"]).is_ok());
    assert_eq!(check(&[b"SELECT", b"2"]), Err(super::Denied::Command));
    assert!(
        check(&[b"AUTH", b"x"]).is_ok(),
        "no-auth commands are always allowed"
    );
    assert!(u.check_channel(b"news.1", false) && !u.check_channel(b"news.1", true));
    assert!(u.check_channel(b"news.*", true) && !u.check_channel(b"sport", false));
    assert!(!u.all_keys() && !u.check_key(b"x", super::access::READ));
    acl.set_user(b"u", &[b"(~x* +set)"]).expect("valid");
    let u = acl.user(b"u").expect("u");
    assert!(u.check_key(b"x1", super::access::WRITE) && !u.check_key(b"y", 0));
    let argv: &[&[u8]] = &[b"SET", b"x1", b"v"];
    let r = reg.resolve(argv).expect("resolves");
    assert!(u.check(&r, argv).is_ok(), "the selector allows SET of x1");
    let argv: &[&[u8]] = &[b"SET", b"k", b"v"];
    let r = reg.resolve(argv).expect("resolves");
    assert_eq!(u.check(&r, argv), Err(super::Denied::Key(b"k".to_vec())));
    assert!(acl.user(b"default").expect("default").unrestricted());
}

#[test]
fn getuser_shape() {
    let mut h = Harness::new();
    assert_eq!(
        setuser(&mut h, &["u", "on", "nopass", "~a", "(%R~b &c +get)"]),
        ok()
    );
    let Frame::Array(f) = h.run(&["ACL", "GETUSER", "u"]) else {
        panic!("not an array")
    };
    assert_eq!(f.len(), 12);
    assert_eq!(f[0], bulk("flags"));
    assert_eq!(f[1], Frame::Array(vec![bulk("on"), bulk("nopass")]));
    assert_eq!(f[2..4], [bulk("passwords"), Frame::Array(vec![])]);
    assert_eq!(
        f[4..10],
        [
            bulk("commands"),
            bulk("-@all"),
            bulk("keys"),
            bulk("~a"),
            bulk("channels"),
            bulk("")
        ]
    );
    let sel = Frame::Array(vec![
        bulk("commands"),
        bulk("-@all +get"),
        bulk("keys"),
        bulk("%R~b"),
        bulk("channels"),
        bulk("&c"),
    ]);
    assert_eq!(f[10..12], [bulk("selectors"), Frame::Array(vec![sel])]);
    assert_eq!(h.run(&["ACL", "GETUSER", "nobody"]), Frame::Null);
}

#[test]
fn deluser_dryrun_cat_genpass_whoami() {
    let mut h = Harness::new();
    assert_eq!(setuser(&mut h, &["u", "on", "+get", "~k*", "&c"]), ok());
    assert_eq!(dryrun(&mut h, &["u", "get", "k1"]), ok());
    assert_eq!(
        dryrun(&mut h, &["u", "set", "k1", "v"]),
        bulk("This user has no permissions to run the 'set' command")
    );
    assert_eq!(
        dryrun(&mut h, &["nobody", "get", "k"]),
        err("ERR User 'nobody' not found")
    );
    assert_eq!(
        dryrun(&mut h, &["u", "nosuch"]),
        err("ERR Command 'nosuch' not found")
    );
    assert_eq!(
        dryrun(&mut h, &["u", "config", "nosuch"]),
        err("ERR Command 'config' not found")
    );
    assert_eq!(
        dryrun(&mut h, &["u", "get"]),
        err("ERR wrong number of arguments for 'get' command")
    );
    assert_eq!(
        h.run(&["ACL", "DELUSER", "u", "default"]),
        err("ERR The 'default' user cannot be removed")
    );
    assert_eq!(h.run(&["ACL", "DELUSER", "u", "nobody"]), int(1));
    assert_eq!(
        h.run(&["ACL", "CAT", "nope"]),
        err("ERR Unknown category 'nope'")
    );
    let Frame::Array(cats) = h.run(&["ACL", "CAT"]) else {
        panic!()
    };
    assert_eq!((cats.len(), &cats[0]), (21, &bulk("keyspace")));
    let Frame::Array(fast) = h.run(&["ACL", "CAT", "FAST"]) else {
        panic!()
    };
    assert!(fast.contains(&bulk("get")) && !fast.contains(&bulk("keys")));
    let Frame::Bulk(p) = h.run(&["ACL", "GENPASS"]) else {
        panic!()
    };
    assert!(p.len() == 64 && p.iter().all(u8::is_ascii_hexdigit));
    let Frame::Bulk(p) = h.run(&["ACL", "GENPASS", "5"]) else {
        panic!()
    };
    assert_eq!(p.len(), 2);
    assert!(matches!(h.run(&["ACL", "GENPASS", "0"]), Frame::Error(_)));
    assert_eq!(h.run(&["ACL", "WHOAMI"]), bulk("default"));
    assert_eq!(h.run(&["ACL", "LOAD"]), err(super::file::NO_ACL_FILE));
}

#[test]
fn acl_file_load_is_all_or_nothing_and_save_writes_it_back() {
    let dir = std::env::temp_dir().join(format!("larder-acl-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let path = dir.join("users.acl");
    let config = crate::config::Config::new();
    let d = crate::config::lookup("aclfile").expect("aclfile");
    config.apply(d, &path.display().to_string()).expect("valid");
    let mut h = Harness::with_config(config);
    std::fs::write(
        &path,
        "user a on >pw ~* +@all\n\nuser default on nopass ~* &* +@all\n",
    )
    .expect("write");
    assert_eq!(h.run(&["ACL", "LOAD"]), ok());
    assert!(h.server.acl.authenticate(b"a", b"pw").is_some());
    std::fs::write(&path, "user b on +nosuch\nbad line\n").expect("write");
    let Frame::Error(e) = h.run(&["ACL", "LOAD"]) else {
        panic!()
    };
    let file = path.display();
    assert_eq!(
        e,
        format!("ERR {file}:1: Error in applying operation '+nosuch': Unknown command or category name in ACL. {file}:2 should start with user keyword followed by the username. WARNING: ACL errors detected, no change to the previously active ACL rules was performed")
    );
    assert!(h.server.acl.user(b"a").is_some() && h.server.acl.user(b"b").is_none());
    assert_eq!(h.run(&["ACL", "SAVE"]), ok());
    let saved = std::fs::read_to_string(&path).expect("read");
    assert_eq!(saved, list(&mut h).join("\n") + "\n");
    std::fs::remove_dir_all(&dir).expect("cleanup");
}

#[test]
fn log_records_and_resets() {
    let mut h = Harness::new();
    super::log_auth_failure(&h.server, &h.conn.handle, b"someone", "AUTH");
    super::log_auth_failure(&h.server, &h.conn.handle, b"someone", "AUTH");
    let Frame::Array(entries) = h.run(&["ACL", "LOG"]) else {
        panic!()
    };
    assert_eq!(entries.len(), 1);
    let Frame::Array(e) = &entries[0] else {
        panic!()
    };
    assert_eq!(
        e[0..8],
        [
            bulk("count"),
            int(2),
            bulk("reason"),
            bulk("auth"),
            bulk("context"),
            bulk("toplevel"),
            bulk("object"),
            bulk("AUTH")
        ]
    );
    assert_eq!(e[8..10], [bulk("username"), bulk("someone")]);
    assert_eq!(h.run(&["ACL", "LOG", "RESET"]), ok());
    assert_eq!(h.run(&["ACL", "LOG"]), Frame::Array(vec![]));
}

#[test]
fn setuser_disconnects_subscribers_of_channels_taken_away() {
    let mut admin = Harness::new();
    assert_eq!(
        setuser(&mut admin, &["l", "on", ">pw", "&news", "&other", "+@all"]),
        ok()
    );
    let mut kept = Harness::connect(admin.server.clone());
    let mut lost = Harness::connect(admin.server.clone());
    for (h, channel) in [(&mut kept, "other"), (&mut lost, "news")] {
        assert_eq!(h.run(&["AUTH", "l", "pw"]), ok());
        h.run_raw(&[b"SUBSCRIBE", channel.as_bytes()]);
    }
    assert_eq!(setuser(&mut admin, &["l", "resetchannels", "&other"]), ok());
    let killed = |h: &Harness| {
        h.conn
            .handle
            .killed
            .load(std::sync::atomic::Ordering::Acquire)
    };
    assert!(killed(&lost) && !killed(&kept));
}

/// Random rule sequences, garbage included, never panic, and whatever they build describes
/// itself in rules that build the same user again (Redis aborts when they would not).
#[test]
fn random_rules_describe_themselves_exactly() {
    const POOL: &[&str] = &[
        "on",
        "off",
        "nopass",
        "resetpass",
        ">a",
        "<a",
        "#0",
        "reset",
        "allkeys",
        "resetkeys",
        "~k*",
        "%R~r*",
        "%W~w?",
        "%RW~x",
        "&c*",
        "allchannels",
        "resetchannels",
        "+@all",
        "-@all",
        "+@read",
        "-@write",
        "+@hash",
        "-@dangerous",
        "+get",
        "-get",
        "+config",
        "-config|set",
        "+config|get",
        "+client|id",
        "-client",
        "+select|0",
        "+select|1",
        "+debug|x",
        "(+set ~s*)",
        "(-@all +@list %R~l*)",
        "clearselectors",
        "+@nosuch",
        "",
        "(",
        ")",
        "%",
        "~",
        "&",
        "+",
        "-",
        "+|",
        "(~a \"b c\")",
        "(~a \"unbalanced)",
    ];
    let h = Harness::new();
    let acl = &h.server.acl;
    let mut x = 0x2545_f491_4f6c_dd1du64;
    acl.set_user(b"r", &[]).expect("a new user");
    for round in 0..300 {
        let mut ops: Vec<&[u8]> = Vec::new();
        for _ in 0..(round % 9 + 1) {
            x = crate::state::xorshift(x);
            let op = POOL[(x % POOL.len() as u64) as usize];
            // Rules apply one at a time, so that an invalid one only skips itself.
            if acl.set_user(b"r", &[op.as_bytes()]).is_ok() {
                ops.push(op.as_bytes());
            }
        }
        let user = acl.user(b"r").expect("r");
        let described = user.rules().describe(acl.index());
        let words: Vec<&[u8]> = described.split(|&b| b == b' ').collect();
        acl.delete_users(&[b"copy"]);
        acl.set_user(b"copy", &words)
            .expect("a description is valid");
        let copy = acl.user(b"copy").expect("copy");
        assert_eq!(
            copy.rules().describe(acl.index()),
            described,
            "after {ops:?}"
        );
        for (a, b) in copy.rules().selectors.iter().zip(&user.rules().selectors) {
            assert!((0..acl.index().len()).all(|id| a.allowed(id) == b.allowed(id)));
        }
        acl.set_user(b"r", &[b"reset"]).expect("valid");
    }
}
