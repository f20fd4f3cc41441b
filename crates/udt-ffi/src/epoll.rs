//! UDT4's `epoll_*` calls: a [`udt::Poller`] for UDT sockets, plus a kernel epoll instance
//! for the application's system sockets (`udt_epoll_add_ssock`). The kernel instance also
//! watches the poller's descriptor, which is readable exactly while a UDT socket is ready, so
//! one `epoll_wait` sleeps on both kinds at once — no polling loop.

use std::collections::{HashMap, HashSet};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::raw::c_int;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use udt::{PollEvent, Poller, Readiness};

use crate::call::{guarded, FfiResult};
use crate::consts::udt_errno;
use crate::handles::{self, pollers};
use crate::last_error::FfiError;

/// The kernel epoll token of the poller's own descriptor (system sockets use their fd, ≥ 0).
const POLLER_TOKEN: u64 = u64::MAX;

/// One `udt_epoll_create` poller.
pub struct EpollSet {
    poller: Poller,
    kernel: OwnedFd,
    members: Mutex<Members>,
}

#[derive(Default)]
struct Members {
    usocks: HashSet<c_int>,
    ssocks: HashMap<c_int, u32>,
}

fn os_error(what: &str) -> FfiError {
    let e = std::io::Error::last_os_error();
    FfiError {
        code: udt_errno::UDT_ERESOURCE as c_int,
        errno: e.raw_os_error().unwrap_or(0),
        message: format!("{what}: {e}"),
    }
}

/// The events a caller asked for: `events` null means all (as in UDT4).
///
/// # Safety
/// `events`, if not null, must be readable.
unsafe fn interest(events: *const c_int) -> FfiResult<Readiness> {
    let bits = if events.is_null() {
        0x1 | 0x4 | 0x8
    } else {
        // SAFETY: per the contract.
        unsafe { std::ptr::read_unaligned(events) }
    };
    let mut r = Readiness::empty();
    if bits & 0x1 != 0 {
        r |= Readiness::READ;
    }
    if bits & 0x4 != 0 {
        r |= Readiness::WRITE;
    }
    if bits & 0x8 != 0 {
        r |= Readiness::ERR;
    }
    if r.is_empty() || bits & !0xd != 0 {
        return Err(FfiError::param(format!("bad epoll events {bits:#x}")));
    }
    Ok(r)
}

impl EpollSet {
    fn new() -> FfiResult<EpollSet> {
        let poller = Poller::new()?;
        // SAFETY: epoll_create1 returns a new descriptor or -1.
        let fd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if fd < 0 {
            return Err(os_error("epoll_create1"));
        }
        // SAFETY: `fd` is a fresh descriptor we own.
        let kernel = unsafe { OwnedFd::from_raw_fd(fd) };
        let set = EpollSet {
            poller,
            kernel,
            members: Mutex::new(Members::default()),
        };
        set.ctl(
            libc::EPOLL_CTL_ADD,
            set.poller.as_raw_fd(),
            libc::EPOLLIN as u32,
            POLLER_TOKEN,
        )?;
        Ok(set)
    }

    fn members(&self) -> MutexGuard<'_, Members> {
        self.members.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn ctl(&self, op: c_int, fd: c_int, events: u32, token: u64) -> FfiResult<()> {
        let mut ev = libc::epoll_event { events, u64: token };
        // SAFETY: `ev` is a valid epoll_event; a bad fd just fails.
        if unsafe { libc::epoll_ctl(self.kernel.as_raw_fd(), op, fd, &mut ev) } != 0 {
            let mut e = os_error("epoll_ctl");
            e.code = udt_errno::UDT_EINVPARAM as c_int;
            return Err(e);
        }
        Ok(())
    }

    /// Harvests ready system sockets without waiting (or, with `timeout_ms` ≥ 0 / −1, waits on
    /// them and the poller's descriptor); returns `(fd, kernel events)` of system sockets.
    fn kernel_wait(&self, timeout_ms: c_int) -> FfiResult<Vec<(c_int, u32)>> {
        let n = self.members().ssocks.len() + 1;
        let mut evs = vec![libc::epoll_event { events: 0, u64: 0 }; n];
        // SAFETY: `evs` has room for `n` events.
        let got = unsafe {
            libc::epoll_wait(
                self.kernel.as_raw_fd(),
                evs.as_mut_ptr(),
                n as c_int,
                timeout_ms,
            )
        };
        if got < 0 {
            if std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
                return Ok(Vec::new());
            }
            return Err(os_error("epoll_wait"));
        }
        Ok(evs[..got as usize]
            .iter()
            .filter(|e| e.u64 != POLLER_TOKEN)
            .map(|e| (e.u64 as c_int, e.events))
            .collect())
    }
}

/// A new poller (UDT4's `epoll_create`); returns its id, or `UDT_ERROR`.
#[no_mangle]
pub extern "C" fn udt_epoll_create() -> c_int {
    guarded(|| Ok(pollers().insert(EpollSet::new()?)))
}

/// Watches UDT socket `u` for `*events` (`udt_epoll_opt` bits; null: all). A socket that is
/// not yet listening or connecting is watched from the moment it is. Adding it again replaces
/// its events. Returns 0 or `UDT_ERROR`.
///
/// # Safety
/// `events`, if not null, must be readable.
#[no_mangle]
pub unsafe extern "C" fn udt_epoll_add_usock(eid: c_int, u: c_int, events: *const c_int) -> c_int {
    guarded(|| {
        let set = handles::poller(eid)?;
        let s = handles::socket(u)?;
        // SAFETY: forwarded contract.
        let want = unsafe { interest(events) }?;
        let mut m = set.members();
        if m.usocks.contains(&u) {
            let _ = s.poll_deregister(&set.poller, u as u64);
        }
        s.poll_register(&set.poller, u as u64, want)?;
        m.usocks.insert(u);
        Ok(0)
    })
}

/// Watches the application's system socket (or any pollable descriptor) `s` for `*events`
/// (null: all). Returns 0 or `UDT_ERROR` (`UDT_EINVPARAM` if the kernel refuses `s`).
///
/// # Safety
/// `events`, if not null, must be readable.
#[no_mangle]
pub unsafe extern "C" fn udt_epoll_add_ssock(eid: c_int, s: c_int, events: *const c_int) -> c_int {
    guarded(|| {
        let set = handles::poller(eid)?;
        // SAFETY: forwarded contract.
        let want = unsafe { interest(events) }?;
        if s < 0 {
            return Err(FfiError::param("system socket descriptor is negative"));
        }
        let mut bits = 0u32;
        if want.is_readable() {
            bits |= libc::EPOLLIN as u32;
        }
        if want.is_writable() {
            bits |= libc::EPOLLOUT as u32;
        }
        let mut m = set.members();
        let op = if m.ssocks.contains_key(&s) {
            libc::EPOLL_CTL_MOD
        } else {
            libc::EPOLL_CTL_ADD
        };
        set.ctl(op, s, bits, s as u64)?;
        m.ssocks.insert(s, bits);
        Ok(0)
    })
}

/// Stops watching UDT socket `u` (a socket not in the set, or already closed, is no error).
/// Returns 0 or `UDT_ERROR` (`UDT_EINVPOLLID`).
#[no_mangle]
pub extern "C" fn udt_epoll_remove_usock(eid: c_int, u: c_int) -> c_int {
    guarded(|| {
        let set = handles::poller(eid)?;
        let mut m = set.members();
        if m.usocks.remove(&u) {
            if let Some(s) = handles::sockets().get(u) {
                // A socket closed meanwhile has already left the poller.
                let _ = s.poll_deregister(&set.poller, u as u64);
            }
        }
        Ok(0)
    })
}

/// Stops watching system socket `s` (one not in the set is no error). Returns 0 or
/// `UDT_ERROR` (`UDT_EINVPOLLID`).
#[no_mangle]
pub extern "C" fn udt_epoll_remove_ssock(eid: c_int, s: c_int) -> c_int {
    guarded(|| {
        let set = handles::poller(eid)?;
        let mut m = set.members();
        if m.ssocks.remove(&s).is_some() {
            // The descriptor may have been closed already, which removed it from the kernel
            // set by itself.
            let _ = set.ctl(libc::EPOLL_CTL_DEL, s, 0, 0);
        }
        Ok(0)
    })
}

/// How many sockets (UDT and system) poller `eid` watches, so a caller can size the arrays of
/// `udt_epoll_wait`; or `UDT_ERROR`.
#[no_mangle]
pub extern "C" fn udt_epoll_size(eid: c_int) -> c_int {
    guarded(|| {
        let set = handles::poller(eid)?;
        let m = set.members();
        Ok((m.usocks.len() + m.ssocks.len()).min(c_int::MAX as usize) as c_int)
    })
}

/// An output array of `udt_epoll_wait`: where to write, and how many fit.
struct Out {
    ptr: *mut c_int,
    num: *mut c_int,
    cap: usize,
    len: usize,
}

impl Out {
    /// # Safety
    /// `ptr`/`num`, if not null, must be writable; `ptr` for `*num` ints.
    unsafe fn new(ptr: *mut c_int, num: *mut c_int) -> FfiResult<Option<Out>> {
        if ptr.is_null() || num.is_null() {
            return Ok(None);
        }
        // SAFETY: per the contract.
        let cap = unsafe { std::ptr::read_unaligned(num) };
        let cap =
            usize::try_from(cap).map_err(|_| FfiError::param("epoll array size is negative"))?;
        Ok(Some(Out {
            ptr,
            num,
            cap,
            len: 0,
        }))
    }

    fn push(&mut self, v: c_int) {
        if self.len < self.cap {
            // SAFETY: `ptr` has room for `cap` ints per the contract of `new`.
            unsafe { std::ptr::write_unaligned(self.ptr.add(self.len), v) };
            self.len += 1;
        }
    }

    fn finish(&self) {
        // SAFETY: `num` is writable per the contract of `new`.
        unsafe { std::ptr::write_unaligned(self.num, self.len as c_int) };
    }
}

/// Waits until a watched socket is ready or `ms_timeout` ms pass (−1: no limit; 0: just
/// check). Ready UDT sockets go to `readfds` (readable, or broken) and `writefds` (writable,
/// or broken); ready system sockets to `lrfds` and `lwfds`. Each array is passed with its
/// capacity in `*num` and gets its count there; any pair may be null. Returns how many
/// entries were written in all, or `UDT_ERROR`: `UDT_ETIMEOUT` when the time passes with
/// nothing ready (as UDT4), `UDT_EINVPARAM` when every pair is null.
///
/// # Safety
/// Each non-null array must have room for its `*num` ints; each non-null `num` must be
/// readable and writable.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn udt_epoll_wait(
    eid: c_int,
    readfds: *mut c_int,
    rnum: *mut c_int,
    writefds: *mut c_int,
    wnum: *mut c_int,
    ms_timeout: i64,
    lrfds: *mut c_int,
    lrnum: *mut c_int,
    lwfds: *mut c_int,
    lwnum: *mut c_int,
) -> c_int {
    guarded(|| {
        let set = handles::poller(eid)?;
        // SAFETY (all four): forwarded contract.
        let mut outs = unsafe {
            [
                Out::new(readfds, rnum)?,
                Out::new(writefds, wnum)?,
                Out::new(lrfds, lrnum)?,
                Out::new(lwfds, lwnum)?,
            ]
        };
        if outs.iter().all(Option::is_none) {
            return Err(FfiError::param("no output set given"));
        }
        let deadline =
            (ms_timeout >= 0).then(|| Instant::now() + Duration::from_millis(ms_timeout as u64));
        let mut events: Vec<PollEvent> = Vec::new();
        loop {
            set.poller.wait(&mut events, Some(Duration::ZERO))?;
            let sys = set.kernel_wait(0)?;
            let written = fill(&mut outs, &events, &sys);
            if written > 0 {
                for o in outs.iter().flatten() {
                    o.finish();
                }
                return Ok(written.min(c_int::MAX as usize) as c_int);
            }
            let left_ms = match deadline {
                None => -1,
                Some(d) => {
                    let left = d.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        for o in outs.iter().flatten() {
                            o.finish();
                        }
                        return Err(FfiError::new(
                            udt_errno::UDT_ETIMEOUT,
                            "epoll_wait timed out",
                        ));
                    }
                    // Round up so we never wake just before the deadline.
                    left.as_micros().div_ceil(1000).min(c_int::MAX as u128) as c_int
                }
            };
            if !events.is_empty() || !sys.is_empty() {
                // Something is ready that the caller gave no array for: the descriptors stay
                // readable, so sleep briefly instead of spinning on them.
                let nap = if left_ms < 0 { 10 } else { left_ms.min(10) };
                std::thread::sleep(Duration::from_millis(nap as u64));
                continue;
            }
            set.kernel_wait(left_ms)?;
        }
    })
}

/// Writes the ready sockets into the caller's arrays; returns how many entries were written.
fn fill(outs: &mut [Option<Out>; 4], udt: &[PollEvent], sys: &[(c_int, u32)]) -> usize {
    for o in outs.iter_mut().flatten() {
        o.len = 0;
    }
    for e in udt {
        let u = e.token as c_int;
        let r = e.readiness;
        if r.is_readable() || r.is_error() {
            if let Some(o) = &mut outs[0] {
                o.push(u);
            }
        }
        if r.is_writable() || r.is_error() {
            if let Some(o) = &mut outs[1] {
                o.push(u);
            }
        }
    }
    let err = (libc::EPOLLERR | libc::EPOLLHUP) as u32;
    for &(fd, ev) in sys {
        if ev & (libc::EPOLLIN as u32 | err) != 0 {
            if let Some(o) = &mut outs[2] {
                o.push(fd);
            }
        }
        if ev & (libc::EPOLLOUT as u32 | err) != 0 {
            if let Some(o) = &mut outs[3] {
                o.push(fd);
            }
        }
    }
    outs.iter().flatten().map(|o| o.len).sum()
}

/// Releases poller `eid` (UDT4's `epoll_release`); its sockets are no longer watched. Returns
/// 0 or `UDT_ERROR` (`UDT_EINVPOLLID`).
#[no_mangle]
pub extern "C" fn udt_epoll_release(eid: c_int) -> c_int {
    guarded(|| {
        let set = pollers()
            .remove(eid)
            .ok_or_else(|| FfiError::new(udt_errno::UDT_EINVPOLLID, format!("no poller {eid}")))?;
        let usocks: Vec<c_int> = set.members().usocks.drain().collect();
        for u in usocks {
            if let Some(s) = handles::sockets().get(u) {
                let _ = s.poll_deregister(&set.poller, u as u64);
            }
        }
        Ok(0)
    })
}
