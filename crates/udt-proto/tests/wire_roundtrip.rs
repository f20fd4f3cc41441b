//! Property tests of the wire layer: emit → parse round trips for every packet type, robustness
//! of `Packet::parse` on arbitrary bytes, and the length errors of spec §1–§4.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use proptest::collection::vec;
use proptest::prelude::*;
use proptest::test_runner::TestCaseResult;

use udt_proto::wire::control::kind;
use udt_proto::wire::{
    Ack, AckRates, Boundary, Control, ControlPacket, DataHeader, DropRequest, Handshake,
    LossReport, MessageWord, Packet, PeerAddr, RequestType, SocketType, UserDefined, WireError,
    HANDSHAKE_LEN, HEADER_LEN,
};
use udt_proto::{AckNo, MsgNo, SeqNo, SeqRange, SocketId};

// ---------------------------------------------------------------------------------------------
// Strategies
// ---------------------------------------------------------------------------------------------

fn seq_no() -> impl Strategy<Value = SeqNo> {
    prop_oneof![
        1 => Just(0u32),
        1 => Just(SeqNo::MAX),
        8 => 0u32..=SeqNo::MAX,
    ]
    .prop_map(|v| SeqNo::new(v).unwrap())
}

fn ack_no() -> impl Strategy<Value = AckNo> {
    (0u32..=AckNo::MAX).prop_map(|v| AckNo::new(v).unwrap())
}

fn msg_no() -> impl Strategy<Value = MsgNo> {
    (0u32..=MsgNo::MAX).prop_map(|v| MsgNo::new(v).unwrap())
}

fn socket_id() -> impl Strategy<Value = SocketId> {
    any::<u32>().prop_map(SocketId)
}

/// A length for a non-reversed range `[first, first + len]`: short ones often, up to just below
/// the wrap-aware comparison threshold (a longer "range" compares as reversed, spec §7.1).
fn range_extent() -> impl Strategy<Value = u32> {
    prop_oneof![
        3 => Just(0u32),
        3 => 1u32..16,
        2 => 0u32..SeqNo::THRESHOLD,
        1 => Just(SeqNo::THRESHOLD - 1),
    ]
}

fn seq_range() -> impl Strategy<Value = SeqRange> {
    (seq_no(), range_extent()).prop_map(|(first, len)| SeqRange {
        first,
        last: first.add(len),
    })
}

/// A range of at least two numbers.
fn long_seq_range() -> impl Strategy<Value = SeqRange> {
    (seq_no(), prop_oneof![1u32..16, 1u32..SeqNo::THRESHOLD]).prop_map(|(first, len)| SeqRange {
        first,
        last: first.add(len),
    })
}

fn boundary() -> impl Strategy<Value = Boundary> {
    prop_oneof![
        Just(Boundary::Middle),
        Just(Boundary::Last),
        Just(Boundary::First),
        Just(Boundary::Solo)
    ]
}

fn message_word() -> impl Strategy<Value = MessageWord> {
    prop_oneof![
        (boundary(), any::<bool>(), msg_no()).prop_map(|(b, o, m)| MessageWord::new(b, o, m)),
        any::<u32>().prop_map(MessageWord::from_raw),
    ]
}

fn data_header() -> impl Strategy<Value = DataHeader> {
    (seq_no(), message_word(), any::<u32>(), socket_id()).prop_map(
        |(seq, message, timestamp, dst)| DataHeader {
            seq,
            message,
            timestamp,
            dst,
        },
    )
}

fn peer_addr() -> impl Strategy<Value = PeerAddr> {
    prop_oneof![
        any::<[u8; 16]>().prop_map(PeerAddr),
        any::<[u8; 4]>().prop_map(|o| PeerAddr::from_ip(IpAddr::V4(Ipv4Addr::from(o)))),
        any::<[u8; 16]>().prop_map(|o| PeerAddr::from_ip(IpAddr::V6(Ipv6Addr::from(o)))),
    ]
}

fn request_type() -> impl Strategy<Value = RequestType> {
    prop_oneof![
        Just(RequestType::REQUEST),
        Just(RequestType::RENDEZVOUS),
        Just(RequestType::RESPONSE),
        Just(RequestType::RENDEZVOUS_CONNECTED),
        Just(RequestType::REJECT),
        Just(RequestType(i32::MIN)),
        any::<i32>().prop_map(RequestType),
    ]
}

prop_compose! {
    fn handshake()(
        version in prop_oneof![Just(4u32), any::<u32>()],
        socket_type in prop_oneof![Just(SocketType::STREAM), Just(SocketType::DGRAM),
                                   any::<u32>().prop_map(SocketType)],
        isn in seq_no(),
        mss in any::<u32>(),
        flow_window in any::<u32>(),
        request in request_type(),
        socket_id in socket_id(),
        cookie in any::<u32>(),
        peer_addr in peer_addr(),
    ) -> Handshake {
        Handshake { version, socket_type, isn, mss, flow_window, request, socket_id, cookie, peer_addr }
    }
}

prop_compose! {
    fn full_ack(with_rates: Option<bool>)(
        ack_no in ack_no(),
        ack in seq_no(),
        rtt_us in any::<u32>(),
        rtt_var_us in any::<u32>(),
        avail_buf_pkts in any::<u32>(),
        rates in (any::<u32>(), any::<u32>(), any::<bool>()),
    ) -> Ack {
        let present = with_rates.unwrap_or(rates.2);
        let rates = present.then_some(AckRates { arrival_pps: rates.0, capacity_pps: rates.1 });
        Ack { ack_no, ack, rtt_us, rtt_var_us, avail_buf_pkts, rates }
    }
}

fn drop_request() -> impl Strategy<Value = DropRequest> {
    (msg_no(), seq_range()).prop_map(|(msg, r)| DropRequest {
        msg,
        first: r.first,
        last: r.last,
    })
}

/// Owned form of a [`Control`], so that strategies can produce the borrowed variants.
#[derive(Clone, Debug)]
enum Repr {
    Handshake(Handshake),
    KeepAlive,
    Ack(Ack),
    LightAck(SeqNo),
    /// The ranges and their encoding by `LossReport::encode`.
    Nak(Vec<SeqRange>, Vec<u8>),
    CongestionWarning,
    Shutdown,
    Ack2(AckNo),
    DropRequest(DropRequest),
    PeerError(u32),
    UserDefined {
        ext_type: u16,
        info: u32,
        body: Vec<u8>,
    },
}

impl Repr {
    fn control(&self) -> Control<'_> {
        match self {
            Repr::Handshake(h) => Control::Handshake(*h),
            Repr::KeepAlive => Control::KeepAlive,
            Repr::Ack(a) => Control::Ack(*a),
            Repr::LightAck(s) => Control::LightAck(*s),
            Repr::Nak(_, bytes) => {
                Control::Nak(LossReport::parse(bytes).expect("encoded loss report parses"))
            }
            Repr::CongestionWarning => Control::CongestionWarning,
            Repr::Shutdown => Control::Shutdown,
            Repr::Ack2(n) => Control::Ack2(*n),
            Repr::DropRequest(d) => Control::DropRequest(*d),
            Repr::PeerError(code) => Control::PeerError(*code),
            Repr::UserDefined {
                ext_type,
                info,
                body,
            } => Control::UserDefined(UserDefined {
                ext_type: *ext_type,
                info: *info,
                body,
            }),
        }
    }
}

fn nak() -> impl Strategy<Value = Repr> {
    vec(seq_range(), 1..=40).prop_map(|ranges| {
        let mut buf = vec![0u8; ranges.len() * 8];
        let n = LossReport::encode(ranges.iter().copied(), &mut buf).expect("encode");
        buf.truncate(n);
        Repr::Nak(ranges, buf)
    })
}

fn user_defined() -> impl Strategy<Value = Repr> {
    (any::<u16>(), any::<u32>(), vec(any::<u8>(), 0..=1456)).prop_map(|(ext_type, info, body)| {
        Repr::UserDefined {
            ext_type,
            info,
            body,
        }
    })
}

fn any_repr() -> impl Strategy<Value = Repr> {
    prop_oneof![
        handshake().prop_map(Repr::Handshake),
        Just(Repr::KeepAlive),
        full_ack(None).prop_map(Repr::Ack),
        seq_no().prop_map(Repr::LightAck),
        nak(),
        Just(Repr::CongestionWarning),
        Just(Repr::Shutdown),
        ack_no().prop_map(Repr::Ack2),
        drop_request().prop_map(Repr::DropRequest),
        any::<u32>().prop_map(Repr::PeerError),
        user_defined(),
    ]
}

// ---------------------------------------------------------------------------------------------
// Checks
// ---------------------------------------------------------------------------------------------

/// Word 0 and word 1 that spec §3.1/§3.2 prescribe for `control`, stated independently of the
/// emitter.
fn expected_words_0_1(control: &Control<'_>) -> (u32, u32) {
    let (ty, ext, info): (u32, u32, u32) = match control {
        Control::Handshake(_) => (0, 0, 0),
        Control::KeepAlive => (1, 0, 0),
        Control::Ack(a) => (2, 0, a.ack_no.get()),
        Control::LightAck(_) => (2, 0, 0),
        Control::Nak(_) => (3, 0, 0),
        Control::CongestionWarning => (4, 0, 0),
        Control::Shutdown => (5, 0, 0),
        Control::Ack2(n) => (6, 0, n.get()),
        Control::DropRequest(d) => (7, 0, d.msg.get()),
        Control::PeerError(code) => (8, 0, *code),
        Control::UserDefined(u) => (0x7fff, u32::from(u.ext_type), u.info),
    };
    (0x8000_0000 | ty << 16 | ext, info)
}

/// The body spec §3/§4 prescribes for `control`, stated independently of the emitter.
fn expected_body(control: &Control<'_>) -> Vec<u8> {
    let words = |ws: &[u32]| ws.iter().flat_map(|w| w.to_be_bytes()).collect::<Vec<u8>>();
    match control {
        Control::Handshake(h) => {
            let mut b = words(&[
                h.version,
                h.socket_type.0,
                h.isn.get(),
                h.mss,
                h.flow_window,
                h.request.0 as u32,
                h.socket_id.0,
                h.cookie,
            ]);
            b.extend_from_slice(&h.peer_addr.0);
            b
        }
        Control::Ack(a) => {
            let mut ws = vec![a.ack.get(), a.rtt_us, a.rtt_var_us, a.avail_buf_pkts];
            if let Some(r) = a.rates {
                ws.extend([r.arrival_pps, r.capacity_pps]);
            }
            words(&ws)
        }
        Control::LightAck(s) => words(&[s.get()]),
        Control::Nak(r) => r.as_bytes().to_vec(),
        Control::DropRequest(d) => words(&[d.first.get(), d.last.get()]),
        Control::UserDefined(u) => u.body.to_vec(),
        Control::KeepAlive
        | Control::CongestionWarning
        | Control::Shutdown
        | Control::Ack2(_)
        | Control::PeerError(_) => vec![0; 4],
    }
}

/// Emits `control` with the given header fields and checks the bytes against the spec layout,
/// the length errors of `emit`, and that parsing gives back the same packet.
fn check_control_round_trip(ts: u32, dst: SocketId, control: Control<'_>) -> TestCaseResult {
    let pkt = ControlPacket {
        timestamp: ts,
        dst,
        body_len: 0,
        control,
    };
    let len = pkt.wire_len();

    // Too small a buffer is an error, not a panic or a partial write.
    let mut short = vec![0u8; len - 1];
    prop_assert_eq!(
        pkt.emit(&mut short),
        Err(WireError::BufferTooSmall {
            need: len,
            have: len - 1
        })
    );

    // A larger buffer: exactly `len` bytes are written.
    let mut buf = vec![0xA5u8; len + 37];
    let n = pkt.emit(&mut buf).expect("emit");
    prop_assert_eq!(n, len);
    prop_assert!(
        buf[n..].iter().all(|&b| b == 0xA5),
        "emit wrote past its length"
    );
    let bytes = &buf[..n];

    // Byte layout per spec.
    let (w0, w1) = expected_words_0_1(&control);
    let word = |i: usize| u32::from_be_bytes(bytes[i * 4..i * 4 + 4].try_into().unwrap());
    prop_assert_eq!(word(0), w0, "word 0");
    prop_assert_eq!(word(1), w1, "word 1");
    prop_assert_eq!(word(2), ts, "timestamp");
    prop_assert_eq!(word(3), dst.0, "destination");
    prop_assert_eq!(&bytes[HEADER_LEN..], &expected_body(&control)[..], "body");

    // Parse back.
    let parsed = match Packet::parse(bytes) {
        Ok(Packet::Control(c)) => c,
        other => return Err(TestCaseError::fail(format!("parse gave {other:?}"))),
    };
    prop_assert_eq!(parsed.control, control);
    prop_assert_eq!(parsed.dst, dst);
    prop_assert_eq!(parsed.timestamp, ts);
    prop_assert_eq!(parsed.body_len, n - HEADER_LEN);
    prop_assert_eq!(Packet::peek_destination(bytes), Some(dst));
    Ok(())
}

/// The bytes of a control packet with the given header words and body.
fn control_bytes(ty: u16, ext: u16, info: u32, ts: u32, dst: u32, body: &[u8]) -> Vec<u8> {
    let w0 = 0x8000_0000 | u32::from(ty) << 16 | u32::from(ext);
    let mut b = Vec::with_capacity(HEADER_LEN + body.len());
    for w in [w0, info, ts, dst] {
        b.extend_from_slice(&w.to_be_bytes());
    }
    b.extend_from_slice(body);
    b
}

/// If `bytes` parses as a control packet, it re-emits to bytes that parse to the same value.
/// Returns whether it parsed.
fn check_reparse(bytes: &[u8]) -> Result<bool, TestCaseError> {
    let c = match Packet::parse(bytes) {
        Ok(Packet::Control(c)) => c,
        Ok(Packet::Data(d)) => {
            // Data packets are lossless: header + payload re-emit to the very same bytes.
            let mut out = vec![0u8; HEADER_LEN];
            d.header.emit(&mut out).expect("emit data header");
            out.extend_from_slice(d.payload);
            prop_assert_eq!(&out[..], bytes);
            return Ok(true);
        }
        Err(_) => return Ok(false),
    };
    prop_assert_eq!(c.body_len, bytes.len() - HEADER_LEN);
    let mut buf = vec![0u8; c.wire_len()];
    let n = c.emit(&mut buf).expect("emit of a parsed packet");
    let again = match Packet::parse(&buf[..n]) {
        Ok(Packet::Control(a)) => a,
        other => return Err(TestCaseError::fail(format!("re-parse gave {other:?}"))),
    };
    prop_assert_eq!(again.control, c.control);
    prop_assert_eq!(again.dst, c.dst);
    prop_assert_eq!(again.timestamp, c.timestamp);
    prop_assert_eq!(again.body_len, n - HEADER_LEN);
    Ok(true)
}

const KNOWN_TYPES: [u16; 10] = [
    kind::HANDSHAKE,
    kind::KEEP_ALIVE,
    kind::ACK,
    kind::NAK,
    kind::CONGESTION_WARNING,
    kind::SHUTDOWN,
    kind::ACK2,
    kind::DROP_REQUEST,
    kind::PEER_ERROR,
    kind::USER_DEFINED,
];

/// Body lengths around the boundaries the parser distinguishes, plus arbitrary ones.
fn body_bytes() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        prop::sample::select(vec![
            0usize, 3, 4, 5, 7, 8, 12, 15, 16, 20, 23, 24, 28, 44, 47, 48, 52
        ])
        .prop_flat_map(|n| vec(any::<u8>(), n)),
        vec(any::<u8>(), 0..200),
        // Bodies of words whose bit 0 is mostly clear, so that sequence fields and loss lists
        // are often valid.
        vec(
            prop_oneof![3 => 0u32..=SeqNo::MAX, 1 => any::<u32>()],
            0..20
        )
        .prop_map(|ws| ws.iter().flat_map(|w| w.to_be_bytes()).collect()),
    ]
}

fn data_packet_bytes() -> impl Strategy<Value = Vec<u8>> {
    (data_header(), vec(any::<u8>(), 1..=64)).prop_map(|(h, p)| {
        let mut b = vec![0u8; HEADER_LEN];
        h.emit(&mut b).unwrap();
        b.extend_from_slice(&p);
        b
    })
}

fn control_packet_bytes() -> impl Strategy<Value = Vec<u8>> {
    (any_repr(), any::<u32>(), socket_id()).prop_map(|(r, ts, dst)| {
        let pkt = ControlPacket {
            timestamp: ts,
            dst,
            body_len: 0,
            control: r.control(),
        };
        let mut b = vec![0u8; pkt.wire_len()];
        pkt.emit(&mut b).unwrap();
        b
    })
}

// ---------------------------------------------------------------------------------------------
// Round trips per packet type
// ---------------------------------------------------------------------------------------------

proptest! {
    #[test]
    fn data_round_trip(header in data_header(), payload in vec(any::<u8>(), 1..=1456)) {
        let mut buf = vec![0u8; HEADER_LEN + payload.len()];
        header.emit(&mut buf[..HEADER_LEN]).expect("emit header");
        buf[HEADER_LEN..].copy_from_slice(&payload);
        // Layout of spec §2.1.
        prop_assert_eq!(&buf[0..4], &header.seq.get().to_be_bytes());
        prop_assert_eq!(buf[0] & 0x80, 0);
        prop_assert_eq!(&buf[4..8], &header.message.raw().to_be_bytes());
        prop_assert_eq!(&buf[8..12], &header.timestamp.to_be_bytes());
        prop_assert_eq!(&buf[12..16], &header.dst.0.to_be_bytes());
        match Packet::parse(&buf) {
            Ok(Packet::Data(d)) => {
                prop_assert_eq!(d.header, header);
                prop_assert_eq!(d.payload, &payload[..]);
            }
            other => prop_assert!(false, "parse gave {:?}", other),
        }
        prop_assert_eq!(Packet::peek_destination(&buf), Some(header.dst));
    }

    #[test]
    fn message_word_fields_round_trip(b in boundary(), o in any::<bool>(), m in msg_no()) {
        let w = MessageWord::new(b, o, m);
        prop_assert_eq!(w.boundary(), b);
        prop_assert_eq!(w.in_order(), o);
        prop_assert_eq!(w.msg(), m);
        prop_assert_eq!(w.raw() >> 30, b as u32);
        prop_assert_eq!((w.raw() >> 29) & 1, o as u32);
        prop_assert_eq!(w.raw() & 0x1fff_ffff, m.get());
        prop_assert_eq!(MessageWord::from_raw(w.raw()), w);
    }

    #[test]
    fn handshake_round_trip(h in handshake(), ts in any::<u32>(), dst in socket_id()) {
        check_control_round_trip(ts, dst, Control::Handshake(h))?;
        let mut body = [0u8; HANDSHAKE_LEN];
        prop_assert_eq!(h.emit(&mut body), Ok(HANDSHAKE_LEN));
        prop_assert_eq!(Handshake::parse(&body), Ok(h));
    }

    #[test]
    fn peer_addr_ip_round_trip(v4 in any::<[u8; 4]>(), v6 in any::<[u8; 16]>()) {
        let a = Ipv4Addr::from(v4);
        let p = PeerAddr::from_ip(IpAddr::V4(a));
        prop_assert_eq!(p.to_ipv4(), a);
        prop_assert_eq!(&p.0[..4], &[v4[3], v4[2], v4[1], v4[0]]);
        prop_assert_eq!(&p.0[4..], &[0u8; 12]);
        let a = Ipv6Addr::from(v6);
        let p = PeerAddr::from_ip(IpAddr::V6(a));
        prop_assert_eq!(p.to_ipv6(), a);
        prop_assert_eq!(p.to_ip_like(IpAddr::V6(Ipv6Addr::UNSPECIFIED)), IpAddr::V6(a));
        for i in 0..4 {
            let want = [v6[4 * i + 3], v6[4 * i + 2], v6[4 * i + 1], v6[4 * i]];
            prop_assert_eq!(&p.0[4 * i..4 * i + 4], &want);
        }
    }

    #[test]
    fn full_ack_with_rates_round_trip(a in full_ack(Some(true)), ts in any::<u32>(), dst in socket_id()) {
        check_control_round_trip(ts, dst, Control::Ack(a))?;
    }

    #[test]
    fn full_ack_without_rates_round_trip(a in full_ack(Some(false)), ts in any::<u32>(), dst in socket_id()) {
        check_control_round_trip(ts, dst, Control::Ack(a))?;
    }

    #[test]
    fn light_ack_round_trip(s in seq_no(), ts in any::<u32>(), dst in socket_id()) {
        check_control_round_trip(ts, dst, Control::LightAck(s))?;
    }

    #[test]
    fn nak_round_trip(r in nak(), ts in any::<u32>(), dst in socket_id()) {
        let Repr::Nak(ranges, bytes) = &r else { unreachable!() };
        // The encoding: one word per single number, two per range (spec §3.5).
        let words: usize = ranges.iter().map(|r| if r.first == r.last { 1 } else { 2 }).sum();
        prop_assert_eq!(bytes.len(), words * 4);
        let report = LossReport::parse(bytes).expect("encoded report parses");
        prop_assert_eq!(report.word_count(), words);
        prop_assert_eq!(report.first(), ranges[0].first);
        prop_assert_eq!(report.ranges().collect::<Vec<_>>(), ranges.clone());
        check_control_round_trip(ts, dst, r.control())?;
    }

    #[test]
    fn keep_alive_round_trip(ts in any::<u32>(), dst in socket_id()) {
        check_control_round_trip(ts, dst, Control::KeepAlive)?;
    }

    #[test]
    fn congestion_warning_round_trip(ts in any::<u32>(), dst in socket_id()) {
        check_control_round_trip(ts, dst, Control::CongestionWarning)?;
    }

    #[test]
    fn shutdown_round_trip(ts in any::<u32>(), dst in socket_id()) {
        check_control_round_trip(ts, dst, Control::Shutdown)?;
    }

    #[test]
    fn ack2_round_trip(n in ack_no(), ts in any::<u32>(), dst in socket_id()) {
        check_control_round_trip(ts, dst, Control::Ack2(n))?;
    }

    #[test]
    fn drop_request_round_trip(d in drop_request(), ts in any::<u32>(), dst in socket_id()) {
        check_control_round_trip(ts, dst, Control::DropRequest(d))?;
    }

    #[test]
    fn peer_error_round_trip(code in any::<u32>(), ts in any::<u32>(), dst in socket_id()) {
        check_control_round_trip(ts, dst, Control::PeerError(code))?;
    }

    #[test]
    fn user_defined_round_trip(r in user_defined(), ts in any::<u32>(), dst in socket_id()) {
        check_control_round_trip(ts, dst, r.control())?;
    }
}

// ---------------------------------------------------------------------------------------------
// Arbitrary input
// ---------------------------------------------------------------------------------------------

proptest! {
    #![proptest_config(ProptestConfig { cases: 2048, ..ProptestConfig::default() })]

    /// `Packet::parse` never panics, and whatever it accepts re-emits consistently.
    #[test]
    fn parse_arbitrary_bytes_never_panics(bytes in vec(any::<u8>(), 0..2000)) {
        let parsed = check_reparse(&bytes)?;
        if bytes.len() < HEADER_LEN {
            prop_assert!(!parsed);
            prop_assert_eq!(Packet::parse(&bytes), Err(WireError::Truncated { len: bytes.len() }));
            prop_assert_eq!(Packet::peek_destination(&bytes), None);
        }
    }

    /// Control packets of every known type with arbitrary header words and body: parse either
    /// fails or re-emits to something that parses to the same value.
    #[test]
    fn parse_arbitrary_control_bodies(
        ty in prop::sample::select(KNOWN_TYPES.to_vec()),
        ext in any::<u16>(),
        info in any::<u32>(),
        ts in any::<u32>(),
        dst in any::<u32>(),
        body in body_bytes(),
    ) {
        let bytes = control_bytes(ty, ext, info, ts, dst, &body);
        let result = Packet::parse(&bytes);
        let parsed = check_reparse(&bytes)?;
        prop_assert_eq!(parsed, result.is_ok());
        // Types whose body 4.11 never reads (§3.2) and user-defined packets always parse.
        let always = [
            kind::KEEP_ALIVE,
            kind::CONGESTION_WARNING,
            kind::SHUTDOWN,
            kind::ACK2,
            kind::PEER_ERROR,
            kind::USER_DEFINED,
        ];
        if always.contains(&ty) {
            prop_assert!(parsed, "type {} with a {}-byte body rejected: {:?}", ty, body.len(), result);
        }
        match result {
            Ok(Packet::Control(c)) => {
                prop_assert_eq!(c.dst, SocketId(dst));
                prop_assert_eq!(c.timestamp, ts);
                match c.control {
                    Control::Handshake(h) => {
                        prop_assert_eq!(ty, kind::HANDSHAKE);
                        prop_assert!(body.len() >= HANDSHAKE_LEN);
                        prop_assert_eq!(&h.peer_addr.0[..], &body[32..48]);
                        prop_assert_eq!(h.request.0, i32::from_be_bytes(body[20..24].try_into().unwrap()));
                    }
                    Control::LightAck(_) => {
                        prop_assert_eq!(ty, kind::ACK);
                        prop_assert_eq!(body.len(), 4);
                    }
                    Control::Ack(a) => {
                        prop_assert_eq!(ty, kind::ACK);
                        prop_assert!(body.len() >= 16);
                        prop_assert_eq!(a.rates.is_some(), body.len() >= 24);
                        prop_assert_eq!(a.ack_no.get(), info & 0x7fff_ffff);
                    }
                    Control::Nak(r) => {
                        prop_assert_eq!(ty, kind::NAK);
                        prop_assert_eq!(r.as_bytes(), &body[..body.len() / 4 * 4]);
                    }
                    Control::DropRequest(d) => {
                        prop_assert_eq!(ty, kind::DROP_REQUEST);
                        prop_assert_eq!(d.msg.get(), info & 0x1fff_ffff);
                        prop_assert!(!d.last.is_before(d.first));
                    }
                    Control::Ack2(n) => {
                        prop_assert_eq!(ty, kind::ACK2);
                        prop_assert_eq!(n.get(), info & 0x7fff_ffff);
                    }
                    Control::PeerError(code) => {
                        prop_assert_eq!(ty, kind::PEER_ERROR);
                        prop_assert_eq!(code, info);
                    }
                    Control::UserDefined(u) => {
                        prop_assert_eq!(ty, kind::USER_DEFINED);
                        prop_assert_eq!(u.ext_type, ext);
                        prop_assert_eq!(u.info, info);
                        prop_assert_eq!(u.body, &body[..]);
                        // Lossless: the re-emitted packet is the input.
                        let mut out = vec![0u8; c.wire_len()];
                        c.emit(&mut out).unwrap();
                        prop_assert_eq!(out, bytes);
                    }
                    Control::KeepAlive => prop_assert_eq!(ty, kind::KEEP_ALIVE),
                    Control::CongestionWarning => prop_assert_eq!(ty, kind::CONGESTION_WARNING),
                    Control::Shutdown => prop_assert_eq!(ty, kind::SHUTDOWN),
                }
            }
            Ok(Packet::Data(_)) => prop_assert!(false, "control bit set but parsed as data"),
            Err(e) => {
                let allowed = match ty {
                    kind::HANDSHAKE => matches!(e, WireError::BadBodyLength { kind: "handshake", .. }
                        | WireError::FieldOutOfRange("isn")),
                    kind::ACK => matches!(e, WireError::BadBodyLength { kind: "ACK", .. }
                        | WireError::FieldOutOfRange("ack number")),
                    kind::NAK => matches!(e, WireError::BadBodyLength { kind: "NAK", .. }
                        | WireError::MalformedLossReport),
                    kind::DROP_REQUEST => matches!(e, WireError::BadBodyLength { kind: "drop request", .. }
                        | WireError::FieldOutOfRange(_)),
                    _ => false,
                };
                prop_assert!(allowed, "type {} body {:?}: unexpected error {:?}", ty, body, e);
            }
        }
    }

    /// Unknown control types are reported as such, whatever the rest of the packet.
    #[test]
    fn unknown_control_types_are_errors(
        ty in 9u16..0x7fff,
        ext in any::<u16>(),
        rest in vec(any::<u8>(), 12..100),
    ) {
        let mut bytes = (0x8000_0000u32 | u32::from(ty) << 16 | u32::from(ext)).to_be_bytes().to_vec();
        bytes.extend_from_slice(&rest);
        prop_assert_eq!(Packet::parse(&bytes), Err(WireError::UnknownControlType(ty)));
    }

    /// Truncating any valid packet below the header length gives `Truncated`.
    #[test]
    fn truncated_packets_are_errors(
        bytes in prop_oneof![data_packet_bytes(), control_packet_bytes()],
    ) {
        prop_assert!(Packet::parse(&bytes).is_ok());
        for len in 0..HEADER_LEN {
            prop_assert_eq!(Packet::parse(&bytes[..len]), Err(WireError::Truncated { len }));
            prop_assert_eq!(Packet::peek_destination(&bytes[..len]), None);
        }
    }

    /// An ACK body of 8 or 12 bytes (neither light nor full) is an error, as are 0 bytes.
    #[test]
    fn ack_body_of_8_or_12_bytes_is_an_error(
        len in prop::sample::select(vec![0usize, 1, 2, 3, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15]),
        info in any::<u32>(),
        body in vec(0u32..=SeqNo::MAX, 4),
    ) {
        let body: Vec<u8> = body.iter().flat_map(|w| w.to_be_bytes()).take(len).collect();
        let bytes = control_bytes(kind::ACK, 0, info, 0, 1, &body);
        prop_assert_eq!(
            Packet::parse(&bytes),
            Err(WireError::BadBodyLength { kind: "ACK", len })
        );
        // The same words padded to 16 bytes are a valid 4-word ACK.
        let mut full = body.clone();
        full.resize(16, 0);
        let bytes = control_bytes(kind::ACK, 0, info, 0, 1, &full);
        prop_assert!(
            matches!(Packet::parse(&bytes), Ok(Packet::Control(ControlPacket { control: Control::Ack(_), .. }))),
            "16-byte ACK rejected"
        );
    }

    /// A handshake body shorter than 48 bytes is an error.
    #[test]
    fn short_handshake_is_an_error(h in handshake(), len in 0usize..HANDSHAKE_LEN) {
        let pkt = ControlPacket::new(SocketId(0), Control::Handshake(h));
        let mut buf = vec![0u8; pkt.wire_len()];
        pkt.emit(&mut buf).unwrap();
        prop_assert!(Packet::parse(&buf).is_ok());
        prop_assert_eq!(
            Packet::parse(&buf[..HEADER_LEN + len]),
            Err(WireError::BadBodyLength { kind: "handshake", len })
        );
    }

    /// A drop request whose last number is before its first is rejected; bodies under 8 bytes
    /// too.
    #[test]
    fn bad_drop_requests_are_errors(r in seq_range(), short in 0usize..8) {
        let mut body = Vec::new();
        body.extend_from_slice(&r.first.get().to_be_bytes());
        body.extend_from_slice(&r.last.get().to_be_bytes());
        let ok = control_bytes(kind::DROP_REQUEST, 0, 1, 0, 1, &body);
        prop_assert!(Packet::parse(&ok).is_ok());
        prop_assert_eq!(
            Packet::parse(&ok[..HEADER_LEN + short]),
            Err(WireError::BadBodyLength { kind: "drop request", len: short })
        );
        if r.first != r.last {
            let mut reversed = Vec::new();
            reversed.extend_from_slice(&r.last.get().to_be_bytes());
            reversed.extend_from_slice(&r.first.get().to_be_bytes());
            let bytes = control_bytes(kind::DROP_REQUEST, 0, 1, 0, 1, &reversed);
            prop_assert_eq!(
                Packet::parse(&bytes),
                Err(WireError::FieldOutOfRange("drop request range"))
            );
        }
    }

    /// A loss report whose range is reversed, or whose last word opens a range, is rejected.
    #[test]
    fn malformed_loss_reports_are_errors(r in long_seq_range(), prefix in vec(0u32..=SeqNo::MAX, 0..4)) {
        let mut words = prefix.clone();
        words.extend([r.last.get() | 0x8000_0000, r.first.get()]);
        let body: Vec<u8> = words.iter().flat_map(|w| w.to_be_bytes()).collect();
        let bytes = control_bytes(kind::NAK, 0, 0, 0, 1, &body);
        prop_assert_eq!(Packet::parse(&bytes), Err(WireError::MalformedLossReport));
        // A dangling range start at the end.
        let mut words = prefix;
        words.push(r.first.get() | 0x8000_0000);
        let body: Vec<u8> = words.iter().flat_map(|w| w.to_be_bytes()).collect();
        let bytes = control_bytes(kind::NAK, 0, 0, 0, 1, &body);
        prop_assert_eq!(Packet::parse(&bytes), Err(WireError::MalformedLossReport));
    }
}

/// Every length below the header, including 0, for the smallest possible packets.
#[test]
fn all_short_lengths_are_truncated() {
    let keep_alive = control_bytes(kind::KEEP_ALIVE, 0, 0, 0, 7, &[0; 4]);
    let data = [0x00, 0, 0, 1, 0xc0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 7, 0xff];
    for bytes in [&keep_alive[..], &data[..]] {
        assert!(Packet::parse(bytes).is_ok());
        assert_eq!(
            Packet::parse(&bytes[..HEADER_LEN]).is_ok(),
            bytes[0] & 0x80 != 0
        );
        for len in 0..HEADER_LEN {
            assert_eq!(
                Packet::parse(&bytes[..len]),
                Err(WireError::Truncated { len })
            );
        }
    }
}

/// `LossReport::encode` reports a too-small buffer instead of writing a partial report.
#[test]
fn loss_report_encode_buffer_too_small() {
    let s = |v| SeqNo::new(v).unwrap();
    let ranges = [
        SeqRange::single(s(1)),
        SeqRange {
            first: s(5),
            last: s(9),
        },
    ];
    let mut buf = [0u8; 12];
    assert_eq!(LossReport::encode(ranges, &mut buf), Ok(12));
    assert_eq!(
        LossReport::encode(ranges, &mut buf[..11]),
        Err(WireError::BufferTooSmall { need: 12, have: 11 })
    );
    assert_eq!(
        LossReport::encode(ranges, &mut buf[..3]),
        Err(WireError::BufferTooSmall { need: 4, have: 3 })
    );
}
