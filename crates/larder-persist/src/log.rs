//! The append-only log's format: a file header, then one checksummed record per committed
//! feed group. `docs/log-format.md` has the byte diagrams.
//!
//! A record holds what replaying the group needs, in the group's order: the commands to run
//! (each with its database), and after each command the versions and memcached flags its
//! writes left on their keys, so that replay rebuilds the same per-key versions.
//!
//! Reading is [`LogReader`] over the bytes of a whole file: it yields each group, and at the
//! end says whether the file ended cleanly, ended in a torn record (a crash during a write:
//! the caller cuts the file there), or holds a damaged record with valid data after it
//! (corruption: the caller stops and names the offset).

use larder_engine::feed::{write_args, write_varint};

/// The first eight bytes of every log file.
pub const MAGIC: &[u8; 8] = b"LARDLOG\0";
/// The format version this code writes and reads.
pub const VERSION: u32 = 1;
/// Bytes in a file header.
pub const HEADER_LEN: usize = 44;
/// Bytes before a record's payload: its length and checksum.
pub const RECORD_PREFIX: usize = 8;
/// The largest record payload accepted (a group's commands and their arguments); a length
/// field past it is damage, not a record.
pub const MAX_RECORD: usize = 1 << 30;

const TAG_COMMAND: u8 = 1;
const TAG_VERSION: u8 = 2;

/// A log file's header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    /// The feed sequence the file starts after: its first group is `start_seq + 1` (the
    /// sequence of the snapshot it follows, or 0 for a store's first log).
    pub start_seq: u64,
    /// The log offset (replication offset) of the file's first record.
    pub start_offset: u64,
    /// When the file was created, in Unix milliseconds.
    pub created_ms: u64,
}

impl Header {
    /// The header's bytes.
    pub fn encode(&self) -> [u8; HEADER_LEN] {
        let mut b = [0u8; HEADER_LEN];
        b[..8].copy_from_slice(MAGIC);
        b[8..12].copy_from_slice(&VERSION.to_le_bytes());
        // 12..16: reserved flags, zero.
        b[16..24].copy_from_slice(&self.start_seq.to_le_bytes());
        b[24..32].copy_from_slice(&self.start_offset.to_le_bytes());
        b[32..40].copy_from_slice(&self.created_ms.to_le_bytes());
        let crc = crc32fast::hash(&b[..40]);
        b[40..44].copy_from_slice(&crc.to_le_bytes());
        b
    }

    /// Parse a header from the start of a file.
    pub fn decode(bytes: &[u8]) -> Result<Header, LogError> {
        let err = |what| LogError {
            offset: 0,
            kind: ErrorKind::BadHeader(what),
        };
        if bytes.len() < HEADER_LEN {
            return Err(err("file shorter than a header"));
        }
        if &bytes[..8] != MAGIC {
            return Err(err("not a larder log (bad magic)"));
        }
        let u32_at =
            |i: usize| u32::from_le_bytes([bytes[i], bytes[i + 1], bytes[i + 2], bytes[i + 3]]);
        let u64_at = |i: usize| {
            let mut a = [0u8; 8];
            a.copy_from_slice(&bytes[i..i + 8]);
            u64::from_le_bytes(a)
        };
        if crc32fast::hash(&bytes[..40]) != u32_at(40) {
            return Err(err("header checksum mismatch"));
        }
        let version = u32_at(8);
        if version != VERSION {
            return Err(LogError {
                offset: 8,
                kind: ErrorKind::Version(version),
            });
        }
        Ok(Header {
            start_seq: u64_at(16),
            start_offset: u64_at(24),
            created_ms: u64_at(32),
        })
    }
}

/// What went wrong reading a log, and where (a byte offset in the file).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogError {
    pub offset: u64,
    pub kind: ErrorKind,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    BadHeader(&'static str),
    Version(u32),
    /// A record whose checksum or contents are wrong, with valid data after it.
    Corrupt(&'static str),
    /// A record's sequence does not follow the previous one's.
    Sequence {
        expected: u64,
        found: u64,
    },
}

impl std::fmt::Display for LogError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.kind {
            ErrorKind::BadHeader(what) => write!(f, "bad log header: {what}"),
            ErrorKind::Version(v) => {
                write!(
                    f,
                    "log format version {v} is not supported (this larder reads {VERSION})"
                )
            }
            ErrorKind::Corrupt(what) => {
                write!(f, "corrupt record at offset {}: {what}", self.offset)
            }
            ErrorKind::Sequence { expected, found } => write!(
                f,
                "record at offset {} has sequence {found}, expected {expected}",
                self.offset
            ),
        }
    }
}

impl std::error::Error for LogError {}

/// One item of a group, borrowed from the file's bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Item<'a> {
    /// Run `argv` in database `db`.
    Command { db: u32, argv: Vec<&'a [u8]> },
    /// After the command before it: `key` in `db` has this version and memcached flags.
    Version {
        db: u32,
        key: &'a [u8],
        version: u64,
        flags: u32,
    },
}

/// One committed group, as read back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Group<'a> {
    pub seq: u64,
    /// The log offset of the record (the replication offset of its first byte).
    pub offset: u64,
    pub items: Vec<Item<'a>>,
}

/// A group's replay (`larder_engine::replay`) written as its record's items.
impl larder_engine::replay::Sink for GroupWriter<'_> {
    fn command<A: AsRef<[u8]>>(&mut self, db: u32, argv: &[A]) {
        GroupWriter::command(self, db, argv);
    }

    fn recorded(&mut self, db: u32, argv: &larder_engine::Argv) {
        GroupWriter::packed(self, db, argv);
    }

    fn version(&mut self, c: &larder_engine::Change) {
        GroupWriter::version(self, c.db, &c.key, c.version, c.flags);
    }
}

/// Encodes one group's record at the end of `out`. Call [`GroupWriter::command`] and
/// [`GroupWriter::version`] in the group's order, then [`GroupWriter::finish`].
pub struct GroupWriter<'o> {
    out: &'o mut Vec<u8>,
    start: usize,
    items: u32,
}

impl<'o> GroupWriter<'o> {
    /// Start the record of group `seq`, whose first byte is at log offset `offset`.
    pub fn new(out: &'o mut Vec<u8>, seq: u64, offset: u64) -> GroupWriter<'o> {
        let start = out.len();
        out.extend_from_slice(&[0u8; RECORD_PREFIX]);
        out.extend_from_slice(&seq.to_le_bytes());
        out.extend_from_slice(&offset.to_le_bytes());
        out.extend_from_slice(&0u32.to_le_bytes());
        GroupWriter {
            out,
            start,
            items: 0,
        }
    }

    pub fn command<A: AsRef<[u8]>>(&mut self, db: u32, argv: &[A]) {
        self.out.push(TAG_COMMAND);
        write_varint(self.out, u64::from(db));
        write_args(self.out, argv);
        self.items += 1;
    }

    /// [`GroupWriter::command`] for arguments already packed: `Argv`'s encoding is the one
    /// `command` writes (`write_args`), so it is copied whole.
    pub fn packed(&mut self, db: u32, argv: &larder_engine::Argv) {
        self.out.push(TAG_COMMAND);
        write_varint(self.out, u64::from(db));
        self.out.extend_from_slice(argv.encoded());
        self.items += 1;
    }

    pub fn version(&mut self, db: u32, key: &[u8], version: u64, flags: u32) {
        self.out.push(TAG_VERSION);
        write_varint(self.out, u64::from(db));
        write_varint(self.out, key.len() as u64);
        self.out.extend_from_slice(key);
        self.out.extend_from_slice(&version.to_le_bytes());
        self.out.extend_from_slice(&flags.to_le_bytes());
        self.items += 1;
    }

    /// Whether no item was written.
    pub fn is_empty(&self) -> bool {
        self.items == 0
    }

    /// Drop the record: nothing of it stays in the buffer.
    pub fn discard(self) {
        self.out.truncate(self.start);
    }

    /// Close the record: its length, item count and checksum. Returns its length in bytes.
    pub fn finish(mut self) -> usize {
        let len = self.close();
        seal(&mut self.out[self.start..]);
        len
    }

    /// Close the record without its checksum: [`seal`] must fill it before the record is
    /// written anywhere (a committing thread closes its record under the feed's ordering
    /// lock; the checksum is left to whoever writes the buffer, outside it). Returns its
    /// length in bytes.
    pub fn finish_unsealed(mut self) -> usize {
        self.close()
    }

    /// Write the record's length and item count; returns its length in bytes.
    fn close(&mut self) -> usize {
        let payload = self.start + RECORD_PREFIX;
        let count_at = payload + 16;
        self.out[count_at..count_at + 4].copy_from_slice(&self.items.to_le_bytes());
        let len = self.out.len() - payload;
        self.out[self.start..self.start + 4].copy_from_slice(&(len as u32).to_le_bytes());
        self.out.len() - self.start
    }
}

/// Fill the checksum of every record in `records`: whole records, one after another, each
/// closed by [`GroupWriter::finish_unsealed`].
pub fn seal(records: &mut [u8]) {
    let mut at = 0;
    while at + RECORD_PREFIX <= records.len() {
        let len = u32::from_le_bytes([
            records[at],
            records[at + 1],
            records[at + 2],
            records[at + 3],
        ]) as usize;
        let payload = at + RECORD_PREFIX;
        let end = (payload + len).min(records.len());
        let crc = crc32fast::hash(&records[payload..end]);
        records[at + 4..payload].copy_from_slice(&crc.to_le_bytes());
        at = end;
    }
}

/// Whether `record` (prefix and payload, as in a file) is one whole record whose checksum
/// holds: what a reader streaming the log (replication) checks before passing it on.
pub fn verify_record(record: &[u8]) -> bool {
    if record.len() < RECORD_PREFIX {
        return false;
    }
    let len = u32::from_le_bytes([record[0], record[1], record[2], record[3]]) as usize;
    let crc = u32::from_le_bytes([record[4], record[5], record[6], record[7]]);
    record.len() == RECORD_PREFIX + len && crc32fast::hash(&record[RECORD_PREFIX..]) == crc
}

/// How a log file's bytes ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum End {
    /// The last record ends at the end of the file.
    Clean,
    /// The file ends inside a record, or in a damaged last record, or in zeros (a crash
    /// during a write). `valid_len` is where the last whole record ends: cut the file there.
    Torn { valid_len: u64, dropped: u64 },
}

/// Reads the groups of one log file's bytes.
pub struct LogReader<'a> {
    bytes: &'a [u8],
    pos: usize,
    header: Header,
    last_seq: u64,
    end: Option<End>,
}

impl<'a> LogReader<'a> {
    /// Check the header of `bytes` (a whole file).
    pub fn new(bytes: &'a [u8]) -> Result<LogReader<'a>, LogError> {
        let header = Header::decode(bytes)?;
        Ok(LogReader {
            bytes,
            pos: HEADER_LEN,
            header,
            last_seq: header.start_seq,
            end: None,
        })
    }

    pub fn header(&self) -> Header {
        self.header
    }

    /// How the file ended; known once [`LogReader::next_group`] has returned `Ok(None)`.
    pub fn end(&self) -> Option<&End> {
        self.end.as_ref()
    }

    /// Where the next record starts (after the last group read).
    pub fn position(&self) -> u64 {
        self.pos as u64
    }

    /// The next group, `Ok(None)` at the end of the valid records, or the corruption found.
    pub fn next_group(&mut self) -> Result<Option<Group<'a>>, LogError> {
        if self.end.is_some() {
            return Ok(None);
        }
        let rest = &self.bytes[self.pos..];
        if rest.is_empty() {
            self.end = Some(End::Clean);
            return Ok(None);
        }
        let torn = |this: &mut Self| {
            this.end = Some(End::Torn {
                valid_len: this.pos as u64,
                dropped: (this.bytes.len() - this.pos) as u64,
            });
            Ok(None)
        };
        if rest.len() < RECORD_PREFIX {
            return torn(self);
        }
        let len = u32::from_le_bytes([rest[0], rest[1], rest[2], rest[3]]) as usize;
        let crc = u32::from_le_bytes([rest[4], rest[5], rest[6], rest[7]]);
        if len == 0 && rest.iter().all(|&b| b == 0) {
            // Zeros to the end: a file extended by a crash before its data landed.
            return torn(self);
        }
        if !(20..=MAX_RECORD).contains(&len) {
            if self.valid_record_follows(RECORD_PREFIX) {
                return Err(self.corrupt("impossible record length"));
            }
            return torn(self);
        }
        if rest.len() < RECORD_PREFIX + len {
            return torn(self);
        }
        let payload = &rest[RECORD_PREFIX..RECORD_PREFIX + len];
        if crc32fast::hash(payload) != crc {
            if self.pos + RECORD_PREFIX + len == self.bytes.len()
                || !self.valid_record_follows(RECORD_PREFIX + len)
            {
                return torn(self);
            }
            return Err(self.corrupt("checksum mismatch"));
        }
        let group = parse_payload(payload).map_err(|what| self.corrupt(what))?;
        if group.seq != self.last_seq + 1 {
            return Err(LogError {
                offset: self.pos as u64,
                kind: ErrorKind::Sequence {
                    expected: self.last_seq + 1,
                    found: group.seq,
                },
            });
        }
        self.last_seq = group.seq;
        self.pos += RECORD_PREFIX + len;
        Ok(Some(group))
    }

    fn corrupt(&self, what: &'static str) -> LogError {
        LogError {
            offset: self.pos as u64,
            kind: ErrorKind::Corrupt(what),
        }
    }

    /// Whether a whole record with a good checksum starts somewhere after `skip` bytes past
    /// the current position: what tells damage in the middle of a file from a torn tail.
    fn valid_record_follows(&self, skip: usize) -> bool {
        let from = self.pos.saturating_add(skip).min(self.bytes.len());
        let rest = &self.bytes[from..];
        // A record starts on no particular boundary: try every position (a damaged file is
        // rare, and the search stops at the first record found).
        (0..rest.len().saturating_sub(RECORD_PREFIX + 20)).any(|i| {
            let r = &rest[i..];
            let len = u32::from_le_bytes([r[0], r[1], r[2], r[3]]) as usize;
            if !(20..=MAX_RECORD).contains(&len) || r.len() < RECORD_PREFIX + len {
                return false;
            }
            let crc = u32::from_le_bytes([r[4], r[5], r[6], r[7]]);
            crc32fast::hash(&r[RECORD_PREFIX..RECORD_PREFIX + len]) == crc
        })
    }
}

/// A cursor over a record's payload.
struct Cursor<'a> {
    b: &'a [u8],
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], &'static str> {
        if self.b.len() < n {
            return Err("record ends inside an item");
        }
        let (head, tail) = self.b.split_at(n);
        self.b = tail;
        Ok(head)
    }

    fn u8(&mut self) -> Result<u8, &'static str> {
        Ok(self.take(1)?[0])
    }

    fn u32(&mut self) -> Result<u32, &'static str> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn u64(&mut self) -> Result<u64, &'static str> {
        let mut a = [0u8; 8];
        a.copy_from_slice(self.take(8)?);
        Ok(u64::from_le_bytes(a))
    }

    fn varint(&mut self) -> Result<u64, &'static str> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.u8()?;
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err("varint too long")
    }

    fn bytes(&mut self) -> Result<&'a [u8], &'static str> {
        let n = self.varint()?;
        if n > self.b.len() as u64 {
            return Err("length past the record's end");
        }
        self.take(n as usize)
    }

    fn db(&mut self) -> Result<u32, &'static str> {
        u32::try_from(self.varint()?).map_err(|_| "database number too large")
    }
}

fn parse_payload(payload: &[u8]) -> Result<Group<'_>, &'static str> {
    let mut c = Cursor { b: payload };
    let seq = c.u64()?;
    let offset = c.u64()?;
    let count = c.u32()?;
    // Each item is at least three bytes: never reserve more than the payload can hold.
    let mut items = Vec::with_capacity((count as usize).min(payload.len() / 3));
    for _ in 0..count {
        match c.u8()? {
            TAG_COMMAND => {
                let db = c.db()?;
                let argc = c.varint()?;
                if argc == 0 || argc > c.b.len() as u64 {
                    return Err("bad argument count");
                }
                let mut argv = Vec::with_capacity(argc as usize);
                for _ in 0..argc {
                    argv.push(c.bytes()?);
                }
                items.push(Item::Command { db, argv });
            }
            TAG_VERSION => {
                let db = c.db()?;
                let key = c.bytes()?;
                let version = c.u64()?;
                let flags = c.u32()?;
                items.push(Item::Version {
                    db,
                    key,
                    version,
                    flags,
                });
            }
            _ => return Err("unknown item tag"),
        }
    }
    if !c.b.is_empty() {
        return Err("bytes after the last item");
    }
    Ok(Group { seq, offset, items })
}

#[cfg(test)]
mod tests;
