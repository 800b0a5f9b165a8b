//! Reading the log from an offset while it grows: the seam replication builds on (a replica
//! that knows the offset it has reached asks for what follows; a partial resync is this).
//!
//! A [`Tail`] finds the log file that holds the offset (files are named by their start
//! sequence and their headers carry their start offset), and hands out whole records as they
//! are written, moving to the next file when the writer rotates. It reads only what the
//! writer has written (the page cache), so a record is never seen half written: a record
//! whose bytes are not all there yet is simply not returned yet.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::PathBuf;

use larder_persist::log::{Header, HEADER_LEN, MAX_RECORD, RECORD_PREFIX};

use super::dir::DataDir;

/// A reader of the log from a given offset onwards.
pub struct Tail<'d> {
    dir: &'d DataDir,
    /// The file being read, its start sequence, and the log offset of its first record.
    file: Option<(File, u64, u64)>,
    /// The next log offset to hand out.
    offset: u64,
}

/// Why a tail cannot serve an offset.
#[derive(Debug, PartialEq, Eq)]
pub enum TailError {
    /// The offset is older than every log file left (a snapshot replaced them): the reader
    /// needs a full copy (a snapshot) first.
    Gone {
        oldest: u64,
    },
    /// The offset falls inside a record, not at its start.
    NotARecordStart,
    Io(String),
}

impl<'d> Tail<'d> {
    /// A tail that will hand out the records from log offset `offset` on.
    pub fn from(dir: &'d DataDir, offset: u64) -> Result<Tail<'d>, TailError> {
        let mut tail = Tail {
            dir,
            file: None,
            offset,
        };
        tail.open_for(offset)?;
        Ok(tail)
    }

    /// The log offset of the next record.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// The next whole record (prefix and payload, as in the file), or `None` if the writer
    /// has not written it completely yet.
    pub fn next_record(&mut self) -> Result<Option<Vec<u8>>, TailError> {
        loop {
            let Some((file, _, start_offset)) = self.file.as_mut() else {
                return Ok(None);
            };
            let pos = HEADER_LEN as u64 + (self.offset - *start_offset);
            let io = |e: std::io::Error| TailError::Io(e.to_string());
            let len = file.metadata().map_err(io)?.len();
            if len >= pos + RECORD_PREFIX as u64 {
                file.seek(SeekFrom::Start(pos)).map_err(io)?;
                let mut prefix = [0u8; RECORD_PREFIX];
                file.read_exact(&mut prefix).map_err(io)?;
                let n = u32::from_le_bytes([prefix[0], prefix[1], prefix[2], prefix[3]]) as usize;
                if n > MAX_RECORD {
                    return Err(TailError::NotARecordStart);
                }
                if len >= pos + (RECORD_PREFIX + n) as u64 {
                    let mut record = prefix.to_vec();
                    record.resize(RECORD_PREFIX + n, 0);
                    file.read_exact(&mut record[RECORD_PREFIX..]).map_err(io)?;
                    if !larder_persist::log::verify_record(&record) {
                        return Err(TailError::NotARecordStart);
                    }
                    self.offset += record.len() as u64;
                    return Ok(Some(record));
                }
                return Ok(None);
            }
            // Nothing more in this file: has the writer moved on to a newer one?
            if !self.advance()? {
                return Ok(None);
            }
        }
    }

    /// Open the file that holds `offset`.
    fn open_for(&mut self, offset: u64) -> Result<(), TailError> {
        let headers = self.headers()?;
        let Some((path, header)) = headers
            .iter()
            .rev()
            .find(|(_, h)| h.start_offset <= offset)
            .cloned()
        else {
            let oldest = headers.first().map_or(0, |(_, h)| h.start_offset);
            return Err(TailError::Gone { oldest });
        };
        let file = File::open(&path).map_err(|e| TailError::Io(e.to_string()))?;
        self.file = Some((file, header.start_seq, header.start_offset));
        Ok(())
    }

    /// Move to the file after the current one, if the writer has started it and the current
    /// one ends exactly at our offset.
    fn advance(&mut self) -> Result<bool, TailError> {
        let current = self.file.as_ref().map_or(0, |(_, seq, _)| *seq);
        let headers = self.headers()?;
        let Some((path, header)) = headers.into_iter().find(|(_, h)| h.start_seq > current) else {
            return Ok(false);
        };
        if header.start_offset != self.offset {
            return Ok(false);
        }
        let file = File::open(&path).map_err(|e| TailError::Io(e.to_string()))?;
        self.file = Some((file, header.start_seq, header.start_offset));
        Ok(true)
    }

    /// Every log file's path and header, oldest first.
    fn headers(&self) -> Result<Vec<(PathBuf, Header)>, TailError> {
        let (_, logs) = self.dir.list().map_err(|e| TailError::Io(e.to_string()))?;
        let mut out = Vec::new();
        for seq in logs {
            let path = self.dir.log_path(seq);
            let mut bytes = [0u8; HEADER_LEN];
            let ok = File::open(&path).and_then(|mut f| f.read_exact(&mut bytes));
            if ok.is_err() {
                continue; // being created, or just removed
            }
            if let Ok(h) = Header::decode(&bytes) {
                out.push((path, h));
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use larder_persist::log::{GroupWriter, LogReader};
    use std::io::Write;

    fn record(seq: u64, offset: u64, key: &str) -> Vec<u8> {
        let mut out = Vec::new();
        let mut g = GroupWriter::new(&mut out, seq, offset);
        g.command(0, &[b"SET".as_slice(), key.as_bytes(), b"v"]);
        g.finish();
        out
    }

    /// Records appear to the tail as they are written, never half, across a rotation.
    #[test]
    fn follows_the_log_across_files_and_partial_writes() {
        let tmp = std::env::temp_dir().join(format!("larder-tail-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&tmp);
        let dir = DataDir::open(&tmp).expect("dir");
        let header = |seq, offset| {
            Header {
                start_seq: seq,
                start_offset: offset,
                created_ms: 0,
            }
            .encode()
        };
        let mut f = File::create(dir.log_path(0)).expect("log");
        f.write_all(&header(0, 0)).expect("header");
        let r1 = record(1, 0, "a");
        let r2 = record(2, r1.len() as u64, "b");
        f.write_all(&r1).expect("r1");
        f.write_all(&r2[..5]).expect("half of r2");
        let mut tail = Tail::from(&dir, 0).expect("tail");
        assert_eq!(tail.next_record().expect("read"), Some(r1.clone()));
        assert_eq!(
            tail.next_record().expect("read"),
            None,
            "r2 is not whole yet"
        );
        f.write_all(&r2[5..]).expect("rest of r2");
        assert_eq!(tail.next_record().expect("read"), Some(r2.clone()));
        // The writer rotates: the next file starts where the first ended.
        let end = (r1.len() + r2.len()) as u64;
        let mut g = File::create(dir.log_path(2)).expect("log 2");
        g.write_all(&header(2, end)).expect("header");
        let r3 = record(3, end, "c");
        g.write_all(&r3).expect("r3");
        assert_eq!(tail.next_record().expect("read"), Some(r3.clone()));
        assert_eq!(tail.offset(), end + r3.len() as u64);
        // A tail can start at any record's offset, in any file.
        let mut late = Tail::from(&dir, r1.len() as u64).expect("tail at r2");
        assert_eq!(late.next_record().expect("read"), Some(r2));
        let mut in_second = Tail::from(&dir, end).expect("tail at r3");
        let got = in_second.next_record().expect("read").expect("r3");
        // What a tail hands out parses as the log reader reads it.
        let mut file = header(2, end).to_vec();
        file.extend_from_slice(&got);
        let mut reader = LogReader::new(&file).expect("reader");
        assert_eq!(reader.next_group().expect("group").map(|g| g.seq), Some(3));
        // An offset inside a record is refused; one before every file is gone.
        assert_eq!(
            Tail::from(&dir, 3).and_then(|mut t| t.next_record()),
            Err(TailError::NotARecordStart)
        );
        std::fs::remove_file(dir.log_path(0)).expect("remove");
        assert!(matches!(Tail::from(&dir, 0), Err(TailError::Gone { .. })));
        let _ = std::fs::remove_dir_all(&tmp);
    }
}
