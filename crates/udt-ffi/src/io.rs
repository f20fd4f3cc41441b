//! Data calls: `udt_send`, `udt_recv` (streams), `udt_sendmsg`, `udt_recvmsg` (messages).
//! Blocking, non-blocking and timeouts follow the socket's `UDT_SNDSYN`/`UDT_RCVSYN` and
//! `UDT_SNDTIMEO`/`UDT_RCVTIMEO`, as in UDT4.

use std::os::raw::{c_char, c_int};

use crate::call::{guarded, int_ret, len_arg, FfiResult};
use crate::consts::udt_errno;
use crate::handles;
use crate::last_error::FfiError;

/// The caller's buffer as a slice; null is allowed only for length 0.
///
/// # Safety
/// `buf`, if not null, must point to `len` readable bytes.
unsafe fn in_buf<'a>(buf: *const c_char, len: c_int) -> FfiResult<&'a [u8]> {
    let len = len_arg(len, "length")?;
    if len == 0 {
        return Ok(&[]);
    }
    if buf.is_null() {
        return Err(FfiError::param("buffer is null"));
    }
    // SAFETY: per the contract.
    Ok(unsafe { std::slice::from_raw_parts(buf as *const u8, len) })
}

/// The caller's buffer as a mutable slice; null is allowed only for length 0.
///
/// # Safety
/// `buf`, if not null, must point to `len` writable bytes.
unsafe fn out_buf<'a>(buf: *mut c_char, len: c_int) -> FfiResult<&'a mut [u8]> {
    let len = len_arg(len, "length")?;
    if len == 0 {
        return Ok(&mut []);
    }
    if buf.is_null() {
        return Err(FfiError::param("buffer is null"));
    }
    // SAFETY: per the contract.
    Ok(unsafe { std::slice::from_raw_parts_mut(buf as *mut u8, len) })
}

/// UDT4 reports the end of a stream as a lost connection, not as a zero-byte read.
fn end_of_stream() -> FfiError {
    FfiError::new(
        udt_errno::UDT_ECONNLOST,
        "connection was closed by the peer and all data was read",
    )
}

/// Sends up to `len` bytes of `buf` on stream socket `u`; returns how many were queued (at
/// least 1 in blocking mode), or `UDT_ERROR` (`UDT_EASYNCSND` when non-blocking and the send
/// buffer is full, `UDT_ETIMEOUT` after `UDT_SNDTIMEO`). `flags` is ignored, as in UDT4.
///
/// # Safety
/// `buf` must point to `len` readable bytes.
#[no_mangle]
pub unsafe extern "C" fn udt_send(u: c_int, buf: *const c_char, len: c_int, flags: c_int) -> c_int {
    let _ = flags;
    guarded(|| {
        let s = handles::socket(u)?;
        // SAFETY: forwarded contract.
        let data = unsafe { in_buf(buf, len) }?;
        Ok(int_ret(s.send(data)?))
    })
}

/// Receives up to `len` bytes into `buf` from stream socket `u`; returns how many (at least
/// 1), or `UDT_ERROR`: `UDT_ECONNLOST` once the peer closed and everything was read,
/// `UDT_EASYNCRCV` when non-blocking and nothing is there, `UDT_ETIMEOUT` after
/// `UDT_RCVTIMEO`. `flags` is ignored, as in UDT4.
///
/// # Safety
/// `buf` must point to `len` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn udt_recv(u: c_int, buf: *mut c_char, len: c_int, flags: c_int) -> c_int {
    let _ = flags;
    guarded(|| {
        let s = handles::socket(u)?;
        // SAFETY: forwarded contract.
        let out = unsafe { out_buf(buf, len) }?;
        if out.is_empty() {
            return Ok(0);
        }
        match s.recv(out)? {
            0 => Err(end_of_stream()),
            n => Ok(int_ret(n)),
        }
    })
}

/// Sends `buf` as one message on message socket `u`. `ttl` < 0: reliable; otherwise the
/// message is dropped if not delivered within `ttl` ms. `inorder` ≠ 0: deliver only after
/// every earlier message. Returns `len`, or `UDT_ERROR` (`UDT_ELARGEMSG` if it can never fit
/// the send buffer; `UDT_EASYNCSND`; `UDT_ETIMEOUT`).
///
/// # Safety
/// `buf` must point to `len` readable bytes.
#[no_mangle]
pub unsafe extern "C" fn udt_sendmsg(
    u: c_int,
    buf: *const c_char,
    len: c_int,
    ttl: c_int,
    inorder: c_int,
) -> c_int {
    guarded(|| {
        let s = handles::socket(u)?;
        // SAFETY: forwarded contract.
        let data = unsafe { in_buf(buf, len) }?;
        if data.is_empty() {
            return Err(FfiError::param("a message must have at least one byte"));
        }
        Ok(int_ret(s.send_msg(data, ttl, inorder != 0)?))
    })
}

/// Receives one message from message socket `u` into `buf`; returns the bytes copied (a
/// message longer than `len` is cut and the rest discarded, as in UDT4), or `UDT_ERROR`
/// (`UDT_ECONNLOST` once the connection ended and no message is left; `UDT_EASYNCRCV`;
/// `UDT_ETIMEOUT`).
///
/// # Safety
/// `buf` must point to `len` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn udt_recvmsg(u: c_int, buf: *mut c_char, len: c_int) -> c_int {
    guarded(|| {
        let s = handles::socket(u)?;
        // SAFETY: forwarded contract.
        let out = unsafe { out_buf(buf, len) }?;
        if out.is_empty() {
            return Err(FfiError::param("buffer length must be positive"));
        }
        let m = s.recv_msg(out)?;
        Ok(int_ret(m.copied))
    })
}
