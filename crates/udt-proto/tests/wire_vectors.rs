//! Test vectors from the observed 4.11 wire traces (spec Appendix A) and the byte layouts of
//! spec §2–§4.
//!
//! Every vector is a datagram written as the hex words of the trace. Each test parses it, checks
//! every field against the value the trace annotates, compares the parse with a packet built
//! independently from those values, and checks that emitting that packet gives back exactly the
//! trace bytes.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use udt_proto::wire::control::kind;
use udt_proto::wire::{
    Ack, AckRates, Boundary, Control, ControlPacket, DataHeader, DropRequest, Handshake,
    LossReport, MessageWord, Packet, PeerAddr, RequestType, SocketType, UserDefined, WireError,
    HANDSHAKE_LEN, HEADER_LEN, UDT_VERSION,
};
use udt_proto::{AckNo, MsgNo, SeqNo, SeqRange, SocketId};

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

/// The bytes of a datagram written as 8-digit hex words; `|` (header/body separator) is skipped.
fn hex(words: &str) -> Vec<u8> {
    words
        .split_whitespace()
        .filter(|w| *w != "|")
        .flat_map(|w| {
            assert_eq!(w.len(), 8, "word {w:?} is not 8 hex digits");
            u32::from_str_radix(w, 16)
                .unwrap_or_else(|e| panic!("bad hex word {w:?}: {e}"))
                .to_be_bytes()
        })
        .collect()
}

fn seq(v: u32) -> SeqNo {
    SeqNo::new(v).expect("sequence number in range")
}

fn msg(v: u32) -> MsgNo {
    MsgNo::new(v).expect("message number in range")
}

fn ackno(v: u32) -> AckNo {
    AckNo::new(v).expect("ACK number in range")
}

/// Parses `bytes`, which must be a control packet.
fn parse_control(bytes: &[u8]) -> ControlPacket<'_> {
    match Packet::parse(bytes) {
        Ok(Packet::Control(c)) => c,
        other => panic!("expected a control packet, got {other:?}"),
    }
}

/// Emits `pkt` into a buffer larger than needed and returns exactly the bytes it wrote.
fn emit(pkt: &ControlPacket<'_>) -> Vec<u8> {
    let mut buf = vec![0xA5u8; 2048];
    let n = pkt.emit(&mut buf).expect("emit");
    assert_eq!(n, pkt.wire_len(), "emit length disagrees with wire_len");
    assert!(
        buf[n..].iter().all(|&b| b == 0xA5),
        "emit wrote past its reported length"
    );
    buf.truncate(n);
    buf
}

/// The common checks of a control vector: the trace bytes parse to `expected` (whose `body_len`
/// is ignored and taken from the trace), re-emitting the parsed packet and emitting `expected`
/// both reproduce the trace bytes. Returns the parsed packet for further field checks.
fn check_control<'a>(trace: &'a [u8], expected: ControlPacket<'_>) -> ControlPacket<'a> {
    let parsed = parse_control(trace);
    assert_eq!(parsed.body_len, trace.len() - HEADER_LEN, "body_len");
    assert_eq!(parsed.control, expected.control, "decoded control content");
    assert_eq!(parsed.dst, expected.dst, "destination");
    assert_eq!(parsed.timestamp, expected.timestamp, "timestamp");
    assert_eq!(Packet::peek_destination(trace), Some(expected.dst));
    assert_eq!(Packet::Control(parsed).destination(), expected.dst);
    assert_eq!(emit(&parsed), trace, "re-emitting the parsed packet");
    assert_eq!(
        emit(&expected),
        trace,
        "emitting the independently built packet"
    );
    parsed
}

/// Checks a data vector: header fields, payload, and that header emit + payload reproduces it.
fn check_data(trace: &[u8], expected: DataHeader) {
    let parsed = match Packet::parse(trace) {
        Ok(Packet::Data(d)) => d,
        other => panic!("expected a data packet, got {other:?}"),
    };
    assert_eq!(parsed.header, expected);
    assert_eq!(parsed.payload, &trace[HEADER_LEN..]);
    assert_eq!(Packet::Data(parsed).destination(), expected.dst);
    for header in [parsed.header, expected] {
        let mut out = vec![0xA5u8; HEADER_LEN];
        header.emit(&mut out).expect("emit data header");
        out.extend_from_slice(parsed.payload);
        assert_eq!(out, trace, "data header emit + payload");
    }
}

fn ipv4_localhost_peer() -> PeerAddr {
    PeerAddr::from_ip(IpAddr::V4(Ipv4Addr::LOCALHOST))
}

// ---------------------------------------------------------------------------------------------
// A.1 Client/server handshake and first data
// ---------------------------------------------------------------------------------------------

const CLIENT: SocketId = SocketId(0x244f_fd30);
const SERVER: SocketId = SocketId(0x3999_7734);
const CLIENT_ISN: u32 = 0x4229_1036;
const COOKIE: u32 = 0x23a7_f8d4;

const A1_HS1: &str = "80000000 00000000 00000000 00000000 | 00000004 00000001 42291036 000005dc \
                      00002000 00000001 244ffd30 00000000 0100007f 00000000 00000000 00000000";
const A1_HS2: &str = "80000000 00000000 00000000 244ffd30 | 00000004 00000001 42291036 000005dc \
                      00002000 00000001 244ffd30 23a7f8d4 0100007f 00000000 00000000 00000000";
const A1_HS3: &str = "80000000 00000000 00000000 00000000 | 00000004 00000001 42291036 000005dc \
                      00002000 ffffffff 244ffd30 23a7f8d4 0100007f 00000000 00000000 00000000";
const A1_HS4: &str = "80000000 00000000 00000000 244ffd30 | 00000004 00000001 42291036 000005dc \
                      00002000 ffffffff 39997734 23a7f8d4 0100007f 00000000 00000000 00000000";

/// The handshake of A.1 with the fields that vary between the four packets given.
fn a1_handshake(request: RequestType, socket_id: SocketId, cookie: u32) -> Handshake {
    Handshake {
        version: 4,
        socket_type: SocketType::STREAM,
        isn: seq(CLIENT_ISN),
        mss: 1500,
        flow_window: 8192,
        request,
        socket_id,
        cookie,
        peer_addr: ipv4_localhost_peer(),
    }
}

fn handshake_of<'a>(c: &ControlPacket<'a>) -> Handshake {
    match c.control {
        Control::Handshake(h) => h,
        ref other => panic!("expected a handshake, got {other:?}"),
    }
}

/// Field checks common to the four A.1 handshakes, on the decoded value.
fn assert_a1_common(h: &Handshake) {
    assert_eq!(h.version, UDT_VERSION);
    assert_eq!(h.version, 4);
    assert_eq!(h.socket_type, SocketType::STREAM);
    assert_eq!(h.socket_type.0, 1);
    assert_eq!(h.isn.get(), 0x4229_1036);
    assert_eq!(h.mss, 1500);
    assert_eq!(h.flow_window, 8192);
    assert_eq!(h.peer_addr.to_ipv4(), Ipv4Addr::new(127, 0, 0, 1));
    assert_eq!(
        h.peer_addr.to_ip_like(IpAddr::V4(Ipv4Addr::UNSPECIFIED)),
        IpAddr::V4(Ipv4Addr::new(127, 0, 0, 1))
    );
    assert_eq!(
        h.peer_addr.0,
        [0x01, 0, 0, 0x7f, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]
    );
}

#[test]
fn a1_handshake_1_client_request() {
    let trace = hex(A1_HS1);
    assert_eq!(trace.len(), HEADER_LEN + HANDSHAKE_LEN);
    let expected = ControlPacket::new(
        SocketId::REQUEST,
        Control::Handshake(a1_handshake(RequestType::REQUEST, CLIENT, 0)),
    );
    let c = check_control(&trace, expected);
    assert_eq!(c.body_len, 48);
    assert_eq!(c.dst, SocketId(0));
    assert_eq!(c.timestamp, 0);
    let h = handshake_of(&c);
    assert_a1_common(&h);
    assert_eq!(h.request, RequestType(1));
    assert_eq!(h.socket_id, SocketId(0x244f_fd30));
    assert_eq!(h.cookie, 0);
}

#[test]
fn a1_handshake_2_listener_cookie_echo() {
    let trace = hex(A1_HS2);
    let expected = ControlPacket::new(
        CLIENT,
        Control::Handshake(a1_handshake(RequestType::REQUEST, CLIENT, COOKIE)),
    );
    let c = check_control(&trace, expected);
    assert_eq!(c.dst, SocketId(0x244f_fd30));
    let h = handshake_of(&c);
    assert_a1_common(&h);
    assert_eq!(h.request, RequestType(1));
    // The echo repeats the requester's ID (spec §4.1 word 6).
    assert_eq!(h.socket_id, SocketId(0x244f_fd30));
    assert_eq!(h.cookie, 0x23a7_f8d4);
}

#[test]
fn a1_handshake_3_client_request_with_cookie() {
    let trace = hex(A1_HS3);
    let expected = ControlPacket::new(
        SocketId::REQUEST,
        Control::Handshake(a1_handshake(RequestType::RESPONSE, CLIENT, COOKIE)),
    );
    let c = check_control(&trace, expected);
    assert_eq!(c.dst, SocketId(0));
    let h = handshake_of(&c);
    assert_a1_common(&h);
    assert_eq!(h.request, RequestType(-1));
    assert_eq!(h.socket_id, SocketId(0x244f_fd30));
    assert_eq!(h.cookie, 0x23a7_f8d4);
}

#[test]
fn a1_handshake_4_server_positive_response() {
    let trace = hex(A1_HS4);
    let expected = ControlPacket::new(
        CLIENT,
        Control::Handshake(a1_handshake(RequestType::RESPONSE, SERVER, COOKIE)),
    );
    let c = check_control(&trace, expected);
    assert_eq!(c.dst, SocketId(0x244f_fd30));
    let h = handshake_of(&c);
    assert_a1_common(&h);
    assert_eq!(h.request, RequestType(-1));
    assert_eq!(h.socket_id, SocketId(0x3999_7734));
    assert_eq!(h.cookie, 0x23a7_f8d4);
}

/// A deterministic 1456-byte payload (the trace does not show the payload bytes).
fn payload_1456(tag: u8) -> Vec<u8> {
    (0..1456u32)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(tag))
        .collect()
}

fn data_trace(header_words: &str, tag: u8) -> Vec<u8> {
    let mut b = hex(header_words);
    assert_eq!(b.len(), HEADER_LEN);
    b.extend_from_slice(&payload_1456(tag));
    b
}

#[test]
fn a1_data_first_packet_of_message_1() {
    let trace = data_trace("42291036 80000001 00000ef7 39997734", 1);
    assert_eq!(trace.len(), 16 + 1456);
    let expected = DataHeader {
        seq: seq(CLIENT_ISN),
        message: MessageWord::new(Boundary::First, false, msg(1)),
        timestamp: 3831,
        dst: SERVER,
    };
    check_data(&trace, expected);
    let Ok(Packet::Data(d)) = Packet::parse(&trace) else {
        panic!("not data")
    };
    assert_eq!(d.header.seq.get(), 0x4229_1036);
    assert_eq!(d.header.message.raw(), 0x8000_0001);
    assert_eq!(d.header.message.boundary(), Boundary::First);
    assert!(d.header.message.boundary().starts_message());
    assert!(!d.header.message.boundary().ends_message());
    assert!(!d.header.message.in_order());
    assert_eq!(d.header.message.msg().get(), 1);
    assert_eq!(d.header.timestamp, 3831);
    assert_eq!(d.header.dst, SocketId(0x3999_7734));
    assert_eq!(d.payload.len(), 1456);
}

#[test]
fn a1_data_middle_packet() {
    let trace = data_trace("42291037 00000001 00000f02 39997734", 2);
    let expected = DataHeader {
        seq: seq(0x4229_1037),
        message: MessageWord::new(Boundary::Middle, false, msg(1)),
        timestamp: 0xf02,
        dst: SERVER,
    };
    check_data(&trace, expected);
    assert_eq!(expected.message.boundary(), Boundary::Middle);
    assert_eq!(expected.message.raw(), 0x0000_0001);
}

#[test]
fn a1_data_last_packet_of_message_1() {
    let trace = data_trace("4229103f 40000001 00000f1e 39997734", 3);
    let expected = DataHeader {
        seq: seq(0x4229_103f),
        message: MessageWord::new(Boundary::Last, false, msg(1)),
        timestamp: 0xf1e,
        dst: SERVER,
    };
    check_data(&trace, expected);
    let Ok(Packet::Data(d)) = Packet::parse(&trace) else {
        panic!("not data")
    };
    assert_eq!(d.header.message.boundary(), Boundary::Last);
    assert!(d.header.message.boundary().ends_message());
    assert_eq!(d.header.message.msg().get(), 1);
}

#[test]
fn a1_data_first_packet_of_message_2() {
    let trace = data_trace("42291040 80000002 00000f3a 39997734", 4);
    let expected = DataHeader {
        seq: seq(0x4229_1040),
        message: MessageWord::new(Boundary::First, false, msg(2)),
        timestamp: 0xf3a,
        dst: SERVER,
    };
    check_data(&trace, expected);
    let Ok(Packet::Data(d)) = Packet::parse(&trace) else {
        panic!("not data")
    };
    assert_eq!(d.header.message.msg().get(), 2);
    // Consecutive sequence numbers from the ISN (spec §2.2): ISN + 10.
    assert_eq!(seq(CLIENT_ISN).offset_to(d.header.seq), 10);
}

/// Spec §2.1: the word-1 masks, including the in-order bit and the solo boundary.
#[test]
fn data_message_word_masks() {
    let trace = data_trace("00000007 e0000005 ffffffff 00000001", 9);
    let Ok(Packet::Data(d)) = Packet::parse(&trace) else {
        panic!("not data")
    };
    assert_eq!(d.header.seq.get(), 7);
    assert_eq!(d.header.message.boundary(), Boundary::Solo);
    assert!(d.header.message.in_order());
    assert_eq!(d.header.message.msg().get(), 5);
    assert_eq!(d.header.timestamp, u32::MAX);
    assert_eq!(
        MessageWord::new(Boundary::Solo, true, msg(5)).raw(),
        0xe000_0005
    );
    assert_eq!(
        MessageWord::new(Boundary::Middle, false, msg(MsgNo::MAX)).raw(),
        0x1fff_ffff
    );
    check_data(
        &trace,
        DataHeader {
            seq: seq(7),
            message: MessageWord::new(Boundary::Solo, true, msg(5)),
            timestamp: u32::MAX,
            dst: SocketId(1),
        },
    );
}

#[test]
fn data_smallest_payload_and_empty_payload() {
    let mut trace = hex("7fffffff 80000001 00000000 00000002");
    assert_eq!(Packet::parse(&trace), Err(WireError::EmptyPayload));
    trace.push(0x42);
    check_data(
        &trace,
        DataHeader {
            seq: seq(SeqNo::MAX),
            message: MessageWord::from_raw(0x8000_0001),
            timestamp: 0,
            dst: SocketId(2),
        },
    );
}

// ---------------------------------------------------------------------------------------------
// A.2 Losses, NAK, ACK, ACK2, shutdown
// ---------------------------------------------------------------------------------------------

fn nak_ranges(c: &ControlPacket<'_>) -> Vec<(u32, u32)> {
    match c.control {
        Control::Nak(r) => r.ranges().map(|r| (r.first.get(), r.last.get())).collect(),
        ref other => panic!("expected a NAK, got {other:?}"),
    }
}

/// Builds the NAK packet for `ranges` through the public encoder.
fn check_nak_vector(trace_words: &str, dst: SocketId, ranges: &[SeqRange]) -> Vec<(u32, u32)> {
    let trace = hex(trace_words);
    let mut enc = [0u8; 64];
    let n = LossReport::encode(ranges.iter().copied(), &mut enc).expect("encode");
    assert_eq!(&enc[..n], &trace[HEADER_LEN..], "LossReport::encode output");
    let report = LossReport::parse(&enc[..n]).expect("encoded report parses");
    let c = check_control(&trace, ControlPacket::new(dst, Control::Nak(report)));
    let Control::Nak(r) = c.control else {
        unreachable!()
    };
    assert_eq!(r.as_bytes(), &trace[HEADER_LEN..]);
    assert_eq!(r.word_count(), (trace.len() - HEADER_LEN) / 4);
    assert_eq!(r.first(), ranges[0].first);
    assert_eq!(r.ranges().collect::<Vec<_>>(), ranges);
    nak_ranges(&c)
}

#[test]
fn a2_nak_single_loss() {
    let got = check_nak_vector(
        "80030000 00000000 00000000 244ffd30 | 42291038",
        CLIENT,
        &[SeqRange::single(seq(0x4229_1038))],
    );
    assert_eq!(got, vec![(0x4229_1038, 0x4229_1038)]);
}

#[test]
fn a2_nak_range() {
    let got = check_nak_vector(
        "80030000 00000000 00000000 244ffd30 | c229103c 4229103e",
        CLIENT,
        &[SeqRange {
            first: seq(0x4229_103c),
            last: seq(0x4229_103e),
        }],
    );
    assert_eq!(got, vec![(0x4229_103c, 0x4229_103e)]);
    let trace = hex("80030000 00000000 00000000 244ffd30 | c229103c 4229103e");
    let c = parse_control(&trace);
    let Control::Nak(r) = c.control else {
        panic!("not a NAK")
    };
    assert_eq!(r.ranges().map(|r| r.len()).sum::<u32>(), 3);
}

#[test]
fn a2_full_ack_six_words() {
    let trace = hex(
        "80020000 00000001 00000000 244ffd30 | 42291038 000186a0 0000c350 00001ffd 00004fb9 000003e8",
    );
    let expected = ControlPacket::new(
        CLIENT,
        Control::Ack(Ack {
            ack_no: ackno(1),
            ack: seq(0x4229_1038),
            rtt_us: 100_000,
            rtt_var_us: 50_000,
            avail_buf_pkts: 8189,
            rates: Some(AckRates {
                arrival_pps: 20409,
                capacity_pps: 1000,
            }),
        }),
    );
    let c = check_control(&trace, expected);
    assert_eq!(c.body_len, 24);
    let Control::Ack(a) = c.control else {
        panic!("not a full ACK: {:?}", c.control)
    };
    assert_eq!(a.ack_no.get(), 1);
    assert_eq!(a.ack.get(), 0x4229_1038);
    assert_eq!(a.rtt_us, 100_000);
    assert_eq!(a.rtt_var_us, 50_000);
    assert_eq!(a.avail_buf_pkts, 8189);
    let rates = a.rates.expect("6-word ACK carries rates");
    assert_eq!(rates.arrival_pps, 20409);
    assert_eq!(rates.capacity_pps, 1000);
}

#[test]
fn a2_ack2() {
    let trace = hex("80060000 00000001 00000000 39997734 | 00000000");
    let c = check_control(&trace, ControlPacket::new(SERVER, Control::Ack2(ackno(1))));
    assert_eq!(c.control, Control::Ack2(ackno(1)));
    assert_eq!(c.dst, SocketId(0x3999_7734));
    assert_eq!(c.body_len, 4);
}

#[test]
fn a2_full_ack_four_words() {
    let trace = hex("80020000 0000000a 00000000 244ffd30 | 42291052 00008686 0000d187 00001ffe");
    let expected = ControlPacket::new(
        CLIENT,
        Control::Ack(Ack {
            ack_no: ackno(10),
            ack: seq(0x4229_1052),
            rtt_us: 34438,
            rtt_var_us: 53639,
            avail_buf_pkts: 8190,
            rates: None,
        }),
    );
    let c = check_control(&trace, expected);
    assert_eq!(c.body_len, 16);
    let Control::Ack(a) = c.control else {
        panic!("not a full ACK: {:?}", c.control)
    };
    assert_eq!(a.ack_no.get(), 10);
    assert_eq!(a.rtt_us, 0x8686);
    assert_eq!(a.rtt_var_us, 0xd187);
    assert_eq!(a.avail_buf_pkts, 0x1ffe);
    assert_eq!(a.rates, None);
}

#[test]
fn a2_shutdown() {
    let trace = hex("80050000 00000000 00000000 39997734 | 00000000");
    let c = check_control(&trace, ControlPacket::new(SERVER, Control::Shutdown));
    assert_eq!(c.control, Control::Shutdown);
    assert_eq!(c.body_len, 4);
}

// ---------------------------------------------------------------------------------------------
// A.3 Light ACK, A.4 keep-alive
// ---------------------------------------------------------------------------------------------

#[test]
fn a3_light_ack() {
    let trace = hex("80020000 00000000 00000000 244ffd30 | 15459aee");
    let c = check_control(
        &trace,
        ControlPacket::new(CLIENT, Control::LightAck(seq(0x1545_9aee))),
    );
    assert_eq!(c.control, Control::LightAck(seq(0x1545_9aee)));
    assert_eq!(c.body_len, 4);
}

#[test]
fn a4_keep_alive() {
    let trace = hex("80010000 00000000 00000000 244ffd30 | 00000000");
    let c = check_control(&trace, ControlPacket::new(CLIENT, Control::KeepAlive));
    assert_eq!(c.control, Control::KeepAlive);
    assert_eq!(c.body_len, 4);
}

// ---------------------------------------------------------------------------------------------
// A.5 Rejection
// ---------------------------------------------------------------------------------------------

#[test]
fn a5_rejection_1002() {
    // L→C  HS ver=4 type=2 … req=1002 (0x000003ea) id=C cookie=K, built from the described
    // fields; the ISN and peer address (not shown in the trace) are the client's echoed values.
    let c_id = 0x1122_3344u32;
    let k = 0x5566_7788u32;
    let isn = 0x0abc_def0u32;
    let trace = hex(&format!(
        "80000000 00000000 00000000 {c_id:08x} | 00000004 00000002 {isn:08x} 000005dc \
         00002000 000003ea {c_id:08x} {k:08x} 0100007f 00000000 00000000 00000000"
    ));
    let expected = ControlPacket::new(
        SocketId(c_id),
        Control::Handshake(Handshake {
            version: 4,
            socket_type: SocketType::DGRAM,
            isn: seq(isn),
            mss: 1500,
            flow_window: 8192,
            request: RequestType::REJECT,
            socket_id: SocketId(c_id),
            cookie: k,
            peer_addr: ipv4_localhost_peer(),
        }),
    );
    let c = check_control(&trace, expected);
    let h = handshake_of(&c);
    assert_eq!(h.request, RequestType(1002));
    assert_eq!(h.socket_type, SocketType(2));
    assert_eq!(h.socket_id, SocketId(c_id));
    assert_eq!(h.cookie, k);
    assert_eq!(
        &trace[HEADER_LEN + 20..HEADER_LEN + 24],
        &[0, 0, 0x03, 0xea]
    );
}

// ---------------------------------------------------------------------------------------------
// A.6 Message mode: drop requests and NAKs
// ---------------------------------------------------------------------------------------------

/// Sequence numbers of A.6 are offsets from 499409500.
const A6_BASE: u32 = 499_409_500;

fn a6(off: u32) -> SeqNo {
    seq(A6_BASE + off)
}

#[test]
fn a6_base_matches_trace() {
    assert_eq!(A6_BASE, 0x1dc4_625c);
}

#[test]
fn a6_nak_range() {
    let got = check_nak_vector(
        "80030000 00000000 00000000 244ffd30 | 9dc46272 1dc46275",
        CLIENT,
        &[SeqRange {
            first: a6(22),
            last: a6(25),
        }],
    );
    assert_eq!(got, vec![(A6_BASE + 22, A6_BASE + 25)]);
}

#[test]
fn a6_nak_singles() {
    let got = check_nak_vector(
        "80030000 00000000 00000000 244ffd30 | 1dc4628f",
        CLIENT,
        &[SeqRange::single(a6(51))],
    );
    assert_eq!(got, vec![(A6_BASE + 51, A6_BASE + 51)]);
    let got = check_nak_vector(
        "80030000 00000000 00000000 244ffd30 | 1dc46292",
        CLIENT,
        &[SeqRange::single(a6(54))],
    );
    assert_eq!(got, vec![(A6_BASE + 54, A6_BASE + 54)]);
}

fn check_drop_vector(trace_words: &str, msg_no: u32, first: u32, last: u32) {
    let trace = hex(trace_words);
    let expected = ControlPacket::new(
        SERVER,
        Control::DropRequest(DropRequest {
            msg: msg(msg_no),
            first: a6(first),
            last: a6(last),
        }),
    );
    let c = check_control(&trace, expected);
    assert_eq!(c.body_len, 8);
    let Control::DropRequest(d) = c.control else {
        panic!("not a drop request: {:?}", c.control)
    };
    assert_eq!(d.msg.get(), msg_no);
    assert_eq!(d.first.get(), A6_BASE + first);
    assert_eq!(d.last.get(), A6_BASE + last);
}

#[test]
fn a6_drop_request_msg_3() {
    check_drop_vector(
        "80070000 00000003 00000000 39997734 | 1dc46272 1dc46275",
        3,
        22,
        25,
    );
}

#[test]
fn a6_drop_request_msg_10() {
    check_drop_vector(
        "80070000 0000000a 00000000 39997734 | 1dc4628f 1dc46291",
        10,
        51,
        53,
    );
}

#[test]
fn a6_drop_request_msg_11() {
    check_drop_vector(
        "80070000 0000000b 00000000 39997734 | 1dc46292 1dc46295",
        11,
        54,
        57,
    );
}

// ---------------------------------------------------------------------------------------------
// A.7 IPv6 peer address
// ---------------------------------------------------------------------------------------------

#[test]
fn a7_ipv6_peer_address() {
    // "… 00000001 24d4816c 00000000 | 00000000 00000000 00000000 01000000": request type 1,
    // socket ID 0x24d4816c, cookie 0, then peer IP words 8–11. The leading words are not shown in
    // the trace; they are filled with A.1's defaults.
    let trace = hex(
        "80000000 00000000 00000000 00000000 | 00000004 00000001 01020304 000005dc \
         00002000 00000001 24d4816c 00000000 00000000 00000000 00000000 01000000",
    );
    let peer = PeerAddr::from_ip(IpAddr::V6(Ipv6Addr::LOCALHOST));
    assert_eq!(peer.0, [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01, 0, 0, 0]);
    let expected = ControlPacket::new(
        SocketId::REQUEST,
        Control::Handshake(Handshake {
            version: 4,
            socket_type: SocketType::STREAM,
            isn: seq(0x0102_0304),
            mss: 1500,
            flow_window: 8192,
            request: RequestType::REQUEST,
            socket_id: SocketId(0x24d4_816c),
            cookie: 0,
            peer_addr: peer,
        }),
    );
    let c = check_control(&trace, expected);
    let h = handshake_of(&c);
    assert_eq!(h.request, RequestType(1));
    assert_eq!(h.socket_id, SocketId(0x24d4_816c));
    assert_eq!(h.cookie, 0);
    assert_eq!(h.peer_addr.to_ipv6(), Ipv6Addr::LOCALHOST);
    assert_eq!(
        h.peer_addr.to_ip_like(IpAddr::V6(Ipv6Addr::UNSPECIFIED)),
        IpAddr::V6(Ipv6Addr::LOCALHOST)
    );
}

/// Spec §4.3: each group of four IPv6 address bytes is reversed on the wire.
#[test]
fn ipv6_word_reversal_of_a_full_address() {
    let ip: Ipv6Addr = "2001:db8:1:2:3:4:5:6".parse().unwrap();
    let p = PeerAddr::from_ip(IpAddr::V6(ip));
    assert_eq!(
        p.0,
        [
            0xb8, 0x0d, 0x01, 0x20, 0x02, 0x00, 0x01, 0x00, 0x04, 0x00, 0x03, 0x00, 0x06, 0x00,
            0x05, 0x00
        ]
    );
    assert_eq!(p.to_ipv6(), ip);
    let v4 = PeerAddr::from_ip(IpAddr::V4(Ipv4Addr::new(10, 20, 30, 40)));
    assert_eq!(&v4.0[..4], &[40, 30, 20, 10]);
    assert_eq!(v4.to_ipv4(), Ipv4Addr::new(10, 20, 30, 40));
}

// ---------------------------------------------------------------------------------------------
// Spec §3 layouts not covered by a trace
// ---------------------------------------------------------------------------------------------

/// §3.2: 4.11 never reads the body of keep-alive, shutdown, ACK2 (and the other one-zero-word
/// types), "so a receiver must accept them with length 0 or 4".
#[test]
fn zero_word_bodies_may_be_absent_or_nonzero() {
    let cases: [(&str, Control<'static>); 5] = [
        ("80010000 00000000 00000000 244ffd30", Control::KeepAlive),
        ("80050000 00000000 00000000 244ffd30", Control::Shutdown),
        (
            "80060000 00000007 00000000 244ffd30",
            Control::Ack2(ackno(7)),
        ),
        (
            "80040000 00000000 00000000 244ffd30",
            Control::CongestionWarning,
        ),
        (
            "80080000 00000fa0 00000000 244ffd30",
            Control::PeerError(4000),
        ),
    ];
    for (words, control) in cases {
        let bare = hex(words);
        let c = parse_control(&bare);
        assert_eq!(c.control, control, "{words} with no body");
        assert_eq!(c.body_len, 0);
        let mut padded = bare.clone();
        padded.extend_from_slice(&[0xde, 0xad, 0xbe, 0xef]);
        let c = parse_control(&padded);
        assert_eq!(c.control, control, "{words} with a non-zero body word");
        assert_eq!(c.body_len, 4);
        // Emitted with exactly one zero word (what 4.11 sends).
        let mut expected = bare.clone();
        expected.extend_from_slice(&[0; 4]);
        assert_eq!(
            emit(&ControlPacket::new(CLIENT, control)),
            expected,
            "{words}"
        );
    }
}

/// §3.11: error signal with code 4000 (EFILE) in the additional-info word.
#[test]
fn peer_error_4000() {
    let trace = hex("80080000 00000fa0 00000000 39997734 | 00000000");
    let c = check_control(&trace, ControlPacket::new(SERVER, Control::PeerError(4000)));
    assert_eq!(c.control, Control::PeerError(4000));
}

/// §3.7: congestion warning, type 4, one zero word.
#[test]
fn congestion_warning() {
    let trace = hex("80040000 00000000 00000000 39997734 | 00000000");
    check_control(
        &trace,
        ControlPacket::new(SERVER, Control::CongestionWarning),
    );
}

/// §3.12: word 0 = 0x80000000 | 0x7FFF << 16 | ext; info and body are the application's.
#[test]
fn user_defined_layout() {
    let trace = hex("ffff1234 cafebabe 00000000 39997734 | 00000001 00000002 00000003");
    let body = &trace[HEADER_LEN..];
    let expected = ControlPacket::new(
        SERVER,
        Control::UserDefined(UserDefined {
            ext_type: 0x1234,
            info: 0xcafe_babe,
            body,
        }),
    );
    let c = check_control(&trace, expected);
    let Control::UserDefined(u) = c.control else {
        panic!("not user-defined: {:?}", c.control)
    };
    assert_eq!(u.ext_type, 0x1234);
    assert_eq!(u.info, 0xcafe_babe);
    assert_eq!(u.body, &hex("00000001 00000002 00000003")[..]);
    // An empty body and a body that is not a multiple of 4 are both carried as they are.
    let mut odd = hex("ffff0000 00000000 00000000 00000001");
    let c = parse_control(&odd);
    assert_eq!(
        c.control,
        Control::UserDefined(UserDefined {
            ext_type: 0,
            info: 0,
            body: &[]
        })
    );
    odd.extend_from_slice(&[1, 2, 3]);
    let c = parse_control(&odd);
    assert_eq!(emit(&c), odd);
}

/// §3.1: the type is `(w0 >> 16) & 0x7FFF` and ext is ignored for standard types; the header
/// timestamp of a control packet is kept as received (4.11 sends 0, receivers ignore it).
#[test]
fn control_type_decoding_ignores_ext_bits_of_standard_types() {
    let trace = hex("8002beef 00000001 12345678 244ffd30 | 42291038 000186a0 0000c350 00001ffd");
    let c = parse_control(&trace);
    assert!(matches!(c.control, Control::Ack(a) if a.ack == seq(0x4229_1038) && a.rates.is_none()));
    assert_eq!(c.timestamp, 0x1234_5678);
    // Re-emitted with ext = 0, as 4.11 sends it, and the timestamp preserved.
    let out = emit(&c);
    assert_eq!(&out[..4], &[0x80, 0x02, 0x00, 0x00]);
    assert_eq!(&out[4..], &trace[4..]);
}

#[test]
fn control_type_codes() {
    assert_eq!(
        [
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
        ],
        [0, 1, 2, 3, 4, 5, 6, 7, 8, 0x7fff]
    );
    for ty in [9u32, 10, 0x100, 0x7ffe] {
        let bytes = hex(&format!(
            "{:08x} 00000000 00000000 00000000 | 00000000",
            0x8000_0000 | ty << 16
        ));
        assert_eq!(
            Packet::parse(&bytes),
            Err(WireError::UnknownControlType(ty as u16))
        );
    }
}

/// §3.5's example: 2, 6–11, 14.
#[test]
fn loss_list_example_of_section_3_5() {
    let trace = hex("80030000 00000000 00000000 00000001 | 00000002 80000006 0000000b 0000000e");
    let ranges = [
        SeqRange::single(seq(2)),
        SeqRange {
            first: seq(6),
            last: seq(11),
        },
        SeqRange::single(seq(14)),
    ];
    let got = check_nak_vector(
        "80030000 00000000 00000000 00000001 | 00000002 80000006 0000000b 0000000e",
        SocketId(1),
        &ranges,
    );
    assert_eq!(got, vec![(2, 2), (6, 11), (14, 14)]);
    assert_eq!(trace.len(), HEADER_LEN + 16);
}

/// §4.1: 4.11 always sends exactly 48 bytes; the parser keeps the received length so that a
/// listener can drop other lengths, and reads only the first 48 bytes.
#[test]
fn handshake_body_length_is_reported() {
    let mut trace = hex(A1_HS1);
    trace.extend_from_slice(&[0xff; 4]);
    let c = parse_control(&trace);
    assert_eq!(c.body_len, 52);
    assert_eq!(
        handshake_of(&c),
        a1_handshake(RequestType::REQUEST, CLIENT, 0)
    );
    assert_eq!(emit(&c), hex(A1_HS1));
    let short = hex(A1_HS1);
    assert_eq!(
        Packet::parse(&short[..short.len() - 4]),
        Err(WireError::BadBodyLength {
            kind: "handshake",
            len: 44
        })
    );
}

/// §3.4: light ACK by body length 4; lengths 16 and 24 give the two full forms.
#[test]
fn ack_forms_by_body_length() {
    let header = "80020000 00000003 00000000 00000001";
    let light = hex(&format!("{header} | 00000010"));
    assert_eq!(parse_control(&light).control, Control::LightAck(seq(16)));
    for bad in ["", "00000010 00000001", "00000010 00000001 00000002"] {
        let bytes = hex(&format!("{header} | {bad}"));
        let len = bytes.len() - HEADER_LEN;
        assert_eq!(
            Packet::parse(&bytes),
            Err(WireError::BadBodyLength { kind: "ACK", len }),
            "ACK body of {len} bytes"
        );
    }
    let four = hex(&format!("{header} | 00000010 00000001 00000002 00000003"));
    let c = parse_control(&four);
    assert!(matches!(c.control, Control::Ack(a) if a.ack_no == ackno(3) && a.rates.is_none()));
    let six = hex(&format!(
        "{header} | 00000010 00000001 00000002 00000003 00000004 00000005"
    ));
    let c = parse_control(&six);
    assert!(matches!(
        c.control,
        Control::Ack(Ack {
            rates: Some(AckRates {
                arrival_pps: 4,
                capacity_pps: 5
            }),
            ..
        })
    ));
}

/// A sequence number field with bit 0 set is out of range in ACKs, drop requests and handshakes.
#[test]
fn sequence_fields_with_bit_0_set_are_rejected() {
    let light = hex("80020000 00000000 00000000 00000001 | 80000001");
    assert_eq!(
        Packet::parse(&light),
        Err(WireError::FieldOutOfRange("ack number"))
    );
    let full = hex("80020000 00000001 00000000 00000001 | 80000001 00000000 00000000 00000002");
    assert_eq!(
        Packet::parse(&full),
        Err(WireError::FieldOutOfRange("ack number"))
    );
    let drop = hex("80070000 00000001 00000000 00000001 | 80000001 00000002");
    assert_eq!(
        Packet::parse(&drop),
        Err(WireError::FieldOutOfRange("drop request first"))
    );
    let drop = hex("80070000 00000001 00000000 00000001 | 00000001 80000002");
    assert_eq!(
        Packet::parse(&drop),
        Err(WireError::FieldOutOfRange("drop request last"))
    );
    let mut hs = hex(A1_HS1);
    hs[HEADER_LEN + 8] |= 0x80;
    assert_eq!(Packet::parse(&hs), Err(WireError::FieldOutOfRange("isn")));
}

#[test]
fn malformed_loss_reports_are_rejected() {
    for body in [
        "",
        "80000005",
        "80000005 80000006",
        "80000009 00000002",
        "00000001 80000003",
    ] {
        let bytes = hex(&format!("80030000 00000000 00000000 00000001 | {body}"));
        assert!(Packet::parse(&bytes).is_err(), "NAK body {body:?} accepted");
    }
}

#[test]
fn emit_into_short_buffers_fails() {
    let c = ControlPacket::new(
        CLIENT,
        Control::Handshake(a1_handshake(RequestType::REQUEST, CLIENT, 0)),
    );
    let mut buf = [0u8; 63];
    assert_eq!(
        c.emit(&mut buf),
        Err(WireError::BufferTooSmall { need: 64, have: 63 })
    );
    let h = DataHeader {
        seq: seq(1),
        message: MessageWord::from_raw(0),
        timestamp: 0,
        dst: SocketId(1),
    };
    assert_eq!(
        h.emit(&mut buf[..15]),
        Err(WireError::BufferTooSmall { need: 16, have: 15 })
    );
}
