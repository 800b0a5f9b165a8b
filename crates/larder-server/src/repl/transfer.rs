//! A full resync: the RDB file of a point-in-time capture sent to one replica, on a thread
//! of its own, while writes go on.
//!
//! At the capture's point (every shard held) the replica joins the master in its transfer
//! phase with the offset read there, so the stream from that offset on gathers in its
//! pending buffer; the reply `+FULLRESYNC <replid> <offset>` goes first. A replica that
//! said `capa eof` gets the file as Redis's diskless transfer sends it, between two copies of
//! a random 40-byte mark (`$EOF:<mark>\r\n` ... `<mark>`), written to its outbox as it is
//! made; another first gets the file built in a temporary file, then `$<length>\r\n` and the
//! file. The outbox is filled only while the replica reads (a few MiB ahead at most); a
//! replica that reads nothing for `repl-timeout` seconds is dropped. Then the pending stream
//! is posted and the replica is online: after a file between marks, only once the replica's
//! first REPLCONF ACK says it has read it all (stream bytes right behind the mark would hide
//! the mark from it).

use std::io::{BufReader, BufWriter, Seek, Write};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use larder_commands::config::Param;
use larder_commands::mail::Limit;
use larder_commands::replication::Replication;
use larder_commands::state::ClientHandle;
use larder_commands::Server;
use larder_persist::rdb::file::{write_rdb, PointInfo, ReplInfo};
use larder_persist::snapshot::SnapshotError;

use super::{random_hex, Master, Phase};

/// How the file is framed.
#[derive(Clone, Copy, Debug)]
pub struct Mode {
    /// Delimited by an EOF mark (`capa eof`) rather than preceded by its length.
    pub eof: bool,
    /// Preceded by `+FULLRESYNC` (PSYNC; SYNC has no reply line).
    pub reply: bool,
    /// Each key with its version and flags (a larder replica, `capa larder-meta2`).
    pub meta: bool,
}

/// Bytes gathered before they are posted to the outbox.
const CHUNK: usize = 64 * 1024;
/// The outbox is refilled once the replica's unsent output is below this.
const AHEAD: usize = 4 << 20;

/// Start the transfer to `client` on a thread of its own.
pub fn start(
    master: Arc<Master>,
    server: Arc<Server>,
    client: Arc<ClientHandle>,
    mode: Mode,
) -> std::io::Result<()> {
    std::thread::Builder::new()
        .name("repl-transfer".into())
        .spawn(move || {
            if let Err(e) = run(&master, &server, &client, mode) {
                master.transfer_failed(&client, &e);
            } else {
                master.transfer_done(client.id, mode.eof);
                tracing::info!(replica = %client.addr, "synchronization with replica succeeded");
            }
        })?;
    Ok(())
}

/// Writes to a replica's outbox, at the pace the replica reads.
struct Outbox<'a> {
    master: &'a Master,
    client: &'a ClientHandle,
    buf: Vec<u8>,
    timeout: Duration,
}

impl Outbox<'_> {
    fn post(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        let mut last_progress = Instant::now();
        let mut last_unsent = usize::MAX;
        loop {
            if self.client.killed.load(Ordering::Acquire) || !self.master.is_replica(self.client.id)
            {
                return Err(std::io::Error::other("the replica disconnected"));
            }
            let unsent = self.client.output_bytes();
            if unsent < AHEAD {
                break;
            }
            if unsent < last_unsent {
                last_progress = Instant::now();
                last_unsent = unsent;
            } else if last_progress.elapsed() > self.timeout {
                return Err(std::io::Error::other(
                    "timeout sending the file to the replica",
                ));
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        let unsent = self.client.output_buf_bytes.load(Ordering::Relaxed);
        self.client
            .mail
            .post(self.client.id, Limit::default(), unsent, 0, |out| {
                out.extend_from_slice(bytes)
            })
            .map_err(|_| std::io::Error::other("the replica disconnected"))
    }
}

impl Write for Outbox<'_> {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.buf.extend_from_slice(bytes);
        if self.buf.len() >= CHUNK {
            self.flush()?;
        }
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        if !self.buf.is_empty() {
            let buf = std::mem::take(&mut self.buf);
            self.post(&buf)?;
        }
        Ok(())
    }
}

fn run(
    master: &Master,
    server: &Server,
    client: &Arc<ClientHandle>,
    mode: Mode,
) -> Result<(), String> {
    let timeout = Duration::from_secs(server.config.num(Param::ReplTimeout).max(1) as u64);
    let mut out = Outbox {
        master,
        client,
        buf: Vec::new(),
        timeout,
    };
    let mark = random_hex(40);
    let limits = larder_commands::config::limits(&server.config);
    // The point, with every shard held: the replica joins (the stream gathers for it from
    // here), and with a diskless transfer the reply and the mark go to its outbox first.
    let mut reply = Vec::new();
    let at_point = |_: &mut larder_engine::DbGuards<'_>| {
        let mut st = master.state.lock();
        let offset = master.join(&mut st, client, Phase::Transfer);
        st.encoder.reselect();
        if mode.reply {
            reply = format!("+FULLRESYNC {} {offset}\r\n", st.replid).into_bytes();
        }
        if mode.eof {
            reply.extend_from_slice(format!("$EOF:{mark}\r\n").as_bytes());
            // Nothing else reaches this outbox before the file: the stream gathers apart.
            let _ = client.mail.post(client.id, Limit::default(), 0, 0, |o| {
                o.extend_from_slice(&reply)
            });
        }
        PointInfo {
            repl: Some(ReplInfo {
                stream_db: st.stream_db(),
                id: st.replid.clone(),
                offset,
            }),
            libraries: server.scripts.library_codes(),
            used_mem: (server.used_memory)() as u64,
        }
    };
    if mode.eof {
        capture(server, &mut out, &limits, mode.meta, timeout, at_point)?;
        out.write_all(mark.as_bytes()).map_err(|e| e.to_string())?;
        return out.flush().map_err(|e| e.to_string());
    }
    let mut file = tempfile(server)?;
    {
        let mut w = BufWriter::new(&mut file);
        capture(server, &mut w, &limits, mode.meta, timeout, at_point)?;
        w.flush().map_err(|e| e.to_string())?;
    }
    let len = file.stream_position().map_err(|e| e.to_string())?;
    file.rewind().map_err(|e| e.to_string())?;
    reply.extend_from_slice(format!("${len}\r\n").as_bytes());
    out.write_all(&reply).map_err(|e| e.to_string())?;
    std::io::copy(&mut BufReader::new(file), &mut out).map_err(|e| e.to_string())?;
    out.flush().map_err(|e| e.to_string())
}

/// Write the file of a capture to `w`; waits for another capture (a BGSAVE) to end, up to
/// `timeout`.
fn capture<W: Write>(
    server: &Server,
    mut w: W,
    limits: &larder_engine::Limits,
    meta: bool,
    timeout: Duration,
    mut at_point: impl FnMut(&mut larder_engine::DbGuards<'_>) -> PointInfo,
) -> Result<(), String> {
    let started = Instant::now();
    loop {
        match write_rdb(&server.keyspace, &mut w, limits, meta, &mut at_point) {
            Ok(_) => return Ok(()),
            Err(SnapshotError::Busy) if started.elapsed() < timeout => {
                std::thread::sleep(Duration::from_millis(50));
            }
            Err(e) => return Err(e.to_string()),
        }
    }
}

/// An unnamed temporary file in the data directory (or the system's temporary directory).
fn tempfile(server: &Server) -> Result<std::fs::File, String> {
    let dir = server.config.text(Param::Dir);
    let dir = if dir.is_empty() {
        std::env::temp_dir()
    } else {
        std::path::PathBuf::from(dir)
    };
    let path = dir.join(format!("larder-repl-{}.rdb.tmp", random_hex(16)));
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .open(&path)
        .map_err(|e| format!("creating {}: {e}", path.display()))?;
    // Unlinked at once: the open file is all that is needed.
    let _ = std::fs::remove_file(&path);
    Ok(file)
}
