//! Many connections and at most one listener on one UDP port (spec §6).
//!
//! The [`Endpoint`] is the unit a driver feeds: every datagram arriving on the port goes to
//! [`Endpoint::handle_datagram`]; [`Endpoint::poll_transmit`] yields datagrams to send, each
//! with its destination; [`Endpoint::poll_timeout`] tells when to call
//! [`Endpoint::handle_timeout`]. Datagrams are routed by destination socket ID; ID 0 goes to
//! the listener or, without one, to a socket connecting to the sender's address.
//!
//! A timer heap holds each connection under its next deadline, so the cost of an idle
//! connection is one heap entry, and the driver's wake-ups do not grow with the number of
//! connections.

mod cookie;

use core::cmp::Reverse;
use core::hash::{BuildHasher, Hasher};
use core::net::SocketAddr;
use core::ops::{Deref, DerefMut};
use std::collections::{BinaryHeap, HashMap, VecDeque};

use rand_chacha::{ChaCha20Rng, ChaCha8Rng};
use rand_core::{Rng, SeedableRng};
use thiserror::Error;

use crate::config::{ConnectionConfig, SocketKind, MIN_MSS};
use crate::connection::{Connection, Event, Opened};
use crate::crypto::ext::{Offer, PeerHint, RejectReason};
use crate::crypto::EncryptionMode;
use crate::seq::SeqNo;
use crate::time::Instant;
use crate::wire::{
    Control, ControlPacket, Handshake, Packet, RequestType, SocketId, HANDSHAKE_LEN, UDT_VERSION,
};

use cookie::CookieJar;

/// Largest socket ID handed out (4.11 allocates in `1 ..= 2^30`).
const MAX_SOCKET_ID: u32 = 1 << 30;
/// Most handshake replies the listener queues; beyond this, requests are dropped (and
/// counted) until the driver sends the backlog.
const MAX_QUEUED_REPLIES: usize = 1024;

/// Hashing of the connection table, keyed per endpoint.
///
/// Every datagram and every application call looks a connection up by socket ID, so the
/// table's hash is on the hot path; SipHash costs more than the rest of a lookup. IDs are
/// 32-bit values, most chosen by us, so one keyed multiply-and-fold mixes them well enough, and
/// the key (derived from the endpoint's seed, without drawing from its generator) keeps bucket
/// positions unpredictable to a peer. Peers cannot insert entries; they only choose the IDs
/// looked up.
#[derive(Clone, Copy, Debug)]
struct IdHash {
    key: u64,
}

impl IdHash {
    fn new(seed: u64) -> Self {
        // SplitMix64 finaliser of the seed, so nearby seeds give unrelated keys.
        let mut z = seed ^ 0x5851_F42D_4C95_7F2D;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        IdHash { key: z ^ (z >> 31) }
    }
}

impl BuildHasher for IdHash {
    type Hasher = IdHasher;
    fn build_hasher(&self) -> IdHasher {
        IdHasher { state: self.key }
    }
}

/// The hasher of [`IdHash`].
struct IdHasher {
    state: u64,
}

impl IdHasher {
    fn mix(&mut self, word: u64) {
        // A full 64×64→128-bit product, folded: every input bit reaches every output bit.
        let m = u128::from(self.state ^ word) * u128::from(0x9E37_79B9_7F4A_7C15u64);
        self.state = (m as u64) ^ ((m >> 64) as u64);
    }
}

impl Hasher for IdHasher {
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.mix(u64::from_le_bytes(word));
        }
    }
    fn write_u32(&mut self, n: u32) {
        self.mix(u64::from(n));
    }
    fn finish(&self) -> u64 {
        self.state
    }
}

/// The connections: a slab of slots, indexed by socket ID.
///
/// The timer heap and the guards of [`ConnectionMut`] remember a connection's slot, so the
/// per-packet paths reach it without hashing; only a datagram's destination ID and the
/// application's ID-based calls go through the index. A slot is reused only after its
/// connection is gone, and every use by slot checks the socket ID stored in it.
struct Table {
    slots: Vec<Option<Connection>>,
    free: Vec<u32>,
    index: HashMap<SocketId, u32, IdHash>,
}

impl Table {
    fn new(seed: u64) -> Self {
        Table {
            slots: Vec::new(),
            free: Vec::new(),
            index: HashMap::with_hasher(IdHash::new(seed)),
        }
    }

    fn len(&self) -> usize {
        self.index.len()
    }

    fn slot(&self, id: SocketId) -> Option<u32> {
        self.index.get(&id).copied()
    }

    fn get(&self, id: SocketId) -> Option<&Connection> {
        self.at(self.slot(id)?, id)
    }

    /// The connection in `slot`, if it is still `id`'s.
    fn at(&self, slot: u32, id: SocketId) -> Option<&Connection> {
        self.slots
            .get(slot as usize)?
            .as_ref()
            .filter(|c| c.local_id() == id)
    }

    /// The connection in `slot`, if it is still `id`'s.
    fn at_mut(&mut self, slot: u32, id: SocketId) -> Option<&mut Connection> {
        self.slots
            .get_mut(slot as usize)?
            .as_mut()
            .filter(|c| c.local_id() == id)
    }

    /// Adds a connection under its ID (not yet held); returns its slot.
    fn insert(&mut self, conn: Connection) -> u32 {
        let id = conn.local_id();
        let slot = match self.free.pop() {
            Some(slot) => {
                self.slots[slot as usize] = Some(conn);
                slot
            }
            None => {
                self.slots.push(Some(conn));
                (self.slots.len() - 1) as u32
            }
        };
        self.index.insert(id, slot);
        slot
    }

    /// Frees `slot`, held by `id`.
    fn remove(&mut self, slot: u32, id: SocketId) {
        self.slots[slot as usize] = None;
        self.free.push(slot);
        self.index.remove(&id);
    }
}

/// Options of an endpoint.
#[derive(Clone, Debug)]
pub struct EndpointConfig {
    /// Seed of the endpoint's random generator (socket IDs, initial sequence numbers, the
    /// cookie key). The simulator passes a scenario seed; the runtime a random one.
    pub seed: u64,
    /// Most connections the endpoint holds; further requests are rejected.
    pub max_connections: usize,
    /// Extra seed bytes for the generator of ephemeral X25519 keys of encrypted connections
    /// (mixed with `seed`). The runtime fills them from the operating system so that those
    /// keys are unpredictable; the simulator may leave them zero.
    pub entropy: [u8; 32],
}

impl Default for EndpointConfig {
    fn default() -> Self {
        EndpointConfig {
            seed: 0,
            max_connections: 1 << 16,
            entropy: [0; 32],
        }
    }
}

/// A datagram to send.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Transmit {
    /// Where to send it.
    pub destination: SocketAddr,
    /// Its length in the buffer passed to [`Endpoint::poll_transmit`], bytes.
    pub len: usize,
    /// The receiver is this implementation (the handshake's peer hint,
    /// [`Connection::peer_takes_bursts`]): a runtime may batch this datagram with other
    /// connections' in segmentation-offload buffers while several send. False for UDT4 4.11
    /// peers, rendezvous peers and handshake replies.
    pub peer_takes_bursts: bool,
}

/// Errors of endpoint operations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum EndpointError {
    /// Another listener already uses this endpoint (UDT4 5011 `EDUPLISTEN`).
    #[error("a listener already exists on this port")]
    AlreadyListening,
    /// The configuration is invalid (UDT4 5003).
    #[error("invalid configuration: {0}")]
    InvalidConfig(&'static str),
    /// Rendezvous sockets cannot listen (UDT4 5007).
    #[error("rendezvous sockets cannot listen")]
    RendezvousListen,
    /// The endpoint holds as many connections as it may.
    #[error("too many connections")]
    TooManyConnections,
}

/// Counters of what the endpoint dropped.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EndpointStats {
    /// Datagrams that could not be parsed.
    pub malformed: u64,
    /// Datagrams for no known socket, or from the wrong address.
    pub unroutable: u64,
    /// Of `unroutable`: datagrams for a known socket from another address than its peer's
    /// (forged sources, e.g. a spoofed Shutdown), dropped before the connection sees them.
    pub wrong_source: u64,
    /// Handshakes the listener ignored or rejected.
    pub handshakes_refused: u64,
    /// Replies dropped because the reply queue was full.
    pub replies_dropped: u64,
}

/// What an endpoint holds per peer ([`Endpoint::state_counts`]), entries.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StateCounts {
    /// Connections in any state.
    pub connections: usize,
    /// Index of accepted connections by (client address, client socket ID).
    pub accepted_from: usize,
    /// Addresses this endpoint is connecting to.
    pub connecting_addrs: usize,
    /// Listener replies (cookie echoes, rejections) waiting to be sent.
    pub queued_replies: usize,
    /// Established connections waiting to be accepted.
    pub pending_accepts: usize,
}

struct Listener {
    config: ConnectionConfig,
    /// Accept peers of either socket kind, each connection taking its peer's
    /// ([`Endpoint::set_listener_accepts_any_kind`]); otherwise only `config.kind`.
    any_kind: bool,
    backlog: usize,
    /// Established connections not yet accepted.
    queue: VecDeque<SocketId>,
    cookies: CookieJar,
}

/// The connections and listener of one UDP port.
pub struct Endpoint {
    config: EndpointConfig,
    rng: ChaCha8Rng,
    next_id: u32,
    conns: Table,
    listener: Option<Listener>,
    /// Sockets connecting to an address, for datagrams addressed to ID 0.
    connecting: HashMap<SocketAddr, Vec<SocketId>>,
    /// Server-side connections by (client address, client socket ID), to answer repeated
    /// requests.
    accepted_from: HashMap<(SocketAddr, SocketId), SocketId>,
    /// Connections by deadline: (deadline, insertion number, ID, slot); an entry is stale
    /// unless the slot still holds that connection and its `scheduled` entry is this one.
    /// Ties are broken first come, first served: when the runtime cannot keep up with the sum
    /// of the rates, every overdue connection is due `now` after each packet it sends, and a
    /// tie broken by socket ID would hand the sender to one connection and starve the rest.
    timers: BinaryHeap<Reverse<(Instant, u64, SocketId, u32)>>,
    /// Insertions into `timers` so far.
    timer_seq: u64,
    /// Connections with a paced data send pending ([`Connection::paced_send_time`]).
    paced_conns: usize,
    /// Listener replies (cookie echoes, rejections): destination, destination socket ID,
    /// handshake.
    replies: VecDeque<(SocketAddr, SocketId, Handshake)>,
    events: VecDeque<(SocketId, Event)>,
    stats: EndpointStats,
    due: Vec<(SocketId, u32)>,
    /// Generator of ephemeral key material (apart from `rng`, so that drawing keys does not
    /// change the IDs and sequence numbers a seed gives).
    key_rng: ChaCha20Rng,
    /// Where an encrypted connection's datagram is opened (reused).
    scratch: Vec<u8>,
}

impl core::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Endpoint")
            .field("connections", &self.conns.len())
            .field("listening", &self.listener.is_some())
            .finish_non_exhaustive()
    }
}

impl Endpoint {
    /// An endpoint with no connections.
    pub fn new(config: EndpointConfig) -> Self {
        let mut rng = ChaCha8Rng::seed_from_u64(config.seed);
        let next_id = 1 + rng.next_u32() % MAX_SOCKET_ID;
        let mut key_seed = config.entropy;
        for (b, s) in key_seed.iter_mut().zip(config.seed.to_le_bytes()) {
            *b ^= s;
        }
        Endpoint {
            key_rng: ChaCha20Rng::from_seed(key_seed),
            scratch: Vec::new(),
            conns: Table::new(config.seed),
            config,
            rng,
            next_id,
            listener: None,
            connecting: HashMap::new(),
            accepted_from: HashMap::new(),
            timers: BinaryHeap::new(),
            timer_seq: 0,
            paced_conns: 0,
            replies: VecDeque::new(),
            events: VecDeque::new(),
            stats: EndpointStats::default(),
            due: Vec::new(),
        }
    }

    /// What the endpoint dropped so far.
    pub fn stats(&self) -> EndpointStats {
        self.stats
    }

    /// Number of connections held (any state).
    pub fn connection_count(&self) -> usize {
        self.conns.len()
    }

    /// Entries the endpoint holds per peer, to check that a flood of spoofed requests leaves
    /// nothing behind (a listener's only per-request cost is a queued reply, bounded by
    /// `MAX_QUEUED_REPLIES` and gone once sent).
    pub fn state_counts(&self) -> StateCounts {
        StateCounts {
            connections: self.conns.len(),
            accepted_from: self.accepted_from.len(),
            connecting_addrs: self.connecting.len(),
            queued_replies: self.replies.len(),
            pending_accepts: self.pending_accepts(),
        }
    }

    /// IDs of all connections held.
    pub fn connection_ids(&self) -> impl Iterator<Item = SocketId> + '_ {
        self.conns.index.keys().copied()
    }

    /// Socket IDs count down from a random start and skip IDs in use (4.11 allocates the same
    /// way, spec §5.6).
    fn allocate_id(&mut self) -> SocketId {
        loop {
            let id = SocketId(self.next_id);
            self.next_id = if self.next_id <= 1 {
                MAX_SOCKET_ID
            } else {
                self.next_id - 1
            };
            if self.conns.slot(id).is_none() {
                return id;
            }
        }
    }

    fn random_isn(&mut self) -> SeqNo {
        SeqNo::from_masked(self.rng.next_u32())
    }

    /// 32 fresh bytes for an ephemeral X25519 key.
    fn key_seed(&mut self) -> [u8; 32] {
        let mut k = [0u8; 32];
        self.key_rng.fill_bytes(&mut k);
        k
    }

    // ---------------------------------------------------------------------------------------
    // Listening and connecting.

    /// Starts accepting connections with `config` (inherited by every accepted connection) and
    /// at most `backlog` established connections waiting in the accept queue.
    pub fn listen(
        &mut self,
        now: Instant,
        config: ConnectionConfig,
        backlog: usize,
    ) -> Result<(), EndpointError> {
        if self.listener.is_some() {
            return Err(EndpointError::AlreadyListening);
        }
        if config.rendezvous {
            return Err(EndpointError::RendezvousListen);
        }
        config.validate().map_err(EndpointError::InvalidConfig)?;
        let mut key = [0u8; 16];
        self.rng.fill_bytes(&mut key);
        self.listener = Some(Listener {
            config,
            any_kind: false,
            backlog: backlog.max(1),
            queue: VecDeque::new(),
            cookies: CookieJar::new(key, now),
        });
        Ok(())
    }

    /// True while listening.
    pub fn is_listening(&self) -> bool {
        self.listener.is_some()
    }

    /// Lets the listener accept stream and message peers alike, each accepted connection
    /// taking the kind its peer asked for (check [`Connection::kind`] after accepting). A 4.11
    /// listener, and ours by default, refuses a peer whose kind differs from its own. Returns
    /// `false` (and does nothing) when not listening.
    pub fn set_listener_accepts_any_kind(&mut self, on: bool) -> bool {
        match self.listener.as_mut() {
            Some(l) => {
                l.any_kind = on;
                true
            }
            None => false,
        }
    }

    /// Stops listening; connections established but never accepted are closed.
    pub fn stop_listening(&mut self, now: Instant) {
        if let Some(l) = self.listener.take() {
            for id in l.queue {
                self.close(now, id);
            }
        }
    }

    /// Takes the oldest established connection from the accept queue.
    pub fn accept(&mut self) -> Option<SocketId> {
        self.listener.as_mut()?.queue.pop_front()
    }

    /// Connections waiting in the accept queue.
    pub fn pending_accepts(&self) -> usize {
        self.listener.as_ref().map_or(0, |l| l.queue.len())
    }

    /// Starts connecting to `remote` (client/server, or rendezvous if the configuration says
    /// so). Progress is reported as [`Event::Connected`] or [`Event::ConnectFailed`].
    pub fn connect(
        &mut self,
        now: Instant,
        remote: SocketAddr,
        config: ConnectionConfig,
    ) -> Result<SocketId, EndpointError> {
        config.validate().map_err(EndpointError::InvalidConfig)?;
        if self.conns.len() >= self.config.max_connections {
            return Err(EndpointError::TooManyConnections);
        }
        let id = self.allocate_id();
        let isn = self.random_isn();
        let key_seed = self.key_seed();
        let conn = Connection::connect(now, config, id, remote, isn, key_seed);
        let slot = self.conns.insert(conn);
        self.connecting.entry(remote).or_default().push(id);
        self.after_op(id, slot);
        Ok(id)
    }

    /// Closes a connection (see [`Connection::close`]); the endpoint frees it once finished.
    pub fn close(&mut self, now: Instant, id: SocketId) {
        let Some(slot) = self.conns.slot(id) else {
            return;
        };
        if let Some(c) = self.conns.at_mut(slot, id) {
            c.close(now);
            self.after_op(id, slot);
        }
    }

    /// Closes a connection at once, without lingering (see [`Connection::abort`]).
    pub fn abort(&mut self, now: Instant, id: SocketId) {
        let Some(slot) = self.conns.slot(id) else {
            return;
        };
        if let Some(c) = self.conns.at_mut(slot, id) {
            c.abort(now);
            self.after_op(id, slot);
        }
    }

    // ---------------------------------------------------------------------------------------
    // Access.

    /// A connection, read-only.
    pub fn connection(&self, id: SocketId) -> Option<&Connection> {
        self.conns.get(id)
    }

    /// A connection, for application operations. When the returned guard is dropped, the
    /// endpoint re-reads the connection's deadline and collects its events.
    pub fn connection_mut(&mut self, id: SocketId) -> Option<ConnectionMut<'_>> {
        let slot = self.conns.slot(id)?;
        Some(ConnectionMut { ep: self, id, slot })
    }

    /// The next event of any connection.
    pub fn poll_event(&mut self) -> Option<(SocketId, Event)> {
        self.events.pop_front()
    }

    // ---------------------------------------------------------------------------------------
    // Driving.

    /// Bookkeeping after anything happened to connection `id` (in `slot`): deadline, events,
    /// freeing.
    fn after_op(&mut self, id: SocketId, slot: u32) {
        let Some(conn) = self.conns.at_mut(slot, id) else {
            return;
        };
        while let Some(e) = conn.poll_event() {
            self.events.push_back((id, e));
        }
        if !conn.is_connecting() {
            let addr = conn.peer_addr();
            if let Some(list) = self.connecting.get_mut(&addr) {
                list.retain(|x| *x != id);
                if list.is_empty() {
                    self.connecting.remove(&addr);
                }
            }
        }
        let paced = conn.paced_send_time().is_some() && !conn.is_reclaimable();
        if paced != conn.paced_counted {
            conn.paced_counted = paced;
            if paced {
                self.paced_conns += 1;
            } else {
                self.paced_conns -= 1;
            }
        }
        if conn.is_reclaimable() {
            let peer = (conn.peer_addr(), conn.peer_id());
            self.conns.remove(slot, id);
            if self.accepted_from.get(&peer) == Some(&id) {
                self.accepted_from.remove(&peer);
            }
            return;
        }
        let deadline = conn.poll_timeout();
        if deadline != conn.scheduled.map(|(t, _)| t) {
            conn.scheduled =
                deadline.map(|t| push_timer(&mut self.timers, &mut self.timer_seq, t, id, slot));
        }
    }

    /// Processes one datagram that arrived from `from`.
    ///
    /// Only the destination is read before the datagram reaches its connection: an encrypted
    /// connection's control bodies are ciphertext until opened, and the parser's field checks
    /// (an ACK's number below 2^31, a NAK's ranges in order) would refuse half of them at
    /// random.
    pub fn handle_datagram(&mut self, now: Instant, from: SocketAddr, datagram: &[u8]) {
        let Some(dst) = Packet::peek_destination(datagram) else {
            self.stats.malformed += 1;
            return;
        };
        if dst == SocketId::REQUEST {
            match Packet::parse(datagram) {
                Ok(packet) => {
                    let tail = handshake_tail(&packet, datagram);
                    self.handle_request(now, from, &packet, tail);
                }
                Err(_) => self.stats.malformed += 1,
            }
            return;
        }
        let slot = self.conns.slot(dst);
        match slot.and_then(|slot| self.conns.at_mut(slot, dst)) {
            Some(conn) if conn.accepts_from(from) => {
                let handled = match conn.open_datagram(datagram, &mut self.scratch) {
                    Opened::Clear => Packet::parse(datagram).map(|packet| {
                        let tail = handshake_tail(&packet, datagram);
                        conn.handle_packet_with_tail(now, &packet, tail);
                    }),
                    Opened::Plain(n) => Packet::parse(&self.scratch[..n])
                        .map(|packet| conn.handle_packet(now, &packet)),
                    Opened::Dropped => return,
                };
                match handled {
                    Ok(()) => self.after_op(dst, slot.expect("found by slot")),
                    Err(_) => self.stats.malformed += 1,
                }
            }
            Some(_) => {
                self.stats.unroutable += 1;
                self.stats.wrong_source += 1;
            }
            None => self.stats.unroutable += 1,
        }
    }

    /// A datagram addressed to socket ID 0: the listener's, or a connecting socket's.
    fn handle_request(&mut self, now: Instant, from: SocketAddr, packet: &Packet<'_>, tail: &[u8]) {
        if self.listener.is_some() {
            if let Packet::Control(c) = packet {
                self.listener_handshake(now, from, c, tail);
            } else {
                self.stats.handshakes_refused += 1;
            }
            return;
        }
        let Some(id) = self.connecting.get(&from).and_then(|l| l.first()).copied() else {
            self.stats.unroutable += 1;
            return;
        };
        let Some(slot) = self.conns.slot(id) else {
            return;
        };
        if let Some(conn) = self.conns.at_mut(slot, id) {
            conn.handle_packet_with_tail(now, packet, tail);
            self.after_op(id, slot);
        }
    }

    fn reply(&mut self, to: SocketAddr, dst: SocketId, hs: Handshake) {
        if self.replies.len() < MAX_QUEUED_REPLIES {
            self.replies.push_back((to, dst, hs));
        } else {
            self.stats.replies_dropped += 1;
        }
    }

    /// The listener's handling of a handshake (spec §5.2); `tail`: the bytes after the 48 of
    /// the body (an encryption hello, `docs/encryption.md`).
    fn listener_handshake(
        &mut self,
        now: Instant,
        from: SocketAddr,
        c: &ControlPacket<'_>,
        tail: &[u8],
    ) {
        let Some(listener) = self.listener.as_ref() else {
            return;
        };
        // 4.11 listeners ignore handshakes whose body is not exactly 48 bytes; ours also take
        // a second-phase request with a peer hint appended, or an encryption hello when it
        // has a secret.
        let Control::Handshake(hs) = c.control else {
            self.stats.handshakes_refused += 1;
            return;
        };
        let encryption = listener.config.encryption.as_ref();
        let hint = PeerHint::decode_tail(tail);
        let tail_ok = tail.is_empty()
            || (hs.request != RequestType::REQUEST && (hint.is_some() || encryption.is_some()));
        if c.body_len != HANDSHAKE_LEN + tail.len() || !tail_ok {
            self.stats.handshakes_refused += 1;
            return;
        }
        if hs.request == RequestType::REQUEST {
            // First phase: echo the request with a cookie; keep no state. The echo's
            // peer-address field, which clients ignore in this reply (so the reply stays as
            // long as the request), says that we are this implementation: an offer of
            // encryption from a listener with a secret, the peer hint from one without.
            let mut echo = hs;
            echo.cookie = listener.cookies.issue(from, now);
            echo.peer_addr = match encryption {
                Some(e) => Offer {
                    cipher: e.cipher,
                    required: e.mode == EncryptionMode::Required,
                }
                .encode(),
                None => PeerHint::OURS.encode(),
            };
            self.reply(from, hs.socket_id, echo);
            return;
        }
        if !listener.cookies.check(from, hs.cookie, now) || !hs.socket_id.is_valid() {
            self.stats.handshakes_refused += 1;
            return;
        }
        let mut reject = hs;
        reject.request = RequestType::REJECT;
        let kind = match SocketKind::from_wire(hs.socket_type) {
            Some(k) if listener.any_kind || k == listener.config.kind => Some(k),
            _ => None,
        };
        let Some(kind) = kind.filter(|_| hs.version == UDT_VERSION && hs.mss >= MIN_MSS) else {
            self.stats.handshakes_refused += 1;
            self.reply(from, hs.socket_id, reject);
            return;
        };
        if let Some(&existing) = self.accepted_from.get(&(from, hs.socket_id)) {
            if let Some(slot) = self.conns.slot(existing) {
                if let Some(conn) = self.conns.at_mut(slot, existing) {
                    if conn.created_by(&hs) && conn.is_healthy() {
                        // Our response was lost: answer again.
                        conn.resend_response();
                        self.after_op(existing, slot);
                        return;
                    }
                }
            }
            self.accepted_from.remove(&(from, hs.socket_id));
        }
        let listener = self.listener.as_ref().expect("checked above");
        if listener.queue.len() >= listener.backlog
            || self.conns.len() >= self.config.max_connections
        {
            self.stats.handshakes_refused += 1;
            self.reply(from, hs.socket_id, reject);
            return;
        }
        let mut config = listener.config.clone();
        config.kind = kind;
        let hello = match &config.encryption {
            Some(_) if !tail.is_empty() && hint.is_none() => Some((tail, self.key_seed())),
            Some(e) if e.mode == EncryptionMode::Required => {
                self.refuse(from, &hs, RejectReason::EncryptionRequired);
                return;
            }
            _ => None,
        };
        // Only this implementation appends a hint or a hello.
        let takes_bursts = hint.map_or(hello.is_some(), |h| h.takes_bursts);
        let id = self.allocate_id();
        let mut conn = match Connection::accept(now, config, id, from, &hs, hello) {
            Ok(conn) => conn,
            Err(reason) => {
                self.refuse(from, &hs, reason);
                return;
            }
        };
        conn.set_peer_takes_bursts(takes_bursts);
        let slot = self.conns.insert(conn);
        self.accepted_from.insert((from, hs.socket_id), id);
        if let Some(l) = self.listener.as_mut() {
            l.queue.push_back(id);
        }
        self.after_op(id, slot);
    }

    /// Rejects the second-phase request `hs` for an encryption `reason`, said in the
    /// rejection's peer-address field (which 4.11 clients do not read).
    fn refuse(&mut self, to: SocketAddr, hs: &Handshake, reason: RejectReason) {
        self.stats.handshakes_refused += 1;
        let mut reject = *hs;
        reject.request = RequestType::REJECT;
        reject.peer_addr = reason.encode();
        self.reply(to, hs.socket_id, reject);
    }

    /// Pops the connections whose deadline is at or before `now` into `self.due`.
    fn collect_due(&mut self, now: Instant) {
        self.due.clear();
        while let Some(&Reverse((t, seq, id, slot))) = self.timers.peek() {
            if t > now {
                break;
            }
            self.timers.pop();
            if let Some(conn) = self.conns.at_mut(slot, id) {
                if conn.scheduled == Some((t, seq)) {
                    conn.scheduled = None;
                    self.due.push((id, slot));
                }
            }
        }
    }

    /// Runs every timer due at `now`.
    pub fn handle_timeout(&mut self, now: Instant) {
        self.collect_due(now);
        let due = core::mem::take(&mut self.due);
        for &(id, slot) in &due {
            if let Some(conn) = self.conns.at_mut(slot, id) {
                conn.handle_timeout(now);
            }
            self.after_op(id, slot);
        }
        self.due = due;
    }

    /// The earliest instant at which the endpoint needs [`handle_timeout`](Self::handle_timeout)
    /// or [`poll_transmit`](Self::poll_transmit); `None` if it only waits for datagrams.
    pub fn poll_timeout(&mut self) -> Option<Instant> {
        if !self.replies.is_empty() {
            return Some(Instant::ZERO);
        }
        while let Some(&Reverse((t, seq, id, slot))) = self.timers.peek() {
            match self.conns.at(slot, id) {
                Some(c) if c.scheduled == Some((t, seq)) => return Some(t),
                _ => {
                    self.timers.pop();
                }
            }
        }
        None
    }

    /// Whether the earliest deadline ([`poll_timeout`](Self::poll_timeout)) is a paced data
    /// send ([`Connection::paced_send_time`]). Only those are worth waking for to the
    /// microsecond (e.g. by spinning); timers can wait with the scheduler's usual latency,
    /// which keeps idle connections cheap.
    pub fn timeout_is_paced(&mut self) -> bool {
        self.paced_timeout_quantum_us().is_some()
    }

    /// When the earliest deadline is a paced data send (see
    /// [`timeout_is_paced`](Self::timeout_is_paced)): the burst quantum of its connection
    /// ([`Connection::burst_quantum_us`]), µs, for a runtime that paces in bursts.
    pub fn paced_timeout_quantum_us(&mut self) -> Option<u64> {
        let t = self.poll_timeout()?;
        match self.timers.peek() {
            Some(&Reverse((top, _, id, slot))) if top == t => self
                .conns
                .at(slot, id)
                .filter(|c| c.paced_send_time() == Some(t))
                .map(Connection::burst_quantum_us),
            _ => None,
        }
    }

    /// Whether any connection has a paced data send pending. While none has, every deadline
    /// is a timer that tolerates being late by a little, so a runtime may round deadlines up
    /// to batch wake-ups (and delay reads to batch datagrams) without hurting any pacing.
    pub fn has_paced_sends(&self) -> bool {
        self.paced_conns > 0
    }

    /// How many connections have a paced data send pending (data waiting and room to send
    /// it).
    pub fn paced_connection_count(&self) -> usize {
        self.paced_conns
    }

    /// Writes the next datagram due at `now` into `buf` (at least the largest MSS in use minus
    /// 28 bytes; 65 536 always suffices) and says where it goes.
    pub fn poll_transmit(&mut self, now: Instant, buf: &mut [u8]) -> Option<Transmit> {
        while let Some((to, dst, hs)) = self.replies.pop_front() {
            if let Ok(len) = ControlPacket::new(dst, Control::Handshake(hs)).emit(buf) {
                return Some(Transmit {
                    destination: to,
                    len,
                    peer_takes_bursts: false,
                });
            }
        }
        loop {
            let &Reverse((t, seq, id, slot)) = self.timers.peek()?;
            if t > now {
                return None;
            }
            self.timers.pop();
            let Some(conn) = self.conns.at_mut(slot, id) else {
                continue;
            };
            if conn.scheduled != Some((t, seq)) {
                continue;
            }
            conn.scheduled = None;
            conn.handle_timeout(now);
            let sent = conn.poll_transmit(now, buf);
            let destination = conn.peer_addr();
            let peer_takes_bursts = conn.peer_takes_bursts();
            self.after_op(id, slot);
            match sent {
                Some(len) => {
                    return Some(Transmit {
                        destination,
                        len,
                        peer_takes_bursts,
                    })
                }
                None => {
                    // Nothing came out although the deadline had passed: make sure this
                    // connection cannot spin at the same instant.
                    if let Some(conn) = self.conns.at_mut(slot, id) {
                        if conn.scheduled.is_some_and(|(d, _)| d <= now) {
                            let later = now.plus_micros(1);
                            conn.scheduled = Some(push_timer(
                                &mut self.timers,
                                &mut self.timer_seq,
                                later,
                                id,
                                slot,
                            ));
                        }
                    }
                }
            }
        }
    }
}

/// The bytes of `datagram` after a handshake's 48-byte body (empty for other packets).
fn handshake_tail<'a>(packet: &Packet<'_>, datagram: &'a [u8]) -> &'a [u8] {
    match packet {
        Packet::Control(c) if matches!(c.control, Control::Handshake(_)) => datagram
            .get(crate::wire::HEADER_LEN + HANDSHAKE_LEN..)
            .unwrap_or(&[]),
        _ => &[],
    }
}

/// Enters connection `id` (in `slot`) into the timer heap under deadline `at` with the next
/// insertion number, and returns the entry to keep as the connection's `scheduled`.
fn push_timer(
    timers: &mut BinaryHeap<Reverse<(Instant, u64, SocketId, u32)>>,
    seq: &mut u64,
    at: Instant,
    id: SocketId,
    slot: u32,
) -> (Instant, u64) {
    *seq += 1;
    timers.push(Reverse((at, *seq, id, slot)));
    (at, *seq)
}

/// Mutable access to one connection of an endpoint; see [`Endpoint::connection_mut`].
pub struct ConnectionMut<'a> {
    ep: &'a mut Endpoint,
    id: SocketId,
    slot: u32,
}

impl Deref for ConnectionMut<'_> {
    type Target = Connection;
    fn deref(&self) -> &Connection {
        self.ep
            .conns
            .at(self.slot, self.id)
            .expect("guard exists only for a held connection")
    }
}

impl DerefMut for ConnectionMut<'_> {
    fn deref_mut(&mut self) -> &mut Connection {
        self.ep
            .conns
            .at_mut(self.slot, self.id)
            .expect("guard exists only for a held connection")
    }
}

impl Drop for ConnectionMut<'_> {
    fn drop(&mut self) {
        self.ep.after_op(self.id, self.slot);
    }
}
