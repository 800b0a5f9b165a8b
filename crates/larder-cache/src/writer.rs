//! File writing for the builder: the buffered data writer that can read back what it wrote,
//! the streaming index writer, the hash sort, and positional I/O helpers.

use std::fs::File;
use std::io::Write;
use std::path::Path;

use xxhash_rust::xxh3::Xxh3;

use crate::error::Error;
use crate::format::BUCKET_LEN;
use crate::index::home_bucket;

/// Flush threshold of the write buffers.
pub(crate) const WRITE_BUFFER_LEN: usize = 1 << 20;

/// A file being written, with its unflushed tail in memory so that earlier bytes can be read
/// back (to compare keys and deduplicated values) without flushing.
pub(crate) struct DataWriter {
    pub(crate) file: File,
    pub(crate) buf: Vec<u8>,
    /// File offset of `buf[0]`.
    pub(crate) flushed: u64,
    pub(crate) hasher: Xxh3,
}

impl DataWriter {
    #[inline]
    pub(crate) fn pos(&self) -> u64 {
        self.flushed + self.buf.len() as u64
    }

    pub(crate) fn flush(&mut self) -> Result<(), Error> {
        self.hasher.update(&self.buf);
        self.file.write_all(&self.buf)?;
        self.flushed += self.buf.len() as u64;
        self.buf.clear();
        Ok(())
    }

    /// Pads with zeros so that the position is `residue` modulo `modulus`.
    #[inline]
    pub(crate) fn pad_to(&mut self, (modulus, residue): (u64, u64)) {
        let pad = (residue + modulus - self.pos() % modulus) % modulus;
        self.buf.resize(self.buf.len() + pad as usize, 0);
    }

    /// Whether the bytes at file offset `at` equal `want`.
    pub(crate) fn equals(&self, at: u64, want: &[u8]) -> Result<bool, Error> {
        let mut got = vec![0u8; want.len()];
        self.read_at(at, &mut got)?;
        Ok(got == want)
    }

    pub(crate) fn read_at(&self, at: u64, out: &mut [u8]) -> Result<(), Error> {
        let mut filled = 0;
        if at < self.flushed {
            let n = ((self.flushed - at) as usize).min(out.len());
            read_exact_at(&self.file, &mut out[..n], at)?;
            filled = n;
        }
        if filled < out.len() {
            let start = (at + filled as u64 - self.flushed) as usize;
            let rest = &mut out[filled..];
            let src = self
                .buf
                .get(start..start + rest.len())
                .ok_or(Error::corrupt("builder read-back", at as usize))?;
            rest.copy_from_slice(src);
        }
        Ok(())
    }
}

#[cfg(unix)]
pub(crate) fn read_exact_at(file: &File, out: &mut [u8], at: u64) -> std::io::Result<()> {
    std::os::unix::fs::FileExt::read_exact_at(file, out, at)
}

#[cfg(windows)]
pub(crate) fn read_exact_at(file: &File, mut out: &mut [u8], mut at: u64) -> std::io::Result<()> {
    while !out.is_empty() {
        let n = std::os::windows::fs::FileExt::seek_read(file, out, at)?;
        if n == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        out = &mut out[n..];
        at += n as u64;
    }
    Ok(())
}

#[cfg(unix)]
pub(crate) fn write_all_at(file: &File, bytes: &[u8], at: u64) -> std::io::Result<()> {
    std::os::unix::fs::FileExt::write_all_at(file, bytes, at)
}

#[cfg(windows)]
pub(crate) fn write_all_at(file: &File, mut bytes: &[u8], mut at: u64) -> std::io::Result<()> {
    while !bytes.is_empty() {
        let n = std::os::windows::fs::FileExt::seek_write(file, bytes, at)?;
        bytes = &bytes[n..];
        at += n as u64;
    }
    Ok(())
}

pub(crate) fn read_key(w: &DataWriter, offset: u64) -> Result<Vec<u8>, Error> {
    let mut head = [0u8; 3];
    let avail = (w.pos() - offset).min(3) as usize;
    w.read_at(offset, &mut head[..avail])?;
    let (len, after) = crate::format::get_varint(&head[..avail], 0)?;
    let mut key = vec![0u8; len as usize];
    w.read_at(offset + after as u64, &mut key)?;
    Ok(key)
}

#[cfg(unix)]
pub(crate) fn sync_parent_dir(path: &Path) {
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    // Best effort: the rename is already visible; this makes it durable across a crash.
    if let Ok(dir) = File::open(parent) {
        let _ = dir.sync_all();
    }
}

#[cfg(not(unix))]
pub(crate) fn sync_parent_dir(_path: &Path) {}

/// Streams index buckets to the file, hashing them on the way.
pub(crate) struct IndexWriter<'a> {
    pub(crate) file: &'a mut File,
    pub(crate) buf: Vec<u8>,
    pub(crate) hasher: Xxh3,
    pub(crate) buckets: u64,
}

impl IndexWriter<'_> {
    pub(crate) fn push(&mut self, line: &[u8; BUCKET_LEN]) -> Result<(), Error> {
        self.buf.extend_from_slice(line);
        self.buckets += 1;
        if self.buf.len() >= WRITE_BUFFER_LEN {
            self.flush()?;
        }
        Ok(())
    }

    pub(crate) fn push_empty(&mut self, count: u64) -> Result<(), Error> {
        for _ in 0..count {
            self.push(&[0u8; BUCKET_LEN])?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), Error> {
        self.hasher.update(&self.buf);
        self.file.write_all(&self.buf)?;
        self.buf.clear();
        Ok(())
    }

    /// Returns the bucket count and the index checksum.
    pub(crate) fn finish(mut self) -> Result<(u64, u64), Error> {
        self.flush()?;
        Ok((self.buckets, self.hasher.digest()))
    }
}

/// Sorts `(hash, offset)` pairs by hash (then offset): a counting sort by home bucket, whose
/// scatter writes are independent of each other (unlike an in-place permutation, whose chain of
/// dependent random accesses runs at memory latency), then a tiny sort of each bucket's dozen
/// entries. Since the home bucket grows with the hash, the result is fully sorted.
pub(crate) fn sort_by_home(entries: Vec<(u64, u64)>, home_bucket_count: u64) -> Vec<(u64, u64)> {
    let mut starts = vec![0usize; home_bucket_count as usize + 1];
    for &(h, _) in &entries {
        starts[home_bucket(h, home_bucket_count) as usize + 1] += 1;
    }
    for i in 1..starts.len() {
        starts[i] += starts[i - 1];
    }
    let mut fill = starts.clone();
    let mut out = vec![(0u64, 0u64); entries.len()];
    for &(h, off) in &entries {
        let b = home_bucket(h, home_bucket_count) as usize;
        out[fill[b]] = (h, off);
        fill[b] += 1;
    }
    drop(entries);
    for w in starts.windows(2) {
        if w[1] - w[0] > 1 {
            out[w[0]..w[1]].sort_unstable();
        }
    }
    out
}
