//! Redis's glob-style pattern matching (`stringmatchlen`): `*`, `?`, `[...]` with ranges and
//! `^` negation, and `\` escapes. Used by KEYS, SCAN MATCH, CONFIG GET and PSUBSCRIBE.

/// Whether `string` matches `pattern`. `nocase` folds ASCII case.
///
/// Iterative with a single backtrack point (the last `*`), so hostile patterns such as
/// `*a*a*a*...b` take O(pattern × string) time instead of exponential time.
pub fn matches(pattern: &[u8], string: &[u8], nocase: bool) -> bool {
    let (mut p, mut s) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while s < string.len() {
        if p < pattern.len() && pattern[p] == b'*' {
            while p < pattern.len() && pattern[p] == b'*' {
                p += 1;
            }
            if p == pattern.len() {
                return true;
            }
            star = Some((p, s));
            continue;
        }
        if p < pattern.len() {
            if let Some(next_p) = match_one(pattern, p, string[s], nocase) {
                p = next_p;
                s += 1;
                continue;
            }
        }
        match star {
            Some((sp, ss)) => {
                p = sp;
                s = ss + 1;
                star = Some((sp, ss + 1));
            }
            None => return false,
        }
    }
    while p < pattern.len() && pattern[p] == b'*' {
        p += 1;
    }
    p == pattern.len()
}

fn eq(a: u8, b: u8, nocase: bool) -> bool {
    if nocase {
        a.eq_ignore_ascii_case(&b)
    } else {
        a == b
    }
}

/// Match the single (non-`*`) pattern token at `p` against `c`; on success return the index
/// just past the token.
fn match_one(pattern: &[u8], mut p: usize, c: u8, nocase: bool) -> Option<usize> {
    match pattern[p] {
        b'?' => Some(p + 1),
        b'\\' if p + 1 < pattern.len() => eq(pattern[p + 1], c, nocase).then_some(p + 2),
        b'[' => {
            p += 1;
            let not = pattern.get(p) == Some(&b'^');
            if not {
                p += 1;
            }
            let mut matched = false;
            while p < pattern.len() && pattern[p] != b']' {
                if pattern[p] == b'\\' && p + 1 < pattern.len() {
                    p += 1;
                    matched |= pattern[p] == c;
                } else if p + 2 < pattern.len() && pattern[p + 1] == b'-' {
                    let (mut lo, mut hi, mut ch) = (pattern[p], pattern[p + 2], c);
                    if lo > hi {
                        std::mem::swap(&mut lo, &mut hi);
                    }
                    if nocase {
                        (lo, hi, ch) = (
                            lo.to_ascii_lowercase(),
                            hi.to_ascii_lowercase(),
                            ch.to_ascii_lowercase(),
                        );
                    }
                    matched |= ch >= lo && ch <= hi;
                    p += 2;
                } else {
                    matched |= eq(pattern[p], c, nocase);
                }
                p += 1;
            }
            // An unterminated class ends at the pattern's end, as in Redis.
            (matched != not).then_some((p + 1).min(pattern.len()))
        }
        other => eq(other, c, nocase).then_some(p + 1),
    }
}

#[cfg(test)]
mod tests {
    use super::matches;

    #[test]
    fn table() {
        let cases: &[(&str, &str, bool)] = &[
            ("*", "", true),
            ("*", "anything", true),
            ("h?llo", "hello", true),
            ("h?llo", "hllo", false),
            ("h*llo", "heeeello", true),
            ("h[ae]llo", "hallo", true),
            ("h[ae]llo", "hillo", false),
            ("h[^e]llo", "hallo", true),
            ("h[^e]llo", "hello", false),
            ("h[a-b]llo", "hbllo", true),
            ("h[b-a]llo", "hallo", true),
            ("h\\*llo", "h*llo", true),
            ("h\\*llo", "hello", false),
            ("user:*", "user:1", true),
            ("user:*", "use", false),
            ("a*b*c", "aXXbYYc", true),
            ("a*b*c", "aXXbYY", false),
            ("", "", true),
            ("", "a", false),
            ("abc", "abc", true),
            ("*a", "ba", true),
            ("max*", "maxmemory", true),
            ("*memory*", "maxmemory-policy", true),
        ];
        for (p, s, want) in cases {
            assert_eq!(
                matches(p.as_bytes(), s.as_bytes(), false),
                *want,
                "{p} vs {s}"
            );
        }
        assert!(matches(b"HELLO", b"hello", true));
    }

    #[test]
    fn hostile_pattern_terminates() {
        let p = "*a".repeat(50);
        let t = std::time::Instant::now();
        let s = "a".repeat(60) + "b";
        assert!(!matches(p.as_bytes(), s.as_bytes(), false));
        assert!(t.elapsed().as_secs() < 1);
    }
}
