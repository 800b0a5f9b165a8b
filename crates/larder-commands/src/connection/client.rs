//! CLIENT and its subcommands: ID, SETNAME, GETNAME, LIST, INFO, KILL, SETINFO, REPLY,
//! NO-EVICT, NO-TOUCH, PAUSE, UNPAUSE, UNBLOCK, the tracking subcommands and HELP. What a
//! connection is and what it shows (`ClientHandle`, its flags and counters) lives in `state`;
//! HELLO shares the name rules (`set_client_name`) with CLIENT SETNAME through the parent
//! module.
//!
//! This file holds the subcommand table and the small subcommands; LIST, INFO and KILL are
//! in `client/list.rs`, TRACKING and its companions in `client/tracking.rs`.

mod list;
mod tracking;

pub use list::client_list_line;

use std::sync::atomic::Ordering;

use super::{cmd, set_client_name, valid_client_attr};
use crate::args::parse_i64;
use crate::error::{self, Error, Result};
use crate::exec::{Cmd, ReplyMode};
use crate::state::Pause;
use crate::table::{flags::*, CommandSpec};
use list::{client_info, client_kill, client_list};
use tracking::{client_caching, client_getredir, client_tracking, client_trackinginfo};

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
