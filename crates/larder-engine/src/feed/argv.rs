//! A recorded command's arguments, packed in one buffer.
//!
//! A `Command` record used to own one vector per argument: a SET cost four allocations before
//! anyone read it. [`Argv`] keeps every argument in one buffer, in the encoding the
//! append-only log stores them with (a varint count, then each argument as a varint length
//! and its bytes), so the log copies a recorded command into its record in one piece and
//! the replication stream reads the arguments in place.

use std::fmt;

/// A command's arguments, name first, packed (see the module's notes).
#[derive(Clone, Default, PartialEq, Eq, Hash)]
pub struct Argv {
    buf: Vec<u8>,
    count: u32,
}

impl Argv {
    /// Pack `args`.
    pub fn new<A: AsRef<[u8]>>(args: &[A]) -> Argv {
        let size = varint_len(args.len() as u64)
            + args
                .iter()
                .map(|a| varint_len(a.as_ref().len() as u64) + a.as_ref().len())
                .sum::<usize>();
        let mut buf = Vec::with_capacity(size);
        write_args(&mut buf, args);
        Argv {
            buf,
            count: args.len() as u32,
        }
    }

    /// How many arguments (the name included).
    pub fn len(&self) -> usize {
        self.count as usize
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The arguments in order.
    pub fn iter(&self) -> Args<'_> {
        let mut rest = self.buf.as_slice();
        if !rest.is_empty() {
            read_varint(&mut rest);
        }
        Args {
            rest,
            left: self.count as usize,
        }
    }

    /// Argument `i`, if there is one.
    pub fn get(&self, i: usize) -> Option<&[u8]> {
        self.iter().nth(i)
    }

    /// The packed bytes: the count, then each argument's length and bytes, all lengths as
    /// LEB128 varints (the append-only log's encoding of a command's arguments).
    pub fn encoded(&self) -> &[u8] {
        &self.buf
    }

    /// The arguments as owned vectors (tests, rare paths).
    pub fn to_vecs(&self) -> Vec<Vec<u8>> {
        self.iter().map(<[u8]>::to_vec).collect()
    }
}

impl fmt::Debug for Argv {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.iter().map(String::from_utf8_lossy))
            .finish()
    }
}

impl<'a> IntoIterator for &'a Argv {
    type Item = &'a [u8];
    type IntoIter = Args<'a>;
    fn into_iter(self) -> Args<'a> {
        self.iter()
    }
}

/// The arguments of an [`Argv`], in order.
#[derive(Clone)]
pub struct Args<'a> {
    rest: &'a [u8],
    left: usize,
}

impl<'a> Iterator for Args<'a> {
    type Item = &'a [u8];

    #[inline]
    fn next(&mut self) -> Option<&'a [u8]> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let len = read_varint(&mut self.rest) as usize;
        let (arg, rest) = self.rest.split_at(len);
        self.rest = rest;
        Some(arg)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

impl ExactSizeIterator for Args<'_> {}

fn varint_len(mut v: u64) -> usize {
    let mut n = 1;
    while v >= 0x80 {
        v >>= 7;
        n += 1;
    }
    n
}

/// Append `args` in [`Argv`]'s encoding (the append-only log writes a command's arguments
/// with this too, so both encodings are one).
pub fn write_args<A: AsRef<[u8]>>(out: &mut Vec<u8>, args: &[A]) {
    write_varint(out, args.len() as u64);
    for a in args {
        let a = a.as_ref();
        write_varint(out, a.len() as u64);
        out.extend_from_slice(a);
    }
}

/// Append `v` as an LEB128 varint.
pub fn write_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Reads a varint this module wrote (so always well formed) and advances past it.
#[inline]
fn read_varint(b: &mut &[u8]) -> u64 {
    let mut v = 0u64;
    let mut shift = 0;
    loop {
        let byte = b[0];
        *b = &b[1..];
        v |= u64::from(byte & 0x7f) << shift;
        if byte < 0x80 {
            return v;
        }
        shift += 7;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packs_and_reads_back_every_argument() {
        let long = vec![b'x'; 300];
        let args: Vec<&[u8]> = vec![b"SET", b"", b"key", &long];
        let a = Argv::new(&args);
        assert_eq!(a.len(), 4);
        assert_eq!(a.iter().collect::<Vec<_>>(), args);
        assert_eq!(a.get(2), Some(&b"key"[..]));
        assert_eq!(a.get(4), None);
        // count 4; 3 "SET"; 0; 3 "key"; 300 as a two-byte varint.
        assert_eq!(&a.encoded()[..10], b"\x04\x03SET\x00\x03key");
        assert_eq!(&a.encoded()[10..12], &[0xac, 0x02]);
        assert_eq!(a.encoded().len(), 12 + 300);
        assert_eq!(a.encoded().len(), a.buf.capacity());
        assert!(format!("{a:?}").starts_with(r#"["SET", "", "key", "xxx"#));
    }

    #[test]
    fn empty() {
        let a = Argv::default();
        assert!(a.is_empty());
        assert_eq!(a.iter().count(), 0);
        let b = Argv::new::<&[u8]>(&[]);
        assert!(b.is_empty());
        assert_eq!(b.iter().count(), 0);
        assert_eq!(b.encoded(), b"\x00");
    }
}
