//! Channel operations on a server: the pure registry (crate
//! `switchboard-pubsub`) plus delivery into connections' queues.
//!
//! A publish frames the message once per kind of recipient (WebSocket, the
//! protocol on a stream, the protocol over WebSocket, SockJS, the protocol
//! carried by SockJS; compressing
//! connections take the payload), on first need, and every recipient of a
//! kind shares those bytes. Recipients behind a virtual socket with a tag
//! get the tag in front: one set of framings per distinct tag. No
//! JavaScript runs per recipient.

use std::sync::Arc;

use bytes::Bytes;
use switchboard_proto::rpc;
use switchboard_pubsub::{ChannelChange, SubscriberId, Target};

use crate::bridge::{Bridge, BridgeError};

use crate::connection::{Connection, ConnectionKind};
use crate::framing;
use crate::history::Position;
use crate::outbound::SendStatus;
use crate::server::Server;
use crate::state::Outcomes;

/// One publish as each kind of recipient needs it, framed on first need
/// and then shared by every recipient of that kind: a publish to WebSocket
/// clients alone never builds a protocol frame, and the other way round.
struct Framings<'a> {
    /// A virtual socket's tag, sent in front of the data (empty: none).
    prefix: Bytes,
    data: &'a [u8],
    binary: bool,
    /// The action of the protocol message: the channel published to.
    channel: Option<&'a str>,
    /// The publication's place in its channel's history, carried to
    /// protocol recipients as the MESSAGE's explicit UUID.
    position: Option<[u8; 16]>,
    websocket: Option<Bytes>,
    /// For protocol recipients: `None` until built, then the frame (or
    /// `None` when the publish named no channel a protocol message can
    /// carry).
    rpc_stream: Option<Option<Bytes>>,
    rpc_websocket: Option<Option<Bytes>>,
    /// For SockJS recipients: one `a["..."]` frame for all of them (`None`
    /// inside: a binary publish, which SockJS cannot carry).
    sockjs: Option<Option<Bytes>>,
    /// For protocol sessions carried by SockJS: the protocol's MESSAGE in
    /// base64, `a["..."]`, one for all of them.
    rpc_sockjs: Option<Option<Bytes>>,
}

impl<'a> Framings<'a> {
    /// `channel`: the channel published to; a publish without one (or with
    /// a name that is not 1..255 bytes) cannot reach protocol connections.
    fn new(
        prefix: Bytes,
        data: &'a [u8],
        binary: bool,
        channel: Option<&'a str>,
        position: Option<Position>,
    ) -> Self {
        Self {
            prefix,
            data,
            binary,
            channel: channel.filter(|c| (1..=255).contains(&c.len())),
            position: position.map(Position::to_uuid),
            websocket: None,
            rpc_stream: None,
            rpc_websocket: None,
            sockjs: None,
            rpc_sockjs: None,
        }
    }

    /// Queue the publish for `connection` in its framing.
    fn deliver(&mut self, connection: &Arc<Connection>) -> SendStatus {
        let frame = match connection.kind {
            ConnectionKind::WebSocket => self.websocket(),
            ConnectionKind::WebSocketDeflate => {
                // It compresses with its own context, on its own thread: it
                // gets the payload, sharing the WebSocket frame's bytes.
                let header = framing::header_len(self.prefix.len() + self.data.len());
                let payload = self.websocket().slice(header..);
                return connection.enqueue_to_compress(payload, self.binary);
            }
            ConnectionKind::RpcStream => match self.rpc_stream() {
                Some(frame) => frame,
                None => return SendStatus::Dropped,
            },
            ConnectionKind::RpcWebSocket => match self.rpc_websocket() {
                Some(frame) => frame,
                None => return SendStatus::Dropped,
            },
            ConnectionKind::SockJsWebSocket => match self.sockjs() {
                Some(frame) => frame,
                None => return SendStatus::Dropped,
            },
            // The same encoded frame without its WebSocket header.
            ConnectionKind::SockJsHttp => match self.sockjs() {
                Some(frame) => &framing::websocket_payload(frame),
                None => return SendStatus::Dropped,
            },
            ConnectionKind::RpcSockJsHttp => match self.rpc_sockjs() {
                Some(frame) => frame,
                None => return SendStatus::Dropped,
            },
            // An HTTP connection takes responses only (a channel's messages
            // would break its framing).
            ConnectionKind::Http => return SendStatus::Closed,
        };
        connection.enqueue_frame(frame)
    }

    fn sockjs(&mut self) -> Option<&Bytes> {
        let (prefix, data, binary) = (&self.prefix, self.data, self.binary);
        self.sockjs
            .get_or_insert_with(|| framing::sockjs_message(prefix, data, binary))
            .as_ref()
    }

    fn websocket(&mut self) -> &Bytes {
        let (prefix, data, binary) = (&self.prefix, self.data, self.binary);
        self.websocket
            .get_or_insert_with(|| framing::frame_parts(prefix, data, binary))
    }

    /// An unnumbered one-way MESSAGE (call id 0, docs/protocol.md §4)
    /// whose action is the channel's name.
    fn rpc_stream(&mut self) -> Option<&Bytes> {
        if self.rpc_stream.is_none() {
            let frame = self.channel.map(|action| {
                let len = self.prefix.len() + self.data.len();
                let mut frame = Vec::with_capacity(32 + action.len() + len);
                let uuid = self.position.as_ref();
                rpc::encode_message_header(0, false, uuid, action, len, &mut frame);
                frame.extend_from_slice(&self.prefix);
                frame.extend_from_slice(self.data);
                Bytes::from(frame)
            });
            self.rpc_stream = Some(frame);
        }
        self.rpc_stream.as_ref().and_then(Option::as_ref)
    }

    /// The same MESSAGE carried in a SockJS message (base64).
    fn rpc_sockjs(&mut self) -> Option<&Bytes> {
        if self.rpc_sockjs.is_none() {
            let carried = self
                .rpc_stream()
                .map(|frame| framing::sockjs_carried(frame));
            self.rpc_sockjs = Some(carried);
        }
        self.rpc_sockjs.as_ref().and_then(Option::as_ref)
    }

    /// The same MESSAGE in a WebSocket binary message.
    fn rpc_websocket(&mut self) -> Option<&Bytes> {
        if self.rpc_websocket.is_none() {
            let framed = self
                .rpc_stream()
                .map(|frame| framing::frame_message(frame, true));
            self.rpc_websocket = Some(framed);
        }
        self.rpc_websocket.as_ref().and_then(Option::as_ref)
    }
}

/// One target of a publish, as JavaScript names it.
pub enum PublishTarget<'a> {
    Channel(&'a str),
    /// A connection or a virtual socket.
    Subscriber(u64),
}

impl Server {
    /// Publish to a channel; returns the number of recipients on this
    /// node.
    ///
    /// With a broker (`attach_bridge`) the message goes to the broker only
    /// and reaches this node's subscribers when it comes back
    /// ([`Server::deliver`]), exactly as it reaches every other node's: one
    /// order per channel everywhere. The count is then the recipients this
    /// node has now, which the message will reach unless they leave first.
    /// A broker that refuses the message (down, or too far behind) makes
    /// the publish fail: nothing is delivered anywhere.
    pub fn publish(
        &self,
        channel: &str,
        data: &[u8],
        binary: bool,
        exclude: Option<u64>,
    ) -> Result<usize, BridgeError> {
        match self.state.bridge.get() {
            Some(bridge) => {
                bridge.publish(channel, data, binary, exclude)?;
                Ok(self.local_recipients(channel, exclude))
            }
            None => Ok(self.deliver(channel, data, binary, exclude, None)),
        }
    }

    /// Fan a publish to `channel` out to this node's subscribers: a local
    /// publish, or one that came back from the broker (with its place in
    /// the channel's history when the channel keeps one).
    pub fn deliver(
        &self,
        channel: &str,
        data: &[u8],
        binary: bool,
        exclude: Option<u64>,
        position: Option<Position>,
    ) -> usize {
        let targets = [Target::Channel(channel)];
        self.fan_out(&targets, Some(channel), data, binary, exclude, position)
    }

    /// Queue one publication of `channel`, read back from its history, for
    /// one subscriber (a connection recovering what it missed), framed as
    /// the live ones are.
    pub fn deliver_to(
        &self,
        subscriber: SubscriberId,
        channel: &str,
        data: &[u8],
        binary: bool,
        position: Position,
    ) -> bool {
        let targets = [Target::Subscriber(subscriber)];
        self.fan_out(&targets, Some(channel), data, binary, None, Some(position)) > 0
    }

    /// Attach the broker that carries this server's channels to other
    /// nodes. Once, before the server listens; the channels that already
    /// have subscribers are reported to it at once.
    pub fn attach_bridge(&self, bridge: Arc<dyn Bridge>) -> bool {
        let mut registry = self.state.registry.write();
        if self.state.bridge.set(bridge.clone()).is_err() {
            return false;
        }
        registry.log_channel_changes(true);
        registry.log_member_changes(bridge.presence_filter());
        let existing: Vec<ChannelChange> = registry
            .channels()
            .map(|name| ChannelChange::Created(Arc::from(name)))
            .collect();
        if !existing.is_empty() {
            bridge.channels_changed(existing);
        }
        true
    }

    /// Wait up to `timeout` for the broker to accept publishes; true at
    /// once without a broker. Blocks (see `Bridge::wait_ready`).
    pub fn wait_bridge_ready(&self, timeout: std::time::Duration) -> bool {
        self.state
            .bridge
            .get()
            .is_none_or(|bridge| bridge.wait_ready(timeout))
    }

    /// How many of this node's connections a publish to `channel` would
    /// reach now.
    fn local_recipients(&self, channel: &str, exclude: Option<u64>) -> usize {
        let registry = self.state.registry.read();
        let connections = self.state.connections.read();
        let mut count = 0;
        registry.for_each_recipient(&[Target::Channel(channel)], exclude, |conn, _| {
            if connections.contains_key(&conn) {
                count += 1;
            }
        });
        count
    }

    /// Publish to a mixed list of channels, connections and virtual sockets.
    /// A subscriber reached through several targets gets the message once.
    ///
    /// Local to this node, broker or not: the deduplication across targets
    /// needs one node's view of every target.
    pub fn publish_to(
        &self,
        targets: &[PublishTarget<'_>],
        data: &[u8],
        binary: bool,
        exclude: Option<u64>,
    ) -> usize {
        let targets: Vec<Target<'_>> = targets
            .iter()
            .map(|t| match t {
                PublishTarget::Channel(name) => Target::Channel(name),
                PublishTarget::Subscriber(id) => Target::Subscriber(*id),
            })
            .collect();
        let channel = targets.iter().find_map(|t| match t {
            Target::Channel(name) => Some(*name),
            Target::Subscriber(_) => None,
        });
        self.fan_out(&targets, channel, data, binary, exclude, None)
    }

    /// Queue a message for every recipient of `targets`, each once.
    /// `channel` names the protocol MESSAGE's action (none: protocol
    /// connections cannot take it).
    fn fan_out(
        &self,
        targets: &[Target<'_>],
        channel: Option<&str>,
        data: &[u8],
        binary: bool,
        exclude: Option<u64>,
        position: Option<Position>,
    ) -> usize {
        let state = &self.state;
        let mut untagged = Framings::new(Bytes::new(), data, binary, channel, position);
        let registry = state.registry.read();
        let connections = state.connections.read();
        // Tagged recipients are rare; frame each distinct tag once.
        let mut tagged: Vec<Framings<'_>> = Vec::new();
        // Count what was queued, not what the registry planned: an id given
        // directly (`publishTo([id])`) is passed through by the registry even
        // when no such connection is open, and that is no recipient.
        let mut recipients = 0;
        let mut outcomes = Outcomes::default();
        registry.for_each_recipient(targets, exclude, |conn, tag| {
            let Some(connection) = connections.get(&conn) else {
                return;
            };
            let status = match tag {
                None => untagged.deliver(connection),
                Some(tag) => {
                    let index = match tagged.iter().position(|f| f.prefix == tag) {
                        Some(i) => i,
                        None => {
                            tagged.push(Framings::new(
                                tag.clone(),
                                data,
                                binary,
                                channel,
                                position,
                            ));
                            tagged.len() - 1
                        }
                    };
                    tagged[index].deliver(connection)
                }
            };
            outcomes.add(status);
            if status != SendStatus::Closed {
                recipients += 1;
            }
        });
        drop(connections);
        drop(registry);
        state.count_outcomes(&outcomes);
        recipients
    }

    /// Change subscription refcounts; returns the subscribers whose
    /// membership changed.
    pub fn subscribe(&self, subscribers: &[SubscriberId], channel: &str, delta: i32) -> Vec<u64> {
        self.state.with_registry(|registry| {
            let mut changed = Vec::new();
            for &subscriber in subscribers {
                if self.is_live_subscriber(registry, subscriber)
                    && registry.subscribe(subscriber, channel, delta)
                {
                    changed.push(subscriber);
                }
            }
            changed
        })
    }

    /// Remove a subscription whatever its refcount.
    pub fn unsubscribe(&self, subscriber: SubscriberId, channel: &str) -> bool {
        self.state
            .with_registry(|registry| registry.unsubscribe(subscriber, channel))
    }

    pub fn is_subscribed(&self, subscriber: SubscriberId, channel: &str) -> bool {
        self.state
            .registry
            .read()
            .is_subscribed(subscriber, channel)
    }

    pub fn subscriber_count(&self, channel: &str) -> usize {
        self.state.registry.read().subscriber_count(channel)
    }

    pub fn channels_of(&self, subscriber: SubscriberId) -> Vec<String> {
        self.state
            .registry
            .read()
            .channels_of(subscriber)
            .map(str::to_owned)
            .collect()
    }

    pub fn subscribers_of(&self, channel: &str) -> Vec<u64> {
        self.state.registry.read().subscribers_of(channel).to_vec()
    }

    pub fn copy_subscriptions(&self, from: &str, to: &str) -> Vec<u64> {
        self.state
            .with_registry(|registry| registry.copy_subscriptions(from, to))
    }

    /// Create a virtual socket pointing at a connection or another virtual
    /// socket; returns its id, or `None` when the target does not exist.
    pub fn create_virtual_socket(&self, target: u64, tag: Option<Bytes>) -> Option<u64> {
        let mut registry = self.state.registry.write();
        if !self.is_live_subscriber(&registry, target) {
            return None;
        }
        let id = self.state.next_id();
        registry.create_virtual_socket(id, target, tag).ok()?;
        Some(id)
    }

    /// Delete a virtual socket (and those pointing at it), dropping all their
    /// subscriptions. With `expected_target`, only if it points there.
    pub fn delete_virtual_socket(
        &self,
        id: u64,
        expected_target: Option<u64>,
    ) -> Result<Vec<u64>, switchboard_pubsub::Error> {
        self.state
            .with_registry(|registry| registry.delete_virtual_socket(id, expected_target))
    }

    /// A subscriber is live if it is an open connection or a virtual socket.
    fn is_live_subscriber(&self, registry: &switchboard_pubsub::Registry, id: u64) -> bool {
        registry.is_virtual_socket(id) || self.state.connections.read().contains_key(&id)
    }
}
