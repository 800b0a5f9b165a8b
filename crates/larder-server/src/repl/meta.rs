//! larder's side channel beside the Redis stream: each key's version (memcached's CAS
//! unique, the HTTP door's version) and memcached flags, for replicas that said `REPLCONF
//! capa larder-meta2` (see docs/replication.md).
//!
//! After the stream bytes of a worker's turn of committed groups such a replica gets one
//! frame, a RESP command `LARDER.META <entries>` whose one argument lists, in commit order,
//! the version and flags every write of those groups left
//! (`larder_engine::replay::Sink::version`, as the append-only log keeps them), each entry
//! packed as LEB128 varints: database, key length, then the key's bytes, version, flags. One
//! frame per turn, as the stream's bytes are posted once per turn, rather than one per
//! group. (The first form, `LARDER.META db key version flags [...]` with every field a bulk
//! string, `capa larder-meta`, cost a master more per write than the write's own command;
//! a replica still reads it from an older master, and a master sends frames only to
//! replicas that said `larder-meta2`.) Until
//! its frame arrives a key on the replica has the version its own write gave it. Frames are
//! not stream bytes: they are not counted in the
//! replication offset, not kept in the backlog and never sent to a redis-server replica, so
//! every replica, larder or Redis, has the same offsets. The replica recognises a frame
//! before it executes anything, gives each listed key that exists the version and flags
//! (the code path the append-only log's replay uses) and passes the frame on to its own
//! larder replicas.
//!
//! For partial resyncs the frames are kept in a side log ([`MetaLog`]) keyed by the stream
//! offset they were sent after; `+CONTINUE` sends the backlog with them interleaved at their
//! offsets ([`MetaLog::interleave`]). A replica that continues from inside a turn's groups
//! gets that turn's whole frame: entries for writes it already has set versions those
//! writes already left or that later entries of the same frame override.

use std::collections::VecDeque;

use larder_commands::Server;

use larder_engine::feed::write_varint;

use super::stream::bulk;

/// The frame's command name.
pub const NAME: &[u8] = b"LARDER.META";

/// One key's metadata: (db, key, version, flags).
pub type Meta<K> = (u32, K, u64, u32);

/// The entries of the next frame, gathered as groups commit (no copy of the keys beyond
/// their encoding); [`OpenFrame::finish_into`] makes them one frame.
#[derive(Debug, Default)]
pub struct OpenFrame {
    /// The packed entries (each at least four bytes, so none gathered is no bytes).
    entries: Vec<u8>,
}

impl OpenFrame {
    pub fn entry(&mut self, db: u32, key: &[u8], version: u64, flags: u32) {
        let e = &mut self.entries;
        e.reserve(4 * 10 + key.len());
        write_varint(e, u64::from(db));
        write_varint(e, key.len() as u64);
        e.extend_from_slice(key);
        write_varint(e, version);
        write_varint(e, u64::from(flags));
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Append the frame of the entries gathered (nothing for none) to `out`, and start
    /// over.
    pub fn finish_into(&mut self, out: &mut Vec<u8>) {
        if self.is_empty() {
            return;
        }
        out.extend_from_slice(b"*2\r\n");
        bulk(out, NAME);
        bulk(out, &self.entries);
        self.clear();
    }

    /// Forget the entries gathered (a new history).
    pub fn clear(&mut self) {
        self.entries.clear();
    }
}

/// Append the frame of `entries` to `out` (nothing for none).
#[cfg(test)]
pub fn encode(out: &mut Vec<u8>, entries: &[Meta<Vec<u8>>]) {
    let mut frame = OpenFrame::default();
    for (db, key, version, flags) in entries {
        frame.entry(*db, key, *version, *flags);
    }
    frame.finish_into(out);
}

/// Whether `argv` is a frame (by its name).
pub fn is_frame(argv: &[&[u8]]) -> bool {
    argv.first().is_some_and(|a| a.eq_ignore_ascii_case(NAME))
}

/// The entries of a frame's `argv` (either form); `None` for a malformed one.
pub fn parse<'a>(argv: &[&'a [u8]]) -> Option<Vec<Meta<&'a [u8]>>> {
    if !is_frame(argv) {
        return None;
    }
    if argv.len() == 2 {
        return parse_packed(argv[1]);
    }
    if argv.len() % 4 != 1 {
        return None;
    }
    let num = |a: &[u8]| std::str::from_utf8(a).ok()?.parse::<u64>().ok();
    argv[1..]
        .chunks_exact(4)
        .map(|c| {
            Some((
                u32::try_from(num(c[0])?).ok()?,
                c[1],
                num(c[2])?,
                u32::try_from(num(c[3])?).ok()?,
            ))
        })
        .collect()
}

/// The entries packed in a frame's one argument.
fn parse_packed(mut b: &[u8]) -> Option<Vec<Meta<&[u8]>>> {
    let mut entries = Vec::new();
    while !b.is_empty() {
        let db = u32::try_from(read_varint(&mut b)?).ok()?;
        let len = usize::try_from(read_varint(&mut b)?).ok()?;
        if len > b.len() {
            return None;
        }
        let (key, rest) = b.split_at(len);
        b = rest;
        let version = read_varint(&mut b)?;
        let flags = u32::try_from(read_varint(&mut b)?).ok()?;
        entries.push((db, key, version, flags));
    }
    (!entries.is_empty()).then_some(entries)
}

/// A LEB128 varint from the front of `b` (at most ten bytes, fitting a `u64`), advancing
/// past it.
fn read_varint(b: &mut &[u8]) -> Option<u64> {
    let mut v = 0u64;
    for (i, &byte) in b.iter().enumerate().take(10) {
        let bits = u64::from(byte & 0x7f);
        if i == 9 && bits > 1 {
            return None;
        }
        v |= bits << (7 * i);
        if byte < 0x80 {
            *b = &b[i + 1..];
            return Some(v);
        }
    }
    None
}

/// Give each listed key that exists its version and flags (a key the group deleted later is
/// skipped). A frame covers a turn of the master's writes, whose keys have left the caches
/// since their commands ran: each run of them is prefetched first (`Db::prefetch`, in the
/// run's first database; only a hint).
pub fn apply(server: &Server, entries: &[Meta<&[u8]>]) {
    let mut keys = [&[][..]; larder_engine::Db::PREFETCH_BATCH];
    for run in entries.chunks(keys.len()) {
        let db = run[0].0 as usize;
        if run.len() > 1 && db < server.keyspace.db_count() {
            for (k, e) in keys.iter_mut().zip(run) {
                *k = e.1;
            }
            server.keyspace.db(db).prefetch(&keys[..run.len()]);
        }
        for &(db, key, version, flags) in run {
            crate::persist::restore_version(server, db as usize, key, version, flags);
        }
    }
}

/// The frames sent after the groups of the backlog, for partial resyncs of larder replicas.
#[derive(Debug, Default)]
pub struct MetaLog {
    /// (stream offset after the group, frame), oldest first.
    frames: VecDeque<(u64, usize)>,
    /// The frames' bytes, one after the other (no allocation per frame).
    data: VecDeque<u8>,
    bytes: usize,
    /// While recording: the lowest offset a partial resync may continue from with every
    /// frame it needs held.
    covered_from: Option<u64>,
}

impl MetaLog {
    /// Whether frames are being recorded.
    pub fn recording(&self) -> bool {
        self.covered_from.is_some()
    }

    /// Record from now on, the stream being at `offset` (its last byte), unless recording.
    /// Whoever continues from `offset + 1` holds every version up to it.
    pub fn start(&mut self, offset: u64) {
        self.covered_from.get_or_insert(offset + 1);
    }

    /// Stop recording and forget every frame (a new history, or the backlog freed).
    pub fn reset(&mut self) {
        *self = MetaLog::default();
    }

    /// Keep `frame`, sent after stream byte `offset`. Frames before the backlog's first
    /// byte are dropped, and the oldest beyond `max_bytes` (the backlog's size).
    pub fn record(&mut self, offset: u64, frame: &[u8], first_byte: u64, max_bytes: usize) {
        let Some(covered) = &mut self.covered_from else {
            return;
        };
        self.frames.push_back((offset, frame.len()));
        self.data.extend(frame);
        self.bytes += frame.len();
        while let Some(&(at, len)) = self.frames.front() {
            let stale = at + 1 < first_byte;
            if !stale && self.bytes <= max_bytes {
                break;
            }
            if !stale {
                // A resync from before this frame's group would miss it.
                *covered = (*covered).max(at + 2);
            }
            self.bytes -= len;
            self.data.drain(..len);
            self.frames.pop_front();
        }
    }

    /// Whether a replica that asks for stream byte `from` on gets every frame it needs.
    pub fn covers(&self, from: u64) -> bool {
        self.covered_from.is_some_and(|c| from >= c)
    }

    /// `data`, the stream from byte `from` on, with the frames of the groups ending at
    /// `from - 1` or later placed after their group's last byte (a frame for the group
    /// the replica has whole may be lost with its link; applying it again changes nothing).
    pub fn interleave(&self, from: u64, data: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(data.len());
        let mut done = 0usize;
        let mut start = 0usize;
        for &(at, len) in &self.frames {
            let frame = start..start + len;
            start += len;
            if at + 1 < from {
                continue;
            }
            let end = usize::try_from(at + 1 - from).map_or(data.len(), |e| e.min(data.len()));
            out.extend_from_slice(&data[done..end.max(done)]);
            done = done.max(end);
            out.extend(self.data.range(frame));
        }
        out.extend_from_slice(&data[done..]);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_frame_round_trips_and_a_bad_one_is_refused() {
        let mut out = Vec::new();
        encode(&mut out, &[]);
        assert!(out.is_empty());
        let long = vec![b'x'; 200];
        let entries = vec![
            (0, b"k".to_vec(), 5 << 20, 42),
            (3, b"a b".to_vec(), 7, 0),
            (15, long.clone(), u64::MAX, u32::MAX),
        ];
        encode(&mut out, &entries);
        assert!(out.starts_with(b"*2\r\n$11\r\nLARDER.META\r\n$"));
        let mut argv = Vec::new();
        let parsed = larder_resp::parse_request(&out, &Default::default(), &mut argv);
        assert!(
            matches!(parsed, Ok(larder_resp::Parsed::Complete { consumed }) if consumed == out.len())
        );
        let args: Vec<&[u8]> = argv.iter().map(|a| a.as_ref()).collect();
        assert_eq!(args.len(), 2);
        // db 0, key length 1, "k", version 5 << 20 in four bytes, flags 42.
        assert_eq!(&args[1][..8], b"\x00\x01k\x80\x80\xc0\x02\x2a");
        let back = parse(&args).expect("parses");
        assert_eq!(
            back,
            vec![
                (0, &b"k"[..], 5 << 20, 42),
                (3, &b"a b"[..], 7, 0),
                (15, &long[..], u64::MAX, u32::MAX)
            ]
        );
        // Damaged packed entries: cut short anywhere, a key longer than what is left, a
        // varint past 64 bits, flags past 32, nothing at all.
        for cut in 1..args[1].len() {
            let short: &[&[u8]] = &[args[0], &args[1][..cut]];
            if let Some(got) = parse(short) {
                // Cut between two entries: the ones before it, whole.
                assert!(got.len() < 3 && got[..] == back[..got.len()], "{cut}");
            }
        }
        let bad: [&[u8]; 5] = [
            b"\x00\x05ab",
            b"\x00\x01k\xff\xff\xff\xff\xff\xff\xff\xff\xff\x02\x00",
            b"\x00\x01k\x01\x80\x80\x80\x80\x10",
            b"",
            b"\x80",
        ];
        for b in bad {
            assert!(parse(&[NAME, b]).is_none(), "{b:?}");
        }
        // Any bit flipped anywhere: refused or read as other entries, never a panic (an
        // index past the end, or an overflow where the tests check for it).
        let mut flipped = args[1].to_vec();
        for at in 0..flipped.len() {
            for bit in 0..8 {
                flipped[at] ^= 1 << bit;
                let _ = parse(&[NAME, &flipped]);
                flipped[at] ^= 1 << bit;
            }
        }
        assert!(!is_frame(&[b"SET", b"k", b"v"]));
        assert!(is_frame(&[b"larder.meta"]));
    }

    #[test]
    fn the_first_form_of_a_frame_is_still_read() {
        let args: Vec<&[u8]> = vec![
            b"LARDER.META",
            b"0",
            b"k",
            b"5242880",
            b"42",
            b"3",
            b"a b",
            b"7",
            b"0",
        ];
        assert_eq!(
            parse(&args).expect("parses"),
            vec![(0, &b"k"[..], 5 << 20, 42), (3, &b"a b"[..], 7, 0)]
        );
        assert!(parse(&args[..4]).is_none());
        let mut bad = args.clone();
        bad[4] = b"4294967296";
        assert!(parse(&bad).is_none());
        bad[4] = b"-1";
        assert!(parse(&bad).is_none());
    }

    #[test]
    fn the_side_log_covers_what_it_recorded_and_interleaves_by_offset() {
        let mut log = MetaLog::default();
        log.record(10, b"x", 1, 100);
        assert_eq!(log.bytes, 0, "nothing kept before it starts");
        log.start(10);
        assert!(log.covers(11) && !log.covers(10));
        // Stream bytes 11..=16 are "abcdef": groups end at 12 and 16.
        log.record(12, b"[A]", 1, 100);
        log.record(16, b"[B]", 1, 100);
        assert_eq!(log.interleave(11, b"abcdef"), b"ab[A]cdef[B]");
        assert_eq!(log.interleave(13, b"cdef"), b"[A]cdef[B]");
        assert_eq!(log.interleave(14, b"def"), b"def[B]");
        assert_eq!(log.interleave(17, b""), b"[B]");
        // The backlog moved past byte 13: [A] goes, coverage is the backlog's.
        log.record(20, b"[C]", 14, 100);
        assert_eq!(log.bytes, 6);
        assert!(log.covers(14));
        // Over its size the oldest frame goes, and with it what a resync from before needs.
        log.record(21, b"[D]", 14, 6);
        assert!(!log.covers(17) && log.covers(18));
        assert_eq!(log.interleave(18, b"abcd"), b"abc[C]d[D]");
        log.reset();
        assert!(!log.recording() && !log.covers(100));
    }
}
