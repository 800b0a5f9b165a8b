//! The command table and handlers: argv in, engine operations, reply out.
//!
//! Each family file (`string`, `keys`, `connection`, `server`) declares a static table of
//! [`CommandSpec`]s and the handlers, named after the commands they run. [`exec::execute`] runs
//! the generic checks (unknown command, arity, auth, pause, memory) in one place and then the
//! handler. Handlers lock the shards they need through `larder-engine` and write replies with
//! `larder-resp`'s [`ReplyBuf`](larder_resp::ReplyBuf); they do no I/O, so they are tested
//! without sockets through [`testing::Harness`].
//!
//! It is not: the network layer (see `larder-server`), nor the storage engine.
#![forbid(unsafe_code)]

pub mod acl;
pub mod args;
pub mod bitmap;
pub mod blocking;
pub mod busy;
mod collection;
pub mod config;
pub mod connection;
pub mod error;
pub mod exec;
pub mod geo;
pub mod hash;
pub mod hyperloglog;
pub mod info;
pub mod keys;
pub mod latency;
pub mod list;
pub mod locks;
pub mod mail;
pub mod monitor;
pub mod notify;
pub mod persistence;
#[cfg(test)]
mod propagate_tests;
pub mod pubsub;
pub mod queue;
pub mod replication;
pub mod script;
pub mod server;
pub mod set;
pub mod sort;
pub mod state;
pub mod stream;
pub mod string;
pub mod table;
pub mod testing;
pub mod tracking;
pub mod transaction;
pub mod values;
pub mod zset;

#[cfg(test)]
mod notify_tests;

pub use exec::{execute, ConnState, Outcome, ReplyMode};
pub use state::Server;
pub use table::{CommandSpec, Registry};

/// The registry of every command family.
pub fn registry() -> Registry {
    Registry::new(&[
        string::COMMANDS,
        keys::COMMANDS,
        sort::COMMANDS,
        list::COMMANDS,
        blocking::COMMANDS,
        hash::COMMANDS,
        set::COMMANDS,
        zset::COMMANDS,
        geo::COMMANDS,
        stream::COMMANDS,
        stream::groups::COMMANDS,
        queue::COMMANDS,
        bitmap::COMMANDS,
        hyperloglog::COMMANDS,
        connection::COMMANDS,
        server::COMMANDS,
        transaction::COMMANDS,
        script::COMMANDS,
        acl::commands::COMMANDS,
        pubsub::COMMANDS,
        latency::COMMANDS,
        monitor::COMMANDS,
        persistence::COMMANDS,
        replication::COMMANDS,
    ])
}

#[cfg(test)]
mod tests {
    #[test]
    fn registry_builds_without_duplicates() {
        let r = super::registry();
        assert!(r.commands().len() > 10);
        for spec in r.commands() {
            assert_eq!(spec.name, spec.name.to_ascii_lowercase());
            assert!(spec.arity != 0, "{}", spec.name);
        }
    }

    /// The hinted compare (two words per name) agrees with a byte-by-byte one whatever one
    /// byte of the name is, and whatever is appended to it.
    #[test]
    fn a_hinted_name_matches_only_its_own_name_in_any_case() {
        let r = super::registry();
        for (idx, spec) in r.commands().iter().enumerate() {
            let name = spec.name.as_bytes();
            for pos in 0..name.len() {
                for b in 0..=255u8 {
                    let mut other = name.to_vec();
                    other[pos] = b;
                    let same = other.eq_ignore_ascii_case(name);
                    let found = r.top_hinted(&other, idx).map(|(i, _)| i);
                    assert_eq!(found == Some(idx), same, "{:?} as {}", other, spec.name);
                }
            }
            for tail in [&b"\0"[..], b"x", b" "] {
                let longer = [name, tail].concat();
                assert_ne!(r.top_hinted(&longer, idx).map(|(i, _)| i), Some(idx));
            }
        }
    }

    /// `may_block` answers what the table's BLOCKING flag does, for every name in any case,
    /// and no for names of no command or one byte off one.
    #[test]
    fn may_block_follows_the_blocking_flag() {
        let r = super::registry();
        let mut blocking = 0;
        for spec in r.commands() {
            let want = spec.has(crate::table::flags::BLOCKING);
            blocking += usize::from(want);
            for name in [spec.name.to_string(), spec.name.to_ascii_uppercase()] {
                assert_eq!(r.may_block(name.as_bytes()), want, "{name}");
                let mut off = name.into_bytes();
                off[0] ^= 0x01;
                assert!(
                    r.may_block(&off)
                        == r.top(&off)
                            .is_some_and(|(_, s)| s.has(crate::table::flags::BLOCKING))
                );
            }
        }
        assert!(blocking >= 10, "{blocking}");
        for name in [&b""[..], b"b", b"brpopx", b"xread ", &[b'b'; 40]] {
            assert!(!r.may_block(name), "{name:?}");
        }
    }

    /// A hint only saves work: whatever it is, the command found is the one named.
    #[test]
    fn hinted_lookup_finds_what_the_plain_one_does() {
        let r = super::registry();
        let names: Vec<&str> = r.commands().iter().map(|s| s.name).collect();
        for name in names
            .iter()
            .chain(&["nosuch", "", "a-name-longer-than-thirty-two-bytes"])
        {
            let upper = name.to_ascii_uppercase();
            let want = r.top(name.as_bytes()).map(|(i, _)| i);
            for hint in [usize::MAX, 0, 1, want.unwrap_or(0), names.len() + 5] {
                assert_eq!(r.top_hinted(upper.as_bytes(), hint).map(|(i, _)| i), want);
            }
            let mut hint = 0;
            let resolved = r.resolve_hinted(&[upper.as_bytes(), b"x", b"y"], &mut hint);
            if let Some(i) = want {
                assert_eq!(hint, i, "{name}");
            } else {
                assert!(resolved.is_err());
            }
        }
    }
}
