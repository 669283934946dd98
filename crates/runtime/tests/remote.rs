//! Routing by id (`remote.rs`) against a bridge that records what it is
//! asked to forward: which ids stay local, how the others are grouped per
//! node, where a `publishTo` naming channels goes, and that a refusal is
//! reported and leaves nothing half sent.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use switchboard_pubsub::ChannelChange;
use switchboard_runtime::channels::PublishTarget;
use switchboard_runtime::ids::{compose, node_of};
use switchboard_runtime::remote::Delivery;
use switchboard_runtime::{
    Bridge, BridgeError, Destination, NodeCommand, SendStatus, Server, ServerConfig,
};

#[derive(Default)]
struct Recorder {
    forwarded: Mutex<Vec<String>>,
    refuse: AtomicBool,
}

impl Bridge for Recorder {
    fn publish(&self, _: &str, _: &[u8], _: bool, _: Option<u64>) -> Result<(), BridgeError> {
        Ok(())
    }

    fn channels_changed(&self, _: Vec<ChannelChange>) {}

    fn wait_ready(&self, _: Duration) -> bool {
        true
    }

    fn shutdown(&self) {}

    fn forward(&self, commands: &[(Destination, NodeCommand<'_>)]) -> Result<(), BridgeError> {
        if self.refuse.load(Ordering::Relaxed) {
            return Err(BridgeError::Backlog);
        }
        let mut forwarded = self.forwarded.lock();
        forwarded.extend(commands.iter().map(|c| format!("{c:?}")));
        Ok(())
    }
}

fn server_on_node(node: u16) -> (Arc<Server>, Arc<Recorder>) {
    let server = Server::new(ServerConfig::default()).unwrap();
    let recorder = Arc::new(Recorder::default());
    assert!(server.attach_bridge(recorder.clone()));
    server.set_node(node);
    (server, recorder)
}

#[test]
fn ids_carry_the_node_once_it_is_set() {
    let plain = Server::new(ServerConfig::default()).unwrap();
    let first = plain.state().next_id();
    assert_eq!((node_of(first), first), (0, 1), "no broker: ids as before");
    let (server, _) = server_on_node(9);
    server.seed_ids(1 << 40);
    let id = server.state().next_id();
    assert_eq!(node_of(id), 9);
    assert_eq!(id, compose(9, 1 << 40));
    assert!(id < 1 << 53);
    plain.shutdown(Duration::ZERO);
    server.shutdown(Duration::ZERO);
}

#[test]
fn operations_on_other_nodes_are_forwarded_grouped_per_node() {
    let (server, recorder) = server_on_node(3);
    let here = compose(3, 10);
    let (five_a, five_b, seven) = (compose(5, 1), compose(5, 2), compose(7, 1));

    // A local id is handled here (no such connection: CLOSED), another
    // node's is forwarded.
    assert_eq!(
        server.send_anywhere(here, b"x", false),
        Delivery::Local(SendStatus::Closed)
    );
    assert_eq!(
        server.send_anywhere(0, b"x", false),
        Delivery::Local(SendStatus::Closed)
    );
    assert_eq!(
        server.send_anywhere(five_a, b"x", false),
        Delivery::Forwarded
    );
    assert_eq!(server.end_anywhere(seven, 4000, "bye", true), Ok(true));
    assert_eq!(server.end_anywhere(here, 4000, "bye", true), Ok(false));
    assert_eq!(server.unsubscribe_anywhere(five_b, "room"), Ok(true));
    assert_eq!(server.terminate_anywhere(seven), Ok(true));
    assert_eq!(
        recorder.forwarded.lock().split_off(0),
        [
            format!("(Node(5), Send {{ id: {five_a}, data: [120], binary: false }})"),
            format!("(Node(7), End {{ id: {seven}, code: 4000, reason: \"bye\" }})"),
            format!("(Node(5), Unsubscribe {{ id: {five_b}, channel: \"room\" }})"),
            format!("(Node(7), Terminate {{ id: {seven} }})"),
        ]
    );

    // One subscribe per node, the node's ids together.
    let changed = server.subscribe_anywhere(&[five_a, here, seven, five_b], "room", 1);
    assert_eq!(changed, Ok(vec![]));
    assert_eq!(
        recorder.forwarded.lock().split_off(0),
        [
            format!(
                "(Node(5), Subscribe {{ ids: [{five_a}, {five_b}], channel: \"room\", delta: 1 }})"
            ),
            format!("(Node(7), Subscribe {{ ids: [{seven}], channel: \"room\", delta: 1 }})"),
        ]
    );

    // publishTo of ids only: one message per other node, its ids alone.
    let ids = [five_a, seven, here, five_b].map(PublishTarget::Subscriber);
    assert_eq!(server.publish_to_anywhere(&ids, b"m", true, None), Ok(0));
    assert_eq!(
        recorder.forwarded.lock().split_off(0),
        [
            format!("(Node(5), PublishTo {{ channels: [], groups: [(5, [{five_a}, {five_b}])], data: [109], binary: true, exclude: None }})"),
            format!("(Node(7), PublishTo {{ channels: [], groups: [(7, [{seven}])], data: [109], binary: true, exclude: None }})"),
        ]
    );

    // With a channel: one message to every node, every node's ids in it
    // (this one's under its number); the exclusion names its node.
    let targets = [
        PublishTarget::Channel("room"),
        PublishTarget::Subscriber(here),
        PublishTarget::Subscriber(seven),
    ];
    assert_eq!(
        server.publish_to_anywhere(&targets, b"m", true, Some(five_a)),
        Ok(0)
    );
    assert_eq!(
        server.publish_to_anywhere(&targets[..1], b"m", true, Some(12)),
        Ok(0)
    );
    assert_eq!(
        recorder.forwarded.lock().split_off(0),
        [
            format!("(Every, PublishTo {{ channels: [\"room\"], groups: [(7, [{seven}]), (3, [{here}])], data: [109], binary: true, exclude: Some((5, {five_a})) }})"),
            // An id of no node is this node's.
            "(Every, PublishTo { channels: [\"room\"], groups: [], data: [109], binary: true, exclude: Some((3, 12)) })".to_owned(),
        ]
    );
    server.shutdown(Duration::ZERO);
}

#[test]
fn a_refusal_is_reported_and_local_operations_do_not_need_the_broker() {
    let (server, recorder) = server_on_node(3);
    recorder.refuse.store(true, Ordering::Relaxed);
    let remote = compose(4, 1);
    assert_eq!(
        server.send_anywhere(remote, b"x", false),
        Delivery::Refused(BridgeError::Backlog)
    );
    assert_eq!(
        server.subscribe_anywhere(&[remote, compose(3, 2)], "room", 1),
        Err(BridgeError::Backlog)
    );
    // Local ones alone never ask the broker.
    assert_eq!(
        server.subscribe_anywhere(&[compose(3, 2)], "room", 1),
        Ok(vec![])
    );
    let local = [PublishTarget::Subscriber(compose(3, 2))];
    assert_eq!(server.publish_to_anywhere(&local, b"x", false, None), Ok(0));
    assert!(recorder.forwarded.lock().is_empty());
    server.shutdown(Duration::ZERO);
}
