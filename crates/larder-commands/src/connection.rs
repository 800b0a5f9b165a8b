//! Connection commands: PING, ECHO, HELLO, AUTH, QUIT, RESET and the CLIENT container.
//!
//! SELECT belongs to the keyspace family. Replies and error texts follow Redis 7.0; CLIENT
//! SETINFO and CLIENT NO-TOUCH follow Redis 7.2, CLIENT KILL MAXAGE Redis 7.4.

use std::fmt::Write as _;
use std::sync::atomic::Ordering;

use larder_resp::Protocol;

use crate::args::parse_i64;
use crate::config::Param;
use crate::error::{self, Error, Result};
use crate::exec::{Cmd, ReplyMode};
use crate::state::{ClientHandle, Pause, Server};
use crate::table::{flags::*, CommandSpec, Group, KeySpec};

/// The Redis version larder reports (HELLO, INFO `redis_version`).
pub const REDIS_VERSION: &str = "7.0.15";

const PROTOVER_NOT_INTEGER: &str = "ERR Protocol version is not an integer or out of range";
const HELLO_NOAUTH: &str = "NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time";
const BAD_CLIENT_NAME: &str =
    "ERR Client names cannot contain spaces, newlines or special characters.";
const NO_SUCH_CLIENT: &str = "ERR No such client";
const INVALID_CLIENT_ID: &str = "ERR Invalid client ID";
const CLIENT_ID_NOT_POSITIVE: &str = "ERR client-id should be greater than 0";
const MAXAGE_NOT_INTEGER: &str = "ERR maxage is not an integer or out of range";
const MAXAGE_NOT_POSITIVE: &str = "ERR maxage should be greater than 0";
const PAUSE_MODE: &str = "ERR CLIENT PAUSE mode must be WRITE or ALL";
const TIMEOUT_NEGATIVE: &str = "ERR timeout is negative";

/// The only ACL user larder has.
const DEFAULT_USER: &[u8] = b"default";

const fn cmd(
    name: &'static str,
    arity: i32,
    flags: u32,
    summary: &'static str,
    since: &'static str,
    handler: crate::table::Handler,
) -> CommandSpec {
    CommandSpec {
        name,
        arity,
        flags,
        keys: KeySpec::NONE,
        group: Group::Connection,
        summary,
        since,
        handler,
        subcommands: &[],
    }
}

/// Flags Redis gives the commands a client may send before authenticating.
const HANDSHAKE: u32 = NOSCRIPT | LOADING | STALE | FAST | NO_AUTH | ALLOW_BUSY;
/// Flags of most CLIENT subcommands.
const CLIENT_SUB: u32 = NOSCRIPT | LOADING | STALE;

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
        subcommands: CLIENT_SUBCOMMANDS,
        ..cmd("client", -2, 0, "A container for client connection commands", "2.4.0", client)
    },
];

#[rustfmt::skip]
static CLIENT_SUBCOMMANDS: &[CommandSpec] = &[
    cmd("id", 2, CLIENT_SUB, "Returns the client ID for the current connection", "5.0.0", client_id),
    cmd("setname", 3, CLIENT_SUB, "Set the current connection name", "2.6.9", client_setname),
    cmd("getname", 2, CLIENT_SUB, "Get the current connection name", "2.6.9", client_getname),
    cmd("list", -2, ADMIN | CLIENT_SUB, "Get the list of client connections", "2.4.0", client_list),
    cmd("info", 2, CLIENT_SUB, "Returns information about the current client connection.", "6.2.0", client_info),
    cmd("kill", -3, ADMIN | CLIENT_SUB, "Kill the connection of a client", "2.4.0", client_kill),
    cmd("setinfo", 4, CLIENT_SUB, "Sets information specific to the client or connection.", "7.2.0", client_setinfo),
    cmd("reply", 3, CLIENT_SUB, "Instruct the server whether to reply to commands", "3.2.0", client_reply),
    cmd("no-evict", 3, ADMIN | CLIENT_SUB, "Set client eviction mode for the current connection", "7.0.0", client_no_evict),
    cmd("no-touch", 3, CLIENT_SUB, "Controls whether commands sent by the client affect the LRU/LFU of accessed keys.", "7.2.0", client_no_touch),
    cmd("pause", -3, ADMIN | CLIENT_SUB, "Stop processing commands from clients for some time", "2.9.50", client_pause),
    cmd("unpause", 2, ADMIN | CLIENT_SUB, "Resume processing of clients that were paused", "6.2.0", client_unpause),
    cmd("help", 2, LOADING | STALE, "Show helpful text about the different subcommands", "5.0.0", client_help),
];

/// PING [message]
fn ping(c: &mut Cmd<'_>) -> Result<()> {
    if c.args.remaining() > 1 {
        return Err(error::wrong_arity("ping"));
    }
    match c.args.opt() {
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

/// Whether `user`/`pass` authenticate as larder's only user. Without `requirepass` the default
/// user has no password and any password is accepted, as Redis's `nopass` user does.
fn credentials_ok(server: &Server, user: &[u8], pass: &[u8]) -> bool {
    if user != DEFAULT_USER {
        return false;
    }
    let required = server.config.text(Param::Requirepass);
    required.is_empty() || constant_time_eq(required.as_bytes(), pass)
}

/// Byte comparison whose time does not depend on where the inputs differ.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    let mut diff = a.len() ^ b.len();
    for (i, &x) in a.iter().enumerate() {
        diff |= usize::from(x ^ b.get(i).copied().unwrap_or(!x));
    }
    diff == 0
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
            if !credentials_ok(c.server, user, pass) {
                return Err(Error::Static(error::WRONGPASS));
            }
            c.conn.authenticated = true;
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
    if !c.conn.authenticated {
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
            if c.server.config.text(Param::Requirepass).is_empty() {
                return Err(Error::Static(error::AUTH_NOT_CONFIGURED));
            }
            (DEFAULT_USER, *pass)
        }
        [user, pass] => (*user, *pass),
        _ => return Err(Error::Static(error::SYNTAX)),
    };
    // A failed AUTH leaves an already authenticated connection authenticated, as in Redis.
    if !credentials_ok(c.server, user, pass) {
        return Err(Error::Static(error::WRONGPASS));
    }
    c.conn.authenticated = true;
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
    // As Redis's clearClientConnectionState: a transaction being queued is discarded and
    // every watched key forgotten.
    c.conn.multi = None;
    c.conn.watched.clear();
    c.conn.db = 0;
    c.conn.handle.db.store(0, Ordering::Relaxed);
    set_protocol(c, Protocol::Resp2);
    c.conn.handle.names.lock().name.clear();
    c.conn.reply_mode = ReplyMode::On;
    c.conn.authenticated = c.server.config.text(Param::Requirepass).is_empty();
    c.conn.handle.no_evict.store(false, Ordering::Relaxed);
    c.conn.handle.no_touch.store(false, Ordering::Relaxed);
    c.out.simple("RESET");
    Ok(())
}

/// The CLIENT container; the registry runs its subcommands, never this.
fn client(_c: &mut Cmd<'_>) -> Result<()> {
    Err(Error::Static(error::SYNTAX))
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

/// `ERR unknown subcommand or wrong number of arguments for 'pause'. Try CLIENT HELP.`
fn subcommand_syntax(c: &Cmd<'_>) -> Error {
    let argv = c.args.argv();
    let sub = argv.get(1).copied().unwrap_or_default();
    let sub = &sub[..sub.len().min(128)];
    let container = argv.first().copied().unwrap_or_default();
    Error::Owned(format!(
        "ERR unknown subcommand or wrong number of arguments for '{}'. Try {} HELP.",
        String::from_utf8_lossy(sub),
        String::from_utf8_lossy(container).to_ascii_uppercase()
    ))
}

/// ON / OFF, case-insensitively; anything else is a syntax error.
fn on_off(arg: &[u8]) -> Result<bool> {
    if arg.eq_ignore_ascii_case(b"on") {
        Ok(true)
    } else if arg.eq_ignore_ascii_case(b"off") {
        Ok(false)
    } else {
        Err(Error::Static(error::SYNTAX))
    }
}

/// CLIENT ID
fn client_id(c: &mut Cmd<'_>) -> Result<()> {
    c.out.int(c.conn.id as i64);
    Ok(())
}

/// CLIENT SETNAME name
fn client_setname(c: &mut Cmd<'_>) -> Result<()> {
    let name = c.args.next_arg()?;
    set_client_name(&c.conn.handle, name)?;
    c.out.simple("OK");
    Ok(())
}

/// CLIENT GETNAME
fn client_getname(c: &mut Cmd<'_>) -> Result<()> {
    let names = c.conn.handle.names.lock();
    if names.name.is_empty() {
        c.out.null();
    } else {
        c.out.bulk(names.name.as_bytes());
    }
    Ok(())
}

/// Client classes of CLIENT LIST TYPE and CLIENT KILL TYPE.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ClientType {
    Normal,
    Replica,
    Master,
    PubSub,
}

impl ClientType {
    fn parse(name: &[u8]) -> Result<ClientType> {
        let t = match name.to_ascii_lowercase().as_slice() {
            b"normal" => ClientType::Normal,
            b"slave" | b"replica" => ClientType::Replica,
            b"master" => ClientType::Master,
            b"pubsub" => ClientType::PubSub,
            _ => {
                return Err(Error::Owned(format!(
                    "ERR Unknown client type '{}'",
                    String::from_utf8_lossy(name)
                )))
            }
        };
        Ok(t)
    }

    /// The class of a connection. larder has no replication and no subscribers yet, so every
    /// connection is a normal client.
    fn of(_handle: &ClientHandle) -> ClientType {
        ClientType::Normal
    }
}

/// Bring the caller's shared handle up to date before it is listed: Redis shows the running
/// command, the selected db and idle=0 for the client that asks.
fn sync_own_handle(c: &Cmd<'_>) {
    let h = &c.conn.handle;
    h.db.store(c.conn.db, Ordering::Relaxed);
    h.last_command
        .store(c.resolved.stat_index, Ordering::Relaxed);
    h.last_interaction_ms.store(c.now_ms, Ordering::Relaxed);
}

/// Bytes of the running command's arguments (CLIENT LIST `argv-mem` of the caller).
fn argv_mem(c: &Cmd<'_>) -> usize {
    c.args.argv().iter().map(|a| a.len()).sum()
}

/// CLIENT LIST [TYPE normal|master|replica|pubsub] [ID id [id ...]]
fn client_list(c: &mut Cmd<'_>) -> Result<()> {
    let rest = c.args.rest();
    let mut filter_type = None;
    let mut ids = None;
    match rest {
        [] => {}
        [opt, t] if opt.eq_ignore_ascii_case(b"type") => {
            filter_type = Some(ClientType::parse(t)?);
        }
        [opt, list @ ..] if opt.eq_ignore_ascii_case(b"id") && !list.is_empty() => {
            let parsed = list
                .iter()
                .map(|raw| parse_i64(raw).ok_or(Error::Static(INVALID_CLIENT_ID)))
                .collect::<Result<Vec<i64>>>()?;
            ids = Some(parsed);
        }
        _ => return Err(Error::Static(error::SYNTAX)),
    }
    sync_own_handle(c);
    let own_argv_mem = argv_mem(c);
    let clients = c.server.clients.snapshot();
    let mut text = String::new();
    let mut add = |h: &ClientHandle| {
        let mem = if h.id == c.conn.id { own_argv_mem } else { 0 };
        write_client_line(&mut text, c.server, h, c.now_ms, mem);
        text.push('\n');
    };
    match ids {
        // Redis lists the given ids in argument order, repeats included.
        Some(ids) => {
            for id in ids {
                let found = u64::try_from(id)
                    .ok()
                    .and_then(|id| clients.binary_search_by_key(&id, |h| h.id).ok())
                    .and_then(|i| clients.get(i));
                if let Some(h) = found.filter(|h| listed(h, c.conn.id)) {
                    add(h);
                }
            }
        }
        None => {
            for h in clients.iter().filter(|h| listed(h, c.conn.id)) {
                if filter_type.is_none_or(|t| ClientType::of(h) == t) {
                    add(h);
                }
            }
        }
    }
    c.out.verbatim("txt", text.as_bytes());
    Ok(())
}

/// Killed clients are gone for CLIENT LIST and CLIENT KILL (Redis frees them at once), even
/// while their worker has not closed the socket yet. The caller is always listed.
fn listed(h: &ClientHandle, own_id: u64) -> bool {
    h.id == own_id || !h.killed.load(Ordering::Acquire)
}

/// CLIENT INFO
fn client_info(c: &mut Cmd<'_>) -> Result<()> {
    sync_own_handle(c);
    let mut text = String::new();
    write_client_line(&mut text, c.server, &c.conn.handle, c.now_ms, argv_mem(c));
    text.push('\n');
    c.out.verbatim("txt", text.as_bytes());
    Ok(())
}

/// One CLIENT LIST line (without the trailing newline) for `handle`, in Redis's field order
/// with Redis 7.2's `lib-name`/`lib-ver` at the end.
pub fn client_list_line(server: &Server, handle: &ClientHandle, now_ms: u64) -> String {
    let mut line = String::with_capacity(320);
    write_client_line(&mut line, server, handle, now_ms, 0);
    line
}

/// Append `handle`'s CLIENT LIST line to `out`. `argv_mem` is the size of the arguments of
/// the command the client is running (0 for clients other than the caller).
fn write_client_line(
    out: &mut String,
    server: &Server,
    handle: &ClientHandle,
    now_ms: u64,
    argv_mem: usize,
) {
    let mut flags = String::new();
    if handle.no_evict.load(Ordering::Relaxed) {
        flags.push('e');
    }
    if handle.no_touch.load(Ordering::Relaxed) {
        flags.push('T');
    }
    if flags.is_empty() {
        flags.push('N');
    }
    let age_s = now_ms.saturating_sub(handle.created_ms) / 1000;
    let idle_s = now_ms.saturating_sub(handle.last_interaction_ms.load(Ordering::Relaxed)) / 1000;
    let qbuf = handle.query_buf_bytes.load(Ordering::Relaxed);
    let omem = handle.output_buf_bytes.load(Ordering::Relaxed);
    let events = if omem > 0 { "rw" } else { "r" };
    let cmd = server
        .registry
        .all()
        .get(handle.last_command.load(Ordering::Relaxed))
        .map_or("NULL", |(name, _)| name.as_str());
    let names = handle.names.lock();
    // Writing to a String cannot fail.
    let _ = write!(
        out,
        "id={} addr={} laddr={} fd={} name={} age={} idle={} flags={} db={} sub=0 psub=0 \
         ssub=0 multi=-1 qbuf={} qbuf-free=0 argv-mem={} multi-mem=0 rbs=0 rbp=0 obl=0 oll=0 \
         omem={} tot-mem={} events={} cmd={} user=default redir=-1 resp={} lib-name={} \
         lib-ver={}",
        handle.id,
        handle.addr,
        handle.laddr,
        handle.fd,
        names.name,
        age_s,
        idle_s,
        flags,
        handle.db.load(Ordering::Relaxed),
        qbuf,
        argv_mem,
        omem,
        qbuf + argv_mem + omem,
        events,
        cmd,
        handle.resp.load(Ordering::Relaxed),
        names.lib_name,
        names.lib_ver,
    );
}

/// CLIENT KILL's filters, combined with AND.
struct KillFilter<'a> {
    addr: Option<&'a [u8]>,
    laddr: Option<&'a [u8]>,
    id: Option<u64>,
    client_type: Option<ClientType>,
    max_age_s: Option<u64>,
    skip_me: bool,
}

impl KillFilter<'_> {
    fn matches(&self, h: &ClientHandle, own_id: u64, now_ms: u64) -> bool {
        self.addr.is_none_or(|a| a == h.addr.as_bytes())
            && self.laddr.is_none_or(|a| a == h.laddr.as_bytes())
            && self.id.is_none_or(|id| id == h.id)
            && self.client_type.is_none_or(|t| t == ClientType::of(h))
            && self
                .max_age_s
                .is_none_or(|max| now_ms.saturating_sub(h.created_ms) / 1000 > max)
            && !(self.skip_me && h.id == own_id)
    }
}

/// CLIENT KILL ip:port
/// CLIENT KILL [ID id] [TYPE type] [USER user] [ADDR ip:port] [LADDR ip:port] [SKIPME yes|no]
///             [MAXAGE seconds] ...
fn client_kill(c: &mut Cmd<'_>) -> Result<()> {
    let rest = c.args.rest();
    let old_form = rest.len() == 1;
    let mut filter = KillFilter {
        addr: None,
        laddr: None,
        id: None,
        client_type: None,
        max_age_s: None,
        skip_me: !old_form,
    };
    if let [addr] = rest {
        // With the old form a client may kill itself.
        filter.addr = Some(addr);
    } else {
        let mut pairs = rest.chunks(2);
        for pair in pairs.by_ref() {
            let [opt, value] = pair else {
                return Err(Error::Static(error::SYNTAX));
            };
            match opt.to_ascii_lowercase().as_slice() {
                b"id" => {
                    let id = parse_i64(value)
                        .filter(|&v| v > 0)
                        .ok_or(Error::Static(CLIENT_ID_NOT_POSITIVE))?;
                    filter.id = Some(id as u64);
                }
                b"type" => filter.client_type = Some(ClientType::parse(value)?),
                b"addr" => filter.addr = Some(value),
                b"laddr" => filter.laddr = Some(value),
                b"user" => {
                    // Every connection runs as the default user, larder's only user.
                    if *value != DEFAULT_USER {
                        return Err(Error::Owned(format!(
                            "ERR No such user '{}'",
                            String::from_utf8_lossy(value)
                        )));
                    }
                }
                b"skipme" => {
                    filter.skip_me = if value.eq_ignore_ascii_case(b"yes") {
                        true
                    } else if value.eq_ignore_ascii_case(b"no") {
                        false
                    } else {
                        return Err(Error::Static(error::SYNTAX));
                    };
                }
                b"maxage" => {
                    let age = parse_i64(value).ok_or(Error::Static(MAXAGE_NOT_INTEGER))?;
                    if age <= 0 {
                        return Err(Error::Static(MAXAGE_NOT_POSITIVE));
                    }
                    filter.max_age_s = Some(age as u64);
                }
                _ => return Err(Error::Static(error::SYNTAX)),
            }
        }
    }
    let mut killed = 0i64;
    let mut kill_self = false;
    for h in c.server.clients.snapshot() {
        if !listed(&h, c.conn.id) || !filter.matches(&h, c.conn.id, c.now_ms) {
            continue;
        }
        if h.id == c.conn.id {
            // Closing now would lose the reply: close once it is written.
            kill_self = true;
        } else {
            c.server.clients.kill(&h);
        }
        killed += 1;
    }
    if old_form {
        if killed == 0 {
            return Err(Error::Static(NO_SUCH_CLIENT));
        }
        c.out.simple("OK");
    } else {
        c.out.int(killed);
    }
    if kill_self {
        c.conn.close_after_reply = true;
    }
    Ok(())
}

/// CLIENT SETINFO LIB-NAME name | LIB-VER version (Redis 7.2)
fn client_setinfo(c: &mut Cmd<'_>) -> Result<()> {
    let attr = c.args.next_arg()?;
    let value = c.args.next_arg()?;
    let lib_name = if attr.eq_ignore_ascii_case(b"lib-name") {
        true
    } else if attr.eq_ignore_ascii_case(b"lib-ver") {
        false
    } else {
        return Err(Error::Owned(format!(
            "ERR Unrecognized option '{}'",
            String::from_utf8_lossy(attr)
        )));
    };
    if !valid_client_attr(value) {
        return Err(Error::Owned(format!(
            "ERR {} cannot contain spaces, newlines or special characters.",
            String::from_utf8_lossy(attr)
        )));
    }
    {
        let mut names = c.conn.handle.names.lock();
        let slot = if lib_name {
            &mut names.lib_name
        } else {
            &mut names.lib_ver
        };
        slot.clear();
        // Validated as printable ASCII above.
        slot.push_str(&String::from_utf8_lossy(value));
    }
    c.out.simple("OK");
    Ok(())
}

/// CLIENT REPLY ON|OFF|SKIP
///
/// OFF and SKIP send no reply of their own: the executor drops this command's reply once the
/// mode is not `On`. SKIP while replies are off changes nothing, as in Redis.
fn client_reply(c: &mut Cmd<'_>) -> Result<()> {
    let mode = c.args.next_arg()?;
    if mode.eq_ignore_ascii_case(b"on") {
        c.conn.reply_mode = ReplyMode::On;
        c.out.simple("OK");
    } else if mode.eq_ignore_ascii_case(b"off") {
        c.conn.reply_mode = ReplyMode::Off;
    } else if mode.eq_ignore_ascii_case(b"skip") {
        if c.conn.reply_mode != ReplyMode::Off {
            c.conn.reply_mode = ReplyMode::SkipNext;
        }
    } else {
        return Err(Error::Static(error::SYNTAX));
    }
    Ok(())
}

/// CLIENT NO-EVICT ON|OFF
fn client_no_evict(c: &mut Cmd<'_>) -> Result<()> {
    let on = on_off(c.args.next_arg()?)?;
    c.conn.handle.no_evict.store(on, Ordering::Relaxed);
    c.out.simple("OK");
    Ok(())
}

/// CLIENT NO-TOUCH ON|OFF (Redis 7.2)
fn client_no_touch(c: &mut Cmd<'_>) -> Result<()> {
    let on = on_off(c.args.next_arg()?)?;
    c.conn.handle.no_touch.store(on, Ordering::Relaxed);
    c.out.simple("OK");
    Ok(())
}

/// CLIENT PAUSE timeout-ms [WRITE|ALL]
///
/// A pause while another is in effect keeps the later end and the stricter mode, as Redis's
/// `pauseClients` does.
fn client_pause(c: &mut Cmd<'_>) -> Result<()> {
    let (timeout, mode) = match c.args.rest() {
        [timeout] => (*timeout, Pause::ALL),
        [timeout, mode] => {
            let mode = if mode.eq_ignore_ascii_case(b"write") {
                Pause::WRITE
            } else if mode.eq_ignore_ascii_case(b"all") {
                Pause::ALL
            } else {
                return Err(Error::Static(PAUSE_MODE));
            };
            (*timeout, mode)
        }
        _ => return Err(subcommand_syntax(c)),
    };
    let timeout_ms = parse_i64(timeout).ok_or(Error::Static(error::TIMEOUT_NOT_INTEGER))?;
    if timeout_ms < 0 {
        return Err(Error::Static(TIMEOUT_NEGATIVE));
    }
    let mut until_ms = if timeout_ms > 0 {
        c.now_ms.saturating_add(timeout_ms as u64)
    } else {
        0
    };
    let mut mode = mode;
    let pause = &c.server.pause;
    let current_until = pause.until_ms.load(Ordering::Acquire);
    if current_until > c.now_ms {
        until_ms = until_ms.max(current_until);
        mode = mode.max(pause.mode.load(Ordering::Acquire));
    }
    // The executor reads `until_ms` first, then `mode`: publish the mode first.
    pause.mode.store(mode, Ordering::Release);
    pause.until_ms.store(until_ms, Ordering::Release);
    c.out.simple("OK");
    Ok(())
}

/// CLIENT UNPAUSE
fn client_unpause(c: &mut Cmd<'_>) -> Result<()> {
    c.server.pause.until_ms.store(0, Ordering::Release);
    c.out.simple("OK");
    Ok(())
}

/// CLIENT HELP
fn client_help(c: &mut Cmd<'_>) -> Result<()> {
    const HELP: &[&str] = &[
        "CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "GETNAME",
        "    Return the name of the current connection.",
        "ID",
        "    Return the ID of the current connection.",
        "INFO",
        "    Return information about the current client connection.",
        "KILL <ip:port>",
        "    Kill connection made from <ip:port>.",
        "KILL <option> <value> [<option> <value> [...]]",
        "    Kill connections. Options are:",
        "    * ADDR (<ip:port>|<unixsocket>:0)",
        "      Kill connections made from the specified address",
        "    * LADDR (<ip:port>|<unixsocket>:0)",
        "      Kill connections made to specified local address",
        "    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
        "      Kill connections by type.",
        "    * USER <username>",
        "      Kill connections authenticated by <username>.",
        "    * SKIPME (YES|NO)",
        "      Skip killing current connection (default: yes).",
        "    * ID <client-id>",
        "      Kill connections by client id.",
        "    * MAXAGE <maxage>",
        "      Kill connections older than the specified age.",
        "LIST [options ...]",
        "    Return information about client connections. Options:",
        "    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
        "      Return clients of specified type.",
        "UNPAUSE",
        "    Stop the current client pause, resuming traffic.",
        "PAUSE <timeout> [WRITE|ALL]",
        "    Suspend all, or just write, clients for <timeout> milliseconds.",
        "REPLY (ON|OFF|SKIP)",
        "    Control the replies sent to the current connection.",
        "SETNAME <name>",
        "    Assign the name <name> to the current connection.",
        "SETINFO <option> <value>",
        "    Set client meta attr. Options are:",
        "    * LIB-NAME: the client lib name.",
        "    * LIB-VER: the client lib version.",
        "NO-EVICT (ON|OFF)",
        "    Protect current client connection from eviction.",
        "NO-TOUCH (ON|OFF)",
        "    Will not touch LRU/LFU stats when this mode is on.",
        "HELP",
        "    Prints this help.",
    ];
    c.out.array(HELP.len());
    for line in HELP {
        c.out.simple(line);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, AtomicUsize, Ordering};
    use std::sync::Arc;

    use larder_resp::{Frame, Protocol};
    use parking_lot::Mutex;

    use super::*;
    use crate::config::{lookup, Config};
    use crate::exec::{execute, Outcome};
    use crate::state::ClientNames;
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

    /// The text of a CLIENT LIST / CLIENT INFO reply in either protocol.
    fn list_text(f: Frame) -> String {
        match f {
            Frame::Bulk(b) => String::from_utf8(b).expect("ascii"),
            Frame::Verbatim { format, text } => {
                assert_eq!(format, "txt");
                String::from_utf8(text).expect("ascii")
            }
            other => panic!("not a list reply: {other:?}"),
        }
    }

    /// The `key=value` fields of one CLIENT LIST line, in order.
    fn fields(line: &str) -> Vec<(String, String)> {
        line.trim_end_matches('\n')
            .split(' ')
            .map(|kv| {
                let (k, v) = kv.split_once('=').expect("key=value");
                (k.to_string(), v.to_string())
            })
            .collect()
    }

    fn field(line: &str, key: &str) -> String {
        fields(line)
            .into_iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v)
            .unwrap_or_else(|| panic!("no field {key} in {line}"))
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
    fn constant_time_compare() {
        assert!(constant_time_eq(b"", b""));
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"ab"));
        assert!(!constant_time_eq(b"ab", b"abc"));
        assert!(!constant_time_eq(b"", b"a"));
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
    fn client_container_errors() {
        let mut h = Harness::new();
        assert_eq!(
            h.run(&["CLIENT"]),
            err("ERR wrong number of arguments for 'client' command")
        );
        assert_eq!(
            h.run(&["CLIENT", "foo"]),
            err("ERR unknown subcommand 'foo'. Try CLIENT HELP.")
        );
        assert_eq!(
            h.run(&["CLIENT", "ID", "x"]),
            err("ERR wrong number of arguments for 'client|id' command")
        );
        assert_eq!(
            h.run(&["CLIENT", "INFO", "x"]),
            err("ERR wrong number of arguments for 'client|info' command")
        );
        assert_eq!(
            h.run(&["CLIENT", "SETNAME"]),
            err("ERR wrong number of arguments for 'client|setname' command")
        );
        assert_eq!(
            h.run(&["CLIENT", "KILL"]),
            err("ERR wrong number of arguments for 'client|kill' command")
        );
        assert_eq!(
            h.run(&["CLIENT", "SETINFO", "lib-name"]),
            err("ERR wrong number of arguments for 'client|setinfo' command")
        );
    }

    #[test]
    fn client_id_and_names() {
        let mut h = Harness::new();
        let h2 = Harness::connect(Arc::clone(&h.server));
        assert_eq!(h.run(&["CLIENT", "ID"]), int(h.conn.id as i64));
        assert_ne!(h.conn.id, h2.conn.id);
        assert_eq!(h.run(&["CLIENT", "GETNAME"]), Frame::Null);
        assert_eq!(h.run(&["CLIENT", "SETNAME", "abc"]), ok());
        assert_eq!(h.run(&["client", "getname"]), bulk("abc"));
        for bad in [&b"a b"[..], b"a\nb", b"a\x7fb", b"a\x1fb", b"\xc3\xa9"] {
            assert_eq!(
                h.run_bytes(&[b"CLIENT", b"SETNAME", bad]),
                err(BAD_CLIENT_NAME)
            );
        }
        assert_eq!(h.run(&["CLIENT", "GETNAME"]), bulk("abc"));
        assert_eq!(h.run(&["CLIENT", "SETNAME", "!~"]), ok());
        assert_eq!(h.run(&["CLIENT", "GETNAME"]), bulk("!~"));
        assert_eq!(h.run(&["CLIENT", "SETNAME", ""]), ok());
        assert_eq!(h.run(&["CLIENT", "GETNAME"]), Frame::Null);
        h.out.proto = Protocol::Resp3;
        assert_eq!(h.run_raw(&[b"CLIENT", b"GETNAME"]), b"_\r\n");
    }

    #[test]
    fn client_list_line_fields_in_redis_order() {
        let mut h = Harness::new();
        h.run(&["CLIENT", "SETNAME", "me"]);
        h.conn.db = 2;
        let text = list_text(h.run(&["CLIENT", "LIST"]));
        assert!(text.ends_with('\n'));
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 1);
        let keys: Vec<String> = fields(lines[0]).into_iter().map(|(k, _)| k).collect();
        let expected = "id addr laddr fd name age idle flags db sub psub ssub multi qbuf \
                        qbuf-free argv-mem multi-mem rbs rbp obl oll omem tot-mem events cmd \
                        user redir resp lib-name lib-ver";
        assert_eq!(keys, expected.split_whitespace().collect::<Vec<_>>());
        let line = lines[0];
        assert_eq!(field(line, "id"), h.conn.id.to_string());
        assert_eq!(field(line, "addr"), "127.0.0.1:0");
        assert_eq!(field(line, "laddr"), "127.0.0.1:0");
        assert_eq!(field(line, "fd"), "-1");
        assert_eq!(field(line, "name"), "me");
        assert_eq!(field(line, "age"), "0");
        assert_eq!(field(line, "idle"), "0");
        assert_eq!(field(line, "flags"), "N");
        assert_eq!(field(line, "db"), "2");
        assert_eq!(field(line, "multi"), "-1");
        assert_eq!(field(line, "argv-mem"), "10");
        assert_eq!(field(line, "events"), "r");
        assert_eq!(field(line, "cmd"), "client|list");
        assert_eq!(field(line, "user"), "default");
        assert_eq!(field(line, "redir"), "-1");
        assert_eq!(field(line, "resp"), "2");
        assert_eq!(field(line, "lib-name"), "");
        assert_eq!(field(line, "lib-ver"), "");
    }

    #[test]
    fn client_list_filters() {
        let mut h = Harness::new();
        let mut h2 = Harness::connect(Arc::clone(&h.server));
        h2.run(&["PING"]);
        let (id1, id2) = (h.conn.id, h2.conn.id);
        let ids = |text: String| -> Vec<String> {
            text.lines().map(|l| field(l, "id")).collect::<Vec<_>>()
        };
        let all = ids(list_text(h.run(&["CLIENT", "LIST"])));
        assert_eq!(all, vec![id1.to_string(), id2.to_string()]);
        assert_eq!(
            ids(list_text(h.run(&["CLIENT", "LIST", "TYPE", "NORMAL"]))),
            all
        );
        for t in ["master", "replica", "slave", "pubsub"] {
            assert_eq!(h.run(&["CLIENT", "LIST", "TYPE", t]), bulk(""), "{t}");
        }
        assert_eq!(
            h.run(&["CLIENT", "LIST", "TYPE", "foo"]),
            err("ERR Unknown client type 'foo'")
        );
        assert_eq!(
            ids(list_text(h.run(&[
                "CLIENT",
                "LIST",
                "ID",
                &id2.to_string()
            ]))),
            vec![id2.to_string()]
        );
        assert_eq!(
            ids(list_text(h.run(&[
                "CLIENT",
                "LIST",
                "id",
                &id2.to_string(),
                "999999",
                &id1.to_string(),
                &id2.to_string(),
                "0",
                "-1",
            ]))),
            vec![id2.to_string(), id1.to_string(), id2.to_string()]
        );
        assert_eq!(
            h.run(&["CLIENT", "LIST", "ID", "1", "x"]),
            err("ERR Invalid client ID")
        );
        assert_eq!(
            h.run(&["CLIENT", "LIST", "ID", "1", "TYPE", "normal"]),
            err("ERR Invalid client ID")
        );
        for bad in [
            &["CLIENT", "LIST", "TYPE"][..],
            &["CLIENT", "LIST", "ID"],
            &["CLIENT", "LIST", "foo"],
            &["CLIENT", "LIST", "TYPE", "normal", "ID", "1"],
        ] {
            assert_eq!(h.run(bad), err("ERR syntax error"), "{bad:?}");
        }
        // The other client's line shows its own last command, and no argv memory.
        let text = list_text(h.run(&["CLIENT", "LIST", "ID", &id2.to_string()]));
        assert_eq!(field(&text, "cmd"), "ping");
        assert_eq!(field(&text, "argv-mem"), "0");
    }

    #[test]
    fn client_list_is_verbatim_in_resp3() {
        let mut h = Harness::new();
        h.run(&["HELLO", "3"]);
        match h.run(&["CLIENT", "LIST"]) {
            Frame::Verbatim { format, text } => {
                assert_eq!(format, "txt");
                let text = String::from_utf8(text).expect("ascii");
                assert_eq!(field(&text, "resp"), "3");
            }
            other => panic!("{other:?}"),
        }
        match h.run(&["CLIENT", "INFO"]) {
            Frame::Verbatim { format, text } => {
                assert_eq!(format, "txt");
                assert!(text.ends_with(b"\n"));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn client_info_shows_own_state() {
        let mut h = Harness::new();
        let text = list_text(h.run(&["CLIENT", "INFO"]));
        assert!(text.ends_with('\n'));
        assert_eq!(text.lines().count(), 1);
        assert_eq!(field(&text, "cmd"), "client|info");
        assert_eq!(field(&text, "argv-mem"), "10");
        assert_eq!(field(&text, "id"), h.conn.id.to_string());
        h.run(&["CLIENT", "NO-EVICT", "on"]);
        assert_eq!(field(&list_text(h.run(&["CLIENT", "INFO"])), "flags"), "e");
        h.run(&["CLIENT", "NO-TOUCH", "on"]);
        assert_eq!(field(&list_text(h.run(&["CLIENT", "INFO"])), "flags"), "eT");
        h.run(&["CLIENT", "NO-EVICT", "off"]);
        assert_eq!(field(&list_text(h.run(&["CLIENT", "INFO"])), "flags"), "T");
        h.run(&["CLIENT", "SETINFO", "LIB-NAME", "redis-py"]);
        h.run(&["CLIENT", "SETINFO", "lib-ver", "5.0.1"]);
        let text = list_text(h.run(&["CLIENT", "INFO"]));
        assert_eq!(field(&text, "lib-name"), "redis-py");
        assert_eq!(field(&text, "lib-ver"), "5.0.1");
    }

    #[test]
    fn client_list_line_for_other_code() {
        let h = Harness::new();
        let now = larder_engine::now_ms();
        let line = client_list_line(&h.server, &h.conn.handle, now);
        assert!(!line.ends_with('\n'));
        assert_eq!(field(&line, "cmd"), "NULL");
        assert_eq!(field(&line, "flags"), "N");
        let later = client_list_line(&h.server, &h.conn.handle, now + 5_500);
        assert_eq!(field(&later, "age"), "5");
        assert_eq!(field(&later, "idle"), "5");
    }

    /// A registered client created `age_ms` ago.
    fn old_client(server: &Server, age_ms: u64) -> Arc<ClientHandle> {
        let now = larder_engine::now_ms();
        let h = Arc::new(ClientHandle {
            id: server.clients.next_id(),
            addr: "10.0.0.1:5000".into(),
            laddr: "10.0.0.2:6379".into(),
            fd: 9,
            created_ms: now - age_ms,
            last_interaction_ms: AtomicU64::new(now - age_ms),
            db: AtomicUsize::new(0),
            resp: AtomicU8::new(2),
            last_command: AtomicUsize::new(usize::MAX),
            query_buf_bytes: AtomicUsize::new(0),
            output_buf_bytes: AtomicUsize::new(0),
            names: Mutex::new(ClientNames::default()),
            killed: AtomicBool::new(false),
            no_evict: AtomicBool::new(false),
            no_touch: AtomicBool::new(false),
            waker: None,
        });
        server.clients.register(Arc::clone(&h));
        h
    }

    #[test]
    fn client_kill_new_form() {
        let mut h = Harness::new();
        let h2 = Harness::connect(Arc::clone(&h.server));
        let old = old_client(&h.server, 100_000);
        let id2 = h2.conn.id.to_string();
        assert_eq!(h.run(&["CLIENT", "KILL", "ID", "999999"]), int(0));
        assert_eq!(h.run(&["CLIENT", "KILL", "TYPE", "pubsub"]), int(0));
        assert_eq!(h.run(&["CLIENT", "KILL", "ADDR", "1.2.3.4:5"]), int(0));
        assert_eq!(h.run(&["CLIENT", "KILL", "MAXAGE", "1000"]), int(0));
        // The caller is skipped by default.
        assert_eq!(
            h.run(&["CLIENT", "KILL", "ID", &h.conn.id.to_string()]),
            int(0)
        );
        assert!(!h.conn.close_after_reply);
        assert_eq!(h.run(&["CLIENT", "KILL", "MAXAGE", "50"]), int(1));
        assert!(old.killed.load(Ordering::Relaxed));
        assert_eq!(h.run(&["CLIENT", "KILL", "ID", &id2]), int(1));
        assert!(h2.conn.handle.killed.load(Ordering::Relaxed));
        // Killed clients are gone: not listed, not killed twice.
        assert_eq!(h.run(&["CLIENT", "KILL", "ID", &id2]), int(0));
        let text = list_text(h.run(&["CLIENT", "LIST"]));
        assert_eq!(text.lines().count(), 1);
        assert!(!h.conn.handle.killed.load(Ordering::Relaxed));
    }

    #[test]
    fn client_kill_filters_combine() {
        let mut h = Harness::new();
        let a = old_client(&h.server, 0);
        let b = old_client(&h.server, 0);
        let h2 = Harness::connect(Arc::clone(&h.server));
        // ADDR and LADDR must both match; a's id rules out b.
        assert_eq!(
            h.run(&[
                "CLIENT",
                "KILL",
                "addr",
                "10.0.0.1:5000",
                "laddr",
                "10.0.0.2:6379",
                "id",
                &a.id.to_string(),
            ]),
            int(1)
        );
        assert!(a.killed.load(Ordering::Relaxed));
        assert!(!b.killed.load(Ordering::Relaxed));
        assert_eq!(
            h.run(&[
                "CLIENT",
                "KILL",
                "LADDR",
                "10.0.0.2:6379",
                "USER",
                "default"
            ]),
            int(1)
        );
        assert!(b.killed.load(Ordering::Relaxed));
        assert!(!h2.conn.handle.killed.load(Ordering::Relaxed));
        assert_eq!(
            h.run(&["CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes"]),
            int(1)
        );
        assert!(h2.conn.handle.killed.load(Ordering::Relaxed));
        assert!(!h.conn.close_after_reply);
        // Killing yourself replies first, then closes.
        assert_eq!(
            h.run(&["CLIENT", "KILL", "TYPE", "normal", "SKIPME", "no"]),
            int(1)
        );
        assert!(h.conn.close_after_reply);
        assert!(!h.conn.handle.killed.load(Ordering::Relaxed));
    }

    #[test]
    fn client_kill_old_form() {
        let mut h = Harness::new();
        let other = old_client(&h.server, 0);
        assert_eq!(
            h.run(&["CLIENT", "KILL", "1.2.3.4:5"]),
            err("ERR No such client")
        );
        // A lone argument is an address, even if it looks like a filter name.
        assert_eq!(h.run(&["CLIENT", "KILL", "id"]), err("ERR No such client"));
        assert_eq!(h.run(&["CLIENT", "KILL", "10.0.0.1:5000"]), ok());
        assert!(other.killed.load(Ordering::Relaxed));
        assert!(!h.conn.close_after_reply);
        // The old form may kill the caller (harness clients share the address 127.0.0.1:0).
        assert_eq!(h.run(&["CLIENT", "KILL", "127.0.0.1:0"]), ok());
        assert!(h.conn.close_after_reply);
    }

    #[test]
    fn client_kill_errors() {
        let mut h = Harness::new();
        let cases: &[(&[&str], &str)] = &[
            (&["ID", "x"], "ERR client-id should be greater than 0"),
            (&["ID", "0"], "ERR client-id should be greater than 0"),
            (&["ID", "-5"], "ERR client-id should be greater than 0"),
            (&["TYPE", "foo"], "ERR Unknown client type 'foo'"),
            (&["USER", "nobody"], "ERR No such user 'nobody'"),
            (&["SKIPME", "maybe"], "ERR syntax error"),
            (&["foo", "bar"], "ERR syntax error"),
            (&["ID", "1", "foo"], "ERR syntax error"),
            (
                &["MAXAGE", "x"],
                "ERR maxage is not an integer or out of range",
            ),
            (&["MAXAGE", "0"], "ERR maxage should be greater than 0"),
            (&["MAXAGE", "-3"], "ERR maxage should be greater than 0"),
            // Filters are checked in order: the bad ID is reported before the bad type.
            (
                &["ID", "0", "TYPE", "foo"],
                "ERR client-id should be greater than 0",
            ),
        ];
        for (args, expected) in cases {
            let mut argv = vec!["CLIENT", "KILL"];
            argv.extend_from_slice(args);
            assert_eq!(h.run(&argv), err(expected), "{args:?}");
        }
        assert!(!h.conn.close_after_reply);
    }

    #[test]
    fn client_setinfo() {
        let mut h = Harness::new();
        assert_eq!(h.run(&["CLIENT", "SETINFO", "lib-name", "jedis"]), ok());
        assert_eq!(h.run(&["CLIENT", "SETINFO", "LIB-VER", "5.0"]), ok());
        {
            let names = h.conn.handle.names.lock();
            assert_eq!(
                (names.lib_name.as_str(), names.lib_ver.as_str()),
                ("jedis", "5.0")
            );
        }
        assert_eq!(
            h.run(&["CLIENT", "SETINFO", "LIB-NAME", "a b"]),
            err("ERR LIB-NAME cannot contain spaces, newlines or special characters.")
        );
        assert_eq!(
            h.run(&["CLIENT", "SETINFO", "lib-ver", "1\n2"]),
            err("ERR lib-ver cannot contain spaces, newlines or special characters.")
        );
        assert_eq!(
            h.run(&["CLIENT", "SETINFO", "foo", "x"]),
            err("ERR Unrecognized option 'foo'")
        );
        assert_eq!(h.run(&["CLIENT", "SETINFO", "lib-name", ""]), ok());
        assert_eq!(h.conn.handle.names.lock().lib_name, "");
        assert_eq!(h.conn.handle.names.lock().lib_ver, "5.0");
    }

    #[test]
    fn client_reply_off_and_on() {
        let mut h = Harness::new();
        assert_eq!(
            h.run(&["CLIENT", "REPLY", "maybe"]),
            err("ERR syntax error")
        );
        assert!(h.run_raw(&[b"CLIENT", b"REPLY", b"OFF"]).is_empty());
        assert_eq!(h.conn.reply_mode, ReplyMode::Off);
        assert!(h.run_raw(&[b"PING"]).is_empty());
        assert!(h.run_raw(&[b"NOSUCHCOMMAND"]).is_empty());
        // SKIP while replies are off changes nothing.
        assert!(h.run_raw(&[b"CLIENT", b"REPLY", b"SKIP"]).is_empty());
        assert_eq!(h.conn.reply_mode, ReplyMode::Off);
        assert_eq!(h.run(&["CLIENT", "REPLY", "on"]), ok());
        assert_eq!(h.run(&["PING"]), simple("PONG"));
        assert!(h.run_raw(&[b"client", b"reply", b"skip"]).is_empty());
    }

    /// CLIENT REPLY SKIP must drop the reply of the command after it. The executor's
    /// `finish_reply` consumes `SkipNext` at the end of the CLIENT REPLY SKIP command itself,
    /// so this needs the exec.rs change described in the family report.
    #[test]
    fn client_reply_skip_skips_next_reply_only() {
        let mut h = Harness::new();
        assert!(h.run_raw(&[b"CLIENT", b"REPLY", b"SKIP"]).is_empty());
        assert!(h.run_raw(&[b"PING", b"1"]).is_empty());
        assert_eq!(h.run(&["PING", "2"]), bulk("2"));
        // SKIP twice in a row skips one command after the second.
        assert!(h.run_raw(&[b"CLIENT", b"REPLY", b"SKIP"]).is_empty());
        assert!(h.run_raw(&[b"CLIENT", b"REPLY", b"SKIP"]).is_empty());
        assert!(h.run_raw(&[b"PING", b"3"]).is_empty());
        assert_eq!(h.run(&["PING", "4"]), bulk("4"));
        // Errors are skipped too.
        assert!(h.run_raw(&[b"CLIENT", b"REPLY", b"SKIP"]).is_empty());
        assert!(h.run_raw(&[b"NOSUCHCOMMAND"]).is_empty());
        assert_eq!(h.run(&["PING"]), simple("PONG"));
        // CLIENT REPLY ON cancels a pending skip and replies.
        assert!(h.run_raw(&[b"CLIENT", b"REPLY", b"SKIP"]).is_empty());
        assert_eq!(h.run(&["CLIENT", "REPLY", "ON"]), ok());
        assert_eq!(h.run(&["PING"]), simple("PONG"));
        // CLIENT REPLY OFF after SKIP stays off.
        assert!(h.run_raw(&[b"CLIENT", b"REPLY", b"SKIP"]).is_empty());
        assert!(h.run_raw(&[b"CLIENT", b"REPLY", b"OFF"]).is_empty());
        assert!(h.run_raw(&[b"PING"]).is_empty());
        assert!(h.run_raw(&[b"PING"]).is_empty());
    }

    #[test]
    fn client_no_evict_and_no_touch() {
        let mut h = Harness::new();
        for sub in ["NO-EVICT", "NO-TOUCH"] {
            assert_eq!(h.run(&["CLIENT", sub, "ON"]), ok());
            assert_eq!(h.run(&["CLIENT", sub, "maybe"]), err("ERR syntax error"));
            assert_eq!(
                h.run(&["CLIENT", sub]),
                err(&format!(
                    "ERR wrong number of arguments for 'client|{}' command",
                    sub.to_ascii_lowercase()
                ))
            );
        }
        assert!(h.conn.handle.no_evict.load(Ordering::Relaxed));
        assert!(h.conn.handle.no_touch.load(Ordering::Relaxed));
        assert_eq!(h.run(&["CLIENT", "no-evict", "off"]), ok());
        assert_eq!(h.run(&["CLIENT", "no-touch", "Off"]), ok());
        assert!(!h.conn.handle.no_evict.load(Ordering::Relaxed));
        assert!(!h.conn.handle.no_touch.load(Ordering::Relaxed));
    }

    #[test]
    fn client_pause_and_unpause() {
        let mut h = Harness::new();
        let pause = |h: &Harness| {
            (
                h.server.pause.until_ms.load(Ordering::Relaxed),
                h.server.pause.mode.load(Ordering::Relaxed),
            )
        };
        let before = larder_engine::now_ms();
        assert_eq!(h.run(&["CLIENT", "PAUSE", "100000", "WRITE"]), ok());
        let (until, mode) = pause(&h);
        assert!(until >= before + 100_000 && until <= larder_engine::now_ms() + 100_000);
        assert_eq!(mode, Pause::WRITE);
        // Writes wait; reads run.
        let mut out = larder_resp::ReplyBuf::new(Protocol::Resp2);
        let set: &[&[u8]] = &[b"SET", b"k", b"v"];
        assert_eq!(
            execute(&h.server, &mut h.conn, set, &mut out),
            Outcome::Paused { until_ms: until }
        );
        assert!(out.is_empty());
        assert_eq!(h.run(&["GET", "k"]), Frame::Null);
        // A shorter pause keeps the later end but takes the stricter mode.
        assert_eq!(h.run(&["CLIENT", "PAUSE", "10", "all"]), ok());
        assert_eq!(pause(&h), (until, Pause::ALL));
        // Under ALL, UNPAUSE is held like everything else (as in Redis): only the timeout
        // ends the pause. Simulate the timeout, then UNPAUSE runs.
        let unpause: &[&[u8]] = &[b"CLIENT", b"UNPAUSE"];
        assert_eq!(
            execute(&h.server, &mut h.conn, unpause, &mut out),
            Outcome::Paused { until_ms: until }
        );
        h.server.pause.until_ms.store(0, Ordering::Relaxed);
        assert_eq!(h.run(&["CLIENT", "UNPAUSE"]), ok());
        assert_eq!(pause(&h).0, 0);
        assert_eq!(h.run(&["SET", "k", "v"]), ok());
        // Once a pause is over, a new one replaces it.
        assert_eq!(h.run(&["CLIENT", "PAUSE", "50000", "WRITE"]), ok());
        assert_eq!(pause(&h).1, Pause::WRITE);
        h.run(&["CLIENT", "UNPAUSE"]);
        assert_eq!(h.run(&["CLIENT", "PAUSE", "0"]), ok());
        assert_eq!(pause(&h).0, 0);
        assert_eq!(h.run(&["SET", "k", "v"]), ok());
        assert_eq!(h.run(&["CLIENT", "PAUSE", "9223372036854775807"]), ok());
        let (until, mode) = pause(&h);
        assert!(until > i64::MAX as u64 && mode == Pause::ALL);
        h.server.pause.until_ms.store(0, Ordering::Relaxed);
    }

    #[test]
    fn client_pause_errors() {
        let mut h = Harness::new();
        let cases: &[(&[&str], &str)] = &[
            (&["-1"], "ERR timeout is negative"),
            (&["x"], "ERR timeout is not an integer or out of range"),
            (&["1.5"], "ERR timeout is not an integer or out of range"),
            (&["10", "foo"], "ERR CLIENT PAUSE mode must be WRITE or ALL"),
            // The mode is checked before the timeout.
            (&["x", "foo"], "ERR CLIENT PAUSE mode must be WRITE or ALL"),
        ];
        for (args, expected) in cases {
            let mut argv = vec!["CLIENT", "PAUSE"];
            argv.extend_from_slice(args);
            assert_eq!(h.run(&argv), err(expected), "{args:?}");
        }
        assert_eq!(
            h.run(&["client", "Pause", "10", "write", "x"]),
            err(
                "ERR unknown subcommand or wrong number of arguments for 'Pause'. Try CLIENT HELP."
            )
        );
        assert_eq!(
            h.run(&["CLIENT", "PAUSE"]),
            err("ERR wrong number of arguments for 'client|pause' command")
        );
        assert_eq!(
            h.run(&["CLIENT", "UNPAUSE", "x"]),
            err("ERR wrong number of arguments for 'client|unpause' command")
        );
        assert_eq!(h.server.pause.until_ms.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn client_help() {
        let mut h = Harness::new();
        let Frame::Array(lines) = h.run(&["CLIENT", "HELP"]) else {
            panic!("help is an array");
        };
        assert_eq!(
            lines.first(),
            Some(&simple(
                "CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:"
            ))
        );
        assert_eq!(lines.last(), Some(&simple("    Prints this help.")));
        assert!(lines.iter().all(|l| matches!(l, Frame::Simple(_))));
        // Every subcommand is documented.
        for sub in CLIENT_SUBCOMMANDS {
            let upper = sub.name.to_ascii_uppercase();
            assert!(
                lines.iter().any(|l| l
                    .as_str()
                    .is_some_and(|s| s == upper || s.starts_with(&format!("{upper} ")))),
                "{upper}"
            );
        }
        assert_eq!(
            h.run(&["CLIENT", "HELP", "x"]),
            err("ERR wrong number of arguments for 'client|help' command")
        );
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
            COMMANDS.len() - 1 + CLIENT_SUBCOMMANDS.len()
        );
        for (name, spec) in registry.all() {
            assert_eq!(*name, name.to_ascii_lowercase());
            assert!(!spec.summary.is_empty() && !spec.since.is_empty(), "{name}");
            assert_eq!(spec.keys, KeySpec::NONE, "{name}");
            assert_eq!(spec.group, Group::Connection, "{name}");
        }
    }
}
