//! A tiny deterministic network for the engine's integration tests: endpoints exchange
//! datagrams through links with a fixed one-way delay and optional seeded loss, duplication
//! and reordering, in simulated time. (The full simulator with bottleneck queues and metrics
//! is the `udt-sim` crate.)
#![allow(dead_code)]

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::net::SocketAddr;

use rand_chacha::ChaCha8Rng;
use rand_core::{Rng, SeedableRng};
use udt_proto::wire::{
    Control, ControlPacket, Handshake, PeerAddr, RequestType, SocketType, HANDSHAKE_LEN,
    UDT_VERSION,
};
use udt_proto::SeqNo;
use udt_proto::{
    ConnectionConfig, ConnectionState, Endpoint, EndpointConfig, Error, Instant, SocketId,
};

/// A datagram about to enter the network, as shown to a [`Net::filter`].
pub struct Datagram<'a> {
    /// When it was sent.
    pub now: Instant,
    /// Its source address.
    pub from: SocketAddr,
    /// Its destination address.
    pub to: SocketAddr,
    /// Its bytes.
    pub data: &'a [u8],
}

/// Decides the fate of each routed datagram before the random impairments: `false` drops it.
/// Useful both to drop chosen packets and to observe the traffic.
pub type Filter = Box<dyn FnMut(&Datagram<'_>) -> bool>;

/// Changes the bytes of each routed datagram (from the given source) before the filter: a
/// peer that reports differently from ours, without writing that peer.
pub type Rewrite = Box<dyn FnMut(SocketAddr, &mut [u8])>;

/// Sees each datagram as it reaches its node (see [`Net::on_arrival`]).
pub type Observer = Box<dyn FnMut(&Datagram<'_>)>;

/// Impairments applied to every datagram.
#[derive(Clone, Copy, Debug, Default)]
pub struct Impairment {
    /// Probability of dropping a datagram.
    pub loss: f64,
    /// Probability of delivering a datagram twice.
    pub duplicate: f64,
    /// Extra random delay, uniform in 0..=jitter_us (reorders packets).
    pub jitter_us: u64,
}

pub struct Node {
    pub addr: SocketAddr,
    pub ep: Endpoint,
    /// Drop datagrams arriving at this node while true.
    pub blackout: bool,
    /// Steps of [`Net::step`] at which this endpoint had a timer due (it was woken by time, not
    /// by a datagram).
    pub wakeups: u64,
    /// This endpoint's timers are served this much after they fall due, µs (a runtime whose
    /// thread wakes late); 0 serves them on time.
    pub wake_late_us: u64,
}

#[derive(PartialEq, Eq, PartialOrd, Ord)]
struct InFlight {
    at: u64,
    order: u64,
    to: usize,
    from: SocketAddr,
    data: Vec<u8>,
}

pub struct Net {
    pub now: Instant,
    pub nodes: Vec<Node>,
    pub one_way_delay_us: u64,
    pub impair: Impairment,
    /// Datagrams delivered, dropped.
    pub delivered: u64,
    pub dropped: u64,
    queue: BinaryHeap<Reverse<InFlight>>,
    order: u64,
    rng: ChaCha8Rng,
    buf: Vec<u8>,
    /// Optional filter applied to every routed datagram before the impairments (see
    /// [`Filter`]); `None` (the default) lets everything through.
    pub filter: Option<Filter>,
    /// Optional rewriting of every routed datagram, before the filter (see [`Rewrite`]);
    /// `None` (the default) changes nothing.
    pub rewrite: Option<Rewrite>,
    /// Optional observer of every datagram as it reaches its node (after the impairments);
    /// `None` (the default) observes nothing.
    pub on_arrival: Option<Observer>,
}

impl Net {
    pub fn new(seed: u64, one_way_delay_us: u64) -> Self {
        Net {
            now: Instant::from_micros(1_000_000),
            nodes: Vec::new(),
            one_way_delay_us,
            impair: Impairment::default(),
            delivered: 0,
            dropped: 0,
            queue: BinaryHeap::new(),
            order: 0,
            rng: ChaCha8Rng::seed_from_u64(seed),
            buf: vec![0u8; 65_536],
            filter: None,
            rewrite: None,
            on_arrival: None,
        }
    }

    pub fn add(&mut self, addr: &str, seed: u64) -> usize {
        self.add_with(
            addr.parse().unwrap(),
            EndpointConfig {
                seed,
                ..Default::default()
            },
        )
    }

    /// Adds a node at `addr` whose endpoint has configuration `config`.
    pub fn add_with(&mut self, addr: SocketAddr, config: EndpointConfig) -> usize {
        self.nodes.push(Node {
            addr,
            ep: Endpoint::new(config),
            blackout: false,
            wakeups: 0,
            wake_late_us: 0,
        });
        self.nodes.len() - 1
    }

    /// The node at `addr`, if any.
    pub fn node_at(&self, addr: SocketAddr) -> Option<usize> {
        self.nodes.iter().position(|n| n.addr == addr)
    }

    /// Puts a crafted datagram on the wire: it reaches node `to` `delay_us` from now, as if
    /// sent from `from` (any address, not necessarily a node's). No filter or impairment
    /// applies to it.
    pub fn inject(&mut self, to: usize, from: SocketAddr, data: Vec<u8>, delay_us: u64) {
        self.order += 1;
        self.queue.push(Reverse(InFlight {
            at: self.now.as_micros() + delay_us,
            order: self.order,
            to,
            from,
            data,
        }));
    }

    /// Datagrams waiting in the network.
    pub fn in_flight(&self) -> usize {
        self.queue.len()
    }

    pub fn addr(&self, node: usize) -> SocketAddr {
        self.nodes[node].addr
    }

    fn chance(&mut self, p: f64) -> bool {
        p > 0.0 && (self.rng.next_u64() as f64 / u64::MAX as f64) < p
    }

    /// Collects and routes every datagram the nodes have to send now. A node whose timers are
    /// served late is served only when `served` says it was woken (by its late timer or a
    /// datagram) at this instant.
    fn flush(&mut self, served: Option<&[bool]>) {
        for i in 0..self.nodes.len() {
            if self.nodes[i].wake_late_us > 0 && !served.is_some_and(|s| s[i]) {
                continue;
            }
            loop {
                let now = self.now;
                let Some(t) = self.nodes[i].ep.poll_transmit(now, &mut self.buf) else {
                    break;
                };
                let from = self.nodes[i].addr;
                let Some(to) = self.nodes.iter().position(|n| n.addr == t.destination) else {
                    self.dropped += 1;
                    continue;
                };
                if let Some(rewrite) = self.rewrite.as_mut() {
                    rewrite(from, &mut self.buf[..t.len]);
                }
                if let Some(filter) = self.filter.as_mut() {
                    let d = Datagram {
                        now,
                        from,
                        to: t.destination,
                        data: &self.buf[..t.len],
                    };
                    if !filter(&d) {
                        self.dropped += 1;
                        continue;
                    }
                }
                if self.chance(self.impair.loss) {
                    self.dropped += 1;
                    continue;
                }
                let copies = if self.chance(self.impair.duplicate) {
                    2
                } else {
                    1
                };
                for _ in 0..copies {
                    let jitter = if self.impair.jitter_us > 0 {
                        self.rng.next_u64() % (self.impair.jitter_us + 1)
                    } else {
                        0
                    };
                    self.order += 1;
                    self.queue.push(Reverse(InFlight {
                        at: now.as_micros() + self.one_way_delay_us + jitter,
                        order: self.order,
                        to,
                        from,
                        data: self.buf[..t.len].to_vec(),
                    }));
                }
            }
        }
    }

    /// The next instant anything happens.
    fn next_event(&mut self) -> Option<u64> {
        let mut t = self.queue.peek().map(|Reverse(p)| p.at);
        for n in &mut self.nodes {
            if let Some(d) = n.ep.poll_timeout() {
                let d = (d.as_micros() + n.wake_late_us).max(self.now.as_micros());
                t = Some(t.map_or(d, |x| x.min(d)));
            }
        }
        t
    }

    /// Advances to the next event (at most to `limit`) and processes it. False if nothing is
    /// left to do before `limit`.
    pub fn step(&mut self, limit: Instant) -> bool {
        self.flush(None);
        let Some(t) = self.next_event() else {
            self.now = limit;
            return false;
        };
        if t > limit.as_micros() {
            self.now = limit;
            return false;
        }
        self.now = Instant::from_micros(t.max(self.now.as_micros()));
        let now = self.now;
        let mut served: Vec<bool> = self
            .nodes
            .iter_mut()
            .map(|n| {
                n.ep.poll_timeout()
                    .is_some_and(|d| d.as_micros() + n.wake_late_us <= now.as_micros())
            })
            .collect();
        while let Some(Reverse(p)) = self.queue.peek() {
            if p.at > self.now.as_micros() {
                break;
            }
            let Reverse(p) = self.queue.pop().unwrap();
            if self.nodes[p.to].blackout {
                self.dropped += 1;
                continue;
            }
            self.delivered += 1;
            served[p.to] = true;
            if let Some(observe) = self.on_arrival.as_mut() {
                observe(&Datagram {
                    now,
                    from: p.from,
                    to: self.nodes[p.to].addr,
                    data: &p.data,
                });
            }
            self.nodes[p.to].ep.handle_datagram(now, p.from, &p.data);
        }
        for (n, &served) in self.nodes.iter_mut().zip(&served) {
            if n.wake_late_us > 0 && !served {
                continue;
            }
            if n.ep.poll_timeout().is_some_and(|t| t <= now) {
                n.wakeups += 1;
            }
            n.ep.handle_timeout(now);
        }
        self.flush(Some(&served));
        true
    }

    /// Runs until `done` returns true (checked after every step) or `limit` seconds of
    /// simulated time pass. Returns whether `done` became true.
    pub fn run_until(&mut self, limit_s: f64, mut done: impl FnMut(&mut Net) -> bool) -> bool {
        let limit = self.now.plus_micros((limit_s * 1e6) as u64);
        loop {
            if done(self) {
                return true;
            }
            if !self.step(limit) && self.now >= limit {
                return done(self);
            }
        }
    }
}

/// The verifiable payload: the byte at stream offset `i` is `i mod 251`.
pub fn pattern(offset: u64, buf: &mut [u8]) {
    for (k, b) in buf.iter_mut().enumerate() {
        *b = ((offset + k as u64) % 251) as u8;
    }
}

/// Checks `buf` against the pattern at `offset`; returns the index of the first mismatch.
pub fn check_pattern(offset: u64, buf: &[u8]) -> Option<usize> {
    buf.iter()
        .enumerate()
        .position(|(k, &b)| b != ((offset + k as u64) % 251) as u8)
}

/// A payload pattern distinct per `key` (a connection or message number): the byte at offset
/// `i` is `(i + 37·key) mod 251`, so two keys that are not congruent mod 251 never agree.
pub fn keyed_pattern(key: u64, offset: u64, buf: &mut [u8]) {
    pattern(offset + 37 * key, buf);
}

/// Checks `buf` against [`keyed_pattern`]; returns the index of the first mismatch.
pub fn check_keyed_pattern(key: u64, offset: u64, buf: &[u8]) -> Option<usize> {
    check_pattern(offset + 37 * key, buf)
}

impl Net {
    /// Connects node `client` to node `server` (already listening) with `cfg` and runs the
    /// network until the server has accepted the connection and the client sees it
    /// established, for at most `limit_s` simulated seconds. Returns (client id, server id).
    pub fn establish(
        &mut self,
        client: usize,
        server: usize,
        cfg: ConnectionConfig,
        limit_s: f64,
    ) -> (SocketId, SocketId) {
        let now = self.now;
        let server_addr = self.addr(server);
        let c = self.nodes[client]
            .ep
            .connect(now, server_addr, cfg)
            .expect("connect");
        let mut s = None;
        let ok = self.run_until(limit_s, |net| {
            if s.is_none() {
                s = net.nodes[server].ep.accept();
            }
            s.is_some()
                && net.nodes[client]
                    .ep
                    .connection(c)
                    .is_some_and(|c| c.state() == ConnectionState::Connected)
        });
        assert!(ok, "connection not established");
        (c, s.expect("accepted"))
    }
}

// Raw packet builders (independent of the engine's emitters, so malformed packets can be made).

/// A UDT header: words 0 and 1 as given, timestamp 0, destination `dst` (raw, so malformed
/// packets can be made).
pub fn header(word0: u32, word1: u32, dst: SocketId) -> Vec<u8> {
    let mut v = Vec::with_capacity(64);
    v.extend_from_slice(&word0.to_be_bytes());
    v.extend_from_slice(&word1.to_be_bytes());
    v.extend_from_slice(&0u32.to_be_bytes());
    v.extend_from_slice(&dst.0.to_be_bytes());
    v
}

/// A control packet of type `ty` (extended type `ext`, additional info `info`) with `body`.
pub fn ctrl_raw(ty: u16, ext: u16, info: u32, dst: SocketId, body: &[u8]) -> Vec<u8> {
    let mut v = header(
        0x8000_0000 | (u32::from(ty & 0x7FFF) << 16) | u32::from(ext),
        info,
        dst,
    );
    v.extend_from_slice(body);
    v
}

/// A data packet: sequence number `seq`, message word `word1`, `payload`.
pub fn data_raw(seq: u32, word1: u32, dst: SocketId, payload: &[u8]) -> Vec<u8> {
    let mut v = header(seq & 0x7FFF_FFFF, word1, dst);
    v.extend_from_slice(payload);
    v
}

/// 32-bit words, big-endian.
pub fn words(ws: &[u32]) -> Vec<u8> {
    ws.iter().flat_map(|w| w.to_be_bytes()).collect()
}

/// A handshake datagram for `dst`, as the engine emits it.
pub fn handshake_bytes(dst: SocketId, hs: Handshake) -> Vec<u8> {
    let mut buf = vec![0u8; 16 + HANDSHAKE_LEN];
    let n = ControlPacket::new(dst, Control::Handshake(hs))
        .emit(&mut buf)
        .unwrap();
    buf.truncate(n);
    buf
}

/// A pattern stream from connection `c` of node `client` to `s` of node `server`, pumped one
/// step at a time from inside [`Net::run_until`]: every byte read is checked.
pub struct Stream {
    /// Bytes to stream.
    pub total: u64,
    /// Bytes the sender's buffer has taken.
    pub sent: u64,
    /// Bytes read and checked.
    pub got: u64,
    chunk: Vec<u8>,
    rbuf: Vec<u8>,
}

impl Stream {
    /// A stream of `total` bytes, nothing sent yet.
    pub fn new(total: u64) -> Stream {
        Stream {
            total,
            sent: 0,
            got: 0,
            chunk: vec![0u8; 64_000],
            rbuf: vec![0u8; 100_000],
        }
    }

    /// Queues what the sender takes and reads what arrived; true once everything arrived.
    pub fn pump(
        &mut self,
        net: &mut Net,
        (client, c): (usize, SocketId),
        (server, s): (usize, SocketId),
    ) -> bool {
        let now = net.now;
        let mut conn = net.nodes[client].ep.connection_mut(c).unwrap();
        while self.sent < self.total {
            let n = (self.total - self.sent).min(self.chunk.len() as u64) as usize;
            pattern(self.sent, &mut self.chunk[..n]);
            match conn.send(now, &self.chunk[..n]) {
                Ok(m) => self.sent += m as u64,
                Err(Error::WouldBlock) => break,
                Err(e) => panic!("send: {e}"),
            }
        }
        drop(conn);
        let mut conn = net.nodes[server].ep.connection_mut(s).unwrap();
        while let Ok(n) = conn.recv(&mut self.rbuf) {
            assert_eq!(
                check_pattern(self.got, &self.rbuf[..n]),
                None,
                "corrupted at {}",
                self.got
            );
            self.got += n as u64;
        }
        self.got == self.total
    }
}

/// Spoofed request number `i` to a listener: first phase, or (`second`) second phase with a
/// guessed cookie, from socket ID `1 + i` with an ISN derived from `i`.
pub fn spoofed_request(i: u32, second: bool) -> Vec<u8> {
    let hs = Handshake {
        version: UDT_VERSION,
        socket_type: SocketType::STREAM,
        isn: SeqNo::from_masked(i.wrapping_mul(2_654_435_761)),
        mss: 1500,
        flow_window: 8192,
        request: if second {
            RequestType::RESPONSE
        } else {
            RequestType::REQUEST
        },
        socket_id: SocketId(1 + i),
        // A guess at the cookie: right with probability 2^-32.
        cookie: if second {
            i.wrapping_mul(0x9E37_79B9)
        } else {
            0
        },
        peer_addr: PeerAddr::default(),
    };
    handshake_bytes(SocketId(0), hs)
}

/// Makes the listener at `listener` answer as UDT4 4.11 does: its cookie replies carry an
/// address in the peer-address field (4.11 echoes the client's), not the peer hint or offer
/// of this implementation's listener.
pub fn rewrite_cookie_replies_as_udt4(net: &mut Net, listener: SocketAddr) {
    net.rewrite = Some(Box::new(move |from, data| {
        // Header 16 bytes; handshake body: request type at 20, peer address at 32..48.
        let is_handshake = data.len() >= 16 + HANDSHAKE_LEN && data[0] == 0x80 && data[1] == 0;
        if from == listener
            && is_handshake
            && i32::from_be_bytes(data[36..40].try_into().unwrap()) == 1
        {
            data[48..64].copy_from_slice(&PeerAddr::from_ip("10.0.0.1".parse().unwrap()).0);
        }
    }));
}
