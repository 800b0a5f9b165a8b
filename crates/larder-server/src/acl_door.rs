//! The ACL user of a connection on the memcached and HTTP doors, and the checks those doors
//! make before an operation runs: each operation is checked as its RESP equivalent (the table
//! in docs/security.md), resolved in the command registry and judged by `User::check`, so a
//! user may do on every door exactly what it may do over RESP.
//!
//! A door connection keeps its user in its `ConnState` (`user`, `acl_generation`,
//! `authenticated`) as a RESP connection does, and whether it logged in in a [`Login`]. A
//! connection that has not logged in runs as the default user, and only while that user
//! needs no password ([`Login::admitted`]).

use std::sync::Arc;

use larder_commands::acl::{self, Context, User};
use larder_commands::error::Error;
use larder_commands::{ConnState, Server};

/// Whether a connection may run anything beyond authentication.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Admission {
    /// It logged in, or the default user needs no password.
    In,
    /// It must authenticate first.
    Out,
    /// The user it logged in as was deleted or disabled: close the connection (as Redis
    /// does).
    Gone,
}

/// Whether a door connection logged in explicitly; kept next to its `ConnState`, whose
/// `authenticated` says, as for RESP, whether it may run commands now.
#[derive(Clone, Copy, Debug, Default)]
pub struct Login {
    logged_in: bool,
}

impl Login {
    /// Brings the connection's user up to date with the ACL (fetched again by name when any
    /// user changed), then says whether it may run operations; `conn.authenticated` follows.
    pub fn admitted(&self, server: &Server, conn: &mut ConnState) -> Admission {
        if self.logged_in {
            // As a RESP connection: its user again by name when any user changed.
            if !larder_commands::exec::refresh_user(server, conn) {
                return Admission::Gone;
            }
        } else {
            let generation = server.acl.generation();
            if conn.acl_generation != generation {
                conn.acl_generation = generation;
                conn.user = server.acl.default_user();
            }
        }
        let admission = if self.logged_in {
            if conn.user.enabled() {
                Admission::In
            } else {
                Admission::Gone
            }
        } else if server.acl.auth_required() {
            Admission::Out
        } else {
            Admission::In
        };
        conn.authenticated = admission == Admission::In;
        admission
    }

    /// Logs `name` in with `pass` (SASL PLAIN, the text protocol's `set`): on success the
    /// connection runs as that user from now on. A failure is logged to ACL LOG with
    /// `object` as what was tried and leaves the connection as it was.
    pub fn login(
        &mut self,
        server: &Server,
        conn: &mut ConnState,
        name: &[u8],
        pass: &[u8],
        object: &str,
    ) -> bool {
        match server.acl.authenticate(name, pass) {
            Some(user) => {
                self.enter(server, conn, user);
                true
            }
            None => {
                acl::log_auth_failure(server, &conn.handle, name, object);
                false
            }
        }
    }

    /// The connection runs as `user`, already authenticated, from now on.
    pub fn enter(&mut self, server: &Server, conn: &mut ConnState, user: Arc<User>) {
        larder_commands::connection::set_user(server, conn, user);
        conn.authenticated = true;
        self.logged_in = true;
    }

    /// Forgets an explicit login: the connection is the default user again (an HTTP request
    /// without a token after one with).
    pub fn logout(&mut self, server: &Server, conn: &mut ConnState) {
        if self.logged_in {
            self.logged_in = false;
            larder_commands::connection::set_user(server, conn, server.acl.default_user());
        }
    }
}

/// Checks that the connection's user may run `argv`, a door operation's RESP equivalent.
/// A refusal is logged to ACL LOG and returned as the NOPERM error Redis would answer.
/// An unrestricted user is not checked at all (nothing is resolved).
pub fn check(server: &Server, conn: &ConnState, argv: &[&[u8]]) -> Result<(), Error> {
    if conn.user.unrestricted() {
        return Ok(());
    }
    // An equivalent the registry does not know would be a bug of the door's table: refuse.
    let resolved = server.registry.resolve(argv).map_err(|_| {
        Error::Owned(format!(
            "NOPERM this user has no permissions to run the '{}' command",
            String::from_utf8_lossy(argv.first().copied().unwrap_or_default()).to_lowercase()
        ))
    })?;
    conn.user.check(&resolved, argv).map_err(|denied| {
        acl::log_denied(server, conn, &denied, resolved.full_name, Context::Toplevel);
        denied.error(resolved.full_name)
    })
}

/// Checks an operator command that reveals every key (memcached's `stats detail dump`):
/// allowed to a user that may run `argv` (an @admin @dangerous equivalent) and has `allkeys`.
pub fn check_all_keys(server: &Server, conn: &ConnState, argv: &[&[u8]]) -> Result<(), Error> {
    check(server, conn, argv)?;
    if conn.user.unrestricted() || conn.user.all_keys() {
        Ok(())
    } else {
        let denied = acl::Denied::Key(b"*".to_vec());
        let full_name = String::from_utf8_lossy(argv[0]).to_lowercase();
        acl::log_denied(server, conn, &denied, &full_name, Context::Toplevel);
        Err(denied.error(&full_name))
    }
}

#[cfg(test)]
mod tests {
    use larder_commands::config::Config;
    use larder_commands::testing::detached_handle;

    use super::*;

    fn conn(server: &Server) -> ConnState {
        ConnState::new(server, detached_handle(server), 0)
    }

    #[test]
    fn default_user_without_password_is_admitted() {
        let server = Arc::new(Server::new(Config::new(), 1));
        let mut c = conn(&server);
        let mut l = Login::default();
        assert_eq!(l.admitted(&server, &mut c), Admission::In);
        assert!(c.authenticated);
        server.acl.set_requirepass("pw");
        assert_eq!(l.admitted(&server, &mut c), Admission::Out);
        assert!(!c.authenticated);
        assert!(l.login(&server, &mut c, b"default", b"pw", "SASL"));
        assert_eq!(l.admitted(&server, &mut c), Admission::In);
        assert_eq!(&*c.handle.user.lock().clone(), "default");
        l.logout(&server, &mut c);
        assert_eq!(l.admitted(&server, &mut c), Admission::Out);
        server.acl.set_requirepass("");
        assert_eq!(l.admitted(&server, &mut c), Admission::In);
    }

    #[test]
    fn unknown_user_cannot_log_in() {
        let server = Arc::new(Server::new(Config::new(), 1));
        server.acl.set_requirepass("pw");
        let mut c = conn(&server);
        let mut l = Login::default();
        assert!(!l.login(&server, &mut c, b"nobody", b"pw", "SASL"));
        assert_eq!(l.admitted(&server, &mut c), Admission::Out);
    }

    #[test]
    fn equivalents_resolve() {
        let server = Arc::new(Server::new(Config::new(), 1));
        let c = conn(&server);
        for argv in [
            &[&b"GET"[..], b"k"][..],
            &[b"SET", b"k", b"v"],
            &[b"FLUSHDB"],
            &[b"MONITOR"],
        ] {
            assert!(check(&server, &c, argv).is_ok());
            assert!(server.registry.resolve(argv).is_ok());
        }
        assert!(check_all_keys(&server, &c, &[b"MONITOR"]).is_ok());
    }
}
