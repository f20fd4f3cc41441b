//! The UDP socket of a multiplexer: opening it with the buffer sizes the path needs, and
//! batched receive (`recvmmsg`, with a kernel timestamp per datagram) and send (`sendmmsg`).
//!
//! Batching must not blur arrival times: UDT's packet-pair capacity estimate and arrival-rate
//! estimate need the time each datagram reached the host, not when a batch was read. Every
//! datagram therefore carries its kernel receive timestamp (`SO_TIMESTAMPNS`).
//!
//! This is the only module with `unsafe` code: the two system calls and their control-message
//! buffers, which no safe crate wraps with timestamps.

use std::io;
use std::mem::MaybeUninit;
use std::net::SocketAddr;
use std::os::fd::{AsRawFd, RawFd};

use socket2::{Domain, Protocol, SockAddr, Socket, Type};

/// Datagrams moved per system call.
pub(crate) const BATCH: usize = 64;
/// Largest datagram received; longer ones are truncated by the kernel and dropped here.
pub(crate) const MAX_DATAGRAM: usize = 65_536;
/// `SO_TIMESTAMPNS` / `SCM_TIMESTAMPNS` on Linux (generic architectures).
const SO_TIMESTAMPNS: libc::c_int = 35;

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
        let one: libc::c_int = 1;
        // SAFETY: setsockopt with a pointer to a live c_int and its exact size.
        let rc = unsafe {
            libc::setsockopt(
                socket.as_raw_fd(),
                libc::SOL_SOCKET,
                SO_TIMESTAMPNS,
                (&one as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
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
        Ok(UdpPort {
            socket,
            local,
            buffers,
        })
    }

    pub(crate) fn local_addr(&self) -> SocketAddr {
        self.local
    }

    pub(crate) fn fd(&self) -> RawFd {
        self.socket.as_raw_fd()
    }
}

/// One received datagram's metadata; its bytes are in [`RecvBatch::data`].
#[derive(Clone, Copy, Debug)]
pub(crate) struct Received {
    pub(crate) from: SocketAddr,
    pub(crate) len: usize,
    /// Kernel receive time, ns since the Unix epoch (realtime clock), if the kernel stamped
    /// it.
    pub(crate) stamp: Option<u64>,
}

/// Buffers for [`recv_batch`]: reused across calls.
pub(crate) struct RecvBatch {
    bufs: Vec<Vec<u8>>,
    addrs: Vec<MaybeUninit<libc::sockaddr_storage>>,
    cmsgs: Vec<[u64; 8]>,
    pub(crate) got: Vec<Received>,
}

impl RecvBatch {
    pub(crate) fn new() -> Self {
        RecvBatch {
            bufs: (0..BATCH).map(|_| vec![0u8; MAX_DATAGRAM]).collect(),
            addrs: vec![MaybeUninit::zeroed(); BATCH],
            cmsgs: vec![[0u64; 8]; BATCH],
            got: Vec::with_capacity(BATCH),
        }
    }

    /// Bytes of received datagram `i`.
    pub(crate) fn data(&self, i: usize) -> &[u8] {
        &self.bufs[i][..self.got[i].len]
    }
}

/// Reads up to [`BATCH`] datagrams without blocking; returns how many (0 when none is
/// waiting).
pub(crate) fn recv_batch(port: &UdpPort, batch: &mut RecvBatch) -> io::Result<usize> {
    batch.got.clear();
    let mut iovs: Vec<libc::iovec> = batch
        .bufs
        .iter_mut()
        .map(|b| libc::iovec {
            iov_base: b.as_mut_ptr().cast(),
            iov_len: b.len(),
        })
        .collect();
    let mut msgs: Vec<libc::mmsghdr> = (0..BATCH)
        .map(|i| {
            // SAFETY: mmsghdr is plain data; all-zero is a valid value that we then fill in.
            let mut m: libc::mmsghdr = unsafe { std::mem::zeroed() };
            m.msg_hdr.msg_name = batch.addrs[i].as_mut_ptr().cast();
            m.msg_hdr.msg_namelen =
                std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
            m.msg_hdr.msg_iov = &mut iovs[i];
            m.msg_hdr.msg_iovlen = 1;
            m.msg_hdr.msg_control = batch.cmsgs[i].as_mut_ptr().cast();
            m.msg_hdr.msg_controllen = std::mem::size_of::<[u64; 8]>() as _;
            m
        })
        .collect();
    // SAFETY: every mmsghdr points into buffers owned by `batch` (and `iovs`), which outlive the
    // call; the kernel writes at most the lengths given.
    let n = unsafe {
        libc::recvmmsg(
            port.fd(),
            msgs.as_mut_ptr(),
            BATCH as libc::c_uint,
            libc::MSG_DONTWAIT,
            std::ptr::null_mut(),
        )
    };
    if n < 0 {
        let e = io::Error::last_os_error();
        return match e.kind() {
            io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted => Ok(0),
            _ => Err(e),
        };
    }
    for (slot, m) in msgs.iter().enumerate().take(n as usize) {
        let hdr = &m.msg_hdr;
        if hdr.msg_flags & libc::MSG_TRUNC != 0 {
            // Larger than any UDT packet we accept: drop it.
            continue;
        }
        // SAFETY: the kernel filled the sockaddr_storage this header points to.
        let storage = unsafe { &*hdr.msg_name.cast::<libc::sockaddr_storage>() };
        let Some(from) = to_socket_addr(storage) else {
            continue;
        };
        let idx = batch.got.len();
        // Datagrams are compacted to the front: move this one's bytes if an earlier one was
        // skipped (never happens without truncation, so the copy is rare).
        if slot != idx {
            let (head, tail) = batch.bufs.split_at_mut(slot);
            head[idx][..m.msg_len as usize].copy_from_slice(&tail[0][..m.msg_len as usize]);
        }
        batch.got.push(Received {
            from,
            len: m.msg_len as usize,
            stamp: timestamp(hdr),
        });
    }
    Ok(batch.got.len())
}

/// Reads an IPv4 or IPv6 address out of a `sockaddr_storage` the kernel filled.
fn to_socket_addr(storage: &libc::sockaddr_storage) -> Option<SocketAddr> {
    match libc::c_int::from(storage.ss_family) {
        libc::AF_INET => {
            // SAFETY: the family says the storage holds a sockaddr_in.
            let a =
                unsafe { &*(storage as *const libc::sockaddr_storage).cast::<libc::sockaddr_in>() };
            let ip = std::net::Ipv4Addr::from(u32::from_be(a.sin_addr.s_addr));
            Some(SocketAddr::new(ip.into(), u16::from_be(a.sin_port)))
        }
        libc::AF_INET6 => {
            // SAFETY: the family says the storage holds a sockaddr_in6.
            let a = unsafe {
                &*(storage as *const libc::sockaddr_storage).cast::<libc::sockaddr_in6>()
            };
            let ip = std::net::Ipv6Addr::from(a.sin6_addr.s6_addr);
            Some(SocketAddr::V6(std::net::SocketAddrV6::new(
                ip,
                u16::from_be(a.sin6_port),
                a.sin6_flowinfo,
                a.sin6_scope_id,
            )))
        }
        _ => None,
    }
}

/// The `SCM_TIMESTAMPNS` control message of a received datagram.
/// Sets a socket buffer past the system-wide cap (`SO_RCVBUFFORCE`/`SO_SNDBUFFORCE`); fails
/// silently without CAP_NET_ADMIN.
fn force_buffer(socket: &Socket, option: libc::c_int, bytes: usize) {
    let size = libc::c_int::try_from(bytes).unwrap_or(libc::c_int::MAX);
    // SAFETY: setsockopt with a pointer to a live c_int and its exact size.
    unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            libc::SOL_SOCKET,
            option,
            (&size as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        );
    }
}

fn timestamp(hdr: &libc::msghdr) -> Option<u64> {
    // SAFETY: CMSG_* walk the control buffer the kernel filled, within `msg_controllen`.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(hdr);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == SO_TIMESTAMPNS {
                let ts = std::ptr::read_unaligned(libc::CMSG_DATA(c).cast::<libc::timespec>());
                return crate::clock::timespec_ns(&ts);
            }
            c = libc::CMSG_NXTHDR(hdr, c);
        }
    }
    None
}

/// Datagrams waiting to be sent together.
pub(crate) struct SendBatch {
    bufs: Vec<Vec<u8>>,
    lens: Vec<usize>,
    dests: Vec<SockAddr>,
}

impl SendBatch {
    pub(crate) fn new() -> Self {
        SendBatch {
            bufs: (0..BATCH).map(|_| vec![0u8; MAX_DATAGRAM]).collect(),
            lens: Vec::with_capacity(BATCH),
            dests: Vec::with_capacity(BATCH),
        }
    }

    pub(crate) fn is_full(&self) -> bool {
        self.lens.len() == BATCH
    }

    /// The buffer of the next datagram to add.
    pub(crate) fn next_buf(&mut self) -> &mut [u8] {
        let i = self.lens.len();
        &mut self.bufs[i]
    }

    /// Commits the datagram just written into [`next_buf`](Self::next_buf).
    pub(crate) fn push(&mut self, len: usize, to: SocketAddr) {
        self.lens.push(len);
        self.dests.push(SockAddr::from(to));
    }

    /// Sends every queued datagram (retrying while the kernel takes only part of the batch);
    /// returns how many the kernel refused (counted as lost: UDP may drop anyway).
    pub(crate) fn flush(&mut self, port: &UdpPort) -> usize {
        let mut start = 0;
        let mut refused = 0;
        while start < self.lens.len() {
            let mut iovs: Vec<libc::iovec> = (start..self.lens.len())
                .map(|i| libc::iovec {
                    iov_base: self.bufs[i].as_mut_ptr().cast(),
                    iov_len: self.lens[i],
                })
                .collect();
            let mut msgs: Vec<libc::mmsghdr> = (start..self.lens.len())
                .enumerate()
                .map(|(k, i)| {
                    // SAFETY: plain data, zero is valid; fields filled below.
                    let mut m: libc::mmsghdr = unsafe { std::mem::zeroed() };
                    m.msg_hdr.msg_name = self.dests[i].as_ptr() as *mut libc::c_void;
                    m.msg_hdr.msg_namelen = self.dests[i].len();
                    m.msg_hdr.msg_iov = &mut iovs[k];
                    m.msg_hdr.msg_iovlen = 1;
                    m
                })
                .collect();
            // SAFETY: all pointers refer to buffers owned by `self`/`iovs`, alive for the call.
            let n = unsafe {
                libc::sendmmsg(port.fd(), msgs.as_mut_ptr(), msgs.len() as libc::c_uint, 0)
            };
            if n <= 0 {
                let e = io::Error::last_os_error();
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                if e.kind() == io::ErrorKind::WouldBlock {
                    // The socket buffer is full: wait briefly for room rather than drop.
                    wait_writable(port.fd());
                    continue;
                }
                // Unreachable destination and the like: skip this datagram.
                refused += 1;
                start += 1;
                continue;
            }
            start += n as usize;
        }
        self.lens.clear();
        self.dests.clear();
        refused
    }
}

/// Blocks up to 1 ms until `fd` is writable.
fn wait_writable(fd: RawFd) {
    let mut p = libc::pollfd {
        fd,
        events: libc::POLLOUT,
        revents: 0,
    };
    // SAFETY: one valid pollfd.
    unsafe {
        libc::poll(&mut p, 1, 1);
    }
}
