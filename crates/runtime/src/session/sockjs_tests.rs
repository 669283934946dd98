//! A SockJS session on the WebSocket transport, with no socket and no
//! clock: its open frame, the client's JSON arrays as messages, heartbeats
//! on an interval, and its close frame ahead of the WebSocket close.

use std::time::Duration;

use switchboard_proto::ws::OpCode;

use super::tests::{client, start, Harness};
use crate::config::{RouteConfig, ServerConfig, SockJsConfig};
use crate::connection::ConnectionKind;
use crate::outbound::OutItem;

fn sockjs(heartbeat_ms: u64) -> Harness {
    let mut route = RouteConfig::new("/echo/*");
    let mut service = SockJsConfig::new("/echo");
    service.heartbeat = Duration::from_millis(heartbeat_ms);
    route.sockjs = Some(service);
    let config = ServerConfig {
        routes: vec![route],
        workers: 1,
        ..ServerConfig::default()
    };
    start(config, ConnectionKind::SockJsWebSocket)
}

#[test]
fn a_session_opens_and_hands_each_message_of_a_frame_over() {
    let mut h = sockjs(25_000);
    h.flush();
    assert_eq!(h.frames(), ["text o"]);
    let mut bytes = client(OpCode::Text, br#"["a","\u00e9\"b"]"#);
    bytes.extend(client(OpCode::Text, b""));
    bytes.extend(client(OpCode::Text, br#""single""#));
    h.feed(&bytes, 1);
    assert_eq!(
        h.events(),
        ["open 7", "message a", "message é\"b", "message single"]
    );
}

#[test]
fn what_it_is_sent_goes_out_as_message_frames_and_binary_is_refused() {
    let mut h = sockjs(25_000);
    let connection = h.session.connection().clone();
    assert_eq!(
        connection.send_message("ok \u{2028}".as_bytes(), false),
        crate::outbound::SendStatus::Sent
    );
    assert_eq!(
        connection.send_message(&[1, 2, 3], true),
        crate::outbound::SendStatus::Dropped
    );
    h.outbound(1);
    h.flush();
    assert_eq!(h.frames(), ["text o", r#"text a["ok \u2028"]"#]);
}

#[test]
fn heartbeats_go_every_interval_whatever_the_client_says() {
    let mut h = sockjs(100);
    h.flush();
    h.frames();
    assert_eq!(h.session.next_deadline(), Some(h.at(100)));
    h.session.on_deadline(h.at(100));
    h.session.on_deadline(h.at(150));
    h.session.on_deadline(h.at(200));
    h.flush();
    assert_eq!(h.frames(), ["text h", "text h"]);
    // A silent client is not closed for it: no idle timeout.
    h.session.on_deadline(h.at(10 * 60 * 1000));
    h.flush();
    assert_eq!(h.frames(), ["text h"]);
}

#[test]
fn a_close_sends_the_session_close_frame_then_the_websocket_close() {
    let mut h = sockjs(25_000);
    h.session.connection().enqueue(
        OutItem::Close {
            code: 3000,
            reason: "Go away!".into(),
            go_away: false,
        },
        0,
    );
    h.outbound(1);
    h.flush();
    assert_eq!(
        h.frames(),
        ["text o", r#"text c[3000,"Go away!"]"#, "close 3000"]
    );

    // A code a WebSocket close may not carry: 1000 on the WebSocket, the
    // session's own code in its frame and in the close event.
    let mut h = sockjs(25_000);
    h.session.connection().enqueue(
        OutItem::Close {
            code: 2010,
            reason: "Another connection still open".into(),
            go_away: false,
        },
        0,
    );
    h.outbound(1);
    h.flush();
    assert_eq!(
        h.frames(),
        [
            "text o",
            r#"text c[2010,"Another connection still open"]"#,
            "close 1000"
        ]
    );
}

#[test]
fn broken_framing_closes_the_websocket_without_a_close_frame() {
    let mut h = sockjs(25_000);
    h.flush();
    assert_eq!(h.frames(), ["text o"]);
    h.feed(&client(OpCode::Text, br#"["a"#), 1);
    h.flush();
    // As sockjs-node: the WebSocket closes (3000) at once, with no `c[...]`
    // frame before it; the protocol suite's `test_broken_json` reads
    // nothing but the close after the broken message.
    assert_eq!(h.frames(), ["close 3000"]);
    assert_eq!(h.events(), ["open 7"], "nothing of the frame was delivered");
    assert_eq!(
        h.finish((1006, String::new())),
        ["close 3000 ERR_SOCKJS_BROKEN_FRAMING"]
    );
}
