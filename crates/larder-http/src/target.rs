//! Taking a request target apart: path segments, percent-decoding, query parameters.

use std::borrow::Cow;

/// The path's segments between slashes, still percent-encoded (`/v1/kv/a%2Fb` gives `v1`,
/// `kv`, `a%2Fb`). A trailing slash gives a last empty segment.
pub fn path_segments(path: &str) -> impl Iterator<Item = &str> {
    path.strip_prefix('/').unwrap_or(path).split('/')
}

/// Decodes `%XX` escapes into any bytes; with `plus_is_space` (query strings), `+` is a space.
/// `None` when an escape is malformed.
pub fn percent_decode(s: &str, plus_is_space: bool) -> Option<Cow<'_, [u8]>> {
    let b = s.as_bytes();
    if !b.iter().any(|&c| c == b'%' || (plus_is_space && c == b'+')) {
        return Some(Cow::Borrowed(b));
    }
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'%' => {
                let hex = b.get(i + 1..i + 3)?;
                let hi = (hex[0] as char).to_digit(16)?;
                let lo = (hex[1] as char).to_digit(16)?;
                out.push((hi * 16 + lo) as u8);
                i += 3;
            }
            b'+' if plus_is_space => {
                out.push(b' ');
                i += 1;
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    Some(Cow::Owned(out))
}

/// Encodes bytes as one path segment (or query value): unreserved characters stay, every
/// other byte becomes `%XX`.
pub fn percent_encode(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len());
    for &b in bytes {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            s.push(b as char);
        } else {
            s.push('%');
            s.push(
                char::from_digit(u32::from(b >> 4), 16)
                    .unwrap_or('0')
                    .to_ascii_uppercase(),
            );
            s.push(
                char::from_digit(u32::from(b & 15), 16)
                    .unwrap_or('0')
                    .to_ascii_uppercase(),
            );
        }
    }
    s
}

/// A query string's parameters.
#[derive(Clone, Copy, Debug)]
pub struct Query<'a>(pub &'a str);

impl<'a> Query<'a> {
    /// Every `name=value` pair, decoded (a pair that does not decode is skipped).
    pub fn pairs(&self) -> impl Iterator<Item = (Cow<'a, [u8]>, Cow<'a, [u8]>)> {
        self.0.split('&').filter(|p| !p.is_empty()).filter_map(|p| {
            let (n, v) = p.split_once('=').unwrap_or((p, ""));
            Some((percent_decode(n, true)?, percent_decode(v, true)?))
        })
    }

    /// The first value of `name`, decoded.
    pub fn get(&self, name: &str) -> Option<Cow<'a, [u8]>> {
        self.pairs()
            .find(|(n, _)| n.as_ref() == name.as_bytes())
            .map(|(_, v)| v)
    }

    /// Every value of `name`, decoded.
    pub fn all(&self, name: &'a str) -> impl Iterator<Item = Cow<'a, [u8]>> + 'a {
        self.pairs()
            .filter(move |(n, _)| n.as_ref() == name.as_bytes())
            .map(|(_, v)| v)
    }

    /// The first value of `name` as UTF-8 text.
    pub fn text(&self, name: &str) -> Option<String> {
        self.get(name)
            .map(|v| String::from_utf8_lossy(&v).into_owned())
    }
}

/// A duration: a number of seconds, or a number with a unit `ms`, `s`, `m` or `h`
/// (`30s`, `1500ms`, `2m`). `None` when malformed or negative.
pub fn parse_duration_ms(s: &str) -> Option<u64> {
    let s = s.trim();
    let (num, mult) = if let Some(n) = s.strip_suffix("ms") {
        (n, 1)
    } else if let Some(n) = s.strip_suffix('s') {
        (n, 1000)
    } else if let Some(n) = s.strip_suffix('m') {
        (n, 60_000)
    } else if let Some(n) = s.strip_suffix('h') {
        (n, 3_600_000)
    } else {
        (s, 1000)
    };
    if num.is_empty() || !num.bytes().all(|b| b.is_ascii_digit()) || num.len() > 12 {
        return None;
    }
    num.parse::<u64>().ok()?.checked_mul(mult)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_and_decoding() {
        let segs: Vec<&str> = path_segments("/v1/kv/a%2Fb%00%ff").collect();
        assert_eq!(segs, ["v1", "kv", "a%2Fb%00%ff"]);
        assert_eq!(
            percent_decode(segs[2], false).as_deref(),
            Some(&b"a/b\0\xff"[..])
        );
        assert_eq!(percent_decode("a+b", false).as_deref(), Some(&b"a+b"[..]));
        assert_eq!(percent_decode("a+b", true).as_deref(), Some(&b"a b"[..]));
        assert_eq!(percent_decode("%4", false), None);
        assert_eq!(percent_decode("%zz", false), None);
        for b in [b"plain".as_slice(), b"\0\xff/ %+", b""] {
            let e = percent_encode(b);
            assert_eq!(percent_decode(&e, false).as_deref(), Some(b));
        }
    }

    #[test]
    fn query() {
        let q = Query("prefix=user%3A&count=10&x&prefix=z");
        assert_eq!(q.get("prefix").as_deref(), Some(&b"user:"[..]));
        assert_eq!(q.text("count").as_deref(), Some("10"));
        assert_eq!(q.get("x").as_deref(), Some(&b""[..]));
        assert_eq!(q.all("prefix").count(), 2);
        assert_eq!(q.get("nope"), None);
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration_ms("30s"), Some(30_000));
        assert_eq!(parse_duration_ms("30"), Some(30_000));
        assert_eq!(parse_duration_ms("1500ms"), Some(1500));
        assert_eq!(parse_duration_ms("2m"), Some(120_000));
        assert_eq!(parse_duration_ms("-1s"), None);
        assert_eq!(parse_duration_ms("s"), None);
    }
}
