//! Batched receive: `recvmmsg` with a kernel timestamp per buffer and, where GRO is on, the
//! segment size of buffers that hold several coalesced datagrams.
//!
//! Arrival times: the kernel stamps each buffer when it reaches the socket (`SO_TIMESTAMPNS`),
//! so batching never blurs them. The datagrams of one GRO buffer share its stamp: the kernel
//! merged them because they arrived within one NAPI poll, tens of microseconds at most, and
//! it keeps no finer time. The engine sees them as a clump, which is what an interrupt-
//! coalescing NIC delivers too; its estimators are built for that (the arrival rate falls back
//! to spans of several intervals when single intervals collapse, the capacity estimate ignores
//! pairs inside a clump, and the sender bounds its rate by the delivery rate it sees in ACKs;
//! see `udt_proto::estimate`).

use std::io;
use std::mem::MaybeUninit;
use std::net::SocketAddr;
use std::os::fd::RawFd;

use super::offload::{SOL_UDP, UDP_GRO};
use super::{BATCH, MAX_DATAGRAM, SO_TIMESTAMPNS};

/// Bytes of control-message space per buffer: a timestamp (32) and a GRO segment size (24).
const CMSG_WORDS: usize = 16;

/// One received buffer's metadata; its bytes are in [`RecvBatch::data`].
#[derive(Clone, Copy, Debug)]
pub(crate) struct Received {
    pub(crate) from: SocketAddr,
    /// Bytes in the buffer.
    pub(crate) len: usize,
    /// Size of each coalesced datagram (the last may be shorter); `len` when not coalesced.
    pub(crate) seg: usize,
    /// Kernel receive time, ns since the Unix epoch (realtime clock), if the kernel stamped
    /// it.
    pub(crate) stamp: Option<u64>,
}

impl Received {
    /// Datagrams in the buffer (at least one, even when it is empty).
    pub(crate) fn datagrams(&self) -> usize {
        self.len.div_ceil(self.seg.max(1)).max(1)
    }
}

/// Buffers for [`recv_fd`]: reused across calls.
pub(crate) struct RecvBatch {
    bufs: Vec<Vec<u8>>,
    addrs: Vec<MaybeUninit<libc::sockaddr_storage>>,
    cmsgs: Vec<[u64; CMSG_WORDS]>,
    pub(crate) got: Vec<Received>,
}

impl RecvBatch {
    pub(crate) fn new() -> Self {
        RecvBatch {
            bufs: (0..BATCH).map(|_| vec![0u8; MAX_DATAGRAM]).collect(),
            addrs: vec![MaybeUninit::zeroed(); BATCH],
            cmsgs: vec![[0u64; CMSG_WORDS]; BATCH],
            got: Vec::with_capacity(BATCH),
        }
    }

    /// Bytes of received buffer `i`.
    pub(crate) fn data(&self, i: usize) -> &[u8] {
        &self.bufs[i][..self.got[i].len]
    }

    /// The datagrams of received buffer `i`, in arrival order (one, possibly empty, unless
    /// GRO coalesced several).
    pub(crate) fn segments(&self, i: usize) -> impl Iterator<Item = &[u8]> {
        let r = self.got[i];
        let data = self.data(i);
        let seg = r.seg.max(1);
        (0..r.datagrams()).map(move |k| &data[k * seg..((k + 1) * seg).min(r.len)])
    }
}

/// Reads up to [`BATCH`] buffers from `fd` without blocking; returns how many (0 when none is
/// waiting). Truncated buffers and unknown address families are dropped.
pub(crate) fn recv_fd(fd: RawFd, batch: &mut RecvBatch) -> io::Result<usize> {
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
            m.msg_hdr.msg_controllen = std::mem::size_of::<[u64; CMSG_WORDS]>() as _;
            m
        })
        .collect();
    // SAFETY: every mmsghdr points into buffers owned by `batch` (and `iovs`), which outlive the
    // call; the kernel writes at most the lengths given.
    let n = unsafe {
        libc::recvmmsg(
            fd,
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
            // Larger than any buffer we accept: drop it.
            continue;
        }
        // SAFETY: the kernel filled the sockaddr_storage this header points to.
        let storage = unsafe { &*hdr.msg_name.cast::<libc::sockaddr_storage>() };
        let Some(from) = to_socket_addr(storage) else {
            continue;
        };
        let idx = batch.got.len();
        let len = m.msg_len as usize;
        // Buffers are compacted to the front: move this one's bytes if an earlier one was
        // skipped (never happens without truncation, so the copy is rare).
        if slot != idx {
            let (head, tail) = batch.bufs.split_at_mut(slot);
            head[idx][..len].copy_from_slice(&tail[0][..len]);
        }
        let (stamp, gro) = control(hdr);
        let seg = match gro {
            Some(s) if s > 0 && s < len => s,
            _ => len,
        };
        batch.got.push(Received {
            from,
            len,
            seg,
            stamp,
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

/// The `SCM_TIMESTAMPNS` stamp (ns since the epoch) and the `UDP_GRO` segment size (bytes)
/// among the control messages of a received buffer.
fn control(hdr: &libc::msghdr) -> (Option<u64>, Option<usize>) {
    let (mut stamp, mut gro) = (None, None);
    // SAFETY: CMSG_* walk the control buffer the kernel filled, within `msg_controllen`; each
    // payload is read unaligned with the type the (level, type) pair defines.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(hdr);
        while !c.is_null() {
            match ((*c).cmsg_level, (*c).cmsg_type) {
                (libc::SOL_SOCKET, SO_TIMESTAMPNS) => {
                    let ts = std::ptr::read_unaligned(libc::CMSG_DATA(c).cast::<libc::timespec>());
                    stamp = crate::clock::timespec_ns(&ts);
                }
                (SOL_UDP, UDP_GRO) => {
                    let s = std::ptr::read_unaligned(libc::CMSG_DATA(c).cast::<libc::c_int>());
                    gro = usize::try_from(s).ok();
                }
                _ => {}
            }
            c = libc::CMSG_NXTHDR(hdr, c);
        }
    }
    (stamp, gro)
}
