//! What a committed group of the change feed replays as: the commands that rebuild its
//! changes, in order. The append-only log and the replication stream both write a group
//! this way, so they cannot drift apart.
//!
//! - A `Command` record is replayed as is (its handler already rewrote it for replay:
//!   PEXPIREAT, not EXPIRE), followed by the version and flags of every write it covers.
//! - A removal by expiry or eviction is `DEL` where it happened (Redis propagates them so).
//! - A removal, flush or swap no command covers (memcached's `flush_all`, a door's delete) is
//!   replayed as the command that does it: `DEL`, `FLUSHDB`, `SWAPDB`.

use crate::feed::{Argv, Change, ChangeKind};

/// Where a group's replay goes.
pub trait Sink {
    /// Run `argv` (name first) in database `db`.
    fn command<A: AsRef<[u8]>>(&mut self, db: u32, argv: &[A]);

    /// Run a recorded command (a `Command` record's arguments) in database `db`. A sink that
    /// can take the packed arguments as they are (the log) overrides this.
    fn recorded(&mut self, db: u32, argv: &Argv) {
        let args: Vec<&[u8]> = argv.iter().collect();
        self.command(db, &args);
    }

    /// The version and memcached flags a write left on `change.key` (in `change.db`), after
    /// the command that made it. Only larder's own log keeps them.
    fn version(&mut self, _change: &Change) {}
}

/// Replays `changes` (one committed group) into `sink`. Returns how many writes no command
/// covered: a door that forgot to record its command; replay cannot rebuild those.
pub fn replay(changes: &[Change], sink: &mut impl Sink) -> usize {
    // Where the changes the next command covers begin.
    let mut from = 0;
    for (i, ch) in changes.iter().enumerate() {
        match ch.kind {
            ChangeKind::Expired | ChangeKind::Evicted => {
                sink.command(ch.db, &[b"DEL".as_slice(), &ch.key]);
            }
            ChangeKind::Command => {
                sink.recorded(ch.db, &ch.argv);
                for w in changes[from..i]
                    .iter()
                    .filter(|w| w.kind == ChangeKind::Written)
                {
                    sink.version(w);
                }
                if !ch.key.is_empty() {
                    // A door's command for a key's resulting state: its final version and
                    // flags, after (so over) what its changes recorded.
                    sink.version(ch);
                }
                from = i + 1;
            }
            _ => {}
        }
    }
    // What no command covered: removals, flushes and swaps become the commands that do
    // them; a write cannot be rebuilt.
    let mut stray = 0;
    for ch in &changes[from..] {
        match ch.kind {
            ChangeKind::Deleted => sink.command(ch.db, &[b"DEL".as_slice(), &ch.key]),
            ChangeKind::Flushed => sink.command(ch.db, &[b"FLUSHDB".as_slice()]),
            ChangeKind::Swapped => {
                let (a, b) = (ch.db.to_string(), ch.class.to_string());
                sink.command(0, &[b"SWAPDB".as_slice(), a.as_bytes(), b.as_bytes()]);
            }
            ChangeKind::Written => stray += 1,
            _ => {}
        }
    }
    stray
}

#[cfg(test)]
mod tests {
    use super::*;

    fn change(kind: ChangeKind, db: u32, key: &str, version: u64, argv: &[&str]) -> Change {
        Change {
            kind,
            db,
            key: key.as_bytes().to_vec(),
            version,
            value: None,
            event: "",
            class: 0,
            argv: Argv::new(argv),
            flags: 0,
            entry: Default::default(),
        }
    }

    #[derive(Default)]
    struct Steps(Vec<String>);

    impl Sink for Steps {
        fn command<A: AsRef<[u8]>>(&mut self, db: u32, argv: &[A]) {
            let words: Vec<String> = argv
                .iter()
                .map(|a| String::from_utf8_lossy(a.as_ref()).into_owned())
                .collect();
            self.0.push(format!("{db}: {}", words.join(" ")));
        }

        fn version(&mut self, c: &Change) {
            self.0.push(format!(
                "{}: version {} {}",
                c.db,
                String::from_utf8_lossy(&c.key),
                c.version
            ));
        }
    }

    #[test]
    fn commands_then_the_versions_they_cover() {
        let mut s = Steps::default();
        let group = [
            change(ChangeKind::Expired, 1, "old", 3, &[]),
            change(ChangeKind::Written, 1, "a", 7, &[]),
            change(ChangeKind::Notice, 1, "a", 0, &[]),
            change(ChangeKind::Command, 1, "", 0, &["INCR", "a"]),
        ];
        assert_eq!(replay(&group, &mut s), 0);
        assert_eq!(s.0, ["1: DEL old", "1: INCR a", "1: version a 7"]);
    }

    #[test]
    fn removals_no_command_covers_become_commands() {
        let mut s = Steps::default();
        let mut swap = change(ChangeKind::Swapped, 3, "", 0, &[]);
        swap.class = 4;
        let group = [
            change(ChangeKind::Deleted, 0, "k", 2, &[]),
            change(ChangeKind::Flushed, 2, "", 0, &[]),
            swap,
        ];
        assert_eq!(replay(&group, &mut s), 0);
        assert_eq!(s.0, ["0: DEL k", "2: FLUSHDB", "0: SWAPDB 3 4"]);
        // A removal a command covers is not replayed twice.
        let mut s = Steps::default();
        let group = [
            change(ChangeKind::Deleted, 0, "k", 2, &[]),
            change(ChangeKind::Command, 0, "", 0, &["UNLINK", "k"]),
        ];
        replay(&group, &mut s);
        assert_eq!(s.0, ["0: UNLINK k"]);
    }

    #[test]
    fn a_door_command_carries_its_key_state_and_stray_writes_are_counted() {
        let mut s = Steps::default();
        let group = [change(ChangeKind::Command, 0, "k", 9, &["SET", "k", "v"])];
        replay(&group, &mut s);
        assert_eq!(s.0, ["0: SET k v", "0: version k 9"]);
        let stray = [change(ChangeKind::Written, 0, "k", 9, &[])];
        assert_eq!(replay(&stray, &mut Steps::default()), 1);
    }
}
