//! `sendfile`/`recvfile`: files by path or by file object, over `BsdSocket::sendfile` and
//! `BsdSocket::recvfile`.
//!
//! Those two block until their whole range is through, which could be minutes on a slow path:
//! too long to leave Ctrl-C unanswered. So each call here moves what the buffers hold right
//! now — the free send-buffer space, the bytes waiting in the receive buffer — and between
//! calls waits for readiness in slices with signal checks (`blocking.rs`). File objects
//! without a descriptor (`io.BytesIO`) are read or written through Python instead.

use std::fs::{File, OpenOptions};
use std::os::fd::BorrowedFd;
use std::path::PathBuf;
use std::time::Instant;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};
use udt::{OptValue, Readiness, SockOpt};

use crate::errors::IntoPy;
use crate::socket::Socket;

/// The smallest range one `sendfile` call takes, when the send buffer has less free space:
/// small enough to finish within a slice on slow paths, large enough not to spin.
const MIN_CHUNK: u64 = 64 << 10;
/// The largest range one call takes, so that signals are seen at least this often.
const MAX_CHUNK: u64 = 16 << 20;

/// A file given as a path or as a file object.
enum Target<'py> {
    /// Opened here from a path.
    Path(File),
    /// A file object with a descriptor (ours is a duplicate), and the object itself.
    Object(File, Bound<'py, PyAny>),
    /// A file object without a descriptor.
    Stream(Bound<'py, PyAny>),
}

/// `file` as a path (`str`, `bytes`, `os.PathLike`), if it is one.
fn as_path(file: &Bound<'_, PyAny>) -> PyResult<Option<PathBuf>> {
    let py = file.py();
    let is_path = file.is_instance_of::<PyString>()
        || file.is_instance_of::<PyBytes>()
        || file.hasattr("__fspath__")?;
    if !is_path {
        return Ok(None);
    }
    let p = py.import("os")?.getattr("fspath")?.call1((file,))?;
    if let Ok(s) = p.cast::<PyString>() {
        return Ok(Some(PathBuf::from(s.extract::<String>()?)));
    }
    let b: Vec<u8> = p.extract()?;
    use std::os::unix::ffi::OsStringExt;
    Ok(Some(PathBuf::from(std::ffi::OsString::from_vec(b))))
}

/// A duplicate of the file object's descriptor, after flushing its Python-side buffer.
fn from_object<'py>(file: &Bound<'py, PyAny>) -> PyResult<Target<'py>> {
    let Ok(fileno) = file.getattr("fileno") else {
        return Ok(Target::Stream(file.clone()));
    };
    let fd: i32 = match fileno.call0() {
        Ok(fd) => fd.extract()?,
        // io.BytesIO and friends: fileno() raises io.UnsupportedOperation.
        Err(_) => return Ok(Target::Stream(file.clone())),
    };
    if fd < 0 {
        return Err(PyValueError::new_err(
            "file object has a negative descriptor",
        ));
    }
    if file.hasattr("flush")? {
        file.call_method0("flush")?;
    }
    // SAFETY: the descriptor is only borrowed to duplicate it; an invalid number makes the
    // duplication fail with EBADF, which is reported.
    let owned = unsafe { BorrowedFd::borrow_raw(fd) }.try_clone_to_owned()?;
    Ok(Target::Object(File::from(owned), file.clone()))
}

fn check_range(offset: i64, count: Option<i64>) -> PyResult<(u64, Option<u64>)> {
    if offset < 0 {
        return Err(PyValueError::new_err("offset must be >= 0"));
    }
    match count {
        Some(c) if c < 0 => Err(PyValueError::new_err("count must be >= 0")),
        c => Ok((offset as u64, c.map(|c| c as u64))),
    }
}

fn require_blocking(sock: &Socket, send: bool) -> PyResult<()> {
    let mode = if send {
        sock.send_mode()
    } else {
        sock.recv_mode()
    };
    if !mode.blocking {
        return Err(PyValueError::new_err(
            "non-blocking sockets are not supported",
        ));
    }
    Ok(())
}

/// Leaves a file object's position after the bytes moved, as Python's `socket.sendfile`
/// does.
fn seek_after(obj: &Bound<'_, PyAny>, pos: u64) -> PyResult<()> {
    if obj.hasattr("seek")? {
        obj.call_method1("seek", (pos,))?;
    }
    Ok(())
}

/// `socket.sendfile`.
pub fn sendfile(
    sock: &Socket,
    py: Python<'_>,
    file: &Bound<'_, PyAny>,
    offset: i64,
    count: Option<i64>,
) -> PyResult<u64> {
    let (offset, count) = check_range(offset, count)?;
    require_blocking(sock, true)?;
    let target = match as_path(file)? {
        Some(p) => Target::Path(py.detach(|| File::open(p))?),
        None => from_object(file)?,
    };
    let deadline = sock.send_mode().deadline();
    match target {
        Target::Stream(obj) => send_stream(sock, py, &obj, offset, count),
        Target::Path(f) => send_fd(sock, py, &f, offset, count, deadline),
        Target::Object(f, obj) => {
            let mut sent = 0;
            let r = send_fd_counting(sock, py, &f, offset, count, deadline, &mut sent);
            seek_after(&obj, offset + sent)?;
            r.map(|()| sent)
        }
    }
}

fn send_fd(
    sock: &Socket,
    py: Python<'_>,
    f: &File,
    offset: u64,
    count: Option<u64>,
    deadline: Option<Instant>,
) -> PyResult<u64> {
    let mut sent = 0;
    send_fd_counting(sock, py, f, offset, count, deadline, &mut sent).map(|()| sent)
}

fn send_fd_counting(
    sock: &Socket,
    py: Python<'_>,
    f: &File,
    offset: u64,
    count: Option<u64>,
    deadline: Option<Instant>,
    sent: &mut u64,
) -> PyResult<()> {
    let size = py.detach(|| f.metadata())?.len();
    let count = count.unwrap_or(size.saturating_sub(offset));
    while *sent < count {
        sock.wait_ready(py, Readiness::WRITE, deadline)?;
        let free = sock.inner.perfmon(false).py(py)?.byte_avail_snd_buf;
        let chunk = (count - *sent).min(free.clamp(MIN_CHUNK, MAX_CHUNK));
        let n = py
            .detach(|| sock.inner.sendfile(f, offset + *sent, chunk))
            .py(py)?;
        *sent += n;
        py.check_signals()?;
    }
    Ok(())
}

/// `sendfile` from a file object without a descriptor: read and `sendall`.
fn send_stream(
    sock: &Socket,
    py: Python<'_>,
    obj: &Bound<'_, PyAny>,
    offset: u64,
    count: Option<u64>,
) -> PyResult<u64> {
    if offset > 0 || obj.hasattr("seek")? {
        obj.call_method1("seek", (offset,))?;
    }
    let mut sent = 0u64;
    loop {
        let want = count.map_or(MIN_CHUNK * 16, |c| (c - sent).min(MIN_CHUNK * 16));
        if want == 0 {
            break;
        }
        let data = obj.call_method1("read", (want,))?;
        let bytes = crate::buffer::Buf::readable(&data)?;
        if bytes.len() == 0 {
            break;
        }
        sock.sendall_impl(py, bytes.as_slice())?;
        sent += bytes.len() as u64;
    }
    Ok(sent)
}

/// `socket.recvfile`.
pub fn recvfile(
    sock: &Socket,
    py: Python<'_>,
    file: &Bound<'_, PyAny>,
    offset: i64,
    count: Option<i64>,
) -> PyResult<u64> {
    let (offset, count) = check_range(offset, count)?;
    let count = count.ok_or_else(|| {
        PyValueError::new_err("recvfile needs count, the number of bytes to receive")
    })?;
    require_blocking(sock, false)?;
    let deadline = sock.recv_mode().deadline();
    let target = match as_path(file)? {
        Some(p) => Target::Path(py.detach(|| {
            OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(false)
                .open(p)
        })?),
        None => from_object(file)?,
    };
    match target {
        Target::Stream(obj) => {
            if offset > 0 || obj.hasattr("seek")? {
                obj.call_method1("seek", (offset,))?;
            }
            recv_stream(sock, py, &obj, count)
        }
        Target::Path(f) => {
            let mut got = 0;
            recv_fd(sock, py, &f, offset, count, deadline, &mut got)?;
            // The file is the received range's destination: nothing stale after it.
            let end = offset + count;
            py.detach(|| -> std::io::Result<()> {
                if f.metadata()?.len() > end {
                    f.set_len(end)?;
                }
                Ok(())
            })?;
            Ok(got)
        }
        Target::Object(f, obj) => {
            let mut got = 0;
            let r = recv_fd(sock, py, &f, offset, count, deadline, &mut got);
            seek_after(&obj, offset + got)?;
            r.map(|()| got)
        }
    }
}

fn recv_fd(
    sock: &Socket,
    py: Python<'_>,
    f: &File,
    offset: u64,
    count: u64,
    deadline: Option<Instant>,
    got: &mut u64,
) -> PyResult<()> {
    while *got < count {
        sock.wait_ready(py, Readiness::READ, deadline)?;
        let held = match sock.inner.option(SockOpt::RcvData) {
            Ok(OptValue::Int(v)) if v > 0 => v as u64,
            _ => 1,
        };
        let chunk = (count - *got).min(held.min(MAX_CHUNK));
        let n = py
            .detach(|| sock.inner.recvfile(f, offset + *got, chunk))
            .py(py)?;
        *got += n;
        py.check_signals()?;
    }
    Ok(())
}

/// `recvfile` into a file object without a descriptor: `recv` and write.
fn recv_stream(sock: &Socket, py: Python<'_>, obj: &Bound<'_, PyAny>, count: u64) -> PyResult<u64> {
    let mut got = 0u64;
    let mut buf = vec![0u8; (MIN_CHUNK * 16).min(count.max(1)) as usize];
    while got < count {
        let want = ((count - got) as usize).min(buf.len());
        let n = sock.recv_impl(py, &mut buf[..want])?;
        if n == 0 {
            return Err(crate::errors::raise(
                py,
                2001,
                "the connection ended before count bytes arrived",
            ));
        }
        obj.call_method1("write", (PyBytes::new(py, &buf[..n]),))?;
        got += n as u64;
    }
    Ok(got)
}
