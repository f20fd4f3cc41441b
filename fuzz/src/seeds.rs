//! The seed corpora under `fuzz/corpus/<target>/`, generated rather than hand-made: each seed
//! is a short, meaningful scenario in its target's input format (a datagram, an operation
//! sequence), so that fuzzing starts from inputs that reach deep states (an established
//! connection carrying data, a completed handshake, a full message) instead of finding them
//! byte by byte.
//!
//! `cargo test --lib` (in `fuzz/`) checks that the checked-in files equal what this module
//! generates; `UDT_FUZZ_WRITE_SEEDS=1 cargo test --lib` rewrites them.

use udt_proto::seq::{AckNo, MsgNo, SeqNo, SeqRange};
use udt_proto::wire::{
    Ack, AckRates, Boundary, Control, ControlPacket, DataHeader, DropRequest, Handshake,
    LossReport, MessageWord, PeerAddr, RequestType, SocketId, SocketType, UserDefined, HEADER_LEN,
    UDT_VERSION,
};

/// A seed: target, file name, contents.
pub type Seed = (&'static str, &'static str, Vec<u8>);

fn control(dst: u32, c: Control<'_>) -> Vec<u8> {
    let p = ControlPacket::new(SocketId(dst), c);
    let mut buf = vec![0u8; p.wire_len()];
    p.emit(&mut buf).expect("sized by wire_len");
    buf
}

fn seq(n: u32) -> SeqNo {
    SeqNo::from_masked(n)
}

/// Datagrams of every kind, for `parse_packet`.
fn packets() -> Vec<Seed> {
    let hs = Handshake {
        version: UDT_VERSION,
        socket_type: SocketType::STREAM,
        isn: seq(0x2A3B_4C5D),
        mss: 1500,
        flow_window: 8192,
        request: RequestType::REQUEST,
        socket_id: SocketId(0x1234),
        cookie: 0,
        peer_addr: PeerAddr::from_ip(std::net::Ipv4Addr::LOCALHOST.into()),
    };
    let mut nak = [0u8; 16];
    let n = LossReport::encode(
        [
            SeqRange::single(seq(7)),
            SeqRange {
                first: seq(10),
                last: seq(20),
            },
        ],
        &mut nak,
    )
    .expect("fits");
    let mut data = vec![0u8; HEADER_LEN];
    DataHeader {
        seq: seq(100),
        message: MessageWord::new(Boundary::Solo, true, MsgNo::from_masked(1)),
        timestamp: 1000,
        dst: SocketId(0x1234),
    }
    .emit(&mut data)
    .expect("fits");
    data.extend_from_slice(b"hello, udt");
    vec![
        (
            "parse_packet",
            "handshake",
            control(0, Control::Handshake(hs)),
        ),
        (
            "parse_packet",
            "ack",
            control(
                5,
                Control::Ack(Ack {
                    ack_no: AckNo::from_masked(3),
                    ack: seq(101),
                    rtt_us: 100_000,
                    rtt_var_us: 50_000,
                    avail_buf_pkts: 8000,
                    rates: Some(AckRates {
                        arrival_pps: 1000,
                        capacity_pps: 5000,
                    }),
                }),
            ),
        ),
        (
            "parse_packet",
            "light_ack",
            control(5, Control::LightAck(seq(64))),
        ),
        (
            "parse_packet",
            "nak",
            control(
                5,
                Control::Nak(LossReport::parse(&nak[..n]).expect("valid report")),
            ),
        ),
        ("parse_packet", "keepalive", control(5, Control::KeepAlive)),
        ("parse_packet", "shutdown", control(5, Control::Shutdown)),
        (
            "parse_packet",
            "ack2",
            control(5, Control::Ack2(AckNo::from_masked(3))),
        ),
        (
            "parse_packet",
            "drop_request",
            control(
                5,
                Control::DropRequest(DropRequest {
                    msg: MsgNo::from_masked(9),
                    first: seq(30),
                    last: seq(33),
                }),
            ),
        ),
        (
            "parse_packet",
            "peer_error",
            control(5, Control::PeerError(4000)),
        ),
        (
            "parse_packet",
            "user_defined",
            control(
                5,
                Control::UserDefined(UserDefined {
                    ext_type: 1,
                    info: 2,
                    body: &[0, 0, 0, 3],
                }),
            ),
        ),
        ("parse_packet", "data", data),
    ]
}

/// Operation sequences for `recv_buffer` (mode byte, capacity byte, initial sequence bytes,
/// operations; see the target).
fn recv_buffer() -> Vec<Seed> {
    // Capacity 2 + 14 = 16 packets; initial sequence number just below the wrap.
    let head = |mode: u8| vec![mode, 14, 1, 3];
    // Stream: packets 0..8 in order, read; packets 12..8 backwards with a forged duplicate
    // (0x40: another payload), read in small pieces.
    // An insert is two bytes: relative position + 8, and a byte whose low bits add 64s.
    let mut stream = head(0);
    for k in 0u8..8 {
        stream.extend([8 + k, 0]);
    }
    stream.push(0xFF);
    for k in (8u8..13).rev() {
        stream.extend([8 + k, 0]);
    }
    // A forged duplicate of packet 7 (0x40: another payload), then reads of 6 bytes.
    stream.extend([0x40 | 15, 0, 7, 0x83, 0x83, 0x83, 0xFF]);
    // Messages: message-shape bytes are read as messages are generated; insert the first
    // dozen packets out of order, drop one message, read them all.
    let mut msgs = head(1);
    msgs.push(0); // first message number: just below the wrap
    for rel in [5u8, 4, 7, 6, 9, 8, 11, 10, 13, 12, 15, 14] {
        msgs.push(rel);
        msgs.push(rel % 8); // shape of a message if one is generated here
    }
    msgs.extend([0x82, 1, 0xFF, 0xFF, 0xC3, 0xFF, 0xFF]);
    // Hostile words.
    let mut hostile = head(2);
    for i in 0u8..24 {
        hostile.extend([i % 5, 8 + i, i.wrapping_mul(37), 10, 40]);
    }
    vec![
        ("recv_buffer", "stream", stream),
        ("recv_buffer", "messages", msgs),
        ("recv_buffer", "hostile", hostile),
    ]
}

/// A frame of the transfer protocol: tag, big-endian length, body.
fn frame(tag: u8, body: &[u8]) -> Vec<u8> {
    let mut f = vec![tag];
    f.extend_from_slice(&(body.len() as u32).to_be_bytes());
    f.extend_from_slice(body);
    f
}

fn string(s: &str) -> Vec<u8> {
    let mut b = (s.len() as u32).to_be_bytes().to_vec();
    b.extend_from_slice(s.as_bytes());
    b
}

/// Streams of frames for `transfer_protocol`, as a receiver and a sender exchange them.
fn transfer() -> Vec<Seed> {
    let mut hello = 1u32.to_be_bytes().to_vec();
    hello.extend([7u8; 32]);
    hello.push(1);
    let mut file = 1234u64.to_be_bytes().to_vec();
    file.extend(string("dir/file.bin"));
    let mut ready = 10u64.to_be_bytes().to_vec();
    ready.extend([9u8; 32]);
    let mut begin = 2u64.to_be_bytes().to_vec();
    begin.extend(4096u64.to_be_bytes());
    let receiver: Vec<u8> = [
        frame(1, &hello),
        frame(3, &[1]),
        frame(7, &[]),
        frame(9, &ready),
        frame(14, &[1]),
        frame(8, &string("no\x1b[2J")),
        frame(16, &begin),
    ]
    .concat();
    let sender: Vec<u8> = [
        frame(2, &[5u8; 32]),
        frame(4, &begin),
        frame(5, &string("dir")),
        frame(6, &file),
        frame(12, &10u64.to_be_bytes()),
        frame(13, &[4u8; 32]),
        frame(11, &[0]),
        frame(15, &[]),
    ]
    .concat();
    vec![
        ("transfer_protocol", "receiver_frames", receiver),
        ("transfer_protocol", "sender_frames", sender),
        ("transfer_protocol", "name", b"a/b/c.txt".to_vec()),
        (
            "transfer_protocol",
            "abort",
            frame(17, &string("disk full")),
        ),
    ]
}

/// Operation sequences for `endpoint` (see the target's operation table).
fn endpoint() -> Vec<Seed> {
    // The client's handshake with the listener, delivered both ways, then data time.
    let mut client = vec![1u8];
    client.extend([0, 2, 0, 2, 0, 2, 0, 2, 5, 10, 0, 2, 13]);
    // An attacker asks for a cookie, then answers with it (cookie choice 1: the one L gave
    // it), then with someone else's and a made-up one; the listener is accepted from, then
    // time jumps past two cookie periods and the learnt cookie is replayed.
    let mut attacker = vec![2u8];
    let hs = |who: u8, cookie: u8, request: u8| {
        // who, cookie choice, [cookie u32 if made up], pick, isn u32, request, socket id byte
        let mut v = vec![7u8, who, cookie];
        if cookie == 3 {
            v.extend([0xDE, 0xAD, 0xBE, 0xEF]);
        }
        v.extend([0u8, 1, 2, 3, 4, request, 2]);
        v
    };
    attacker.extend(hs(0, 0, 0)); // REQUEST
    attacker.extend(hs(0, 1, 2)); // RESPONSE with L's cookie: a connection
    attacker.extend(hs(1, 2, 2)); // with attacker 0's cookie: refused
    attacker.extend(hs(2, 3, 2)); // made up: refused
    attacker.extend([13, 6, 0xFF, 0xFF]); // accept; ~11 minutes pass
    attacker.extend(hs(0, 1, 2)); // the stale cookie: refused
    attacker.extend([9, 20]);
    attacker.extend([0x80u8; 20]); // arbitrary bytes
                                   // Forged handshakes to the client while it connects.
    let mut forged = vec![3u8, 0];
    forged.extend([10, 0, 1, 2, 3, 4, 0, 0, 0, 0, 0, 0, 0, 3, 2]); // RESPONSE from L
    forged.extend([0x2A, 0, 1, 2, 3, 4, 0, 0, 0, 0, 0, 0, 0, 6, 2]); // REJECT from elsewhere
    forged.extend([0, 2, 0, 2, 11, 0, 2, 0, 2, 12, 5, 200]);
    vec![
        ("endpoint", "client_handshake", client),
        ("endpoint", "attacker_cookies", attacker),
        ("endpoint", "forged_to_client", forged),
    ]
}

/// Operation sequences for `connection` (see the target's operation table).
fn connection() -> Vec<Seed> {
    let mut seeds = Vec::new();
    for (kind, name) in [(0u8, "stream_transfer"), (1, "message_transfer")] {
        let mut v = vec![kind];
        for round in 0u8..6 {
            // Side 0 sends 3000 bytes (side bit 7 clear), side 1 too.
            v.extend([9, 0xB8, 0x0B, 0x89, 0xB8, 0x0B]);
            // Deliver everything, let 20 ms pass, lose one datagram each way in odd rounds.
            v.extend([3, 4, 0xE2, 0x04]);
            if round % 2 == 1 {
                v.extend([2, 0x82]);
            }
            v.extend([3, 4, 0xE2, 0x04, 3]);
            // Both sides read.
            v.extend([10, 0xFF, 0x3F, 0x8A, 0xFF, 0x3F]);
        }
        // Close side 0.
        v.extend([0x7C, 3, 4, 0xFF, 0xFF, 3]);
        seeds.push(("connection", name, v));
    }
    // Forged control packets between deliveries: an ACK near the live numbers, a NAK, a
    // drop request.
    let mut forged = vec![0u8, 9, 0xB8, 0x0B, 1, 1];
    forged.extend([6, 0, 0, 0, 0, 0, 0, 0, 0]);
    forged.extend([6, 0, 0, 16, 2]);
    forged.extend([0x46, 0, 0, 16, 3, 1, 0, 0, 0]);
    forged.extend([3, 4, 0xE2, 0x04, 3, 10, 0xFF, 0x3F]);
    seeds.push(("connection", "forged_control", forged));
    seeds
}

/// Call sequences for `ffi_calls` (see the target's operation table): a listener and a
/// client connected over loopback, data both ways, epoll.
fn ffi() -> Vec<Seed> {
    let mut v = Vec::new();
    v.extend([0u8, 0]); // socket → handle 0
    v.extend([3u8, 0, 0, 0]); // bind it to an ephemeral port
    v.extend([4u8, 0, 5]); // listen
    v.extend([0u8, 0]); // socket → new handle 0, listener now 1
    v.extend([6u8, 0, 1]); // connect 0 to 1's port
    v.extend([5u8, 1]); // accept on 1 (may not be ready yet)
    v.extend([7u8, 0, 0x10, 0]); // send 11 bytes
    v.extend([5u8, 1]); // accept again
    v.extend([8u8, 2, 0x10, 0]); // recv on the accepted one
    v.extend([15u8, 0]); // epoll create
    v.extend([16u8, 0, 0, 2]); // add socket 0 for input
    v.extend([18u8, 0, 10]); // wait
    v.extend([14u8, 2, 13, 0, 12, 0, 5, 12]); // state, perfmon, getsockopt
    v.extend([11u8, 0, 8, 4, 0, 0, 1, 0]); // setsockopt
    v.extend([2u8, 0, 2, 1, 0x32, 0]); // close, close, release epoll
    vec![("ffi_calls", "listen_connect_send", v)]
}

/// Every seed of every target.
pub fn all() -> Vec<Seed> {
    [
        packets(),
        recv_buffer(),
        transfer(),
        endpoint(),
        connection(),
        ffi(),
    ]
    .concat()
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    #[test]
    fn checked_in_seeds_are_current() {
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("corpus");
        let write = std::env::var_os("UDT_FUZZ_WRITE_SEEDS").is_some();
        for (target, name, bytes) in super::all() {
            let path = root.join(target).join(format!("seed-{name}"));
            if write {
                std::fs::create_dir_all(path.parent().expect("has a parent")).expect("mkdir");
                std::fs::write(&path, &bytes).expect("write seed");
            } else {
                let on_disk = std::fs::read(&path)
                    .unwrap_or_else(|e| panic!("{}: {e} (UDT_FUZZ_WRITE_SEEDS=1)", path.display()));
                assert_eq!(
                    on_disk,
                    bytes,
                    "{} is stale (UDT_FUZZ_WRITE_SEEDS=1)",
                    path.display()
                );
            }
        }
    }
}
