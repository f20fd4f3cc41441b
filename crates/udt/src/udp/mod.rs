//! The UDP socket of a multiplexer: opening it with the buffer sizes the path needs
//! (here), batched receive with kernel timestamps and GRO (`recv.rs`), batched send with GSO
//! (`send.rs`), and the choice of offloads with its self-test and counters (`offload.rs`).
//!
//! Batching must not blur arrival times: UDT's packet-pair capacity estimate and arrival-rate
//! estimate need the time each datagram reached the host, not when a batch was read. Every
//! buffer therefore carries its kernel receive timestamp (`SO_TIMESTAMPNS`).
//!
//! This is the only module with `unsafe` code: the system calls and their control-message
//! buffers, which no safe crate wraps with timestamps, GSO and GRO together.

mod offload;
mod recv;
mod send;

pub(crate) use offload::IoCounters;
pub use offload::IoStats;
pub(crate) use recv::RecvBatch;
pub(crate) use send::SendBatch;

use std::io;
use std::net::SocketAddr;
use std::os::fd::{AsRawFd, RawFd};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use socket2::{Domain, Protocol, SockAddr, Socket, Type};

/// Buffers read per `recvmmsg` call.
pub(crate) const BATCH: usize = 64;
/// Largest datagram received; longer ones are truncated by the kernel and dropped here.
pub(crate) const MAX_DATAGRAM: usize = 65_536;
/// `SO_TIMESTAMPNS` / `SCM_TIMESTAMPNS` on Linux (generic architectures).
pub(crate) const SO_TIMESTAMPNS: libc::c_int = 35;

/// What the kernel granted for the socket buffers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BufferSizes {
    /// Requested receive buffer, bytes.
    pub recv_requested: usize,
    /// Granted receive buffer, bytes (the kernel reports twice the usable size).
    pub recv_granted: usize,
    /// Requested send buffer, bytes.
    pub send_requested: usize,
    /// Granted send buffer, bytes.
    pub send_granted: usize,
}

impl BufferSizes {
    /// True when the kernel's `net.core.rmem_max` / `wmem_max` cut a request short.
    pub fn capped(&self) -> bool {
        self.recv_granted < self.recv_requested || self.send_granted < self.send_requested
    }
}

/// A bound, non-blocking UDP socket.
#[derive(Debug)]
pub(crate) struct UdpPort {
    socket: Socket,
    local: SocketAddr,
    pub(crate) buffers: BufferSizes,
    /// What the port moved and by which path (shared with the multiplexer's sockets).
    pub(crate) counters: Arc<IoCounters>,
}

impl UdpPort {
    /// Binds `addr` with the requested kernel buffers (bytes).
    pub(crate) fn bind(addr: SocketAddr, recv_buf: usize, send_buf: usize) -> io::Result<Self> {
        let domain = if addr.is_ipv4() {
            Domain::IPV4
        } else {
            Domain::IPV6
        };
        let socket = Socket::new(
            domain,
            Type::DGRAM.nonblocking().cloexec(),
            Some(Protocol::UDP),
        )?;
        if addr.is_ipv6() {
            // Accept IPv4-mapped peers too, like a dual-stack TCP listener.
            let _ = socket.set_only_v6(false);
        }
        Self::configure(&socket, recv_buf, send_buf)?;
        socket.bind(&SockAddr::from(addr))?;
        Self::finish(socket, recv_buf, send_buf)
    }

    /// Takes over a UDP socket the application made (UDT4's `bind2`): it is made
    /// non-blocking and given the requested kernel buffers (bytes) and receive timestamps. An
    /// unbound socket is bound to an ephemeral port of the unspecified address of its family.
    pub(crate) fn adopt(
        udp: std::net::UdpSocket,
        recv_buf: usize,
        send_buf: usize,
    ) -> io::Result<Self> {
        let socket = Socket::from(udp);
        if socket.r#type()? != Type::DGRAM {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "not a datagram socket",
            ));
        }
        socket.set_nonblocking(true)?;
        socket.set_cloexec(true)?;
        Self::configure(&socket, recv_buf, send_buf)?;
        let local = socket.local_addr()?;
        let unbound = local.as_socket().is_none_or(|a| a.port() == 0);
        if unbound {
            let any: SocketAddr = match local.family() as libc::c_int {
                libc::AF_INET6 => (std::net::Ipv6Addr::UNSPECIFIED, 0).into(),
                libc::AF_INET => (std::net::Ipv4Addr::UNSPECIFIED, 0).into(),
                _ => {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidInput,
                        "not an IPv4 or IPv6 socket",
                    ))
                }
            };
            socket.bind(&SockAddr::from(any))?;
        }
        Self::finish(socket, recv_buf, send_buf)
    }

    /// Kernel buffers and receive timestamps, before the socket is used.
    fn configure(socket: &Socket, recv_buf: usize, send_buf: usize) -> io::Result<()> {
        socket.set_recv_buffer_size(recv_buf)?;
        socket.set_send_buffer_size(send_buf)?;
        // The kernel silently caps these at net.core.rmem_max / wmem_max (often 208 KB to
        // 4 MB, far below what 1 Gb/s over 100 ms needs). A privileged process (CAP_NET_ADMIN)
        // may exceed the caps; others keep the capped size, which `BufferSizes::capped`
        // reports so that callers can warn.
        if socket.recv_buffer_size()? / 2 < recv_buf {
            force_buffer(socket, libc::SO_RCVBUFFORCE, recv_buf);
        }
        if socket.send_buffer_size()? / 2 < send_buf {
            force_buffer(socket, libc::SO_SNDBUFFORCE, send_buf);
        }
        set_int_option(socket.as_raw_fd(), libc::SOL_SOCKET, SO_TIMESTAMPNS, 1)
    }

    /// Turns on the offloads this process may use (see `offload.rs`): GSO needs nothing on
    /// the socket, GRO a socket option that an old kernel refuses.
    fn enable_offloads(&self) {
        if !offload::available() {
            return;
        }
        self.counters.gso.store(true, Ordering::Relaxed);
        let gro = set_int_option(self.fd(), offload::SOL_UDP, offload::UDP_GRO, 1).is_ok();
        self.counters.gro.store(gro, Ordering::Relaxed);
    }

    /// The port of a configured, bound socket.
    fn finish(socket: Socket, recv_buf: usize, send_buf: usize) -> io::Result<Self> {
        let local = socket
            .local_addr()?
            .as_socket()
            .ok_or_else(|| io::Error::other("bound socket has no IP address"))?;
        // Linux reports twice the size it accounts for; halve it to compare with the request.
        let buffers = BufferSizes {
            recv_requested: recv_buf,
            recv_granted: socket.recv_buffer_size()? / 2,
            send_requested: send_buf,
            send_granted: socket.send_buffer_size()? / 2,
        };
        let port = UdpPort {
            socket,
            local,
            buffers,
            counters: Arc::new(IoCounters::default()),
        };
        port.enable_offloads();
        Ok(port)
    }

    pub(crate) fn local_addr(&self) -> SocketAddr {
        self.local
    }

    pub(crate) fn fd(&self) -> RawFd {
        self.socket.as_raw_fd()
    }

    /// Reads up to [`BATCH`] buffers without blocking (see [`recv::recv_fd`]); returns how
    /// many, counting them.
    pub(crate) fn recv(&self, batch: &mut RecvBatch) -> io::Result<usize> {
        let n = recv::recv_fd(self.fd(), batch)?;
        if n > 0 {
            let c = &self.counters;
            IoCounters::add(&c.recv_calls, 1);
            let mut datagrams = 0;
            let mut coalesced = 0;
            for r in &batch.got {
                let k = r.datagrams();
                datagrams += k as u64;
                coalesced += u64::from(k > 1);
            }
            IoCounters::add(&c.datagrams_received, datagrams);
            IoCounters::add(&c.gro_buffers_received, coalesced);
        }
        Ok(n)
    }

    /// Sends every datagram queued in `batch` (see [`SendBatch::flush_fd`]); returns how many
    /// were refused.
    pub(crate) fn send(&self, batch: &mut SendBatch) -> usize {
        let mut gso = self.counters.gso.load(Ordering::Relaxed);
        batch.flush_fd(self.fd(), &mut gso, &self.counters)
    }
}

/// Sets a socket buffer past the system-wide cap (`SO_RCVBUFFORCE`/`SO_SNDBUFFORCE`); fails
/// silently without CAP_NET_ADMIN.
fn force_buffer(socket: &Socket, option: libc::c_int, bytes: usize) {
    let size = libc::c_int::try_from(bytes).unwrap_or(libc::c_int::MAX);
    let _ = set_int_option(socket.as_raw_fd(), libc::SOL_SOCKET, option, size);
}

/// Sets an integer socket option, returning the OS error on failure.
pub(crate) fn set_int_option(
    fd: RawFd,
    level: libc::c_int,
    name: libc::c_int,
    value: libc::c_int,
) -> io::Result<()> {
    // SAFETY: setsockopt with a pointer to a live c_int and its exact size.
    let rc = unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            (&value as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}
