//! TLS for protocol listeners: rustls (with the `ring` provider) driven
//! through the same readiness calls as a plain socket, so one session loop
//! serves TCP, Unix and TLS connections.
//!
//! [`TlsSocket`] keeps the rustls state machine next to the TCP stream.
//! Reading pulls ciphertext with `try_read` and hands out plaintext;
//! writing puts plaintext into rustls and pushes the records out with
//! `try_write`. Records rustls could not write yet (the socket was full)
//! stay in it; the session sees them through
//! [`Socket::has_buffered_output`] and keeps waiting for writability, so
//! nothing is left behind when the session itself has nothing more to send.

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::io::{self, IoSlice, Read, Write};
use std::sync::Arc;

use parking_lot::Mutex;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ClientHello, ResolvesServerCert, WebPkiClientVerifier};
use rustls::sign::CertifiedKey;
use rustls::{RootCertStore, ServerConfig, ServerConnection};
use tokio::io::Interest;
use tokio::net::TcpStream;

use crate::socket::Socket;

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

/// How a protocol listener does TLS.
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

/// A TLS server connection over TCP, with the readiness interface of
/// [`Socket`].
pub(crate) struct TlsSocket {
    tcp: TcpStream,
    tls: Mutex<ServerConnection>,
}

/// `io::Read`/`io::Write` over the TCP stream's non-blocking calls, for
/// rustls's `read_tls`/`write_tls`.
struct Raw<'a>(&'a TcpStream);

impl Read for Raw<'_> {
    fn read(&mut self, buffer: &mut [u8]) -> io::Result<usize> {
        self.0.try_read(buffer)
    }
}

impl Write for Raw<'_> {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.0.try_write(bytes)
    }
    fn write_vectored(&mut self, slices: &[IoSlice<'_>]) -> io::Result<usize> {
        self.0.try_write_vectored(slices)
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl TlsSocket {
    pub(crate) fn new(tcp: TcpStream, config: Arc<ServerConfig>) -> io::Result<Self> {
        let tls = ServerConnection::new(config).map_err(io::Error::other)?;
        Ok(Self {
            tcp,
            tls: Mutex::new(tls),
        })
    }

    /// Push out whatever records rustls holds; `Ok` when the socket is full.
    fn flush_records(&self, tls: &mut ServerConnection) -> io::Result<()> {
        while tls.wants_write() {
            match tls.write_tls(&mut Raw(&self.tcp)) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    fn has_plaintext(&self) -> bool {
        let mut tls = self.tls.lock();
        // `process_new_packets` on no new input only reports the state.
        tls.process_new_packets()
            .map(|state| state.plaintext_bytes_to_read() > 0 || state.peer_has_closed())
            .unwrap_or(true)
    }
}

impl Socket for TlsSocket {
    fn readable(&self) -> impl Future<Output = io::Result<()>> + Send {
        let ready_now = self.has_plaintext();
        async move {
            if ready_now {
                return Ok(());
            }
            self.tcp.readable().await
        }
    }

    fn writable(&self) -> impl Future<Output = io::Result<()>> + Send {
        self.tcp.writable()
    }

    fn try_read(&self, buffer: &mut [u8]) -> io::Result<usize> {
        let mut tls = self.tls.lock();
        loop {
            match tls.reader().read(buffer) {
                Ok(n) => return Ok(n),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => return Err(e),
            }
            // No plaintext: take ciphertext from the socket (WouldBlock
            // goes to the caller, and clears the socket's readiness).
            if tls.read_tls(&mut Raw(&self.tcp))? == 0 {
                return Ok(0);
            }
            if let Err(error) = tls.process_new_packets() {
                // The alert rustls queued tells the peer why.
                let _ = self.flush_records(&mut tls);
                return Err(io::Error::new(io::ErrorKind::InvalidData, error));
            }
            // Handshake messages (and key updates) to answer.
            self.flush_records(&mut tls)?;
        }
    }

    fn try_write_vectored(&self, slices: &[IoSlice<'_>]) -> io::Result<usize> {
        let mut tls = self.tls.lock();
        // Earlier records first; while they wait, take no more plaintext, so
        // what rustls buffers stays bounded by one round of writes.
        self.flush_records(&mut tls)?;
        if tls.wants_write() {
            return Err(io::ErrorKind::WouldBlock.into());
        }
        let accepted = tls.writer().write_vectored(slices)?;
        self.flush_records(&mut tls)?;
        Ok(accepted)
    }

    fn try_io<R>(&self, _interest: Interest, f: impl FnOnce() -> io::Result<R>) -> io::Result<R> {
        // No readiness trick here: a short read may have come from rustls's
        // buffer while the socket still has data. The TCP calls inside clear
        // the readiness themselves when they really would block.
        f()
    }

    fn has_buffered_output(&self) -> bool {
        self.tls.lock().wants_write()
    }

    fn tls_info(&self) -> Option<TlsInfo> {
        let tls = self.tls.lock();
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

    async fn shutdown(&mut self) -> io::Result<()> {
        self.tls.lock().send_close_notify();
        // Best effort: the close_notify and whatever is left, then FIN.
        for _ in 0..16 {
            let pending = {
                let mut tls = self.tls.lock();
                self.flush_records(&mut tls)?;
                tls.wants_write()
            };
            if !pending {
                break;
            }
            self.tcp.writable().await?;
        }
        tokio::io::AsyncWriteExt::shutdown(&mut self.tcp).await
    }
}
