//! UDP segmentation offload on send (GSO, `UDP_SEGMENT`) and receive offload (GRO, `UDP_GRO`).
//!
//! With GSO one `sendmmsg` entry carries up to [`MAX_GSO_SEGMENTS`] equal-sized datagrams to one
//! destination as a single buffer; the kernel (or the NIC) cuts it into ordinary UDP datagrams,
//! so on the wire nothing changes and a UDT4 peer sees the usual packets. With GRO the kernel
//! may hand us several datagrams of one flow as one buffer plus their segment size; on loopback
//! a GSO buffer even travels to a GRO socket uncut. Either way the system calls per packet fall
//! by an order of magnitude, which is what limits a UDP transport's throughput (raw UDP moved
//! 3.5 Gbit/s with 1472-byte datagrams on the development machine, 41 Gbit/s with 64 KB ones).
//!
//! Whether to use them is decided in three steps:
//! 1. `UDT_GSO=off` (or `0`, `no`, `false`) in the environment turns both off, for
//!    comparisons and to test the fallback.
//! 2. Once per process, [`self_test`] sends a small GSO buffer between two loopback sockets,
//!    one with GRO on, and checks that the bytes arrive intact as the right datagrams. An old
//!    kernel fails here and every socket uses plain `sendmmsg`/`recvmmsg`.
//! 3. Each socket enables GRO with `setsockopt`; a GSO send that a device refuses at run time
//!    (`EIO` without checksum offload, `EINVAL`, `EOPNOTSUPP`) turns GSO off for that socket
//!    and its datagrams are sent again one by one (see `send.rs`).
//!
//! [`IoCounters`] count which path carried what; [`IoStats`] is their public snapshot.

use std::io;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::Duration;

/// `SOL_UDP`: the socket-option level of UDP.
pub(crate) const SOL_UDP: libc::c_int = 17;
/// `UDP_SEGMENT`: GSO segment size, as a socket option or a per-message control message.
pub(crate) const UDP_SEGMENT: libc::c_int = 103;
/// `UDP_GRO`: deliver coalesced datagrams with their segment size in a control message.
pub(crate) const UDP_GRO: libc::c_int = 104;
/// Most segments in one GSO buffer: the kernel's `UDP_MAX_SEGMENTS` (64 before Linux 6.9,
/// 128 since; the lower value works on both).
pub(crate) const MAX_GSO_SEGMENTS: usize = 64;
/// Most bytes in one GSO buffer: the largest UDP payload in an IPv4 packet (65 535 − 20 − 8).
pub(crate) const MAX_GSO_BYTES: usize = 65_507;

/// What the I/O thread of one UDP port has moved, and by which path. Counters are totals
/// since the port was opened.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IoStats {
    /// GSO is in use for sending (self-test passed, not disabled, no device refused it).
    pub gso: bool,
    /// GRO is enabled for receiving.
    pub gro: bool,
    /// UDP datagrams handed to the kernel (each GSO segment counts as one).
    pub datagrams_sent: u64,
    /// `sendmmsg` calls that sent at least one datagram.
    pub send_calls: u64,
    /// GSO buffers sent (each carried two or more datagrams).
    pub gso_buffers_sent: u64,
    /// UDP datagrams received (each GRO segment counts as one).
    pub datagrams_received: u64,
    /// `recvmmsg` calls that returned at least one datagram.
    pub recv_calls: u64,
    /// Received buffers that held two or more coalesced datagrams (GRO).
    pub gro_buffers_received: u64,
    /// Times a device refused a GSO send and the port fell back to one datagram per entry.
    pub gso_fallbacks: u64,
    /// Paced wake-ups of the I/O thread that sent data: with burst pacing, about one per
    /// pacing quantum at high rates.
    pub paced_wakeups: u64,
}

/// The live counters behind [`IoStats`], shared by the I/O thread (writer) and the sockets of
/// its port (readers). Relaxed atomics: they are statistics, read without ordering needs.
#[derive(Debug, Default)]
pub(crate) struct IoCounters {
    pub(crate) gso: AtomicBool,
    pub(crate) gro: AtomicBool,
    pub(crate) datagrams_sent: AtomicU64,
    pub(crate) send_calls: AtomicU64,
    pub(crate) gso_buffers_sent: AtomicU64,
    pub(crate) datagrams_received: AtomicU64,
    pub(crate) recv_calls: AtomicU64,
    pub(crate) gro_buffers_received: AtomicU64,
    pub(crate) gso_fallbacks: AtomicU64,
    pub(crate) paced_wakeups: AtomicU64,
}

impl IoCounters {
    /// Adds `n` to counter `c`.
    pub(crate) fn add(c: &AtomicU64, n: u64) {
        c.fetch_add(n, Ordering::Relaxed);
    }

    /// A snapshot.
    pub(crate) fn snapshot(&self) -> IoStats {
        let r = |c: &AtomicU64| c.load(Ordering::Relaxed);
        IoStats {
            gso: self.gso.load(Ordering::Relaxed),
            gro: self.gro.load(Ordering::Relaxed),
            datagrams_sent: r(&self.datagrams_sent),
            send_calls: r(&self.send_calls),
            gso_buffers_sent: r(&self.gso_buffers_sent),
            datagrams_received: r(&self.datagrams_received),
            recv_calls: r(&self.recv_calls),
            gro_buffers_received: r(&self.gro_buffers_received),
            gso_fallbacks: r(&self.gso_fallbacks),
            paced_wakeups: r(&self.paced_wakeups),
        }
    }
}

/// True unless `UDT_GSO` asks for the plain path.
pub(crate) fn allowed_by_env() -> bool {
    !matches!(
        std::env::var("UDT_GSO")
            .as_deref()
            .map(str::to_ascii_lowercase)
            .as_deref(),
        Ok("off" | "0" | "no" | "false")
    )
}

/// Whether this process may use GSO and GRO: the environment allows it and the loopback
/// self-test passed. Computed once.
pub(crate) fn available() -> bool {
    static OK: OnceLock<bool> = OnceLock::new();
    *OK.get_or_init(|| allowed_by_env() && self_test().is_ok())
}

/// Sends three datagrams (100, 100 and 37 bytes) as one GSO buffer from one loopback socket
/// to another with GRO on, and checks that exactly those bytes come back as those datagrams,
/// coalesced or not.
pub(crate) fn self_test() -> io::Result<()> {
    use socket2::{Domain, Protocol, SockAddr, Socket, Type};
    let lo: std::net::SocketAddr = (std::net::Ipv4Addr::LOCALHOST, 0).into();
    let rx = Socket::new(Domain::IPV4, Type::DGRAM, Some(Protocol::UDP))?;
    rx.bind(&SockAddr::from(lo))?;
    super::set_int_option(rx.as_raw_fd(), SOL_UDP, UDP_GRO, 1)?;
    rx.set_read_timeout(Some(Duration::from_millis(200)))?;
    let tx = Socket::new(Domain::IPV4, Type::DGRAM, Some(Protocol::UDP))?;
    tx.bind(&SockAddr::from(lo))?;
    let sizes = [100usize, 100, 37];
    let payload: Vec<u8> = (0..sizes.iter().sum::<usize>())
        .map(|i| (i * 7 + 3) as u8)
        .collect();
    let to = rx.local_addr()?;
    let mut batch = super::send::SendBatch::new();
    let mut off = 0;
    for &n in &sizes {
        batch.next_buf()[..n].copy_from_slice(&payload[off..off + n]);
        batch.push(
            n,
            to.as_socket()
                .ok_or_else(|| io::Error::other("no address"))?,
            true,
        );
        off += n;
    }
    let counters = IoCounters::default();
    let mut gso = true;
    batch.flush_fd(tx.as_raw_fd(), &mut gso, &counters);
    if !gso || counters.gso_buffers_sent.load(Ordering::Relaxed) != 1 {
        return Err(io::Error::other("GSO send refused"));
    }
    // Read until all bytes came back (as one GRO buffer or as separate datagrams).
    let mut got: Vec<Vec<u8>> = Vec::new();
    let mut total = 0;
    let mut rb = super::recv::RecvBatch::new();
    while total < payload.len() {
        let mut p = libc::pollfd {
            fd: rx.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd.
        if unsafe { libc::poll(&mut p, 1, 200) } <= 0 {
            return Err(io::Error::other("GSO self-test datagrams did not arrive"));
        }
        let n = super::recv::recv_fd(rx.as_raw_fd(), &mut rb)?;
        for i in 0..n {
            for seg in rb.segments(i) {
                total += seg.len();
                got.push(seg.to_vec());
            }
        }
    }
    let mut rest = &payload[..];
    let expected: Vec<Vec<u8>> = sizes
        .iter()
        .map(|&n| {
            let (head, tail) = rest.split_at(n);
            rest = tail;
            head.to_vec()
        })
        .collect();
    if got == expected {
        Ok(())
    } else {
        Err(io::Error::other("GSO self-test datagrams arrived altered"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn self_test_passes_on_this_kernel() {
        // Linux has had UDP_SEGMENT since 4.18 and UDP_GRO since 5.0.
        self_test().expect("GSO/GRO self-test");
    }
}
