//! `udt.socket`: a UDT socket with the methods of Python's `socket.socket`, a thin layer over
//! [`udt::BsdSocket`] (which keeps UDT4's lifecycle and option rules). This layer adds only
//! what Python needs: addresses as tuples, exceptions, byte buffers, and waiting in slices
//! without the GIL (see `blocking.rs`).

use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyTuple};
use udt::{BsdSocket, Family, OptValue, Readiness, SockOpt, SocketKind, Udt4Status};

use crate::addr;
use crate::blocking::{self, Mode};
use crate::buffer::Buf;
use crate::errors::{code, raise, IntoPy};
use crate::options;
use crate::perfmon::PerfMon;

/// `AF_INET` (Linux's value, which UDT4 takes).
pub const AF_INET: i32 = 2;
/// `AF_INET6` (Linux's value).
pub const AF_INET6: i32 = 10;
/// `SOCK_STREAM`: a byte stream.
pub const SOCK_STREAM: i32 = 1;
/// `SOCK_DGRAM`: UDT's message mode.
pub const SOCK_DGRAM: i32 = 2;

/// `udt.getdefaulttimeout()`: the timeout of new sockets.
static DEFAULT_TIMEOUT: Mutex<Option<Duration>> = Mutex::new(None);

/// The timeout new sockets start with.
pub fn default_timeout() -> Option<Duration> {
    *DEFAULT_TIMEOUT.lock().unwrap_or_else(|p| p.into_inner())
}

/// Sets the timeout new sockets start with.
pub fn set_default_timeout(t: Option<Duration>) {
    *DEFAULT_TIMEOUT.lock().unwrap_or_else(|p| p.into_inner()) = t;
}

/// A Python timeout value (`None` or seconds ≥ 0) as a duration.
pub fn parse_timeout(value: Option<f64>) -> PyResult<Option<Duration>> {
    match value {
        None => Ok(None),
        Some(s) if s.is_nan() => Err(PyValueError::new_err("Invalid value NaN (not a number)")),
        Some(s) if s < 0.0 => Err(PyValueError::new_err("Timeout value out of range")),
        Some(s) => Ok(Some(
            Duration::try_from_secs_f64(s).unwrap_or(Duration::MAX),
        )),
    }
}

/// How each direction waits.
#[derive(Clone, Copy)]
struct Modes {
    send: Mode,
    recv: Mode,
}

/// The size of the allocation `recv` makes for a request of `bufsize` bytes: never more than
/// the receive buffer can hold, so `recv(10**12)` does not try to allocate a terabyte.
fn recv_alloc(sock: &BsdSocket, bufsize: usize) -> usize {
    let cap = match sock.option(SockOpt::RcvBuf) {
        Ok(OptValue::Int(v)) if v > 0 => v as usize,
        _ => 64 << 20,
    };
    bufsize.min(cap)
}

/// A zeroed buffer of `n` bytes, or `MemoryError`.
fn alloc(n: usize) -> PyResult<Vec<u8>> {
    let mut v = Vec::new();
    v.try_reserve_exact(n).map_err(|_| {
        pyo3::exceptions::PyMemoryError::new_err("cannot allocate the receive buffer")
    })?;
    v.resize(n, 0);
    Ok(v)
}

/// A UDT socket, made like Python's: `udt.socket(udt.AF_INET, udt.SOCK_STREAM)`.
///
/// `SOCK_STREAM` carries a byte stream (`send`, `sendall`, `recv`, `recv_into`,
/// `sendfile`, `recvfile`); `SOCK_DGRAM` carries whole messages (`sendmsg`, `recvmsg`),
/// reliable or with a time to live. Blocking calls release the GIL, and Ctrl-C interrupts
/// them. Timeouts work as in Python (`settimeout`, `setblocking`); errors are `udt.error`
/// (an `OSError` whose `errno` is UDT4's error code) and its subclasses. Sockets are
/// context managers, and any thread may use or close a socket while another is blocked in
/// it.
#[pyclass(frozen, subclass, weakref, module = "udt", name = "socket")]
pub struct Socket {
    pub(crate) inner: BsdSocket,
    family: i32,
    kind: i32,
    modes: Mutex<Modes>,
}

impl Socket {
    fn wrap(inner: BsdSocket) -> Socket {
        let family = match inner.family() {
            Family::V4 => AF_INET,
            Family::V6 => AF_INET6,
        };
        let kind = match inner.kind() {
            SocketKind::Stream => SOCK_STREAM,
            SocketKind::Message => SOCK_DGRAM,
        };
        let mode = Mode::from_timeout(default_timeout());
        Socket {
            inner,
            family,
            kind,
            modes: Mutex::new(Modes {
                send: mode,
                recv: mode,
            }),
        }
    }

    fn modes(&self) -> MutexGuard<'_, Modes> {
        self.modes.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn send_mode(&self) -> Mode {
        self.modes().send
    }

    pub(crate) fn recv_mode(&self) -> Mode {
        self.modes().recv
    }

    fn udt_family(&self) -> Family {
        self.inner.family()
    }

    /// Waits for `interest` at most `t` (a wait that returns early is fine: the caller tries
    /// again).
    fn wait_for(&self, interest: Readiness) -> impl Fn(Duration) -> udt::Result<()> + Sync + '_ {
        move |t| self.inner.wait(interest, Some(t)).map(|_| ())
    }

    /// Waits, in slices and within `deadline`, until the socket is ready for `interest` or has
    /// ended.
    pub(crate) fn wait_ready(
        &self,
        py: Python<'_>,
        interest: Readiness,
        deadline: Option<Instant>,
    ) -> PyResult<()> {
        let timeout = deadline.map(|d| d.saturating_duration_since(Instant::now()));
        let mode = Mode {
            blocking: true,
            timeout,
        };
        blocking::run(
            py,
            mode,
            || {
                let r = self.inner.wait(interest, Some(Duration::ZERO))?;
                if (r & (interest | Readiness::ERR)).is_empty() {
                    Err(udt::Error::WouldBlock)
                } else {
                    Ok(())
                }
            },
            self.wait_for(interest),
        )
    }

    /// Starts the handshake without waiting for it (UDT_RCVSYN off for the call only, so the
    /// socket under stays in blocking mode for everything else).
    fn start_connect(&self, addr: std::net::SocketAddr) -> udt::Result<()> {
        self.inner
            .set_option(SockOpt::RcvSyn, OptValue::Bool(false))?;
        let r = self.inner.connect(addr);
        let _ = self.inner.set_option(SockOpt::RcvSyn, OptValue::Bool(true));
        r
    }

    fn connect_impl(&self, py: Python<'_>, address: &Bound<'_, PyAny>) -> PyResult<()> {
        let addr = addr::parse(address, self.udt_family())?;
        let mode = self.recv_mode();
        py.detach(|| self.start_connect(addr)).py(py)?;
        let sock = self.inner.socket().py(py)?;
        if !mode.blocking {
            return Err(raise(py, code::WOULD_BLOCK, "connection in progress"));
        }
        blocking::run(
            py,
            mode,
            || match sock.connect_result() {
                None => Err(udt::Error::WouldBlock),
                Some(r) => r,
            },
            |t| match sock.wait_connected(Some(t)) {
                Ok(()) | Err(udt::Error::Timeout) => Ok(()),
                Err(udt::Error::Connect(_)) => Ok(()),
                Err(e) => Err(e),
            },
        )
    }

    fn send_impl(&self, py: Python<'_>, data: &[u8]) -> PyResult<usize> {
        if data.is_empty() {
            // Nothing to queue; still report a socket that cannot send.
            return match self.inner.try_send(data) {
                Ok(n) => Ok(n),
                Err(e) if e.is_would_block() => Ok(0),
                Err(e) => Err(e).py(py),
            };
        }
        blocking::run(
            py,
            self.send_mode(),
            || self.inner.try_send(data),
            self.wait_for(Readiness::WRITE),
        )
    }

    pub(crate) fn sendall_impl(&self, py: Python<'_>, data: &[u8]) -> PyResult<()> {
        let mut off = 0;
        blocking::run(
            py,
            self.send_mode(),
            || {
                while off < data.len() {
                    off += self.inner.try_send(&data[off..])?;
                }
                // An empty send still reports a socket that cannot send.
                if data.is_empty() {
                    match self.inner.try_send(data) {
                        Err(e) if !e.is_would_block() => return Err(e),
                        _ => {}
                    }
                }
                Ok(())
            },
            self.wait_for(Readiness::WRITE),
        )
    }

    pub(crate) fn recv_impl(&self, py: Python<'_>, buf: &mut [u8]) -> PyResult<usize> {
        blocking::run(
            py,
            self.recv_mode(),
            || self.inner.try_recv(buf),
            self.wait_for(Readiness::READ),
        )
    }

    fn recvmsg_impl(&self, py: Python<'_>, buf: &mut [u8]) -> PyResult<usize> {
        let r = blocking::run(
            py,
            self.recv_mode(),
            || self.inner.try_recv_msg(buf),
            self.wait_for(Readiness::READ),
        );
        match r {
            Ok(m) => Ok(m.copied),
            // The end of a message connection: every message was read, as `recv` returns b"".
            Err(e) if is_code(py, &e, 2001) => Ok(0),
            Err(e) => Err(e),
        }
    }
}

/// True if `e` is a `udt.error` with UDT4 code `code`.
pub fn is_code(py: Python<'_>, e: &PyErr, code: i32) -> bool {
    e.value(py)
        .getattr("errno")
        .and_then(|v| v.extract::<i32>())
        .is_ok_and(|c| c == code)
        && e.value(py).is_instance_of::<pyo3::exceptions::PyOSError>()
}

fn buf_len_arg(nbytes: i64, len: usize) -> PyResult<usize> {
    if nbytes < 0 {
        return Err(PyValueError::new_err("negative buffersize in recv_into"));
    }
    let n = nbytes as u64;
    if n > len as u64 {
        return Err(PyValueError::new_err(
            "buffer too small for requested bytes",
        ));
    }
    Ok(if n == 0 { len } else { n as usize })
}

fn check_flags(flags: i64) -> PyResult<()> {
    if flags != 0 {
        return Err(PyValueError::new_err(
            "UDT sockets take no flags (flags must be 0)",
        ));
    }
    Ok(())
}

#[pymethods]
impl Socket {
    /// `socket(family=AF_INET, type=SOCK_STREAM, proto=0)`: a new, unbound UDT socket.
    /// `family` is `AF_INET` or `AF_INET6`; `type` is `SOCK_STREAM` (bytes) or `SOCK_DGRAM`
    /// (messages).
    #[new]
    #[pyo3(
        signature = (family = AF_INET as i64, r#type = SOCK_STREAM as i64, proto = 0),
        text_signature = "(family=AF_INET, type=SOCK_STREAM, proto=0)"
    )]
    fn new(py: Python<'_>, family: i64, r#type: i64, proto: i64) -> PyResult<Socket> {
        let fam = match family {
            f if f == AF_INET as i64 => Family::V4,
            f if f == AF_INET6 as i64 => Family::V6,
            f => {
                return Err(raise(
                    py,
                    code::INVALID_PARAM,
                    &format!("unsupported address family {f} (AF_INET or AF_INET6)"),
                ))
            }
        };
        let kind = match r#type {
            t if t == SOCK_STREAM as i64 => SocketKind::Stream,
            t if t == SOCK_DGRAM as i64 => SocketKind::Message,
            t => {
                return Err(raise(
                    py,
                    code::INVALID_PARAM,
                    &format!("unsupported socket type {t} (SOCK_STREAM or SOCK_DGRAM)"),
                ))
            }
        };
        if proto != 0 {
            return Err(raise(py, code::INVALID_PARAM, "proto must be 0"));
        }
        Ok(Socket::wrap(BsdSocket::new(fam, kind)))
    }

    /// The address family, `AF_INET` or `AF_INET6`.
    #[getter]
    fn family(&self) -> i32 {
        self.family
    }

    /// The socket type, `SOCK_STREAM` or `SOCK_DGRAM`.
    #[getter]
    fn r#type(&self) -> i32 {
        self.kind
    }

    /// Always 0.
    #[getter]
    fn proto(&self) -> i32 {
        0
    }

    /// The timeout in seconds (`None`: blocking; `0.0`: non-blocking), as `gettimeout()`.
    #[getter]
    fn timeout(&self) -> Option<f64> {
        self.gettimeout()
    }

    /// True once `close()` was called.
    #[getter]
    fn closed(&self) -> bool {
        self.inner
            .local_addr()
            .is_err_and(|e| matches!(e, udt::Error::Closed))
    }

    /// `bind(address)`: binds to a local UDP address, `(host, port)`; port 0 picks a free
    /// port, host `""` every interface.
    fn bind(&self, py: Python<'_>, address: &Bound<'_, PyAny>) -> PyResult<()> {
        let addr = addr::parse(address, self.udt_family())?;
        py.detach(|| self.inner.bind(addr)).py(py)
    }

    /// `listen(backlog=128)`: accepts connections; the socket must be bound.
    #[pyo3(signature = (backlog = None))]
    fn listen(&self, py: Python<'_>, backlog: Option<i64>) -> PyResult<()> {
        let backlog = backlog.unwrap_or(128).clamp(1, 1 << 16) as usize;
        py.detach(|| self.inner.listen(backlog)).py(py)
    }

    /// `accept() -> (socket, address)`: waits for a connection. The new socket has this one's
    /// options and the default timeout (`getdefaulttimeout()`), as in Python.
    fn accept<'py>(&self, py: Python<'py>) -> PyResult<(Socket, Bound<'py, PyTuple>)> {
        let (sock, peer) = blocking::run(
            py,
            self.recv_mode(),
            || self.inner.try_accept(),
            self.wait_for(Readiness::READ),
        )?;
        Ok((Socket::wrap(sock), addr::to_py(py, peer)?))
    }

    /// `connect(address)`: connects to a listening UDT socket at `(host, port)` (or meets a
    /// peer doing the same, with `UDT_RENDEZVOUS`). A failed connection leaves the socket
    /// unusable: close it. In non-blocking mode this starts the handshake and raises
    /// `BlockingIOError`.
    fn connect(&self, py: Python<'_>, address: &Bound<'_, PyAny>) -> PyResult<()> {
        self.connect_impl(py, address)
    }

    /// `connect_ex(address) -> int`: as `connect`, but returns UDT4's error code instead of
    /// raising it (0 on success). Bad addresses still raise.
    fn connect_ex(&self, py: Python<'_>, address: &Bound<'_, PyAny>) -> PyResult<i32> {
        let addr_ok = addr::parse(address, self.udt_family());
        addr_ok?;
        match self.connect_impl(py, address) {
            Ok(()) => Ok(0),
            Err(e) if e.value(py).is_instance_of::<pyo3::exceptions::PyOSError>() => {
                e.value(py).getattr("errno")?.extract::<i32>().or(Err(e))
            }
            Err(e) => Err(e),
        }
    }

    /// For event loops: `None` while a non-blocking connect is in progress, `True` once
    /// connected; raises the error that ended the handshake.
    fn _connect_result(&self, py: Python<'_>) -> PyResult<Option<bool>> {
        let sock = self.inner.socket().py(py)?;
        match sock.connect_result() {
            None => Ok(None),
            Some(r) => r.py(py).map(|()| Some(true)),
        }
    }

    /// `close()`: closes the socket; closing again does nothing. In blocking mode this first
    /// waits (interruptibly, at most `UDT_LINGER`) until the peer has acknowledged everything
    /// sent; in non-blocking mode it returns at once and the data keeps flowing in the
    /// background for the linger time, as UDT4 does. Other threads blocked in this socket get
    /// `udt.error` 5004.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        let mode = self.send_mode();
        let linger = match self.inner.option(SockOpt::Linger) {
            Ok(OptValue::Linger(l)) => l,
            Err(udt::Error::Closed) => return Ok(()),
            _ => None,
        };
        if mode.blocking && self.inner.status() == Udt4Status::Connected {
            if let Some(l) = linger {
                let deadline = Instant::now().checked_add(l);
                let drained = || {
                    self.inner.status() != Udt4Status::Connected
                        || matches!(
                            self.inner.option(SockOpt::SndData),
                            Ok(OptValue::Int(0)) | Err(_)
                        )
                };
                match blocking::poll_until(py, deadline, drained) {
                    Ok(()) => {}
                    // Linger time over: close abandons what is left, as UDT4 does.
                    Err(e) if is_code(py, &e, code::TIMEOUT) => {
                        let _ = self
                            .inner
                            .set_option(SockOpt::Linger, OptValue::Linger(None));
                    }
                    Err(e) => return Err(e),
                }
            }
        } else if !mode.blocking {
            let _ = self
                .inner
                .set_option(SockOpt::SndSyn, OptValue::Bool(false));
        }
        match py.detach(|| self.inner.close()) {
            Ok(()) | Err(udt::Error::Closed) => Ok(()),
            Err(e) => Err(e).py(py),
        }
    }

    /// `getsockname() -> (host, port)`: the local address.
    fn getsockname<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        addr::to_py(py, self.inner.local_addr().py(py)?)
    }

    /// `getpeername() -> (host, port)`: the peer's address.
    fn getpeername<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        addr::to_py(py, self.inner.peer_addr().py(py)?)
    }

    /// `send(data) -> int`: queues bytes from a bytes-like object; returns how many were
    /// taken (at least one, unless `data` is empty). Stream sockets.
    #[pyo3(signature = (data, flags = 0))]
    fn send(&self, py: Python<'_>, data: &Bound<'_, PyAny>, flags: i64) -> PyResult<usize> {
        check_flags(flags)?;
        let buf = Buf::readable(data)?;
        self.send_impl(py, buf.as_slice())
    }

    /// `sendall(data)`: queues every byte of `data`; the timeout bounds the whole call.
    /// Stream sockets.
    #[pyo3(signature = (data, flags = 0))]
    fn sendall(&self, py: Python<'_>, data: &Bound<'_, PyAny>, flags: i64) -> PyResult<()> {
        check_flags(flags)?;
        let buf = Buf::readable(data)?;
        self.sendall_impl(py, buf.as_slice())
    }

    /// `recv(bufsize) -> bytes`: up to `bufsize` received bytes; `b""` once the peer has
    /// closed and everything was read. Stream sockets.
    #[pyo3(signature = (bufsize, flags = 0))]
    fn recv<'py>(
        &self,
        py: Python<'py>,
        bufsize: i64,
        flags: i64,
    ) -> PyResult<Bound<'py, PyBytes>> {
        check_flags(flags)?;
        if bufsize < 0 {
            return Err(PyValueError::new_err("negative buffersize in recv"));
        }
        if bufsize == 0 {
            return Ok(PyBytes::new(py, b""));
        }
        let mut buf = alloc(recv_alloc(&self.inner, bufsize as usize))?;
        let n = self.recv_impl(py, &mut buf)?;
        Ok(PyBytes::new(py, &buf[..n]))
    }

    /// `recv_into(buffer, nbytes=0) -> int`: receives into a writable bytes-like object (up
    /// to `nbytes`, or its whole length), without a copy; returns the count, 0 at the end.
    #[pyo3(signature = (buffer, nbytes = 0, flags = 0))]
    fn recv_into(
        &self,
        py: Python<'_>,
        buffer: &Bound<'_, PyAny>,
        nbytes: i64,
        flags: i64,
    ) -> PyResult<usize> {
        check_flags(flags)?;
        let buf = Buf::writable(buffer)?;
        let n = buf_len_arg(nbytes, buf.len())?;
        if n == 0 {
            return Ok(0); // as Python's socket: nothing asked, nothing waited for
        }
        let slice = &mut buf.as_mut_slice()[..n];
        self.recv_impl(py, slice)
    }

    /// `sendmsg(data, ttl_ms=-1, in_order=False) -> int`: sends one message (SOCK_DGRAM),
    /// delivered whole or not at all. `ttl_ms` ≥ 0 drops it if not delivered in time;
    /// `in_order` delivers it only after every earlier message. Returns its length.
    #[pyo3(signature = (data, ttl_ms = -1, in_order = false))]
    fn sendmsg(
        &self,
        py: Python<'_>,
        data: &Bound<'_, PyAny>,
        ttl_ms: i64,
        in_order: bool,
    ) -> PyResult<usize> {
        let buf = Buf::readable(data)?;
        let ttl = if ttl_ms < 0 {
            -1
        } else {
            i32::try_from(ttl_ms)
                .map_err(|_| raise(py, code::INVALID_PARAM, "ttl_ms out of range"))?
        };
        let bytes = buf.as_slice();
        blocking::run(
            py,
            self.send_mode(),
            || self.inner.try_send_msg(bytes, ttl, in_order),
            self.wait_for(Readiness::WRITE),
        )
    }

    /// `recvmsg(bufsize) -> bytes`: the next whole message (SOCK_DGRAM); a longer one is cut
    /// to `bufsize` and its rest discarded, as in UDT4. `b""` once the connection has ended
    /// and every message was read.
    fn recvmsg<'py>(&self, py: Python<'py>, bufsize: i64) -> PyResult<Bound<'py, PyBytes>> {
        if bufsize <= 0 {
            // UDT4 would take the next message and discard all of it: refuse instead.
            return Err(PyValueError::new_err("recvmsg needs a bufsize > 0"));
        }
        let mut buf = alloc(recv_alloc(&self.inner, bufsize as usize))?;
        let n = self.recvmsg_impl(py, &mut buf)?;
        Ok(PyBytes::new(py, &buf[..n]))
    }

    /// `recvmsg_into(buffer) -> int`: as `recvmsg`, into a writable bytes-like object.
    fn recvmsg_into(&self, py: Python<'_>, buffer: &Bound<'_, PyAny>) -> PyResult<usize> {
        let buf = Buf::writable(buffer)?;
        if buf.len() == 0 {
            return Err(PyValueError::new_err(
                "recvmsg_into needs a non-empty buffer",
            ));
        }
        self.recvmsg_impl(py, buf.as_mut_slice())
    }

    /// `sendfile(file, offset=0, count=None) -> int`: sends `count` bytes (default: to the end)
    /// of `file` from byte `offset`; `file` is a path or a binary file object. Returns the
    /// bytes sent; a file object's position is left after them. Blocking sockets only.
    #[pyo3(signature = (file, offset = 0, count = None))]
    fn sendfile(
        &self,
        py: Python<'_>,
        file: &Bound<'_, PyAny>,
        offset: i64,
        count: Option<i64>,
    ) -> PyResult<u64> {
        crate::file::sendfile(self, py, file, offset, count)
    }

    /// `recvfile(file, offset=0, count) -> int`: receives exactly `count` bytes into `file`
    /// at byte `offset`; `file` is a path (created if missing, cut to `offset + count`) or a
    /// binary file object (its position is left after the bytes). Blocking sockets only.
    #[pyo3(signature = (file, offset = 0, count = None))]
    fn recvfile(
        &self,
        py: Python<'_>,
        file: &Bound<'_, PyAny>,
        offset: i64,
        count: Option<i64>,
    ) -> PyResult<u64> {
        crate::file::recvfile(self, py, file, offset, count)
    }

    /// `settimeout(value)`: `None` blocks, `0.0` never waits (`BlockingIOError`), a positive
    /// number of seconds raises `udt.timeout` after that long. Sets both directions (UDT4's
    /// `UDT_SNDTIMEO`/`UDT_RCVTIMEO` and `UDT_SNDSYN`/`UDT_RCVSYN` set one each).
    fn settimeout(&self, value: Option<f64>) -> PyResult<()> {
        let mode = Mode::from_timeout(parse_timeout(value)?);
        *self.modes() = Modes {
            send: mode,
            recv: mode,
        };
        Ok(())
    }

    /// `gettimeout()`: the receive direction's timeout as `settimeout` takes it.
    fn gettimeout(&self) -> Option<f64> {
        self.recv_mode().as_timeout()
    }

    /// `setblocking(flag)`: `settimeout(None)` or `settimeout(0.0)`.
    fn setblocking(&self, flag: bool) -> PyResult<()> {
        self.settimeout(if flag { None } else { Some(0.0) })
    }

    /// `getblocking()`: False in non-blocking mode (timeout 0.0).
    fn getblocking(&self) -> bool {
        self.recv_mode().blocking
    }

    /// `setsockopt(optname, value)` or `setsockopt(level, optname, value)` (the level is
    /// ignored, as in UDT4): sets a UDT4 option (`udt.UDT_MSS`, `UDT_SNDBUF`, `UDT_RCVBUF`,
    /// `UDT_LINGER`, `UDT_MAXBW`, `UDT_CC`, …). Ints for sizes and rates, bools for flags,
    /// `None`/seconds/`(onoff, seconds)` for `UDT_LINGER`, an algorithm's name for `UDT_CC`
    /// (see `udt.congestion_controls()`). Some options must be set before `bind`/`connect`
    /// (`udt.error` 5001/5002 after).
    #[pyo3(signature = (*args))]
    fn setsockopt(&self, py: Python<'_>, args: &Bound<'_, PyTuple>) -> PyResult<()> {
        let a = options::split_args(args, 2)?;
        let n = a[0].extract::<i64>()?;
        if options::is_encryption(n) {
            return options::set_encryption(py, &self.inner, n, &a[1])?.py(py);
        }
        let opt = options::option(py, n)?;
        let value = options::to_value(py, opt, &a[1])?;
        // The blocking flags and timeouts are this layer's (see blocking.rs): checked like
        // the others (a closed socket fails), kept here.
        match opt {
            SockOpt::SndSyn | SockOpt::RcvSyn | SockOpt::SndTimeo | SockOpt::RcvTimeo => {
                self.inner.option(opt).py(py)?;
                let mut m = self.modes();
                let dir = if matches!(opt, SockOpt::SndSyn | SockOpt::SndTimeo) {
                    &mut m.send
                } else {
                    &mut m.recv
                };
                match (opt, value) {
                    (SockOpt::SndSyn | SockOpt::RcvSyn, OptValue::Bool(b)) => dir.blocking = b,
                    (_, OptValue::Int(ms)) => {
                        dir.timeout = (ms >= 0).then(|| Duration::from_millis(ms as u64));
                    }
                    _ => return Err(raise(py, code::INVALID_PARAM, "bad option value")),
                }
                Ok(())
            }
            _ => py.detach(|| self.inner.set_option(opt, value)).py(py),
        }
    }

    /// `getsockopt(optname)` or `getsockopt(level, optname)`: an option's value, in the form
    /// `setsockopt` takes (`UDT_LINGER` as `(onoff, seconds)`, `UDT_CC` as a name).
    #[pyo3(signature = (*args))]
    fn getsockopt(&self, py: Python<'_>, args: &Bound<'_, PyTuple>) -> PyResult<Py<PyAny>> {
        let a = options::split_args(args, 1)?;
        let n = a[0].extract::<i64>()?;
        if options::is_encryption(n) {
            let v = options::get_encryption(&self.inner, n).py(py)?;
            return Ok(v.into_pyobject(py)?.into_any().unbind());
        }
        let opt = options::option(py, n)?;
        let v = self.inner.option(opt).py(py)?;
        let m = *self.modes();
        let v = match opt {
            SockOpt::SndSyn => OptValue::Bool(m.send.blocking),
            SockOpt::RcvSyn => OptValue::Bool(m.recv.blocking),
            SockOpt::SndTimeo => OptValue::Int(ms(m.send.timeout)),
            SockOpt::RcvTimeo => OptValue::Int(ms(m.recv.timeout)),
            _ => v,
        };
        options::from_value(py, v)
    }

    /// `perfmon(clear=False) -> PerfMon`: the connection's statistics under UDT4's names
    /// (`pktSentTotal`, `mbpsSendRate`, `msRTT`, …); `clear` restarts the interval values.
    #[pyo3(signature = (clear = false))]
    fn perfmon(&self, py: Python<'_>, clear: bool) -> PyResult<PerfMon> {
        let s = self.inner.perfmon(clear).py(py)?;
        Ok(PerfMon::from_stats(&s))
    }

    /// `getsockstate() -> int`: UDT4's socket state (`udt.INIT` … `udt.NONEXIST`).
    fn getsockstate(&self) -> i32 {
        self.inner.status() as i32
    }

    /// `with udt.socket() as s:` closes `s` at the end of the block.
    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    /// Closes the socket (see `close`).
    #[pyo3(signature = (*_args))]
    fn __exit__(&self, py: Python<'_>, _args: &Bound<'_, PyTuple>) -> PyResult<bool> {
        self.close(py)?;
        Ok(false)
    }

    fn __repr__(&self) -> String {
        let fam = if self.family == AF_INET {
            "AF_INET"
        } else {
            "AF_INET6"
        };
        let kind = if self.kind == SOCK_STREAM {
            "SOCK_STREAM"
        } else {
            "SOCK_DGRAM"
        };
        let mut s = format!(
            "<udt.socket family={fam}, type={kind}, state={:?}",
            self.inner.status()
        );
        if let Ok(a) = self.inner.local_addr() {
            s += &format!(", laddr={a}");
        }
        if let Ok(a) = self.inner.peer_addr() {
            s += &format!(", raddr={a}");
        }
        s + ">"
    }
}

fn ms(t: Option<Duration>) -> i32 {
    t.map_or(-1, |d| i32::try_from(d.as_millis()).unwrap_or(i32::MAX))
}
