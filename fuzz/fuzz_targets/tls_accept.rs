//! Fuzzes the server's TLS session wrapper (`crates/larder-server/src/tls/session.rs`, the
//! file itself, included below) the way a TLS port's connection drives it, from memory with
//! no sockets: the input is what a client sends (garbage, truncated or mangled handshakes,
//! plaintext), cut into reads at points the first bytes choose, each read followed by a
//! reply written back, as a connection does once it has plaintext. Whatever the bytes, the
//! wrapper must not panic, must never hand out plaintext before a handshake has completed
//! (and a client certificate is required here, which no input can present), and must stop
//! taking handshake bytes past its cap.

#![no_main]

use std::io::{self, IoSlice, Read, Write};
use std::sync::{Arc, OnceLock};

use libfuzzer_sys::fuzz_target;
use rustls::server::WebPkiClientVerifier;
use rustls::{RootCertStore, ServerConfig};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};

#[path = "../../crates/larder-server/src/tls/session.rs"]
mod session;

use session::{TlsSession, HANDSHAKE_BYTES_MAX};

/// The server's settings with the test certificates, client certificates required.
fn config() -> Arc<ServerConfig> {
    static CONFIG: OnceLock<Arc<ServerConfig>> = OnceLock::new();
    Arc::clone(CONFIG.get_or_init(|| {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let pem = |bytes: &[u8]| {
            CertificateDer::pem_slice_iter(bytes)
                .collect::<Result<Vec<_>, _>>()
                .expect("test certificate")
        };
        let mut roots = RootCertStore::empty();
        for cert in pem(include_bytes!("../../testdata/tls/ca.crt")) {
            roots.add(cert).expect("test CA");
        }
        let verifier =
            WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider.clone())
                .build()
                .expect("verifier");
        let key = PrivateKeyDer::from_pem_slice(include_bytes!("../../testdata/tls/server.key"))
            .expect("test key");
        let config = ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("versions")
            .with_client_cert_verifier(verifier)
            .with_single_cert(pem(include_bytes!("../../testdata/tls/server.crt")), key)
            .expect("server config");
        Arc::new(config)
    }))
}

/// A non-blocking socket in memory: reads take what the client sent so far, then
/// `WouldBlock`; writes are kept, up to `room` bytes at a time.
struct Socket<'a> {
    inbound: &'a [u8],
    outbound: usize,
    room: usize,
}

impl Read for Socket<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.inbound.is_empty() {
            return Err(io::ErrorKind::WouldBlock.into());
        }
        let n = buf.len().min(self.inbound.len());
        buf[..n].copy_from_slice(&self.inbound[..n]);
        self.inbound = &self.inbound[n..];
        Ok(n)
    }
}

impl Write for Socket<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.room == 0 {
            return Err(io::ErrorKind::WouldBlock.into());
        }
        let n = buf.len().min(self.room);
        self.outbound += n;
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&cut, rest)) = data.split_first() else {
        return;
    };
    let Ok(mut tls) = TlsSession::new(config()) else {
        return;
    };
    // Reads of `step` bytes of input each; the socket takes `room` bytes per write.
    let step = usize::from(cut % 64) * 37 + 1;
    let room = usize::from(cut >> 6) * 700;
    let mut plain = Vec::new();
    let mut fed = 0;
    for (i, chunk) in rest.chunks(step).enumerate() {
        let mut sock = Socket {
            inbound: chunk,
            outbound: 0,
            room,
        };
        fed += chunk.len();
        // Both ways a connection reads: into its scratch buffer, or onto a buffer's end.
        let read = if i % 2 == 0 {
            tls.read_appending(&mut sock, &mut plain, 16 * 1024)
        } else {
            let mut scratch = [0u8; 4096];
            tls.read(&mut sock, &mut scratch)
                .inspect(|&n| plain.extend_from_slice(&scratch[..n]))
        };
        match read {
            Ok(0) => return,
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            Err(_) => return,
        }
        assert!(
            plain.is_empty(),
            "plaintext from a client that cannot have finished its handshake"
        );
        assert!(
            !tls.is_handshaking() || fed <= HANDSHAKE_BYTES_MAX,
            "handshake bytes past the cap"
        );
        let reply = [
            IoSlice::new(b"+PONG\r\n"),
            IoSlice::new(&chunk[..chunk.len().min(9)]),
        ];
        let _ = tls.write_vectored(&mut sock, &reply);
        if tls.wants_write() {
            let _ = tls.flush(&mut sock);
        }
    }
});
