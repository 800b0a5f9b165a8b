//! Inline commands (`SET k "a b"\r\n`), as typed into telnet: Redis's `processInlineBuffer`
//! and its argument splitter `sdssplitargs`.

use std::borrow::Cow;

use memchr::memchr;

use super::{Limits, ParseError, Parsed};

/// Parses one inline command line from the start of `buf` (which does not start with `*`).
pub(super) fn parse_inline<'a>(
    buf: &'a [u8],
    limits: &Limits,
    argv: &mut Vec<Cow<'a, [u8]>>,
) -> Result<Parsed, ParseError> {
    // Redis fails once more than max_inline_len bytes are buffered without a newline; a
    // newline at index max_inline_len or earlier is therefore always accepted.
    let window = &buf[..buf.len().min(limits.max_inline_len.saturating_add(1))];
    let Some(newline) = memchr(b'\n', window) else {
        if buf.len() > limits.max_inline_len {
            return Err(ParseError::TooBigInlineRequest);
        }
        return Ok(Parsed::Incomplete {
            min_total: buf.len() + 1,
        });
    };
    let mut end = newline;
    if end > 0 && buf[end - 1] == b'\r' {
        end -= 1;
    }
    split_args(&buf[..end], argv)?;
    Ok(Parsed::Complete {
        consumed: newline + 1,
    })
}

/// C's `isspace` in the C locale, which `sdssplitargs` uses to skip blanks between
/// arguments and to check what follows a closing quote.
#[inline]
fn is_c_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\x0b' | b'\x0c' | b'\r')
}

fn hex_value(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// Splits a line into arguments exactly like Redis's `sdssplitargs`, except that a NUL byte
/// is an ordinary byte rather than the end of the line.
///
/// Quirks kept on purpose: an unquoted argument ends only at space, tab, CR or LF (not at
/// `\v` or `\f`, which are nevertheless skipped between arguments); a quote opening in the
/// middle of an unquoted argument continues the same argument (`a"b c"` is `ab c`); and a
/// closing quote must be followed by whitespace or the end of the line (`"a"b` is an error).
///
/// Arguments without quotes are borrowed from the line; quoted ones are unescaped into owned
/// buffers.
pub(super) fn split_args<'a>(
    line: &'a [u8],
    argv: &mut Vec<Cow<'a, [u8]>>,
) -> Result<(), ParseError> {
    let n = line.len();
    let mut p = 0;
    loop {
        while p < n && is_c_space(line[p]) {
            p += 1;
        }
        if p == n {
            return Ok(());
        }
        let start = p;
        // Where an unquoted argument ends; only read when no quote was seen.
        let mut end = n;
        // Becomes Some once the argument contains a quote and can no longer be borrowed.
        let mut owned: Option<Vec<u8>> = None;
        let mut in_double = false;
        let mut in_single = false;
        loop {
            if in_double {
                let Some(&c) = line.get(p) else {
                    return Err(ParseError::UnbalancedQuotes);
                };
                let out = owned.get_or_insert_with(Vec::new);
                if c == b'\\' && p + 3 < n && line[p + 1] == b'x' {
                    if let (Some(hi), Some(lo)) = (hex_value(line[p + 2]), hex_value(line[p + 3])) {
                        out.push(hi * 16 + lo);
                        p += 4;
                        continue;
                    }
                }
                if c == b'\\' && p + 1 < n {
                    out.push(match line[p + 1] {
                        b'n' => b'\n',
                        b'r' => b'\r',
                        b't' => b'\t',
                        b'b' => b'\x08',
                        b'a' => b'\x07',
                        other => other,
                    });
                    p += 2;
                } else if c == b'"' {
                    if p + 1 < n && !is_c_space(line[p + 1]) {
                        return Err(ParseError::UnbalancedQuotes);
                    }
                    p += 1;
                    break;
                } else {
                    out.push(c);
                    p += 1;
                }
            } else if in_single {
                let Some(&c) = line.get(p) else {
                    return Err(ParseError::UnbalancedQuotes);
                };
                let out = owned.get_or_insert_with(Vec::new);
                if c == b'\\' && line.get(p + 1) == Some(&b'\'') {
                    out.push(b'\'');
                    p += 2;
                } else if c == b'\'' {
                    if p + 1 < n && !is_c_space(line[p + 1]) {
                        return Err(ParseError::UnbalancedQuotes);
                    }
                    p += 1;
                    break;
                } else {
                    out.push(c);
                    p += 1;
                }
            } else {
                let Some(&c) = line.get(p) else {
                    break;
                };
                match c {
                    b' ' | b'\n' | b'\r' | b'\t' => {
                        end = p;
                        p += 1;
                        break;
                    }
                    b'"' | b'\'' => {
                        if c == b'"' {
                            in_double = true;
                        } else {
                            in_single = true;
                        }
                        // Keep what came before the quote: `a"b"` is one argument, `ab`.
                        owned.get_or_insert_with(|| line[start..p].to_vec());
                        p += 1;
                    }
                    _ => {
                        if let Some(out) = owned.as_mut() {
                            out.push(c);
                        }
                        p += 1;
                    }
                }
            }
        }
        argv.push(match owned {
            Some(bytes) => Cow::Owned(bytes),
            // No quote was seen, so the argument is the bytes up to the separator.
            None => Cow::Borrowed(&line[start..end]),
        });
    }
}

#[cfg(test)]
mod tests {
    use crate::request::tests::{check_table, Done, Fail, More, Want};
    use crate::request::Limits;

    #[test]
    fn inline_table() {
        let cases: &[(&[u8], Want)] = &[
            (b"PING\r\n", Done(6, &[b"PING"])),
            (b"PING\n", Done(5, &[b"PING"])),
            (b"\r\n", Done(2, &[])),
            (b"\n", Done(1, &[])),
            (b" \t \r\n", Done(5, &[])),
            (b"get k\r\nget j\r\n", Done(7, &[b"get", b"k"])),
            (b"a\tb  c\r\n", Done(8, &[b"a", b"b", b"c"])),
            (b"a\rb\r\n", Done(5, &[b"a", b"b"])),
            (
                b"set \"a b\" 'c d'\r\n",
                Done(17, &[b"set", b"a b", b"c d"]),
            ),
            (b"\"\\x41\"\n", Done(7, &[b"A"])),
            (b"\"\\x4a\\x4A\"\n", Done(11, &[b"JJ"])),
            (b"\"\\x4g\"\n", Done(7, &[b"x4g"])),
            (b"\"\\x4\"\n", Done(6, &[b"x4"])),
            (
                b"\"\\n\\r\\t\\b\\a\\\\\\\"\\z\"\n",
                Done(19, &[b"\n\r\t\x08\x07\\\"z"]),
            ),
            (b"'it\\'s'\n", Done(8, &[b"it's"])),
            (b"'a\\nb'\n", Done(7, &[b"a\\nb"])),
            (b"\"\" ''\n", Done(6, &[b"", b""])),
            (b"a\"b c\"\n", Done(7, &[b"ab c"])),
            (b"a'b' d\n", Done(7, &[b"ab", b"d"])),
            (
                b"a'b'c d\n",
                Fail("ERR Protocol error: unbalanced quotes in request"),
            ),
            (b"a\x0bb\n", Done(4, &[b"a\x0bb"])),
            (b"\x0b\x0ca\n", Done(4, &[b"a"])),
            (b"\"a\"\x0bb\n", Done(6, &[b"a", b"b"])),
            (b"a\x00b\n", Done(4, &[b"a\x00b"])),
            (b"PING", More(5)),
            (b"PING\r", More(6)),
            (
                b"\"a\n",
                Fail("ERR Protocol error: unbalanced quotes in request"),
            ),
            (
                b"'a\n",
                Fail("ERR Protocol error: unbalanced quotes in request"),
            ),
            (
                b"\"a\"b\n",
                Fail("ERR Protocol error: unbalanced quotes in request"),
            ),
            (
                b"'a'b\n",
                Fail("ERR Protocol error: unbalanced quotes in request"),
            ),
            (
                b"\"a\\\"\n",
                Fail("ERR Protocol error: unbalanced quotes in request"),
            ),
            (
                b"'a\\'\n",
                Fail("ERR Protocol error: unbalanced quotes in request"),
            ),
            (
                b"set k \"v\r\n",
                Fail("ERR Protocol error: unbalanced quotes in request"),
            ),
        ];
        check_table(cases, &Limits::default());
    }
}
