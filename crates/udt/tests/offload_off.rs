//! The fallback path: `UDT_GSO=off` (plain `sendmmsg`/`recvmmsg`) and
//! `UDT_PACING_QUANTUM_US=0` (per-packet pacing), in a process of its own because the
//! environment is read when offloads are chosen.

mod offload_common;

use offload_common::transfer;

#[test]
fn forced_fallback_and_per_packet_pacing_stay_byte_exact() {
    // Before any socket exists: the offload choice is made once per process.
    std::env::set_var("UDT_GSO", "off");
    std::env::set_var("UDT_PACING_QUANTUM_US", "0");
    let (tx, rx) = transfer(16 << 20, None);
    assert!(!tx.gso && !tx.gro && !rx.gso && !rx.gro, "{tx:?} {rx:?}");
    assert_eq!(tx.gso_buffers_sent + rx.gro_buffers_received, 0);
    assert!(rx.datagrams_received >= (16 << 20) / 1456, "{rx:?}");
    let (tx, _) = transfer(4 << 20, Some(200));
    assert_eq!(
        tx.paced_wakeups, 0,
        "per-packet pacing counts no bursts: {tx:?}"
    );
}
