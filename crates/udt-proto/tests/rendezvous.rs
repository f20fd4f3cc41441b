//! Rendezvous connection setup (spec §5.5): two endpoints `connect` to each other with
//! `rendezvous: true`, in simulated time.

mod common;

use std::cell::RefCell;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::rc::Rc;
use std::time::Duration;

use common::{check_keyed_pattern, keyed_pattern, Datagram, Impairment, Net};
use udt_proto::wire::{Control, Packet, RequestType};
use udt_proto::{
    ConnectError, ConnectionConfig, ConnectionState, Error, Event, Instant, SeqNo, SocketId,
};

const A: usize = 0;
const B: usize = 1;

fn rdv(timeout_s: u64) -> ConnectionConfig {
    ConnectionConfig {
        rendezvous: true,
        connect_timeout: Duration::from_secs(timeout_s),
        ..Default::default()
    }
}

fn net(seed: u64, rtt_ms: u64) -> Net {
    let mut net = Net::new(seed, rtt_ms * 500);
    net.add("10.0.0.1:7000", seed * 2 + 1);
    net.add("10.0.0.2:7000", seed * 2 + 2);
    net
}

/// What each address put on the wire: the ISNs of its handshakes, its first data sequence
/// number, the largest datagram, and how many handshakes it sent.
#[derive(Default, Debug)]
struct Wire {
    hs_isn: HashMap<SocketAddr, Vec<SeqNo>>,
    first_data: HashMap<SocketAddr, SeqNo>,
    largest: HashMap<SocketAddr, usize>,
    handshakes: HashMap<SocketAddr, u32>,
}

/// A filter that records into `wire` and drops the first `drop_hs` handshakes sent from
/// `victim`.
fn recorder(wire: Rc<RefCell<Wire>>, victim: SocketAddr, mut drop_hs: u32) -> common::Filter {
    Box::new(move |d: &Datagram<'_>| {
        let mut w = wire.borrow_mut();
        let l = w.largest.entry(d.from).or_default();
        *l = (*l).max(d.data.len());
        match Packet::parse(d.data).expect("engine sent a malformed datagram") {
            Packet::Data(p) => {
                w.first_data.entry(d.from).or_insert(p.header.seq);
            }
            Packet::Control(c) => {
                if let Control::Handshake(h) = c.control {
                    *w.handshakes.entry(d.from).or_default() += 1;
                    if h.request != RequestType::RENDEZVOUS_CONNECTED {
                        w.hs_isn.entry(d.from).or_default().push(h.isn);
                    }
                    if d.from == victim && drop_hs > 0 {
                        drop_hs -= 1;
                        return false;
                    }
                }
            }
        }
        true
    })
}

fn connected(net: &Net, node: usize, id: SocketId) -> bool {
    net.nodes[node]
        .ep
        .connection(id)
        .is_some_and(|c| c.state() == ConnectionState::Connected)
}

/// Runs until both sockets are connected; returns when each connected (panics on failure).
fn wait_connected(net: &mut Net, a: SocketId, b: SocketId, limit_s: f64) -> (Instant, Instant) {
    let (mut ta, mut tb) = (None, None);
    let ok = net.run_until(limit_s, |net| {
        for (node, id, t) in [(A, a, &mut ta), (B, b, &mut tb)] {
            while let Some((i, e)) = net.nodes[node].ep.poll_event() {
                if i == id {
                    match e {
                        Event::Connected => *t = Some(net.now),
                        Event::ConnectFailed(err) => panic!("node {node} failed: {err}"),
                        _ => {}
                    }
                }
            }
        }
        ta.is_some() && tb.is_some()
    });
    assert!(ok, "rendezvous not established after {limit_s} s");
    assert!(connected(net, A, a) && connected(net, B, b));
    let ca = net.nodes[A].ep.connection(a).unwrap();
    let cb = net.nodes[B].ep.connection(b).unwrap();
    assert_eq!(ca.peer_id(), b);
    assert_eq!(cb.peer_id(), a);
    (ta.unwrap(), tb.unwrap())
}

/// Streams `total` bytes each way at once (a different pattern per direction) and checks every
/// byte.
fn both_ways(net: &mut Net, a: SocketId, b: SocketId, total: u64, limit_s: f64) {
    let ends = [(A, a, B, b, 1u64), (B, b, A, a, 2u64)];
    let mut sent = [0u64; 2];
    let mut recvd = [0u64; 2];
    let mut chunk = vec![0u8; 50_000];
    let mut rbuf = vec![0u8; 100_000];
    let ok = net.run_until(limit_s, |net| {
        let now = net.now;
        for (k, &(from, fid, to, tid, key)) in ends.iter().enumerate() {
            let mut c = net.nodes[from].ep.connection_mut(fid).unwrap();
            while sent[k] < total {
                let n = (total - sent[k]).min(chunk.len() as u64) as usize;
                keyed_pattern(key, sent[k], &mut chunk[..n]);
                match c.send(now, &chunk[..n]) {
                    Ok(m) => sent[k] += m as u64,
                    Err(Error::WouldBlock) => break,
                    Err(e) => panic!("send: {e}"),
                }
            }
            drop(c);
            let mut c = net.nodes[to].ep.connection_mut(tid).unwrap();
            loop {
                match c.recv(&mut rbuf) {
                    Ok(m) => {
                        if let Some(i) = check_keyed_pattern(key, recvd[k], &rbuf[..m]) {
                            panic!("direction {k}: wrong byte at {}", recvd[k] + i as u64);
                        }
                        recvd[k] += m as u64;
                    }
                    Err(Error::WouldBlock) => break,
                    Err(e) => panic!("recv: {e}"),
                }
            }
        }
        recvd == [total, total]
    });
    assert!(ok, "transfer incomplete: {recvd:?} of {total}");
}

/// Checks that each side sent its data starting at the ISN of its own handshakes, and that
/// the two ISNs differ.
fn check_own_isn(wire: &Wire, net: &Net) {
    let (aa, ab) = (net.addr(A), net.addr(B));
    for addr in [aa, ab] {
        let isns = &wire.hs_isn[&addr];
        assert!(
            isns.windows(2).all(|w| w[0] == w[1]),
            "{addr}: ISN changed between handshakes: {isns:?}"
        );
        assert_eq!(
            wire.first_data[&addr], isns[0],
            "{addr} does not send from its own ISN"
        );
    }
    assert_ne!(wire.hs_isn[&aa][0], wire.hs_isn[&ab][0]);
}

/// Both sides call `connect` at the same instant: both connect, data flows both ways, and
/// each side sends from its own ISN (unlike client/server mode).
#[test]
fn simultaneous_rendezvous_connects_both_sides() {
    for seed in 1..4 {
        let mut net = net(seed, 20);
        let wire = Rc::new(RefCell::new(Wire::default()));
        net.filter = Some(recorder(wire.clone(), net.addr(A), 0));
        let now = net.now;
        let (aa, ab) = (net.addr(A), net.addr(B));
        let a = net.nodes[A].ep.connect(now, ab, rdv(10)).unwrap();
        let b = net.nodes[B].ep.connect(now, aa, rdv(10)).unwrap();
        let (ta, tb) = wait_connected(&mut net, a, b, 5.0);
        assert!(ta.micros_since(now) < 500_000 && tb.micros_since(now) < 500_000);
        both_ways(&mut net, a, b, 2_000_000, 60.0);
        check_own_isn(&wire.borrow(), &net);
    }
}

/// One side calls `connect` 1 s after the other: the early side's first requests go nowhere,
/// yet both connect once the late side starts, and data flows both ways.
#[test]
fn rendezvous_with_one_side_one_second_late() {
    for (seed, late) in [(5, B), (6, A)] {
        let mut net = net(seed, 30);
        let wire = Rc::new(RefCell::new(Wire::default()));
        net.filter = Some(recorder(wire.clone(), net.addr(A), 0));
        let early = 1 - late;
        let t0 = net.now;
        let (ea, la) = (net.addr(early), net.addr(late));
        let e = net.nodes[early].ep.connect(t0, la, rdv(10)).unwrap();
        net.run_until(1.0, |_| false);
        assert_eq!(net.now.micros_since(t0), 1_000_000);
        assert!(!connected(&net, early, e));
        let l = net.nodes[late].ep.connect(net.now, ea, rdv(10)).unwrap();
        let (a, b) = if early == A { (e, l) } else { (l, e) };
        let (ta, tb) = wait_connected(&mut net, a, b, 5.0);
        for t in [ta, tb] {
            let since = t.micros_since(t0);
            assert!(
                (1_000_000..1_600_000).contains(&since),
                "connected {since} µs after the first connect"
            );
        }
        both_ways(&mut net, a, b, 1_000_000, 60.0);
        check_own_isn(&wire.borrow(), &net);
        // The early side's requests before the late side existed were unroutable there.
        assert!(net.nodes[late].ep.stats().unroutable >= 3);
    }
}

/// The first handshakes of one side are lost (a fixed number, then at random): both still
/// connect, with repeated requests.
#[test]
fn rendezvous_survives_lost_handshakes() {
    for (seed, lost) in [(7, 1), (8, 3), (9, 6)] {
        let mut net = net(seed, 20);
        let wire = Rc::new(RefCell::new(Wire::default()));
        net.filter = Some(recorder(wire.clone(), net.addr(A), lost));
        let now = net.now;
        let (aa, ab) = (net.addr(A), net.addr(B));
        let a = net.nodes[A].ep.connect(now, ab, rdv(10)).unwrap();
        let b = net.nodes[B].ep.connect(now, aa, rdv(10)).unwrap();
        wait_connected(&mut net, a, b, 8.0);
        assert!(wire.borrow().handshakes[&aa] > lost);
        both_ways(&mut net, a, b, 300_000, 60.0);
    }
    for seed in 20..30 {
        let mut net = net(seed, 20);
        net.impair = Impairment {
            loss: 0.4,
            duplicate: 0.1,
            jitter_us: 5_000,
        };
        let now = net.now;
        let (aa, ab) = (net.addr(A), net.addr(B));
        let a = net.nodes[A].ep.connect(now, ab, rdv(30)).unwrap();
        let b = net.nodes[B].ep.connect(now, aa, rdv(30)).unwrap();
        wait_connected(&mut net, a, b, 30.0);
        net.impair = Impairment::default();
        both_ways(&mut net, a, b, 200_000, 60.0);
    }
}

/// A rendezvous peer that never answers: the connect fails with `TimedOut` exactly at the
/// configured timeout, after requests every 250 ms.
#[test]
fn rendezvous_with_silent_peer_times_out() {
    let mut net = net(10, 20);
    let wire = Rc::new(RefCell::new(Wire::default()));
    net.filter = Some(recorder(wire.clone(), net.addr(A), 0));
    let now = net.now;
    let ab = net.addr(B);
    let a = net.nodes[A].ep.connect(now, ab, rdv(5)).unwrap();
    let mut failed = None;
    net.run_until(20.0, |net| {
        while let Some((id, e)) = net.nodes[A].ep.poll_event() {
            if id == a {
                match e {
                    Event::ConnectFailed(err) => failed = Some((err, net.now)),
                    other => panic!("unexpected {other:?}"),
                }
            }
        }
        failed.is_some()
    });
    let (err, at) = failed.expect("must fail");
    assert_eq!(err, ConnectError::TimedOut);
    assert_eq!(at.micros_since(now), 5_000_000);
    let sent = wire.borrow().handshakes[&net.addr(A)];
    assert!((19..=21).contains(&sent), "{sent} requests in 5 s");
    assert!(!connected(&net, A, a));
    // Nothing more is sent once it failed.
    net.run_until(5.0, |_| false);
    assert_eq!(wire.borrow().handshakes[&net.addr(A)], sent);
    assert_eq!(
        net.nodes[A].ep.connection(a).map(|c| c.state()),
        Some(ConnectionState::Closed)
    );
}

/// Mismatched MSS (1500 vs 1000): both sides end up using the smaller one, and neither sends a
/// datagram larger than `1000 − 28` bytes.
#[test]
fn rendezvous_with_mismatched_mss_uses_the_smaller() {
    for (seed, late) in [(11, None), (12, Some(A)), (13, Some(B))] {
        let mut net = net(seed, 20);
        let wire = Rc::new(RefCell::new(Wire::default()));
        net.filter = Some(recorder(wire.clone(), net.addr(A), 0));
        let (aa, ab) = (net.addr(A), net.addr(B));
        let cfg_a = rdv(10);
        let cfg_b = ConnectionConfig {
            mss: 1000,
            ..rdv(10)
        };
        let start = |net: &mut Net, node: usize| {
            let now = net.now;
            if node == A {
                net.nodes[A].ep.connect(now, ab, cfg_a.clone()).unwrap()
            } else {
                net.nodes[B].ep.connect(now, aa, cfg_b.clone()).unwrap()
            }
        };
        let (a, b) = match late {
            None => (start(&mut net, A), start(&mut net, B)),
            Some(node) => {
                let first = start(&mut net, 1 - node);
                net.run_until(0.7, |_| false);
                let second = start(&mut net, node);
                if node == A {
                    (second, first)
                } else {
                    (first, second)
                }
            }
        };
        wait_connected(&mut net, a, b, 5.0);
        assert_eq!(net.nodes[A].ep.connection(a).unwrap().mss(), 1000);
        assert_eq!(net.nodes[B].ep.connection(b).unwrap().mss(), 1000);
        assert_eq!(net.nodes[A].ep.connection(a).unwrap().payload_size(), 956);
        both_ways(&mut net, a, b, 500_000, 60.0);
        let w = wire.borrow();
        for addr in [aa, ab] {
            assert!(
                w.largest[&addr] <= 1000 - 28,
                "{addr} sent a {}-byte datagram",
                w.largest[&addr]
            );
        }
    }
}
