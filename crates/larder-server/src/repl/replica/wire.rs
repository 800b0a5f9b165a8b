//! The master's socket as the link reads it: replies line by line during the handshake,
//! then the file of a full resync (`$<len>` or between EOF marks) as a bounded reader, then
//! the stream. Every wait polls the link's stop flag and the master client's kill flag, and
//! gives up after `repl-timeout` without bytes.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use larder_commands::state::ClientHandle;

use super::Link;

/// How long one read waits before the link checks its flags (and sends its ACK).
pub const POLL: Duration = Duration::from_millis(100);
/// The longest reply line the handshake accepts.
const LINE_MAX: usize = 64 * 1024;
/// Bytes asked of the socket per read.
const READ_CHUNK: usize = 64 * 1024;

pub struct Wire<'a> {
    pub sock: TcpStream,
    /// Bytes read and not consumed yet.
    pub buf: Vec<u8>,
    pub link: &'a Link,
    pub client: &'a ClientHandle,
    pub timeout: Duration,
    /// When the master last sent bytes.
    pub last_read: Instant,
}

impl Wire<'_> {
    /// Why the link must end now, if it must.
    pub fn check(&self) -> Result<(), String> {
        if self.link.stopped() {
            return Err("the link was stopped".into());
        }
        if self
            .client
            .killed
            .load(std::sync::atomic::Ordering::Acquire)
        {
            return Err("the master's connection was killed".into());
        }
        if self.last_read.elapsed() > self.timeout {
            return Err("timeout: no data from the master for repl-timeout".into());
        }
        Ok(())
    }

    /// Read what the socket has (waiting at most [`POLL`]); Ok(0) when nothing came.
    pub fn fill(&mut self) -> Result<usize, String> {
        self.check()?;
        let start = self.buf.len();
        self.buf.resize(start + READ_CHUNK, 0);
        let got = self.sock.read(&mut self.buf[start..]);
        self.buf.truncate(start + *got.as_ref().unwrap_or(&0));
        match got {
            Ok(0) => Err("the master closed the connection".into()),
            Ok(n) => {
                self.last_read = Instant::now();
                self.link.io();
                Ok(n)
            }
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock
                        | std::io::ErrorKind::TimedOut
                        | std::io::ErrorKind::Interrupted
                ) =>
            {
                Ok(0)
            }
            Err(e) => Err(format!("reading from the master: {e}")),
        }
    }

    /// The next line (without its CRLF).
    pub fn line(&mut self) -> Result<String, String> {
        loop {
            if let Some(i) = self.buf.iter().position(|&b| b == b'\n') {
                let line: Vec<u8> = self.buf.drain(..=i).collect();
                let text = String::from_utf8_lossy(&line);
                return Ok(text.trim_end_matches(['\r', '\n']).to_string());
            }
            if self.buf.len() > LINE_MAX {
                return Err("the master sent a reply line too long".into());
            }
            self.fill()?;
        }
    }

    /// Send a command and read its one-line reply.
    pub fn call(&mut self, argv: &[&[u8]]) -> Result<String, String> {
        self.send(argv)?;
        self.line()
    }

    pub fn send(&mut self, argv: &[&[u8]]) -> Result<(), String> {
        let mut out = Vec::new();
        larder_resp::encode_command(argv, &mut out);
        self.sock
            .write_all(&out)
            .map_err(|e| format!("writing to the master: {e}"))
    }
}

/// How the file of a full resync ends.
pub enum Framing {
    /// `$<len>`: this many bytes are left.
    Length(u64),
    /// `$EOF:<mark>`: the file ends where the 40-byte mark appears.
    Mark(Vec<u8>),
}

/// The file of a full resync as a reader: it ends with the file, whatever the RDB reader
/// does, and reports progress. `delay_us` (`key-load-delay`, for tests) slows each read.
pub struct Payload<'w, 'a> {
    pub wire: &'w mut Wire<'a>,
    pub framing: Framing,
    pub read: u64,
    pub done: bool,
    pub delay_us: u64,
}

impl Payload<'_, '_> {
    /// Read and drop what is left of the file.
    pub fn drain(&mut self) -> Result<(), String> {
        let mut sink = [0u8; 16 * 1024];
        loop {
            match self.read(&mut sink) {
                Ok(0) => return Ok(()),
                Ok(_) => {}
                Err(e) => return Err(e.to_string()),
            }
        }
    }

    fn available(&mut self) -> Result<usize, String> {
        loop {
            let buf = &self.wire.buf;
            let n = match &self.framing {
                Framing::Length(left) => buf.len().min(*left as usize),
                Framing::Mark(mark) => {
                    if let Some(at) = buf.windows(mark.len()).position(|w| w == &mark[..]) {
                        if at == 0 {
                            self.wire.buf.drain(..mark.len());
                            self.done = true;
                            return Ok(0);
                        }
                        at
                    } else {
                        // The mark may begin in the last bytes: keep them back.
                        buf.len().saturating_sub(mark.len() - 1)
                    }
                }
            };
            if n > 0 {
                return Ok(n);
            }
            if let Framing::Length(0) = self.framing {
                self.done = true;
                return Ok(0);
            }
            self.wire.fill()?;
        }
    }
}

impl Read for Payload<'_, '_> {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        if self.done || out.is_empty() {
            return Ok(0);
        }
        let avail = self.available().map_err(std::io::Error::other)?;
        let mut n = avail.min(out.len());
        if self.delay_us > 0 {
            n = n.min(1024);
            std::thread::sleep(Duration::from_micros(self.delay_us));
        }
        out[..n].copy_from_slice(&self.wire.buf[..n]);
        self.wire.buf.drain(..n);
        if let Framing::Length(left) = &mut self.framing {
            *left -= n as u64;
        }
        self.read += n as u64;
        self.wire.link.sync_read(self.read);
        Ok(n)
    }
}
