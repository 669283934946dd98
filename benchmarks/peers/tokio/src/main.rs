//! Pure Rust Tokio WebSocket server: the "no JavaScript in the loop" peer of
//! the Switchboard benchmark suite. It follows `benchmarks/SCENARIOS.md`
//! (`PORT`, `LISTENING <port>`, SIGTERM, `/echo`, `/room`, `/channels`) with
//! plain WebSocket framing only.
//!
//! It is written the way a competent Rust engineer would write such a server
//! with the ecosystem's standard crates, not with Switchboard's own:
//!
//! - **tokio** multi-thread runtime with `THREADS` workers (default 1: the
//!   runner pins every server to one core, and one worker avoids cross-thread
//!   wake-ups there), **tokio-tungstenite** for the protocol.
//! - **One task per connection** running a select loop over the socket and the
//!   connection's outbox, instead of split reader/writer tasks: an echo reply
//!   goes straight to the sink without a channel hop or a second wake-up, and
//!   there is no `BiLock` between the two halves of a split stream.
//! - **Batched writes**: messages are `feed`-ed (serialised into tungstenite's
//!   write buffer) while more work is immediately ready, and `flush`-ed once
//!   when there is none, so a burst costs one `write` syscall, not one each.
//! - **Broadcast through unbounded per-connection mpsc outboxes** carrying the
//!   received `Message` itself: its payload is `Bytes`, so each subscriber
//!   gets a reference-counted clone and the payload is never copied before it
//!   is framed into a socket's write buffer. Unbounded because the contract
//!   says send buffers may grow (16 MiB) rather than drop fan-out messages,
//!   and a publisher must never wait on a slow subscriber.
//! - **Registry**: `Mutex<HashMap<String, Arc<Channel>>>`, touched only to
//!   join and leave; a connection keeps its `Arc<Channel>`, so publishing
//!   locks only that channel's subscriber list.
//! - **Settings**: no compression (tungstenite has none), no idle timeouts,
//!   unlimited write buffer, 64 MiB message / 16 MiB frame limits (the
//!   library defaults, kept explicit), `TCP_NODELAY` since writes are already
//!   batched, and an 8 KiB read buffer instead of the default 128 KiB (see
//!   [`READ_BUFFER_SIZE`]).

use std::collections::HashMap;
use std::future::poll_fn;
use std::io::Write as _;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use futures_util::{SinkExt as _, StreamExt as _};
use parking_lot::Mutex;
use tokio::net::{TcpListener, TcpStream};
use tokio::signal::unix::{signal, SignalKind};
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver, UnboundedSender};
use tokio_tungstenite::tungstenite::handshake::server::{ErrorResponse, Request, Response};
use tokio_tungstenite::tungstenite::http::StatusCode;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::{CloseFrame, WebSocketConfig};
use tokio_tungstenite::tungstenite::{Error as WsError, Message, Utf8Bytes};
use tokio_tungstenite::WebSocketStream;

/// tungstenite allocates its read buffer eagerly per connection and zero-fills
/// it up to capacity before every `read`, so the 128 KiB default would make
/// every idle connection cost 128 KiB of resident memory and every read a
/// 128 KiB memset. Benchmark messages are small (32 bytes and up); 8 KiB still
/// takes in hundreds of them per syscall, and a larger frame reserves its own
/// full length anyway (it is then read in 8 KiB steps).
const READ_BUFFER_SIZE: usize = 8 * 1024;

/// Most outbox messages drained into the write buffer before a flush. Draining
/// with `try_recv` does not count against tokio's cooperative budget, so this
/// bounds how long one busy connection can hold a worker between awaits.
const MAX_BATCH: usize = 512;

type Ws = WebSocketStream<TcpStream>;
type Outbox = UnboundedSender<Message>;

fn main() {
    let port = env_number("PORT", 0u16);
    let threads = env_number("THREADS", 1usize).max(1);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads)
        .enable_all()
        .build()
        .unwrap_or_else(|e| fail(&format!("cannot start the tokio runtime: {e}")));
    runtime.block_on(serve(port));
    // Dropping the runtime cancels the connection tasks; their sockets close
    // with them, which is all a benchmark run needs at the end.
}

/// Reads a numeric setting from the environment; a malformed value stops the
/// server instead of silently running a benchmark with the wrong settings.
fn env_number<T: std::str::FromStr>(name: &str, default: T) -> T {
    match std::env::var(name) {
        Ok(value) if !value.trim().is_empty() => value
            .trim()
            .parse()
            .unwrap_or_else(|_| fail(&format!("{name}={value:?} is not a valid number"))),
        _ => default,
    }
}

fn fail(message: &str) -> ! {
    eprintln!("switchboard-bench-tokio: {message}");
    std::process::exit(2);
}

async fn serve(port: u16) {
    // Installed before `LISTENING` so a SIGTERM sent right after it is caught.
    let mut sigterm = signal(SignalKind::terminate())
        .unwrap_or_else(|e| fail(&format!("cannot install the SIGTERM handler: {e}")));
    let listener = TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, port)))
        .await
        .unwrap_or_else(|e| fail(&format!("cannot listen on 127.0.0.1:{port}: {e}")));
    let port = listener
        .local_addr()
        .unwrap_or_else(|e| fail(&format!("cannot read the listening address: {e}")))
        .port();
    {
        let mut stdout = std::io::stdout().lock();
        // The runner waits for this exact line; a failed write means nobody is
        // listening for it, and the server is useless then.
        if writeln!(stdout, "LISTENING {port}")
            .and_then(|()| stdout.flush())
            .is_err()
        {
            fail("cannot write LISTENING to stdout");
        }
    }

    let registry = Arc::new(Registry::default());
    let next_id = AtomicU64::new(0);
    loop {
        tokio::select! {
            _ = sigterm.recv() => return,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    let id = next_id.fetch_add(1, Ordering::Relaxed);
                    tokio::spawn(connection(stream, id, Arc::clone(&registry)));
                }
                Err(e) => {
                    // Typically EMFILE: back off briefly instead of spinning on
                    // a listener that stays readable.
                    eprintln!("switchboard-bench-tokio: accept failed: {e}");
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            },
        }
    }
}

#[derive(Clone, Copy)]
enum Endpoint {
    Echo,
    Room,
    Channels,
}

/// Subscribers of one channel. Senders are kept in a `Vec` because publishing
/// (iterate all) is the hot path; leaving (find one) is rare.
struct Channel {
    name: String,
    subscribers: Mutex<Vec<(u64, Outbox)>>,
}

impl Channel {
    fn publish(&self, message: &Message, except: u64) {
        for (id, outbox) in self.subscribers.lock().iter() {
            if *id != except {
                // A send only fails when that connection is on its way out; its
                // subscription is being removed, so the message has nowhere to go.
                let _ = outbox.send(message.clone());
            }
        }
    }
}

#[derive(Default)]
struct Registry {
    channels: Mutex<HashMap<String, Arc<Channel>>>,
}

impl Registry {
    fn join(self: &Arc<Self>, name: &str, id: u64) -> Subscription {
        let (outbox, inbox) = unbounded_channel();
        let mut channels = self.channels.lock();
        let channel = channels
            .entry(name.to_owned())
            .or_insert_with(|| {
                Arc::new(Channel {
                    name: name.to_owned(),
                    subscribers: Mutex::new(Vec::new()),
                })
            })
            .clone();
        channel.subscribers.lock().push((id, outbox));
        drop(channels);
        Subscription {
            registry: Arc::clone(self),
            channel,
            id,
            inbox,
        }
    }
}

/// A connection's membership of one channel; dropping it (the connection
/// ended, however it ended) removes the connection, and the channel itself
/// once it is empty so a long run with many short-lived channels stays flat.
struct Subscription {
    registry: Arc<Registry>,
    channel: Arc<Channel>,
    id: u64,
    inbox: UnboundedReceiver<Message>,
}

impl Drop for Subscription {
    fn drop(&mut self) {
        // Registry lock first, as in `join`, so a concurrent join cannot pick
        // up a channel that is being removed from the map.
        let mut channels = self.registry.channels.lock();
        let mut subscribers = self.channel.subscribers.lock();
        if let Some(index) = subscribers.iter().position(|(id, _)| *id == self.id) {
            subscribers.swap_remove(index);
        }
        if subscribers.is_empty() {
            channels.remove(&self.channel.name);
        }
    }
}

async fn connection(stream: TcpStream, id: u64, registry: Arc<Registry>) {
    // Small messages must not wait for Nagle; writes are batched by `flush`.
    let _ = stream.set_nodelay(true);
    let config = WebSocketConfig::default()
        .read_buffer_size(READ_BUFFER_SIZE)
        .max_message_size(Some(64 << 20))
        .max_frame_size(Some(16 << 20));
    let mut endpoint = None;
    #[allow(
        clippy::result_large_err,
        reason = "the error type is tungstenite's handshake `Callback` contract"
    )]
    let route = |request: &Request, response: Response| {
        endpoint = match request.uri().path() {
            "/echo" => Some(Endpoint::Echo),
            "/room" => Some(Endpoint::Room),
            "/channels" => Some(Endpoint::Channels),
            _ => None,
        };
        if endpoint.is_some() {
            Ok(response)
        } else {
            let mut not_found = ErrorResponse::new(None);
            *not_found.status_mut() = StatusCode::NOT_FOUND;
            Err(not_found)
        }
    };
    let Ok(mut ws) =
        tokio_tungstenite::accept_hdr_async_with_config(stream, route, Some(config)).await
    else {
        return;
    };
    let Some(endpoint) = endpoint else { return };
    let mut subscription = match endpoint {
        Endpoint::Room => Some(registry.join("room", id)),
        Endpoint::Echo | Endpoint::Channels => None,
    };
    // Errors end the connection: the peer went away or broke the protocol,
    // and either way there is nobody left to report them to.
    let _ = run(&mut ws, endpoint, id, &registry, &mut subscription).await;
    // Unsubscribe before the socket closes, so no publisher keeps queueing
    // messages for a connection that will never send them.
    drop(subscription);
}

/// What a connection does after one event: keep going, or close.
enum Next {
    Continue,
    Close(CloseFrame),
}

async fn run(
    ws: &mut Ws,
    endpoint: Endpoint,
    id: u64,
    registry: &Arc<Registry>,
    subscription: &mut Option<Subscription>,
) -> Result<(), WsError> {
    loop {
        // Wait for the first piece of work. Outgoing first (`biased`): it is
        // already owed to the client, and delivering it frees memory.
        tokio::select! {
            biased;
            Some(message) = next_outgoing(subscription) => ws.feed(message).await?,
            incoming = ws.next() => match incoming {
                Some(message) => {
                    if let Next::Close(frame) =
                        handle(ws, endpoint, id, registry, subscription, message?).await?
                    {
                        return ws.close(Some(frame)).await;
                    }
                }
                None => return Ok(()),
            },
        }
        // Then take everything else that is ready right now, so that one flush
        // (one syscall) carries the whole burst.
        let mut batch = 1;
        while batch < MAX_BATCH {
            if let Some(message) = subscription.as_mut().and_then(|s| s.inbox.try_recv().ok()) {
                ws.feed(message).await?;
            } else if let Some(incoming) = ready_incoming(ws).await {
                let Some(message) = incoming else { break };
                if let Next::Close(frame) =
                    handle(ws, endpoint, id, registry, subscription, message?).await?
                {
                    return ws.close(Some(frame)).await;
                }
            } else {
                break;
            }
            batch += 1;
        }
        ws.flush().await?;
    }
}

/// The next message published to this connection's channel; never resolves
/// for a connection that has not joined one, which disables that `select!`
/// branch without allocating an outbox for every echo connection.
async fn next_outgoing(subscription: &mut Option<Subscription>) -> Option<Message> {
    match subscription {
        Some(subscription) => subscription.inbox.recv().await,
        None => std::future::pending().await,
    }
}

/// The next incoming message if one can be had without waiting (already in
/// the read buffer or the socket), polled with the task's real waker so a
/// `Pending` here leaves the socket registered correctly.
async fn ready_incoming(ws: &mut Ws) -> Option<Option<Result<Message, WsError>>> {
    poll_fn(|cx| match ws.poll_next_unpin(cx) {
        Poll::Ready(incoming) => Poll::Ready(Some(incoming)),
        Poll::Pending => Poll::Ready(None),
    })
    .await
}

async fn handle(
    ws: &mut Ws,
    endpoint: Endpoint,
    id: u64,
    registry: &Arc<Registry>,
    subscription: &mut Option<Subscription>,
    message: Message,
) -> Result<Next, WsError> {
    // Only data messages matter here: tungstenite answers pings and close
    // frames itself (the answer goes out with the next flush).
    if !matches!(message, Message::Text(_) | Message::Binary(_)) {
        return Ok(Next::Continue);
    }
    match endpoint {
        Endpoint::Echo => ws.feed(message).await?,
        Endpoint::Room | Endpoint::Channels => {
            if let Some(subscription) = subscription {
                // The sender's copy goes straight to its own sink, the others'
                // through their outboxes: the sender's own message costs no
                // channel round trip. For the room this is the same as
                // publishing to everyone including the sender.
                ws.feed(message.clone()).await?;
                subscription.channel.publish(&message, id);
            } else {
                // Only `/channels` starts unsubscribed, and its first message
                // must name the channel to join.
                let channel = match &message {
                    Message::Text(text) => text.strip_prefix("join:"),
                    _ => None,
                };
                let Some(channel) = channel else {
                    return Ok(Next::Close(CloseFrame {
                        code: CloseCode::Policy,
                        reason: Utf8Bytes::from_static("the first message must be join:<channel>"),
                    }));
                };
                *subscription = Some(registry.join(channel, id));
                ws.feed(Message::Text(Utf8Bytes::from_static("joined")))
                    .await?;
            }
        }
    }
    Ok(Next::Continue)
}
