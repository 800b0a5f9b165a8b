use std::io::{self, Read, Write};

use larder_commands::config::{Config, Param, TLS12_CIPHERS, TLS13_SUITES};

use super::*;

/// The test certificates (testdata/tls, made by its gen.sh).
fn testdata(name: &str) -> String {
    format!("{}/../../testdata/tls/{name}", env!("CARGO_MANIFEST_DIR"))
}

/// A configuration for the test certificates, with `pairs` set on top.
fn config(pairs: &[(&str, &str)]) -> Config {
    let c = Config::new();
    c.set_many(&[
        ("tls-cert-file", &testdata("server.crt")),
        ("tls-key-file", &testdata("server.key")),
        ("tls-ca-cert-file", &testdata("ca.crt")),
    ])
    .expect("test paths");
    c.set_many(pairs).expect("test settings");
    c
}

#[test]
fn every_accepted_name_stands_for_a_suite() {
    for name in TLS13_SUITES.iter().chain(TLS12_CIPHERS) {
        assert!(suite_of(name).is_some(), "{name}");
    }
}

#[test]
fn builds_from_the_test_certificates() {
    for auth in ["yes", "no", "optional"] {
        let c = config(&[("tls-auth-clients", auth)]);
        assert!(Tls::from_config(&c).is_ok(), "{auth}");
    }
    let c = config(&[
        ("tls-protocols", "TLSv1.3"),
        ("tls-ciphersuites", "TLS_AES_128_GCM_SHA256"),
    ]);
    assert!(Tls::from_config(&c).is_ok());
}

#[test]
fn bad_settings_say_what_is_wrong() {
    let err = |c: &Config| Tls::from_config(c).err().unwrap_or_default();
    assert!(err(&Config::new()).contains("tls-cert-file is not set"));
    let c = config(&[("tls-cert-file", "/nonexistent/cert.pem")]);
    assert!(err(&c).contains("/nonexistent/cert.pem"), "{}", err(&c));
    // A key that is not the certificate's.
    let c = config(&[("tls-key-file", &testdata("client.key"))]);
    assert!(
        err(&c).contains("tls-cert-file and tls-key-file"),
        "{}",
        err(&c)
    );
    // A CA is needed to verify client certificates, not otherwise.
    let c = config(&[("tls-ca-cert-file", "")]);
    assert!(
        err(&c).contains("tls-ca-cert-file is not set"),
        "{}",
        err(&c)
    );
    let c = config(&[("tls-ca-cert-file", ""), ("tls-auth-clients", "no")]);
    assert!(Tls::from_config(&c).is_ok());
    // TLS 1.2 alone with no 1.2 cipher left is refused by the parameter itself.
    let c = Config::new();
    let e = c
        .set_many(&[("tls-ciphers", "DEFAULT:!MEDIUM")])
        .expect_err("fails");
    assert!(e.contains("unsupported TLS 1.2 cipher 'DEFAULT'"), "{e}");
    let e = c
        .set_many(&[("tls-protocols", "TLSv1.1")])
        .expect_err("fails");
    assert!(e.contains("unsupported TLS protocol 'TLSv1.1'"), "{e}");
}

#[test]
fn config_set_reloads_or_keeps_the_old_settings() {
    let c = config(&[]);
    let tls = Tls::from_config(&c).expect("builds");
    tls.reload_on_config_set(&c);
    let before = tls.current.load_full();
    let e = c
        .set_many(&[("tls-cert-file", "/nonexistent/cert.pem")])
        .expect_err("fails");
    assert_eq!(
        e,
        "ERR CONFIG SET failed (possibly related to argument 'tls-cert-file') - \
         Unable to update TLS configuration. Check server logs."
    );
    assert!(Arc::ptr_eq(&before, &tls.current.load_full()));
    assert_eq!(c.text(Param::TlsCertFile), testdata("server.crt"));
    c.set_many(&[
        ("tls-cert-file", &testdata("server2.crt")),
        ("tls-key-file", &testdata("server2.key")),
    ])
    .expect("reloads");
    assert!(!Arc::ptr_eq(&before, &tls.current.load_full()));
    assert_eq!(c.text(Param::TlsCertFile), testdata("server2.crt"));
    // Parameters it does not watch do not rebuild it.
    let now = tls.current.load_full();
    c.set_many(&[("timeout", "5")]).expect("plain set");
    assert!(Arc::ptr_eq(&now, &tls.current.load_full()));
}

/// Both ends of a connection in memory: what one writes the other reads, and a read of
/// nothing is `WouldBlock` as on a non-blocking socket.
#[derive(Default)]
struct Pipe {
    inbound: Vec<u8>,
    outbound: Vec<u8>,
}

impl Read for Pipe {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.inbound.is_empty() {
            return Err(io::ErrorKind::WouldBlock.into());
        }
        let n = buf.len().min(self.inbound.len());
        buf[..n].copy_from_slice(&self.inbound[..n]);
        self.inbound.drain(..n);
        Ok(n)
    }
}

impl Write for Pipe {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.outbound.extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// A rustls client that trusts the test CA, with the client certificate if `cert`.
fn client(cert: bool) -> rustls::ClientConnection {
    let mut roots = RootCertStore::empty();
    for c in load_certs("ca", &testdata("ca.crt")).expect("ca") {
        roots.add(c).expect("ca cert");
    }
    let builder = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .expect("versions")
    .with_root_certificates(roots);
    let config = if cert {
        let chain = load_certs("client", &testdata("client.crt")).expect("client cert");
        let key = PrivateKeyDer::from_pem_file(testdata("client.key")).expect("client key");
        builder
            .with_client_auth_cert(chain, key)
            .expect("client auth")
    } else {
        builder.with_no_client_auth()
    };
    let name = rustls_pki_types::ServerName::try_from("localhost").expect("name");
    rustls::ClientConnection::new(Arc::new(config), name).expect("client")
}

/// Runs client and server against each other until neither has anything to say; returns
/// the plaintext the server read, or its error.
fn exchange(
    client: &mut rustls::ClientConnection,
    server: &mut TlsSession,
    pipe: &mut Pipe,
) -> io::Result<Vec<u8>> {
    let mut got = Vec::new();
    for _ in 0..20 {
        client.write_tls(&mut pipe.inbound)?;
        match server.read_appending(pipe, &mut got, 1 << 20) {
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            Err(e) => return Err(e),
        }
        let mut from_server = &pipe.outbound[..];
        while !from_server.is_empty() {
            client.read_tls(&mut from_server)?;
            client
                .process_new_packets()
                .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
        }
        pipe.outbound.clear();
    }
    Ok(got)
}

#[test]
fn session_round_trip_with_a_client_certificate() {
    let tls = Tls::from_config(&config(&[])).expect("builds");
    let mut server = tls.session().expect("session");
    let mut c = client(true);
    let mut pipe = Pipe::default();
    c.writer().write_all(b"PING\r\n").expect("buffered");
    let got = exchange(&mut c, &mut server, &mut pipe).expect("handshake");
    assert!(!server.is_handshaking());
    assert_eq!(got, b"PING\r\n");
    // A reply, in pieces, with back pressure not reached.
    let n = server
        .write_vectored(
            &mut pipe,
            &[io::IoSlice::new(b"+PO"), io::IoSlice::new(b"NG\r\n")],
        )
        .expect("written");
    assert_eq!(n, 7);
    let mut from_server = &pipe.outbound[..];
    c.read_tls(&mut from_server).expect("read");
    c.process_new_packets().expect("records");
    let mut reply = [0u8; 7];
    c.reader().read_exact(&mut reply).expect("reply");
    assert_eq!(&reply, b"+PONG\r\n");
}

#[test]
fn a_client_without_a_certificate_is_refused_unless_optional() {
    for (auth, ok) in [("yes", false), ("optional", true), ("no", true)] {
        let tls = Tls::from_config(&config(&[("tls-auth-clients", auth)])).expect("builds");
        let mut server = tls.session().expect("session");
        let mut c = client(false);
        c.writer().write_all(b"PING\r\n").expect("buffered");
        let got = exchange(&mut c, &mut server, &mut Pipe::default());
        assert_eq!(got.is_ok(), ok, "{auth}: {got:?}");
    }
}

#[test]
fn plaintext_and_garbage_fail_the_session() {
    let tls = Tls::from_config(&config(&[])).expect("builds");
    for junk in [
        &b"PING\r\n"[..],
        b"\x16\x03\x01\x00\x05hello",
        b"\x00\x00\x00",
    ] {
        let mut server = tls.session().expect("session");
        let mut pipe = Pipe {
            inbound: junk.to_vec(),
            ..Pipe::default()
        };
        let mut buf = Vec::new();
        let e = server
            .read_appending(&mut pipe, &mut buf, 1024)
            .expect_err("fails");
        assert_eq!(e.kind(), io::ErrorKind::InvalidData, "{junk:?}: {e}");
        assert!(buf.is_empty());
    }
    // A truncated ClientHello waits for the rest; EOF then ends the session.
    let mut server = tls.session().expect("session");
    let mut pipe = Pipe {
        inbound: b"\x16\x03\x01\x02\x00\x01\x00".to_vec(),
        ..Pipe::default()
    };
    let mut buf = Vec::new();
    let e = server
        .read_appending(&mut pipe, &mut buf, 1024)
        .expect_err("fails");
    assert_eq!(e.kind(), io::ErrorKind::WouldBlock);
    assert!(server.is_handshaking());
}

#[test]
fn endless_handshake_bytes_are_cut_off() {
    let tls = Tls::from_config(&config(&[])).expect("builds");
    let mut server = tls.session().expect("session");
    // Records of a handshake message that announces 16 MiB: rustls waits for more, and the
    // cap ends it.
    let mut pipe = Pipe::default();
    let mut buf = Vec::new();
    let mut first = true;
    let e = loop {
        let mut body = Vec::new();
        if first {
            body.extend_from_slice(&[0x01, 0xff, 0xff, 0xff]);
            first = false;
        }
        body.resize(16000, 0);
        pipe.inbound.extend_from_slice(&[0x16, 0x03, 0x01]);
        pipe.inbound
            .extend_from_slice(&(body.len() as u16).to_be_bytes());
        pipe.inbound.extend_from_slice(&body);
        match server.read_appending(&mut pipe, &mut buf, 1024) {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
            Err(e) => break e,
            Ok(n) => panic!("{n} bytes of plaintext from a handshake"),
        }
    };
    assert_eq!(e.kind(), io::ErrorKind::InvalidData, "{e}");
}

/// A replica's client (`build_client`) against the server settings `config(&[])`, naming
/// the master `name`: the plaintext the server read, or the error.
fn replica_link(client_config: &Config, name: &str) -> io::Result<Vec<u8>> {
    let built = build_client(&|p| client_config.text(p)).expect("client settings");
    let name = rustls_pki_types::ServerName::try_from(name.to_string()).expect("name");
    let mut c = rustls::ClientConnection::new(built, name).expect("client");
    let tls = Tls::from_config(&config(&[])).expect("builds");
    let mut server = tls.session().expect("session");
    c.writer().write_all(b"PING\r\n").expect("buffered");
    exchange(&mut c, &mut server, &mut Pipe::default())
}

#[test]
fn a_replica_verifies_the_chain_not_the_host_name_and_shows_its_certificate() {
    // tls-client-cert-file is shown; the name is not one the certificate holds.
    let with_client_cert = config(&[
        ("tls-client-cert-file", &testdata("client.crt")),
        ("tls-client-key-file", &testdata("client.key")),
    ]);
    let got = replica_link(&with_client_cert, "master.example").expect("handshake");
    assert_eq!(got, b"PING\r\n");
    // Without it, tls-cert-file is shown: a server certificate, refused as a client's.
    assert!(replica_link(&config(&[]), "localhost").is_err());
    // A CA that did not sign the master's certificate.
    let other_ca = config(&[
        ("tls-ca-cert-file", &testdata("client.crt")),
        ("tls-client-cert-file", &testdata("client.crt")),
        ("tls-client-key-file", &testdata("client.key")),
    ]);
    let e = replica_link(&other_ca, "localhost").expect_err("untrusted");
    assert!(e.to_string().contains("invalid peer certificate"), "{e}");
}

#[test]
fn replica_settings_say_what_is_wrong() {
    let err = |c: &Config| build_client(&|p| c.text(p)).err().unwrap_or_default();
    assert!(err(&config(&[("tls-ca-cert-file", "")])).contains("tls-ca-cert-file is not set"));
    let c = config(&[
        ("tls-client-cert-file", &testdata("client.crt")),
        ("tls-client-key-file", "/nonexistent/key.pem"),
    ]);
    assert!(
        err(&c).contains("tls-client-key-file /nonexistent/key.pem"),
        "{}",
        err(&c)
    );
}
