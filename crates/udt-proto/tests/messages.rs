//! End-to-end behaviour of message sockets (`SocketKind::Message` on both sides): boundaries,
//! ordering, TTL and drop requests, truncation — spec §9.5, §9.6, §10.1, §10.7.

mod common;

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::rc::Rc;
use std::time::Duration;

use common::{check_keyed_pattern, keyed_pattern, Datagram, Impairment, Net};
use udt_proto::buffer::MsgRead;
use udt_proto::wire::{Boundary, Control, Packet};
use udt_proto::{ConnectionConfig, Error, Instant, SocketId, SocketKind};

const CLIENT: usize = 0;
const SERVER: usize = 1;

fn msg_cfg() -> ConnectionConfig {
    ConnectionConfig {
        kind: SocketKind::Message,
        ..Default::default()
    }
}

/// A client and a listening server `rtt_ms` apart, both message sockets, connected.
fn connected(
    seed: u64,
    rtt_ms: u64,
    client_cfg: ConnectionConfig,
    server_cfg: ConnectionConfig,
) -> (Net, SocketId, SocketId) {
    let mut net = Net::new(seed, rtt_ms * 500);
    net.add("10.0.0.1:5000", seed * 2 + 1);
    net.add("10.0.0.2:9000", seed * 2 + 2);
    let now = net.now;
    net.nodes[SERVER].ep.listen(now, server_cfg, 16).unwrap();
    let (c, s) = net.establish(CLIENT, SERVER, client_cfg, 10.0);
    (net, c, s)
}

/// Message `id` of `len` bytes: the keyed pattern of `id`, with (when there is room) the id and
/// the length in the first 8 bytes, so a received message identifies and checks itself.
fn message(id: u32, len: usize) -> Vec<u8> {
    let mut v = vec![0u8; len];
    keyed_pattern(u64::from(id), 0, &mut v);
    if len >= 8 {
        v[..4].copy_from_slice(&id.to_le_bytes());
        v[4..8].copy_from_slice(&(len as u32).to_le_bytes());
    }
    v
}

/// Identifies and checks a received message built by [`message`] (at least 8 bytes); panics
/// on any wrong byte.
fn identify(m: &[u8]) -> u32 {
    assert!(m.len() >= 8, "message of {} bytes cannot identify", m.len());
    let id = u32::from_le_bytes(m[..4].try_into().unwrap());
    let len = u32::from_le_bytes(m[4..8].try_into().unwrap()) as usize;
    assert_eq!(len, m.len(), "message {id}: length field differs");
    if let Some(i) = check_keyed_pattern(u64::from(id), 8, &m[8..]) {
        panic!("message {id}: wrong byte at {}", i + 8);
    }
    id
}

/// A message waiting to be handed to `send_msg`.
struct Outgoing {
    data: Vec<u8>,
    ttl: Option<Duration>,
    in_order: bool,
}

/// Hands queued messages to the connection until it would block.
fn pump(net: &mut Net, node: usize, id: SocketId, queue: &mut VecDeque<Outgoing>) {
    let now = net.now;
    let mut conn = net.nodes[node].ep.connection_mut(id).unwrap();
    while let Some(m) = queue.front() {
        match conn.send_msg(now, &m.data, m.ttl, m.in_order) {
            Ok(()) => {
                queue.pop_front();
            }
            Err(Error::WouldBlock) => break,
            Err(e) => panic!("send_msg failed: {e}"),
        }
    }
}

/// Reads every message readable now.
fn drain(net: &mut Net, node: usize, id: SocketId, buf: &mut [u8]) -> Vec<(Vec<u8>, MsgRead)> {
    let mut out = Vec::new();
    let mut conn = net.nodes[node].ep.connection_mut(id).unwrap();
    loop {
        match conn.recv_msg(buf) {
            Ok(r) => out.push((buf[..r.copied].to_vec(), r)),
            Err(Error::WouldBlock) => return out,
            Err(e) => panic!("recv_msg failed: {e}"),
        }
    }
}

/// Sends `msgs` client → server and returns what the server read, in order, once `expect`
/// messages arrived (panics after `limit_s`).
fn transfer(
    net: &mut Net,
    c: SocketId,
    s: SocketId,
    msgs: Vec<Outgoing>,
    expect: usize,
    limit_s: f64,
) -> Vec<(Vec<u8>, MsgRead)> {
    let biggest = msgs.iter().map(|m| m.data.len()).max().unwrap_or(0);
    let mut queue: VecDeque<Outgoing> = msgs.into();
    let mut got = Vec::new();
    let mut buf = vec![0u8; biggest + 1];
    let ok = net.run_until(limit_s, |net| {
        pump(net, CLIENT, c, &mut queue);
        got.extend(drain(net, SERVER, s, &mut buf));
        got.len() >= expect
    });
    assert!(
        ok,
        "only {} of {expect} messages after {limit_s} s",
        got.len()
    );
    got
}

fn reliable(data: Vec<u8>) -> Outgoing {
    Outgoing {
        data,
        ttl: None,
        in_order: true,
    }
}

fn client_stats(net: &mut Net, c: SocketId) -> udt_proto::stats::PerfStats {
    let now = net.now;
    net.nodes[CLIENT]
        .ep
        .connection_mut(c)
        .unwrap()
        .stats(now, false)
}

fn server_stats(net: &mut Net, s: SocketId) -> udt_proto::stats::PerfStats {
    let now = net.now;
    net.nodes[SERVER]
        .ep
        .connection_mut(s)
        .unwrap()
        .stats(now, false)
}

/// Message sizes 1, payload−1, payload, payload+1, 10×payload and the whole send buffer arrive
/// as exactly the messages sent: one `recv_msg` per message, nothing merged or split.
#[test]
fn message_boundaries_are_preserved() {
    const SNDBUF: u32 = 64;
    let client_cfg = ConnectionConfig {
        send_buffer_pkts: SNDBUF,
        ..msg_cfg()
    };
    let (mut net, c, s) = connected(21, 20, client_cfg, msg_cfg());
    let p = net.nodes[CLIENT].ep.connection(c).unwrap().payload_size();
    assert_eq!(p, 1456);
    let sizes = [
        1,
        p - 1,
        p,
        p + 1,
        10 * p,
        SNDBUF as usize * p - 1,
        SNDBUF as usize * p,
        2,
        p + 1,
    ];
    let msgs: Vec<Vec<u8>> = sizes
        .iter()
        .enumerate()
        .map(|(i, &n)| message(i as u32 + 100, n))
        .collect();
    let got = transfer(
        &mut net,
        c,
        s,
        msgs.iter().cloned().map(reliable).collect(),
        msgs.len(),
        30.0,
    );
    assert_eq!(got.len(), msgs.len());
    for (i, ((data, r), sent)) in got.iter().zip(&msgs).enumerate() {
        assert_eq!(
            (r.copied, r.msg_len, r.partial),
            (sent.len(), sent.len(), false),
            "message {i} ({} bytes)",
            sent.len()
        );
        assert!(data == sent, "message {i} ({} bytes) differs", sent.len());
    }
    // Nothing more arrives.
    net.run_until(2.0, |_| false);
    let mut buf = vec![0u8; 100];
    assert!(drain(&mut net, SERVER, s, &mut buf).is_empty());
}

/// A message needing more packets than the whole send buffer is refused with
/// `MessageTooLarge` (UDT4 5012), even when the buffer is empty; one that exactly fits is
/// accepted; an empty one is an invalid argument.
#[test]
fn message_larger_than_send_buffer_is_refused() {
    let client_cfg = ConnectionConfig {
        send_buffer_pkts: 32,
        ..msg_cfg()
    };
    let (mut net, c, _s) = connected(22, 10, client_cfg, msg_cfg());
    let now = net.now;
    let mut conn = net.nodes[CLIENT].ep.connection_mut(c).unwrap();
    let p = conn.payload_size();
    assert_eq!(
        conn.send_msg(now, &vec![7u8; 32 * p + 1], None, true),
        Err(Error::MessageTooLarge)
    );
    assert_eq!(
        conn.send_msg(
            now,
            &vec![7u8; 100 * p],
            Some(Duration::from_secs(1)),
            false
        ),
        Err(Error::MessageTooLarge)
    );
    assert_eq!(
        conn.send_buffer_pkts(),
        0,
        "a refused message queues nothing"
    );
    assert!(matches!(
        conn.send_msg(now, &[], None, true),
        Err(Error::InvalidArgument(_))
    ));
    conn.send_msg(now, &vec![7u8; 32 * p], None, true).unwrap();
    assert_eq!(conn.send_buffer_pkts(), 32);
    // The buffer is now full: another message must wait, not fail.
    assert_eq!(conn.send_msg(now, &[1], None, true), Err(Error::WouldBlock));
    // Stream calls on a message socket are refused.
    assert_eq!(conn.send(now, &[1]), Err(Error::WrongSocketKind));
    assert_eq!(conn.recv(&mut [0u8; 4]), Err(Error::WrongSocketKind));
}

/// With 5 % loss, duplication and reordering, in-order messages of 8 B .. 5 packets arrive
/// complete, exactly once and in sending order.
#[test]
fn in_order_messages_survive_loss() {
    for seed in 30..33 {
        let (mut net, c, s) = connected(seed, 30, msg_cfg(), msg_cfg());
        net.impair = Impairment {
            loss: 0.05,
            duplicate: 0.02,
            jitter_us: 3_000,
        };
        let p = 1456;
        let n = 300u32;
        let msgs: Vec<Outgoing> = (0..n)
            .map(|i| reliable(message(i, 8 + (i as usize * 977) % (5 * p))))
            .collect();
        let got = transfer(&mut net, c, s, msgs, n as usize, 120.0);
        let ids: Vec<u32> = got.iter().map(|(m, _)| identify(m)).collect();
        assert_eq!(ids, (0..n).collect::<Vec<_>>(), "seed {seed}");
        assert!(client_stats(&mut net, c).pkt_retrans_total > 0);
    }
}

/// Reliable messages (no TTL) are never given up on, even at 10 % loss: every one arrives
/// intact and the sender drops nothing.
#[test]
fn reliable_messages_are_never_lost_at_ten_percent_loss() {
    let (mut net, c, s) = connected(40, 40, msg_cfg(), msg_cfg());
    net.impair = Impairment {
        loss: 0.10,
        duplicate: 0.0,
        jitter_us: 1_000,
    };
    let n = 400u32;
    let msgs: Vec<Outgoing> = (0..n)
        .map(|i| reliable(message(i, 8 + (i as usize * 7919) % 5000)))
        .collect();
    let got = transfer(&mut net, c, s, msgs, n as usize, 300.0);
    let ids: Vec<u32> = got.iter().map(|(m, _)| identify(m)).collect();
    assert_eq!(ids, (0..n).collect::<Vec<_>>());
    let st = client_stats(&mut net, c);
    assert_eq!(st.total.msg_snd_dropped, 0);
    assert!(st.pkt_retrans_total > 0);
}

/// Drops the first transmission of the first data packet with the given boundary.
fn drop_first_data_with(boundary: Boundary) -> common::Filter {
    let mut done = false;
    Box::new(move |d: &Datagram<'_>| {
        if done {
            return true;
        }
        if let Ok(Packet::Data(p)) = Packet::parse(d.data) {
            if p.header.message.boundary() == boundary {
                done = true;
                return false;
            }
        }
        true
    })
}

/// Message A (3 packets) loses its middle packet; message B (1 packet) follows. Returns the
/// ids in reading order.
fn two_messages_with_a_hole(seed: u64, in_order: bool) -> Vec<u32> {
    let (mut net, c, s) = connected(seed, 40, msg_cfg(), msg_cfg());
    net.filter = Some(drop_first_data_with(Boundary::Middle));
    let msgs = vec![
        Outgoing {
            data: message(1, 3 * 1456),
            ttl: None,
            in_order,
        },
        Outgoing {
            data: message(2, 500),
            ttl: None,
            in_order,
        },
    ];
    let got = transfer(&mut net, c, s, msgs, 2, 10.0);
    assert_eq!(server_stats(&mut net, s).pkt_rcv_loss_total, 1);
    got.iter().map(|(m, _)| identify(m)).collect()
}

/// Out-of-order messages (`in_order = false`): a later complete message is read before an
/// earlier one still missing a packet; the earlier one still arrives intact afterwards. With
/// `in_order = true` the same traffic is delivered in sending order.
#[test]
fn out_of_order_message_overtakes_an_incomplete_one() {
    assert_eq!(two_messages_with_a_hole(50, false), vec![2, 1]);
    assert_eq!(two_messages_with_a_hole(50, true), vec![1, 2]);
}

/// What the wire showed: message number of each data packet's message → our message id, and
/// the drop requests (message number, time sent).
#[derive(Default)]
struct WireLog {
    msg_ids: HashMap<u32, u32>,
    drops: Vec<(u32, Instant)>,
    data_seqs: Vec<u32>,
}

fn wire_logger(log: Rc<RefCell<WireLog>>, from: std::net::SocketAddr) -> common::Filter {
    Box::new(move |d: &Datagram<'_>| {
        if d.from != from {
            return true;
        }
        let mut log = log.borrow_mut();
        match Packet::parse(d.data) {
            Ok(Packet::Data(p)) => {
                log.data_seqs.push(p.header.seq.get());
                if p.header.message.boundary().starts_message() && p.payload.len() >= 4 {
                    let id = u32::from_le_bytes(p.payload[..4].try_into().unwrap());
                    log.msg_ids.insert(p.header.message.msg().get(), id);
                }
            }
            Ok(Packet::Control(cp)) => {
                if let Control::DropRequest(dr) = cp.control {
                    log.drops.push((dr.msg.get(), d.now));
                }
            }
            Err(e) => panic!("engine sent a malformed datagram: {e:?}"),
        }
        true
    })
}

/// TTL on a lossy path: messages whose packets are lost and whose TTL expires are dropped by
/// the sender (drop requests on the wire, `msg_snd_dropped` > 0). The receiver never delivers
/// a message after the drop request for it arrived, delivers no message twice, keeps the
/// sending order, never hands out a wrong byte, and messages sent afterwards without TTL all
/// arrive.
#[test]
fn expired_messages_are_dropped_and_the_rest_arrives_intact() {
    const OWD_US: u64 = 20_000;
    let (mut net, c, s) = connected(60, OWD_US / 500, msg_cfg(), msg_cfg());
    let log = Rc::new(RefCell::new(WireLog::default()));
    net.filter = Some(wire_logger(log.clone(), net.addr(CLIENT)));
    // Drop requests as they reach the receiver: one lost on the way proves nothing about when
    // the receiver may deliver (it then completes the message if all its packets came).
    let arrived_drops: Rc<RefCell<Vec<(u32, Instant)>>> = Rc::default();
    let arrived = arrived_drops.clone();
    let server_addr = net.addr(SERVER);
    net.on_arrival = Some(Box::new(move |d| {
        if d.to != server_addr {
            return;
        }
        if let Ok(Packet::Control(cp)) = Packet::parse(d.data) {
            if let Control::DropRequest(dr) = cp.control {
                arrived.borrow_mut().push((dr.msg.get(), d.now));
            }
        }
    }));
    net.impair = Impairment {
        loss: 0.10,
        duplicate: 0.0,
        jitter_us: 0,
    };
    let n_ttl = 300u32;
    let n_after = 50u32;
    let mut queue: VecDeque<Outgoing> = (0..n_ttl)
        .map(|i| Outgoing {
            data: message(i, 2 * 1456 + 100),
            ttl: Some(Duration::from_millis(30)),
            in_order: true,
        })
        .collect();
    let mut read_at: BTreeMap<u32, Instant> = BTreeMap::new();
    let mut order = Vec::new();
    let mut buf = vec![0u8; 10_000];
    // Phase 1: paced so the TTL counts from about the time of sending.
    let mut next_send = net.now;
    let ok = net.run_until(120.0, |net| {
        if net.now >= next_send {
            if let Some(m) = queue.pop_front() {
                let now = net.now;
                net.nodes[CLIENT]
                    .ep
                    .connection_mut(c)
                    .unwrap()
                    .send_msg(now, &m.data, m.ttl, m.in_order)
                    .unwrap();
                next_send = now.plus_micros(20_000);
            }
        }
        for (m, r) in drain(net, SERVER, s, &mut buf) {
            assert_eq!(r.copied, r.msg_len);
            let id = identify(&m);
            assert!(
                read_at.insert(id, net.now).is_none(),
                "{id} delivered twice"
            );
            order.push(id);
        }
        queue.is_empty() && net.nodes[CLIENT].ep.connection(c).unwrap().all_acked()
    });
    assert!(ok, "TTL phase did not finish");
    // Phase 2: reliable messages all arrive.
    let after: Vec<Outgoing> = (n_ttl..n_ttl + n_after)
        .map(|i| reliable(message(i, 3000)))
        .collect();
    net.impair.loss = 0.05;
    let got = transfer(&mut net, c, s, after, n_after as usize, 60.0);
    let late: Vec<u32> = got.iter().map(|(m, _)| identify(m)).collect();
    // Messages of phase 1 still readable come first; then all of phase 2, in order.
    let (p1, p2): (Vec<u32>, Vec<u32>) = late.into_iter().partition(|&id| id < n_ttl);
    for id in &p1 {
        assert!(
            !arrived_drops
                .borrow()
                .iter()
                .any(|(m, _)| log.borrow().msg_ids[m] == *id),
            "message {id} read after its drop request was processed"
        );
    }
    order.extend(p1);
    assert_eq!(p2, (n_ttl..n_ttl + n_after).collect::<Vec<_>>());
    assert!(order.windows(2).all(|w| w[0] < w[1]), "order: {order:?}");

    let st = client_stats(&mut net, c);
    let log = log.borrow();
    assert!(st.total.msg_snd_dropped > 0, "no message was dropped");
    assert!(
        log.drops.len() >= 5,
        "{} drop requests on the wire",
        log.drops.len()
    );
    let delivered = order.len() as u64;
    assert!(
        delivered < u64::from(n_ttl),
        "every TTL message arrived: nothing tested"
    );
    // Every message is either delivered or dropped by the sender (or both, when the receiver
    // read it before the sender learnt so).
    assert!(
        delivered + st.total.msg_snd_dropped >= u64::from(n_ttl),
        "{delivered} delivered + {} dropped < {n_ttl}",
        st.total.msg_snd_dropped
    );
    assert!(
        !arrived_drops.borrow().is_empty(),
        "no drop request reached the receiver"
    );
    for &(msgno, arrived_at) in arrived_drops.borrow().iter() {
        let id = log.msg_ids[&msgno];
        if let Some(&t) = read_at.get(&id) {
            // Equal times are allowed: datagrams arriving at the same simulated instant are
            // processed one by one with reads in between, and a message read at the instant
            // its drop request arrives was read before that request was processed (afterwards
            // its packets are marked dropped and it is no longer readable).
            assert!(
                t <= arrived_at,
                "message {id} delivered at {t:?} after its drop request arrived at {arrived_at:?}"
            );
        }
    }
}

/// Messages whose TTL expires while they wait behind other data are discarded before any of
/// their packets is sent: they get no sequence numbers, so no drop request is needed and the
/// receiver sees no gap.
#[test]
fn message_expired_before_sending_is_discarded_without_sequence_numbers() {
    let client_cfg = ConnectionConfig {
        // 1 ms per 1500-byte packet: the first message keeps the sender busy for ~100 ms.
        max_bandwidth: Some(1_500_000),
        ..msg_cfg()
    };
    let (mut net, c, s) = connected(70, 20, client_cfg, msg_cfg());
    let log = Rc::new(RefCell::new(WireLog::default()));
    net.filter = Some(wire_logger(log.clone(), net.addr(CLIENT)));
    let p = 1456;
    let mut msgs = vec![reliable(message(0, 100 * p))];
    for i in 1..=10 {
        msgs.push(Outgoing {
            data: message(i, if i % 2 == 0 { 2 * p + 9 } else { 40 }),
            ttl: Some(Duration::from_millis(5)),
            in_order: i % 3 == 0,
        });
    }
    msgs.push(reliable(message(11, 3 * p)));
    let got = transfer(&mut net, c, s, msgs, 2, 30.0);
    let ids: Vec<u32> = got.iter().map(|(m, _)| identify(m)).collect();
    assert_eq!(ids, vec![0, 11]);
    net.run_until(1.0, |_| false);
    let mut buf = vec![0u8; 10];
    assert!(drain(&mut net, SERVER, s, &mut buf).is_empty());

    let st = client_stats(&mut net, c);
    assert_eq!(st.total.msg_snd_dropped, 10);
    let log = log.borrow();
    assert!(log.drops.is_empty(), "drop requests sent: {:?}", log.drops);
    // Sequence numbers are contiguous: exactly the 103 packets of messages 0 and 11.
    let mut seqs = log.data_seqs.clone();
    seqs.sort_unstable();
    seqs.dedup();
    assert_eq!(seqs.len(), 103);
    assert_eq!(seqs[102] - seqs[0], 102);
    assert_eq!(server_stats(&mut net, s).pkt_rcv_loss_total, 0);
}

/// A receive buffer smaller than the message truncates it (`copied < msg_len`); the rest of
/// that message is discarded and the next message is read whole and intact.
#[test]
fn small_receive_buffer_truncates_the_message() {
    let (mut net, c, s) = connected(80, 10, msg_cfg(), msg_cfg());
    let msgs = vec![
        reliable(message(1, 5000)),
        reliable(message(2, 700)),
        reliable(message(3, 5000)),
    ];
    let mut queue: VecDeque<Outgoing> = msgs.into();
    let mut small = vec![0u8; 1000];
    let mut got = Vec::new();
    let ok = net.run_until(10.0, |net| {
        pump(net, CLIENT, c, &mut queue);
        got.extend(drain(net, SERVER, s, &mut small));
        got.len() == 3
    });
    assert!(ok);
    let full1 = message(1, 5000);
    assert_eq!((got[0].1.copied, got[0].1.msg_len), (1000, 5000));
    assert!(!got[0].1.partial);
    assert!(got[0].0 == full1[..1000]);
    assert_eq!((got[1].1.copied, got[1].1.msg_len), (700, 700));
    assert_eq!(identify(&got[1].0), 2);
    assert_eq!((got[2].1.copied, got[2].1.msg_len), (1000, 5000));
    assert!(got[2].0 == message(3, 5000)[..1000]);
}
