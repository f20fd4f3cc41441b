//! Amplification ≤ 1: no control packet the engine sends in answer to a datagram is larger than
//! that datagram.
//!
//! Every kind of inbound packet, well-formed and truncated to every shorter length, is fed to
//! endpoints in each role: a listener (from strangers), an established server-side connection
//! (from its peer, with data in flight), a connecting client, a rendezvous socket while
//! connecting and once connected. Before each datagram every timer due at that instant is
//! served and its output drained, so whatever the endpoint emits at the same instant after the
//! datagram is its answer. Data packets are not answers: they carry what the application asked
//! to send to its own peer, and a retransmission in answer to a NAK names only packets sent
//! and unacknowledged (bounded by the flight window; see `forged.rs` for NAKs that name more).

mod common;

use std::net::SocketAddr;

use common::{ctrl_raw, data_raw, handshake_bytes, words};

use udt_proto::wire::{
    Control, ControlPacket, Handshake, Packet, PeerAddr, RequestType, SocketType, UDT_VERSION,
};
use udt_proto::{ConnectionConfig, Endpoint, EndpointConfig, Instant, SeqNo, SocketId};

const ENGINE: &str = "10.0.0.2:9000";
const PEER: &str = "10.9.0.1:4000";
const STRANGER: &str = "10.66.0.7:4000";
const MY_ID: SocketId = SocketId(0x0123_4567);

fn ctrl(ty: u16, info: u32, dst: SocketId, body: &[u32]) -> Vec<u8> {
    ctrl_raw(ty, 0, info, dst, &words(body))
}

/// A solo, in-order message (both boundary bits, number 1) of `payload` bytes.
fn data(seq: SeqNo, dst: SocketId, payload: usize) -> Vec<u8> {
    data_raw(seq.get(), 0xE000_0001, dst, &vec![0x5A; payload])
}

fn addr(s: &str) -> SocketAddr {
    s.parse().unwrap()
}

fn hs(request: RequestType, socket_id: SocketId, isn: SeqNo, cookie: u32) -> Handshake {
    Handshake {
        version: UDT_VERSION,
        socket_type: SocketType::STREAM,
        isn,
        mss: 1500,
        flow_window: 8192,
        request,
        socket_id,
        cookie,
        peer_addr: PeerAddr::from_ip(addr(ENGINE).ip()),
    }
}

/// Every kind of packet for socket `dst`, with sequence numbers around `seq` (the peer's
/// stream) and `sent` (the engine's stream).
fn every_kind(dst: SocketId, seq: SeqNo, sent: SeqNo, peer_id: SocketId) -> Vec<Vec<u8>> {
    let mut v = Vec::new();
    for req in [
        RequestType::REQUEST,
        RequestType::RESPONSE,
        RequestType::RENDEZVOUS,
        RequestType::RENDEZVOUS_CONNECTED,
        RequestType::REJECT,
    ] {
        v.push(handshake_bytes(dst, hs(req, peer_id, seq, 0)));
        v.push(handshake_bytes(
            dst,
            hs(req, SocketId(peer_id.0 ^ 7), seq, 1),
        ));
        // Longer than 48 bytes: a 4.11 listener ignores these.
        let mut long = handshake_bytes(dst, hs(req, peer_id, seq, 0));
        long.extend_from_slice(&[0; 40]);
        v.push(long);
    }
    v.push(ctrl(1, 0, dst, &[])); // keep-alive
    v.push(ctrl(1, 0, dst, &[0; 64])); // keep-alive with a body
    for ack in [sent, sent.add(1), sent.add(5), sent.add(1_000_000), seq] {
        v.push(ctrl(2, 1, dst, &[ack.get(), 1000, 100, 64]));
        v.push(ctrl(2, 2, dst, &[ack.get(), 1000, 100, 64, 5000, 9000]));
        v.push(ctrl(2, 3, dst, &[ack.get()])); // light ACK
    }
    for (a, b) in [
        (sent, sent.add(3)),
        (sent.add(2), sent.add(2)),
        (sent.add(9), sent.add(99)),
    ] {
        v.push(ctrl(3, 0, dst, &[a.get() | 0x8000_0000, b.get()]));
        v.push(ctrl(3, 0, dst, &[a.get()]));
    }
    v.push(ctrl(4, 0, dst, &[])); // congestion warning
    v.push(ctrl(6, 1, dst, &[])); // ACK2
    v.push(ctrl(6, 2, dst, &[0; 8]));
    v.push(ctrl(7, 1, dst, &[seq.get(), seq.add(2).get()])); // drop request
    v.push(ctrl(8, 5, dst, &[])); // peer error
    v.push(ctrl(0x7FFF, 9, dst, &[1, 2, 3])); // user-defined
    v.push(ctrl(0x0100, 9, dst, &[1, 2, 3])); // unknown type
    for len in [1, 3, 4, 7, 8, 23, 24, 100, 1456] {
        v.push(data(seq, dst, len)); // in order
        v.push(data(seq.add(1 + len as u32 % 3), dst, len)); // after a gap
        v.push(data(seq.add(40), dst, len)); // a larger gap
        v.push(data(seq.sub(5), dst, len)); // old duplicate
        v.push(data(seq.add(1 << 29), dst, len)); // outside the window
    }
    v.push(ctrl(5, 0, dst, &[])); // shutdown, last: it ends the connection
    v
}

/// Drives an endpoint, checking every answer.
struct Probe {
    ep: Endpoint,
    now: Instant,
    buf: Vec<u8>,
    /// Datagrams fed, answers seen, largest answer/trigger ratio.
    fed: u64,
    answers: u64,
    worst: f64,
}

impl Probe {
    fn new(seed: u64) -> Probe {
        Probe {
            ep: Endpoint::new(EndpointConfig {
                seed,
                ..Default::default()
            }),
            now: Instant::from_micros(1_000_000),
            buf: vec![0u8; 65_536],
            fed: 0,
            answers: 0,
            worst: 0.0,
        }
    }

    /// The cookie the listener echoes to a first-phase request from `from` (not counted as a
    /// probe: the echo is drained here).
    fn cookie(&mut self, from: SocketAddr, id: SocketId, isn: SeqNo) -> u32 {
        let req = handshake_bytes(SocketId(0), hs(RequestType::REQUEST, id, isn, 0));
        self.ep.handle_datagram(self.now, from, &req);
        let t = self
            .ep
            .poll_transmit(self.now, &mut self.buf)
            .expect("echo");
        let Ok(Packet::Control(ControlPacket {
            control: Control::Handshake(echo),
            ..
        })) = Packet::parse(&self.buf[..t.len])
        else {
            panic!("no echo")
        };
        echo.cookie
    }

    /// A listening probe with a connection accepted from [`PEER`] (client ISN `isn`).
    fn accepted(seed: u64, isn: SeqNo) -> (Probe, SocketId) {
        let mut p = Probe::new(seed);
        let now = p.now;
        p.ep.listen(now, ConnectionConfig::default(), 4).unwrap();
        let peer = addr(PEER);
        let cookie = p.cookie(peer, MY_ID, isn);
        let second = handshake_bytes(SocketId(0), hs(RequestType::RESPONSE, MY_ID, isn, cookie));
        p.ep.handle_datagram(now, peer, &second);
        let conn = p.ep.accept().expect("accepted");
        p.settle();
        (p, conn)
    }

    /// Serves every timer due now and drains what it sends; returns the control packets.
    fn settle(&mut self) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        self.ep.handle_timeout(self.now);
        while let Some(t) = self.ep.poll_transmit(self.now, &mut self.buf) {
            out.push(self.buf[..t.len].to_vec());
        }
        out
    }

    /// Feeds `d` from `from` (and then every truncation of it) and checks the answers.
    fn feed_all(&mut self, from: SocketAddr, d: &[u8], what: &str) {
        for len in (0..=d.len()).rev() {
            self.feed(from, &d[..len], what);
        }
    }

    fn feed(&mut self, from: SocketAddr, d: &[u8], what: &str) {
        self.now = self.now.plus_micros(137);
        self.settle();
        self.ep.handle_datagram(self.now, from, d);
        self.fed += 1;
        for a in self.settle() {
            let is_data = matches!(Packet::parse(&a), Ok(Packet::Data(_)));
            if is_data {
                continue;
            }
            self.answers += 1;
            self.worst = self.worst.max(a.len() as f64 / d.len().max(1) as f64);
            assert!(
                a.len() <= d.len(),
                "{what}: a {}-byte datagram {:02x?} was answered with {} bytes: {:?}",
                d.len(),
                &d[..d.len().min(24)],
                a.len(),
                Packet::parse(&a)
            );
        }
    }
}

#[test]
fn a_listener_never_answers_with_more_than_it_got() {
    let mut p = Probe::new(1);
    let now = p.now;
    p.ep.listen(now, ConnectionConfig::default(), 4).unwrap();
    let stranger = addr(STRANGER);
    let isn = SeqNo::from_masked(77);
    for (i, d) in every_kind(SocketId(0), isn, isn, MY_ID).iter().enumerate() {
        p.feed_all(stranger, d, &format!("listener, packet {i}"));
        p.feed_all(stranger, &d.clone(), "listener, again");
    }
    // Second-phase requests with the right cookie (each creates a connection, whose response
    // is the answer) and with the wrong one.
    for k in 0..8u32 {
        let from: SocketAddr = format!("10.66.0.{}:4000", 10 + k).parse().unwrap();
        let id = SocketId(100 + k);
        p.feed(
            from,
            &handshake_bytes(SocketId(0), hs(RequestType::REQUEST, id, isn, 0)),
            "rq",
        );
        let cookie = p.cookie(from, id, isn);
        let second = handshake_bytes(SocketId(0), hs(RequestType::RESPONSE, id, isn, cookie));
        p.feed_all(from, &second, "second phase");
    }
    assert!(p.answers > 0);
    println!(
        "listener: {} datagrams, {} answers, worst ratio {:.3}",
        p.fed, p.answers, p.worst
    );
}

/// A server-side connection with data in flight, fed by its peer and by strangers.
#[test]
fn an_established_connection_never_answers_with_more_than_it_got() {
    let isn = SeqNo::from_masked(0x1234_5678);
    let (mut p, conn) = Probe::accepted(2, isn);
    let (now, peer) = (p.now, addr(PEER));
    // Data in flight from the engine (never acknowledged by the scripted peer).
    p.ep.connection_mut(conn)
        .unwrap()
        .send(now, &[7u8; 20_000])
        .unwrap();
    p.settle();
    for round in 0..3 {
        let seq = isn.add(round * 50);
        for (i, d) in every_kind(conn, seq, isn, MY_ID).iter().enumerate() {
            p.feed_all(peer, d, &format!("connected, round {round}, packet {i}"));
            p.feed_all(addr(STRANGER), d, "connected, from a stranger");
        }
        if !p.ep.connection(conn).is_some_and(|c| c.is_connected()) {
            break;
        }
    }
    assert!(p.answers > 0);
    println!(
        "connected: {} datagrams, {} answers, worst ratio {:.3}",
        p.fed, p.answers, p.worst
    );
}

/// Small data packets one after another (the 64th makes a light ACK due) and gaps found by
/// packets of every size.
#[test]
fn small_data_packets_are_not_answered_with_more() {
    let isn = SeqNo::from_masked(5);
    let (mut p, conn) = Probe::accepted(3, isn);
    let peer = addr(PEER);
    let mut seq = isn;
    for i in 0..400u32 {
        let len = 1 + (i as usize % 30);
        // Every fifth packet skips one or two sequence numbers.
        if i % 5 == 4 {
            seq = seq.add(1 + i % 2);
        }
        p.feed(peer, &data(seq, conn, len), &format!("small data {i}"));
        seq = seq.next();
    }
    assert!(p.ep.connection(conn).unwrap().is_connected());
    println!(
        "small data: {} datagrams, {} answers, worst ratio {:.3}",
        p.fed, p.answers, p.worst
    );
}

/// A client connecting to a listener, and rendezvous sockets, fed by the address they connect
/// to.
#[test]
fn connecting_and_rendezvous_sockets_never_answer_with_more() {
    for rendezvous in [false, true] {
        let mut p = Probe::new(4 + u64::from(rendezvous));
        let peer = addr(PEER);
        let cfg = ConnectionConfig {
            rendezvous,
            ..Default::default()
        };
        let now = p.now;
        let id = p.ep.connect(now, peer, cfg).unwrap();
        p.settle();
        let isn = SeqNo::from_masked(999);
        for (i, d) in every_kind(SocketId(0), isn, isn, MY_ID)
            .iter()
            .chain(every_kind(id, isn, isn, MY_ID).iter())
            .enumerate()
        {
            p.feed_all(
                peer,
                d,
                &format!("connecting (rendezvous {rendezvous}), packet {i}"),
            );
            p.feed_all(addr(STRANGER), d, "connecting, from a stranger");
        }
        assert!(p.answers > 0, "rendezvous {rendezvous}: nothing answered");
        println!(
            "connecting (rendezvous {rendezvous}): {} datagrams, {} answers, worst ratio {:.3}",
            p.fed, p.answers, p.worst
        );
    }
}
