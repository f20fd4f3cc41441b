//! A listener under a flood of spoofed handshakes keeps no per-peer state before a valid
//! cookie, and a legitimate client still connects (the real-socket figures are in
//! `docs/benchmarks.md`, made with `crates/udt/examples/flood.rs`).

mod common;

use std::net::{Ipv6Addr, SocketAddr};

use common::{spoofed_request as request, Net};
use udt_proto::wire::{Control, ControlPacket, Packet, RequestType, HANDSHAKE_LEN};
use udt_proto::{ConnectionConfig, ConnectionState, StateCounts};

/// Spoofed sources: this many distinct addresses, half IPv4, half IPv6.
const N: u32 = 100_000;

fn spoofed(i: u32) -> SocketAddr {
    if i % 2 == 0 {
        SocketAddr::from((
            [10, (i >> 16) as u8, (i >> 8) as u8, i as u8],
            1024 + (i % 50_000) as u16,
        ))
    } else {
        let ip = Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, (i >> 16) as u16, i as u16);
        SocketAddr::from((ip, 2000 + (i % 999) as u16))
    }
}

#[test]
fn spoofed_handshakes_leave_no_per_address_state_and_a_client_still_connects() {
    let mut net = Net::new(5, 5_000);
    let client = net.add("192.168.1.9:7000", 1);
    let server = net.add("192.168.1.1:9000", 2);
    let now = net.now;
    net.nodes[server]
        .ep
        .listen(now, ConnectionConfig::default(), 16)
        .unwrap();
    let mut buf = vec![0u8; 2048];
    let (mut echoes, mut most_queued) = (0u64, 0usize);
    for i in 0..N {
        let ep = &mut net.nodes[server].ep;
        ep.handle_datagram(now, spoofed(i), &request(i, false));
        ep.handle_datagram(now, spoofed(i), &request(i, true));
        // A runtime sends what is queued after every batch of 64 datagrams it reads.
        if i % 32 == 31 {
            most_queued = most_queued.max(ep.state_counts().queued_replies);
            while let Some(t) = ep.poll_transmit(now, &mut buf) {
                echoes += 1;
                assert_eq!(t.len, 16 + HANDSHAKE_LEN, "reply larger than the request");
                let Ok(Packet::Control(ControlPacket {
                    control: Control::Handshake(h),
                    ..
                })) = Packet::parse(&buf[..t.len])
                else {
                    panic!("not a handshake")
                };
                assert_eq!(h.request, RequestType::REQUEST, "only cookie echoes");
            }
            assert_eq!(
                ep.state_counts(),
                StateCounts::default(),
                "per-peer state after {} spoofed sources",
                i + 1
            );
        }
    }
    assert_eq!(
        echoes,
        u64::from(N),
        "every first-phase request is echoed once"
    );
    assert!(
        most_queued <= 64,
        "replies queued between drains: {most_queued}"
    );
    let st = net.nodes[server].ep.stats();
    assert_eq!(st.handshakes_refused, u64::from(N), "{st:?}");
    assert_eq!(net.nodes[server].ep.connection_count(), 0);

    // The flood goes on through the network while a real client connects.
    let (mut i, mut accepted) = (N, None);
    let server_addr = net.addr(server);
    let c = net.nodes[client]
        .ep
        .connect(net.now, server_addr, ConnectionConfig::default())
        .unwrap();
    let ok = net.run_until(5.0, |net| {
        for _ in 0..64 {
            i += 1;
            net.inject(
                server,
                spoofed(i),
                request(i, i % 2 == 0),
                1 + u64::from(i % 500),
            );
        }
        accepted = accepted.or_else(|| net.nodes[server].ep.accept());
        accepted.is_some()
            && net.nodes[client]
                .ep
                .connection(c)
                .is_some_and(|c| c.state() == ConnectionState::Connected)
    });
    assert!(ok, "the client did not get in during the flood");
    let counts = net.nodes[server].ep.state_counts();
    assert_eq!(counts.connections, 1, "{counts:?}");
    assert_eq!(counts.accepted_from, 1, "{counts:?}");
}
