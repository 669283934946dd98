//! Channel operations on a server: the pure registry (crate
//! `switchboard-pubsub`) plus delivery into connections' queues.
//!
//! A publish frames the message once; every recipient's queue gets a clone
//! of the same `Bytes` (a reference count, not a copy). Recipients behind a
//! virtual socket with a tag get the tag in front: one framing per distinct
//! tag. No JavaScript runs per recipient.

use bytes::Bytes;
use switchboard_proto::wire;
use switchboard_pubsub::{SubscriberId, Target};

use crate::framing;
use crate::outbound::SendStatus;
use crate::server::{Outcomes, Server};

/// A publish as protocol connections receive it: an unnumbered one-way
/// MESSAGE (call id 0) whose action is the channel's name and whose payload
/// is the message, built on first use and shared like the WebSocket frame.
pub struct WireFrames<'a> {
    /// Borrowed: a publish to WebSocket connections only never pays for it.
    action: Option<&'a str>,
    payload: Bytes,
    raw: Option<Bytes>,
    over_websocket: Option<Bytes>,
}

impl<'a> WireFrames<'a> {
    /// `action`: the channel published to; `None` (no channel among the
    /// targets, or a name that is not 1..255 bytes) makes the publish
    /// undeliverable to protocol connections.
    pub fn new(action: Option<&'a str>, payload: Bytes) -> Self {
        let action = action.filter(|a| (1..=255).contains(&a.len()));
        Self {
            action,
            payload,
            raw: None,
            over_websocket: None,
        }
    }

    /// The MESSAGE frame for a protocol stream.
    pub fn raw(&mut self) -> Option<&Bytes> {
        if self.raw.is_none() {
            let action = self.action?;
            let mut frame = Vec::with_capacity(16 + action.len() + self.payload.len());
            wire::encode_message_header(0, false, action, self.payload.len(), &mut frame);
            frame.extend_from_slice(&self.payload);
            self.raw = Some(Bytes::from(frame));
        }
        self.raw.as_ref()
    }

    /// The same frame in a WebSocket binary message.
    pub fn over_websocket(&mut self) -> Option<&Bytes> {
        if self.over_websocket.is_none() {
            let framed = framing::frame_message(self.raw()?, true);
            self.over_websocket = Some(framed);
        }
        self.over_websocket.as_ref()
    }
}

/// One target of a publish, as JavaScript names it.
pub enum PublishTarget<'a> {
    Channel(&'a str),
    /// A connection or a virtual socket.
    Subscriber(u64),
}

impl Server {
    /// Publish to a channel; returns the number of recipients.
    pub fn publish(&self, channel: &str, data: &[u8], binary: bool, exclude: Option<u64>) -> usize {
        self.publish_to(&[PublishTarget::Channel(channel)], data, binary, exclude)
    }

    /// Publish to a mixed list of channels, connections and virtual sockets.
    /// A subscriber reached through several targets gets the message once.
    pub fn publish_to(
        &self,
        targets: &[PublishTarget<'_>],
        data: &[u8],
        binary: bool,
        exclude: Option<u64>,
    ) -> usize {
        let shared = &self.shared;
        let framed = framing::frame_message(data, binary);
        let payload = framed.slice(framing::header_len(data.len())..);
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
        let mut wire = WireFrames::new(channel, payload.clone());
        let registry = shared.registry.read();
        let connections = shared.connections.read();
        // Tagged recipients are rare; frame each distinct tag once.
        let mut tagged: Vec<(Bytes, Bytes, Bytes, WireFrames<'_>)> = Vec::new();
        // Count what was queued, not what the registry planned: an id given
        // directly (`publishTo([id])`) is passed through by the registry even
        // when no such connection is open, and that is no recipient.
        let mut recipients = 0;
        let mut outcomes = Outcomes::default();
        registry.for_each_recipient(&targets, exclude, |conn, tag| {
            let Some(connection) = connections.get(&conn) else {
                return;
            };
            let status = match tag {
                None => shared.deliver(connection, &payload, &framed, binary, &mut wire),
                Some(tag) => {
                    let index = match tagged.iter().position(|(t, ..)| t == tag) {
                        Some(i) => i,
                        None => {
                            let framed = framing::frame_parts(tag, data, binary);
                            let payload =
                                framed.slice(framing::header_len(tag.len() + data.len())..);
                            let wire = WireFrames::new(channel, payload.clone());
                            tagged.push((tag.clone(), payload, framed, wire));
                            tagged.len() - 1
                        }
                    };
                    let (_, payload, framed, wire) = &mut tagged[index];
                    shared.deliver(connection, payload, framed, binary, wire)
                }
            };
            outcomes.add(status);
            if status != SendStatus::Closed {
                recipients += 1;
            }
        });
        drop(connections);
        drop(registry);
        shared.count_outcomes(&outcomes);
        recipients
    }

    /// Change subscription refcounts; returns the subscribers whose
    /// membership changed.
    pub fn subscribe(&self, subscribers: &[SubscriberId], channel: &str, delta: i32) -> Vec<u64> {
        let mut registry = self.shared.registry.write();
        let mut changed = Vec::new();
        for &subscriber in subscribers {
            if self.is_live_subscriber(&registry, subscriber)
                && registry.subscribe(subscriber, channel, delta)
            {
                changed.push(subscriber);
            }
        }
        changed
    }

    /// Remove a subscription whatever its refcount.
    pub fn unsubscribe(&self, subscriber: SubscriberId, channel: &str) -> bool {
        self.shared
            .registry
            .write()
            .unsubscribe(subscriber, channel)
    }

    pub fn is_subscribed(&self, subscriber: SubscriberId, channel: &str) -> bool {
        self.shared
            .registry
            .read()
            .is_subscribed(subscriber, channel)
    }

    pub fn subscriber_count(&self, channel: &str) -> usize {
        self.shared.registry.read().subscriber_count(channel)
    }

    pub fn channels_of(&self, subscriber: SubscriberId) -> Vec<String> {
        self.shared
            .registry
            .read()
            .channels_of(subscriber)
            .map(str::to_owned)
            .collect()
    }

    pub fn subscribers_of(&self, channel: &str) -> Vec<u64> {
        self.shared.registry.read().subscribers_of(channel).to_vec()
    }

    pub fn copy_subscriptions(&self, from: &str, to: &str) -> Vec<u64> {
        self.shared.registry.write().copy_subscriptions(from, to)
    }

    /// Create a virtual socket pointing at a connection or another virtual
    /// socket; returns its id, or `None` when the target does not exist.
    pub fn create_virtual_socket(&self, target: u64, tag: Option<Bytes>) -> Option<u64> {
        let mut registry = self.shared.registry.write();
        if !self.is_live_subscriber(&registry, target) {
            return None;
        }
        let id = self.shared.next_id();
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
        self.shared
            .registry
            .write()
            .delete_virtual_socket(id, expected_target)
    }

    /// A subscriber is live if it is an open connection or a virtual socket.
    fn is_live_subscriber(&self, registry: &switchboard_pubsub::Registry, id: u64) -> bool {
        registry.is_virtual_socket(id) || self.shared.connections.read().contains_key(&id)
    }
}
