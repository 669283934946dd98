//! Opening client sockets, for the WebSocket and xhr-streaming engines
//! (`EngineCore::connect`, `engine_core.rs`): a non-blocking connect
//! from the client's source address, and telling when it completed.

use std::io;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};

use mio::net::TcpStream;
use socket2::{Domain, Socket, Type};

/// The source address of client `idx`: 127.0.0.(2 + idx mod `source_addrs`),
/// so that the 4-tuple space of one address never limits the count; None
/// when `source_addrs` is 0 (the kernel chooses).
pub fn source_addr(idx: usize, source_addrs: u32) -> Option<SocketAddr> {
    if source_addrs == 0 {
        return None;
    }
    let last = 2 + (idx as u32 % source_addrs) as u8;
    Some(SocketAddr::V4(SocketAddrV4::new(
        Ipv4Addr::new(127, 0, 0, last),
        0,
    )))
}

/// A non-blocking socket bound to `source`, connecting to `dest` (the
/// connect completes later: see [`connect_done`]).
pub fn open(dest: SocketAddr, source: Option<SocketAddr>) -> io::Result<TcpStream> {
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
}

/// After a readiness event on a connecting socket: Ok(true) when the
/// connect completed, Ok(false) when it has not yet (a spurious wake-up),
/// the error when it failed.
pub fn connect_done(stream: &TcpStream) -> io::Result<bool> {
    if let Some(e) = stream.take_error()? {
        return Err(e);
    }
    match stream.peer_addr() {
        Ok(_) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::NotConnected => Ok(false),
        Err(e) => Err(e),
    }
}

/// What a failed connect says, with the source address it was made from.
pub fn connect_error(source: Option<SocketAddr>, e: &io::Error) -> String {
    let from = source.map_or(String::new(), |s| format!(" from {}", s.ip()));
    format!("connect{from}: {e}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn source_addresses_cycle() {
        assert_eq!(source_addr(5, 0), None);
        let ip = |i| source_addr(i, 8).map(|a| a.ip().to_string());
        assert_eq!(ip(0).as_deref(), Some("127.0.0.2"));
        assert_eq!(ip(7).as_deref(), Some("127.0.0.9"));
        assert_eq!(ip(8).as_deref(), Some("127.0.0.2"));
    }
}
