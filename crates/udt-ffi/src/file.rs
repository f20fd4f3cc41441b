//! `udt_sendfile`/`udt_recvfile` (by file descriptor) and `udt_sendfile2`/`udt_recvfile2`
//! (by path), with UDT4's offset-in-out convention.

use std::ffi::CStr;
use std::fs::{File, OpenOptions};
use std::mem::ManuallyDrop;
use std::os::fd::FromRawFd;
use std::os::raw::{c_char, c_int};

use udt::BsdSocket;

use crate::call::{guarded_or, FfiResult};
use crate::consts::udt_errno;
use crate::handles;
use crate::last_error::FfiError;

/// Borrows the caller's descriptor as a `File` without taking it over (it is not closed).
fn borrow_fd(fd: c_int) -> FfiResult<ManuallyDrop<File>> {
    // SAFETY: F_GETFD only queries the descriptor table.
    if fd < 0 || unsafe { libc::fcntl(fd, libc::F_GETFD) } < 0 {
        return Err(FfiError {
            code: udt_errno::UDT_EFILE as c_int,
            errno: libc::EBADF,
            message: format!("file descriptor {fd} is not open"),
        });
    }
    // SAFETY: `fd` is open (checked); ManuallyDrop keeps us from closing what we do not own.
    Ok(ManuallyDrop::new(unsafe { File::from_raw_fd(fd) }))
}

fn file_error(what: &str, e: std::io::Error) -> FfiError {
    FfiError {
        code: udt_errno::UDT_EFILE as c_int,
        errno: e.raw_os_error().unwrap_or(0),
        message: format!("{what}: {e}"),
    }
}

fn path_arg<'a>(path: *const c_char) -> FfiResult<&'a str> {
    if path.is_null() {
        return Err(FfiError::param("path is null"));
    }
    // SAFETY: a non-null `path` is a NUL-terminated string per the callers' contract.
    unsafe { CStr::from_ptr(path) }
        .to_str()
        .map_err(|_| FfiError::param("path is not UTF-8"))
}

/// Reads `*offset` and `size`, runs `op(socket, offset, size)`, advances `*offset` by the
/// bytes moved and returns them.
///
/// # Safety
/// `offset` must be readable and writable.
unsafe fn transfer(
    u: c_int,
    offset: *mut i64,
    size: i64,
    op: impl FnOnce(&BsdSocket, u64, u64) -> FfiResult<u64>,
) -> i64 {
    guarded_or(-1, || {
        let s = handles::socket(u)?;
        if offset.is_null() {
            return Err(FfiError::param("offset is null"));
        }
        // SAFETY: per the contract.
        let off = unsafe { std::ptr::read_unaligned(offset) };
        let off = u64::try_from(off).map_err(|_| FfiError::param("offset is negative"))?;
        let size = u64::try_from(size).map_err(|_| FfiError::param("size is negative"))?;
        let n = op(&s, off, size)?;
        let n = i64::try_from(n).unwrap_or(i64::MAX);
        // SAFETY: per the contract.
        unsafe { std::ptr::write_unaligned(offset, off as i64 + n) };
        Ok(n)
    })
}

/// Sends `size` bytes of the open file `fd` from `*offset` on stream socket `u` (the
/// descriptor stays the caller's); advances `*offset` by the bytes sent and returns them, or
/// −1 (`UDT_EFILE` if the file cannot be read). `block` (UDT4's chunk size) is ignored.
///
/// # Safety
/// `offset` must be readable and writable.
#[no_mangle]
pub unsafe extern "C" fn udt_sendfile(
    u: c_int,
    fd: c_int,
    offset: *mut i64,
    size: i64,
    block: c_int,
) -> i64 {
    let _ = block;
    // SAFETY: forwarded contract.
    unsafe {
        transfer(u, offset, size, |s, off, len| {
            let f = borrow_fd(fd)?;
            Ok(s.sendfile(&f, off, len)?)
        })
    }
}

/// Receives `size` bytes from stream socket `u` into the open file `fd` at `*offset`;
/// advances `*offset` and returns the bytes written, or −1. `block` is ignored.
///
/// # Safety
/// `offset` must be readable and writable.
#[no_mangle]
pub unsafe extern "C" fn udt_recvfile(
    u: c_int,
    fd: c_int,
    offset: *mut i64,
    size: i64,
    block: c_int,
) -> i64 {
    let _ = block;
    // SAFETY: forwarded contract.
    unsafe {
        transfer(u, offset, size, |s, off, len| {
            let f = borrow_fd(fd)?;
            Ok(s.recvfile(&f, off, len)?)
        })
    }
}

/// As `udt_sendfile`, reading the file at `path`.
///
/// # Safety
/// `path` must be a NUL-terminated string; `offset` readable and writable.
#[no_mangle]
pub unsafe extern "C" fn udt_sendfile2(
    u: c_int,
    path: *const c_char,
    offset: *mut i64,
    size: i64,
    block: c_int,
) -> i64 {
    let _ = block;
    // SAFETY: forwarded contract.
    unsafe {
        transfer(u, offset, size, |s, off, len| {
            let p = path_arg(path)?;
            let f = File::open(p).map_err(|e| file_error(&format!("cannot open {p}"), e))?;
            Ok(s.sendfile(&f, off, len)?)
        })
    }
}

/// As `udt_recvfile`, writing the file at `path`, which is created or truncated first (as
/// UDT4's `recvfile2` does).
///
/// # Safety
/// `path` must be a NUL-terminated string; `offset` readable and writable.
#[no_mangle]
pub unsafe extern "C" fn udt_recvfile2(
    u: c_int,
    path: *const c_char,
    offset: *mut i64,
    size: i64,
    block: c_int,
) -> i64 {
    let _ = block;
    // SAFETY: forwarded contract.
    unsafe {
        transfer(u, offset, size, |s, off, len| {
            let p = path_arg(path)?;
            let f = OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .open(p)
                .map_err(|e| file_error(&format!("cannot create {p}"), e))?;
            Ok(s.recvfile(&f, off, len)?)
        })
    }
}
