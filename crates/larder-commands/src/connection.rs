//! Connection commands: PING, ECHO, HELLO, AUTH, QUIT, RESET and the CLIENT container.
//!
//! SELECT belongs to the keyspace family. Replies and error texts follow Redis 7.0; CLIENT
//! SETINFO and CLIENT NO-TOUCH follow Redis 7.2, CLIENT KILL MAXAGE Redis 7.4.
//!
//! This file holds the family's table and the handshake commands; the CLIENT subcommands are
//! in `client`.

mod client;

pub use client::client_list_line;

use std::sync::atomic::Ordering;
use std::sync::Arc;

use larder_resp::Protocol;

use crate::args::parse_i64;
use crate::error::{self, Error, Result};
use crate::exec::ConnState;
use crate::exec::{Cmd, ReplyMode};
use crate::state::{ClientHandle, Server};
use crate::table::{flags::*, CommandSpec, Group, KeySpec};

/// The Redis version larder reports (HELLO, INFO `redis_version`).
pub const REDIS_VERSION: &str = "7.0.15";

const PROTOVER_NOT_INTEGER: &str = "ERR Protocol version is not an integer or out of range";
const HELLO_NOAUTH: &str = "NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time";
const BAD_CLIENT_NAME: &str =
    "ERR Client names cannot contain spaces, newlines or special characters.";

/// The user `AUTH <password>` names.
const DEFAULT_USER: &[u8] = b"default";

const fn cmd(
    name: &'static str,
    arity: i32,
    flags: u32,
    summary: &'static str,
    since: &'static str,
    handler: crate::table::Handler,
) -> CommandSpec {
    CommandSpec::new(
        name,
        arity,
        flags,
        KeySpec::NONE,
        Group::Connection,
        summary,
        since,
        handler,
    )
}

/// Flags Redis gives the commands a client may send before authenticating.
const HANDSHAKE: u32 = NOSCRIPT | LOADING | STALE | FAST | NO_AUTH | ALLOW_BUSY;
/// The connection family's table.
#[rustfmt::skip]
pub static COMMANDS: &[CommandSpec] = &[
    cmd("ping", -1, FAST, "Ping the server", "1.0.0", ping),
    cmd("echo", 2, LOADING | STALE | FAST, "Echo the given string", "1.0.0", echo),
    cmd("hello", -1, HANDSHAKE, "Handshake with Redis", "6.0.0", hello),
    cmd("auth", -2, HANDSHAKE, "Authenticate to the server", "1.0.0", auth),
    cmd("quit", -1, HANDSHAKE, "Close the connection", "1.0.0", quit),
    cmd("reset", 1, HANDSHAKE, "Reset the connection", "6.2.0", reset),
    CommandSpec {
        subcommands: client::CLIENT_SUBCOMMANDS,
        ..cmd("client", -2, 0, "A container for client connection commands", "2.4.0", client::client)
    },
];

/// PING [message]
fn ping(c: &mut Cmd<'_>) -> Result<()> {
    if c.args.remaining() > 1 {
        return Err(error::wrong_arity("ping"));
    }
    let message = c.args.opt();
    // A subscribed RESP2 connection gets PING's answer in the shape of a message, as Redis's.
    if c.conn.subs.any() && c.conn.handle.resp.load(Ordering::Relaxed) == 2 {
        c.out.array(2);
        c.out.bulk(b"pong");
        c.out.bulk(message.unwrap_or_default());
        return Ok(());
    }
    match message {
        Some(message) => c.out.bulk(message),
        None => c.out.simple("PONG"),
    }
    Ok(())
}

/// ECHO message
fn echo(c: &mut Cmd<'_>) -> Result<()> {
    let message = c.args.next_arg()?;
    c.out.bulk(message);
    Ok(())
}

/// AUTH and HELLO AUTH: switch the connection to `user` if `pass` is its password (Redis's
/// `ACLAuthenticateUser`); a failure goes to ACL LOG, with the command's name as sent.
fn log_in(c: &mut Cmd<'_>, user: &[u8], pass: &[u8]) -> Result<()> {
    let Some(found) = c.server.acl.authenticate(user, pass) else {
        let name = c.args.argv().first().copied().unwrap_or(b"AUTH");
        let object = String::from_utf8_lossy(name);
        crate::acl::log_auth_failure(c.server, &c.conn.handle, user, &object);
        return Err(Error::Static(error::WRONGPASS));
    };
    set_user(c.server, c.conn, found);
    c.conn.authenticated = true;
    Ok(())
}

/// Run the connection as `user` from now on.
pub fn set_user(server: &Server, conn: &mut ConnState, user: Arc<crate::acl::User>) {
    *conn.handle.user.lock() = user.name.clone();
    conn.user = user;
    conn.acl_generation = server.acl.generation();
}

/// HELLO [protover [AUTH username password] [SETNAME clientname]]
///
/// Like Redis 7.0, the options are applied in order: a SETNAME before a failing AUTH or a
/// syntax error has already renamed the connection. The protocol switches only on success.
fn hello(c: &mut Cmd<'_>) -> Result<()> {
    let mut proto = None;
    if let Some(raw) = c.args.opt() {
        proto = Some(match parse_i64(raw) {
            Some(2) => Protocol::Resp2,
            Some(3) => Protocol::Resp3,
            Some(_) => return Err(Error::Static(error::NOPROTO)),
            None => return Err(Error::Static(PROTOVER_NOT_INTEGER)),
        });
    }
    while let Some(opt) = c.args.opt() {
        let more = c.args.remaining();
        if opt.eq_ignore_ascii_case(b"AUTH") && more >= 2 {
            let user = c.args.next_arg()?;
            let pass = c.args.next_arg()?;
            log_in(c, user, pass)?;
        } else if opt.eq_ignore_ascii_case(b"SETNAME") && more >= 1 {
            let name = c.args.next_arg()?;
            set_client_name(&c.conn.handle, name)?;
        } else {
            return Err(Error::Owned(format!(
                "ERR Syntax error in HELLO option '{}'",
                String::from_utf8_lossy(opt)
            )));
        }
    }
    if !c.conn.authenticated && c.server.acl.auth_required() {
        return Err(Error::Static(HELLO_NOAUTH));
    }
    if let Some(p) = proto {
        set_protocol(c, p);
    }
    let proto_num = match c.out.proto {
        Protocol::Resp2 => 2,
        Protocol::Resp3 => 3,
    };
    c.out.map(7);
    c.out.bulk(b"server");
    c.out.bulk(b"redis");
    c.out.bulk(b"version");
    c.out.bulk(REDIS_VERSION.as_bytes());
    c.out.bulk(b"proto");
    c.out.int(proto_num);
    c.out.bulk(b"id");
    c.out.int(c.conn.id as i64);
    c.out.bulk(b"mode");
    c.out.bulk(b"standalone");
    c.out.bulk(b"role");
    c.out.bulk(b"master");
    c.out.bulk(b"modules");
    c.out.array(0);
    Ok(())
}

/// Switch the connection's reply protocol (this command's reply is already encoded in it).
fn set_protocol(c: &mut Cmd<'_>, proto: Protocol) {
    c.out.proto = proto;
    let n = match proto {
        Protocol::Resp2 => 2,
        Protocol::Resp3 => 3,
    };
    c.conn.handle.resp.store(n, Ordering::Relaxed);
}

/// AUTH [username] password
fn auth(c: &mut Cmd<'_>) -> Result<()> {
    let (user, pass) = match c.args.rest() {
        [pass] => {
            if c.server.acl.default_user().nopass() {
                return Err(Error::Static(error::AUTH_NOT_CONFIGURED));
            }
            (DEFAULT_USER, *pass)
        }
        [user, pass] => (*user, *pass),
        _ => return Err(Error::Static(error::SYNTAX)),
    };
    // A failed AUTH leaves the connection as it was (authenticated or not), as in Redis.
    log_in(c, user, pass)?;
    c.out.simple("OK");
    Ok(())
}

/// QUIT: reply, then close once the reply is written.
fn quit(c: &mut Cmd<'_>) -> Result<()> {
    c.out.simple("OK");
    c.conn.close_after_reply = true;
    Ok(())
}

/// RESET: back to the state of a new connection (Redis's `clearClientConnectionState`).
/// CLIENT SETINFO attributes survive, as in Redis.
fn reset(c: &mut Cmd<'_>) -> Result<()> {
    c.conn.db = 0;
    c.conn.handle.db.store(0, Ordering::Relaxed);
    set_protocol(c, Protocol::Resp2);
    c.conn.handle.names.lock().name.clear();
    c.conn.reply_mode = ReplyMode::On;
    // Back to the default user, authenticated only if it needs no password (Redis's
    // `clientSetDefaultAuth`).
    let default = c.server.acl.default_user();
    c.conn.authenticated = default.nopass() && default.enabled();
    set_user(c.server, c.conn, default);
    c.conn.handle.no_evict.store(false, Ordering::Relaxed);
    c.conn.handle.no_touch.store(false, Ordering::Relaxed);
    // As Redis's RESET: out of MULTI, no watched keys, no subscriptions.
    c.conn.multi = None;
    c.conn.watched.clear();
    let subs = std::mem::take(&mut c.conn.subs);
    c.server.pubsub.forget(&subs, c.conn.id);
    c.conn.handle.tracking.set_subscribed(false);
    if c.conn.handle.tracking.on() {
        c.server.tracking.disable(&c.conn.handle);
    }
    c.out.simple("RESET");
    Ok(())
}

/// Whether `v` may appear in a CLIENT LIST field: printable ASCII without spaces.
fn valid_client_attr(v: &[u8]) -> bool {
    v.iter().all(|b| (b'!'..=b'~').contains(b))
}

/// Set (or with an empty name, clear) the connection name.
fn set_client_name(handle: &ClientHandle, name: &[u8]) -> Result<()> {
    if !valid_client_attr(name) {
        return Err(Error::Static(BAD_CLIENT_NAME));
    }
    let mut names = handle.names.lock();
    names.name.clear();
    // Validated as printable ASCII above.
    names.name.push_str(&String::from_utf8_lossy(name));
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::Ordering;
    use std::sync::Arc;

    use larder_resp::{Frame, Protocol};

    use super::*;
    use crate::config::{lookup, Config};
    use crate::testing::*;

    fn simple(s: &str) -> Frame {
        Frame::Simple(s.into())
    }

    fn with_password(pass: &str) -> Harness {
        let config = Config::new();
        let def = lookup("requirepass").expect("requirepass is a parameter");
        config.apply(def, pass).expect("valid requirepass");
        Harness::with_config(config)
    }

    fn hello_map(proto: i64, id: u64) -> Vec<(Frame, Frame)> {
        vec![
            (bulk("server"), bulk("redis")),
            (bulk("version"), bulk(REDIS_VERSION)),
            (bulk("proto"), int(proto)),
            (bulk("id"), int(id as i64)),
            (bulk("mode"), bulk("standalone")),
            (bulk("role"), bulk("master")),
            (bulk("modules"), Frame::Array(vec![])),
        ]
    }

    fn flat(map: Vec<(Frame, Frame)>) -> Frame {
        Frame::Array(map.into_iter().flat_map(|(k, v)| [k, v]).collect())
    }

    #[test]
    fn ping_and_echo() {
        let mut h = Harness::new();
        assert_eq!(h.run(&["PING"]), simple("PONG"));
        assert_eq!(h.run(&["ping", "hi"]), bulk("hi"));
        assert_eq!(h.run(&["PING", ""]), bulk(""));
        assert_eq!(
            h.run(&["PING", "a", "b"]),
            err("ERR wrong number of arguments for 'ping' command")
        );
        assert_eq!(h.run(&["ECHO", "x y"]), bulk("x y"));
        assert_eq!(
            h.run(&["ECHO"]),
            err("ERR wrong number of arguments for 'echo' command")
        );
        assert_eq!(
            h.run(&["ECHO", "a", "b"]),
            err("ERR wrong number of arguments for 'echo' command")
        );
        h.out.proto = Protocol::Resp3;
        assert_eq!(h.run(&["PING"]), simple("PONG"));
        assert_eq!(h.run_raw(&[b"PING"]), b"+PONG\r\n");
    }

    #[test]
    fn hello_switches_protocol() {
        let mut h = Harness::new();
        let id = h.conn.id;
        assert_eq!(h.run(&["HELLO"]), flat(hello_map(2, id)));
        assert_eq!(h.run(&["HELLO", "3"]), Frame::Map(hello_map(3, id)));
        assert_eq!(h.out.proto, Protocol::Resp3);
        assert_eq!(h.conn.handle.resp.load(Ordering::Relaxed), 3);
        // Without a version HELLO reports the current protocol.
        assert_eq!(h.run(&["HELLO"]), Frame::Map(hello_map(3, id)));
        assert_eq!(h.run(&["hello", "2"]), flat(hello_map(2, id)));
        assert_eq!(h.out.proto, Protocol::Resp2);
        assert_eq!(h.conn.handle.resp.load(Ordering::Relaxed), 2);
    }

    #[test]
    fn hello_errors_keep_protocol() {
        let mut h = Harness::new();
        for v in ["4", "1", "0", "-1", "9223372036854775807"] {
            assert_eq!(
                h.run(&["HELLO", v]),
                err("NOPROTO unsupported protocol version"),
                "{v}"
            );
        }
        for v in ["abc", "03", " 3", "3.0", ""] {
            assert_eq!(
                h.run(&["HELLO", v]),
                err("ERR Protocol version is not an integer or out of range"),
                "{v:?}"
            );
        }
        assert_eq!(
            h.run(&["HELLO", "3", "auth", "default"]),
            err("ERR Syntax error in HELLO option 'auth'")
        );
        assert_eq!(
            h.run(&["HELLO", "3", "SETNAME"]),
            err("ERR Syntax error in HELLO option 'SETNAME'")
        );
        assert_eq!(
            h.run(&["HELLO", "3", "foo"]),
            err("ERR Syntax error in HELLO option 'foo'")
        );
        assert_eq!(
            h.run(&["HELLO", "3", "SETNAME", "a b"]),
            err("ERR Client names cannot contain spaces, newlines or special characters.")
        );
        assert_eq!(h.out.proto, Protocol::Resp2);
        assert_eq!(h.conn.handle.resp.load(Ordering::Relaxed), 2);
    }

    #[test]
    fn hello_setname_applies_in_order_like_redis_7_0() {
        let mut h = Harness::new();
        assert!(!h.run(&["HELLO", "3", "SETNAME", "nm"]).is_error());
        assert_eq!(h.run(&["CLIENT", "GETNAME"]), bulk("nm"));
        h.run(&["HELLO", "2"]);
        // Redis 7.0 renames before it finds the later syntax error.
        assert_eq!(
            h.run(&["HELLO", "3", "SETNAME", "ab", "foo"]),
            err("ERR Syntax error in HELLO option 'foo'")
        );
        assert_eq!(h.out.proto, Protocol::Resp2);
        assert_eq!(h.run(&["CLIENT", "GETNAME"]), bulk("ab"));
        h.run(&["HELLO", "2", "SETNAME", "a", "setname", "b"]);
        assert_eq!(h.run(&["CLIENT", "GETNAME"]), bulk("b"));
        h.run(&["HELLO", "2", "SETNAME", ""]);
        assert_eq!(h.run(&["CLIENT", "GETNAME"]), Frame::Null);
    }

    #[test]
    fn hello_auth_without_requirepass() {
        let mut h = Harness::new();
        let id = h.conn.id;
        // The default user has no password: any password is accepted for it.
        assert_eq!(
            h.run(&["HELLO", "3", "AUTH", "default", "anything"]),
            Frame::Map(hello_map(3, id))
        );
        assert_eq!(
            h.run(&["HELLO", "2", "AUTH", "bob", "x"]),
            err("WRONGPASS invalid username-password pair or user is disabled.")
        );
        assert_eq!(h.out.proto, Protocol::Resp3);
    }

    #[test]
    fn hello_auth_with_requirepass() {
        let mut h = with_password("secret");
        let id = h.conn.id;
        let noauth = err(HELLO_NOAUTH);
        assert_eq!(h.run(&["PING"]), err("NOAUTH Authentication required."));
        assert_eq!(h.run(&["HELLO"]), noauth);
        assert_eq!(h.run(&["HELLO", "3"]), noauth);
        assert_eq!(h.out.proto, Protocol::Resp2);
        // Redis 7.0 applies SETNAME before it finds the connection unauthenticated.
        assert_eq!(h.run(&["HELLO", "3", "SETNAME", "early"]), noauth);
        assert_eq!(h.conn.handle.names.lock().name, "early");
        for (user, pass) in [("default", "bad"), ("bob", "secret"), ("DEFAULT", "secret")] {
            assert_eq!(
                h.run(&["HELLO", "3", "AUTH", user, pass]),
                err("WRONGPASS invalid username-password pair or user is disabled.")
            );
            assert_eq!(h.out.proto, Protocol::Resp2);
            assert!(!h.conn.authenticated);
        }
        // Version errors come before authentication.
        assert_eq!(
            h.run(&["HELLO", "x", "AUTH", "default", "secret"]),
            err(PROTOVER_NOT_INTEGER)
        );
        assert_eq!(
            h.run(&["HELLO", "3", "AUTH", "default", "secret"]),
            Frame::Map(hello_map(3, id))
        );
        assert!(h.conn.authenticated);
        assert_eq!(h.run(&["PING"]), simple("PONG"));
        // A later failure does not de-authenticate.
        assert_eq!(
            h.run(&["HELLO", "2", "AUTH", "default", "bad"]),
            err("WRONGPASS invalid username-password pair or user is disabled.")
        );
        assert_eq!(h.out.proto, Protocol::Resp3);
        assert_eq!(h.run(&["PING"]), simple("PONG"));
    }

    #[test]
    fn hello_authenticates_then_fails_on_bad_name() {
        let mut h = with_password("secret");
        assert_eq!(
            h.run(&["HELLO", "3", "AUTH", "default", "secret", "SETNAME", "a b"]),
            err(BAD_CLIENT_NAME)
        );
        // As in Redis 7.0: authenticated, protocol unchanged.
        assert!(h.conn.authenticated);
        assert_eq!(h.out.proto, Protocol::Resp2);
    }

    #[test]
    fn auth_without_requirepass() {
        let mut h = Harness::new();
        assert_eq!(h.run(&["AUTH", "x"]), err(error::AUTH_NOT_CONFIGURED));
        assert_eq!(h.run(&["AUTH", "default", "x"]), ok());
        assert_eq!(
            h.run(&["AUTH", "foo", "x"]),
            err("WRONGPASS invalid username-password pair or user is disabled.")
        );
        assert_eq!(h.run(&["AUTH", "a", "b", "c"]), err("ERR syntax error"));
        assert_eq!(
            h.run(&["AUTH"]),
            err("ERR wrong number of arguments for 'auth' command")
        );
    }

    #[test]
    fn auth_with_requirepass() {
        let mut h = with_password("secret");
        assert_eq!(
            h.run(&["AUTH", "bad"]),
            err("WRONGPASS invalid username-password pair or user is disabled.")
        );
        assert_eq!(
            h.run(&["AUTH", "secre"]),
            err("WRONGPASS invalid username-password pair or user is disabled.")
        );
        assert_eq!(h.run(&["GET", "k"]), err("NOAUTH Authentication required."));
        assert_eq!(
            h.run(&["CLIENT", "ID"]),
            err("NOAUTH Authentication required.")
        );
        assert_eq!(h.run(&["AUTH", "secret"]), ok());
        assert_eq!(h.run(&["PING"]), simple("PONG"));
        assert_eq!(
            h.run(&["AUTH", "default", "bad"]),
            err("WRONGPASS invalid username-password pair or user is disabled.")
        );
        assert_eq!(h.run(&["PING"]), simple("PONG"));
        let mut h2 = Harness::connect(Arc::clone(&h.server));
        assert_eq!(h2.run(&["AUTH", "default", "secret"]), ok());
        assert!(h2.conn.authenticated);
        assert_eq!(h2.run(&["AUTH", "a", "b", "c"]), err("ERR syntax error"));
    }

    #[test]
    fn quit_closes_after_reply() {
        let mut h = with_password("secret");
        assert_eq!(h.run(&["QUIT"]), ok());
        assert!(h.conn.close_after_reply);
        let mut h = Harness::new();
        assert_eq!(h.run(&["quit", "extra"]), ok());
        assert!(h.conn.close_after_reply);
    }

    #[test]
    fn reset_restores_connection_defaults() {
        let mut h = with_password("secret");
        assert_eq!(h.run(&["RESET"]), simple("RESET"));
        h.run(&["HELLO", "3", "AUTH", "default", "secret", "SETNAME", "nm"]);
        h.run(&["CLIENT", "SETINFO", "lib-name", "mylib"]);
        h.run(&["CLIENT", "NO-EVICT", "on"]);
        h.run(&["CLIENT", "NO-TOUCH", "on"]);
        h.conn.db = 3;
        h.conn.handle.db.store(3, Ordering::Relaxed);
        assert!(h.run_raw(&[b"CLIENT", b"REPLY", b"OFF"]).is_empty());
        // RESET turns replies back on before replying.
        assert_eq!(h.run_raw(&[b"RESET"]), b"+RESET\r\n");
        assert_eq!(h.conn.reply_mode, ReplyMode::On);
        assert_eq!(h.out.proto, Protocol::Resp2);
        assert_eq!(h.conn.handle.resp.load(Ordering::Relaxed), 2);
        assert_eq!(h.conn.db, 0);
        assert_eq!(h.conn.handle.db.load(Ordering::Relaxed), 0);
        assert!(!h.conn.authenticated);
        assert!(!h.conn.handle.no_evict.load(Ordering::Relaxed));
        assert!(!h.conn.handle.no_touch.load(Ordering::Relaxed));
        let names = h.conn.handle.names.lock().clone();
        assert_eq!(names.name, "");
        // SETINFO attributes survive RESET.
        assert_eq!(names.lib_name, "mylib");
        assert_eq!(h.run(&["PING"]), err("NOAUTH Authentication required."));
        assert_eq!(
            h.run(&["RESET", "x"]),
            err("ERR wrong number of arguments for 'reset' command")
        );
        // Without requirepass the connection stays authenticated.
        let mut h = Harness::new();
        assert_eq!(h.run(&["reset"]), simple("RESET"));
        assert!(h.conn.authenticated);
    }

    #[test]
    fn handshake_commands_run_before_auth() {
        let mut h = with_password("secret");
        assert_eq!(h.run(&["HELLO"]), err(HELLO_NOAUTH));
        assert!(h.run(&["AUTH", "x"]).is_error());
        assert_eq!(
            h.run(&["ECHO", "x"]),
            err("NOAUTH Authentication required.")
        );
        assert_eq!(h.run(&["PING"]), err("NOAUTH Authentication required."));
        assert_eq!(h.run(&["RESET"]), simple("RESET"));
        assert_eq!(h.run(&["QUIT"]), ok());
    }

    #[test]
    fn table_matches_redis_command_info() {
        let registry = crate::Registry::new(&[COMMANDS]);
        let flags_of = |name: &str| {
            registry
                .all()
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, s)| (s.arity, s.flags))
                .unwrap_or_else(|| panic!("{name} missing"))
        };
        assert_eq!(flags_of("ping"), (-1, FAST));
        assert_eq!(flags_of("echo"), (2, LOADING | STALE | FAST));
        for name in ["hello", "quit"] {
            assert_eq!(flags_of(name), (-1, HANDSHAKE), "{name}");
        }
        assert_eq!(flags_of("auth"), (-2, HANDSHAKE));
        assert_eq!(flags_of("reset"), (1, HANDSHAKE));
        assert_eq!(
            flags_of("client|kill"),
            (-3, ADMIN | NOSCRIPT | LOADING | STALE)
        );
        assert_eq!(
            flags_of("client|list"),
            (-2, ADMIN | NOSCRIPT | LOADING | STALE)
        );
        assert_eq!(flags_of("client|reply"), (3, NOSCRIPT | LOADING | STALE));
        assert_eq!(flags_of("client|help"), (2, LOADING | STALE));
        assert_eq!(
            registry.all().len(),
            COMMANDS.len() - 1 + client::CLIENT_SUBCOMMANDS.len()
        );
        for (name, spec) in registry.all() {
            assert_eq!(*name, name.to_ascii_lowercase());
            assert!(!spec.summary.is_empty() && !spec.since.is_empty(), "{name}");
            assert_eq!(spec.keys, KeySpec::NONE, "{name}");
            assert_eq!(spec.group, Group::Connection, "{name}");
        }
    }
}
