//! `larder check-data DIR [--fix]`: read every file of a data directory without starting a
//! server, say what is in it and what is wrong, and with `--fix` repair what recovery
//! refuses: a log cut at its damage (what follows the damage is lost, and later log files,
//! which no longer follow on, are set aside as `*.damaged`).

use std::path::{Path, PathBuf};

use anyhow::Context;
use larder_persist::log::{End, LogReader};

use super::dir::{LOG_EXT, SNAPSHOT_EXT};

/// What one log file holds.
#[derive(Debug)]
struct LogCheck {
    path: PathBuf,
    start_seq: u64,
    groups: u64,
    last_seq: u64,
    end: Result<End, (u64, String)>,
}

/// Run the check; returns the process exit code (0: clean, 1: damage found (and fixed with
/// `fix`), 2: the directory cannot be read).
pub fn run(dir: &Path, fix: bool, out: &mut impl std::io::Write) -> anyhow::Result<i32> {
    let mut snapshots = Vec::new();
    let mut logs = Vec::new();
    for entry in std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
        let path = entry?.path();
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        if name.ends_with(&format!(".{SNAPSHOT_EXT}")) {
            snapshots.push(path);
        } else if name.ends_with(&format!(".{LOG_EXT}")) {
            logs.push(path);
        }
    }
    snapshots.sort();
    logs.sort();
    let mut damaged = false;
    for s in &snapshots {
        match super::snapshot::check(s) {
            Ok(summary) => writeln!(out, "{}: ok, {summary}", s.display())?,
            Err(e) => {
                damaged = true;
                writeln!(out, "{}: DAMAGED: {e:#}", s.display())?;
            }
        }
    }
    let mut checks = Vec::new();
    for path in &logs {
        let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
        let check = check_log(path, &bytes);
        match &check.end {
            Ok(End::Clean) if check.groups == 0 => writeln!(
                out,
                "{}: ok, no groups yet (it starts after sequence {})",
                path.display(),
                check.start_seq
            )?,
            Ok(End::Clean) => writeln!(
                out,
                "{}: ok, groups {}..={} ({} groups)",
                path.display(),
                check.start_seq + 1,
                check.last_seq,
                check.groups
            )?,
            Ok(End::Torn { valid_len, dropped }) => writeln!(
                out,
                "{}: torn tail at offset {valid_len} ({dropped} bytes of an unfinished record; \
                 recovery cuts it), {} groups",
                path.display(),
                check.groups
            )?,
            Err((offset, e)) => {
                damaged = true;
                writeln!(
                    out,
                    "{}: DAMAGED at offset {offset}: {e} ({} whole groups before it)",
                    path.display(),
                    check.groups
                )?;
            }
        }
        checks.push(check);
    }
    // Each log must begin where the one before it ended.
    for pair in checks.windows(2) {
        if pair[0].end.is_ok() && pair[1].start_seq != pair[0].last_seq {
            damaged = true;
            writeln!(
                out,
                "{} starts after sequence {} but {} ends at {}: groups are missing",
                pair[1].path.display(),
                pair[1].start_seq,
                pair[0].path.display(),
                pair[0].last_seq
            )?;
        }
    }
    if !damaged {
        writeln!(out, "{}: no damage found", dir.display())?;
        return Ok(0);
    }
    if !fix {
        writeln!(
            out,
            "damage found; `larder check-data {} --fix` cuts the damaged log there and sets \
             aside what no longer follows on (the groups after the damage are lost)",
            dir.display()
        )?;
        return Ok(1);
    }
    let mut cut = false;
    for check in &checks {
        if cut {
            set_aside(&check.path, out)?;
            continue;
        }
        if let Err((offset, _)) = &check.end {
            let f = std::fs::OpenOptions::new().write(true).open(&check.path)?;
            f.set_len(*offset)?;
            f.sync_all()?;
            writeln!(out, "cut {} at offset {offset}", check.path.display())?;
            cut = true;
        }
    }
    for s in &snapshots {
        if super::snapshot::check(s).is_err() {
            set_aside(s, out)?;
        }
    }
    Ok(1)
}

fn set_aside(path: &Path, out: &mut impl std::io::Write) -> anyhow::Result<()> {
    let mut aside = path.as_os_str().to_owned();
    aside.push(".damaged");
    std::fs::rename(path, &aside)?;
    writeln!(
        out,
        "set aside {} (as {})",
        path.display(),
        Path::new(&aside).display()
    )?;
    Ok(())
}

fn check_log(path: &Path, bytes: &[u8]) -> LogCheck {
    let mut check = LogCheck {
        path: path.to_path_buf(),
        start_seq: 0,
        groups: 0,
        last_seq: 0,
        end: Ok(End::Clean),
    };
    let mut reader = match LogReader::new(bytes) {
        Ok(r) => r,
        Err(e) => {
            check.end = Err((e.offset, e.to_string()));
            return check;
        }
    };
    check.start_seq = reader.header().start_seq;
    check.last_seq = check.start_seq;
    loop {
        match reader.next_group() {
            Ok(Some(g)) => {
                check.groups += 1;
                check.last_seq = g.seq;
            }
            Ok(None) => {
                check.end = Ok(reader.end().cloned().unwrap_or(End::Clean));
                return check;
            }
            Err(e) => {
                check.end = Err((e.offset, e.to_string()));
                return check;
            }
        }
    }
}
