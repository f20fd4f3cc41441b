//! Fuzz target: an established connection between two endpoints driven by arbitrary
//! operations.
//!
//! A client and a listening server are connected through a tiny in-memory network (two FIFO
//! queues, one per direction). The input is then read as a sequence of operations: deliver or
//! drop the next queued datagram, let time pass, deliver a crafted packet (right destination
//! socket ID, right source address) or arbitrary bytes to either side, send or receive
//! application data, close or abort. Checks:
//!
//! * nothing panics (the engine's debug assertions are on in the fuzz build);
//! * every datagram the engines emit parses;
//! * state stays bounded: connections per endpoint, send buffer, bytes held in the receive
//!   buffer, datagrams emitted per step, timer wake-ups per time step;
//! * **delivered data is what was sent**: every application write carries a position-dependent
//!   pattern (stream) or a numbered, patterned message; what the other side reads must be
//!   exactly that pattern at that position (so no byte is lost, duplicated, reordered or
//!   invented inside the stream), and no message is delivered twice or altered. The check is
//!   dropped for a side once the input forges a data packet, a message drop request or
//!   arbitrary bytes towards it: UDT does not authenticate packets, so a forged data packet
//!   at the right sequence number is legitimately taken as data.
#![no_main]

use std::collections::VecDeque;
use std::net::SocketAddr;

use libfuzzer_sys::fuzz_target;
use udt_fuzz::Input;
use udt_proto::wire::Packet;
use udt_proto::{
    ConnectionConfig, ConnectionState, Endpoint, EndpointConfig, Instant, SocketId, SocketKind,
};

const RCVBUF: u32 = 64;
const SNDBUF: u32 = 64;
/// Flight flag size: the most a side keeps in flight, which bounds how far its send buffer
/// grows past `SNDBUF` (packets in flight beyond half of it do not count against it).
const FLIGHT: u32 = 256;
const BACKLOG: usize = 2;
/// Datagrams kept in flight per direction; older ones are dropped.
const MAX_IN_FLIGHT: usize = 4096;
/// Datagrams one endpoint may emit at one instant (a full control queue plus windows).
const MAX_BURST: usize = 4096 + 4 * (RCVBUF + SNDBUF + FLIGHT) as usize + 64;

struct Side {
    addr: SocketAddr,
    ep: Endpoint,
    conn: SocketId,
    read: u64,
    /// The application closed or aborted the connection.
    closed: bool,
    /// Bytes (stream) or messages (message mode) this side's application wrote so far.
    written: u64,
    /// Message numbers (of our numbering, see [`message`]) this side has read.
    seen: std::collections::HashSet<u64>,
    /// Forged data, drop requests or arbitrary bytes reached this side: what it reads is no
    /// longer checked against what the other side wrote.
    tainted: bool,
}

/// Byte `i` of a stream.
fn pattern(i: u64) -> u8 {
    ((i ^ (i >> 8) ^ (i >> 16)).wrapping_mul(131) >> 1) as u8
}

/// Message `n` of `len` bytes: its number, then a pattern of both.
fn message(n: u64, len: usize) -> Vec<u8> {
    let mut m = n.to_le_bytes().to_vec();
    m.extend((8..len.max(8) as u64).map(|i| pattern(i ^ n.wrapping_mul(0x9E37))));
    m.truncate(len.max(8));
    m
}

struct World {
    now: Instant,
    kind: SocketKind,
    sides: [Side; 2],
    /// Datagrams on their way to side 0 and side 1.
    wire: [VecDeque<Vec<u8>>; 2],
    buf: Vec<u8>,
}

fn config(kind: SocketKind) -> ConnectionConfig {
    ConnectionConfig {
        kind,
        recv_buffer_pkts: RCVBUF,
        send_buffer_pkts: SNDBUF,
        flight_flag_size: FLIGHT,
        linger: Some(core::time::Duration::from_secs(2)),
        ..Default::default()
    }
}

impl World {
    /// A connected client (side 0) and server (side 1).
    fn connected(kind: SocketKind, seed: u64) -> World {
        let now = Instant::from_micros(1_000_000);
        let mk = |addr: &str, seed: u64| Side {
            addr: addr.parse().unwrap(),
            ep: Endpoint::new(EndpointConfig {
                seed,
                ..Default::default()
            }),
            conn: SocketId(0),
            read: 0,
            closed: false,
            written: 0,
            seen: Default::default(),
            tainted: false,
        };
        let mut w = World {
            now,
            kind,
            sides: [
                mk("10.0.0.1:5000", seed),
                mk("10.0.0.2:9000", seed ^ 0xFFFF),
            ],
            wire: [VecDeque::new(), VecDeque::new()],
            buf: vec![0u8; 65_536],
        };
        w.sides[1].ep.listen(now, config(kind), BACKLOG).unwrap();
        let server = w.sides[1].addr;
        w.sides[0].conn = w.sides[0].ep.connect(now, server, config(kind)).unwrap();
        for _ in 0..100 {
            w.flush();
            w.deliver_all();
            if w.sides[1].conn.0 == 0 {
                if let Some(s) = w.sides[1].ep.accept() {
                    w.sides[1].conn = s;
                }
            }
            let up = w.sides[0]
                .ep
                .connection(w.sides[0].conn)
                .is_some_and(|c| c.state() == ConnectionState::Connected);
            if up && w.sides[1].conn.0 != 0 {
                return w;
            }
            w.advance(1_000);
        }
        panic!("handshake did not complete");
    }

    /// Collects what both endpoints want to send now.
    fn flush(&mut self) {
        for i in 0..2 {
            let mut n = 0;
            while let Some(t) = self.sides[i].ep.poll_transmit(self.now, &mut self.buf) {
                n += 1;
                assert!(
                    n <= MAX_BURST,
                    "endpoint {i} emitted more than {MAX_BURST} datagrams"
                );
                let bytes = &self.buf[..t.len];
                if let Err(e) = Packet::parse(bytes) {
                    panic!("endpoint {i} emitted a malformed datagram: {e:?}");
                }
                let other = 1 - i;
                if t.destination == self.sides[other].addr {
                    let q = &mut self.wire[other];
                    if q.len() >= MAX_IN_FLIGHT {
                        q.pop_front();
                    }
                    q.push_back(bytes.to_vec());
                }
            }
        }
    }

    fn deliver(&mut self, to: usize) {
        if let Some(d) = self.wire[to].pop_front() {
            let from = self.sides[1 - to].addr;
            self.sides[to].ep.handle_datagram(self.now, from, &d);
        }
    }

    fn deliver_all(&mut self) {
        for _ in 0..64 {
            if self.wire[0].is_empty() && self.wire[1].is_empty() {
                return;
            }
            for to in 0..2 {
                while !self.wire[to].is_empty() {
                    self.deliver(to);
                }
            }
            self.flush();
        }
    }

    /// Lets `us` microseconds pass, running every timer on the way.
    fn advance(&mut self, us: u64) {
        let target = self.now.plus_micros(us);
        let mut wakes = 0u32;
        loop {
            let next = self
                .sides
                .iter_mut()
                .filter_map(|s| s.ep.poll_timeout())
                .min();
            match next {
                Some(t) if t <= target => {
                    self.now = self.now.max(t);
                    for s in &mut self.sides {
                        s.ep.handle_timeout(self.now);
                    }
                    self.flush();
                    wakes += 1;
                    assert!(wakes < 1_000_000, "timers spin at {:?}", self.now);
                }
                _ => break,
            }
        }
        self.now = target;
        for s in &mut self.sides {
            s.ep.handle_timeout(self.now);
        }
        self.flush();
    }

    /// Hands `bytes` to side `to` as if sent from `from` and collects the replies. One packet
    /// may add at most the packets in flight to the sender's loss list.
    fn inject(&mut self, to: usize, from: SocketAddr, bytes: &[u8]) {
        let now = self.now;
        let s = &mut self.sides[to];
        let before = s.ep.connection_mut(s.conn).map(|mut c| c.stats(now, false));
        s.ep.handle_datagram(now, from, bytes);
        let after = s.ep.connection_mut(s.conn).map(|mut c| c.stats(now, false));
        if let (Some(b), Some(a)) = (before, after) {
            let added = a.total.pkt_snd_loss - b.total.pkt_snd_loss;
            assert!(
                added <= u64::from(b.pkt_flight_size),
                "one packet added {added} sequence numbers to the loss list with {} in flight",
                b.pkt_flight_size
            );
        }
        self.flush();
    }

    fn check(&mut self) {
        for s in &mut self.sides {
            assert!(s.ep.connection_count() <= 1 + BACKLOG);
            assert!(s.ep.pending_accepts() <= BACKLOG);
            let now = self.now;
            let kind = self.kind;
            let read = s.read;
            if let Some(mut c) = s.ep.connection_mut(s.conn) {
                assert!(c.send_buffer_pkts() <= (SNDBUF + FLIGHT) as usize);
                let st = c.stats(now, false);
                if kind == SocketKind::Stream {
                    let held = st.total.bytes_recv - read;
                    let cap = u64::from(RCVBUF - 1) * c.payload_size() as u64;
                    assert!(held <= cap, "receive buffer holds {held} bytes > {cap}");
                }
            }
        }
    }
}

/// A control packet for `dst` with the given type, extended type, info word and body.
fn control(ty: u16, ext: u16, info: u32, dst: SocketId, body: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(16 + body.len());
    v.extend_from_slice(
        &(0x8000_0000 | (u32::from(ty & 0x7FFF) << 16) | u32::from(ext)).to_be_bytes(),
    );
    v.extend_from_slice(&info.to_be_bytes());
    v.extend_from_slice(&0u32.to_be_bytes());
    v.extend_from_slice(&dst.0.to_be_bytes());
    v.extend_from_slice(body);
    v
}

fuzz_target!(|data: &[u8]| {
    let mut input = Input::new(data);
    let head = input.u8();
    let kind = if head & 1 == 0 {
        SocketKind::Stream
    } else {
        SocketKind::Message
    };
    let mut w = World::connected(kind, u64::from(head >> 1));
    // Sequence numbers seen on the wire towards each side, to aim crafted packets.
    let mut ops = 0;
    while !input.is_empty() && ops < 2_000 {
        ops += 1;
        let op = input.u8();
        let side = usize::from(op >> 7);
        let peer = w.sides[1 - side].addr;
        let dst = w.sides[side].conn;
        match op & 0x0F {
            0 | 1 => w.deliver(side),
            2 => {
                w.wire[side].pop_front();
            }
            3 => w.deliver_all(),
            4 => {
                let us = u64::from(input.u16()) * 16;
                w.advance(us);
            }
            5 => {
                // A control packet of any standard type (or user-defined / unknown).
                let ty = match input.u8() % 11 {
                    9 => 0x7FFF,
                    10 => u16::from(input.u8()) + 9,
                    t => u16::from(t),
                };
                let info = input.u32();
                let n = usize::from(input.u8() % 64);
                let body = input.bytes(n);
                if ty == 7 {
                    w.sides[side].tainted = true;
                }
                w.inject(side, peer, &control(ty, 0, info, dst, body));
            }
            6 => {
                // A sequence-number-carrying control packet aimed near the live numbers.
                let base = w.wire[side]
                    .back()
                    .and_then(|d| Packet::parse(d).ok())
                    .and_then(|p| match p {
                        Packet::Data(d) => Some(d.header.seq.get()),
                        _ => None,
                    })
                    .unwrap_or(0);
                let a = base.wrapping_add(i32::from(input.u16() as i16) as u32) & 0x7FFF_FFFF;
                // Also aim at the threshold distance from the live numbers.
                let a = if op & 0x10 != 0 && input.u8() & 1 == 1 {
                    a.wrapping_add(0x3FFF_FF80 + u32::from(input.u8())) & 0x7FFF_FFFF
                } else {
                    a
                };
                // Small spans, spans around 2^30 (where wrap-aware comparisons stop being
                // transitive) or anything.
                let span = match (op >> 5) & 3 {
                    0 | 1 => u32::from(input.u8()),
                    2 => 0x3FFF_FF80 + u32::from(input.u8()),
                    _ => input.u32(),
                };
                let b = a.wrapping_add(span) & 0x7FFF_FFFF;
                let pkt = match input.u8() % 4 {
                    0 => control(
                        2,
                        0,
                        input.u32(),
                        dst,
                        &[a, 10_000, 1_000, 64, 100, 100]
                            .map(u32::to_be_bytes)
                            .concat(),
                    ),
                    1 => control(2, 0, 0, dst, &a.to_be_bytes()),
                    2 => control(
                        3,
                        0,
                        0,
                        dst,
                        &[a | 0x8000_0000, b].map(u32::to_be_bytes).concat(),
                    ),
                    _ => {
                        w.sides[side].tainted = true;
                        control(
                            7,
                            0,
                            input.u32() & 0x1FFF_FFFF,
                            dst,
                            &[a, b].map(u32::to_be_bytes).concat(),
                        )
                    }
                };
                w.inject(side, peer, &pkt);
            }
            7 => {
                // A data packet near the live sequence numbers.
                let base = w.wire[side]
                    .front()
                    .and_then(|d| Packet::parse(d).ok())
                    .and_then(|p| match p {
                        Packet::Data(d) => Some(d.header.seq.get()),
                        _ => None,
                    })
                    .unwrap_or(0);
                let seq = base.wrapping_add(i32::from(input.u8() as i8) as u32) & 0x7FFF_FFFF;
                let word1 = input.u32();
                let len = usize::from(input.u16() % 1600);
                w.sides[side].tainted = true;
                let mut pkt = control(0, 0, word1, dst, &vec![0xA5; len]);
                pkt[..4].copy_from_slice(&seq.to_be_bytes());
                w.inject(side, peer, &pkt);
            }
            8 => {
                // Arbitrary bytes, with the destination patched half of the time.
                let n = usize::from(input.u8());
                let mut bytes = input.bytes(n).to_vec();
                w.sides[side].tainted = true;
                if op & 0x40 != 0 && bytes.len() >= 16 {
                    bytes[12..16].copy_from_slice(&dst.0.to_be_bytes());
                }
                let from = if op & 0x20 != 0 {
                    "10.66.0.1:1".parse().unwrap()
                } else {
                    peer
                };
                w.inject(side, from, &bytes);
            }
            9 => {
                let len = usize::from(input.u16());
                let now = w.now;
                let s = &mut w.sides[side];
                if let Some(mut c) = s.ep.connection_mut(s.conn) {
                    match kind {
                        SocketKind::Stream => {
                            let data: Vec<u8> =
                                (s.written..s.written + len as u64).map(pattern).collect();
                            if let Ok(n) = c.send(now, &data) {
                                s.written += n as u64;
                            }
                        }
                        SocketKind::Message => {
                            let ttl = (op & 0x40 != 0)
                                .then(|| core::time::Duration::from_millis(u64::from(op & 0x3F)));
                            let m = message(s.written, len);
                            if c.send_msg(now, &m, ttl, op & 0x20 != 0).is_ok() {
                                s.written += 1;
                            }
                        }
                    }
                }
                w.flush();
            }
            10 | 11 => {
                let n = usize::from(input.u16()) + 1;
                let mut buf = vec![0u8; n];
                let sent_by_peer = w.sides[1 - side].written;
                let s = &mut w.sides[side];
                if let Some(mut c) = s.ep.connection_mut(s.conn) {
                    match kind {
                        SocketKind::Stream => {
                            while let Ok(k) = c.recv(&mut buf) {
                                if !s.tainted {
                                    for (j, &b) in buf[..k].iter().enumerate() {
                                        let at = s.read + j as u64;
                                        assert!(at < sent_by_peer, "read byte {at} never written");
                                        assert_eq!(b, pattern(at), "stream byte {at} differs");
                                    }
                                }
                                s.read += k as u64;
                            }
                        }
                        SocketKind::Message => {
                            while let Ok(r) = c.recv_msg(&mut buf) {
                                if s.tainted || r.copied < 8 {
                                    continue;
                                }
                                let no = u64::from_le_bytes(buf[..8].try_into().expect("8"));
                                assert!(no < sent_by_peer, "message {no} never written");
                                assert!(s.seen.insert(no), "message {no} delivered twice");
                                let want = message(no, r.msg_len);
                                assert_eq!(r.msg_len, want.len(), "message {no} length");
                                assert_eq!(&buf[..r.copied], &want[..r.copied], "message {no}");
                            }
                        }
                    }
                }
                w.flush();
            }
            12 if op & 0x70 == 0x70 => {
                let now = w.now;
                let s = &mut w.sides[side];
                if !s.closed {
                    s.closed = true;
                    if op & 0x08 != 0 {
                        s.ep.abort(now, s.conn);
                    } else {
                        s.ep.close(now, s.conn);
                    }
                }
                w.flush();
            }
            _ => {
                // Time passes a little, as between packets.
                w.advance(u64::from(input.u8()) * 100);
            }
        }
        w.check();
    }
    // Whatever happened, the pair can run on for a while.
    w.deliver_all();
    w.advance(10_000_000);
    w.check();
});
