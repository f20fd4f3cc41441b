//! `udt.Poller`: UDT4's epoll over many sockets, with its readiness descriptor — a file
//! descriptor that is readable exactly while some registered socket is ready — so that an
//! event loop (`udt.asyncio`, `selectors`) watches any number of UDT sockets through one
//! descriptor and no thread per connection.

use std::os::fd::AsRawFd;
use std::time::Duration;

use pyo3::prelude::*;
use udt::{PollEvent, Readiness};

use crate::blocking::{self, Mode};
use crate::errors::{code, raise, IntoPy};
use crate::socket::{parse_timeout, Socket};

/// `UDT_EPOLL_IN`: readable, or a connection waiting to be accepted.
pub const EPOLL_IN: u8 = 0x1;
/// `UDT_EPOLL_OUT`: writable, or a non-blocking connect finished.
pub const EPOLL_OUT: u8 = 0x4;
/// `UDT_EPOLL_ERR`: the connection ended or failed.
pub const EPOLL_ERR: u8 = 0x8;

fn interest(py: Python<'_>, events: u8) -> PyResult<Readiness> {
    let mut r = Readiness::empty();
    if events & EPOLL_IN != 0 {
        r |= Readiness::READ;
    }
    if events & EPOLL_OUT != 0 {
        r |= Readiness::WRITE;
    }
    if events & EPOLL_ERR != 0 {
        r |= Readiness::ERR;
    }
    if r.is_empty() || events & !(EPOLL_IN | EPOLL_OUT | EPOLL_ERR) != 0 {
        return Err(raise(
            py,
            code::INVALID_PARAM,
            "events must be a non-empty mix of UDT_EPOLL_IN, UDT_EPOLL_OUT and UDT_EPOLL_ERR",
        ));
    }
    Ok(r)
}

/// A level-triggered poller over UDT sockets (UDT4's `epoll_*`). Register sockets with a
/// token and the events of interest, then `wait()` for `(token, events)` pairs, or watch
/// `fileno()` with `select`/`selectors`/an event loop and call `wait(0)` when it is
/// readable. A socket registered before it listens or connects is watched from then on.
#[pyclass(frozen, module = "udt", name = "Poller")]
pub struct Poller {
    inner: udt::Poller,
}

#[pymethods]
impl Poller {
    #[new]
    fn new(py: Python<'_>) -> PyResult<Poller> {
        Ok(Poller {
            inner: udt::Poller::new().py(py)?,
        })
    }

    /// The readiness descriptor: readable while some registered socket is ready. Owned by the
    /// poller: do not read, write or close it.
    fn fileno(&self) -> i32 {
        self.inner.as_raw_fd()
    }

    /// `register(sock, token, events=UDT_EPOLL_IN|UDT_EPOLL_ERR)`: watches `sock`, reporting
    /// under `token` (an int ≥ 0).
    #[pyo3(signature = (sock, token, events = EPOLL_IN | EPOLL_ERR))]
    fn register(&self, py: Python<'_>, sock: &Socket, token: u64, events: u8) -> PyResult<()> {
        let r = interest(py, events)?;
        sock.inner.poll_register(&self.inner, token, r).py(py)
    }

    /// `modify(token, events)`: changes what registration `token` watches for.
    fn modify(&self, py: Python<'_>, token: u64, events: u8) -> PyResult<()> {
        let r = interest(py, events)?;
        self.inner.modify(token, r).py(py)
    }

    /// `unregister(sock, token)`: stops watching.
    fn unregister(&self, py: Python<'_>, sock: &Socket, token: u64) -> PyResult<()> {
        sock.inner.poll_deregister(&self.inner, token).py(py)
    }

    /// `wait(timeout=None) -> [(token, events), …]`: the ready registrations, waiting up to
    /// `timeout` seconds (`None`: until one is ready; `0`: just look). Interruptible.
    #[pyo3(signature = (timeout = None))]
    fn wait(&self, py: Python<'_>, timeout: Option<f64>) -> PyResult<Vec<(u64, u8)>> {
        let t = parse_timeout(timeout)?;
        let mut events: Vec<PollEvent> = Vec::new();
        let look = |events: &mut Vec<PollEvent>| self.inner.wait(events, Some(Duration::ZERO));
        let n = if t == Some(Duration::ZERO) {
            py.detach(|| look(&mut events)).py(py)?
        } else {
            let mode = Mode {
                blocking: true,
                timeout: t,
            };
            let r = blocking::run(
                py,
                mode,
                || match look(&mut events)? {
                    0 => Err(udt::Error::WouldBlock),
                    n => Ok(n),
                },
                |d| self.inner.wait(&mut Vec::new(), Some(d)).map(|_| ()),
            );
            match r {
                Ok(n) => n,
                Err(e) if crate::socket::is_code(py, &e, code::TIMEOUT) => 0,
                Err(e) => return Err(e),
            }
        };
        Ok(events[..n]
            .iter()
            .map(|e| (e.token, e.readiness.bits()))
            .collect())
    }

    /// Number of registrations.
    fn __len__(&self) -> usize {
        self.inner.len()
    }
}
