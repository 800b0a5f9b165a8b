//! Client-side caching's subcommands: CLIENT TRACKING, CACHING, GETREDIR and TRACKINGINFO.
//! Apart from `client.rs` because they only parse and report a connection's tracking state;
//! the invalidation itself lives in `crate::tracking`.

use crate::args::parse_i64;
use crate::error::{self, Error, Result};
use crate::exec::Cmd;
use crate::tracking;

use super::list::listed;

/// Whether one prefix starts the other (Redis's `stringCheckPrefix`).
fn prefixes_overlap(a: &[u8], b: &[u8]) -> bool {
    let n = a.len().min(b.len());
    a[..n] == b[..n]
}

/// CLIENT TRACKING ON|OFF [REDIRECT id] [BCAST] [PREFIX prefix ...] [OPTIN] [OPTOUT]
/// [NOLOOP], checked in Redis 7.0's order: the options first, then ON's compatibility rules.
pub(super) fn client_tracking(c: &mut Cmd<'_>) -> Result<()> {
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
pub(super) fn client_caching(c: &mut Cmd<'_>) -> Result<()> {
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
pub(super) fn client_getredir(c: &mut Cmd<'_>) -> Result<()> {
    let t = &c.conn.handle.tracking;
    c.out.int(if t.on() { t.redirect() as i64 } else { -1 });
    Ok(())
}

/// CLIENT TRACKINGINFO
pub(super) fn client_trackinginfo(c: &mut Cmd<'_>) -> Result<()> {
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
