//! Opening connections: a non-blocking connect from the connection's source
//! address, then the HTTP upgrade once TCP is up. At most
//! `--connect-concurrency` connections are between these steps at once.

use std::io;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};

use mio::net::TcpStream;
use mio::{Interest, Token};
use socket2::{Domain, Socket, Type};

use super::Engine;
use crate::conn::Phase;
use crate::dispatch::Stop;
use crate::handshake;

impl Engine {
    pub(super) fn start_connects(&mut self, now: u64) {
        while let Some(&(at, idx)) = self.retry.front() {
            if at > now {
                break;
            }
            self.retry.pop_front();
            self.queue.push_front(idx);
        }
        while self.opening < self.concurrency {
            let Some(idx) = self.queue.pop_front() else {
                break;
            };
            self.start_connect(idx as usize);
        }
    }

    fn source_addr(&self, idx: usize) -> Option<SocketAddr> {
        if self.source_addrs == 0 {
            return None;
        }
        let last = 2 + (idx as u32 % self.source_addrs) as u8;
        Some(SocketAddr::V4(SocketAddrV4::new(
            Ipv4Addr::new(127, 0, 0, last),
            0,
        )))
    }

    fn start_connect(&mut self, idx: usize) {
        let source = self.source_addr(idx);
        let dest = self.dest;
        let attempt = || -> io::Result<TcpStream> {
            let domain = if dest.is_ipv4() {
                Domain::IPV4
            } else {
                Domain::IPV6
            };
            let sock = Socket::new(domain, Type::STREAM, None)?;
            sock.set_nonblocking(true)?;
            // Writes are already batched per loop turn; Nagle would only delay them.
            sock.set_tcp_nodelay(true)?;
            if let Some(src) = source {
                sock.bind(&src.into())?;
            }
            match sock.connect(&dest.into()) {
                Ok(()) => {}
                Err(e) if e.raw_os_error() == Some(libc::EINPROGRESS) => {}
                Err(e) => return Err(e),
            }
            Ok(TcpStream::from_std(sock.into()))
        };
        self.opening += 1;
        self.conns[idx].phase = Phase::Connecting;
        match attempt() {
            Ok(mut stream) => {
                if let Err(e) = self.poll.registry().register(
                    &mut stream,
                    Token(idx),
                    Interest::READABLE | Interest::WRITABLE,
                ) {
                    self.close(idx, Stop::Closed(format!("epoll registration failed: {e}")));
                    return;
                }
                self.conns[idx].stream = Some(stream);
            }
            Err(e) => {
                let from = source.map_or(String::new(), |s| format!(" from {}", s.ip()));
                self.close(idx, Stop::Closed(format!("connect{from}: {e}")));
            }
        }
    }

    /// A writable (or failed) socket in the connecting phase: TCP is up, or
    /// it failed.
    pub(super) fn finish_connect(&mut self, idx: usize) {
        let conn = &mut self.conns[idx];
        let Some(stream) = conn.stream.as_mut() else {
            return;
        };
        match stream.take_error() {
            Ok(None) => {}
            Ok(Some(e)) | Err(e) => return self.close(idx, Stop::Closed(format!("connect: {e}"))),
        }
        match stream.peer_addr() {
            Ok(_) => {}
            // Not connected yet: a spurious wake-up.
            Err(e) if e.kind() == io::ErrorKind::NotConnected => return,
            Err(e) => return self.close(idx, Stop::Closed(format!("connect: {e}"))),
        }
        let path = self.codec.path(&mut self.rng);
        let upgrade = handshake::request(&self.host, self.port, &path, &mut self.rng);
        conn.out.buf.extend_from_slice(&upgrade.request);
        conn.phase = Phase::Upgrading {
            accept: upgrade.expected_accept,
        };
        self.flush_one(idx);
    }
}
