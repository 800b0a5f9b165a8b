//! [`SnapshotReader`]: checks the header (and reads a version 2 file's function libraries),
//! then yields records block by block, checking each block's checksum before parsing it and
//! the trailer's counts and digest at the end.

use std::io::Read;

use larder_engine::Limits;

use super::writer::{
    LIBRARIES_HEAD, META_DEADLINE, META_FLAGS, TAG_BLOCK, TAG_LIBRARIES, TAG_TRAILER,
};
use super::{
    Record, Result, SnapshotError, SnapshotMeta, FIRST_FORMAT_VERSION, FORMAT_VERSION, MAGIC,
};
use crate::rdb::crc64::crc64;
use crate::rdb::{read_value, Reader};

/// Reads a snapshot file from `R` (wrap a file in a `BufReader`). Iterate it for the
/// records; `None` comes after the trailer was read and checked. After an error the
/// iterator ends.
pub struct SnapshotReader<R: Read> {
    r: R,
    limits: Limits,
    meta: SnapshotMeta,
    /// The function libraries' codes (version 2), in file order.
    libraries: Vec<String>,
    /// Bytes consumed from `r`.
    offset: u64,
    /// The current block's records, the position of the next one in it, and the file
    /// offset of the block's first record byte.
    block: Vec<u8>,
    pos: usize,
    block_start: u64,
    records_left: u32,
    /// Where the last record returned started.
    record_offset: u64,
    entries: u64,
    blocks: u64,
    digest: u64,
    done: bool,
}

impl<R: Read> SnapshotReader<R> {
    /// Read and check the header, and in a version 2 file the function library section.
    /// Values are loaded in the encodings `limits` choose.
    pub fn open(r: R, limits: &Limits) -> Result<SnapshotReader<R>> {
        let mut reader = SnapshotReader {
            r,
            limits: *limits,
            meta: SnapshotMeta {
                created_ms: 0,
                feed_seq: 0,
                databases: 0,
            },
            libraries: Vec::new(),
            offset: 0,
            block: Vec::new(),
            pos: 0,
            block_start: 0,
            records_left: 0,
            record_offset: 0,
            entries: 0,
            blocks: 0,
            digest: 0,
            done: false,
        };
        let mut header = [0u8; 40];
        reader.fill(&mut header)?;
        if &header[..8] != MAGIC {
            return Err(SnapshotError::BadMagic);
        }
        let version = le_u32(&header[8..12]);
        if version != FIRST_FORMAT_VERSION && version != FORMAT_VERSION {
            return Err(SnapshotError::BadVersion(version));
        }
        let crc = le_u64(&header[32..40]);
        if crc64(0, &header[..32]) != crc {
            return Err(corrupt(32, "header checksum mismatch"));
        }
        reader.meta = SnapshotMeta {
            databases: le_u32(&header[12..16]),
            created_ms: le_u64(&header[16..24]),
            feed_seq: le_u64(&header[24..32]),
        };
        reader.digest = crc64(0, &crc.to_le_bytes());
        if version == FORMAT_VERSION {
            reader.read_libraries()?;
        }
        Ok(reader)
    }

    /// The function library section, right after the header.
    fn read_libraries(&mut self) -> Result<()> {
        let at = self.offset;
        let mut head = [0u8; LIBRARIES_HEAD];
        self.fill(&mut head)?;
        if head[0] != TAG_LIBRARIES {
            return Err(corrupt(at, "expected the function library section"));
        }
        let len = le_u64(&head[1..9]);
        let crc = le_u64(&head[9..17]);
        let mut body = Vec::new();
        let got = (&mut self.r).take(len).read_to_end(&mut body)?;
        self.offset += got as u64;
        if (got as u64) < len {
            return Err(SnapshotError::Truncated {
                offset: self.offset,
            });
        }
        if crc64(crc64(0, &head[..9]), &body) != crc {
            return Err(corrupt(at, "function library section checksum mismatch"));
        }
        let start = at + LIBRARIES_HEAD as u64;
        let mut r = Reader::new(&body);
        while r.remaining() > 0 {
            let code_at = start + (body.len() - r.remaining()) as u64;
            let code = r
                .string()
                .map_err(|_| corrupt(code_at, "bad function library code"))?;
            let code = String::from_utf8(code)
                .map_err(|_| corrupt(code_at, "function library code is not UTF-8"))?;
            self.libraries.push(code);
        }
        self.digest = crc64(self.digest, &crc.to_le_bytes());
        Ok(())
    }

    /// The function libraries' codes (none in a version 1 file).
    pub fn libraries(&self) -> &[String] {
        &self.libraries
    }

    /// The function libraries' codes, taken out of the reader.
    pub fn take_libraries(&mut self) -> Vec<String> {
        std::mem::take(&mut self.libraries)
    }

    /// The header.
    pub fn meta(&self) -> &SnapshotMeta {
        &self.meta
    }

    /// Bytes read so far.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// The file offset where the last record returned starts.
    pub fn record_offset(&self) -> u64 {
        self.record_offset
    }

    /// Fill `buf` from the stream; the end of the stream before that is truncation.
    fn fill(&mut self, buf: &mut [u8]) -> Result<()> {
        let mut got = 0;
        while got < buf.len() {
            match self.r.read(&mut buf[got..]) {
                Ok(0) => {
                    return Err(SnapshotError::Truncated {
                        offset: self.offset + got as u64,
                    })
                }
                Ok(n) => got += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e.into()),
            }
        }
        self.offset += got as u64;
        Ok(())
    }

    /// Read the next block (true), or the trailer (false).
    fn next_block(&mut self) -> Result<bool> {
        let at = self.offset;
        let mut tag = [0u8; 1];
        self.fill(&mut tag)?;
        match tag[0] {
            TAG_BLOCK => {}
            TAG_TRAILER => {
                self.trailer(at)?;
                return Ok(false);
            }
            _ => return Err(corrupt(at, "expected a block or the trailer")),
        }
        let mut head = [0u8; 21];
        head[0] = tag[0];
        self.fill(&mut head[1..])?;
        let records = le_u32(&head[1..5]);
        let len = le_u64(&head[5..13]);
        let crc = le_u64(&head[13..21]);
        if records == 0 {
            return Err(corrupt(at + 1, "empty block"));
        }
        // Grows only as bytes arrive, so a corrupt length cannot make it allocate more than
        // the stream holds.
        self.block.clear();
        let got = (&mut self.r).take(len).read_to_end(&mut self.block)?;
        self.block_start = self.offset;
        self.offset += got as u64;
        if (got as u64) < len {
            return Err(SnapshotError::Truncated {
                offset: self.offset,
            });
        }
        if crc64(crc64(0, &head[..13]), &self.block) != crc {
            return Err(corrupt(at, "block checksum mismatch"));
        }
        self.digest = crc64(self.digest, &crc.to_le_bytes());
        self.blocks += 1;
        self.pos = 0;
        self.records_left = records;
        Ok(true)
    }

    fn trailer(&mut self, at: u64) -> Result<()> {
        let mut t = [0u8; 25];
        t[0] = TAG_TRAILER;
        self.fill(&mut t[1..])?;
        if crc64(self.digest, &t[..17]) != le_u64(&t[17..25]) {
            return Err(corrupt(
                at,
                "trailer digest mismatch (a block is missing or out of place)",
            ));
        }
        if le_u64(&t[1..9]) != self.entries || le_u64(&t[9..17]) != self.blocks {
            return Err(corrupt(at, "trailer counts differ from the file's"));
        }
        let mut extra = [0u8; 1];
        match self.r.read(&mut extra) {
            Ok(0) => Ok(()),
            Ok(_) => Err(corrupt(self.offset, "bytes after the trailer")),
            Err(e) => Err(e.into()),
        }
    }

    /// Parse the record at `self.pos` of the current block.
    fn record(&mut self) -> Result<Record> {
        let start = self.block_start + self.pos as u64;
        self.record_offset = start;
        let buf = &self.block[self.pos..];
        let mut r = Reader::new(buf);
        let rec = parse(&mut r, &self.limits).map_err(|what| corrupt(start, what))?;
        if rec.db >= self.meta.databases {
            return Err(corrupt(start, "database number above the header's count"));
        }
        self.pos += buf.len() - r.remaining();
        self.records_left -= 1;
        self.entries += 1;
        if (self.records_left == 0) != (self.pos == self.block.len()) {
            return Err(corrupt(
                self.block_start,
                "block length does not match its record count",
            ));
        }
        Ok(rec)
    }

    fn next_record(&mut self) -> Result<Option<Record>> {
        while self.records_left == 0 {
            if !self.next_block()? {
                return Ok(None);
            }
        }
        self.record().map(Some)
    }
}

impl<R: Read> Iterator for SnapshotReader<R> {
    type Item = Result<Record>;

    fn next(&mut self) -> Option<Result<Record>> {
        if self.done {
            return None;
        }
        let r = self.next_record().transpose();
        if !matches!(r, Some(Ok(_))) {
            self.done = true;
        }
        r
    }
}

fn parse(r: &mut Reader<'_>, limits: &Limits) -> std::result::Result<Record, &'static str> {
    let db = r.length().map_err(|_| "bad database number")?;
    let db = u32::try_from(db).map_err(|_| "bad database number")?;
    let meta = r.u8().map_err(|_| "record cut short")?;
    if meta & !(META_DEADLINE | META_FLAGS) != 0 {
        return Err("unknown record meta bits");
    }
    let key = r.string().map_err(|_| "bad key")?;
    let value = read_value(r, limits).map_err(|_| "bad value")?;
    let version = le_u64(fixed(r, 8)?);
    if version == 0 {
        return Err("version 0");
    }
    let expire_at_ms = if meta & META_DEADLINE != 0 {
        match le_u64(fixed(r, 8)?) {
            0 => return Err("deadline 0 marked present"),
            at => at,
        }
    } else {
        0
    };
    let flags = if meta & META_FLAGS != 0 {
        le_u32(fixed(r, 4)?)
    } else {
        0
    };
    Ok(Record {
        db,
        key,
        value,
        expire_at_ms,
        version,
        flags,
    })
}

fn fixed<'a>(r: &mut Reader<'a>, n: usize) -> std::result::Result<&'a [u8], &'static str> {
    r.take(n).map_err(|_| "record cut short")
}

fn corrupt(offset: u64, what: &'static str) -> SnapshotError {
    SnapshotError::Corrupt { offset, what }
}

fn le_u32(b: &[u8]) -> u32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(&b[..4]);
    u32::from_le_bytes(a)
}

fn le_u64(b: &[u8]) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[..8]);
    u64::from_le_bytes(a)
}
