//! The replication stream: each committed group of the change feed as the RESP commands a
//! Redis replica applies, as Redis 7.0 propagates them.
//!
//! A group's commands are those the append-only log replays (`larder_engine::replay`): each
//! `Command` record (already rewritten for replay: PEXPIREAT, not EXPIRE), a key removed by
//! expiry or eviction as `DEL` where it happened, and a removal, flush or swap that no
//! command covers (memcached's flush_all) as the command that does it. A command goes after
//! `SELECT <db>` when its database is not the one the stream last selected; a group of more
//! than one command is wrapped in `MULTI` ... `EXEC` (`propagatePendingCommands`: the SELECT
//! for the first command's database before MULTI, none before EXEC). larder's versions and
//! memcached flags are not stream bytes: a Redis replica has no place for them; a larder
//! replica gets them in a frame beside the stream (`meta.rs`).

use larder_engine::decimal::digits_before;
use larder_engine::{replay, Change};

use super::meta::OpenFrame;

/// Append `argv` as a RESP array of bulk strings.
pub fn encode_command<A: AsRef<[u8]>>(out: &mut Vec<u8>, argv: &[A]) {
    encode_args(out, argv.iter().map(AsRef::as_ref));
}

/// [`encode_command`] of arguments read one by one (a recorded command's packed ones).
fn encode_args<'a>(out: &mut Vec<u8>, argv: impl ExactSizeIterator<Item = &'a [u8]> + Clone) {
    // One reservation for the whole command: its bulk strings' bytes and a header's worth
    // (up to 24 bytes) for each.
    out.reserve(argv.clone().map(|a| a.len() + 24).sum::<usize>() + 24);
    header(out, b'*', argv.len());
    for a in argv {
        bulk_reserved(out, a);
    }
}

/// `<kind><n>\r\n`: every argument of every write goes through here, so the common
/// lengths (under 1000) are written as fixed-size pieces, and the rest through one copy of
/// the whole header.
#[inline(always)]
fn header(out: &mut Vec<u8>, kind: u8, n: usize) {
    let digit = |d: usize| b'0' + (d % 10) as u8;
    if n < 10 {
        out.extend_from_slice(&[kind, digit(n), b'\r', b'\n']);
    } else if n < 100 {
        out.extend_from_slice(&[kind, digit(n / 10), digit(n), b'\r', b'\n']);
    } else if n < 1000 {
        out.extend_from_slice(&[kind, digit(n / 100), digit(n / 10), digit(n), b'\r', b'\n']);
    } else {
        let mut buf = [0u8; 24];
        buf[22] = b'\r';
        buf[23] = b'\n';
        let from = digits_before(&mut buf, 22, n as u64);
        buf[from - 1] = kind;
        out.extend_from_slice(&buf[from - 1..]);
    }
}

/// One bulk string.
pub(super) fn bulk(out: &mut Vec<u8>, b: &[u8]) {
    out.reserve(b.len() + 26);
    bulk_reserved(out, b);
}

/// [`bulk`] where the caller reserved room for it.
#[inline(always)]
fn bulk_reserved(out: &mut Vec<u8>, b: &[u8]) {
    header(out, b'$', b.len());
    out.extend_from_slice(b);
    out.extend_from_slice(b"\r\n");
}

/// Turns groups into stream bytes, remembering the database the stream has selected.
#[derive(Debug, Default)]
pub struct Encoder {
    /// `None`: the next command is preceded by a SELECT whatever its database (after a full
    /// resync, as Redis's `slaveseldb = -1`).
    db: Option<u32>,
}

impl Encoder {
    /// Forget the selected database: the next command is preceded by SELECT.
    pub fn reselect(&mut self) {
        self.db = None;
    }

    /// The database the stream has selected (0 before any SELECT: a replica's master link
    /// starts there, `repl-stream-db`).
    pub fn db(&self) -> u32 {
        self.db.unwrap_or(0)
    }

    /// Append the commands of one committed group to `out` (nothing for a group that
    /// changed nothing), and with `meta` add the versions and flags its writes left to the
    /// next frame (`meta.rs`). The
    /// commands are encoded as replay yields them, straight into `out` (this runs on the
    /// committing thread for every write); a second one puts `MULTI` before the first
    /// (after its SELECT) and `EXEC` after the last.
    pub fn group(&mut self, changes: &[Change], out: &mut Vec<u8>, meta: Option<&mut OpenFrame>) {
        struct Direct<'a> {
            encoder: &'a mut Encoder,
            out: &'a mut Vec<u8>,
            commands: usize,
            /// Where the first command's own bytes start (after its SELECT).
            first_at: usize,
            /// The next frame, for the version and flags each write left, when one is wanted.
            meta: Option<&'a mut OpenFrame>,
        }
        impl replay::Sink for Direct<'_> {
            fn command<A: AsRef<[u8]>>(&mut self, db: u32, argv: &[A]) {
                self.start(db);
                encode_command(self.out, argv);
            }

            fn recorded(&mut self, db: u32, argv: &larder_engine::Argv) {
                self.start(db);
                encode_args(self.out, argv.iter());
            }

            fn version(&mut self, c: &Change) {
                if let Some(frame) = &mut self.meta {
                    frame.entry(c.db, &c.key, c.version, c.flags);
                }
            }
        }
        impl Direct<'_> {
            fn start(&mut self, db: u32) {
                self.encoder.select(self.out, db);
                if self.commands == 0 {
                    self.first_at = self.out.len();
                }
                self.commands += 1;
            }
        }
        let mut d = Direct {
            encoder: self,
            out,
            commands: 0,
            first_at: 0,
            meta,
        };
        replay::replay(changes, &mut d);
        if d.commands > 1 {
            let at = d.first_at;
            d.out.extend_from_slice(MULTI);
            d.out[at..].rotate_right(MULTI.len());
            d.out.extend_from_slice(EXEC);
        }
    }

    fn select(&mut self, out: &mut Vec<u8>, db: u32) {
        if self.db != Some(db) {
            encode_command(out, &[b"SELECT".as_slice(), db.to_string().as_bytes()]);
            self.db = Some(db);
        }
    }
}

const MULTI: &[u8] = b"*1\r\n$5\r\nMULTI\r\n";
const EXEC: &[u8] = b"*1\r\n$4\r\nEXEC\r\n";

#[cfg(test)]
mod tests {
    use super::*;
    use larder_engine::ChangeKind;

    fn change(kind: ChangeKind, db: u32, key: &str, argv: &[&str]) -> Change {
        Change {
            kind,
            db,
            key: key.as_bytes().to_vec(),
            version: 1,
            value: None,
            event: "",
            class: 0,
            argv: larder_engine::Argv::new(argv),
            flags: 0,
            entry: Default::default(),
        }
    }

    fn encode(e: &mut Encoder, changes: &[Change]) -> String {
        let mut out = Vec::new();
        e.group(changes, &mut out, None);
        String::from_utf8(out).expect("ascii")
    }

    #[test]
    fn commands_follow_a_select_when_the_database_changes() {
        let mut e = Encoder::default();
        let set = [
            change(ChangeKind::Written, 0, "k", &[]),
            change(ChangeKind::Command, 0, "", &["SET", "k", "v"]),
        ];
        assert_eq!(
            encode(&mut e, &set),
            "*2\r\n$6\r\nSELECT\r\n$1\r\n0\r\n*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n"
        );
        assert_eq!(
            encode(&mut e, &set),
            "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n"
        );
        let del = [change(ChangeKind::Command, 5, "", &["DEL", "k"])];
        assert!(encode(&mut e, &del).starts_with("*2\r\n$6\r\nSELECT\r\n$1\r\n5\r\n"));
        assert_eq!(e.db(), 5);
        e.reselect();
        assert!(encode(&mut e, &del).starts_with("*2\r\n$6\r\nSELECT"));
        // A read's group (notices only) sends nothing.
        assert_eq!(
            encode(&mut e, &[change(ChangeKind::Notice, 0, "k", &[])]),
            ""
        );
    }

    #[test]
    fn a_group_of_several_commands_is_a_transaction() {
        let mut e = Encoder::default();
        let group = [
            change(ChangeKind::Expired, 1, "old", &[]),
            change(ChangeKind::Written, 1, "a", &[]),
            change(ChangeKind::Command, 1, "", &["INCR", "a"]),
            change(ChangeKind::Command, 2, "", &["PEXPIREAT", "b", "99"]),
        ];
        let want = "*2\r\n$6\r\nSELECT\r\n$1\r\n1\r\n*1\r\n$5\r\nMULTI\r\n\
                    *2\r\n$3\r\nDEL\r\n$3\r\nold\r\n*2\r\n$4\r\nINCR\r\n$1\r\na\r\n\
                    *2\r\n$6\r\nSELECT\r\n$1\r\n2\r\n*3\r\n$9\r\nPEXPIREAT\r\n$1\r\nb\r\n$2\r\n99\r\n\
                    *1\r\n$4\r\nEXEC\r\n";
        assert_eq!(encode(&mut e, &group), want);
    }

    #[test]
    fn changes_no_command_covers_become_commands() {
        let mut e = Encoder::default();
        let flush = [change(ChangeKind::Flushed, 0, "", &[])];
        assert!(encode(&mut e, &flush).ends_with("*1\r\n$7\r\nFLUSHDB\r\n"));
        let mut swap = change(ChangeKind::Swapped, 3, "", &[]);
        swap.class = 4;
        assert!(encode(&mut e, &[swap]).ends_with("*3\r\n$6\r\nSWAPDB\r\n$1\r\n3\r\n$1\r\n4\r\n"));
        // A removal a command covers is not sent twice.
        let del = [
            change(ChangeKind::Deleted, 0, "k", &[]),
            change(ChangeKind::Command, 0, "", &["UNLINK", "k"]),
        ];
        assert_eq!(encode(&mut e, &del), "*2\r\n$6\r\nUNLINK\r\n$1\r\nk\r\n");
    }

    #[test]
    fn a_group_can_give_its_frame_of_versions_and_flags() {
        let mut e = Encoder::default();
        let mut written = change(ChangeKind::Written, 2, "k", &[]);
        written.version = 7 << 20;
        written.flags = 42;
        let group = [
            written,
            change(ChangeKind::Command, 2, "", &["SET", "k", "v"]),
        ];
        let (mut out, mut frame) = (Vec::new(), OpenFrame::default());
        e.group(&group, &mut out, Some(&mut frame));
        let mut bytes = Vec::new();
        frame.finish_into(&mut bytes);
        // Database 2, key length 1, "k", version 7 << 20 and flags 42 as varints.
        let entry: &[u8] = b"\x02\x01k\x80\x80\xc0\x03\x2a";
        let want = [&b"*2\r\n$11\r\nLARDER.META\r\n$8\r\n"[..], entry, b"\r\n"].concat();
        assert_eq!(bytes, want);
        // A group that wrote nothing adds nothing.
        e.group(
            &[change(ChangeKind::Notice, 0, "k", &[])],
            &mut out,
            Some(&mut frame),
        );
        assert!(frame.is_empty());
        // Two groups' writes make one frame, in commit order.
        e.group(&group, &mut out, Some(&mut frame));
        e.group(&group, &mut out, Some(&mut frame));
        let mut bytes = Vec::new();
        frame.finish_into(&mut bytes);
        let want = [
            &b"*2\r\n$11\r\nLARDER.META\r\n$16\r\n"[..],
            entry,
            entry,
            b"\r\n",
        ]
        .concat();
        assert_eq!(bytes, want);
    }

    #[test]
    fn headers_of_every_length_class() {
        for n in [
            0,
            1,
            9,
            10,
            11,
            99,
            100,
            101,
            999,
            1000,
            1001,
            65_535,
            512 << 20,
        ] {
            let mut out = Vec::new();
            header(&mut out, b'$', n);
            assert_eq!(out, format!("${n}\r\n").as_bytes());
        }
        let long = vec![b'x'; 1234];
        let mut out = Vec::new();
        encode_command(&mut out, &[b"SET".as_slice(), b"k", &long]);
        let want = format!(
            "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1234\r\n{}\r\n",
            "x".repeat(1234)
        );
        assert_eq!(out, want.as_bytes());
    }
}
