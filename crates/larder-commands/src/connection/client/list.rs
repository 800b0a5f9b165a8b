//! CLIENT LIST, CLIENT INFO and CLIENT KILL: each client as one line in Redis's format, and
//! KILL's filters over the same list. Apart from `client.rs` because these three share the
//! client classes and the listing rules, which no other subcommand needs.

use std::fmt::Write as _;
use std::sync::atomic::Ordering;

use crate::args::parse_i64;
use crate::error::{self, Error, Result};
use crate::exec::Cmd;
use crate::state::{ClientHandle, Server};
use crate::tracking;

const NO_SUCH_CLIENT: &str = "ERR No such client";
const INVALID_CLIENT_ID: &str = "ERR Invalid client ID";
const CLIENT_ID_NOT_POSITIVE: &str = "ERR client-id should be greater than 0";
const MAXAGE_NOT_INTEGER: &str = "ERR maxage is not an integer or out of range";
const MAXAGE_NOT_POSITIVE: &str = "ERR maxage should be greater than 0";

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
pub(super) fn client_list(c: &mut Cmd<'_>) -> Result<()> {
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
pub(super) fn listed(h: &ClientHandle, own_id: u64) -> bool {
    h.id == own_id || !h.killed.load(Ordering::Acquire)
}

/// CLIENT INFO
pub(super) fn client_info(c: &mut Cmd<'_>) -> Result<()> {
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
pub(super) fn client_kill(c: &mut Cmd<'_>) -> Result<()> {
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
