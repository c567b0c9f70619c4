//! Serving over TLS with a certificate made at start: a throw-away certificate authority signs
//! a serving certificate for `localhost` and the listening address. The authority goes into the
//! kubeconfig the server writes, so kubectl and kube-rs verify the server as usual. (kubectl
//! sends bearer tokens only over TLS, so token authentication needs it.)

use std::io;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose};
use rustls::pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::server::TlsStream;

/// How long a client has to complete the TLS handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// Why certificates could not be made.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// Generating a key or certificate failed.
    #[error("cannot generate the serving certificate: {0}")]
    Certificate(#[from] rcgen::Error),
    /// rustls refused the certificate.
    #[error("cannot configure TLS: {0}")]
    Config(#[from] rustls::Error),
    /// Stored credentials are damaged.
    #[error("the stored credentials are damaged: {0}")]
    Stored(&'static str),
}

/// The certificate authority's PEM (for kubeconfigs) and the server's TLS configuration.
pub struct ServingCertificate {
    /// The certificate authority, PEM-encoded.
    pub authority_pem: String,
    /// The rustls configuration serving the signed certificate.
    pub config: Arc<rustls::ServerConfig>,
}

/// The authority and the serving certificate with its key, in forms that can be kept in a
/// data directory so a restarted server presents the same ones.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Credentials {
    /// The address the certificate was made for (besides `localhost` and `127.0.0.1`).
    pub address: String,
    /// The certificate authority, PEM-encoded.
    pub authority_pem: String,
    /// The serving certificate, DER, base64.
    pub certificate: String,
    /// Its PKCS#8 private key, DER, base64.
    pub key: String,
    /// The bearer token (when authentication is on).
    pub token: Option<String>,
}

impl Credentials {
    /// Makes an authority and a serving certificate for `localhost` and `address`.
    ///
    /// # Errors
    /// [`TlsError`] when generation fails.
    pub fn generate(address: IpAddr, token: Option<String>) -> Result<Credentials, TlsError> {
        use base64::Engine as _;
        let authority_key = KeyPair::generate()?;
        let mut authority_params = CertificateParams::new(Vec::<String>::new())?;
        authority_params
            .distinguished_name
            .push(DnType::CommonName, "kro-apiserver-ca");
        authority_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        authority_params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let authority = authority_params.self_signed(&authority_key)?;
        let issuer = Issuer::new(authority_params, authority_key);

        let mut names = vec!["localhost".to_owned(), "127.0.0.1".to_owned()];
        if !address.is_unspecified() && address.to_string() != "127.0.0.1" {
            names.push(address.to_string());
        }
        let server_key = KeyPair::generate()?;
        let mut server_params = CertificateParams::new(names)?;
        server_params
            .distinguished_name
            .push(DnType::CommonName, "kro-apiserver");
        let server = server_params.signed_by(&server_key, &issuer)?;
        let engine = base64::engine::general_purpose::STANDARD;
        Ok(Credentials {
            address: address.to_string(),
            authority_pem: authority.pem(),
            certificate: engine.encode(server.der()),
            key: engine.encode(server_key.serialize_der()),
            token,
        })
    }

    /// The TLS configuration serving these credentials.
    ///
    /// # Errors
    /// [`TlsError`] when the stored certificate or key is not usable.
    pub fn serving(&self) -> Result<ServingCertificate, TlsError> {
        use base64::Engine as _;
        let engine = base64::engine::general_purpose::STANDARD;
        let certificate = engine
            .decode(&self.certificate)
            .map_err(|_| TlsError::Stored("the certificate is not base64"))?;
        let key = engine
            .decode(&self.key)
            .map_err(|_| TlsError::Stored("the key is not base64"))?;
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key));
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()?
            .with_no_client_auth()
            .with_single_cert(vec![certificate.into()], key)?;
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(ServingCertificate {
            authority_pem: self.authority_pem.clone(),
            config: Arc::new(config),
        })
    }
}

/// A listener yielding TLS streams whose handshakes completed; handshakes run concurrently,
/// so a slow client does not hold up others.
pub struct TlsListener {
    local: SocketAddr,
    accepted: mpsc::Receiver<(TlsStream<TcpStream>, SocketAddr)>,
}

impl TlsListener {
    /// Wraps a bound TCP listener.
    ///
    /// # Errors
    /// When the listener has no local address.
    pub fn new(listener: TcpListener, config: Arc<rustls::ServerConfig>) -> io::Result<Self> {
        let local = listener.local_addr()?;
        let acceptor = TlsAcceptor::from(config);
        let (sender, accepted) = mpsc::channel(64);
        tokio::spawn(async move {
            loop {
                let (stream, peer) = match listener.accept().await {
                    Ok(connection) => connection,
                    Err(error) => {
                        tracing::debug!(%error, "accept failed");
                        tokio::time::sleep(Duration::from_millis(10)).await;
                        continue;
                    }
                };
                if sender.is_closed() {
                    return;
                }
                let acceptor = acceptor.clone();
                let sender = sender.clone();
                tokio::spawn(async move {
                    match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await {
                        Ok(Ok(tls)) => {
                            let _ = sender.send((tls, peer)).await;
                        }
                        Ok(Err(error)) => tracing::debug!(%error, %peer, "TLS handshake failed"),
                        Err(_) => tracing::debug!(%peer, "TLS handshake timed out"),
                    }
                });
            }
        });
        Ok(TlsListener { local, accepted })
    }
}

impl axum::serve::Listener for TlsListener {
    type Io = TlsStream<TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.accepted.recv().await {
            Some(connection) => connection,
            // The accept task ended (its listener failed for good): wait forever, as a
            // listener with no more connections does.
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> io::Result<Self::Addr> {
        Ok(self.local)
    }
}
