//! The first line of a script or library: `#!lua flags=no-writes,allow-oom` on an EVAL
//! script, `#!lua name=mylib` on a FUNCTION library, and the flags both may carry.
//!
//! Texts are Redis 7.0's (`evalExtractShebangFlags` in eval.c,
//! `functionExtractLibMetaData` in functions.c), without the `ERR ` the reply adds.

/// Script flags: a shebang's `flags=` list for EVAL, `flags = {...}` in register_function.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct ScriptFlags(pub u32);

impl ScriptFlags {
    pub const NO_WRITES: u32 = 1;
    pub const ALLOW_OOM: u32 = 2;
    pub const ALLOW_STALE: u32 = 4;
    pub const NO_CLUSTER: u32 = 8;
    pub const ALLOW_CROSS_SLOT_KEYS: u32 = 16;
    /// An EVAL script without a shebang (Redis's compatibility mode: its commands are
    /// checked one by one, as in Redis 6, instead of the script being refused up front).
    pub const EVAL_COMPAT_MODE: u32 = 1 << 31;

    /// The flags' names as Redis spells them, in Redis's order (FUNCTION LIST shows them so).
    pub const NAMES: [(u32, &'static str); 5] = [
        (Self::NO_WRITES, "no-writes"),
        (Self::ALLOW_OOM, "allow-oom"),
        (Self::ALLOW_STALE, "allow-stale"),
        (Self::NO_CLUSTER, "no-cluster"),
        (Self::ALLOW_CROSS_SLOT_KEYS, "allow-cross-slot-keys"),
    ];

    /// Whether every bit of `f` is set.
    #[inline]
    pub fn has(self, f: u32) -> bool {
        self.0 & f == f
    }

    /// The flag called `name` (exact, case-sensitive as in Redis).
    pub fn parse_name(name: &str) -> Option<u32> {
        Self::NAMES
            .iter()
            .find(|(_, n)| *n == name)
            .map(|(f, _)| *f)
    }

    /// The names of the flags set, in Redis's order.
    pub fn names(self) -> impl Iterator<Item = &'static str> {
        Self::NAMES
            .into_iter()
            .filter(move |(f, _)| self.0 & f != 0)
            .map(|(_, n)| n)
    }
}

/// What a first line says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Shebang {
    /// The engine after `#!` (`lua`).
    pub engine: String,
    /// `name=` (libraries).
    pub name: Option<String>,
    pub flags: ScriptFlags,
}

/// An EVAL script's flags: `EVAL_COMPAT_MODE` without a shebang, else the `flags=` list.
/// The error is Redis's text.
pub fn script_flags(body: &[u8]) -> Result<ScriptFlags, String> {
    if !body.starts_with(b"#!") {
        return Ok(ScriptFlags(ScriptFlags::EVAL_COMPAT_MODE));
    }
    let Some(end) = memchr(b'\n', body) else {
        return Err("Invalid script shebang".into());
    };
    let parts = match split_args(&body[..end]) {
        Some(p) if !p.is_empty() => p,
        _ => return Err("Invalid engine in script shebang".into()),
    };
    if parts[0] != b"#!lua" {
        return Err(format!(
            "Unexpected engine in script shebang: {}",
            String::from_utf8_lossy(&parts[0])
        ));
    }
    let mut flags = 0;
    for part in &parts[1..] {
        let Some(list) = part.strip_prefix(b"flags=") else {
            return Err(format!(
                "Unknown lua shebang option: {}",
                String::from_utf8_lossy(part)
            ));
        };
        // Redis splits on ',' keeping empty pieces, so `flags=` alone names one empty flag
        // and fails, while a missing `flags=` means none.
        for name in list.split(|&b| b == b',') {
            let name = String::from_utf8_lossy(name);
            match ScriptFlags::parse_name(&name) {
                Some(f) => flags |= f,
                None if name.is_empty() && list.is_empty() => {}
                None => return Err(format!("Unexpected flag in script shebang: {name}")),
            }
        }
    }
    Ok(ScriptFlags(flags))
}

/// A library's first line (FUNCTION LOAD): engine and name. The error is Redis's text.
pub fn library(code: &[u8]) -> Result<Shebang, String> {
    if !code.starts_with(b"#!") {
        return Err("Missing library metadata".into());
    }
    let Some(end) = memchr(b'\n', code) else {
        return Err("Invalid library metadata".into());
    };
    let parts = match split_args(&code[..end]) {
        Some(p) if !p.is_empty() => p,
        _ => return Err("Invalid library metadata".into()),
    };
    let engine = String::from_utf8_lossy(&parts[0][2..]).into_owned();
    let mut name = None;
    for part in &parts[1..] {
        if part.len() >= 5 && part[..5].eq_ignore_ascii_case(b"name=") {
            if name.is_some() {
                return Err(
                    "Invalid metadata value, name argument was given multiple times".into(),
                );
            }
            name = Some(String::from_utf8_lossy(&part[5..]).into_owned());
            continue;
        }
        return Err(format!(
            "Invalid metadata value given: {}",
            String::from_utf8_lossy(part)
        ));
    }
    let Some(name) = name else {
        return Err("Library name was not given".into());
    };
    Ok(Shebang {
        engine,
        name: Some(name),
        flags: ScriptFlags::default(),
    })
}

/// Whether `name` is a valid library or function name: letters, digits and `_`, at least one
/// (Redis's `functionsVerifyName`).
pub fn valid_name(name: &str) -> bool {
    !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

fn memchr(needle: u8, hay: &[u8]) -> Option<usize> {
    hay.iter().position(|&b| b == needle)
}

/// Split a line into arguments as Redis's `sdssplitargs` does: blanks separate, `"..."` with
/// backslash escapes (`\n`, `\xHH`, ...) and `'...'` (only `\'` escaped) quote, and a closing
/// quote must be followed by a blank or the end. `None` for unbalanced quotes.
fn split_args(line: &[u8]) -> Option<Vec<Vec<u8>>> {
    let mut out = Vec::new();
    let mut i = 0;
    loop {
        while i < line.len() && line[i].is_ascii_whitespace() {
            i += 1;
        }
        if i >= line.len() {
            return Some(out);
        }
        let mut cur = Vec::new();
        let (mut in_dq, mut in_sq) = (false, false);
        loop {
            if in_dq {
                let c = *line.get(i)?;
                if c == b'\\' && i + 3 < line.len() && line[i + 1] == b'x' {
                    let hex = |b: u8| (b as char).to_digit(16);
                    if let (Some(h), Some(l)) = (hex(line[i + 2]), hex(line[i + 3])) {
                        cur.push((h * 16 + l) as u8);
                        i += 4;
                        continue;
                    }
                }
                if c == b'\\' && i + 1 < line.len() {
                    cur.push(match line[i + 1] {
                        b'n' => b'\n',
                        b'r' => b'\r',
                        b't' => b'\t',
                        b'b' => 8,
                        b'a' => 7,
                        other => other,
                    });
                    i += 2;
                } else if c == b'"' {
                    // The closing quote must end the argument.
                    if line.get(i + 1).is_some_and(|b| !b.is_ascii_whitespace()) {
                        return None;
                    }
                    i += 1;
                    break;
                } else {
                    cur.push(c);
                    i += 1;
                }
            } else if in_sq {
                let c = *line.get(i)?;
                if c == b'\\' && line.get(i + 1) == Some(&b'\'') {
                    cur.push(b'\'');
                    i += 2;
                } else if c == b'\'' {
                    if line.get(i + 1).is_some_and(|b| !b.is_ascii_whitespace()) {
                        return None;
                    }
                    i += 1;
                    break;
                } else {
                    cur.push(c);
                    i += 1;
                }
            } else {
                match line.get(i) {
                    None => break,
                    Some(c) if c.is_ascii_whitespace() => break,
                    Some(b'"') => in_dq = true,
                    Some(b'\'') => in_sq = true,
                    Some(&c) => cur.push(c),
                }
                i += 1;
            }
        }
        out.push(cur);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eval_flags() {
        assert_eq!(
            script_flags(b"return 1"),
            Ok(ScriptFlags(ScriptFlags::EVAL_COMPAT_MODE))
        );
        assert_eq!(script_flags(b"#!lua\nreturn 1"), Ok(ScriptFlags(0)));
        assert_eq!(
            script_flags(b"#!lua flags=no-writes,allow-oom\nreturn 1"),
            Ok(ScriptFlags(ScriptFlags::NO_WRITES | ScriptFlags::ALLOW_OOM))
        );
        assert_eq!(
            script_flags(b"#!lua flags=\nreturn 1"),
            Ok(ScriptFlags(0)),
            "an empty list names no flag"
        );
        assert_eq!(
            script_flags(b"#!lua flags=no-writes,,\n"),
            Err("Unexpected flag in script shebang: ".into())
        );
        assert_eq!(script_flags(b"#!lua"), Err("Invalid script shebang".into()));
        assert_eq!(
            script_flags(b"#!python\n"),
            Err("Unexpected engine in script shebang: #!python".into())
        );
        assert_eq!(
            script_flags(b"#!lua name=x\n"),
            Err("Unknown lua shebang option: name=x".into())
        );
        assert_eq!(
            script_flags(b"#!lua flags=bogus\n"),
            Err("Unexpected flag in script shebang: bogus".into())
        );
        assert_eq!(
            script_flags(b"#!lua \"unbalanced\n"),
            Err("Invalid engine in script shebang".into())
        );
    }

    #[test]
    fn library_metadata() {
        let s = library(b"#!lua name=mylib\nredis.register_function('f', function() end)")
            .expect("valid");
        assert_eq!(
            (s.engine.as_str(), s.name.as_deref()),
            ("lua", Some("mylib"))
        );
        assert_eq!(
            library(b"#!LUA NAME=x\n").map(|s| (s.engine, s.name)),
            Ok(("LUA".into(), Some("x".into())))
        );
        assert_eq!(library(b"return 1"), Err("Missing library metadata".into()));
        assert_eq!(
            library(b"#!lua name=x"),
            Err("Invalid library metadata".into())
        );
        assert_eq!(
            library(b"#!lua\n"),
            Err("Library name was not given".into())
        );
        assert_eq!(
            library(b"#!lua name=a name=b\n"),
            Err("Invalid metadata value, name argument was given multiple times".into())
        );
        assert_eq!(
            library(b"#!lua foo=bar\n"),
            Err("Invalid metadata value given: foo=bar".into())
        );
        assert_eq!(
            library(b"#!lua \"name=a b\"\n").map(|s| s.name),
            Ok(Some("a b".into()))
        );
    }

    #[test]
    fn names_and_split() {
        assert!(valid_name("my_lib1"));
        assert!(!valid_name(""));
        assert!(!valid_name("a-b"));
        assert_eq!(
            split_args(b"a 'b c' \"d\\x41\\n\""),
            Some(vec![b"a".to_vec(), b"b c".to_vec(), b"dA\n".to_vec()])
        );
        assert_eq!(split_args(b"'a'b"), None);
        assert_eq!(
            ScriptFlags(ScriptFlags::NO_WRITES | ScriptFlags::NO_CLUSTER)
                .names()
                .collect::<Vec<_>>(),
            ["no-writes", "no-cluster"]
        );
    }
}
