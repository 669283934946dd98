//! The pub/sub connection to each master: its state, opening it (with
//! back-off), its reader task, and what follows when it is lost.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use bytes::BytesMut;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::TcpStream;
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::super::node_info;
use super::super::resp::{self, Event};
use super::{Input, Task};
use crate::backoff::Backoff;

/// Read buffer of a pub/sub connection; grows for a larger message.
const READ_BUFFER: usize = 64 * 1024;

pub(super) enum Link {
    Connecting,
    Up(OwnedWriteHalf),
    /// Down; the next attempt at this time.
    Waiting(Instant),
}

pub(super) struct Conn {
    pub(super) link: Link,
    pub(super) generation: u64,
    pub(super) backoff: Backoff,
}

impl Task {
    /// A master's pub/sub connection is gone (or could not be made).
    pub(super) fn lost(&mut self, addr: &Arc<str>) {
        if let Some(conn) = self.conns.get_mut(addr) {
            conn.link = Link::Waiting(Instant::now() + conn.backoff.next_delay());
            conn.generation = 0;
        }
        self.placed.retain(|_, (at, _)| at != addr);
        self.unplace_own(|_, at, _| at == &**addr);
        self.set_node(addr, false);
        self.request_refresh();
    }

    pub(super) fn set_node(&self, addr: &str, up: bool) {
        let view = self.shared.view.read();
        if let Some(node) = view.nodes.iter().find(|n| &*n.addr == addr) {
            node.subscribed.store(up, Ordering::Release);
            node.epoch.fetch_add(1, Ordering::AcqRel);
        }
        drop(view);
        self.shared.view_changed.notify_one();
    }

    /// Start connection attempts that are due.
    pub(super) fn retry_connections(&mut self) {
        let now = Instant::now();
        for (addr, conn) in &mut self.conns {
            let Link::Waiting(at) = conn.link else {
                continue;
            };
            if at > now {
                continue;
            }
            self.next_generation += 1;
            conn.generation = self.next_generation;
            conn.link = Link::Connecting;
            let (addr, generation) = (addr.clone(), conn.generation);
            let (seed, timeout, inputs) = (
                self.seed.clone(),
                self.config.connect_timeout,
                self.inputs.clone(),
            );
            tokio::spawn(async move {
                let opened = match node_info(&seed, &addr) {
                    Some(info) => open(&info, timeout).await,
                    None => None,
                };
                let Some((writer, reader)) = opened else {
                    let _ = inputs
                        .send(Input::Connected {
                            addr,
                            generation,
                            writer: None,
                        })
                        .await;
                    return;
                };
                let sent = inputs
                    .send(Input::Connected {
                        addr: addr.clone(),
                        generation,
                        writer: Some(writer),
                    })
                    .await;
                if sent.is_ok() {
                    read(reader, addr, generation, inputs).await;
                }
            });
        }
    }
}

/// Open a pub/sub connection (and authenticate, if the URL says so).
async fn open(
    info: &redis::ConnectionInfo,
    timeout: Duration,
) -> Option<(OwnedWriteHalf, OwnedReadHalf)> {
    let redis::ConnectionAddr::Tcp(host, port) = info.addr() else {
        return None;
    };
    let connect = async {
        let stream = TcpStream::connect((host.as_str(), *port)).await.ok()?;
        stream.set_nodelay(true).ok()?;
        let (mut reader, mut writer) = stream.into_split();
        let settings = info.redis_settings();
        if let Some(password) = settings.password() {
            let mut auth = Vec::new();
            match settings.username() {
                Some(user) => resp::command(&mut auth, &["AUTH", user, password]),
                None => resp::command(&mut auth, &["AUTH", password]),
            }
            writer.write_all(&auth).await.ok()?;
            let mut buf = BytesMut::with_capacity(256);
            loop {
                if let Some((reply, _)) = resp::parse(&buf).ok()? {
                    if !matches!(reply, resp::Reply::Simple(_)) {
                        return None;
                    }
                    break;
                }
                if reader.read_buf(&mut buf).await.ok()? == 0 {
                    return None;
                }
            }
        }
        Some((writer, reader))
    };
    tokio::time::timeout(timeout, connect).await.ok().flatten()
}

/// The reader task of one pub/sub connection: parse, hand over, and say
/// when it ends.
async fn read(
    mut reader: OwnedReadHalf,
    addr: Arc<str>,
    generation: u64,
    inputs: mpsc::Sender<Input>,
) {
    let mut buf = BytesMut::with_capacity(READ_BUFFER);
    'reading: loop {
        loop {
            match resp::parse(&buf) {
                Ok(Some((reply, used))) => {
                    let _ = buf.split_to(used);
                    let event = Event::of(reply);
                    let input = Input::Reply {
                        addr: addr.clone(),
                        generation,
                        event,
                    };
                    if inputs.send(input).await.is_err() {
                        return;
                    }
                }
                Ok(None) => break,
                Err(_) => break 'reading,
            }
        }
        if buf.capacity() - buf.len() < 4096 {
            buf.reserve(READ_BUFFER);
        }
        match reader.read_buf(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
    }
    let _ = inputs.send(Input::Closed { addr, generation }).await;
}
