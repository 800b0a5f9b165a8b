//! The byte stream under [`super::RdbReader`]: counts the offset, keeps the running CRC-64,
//! and can copy what it reads into a buffer, so that a value's bytes can be walked off the
//! stream by their layout alone and then decoded as one slice.

use std::io::{BufRead, BufReader, Read};

use super::super::crc64::crc64;
use super::super::length::Reader;
use super::{ErrorKind, FileError};

/// Read-ahead of the buffered reader.
const READ_AHEAD: usize = 1 << 16;
/// A copy buffer grown past this by one large value is given back before the next.
const KEEP_BUFFER: usize = 1 << 24;

/// A length prefix or a special string encoding (see `length.rs`).
enum Len {
    Plain(u64),
    Encoded(u8),
}

pub struct Source<R: Read> {
    inner: BufReader<R>,
    offset: u64,
    crc: u64,
    copying: bool,
    buf: Vec<u8>,
}

impl<R: Read> Source<R> {
    pub fn new(r: R) -> Source<R> {
        Source {
            inner: BufReader::with_capacity(READ_AHEAD, r),
            offset: 0,
            crc: 0,
            copying: false,
            buf: Vec::new(),
        }
    }

    /// Bytes consumed so far.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// CRC-64 of the bytes consumed so far.
    pub fn crc(&self) -> u64 {
        self.crc
    }

    fn error(&self, kind: ErrorKind) -> FileError {
        FileError {
            offset: self.offset,
            kind,
        }
    }

    /// Consume up to `max` (> 0) bytes that are buffered or arrive with one read, handing
    /// them to `sink`; returns how many. The end of the input is [`ErrorKind::Truncated`].
    fn chunk(&mut self, max: u64, mut sink: impl FnMut(&[u8])) -> Result<usize, FileError> {
        let offset = self.offset;
        let avail = loop {
            match self.inner.fill_buf() {
                Ok(b) => break b,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    return Err(FileError {
                        offset,
                        kind: ErrorKind::Io(e),
                    })
                }
            }
        };
        let n = usize::try_from(max).map_or(avail.len(), |m| m.min(avail.len()));
        if n == 0 {
            return Err(FileError {
                offset,
                kind: ErrorKind::Truncated,
            });
        }
        let data = &avail[..n];
        self.crc = crc64(self.crc, data);
        if self.copying {
            self.buf.extend_from_slice(data);
        }
        sink(data);
        self.inner.consume(n);
        self.offset += n as u64;
        Ok(n)
    }

    pub fn array<const N: usize>(&mut self) -> Result<[u8; N], FileError> {
        let mut a = [0u8; N];
        let mut filled = 0;
        while filled < N {
            let start = filled;
            filled += self.chunk((N - start) as u64, |d| {
                a[start..start + d.len()].copy_from_slice(d);
            })?;
        }
        Ok(a)
    }

    pub fn byte(&mut self) -> Result<u8, FileError> {
        Ok(self.array::<1>()?[0])
    }

    /// Consume `n` bytes (copied when copying). Nothing is reserved ahead for `n`: a copy
    /// grows with the bytes that actually arrive.
    fn pass(&mut self, mut n: u64) -> Result<(), FileError> {
        while n > 0 {
            n -= self.chunk(n, |_| {})? as u64;
        }
        Ok(())
    }

    fn len_or_encoding(&mut self) -> Result<Len, FileError> {
        let b = self.byte()?;
        Ok(match b >> 6 {
            0 => Len::Plain(u64::from(b & 0x3f)),
            1 => Len::Plain((u64::from(b & 0x3f) << 8) | u64::from(self.byte()?)),
            2 => match b {
                0x80 => Len::Plain(u64::from(u32::from_be_bytes(self.array()?))),
                0x81 => Len::Plain(u64::from_be_bytes(self.array()?)),
                _ => return Err(self.error(ErrorKind::BadData("length encoding"))),
            },
            _ => Len::Encoded(b & 0x3f),
        })
    }

    /// A length prefix (not a special string encoding).
    pub fn length(&mut self) -> Result<u64, FileError> {
        let at = self.offset;
        match self.len_or_encoding()? {
            Len::Plain(n) => Ok(n),
            Len::Encoded(_) => Err(FileError {
                offset: at,
                kind: ErrorKind::BadData("string encoding where a length belongs"),
            }),
        }
    }

    /// Consume one string in any of its encodings without decoding it.
    fn skim_string(&mut self) -> Result<(), FileError> {
        let at = self.offset;
        match self.len_or_encoding()? {
            Len::Plain(n) => self.pass(n),
            Len::Encoded(0) => self.pass(1),
            Len::Encoded(1) => self.pass(2),
            Len::Encoded(2) => self.pass(4),
            Len::Encoded(3) => {
                let packed = self.length()?;
                self.length()?;
                self.pass(packed)
            }
            Len::Encoded(_) => Err(FileError {
                offset: at,
                kind: ErrorKind::BadData("string encoding"),
            }),
        }
    }

    /// One string (a key, an AUX field), decoded: integers in decimal, LZF expanded.
    pub fn string(&mut self) -> Result<Vec<u8>, FileError> {
        let at = self.offset;
        self.begin(None);
        let skimmed = self.skim_string();
        self.copying = false;
        skimmed?;
        Reader::new(&self.buf).string().map_err(|_| FileError {
            offset: at,
            kind: ErrorKind::BadData("string"),
        })
    }

    fn begin(&mut self, first: Option<u8>) {
        if self.buf.capacity() > KEEP_BUFFER {
            self.buf = Vec::new();
        }
        self.buf.clear();
        self.buf.extend(first);
        self.copying = true;
    }

    /// Start copying a value whose type byte `t` was just read.
    pub fn begin_copy(&mut self, t: u8) {
        self.begin(Some(t));
    }

    /// Stop copying; the bytes copied since [`Source::begin_copy`].
    pub fn end_copy(&mut self) -> &[u8] {
        self.copying = false;
        &self.buf
    }

    /// Consume the body of a value of type `t` (one `classify` calls readable), following
    /// the layout each type has at the file level; blobs (listpacks, ziplists, intsets) are
    /// one string each and are checked when the value is decoded.
    pub fn skim_value(&mut self, t: u8) -> Result<(), FileError> {
        match t {
            // STRING; the zipmap, ziplist, intset and listpack blobs.
            0 | 9..=13 | 16 | 17 => self.skim_string(),
            // LIST, SET, LIST_QUICKLIST: strings.
            1 | 2 | 14 => {
                for _ in 0..self.length()? {
                    self.skim_string()?;
                }
                Ok(())
            }
            // ZSET: member and text double (a length byte; 253..=255 are NaN and infinities).
            3 => {
                for _ in 0..self.length()? {
                    self.skim_string()?;
                    let n = self.byte()?;
                    if n < 253 {
                        self.pass(u64::from(n))?;
                    }
                }
                Ok(())
            }
            // HASH: field and value.
            4 => {
                for _ in 0..self.length()? {
                    self.skim_string()?;
                    self.skim_string()?;
                }
                Ok(())
            }
            // ZSET_2: member and binary double.
            5 => {
                for _ in 0..self.length()? {
                    self.skim_string()?;
                    self.pass(8)?;
                }
                Ok(())
            }
            // LIST_QUICKLIST_2: container and node.
            18 => {
                for _ in 0..self.length()? {
                    self.length()?;
                    self.skim_string()?;
                }
                Ok(())
            }
            // STREAM_LISTPACKS (15) and STREAM_LISTPACKS_2 (19): see `rdb/stream.rs`.
            15 | 19 => self.skim_stream(t == 19),
            _ => Err(self.error(ErrorKind::UnknownType(t))),
        }
    }

    /// A stream: nodes (key and listpack), metadata, then groups with their PELs and
    /// consumers. `v2`: type 19, with first ID, max deleted ID, entries added and each
    /// group's entries read.
    fn skim_stream(&mut self, v2: bool) -> Result<(), FileError> {
        for _ in 0..self.length()? {
            self.skim_string()?;
            self.skim_string()?;
        }
        // Length and last ID; then first ID, max deleted ID and entries added.
        for _ in 0..if v2 { 8 } else { 3 } {
            self.length()?;
        }
        for _ in 0..self.length()? {
            self.skim_string()?;
            for _ in 0..if v2 { 3 } else { 2 } {
                self.length()?;
            }
            // The group PEL: ID, delivery time, delivery count.
            for _ in 0..self.length()? {
                self.pass(16 + 8)?;
                self.length()?;
            }
            // Consumers: name, seen time, PEL IDs.
            for _ in 0..self.length()? {
                self.skim_string()?;
                self.pass(8)?;
                let n = self.length()?;
                self.pass(
                    n.checked_mul(16)
                        .ok_or_else(|| self.error(ErrorKind::Truncated))?,
                )?;
            }
        }
        Ok(())
    }
}
