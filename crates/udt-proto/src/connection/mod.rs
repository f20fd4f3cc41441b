//! One UDT connection as a sans-IO state machine.
//!
//! A [`Connection`] is fed parsed packets ([`Connection::handle_packet`]) and the passing of
//! time ([`Connection::handle_timeout`]); it produces datagrams on demand
//! ([`Connection::poll_transmit`]) and says when it next needs attention
//! ([`Connection::poll_timeout`]). The application side is a small socket-like API: stream
//! [`send`](Connection::send)/[`recv`](Connection::recv), message
//! [`send_msg`](Connection::send_msg)/[`recv_msg`](Connection::recv_msg),
//! [`close`](Connection::close) and [`events`](Connection::poll_event).
//!
//! The code is split by the spec's chapters: `handshake` (§5), `sender` (§10), `receiver`
//! (§8.2, §9), `timers` (§8.6, EXP) and `nak_timer` (the draft's NAK timer). Connections
//! normally live inside an
//! [`Endpoint`](crate::endpoint::Endpoint), which demultiplexes datagrams to them.

mod crypt;
mod event;
mod handshake;
mod head_clock;
mod nak_timer;
mod rate_sources;
mod receiver;
mod retx_watch;
mod sender;
mod timers;

use core::net::{IpAddr, SocketAddr};
use std::collections::VecDeque;

pub(crate) use crypt::Opened;
pub use event::{CloseReason, ConnectError, ConnectionState, Event};

use crate::buffer::{MsgRead, RecvBuffer, SendBuffer, SendBufferError, SendSlots, TakenStream};
use crate::cc::{CcContext, CcControls, CcInputs, CongestionControl, CustomMessage};
use crate::config::{payload_size, ConnectionConfig, SocketKind};
use crate::error::Error;
use crate::estimate::{
    AckHistory, DeliveryRate, MinRtt, Receipts, ReceiveRateEstimator, RttEstimator,
};
use crate::loss_list::{ReceiverLossList, SenderLossList};
use crate::seq::{AckNo, SeqNo, SeqRange};
use crate::stats::{InstantStats, PerfStats, Stats};
use crate::time::{Instant, SYN_US};
use crate::wire::{
    Ack, Control, ControlPacket, DropRequest, Handshake, LossReport, Packet, SocketId,
};

use handshake::Connecting;
use rate_sources::RateSources;

/// Most control packets queued for sending; beyond this they are dropped (and counted), so a
/// flood of packets that each call for a reply cannot grow memory while the driver is slow.
const MAX_QUEUED_CONTROL: usize = 4096;
/// Largest pacing stretch congestion warnings can cause before congestion control's next
/// update (about twenty warnings).
const MAX_WARNING_STRETCH: f64 = 10.0;
/// Upper bound on the pacing debt, µs: after a long stall the sender catches up at most this
/// much instead of bursting.
const MAX_TIME_DEBT_US: f64 = 5_000.0;
/// How often the buffers free spare payload buffers they did not need, µs.
const SPARE_TRIM_INTERVAL_US: u64 = 1_000_000;
/// [`Connection::burst_quantum_us`] is the path's smallest RTT divided by this.
pub const BURST_QUANTUM_RTT_DIVISOR: u64 = 40;
/// Shortest burst quantum, µs: below it the wake-ups cost more than the bursts save.
pub const BURST_QUANTUM_MIN_US: u64 = 50;
/// Longest burst quantum, µs: 21 packets of 1500 bytes at 1 Gbit/s, 208 at 10 Gbit/s (a
/// burst is well inside the 5 ms of lateness the sender catches up).
pub const BURST_QUANTUM_MAX_US: u64 = 250;
/// Burst quantum before the RTT is measured, µs.
pub const BURST_QUANTUM_UNKNOWN_RTT_US: u64 = 100;

/// How long a closing connection waits, after its last data is acknowledged, before it sends
/// the Shutdown. UDT4 4.11's blocking `recv`/`recvmsg` check the broken flag before reading
/// once they wake: a Shutdown that lands between the ACK that made data readable and the
/// reader's wake-up makes them report the connection lost with that data unread (4.11's own
/// close sleeps between its checks, which hides this). Two SYN periods give the reader time.
const SHUTDOWN_GRACE: core::time::Duration = core::time::Duration::from_millis(20);

/// Copies of the Shutdown a closing side sends. It is the last packet of the connection and
/// nothing answers it, so one lost copy left the peer to time out and report the connection
/// lost with every byte delivered (at 1 % random loss, one close in a hundred; seen through
/// `udt relay` as a `udt perf server` that failed after a complete transfer). Extra copies
/// are harmless: a Shutdown for a socket that is gone is dropped, by 4.11 as by us.
const SHUTDOWN_COPIES: usize = 3;

/// A control packet waiting to be sent.
#[derive(Debug, Clone)]
enum Outgoing {
    /// A handshake, with its destination socket ID (0 for requests).
    Handshake(Handshake, SocketId),
    /// A handshake with an extension appended (an encryption hello or accept, or a peer
    /// hint).
    HandshakeTail(Handshake, SocketId, Box<[u8]>),
    KeepAlive,
    Ack(Ack),
    LightAck(SeqNo),
    Nak(SeqRange),
    /// A NAK carrying an already encoded loss list.
    NakList(Vec<u8>),
    Ack2(AckNo),
    Shutdown,
    Drop(DropRequest),
    PeerError(u32),
    Custom(CustomMessage),
}

/// Internal lifecycle state.
#[derive(Debug)]
enum State {
    Connecting(Box<Connecting>),
    Connected,
    /// Closed by the application; queued data is still being delivered until `deadline`.
    Closing {
        deadline: Instant,
    },
    /// Ended by the peer or by silence; unread data stays readable.
    Broken(CloseReason),
    /// Finished.
    Closed,
}

/// One UDT connection.
pub struct Connection {
    config: ConnectionConfig,
    local_id: SocketId,
    peer_id: SocketId,
    peer_addr: SocketAddr,
    state: State,
    /// When the socket was opened; data packet timestamps count from here.
    opened_at: Instant,
    /// Our initial sequence number for sending.
    isn: SeqNo,
    mss: u32,
    payload_size: usize,
    /// Our address as the peer reported it in the handshake.
    addr_seen_by_peer: Option<IpAddr>,
    /// The handshake we answered with (server side), re-sent to repeated requests.
    response: Option<Handshake>,
    /// The encryption extension appended to `response`, if the connection is encrypted.
    response_tail: Option<Box<[u8]>>,
    /// The peer is this implementation (the handshake's peer hint): see
    /// [`Connection::peer_takes_bursts`].
    peer_takes_bursts: bool,

    // Sender (spec §10).
    sndbuf: SendBuffer,
    snd_loss: SenderLossList,
    /// Last ACK number received (4.11 `SndLastAck`; may run ahead of the buffer's
    /// acknowledged point through light ACKs).
    snd_last_ack: SeqNo,
    /// Flow window granted by the receiver, packets.
    flow_window: u32,
    /// Ideal time of the next data packet, µs (fractional, so that periods below a microsecond
    /// or not whole microseconds keep their average rate).
    next_send_us: f64,
    /// How far behind schedule the sender is, µs (4.11 `TimeDebt`).
    time_debt_us: f64,
    /// The period the packet after a probing pair waits on top of its own, µs: the pair's
    /// second packet left in its slot (see `CcControls::probe_pair_outside_rate`).
    pair_owed_us: f64,
    /// Receiver's arrival rate, smoothed, packets per second.
    arrival_rate_pps: u32,
    /// Link capacity, smoothed, packets per second.
    bandwidth_pps: u32,
    /// The peer's latest ACK carried a capacity estimate that can be trusted (see
    /// `sender::capacity_settled`; ours sends none while packets reach it in clumps).
    capacity_reported: bool,
    /// The peer's capacity reports have settled once (see `sender::capacity_settled`).
    capacity_settled: bool,
    /// The peer signalled an error; the next send fails once.
    peer_error: bool,
    /// The application found the send buffer full; signal `Writable` when space appears.
    send_blocked: bool,
    /// Pacing stretch from congestion warnings (×1.125 each), until congestion control next
    /// updates.
    warning_stretch: f64,
    /// Retransmissions not yet acknowledged (to find lost ones).
    retx_watch: retx_watch::RetxWatch,
    head_clock: head_clock::HeadClock,
    /// The last head sent again unreported (see `head_clock`), and the last packet sent by
    /// then: a tail loss shows as the next head timing out too (see
    /// `check_lost_retransmissions`).
    unreported_resend: Option<(SeqNo, SeqNo)>,
    /// The highest sequence number any loss report has named (see `sender::on_nak`).
    highest_nak_named: Option<SeqNo>,
    /// A loss report named a packet at or below one an earlier report named: the peer reports
    /// losses again (ours does, 4.11 never), so lost retransmissions need no guessing (see
    /// `retx_watch`).
    peer_repeats_naks: bool,
    /// How fast the peer has been acknowledging data (sender side).
    delivery: DeliveryRate,
    /// Packets the peer is known to hold, from its ACKs and NAKs (sender side).
    receipts: Receipts,
    /// New data packets sent, over time (the same kind of history).
    sent_history: DeliveryRate,
    /// Every data packet sent, retransmissions too, over time (the same kind of history).
    all_sent_history: DeliveryRate,
    /// The peer's arrival rate read faster than we sent within the last
    /// `sender::COMPRESSED_HOLD_US` (see `sender::timing_compressed`): its timing-based
    /// reports are not used.
    peer_timing_compressed: bool,
    /// When the peer's arrival rate last read faster than we sent.
    timing_compressed_at: Option<Instant>,
    /// Smallest recent RTT the peer reported.
    min_rtt: MinRtt,
    /// The RTT of the peer's latest ACK, µs (its own smoothed value, not smoothed again).
    last_rtt_us: u32,

    // Receiver (spec §8.2, §9).
    rcvbuf: RecvBuffer,
    rcv_loss: ReceiverLossList,
    /// Largest sequence number received (4.11 `RcvCurrSeqNo`); a drop request may move it
    /// past anything that arrived.
    rcv_curr_seq: SeqNo,
    /// Largest sequence number of a data packet that actually arrived.
    rcv_seen_seq: SeqNo,
    /// Until then, no ACK may name more than `rcv_seen_seq + 1`: a drop request moved
    /// `rcv_curr_seq` past what the sender may yet count as sent (see `on_drop_request`).
    drop_ack_hold_until: Option<Instant>,
    /// ACK number of the last full ACK (4.11 `RcvLastAck`).
    rcv_last_ack: SeqNo,
    /// Largest ACK number confirmed by ACK2 (4.11 `RcvLastAckAck`).
    rcv_last_ack_ack: SeqNo,
    ack_no: AckNo,
    next_ack_time: Instant,
    /// Data packets since the last full ACK.
    pkt_count: u32,
    light_ack_count: u32,
    /// Time of the last 6-word ACK.
    last_rates_ack_time: Option<Instant>,
    ack_history: AckHistory,
    /// When each outstanding loss was last reported (periodic NAK).
    nak_schedule: nak_timer::NakSchedule,
    rate_estimator: ReceiveRateEstimator,
    readable_signalled: bool,
    /// A lapsed ACK timer was put off by one period because the data packet that found it
    /// was smaller than an ACK (see `on_data`).
    ack_deferred: bool,

    // Shared.
    rtt: RttEstimator,
    exp_count: u32,
    last_rsp_time: Instant,
    /// When the last packet of any kind arrived from the peer (or the connection was
    /// established), for the peer idle timeout.
    last_heard: Instant,
    cc: Box<dyn CongestionControl>,
    cc_ctl: CcControls,
    stats: Stats,
    out: VecDeque<Outgoing>,
    events: VecDeque<Event>,
    shutdown_received: bool,
    /// Why the connection was finished, once it is.
    closed_with: Option<CloseReason>,
    /// The application has called `close`; the endpoint may free the connection once it is
    /// closed and its last packets are out.
    released: bool,
    /// When the send buffer last became empty on an ACK (for the grace before Shutdown).
    drained_at: Option<Instant>,
    /// Closing with everything delivered: only the grace before Shutdown is left.
    linger_drained: bool,
    /// The entry of the endpoint's timer heap that stands for this connection: deadline and
    /// insertion number (other entries of it are stale).
    pub(crate) scheduled: Option<(Instant, u64)>,
    /// Counted in the endpoint's number of connections with a paced send pending.
    pub(crate) paced_counted: bool,
    /// When the buffers last freed their unused spare payload buffers.
    spares_trimmed_at: Instant,
    /// Keys of an encrypted connection, once established (`crypt.rs`).
    crypto: Option<Box<crate::crypto::Session>>,
}

impl core::fmt::Debug for Connection {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Connection")
            .field("local_id", &self.local_id)
            .field("peer_id", &self.peer_id)
            .field("peer_addr", &self.peer_addr)
            .field("state", &self.state)
            .finish_non_exhaustive()
    }
}

impl Connection {
    fn blank(
        now: Instant,
        config: ConnectionConfig,
        local_id: SocketId,
        peer_addr: SocketAddr,
        state: State,
    ) -> Self {
        let mss = config.mss;
        let cc = config.congestion_control.build();
        Connection {
            local_id,
            peer_id: SocketId::REQUEST,
            peer_addr,
            state,
            opened_at: now,
            isn: SeqNo::default(),
            mss,
            payload_size: payload_size(mss),
            addr_seen_by_peer: None,
            response: None,
            response_tail: None,
            peer_takes_bursts: false,
            sndbuf: SendBuffer::new(1, payload_size(mss), SeqNo::default()),
            snd_loss: SenderLossList::new(),
            snd_last_ack: SeqNo::default(),
            flow_window: 0,
            next_send_us: now.as_micros() as f64,
            time_debt_us: 0.0,
            pair_owed_us: 0.0,
            arrival_rate_pps: 16,
            bandwidth_pps: 1,
            capacity_reported: false,
            capacity_settled: false,
            peer_error: false,
            send_blocked: false,
            warning_stretch: 1.0,
            retx_watch: retx_watch::RetxWatch::default(),
            head_clock: head_clock::HeadClock::default(),
            unreported_resend: None,
            highest_nak_named: None,
            peer_repeats_naks: false,
            delivery: DeliveryRate::new(),
            receipts: Receipts::new(SeqNo::default()),
            sent_history: DeliveryRate::new(),
            all_sent_history: DeliveryRate::new(),
            peer_timing_compressed: false,
            timing_compressed_at: None,
            min_rtt: MinRtt::new(),
            last_rtt_us: 0,
            rcvbuf: RecvBuffer::new(2, SeqNo::default()),
            rcv_loss: ReceiverLossList::new(),
            rcv_curr_seq: SeqNo::default(),
            rcv_seen_seq: SeqNo::default(),
            drop_ack_hold_until: None,
            rcv_last_ack: SeqNo::default(),
            rcv_last_ack_ack: SeqNo::default(),
            ack_no: AckNo::default(),
            next_ack_time: now,
            pkt_count: 0,
            light_ack_count: 1,
            last_rates_ack_time: None,
            ack_history: AckHistory::default(),
            nak_schedule: nak_timer::NakSchedule::default(),
            rate_estimator: ReceiveRateEstimator::new(cc.capacity_estimate()),
            readable_signalled: false,
            ack_deferred: false,
            rtt: RttEstimator::default(),
            exp_count: 1,
            last_rsp_time: now,
            last_heard: now,
            cc,
            cc_ctl: CcControls::default(),
            stats: Stats::new(now),
            out: VecDeque::new(),
            events: VecDeque::new(),
            shutdown_received: false,
            closed_with: None,
            released: false,
            drained_at: None,
            linger_drained: false,
            scheduled: None,
            paced_counted: false,
            spares_trimmed_at: now,
            crypto: None,
            config,
        }
    }

    // ---------------------------------------------------------------------------------------
    // Identity and state.

    /// Our socket ID.
    pub fn local_id(&self) -> SocketId {
        self.local_id
    }

    /// The peer's socket ID (0 until the handshake tells it).
    pub fn peer_id(&self) -> SocketId {
        self.peer_id
    }

    /// The peer's UDP address.
    pub fn peer_addr(&self) -> SocketAddr {
        self.peer_addr
    }

    /// Our IP address as the peer saw it (from its handshake), once connected.
    pub fn addr_seen_by_peer(&self) -> Option<IpAddr> {
        self.addr_seen_by_peer
    }

    /// Stream or message socket.
    pub fn kind(&self) -> SocketKind {
        self.config.kind
    }

    /// The configuration the connection runs with.
    pub fn config(&self) -> &ConnectionConfig {
        &self.config
    }

    /// Negotiated MSS, bytes (including IP and UDP headers).
    pub fn mss(&self) -> u32 {
        self.mss
    }

    /// Payload bytes per full data packet (`MSS − 44`).
    pub fn payload_size(&self) -> usize {
        self.payload_size
    }

    /// Coarse state, as UDT4 reports it.
    pub fn state(&self) -> ConnectionState {
        match self.state {
            State::Connecting(_) => ConnectionState::Connecting,
            State::Connected => ConnectionState::Connected,
            State::Closing { .. } => ConnectionState::Closing,
            State::Broken(_) => ConnectionState::Broken,
            State::Closed => ConnectionState::Closed,
        }
    }

    /// Why the connection ended, once it has (`None` while connecting or connected).
    pub fn close_reason(&self) -> Option<CloseReason> {
        match self.state {
            State::Broken(r) => Some(r),
            _ => self.closed_with,
        }
    }

    /// Tells the peer that this side failed (UDT4 sends code 4000 when writing a received file
    /// fails); the peer's next send reports [`Error::PeerError`].
    pub fn signal_peer_error(&mut self, code: u32) {
        if self.is_connected() {
            self.queue(Outgoing::PeerError(code));
        }
    }

    /// True once established and until closed or broken.
    pub fn is_connected(&self) -> bool {
        matches!(self.state, State::Connected | State::Closing { .. })
    }

    /// True when the endpoint can forget this connection: the application released it, it is
    /// finished, and its last packets (Shutdown) are out.
    pub(crate) fn is_reclaimable(&self) -> bool {
        self.released && matches!(self.state, State::Closed) && self.out.is_empty()
    }

    /// True while a handshake is in progress.
    pub(crate) fn is_connecting(&self) -> bool {
        matches!(self.state, State::Connecting(_))
    }

    /// True for a live connection that accepts packets from `addr` (the peer's exact address).
    pub(crate) fn accepts_from(&self, addr: SocketAddr) -> bool {
        addr == self.peer_addr && !matches!(self.state, State::Closed)
    }

    /// The next event, if any.
    pub fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    // ---------------------------------------------------------------------------------------
    // Application: sending.

    fn check_can_send(&mut self, kind: SocketKind) -> Result<(), Error> {
        if self.config.kind != kind {
            return Err(Error::WrongSocketKind);
        }
        match self.state {
            State::Connected => {}
            State::Connecting(_) => return Err(Error::NotConnected),
            State::Closing { .. } | State::Broken(_) | State::Closed => {
                return Err(Error::ConnectionLost)
            }
        }
        if self.peer_error {
            self.peer_error = false;
            return Err(Error::PeerError);
        }
        Ok(())
    }

    /// Queues stream bytes; returns how many were accepted (at least one, or `WouldBlock`).
    pub fn send(&mut self, now: Instant, data: &[u8]) -> Result<usize, Error> {
        self.check_can_send(SocketKind::Stream)?;
        if data.is_empty() {
            return Ok(0);
        }
        self.note_app_send(now);
        let n = self.sndbuf.write_stream(now, data);
        if n == 0 {
            self.send_blocked = true;
            return Err(Error::WouldBlock);
        }
        if n < data.len() {
            self.send_blocked = true;
        }
        self.stats.set_sender_busy(true, now);
        Ok(n)
    }

    /// First half of a stream send that copies outside the caller's lock: appends the front of
    /// `data` to the last unsent block (a small copy, at most one packet) and reserves slots
    /// for up to `max_bytes` more. Returns the bytes appended and the slots, which the caller
    /// fills with the bytes that follow them and hands to
    /// [`commit_stream`](Self::commit_stream). `WouldBlock` when neither took a byte. The
    /// same checks as [`send`](Self::send).
    pub fn reserve_stream(
        &mut self,
        now: Instant,
        data: &[u8],
        max_bytes: usize,
    ) -> Result<(usize, SendSlots), Error> {
        self.check_can_send(SocketKind::Stream)?;
        if data.is_empty() {
            return Ok((0, SendSlots::default()));
        }
        self.note_app_send(now);
        let appended = self
            .sndbuf
            .write_stream(now, &data[..self.sndbuf.tail_room().min(data.len())]);
        let rest = data.len() - appended;
        let slots = self.sndbuf.reserve_stream(rest.min(max_bytes));
        if appended == 0 && slots.is_empty() {
            self.send_blocked = true;
            return Err(Error::WouldBlock);
        }
        if slots.capacity() < rest.min(max_bytes) {
            // The buffer, not the caller's cap, stopped us: signal when room appears.
            self.send_blocked = true;
        }
        if appended > 0 {
            self.stats.set_sender_busy(true, now);
        }
        Ok((appended, slots))
    }

    /// Second half of a stream send: queues the slots that
    /// [`reserve_stream`](Self::reserve_stream) gave, filled; returns the bytes queued. If the
    /// connection can no longer send, the slots are released and the error returned.
    pub fn commit_stream(&mut self, now: Instant, slots: SendSlots) -> Result<usize, Error> {
        if let Err(e) = self.check_can_send(SocketKind::Stream) {
            self.sndbuf.release(slots);
            return Err(e);
        }
        let n = self.sndbuf.commit_stream(now, slots);
        if n > 0 {
            self.stats.set_sender_busy(true, now);
        }
        Ok(n)
    }

    /// First half of a message send that copies outside the caller's lock: reserves slots for
    /// a message of `len` bytes, all or nothing, with the checks of
    /// [`send_msg`](Self::send_msg). The caller fills them with the message and hands them to
    /// [`commit_message`](Self::commit_message).
    pub fn reserve_message(&mut self, now: Instant, len: usize) -> Result<SendSlots, Error> {
        self.check_can_send(SocketKind::Message)?;
        self.note_app_send(now);
        self.sndbuf
            .reserve_message(len)
            .map_err(|e| self.message_refused(e))
    }

    /// The error for a message the send buffer refused; a full buffer signals `Writable` once
    /// room appears.
    fn message_refused(&mut self, e: SendBufferError) -> Error {
        match e {
            SendBufferError::Full => {
                self.send_blocked = true;
                Error::WouldBlock
            }
            SendBufferError::MessageTooLarge { .. } => Error::MessageTooLarge,
            SendBufferError::Empty => Error::InvalidArgument("empty message"),
        }
    }

    /// Second half of a message send: queues the filled slots as one message. `ttl` and
    /// `in_order` as in [`send_msg`](Self::send_msg), the TTL counted from `now`. If the
    /// connection can no longer send, the slots are released and the error returned.
    pub fn commit_message(
        &mut self,
        now: Instant,
        slots: SendSlots,
        ttl: Option<core::time::Duration>,
        in_order: bool,
    ) -> Result<(), Error> {
        if let Err(e) = self.check_can_send(SocketKind::Message) {
            self.sndbuf.release(slots);
            return Err(e);
        }
        let ttl_ms = ttl_in_ms(ttl);
        if self.sndbuf.commit_message(now, slots, ttl_ms, in_order) > 0 {
            self.stats.set_sender_busy(true, now);
        }
        Ok(())
    }

    /// Releases slots that will not be committed (the caller gave up between the halves).
    pub fn release_slots(&mut self, slots: SendSlots) {
        self.sndbuf.release(slots);
    }

    /// Queues one message. `ttl`: give up on it if not delivered within this time (counted
    /// from now; `None` = reliable); `in_order`: the receiver must deliver it in sequence.
    pub fn send_msg(
        &mut self,
        now: Instant,
        data: &[u8],
        ttl: Option<core::time::Duration>,
        in_order: bool,
    ) -> Result<(), Error> {
        self.check_can_send(SocketKind::Message)?;
        self.note_app_send(now);
        let ttl_ms = ttl_in_ms(ttl);
        match self.sndbuf.write_message(now, data, ttl_ms, in_order) {
            Ok(()) => {
                self.stats.set_sender_busy(true, now);
                Ok(())
            }
            Err(e) => Err(self.message_refused(e)),
        }
    }

    /// A send into an empty buffer restarts the silence clock, so that an idle period is not
    /// taken for a dead peer (spec §8.6).
    fn note_app_send(&mut self, now: Instant) {
        if self.sndbuf.is_empty() {
            self.last_rsp_time = now;
            // The sender was idle: it starts on schedule now, owing nothing.
            self.next_send_us = self.next_send_us.max(now.as_micros() as f64);
            self.time_debt_us = 0.0;
        }
    }

    /// Free send-buffer space, bytes.
    pub fn send_buffer_free(&self) -> usize {
        self.sndbuf.free_pkts() * self.payload_size
    }

    /// Packets held in the send buffer (unsent and unacknowledged).
    pub fn send_buffer_pkts(&self) -> usize {
        self.sndbuf.len_pkts()
    }

    /// True when every byte queued has been acknowledged.
    pub fn all_acked(&self) -> bool {
        self.sndbuf.is_empty()
    }

    /// Changes the largest sending rate, bytes per second (`UDT_MAXBW`; `None` = unlimited).
    /// UDT4 allows this at any time; it applies from the next packet on.
    pub fn set_max_bandwidth(&mut self, bytes_per_sec: Option<u64>) -> Result<(), Error> {
        if bytes_per_sec == Some(0) {
            return Err(Error::InvalidArgument("maximum bandwidth must be positive"));
        }
        self.config.max_bandwidth = bytes_per_sec;
        Ok(())
    }

    /// Changes how long `close` keeps delivering queued data (`UDT_LINGER`; `None` closes at
    /// once). UDT4 allows this at any time; it applies to the next `close`.
    pub fn set_linger(&mut self, linger: Option<core::time::Duration>) {
        self.config.linger = linger;
    }

    /// Free send-buffer space, packets, that a writer blocked on a full buffer waits for
    /// before [`Event::Writable`] wakes it: an eighth of the buffer (at least one packet).
    /// Waking it for every ACK's few packets cost a context switch per light ACK, 1 300 a
    /// second at 1 Gbit/s, for a copy of 64 packets each; with the low-water mark a wake-up
    /// copies thousands. An eighth of the default buffer is still 3 200 packets of headroom
    /// before the sender runs dry, so throughput does not depend on the writer's latency.
    /// [`is_writable`](Self::is_writable) still reports any free space when asked; a runtime
    /// that refreshes readiness on events tells its pollers at the same mark.
    pub(crate) fn writable_low_water_pkts(&self) -> usize {
        (self.sndbuf.capacity_pkts() / 8).max(1)
    }

    /// True when the handshake showed the peer to be this implementation (its peer hint,
    /// `crypto::ext::PeerHint`), whose receiver reads datagrams in batches and takes
    /// line-rate bursts: a runtime may then put this connection's datagrams in GSO buffers
    /// while other connections of the port send too. False for UDT4 4.11 and rendezvous
    /// peers (a rendezvous has no cookie reply to carry the hint).
    pub fn peer_takes_bursts(&self) -> bool {
        self.peer_takes_bursts
    }

    pub(crate) fn set_peer_takes_bursts(&mut self, yes: bool) {
        self.peer_takes_bursts = yes;
    }

    /// True when a send would accept data now.
    pub fn is_writable(&self) -> bool {
        matches!(self.state, State::Connected) && self.sndbuf.free_pkts() > 0
    }

    // ---------------------------------------------------------------------------------------
    // Application: receiving.

    fn recv_state_error(&self) -> Error {
        match self.state {
            State::Connecting(_) => Error::NotConnected,
            State::Connected | State::Closing { .. } => Error::WouldBlock,
            State::Broken(_) | State::Closed => Error::ConnectionLost,
        }
    }

    /// Reads stream bytes into `buf`. `WouldBlock` when nothing is readable yet;
    /// `ConnectionLost` once the connection ended and everything was read.
    pub fn recv(&mut self, buf: &mut [u8]) -> Result<usize, Error> {
        if self.config.kind != SocketKind::Stream {
            return Err(Error::WrongSocketKind);
        }
        if buf.is_empty() {
            return Ok(0);
        }
        let n = self.rcvbuf.read_stream(buf);
        self.readable_signalled = self.rcvbuf.stream_readable();
        if n == 0 {
            return Err(self.recv_state_error());
        }
        Ok(n)
    }

    /// Stream bytes for a reader that copies outside the caller's lock: moves out the payload
    /// buffers of whole packets, up to `max_bytes` of unread data (see
    /// [`RecvBuffer::take_stream`]); hand them back with [`give_back`](Self::give_back). Empty
    /// when the first packet's unread bytes exceed `max_bytes` (read those with
    /// [`recv`](Self::recv)); `WouldBlock` or the connection's end as for `recv` when nothing
    /// is readable.
    pub fn take_stream(&mut self, max_bytes: usize) -> Result<TakenStream, Error> {
        if self.config.kind != SocketKind::Stream {
            return Err(Error::WrongSocketKind);
        }
        if max_bytes == 0 {
            return Ok(TakenStream::default());
        }
        if !self.rcvbuf.stream_readable() {
            return Err(self.recv_state_error());
        }
        let taken = self.rcvbuf.take_stream(max_bytes);
        self.readable_signalled = self.rcvbuf.stream_readable();
        Ok(taken)
    }

    /// Returns the buffers of a [`take_stream`](Self::take_stream) for reuse.
    pub fn give_back(&mut self, taken: TakenStream) {
        self.rcvbuf.give_back(taken);
    }

    /// Reads one message into `buf` (truncated if `buf` is too small; the rest is discarded).
    pub fn recv_msg(&mut self, buf: &mut [u8]) -> Result<MsgRead, Error> {
        if self.config.kind != SocketKind::Message {
            return Err(Error::WrongSocketKind);
        }
        let r = self.rcvbuf.read_message(buf);
        self.readable_signalled = self.rcvbuf.message_readable();
        r.ok_or_else(|| self.recv_state_error())
    }

    /// True when a receive would return data (or a message) now.
    pub fn is_readable(&mut self) -> bool {
        match self.config.kind {
            SocketKind::Stream => self.rcvbuf.stream_readable(),
            SocketKind::Message => self.rcvbuf.message_readable(),
        }
    }

    fn signal_readable(&mut self) {
        if !self.readable_signalled && self.is_readable() {
            self.readable_signalled = true;
            self.events.push_back(Event::Readable);
        }
    }

    // ---------------------------------------------------------------------------------------
    // Application: closing.

    /// Closes the connection. With linger configured and data still queued, the connection
    /// keeps delivering it until it is acknowledged or the linger time passes; then a Shutdown
    /// is sent. Idempotent.
    pub fn close(&mut self, now: Instant) {
        self.released = true;
        match self.state {
            State::Connecting(_) => {
                self.state = State::Closed;
            }
            State::Connected => match self.config.linger {
                Some(linger) if !self.sndbuf.is_empty() => {
                    self.state = State::Closing {
                        deadline: now + linger,
                    };
                }
                Some(_) if self.in_shutdown_grace(now) => {
                    let at = self.drained_at.unwrap_or(now);
                    self.state = State::Closing {
                        deadline: at + SHUTDOWN_GRACE,
                    };
                    self.linger_drained = true;
                }
                _ => self.finish(now, CloseReason::Local),
            },
            State::Broken(reason) => {
                self.closed_with = Some(reason);
                // 4.11 still sends a Shutdown after a timeout death; not after the peer's own.
                if !self.shutdown_received {
                    self.queue_shutdown();
                }
                self.state = State::Closed;
            }
            State::Closing { .. } | State::Closed => {}
        }
    }

    /// Closes at once, without lingering: data not yet acknowledged is abandoned and the peer
    /// is sent a Shutdown.
    pub fn abort(&mut self, now: Instant) {
        match self.state {
            State::Connected | State::Closing { .. } => {
                self.released = true;
                self.finish(now, CloseReason::Local);
            }
            _ => self.close(now),
        }
    }

    /// True while the last data was acknowledged less than [`SHUTDOWN_GRACE`] ago.
    fn in_shutdown_grace(&self, now: Instant) -> bool {
        self.drained_at.is_some_and(|t| now < t + SHUTDOWN_GRACE)
    }

    /// Everything queued was acknowledged while closing: send the Shutdown after the grace
    /// period rather than at once.
    pub(super) fn drained_while_closing(&mut self, now: Instant) {
        if let State::Closing { deadline } = self.state {
            self.linger_drained = true;
            self.state = State::Closing {
                deadline: deadline.min(now + SHUTDOWN_GRACE),
            };
        }
    }

    /// Ends a live connection: Shutdown to the peer, congestion control closed.
    fn finish(&mut self, now: Instant, reason: CloseReason) {
        if !self.shutdown_received {
            self.queue_shutdown();
        }
        self.with_cc(now, |cc, ctx| cc.close(ctx));
        self.stats.set_sender_busy(false, now);
        self.state = State::Closed;
        self.closed_with = Some(reason);
        self.events.push_back(Event::Closed(reason));
    }

    /// Queues the Shutdown, [`SHUTDOWN_COPIES`] times.
    fn queue_shutdown(&mut self) {
        for _ in 0..SHUTDOWN_COPIES {
            self.queue(Outgoing::Shutdown);
        }
    }

    /// Marks the connection broken (peer shutdown or silence): sending stops, unread data stays.
    fn break_connection(&mut self, now: Instant, reason: CloseReason) {
        self.with_cc(now, |cc, ctx| cc.close(ctx));
        self.stats.set_sender_busy(false, now);
        self.closed_with = Some(reason);
        self.state = if self.released {
            State::Closed
        } else {
            State::Broken(reason)
        };
        self.events.push_back(Event::Closed(reason));
    }

    // ---------------------------------------------------------------------------------------
    // Statistics.

    fn instant_stats(&self) -> InstantStats {
        InstantStats {
            payload_size: self.payload_size as u32,
            pkt_snd_period_us: self.cc_ctl.pkt_snd_period_us,
            flow_window_pkts: self.flow_window,
            cwnd_pkts: self.cc_ctl.cwnd_pkts.min(f64::from(u32::MAX)) as u32,
            flight_size_pkts: self.sndbuf.unacked_pkts() as u32,
            rtt_us: self.rtt.rtt_us(),
            bandwidth_pps: self.bandwidth_pps,
            avail_snd_buf_bytes: (self.sndbuf.free_pkts() as u64) * u64::from(self.mss),
            avail_rcv_buf_bytes: u64::from(self.available_recv_buffer()) * u64::from(self.mss),
        }
    }

    /// A statistics snapshot (UDT4 `perfmon`); `clear` restarts the since-last-query values.
    pub fn stats(&mut self, now: Instant, clear: bool) -> PerfStats {
        let instant = self.instant_stats();
        self.stats.snapshot(now, instant, clear)
    }

    /// Smoothed RTT, µs.
    pub fn rtt_us(&self) -> u32 {
        self.rtt.rtt_us()
    }

    /// Name of the congestion control algorithm.
    pub fn congestion_control_name(&self) -> &str {
        self.config.congestion_control.name()
    }

    // ---------------------------------------------------------------------------------------
    // Congestion control plumbing.

    /// The measurements congestion control is given, except the rates that
    /// [`RateSources`] measures on demand (0 here).
    fn cc_inputs(&self, now: Instant) -> CcInputs {
        CcInputs {
            now,
            mss: self.mss,
            max_cwnd_pkts: f64::from(self.flow_window),
            snd_curr_seq: self.sndbuf.last_sent_seq(),
            rcv_rate_pps: 0,
            rtt_us: self.rtt.rtt_us(),
            rtt_var_us: self.rtt.var_us(),
            bandwidth_pps: self.bandwidth_pps,
            capacity_reported: self.capacity_reported,
            delivery_rate_pps: 0.0,
            receipt_rate_pps: 0.0,
            acked_pkts: self.delivery.acked_pkts(),
            sent_rate_rtt_ago_pps: 0.0,
            min_rtt_us: self.min_rtt.get().unwrap_or(0),
            last_rtt_us: self.last_rtt_us,
            inflight_pkts: self.sndbuf.unacked_pkts() as u32,
        }
    }

    /// Runs one congestion-control hook with a context over this connection.
    fn with_cc(
        &mut self,
        now: Instant,
        f: impl FnOnce(&mut dyn CongestionControl, &mut CcContext<'_>),
    ) {
        let inputs = self.cc_inputs(now);
        let instant = self.instant_stats();
        let sources = RateSources {
            now,
            rtt_us: self.rtt.rtt_us(),
            delivery: &self.delivery,
            receipts: &self.receipts,
            sent_history: &self.sent_history,
            arrival_rate_pps: self.arrival_rate_pps,
            peer_timing_compressed: self.peer_timing_compressed,
            pacing_pps: 1e6 / self.effective_period_us(),
        };
        let measure = |all: &mut CcInputs| sources.measure(all);
        let mut ctx = CcContext::with_stats(&inputs, &self.stats, instant, &mut self.cc_ctl)
            .measured_on_demand(&measure);
        f(&mut *self.cc, &mut ctx);
    }

    // ---------------------------------------------------------------------------------------
    // Output.

    fn queue(&mut self, o: Outgoing) {
        if self.out.len() < MAX_QUEUED_CONTROL {
            self.out.push_back(o);
        } else {
            self.stats.count(|c| c.pkt_invalid += 1);
        }
    }

    fn emit_control(&self, o: &Outgoing, buf: &mut [u8]) -> Option<usize> {
        let mut nak = [0u8; 8];
        let (dst, control) = match o {
            Outgoing::Handshake(h, dst) => (*dst, Control::Handshake(*h)),
            Outgoing::HandshakeTail(h, dst, tail) => {
                let n = ControlPacket::new(*dst, Control::Handshake(*h))
                    .emit(buf)
                    .ok()?;
                buf.get_mut(n..n + tail.len())?.copy_from_slice(&tail[..]);
                return Some(n + tail.len());
            }
            Outgoing::KeepAlive => (self.peer_id, Control::KeepAlive),
            Outgoing::Ack(a) => (self.peer_id, Control::Ack(*a)),
            Outgoing::LightAck(s) => (self.peer_id, Control::LightAck(*s)),
            Outgoing::Nak(r) => {
                let n = LossReport::encode([*r], &mut nak).ok()?;
                (
                    self.peer_id,
                    Control::Nak(LossReport::parse(&nak[..n]).ok()?),
                )
            }
            Outgoing::NakList(words) => {
                (self.peer_id, Control::Nak(LossReport::parse(words).ok()?))
            }
            Outgoing::Ack2(n) => (self.peer_id, Control::Ack2(*n)),
            Outgoing::Shutdown => (self.peer_id, Control::Shutdown),
            Outgoing::Drop(d) => (self.peer_id, Control::DropRequest(*d)),
            Outgoing::PeerError(code) => (self.peer_id, Control::PeerError(*code)),
            Outgoing::Custom(m) => (
                self.peer_id,
                Control::UserDefined(crate::wire::UserDefined {
                    ext_type: m.ext_type,
                    info: m.info,
                    body: &m.body,
                }),
            ),
        };
        ControlPacket::new(dst, control).emit(buf).ok()
    }

    /// Writes the next datagram to send into `buf` (which should hold at least `MSS − 28`
    /// bytes) and returns its length; `None` when nothing is due at `now`.
    pub fn poll_transmit(&mut self, now: Instant, buf: &mut [u8]) -> Option<usize> {
        loop {
            if let Some(o) = self.out.pop_front() {
                match self
                    .emit_control(&o, buf)
                    .and_then(|n| self.seal_control(&o, buf, n))
                {
                    Some(n) => return Some(n),
                    // A custom message larger than the buffer (or too large to seal): dropped
                    // and counted.
                    None => {
                        self.stats.count(|c| c.pkt_invalid += 1);
                        continue;
                    }
                }
            }
            if !self.cc_ctl.outbox.is_empty() {
                let msgs = core::mem::take(&mut self.cc_ctl.outbox);
                for m in msgs {
                    self.queue(Outgoing::Custom(m));
                }
                continue;
            }
            if !self.is_connected() || now < self.next_send_time() {
                return None;
            }
            match self.send_data(now, buf) {
                sender::DataOutcome::Sent(n) => return Some(n),
                // A drop request was queued instead of data: send it.
                sender::DataOutcome::Queued => continue,
                sender::DataOutcome::Nothing => return None,
            }
        }
    }

    /// The next instant at which [`handle_timeout`](Self::handle_timeout) or
    /// [`poll_transmit`](Self::poll_transmit) has work; `None` if the connection waits only for
    /// input. An instant in the past means "now".
    pub fn poll_timeout(&self) -> Option<Instant> {
        if !self.out.is_empty() || !self.cc_ctl.outbox.is_empty() {
            return Some(Instant::ZERO);
        }
        match &self.state {
            State::Connecting(c) => Some(c.next_timeout()),
            State::Connected | State::Closing { .. } => {
                let mut t = self.exp_deadline();
                if let Some(idle) = self.idle_deadline() {
                    t = t.min(idle);
                }
                if let Some(ack) = self.ack_deadline() {
                    t = t.min(ack);
                }
                if let Some(nak) = self.nak_deadline() {
                    t = t.min(nak);
                }
                if let Some(r) = self
                    .retx_watch
                    .head_deadline(self.retx_timeout_us(), self.sndbuf.first_seq())
                {
                    t = t.min(r);
                }
                if let Some(r) = self.head_clock.deadline(self.retx_timeout_us()) {
                    t = t.min(r);
                }
                if let Some(send) = self.paced_send_time() {
                    t = t.min(send);
                }
                if let State::Closing { deadline } = self.state {
                    t = t.min(deadline);
                }
                Some(t)
            }
            State::Broken(_) | State::Closed => None,
        }
    }

    /// The instant of the next paced data packet, if data is waiting to be sent: the one
    /// deadline whose precision sets the achieved rate, so a runtime should meet it to the
    /// microsecond (the ACK, NAK and EXP timers tolerate ordinary scheduler latency).
    pub fn paced_send_time(&self) -> Option<Instant> {
        match self.state {
            State::Connected | State::Closing { .. } if self.has_sendable_data() => {
                Some(self.next_send_time())
            }
            _ => None,
        }
    }

    /// How long a runtime that paces in bursts may gather this connection's paced sends, µs:
    /// it wakes at most once per quantum and sends back to back what fell due since (the
    /// lateness debt keeps the average rate). 1/[`BURST_QUANTUM_RTT_DIVISOR`] of the path's
    /// smallest recent RTT, within [`BURST_QUANTUM_MIN_US`]..=[`BURST_QUANTUM_MAX_US`];
    /// [`BURST_QUANTUM_UNKNOWN_RTT_US`] before an RTT is measured.
    ///
    /// Why scaled by the RTT: a burst arrives at a bottleneck faster than the link drains it,
    /// and queues are sized in bandwidth-delay products. At 1/40 of the RTT a burst at the
    /// link's rate is 1/40 of a BDP, so a shallow queue of 0.1 BDP holds four of them. A fixed
    /// 250 µs (21 packets at 1 Gbit/s) overflowed the 8-packet queue of 1 Gbit/s at 1 ms
    /// (utilization 0.47 in the simulator, against 0.97 at 100 µs), while at 100 ms it cut the
    /// sender's CPU per GB by a quarter against 100 µs through `udt relay`.
    pub fn burst_quantum_us(&self) -> u64 {
        match self.min_rtt.get() {
            Some(rtt) => (u64::from(rtt) / BURST_QUANTUM_RTT_DIVISOR)
                .clamp(BURST_QUANTUM_MIN_US, BURST_QUANTUM_MAX_US),
            None => BURST_QUANTUM_UNKNOWN_RTT_US,
        }
    }

    /// Runs the timers that are due at `now`.
    pub fn handle_timeout(&mut self, now: Instant) {
        // Housekeeping on whatever timer runs (no deadline of its own): free payload buffers
        // that went unused for a whole interval.
        if now.micros_since(self.spares_trimmed_at) >= SPARE_TRIM_INTERVAL_US {
            self.spares_trimmed_at = now;
            self.sndbuf.trim_spares();
            self.rcvbuf.trim_spares();
        }
        match self.state {
            State::Connecting(_) => self.connecting_timeout(now),
            State::Connected | State::Closing { .. } => {
                self.check_ack_timers(now, true);
                self.check_nak_timer(now);
                self.check_lost_retransmissions(now);
                self.check_exp(now);
                if let State::Closing { deadline } = self.state {
                    if now >= deadline {
                        let reason = if self.linger_drained {
                            CloseReason::Local
                        } else {
                            CloseReason::LingerExpired
                        };
                        self.finish(now, reason);
                    }
                }
            }
            State::Broken(_) | State::Closed => {}
        }
    }

    /// Processes one packet from the peer (the endpoint has checked its source address).
    pub fn handle_packet(&mut self, now: Instant, packet: &Packet<'_>) {
        self.handle_packet_with_tail(now, packet, &[]);
    }

    /// [`handle_packet`](Self::handle_packet) with the bytes that followed a handshake's 48
    /// (an encryption extension, `docs/encryption.md`); empty for other packets.
    pub(crate) fn handle_packet_with_tail(
        &mut self,
        now: Instant,
        packet: &Packet<'_>,
        tail: &[u8],
    ) {
        match self.state {
            State::Connecting(_) => self.handle_connecting(now, packet, tail),
            State::Connected | State::Closing { .. } => self.handle_established(now, packet),
            State::Broken(_) | State::Closed => {}
        }
    }

    fn handle_established(&mut self, now: Instant, packet: &Packet<'_>) {
        // Anything from the peer proves it alive (spec §8.6) and restarts the EXP timer, except
        // a keep-alive while we have data outstanding: the peer sends one only when it has heard
        // nothing from us, so it says our (re)transmissions are not arriving, and restarting
        // the timer then can postpone the retransmission forever (a peer whose keep-alive
        // period is shorter than our RTO, e.g. both sides running a fixed-RTO algorithm).
        //
        // Nor, under an algorithm that sets its own RTO, a light ACK that acknowledges nothing
        // new: a receiver waiting on holes repeats one every ACK period (`waiting_on_holes`,
        // when the receiving side runs the native timer), which keeps the native EXP timer
        // from firing while a retransmission is on its way; TCP's RTO restarts only on
        // progress, and its timeout is how such an algorithm recovers a lost retransmission.
        self.last_heard = now;
        let keep_alive =
            matches!(packet, Packet::Control(c) if matches!(c.control, Control::KeepAlive));
        let no_progress = self.cc_ctl.rto_us.is_some()
            && matches!(packet, Packet::Control(c)
                if matches!(c.control, Control::LightAck(a) if a == self.snd_last_ack));
        if !(keep_alive || no_progress) || self.sndbuf.is_empty() {
            self.exp_count = 1;
            self.last_rsp_time = now;
        }
        match packet {
            Packet::Data(d) => self.on_data(now, d),
            Packet::Control(c) => match &c.control {
                Control::Ack(a) => self.on_ack(now, a),
                Control::LightAck(a) => self.on_light_ack(now, *a),
                Control::Nak(r) => self.on_nak(now, r),
                Control::Ack2(n) => self.on_ack2(now, *n),
                Control::KeepAlive => {}
                Control::Shutdown => {
                    self.shutdown_received = true;
                    self.break_connection(now, CloseReason::PeerShutdown);
                }
                Control::DropRequest(d) => self.on_drop_request(now, d),
                Control::CongestionWarning => {
                    // 4.11 stretches the period by 1/8 without telling congestion control,
                    // which overwrites it at its next update: the effect is transient. We keep
                    // the stretch apart, capped, and drop it at congestion control's next
                    // update, so that a flood of warnings cannot stall the sender.
                    self.warning_stretch = (self.warning_stretch * 1.125).min(MAX_WARNING_STRETCH);
                }
                Control::PeerError(_) => self.peer_error = true,
                Control::UserDefined(u) => {
                    let u = *u;
                    self.with_cc(now, |cc, ctx| cc.on_custom_message(ctx, &u));
                }
                Control::Handshake(h) => self.on_handshake_when_connected(h),
            },
        }
    }

    /// EXP deadline (spec §8.6).
    fn exp_deadline(&self) -> Instant {
        let interval = match self.cc_ctl.rto_us {
            Some(rto) => rto,
            None => {
                let k = u64::from(self.exp_count);
                let rto = u64::from(self.rtt.rtt_us()) + 4 * u64::from(self.rtt.var_us());
                (k * rto + SYN_US).max(k * timers::EXP_FLOOR_US)
            }
        };
        self.last_rsp_time.plus_micros(interval)
    }

    /// Free receive buffer advertised to the peer, packets (4.11 `availableBuffer`).
    fn available_recv_buffer(&self) -> u32 {
        let held = self.rcvbuf.slots_before(self.rcv_last_ack);
        (self.rcvbuf.capacity_pkts().saturating_sub(held + 1)) as u32
    }
}

/// A message's time to live in whole milliseconds, saturating (`None`: until delivered).
fn ttl_in_ms(ttl: Option<core::time::Duration>) -> Option<u32> {
    ttl.map(|d| u32::try_from(d.as_millis()).unwrap_or(u32::MAX))
}
