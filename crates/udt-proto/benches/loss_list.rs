//! Loss list benchmarks: the loss patterns of a 1 Gb/s transfer (thousands of scattered losses,
//! bursts, one huge burst) on both lists.
//!
//! Each scenario times one phase (filling or draining) with `iter_custom`, doing the other phase
//! untimed, and reuses one list across iterations so that the figures are for the steady state,
//! without allocation. Throughput is set to the number of operations of the timed phase, so
//! criterion's `thrpt` is operations per second (time per operation = 1 / thrpt).
//! All scenarios start just below `SeqNo::MAX` so that they cross the wrap point.

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use udt_proto::loss_list::{ReceiverLossList, SenderLossList};
use udt_proto::{SeqNo, SeqRange};

/// A tiny deterministic generator (64-bit LCG, high bits), enough to shuffle benchmark inputs.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        self.0 >> 33
    }

    /// Fisher–Yates shuffle.
    fn shuffle<T>(&mut self, v: &mut [T]) {
        for i in (1..v.len()).rev() {
            let j = (self.next() % (i as u64 + 1)) as usize;
            v.swap(i, j);
        }
    }
}

/// First sequence number of every scenario: 50 000 below the wrap point.
const BASE: u32 = SeqNo::MAX - 50_000;

/// The sequence number `offset` after `BASE`.
fn seq(offset: u32) -> SeqNo {
    SeqNo::new(BASE).unwrap().add(offset)
}

/// The range of `len` numbers starting `offset` after `BASE`.
fn range(offset: u32, len: u32) -> SeqRange {
    SeqRange {
        first: seq(offset),
        last: seq(offset + len - 1),
    }
}

/// Runs `iters` rounds of `untimed` then `timed` on the same state, returning the time spent in
/// `timed` only.
fn time_phase<S>(
    iters: u64,
    state: &mut S,
    mut untimed: impl FnMut(&mut S),
    mut timed: impl FnMut(&mut S),
) -> Duration {
    let mut total = Duration::ZERO;
    for _ in 0..iters {
        untimed(state);
        let start = Instant::now();
        timed(state);
        total += start.elapsed();
    }
    total
}

fn drain_sender(list: &mut SenderLossList) -> u64 {
    let mut sum = 0u64;
    while let Some(s) = list.pop_first() {
        sum = sum.wrapping_add(u64::from(s.get()));
    }
    sum
}

/// (1) 10 000 scattered single losses (every other packet) inserted into the sender list, in
/// NAK order and shuffled, then retransmitted by `pop_first`.
fn sender_scattered(c: &mut Criterion) {
    const N: u32 = 10_000;
    let ascending: Vec<SeqRange> = (0..N).map(|i| range(2 * i, 1)).collect();
    let mut shuffled = ascending.clone();
    Lcg(1).shuffle(&mut shuffled);

    let mut g = c.benchmark_group("sender_scattered_10k");
    g.throughput(Throughput::Elements(u64::from(N)));
    let mut list = SenderLossList::new();
    for (name, input) in [
        ("insert_ascending", &ascending),
        ("insert_shuffled", &shuffled),
    ] {
        g.bench_function(name, |b| {
            b.iter_custom(|iters| {
                time_phase(iters, &mut list, SenderLossList::clear, |l| {
                    for &r in input {
                        black_box(l.insert(r));
                    }
                })
            })
        });
    }
    g.bench_function("pop_first", |b| {
        b.iter_custom(|iters| {
            time_phase(
                iters,
                &mut list,
                |l| {
                    for &r in &ascending {
                        l.insert(r);
                    }
                },
                |l| {
                    black_box(drain_sender(l));
                },
            )
        })
    });
    g.finish();
}

/// (2) 1000 bursts of 10 consecutive losses, reported in random order, then acknowledged by
/// `remove_up_to` in steps of 15 packets (so that most cuts fall inside a burst).
fn sender_bursts(c: &mut Criterion) {
    const BURSTS: u32 = 1000;
    const STEP: u32 = 15;
    let mut bursts: Vec<SeqRange> = (0..BURSTS).map(|b| range(20 * b, 10)).collect();
    Lcg(2).shuffle(&mut bursts);
    let steps: Vec<SeqNo> = (1..=20 * BURSTS / STEP + 1)
        .map(|k| seq(k * STEP))
        .collect();
    let fill = |l: &mut SenderLossList| {
        for &r in &bursts {
            l.insert(r);
        }
    };

    let mut g = c.benchmark_group("sender_bursts_1000x10");
    let mut list = SenderLossList::new();
    g.throughput(Throughput::Elements(u64::from(BURSTS)));
    g.bench_function("insert_shuffled", |b| {
        b.iter_custom(|iters| {
            time_phase(iters, &mut list, SenderLossList::clear, |l| {
                for &r in &bursts {
                    black_box(l.insert(r));
                }
            })
        })
    });
    g.throughput(Throughput::Elements(steps.len() as u64));
    g.bench_function("remove_up_to_steps", |b| {
        b.iter_custom(|iters| {
            time_phase(iters, &mut list, fill, |l| {
                for &s in &steps {
                    l.remove_up_to(s);
                }
                assert!(l.is_empty());
            })
        })
    });
    g.finish();
}

/// (3) 10 000 gaps of 3 packets (one packet received between gaps) appended to the receiver
/// list, then filled by retransmissions in arrival order and in random order (the middle
/// packet of a gap splits its range).
fn receiver_gaps(c: &mut Criterion) {
    const GAPS: u32 = 10_000;
    let gaps: Vec<SeqRange> = (0..GAPS).map(|g| range(4 * g, 3)).collect();
    let arrival: Vec<SeqNo> = gaps
        .iter()
        .flat_map(|r| (0..3).map(move |k| r.first.add(k)))
        .collect();
    let mut random = arrival.clone();
    Lcg(3).shuffle(&mut random);
    let fill = |l: &mut ReceiverLossList| {
        for &r in &gaps {
            l.push_back(r);
        }
    };

    let mut g = c.benchmark_group("receiver_10k_gaps_of_3");
    let mut list = ReceiverLossList::new();
    g.throughput(Throughput::Elements(u64::from(GAPS)));
    g.bench_function("push_back", |b| {
        b.iter_custom(|iters| time_phase(iters, &mut list, ReceiverLossList::clear, fill))
    });
    g.throughput(Throughput::Elements(arrival.len() as u64));
    for (name, order) in [
        ("remove_arrival_order", &arrival),
        ("remove_random_order", &random),
    ] {
        g.bench_function(name, |b| {
            b.iter_custom(|iters| {
                time_phase(iters, &mut list, fill, |l| {
                    for &s in order {
                        black_box(l.remove(s));
                    }
                    assert!(l.is_empty());
                })
            })
        });
    }
    g.finish();
}

/// (4) One 100 000-packet burst reported as a single range, then retransmitted by
/// `pop_first`.
fn single_huge_burst(c: &mut Criterion) {
    const N: u32 = 100_000;
    let mut g = c.benchmark_group("sender_burst_100k");
    g.throughput(Throughput::Elements(u64::from(N)));
    let mut list = SenderLossList::new();
    g.bench_function("insert_then_pop_first_all", |b| {
        b.iter_custom(|iters| {
            time_phase(
                iters,
                &mut list,
                |_| {},
                |l| {
                    l.insert(range(0, N));
                    debug_assert_eq!(l.range_count(), 1);
                    black_box(drain_sender(l));
                },
            )
        })
    });
    g.finish();
}

criterion_group!(
    benches,
    sender_scattered,
    sender_bursts,
    receiver_gaps,
    single_huge_burst
);
criterion_main!(benches);
