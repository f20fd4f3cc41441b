//! Fuzz target: the wire format (`udt_proto::wire`), both ways.
//!
//! The input is used twice.
//!
//! 1. As a datagram, for `Packet::parse`:
//!    * parsing never panics (libFuzzer reports any panic as a crash);
//!    * a control packet emits into a buffer of exactly `wire_len()` bytes and parses again
//!      to the same content (`control`, `dst`, `timestamp`), with `body_len` the emitted
//!      length; its body length as parsed is the datagram's;
//!    * a NAK's loss ranges are each in order (`first` not after `last`), and encoding them
//!      again with `LossReport::encode` gives a report with the same ranges;
//!    * a data packet re-emits (header + payload) to exactly the input bytes.
//! 2. As a recipe for a packet built field by field (every control type, including the
//!    invalid values the parser must refuse): emitting it and parsing the bytes gives the
//!    same packet back, or, for a value the format cannot carry (a drop request or NAK range
//!    that ends before it starts), parsing refuses it.
#![no_main]

use libfuzzer_sys::fuzz_target;
use udt_fuzz::Input;
use udt_proto::seq::{AckNo, MsgNo, SeqNo, SeqRange};
use udt_proto::wire::{
    Ack, AckRates, Control, ControlPacket, DataHeader, DropRequest, Handshake, LossReport,
    MessageWord, Packet, PeerAddr, RequestType, SocketId, SocketType, UserDefined, HEADER_LEN,
};

fn check_datagram(data: &[u8]) {
    match Packet::parse(data) {
        Ok(Packet::Control(c)) => {
            assert_eq!(c.body_len, data.len() - HEADER_LEN);
            let len = c.wire_len();
            let mut buf = vec![0u8; len];
            let n = c.emit(&mut buf).expect("a parsed control packet must emit");
            assert_eq!(n, len, "emit length differs from wire_len");
            match Packet::parse(&buf[..n]) {
                Ok(Packet::Control(again)) => {
                    assert_eq!(again.control, c.control);
                    assert_eq!(again.dst, c.dst);
                    assert_eq!(again.timestamp, c.timestamp);
                    assert_eq!(again.body_len, n - HEADER_LEN);
                }
                other => panic!("re-parse of {c:?} gave {other:?}"),
            }
            if let Control::Nak(report) = c.control {
                check_loss_report(&report);
            }
        }
        Ok(Packet::Data(d)) => {
            assert!(!d.payload.is_empty());
            let mut out = vec![0u8; HEADER_LEN];
            d.header.emit(&mut out).expect("emit data header");
            out.extend_from_slice(d.payload);
            assert_eq!(&out[..], data, "data packet does not re-emit to its bytes");
        }
        Err(_) => {}
    }
}

/// A parsed loss report's ranges are ordered, and survive encoding again.
fn check_loss_report(report: &LossReport<'_>) {
    let ranges: Vec<SeqRange> = report.ranges().collect();
    assert!(!ranges.is_empty());
    for r in &ranges {
        assert!(!r.last.is_before(r.first), "reversed range {r:?}");
    }
    assert!(ranges.len() <= report.word_count());
    let mut buf = vec![0u8; report.as_bytes().len()];
    let n = LossReport::encode(ranges.iter().copied(), &mut buf)
        .expect("re-encoding never needs more words than the original");
    let again = LossReport::parse(&buf[..n]).expect("re-encoded report parses");
    assert!(again.ranges().eq(ranges.iter().copied()));
}

fn seq(input: &mut Input<'_>) -> SeqNo {
    SeqNo::from_masked(input.u32())
}

/// Builds a packet from `input`, emits it and checks that parsing gives it back.
fn check_built(input: &mut Input<'_>) {
    let dst = SocketId(input.u32());
    let timestamp = input.u32();
    let mut nak_words = [0u8; 64];
    let ty = input.u8();
    let mut valid = true;
    let control = match ty % 12 {
        0 => {
            let mut peer = [0u8; 16];
            for b in &mut peer {
                *b = input.u8();
            }
            Control::Handshake(Handshake {
                version: input.u32(),
                socket_type: SocketType(input.u32()),
                isn: seq(input),
                mss: input.u32(),
                flow_window: input.u32(),
                request: RequestType(input.u32() as i32),
                socket_id: SocketId(input.u32()),
                cookie: input.u32(),
                peer_addr: if input.bool() {
                    PeerAddr(peer)
                } else {
                    PeerAddr::from_ip(std::net::Ipv4Addr::from(input.u32()).into())
                },
            })
        }
        1 => Control::KeepAlive,
        2 => Control::Ack(Ack {
            ack_no: AckNo::from_masked(input.u32()),
            ack: seq(input),
            rtt_us: input.u32(),
            rtt_var_us: input.u32(),
            avail_buf_pkts: input.u32(),
            rates: input.bool().then(|| AckRates {
                arrival_pps: input.u32(),
                capacity_pps: input.u32(),
            }),
        }),
        3 => Control::LightAck(seq(input)),
        4 => {
            // Up to 8 ranges, each a single number or `first..=first+span`; a span at or past
            // 2^30 wraps to a range that ends before it starts, which the parser must refuse.
            let count = 1 + usize::from(input.u8() % 8);
            let mut ranges = Vec::new();
            for _ in 0..count {
                let first = seq(input);
                let span = match input.u8() % 4 {
                    0 => 0,
                    1 | 2 => u32::from(input.u16()),
                    _ => input.u32(),
                };
                let r = SeqRange {
                    first,
                    last: first.add(span),
                };
                if r.last.is_before(r.first) {
                    valid = false;
                }
                ranges.push(r);
            }
            let n = LossReport::encode(ranges, &mut nak_words).expect("64 bytes hold 8 ranges");
            match LossReport::parse(&nak_words[..n]) {
                Ok(r) => Control::Nak(r),
                Err(_) => {
                    assert!(!valid, "a report of ordered ranges was refused");
                    return;
                }
            }
        }
        5 => Control::CongestionWarning,
        6 => Control::Shutdown,
        7 => Control::Ack2(AckNo::from_masked(input.u32())),
        8 => {
            let first = seq(input);
            let last = if input.bool() {
                first.add(u32::from(input.u16()))
            } else {
                seq(input)
            };
            valid = !last.is_before(first);
            Control::DropRequest(DropRequest {
                msg: MsgNo::from_masked(input.u32()),
                first,
                last,
            })
        }
        9 => Control::PeerError(input.u32()),
        10 => {
            let n = usize::from(input.u8());
            Control::UserDefined(UserDefined {
                ext_type: input.u16(),
                info: input.u32(),
                body: input.bytes(n),
            })
        }
        _ => {
            // A data packet.
            let header = DataHeader {
                seq: seq(input),
                message: MessageWord::from_raw(input.u32()),
                timestamp,
                dst,
            };
            let n = 1 + usize::from(input.u8());
            let payload: Vec<u8> = (0..n).map(|i| i as u8 ^ ty).collect();
            let mut buf = vec![0u8; HEADER_LEN + n];
            header.emit(&mut buf).expect("header fits");
            buf[HEADER_LEN..].copy_from_slice(&payload);
            match Packet::parse(&buf) {
                Ok(Packet::Data(d)) => {
                    assert_eq!(d.header, header);
                    assert_eq!(d.payload, &payload[..]);
                }
                other => panic!("data packet {header:?} parsed as {other:?}"),
            }
            return;
        }
    };
    let mut packet = ControlPacket::new(dst, control);
    packet.timestamp = timestamp;
    let len = packet.wire_len();
    let mut buf = vec![0u8; len];
    assert_eq!(packet.emit(&mut buf), Ok(len));
    match Packet::parse(&buf) {
        Ok(Packet::Control(again)) => {
            assert!(
                valid,
                "{packet:?} cannot be carried, yet it parsed as {again:?}"
            );
            packet.body_len = len - HEADER_LEN;
            assert_eq!(again, packet);
        }
        Ok(Packet::Data(d)) => panic!("{packet:?} parsed as data {d:?}"),
        Err(e) => assert!(!valid, "{packet:?} emitted bytes that do not parse: {e:?}"),
    }
}

fuzz_target!(|data: &[u8]| {
    check_datagram(data);
    check_built(&mut Input::new(data));
});
