//! Forged and replayed control packets during a transfer, in simulated time: each kind is
//! dropped and counted, the connection survives, and the transfer completes byte-exact.
//!
//! The forger sees the traffic (a `Net` filter reads the sender's sequence numbers), so its
//! packets are as well-aimed as an on-path attacker's: the right socket IDs and, unless the
//! case is about the source, the peer's address.

mod common;

use std::cell::Cell;
use std::net::SocketAddr;
use std::rc::Rc;

use common::{Net, Stream};
use udt_proto::stats::Counters;
use udt_proto::wire::{
    Control, ControlPacket, Handshake, Packet, PeerAddr, RequestType, SocketType, HANDSHAKE_LEN,
    UDT_VERSION,
};
use udt_proto::{ConnectionConfig, SeqNo, SeqRange, SocketId};

const CLIENT: &str = "10.0.0.1:5000";
const SERVER: &str = "10.0.0.2:9000";
/// A host that is neither end.
const STRANGER: &str = "10.66.0.7:9000";
/// Bytes streamed client → server.
const TOTAL: u64 = 3 << 20;
/// Forged packets injected during one transfer.
const FORGERIES: u32 = 200;

#[derive(Clone, Copy, Debug)]
enum Forgery {
    /// A full ACK of a sequence number the sender never sent (to the sender).
    AckOfUnsentData,
    /// A light ACK of the same (to the sender).
    LightAckOfUnsentData,
    /// A NAK of a range beyond anything sent (to the sender).
    NakOutOfWindow,
    /// A reversed NAK range inside what was sent (to the sender).
    NakReversed,
    /// A NAK of the first packets, replayed long after they were acknowledged (to the sender).
    NakReplayed,
    /// A Shutdown with the right socket ID, from another port of the peer's host.
    ShutdownFromWrongPort,
    /// A Shutdown with the right socket ID, from another host.
    ShutdownFromWrongHost,
    /// A Shutdown from the peer's address to a socket ID that is not the connection's.
    ShutdownToWrongSocketId,
    /// A handshake to the established client claiming another server socket.
    HandshakeWrongSocketId,
    /// A handshake to the established client with the right socket but another ISN.
    HandshakeWrongIsn,
}

fn ctrl(dst: SocketId, control: Control<'_>) -> Vec<u8> {
    let mut buf = vec![0u8; 128];
    let n = ControlPacket::new(dst, control).emit(&mut buf).unwrap();
    buf.truncate(n);
    buf
}

struct Outcome {
    client: Counters,
    server: Counters,
    client_ep: udt_proto::endpoint::EndpointStats,
    server_ep: udt_proto::endpoint::EndpointStats,
}

/// Streams [`TOTAL`] bytes client → server while injecting [`FORGERIES`] packets of kind `f`;
/// asserts that every byte arrives in order and unaltered and that neither side closes.
fn transfer_under(f: Forgery) -> Outcome {
    let mut net = Net::new(7, 10_000);
    let client = net.add(CLIENT, 11);
    let server = net.add(SERVER, 12);
    let now = net.now;
    net.nodes[server]
        .ep
        .listen(now, ConnectionConfig::default(), 4)
        .unwrap();
    let (c, s) = net.establish(client, server, ConnectionConfig::default(), 5.0);
    let server_id = net.nodes[client].ep.connection(c).unwrap().peer_id();

    // The highest data sequence number the client has sent, read off the wire.
    let last_sent: Rc<Cell<Option<SeqNo>>> = Rc::default();
    let seen = last_sent.clone();
    // The first sequence number sent, and the highest the server acknowledged.
    let first_sent: Rc<Cell<Option<SeqNo>>> = Rc::default();
    let acked: Rc<Cell<Option<SeqNo>>> = Rc::default();
    let (first_seen, acked_seen) = (first_sent.clone(), acked.clone());
    let client_addr = net.addr(client);
    net.filter = Some(Box::new(move |d| {
        match Packet::parse(d.data) {
            Ok(Packet::Data(p)) if d.from == client_addr => {
                if seen.get().is_none_or(|s| p.header.seq.is_after(s)) {
                    seen.set(Some(p.header.seq));
                }
                if first_seen.get().is_none() {
                    first_seen.set(Some(p.header.seq));
                }
            }
            Ok(Packet::Control(ControlPacket {
                control: Control::Ack(a),
                ..
            })) if d.from != client_addr && acked_seen.get().is_none_or(|s| a.ack.is_after(s)) => {
                acked_seen.set(Some(a.ack));
            }
            _ => {}
        }
        true
    }));
    // The client's ISN: the first sequence number it sends (the server adopts it).
    let isn: Rc<Cell<Option<SeqNo>>> = Rc::default();

    let server_addr: SocketAddr = SERVER.parse().unwrap();
    let wrong_port: SocketAddr = "10.0.0.2:9001".parse().unwrap();
    let stranger: SocketAddr = STRANGER.parse().unwrap();
    let (mut forged, mut step) = (0u32, 0u64);
    let mut stream = Stream::new(TOTAL);
    let done = net.run_until(60.0, |net| {
        let arrived = stream.pump(net, (client, c), (server, s));
        step += 1;
        // A replayed NAK waits until its packets are well acknowledged.
        let ready = !matches!(f, Forgery::NakReplayed)
            || first_sent
                .get()
                .zip(acked.get())
                .is_some_and(|(first, ack)| ack.is_after(first.add(100)));
        if let (Some(last), true) = (
            last_sent.get(),
            ready && step % 7 == 0 && forged < FORGERIES,
        ) {
            if isn.get().is_none() {
                isn.set(Some(last));
            }
            forged += 1;
            let far = last.add(100_000 + forged);
            let (from, bytes) = match f {
                Forgery::AckOfUnsentData => (
                    server_addr,
                    ctrl(
                        c,
                        Control::Ack(udt_proto::wire::Ack {
                            ack_no: udt_proto::AckNo::from_masked(forged),
                            ack: far,
                            rtt_us: 1,
                            rtt_var_us: 1,
                            avail_buf_pkts: 1 << 20,
                            rates: None,
                        }),
                    ),
                ),
                Forgery::LightAckOfUnsentData => (server_addr, ctrl(c, Control::LightAck(far))),
                Forgery::NakOutOfWindow | Forgery::NakReversed | Forgery::NakReplayed => {
                    let range = match f {
                        Forgery::NakOutOfWindow => SeqRange {
                            first: far,
                            last: far.add(10),
                        },
                        Forgery::NakReplayed => {
                            let first = first_sent.get().unwrap();
                            SeqRange {
                                first,
                                last: first.add(3),
                            }
                        }
                        _ => SeqRange {
                            first: last,
                            last: last.sub(20),
                        },
                    };
                    // Written by hand: the engine's encoder refuses a reversed range.
                    let mut buf = vec![0u8; 24];
                    buf[..4].copy_from_slice(&0x8003_0000u32.to_be_bytes());
                    buf[12..16].copy_from_slice(&c.0.to_be_bytes());
                    buf[16..20].copy_from_slice(&(range.first.get() | 0x8000_0000).to_be_bytes());
                    buf[20..24].copy_from_slice(&range.last.get().to_be_bytes());
                    (server_addr, buf)
                }
                Forgery::ShutdownFromWrongPort => (wrong_port, ctrl(c, Control::Shutdown)),
                Forgery::ShutdownFromWrongHost => (stranger, ctrl(c, Control::Shutdown)),
                Forgery::ShutdownToWrongSocketId => (
                    server_addr,
                    ctrl(SocketId(c.0 ^ (1 + forged % 1000)), Control::Shutdown),
                ),
                Forgery::HandshakeWrongSocketId | Forgery::HandshakeWrongIsn => {
                    let wrong_id = matches!(f, Forgery::HandshakeWrongSocketId);
                    let hs = Handshake {
                        version: UDT_VERSION,
                        socket_type: SocketType::STREAM,
                        isn: if wrong_id {
                            isn.get().unwrap()
                        } else {
                            last.add(forged)
                        },
                        mss: 1500,
                        flow_window: 8192,
                        request: RequestType::RESPONSE,
                        socket_id: if wrong_id {
                            SocketId(server_id.0 ^ forged)
                        } else {
                            server_id
                        },
                        cookie: 0,
                        peer_addr: PeerAddr::default(),
                    };
                    (server_addr, ctrl(c, Control::Handshake(hs)))
                }
            };
            net.inject(client, from, bytes, 1);
        }
        arrived
    });
    assert!(
        done,
        "{f:?}: transfer incomplete: {} of {TOTAL} bytes",
        stream.got
    );
    assert_eq!(forged, FORGERIES, "{f:?}: not every forgery was sent");
    let now = net.now;
    for (node, id) in [(client, c), (server, s)] {
        let conn = net.nodes[node].ep.connection(id).unwrap();
        assert!(conn.is_connected(), "{f:?}: connection closed");
    }
    let client_st = net.nodes[client]
        .ep
        .connection_mut(c)
        .unwrap()
        .stats(now, false);
    let server_st = net.nodes[server]
        .ep
        .connection_mut(s)
        .unwrap()
        .stats(now, false);
    Outcome {
        client: client_st.total,
        server: server_st.total,
        client_ep: net.nodes[client].ep.stats(),
        server_ep: net.nodes[server].ep.stats(),
    }
}

/// Shared checks: the forgeries never reached the server, and the client's counters of other
/// kinds did not move.
fn quiet_otherwise(o: &Outcome, ack: u64, nak: u64, hs: u64) {
    assert_eq!(o.client.pkt_forged_ack, ack);
    assert_eq!(o.client.pkt_forged_nak, nak);
    assert_eq!(o.client.pkt_forged_handshake, hs);
    assert_eq!(o.server.pkt_invalid, 0);
    assert_eq!(o.server_ep.unroutable, 0);
}

#[test]
fn ack_of_unsent_data_is_dropped_and_counted() {
    let o = transfer_under(Forgery::AckOfUnsentData);
    quiet_otherwise(&o, u64::from(FORGERIES), 0, 0);
    assert!(o.client.pkt_invalid >= u64::from(FORGERIES));
}

#[test]
fn light_ack_of_unsent_data_is_dropped_and_counted() {
    let o = transfer_under(Forgery::LightAckOfUnsentData);
    quiet_otherwise(&o, u64::from(FORGERIES), 0, 0);
}

#[test]
fn nak_beyond_the_window_is_dropped_and_counted() {
    let o = transfer_under(Forgery::NakOutOfWindow);
    quiet_otherwise(&o, 0, u64::from(FORGERIES), 0);
}

/// A reversed range is malformed on the wire: the endpoint drops it before any connection
/// sees it.
#[test]
fn reversed_nak_is_dropped_and_counted() {
    let o = transfer_under(Forgery::NakReversed);
    quiet_otherwise(&o, 0, 0, 0);
    assert_eq!(o.client_ep.malformed, u64::from(FORGERIES));
}

/// A NAK of packets acknowledged long ago is ignored: no retransmission and no loss signal
/// (a replayed NAK would otherwise make congestion control slow down at will).
#[test]
fn replayed_nak_of_acknowledged_packets_is_ignored_and_counted() {
    let o = transfer_under(Forgery::NakReplayed);
    quiet_otherwise(&o, 0, 0, 0);
    assert_eq!(o.client.pkt_stale_nak, u64::from(FORGERIES));
    assert_eq!(
        o.client.pkt_recv_nak, 0,
        "a replay counted as a loss report"
    );
    assert_eq!(
        o.client.pkt_retrans, 0,
        "acknowledged packets were sent again"
    );
}

#[test]
fn shutdown_from_another_port_is_dropped_and_counted() {
    let o = transfer_under(Forgery::ShutdownFromWrongPort);
    quiet_otherwise(&o, 0, 0, 0);
    assert_eq!(o.client_ep.wrong_source, u64::from(FORGERIES));
    assert_eq!(o.client_ep.unroutable, u64::from(FORGERIES));
}

#[test]
fn shutdown_from_another_host_is_dropped_and_counted() {
    let o = transfer_under(Forgery::ShutdownFromWrongHost);
    quiet_otherwise(&o, 0, 0, 0);
    assert_eq!(o.client_ep.wrong_source, u64::from(FORGERIES));
}

#[test]
fn shutdown_to_a_wrong_socket_id_is_dropped_and_counted() {
    let o = transfer_under(Forgery::ShutdownToWrongSocketId);
    quiet_otherwise(&o, 0, 0, 0);
    assert_eq!(o.client_ep.unroutable, u64::from(FORGERIES));
    assert_eq!(o.client_ep.wrong_source, 0);
}

#[test]
fn handshake_with_a_wrong_socket_id_is_dropped_and_counted() {
    let o = transfer_under(Forgery::HandshakeWrongSocketId);
    quiet_otherwise(&o, 0, 0, u64::from(FORGERIES));
}

#[test]
fn handshake_with_a_wrong_isn_is_dropped_and_counted() {
    let o = transfer_under(Forgery::HandshakeWrongIsn);
    quiet_otherwise(&o, 0, 0, u64::from(FORGERIES));
}

/// Control: a genuine duplicate of the server's response (lost-response retry) is not counted
/// as forged.
#[test]
fn a_genuine_duplicate_response_is_not_counted_as_forged() {
    let mut net = Net::new(3, 10_000);
    let client = net.add(CLIENT, 1);
    let server = net.add(SERVER, 2);
    let now = net.now;
    net.nodes[server]
        .ep
        .listen(now, ConnectionConfig::default(), 4)
        .unwrap();
    // Record the server's response handshake as it passes.
    let response: Rc<Cell<Option<Vec<u8>>>> = Rc::default();
    let seen = response.clone();
    let server_addr: SocketAddr = SERVER.parse().unwrap();
    net.filter = Some(Box::new(move |d| {
        if d.from == server_addr {
            if let Ok(Packet::Control(ControlPacket {
                control: Control::Handshake(h),
                ..
            })) = Packet::parse(d.data)
            {
                if h.request == RequestType::RESPONSE && d.data.len() == 16 + HANDSHAKE_LEN {
                    seen.set(Some(d.data.to_vec()));
                }
            }
        }
        true
    }));
    let (c, _s) = net.establish(client, server, ConnectionConfig::default(), 5.0);
    let dup = response.take().expect("response seen");
    for i in 0..10 {
        net.inject(client, server_addr, dup.clone(), 1 + i);
    }
    net.run_until(0.1, |_| false);
    let now = net.now;
    let st = net.nodes[client]
        .ep
        .connection_mut(c)
        .unwrap()
        .stats(now, false)
        .total;
    assert_eq!(st.pkt_forged_handshake, 0);
    assert_eq!(st.pkt_invalid, 0);
    assert!(net.nodes[client].ep.connection(c).unwrap().is_connected());
}
