//! `cjson.decode`: JSON text to Lua values, token by token as lua_cjson reads it (a NUL byte
//! ends the input, numbers go through `strtod`), with an explicit stack of open containers.

use mlua::{Lua, Table, Value};

use super::number::strtod;
use super::Config;
use crate::libs::args::{raise, MAX_C_STACK};

enum Tok {
    ObjBegin,
    ObjEnd,
    ArrBegin,
    ArrEnd,
    Str(Vec<u8>),
    Num(f64),
    Bool(bool),
    Null,
    Colon,
    Comma,
    End,
    /// What was wrong, for "found %s".
    Error(&'static str),
}

impl Tok {
    fn name(&self) -> &'static str {
        match self {
            Tok::ObjBegin => "T_OBJ_BEGIN",
            Tok::ObjEnd => "T_OBJ_END",
            Tok::ArrBegin => "T_ARR_BEGIN",
            Tok::ArrEnd => "T_ARR_END",
            Tok::Str(_) => "T_STRING",
            Tok::Num(_) => "T_NUMBER",
            Tok::Bool(_) => "T_BOOLEAN",
            Tok::Null => "T_NULL",
            Tok::Colon => "T_COLON",
            Tok::Comma => "T_COMMA",
            Tok::End => "T_END",
            Tok::Error(what) => what,
        }
    }
}

/// A token and where it starts (0-based).
struct Token {
    tok: Tok,
    index: usize,
}

/// An open container (the table itself is in `Parser::tables`).
enum Open {
    /// The next element's index.
    Array(i64),
    /// The key whose value is being read.
    Object(Vec<u8>),
}

impl Open {
    /// Lua stack slots lua_cjson holds while inside: the table, and an object's key.
    fn slots(&self) -> usize {
        match self {
            Open::Array(..) => 1,
            Open::Object(..) => 2,
        }
    }
}

struct Parser<'a> {
    lua: &'a Lua,
    cfg: &'a Config,
    data: &'a [u8],
    pos: usize,
    open: Vec<Open>,
    /// The open containers' tables at their depth: one Lua reference however deep.
    tables: Table,
    /// The decoder's Lua stack use: its argument plus what open containers hold.
    slots: usize,
}

pub(super) fn decode(lua: &Lua, cfg: &Config, data: &[u8]) -> mlua::Result<Value> {
    if data.len() >= 2 && (data[0] == 0 || data[1] == 0) {
        return Err(raise(lua, "JSON parser does not support UTF-16 or UTF-32"));
    }
    // The C parser reads a NUL-terminated string: a NUL byte ends the input.
    let data = &data[..data.iter().position(|&b| b == 0).unwrap_or(data.len())];
    let tables = lua.create_table()?;
    let mut p = Parser {
        lua,
        cfg,
        data,
        pos: 0,
        open: Vec::new(),
        tables,
        slots: 1,
    };
    let mut token = p.next_token();
    let root = 'value: loop {
        // Read one value starting at `token`.
        let mut value = match token.tok {
            Tok::Str(s) => Value::String(lua.create_string(s)?),
            Tok::Num(n) => Value::Number(n),
            Tok::Bool(b) => Value::Boolean(b),
            Tok::Null => Value::NULL,
            Tok::ObjBegin => {
                p.descend(3)?;
                let table = lua.create_table()?;
                let t = p.next_token();
                if matches!(t.tok, Tok::ObjEnd) {
                    Value::Table(table)
                } else {
                    let key = p.object_key(t)?;
                    p.push(table, Open::Object(key))?;
                    token = p.next_token();
                    continue 'value;
                }
            }
            Tok::ArrBegin => {
                p.descend(2)?;
                let table = lua.create_table()?;
                let t = p.next_token();
                if matches!(t.tok, Tok::ArrEnd) {
                    Value::Table(table)
                } else {
                    p.push(table, Open::Array(1))?;
                    token = t;
                    continue 'value;
                }
            }
            _ => return Err(p.parse_error("value", &token)),
        };
        // Store the value in its container; a container that closes is itself stored.
        loop {
            let depth = p.open.len();
            let Some(open) = p.open.last_mut() else {
                break 'value value;
            };
            let table: Table = p.tables.raw_get(depth)?;
            match open {
                Open::Array(i) => {
                    table.raw_set(*i, value)?;
                    *i += 1;
                    let t = p.next_token();
                    match t.tok {
                        Tok::ArrEnd => value = p.close()?,
                        Tok::Comma => {
                            token = p.next_token();
                            continue 'value;
                        }
                        _ => return Err(p.parse_error("comma or array end", &t)),
                    }
                }
                Open::Object(key) => {
                    table.raw_set(lua.create_string(&key)?, value)?;
                    let t = p.next_token();
                    match t.tok {
                        Tok::ObjEnd => value = p.close()?,
                        Tok::Comma => {
                            let t = p.next_token();
                            let next_key = p.object_key(t)?;
                            if let Some(Open::Object(key)) = p.open.last_mut() {
                                *key = next_key;
                            }
                            token = p.next_token();
                            continue 'value;
                        }
                        _ => return Err(p.parse_error("comma or object end", &t)),
                    }
                }
            }
        }
    };
    let t = p.next_token();
    if !matches!(t.tok, Tok::End) {
        return Err(p.parse_error("the end", &t));
    }
    Ok(root)
}

impl Parser<'_> {
    fn at(&self, i: usize) -> u8 {
        self.data.get(i).copied().unwrap_or(0)
    }

    /// `json_decode_descend`: one more level of nesting, within `decode_max_depth` and the
    /// Lua stack (`slots` is what the new level needs).
    fn descend(&mut self, slots: usize) -> mlua::Result<()> {
        let depth = self.open.len() + 1;
        if depth > self.cfg.decode_max_depth as usize || self.slots + slots > MAX_C_STACK {
            return Err(raise(
                self.lua,
                &format!(
                    "Found too many nested data structures ({depth}) at character {}",
                    self.pos
                ),
            ));
        }
        Ok(())
    }

    fn push(&mut self, table: Table, open: Open) -> mlua::Result<()> {
        self.slots += open.slots();
        self.open.push(open);
        self.tables.raw_set(self.open.len(), table)
    }

    /// Closes the innermost container and returns its table.
    fn close(&mut self) -> mlua::Result<Value> {
        let depth = self.open.len();
        let table: Value = self.tables.raw_get(depth)?;
        self.tables.raw_set(depth, Value::Nil)?;
        if let Some(open) = self.open.pop() {
            self.slots -= open.slots();
        }
        Ok(table)
    }

    /// Reads an object's key and the colon after it.
    fn object_key(&mut self, t: Token) -> mlua::Result<Vec<u8>> {
        let Tok::Str(key) = t.tok else {
            return Err(self.parse_error("object key string", &t));
        };
        let colon = self.next_token();
        if !matches!(colon.tok, Tok::Colon) {
            return Err(self.parse_error("colon", &colon));
        }
        Ok(key)
    }

    fn parse_error(&self, expected: &str, t: &Token) -> mlua::Error {
        raise(
            self.lua,
            &format!(
                "Expected {expected} but found {} at character {}",
                t.tok.name(),
                t.index + 1
            ),
        )
    }

    fn error_at(&self, what: &'static str) -> Token {
        Token {
            tok: Tok::Error(what),
            index: self.pos,
        }
    }

    fn next_token(&mut self) -> Token {
        while matches!(self.at(self.pos), b' ' | b'\t' | b'\n' | b'\r') {
            self.pos += 1;
        }
        let index = self.pos;
        let single = |tok| Token { tok, index };
        let ch = self.at(self.pos);
        let simple = match ch {
            b'{' => Some(Tok::ObjBegin),
            b'}' => Some(Tok::ObjEnd),
            b'[' => Some(Tok::ArrBegin),
            b']' => Some(Tok::ArrEnd),
            b',' => Some(Tok::Comma),
            b':' => Some(Tok::Colon),
            _ => None,
        };
        if let Some(tok) = simple {
            self.pos += 1;
            return single(tok);
        }
        match ch {
            0 => single(Tok::End),
            b'"' => self.string_token(),
            b'-' | b'0'..=b'9' => {
                if !self.cfg.decode_invalid_numbers && self.is_invalid_number() {
                    return self.error_at("invalid number");
                }
                self.number_token()
            }
            b'f' | b'i' | b'I' | b'n' | b'N' | b't' | b'+' => {
                if self.data[self.pos..].starts_with(b"true") {
                    self.pos += 4;
                    single(Tok::Bool(true))
                } else if self.data[self.pos..].starts_with(b"false") {
                    self.pos += 5;
                    single(Tok::Bool(false))
                } else if self.data[self.pos..].starts_with(b"null") {
                    self.pos += 4;
                    single(Tok::Null)
                } else if self.cfg.decode_invalid_numbers && self.is_invalid_number() {
                    self.number_token()
                } else {
                    self.error_at("invalid token")
                }
            }
            _ => self.error_at("invalid token"),
        }
    }

    /// `json_is_invalid_number`: forms `strtod` takes that strict JSON does not.
    fn is_invalid_number(&self) -> bool {
        let mut p = self.pos;
        if self.at(p) == b'+' {
            return true;
        }
        if self.at(p) == b'-' {
            p += 1;
        }
        let c = self.at(p);
        if c == b'0' {
            let c2 = self.at(p + 1);
            return (c2 | 0x20) == b'x' || c2.is_ascii_digit();
        }
        if c <= b'9' {
            return false;
        }
        let word: Vec<u8> = (0..3)
            .map(|i| self.at(p + i).to_ascii_lowercase())
            .collect();
        word == b"inf" || word == b"nan"
    }

    fn number_token(&mut self) -> Token {
        let index = self.pos;
        match strtod(self.data, self.pos) {
            Some((n, next)) if next > self.pos => {
                self.pos = next;
                Token {
                    tok: Tok::Num(n),
                    index,
                }
            }
            _ => self.error_at("invalid number"),
        }
    }

    fn string_token(&mut self) -> Token {
        let index = self.pos;
        self.pos += 1;
        let mut s = Vec::new();
        loop {
            let ch = self.at(self.pos);
            match ch {
                b'"' => break,
                0 => return self.error_at("unexpected end of string"),
                b'\\' => {
                    let esc = match self.at(self.pos + 1) {
                        b'"' => b'"',
                        b'\\' => b'\\',
                        b'/' => b'/',
                        b'b' => 0x08,
                        b't' => b'\t',
                        b'n' => b'\n',
                        b'f' => 0x0c,
                        b'r' => b'\r',
                        b'u' => {
                            if self.unicode_escape(&mut s) {
                                continue;
                            }
                            return self.error_at("invalid unicode escape code");
                        }
                        _ => return self.error_at("invalid escape code"),
                    };
                    s.push(esc);
                    self.pos += 2;
                }
                _ => {
                    s.push(ch);
                    self.pos += 1;
                }
            }
        }
        self.pos += 1;
        Token {
            tok: Tok::Str(s),
            index,
        }
    }

    fn hex4(&self, p: usize) -> Option<u32> {
        (0..4).try_fold(0u32, |acc, i| {
            char::from(self.at(p + i))
                .to_digit(16)
                .map(|d| acc << 4 | d)
        })
    }

    /// `\uXXXX` (or a surrogate pair of them) at `pos`, appended as UTF-8; false when
    /// invalid, leaving `pos` at the backslash.
    fn unicode_escape(&mut self, s: &mut Vec<u8>) -> bool {
        let Some(mut cp) = self.hex4(self.pos + 2) else {
            return false;
        };
        let mut len = 6;
        if cp & 0xF800 == 0xD800 {
            if cp & 0x400 != 0 || self.at(self.pos + 6) != b'\\' || self.at(self.pos + 7) != b'u' {
                return false;
            }
            let Some(low) = self.hex4(self.pos + 8) else {
                return false;
            };
            if low & 0xFC00 != 0xDC00 {
                return false;
            }
            cp = (((cp & 0x3FF) << 10) | (low & 0x3FF)) + 0x10000;
            len = 12;
        }
        let mut buf = [0u8; 4];
        // Every value here is a scalar value: surrogates were paired above.
        match char::from_u32(cp) {
            Some(c) => s.extend_from_slice(c.encode_utf8(&mut buf).as_bytes()),
            None => return false,
        }
        self.pos += len;
        true
    }
}
