//! Connection establishment (spec §5): the client's two-phase request, the rendezvous exchange,
//! and the server side of an accepted connection.

use core::net::SocketAddr;

use super::{Connection, Event, Outgoing, State};
use crate::buffer::{RecvBuffer, SendBuffer};
use crate::config::{payload_size, ConnectionConfig, MAX_WINDOW_PKTS, MIN_MSS};
use crate::connection::ConnectError;
use crate::crypto::ext::{Offer, PeerHint, RejectReason};
use crate::crypto::{client_finish, client_hello, server_accept, ClientHello, FinishError};
use crate::seq::SeqNo;
use crate::time::{Instant, SYN_US};
use crate::wire::{
    Control, Handshake, Packet, PeerAddr, RequestType, SocketId, SocketType, UDT_VERSION,
};

/// Interval between repeated connection requests, µs (4.11: "more than 250 ms").
pub(crate) const REQUEST_INTERVAL_US: u64 = 250_000;

/// Handshake state while connecting.
#[derive(Debug)]
pub(super) struct Connecting {
    /// Our request, updated as the exchange proceeds (cookie, request type).
    request: Handshake,
    /// Destination socket ID of our requests: 0 until a rendezvous peer tells its ID.
    request_dst: SocketId,
    last_sent: Instant,
    deadline: Instant,
    rendezvous: bool,
    /// The last complete handshake from a rendezvous peer, used if the connection completes on
    /// a data packet or keep-alive.
    peer: Option<Handshake>,
    /// Random bytes for our ephemeral X25519 key, should the listener offer encryption.
    key_seed: KeySeed,
    /// Our encryption hello, once the listener offered encryption: appended to every
    /// (repeated) second-phase request.
    hello: Option<ClientHello>,
    /// What the listener's cookie reply said of it ([`PeerHint::in_cookie_reply`]): `None`
    /// for UDT4 4.11. Once set, our own hint is appended to the second-phase request (unless
    /// a hello, which says as much, is).
    listener_hint: Option<PeerHint>,
}

/// Secret random bytes; `Debug` does not show them.
pub(crate) struct KeySeed(pub(crate) [u8; 32]);

impl core::fmt::Debug for KeySeed {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("KeySeed(..)")
    }
}

impl Connecting {
    pub(super) fn next_timeout(&self) -> Instant {
        self.deadline
            .min(self.last_sent.plus_micros(REQUEST_INTERVAL_US))
    }

    /// Our current request as a packet to queue, with the hello appended once there is one,
    /// else our peer hint once the listener showed it is ours.
    fn outgoing(&self) -> Outgoing {
        match (&self.hello, self.listener_hint) {
            (Some(h), _) => {
                Outgoing::HandshakeTail(self.request, self.request_dst, Box::new(h.tail))
            }
            (None, Some(_)) => Outgoing::HandshakeTail(
                self.request,
                self.request_dst,
                Box::new(PeerHint::OURS.encode().0),
            ),
            (None, None) => Outgoing::Handshake(self.request, self.request_dst),
        }
    }
}

impl Connection {
    /// A connection that starts connecting to `peer_addr` at `now` (client/server or
    /// rendezvous, as the configuration says). The first request is queued at once.
    /// `key_seed`: fresh random bytes for an ephemeral key, used if encryption is negotiated.
    pub(crate) fn connect(
        now: Instant,
        config: ConnectionConfig,
        local_id: SocketId,
        peer_addr: SocketAddr,
        isn: SeqNo,
        key_seed: [u8; 32],
    ) -> Connection {
        let rendezvous = config.rendezvous;
        let request = Handshake {
            version: UDT_VERSION,
            socket_type: config.kind.wire(),
            isn,
            mss: config.mss,
            flow_window: config.advertised_flow_window(),
            request: if rendezvous {
                RequestType::RENDEZVOUS
            } else {
                RequestType::REQUEST
            },
            socket_id: local_id,
            cookie: 0,
            peer_addr: PeerAddr::from_ip(peer_addr.ip()),
        };
        let connecting = Connecting {
            request,
            request_dst: SocketId::REQUEST,
            last_sent: now,
            deadline: now + config.connect_timeout,
            rendezvous,
            peer: None,
            key_seed: KeySeed(key_seed),
            hello: None,
            listener_hint: None,
        };
        let mut conn = Connection::blank(
            now,
            config,
            local_id,
            peer_addr,
            State::Connecting(Box::new(connecting)),
        );
        conn.queue(Outgoing::Handshake(request, SocketId::REQUEST));
        conn
    }

    /// A server-side connection created by a listener from a valid second-phase request
    /// `req` that arrived from `peer_addr`. It is established at once and its positive response
    /// is queued. `hello`: the encryption hello appended to the request and fresh random bytes
    /// for our ephemeral key, when the listener has a secret and the request carried one; an
    /// invalid hello is an error with the reason to put in the rejection.
    pub(crate) fn accept(
        now: Instant,
        config: ConnectionConfig,
        local_id: SocketId,
        peer_addr: SocketAddr,
        req: &Handshake,
        hello: Option<(&[u8], [u8; 32])>,
    ) -> Result<Connection, RejectReason> {
        let mss = req.mss.clamp(MIN_MSS, config.mss);
        let response = Handshake {
            version: req.version,
            socket_type: req.socket_type,
            isn: req.isn,
            mss,
            flow_window: config.advertised_flow_window(),
            request: RequestType::RESPONSE,
            socket_id: local_id,
            cookie: req.cookie,
            // The client's address as we see it, so a client behind NAT learns its public IP.
            peer_addr: PeerAddr::from_ip(peer_addr.ip()),
        };
        let accepted = match (&config.encryption, hello) {
            (Some(enc), Some((bytes, seed))) => {
                Some(server_accept(enc, req, bytes, &response, seed)?)
            }
            _ => None,
        };
        let mut conn = Connection::blank(now, config, local_id, peer_addr, State::Connected);
        if let Some(a) = accepted {
            conn.crypto = Some(Box::new(a.session));
            conn.response_tail = Some(Box::new(a.tail));
        }
        // The server adopts the client's ISN for both directions (spec §5.6).
        conn.establish(now, req, req.isn, req.isn, mss);
        conn.response = Some(response);
        conn.resend_response();
        Ok(conn)
    }

    /// True if this server-side connection was created by the request `req` (same requester
    /// socket ID and ISN), so a repeated request gets the same answer.
    pub(crate) fn created_by(&self, req: &Handshake) -> bool {
        self.response.is_some_and(|r| r.isn == req.isn) && self.peer_id == req.socket_id
    }

    /// Answers a repeated second-phase request with the original response (the first response
    /// was lost). 4.11 puts its raw flow-window option in such repeats; we repeat the same
    /// value as the first time.
    pub(crate) fn resend_response(&mut self) {
        if let Some(r) = self.response {
            let o = match &self.response_tail {
                Some(t) => Outgoing::HandshakeTail(r, self.peer_id, t.clone()),
                None => Outgoing::Handshake(r, self.peer_id),
            };
            self.queue(o);
        }
    }

    /// True while connected and not broken: a repeated request can be answered.
    pub(crate) fn is_healthy(&self) -> bool {
        self.is_connected()
    }

    fn fail_connect(&mut self, err: ConnectError) {
        self.state = State::Closed;
        self.events.push_back(Event::ConnectFailed(err));
    }

    pub(super) fn connecting_timeout(&mut self, now: Instant) {
        let State::Connecting(c) = &mut self.state else {
            return;
        };
        if now >= c.deadline {
            self.fail_connect(ConnectError::TimedOut);
            return;
        }
        if now.micros_since(c.last_sent) >= REQUEST_INTERVAL_US {
            c.last_sent = now;
            let o = c.outgoing();
            self.queue(o);
        }
    }

    /// A packet while connecting; `tail`: the bytes after a handshake's 48.
    pub(super) fn handle_connecting(&mut self, now: Instant, packet: &Packet<'_>, tail: &[u8]) {
        let State::Connecting(c) = &mut self.state else {
            return;
        };
        let hs = match packet {
            Packet::Control(p) => match &p.control {
                Control::Handshake(h) => *h,
                // A rendezvous peer that already connected may finish our side with data or a
                // keep-alive (spec §5.5).
                Control::KeepAlive if c.rendezvous => {
                    return self.rendezvous_complete_on_traffic(now, packet)
                }
                _ => return,
            },
            Packet::Data(_) if c.rendezvous => {
                return self.rendezvous_complete_on_traffic(now, packet)
            }
            // 4.11 clients treat data while connecting as an error; we wait for the repeated
            // response instead.
            Packet::Data(_) => return,
        };
        if hs.request == RequestType::REJECT {
            // Our listener says why in the peer-address field (docs/encryption.md §2).
            let err = match RejectReason::decode(&hs.peer_addr) {
                Some(RejectReason::EncryptionRequired) => ConnectError::EncryptionRequired,
                Some(RejectReason::AuthenticationFailed) => ConnectError::AuthenticationFailed,
                Some(RejectReason::Unsupported) | None => ConnectError::Rejected,
            };
            self.fail_connect(err);
            return;
        }
        if c.rendezvous {
            if hs.request == RequestType::REQUEST || !hs.socket_id.is_valid() {
                return;
            }
            c.peer = Some(hs);
            c.request_dst = hs.socket_id;
            if c.request.request == RequestType::RENDEZVOUS || hs.request == RequestType::RENDEZVOUS
            {
                c.request.request = RequestType::RESPONSE;
                c.last_sent = now;
                let (req, dst) = (c.request, c.request_dst);
                self.queue(Outgoing::Handshake(req, dst));
            } else {
                let isn = c.request.isn;
                self.complete_rendezvous(now, &hs, isn);
            }
            return;
        }
        if hs.request == RequestType::REQUEST {
            // The listener's cookie reply: echo the cookie in a second-phase request.
            c.request.cookie = hs.cookie;
            c.request.request = RequestType::RESPONSE;
            c.last_sent = now;
            // Our listener offers encryption in the reply's peer-address field; UDT4 4.11
            // and listeners without a secret put an address there.
            let offer = Offer::decode(&hs.peer_addr);
            c.listener_hint = PeerHint::in_cookie_reply(&hs.peer_addr);
            c.hello = match (&self.config.encryption, offer) {
                (Some(enc), Some(_)) => Some(client_hello(enc, &c.request, c.key_seed.0)),
                (Some(enc), None) if enc.is_required() => {
                    // Give up before anything is sent in clear.
                    self.fail_connect(ConnectError::EncryptionUnavailable);
                    return;
                }
                _ => None,
            };
            let o = c.outgoing();
            self.queue(o);
            return;
        }
        if hs.isn != c.request.isn {
            self.fail_connect(ConnectError::SecurityCheck);
            return;
        }
        if !hs.socket_id.is_valid() {
            return;
        }
        if let (Some(enc), Some(hello)) = (&self.config.encryption, &c.hello) {
            match client_finish(enc, hello, &hs, tail) {
                Ok(s) => self.crypto = Some(Box::new(s)),
                Err(FinishError::Missing) => {
                    return self.fail_connect(ConnectError::EncryptionUnavailable)
                }
                Err(FinishError::BadMac) => {
                    return self.fail_connect(ConnectError::AuthenticationFailed)
                }
            }
        }
        let State::Connecting(c) = &self.state else {
            return;
        };
        let mss = hs.mss.clamp(MIN_MSS, self.config.mss);
        let isn = c.request.isn;
        self.peer_takes_bursts = c.listener_hint.is_some_and(|h| h.takes_bursts);
        self.establish(now, &hs, isn, isn, mss);
        self.addr_seen_by_peer = Some(hs.peer_addr.to_ip_like(self.peer_addr.ip()));
    }

    fn rendezvous_complete_on_traffic(&mut self, now: Instant, packet: &Packet<'_>) {
        let State::Connecting(c) = &self.state else {
            return;
        };
        let (Some(peer), isn) = (c.peer, c.request.isn) else {
            return;
        };
        if peer.socket_type.0 == 0 {
            return;
        }
        self.complete_rendezvous(now, &peer, isn);
        self.handle_established(now, packet);
    }

    fn complete_rendezvous(&mut self, now: Instant, peer: &Handshake, own_isn: SeqNo) {
        // Each side adopts the smaller MSS (4.11 takes the peer's whatever it is, which can
        // truncate packets when the two differ) and keeps its own ISN for sending.
        let mss = peer.mss.clamp(MIN_MSS, self.config.mss);
        self.establish(now, peer, own_isn, peer.isn, mss);
        self.addr_seen_by_peer = Some(peer.peer_addr.to_ip_like(self.peer_addr.ip()));
    }

    /// Sets up the data path once the handshake is done. `send_isn`/`recv_isn`: first sequence
    /// number of each direction.
    pub(super) fn establish(
        &mut self,
        now: Instant,
        peer: &Handshake,
        send_isn: SeqNo,
        recv_isn: SeqNo,
        mss: u32,
    ) {
        self.isn = send_isn;
        self.mss = mss;
        // An encrypted connection's tag takes its bytes from the payload, so that sealed
        // packets still fit the MSS.
        self.payload_size = payload_size(mss) - self.crypto_overhead();
        self.peer_id = peer.socket_id;
        self.flow_window = peer.flow_window.clamp(2, MAX_WINDOW_PKTS);
        self.sndbuf = SendBuffer::new(
            self.config.send_buffer_pkts as usize,
            self.payload_size,
            send_isn,
        );
        self.snd_last_ack = send_isn;
        self.receipts = crate::estimate::Receipts::new(send_isn);
        self.rcvbuf = RecvBuffer::new(self.config.effective_recv_buffer_pkts() as usize, recv_isn);
        self.rcv_curr_seq = recv_isn.prev();
        self.rcv_seen_seq = recv_isn.prev();
        self.rcv_last_ack = recv_isn;
        self.rcv_last_ack_ack = recv_isn;
        self.next_ack_time = now.plus_micros(SYN_US);
        self.exp_count = 1;
        self.last_rsp_time = now;
        self.last_heard = now;
        self.next_send_us = now.as_micros() as f64;
        self.state = State::Connected;
        self.with_cc(now, |cc, ctx| cc.init(ctx));
        self.events.push_back(Event::Connected);
    }

    /// A handshake reaching an established connection: a rendezvous peer that has not seen our
    /// confirmation yet gets a `−2` reply (spec §5.5). Client/server duplicates are ignored.
    /// One that does not come from the peer's socket (or, client/server, does not repeat our
    /// ISN) is forged: counted and never answered.
    pub(super) fn on_handshake_when_connected(&mut self, hs: &Handshake) {
        if hs.socket_id != self.peer_id || (!self.config.rendezvous && hs.isn != self.isn) {
            self.stats.count(|c| {
                c.pkt_invalid += 1;
                c.pkt_forged_handshake += 1;
            });
            return;
        }
        if !self.config.rendezvous || hs.request == RequestType::RENDEZVOUS_CONNECTED {
            return;
        }
        let reply = Handshake {
            version: 0,
            socket_type: SocketType(0),
            isn: self.isn,
            mss: self.mss,
            flow_window: self.config.flight_flag_size,
            request: RequestType::RENDEZVOUS_CONNECTED,
            socket_id: self.local_id,
            cookie: 0,
            peer_addr: PeerAddr::default(),
        };
        self.queue(Outgoing::Handshake(reply, self.peer_id));
    }
}
