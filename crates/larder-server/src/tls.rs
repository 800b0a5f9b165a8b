//! TLS for every door (`tls-port`, `memcached-tls-port`, `http-tls-port`), with rustls and
//! its `ring` provider: the server's settings built from the `tls-*` parameters, held where
//! new connections take them and replaced whole by CONFIG SET, while live sessions keep the
//! settings they began with. The client side (a replica's link with `tls-replication yes`)
//! is in `client.rs`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use arc_swap::ArcSwap;
use larder_commands::config::{ApplyHook, Config, Param, TLS_AUTH_CLIENTS};
use rustls::crypto::CryptoProvider;
use rustls::server::WebPkiClientVerifier;
use rustls::{CipherSuite, RootCertStore, ServerConfig, SupportedCipherSuite};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};

pub mod client;
pub mod session;

pub use client::build_client;
pub use session::TlsSession;

/// How long a client may take to complete its handshake before it is closed.
pub const HANDSHAKE_TIMEOUT_MS: u64 = 10_000;

/// Redis's error for a CONFIG SET whose new TLS settings do not load (the reason goes to the
/// log).
const RELOAD_FAILED: &str = "Unable to update TLS configuration. Check server logs.";

/// The parameters the settings are built from: CONFIG SET of any rebuilds them.
const RELOADED_BY: &[Param] = &[
    Param::TlsCertFile,
    Param::TlsKeyFile,
    Param::TlsCaCertFile,
    Param::TlsAuthClients,
    Param::TlsProtocols,
    Param::TlsCiphersuites,
    Param::TlsCiphers,
];

/// TLS sessions that ended in a failed handshake (bad ClientHello, plaintext, garbage, a
/// refused client certificate, too many bytes or too long).
static HANDSHAKE_FAILURES: AtomicU64 = AtomicU64::new(0);

/// The TLS settings new connections get.
pub struct Tls {
    current: ArcSwap<ServerConfig>,
}

impl Tls {
    /// The settings the configuration describes; the error says what is wrong with it.
    pub fn from_config(config: &Config) -> Result<Arc<Tls>, String> {
        let built = build(&|p| config.text(p))?;
        Ok(Arc::new(Tls {
            current: ArcSwap::from(built),
        }))
    }

    /// A new session under the current settings.
    pub fn session(&self) -> Result<TlsSession, rustls::Error> {
        TlsSession::new(self.current.load_full())
    }

    /// Rebuilds the settings whenever CONFIG SET changes a `tls-*` parameter; a change
    /// whose files do not load fails with Redis's error and leaves the old settings.
    pub fn reload_on_config_set(self: &Arc<Tls>, config: &Config) {
        let tls = Arc::clone(self);
        config.add_hook(ApplyHook {
            params: RELOADED_BY,
            apply: Box::new(move |after| match build(after) {
                Ok(built) => {
                    tls.current.store(built);
                    tracing::info!("TLS settings reloaded");
                    Ok(())
                }
                Err(why) => {
                    tracing::warn!(error = %why, "TLS settings not reloaded");
                    Err(RELOAD_FAILED.to_string())
                }
            }),
        });
    }
}

/// Counts a session that failed its handshake; the count so far.
pub fn note_handshake_failure() -> u64 {
    HANDSHAKE_FAILURES.fetch_add(1, Ordering::Relaxed) + 1
}

/// The rustls suite a `tls-ciphersuites` or `tls-ciphers` name stands for.
fn suite_of(name: &str) -> Option<CipherSuite> {
    Some(match name {
        "TLS_AES_256_GCM_SHA384" => CipherSuite::TLS13_AES_256_GCM_SHA384,
        "TLS_AES_128_GCM_SHA256" => CipherSuite::TLS13_AES_128_GCM_SHA256,
        "TLS_CHACHA20_POLY1305_SHA256" => CipherSuite::TLS13_CHACHA20_POLY1305_SHA256,
        "ECDHE-ECDSA-AES256-GCM-SHA384" => CipherSuite::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
        "ECDHE-ECDSA-AES128-GCM-SHA256" => CipherSuite::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
        "ECDHE-ECDSA-CHACHA20-POLY1305" => {
            CipherSuite::TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256
        }
        "ECDHE-RSA-AES256-GCM-SHA384" => CipherSuite::TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
        "ECDHE-RSA-AES128-GCM-SHA256" => CipherSuite::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
        "ECDHE-RSA-CHACHA20-POLY1305" => CipherSuite::TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
        _ => return None,
    })
}

/// The suites of one TLS version that a colon-separated list names (all of them when it is
/// empty). The list was checked by the parameter's parser, so every name is known.
fn chosen_suites(list: &str, tls13: bool) -> Vec<SupportedCipherSuite> {
    let all = rustls::crypto::ring::ALL_CIPHER_SUITES
        .iter()
        .filter(|s| matches!(s, SupportedCipherSuite::Tls13(_)) == tls13);
    if list.is_empty() {
        return all.copied().collect();
    }
    let named: Vec<CipherSuite> = list.split(':').filter_map(suite_of).collect();
    all.filter(|s| named.contains(&s.suite()))
        .copied()
        .collect()
}

/// The TLS versions a `tls-protocols` value names (both when it is empty).
fn chosen_versions(protocols: &str) -> Vec<&'static rustls::SupportedProtocolVersion> {
    let mut versions = Vec::new();
    if protocols.is_empty() || protocols.split(' ').any(|p| p == "TLSv1.2") {
        versions.push(&rustls::version::TLS12);
    }
    if protocols.is_empty() || protocols.split(' ').any(|p| p == "TLSv1.3") {
        versions.push(&rustls::version::TLS13);
    }
    versions
}

/// Reads a PEM file's certificates.
fn load_certs(what: &str, path: &str) -> Result<Vec<CertificateDer<'static>>, String> {
    if path.is_empty() {
        return Err(format!("{what} is not set"));
    }
    let certs = CertificateDer::pem_file_iter(path)
        .and_then(|it| it.collect::<Result<Vec<_>, _>>())
        .map_err(|e| format!("{what} {path}: {e}"))?;
    if certs.is_empty() {
        return Err(format!("{what} {path}: no certificate in it"));
    }
    Ok(certs)
}

/// The server's settings from the parameters' values as `get` gives them.
pub fn build(get: &dyn Fn(Param) -> String) -> Result<Arc<ServerConfig>, String> {
    let certs = load_certs("tls-cert-file", &get(Param::TlsCertFile))?;
    let key_file = get(Param::TlsKeyFile);
    if key_file.is_empty() {
        return Err("tls-key-file is not set".into());
    }
    let key = PrivateKeyDer::from_pem_file(&key_file)
        .map_err(|e| format!("tls-key-file {key_file}: {e}"))?;

    let mut suites = chosen_suites(&get(Param::TlsCiphersuites), true);
    suites.extend(chosen_suites(&get(Param::TlsCiphers), false));
    let provider = Arc::new(CryptoProvider {
        cipher_suites: suites,
        ..rustls::crypto::ring::default_provider()
    });
    let versions = chosen_versions(&get(Param::TlsProtocols));
    let builder = ServerConfig::builder_with_provider(Arc::clone(&provider))
        .with_protocol_versions(&versions)
        .map_err(|e| format!("tls-protocols, tls-ciphersuites and tls-ciphers: {e}"))?;

    let auth = get(Param::TlsAuthClients);
    let builder = if auth == TLS_AUTH_CLIENTS[0] {
        builder.with_no_client_auth()
    } else {
        let mut roots = RootCertStore::empty();
        for cert in load_certs("tls-ca-cert-file", &get(Param::TlsCaCertFile))? {
            roots
                .add(cert)
                .map_err(|e| format!("tls-ca-cert-file: {e}"))?;
        }
        let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider);
        let verifier = if auth == TLS_AUTH_CLIENTS[2] {
            verifier.allow_unauthenticated()
        } else {
            verifier
        };
        builder.with_client_cert_verifier(
            verifier
                .build()
                .map_err(|e| format!("tls-ca-cert-file: {e}"))?,
        )
    };
    let config = builder
        .with_single_cert(certs, key)
        .map_err(|e| format!("tls-cert-file and tls-key-file: {e}"))?;
    Ok(Arc::new(config))
}

#[cfg(test)]
mod tests;
