//! Batched send: `sendmmsg`, with consecutive equal-sized datagrams to one destination merged
//! into GSO buffers where the port allows it (see `offload.rs`).
//!
//! Datagrams are written back to back into one arena, so that a run of them is already the
//! contiguous buffer a GSO entry needs: no copy is made to merge them.

use std::io;
use std::net::SocketAddr;
use std::os::fd::RawFd;
use std::sync::atomic::Ordering;

use socket2::SockAddr;

use super::offload::{IoCounters, MAX_GSO_BYTES, MAX_GSO_SEGMENTS, SOL_UDP, UDP_SEGMENT};
use super::MAX_DATAGRAM;

/// Datagrams queued per flush at most.
pub(crate) const SEND_BATCH: usize = 128;
/// Bytes of the arena: room for a full batch of 1500-byte datagrams plus one of the largest.
const ARENA_BYTES: usize = SEND_BATCH * 1_500 + MAX_DATAGRAM;
/// Control-message space per entry: one `UDP_SEGMENT` (a u16, 24 bytes with its header).
const CMSG_WORDS: usize = 4;

/// One queued datagram: where its bytes are in the arena, where it goes, and whether it may
/// share a GSO buffer (see [`SendBatch::push`]).
#[derive(Clone, Copy, Debug)]
struct Item {
    offset: usize,
    len: usize,
    to: SocketAddr,
    merge: bool,
}

/// A run of queued datagrams sent as one `sendmmsg` entry: one datagram, or a GSO buffer of
/// `count` datagrams of `seg` bytes (the last may be shorter).
#[derive(Clone, Copy, Debug)]
struct Entry {
    first: usize,
    count: usize,
    seg: usize,
    bytes: usize,
}

/// Datagrams waiting to be sent together.
pub(crate) struct SendBatch {
    arena: Vec<u8>,
    used: usize,
    items: Vec<Item>,
    dests: Vec<SockAddr>,
    entries: Vec<Entry>,
}

impl SendBatch {
    pub(crate) fn new() -> Self {
        SendBatch {
            arena: vec![0u8; ARENA_BYTES],
            used: 0,
            items: Vec::with_capacity(SEND_BATCH),
            dests: Vec::with_capacity(SEND_BATCH),
            entries: Vec::with_capacity(SEND_BATCH),
        }
    }

    /// True when no further datagram fits: the batch must be flushed first.
    pub(crate) fn is_full(&self) -> bool {
        self.items.len() == SEND_BATCH || self.arena.len() - self.used < MAX_DATAGRAM
    }

    /// The buffer of the next datagram to add ([`MAX_DATAGRAM`] bytes). Call only when the
    /// batch is not full.
    pub(crate) fn next_buf(&mut self) -> &mut [u8] {
        &mut self.arena[self.used..self.used + MAX_DATAGRAM]
    }

    /// Commits the `len` bytes just written into [`next_buf`](Self::next_buf), for `to`.
    /// `merge`: the datagram may go in a GSO buffer with its neighbours to the same
    /// destination. The runtime allows that while at most one connection of the port sends
    /// data, and for any connection whose peer is this implementation (the handshake's peer
    /// hint): with GSO for 16 flows on one port our receiver gets them fairly and 4 times
    /// faster (Jain 0.996-1.000 in 19 of 20 runs, one at 0.864; 7.6-11.6 Gbit/s against
    /// 2.6-3.1), but a UDT4 4.11 receiver, which reads one datagram per system call,
    /// overflows: 30 000-90 000 packets retransmitted in 10 s and Jain 0.66-0.88, against
    /// 1.000 without (`docs/benchmarks.md`).
    pub(crate) fn push(&mut self, len: usize, to: SocketAddr, merge: bool) {
        let len = len.min(MAX_DATAGRAM);
        self.items.push(Item {
            offset: self.used,
            len,
            to,
            merge,
        });
        self.dests.push(SockAddr::from(to));
        self.used += len;
    }

    /// Groups the queued datagrams from `from` on into entries: with `gso`, runs of
    /// datagrams to one destination, all of the first one's size except a shorter last one,
    /// within the kernel's limits; without, one entry per datagram.
    fn plan(&mut self, from: usize, gso: bool) {
        self.entries.clear();
        let mut open: Option<Entry> = None;
        for (i, it) in self.items.iter().enumerate().skip(from) {
            if let Some(e) = open.as_mut() {
                let head = self.items[e.first];
                let fits = gso
                    && head.merge
                    && it.merge
                    && it.to == head.to
                    && it.len <= e.seg
                    && it.len > 0
                    && e.count < MAX_GSO_SEGMENTS
                    && e.bytes + it.len <= MAX_GSO_BYTES;
                if fits {
                    e.count += 1;
                    e.bytes += it.len;
                    if it.len < e.seg {
                        // A shorter datagram can only be the last of a GSO buffer.
                        self.entries.push(*e);
                        open = None;
                    }
                    continue;
                }
                self.entries.push(*e);
            }
            open = Some(Entry {
                first: i,
                count: 1,
                seg: it.len,
                bytes: it.len,
            });
        }
        if let Some(e) = open {
            self.entries.push(e);
        }
    }

    /// Sends every queued datagram on `fd`, as GSO buffers while `*gso` holds. Retries while
    /// the kernel takes only part of the batch and waits briefly while the socket buffer is
    /// full. A GSO buffer that the kernel or device refuses clears `*gso` (and counts a
    /// fallback); its datagrams and the rest are then sent one per entry. Returns how many
    /// datagrams were refused for other reasons (counted as lost: UDP may drop anyway).
    pub(crate) fn flush_fd(&mut self, fd: RawFd, gso: &mut bool, counters: &IoCounters) -> usize {
        self.plan(0, *gso);
        let mut start = 0;
        let mut refused = 0;
        while start < self.entries.len() {
            let pending = &self.entries[start..];
            let mut iovs: Vec<libc::iovec> = pending
                .iter()
                .map(|e| libc::iovec {
                    iov_base: self.arena[self.items[e.first].offset..].as_mut_ptr().cast(),
                    iov_len: e.bytes,
                })
                .collect();
            let mut cmsgs = vec![[0u64; CMSG_WORDS]; pending.len()];
            let mut msgs: Vec<libc::mmsghdr> = Vec::with_capacity(pending.len());
            for (k, e) in pending.iter().enumerate() {
                // SAFETY: plain data, zero is valid; fields filled below.
                let mut m: libc::mmsghdr = unsafe { std::mem::zeroed() };
                let dest = &self.dests[e.first];
                m.msg_hdr.msg_name = dest.as_ptr() as *mut libc::c_void;
                m.msg_hdr.msg_namelen = dest.len();
                m.msg_hdr.msg_iov = &mut iovs[k];
                m.msg_hdr.msg_iovlen = 1;
                if e.count > 1 {
                    m.msg_hdr.msg_control = cmsgs[k].as_mut_ptr().cast();
                    // SAFETY: CMSG_SPACE is a pure size computation.
                    m.msg_hdr.msg_controllen =
                        unsafe { libc::CMSG_SPACE(std::mem::size_of::<u16>() as u32) } as _;
                    // SAFETY: the control buffer is 32 bytes, enough for one header and a u16;
                    // CMSG_FIRSTHDR is non-null because msg_controllen covers a header.
                    unsafe {
                        let c = libc::CMSG_FIRSTHDR(&m.msg_hdr);
                        (*c).cmsg_level = SOL_UDP;
                        (*c).cmsg_type = UDP_SEGMENT;
                        (*c).cmsg_len = libc::CMSG_LEN(std::mem::size_of::<u16>() as u32) as _;
                        std::ptr::write_unaligned(libc::CMSG_DATA(c).cast::<u16>(), e.seg as u16);
                    }
                }
                msgs.push(m);
            }
            // SAFETY: all pointers refer to buffers owned by `self`, `iovs` and `cmsgs`, alive
            // for the call.
            let n = unsafe { libc::sendmmsg(fd, msgs.as_mut_ptr(), msgs.len() as libc::c_uint, 0) };
            if n <= 0 {
                let e = io::Error::last_os_error();
                match e.kind() {
                    io::ErrorKind::Interrupted => continue,
                    io::ErrorKind::WouldBlock => {
                        // The socket buffer is full: wait briefly for room rather than drop.
                        wait_writable(fd);
                        continue;
                    }
                    _ => {}
                }
                let head = self.entries[start];
                if head.count > 1 && gso_refused(&e) {
                    *gso = false;
                    counters.gso.store(false, Ordering::Relaxed);
                    IoCounters::add(&counters.gso_fallbacks, 1);
                    self.plan(head.first, false);
                    start = 0;
                    continue;
                }
                // Unreachable destination and the like: skip this entry.
                refused += head.count;
                start += 1;
                continue;
            }
            let sent = &self.entries[start..start + n as usize];
            IoCounters::add(&counters.send_calls, 1);
            IoCounters::add(
                &counters.datagrams_sent,
                sent.iter().map(|e| e.count as u64).sum(),
            );
            IoCounters::add(
                &counters.gso_buffers_sent,
                sent.iter().filter(|e| e.count > 1).count() as u64,
            );
            start += n as usize;
        }
        self.items.clear();
        self.dests.clear();
        self.entries.clear();
        self.used = 0;
        refused
    }
}

/// Errors by which the kernel or a device says it cannot segment a GSO buffer: no checksum
/// offload (`EIO`), a size or option it rejects (`EINVAL`, `EMSGSIZE`), or no support at all.
fn gso_refused(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EIO | libc::EINVAL | libc::EMSGSIZE | libc::EOPNOTSUPP | libc::ENOPROTOOPT)
    )
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

#[cfg(test)]
mod tests {
    use super::*;

    fn batch(lens: &[(usize, u16)]) -> SendBatch {
        let mut b = SendBatch::new();
        for &(len, port) in lens {
            b.next_buf();
            b.push(len, SocketAddr::from(([127, 0, 0, 1], port)), true);
        }
        b
    }

    fn shape(b: &SendBatch) -> Vec<(usize, usize)> {
        b.entries.iter().map(|e| (e.count, e.seg)).collect()
    }

    #[test]
    fn runs_of_equal_datagrams_to_one_peer_become_gso_buffers() {
        let mut b = batch(&[
            (1472, 1),
            (1472, 1),
            (1472, 1),
            (100, 1),
            (1472, 1),
            (1472, 2),
        ]);
        b.plan(0, true);
        // A shorter datagram ends a buffer; a new destination starts one.
        assert_eq!(shape(&b), vec![(4, 1472), (1, 1472), (1, 1472)]);
        b.plan(0, false);
        assert_eq!(b.entries.len(), 6);
    }

    #[test]
    fn only_datagrams_that_may_merge_share_a_buffer() {
        let to = SocketAddr::from(([127, 0, 0, 1], 1));
        let mut b = SendBatch::new();
        for merge in [true, true, false, false, true, true] {
            b.next_buf();
            b.push(1472, to, merge);
        }
        b.plan(0, true);
        assert_eq!(shape(&b), vec![(2, 1472), (1, 1472), (1, 1472), (2, 1472)]);
    }

    #[test]
    fn a_larger_datagram_starts_a_new_buffer() {
        let mut b = batch(&[(100, 1), (1472, 1), (1472, 1)]);
        b.plan(0, true);
        assert_eq!(shape(&b), vec![(1, 100), (2, 1472)]);
    }

    #[test]
    fn buffers_respect_the_kernel_limits() {
        let mut b = batch(&[(1000, 1); 100]);
        b.plan(0, true);
        // 64 segments at most, and at most 65 507 bytes: 65 of 1000 bytes would not fit anyway.
        assert_eq!(shape(&b), vec![(64, 1000), (36, 1000)]);
        let mut b = batch(&[(9000, 1); 10]);
        b.plan(0, true);
        assert_eq!(shape(&b), vec![(7, 9000), (3, 9000)]);
    }

    #[test]
    fn the_batch_is_full_before_the_arena_overflows() {
        let mut b = SendBatch::new();
        let mut n = 0;
        while !b.is_full() {
            b.next_buf();
            b.push(9000, SocketAddr::from(([127, 0, 0, 1], 9)), true);
            n += 1;
        }
        assert!(n >= 21, "{n} jumbo datagrams");
        assert!(b.used + MAX_DATAGRAM > b.arena.len() || n == SEND_BATCH);
    }

    #[test]
    fn a_refused_gso_send_falls_back_and_delivers_every_datagram() {
        use std::os::fd::AsRawFd;
        let rx = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        rx.set_read_timeout(Some(std::time::Duration::from_secs(2)))
            .unwrap();
        let tx = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        // Without UDP checksums the kernel refuses GSO (EINVAL), as a device without
        // checksum offload does (EIO).
        super::super::set_int_option(tx.as_raw_fd(), libc::SOL_SOCKET, libc::SO_NO_CHECK, 1)
            .unwrap();
        let to = rx.local_addr().unwrap();
        let mut b = SendBatch::new();
        for k in 0..5u8 {
            b.next_buf()[..300].fill(k);
            b.push(300, to, true);
        }
        let counters = IoCounters::default();
        counters.gso.store(true, Ordering::Relaxed);
        let mut gso = true;
        let refused = b.flush_fd(tx.as_raw_fd(), &mut gso, &counters);
        assert_eq!(refused, 0);
        assert!(!gso && !counters.gso.load(Ordering::Relaxed));
        let s = counters.snapshot();
        assert_eq!(
            (s.gso_fallbacks, s.datagrams_sent, s.gso_buffers_sent),
            (1, 5, 0)
        );
        let mut buf = [0u8; 2000];
        for k in 0..5u8 {
            let n = rx.recv(&mut buf).unwrap();
            assert_eq!(n, 300);
            assert!(buf[..n].iter().all(|&x| x == k));
        }
    }
}
