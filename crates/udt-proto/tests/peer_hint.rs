//! The peer hint (`docs/encryption.md` §2): two endpoints of this implementation recognise
//! each other in the handshake, and a UDT4 4.11 peer on either side is never taken for one.
//! Whether the peer is ours decides whether a runtime may put its datagrams in GSO buffers
//! while several connections send (`Connection::peer_takes_bursts`).

mod common;

use std::cell::RefCell;
use std::rc::Rc;

use common::{handshake_bytes, Net};
use udt_proto::crypto::ext::PeerHint;
use udt_proto::wire::{
    Control, ControlPacket, Handshake, Packet, PeerAddr, RequestType, SocketId, SocketType,
    HANDSHAKE_LEN, HEADER_LEN, UDT_VERSION,
};
use udt_proto::{ConnectionConfig, Encryption, EncryptionMode, SeqNo};

const CLIENT: usize = 0;
const SERVER: usize = 1;

fn pair(seed: u64, server: ConnectionConfig) -> Net {
    let mut net = Net::new(seed, 5_000);
    net.add("10.0.0.1:5000", seed * 2 + 1);
    net.add("10.0.0.2:9000", seed * 2 + 2);
    let now = net.now;
    net.nodes[SERVER].ep.listen(now, server, 16).unwrap();
    net
}

/// A first-phase request as a UDT4 4.11 client sends it from 10.0.0.2: initial sequence
/// number `isn`, socket `id`.
fn first_phase_request(isn: u32, id: u32) -> Handshake {
    Handshake {
        version: UDT_VERSION,
        socket_type: SocketType::STREAM,
        isn: SeqNo::new(isn).unwrap(),
        mss: 1500,
        flow_window: 8192,
        request: RequestType::REQUEST,
        socket_id: SocketId(id),
        cookie: 0,
        peer_addr: PeerAddr::from_ip("10.0.0.2".parse().unwrap()),
    }
}

/// Every handshake the node at `node` sends, as (datagram length, handshake).
fn record_handshakes(net: &mut Net, node: usize) -> Rc<RefCell<Vec<(usize, Handshake)>>> {
    let log = Rc::new(RefCell::new(Vec::new()));
    let sink = Rc::clone(&log);
    let from = net.addr(node);
    net.filter = Some(Box::new(move |d| {
        if d.from == from {
            if let Ok(Packet::Control(ControlPacket {
                control: Control::Handshake(h),
                ..
            })) = Packet::parse(d.data)
            {
                sink.borrow_mut().push((d.data.len(), h));
            }
        }
        true
    }));
    log
}

#[test]
fn two_endpoints_of_ours_recognise_each_other() {
    let mut net = pair(1, ConnectionConfig::default());
    let client_log = record_handshakes(&mut net, CLIENT);
    let (c, s) = net.establish(CLIENT, SERVER, ConnectionConfig::default(), 10.0);
    assert!(net.nodes[CLIENT]
        .ep
        .connection(c)
        .unwrap()
        .peer_takes_bursts());
    assert!(net.nodes[SERVER]
        .ep
        .connection(s)
        .unwrap()
        .peer_takes_bursts());
    // The first request is the plain 48-byte body (a 4.11 listener ignores anything else);
    // the second carries our hint, appended.
    let log = client_log.borrow();
    let plain = HEADER_LEN + HANDSHAKE_LEN;
    assert_eq!(log[0].0, plain);
    assert_eq!(log[0].1.request, RequestType::REQUEST);
    let second = log
        .iter()
        .find(|(_, h)| h.request == RequestType::RESPONSE)
        .expect("a second-phase request");
    assert_eq!(second.0, plain + PeerHint::LEN);
}

#[test]
fn an_encrypted_pair_recognises_each_other_by_the_offer_and_hello() {
    let enc = Some(Encryption::from_key([3; 32], EncryptionMode::Required));
    let cfg = ConnectionConfig {
        encryption: enc,
        ..ConnectionConfig::default()
    };
    let mut net = pair(2, cfg.clone());
    let (c, s) = net.establish(CLIENT, SERVER, cfg, 10.0);
    assert!(net.nodes[CLIENT].ep.connection(c).unwrap().is_encrypted());
    assert!(net.nodes[CLIENT]
        .ep
        .connection(c)
        .unwrap()
        .peer_takes_bursts());
    assert!(net.nodes[SERVER]
        .ep
        .connection(s)
        .unwrap()
        .peer_takes_bursts());
}

#[test]
fn a_listener_that_answers_as_udt4_is_not_taken_for_ours() {
    let mut net = pair(3, ConnectionConfig::default());
    let server = net.addr(SERVER);
    common::rewrite_cookie_replies_as_udt4(&mut net, server);
    let client_log = record_handshakes(&mut net, CLIENT);
    let (c, _) = net.establish(CLIENT, SERVER, ConnectionConfig::default(), 10.0);
    assert!(!net.nodes[CLIENT]
        .ep
        .connection(c)
        .unwrap()
        .peer_takes_bursts());
    // Nothing is appended for a 4.11 listener, which would ignore the request.
    for (len, _) in client_log.borrow().iter() {
        assert_eq!(*len, HEADER_LEN + HANDSHAKE_LEN);
    }
}

/// A client that speaks as UDT4 4.11 does: plain 48-byte requests, the cookie echoed.
#[test]
fn a_client_that_speaks_as_udt4_is_not_taken_for_ours_and_the_reply_does_not_grow() {
    let mut net = pair(4, ConnectionConfig::default());
    let server_log = record_handshakes(&mut net, SERVER);
    let from = "10.0.0.1:5000".parse().unwrap();
    let mut hs = first_phase_request(1234, 77);
    let now = net.now;
    let req = handshake_bytes(SocketId(0), hs);
    net.nodes[SERVER].ep.handle_datagram(now, from, &req);
    net.run_until(0.1, |_| false);
    let reply = server_log.borrow()[0];
    // As long as the request, with our hint where 4.11 clients read nothing.
    assert_eq!(reply.0, req.len());
    assert_eq!(PeerHint::decode(&reply.1.peer_addr), Some(PeerHint::OURS));
    hs.request = RequestType::RESPONSE;
    hs.cookie = reply.1.cookie;
    let now = net.now;
    net.nodes[SERVER]
        .ep
        .handle_datagram(now, from, &handshake_bytes(SocketId(0), hs));
    let id = net.nodes[SERVER].ep.accept().expect("accepted");
    assert!(!net.nodes[SERVER]
        .ep
        .connection(id)
        .unwrap()
        .peer_takes_bursts());
}

#[test]
fn a_listener_refuses_a_second_phase_request_with_a_tail_it_does_not_know() {
    let mut net = pair(5, ConnectionConfig::default());
    let server_log = record_handshakes(&mut net, SERVER);
    let from = "10.0.0.1:5000".parse().unwrap();
    let mut hs = first_phase_request(99, 78);
    let now = net.now;
    net.nodes[SERVER]
        .ep
        .handle_datagram(now, from, &handshake_bytes(SocketId(0), hs));
    net.run_until(0.1, |_| false);
    let cookie = server_log.borrow()[0].1.cookie;
    hs.request = RequestType::RESPONSE;
    hs.cookie = cookie;
    // A hint with a byte changed, and a tail of the wrong length: neither is ours.
    let mut bad = PeerHint::OURS.encode().0;
    bad[9] = 1;
    for tail in [&bad[..], &PeerHint::OURS.encode().0[..15]] {
        let mut d = handshake_bytes(SocketId(0), hs);
        d.extend_from_slice(tail);
        let now = net.now;
        net.nodes[SERVER].ep.handle_datagram(now, from, &d);
    }
    assert!(net.nodes[SERVER].ep.accept().is_none());
    assert_eq!(net.nodes[SERVER].ep.stats().handshakes_refused, 2);
}
