//! Encrypted connections (docs/encryption.md) between two endpoints, in simulated time:
//! byte-exact transfers, negotiation with peers with and without the extension, wrong
//! secrets, and forged, altered and replayed packets.

mod common;

use std::cell::RefCell;
use std::net::SocketAddr;
use std::rc::Rc;

use common::{check_pattern, pattern, Impairment, Net};
use udt_proto::wire::{Control, ControlPacket, Packet, HANDSHAKE_LEN, HEADER_LEN};
use udt_proto::{
    Cipher, ConnectError, ConnectionConfig, ConnectionState, Encryption, EncryptionMode, Error,
    Event, SocketId, SocketKind,
};

const CLIENT: usize = 0;
const SERVER: usize = 1;

fn key(byte: u8, mode: EncryptionMode) -> Option<Encryption> {
    Some(Encryption::from_key([byte; 32], mode))
}

fn cfg(encryption: Option<Encryption>) -> ConnectionConfig {
    ConnectionConfig {
        encryption,
        ..Default::default()
    }
}

/// A client and a listening server `rtt_ms` apart.
fn pair(seed: u64, rtt_ms: u64, server: ConnectionConfig) -> Net {
    let mut net = Net::new(seed, rtt_ms * 500);
    net.add("10.0.0.1:5000", seed * 2 + 1);
    net.add("10.0.0.2:9000", seed * 2 + 2);
    let now = net.now;
    net.nodes[SERVER].ep.listen(now, server, 16).unwrap();
    net
}

/// Starts connecting and runs until the attempt is decided; returns the client's ID and the
/// outcome.
fn try_connect(net: &mut Net, client: ConnectionConfig) -> (SocketId, Result<(), ConnectError>) {
    let now = net.now;
    let to = net.addr(SERVER);
    let c = net.nodes[CLIENT].ep.connect(now, to, client).unwrap();
    let mut outcome = None;
    net.run_until(10.0, |net| {
        while let Some((id, e)) = net.nodes[CLIENT].ep.poll_event() {
            match e {
                Event::Connected if id == c => outcome = Some(Ok(())),
                Event::ConnectFailed(err) if id == c => outcome = Some(Err(err)),
                _ => {}
            }
        }
        outcome.is_some()
    });
    (c, outcome.expect("connection attempt decided within 10 s"))
}

/// Sends `total` pattern bytes from client to server and checks every byte; `between` runs
/// after every step (to inject packets).
fn stream_transfer(
    net: &mut Net,
    c: SocketId,
    s: SocketId,
    total: u64,
    mut between: impl FnMut(&mut Net),
) {
    let mut sent = 0u64;
    let mut received = 0u64;
    let mut chunk = vec![0u8; 100_000];
    let mut rbuf = vec![0u8; 200_000];
    let ok = net.run_until(120.0, |net| {
        between(net);
        let now = net.now;
        if sent < total {
            let mut conn = net.nodes[CLIENT].ep.connection_mut(c).unwrap();
            while sent < total {
                let n = (total - sent).min(chunk.len() as u64) as usize;
                pattern(sent, &mut chunk[..n]);
                match conn.send(now, &chunk[..n]) {
                    Ok(k) => sent += k as u64,
                    Err(Error::WouldBlock) => break,
                    Err(e) => panic!("send failed: {e}"),
                }
            }
        }
        let mut conn = net.nodes[SERVER].ep.connection_mut(s).unwrap();
        loop {
            match conn.recv(&mut rbuf) {
                Ok(n) => {
                    if let Some(i) = check_pattern(received, &rbuf[..n]) {
                        panic!("corrupt byte at offset {}", received + i as u64);
                    }
                    received += n as u64;
                }
                Err(Error::WouldBlock) => break,
                Err(e) => panic!("recv failed: {e}"),
            }
        }
        received == total
    });
    assert!(ok, "transfer incomplete: {received} of {total} bytes");
}

/// True if `payload` starts like the test pattern (each byte one more than the last, mod
/// 251): clear text of a transfer.
fn looks_like_pattern(payload: &[u8]) -> bool {
    payload.len() >= 32
        && payload[..32]
            .windows(2)
            .all(|w| u16::from(w[1]) == (u16::from(w[0]) + 1) % 251)
}

/// Records every datagram the client sends (bytes) into a shared list.
fn record_client(net: &mut Net) -> Rc<RefCell<Vec<Vec<u8>>>> {
    let log = Rc::new(RefCell::new(Vec::new()));
    let l = log.clone();
    let client: SocketAddr = net.addr(CLIENT);
    net.filter = Some(Box::new(move |d| {
        if d.from == client {
            l.borrow_mut().push(d.data.to_vec());
        }
        true
    }));
    log
}

fn is_data(d: &[u8]) -> bool {
    d[0] & 0x80 == 0
}

fn is_handshake(d: &[u8]) -> bool {
    d[0] & 0x80 != 0 && d[0] & 0x7F == 0 && d[1] == 0
}

#[test]
fn encrypted_stream_is_byte_exact_under_loss_with_both_ciphers() {
    for (seed, cipher) in [(1, Cipher::Aes256Gcm), (2, Cipher::ChaCha20Poly1305)] {
        let mut net = pair(seed, 20, cfg(key(7, EncryptionMode::Required)));
        net.impair = Impairment {
            loss: 0.01,
            duplicate: 0.005,
            jitter_us: 300,
        };
        let log = record_client(&mut net);
        let client = cfg(Some(
            Encryption::from_key([7; 32], EncryptionMode::Required).with_cipher(cipher),
        ));
        let (c, s) = net.establish(CLIENT, SERVER, client, 10.0);
        for (node, id) in [(CLIENT, c), (SERVER, s)] {
            let conn = net.nodes[node].ep.connection(id).unwrap();
            assert!(conn.is_encrypted());
            assert_eq!(conn.cipher(), Some(cipher));
            // The tag takes 16 bytes of the 1456 a 1500-byte MSS leaves.
            assert_eq!(conn.payload_size(), 1440);
        }
        stream_transfer(&mut net, c, s, 5_000_000, |_| {});
        let log = log.borrow();
        let data: Vec<_> = log.iter().filter(|d| is_data(d)).collect();
        assert!(data.len() > 3000, "{} data packets", data.len());
        for d in &data {
            assert!(d.len() <= 1500 - 28, "datagram of {} bytes", d.len());
            assert!(
                !looks_like_pattern(&d[HEADER_LEN..]),
                "clear text on the wire"
            );
        }
        // Control packets (other than handshakes) carry counter and tag: none is shorter
        // than a header, a 4-byte body and 24 bytes.
        for d in log.iter().filter(|d| !is_data(d) && !is_handshake(d)) {
            assert!(
                d.len() >= HEADER_LEN + 4 + 24,
                "control of {} bytes",
                d.len()
            );
        }
        let st = net.nodes[SERVER]
            .ep
            .connection_mut(s)
            .unwrap()
            .stats(net.now, false);
        assert_eq!(st.total.pkt_auth_failed, 0);
    }
}

/// Sealed control bodies are ciphertext: an endpoint that ran the parser's field checks before
/// opening them refused about half the ACKs (a first word ≥ 2^31 is no ACK number), which
/// stalled encrypted connections whose first ACK was among them. On a clean path every ACK
/// and ACK2 must arrive, and nothing may count as malformed.
#[test]
fn every_sealed_control_packet_reaches_its_connection() {
    for (seed, cipher) in [(11, Cipher::Aes256Gcm), (12, Cipher::ChaCha20Poly1305)] {
        let mut net = pair(seed, 10, cfg(key(9, EncryptionMode::Required)));
        let client = cfg(Some(
            Encryption::from_key([9; 32], EncryptionMode::Required).with_cipher(cipher),
        ));
        let (c, s) = net.establish(CLIENT, SERVER, client, 10.0);
        stream_transfer(&mut net, c, s, 3_000_000, |_| {});
        // Let the last ACKs land.
        net.run_until(0.5, |_| false);
        let now = net.now;
        let cs = net.nodes[CLIENT]
            .ep
            .connection_mut(c)
            .unwrap()
            .stats(now, false);
        let ss = net.nodes[SERVER]
            .ep
            .connection_mut(s)
            .unwrap()
            .stats(now, false);
        assert!(ss.total.pkt_sent_ack > 10, "{} ACKs", ss.total.pkt_sent_ack);
        assert_eq!(cs.total.pkt_recv_ack, ss.total.pkt_sent_ack, "{cipher:?}");
        assert_eq!(cs.total.pkt_retrans, 0, "{cipher:?}");
        for node in [CLIENT, SERVER] {
            let st = net.nodes[node].ep.stats();
            assert_eq!((st.malformed, st.unroutable), (0, 0), "{cipher:?}");
        }
    }
}

#[test]
fn the_clear_transfer_shows_the_pattern_the_encrypted_one_hides() {
    // The check of the test above can fail: without encryption the pattern is on the wire.
    let mut net = pair(3, 10, cfg(None));
    let log = record_client(&mut net);
    let (c, s) = net.establish(CLIENT, SERVER, cfg(None), 10.0);
    stream_transfer(&mut net, c, s, 200_000, |_| {});
    let log = log.borrow();
    assert!(log
        .iter()
        .filter(|d| is_data(d))
        .any(|d| looks_like_pattern(&d[HEADER_LEN..])));
}

#[test]
fn encrypted_messages_keep_their_boundaries() {
    let server = ConnectionConfig {
        kind: SocketKind::Message,
        ..cfg(key(9, EncryptionMode::Preferred))
    };
    let mut net = pair(4, 10, server.clone());
    net.impair.loss = 0.02;
    let (c, s) = net.establish(CLIENT, SERVER, server, 10.0);
    assert!(net.nodes[CLIENT].ep.connection(c).unwrap().is_encrypted());
    let p = net.nodes[CLIENT].ep.connection(c).unwrap().payload_size();
    // Lengths around the (reduced) payload size: one byte short, exact, one over, several.
    let sizes = [1, p - 1, p, p + 1, 3 * p, 3 * p + 7, 10_000];
    let now = net.now;
    {
        let mut conn = net.nodes[CLIENT].ep.connection_mut(c).unwrap();
        for (k, &n) in sizes.iter().enumerate() {
            let mut m = vec![0u8; n];
            common::keyed_pattern(k as u64, 0, &mut m);
            conn.send_msg(now, &m, None, true).unwrap();
        }
    }
    let mut got = Vec::new();
    let mut buf = vec![0u8; 20_000];
    let ok = net.run_until(30.0, |net| {
        let mut conn = net.nodes[SERVER].ep.connection_mut(s).unwrap();
        while let Ok(r) = conn.recv_msg(&mut buf) {
            got.push(buf[..r.copied].to_vec());
        }
        got.len() == sizes.len()
    });
    assert!(ok, "{} of {} messages", got.len(), sizes.len());
    for (k, m) in got.iter().enumerate() {
        assert_eq!(m.len(), sizes[k]);
        assert_eq!(common::check_keyed_pattern(k as u64, 0, m), None);
    }
}

#[test]
fn a_wrong_secret_is_refused_by_the_listener() {
    let mut net = pair(5, 10, cfg(key(1, EncryptionMode::Preferred)));
    let (c, r) = try_connect(&mut net, cfg(key(2, EncryptionMode::Preferred)));
    assert_eq!(r, Err(ConnectError::AuthenticationFailed));
    assert_eq!(
        net.nodes[CLIENT].ep.connection(c).unwrap().state(),
        ConnectionState::Closed
    );
    assert_eq!(net.nodes[SERVER].ep.accept(), None);
    assert_eq!(net.nodes[SERVER].ep.connection_count(), 0);
    assert!(net.nodes[SERVER].ep.stats().handshakes_refused >= 1);
}

#[test]
fn a_passphrase_on_both_sides_connects_and_a_different_one_does_not() {
    let pass = |s: &[u8]| Encryption::from_passphrase(s, EncryptionMode::Required).unwrap();
    let mut net = pair(6, 10, cfg(Some(pass(b"correct horse"))));
    let (c, r) = try_connect(&mut net, cfg(Some(pass(b"correct horse"))));
    assert_eq!(r, Ok(()));
    assert!(net.nodes[CLIENT].ep.connection(c).unwrap().is_encrypted());
    let (_, r) = try_connect(&mut net, cfg(Some(pass(b"battery staple"))));
    assert_eq!(r, Err(ConnectError::AuthenticationFailed));
    assert_eq!(
        Encryption::from_passphrase(b"", EncryptionMode::Required).err(),
        Some(udt_proto::crypto::EncryptionError::EmptySecret)
    );
}

#[test]
fn required_client_refuses_a_listener_without_the_extension_before_sending_anything() {
    // A listener without a secret offers no encryption (its cookie reply carries the peer
    // hint, not an offer), as UDT4 4.11 does not.
    let mut net = pair(7, 10, cfg(None));
    let log = record_client(&mut net);
    let (_, r) = try_connect(&mut net, cfg(key(1, EncryptionMode::Required)));
    assert_eq!(r, Err(ConnectError::EncryptionUnavailable));
    // Only first-phase requests left the client: no second phase, nothing in clear.
    let log = log.borrow();
    assert!(!log.is_empty());
    for d in log.iter() {
        let Ok(Packet::Control(ControlPacket {
            control: Control::Handshake(h),
            ..
        })) = Packet::parse(d)
        else {
            panic!("client sent a non-handshake");
        };
        assert_eq!(h.request.0, 1, "only first-phase requests");
    }
    assert_eq!(net.nodes[SERVER].ep.connection_count(), 0);
}

#[test]
fn preferred_client_connects_in_clear_to_a_listener_without_the_extension() {
    // The listener answers as UDT4 4.11 does: an address, not an offer or a peer hint, in its
    // cookie reply.
    let mut net = pair(8, 10, cfg(None));
    let server = net.addr(SERVER);
    common::rewrite_cookie_replies_as_udt4(&mut net, server);
    let log = record_client(&mut net);
    let (c, s) = net.establish(CLIENT, SERVER, cfg(key(1, EncryptionMode::Preferred)), 10.0);
    assert!(!net.nodes[CLIENT].ep.connection(c).unwrap().is_encrypted());
    assert!(!net.nodes[SERVER].ep.connection(s).unwrap().is_encrypted());
    assert_eq!(
        net.nodes[CLIENT].ep.connection(c).unwrap().payload_size(),
        1456
    );
    stream_transfer(&mut net, c, s, 300_000, |_| {});
    // Every handshake the client sent was the plain 48-byte body a 4.11 listener requires.
    let log = log.borrow();
    for d in log.iter().filter(|d| is_handshake(d)) {
        assert_eq!(d.len(), HEADER_LEN + HANDSHAKE_LEN);
    }
}

#[test]
fn required_listener_rejects_a_clear_client_with_a_reason() {
    let mut net = pair(9, 10, cfg(key(1, EncryptionMode::Required)));
    let (_, r) = try_connect(&mut net, cfg(None));
    assert_eq!(r, Err(ConnectError::EncryptionRequired));
    assert_eq!(net.nodes[SERVER].ep.connection_count(), 0);
}

#[test]
fn preferred_listener_accepts_a_clear_client_in_clear() {
    let mut net = pair(10, 10, cfg(key(1, EncryptionMode::Preferred)));
    let (c, s) = net.establish(CLIENT, SERVER, cfg(None), 10.0);
    assert!(!net.nodes[SERVER].ep.connection(s).unwrap().is_encrypted());
    stream_transfer(&mut net, c, s, 300_000, |_| {});
}

#[test]
fn handshake_replies_are_no_larger_than_the_requests() {
    let mut net = pair(11, 10, cfg(key(1, EncryptionMode::Required)));
    let sizes = Rc::new(RefCell::new(Vec::new()));
    let sz = sizes.clone();
    net.filter = Some(Box::new(move |d| {
        if is_handshake(d.data) {
            sz.borrow_mut().push(d.data.len());
        }
        true
    }));
    let (_, r) = try_connect(&mut net, cfg(key(1, EncryptionMode::Required)));
    assert_eq!(r, Ok(()));
    // request 64, cookie reply 64, request with hello 120, response with accept 120.
    assert_eq!(&sizes.borrow()[..4], &[64, 64, 120, 120]);
}

/// Delivers `bytes` to the server as if from the client, at once.
fn inject_to_server(net: &mut Net, bytes: Vec<u8>) {
    let from = net.addr(CLIENT);
    net.inject(SERVER, from, bytes, 0);
}

#[test]
fn tampered_and_forged_packets_are_dropped_and_counted_and_the_transfer_completes() {
    let mut net = pair(12, 10, cfg(key(3, EncryptionMode::Required)));
    let (c, s) = net.establish(CLIENT, SERVER, cfg(key(3, EncryptionMode::Required)), 10.0);
    // Every 40th data packet of the client is held back and replaced by a copy with one bit
    // flipped; the receiver must drop each copy and recover the packet by retransmission.
    let held = Rc::new(RefCell::new(Vec::new()));
    let h = held.clone();
    let client = net.addr(CLIENT);
    let mut n = 0u64;
    net.filter = Some(Box::new(move |d| {
        if d.from == client && is_data(d.data) {
            n += 1;
            if n % 40 == 0 {
                let mut bad = d.data.to_vec();
                let at = HEADER_LEN + (n as usize % (bad.len() - HEADER_LEN));
                bad[at] ^= 0x04;
                h.borrow_mut().push(bad);
                return false;
            }
        }
        true
    }));
    let mut tampered = 0u64;
    stream_transfer(&mut net, c, s, 2_000_000, |net| {
        let batch: Vec<_> = held.borrow_mut().drain(..).collect();
        for b in batch {
            tampered += 1;
            inject_to_server(net, b);
        }
    });
    assert!(tampered >= 30, "{tampered} tampered packets");
    // Forged control packets in clear from the client's address: a Shutdown and an ACK.
    let peer = net.nodes[CLIENT].ep.connection(c).unwrap().peer_id();
    assert_eq!(peer, s);
    let mut shut = vec![0u8; 32];
    let len = ControlPacket::new(s, Control::Shutdown)
        .emit(&mut shut)
        .unwrap();
    shut.truncate(len);
    inject_to_server(&mut net, shut);
    net.run_until(0.1, |_| false);
    let st = net.nodes[SERVER]
        .ep
        .connection_mut(s)
        .unwrap()
        .stats(net.now, false);
    assert_eq!(st.total.pkt_auth_failed, tampered + 1);
    assert_eq!(
        net.nodes[SERVER].ep.connection(s).unwrap().state(),
        ConnectionState::Connected,
        "a forged Shutdown must not close the connection"
    );
}

#[test]
fn replayed_packets_are_dropped_and_counted() {
    let mut net = pair(13, 10, cfg(key(4, EncryptionMode::Required)));
    let (c, s) = net.establish(CLIENT, SERVER, cfg(key(4, EncryptionMode::Required)), 10.0);
    let log = record_client(&mut net);
    stream_transfer(&mut net, c, s, 1_000_000, |_| {});
    net.run_until(1.0, |_| false);
    let before = net.nodes[SERVER]
        .ep
        .connection_mut(s)
        .unwrap()
        .stats(net.now, false);
    let (data, control): (Vec<_>, Vec<_>) = log
        .borrow()
        .iter()
        .filter(|d| !is_handshake(d))
        .cloned()
        .partition(|d| is_data(d));
    assert!(data.len() > 500 && !control.is_empty());
    for d in data.iter().take(200).chain(control.iter()) {
        inject_to_server(&mut net, d.clone());
    }
    net.run_until(1.0, |_| false);
    let after = net.nodes[SERVER]
        .ep
        .connection_mut(s)
        .unwrap()
        .stats(net.now, false);
    // Data replays authenticate (same sequence number, same nonce) and are discarded as
    // duplicates; control replays fail the counter check.
    assert_eq!(
        after.total.pkt_recv_discarded - before.total.pkt_recv_discarded,
        200
    );
    assert_eq!(
        after.total.pkt_replayed - before.total.pkt_replayed,
        control.len() as u64
    );
    assert_eq!(after.total.bytes_recv, before.total.bytes_recv);
    // Nothing new became readable.
    let mut buf = [0u8; 16];
    assert_eq!(
        net.nodes[SERVER]
            .ep
            .connection_mut(s)
            .unwrap()
            .recv(&mut buf),
        Err(Error::WouldBlock)
    );
}

#[test]
fn rendezvous_refuses_required_encryption_and_runs_preferred_in_clear() {
    let mut net = Net::new(14, 5_000);
    net.add("10.0.0.1:5000", 1);
    net.add("10.0.0.2:5000", 2);
    let rdv = |mode| ConnectionConfig {
        rendezvous: true,
        ..cfg(key(1, mode))
    };
    let now = net.now;
    let b = net.addr(1);
    assert!(net.nodes[0]
        .ep
        .connect(now, b, rdv(EncryptionMode::Required))
        .is_err());
    let a_addr = net.addr(0);
    let a = net.nodes[0]
        .ep
        .connect(now, b, rdv(EncryptionMode::Preferred))
        .unwrap();
    let bb = net.nodes[1]
        .ep
        .connect(now, a_addr, rdv(EncryptionMode::Preferred))
        .unwrap();
    let ok = net.run_until(10.0, |net| {
        net.nodes[0]
            .ep
            .connection(a)
            .is_some_and(|c| c.is_connected())
            && net.nodes[1]
                .ep
                .connection(bb)
                .is_some_and(|c| c.is_connected())
    });
    assert!(ok);
    assert!(!net.nodes[0].ep.connection(a).unwrap().is_encrypted());
}
