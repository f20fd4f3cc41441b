//! Fuzz target: `Packet::parse` on arbitrary datagrams.
//!
//! * Parsing must never panic (libFuzzer reports any panic as a crash).
//! * A datagram that parses as a control packet must emit (into a buffer of `wire_len` bytes)
//!   and parse again to the same `control`, `dst` and `timestamp`; the re-parsed `body_len` is
//!   the emitted body length.
//! * A datagram that parses as a data packet must re-emit (header + payload) to the same bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use udt_proto::wire::{Packet, HEADER_LEN};

fuzz_target!(|data: &[u8]| {
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
        }
        Ok(Packet::Data(d)) => {
            let mut out = vec![0u8; HEADER_LEN];
            d.header.emit(&mut out).expect("emit data header");
            out.extend_from_slice(d.payload);
            assert_eq!(&out[..], data, "data packet does not re-emit to its bytes");
        }
        Err(_) => {}
    }
});
