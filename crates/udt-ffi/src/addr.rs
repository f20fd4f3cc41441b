//! `struct sockaddr` in and out of the ABI, with every length checked before memory is
//! touched.

use std::mem::size_of;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};
use std::os::raw::c_int;

use libc::{sa_family_t, sockaddr, sockaddr_in, sockaddr_in6, AF_INET, AF_INET6};

use crate::call::FfiResult;
use crate::last_error::FfiError;

/// Reads the address at `name` (`namelen` bytes long).
///
/// # Safety
/// `name`, if not null, must point to `namelen` readable bytes.
pub unsafe fn read(name: *const sockaddr, namelen: c_int) -> FfiResult<SocketAddr> {
    if name.is_null() {
        return Err(FfiError::param("address is null"));
    }
    let len =
        usize::try_from(namelen).map_err(|_| FfiError::param("address length is negative"))?;
    if len < size_of::<sa_family_t>() {
        return Err(FfiError::param("address length too short"));
    }
    // SAFETY: at least the family field is readable (checked above); unaligned reads because C
    // callers may pass any buffer.
    let family = unsafe { std::ptr::read_unaligned(name as *const sa_family_t) };
    match c_int::from(family) {
        AF_INET => {
            if len < size_of::<sockaddr_in>() {
                return Err(FfiError::param("address length too short for sockaddr_in"));
            }
            // SAFETY: `len` covers a sockaddr_in.
            let sin = unsafe { std::ptr::read_unaligned(name as *const sockaddr_in) };
            let ip = Ipv4Addr::from(u32::from_be(sin.sin_addr.s_addr));
            Ok(SocketAddr::V4(SocketAddrV4::new(
                ip,
                u16::from_be(sin.sin_port),
            )))
        }
        AF_INET6 => {
            if len < size_of::<sockaddr_in6>() {
                return Err(FfiError::param("address length too short for sockaddr_in6"));
            }
            // SAFETY: `len` covers a sockaddr_in6.
            let sin6 = unsafe { std::ptr::read_unaligned(name as *const sockaddr_in6) };
            Ok(SocketAddr::V6(SocketAddrV6::new(
                Ipv6Addr::from(sin6.sin6_addr.s6_addr),
                u16::from_be(sin6.sin6_port),
                u32::from_be(sin6.sin6_flowinfo),
                sin6.sin6_scope_id,
            )))
        }
        f => Err(FfiError::param(format!("unsupported address family {f}"))),
    }
}

/// Writes `addr` to `name`, at most `*namelen` bytes (cut short if the buffer is smaller, as
/// BSD's `getsockname` does), and sets `*namelen` to the address's full length.
///
/// # Safety
/// `name` and `namelen`, if not null, must be writable; `name` for `*namelen` bytes.
pub unsafe fn write(addr: SocketAddr, name: *mut sockaddr, namelen: *mut c_int) -> FfiResult<()> {
    if name.is_null() || namelen.is_null() {
        return Err(FfiError::param("address buffer or its length is null"));
    }
    // SAFETY: `namelen` is non-null and writable per the contract.
    let cap = unsafe { std::ptr::read_unaligned(namelen) };
    let cap = usize::try_from(cap).map_err(|_| FfiError::param("address length is negative"))?;
    let (bytes, full): (Vec<u8>, usize) = match addr {
        SocketAddr::V4(a) => {
            // SAFETY: all-zero is a valid sockaddr_in.
            let mut sin: sockaddr_in = unsafe { std::mem::zeroed() };
            sin.sin_family = AF_INET as sa_family_t;
            sin.sin_port = a.port().to_be();
            sin.sin_addr.s_addr = u32::from(*a.ip()).to_be();
            (struct_bytes(&sin), size_of::<sockaddr_in>())
        }
        SocketAddr::V6(a) => {
            // SAFETY: all-zero is a valid sockaddr_in6.
            let mut sin6: sockaddr_in6 = unsafe { std::mem::zeroed() };
            sin6.sin6_family = AF_INET6 as sa_family_t;
            sin6.sin6_port = a.port().to_be();
            sin6.sin6_flowinfo = a.flowinfo().to_be();
            sin6.sin6_addr.s6_addr = a.ip().octets();
            sin6.sin6_scope_id = a.scope_id();
            (struct_bytes(&sin6), size_of::<sockaddr_in6>())
        }
    };
    let n = cap.min(full);
    // SAFETY: `name` has room for `cap` ≥ `n` bytes per the contract; `bytes` has `full` ≥ `n`.
    unsafe {
        std::ptr::copy_nonoverlapping(bytes.as_ptr(), name as *mut u8, n);
        std::ptr::write_unaligned(namelen, full as c_int);
    }
    Ok(())
}

fn struct_bytes<T>(v: &T) -> Vec<u8> {
    // SAFETY: `v` is a plain C struct of `size_of::<T>()` initialised bytes (zeroed first).
    unsafe { std::slice::from_raw_parts(v as *const T as *const u8, size_of::<T>()) }.to_vec()
}
