//! TLS for every listener: rustls (with the `ring` provider) driven through
//! the same non-blocking calls as a plain socket, so one reactor serves
//! TCP, Unix and TLS connections alike.
//!
//! [`TlsStream`] keeps the rustls state machine next to the TCP stream.
//! Reading pulls ciphertext from the socket and hands out plaintext;
//! writing puts plaintext into rustls and pushes the records out. Records
//! rustls could not write yet (the socket was full) stay in it; the
//! reactor sees them through `Stream::has_buffered_output` and keeps
//! flushing on writability, so nothing is left behind when the session
//! itself has nothing more to send.

use std::collections::HashMap;
use std::fmt;
use std::io::{self, IoSlice, Read, Write};
use std::net::Shutdown;
use std::sync::Arc;

use mio::net::TcpStream;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ClientHello, ResolvesServerCert, WebPkiClientVerifier};
use rustls::sign::CertifiedKey;
use rustls::{RootCertStore, ServerConfig, ServerConnection};

/// A certificate chain and its private key, PEM-encoded.
#[derive(Clone)]
pub struct CertificatePem {
    pub cert_chain: Vec<u8>,
    pub private_key: Vec<u8>,
}

impl fmt::Debug for CertificatePem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never print a private key.
        f.write_str("CertificatePem { .. }")
    }
}

/// How a listener does TLS.
#[derive(Clone, Debug)]
pub struct TlsOptions {
    /// The certificate for clients that send no server name, or one no
    /// entry of `sni` matches.
    pub default_certificate: CertificatePem,
    /// Certificates chosen by the server name the client asks for (SNI).
    pub sni: Vec<(String, CertificatePem)>,
    /// PEM certificates of the CAs whose client certificates are accepted.
    /// Empty: clients are not asked for a certificate.
    pub client_ca: Vec<u8>,
    /// With `client_ca`: refuse clients without a certificate (otherwise a
    /// certificate is optional, and checked when given).
    pub require_client_certificate: bool,
}

fn invalid(message: impl fmt::Display) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("ERR_TLS_CONFIG: {message}"),
    )
}

fn certified_key(pem: &CertificatePem, provider: &CryptoProvider) -> io::Result<Arc<CertifiedKey>> {
    let chain = CertificateDer::pem_slice_iter(&pem.cert_chain)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| invalid(format!("certificate PEM: {e}")))?;
    if chain.is_empty() {
        return Err(invalid("no certificate in the certificate PEM"));
    }
    let key = PrivateKeyDer::from_pem_slice(&pem.private_key)
        .map_err(|e| invalid(format!("private key PEM: {e}")))?;
    let signing_key = provider
        .key_provider
        .load_private_key(key)
        .map_err(|e| invalid(format!("private key: {e}")))?;
    let certified = CertifiedKey::new(chain, signing_key);
    certified
        .keys_match()
        .map_err(|e| invalid(format!("the key does not match the certificate: {e}")))?;
    Ok(Arc::new(certified))
}

/// Picks the certificate by SNI, falling back to the default one (rustls's
/// own SNI resolver refuses clients whose name it does not know).
#[derive(Debug)]
struct CertificateByName {
    by_name: HashMap<String, Arc<CertifiedKey>>,
    default: Arc<CertifiedKey>,
}

impl ResolvesServerCert for CertificateByName {
    fn resolve(&self, hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        let named = hello
            .server_name()
            .and_then(|name| self.by_name.get(&name.to_ascii_lowercase()));
        Some(named.unwrap_or(&self.default).clone())
    }
}

/// Build the rustls configuration; errors carry `ERR_TLS_CONFIG`.
pub fn server_config(options: &TlsOptions) -> io::Result<Arc<ServerConfig>> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut by_name = HashMap::new();
    for (name, pem) in &options.sni {
        by_name.insert(name.to_ascii_lowercase(), certified_key(pem, &provider)?);
    }
    let resolver = Arc::new(CertificateByName {
        by_name,
        default: certified_key(&options.default_certificate, &provider)?,
    });
    let builder = ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(invalid)?;
    let builder = if options.client_ca.is_empty() {
        builder.with_no_client_auth()
    } else {
        let mut roots = RootCertStore::empty();
        for cert in CertificateDer::pem_slice_iter(&options.client_ca) {
            let cert = cert.map_err(|e| invalid(format!("client CA PEM: {e}")))?;
            roots.add(cert).map_err(invalid)?;
        }
        let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider);
        let verifier = if options.require_client_certificate {
            verifier.build()
        } else {
            verifier.allow_unauthenticated().build()
        }
        .map_err(invalid)?;
        builder.with_client_cert_verifier(verifier)
    };
    Ok(Arc::new(builder.with_cert_resolver(resolver)))
}

/// What a completed TLS handshake settled, for the application: the
/// connection's `tls` in JavaScript.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TlsInfo {
    /// The name the client asked for (SNI); empty when it sent none.
    pub server_name: String,
    /// `TLSv1.3` or `TLSv1.2` (the names Node's `getProtocol()` uses).
    pub protocol: &'static str,
    /// The cipher suite, in IANA's naming (`TLS13_AES_128_GCM_SHA256`).
    pub cipher: String,
    /// The client's certificate (DER), verified against the listener's CA;
    /// empty when it sent none.
    pub peer_certificate: Vec<u8>,
}

/// A TLS server connection over a non-blocking TCP stream.
pub(crate) struct TlsStream {
    tcp: TcpStream,
    tls: ServerConnection,
}

impl TlsStream {
    pub(crate) fn new(tcp: TcpStream, config: Arc<ServerConfig>) -> io::Result<Self> {
        let tls = ServerConnection::new(config).map_err(io::Error::other)?;
        Ok(Self { tcp, tls })
    }

    pub(crate) fn tcp_mut(&mut self) -> &mut TcpStream {
        &mut self.tcp
    }

    /// Push out whatever records rustls holds; `Ok` when the socket is full.
    pub(crate) fn flush_records(&mut self) -> io::Result<()> {
        while self.tls.wants_write() {
            match self.tls.write_tls(&mut self.tcp) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    pub(crate) fn read(&mut self, buffer: &mut [u8]) -> io::Result<usize> {
        loop {
            match self.tls.reader().read(buffer) {
                Ok(n) => return Ok(n),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => return Err(e),
            }
            // No plaintext: take ciphertext from the socket (WouldBlock goes
            // to the caller).
            if self.tls.read_tls(&mut self.tcp)? == 0 {
                return Ok(0);
            }
            if let Err(error) = self.tls.process_new_packets() {
                // The alert rustls queued tells the peer why.
                let _ = self.flush_records();
                return Err(io::Error::new(io::ErrorKind::InvalidData, error));
            }
            // Handshake messages (and key updates) to answer.
            self.flush_records()?;
        }
    }

    pub(crate) fn write_vectored(&mut self, slices: &[IoSlice<'_>]) -> io::Result<usize> {
        // Earlier records first; while they wait, take no more plaintext, so
        // what rustls buffers stays bounded by one round of writes.
        self.flush_records()?;
        if self.tls.wants_write() {
            return Err(io::ErrorKind::WouldBlock.into());
        }
        let accepted = self.tls.writer().write_vectored(slices)?;
        self.flush_records()?;
        Ok(accepted)
    }

    pub(crate) fn has_buffered_output(&self) -> bool {
        self.tls.wants_write()
    }

    /// The close_notify and whatever else is pending, as far as the socket
    /// takes it now, then the TCP half-close.
    pub(crate) fn shutdown_write(&mut self) -> io::Result<()> {
        self.tls.send_close_notify();
        let _ = self.flush_records();
        self.tcp.shutdown(Shutdown::Write)
    }

    pub(crate) fn info(&self) -> Option<TlsInfo> {
        let tls = &self.tls;
        if tls.is_handshaking() {
            return None;
        }
        let protocol = match tls.protocol_version() {
            Some(rustls::ProtocolVersion::TLSv1_3) => "TLSv1.3",
            Some(rustls::ProtocolVersion::TLSv1_2) => "TLSv1.2",
            _ => "unknown",
        };
        let cipher = tls
            .negotiated_cipher_suite()
            .and_then(|suite| suite.suite().as_str())
            .unwrap_or("unknown")
            .to_string();
        Some(TlsInfo {
            server_name: tls.server_name().unwrap_or_default().to_string(),
            protocol,
            cipher,
            peer_certificate: tls
                .peer_certificates()
                .and_then(|chain| chain.first())
                .map(|leaf| leaf.to_vec())
                .unwrap_or_default(),
        })
    }
}
