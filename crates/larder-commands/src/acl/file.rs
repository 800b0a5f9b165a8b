//! Users outside the server: the ACL file (`aclfile`, ACL LOAD and ACL SAVE) and `user` lines
//! in the configuration file, with Redis 7.0.15's validation and error texts.

use std::io::Write;

use super::rules::{self, has_spaces, merge_selectors, Rules};
use super::Acl;
use crate::config::Param;
use crate::state::Server;

/// ACL LOAD and ACL SAVE without `aclfile`.
pub const NO_ACL_FILE: &str = "ERR This Redis instance is not configured to use an ACL file. \
     You may want to specify users via the ACL SETUSER command and then issue a CONFIG \
     REWRITE (assuming you have a Redis configuration file set) in order to store users in the \
     Redis configuration.";

/// ACL SAVE's failure.
pub const SAVE_FAILED: &str = "ERR There was an error trying to save the ACLs. Please check \
     the server logs for more information";

/// Config-file `user` lines together with `aclfile`, refused at start as Redis does.
pub const BOTH_SOURCES: &str = "Configuring Redis with users defined in redis.conf and at the \
     same setting an ACL file path is invalid. This setup is very likely to lead to \
     configuration errors and security holes, please define either an ACL file or declare \
     users directly in your redis.conf, but not both.";

/// The users an ACL file defines (`ACLLoadFromFile`): every line `user <name> rules...` or
/// blank. Any error fails the whole file, with all the errors found in one line.
pub fn parse(text: &[u8], filename: &str, acl: &Acl) -> Result<Vec<(Vec<u8>, Rules)>, String> {
    let index = acl.index();
    let mut users: Vec<(Vec<u8>, Rules)> = Vec::new();
    let mut errors = String::new();
    for (i, raw) in text.split(|&b| b == b'\n').enumerate() {
        let line = raw.trim_ascii();
        let linenum = i + 1;
        if line.is_empty() {
            continue;
        }
        let argv: Vec<&[u8]> = line
            .split(|&b| b == b' ')
            .filter(|w| !w.is_empty())
            .collect();
        if argv.len() < 2 || argv[0] != b"user" {
            errors.push_str(&format!(
                "{filename}:{linenum} should start with user keyword followed by the username. "
            ));
            continue;
        }
        let name = argv[1];
        let shown = String::from_utf8_lossy(name);
        if has_spaces(name) {
            errors.push_str(&format!(
                "'{filename}:{linenum}: username '{shown}' contains invalid characters. "
            ));
            continue;
        }
        if users.iter().any(|(n, _)| n == name) {
            errors.push_str(&format!(
                "WARNING: Duplicate user '{shown}' found on line {linenum}. "
            ));
            continue;
        }
        let Ok(ops) = merge_selectors(&argv[2..]) else {
            errors.push_str(&format!(
                "{filename}:{linenum}: Unmatched parenthesis in selector definition."
            ));
            continue;
        };
        let mut r = Rules::new(index);
        let mut syntax_error = false;
        for op in &ops {
            let op = op.trim_ascii();
            if let Err(e) = r.apply(op, index) {
                if e == rules::RuleError::UnknownName {
                    errors.push_str(&format!(
                        "{filename}:{linenum}: Error in applying operation '{}': {}. ",
                        String::from_utf8_lossy(op),
                        e.message()
                    ));
                } else if !syntax_error {
                    errors.push_str(&format!("{filename}:{linenum}: {}. ", e.message()));
                    syntax_error = true;
                }
            }
        }
        users.push((name.to_vec(), r));
    }
    if errors.is_empty() {
        Ok(users)
    } else {
        errors.push_str(
            "WARNING: ACL errors detected, no change to the previously active ACL rules was \
             performed",
        );
        Err(errors)
    }
}

/// ACL LOAD: replace every user with the file's, or change nothing. Clients of the users
/// replaced are disconnected (all but the default user's), as Redis frees those users.
pub fn load(server: &Server) -> Result<(), String> {
    let filename = server.config.text(Param::Aclfile);
    let text = std::fs::read(&filename).map_err(|e| {
        format!(
            "Error loading ACLs, opening file '{filename}': {}",
            os_error_text(&e)
        )
    })?;
    let users = parse(&text, &filename, &server.acl)?;
    let old: Vec<Vec<u8>> = server
        .acl
        .users()
        .iter()
        .map(|u| u.name.as_bytes().to_vec())
        .filter(|n| n != b"default")
        .collect();
    server.acl.replace_all(users);
    let names: Vec<&[u8]> = old.iter().map(Vec::as_slice).collect();
    super::disconnect_users(server, &names);
    Ok(())
}

/// The users in ACL file form (`user <name> <rules>` lines), as ACL LIST shows them.
pub fn describe_all(acl: &Acl) -> Vec<Vec<u8>> {
    acl.users()
        .iter()
        .map(|u| {
            let mut line = format!("user {} ", u.name).into_bytes();
            line.extend_from_slice(&u.rules().describe(acl.index()));
            line
        })
        .collect()
}

/// ACL SAVE: write every user to `aclfile` through a temporary file renamed over it.
pub fn save(server: &Server) -> std::io::Result<()> {
    let filename = server.config.text(Param::Aclfile);
    let mut text = describe_all(&server.acl).join(&b'\n');
    text.push(b'\n');
    let tmp = format!(
        "{filename}.tmp-{}-{}",
        std::process::id(),
        larder_engine::now_ms()
    );
    let written = std::fs::File::create(&tmp)
        .and_then(|mut f| f.write_all(&text).and_then(|()| f.sync_all()))
        .and_then(|()| std::fs::rename(&tmp, &filename));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

/// The text of an OS error without Rust's " (os error N)" suffix, as C's `strerror`.
fn os_error_text(e: &std::io::Error) -> String {
    let s = e.to_string();
    match s.find(" (os error") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

/// Apply the configuration file's `user` lines (each split into words, `user` first) and then
/// `aclfile` at start (`ACLLoadUsersAtStartup`). The error stops the server.
pub fn load_at_startup(server: &Server, user_lines: &[Vec<Vec<u8>>]) -> Result<(), String> {
    let aclfile = server.config.text(Param::Aclfile);
    if !aclfile.is_empty() && !user_lines.is_empty() {
        return Err(BOTH_SOURCES.to_string());
    }
    let mut seen: Vec<&[u8]> = Vec::new();
    for words in user_lines {
        let Some(name) = words.get(1) else {
            return Err("'user' needs a user name".to_string());
        };
        if seen.contains(&name.as_slice()) {
            return Err(rules::RuleError::Duplicate.message().to_string());
        }
        seen.push(name);
        if has_spaces(name) {
            return Err("Spaces not allowed in ACL usernames".to_string());
        }
        let ops: Vec<&[u8]> = std::iter::once(&b"reset"[..])
            .filter(|_| name == b"default")
            .chain(words[2..].iter().map(Vec::as_slice))
            .collect();
        server.acl.set_user(name, &ops).map_err(|e| {
            format!(
                "Error loading ACL rules for the user named '{}': {e}",
                String::from_utf8_lossy(name)
            )
        })?;
    }
    if !aclfile.is_empty() {
        load(server).map_err(|e| format!("Aborting Redis startup because of ACL errors: {e}"))?;
    }
    Ok(())
}
