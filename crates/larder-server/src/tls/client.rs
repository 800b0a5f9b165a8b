//! The client side of TLS: a replica's link to its master with `tls-replication yes`.
//!
//! As Redis 7.0 (`createSSLContext` with `client` set in src/tls.c): the master's
//! certificate chain is verified against `tls-ca-cert-file` with the host name not checked
//! and no SNI sent; the replica shows `tls-client-cert-file` / `tls-client-key-file` when
//! both are set, else `tls-cert-file` / `tls-key-file` when set; `tls-protocols`,
//! `tls-ciphersuites` and `tls-ciphers` apply as on the server side. The settings are built
//! anew for each connection, so a CONFIG SET takes effect at the next one.

use std::sync::Arc;

use larder_commands::config::Param;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{verify_tls12_signature, verify_tls13_signature, CryptoProvider};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::server::ParsedCertificate;
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};
use rustls_pki_types::pem::PemObject;

use super::{chosen_suites, load_certs};

/// Verifies the peer's chain against the CA, with the host name unchecked (OpenSSL's
/// `SSL_VERIFY_PEER` with no `X509_VERIFY_PARAM_set1_host`, which is what Redis sets).
#[derive(Debug)]
struct ChainOnly {
    roots: RootCertStore,
    provider: Arc<CryptoProvider>,
}

impl ServerCertVerifier for ChainOnly {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let cert = ParsedCertificate::try_from(end_entity)?;
        rustls::client::verify_server_cert_signed_by_trust_anchor(
            &cert,
            &self.roots,
            intermediates,
            now,
            self.provider.signature_verification_algorithms.all,
        )?;
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

/// The client settings from the parameters' values as `get` gives them; the error says
/// which parameter is wrong.
pub fn build_client(get: &dyn Fn(Param) -> String) -> Result<Arc<ClientConfig>, String> {
    let mut suites = chosen_suites(&get(Param::TlsCiphersuites), true);
    suites.extend(chosen_suites(&get(Param::TlsCiphers), false));
    let provider = Arc::new(CryptoProvider {
        cipher_suites: suites,
        ..rustls::crypto::ring::default_provider()
    });
    let versions = super::chosen_versions(&get(Param::TlsProtocols));
    let mut roots = RootCertStore::empty();
    for cert in load_certs("tls-ca-cert-file", &get(Param::TlsCaCertFile))? {
        roots
            .add(cert)
            .map_err(|e| format!("tls-ca-cert-file: {e}"))?;
    }
    let verifier = Arc::new(ChainOnly {
        roots,
        provider: Arc::clone(&provider),
    });
    let builder = ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&versions)
        .map_err(|e| format!("tls-protocols, tls-ciphersuites and tls-ciphers: {e}"))?
        .dangerous()
        .with_custom_certificate_verifier(verifier);
    let (client_cert, client_key) = (get(Param::TlsClientCertFile), get(Param::TlsClientKeyFile));
    let (cert_name, cert_file, key_name, key_file) =
        if !client_cert.is_empty() && !client_key.is_empty() {
            (
                "tls-client-cert-file",
                client_cert,
                "tls-client-key-file",
                client_key,
            )
        } else {
            (
                "tls-cert-file",
                get(Param::TlsCertFile),
                "tls-key-file",
                get(Param::TlsKeyFile),
            )
        };
    let mut config = if cert_file.is_empty() || key_file.is_empty() {
        builder.with_no_client_auth()
    } else {
        let certs = load_certs(cert_name, &cert_file)?;
        let key = PrivateKeyDer::from_pem_file(&key_file)
            .map_err(|e| format!("{key_name} {key_file}: {e}"))?;
        builder
            .with_client_auth_cert(certs, key)
            .map_err(|e| format!("{cert_name} and {key_name}: {e}"))?
    };
    config.enable_sni = false;
    Ok(Arc::new(config))
}
