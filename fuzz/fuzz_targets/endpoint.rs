//! Fuzz target: the endpoint and the handshake (`udt_proto::Endpoint`), with a listener, a
//! client connecting to it, and attackers.
//!
//! The listener L and the client C talk through queues the input controls (deliver, drop,
//! replay, corrupt); attackers at other addresses, or spoofing C's, send L handshakes of
//! every request type with cookies that are right (learnt from L's replies to them), stale,
//! someone else's or made up, and arbitrary datagrams; forged handshakes reach C from L's
//! address or elsewhere; time jumps across cookie periods; C opens and closes more
//! connections; L accepts. Checks:
//!
//! * nothing panics, every datagram either endpoint emits parses;
//! * **no state before a valid cookie**: L's connection count grows only on a handshake with
//!   a body of at least 48 bytes (a peer-hint tail may follow), not a first-phase request,
//!   whose cookie is one L would accept from that address at that time (this period's or the
//!   previous one's), and by one connection at most. What L would accept is asked of a
//!   *shadow* listener with L's seed and start time, so the check does not trust L's own
//!   bookkeeping; the accept queue stays within the backlog;
//! * **no amplification**: what L sends back to the source of a datagram addressed to
//!   socket 0, right away, is no larger than that datagram;
//! * **real clients still get in**: after whatever came before, a new client on a clean path
//!   connects and L accepts it.
#![no_main]

use std::collections::VecDeque;
use std::net::SocketAddr;

use libfuzzer_sys::fuzz_target;
use udt_fuzz::Input;
use udt_proto::wire::{
    Control, ControlPacket, Handshake, Packet, PeerAddr, RequestType, SocketId, SocketType,
    HANDSHAKE_LEN, HEADER_LEN, UDT_VERSION,
};
use udt_proto::{ConnectionConfig, ConnectionState, Endpoint, EndpointConfig, Instant, SocketKind};

const BACKLOG: usize = 3;
/// Datagrams kept in flight per direction; older ones are dropped.
const MAX_IN_FLIGHT: usize = 256;
/// Cookie period of the listener, µs (endpoint/cookie.rs).
const COOKIE_PERIOD_US: u64 = 60_000_000;
/// Address of the client of the final check.
const FRESH: SocketAddr = SocketAddr::V4(std::net::SocketAddrV4::new(
    std::net::Ipv4Addr::new(10, 0, 0, 9),
    7000,
));

fn addr(s: &str) -> SocketAddr {
    s.parse().expect("valid address")
}

fn config() -> ConnectionConfig {
    ConnectionConfig {
        kind: SocketKind::Stream,
        recv_buffer_pkts: 64,
        send_buffer_pkts: 64,
        linger: Some(core::time::Duration::from_millis(500)),
        connect_timeout: core::time::Duration::from_secs(3),
        ..Default::default()
    }
}

/// A handshake packet to socket `dst`.
fn handshake(dst: SocketId, hs: Handshake) -> Vec<u8> {
    let p = ControlPacket::new(dst, Control::Handshake(hs));
    let mut buf = vec![0u8; p.wire_len()];
    p.emit(&mut buf).expect("sized by wire_len");
    buf
}

struct World {
    now: Instant,
    started: Instant,
    listener_addr: SocketAddr,
    client_addr: SocketAddr,
    attackers: [SocketAddr; 4],
    l: Endpoint,
    /// L's twin, asked which cookies L accepts; it never sees anything else.
    shadow: Endpoint,
    c: Endpoint,
    client_conns: Vec<SocketId>,
    /// Datagrams on their way to L (with their source) and to C.
    to_l: VecDeque<(SocketAddr, Vec<u8>)>,
    to_c: VecDeque<Vec<u8>>,
    /// Datagrams on their way to the client of the final check.
    to_fresh: VecDeque<Vec<u8>>,
    /// The last cookie L sent to each attacker.
    cookies: [u32; 4],
    buf: Vec<u8>,
}

impl World {
    fn new(seed: u64) -> World {
        let now = Instant::from_micros(5_000_000);
        let mut l = Endpoint::new(EndpointConfig {
            seed,
            ..Default::default()
        });
        let mut shadow = Endpoint::new(EndpointConfig {
            seed,
            ..Default::default()
        });
        l.listen(now, config(), BACKLOG).expect("listen");
        shadow.listen(now, config(), BACKLOG).expect("listen");
        let c = Endpoint::new(EndpointConfig {
            seed: seed ^ 0x5555,
            ..Default::default()
        });
        World {
            now,
            started: now,
            listener_addr: addr("10.0.0.2:9000"),
            client_addr: addr("10.0.0.1:5000"),
            attackers: [
                addr("10.66.0.1:1000"),
                addr("10.66.0.2:1001"),
                addr("[2001:db8::66]:1002"),
                addr("10.66.0.4:9000"),
            ],
            l,
            shadow,
            c,
            client_conns: Vec::new(),
            to_l: VecDeque::new(),
            to_c: VecDeque::new(),
            to_fresh: VecDeque::new(),
            cookies: [0; 4],
            buf: vec![0u8; 65_536],
        }
    }

    /// Moves what both endpoints want to send onto the queues; returns the bytes L sent to
    /// `watch`.
    fn flush(&mut self, watch: Option<SocketAddr>) -> usize {
        let mut to_watch = 0;
        while let Some(t) = self.l.poll_transmit(self.now, &mut self.buf) {
            let bytes = &self.buf[..t.len];
            let p = Packet::parse(bytes)
                .unwrap_or_else(|e| panic!("the listener emitted a malformed datagram: {e:?}"));
            if Some(t.destination) == watch {
                to_watch += t.len;
            }
            if t.destination == self.client_addr {
                push(&mut self.to_c, bytes.to_vec());
            } else if t.destination == FRESH {
                push(&mut self.to_fresh, bytes.to_vec());
            } else if let Some(i) = self.attackers.iter().position(|a| *a == t.destination) {
                if let Packet::Control(ControlPacket {
                    control: Control::Handshake(hs),
                    ..
                }) = p
                {
                    self.cookies[i] = hs.cookie;
                }
            }
        }
        while let Some(t) = self.c.poll_transmit(self.now, &mut self.buf) {
            let bytes = &self.buf[..t.len];
            if let Err(e) = Packet::parse(bytes) {
                panic!("the client emitted a malformed datagram: {e:?}");
            }
            if t.destination == self.listener_addr {
                push(&mut self.to_l, (self.client_addr, bytes.to_vec()));
            }
        }
        to_watch
    }

    /// The cookie L would give `from` at `at` (asked of the shadow listener).
    fn cookie_for(&mut self, from: SocketAddr, at: Instant) -> u32 {
        let hs = Handshake {
            version: UDT_VERSION,
            socket_type: SocketType::STREAM,
            isn: udt_proto::SeqNo::from_masked(1),
            mss: 1500,
            flow_window: 8192,
            request: RequestType::REQUEST,
            socket_id: SocketId(77),
            cookie: 0,
            peer_addr: PeerAddr([0; 16]),
        };
        self.shadow
            .handle_datagram(at, from, &handshake(SocketId::REQUEST, hs));
        let t = self
            .shadow
            .poll_transmit(at, &mut self.buf)
            .expect("the shadow listener answers a request");
        assert!(self.shadow.poll_transmit(at, &mut self.buf).is_none());
        match Packet::parse(&self.buf[..t.len]) {
            Ok(Packet::Control(ControlPacket {
                control: Control::Handshake(h),
                ..
            })) => h.cookie,
            other => panic!("the shadow listener answered {other:?}"),
        }
    }

    /// Hands one datagram to L and checks what it did with it.
    fn deliver_to_l(&mut self, from: SocketAddr, bytes: &[u8]) {
        let before = self.l.connection_count();
        self.l.handle_datagram(self.now, from, bytes);
        let after = self.l.connection_count();
        if after > before {
            assert_eq!(
                after,
                before + 1,
                "one datagram created {} connections",
                after - before
            );
            let hs = match Packet::parse(bytes) {
                Ok(Packet::Control(c)) => match c.control {
                    // A handshake body, possibly followed by an extension tail (a peer hint).
                    Control::Handshake(hs) if c.body_len >= HANDSHAKE_LEN => hs,
                    other => panic!("{other:?} created a connection"),
                },
                other => panic!("{other:?} created a connection"),
            };
            assert_ne!(
                hs.request,
                RequestType::REQUEST,
                "a first-phase request created state"
            );
            let now = self.now;
            let mut valid = hs.cookie == self.cookie_for(from, now);
            if now.micros_since(self.started) >= COOKIE_PERIOD_US {
                let earlier = Instant::from_micros(now.as_micros() - COOKIE_PERIOD_US);
                valid |= hs.cookie == self.cookie_for(from, earlier);
            }
            assert!(
                valid,
                "a connection from {from} with cookie {:#x} L never issued",
                hs.cookie
            );
        }
        assert!(self.l.pending_accepts() <= BACKLOG);
        let dst = Packet::peek_destination(bytes);
        let sent = self.flush(Some(from));
        if dst == Some(SocketId::REQUEST) {
            assert!(
                sent <= bytes.len(),
                "{} bytes from {from} to socket 0 drew {sent} bytes",
                bytes.len()
            );
        }
    }

    fn advance(&mut self, us: u64) {
        let target = self.now.plus_micros(us);
        let mut wakes = 0u32;
        loop {
            let next = [self.l.poll_timeout(), self.c.poll_timeout()]
                .into_iter()
                .flatten()
                .min();
            match next {
                Some(t) if t <= target => {
                    self.now = self.now.max(t);
                    self.l.handle_timeout(self.now);
                    self.c.handle_timeout(self.now);
                    self.flush(None);
                    wakes += 1;
                    assert!(wakes < 1_000_000, "timers spin at {:?}", self.now);
                }
                _ => break,
            }
        }
        self.now = target;
        self.l.handle_timeout(self.now);
        self.c.handle_timeout(self.now);
        self.flush(None);
    }

    /// A new client on a clean path must get in.
    fn check_real_client_connects(&mut self) {
        while self.l.accept().is_some() {}
        let mut f = Endpoint::new(EndpointConfig {
            seed: 0xF4E5,
            ..Default::default()
        });
        let id = f
            .connect(self.now, self.listener_addr, config())
            .expect("connect");
        self.to_fresh.clear();
        let mut accepted = None;
        for _ in 0..300 {
            while let Some(t) = f.poll_transmit(self.now, &mut self.buf) {
                assert_eq!(t.destination, self.listener_addr);
                let d = self.buf[..t.len].to_vec();
                self.deliver_to_l(FRESH, &d);
            }
            while let Some(d) = self.to_fresh.pop_front() {
                f.handle_datagram(self.now, self.listener_addr, &d);
            }
            while let Some(s) = self.l.accept() {
                if self.l.connection(s).map(|c| c.peer_addr()) == Some(FRESH) {
                    accepted = Some(s);
                }
            }
            while f.poll_event().is_some() {}
            let up = f
                .connection(id)
                .is_some_and(|c| c.state() == ConnectionState::Connected);
            if up && accepted.is_some() {
                return;
            }
            self.now = self.now.plus_micros(10_000);
            f.handle_timeout(self.now);
            self.l.handle_timeout(self.now);
            self.c.handle_timeout(self.now);
            self.flush(None);
        }
        panic!(
            "a real client did not get in: client {:?}, accepted {accepted:?}",
            f.connection(id).map(|c| c.state())
        );
    }
}

fn push<T>(q: &mut VecDeque<T>, v: T) {
    if q.len() >= MAX_IN_FLIGHT {
        q.pop_front();
    }
    q.push_back(v);
}

/// A handshake from the input, with fields often right and sometimes anything.
fn hostile_handshake(input: &mut Input<'_>, cookie: u32) -> Handshake {
    let pick = input.u8();
    Handshake {
        version: if pick & 1 == 0 {
            UDT_VERSION
        } else {
            input.u32()
        },
        socket_type: match (pick >> 1) & 3 {
            0 | 1 => SocketType::STREAM,
            2 => SocketType::DGRAM,
            _ => SocketType(input.u32()),
        },
        isn: udt_proto::SeqNo::from_masked(input.u32()),
        mss: if pick & 8 == 0 { 1500 } else { input.u32() },
        flow_window: if pick & 16 == 0 { 8192 } else { input.u32() },
        request: match input.u8() % 8 {
            0 | 1 => RequestType::REQUEST,
            2 | 3 => RequestType::RESPONSE,
            4 => RequestType::RENDEZVOUS,
            5 => RequestType::RENDEZVOUS_CONNECTED,
            6 => RequestType::REJECT,
            _ => RequestType(input.u32() as i32),
        },
        socket_id: SocketId(if pick & 32 == 0 {
            1 + u32::from(input.u8() % 8)
        } else {
            input.u32()
        }),
        cookie,
        peer_addr: PeerAddr([0; 16]),
    }
}

fuzz_target!(|data: &[u8]| {
    let mut input = Input::new(data);
    let mut w = World::new(u64::from(input.u8()));
    let first =
        w.c.connect(w.now, w.listener_addr, config())
            .expect("connect");
    w.client_conns.push(first);
    w.flush(None);
    let mut ops = 0;
    while !input.is_empty() && ops < 1_000 {
        ops += 1;
        let op = input.u8();
        match op & 0x0F {
            0 | 1 => {
                if let Some((from, d)) = w.to_l.pop_front() {
                    w.deliver_to_l(from, &d);
                }
            }
            2 | 3 => {
                if let Some(d) = w.to_c.pop_front() {
                    let from = w.listener_addr;
                    w.c.handle_datagram(w.now, from, &d);
                    w.flush(None);
                }
            }
            4 => {
                // Drop, replay or corrupt the next datagram of either direction.
                let to_l = op & 0x10 != 0;
                match op >> 5 {
                    0 | 1 => {
                        if to_l {
                            w.to_l.pop_front();
                        } else {
                            w.to_c.pop_front();
                        }
                    }
                    2 | 3 => {
                        if to_l {
                            if let Some((from, d)) = w.to_l.front().cloned() {
                                w.deliver_to_l(from, &d);
                            }
                        } else if let Some(d) = w.to_c.front().cloned() {
                            let from = w.listener_addr;
                            w.c.handle_datagram(w.now, from, &d);
                            w.flush(None);
                        }
                    }
                    _ => {
                        let at = usize::from(input.u8());
                        let x = input.u8() | 1;
                        let d = if to_l {
                            w.to_l.front_mut().map(|(_, d)| d)
                        } else {
                            w.to_c.front_mut()
                        };
                        if let Some(d) = d.filter(|d| !d.is_empty()) {
                            let i = at % d.len();
                            d[i] ^= x;
                        }
                    }
                }
            }
            5 => w.advance(u64::from(input.u8()) * 1_000),
            6 => w.advance(u64::from(input.u16()) * 10_000),
            7 | 8 => {
                // An attacker's (or a spoofer's) handshake to socket 0.
                let who = usize::from(input.u8() % 5);
                let from = w.attackers.get(who).copied().unwrap_or(w.client_addr);
                let cookie = match input.u8() % 4 {
                    0 => 0,
                    1 => w.cookies[who % 4],
                    2 => w.cookies[(who + 1) % 4],
                    _ => input.u32(),
                };
                let hs = hostile_handshake(&mut input, cookie);
                let mut d = handshake(SocketId::REQUEST, hs);
                if op & 0x10 != 0 {
                    // A body that is not 48 bytes.
                    let len = HEADER_LEN + usize::from(input.u8() % 64);
                    d.resize(len, 0xEE);
                }
                w.deliver_to_l(from, &d);
            }
            9 => {
                // Arbitrary bytes to L, to socket 0 or to anything.
                let n = usize::from(input.u8());
                let mut d = input.bytes(n).to_vec();
                if op & 0x10 != 0 && d.len() >= HEADER_LEN {
                    d[12..16].fill(0);
                }
                let from = w.attackers[usize::from(op >> 6)];
                w.deliver_to_l(from, &d);
            }
            10 => {
                // A forged handshake to the client, from L's address or another.
                let dst = match w.client_conns.get(usize::from(input.u8() % 4)) {
                    Some(&id) if op & 0x10 == 0 => id,
                    _ => SocketId(input.u32()),
                };
                let cookie = input.u32();
                let hs = hostile_handshake(&mut input, cookie);
                let from = if op & 0x20 == 0 {
                    w.listener_addr
                } else {
                    w.attackers[0]
                };
                w.c.handle_datagram(w.now, from, &handshake(dst, hs));
                w.flush(None);
            }
            11 => {
                if w.client_conns.len() < 4 {
                    let id =
                        w.c.connect(w.now, w.listener_addr, config())
                            .expect("connect");
                    w.client_conns.push(id);
                }
                w.flush(None);
            }
            12 => {
                if let Some(&id) = w.client_conns.get(usize::from(op >> 4) % 4) {
                    if op & 0x80 != 0 {
                        w.c.abort(w.now, id);
                    } else {
                        w.c.close(w.now, id);
                    }
                }
                w.flush(None);
            }
            13 => {
                if let Some(id) = w.l.accept() {
                    if op & 0x10 != 0 {
                        w.l.close(w.now, id);
                    }
                }
                w.flush(None);
            }
            _ => w.advance(u64::from(op >> 4) * 100),
        }
        while w.c.poll_event().is_some() {}
        while w.l.poll_event().is_some() {}
    }
    w.check_real_client_connects();
});
