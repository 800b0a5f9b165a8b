//! CLIENT and its subcommands: ID, SETNAME, GETNAME, LIST, INFO, KILL, SETINFO, REPLY,
//! NO-EVICT, NO-TOUCH, PAUSE, UNPAUSE and HELP. What a connection is and what it shows
//! (`ClientHandle`, its flags and counters) lives in `state`; HELLO shares the name rules
//! (`set_client_name`) with CLIENT SETNAME through the parent module.

use std::fmt::Write as _;
use std::sync::atomic::Ordering;

use super::{cmd, set_client_name, valid_client_attr};
use crate::args::parse_i64;
use crate::error::{self, Error, Result};
use crate::exec::{Cmd, ReplyMode};
use crate::state::{ClientHandle, Pause, Server};
use crate::table::{flags::*, CommandSpec};
use crate::tracking;

const NO_SUCH_CLIENT: &str = "ERR No such client";
const INVALID_CLIENT_ID: &str = "ERR Invalid client ID";
const CLIENT_ID_NOT_POSITIVE: &str = "ERR client-id should be greater than 0";
const MAXAGE_NOT_INTEGER: &str = "ERR maxage is not an integer or out of range";
const MAXAGE_NOT_POSITIVE: &str = "ERR maxage should be greater than 0";
const PAUSE_MODE: &str = "ERR CLIENT PAUSE mode must be WRITE or ALL";
const TIMEOUT_NEGATIVE: &str = "ERR timeout is negative";

/// Flags of most CLIENT subcommands.
const CLIENT_SUB: u32 = NOSCRIPT | LOADING | STALE;

#[rustfmt::skip]
pub(super) static CLIENT_SUBCOMMANDS: &[CommandSpec] = &[
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
    cmd("unblock", -3, ADMIN | CLIENT_SUB, "Unblock a client blocked in a blocking command from a different connection", "5.0.0", client_unblock),
    cmd("tracking", -3, CLIENT_SUB, "Enable or disable server assisted client side caching support", "6.0.0", client_tracking),
    cmd("caching", 3, CLIENT_SUB, "Instruct the server about tracking or not keys in the next request", "6.0.0", client_caching),
    cmd("getredir", 2, CLIENT_SUB, "Get tracking notifications redirection client ID if any", "6.0.0", client_getredir),
    cmd("trackinginfo", 2, CLIENT_SUB, "Return information about server assisted client side caching for the current connection", "6.2.0", client_trackinginfo),
    cmd("help", 2, LOADING | STALE, "Show helpful text about the different subcommands", "5.0.0", client_help),
];

/// The CLIENT container; the registry runs its subcommands, never this.
pub(super) fn client(_c: &mut Cmd<'_>) -> Result<()> {
    Err(Error::Static(error::SYNTAX))
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

    /// The class of a connection: a replica attached to this server, the master's stream
    /// on a replica, or a normal client (larder counts subscribers as normal clients).
    fn of(server: &crate::Server, handle: &ClientHandle) -> ClientType {
        match server.replication.get() {
            Some(r) if r.is_replica(handle.id) => ClientType::Replica,
            Some(r) if r.is_master_link(handle.id) => ClientType::Master,
            _ => ClientType::Normal,
        }
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
                if filter_type.is_none_or(|t| ClientType::of(c.server, h) == t) {
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
    if server
        .replication
        .get()
        .is_some_and(|r| r.is_replica(handle.id))
    {
        flags.push('S');
    }
    if server
        .replication
        .get()
        .is_some_and(|r| r.is_master_link(handle.id))
    {
        flags.push('M');
    }
    if server.monitors.contains(handle.id) {
        flags.push('O');
    }
    if server.blocking.is_blocked(handle.id) {
        flags.push('b');
    }
    let tracking = handle.tracking.get();
    for (bit, letter) in [
        (tracking::flag::ON, 't'),
        (tracking::flag::BROKEN_REDIR, 'R'),
        (tracking::flag::BCAST, 'B'),
    ] {
        if tracking & bit != 0 {
            flags.push(letter);
        }
    }
    let redir = if tracking & tracking::flag::ON != 0 {
        handle.tracking.redirect() as i64
    } else {
        -1
    };
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
    let omem = handle.output_bytes();
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
         omem={} tot-mem={} events={} cmd={} user={} redir={} resp={} lib-name={} \
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
        handle.user.lock(),
        redir,
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
    user: Option<&'a [u8]>,
    max_age_s: Option<u64>,
    skip_me: bool,
}

impl KillFilter<'_> {
    fn matches(&self, server: &crate::Server, h: &ClientHandle, own_id: u64, now_ms: u64) -> bool {
        self.addr.is_none_or(|a| a == h.addr.as_bytes())
            && self.laddr.is_none_or(|a| a == h.laddr.as_bytes())
            && self.id.is_none_or(|id| id == h.id)
            && self
                .client_type
                .is_none_or(|t| t == ClientType::of(server, h))
            && self.user.is_none_or(|u| u == h.user.lock().as_bytes())
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
        user: None,
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
                    if c.server.acl.user(value).is_none() {
                        return Err(Error::Owned(format!(
                            "ERR No such user '{}'",
                            String::from_utf8_lossy(value)
                        )));
                    }
                    filter.user = Some(value);
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
        if !listed(&h, c.conn.id) || !filter.matches(c.server, &h, c.conn.id, c.now_ms) {
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
    c.server.resume_paused();
    c.out.simple("OK");
    Ok(())
}

/// CLIENT UNBLOCK client-id [TIMEOUT|ERROR]
fn client_unblock(c: &mut Cmd<'_>) -> Result<()> {
    if c.args.remaining() > 2 {
        let typed = String::from_utf8_lossy(c.args.argv()[1]);
        return Err(Error::Owned(format!(
            "ERR unknown subcommand or wrong number of arguments for '{typed}'. Try CLIENT HELP."
        )));
    }
    let id = parse_i64(c.args.next_arg()?).ok_or(Error::Static(error::NOT_INTEGER))?;
    let how = match c.args.opt() {
        None => crate::blocking::Unblock::Timeout,
        Some(w) if w.eq_ignore_ascii_case(b"timeout") => crate::blocking::Unblock::Timeout,
        Some(w) if w.eq_ignore_ascii_case(b"error") => crate::blocking::Unblock::Error,
        Some(_) => {
            return Err(Error::Static(
                "ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR",
            ))
        }
    };
    let unblocked = u64::try_from(id).is_ok_and(|id| c.server.blocking.unblock(id, how));
    c.out.int(i64::from(unblocked));
    Ok(())
}

/// Whether one prefix starts the other (Redis's `stringCheckPrefix`).
fn prefixes_overlap(a: &[u8], b: &[u8]) -> bool {
    let n = a.len().min(b.len());
    a[..n] == b[..n]
}

/// CLIENT TRACKING ON|OFF [REDIRECT id] [BCAST] [PREFIX prefix ...] [OPTIN] [OPTOUT]
/// [NOLOOP], checked in Redis 7.0's order: the options first, then ON's compatibility rules.
fn client_tracking(c: &mut Cmd<'_>) -> Result<()> {
    let mode = c.args.next_arg()?;
    let rest = c.args.rest();
    let mut redirect: Option<u64> = None;
    let mut target = None;
    let mut options = 0u32;
    let mut prefixes: Vec<&[u8]> = Vec::new();
    let mut j = 0;
    while j < rest.len() {
        let opt = rest[j];
        let more = rest.len() - 1 - j > 0;
        if opt.eq_ignore_ascii_case(b"redirect") && more {
            j += 1;
            if redirect.is_some() {
                return Err(Error::Static(
                    "ERR A client can only redirect to a single other client",
                ));
            }
            let id = parse_i64(rest[j]).ok_or(Error::Static(error::NOT_INTEGER))?;
            let found = u64::try_from(id)
                .ok()
                .and_then(|id| c.server.clients.get(id))
                .filter(|h| listed(h, c.conn.id));
            let Some(found) = found else {
                return Err(Error::Static(
                    "ERR The client ID you want redirect to does not exist",
                ));
            };
            redirect = Some(found.id);
            target = Some(found);
        } else if opt.eq_ignore_ascii_case(b"bcast") {
            options |= tracking::flag::BCAST;
        } else if opt.eq_ignore_ascii_case(b"optin") {
            options |= tracking::flag::OPTIN;
        } else if opt.eq_ignore_ascii_case(b"optout") {
            options |= tracking::flag::OPTOUT;
        } else if opt.eq_ignore_ascii_case(b"noloop") {
            options |= tracking::flag::NOLOOP;
        } else if opt.eq_ignore_ascii_case(b"prefix") && more {
            j += 1;
            prefixes.push(rest[j]);
        } else {
            return Err(Error::Static(error::SYNTAX));
        }
        j += 1;
    }
    let handle = std::sync::Arc::clone(&c.conn.handle);
    if mode.eq_ignore_ascii_case(b"on") {
        let current = handle.tracking.get();
        let bcast = options & tracking::flag::BCAST != 0;
        if !bcast && !prefixes.is_empty() {
            return Err(Error::Static(
                "ERR PREFIX option requires BCAST mode to be enabled",
            ));
        }
        if current & tracking::flag::ON != 0 && (current & tracking::flag::BCAST != 0) != bcast {
            return Err(Error::Static(
                "ERR You can't switch BCAST mode on/off before disabling tracking for this client, and then re-enabling it with a different mode.",
            ));
        }
        let optin = options & tracking::flag::OPTIN != 0;
        let optout = options & tracking::flag::OPTOUT != 0;
        if bcast && (optin || optout) {
            return Err(Error::Static(
                "ERR OPTIN and OPTOUT are not compatible with BCAST",
            ));
        }
        if optin && optout {
            return Err(Error::Static(
                "ERR You can't specify both OPTIN mode and OPTOUT mode",
            ));
        }
        if (optin && current & tracking::flag::OPTOUT != 0)
            || (optout && current & tracking::flag::OPTIN != 0)
        {
            return Err(Error::Static(
                "ERR You can't switch OPTIN/OPTOUT mode before disabling tracking for this client, and then re-enabling it with a different mode.",
            ));
        }
        if bcast {
            let existing = c.server.tracking.prefixes_of(handle.id);
            for (i, p) in prefixes.iter().enumerate() {
                if let Some(e) = existing.iter().find(|e| prefixes_overlap(e, p)) {
                    return Err(Error::Owned(format!(
                        "ERR Prefix '{}' overlaps with an existing prefix '{}'. Prefixes for a single client must not overlap.",
                        String::from_utf8_lossy(p),
                        String::from_utf8_lossy(e)
                    )));
                }
                if let Some(q) = prefixes[i + 1..].iter().find(|q| prefixes_overlap(p, q)) {
                    return Err(Error::Owned(format!(
                        "ERR Prefix '{}' overlaps with another provided prefix '{}'. Prefixes for a single client must not overlap.",
                        String::from_utf8_lossy(p),
                        String::from_utf8_lossy(q)
                    )));
                }
            }
        }
        let redirect = redirect.unwrap_or(0);
        c.server
            .tracking
            .enable(&handle, redirect, target, options, &prefixes);
        // A target that closed while this ran may have missed telling the consumer.
        if redirect != 0 && c.server.clients.get(redirect).is_none() {
            c.server.tracking.target_gone(handle.id, redirect);
        }
    } else if mode.eq_ignore_ascii_case(b"off") {
        if handle.tracking.on() {
            c.server.tracking.disable(&handle);
        }
    } else {
        return Err(Error::Static(error::SYNTAX));
    }
    c.out.simple("OK");
    Ok(())
}

/// CLIENT CACHING YES|NO
fn client_caching(c: &mut Cmd<'_>) -> Result<()> {
    let opt = c.args.next_arg()?;
    let f = c.conn.handle.tracking.get();
    if f & tracking::flag::ON == 0 {
        return Err(Error::Static(
            "ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN or OPTOUT mode enabled",
        ));
    }
    if opt.eq_ignore_ascii_case(b"yes") {
        if f & tracking::flag::OPTIN == 0 {
            return Err(Error::Static(
                "ERR CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode.",
            ));
        }
    } else if opt.eq_ignore_ascii_case(b"no") {
        if f & tracking::flag::OPTOUT == 0 {
            return Err(Error::Static(
                "ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode.",
            ));
        }
    } else {
        return Err(Error::Static(error::SYNTAX));
    }
    c.conn.handle.tracking.set_caching();
    c.out.simple("OK");
    Ok(())
}

/// CLIENT GETREDIR
fn client_getredir(c: &mut Cmd<'_>) -> Result<()> {
    let t = &c.conn.handle.tracking;
    c.out.int(if t.on() { t.redirect() as i64 } else { -1 });
    Ok(())
}

/// CLIENT TRACKINGINFO
fn client_trackinginfo(c: &mut Cmd<'_>) -> Result<()> {
    let f = c.conn.handle.tracking.get();
    let on = f & tracking::flag::ON != 0;
    let mut words: Vec<&str> = vec![if on { "on" } else { "off" }];
    let caching = f & tracking::flag::CACHING != 0;
    for (bit, word, extra) in [
        (tracking::flag::BCAST, "bcast", None),
        (tracking::flag::OPTIN, "optin", Some("caching-yes")),
        (tracking::flag::OPTOUT, "optout", Some("caching-no")),
        (tracking::flag::NOLOOP, "noloop", None),
        (tracking::flag::BROKEN_REDIR, "broken_redirect", None),
    ] {
        if f & bit != 0 {
            words.push(word);
            if let (true, Some(extra)) = (caching, extra) {
                words.push(extra);
            }
        }
    }
    c.out.map(3);
    c.out.bulk(b"flags");
    c.out.set(words.len());
    for w in &words {
        c.out.bulk(w.as_bytes());
    }
    c.out.bulk(b"redirect");
    c.out.int(if on {
        c.conn.handle.tracking.redirect() as i64
    } else {
        -1
    });
    c.out.bulk(b"prefixes");
    let prefixes = c.server.tracking.prefixes_of(c.conn.id);
    c.out.array(prefixes.len());
    for p in &prefixes {
        c.out.bulk(p);
    }
    Ok(())
}

/// CLIENT HELP
fn client_help(c: &mut Cmd<'_>) -> Result<()> {
    const HELP: &[&str] = &[
        "CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "CACHING (YES|NO)",
        "    Enable/disable tracking of the keys for next command in OPTIN/OPTOUT modes.",
        "GETREDIR",
        "    Return the client ID we are redirecting to when tracking is enabled.",
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
        "UNBLOCK <clientid> [TIMEOUT|ERROR]",
        "    Unblock the specified blocked client.",
        "SETINFO <option> <value>",
        "    Set client meta attr. Options are:",
        "    * LIB-NAME: the client lib name.",
        "    * LIB-VER: the client lib version.",
        "TRACKING (ON|OFF) [REDIRECT <id>] [BCAST] [PREFIX <prefix> [...]]",
        "         [OPTIN] [OPTOUT] [NOLOOP]",
        "    Control server assisted client side caching.",
        "TRACKINGINFO",
        "    Report tracking status for the current connection.",
        "NO-EVICT (ON|OFF)",
        "    Protect current client connection from eviction.",
        "NO-TOUCH (ON|OFF)",
        "    Will not touch LRU/LFU stats when this mode is on.",
        "HELP",
        "    Prints this help.",
    ];
    crate::server::reply_help(c, HELP)
}

#[cfg(test)]
mod tests;
