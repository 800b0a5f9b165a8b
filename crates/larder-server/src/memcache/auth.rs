//! Logging in on the memcached door, as memcached 1.6 does it, against the ACL users:
//!
//! - binary SASL (`memcached -S`): LIST MECHS answers `PLAIN`; AUTH `PLAIN` with
//!   `authzid\0user\0password` answers `Authenticated` or `0x20` "Auth failure."; AUTH with
//!   no data answers `0x21` (continue) and the credentials come in STEP. Until a connection
//!   is admitted, every other request but VERSION is answered `0x20` and the connection
//!   closed, as memcached does.
//! - text (`memcached -Y`): a connection not admitted logs in with its first `set`, whose
//!   value is `<user> <password>` (`STORED`, or `CLIENT_ERROR authentication failure`);
//!   anything else is answered `CLIENT_ERROR unauthenticated`.
//!
//! Logins are always served, so a client may log in as another user even while the default
//! user needs no password; a failed one goes to ACL LOG and `auth_errors`.

use larder_commands::state::bump;
use larder_commands::ConnState;
use larder_memcache::{
    BinaryCommand, BinaryRequest, BinaryWriter, Status, StoreMode, TextRequest, TextWriter,
};

use super::{Ctx, Flow};
use crate::acl_door::Login;

/// The one mechanism served.
const MECHANISMS: &[u8] = b"PLAIN";

/// memcached's MAX_SASL_MECH_LEN: a longer mechanism name is an invalid argument.
const MECHANISM_LEN_MAX: usize = 32;

/// What ACL LOG names as the command of a failed login.
const SASL: &str = "SASL";
const TEXT_AUTH: &str = "SET";

/// Answers SASL LIST MECHS, AUTH and STEP. `started` is whether an AUTH without data left
/// the exchange waiting for STEP.
pub(super) fn sasl(
    cx: &Ctx<'_>,
    conn: &mut ConnState,
    login: &mut Login,
    started: &mut bool,
    req: &BinaryRequest<'_>,
    out: &mut Vec<u8>,
) {
    let mut w = BinaryWriter::new(out);
    let (step, mechanism, data) = match req.command {
        BinaryCommand::Sasl {
            step,
            mechanism,
            data,
        } => (step, mechanism, data),
        _ => {
            w.with_value(req, Status::SUCCESS, MECHANISMS);
            return;
        }
    };
    if mechanism.len() > MECHANISM_LEN_MAX {
        w.status(req, Status::INVALID_ARGUMENTS);
        return;
    }
    let was_started = std::mem::replace(started, false);
    let ok = if mechanism != MECHANISMS || (step && !was_started) {
        None
    } else if !step && data.is_empty() {
        *started = true;
        w.with_value(req, Status::AUTH_CONTINUE_MEMCACHED, b"");
        return;
    } else {
        plain(data)
    };
    let ok = ok.is_some_and(|(user, pass)| login.login(cx.server, conn, user, pass, SASL));
    count(cx, ok);
    if ok {
        w.with_value(req, Status::SUCCESS, b"Authenticated");
    } else {
        w.status(req, Status::AUTH_ERROR_MEMCACHED);
    }
}

/// The user and password of a PLAIN response `authzid\0authcid\0passwd` (RFC 4616); the
/// authorization identity, when given, must be the user itself.
fn plain(data: &[u8]) -> Option<(&[u8], &[u8])> {
    let mut parts = data.splitn(3, |&b| b == 0);
    let authzid = parts.next()?;
    let user = parts.next()?;
    let pass = parts.next()?;
    (authzid.is_empty() || authzid == user).then_some((user, pass))
}

/// A binary request from a connection not admitted yet: VERSION is answered, anything else
/// gets `0x20` and the connection closes (memcached's `authenticated()`).
pub(super) fn binary_refused(req: &BinaryRequest<'_>, out: &mut Vec<u8>) -> Flow {
    if let BinaryCommand::Version = req.command {
        BinaryWriter::new(out).version(req, super::stats::VERSION);
        return Flow::Continue;
    }
    BinaryWriter::new(out).status(req, Status::AUTH_ERROR_MEMCACHED);
    Flow::Close
}

/// A text request from a connection not admitted yet: a `set` logs in with its value,
/// `quit` closes, anything else is refused.
pub(super) fn text(
    cx: &Ctx<'_>,
    conn: &mut ConnState,
    login: &mut Login,
    req: &TextRequest<'_>,
    out: &mut Vec<u8>,
) -> Flow {
    let mut w = TextWriter::new(out);
    match req {
        TextRequest::Quit => Flow::Close,
        TextRequest::Store(s) if s.mode == StoreMode::Set && s.compare_cas.is_none() => {
            let mut words = s
                .data
                .split(|&b| b == b' ' || b == b'\t')
                .filter(|w| !w.is_empty());
            match (words.next(), words.next()) {
                (Some(user), Some(pass)) => {
                    let ok = login.login(cx.server, conn, user, pass, TEXT_AUTH);
                    count(cx, ok);
                    if ok {
                        w.reply(larder_memcache::TextReply::Stored);
                    } else {
                        w.client_error("authentication failure");
                    }
                }
                _ => w.client_error("bad authentication token format"),
            }
            Flow::Continue
        }
        _ => {
            w.client_error("unauthenticated");
            Flow::Continue
        }
    }
}

/// memcached's answer to a text request before login.
pub(super) fn unauthenticated(out: &mut Vec<u8>) {
    TextWriter::new(out).client_error("unauthenticated");
}

fn count(cx: &Ctx<'_>, ok: bool) {
    bump(&cx.counters.auth_cmds, 1);
    if !ok {
        bump(&cx.counters.auth_errors, 1);
    }
}

#[cfg(test)]
mod tests {
    use super::plain;

    #[test]
    fn plain_responses() {
        assert_eq!(plain(b"\0u\0p"), Some((&b"u"[..], &b"p"[..])));
        assert_eq!(plain(b"u\0u\0p\0q"), Some((&b"u"[..], &b"p\0q"[..])));
        assert_eq!(plain(b"other\0u\0p"), None);
        assert_eq!(plain(b"\0u"), None);
        assert_eq!(plain(b""), None);
        assert_eq!(plain(b"\0\0"), Some((&b""[..], &b""[..])));
    }
}
