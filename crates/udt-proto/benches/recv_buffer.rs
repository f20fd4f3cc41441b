//! Receive buffer benchmarks: message reassembly as a connection drives it, asking after every
//! arriving packet whether a message is readable and reading it when it is.
//!
//! - `long ordered message`: one 1000-packet in-order message arriving in order (the head
//!   message's scan must not restart at every arrival).
//! - `unordered behind a gap`: 1000 unordered messages of 8 packets arriving while the very
//!   first packet is missing, as on a long path waiting for a retransmission (completing a
//!   message must not cost a search of everything held past the gap).
//!
//! Throughput is set to the packets inserted, so `thrpt` is packets per second.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use udt_proto::buffer::RecvBuffer;
use udt_proto::wire::{Boundary, MessageWord};
use udt_proto::{MsgNo, SeqNo};

fn boundary(k: u32, len: u32) -> Boundary {
    match k {
        0 if len == 1 => Boundary::Solo,
        0 => Boundary::First,
        k if k == len - 1 => Boundary::Last,
        _ => Boundary::Middle,
    }
}

fn seq(n: u32) -> SeqNo {
    SeqNo::new(n).expect("in range")
}

fn bench(c: &mut Criterion) {
    let payload = [7u8; 1456];
    let mut out = vec![0u8; 2 << 20];
    let mut g = c.benchmark_group("recv_buffer");

    const LONG: u32 = 1000;
    g.throughput(Throughput::Elements(u64::from(LONG)));
    g.bench_function("long ordered message (1000 packets)", |b| {
        b.iter_batched(
            || RecvBuffer::new(4096, seq(0)),
            |mut r| {
                let msg = MsgNo::new(1).expect("in range");
                for k in 0..LONG {
                    let w = MessageWord::new(boundary(k, LONG), true, msg);
                    r.insert(seq(k), w, &payload);
                    if r.message_readable() {
                        black_box(r.read_message(&mut out));
                    }
                }
                r
            },
            BatchSize::LargeInput,
        )
    });

    const MSGS: u32 = 1000;
    const LEN: u32 = 8;
    g.throughput(Throughput::Elements(u64::from(MSGS * LEN)));
    g.bench_function("unordered behind a gap (1000 x 8 packets)", |b| {
        b.iter_batched(
            || RecvBuffer::new(16_384, seq(0)),
            |mut r| {
                // Sequence 0 (message 0's first packet) never arrives.
                for m in 0..MSGS {
                    let msg = MsgNo::new(m + 1).expect("in range");
                    for k in 0..LEN {
                        let s = m * LEN + k;
                        if s == 0 {
                            continue;
                        }
                        r.insert(
                            seq(s),
                            MessageWord::new(boundary(k, LEN), false, msg),
                            &payload,
                        );
                        if r.message_readable() {
                            black_box(r.read_message(&mut out));
                        }
                    }
                }
                r
            },
            BatchSize::LargeInput,
        )
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
