//! The receiver's estimates need each datagram's own arrival time.
//!
//! UDT's sender learns the path from two numbers the receiver puts in every full ACK: the
//! packet arrival rate (median of inter-arrival times) and the link capacity (median spacing of
//! the packet pairs `16n`, `16n + 1`, sent back to back). Both are differences of arrival times
//! a few microseconds apart. A runtime that reads datagrams in batches (`recvmmsg`, GRO) and
//! hands a whole batch to the engine with one "now" squeezes those differences to zero inside
//! a batch and stretches them across batches. The `udt` runtime therefore passes every
//! datagram's kernel receive timestamp (`SO_TIMESTAMPNS`) as its time.
//!
//! These tests drive two endpoints over a modelled 1 Gb/s link (12 µs per 1500-byte packet)
//! and deliver the data to the receiver either at each datagram's arrival time (what the
//! runtime does) or in batches stamped with the time the batch was read (what it must not do),
//! and compare the rates reported in the ACKs with the link's true rate.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::net::SocketAddr;

use udt_proto::wire::{Control, Packet};
use udt_proto::{ConnectionConfig, Endpoint, EndpointConfig, Instant};

/// Serialisation time of one full-size packet on the modelled bottleneck, µs (1 Gb/s).
const LINK_US: u64 = 12;
/// One-way propagation delay, µs.
const DELAY_US: u64 = 1_000;
/// The link's rate, packets per second.
const LINK_PPS: f64 = 1e6 / LINK_US as f64;

/// How the receiver is handed its datagrams.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Delivery {
    /// Each datagram at its own arrival time (kernel timestamps).
    PerDatagram,
    /// Everything that arrived during the last `period` µs at once, stamped with the time of
    /// reading.
    Batched { period_us: u64 },
}

/// A datagram on the modelled wire: (arrival µs, sequence for a stable order, to the server?,
/// bytes).
type InFlight = (u64, u64, bool, Vec<u8>);

/// What the receiver reported in its last full ACK, and what really arrived.
struct Outcome {
    /// Reported packet arrival rate, packets per second.
    arrival_pps: u32,
    /// Reported link capacity, packets per second.
    capacity_pps: u32,
    /// Data packets that reached the receiver's socket in the last 200 ms, per second.
    true_arrival_pps: f64,
}

/// Runs 600 ms of a backlogged transfer.
fn run(delivery: Delivery) -> Outcome {
    let client_addr: SocketAddr = "10.0.0.1:5000".parse().unwrap();
    let server_addr: SocketAddr = "10.0.0.2:9000".parse().unwrap();
    let mut server = Endpoint::new(EndpointConfig {
        seed: 1,
        ..Default::default()
    });
    let mut client = Endpoint::new(EndpointConfig {
        seed: 2,
        ..Default::default()
    });
    let mut now = Instant::ZERO;
    server
        .listen(now, ConnectionConfig::default(), 8)
        .expect("listen");
    let id = client
        .connect(now, server_addr, ConnectionConfig::default())
        .expect("connect");

    let mut wire: BinaryHeap<Reverse<InFlight>> = BinaryHeap::new();
    let mut order = 0u64;
    let mut link_free_at = 0u64;
    // Datagrams that reached the server's socket but were not handed to the engine yet.
    let mut socket_queue: Vec<(u64, Vec<u8>)> = Vec::new();
    let mut next_read = 0u64;
    let mut last_rates = None;
    let mut buf = vec![0u8; 65_536];
    let mut accepted = None;
    let payload = vec![7u8; 1 << 20];

    let end_us = 600_000;
    let window_from = end_us - 200_000;
    let mut data_in_window = 0u64;
    while now.as_micros() < end_us {
        let t = now.as_micros();
        // Keep the sender backlogged.
        if let Some(mut c) = client.connection_mut(id) {
            while c.send(now, &payload).is_ok_and(|n| n > 0) {}
        }
        client.handle_timeout(now);
        while let Some(tx) = client.poll_transmit(now, &mut buf) {
            // The bottleneck serialises client → server packets; its queue is unbounded.
            let start = link_free_at.max(t);
            link_free_at = start + LINK_US * tx.len as u64 / 1500;
            order += 1;
            wire.push(Reverse((
                link_free_at + DELAY_US,
                order,
                true,
                buf[..tx.len].to_vec(),
            )));
        }
        server.handle_timeout(now);
        while let Some(tx) = server.poll_transmit(now, &mut buf) {
            if let Ok(Packet::Control(cp)) = Packet::parse(&buf[..tx.len]) {
                if let Control::Ack(ack) = cp.control {
                    if let Some(r) = ack.rates {
                        last_rates = Some((r.arrival_pps, r.capacity_pps));
                    }
                }
            }
            order += 1;
            wire.push(Reverse((
                t + DELAY_US,
                order,
                false,
                buf[..tx.len].to_vec(),
            )));
        }
        if accepted.is_none() {
            accepted = server.accept();
        }
        if let Some(s) = accepted {
            if let Some(mut c) = server.connection_mut(s) {
                while c.recv(&mut buf).is_ok_and(|n| n > 0) {}
            }
        }
        // Arrivals due now.
        while let Some(Reverse((at, _, _, _))) = wire.peek() {
            if *at > t {
                break;
            }
            let Reverse((at, _, to_server, data)) = wire.pop().unwrap();
            if to_server {
                if at >= window_from && matches!(Packet::parse(&data), Ok(Packet::Data(_))) {
                    data_in_window += 1;
                }
                socket_queue.push((at, data));
            } else {
                client.handle_datagram(Instant::from_micros(at), server_addr, &data);
            }
        }
        match delivery {
            Delivery::PerDatagram => {
                for (at, data) in socket_queue.drain(..) {
                    server.handle_datagram(Instant::from_micros(at), client_addr, &data);
                }
            }
            Delivery::Batched { period_us } => {
                if t >= next_read {
                    for (_, data) in socket_queue.drain(..) {
                        server.handle_datagram(now, client_addr, &data);
                    }
                    next_read = t + period_us;
                }
            }
        }
        now = now.plus_micros(1);
    }
    let (arrival_pps, capacity_pps) = last_rates.expect("the receiver sent full ACKs with rates");
    Outcome {
        arrival_pps,
        capacity_pps,
        true_arrival_pps: data_in_window as f64 / 0.2,
    }
}

impl Outcome {
    fn describe(&self) -> String {
        format!(
            "capacity {} pps (link {LINK_PPS:.0}), arrival rate {} pps (measured {:.0})",
            self.capacity_pps, self.arrival_pps, self.true_arrival_pps
        )
    }
    /// Reported capacity over the link's real rate.
    fn capacity_ratio(&self) -> f64 {
        f64::from(self.capacity_pps) / LINK_PPS
    }
    /// Reported arrival rate over the measured one.
    fn arrival_ratio(&self) -> f64 {
        f64::from(self.arrival_pps) / self.true_arrival_pps
    }
}

#[test]
fn per_datagram_arrival_times_give_true_estimates() {
    let o = run(Delivery::PerDatagram);
    eprintln!("{}", o.describe());
    // Packet pairs leave the bottleneck one serialisation time apart.
    assert!(
        (0.9..1.1).contains(&o.capacity_ratio()),
        "capacity {} pps, link {LINK_PPS:.0} pps",
        o.capacity_pps
    );
    assert!(
        (0.85..1.15).contains(&o.arrival_ratio()),
        "arrival rate {} pps, measured {:.0} pps",
        o.arrival_pps,
        o.true_arrival_pps
    );
}

#[test]
fn batch_read_times_would_corrupt_the_estimates() {
    // What the runtime avoids: 250 µs batches (about 20 packets) stamped at the time of reading.
    let o = run(Delivery::Batched { period_us: 250 });
    eprintln!("{}", o.describe());
    let off = |r: f64| !(0.5..2.0).contains(&r);
    assert!(
        off(o.capacity_ratio()) || off(o.arrival_ratio()),
        "batched delivery left both estimates within 2x of the truth (arrival {} of {:.0}, \
         capacity {} of {LINK_PPS:.0} pps): this test no longer shows the hazard",
        o.arrival_pps,
        o.true_arrival_pps,
        o.capacity_pps
    );
}
