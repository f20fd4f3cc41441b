//! Socket lifecycle: `udt_startup` … `udt_close`, names and state.

use std::net::UdpSocket;
use std::os::fd::FromRawFd;
use std::os::raw::c_int;

use libc::sockaddr;
use udt::{BsdSocket, Family, Udt4Status};
use udt_proto::SocketKind;

use crate::addr;
use crate::call::{guarded, guarded_or, FfiResult};
use crate::consts::{udt_errno, udt_status, UDT_INVALID_SOCK};
use crate::handles::{self, pollers, sockets};
use crate::last_error::FfiError;

/// Starts the library (UDT4's `startup`). Optional here — every call works without it — and
/// may be called any number of times. Returns 0.
#[no_mangle]
pub extern "C" fn udt_startup() -> c_int {
    guarded(|| Ok(0))
}

/// Closes every socket and poller of the process (UDT4's `cleanup`); threads blocked in their
/// calls return `UDT_ERROR` (`UDT_EINVSOCK`). The library stays usable. Returns 0.
#[no_mangle]
pub extern "C" fn udt_cleanup() -> c_int {
    guarded(|| {
        for s in sockets().drain() {
            // Already closed by another thread: nothing left to do.
            let _ = s.close();
        }
        drop(pollers().drain());
        Ok(0)
    })
}

/// A new socket (UDT4's `socket`): `af` is `AF_INET` or `AF_INET6`, `type` `SOCK_STREAM` or
/// `SOCK_DGRAM` (messages); `protocol` is ignored. Returns the handle, or `UDT_INVALID_SOCK`.
#[no_mangle]
pub extern "C" fn udt_socket(af: c_int, r#type: c_int, protocol: c_int) -> c_int {
    let _ = protocol;
    guarded_or(UDT_INVALID_SOCK, || {
        let family = match af {
            libc::AF_INET => Family::V4,
            libc::AF_INET6 => Family::V6,
            _ => return Err(FfiError::param(format!("unsupported address family {af}"))),
        };
        let kind = match r#type {
            libc::SOCK_STREAM => SocketKind::Stream,
            libc::SOCK_DGRAM => SocketKind::Message,
            _ => return Err(FfiError::param(format!("unsupported socket type {type}"))),
        };
        Ok(sockets().insert(BsdSocket::new(family, kind)))
    })
}

/// Binds `u` to the address `name` (`namelen` bytes; port 0 picks one). Returns 0 or
/// `UDT_ERROR`.
///
/// # Safety
/// `name` must point to `namelen` readable bytes.
#[no_mangle]
pub unsafe extern "C" fn udt_bind(u: c_int, name: *const sockaddr, namelen: c_int) -> c_int {
    guarded(|| {
        let s = handles::socket(u)?;
        // SAFETY: forwarded contract.
        let a = unsafe { addr::read(name, namelen) }?;
        s.bind(a)?;
        Ok(0)
    })
}

/// Binds `u` to the UDP socket `udpsock` the application made (UDT4's `bind2`); the library
/// takes it over and closes it with `u`. A descriptor that is not an open UDP socket of the
/// socket's family is refused (`UDT_EINVPARAM`), as is a socket already bound
/// (`UDT_EBOUNDSOCK`); a refused descriptor stays the caller's.
#[no_mangle]
pub extern "C" fn udt_bind2(u: c_int, udpsock: c_int) -> c_int {
    guarded(|| {
        let s = handles::socket(u)?;
        check_udp_fd(udpsock)?;
        // Refuse what bind_udp would refuse before taking the descriptor over, so a refused
        // descriptor stays the caller's.
        match s.status() {
            Udt4Status::Init => {}
            Udt4Status::Closed | Udt4Status::NonExist => return Err(udt::Error::Closed.into()),
            _ => return Err(udt::Error::AlreadyBound.into()),
        }
        // SAFETY: `udpsock` is an open datagram socket (checked); ManuallyDrop keeps it open
        // if we give it back.
        let udp = std::mem::ManuallyDrop::new(unsafe { UdpSocket::from_raw_fd(udpsock) });
        let local = udp.local_addr().map_err(udt::Error::Io)?;
        let family_ok = match s.family() {
            Family::V4 => local.is_ipv4(),
            Family::V6 => local.is_ipv6(),
        };
        if !family_ok {
            return Err(FfiError::param(
                "the UDP socket's address family differs from the UDT socket's",
            ));
        }
        // From here on the descriptor is the library's, as in UDT4 (closed with `u`).
        s.bind_udp(std::mem::ManuallyDrop::into_inner(udp))?;
        Ok(0)
    })
}

/// Refuses anything but an open `SOCK_DGRAM` socket descriptor.
fn check_udp_fd(fd: c_int) -> FfiResult<()> {
    if fd < 0 {
        return Err(FfiError::param("UDP socket descriptor is negative"));
    }
    let mut ty: c_int = 0;
    let mut len = std::mem::size_of::<c_int>() as libc::socklen_t;
    // SAFETY: getsockopt writes at most `len` bytes into `ty`; a bad fd just fails.
    let rc = unsafe {
        libc::getsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_TYPE,
            &mut ty as *mut c_int as *mut libc::c_void,
            &mut len,
        )
    };
    if rc != 0 {
        let err = std::io::Error::last_os_error();
        return Err(FfiError {
            code: udt_errno::UDT_EINVPARAM as c_int,
            errno: err.raw_os_error().unwrap_or(0),
            message: format!("descriptor {fd} is not a socket: {err}"),
        });
    }
    if ty != libc::SOCK_DGRAM {
        return Err(FfiError::param(format!(
            "descriptor {fd} is not a UDP socket"
        )));
    }
    Ok(())
}

/// Listens on bound socket `u`, queueing up to `backlog` connections. Returns 0 or
/// `UDT_ERROR`.
#[no_mangle]
pub extern "C" fn udt_listen(u: c_int, backlog: c_int) -> c_int {
    guarded(|| {
        let s = handles::socket(u)?;
        let backlog = usize::try_from(backlog.max(1)).unwrap_or(1);
        s.listen(backlog)?;
        Ok(0)
    })
}

/// Takes the next connection from listening socket `u`: returns its handle (or
/// `UDT_INVALID_SOCK`) and, if `addr` and `addrlen` are not null, writes the peer's address
/// (at most `*addrlen` bytes; `*addrlen` is set to its full length). Blocks unless
/// `UDT_RCVSYN` is off (`UDT_EASYNCRCV` then).
///
/// # Safety
/// `addr` and `addrlen`, if not null, must be writable; `addr` for `*addrlen` bytes.
#[no_mangle]
pub unsafe extern "C" fn udt_accept(u: c_int, addr: *mut sockaddr, addrlen: *mut c_int) -> c_int {
    guarded_or(UDT_INVALID_SOCK, || {
        let s = handles::socket(u)?;
        let (conn, peer) = s.accept()?;
        let h = sockets().insert(conn);
        if !addr.is_null() && !addrlen.is_null() {
            // SAFETY: forwarded contract.
            if let Err(e) = unsafe { addr::write(peer, addr, addrlen) } {
                // The caller cannot learn of a connection it has no handle for: close it.
                if let Some(c) = sockets().remove(h) {
                    let _ = c.close();
                }
                return Err(e);
            }
        }
        Ok(h)
    })
}

/// Connects `u` to `name` (rendezvous if `UDT_RENDEZVOUS` is on). Blocks for the handshake
/// unless `UDT_RCVSYN` is off; then a poller reports `UDT_EPOLL_OUT` once connected. Returns 0
/// or `UDT_ERROR`.
///
/// # Safety
/// `name` must point to `namelen` readable bytes.
#[no_mangle]
pub unsafe extern "C" fn udt_connect(u: c_int, name: *const sockaddr, namelen: c_int) -> c_int {
    guarded(|| {
        let s = handles::socket(u)?;
        // SAFETY: forwarded contract.
        let a = unsafe { addr::read(name, namelen) }?;
        s.connect(a)?;
        Ok(0)
    })
}

/// Closes `u`; its handle is invalid afterwards. A connected socket in blocking send mode
/// first delivers queued data, for at most the linger time. Returns 0 or `UDT_ERROR`.
#[no_mangle]
pub extern "C" fn udt_close(u: c_int) -> c_int {
    guarded(|| {
        let s = sockets()
            .remove(u)
            .ok_or_else(|| FfiError::new(udt_errno::UDT_EINVSOCK, format!("no socket {u}")))?;
        match s.close() {
            Ok(()) | Err(udt::Error::Closed) => Ok(0),
            Err(e) => Err(e.into()),
        }
    })
}

/// Writes the peer's address of connected socket `u` to `name` (see `udt_accept` for the
/// length rules). Returns 0 or `UDT_ERROR`.
///
/// # Safety
/// `name` and `namelen` must be writable; `name` for `*namelen` bytes.
#[no_mangle]
pub unsafe extern "C" fn udt_getpeername(
    u: c_int,
    name: *mut sockaddr,
    namelen: *mut c_int,
) -> c_int {
    guarded(|| {
        let a = handles::socket(u)?.peer_addr()?;
        // SAFETY: forwarded contract.
        unsafe { addr::write(a, name, namelen) }?;
        Ok(0)
    })
}

/// Writes the local address of bound socket `u` to `name` (see `udt_accept` for the length
/// rules). Returns 0 or `UDT_ERROR`.
///
/// # Safety
/// `name` and `namelen` must be writable; `name` for `*namelen` bytes.
#[no_mangle]
pub unsafe extern "C" fn udt_getsockname(
    u: c_int,
    name: *mut sockaddr,
    namelen: *mut c_int,
) -> c_int {
    guarded(|| {
        let a = handles::socket(u)?.local_addr()?;
        // SAFETY: forwarded contract.
        unsafe { addr::write(a, name, namelen) }?;
        Ok(0)
    })
}

/// The state of `u` (`udt_status`); `UDT_STATUS_NONEXIST` for a closed or unknown handle.
#[no_mangle]
pub extern "C" fn udt_getsockstate(u: c_int) -> c_int {
    guarded_or(udt_status::UDT_STATUS_NONEXIST as c_int, || {
        Ok(match sockets().get(u) {
            Some(s) => s.status() as c_int,
            None => Udt4Status::NonExist as c_int,
        })
    })
}
