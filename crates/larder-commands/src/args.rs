//! A cursor over a command's arguments: `args.key()?`, `args.i64()?`, `args.finish()?`.

use crate::error::{self, Error, Result};

/// The arguments of one command, `argv[0]` being its name.
pub struct Args<'a> {
    argv: &'a [&'a [u8]],
    pos: usize,
}

impl<'a> Args<'a> {
    /// A cursor positioned after the command name (and subcommand, for containers: see
    /// [`Args::skip`]).
    pub fn new(argv: &'a [&'a [u8]]) -> Args<'a> {
        Args { argv, pos: 1 }
    }

    /// All arguments, name included.
    pub fn argv(&self) -> &'a [&'a [u8]] {
        self.argv
    }

    /// Arguments not consumed yet.
    pub fn remaining(&self) -> usize {
        self.argv.len() - self.pos
    }

    /// The rest, consumed.
    pub fn rest(&mut self) -> &'a [&'a [u8]] {
        let r = &self.argv[self.pos..];
        self.pos = self.argv.len();
        r
    }

    /// Skip `n` arguments (e.g. the subcommand).
    pub fn skip(&mut self, n: usize) {
        self.pos = (self.pos + n).min(self.argv.len());
    }

    /// The next argument without consuming it.
    pub fn peek(&self) -> Option<&'a [u8]> {
        self.argv.get(self.pos).copied()
    }

    /// The next argument. Arity was checked before the handler ran, so a missing argument
    /// here means an optional one: a syntax error.
    pub fn next_arg(&mut self) -> Result<&'a [u8]> {
        let a = self
            .argv
            .get(self.pos)
            .copied()
            .ok_or(Error::Static(error::SYNTAX))?;
        self.pos += 1;
        Ok(a)
    }

    /// The next argument, if any.
    pub fn opt(&mut self) -> Option<&'a [u8]> {
        let a = self.argv.get(self.pos).copied();
        if a.is_some() {
            self.pos += 1;
        }
        a
    }

    /// A key.
    pub fn key(&mut self) -> Result<&'a [u8]> {
        self.next_arg()
    }

    /// A signed 64-bit integer (`ERR value is not an integer or out of range`).
    pub fn i64(&mut self) -> Result<i64> {
        parse_i64(self.next_arg()?).ok_or(Error::Static(error::NOT_INTEGER))
    }

    /// A float (`ERR value is not a valid float`).
    pub fn f64(&mut self) -> Result<f64> {
        parse_f64(self.next_arg()?).ok_or(Error::Static(error::NOT_FLOAT))
    }

    /// Whether the next argument equals `word` (ASCII case-insensitive); consumes it if so.
    pub fn eat(&mut self, word: &str) -> bool {
        match self.peek() {
            Some(a) if a.eq_ignore_ascii_case(word.as_bytes()) => {
                self.pos += 1;
                true
            }
            _ => false,
        }
    }

    /// Fail with a syntax error if arguments remain.
    pub fn finish(&self) -> Result<()> {
        if self.pos < self.argv.len() {
            return Err(Error::Static(error::SYNTAX));
        }
        Ok(())
    }
}

/// Parse like Redis's `string2ll`: optional '-', digits, no leading zeros or spaces, fits i64.
/// (The engine's rule for which members an intset may hold, so the two never disagree.)
pub fn parse_i64(b: &[u8]) -> Option<i64> {
    larder_engine::set::canonical_int(b)
}

/// Parse an unsigned 64-bit decimal (memcached incr/decr, CONFIG memory values).
pub fn parse_u64(b: &[u8]) -> Option<u64> {
    if b.is_empty() || b.len() > 20 || !b.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(b).ok()?.parse().ok()
}

/// Parse a float like Redis's `string2ld`/`strtold`: no spaces, "inf"/"-inf" accepted, NaN
/// rejected.
pub fn parse_f64(b: &[u8]) -> Option<f64> {
    if b.is_empty() || b.len() > 5120 {
        return None;
    }
    if b[0].is_ascii_whitespace() || b[b.len() - 1].is_ascii_whitespace() {
        return None;
    }
    let s = std::str::from_utf8(b).ok()?;
    let v: f64 = match s.to_ascii_lowercase().as_str() {
        "inf" | "+inf" | "infinity" | "+infinity" => f64::INFINITY,
        "-inf" | "-infinity" => f64::NEG_INFINITY,
        _ => {
            // Rust accepts "1e5", "1.", ".5", "+1" like strtod; reject forms strtod refuses.
            if s.contains(['_']) || s.eq_ignore_ascii_case("nan") {
                return None;
            }
            s.parse().ok()?
        }
    };
    (!v.is_nan()).then_some(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn i64_like_redis() {
        assert_eq!(parse_i64(b"0"), Some(0));
        assert_eq!(parse_i64(b"-1"), Some(-1));
        assert_eq!(parse_i64(b"9223372036854775807"), Some(i64::MAX));
        assert_eq!(parse_i64(b"-9223372036854775808"), Some(i64::MIN));
        for bad in [
            &b"9223372036854775808"[..],
            b"01",
            b"-0",
            b"+1",
            b" 1",
            b"1 ",
            b"",
            b"-",
            b"1.0",
        ] {
            assert_eq!(parse_i64(bad), None, "{:?}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn f64_like_redis() {
        assert_eq!(parse_f64(b"1.5"), Some(1.5));
        assert_eq!(parse_f64(b"inf"), Some(f64::INFINITY));
        assert_eq!(parse_f64(b"-inf"), Some(f64::NEG_INFINITY));
        assert_eq!(parse_f64(b"1e3"), Some(1000.0));
        assert_eq!(parse_f64(b"nan"), None);
        assert_eq!(parse_f64(b" 1"), None);
        assert_eq!(parse_f64(b"abc"), None);
    }

    #[test]
    fn cursor() {
        let argv: Vec<&[u8]> = vec![b"SET", b"k", b"v", b"EX", b"10"];
        let mut a = Args::new(&argv);
        assert_eq!(a.key().ok(), Some(&b"k"[..]));
        assert_eq!(a.next_arg().ok(), Some(&b"v"[..]));
        assert!(a.eat("ex"));
        assert_eq!(a.i64().ok(), Some(10));
        assert!(a.finish().is_ok());
        assert!(a.next_arg().is_err());
    }
}
