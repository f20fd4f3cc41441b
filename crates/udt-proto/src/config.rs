//! Configuration of connections and endpoints (the socket options of UDT4 that concern the
//! protocol, spec §14.3).

use core::time::Duration;

use crate::cc::{self, SharedFactory};
use crate::crypto::{Encryption, EncryptionMode};
use crate::wire::SocketType;

/// Smallest MSS UDT allows, bytes: IP+UDP headers (28) plus a handshake (48).
pub const MIN_MSS: u32 = 76;
/// Largest MSS we accept, bytes (the largest UDP datagram plus IP and UDP headers).
pub const MAX_MSS: u32 = 65_535;
/// IP and UDP header bytes that the MSS counts (4.11 uses 28 for IPv6 too).
pub const IP_UDP_HEADER_LEN: u32 = 28;
/// Smallest flow window, packets (4.11 raises smaller `UDT_FC` values to 32).
pub const MIN_FLOW_WINDOW: u32 = 32;
/// Largest flow window or buffer we accept, packets (keeps memory bounded whatever a peer or
/// an option asks for).
pub const MAX_WINDOW_PKTS: u32 = 1 << 20;

/// Whether a connection carries a byte stream or messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum SocketKind {
    /// `SOCK_STREAM`: a reliable byte stream.
    #[default]
    Stream,
    /// `SOCK_DGRAM`: messages with optional TTL and out-of-order delivery.
    Message,
}

impl SocketKind {
    /// The handshake code of this kind.
    pub fn wire(self) -> SocketType {
        match self {
            SocketKind::Stream => SocketType::STREAM,
            SocketKind::Message => SocketType::DGRAM,
        }
    }

    /// The kind a handshake code names; `None` for a code UDT does not define.
    pub fn from_wire(t: SocketType) -> Option<SocketKind> {
        match t {
            SocketType::STREAM => Some(SocketKind::Stream),
            SocketType::DGRAM => Some(SocketKind::Message),
            _ => None,
        }
    }
}

/// Options of one connection. Accepted connections inherit the listener's.
#[derive(Clone)]
pub struct ConnectionConfig {
    /// Stream or message socket.
    pub kind: SocketKind,
    /// Maximum segment size, bytes, including 28 bytes of IP and UDP headers (`UDT_MSS`,
    /// default 1500). Negotiated down to the peer's value in client/server mode.
    pub mss: u32,
    /// Largest flow window, packets (`UDT_FC`, default 131 072; 4.11's is 25 600): what this
    /// side advertises at most, and the most it keeps in flight itself whatever the peer
    /// advertises. Sized with [`ConnectionConfig::recv_buffer_pkts`], for the same reason.
    pub flight_flag_size: u32,
    /// Send buffer, packets (`UDT_SNDBUF` / payload size; default 25 600 ≈ 37 MB): what the
    /// application may queue. Packets sent and not yet acknowledged count against it only up
    /// to half of it; beyond that the buffer grows with the window, which the peer's flow
    /// window and our own [`ConnectionConfig::flight_flag_size`] bound (see
    /// [`crate::buffer::SendBuffer::free_pkts`]).
    pub send_buffer_pkts: u32,
    /// Receive buffer, packets (`UDT_RCVBUF`; default 131 072 ≈ 191 MB at most, taken only
    /// as packets are held). With 4.11's default of 8192 packets a single flow cannot fill
    /// 1 Gb/s at 100 ms RTT. Under 1 % random loss a hole holds the cumulative ACK for two
    /// round trips, and three to five when its retransmission is lost too (the NAK repeats
    /// after 600 ms at the least), so the window behind holes reaches several BDPs: through
    /// `udt relay` at 1 Gb/s, 100 ms, 25 600 packets gave 0.38 of the link, 65 536 0.47–0.64;
    /// in the simulator at 1 Gb/s, 200 ms (clumped delivery), 65 536 packets held the flow
    /// at its window most of the time (0.63 of the link over 30 s) and 131 072 gave 0.76.
    /// (Slow start does not run to this window: it ends on the path's own signals.)
    pub recv_buffer_pkts: u32,
    /// Keep sending queued data for up to this long after `close` (`UDT_LINGER`, default
    /// 180 s); `None` closes at once.
    pub linger: Option<Duration>,
    /// Largest sending rate, bytes per second (`UDT_MAXBW`; `None` = unlimited).
    pub max_bandwidth: Option<u64>,
    /// Congestion control factory (`UDT_CC`; default: native UDT).
    pub congestion_control: SharedFactory,
    /// Give up connecting after this long (4.11: 3 s regular, 30 s rendezvous).
    pub connect_timeout: Duration,
    /// Rendezvous mode (`UDT_RENDEZVOUS`).
    pub rendezvous: bool,
    /// Re-report losses still missing after a NAK interval (the UDT draft's NAK timer).
    /// 4.11 reports each loss once and leaves lost retransmissions to the sender's timeout,
    /// which costs a silent stall of at least 300 ms and a go-back-N burst; repeating the
    /// report repairs them in about one RTT. A 4.11 sender accepts repeated reports. `false`
    /// reproduces 4.11 exactly.
    pub periodic_nak: bool,
    /// Authenticated encryption of the connection's packets (`docs/encryption.md`); `None`
    /// sends everything in clear, as UDT4 does. Client/server mode only: a rendezvous
    /// connection runs in clear ([`EncryptionMode::Required`] is refused there).
    pub encryption: Option<Encryption>,
    /// Declare the peer dead once nothing at all has been heard from it for this long (a
    /// killed peer, a cut path). `None` (the default) keeps 4.11's rule only: more than 16
    /// silent EXP expiries and 5 s, which on a short path is about 46 s. The 4.11 rule still
    /// applies when it fires first.
    pub peer_idle_timeout: Option<Duration>,
}

impl Default for ConnectionConfig {
    fn default() -> Self {
        ConnectionConfig {
            kind: SocketKind::Stream,
            mss: 1500,
            flight_flag_size: 131_072,
            send_buffer_pkts: 25_600,
            recv_buffer_pkts: 131_072,
            linger: Some(Duration::from_secs(180)),
            max_bandwidth: None,
            congestion_control: cc::by_name("udt").expect("native algorithm is registered"),
            connect_timeout: Duration::from_secs(3),
            rendezvous: false,
            periodic_nak: true,
            encryption: None,
            peer_idle_timeout: None,
        }
    }
}

impl core::fmt::Debug for ConnectionConfig {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("ConnectionConfig")
            .field("kind", &self.kind)
            .field("mss", &self.mss)
            .field("flight_flag_size", &self.flight_flag_size)
            .field("send_buffer_pkts", &self.send_buffer_pkts)
            .field("recv_buffer_pkts", &self.recv_buffer_pkts)
            .field("linger", &self.linger)
            .field("max_bandwidth", &self.max_bandwidth)
            .field("congestion_control", &self.congestion_control.name())
            .field("connect_timeout", &self.connect_timeout)
            .field("rendezvous", &self.rendezvous)
            .field("periodic_nak", &self.periodic_nak)
            .field("encryption", &self.encryption)
            .field("peer_idle_timeout", &self.peer_idle_timeout)
            .finish()
    }
}

impl ConnectionConfig {
    /// Checks the values, returning a description of the first invalid one.
    pub fn validate(&self) -> Result<(), &'static str> {
        if !(MIN_MSS..=MAX_MSS).contains(&self.mss) {
            return Err("MSS must be between 76 and 65535 bytes");
        }
        if self.flight_flag_size == 0 || self.flight_flag_size > MAX_WINDOW_PKTS {
            return Err("flight flag size must be between 1 and 2^20 packets");
        }
        if self.send_buffer_pkts == 0 || self.send_buffer_pkts > MAX_WINDOW_PKTS {
            return Err("send buffer must be between 1 and 2^20 packets");
        }
        if self.recv_buffer_pkts == 0 || self.recv_buffer_pkts > MAX_WINDOW_PKTS {
            return Err("receive buffer must be between 1 and 2^20 packets");
        }
        if self.max_bandwidth == Some(0) {
            return Err("maximum bandwidth must be positive");
        }
        if self.rendezvous
            && self
                .encryption
                .as_ref()
                .is_some_and(|e| e.mode == EncryptionMode::Required)
        {
            return Err("encryption is not available in rendezvous mode");
        }
        if self.peer_idle_timeout.is_some_and(|t| t.is_zero()) {
            return Err("peer idle timeout must be positive");
        }
        Ok(())
    }

    /// The flow window this side advertises: `min(receive buffer, flight flag size)`, at least
    /// 32 packets, as 4.11 computes it.
    pub fn advertised_flow_window(&self) -> u32 {
        self.recv_buffer_pkts
            .min(self.flight_flag_size.max(MIN_FLOW_WINDOW))
            .max(MIN_FLOW_WINDOW)
    }

    /// The receive buffer actually used, packets (at least 32, as in 4.11).
    pub fn effective_recv_buffer_pkts(&self) -> u32 {
        self.recv_buffer_pkts.max(MIN_FLOW_WINDOW)
    }
}

/// Data payload per packet for an MSS, bytes (`MSS − 44`).
pub const fn payload_size(mss: u32) -> usize {
    (mss - IP_UDP_HEADER_LEN - crate::wire::HEADER_LEN as u32) as usize
}
