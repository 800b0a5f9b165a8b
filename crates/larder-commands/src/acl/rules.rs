//! A user's rules as ACL SETUSER builds them (Redis 7.0's `ACLSetUser` / `ACLSetSelector`):
//! flags, password hashes, and selectors (the root one first), and their description in the
//! form ACL LIST and ACL SAVE write.

use std::collections::BTreeMap;

use sha2::{Digest, Sha256};

use super::access;
use super::categories::{self, CommandIndex};

/// User flags, with Redis's values.
pub mod flag {
    pub const ENABLED: u8 = 1;
    pub const DISABLED: u8 = 2;
    pub const NOPASS: u8 = 4;
    pub const SANITIZE_PAYLOAD: u8 = 8;
    pub const SANITIZE_PAYLOAD_SKIP: u8 = 16;

    /// Names in the order ACL LIST and ACL GETUSER show them.
    pub const NAMES: &[(u8, &str)] = &[
        (ENABLED, "on"),
        (DISABLED, "off"),
        (NOPASS, "nopass"),
        (SANITIZE_PAYLOAD_SKIP, "skip-sanitize-payload"),
        (SANITIZE_PAYLOAD, "sanitize-payload"),
    ];
}

/// Why a rule was refused (Redis's errno values in `ACLSetUser`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RuleError {
    UnknownName,
    Syntax,
    KeyAfterAll,
    ChannelAfterAll,
    NoSuchPassword,
    BadHash,
    Duplicate,
    SubcommandFirstArg,
}

impl RuleError {
    /// Redis's `ACLSetUserStringError` text.
    pub fn message(self) -> &'static str {
        match self {
            RuleError::UnknownName => "Unknown command or category name in ACL",
            RuleError::Syntax => "Syntax error",
            RuleError::KeyAfterAll => {
                "Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid and \
                 does not have any effect. Try 'resetkeys' to start with an empty list of \
                 patterns"
            }
            RuleError::ChannelAfterAll => {
                "Adding a pattern after the * pattern (or the 'allchannels' flag) is not valid \
                 and does not have any effect. Try 'resetchannels' to start with an empty list \
                 of channels"
            }
            RuleError::NoSuchPassword => {
                "The password you are trying to remove from the user does not exist"
            }
            RuleError::BadHash => {
                "The password hash must be exactly 64 characters and contain only lowercase \
                 hexadecimal characters"
            }
            RuleError::Duplicate => {
                "Duplicate user found. A user can only be defined once in config files"
            }
            RuleError::SubcommandFirstArg => "Allowing first-arg of a subcommand is not supported",
        }
    }
}

/// The SHA-256 of a password in lower-case hex, as Redis stores it.
pub fn hash_password(pass: &[u8]) -> String {
    let digest = Sha256::digest(pass);
    let mut hex = String::with_capacity(64);
    for b in digest {
        hex.push(char::from(b"0123456789abcdef"[usize::from(b >> 4)]));
        hex.push(char::from(b"0123456789abcdef"[usize::from(b & 15)]));
    }
    hex
}

/// Compare two hashes in time that does not depend on where they differ.
pub fn hashes_equal(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

fn valid_hash(h: &[u8]) -> bool {
    h.len() == 64
        && h.iter()
            .all(|&c| c.is_ascii_digit() || (b'a'..=b'f').contains(&c))
}

/// C's `isspace` or NUL: not allowed in user names and patterns.
pub fn has_spaces(s: &[u8]) -> bool {
    s.iter()
        .any(|&c| matches!(c, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c | 0))
}

/// A set of permissions: commands, key patterns with their access, channel patterns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Selector {
    pub root: bool,
    pub allkeys: bool,
    pub allchannels: bool,
    /// Every command, with no bit test needed (cleared when any command is removed).
    pub allcommands: bool,
    /// Set by `+@all`: the user may also run commands added later (Redis's reserved bit);
    /// it picks `+@all` or `-@all` as the start of a description.
    future: bool,
    commands: Vec<u64>,
    /// First arguments allowed for an otherwise refused command (`+select|0`), by id.
    firstargs: BTreeMap<usize, Vec<Vec<u8>>>,
    /// Key patterns with their `access` bits, in the order given.
    pub patterns: Vec<(Vec<u8>, u8)>,
    pub channels: Vec<Vec<u8>>,
}

impl Selector {
    pub fn new(root: bool, index: &CommandIndex) -> Selector {
        Selector {
            root,
            allkeys: false,
            allchannels: false,
            allcommands: false,
            future: false,
            commands: vec![0; index.len().div_ceil(64)],
            firstargs: BTreeMap::new(),
            patterns: Vec::new(),
            channels: Vec::new(),
        }
    }

    /// Whether the command with this id may run (`allcommands` aside).
    #[inline]
    pub fn allowed(&self, id: usize) -> bool {
        self.commands
            .get(id / 64)
            .is_some_and(|w| w & (1 << (id % 64)) != 0)
    }

    /// Whether `arg` is an allowed first argument of command `id`.
    pub fn first_arg_allowed(&self, id: usize, arg: &[u8]) -> bool {
        self.firstargs
            .get(&id)
            .is_some_and(|args| args.iter().any(|a| a.eq_ignore_ascii_case(arg)))
    }

    fn set_bit(&mut self, id: usize, allow: bool) {
        if let Some(w) = self.commands.get_mut(id / 64) {
            if allow {
                *w |= 1 << (id % 64);
            } else {
                *w &= !(1 << (id % 64));
                self.allcommands = false;
            }
        }
    }

    /// Allow or refuse a command, and all its subcommands for a container.
    fn change(&mut self, index: &CommandIndex, id: usize, allow: bool) {
        self.set_bit(id, allow);
        self.firstargs.remove(&id);
        for sub in index.entry(id).subs.clone() {
            self.set_bit(sub, allow);
        }
    }

    fn change_category(&mut self, index: &CommandIndex, mask: u32, allow: bool) {
        for id in 0..index.len() {
            if index.entry(id).mask & mask != 0 {
                self.change(index, id, allow);
            }
        }
    }

    fn all_commands(&mut self, allow: bool) {
        let word = if allow { u64::MAX } else { 0 };
        self.commands.iter_mut().for_each(|w| *w = word);
        self.allcommands = allow;
        self.future = allow;
        self.firstargs.clear();
    }

    /// Apply one selector rule (`ACLSetSelector`).
    pub fn apply(&mut self, op: &[u8], index: &CommandIndex) -> Result<(), RuleError> {
        let is = |word: &str| op.eq_ignore_ascii_case(word.as_bytes());
        if op.is_empty() {
            return Err(RuleError::Syntax);
        }
        if is("allkeys") || is("~*") {
            self.allkeys = true;
            self.patterns.clear();
        } else if is("resetkeys") {
            self.allkeys = false;
            self.patterns.clear();
        } else if is("allchannels") || is("&*") {
            self.allchannels = true;
            self.channels.clear();
        } else if is("resetchannels") {
            self.allchannels = false;
            self.channels.clear();
        } else if is("allcommands") || is("+@all") {
            self.all_commands(true);
        } else if is("nocommands") || is("-@all") {
            self.all_commands(false);
        } else if op[0] == b'~' || op[0] == b'%' {
            if self.allkeys {
                return Err(RuleError::KeyAfterAll);
            }
            let (bits, pattern) = key_pattern(op)?;
            if has_spaces(pattern) {
                return Err(RuleError::Syntax);
            }
            match self.patterns.iter_mut().find(|(p, _)| p == pattern) {
                Some((_, b)) => *b |= bits,
                None => self.patterns.push((pattern.to_vec(), bits)),
            }
        } else if op[0] == b'&' {
            if self.allchannels {
                return Err(RuleError::ChannelAfterAll);
            }
            let pattern = &op[1..];
            if has_spaces(pattern) {
                return Err(RuleError::Syntax);
            }
            if !self.channels.iter().any(|c| c == pattern) {
                self.channels.push(pattern.to_vec());
            }
        } else if op[0] == b'+' && op.get(1) != Some(&b'@') {
            self.allow_command(&op[1..], index)?;
        } else if op[0] == b'-' && op.get(1) != Some(&b'@') {
            let id = index.find(&op[1..]).ok_or(RuleError::UnknownName)?;
            self.change(index, id, false);
        } else if (op[0] == b'+' || op[0] == b'-') && op.get(1) == Some(&b'@') {
            let mask = categories::bit(&op[2..]).ok_or(RuleError::UnknownName)?;
            self.change_category(index, mask, op[0] == b'+');
        } else {
            return Err(RuleError::Syntax);
        }
        Ok(())
    }

    /// `+cmd`, `+container|sub`, or `+cmd|firstarg`.
    fn allow_command(&mut self, name: &[u8], index: &CommandIndex) -> Result<(), RuleError> {
        let Some(bar) = name.iter().rposition(|&b| b == b'|') else {
            let id = index.find(name).ok_or(RuleError::UnknownName)?;
            self.change(index, id, true);
            return Ok(());
        };
        let (cmd, sub) = (&name[..bar], &name[bar + 1..]);
        let id = index.find(cmd).ok_or(RuleError::UnknownName)?;
        let entry = index.entry(id);
        if entry.parent.is_some() {
            return Err(RuleError::SubcommandFirstArg);
        }
        if sub.is_empty() {
            return Err(RuleError::Syntax);
        }
        if entry.subs.is_empty() {
            let args = self.firstargs.entry(id).or_default();
            if !args.iter().any(|a| a.eq_ignore_ascii_case(sub)) {
                args.push(sub.to_vec());
            }
        } else {
            let sub_id = index.find(name).ok_or(RuleError::UnknownName)?;
            self.change(index, sub_id, true);
        }
        Ok(())
    }

    /// How many commands of a category this bit set allows and refuses.
    fn count_category(commands: &[u64], index: &CommandIndex, mask: u32) -> (usize, usize) {
        let (mut on, mut off) = (0, 0);
        for id in 0..index.len() {
            if index.entry(id).mask & mask != 0 {
                if commands[id / 64] & (1 << (id % 64)) != 0 {
                    on += 1;
                } else {
                    off += 1;
                }
            }
        }
        (on, off)
    }

    /// The command rules that rebuild this selector's bit set
    /// (`ACLDescribeSelectorCommandRules`): `+@all` or `-@all`, the categories that fit
    /// best, then single commands.
    pub fn describe_commands(&self, index: &CommandIndex) -> Vec<u8> {
        let additive = !self.future;
        let mut rules: Vec<u8> = if additive {
            b"-@all ".to_vec()
        } else {
            b"+@all ".to_vec()
        };
        let mut fake = Selector::new(false, index);
        fake.all_commands(!additive);
        let mut temp = self.commands.clone();
        let mut applied = [false; categories::NAMES.len()];
        loop {
            let mut best = None;
            let (mut min_diff, mut max_same) = (usize::MAX, 0);
            for (j, done) in applied.iter().enumerate() {
                if *done {
                    continue;
                }
                let (on, off) = Selector::count_category(&temp, index, 1 << j);
                let (diff, same) = if additive { (off, on) } else { (on, off) };
                if same > diff && (diff < min_diff || (diff == min_diff && same > max_same)) {
                    best = Some(j);
                    min_diff = diff;
                    max_same = same;
                }
            }
            let Some(j) = best else { break };
            fake.change_category(index, 1 << j, additive);
            let mut t = Selector::new(false, index);
            t.commands = temp;
            t.change_category(index, 1 << j, !additive);
            temp = t.commands;
            rules.push(if additive { b'+' } else { b'-' });
            rules.extend_from_slice(categories::NAMES[j].as_bytes());
            rules.push(b' ');
            applied[j] = true;
        }
        for &id in index.ordered() {
            let (user_bit, fake_bit) = (self.allowed(id), fake.allowed(id));
            let name = &index.entry(id).full_name;
            if user_bit != fake_bit {
                rules.push(if user_bit { b'+' } else { b'-' });
                rules.extend_from_slice(name.as_bytes());
                rules.push(b' ');
                fake.change(index, id, user_bit);
            }
            if !user_bit {
                for arg in self.firstargs.get(&id).into_iter().flatten() {
                    rules.push(b'+');
                    rules.extend_from_slice(name.as_bytes());
                    rules.push(b'|');
                    rules.extend_from_slice(arg);
                    rules.push(b' ');
                }
            }
        }
        rules.pop();
        rules
    }

    /// The key patterns as ACL GETUSER shows them (`~*`, or `~a %R~b`), bytes as given.
    pub fn describe_keys(&self) -> Vec<u8> {
        if self.allkeys {
            return b"~*".to_vec();
        }
        let pats: Vec<Vec<u8>> = self
            .patterns
            .iter()
            .map(|(p, bits)| pattern_bytes(p, *bits))
            .collect();
        pats.join(&b' ')
    }

    /// The channel patterns as ACL GETUSER shows them (`&*`, or `&a &b`).
    pub fn describe_channels(&self) -> Vec<u8> {
        if self.allchannels {
            return b"&*".to_vec();
        }
        let pats: Vec<Vec<u8>> = self
            .channels
            .iter()
            .map(|c| [b"&", &c[..]].concat())
            .collect();
        pats.join(&b' ')
    }

    /// The selector in ACL LIST form (`ACLDescribeSelector`).
    fn describe(&self, index: &CommandIndex) -> Vec<u8> {
        let mut s = Vec::new();
        if self.allkeys {
            s.extend_from_slice(b"~* ");
        } else {
            for (p, bits) in &self.patterns {
                s.extend_from_slice(&pattern_bytes(p, *bits));
                s.push(b' ');
            }
        }
        if self.allchannels {
            s.extend_from_slice(b"&* ");
        } else {
            s.extend_from_slice(b"resetchannels ");
            for c in &self.channels {
                s.push(b'&');
                s.extend_from_slice(c);
                s.push(b' ');
            }
        }
        s.extend_from_slice(&self.describe_commands(index));
        s
    }
}

/// `~p` (read and write), `%R~p`, `%W~p`, `%RW~p`: the access bits and the pattern.
fn key_pattern(op: &[u8]) -> Result<(u8, &[u8]), RuleError> {
    if op[0] == b'~' {
        return Ok((access::READ | access::WRITE, &op[1..]));
    }
    let mut bits = 0;
    let mut offset = 1;
    while offset < op.len() {
        let c = op[offset].to_ascii_uppercase();
        if c == b'R' && bits & access::READ == 0 {
            bits |= access::READ;
        } else if c == b'W' && bits & access::WRITE == 0 {
            bits |= access::WRITE;
        } else if op[offset] == b'~' {
            offset += 1;
            break;
        } else {
            return Err(RuleError::Syntax);
        }
        offset += 1;
    }
    // Redis accepts `%~p`, a pattern that grants nothing, and then cannot describe it.
    if bits == 0 {
        return Err(RuleError::Syntax);
    }
    Ok((bits, &op[offset..]))
}

fn pattern_bytes(pattern: &[u8], bits: u8) -> Vec<u8> {
    let prefix: &[u8] = match bits {
        access::READ => b"%R~",
        access::WRITE => b"%W~",
        _ => b"~",
    };
    [prefix, pattern].concat()
}

/// Everything about a user but its name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rules {
    pub flags: u8,
    /// SHA-256 hashes in lower-case hex.
    pub passwords: Vec<String>,
    /// The root selector first.
    pub selectors: Vec<Selector>,
}

impl Rules {
    /// A new user: off, no passwords, no permissions (`ACLCreateUser`).
    pub fn new(index: &CommandIndex) -> Rules {
        Rules {
            flags: flag::DISABLED,
            passwords: Vec::new(),
            selectors: vec![Selector::new(true, index)],
        }
    }

    /// The default user: `on nopass ~* &* +@all`.
    pub fn default_user(index: &CommandIndex) -> Rules {
        let mut r = Rules::new(index);
        for op in ["+@all", "~*", "&*", "on", "nopass"] {
            // These rules are valid by construction.
            let _ = r.apply(op.as_bytes(), index);
        }
        r
    }

    pub fn has(&self, f: u8) -> bool {
        self.flags & f != 0
    }

    /// Apply one rule (`ACLSetUser`). On error the rules may be half changed: callers apply
    /// to a copy.
    pub fn apply(&mut self, op: &[u8], index: &CommandIndex) -> Result<(), RuleError> {
        let is = |word: &str| op.eq_ignore_ascii_case(word.as_bytes());
        if op.is_empty() {
        } else if is("on") {
            self.flags = (self.flags | flag::ENABLED) & !flag::DISABLED;
        } else if is("off") {
            self.flags = (self.flags | flag::DISABLED) & !flag::ENABLED;
        } else if is("skip-sanitize-payload") {
            self.flags = (self.flags | flag::SANITIZE_PAYLOAD_SKIP) & !flag::SANITIZE_PAYLOAD;
        } else if is("sanitize-payload") {
            self.flags = (self.flags | flag::SANITIZE_PAYLOAD) & !flag::SANITIZE_PAYLOAD_SKIP;
        } else if is("nopass") {
            self.flags |= flag::NOPASS;
            self.passwords.clear();
        } else if is("resetpass") {
            self.flags &= !flag::NOPASS;
            self.passwords.clear();
        } else if op[0] == b'>' || op[0] == b'#' {
            let hash = self.hash_of(op)?;
            if !self.passwords.contains(&hash) {
                self.passwords.push(hash);
            }
            self.flags &= !flag::NOPASS;
        } else if op[0] == b'<' || op[0] == b'!' {
            let hash = self.hash_of(op)?;
            let pos = self.passwords.iter().position(|p| *p == hash);
            self.passwords.remove(pos.ok_or(RuleError::NoSuchPassword)?);
        } else if op[0] == b'(' && op[op.len() - 1] == b')' {
            let mut s = Selector::new(false, index);
            for rule in split_args(&op[1..op.len() - 1]) {
                s.apply(&rule, index)?;
            }
            self.selectors.push(s);
        } else if is("clearselectors") {
            self.selectors.truncate(1);
        } else if is("reset") {
            for op in [
                "resetpass",
                "resetkeys",
                "resetchannels",
                "off",
                "sanitize-payload",
                "clearselectors",
                "-@all",
            ] {
                self.apply(op.as_bytes(), index)?;
            }
        } else {
            self.selectors[0].apply(op, index)?;
        }
        Ok(())
    }

    /// The hash a `>pass`, `<pass`, `#hash` or `!hash` rule names.
    fn hash_of(&self, op: &[u8]) -> Result<String, RuleError> {
        if op[0] == b'>' || op[0] == b'<' {
            return Ok(hash_password(&op[1..]));
        }
        if !valid_hash(&op[1..]) {
            return Err(RuleError::BadHash);
        }
        Ok(String::from_utf8_lossy(&op[1..]).into_owned())
    }

    /// The rules in ACL LIST form, without `user <name> ` (`ACLDescribeUser`); patterns are
    /// the bytes they were given, as Redis shows them.
    pub fn describe(&self, index: &CommandIndex) -> Vec<u8> {
        let mut s = Vec::new();
        for (f, name) in flag::NAMES {
            if self.has(*f) {
                s.extend_from_slice(name.as_bytes());
                s.push(b' ');
            }
        }
        for p in &self.passwords {
            s.push(b'#');
            s.extend_from_slice(p.as_bytes());
            s.push(b' ');
        }
        for sel in &self.selectors {
            if sel.root {
                s.extend_from_slice(&sel.describe(index));
            } else {
                s.extend_from_slice(b" (");
                s.extend_from_slice(&sel.describe(index));
                s.push(b')');
            }
        }
        s
    }
}

/// Redis's `ACLMergeSelectorArguments`: a selector written over several arguments, `(~a`
/// `+get)`, becomes one. `Err(i)` names the argument that opens a selector never closed.
pub fn merge_selectors(args: &[&[u8]]) -> Result<Vec<Vec<u8>>, usize> {
    let mut out = Vec::new();
    let mut open: Option<(usize, Vec<u8>)> = None;
    for (i, &op) in args.iter().enumerate() {
        let closes = op.last() == Some(&b')');
        if let Some((_, sel)) = &mut open {
            sel.push(b' ');
            sel.extend_from_slice(op);
            if closes {
                if let Some((_, sel)) = open.take() {
                    out.push(sel);
                }
            }
            continue;
        }
        if op.first() == Some(&b'(') && !closes {
            open = Some((i, op.to_vec()));
            continue;
        }
        out.push(op.to_vec());
    }
    match open {
        Some((i, _)) => Err(i),
        None => Ok(out),
    }
}

/// Split a selector's rules as Redis's `sdssplitargs` does (quotes and escapes); unbalanced
/// quotes give no rules, as in Redis.
fn split_args(text: &[u8]) -> Vec<Vec<u8>> {
    let mut line = Vec::with_capacity(text.len() + 2);
    // A leading blank keeps the parser on its inline path, and the newline ends the line.
    line.push(b' ');
    line.extend(text.iter().map(|&b| if b == b'\n' { b' ' } else { b }));
    line.push(b'\n');
    let mut argv = Vec::new();
    match larder_resp::parse_request(&line, &larder_resp::Limits::default(), &mut argv) {
        Ok(larder_resp::Parsed::Complete { .. }) => {
            argv.into_iter().map(|a| a.into_owned()).collect()
        }
        _ => Vec::new(),
    }
}
