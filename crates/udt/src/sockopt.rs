//! UDT4's socket options by number (`UDTOpt` in 4.11's `udt.h`), with the value type each
//! takes: the one table the C, C++, Python and Java front ends share, so that every language
//! accepts the same options with the same rules ([`BsdSocket::set_option`]).
//!
//! [`BsdSocket::set_option`]: crate::BsdSocket::set_option

use std::time::Duration;

use udt_proto::cc::SharedFactory;

/// A socket option, numbered as UDT4 numbers it (`UDTOpt`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(i32)]
pub enum SockOpt {
    /// `UDT_MSS`: maximum segment size, bytes including IP and UDP headers (int, 76…65535;
    /// before bind).
    Mss = 0,
    /// `UDT_SNDSYN`: sends block (bool, default true).
    SndSyn = 1,
    /// `UDT_RCVSYN`: receives, accept and connect block (bool, default true).
    RcvSyn = 2,
    /// `UDT_CC`: congestion control (a factory; before connecting).
    Cc = 3,
    /// `UDT_FC`: flight flag size, the largest flow window, packets (int ≥ 1, raised to 32;
    /// before connecting).
    Fc = 4,
    /// `UDT_SNDBUF`: send buffer, bytes (int > 0; before bind).
    SndBuf = 5,
    /// `UDT_RCVBUF`: receive buffer, bytes (int > 0, at least 32 packets, at most the flight
    /// flag size; before bind).
    RcvBuf = 6,
    /// `UDT_LINGER`: how long close keeps delivering queued data (`struct linger`, seconds).
    Linger = 7,
    /// `UDP_SNDBUF`: kernel send buffer of the UDP socket, bytes (int, at least the MSS;
    /// before bind).
    UdpSndBuf = 8,
    /// `UDP_RCVBUF`: kernel receive buffer of the UDP socket, bytes (int, at least the MSS;
    /// before bind).
    UdpRcvBuf = 9,
    /// `UDT_MAXMSG`: declared by 4.11 but not implemented there; refused as 4.11 refuses it.
    MaxMsg = 10,
    /// `UDT_MSGTTL`: declared by 4.11 but not implemented there; refused as 4.11 refuses it.
    MsgTtl = 11,
    /// `UDT_RENDEZVOUS`: connect in rendezvous mode (bool; before connecting).
    Rendezvous = 12,
    /// `UDT_SNDTIMEO`: send timeout, ms (int; −1 = none).
    SndTimeo = 13,
    /// `UDT_RCVTIMEO`: receive timeout, ms (int; −1 = none).
    RcvTimeo = 14,
    /// `UDT_REUSEADDR`: share a UDP port with this process's other UDT sockets (bool, default
    /// true; before bind).
    ReuseAddr = 15,
    /// `UDT_MAXBW`: largest sending rate, bytes per second (int64; −1 = unlimited).
    MaxBw = 16,
    /// `UDT_STATE`: the socket's [`Udt4Status`] (int32, read only).
    ///
    /// [`Udt4Status`]: crate::Udt4Status
    State = 17,
    /// `UDT_EVENT`: current readiness as `UDT_EPOLL_IN`/`OUT`/`ERR` bits (int32, read only).
    Event = 18,
    /// `UDT_SNDDATA`: packets in the send buffer (int32, read only).
    SndData = 19,
    /// `UDT_RCVDATA`: bytes held in the receive buffer (int32, read only).
    RcvData = 20,
}

/// The C type of an option's value, as UDT4's `setsockopt`/`getsockopt` read and write it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OptType {
    /// `int` (32 bits).
    Int,
    /// `bool` (C++ `bool`, one byte; front ends also accept an `int`).
    Bool,
    /// `int64_t`.
    Int64,
    /// `struct linger { int l_onoff; int l_linger; }`, seconds.
    Linger,
    /// A congestion-control factory (UDT4: `CCCFactory<T>*`; front ends name algorithms).
    CongestionControl,
}

/// An option's value.
#[derive(Clone)]
pub enum OptValue {
    /// An `int` option.
    Int(i32),
    /// A `bool` option.
    Bool(bool),
    /// An `int64_t` option.
    Int64(i64),
    /// `UDT_LINGER`: `None` = off (close abandons unsent data), else the linger time (UDT4
    /// counts whole seconds).
    Linger(Option<Duration>),
    /// `UDT_CC`: the algorithm's factory.
    CongestionControl(SharedFactory),
}

impl std::fmt::Debug for OptValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OptValue::Int(v) => f.debug_tuple("Int").field(v).finish(),
            OptValue::Bool(v) => f.debug_tuple("Bool").field(v).finish(),
            OptValue::Int64(v) => f.debug_tuple("Int64").field(v).finish(),
            OptValue::Linger(v) => f.debug_tuple("Linger").field(v).finish(),
            OptValue::CongestionControl(cc) => f
                .debug_tuple("CongestionControl")
                .field(&cc.name())
                .finish(),
        }
    }
}

impl PartialEq for OptValue {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (OptValue::Int(a), OptValue::Int(b)) => a == b,
            (OptValue::Bool(a), OptValue::Bool(b)) => a == b,
            (OptValue::Int64(a), OptValue::Int64(b)) => a == b,
            (OptValue::Linger(a), OptValue::Linger(b)) => a == b,
            (OptValue::CongestionControl(a), OptValue::CongestionControl(b)) => {
                a.name() == b.name()
            }
            _ => false,
        }
    }
}

impl SockOpt {
    /// Every option, in UDT4's order.
    pub const ALL: [SockOpt; 21] = [
        SockOpt::Mss,
        SockOpt::SndSyn,
        SockOpt::RcvSyn,
        SockOpt::Cc,
        SockOpt::Fc,
        SockOpt::SndBuf,
        SockOpt::RcvBuf,
        SockOpt::Linger,
        SockOpt::UdpSndBuf,
        SockOpt::UdpRcvBuf,
        SockOpt::MaxMsg,
        SockOpt::MsgTtl,
        SockOpt::Rendezvous,
        SockOpt::SndTimeo,
        SockOpt::RcvTimeo,
        SockOpt::ReuseAddr,
        SockOpt::MaxBw,
        SockOpt::State,
        SockOpt::Event,
        SockOpt::SndData,
        SockOpt::RcvData,
    ];

    /// The option with UDT4 number `n`, if there is one.
    pub fn from_udt4(n: i32) -> Option<SockOpt> {
        usize::try_from(n)
            .ok()
            .and_then(|i| Self::ALL.get(i).copied())
    }

    /// UDT4's number of this option.
    pub fn udt4_number(self) -> i32 {
        self as i32
    }

    /// UDT4's name of this option (`"UDT_MSS"`, …).
    pub fn udt4_name(self) -> &'static str {
        match self {
            SockOpt::Mss => "UDT_MSS",
            SockOpt::SndSyn => "UDT_SNDSYN",
            SockOpt::RcvSyn => "UDT_RCVSYN",
            SockOpt::Cc => "UDT_CC",
            SockOpt::Fc => "UDT_FC",
            SockOpt::SndBuf => "UDT_SNDBUF",
            SockOpt::RcvBuf => "UDT_RCVBUF",
            SockOpt::Linger => "UDT_LINGER",
            SockOpt::UdpSndBuf => "UDP_SNDBUF",
            SockOpt::UdpRcvBuf => "UDP_RCVBUF",
            SockOpt::MaxMsg => "UDT_MAXMSG",
            SockOpt::MsgTtl => "UDT_MSGTTL",
            SockOpt::Rendezvous => "UDT_RENDEZVOUS",
            SockOpt::SndTimeo => "UDT_SNDTIMEO",
            SockOpt::RcvTimeo => "UDT_RCVTIMEO",
            SockOpt::ReuseAddr => "UDT_REUSEADDR",
            SockOpt::MaxBw => "UDT_MAXBW",
            SockOpt::State => "UDT_STATE",
            SockOpt::Event => "UDT_EVENT",
            SockOpt::SndData => "UDT_SNDDATA",
            SockOpt::RcvData => "UDT_RCVDATA",
        }
    }

    /// The type of the option's value.
    pub fn value_type(self) -> OptType {
        match self {
            SockOpt::SndSyn | SockOpt::RcvSyn | SockOpt::Rendezvous | SockOpt::ReuseAddr => {
                OptType::Bool
            }
            SockOpt::Cc => OptType::CongestionControl,
            SockOpt::Linger => OptType::Linger,
            SockOpt::MaxBw => OptType::Int64,
            _ => OptType::Int,
        }
    }

    /// True for the options that can only be read.
    pub fn is_read_only(self) -> bool {
        matches!(
            self,
            SockOpt::State | SockOpt::Event | SockOpt::SndData | SockOpt::RcvData
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_round_trip_and_match_udt4() {
        for (i, opt) in SockOpt::ALL.iter().enumerate() {
            assert_eq!(opt.udt4_number(), i as i32);
            assert_eq!(SockOpt::from_udt4(i as i32), Some(*opt));
        }
        assert_eq!(SockOpt::from_udt4(-1), None);
        assert_eq!(SockOpt::from_udt4(21), None);
        // Spot checks against 4.11's udt.h enum order.
        assert_eq!(SockOpt::Linger.udt4_number(), 7);
        assert_eq!(SockOpt::MaxBw.udt4_number(), 16);
        assert_eq!(SockOpt::RcvData.udt4_name(), "UDT_RCVDATA");
    }
}
