//! The certificate checks each `sslmode` asks for, as rustls verifiers.

use std::path::Path;
use std::sync::Arc;

use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, verify_tls12_signature, verify_tls13_signature};
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, DigitallySignedStruct, Error, OtherError, SignatureScheme};
use tokio_postgres_rustls::MakeRustlsConnect;

use super::{ConnectError, SslMode, provider};

/// The TLS connector for `mode`, trusting the certificates in `root_cert` (or the platform's).
pub(super) fn connector(
    mode: SslMode,
    root_cert: Option<&Path>,
) -> Result<MakeRustlsConnect, ConnectError> {
    let provider = provider();
    // `require` with a root certificate file checks the chain, as libpq does.
    let mode = match (mode, root_cert) {
        (SslMode::Require, Some(_)) => SslMode::VerifyCa,
        _ => mode,
    };
    let root_cert = root_cert.filter(|path| path.as_os_str() != "system");
    let verifier: Arc<dyn ServerCertVerifier> = match mode {
        SslMode::Disable | SslMode::Prefer | SslMode::Require => Arc::new(Unchecked {
            provider: Arc::clone(&provider),
        }),
        SslMode::VerifyCa | SslMode::VerifyFull => {
            let (inner, trusted): (Arc<dyn ServerCertVerifier>, String) = match root_cert {
                Some(path) => (
                    roots(path, &provider)?,
                    format!("sslrootcert {}", path.display()),
                ),
                None => (
                    Arc::new(
                        rustls_platform_verifier::Verifier::new(Arc::clone(&provider)).map_err(
                            |err| ConnectError::PlatformRoots {
                                reason: err.to_string(),
                            },
                        )?,
                    ),
                    "the platform's root certificates".to_owned(),
                ),
            };
            Arc::new(Checked {
                inner,
                check_name: mode == SslMode::VerifyFull,
                trusted,
            })
        }
    };
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|err| ConnectError::PlatformRoots {
            reason: err.to_string(),
        })?
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth();
    Ok(MakeRustlsConnect::new(config))
}

/// A verifier trusting the certificates of the PEM file at `path`.
fn roots(
    path: &Path,
    provider: &Arc<CryptoProvider>,
) -> Result<Arc<dyn ServerCertVerifier>, ConnectError> {
    let failed = |reason: String| ConnectError::RootCert {
        path: path.to_owned(),
        reason,
    };
    let mut store = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_file_iter(path).map_err(|err| failed(err.to_string()))? {
        let cert = cert.map_err(|err| failed(err.to_string()))?;
        store
            .add(cert)
            .map_err(|err| failed(format!("a certificate is not usable as a root ({err})")))?;
    }
    if store.is_empty() {
        return Err(failed("it holds no PEM certificate".to_owned()));
    }
    WebPkiServerVerifier::builder_with_provider(Arc::new(store), Arc::clone(provider))
        .build()
        .map(|verifier| verifier as Arc<dyn ServerCertVerifier>)
        .map_err(|err| failed(err.to_string()))
}

/// `prefer` and `require`: the connection is encrypted and the handshake's signatures are
/// checked, but any certificate is accepted, as libpq does in these modes.
#[derive(Debug)]
struct Unchecked {
    provider: Arc<CryptoProvider>,
}

impl ServerCertVerifier for Unchecked {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
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
    ) -> Result<HandshakeSignatureValid, Error> {
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

/// `verify-ca` and `verify-full`: the chain must lead to a trusted root; the host name is
/// checked for `verify-full` only. A refusal says which roots were trusted and what to do.
#[derive(Debug)]
struct Checked {
    inner: Arc<dyn ServerCertVerifier>,
    check_name: bool,
    /// Which roots, for the refusal's message.
    trusted: String,
}

impl ServerCertVerifier for Checked {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, Error> {
        let verified = self.inner.verify_server_cert(
            end_entity,
            intermediates,
            server_name,
            ocsp_response,
            now,
        );
        match verified {
            Err(Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) if !self.check_name => Ok(ServerCertVerified::assertion()),
            // rustls shows a certificate error's own `Other` by its Debug form: the refusal
            // goes as an error of its own, shown by its message.
            Err(Error::InvalidCertificate(problem)) => {
                Err(Error::Other(OtherError(Arc::new(Refused {
                    problem: problem.to_string(),
                    trusted: self.trusted.clone(),
                    name: server_name.to_str().into_owned(),
                }))))
            }
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}

/// A certificate refused by `verify-ca` / `verify-full`.
#[derive(Debug, thiserror::Error)]
#[error(
    "the PostgreSQL server {name}'s certificate was refused ({problem}), checked against \
     {trusted}; name the CA that signed it with sslrootcert=PATH in the URL, or use \
     sslmode=require to encrypt without checking the certificate"
)]
struct Refused {
    problem: String,
    trusted: String,
    name: String,
}
