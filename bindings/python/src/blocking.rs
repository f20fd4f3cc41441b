//! How a call that may wait becomes interruptible and timed like a Python socket call.
//!
//! Every waiting call is a loop of non-waiting attempts (`try_send`, `try_recv`, …) and
//! waits for readiness, run without the GIL in slices of at most [`SLICE`]. Between slices
//! the GIL is taken back to run Python's signal handlers (`Python::check_signals`), so Ctrl-C
//! interrupts a blocked `recv` within a slice, and the socket's timeout (`settimeout`,
//! `UDT_RCVTIMEO`, `UDT_SNDTIMEO`) bounds the whole call. The socket under it stays in UDT's
//! blocking mode: its own timeouts and blocking flags are never changed.

use std::time::{Duration, Instant};

use pyo3::prelude::*;

use crate::errors::{code, raise, IntoPy};

/// The longest stretch without a look at Python's signals.
pub const SLICE: Duration = Duration::from_millis(50);

/// How one direction of a socket waits: Python's three modes (blocking, timeout,
/// non-blocking) as UDT4's `UDT_SNDSYN`/`UDT_RCVSYN` and `UDT_SNDTIMEO`/`UDT_RCVTIMEO`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Mode {
    /// False: a call that would wait fails at once (`BlockingIOError`).
    pub blocking: bool,
    /// With `blocking`: give up after this long (`udt.timeout`); `None` waits forever.
    pub timeout: Option<Duration>,
}

impl Mode {
    /// The mode `settimeout(t)` sets: `None` blocks, `0` never waits, `t` waits `t` seconds.
    pub fn from_timeout(t: Option<Duration>) -> Mode {
        match t {
            Some(d) if d.is_zero() => Mode {
                blocking: false,
                timeout: None,
            },
            t => Mode {
                blocking: true,
                timeout: t,
            },
        }
    }

    /// What `gettimeout()` says about this mode.
    pub fn as_timeout(self) -> Option<f64> {
        if !self.blocking {
            Some(0.0)
        } else {
            self.timeout.map(|d| d.as_secs_f64())
        }
    }

    /// When a call started now must give up (`None`: never; a timeout too large to add to
    /// the clock, such as `float("inf")`, is never too).
    pub fn deadline(self) -> Option<Instant> {
        self.timeout.and_then(|t| Instant::now().checked_add(t))
    }
}

/// The outcome of one slice.
enum Step<T> {
    Done(udt::Result<T>),
    WouldBlock(udt::Error),
    TimedOut,
    Slice,
}

/// Runs `attempt` until it succeeds or fails with anything but "would block", waiting with
/// `wait` (a readiness wait that returns early when something changed) between attempts, in
/// `mode`. See the module notes.
pub fn run<T, A, W>(py: Python<'_>, mode: Mode, mut attempt: A, wait: W) -> PyResult<T>
where
    T: Send,
    A: FnMut() -> udt::Result<T> + Send,
    W: Fn(Duration) -> udt::Result<()> + Sync,
{
    let deadline = mode.deadline();
    loop {
        let step = py.detach(|| {
            let slice_end = Instant::now() + SLICE;
            loop {
                match attempt() {
                    Err(e) if e.is_would_block() => {
                        if !mode.blocking {
                            return Step::WouldBlock(e);
                        }
                    }
                    other => return Step::Done(other),
                }
                let now = Instant::now();
                if deadline.is_some_and(|d| now >= d) {
                    return Step::TimedOut;
                }
                if now >= slice_end {
                    return Step::Slice;
                }
                let end = deadline.map_or(slice_end, |d| d.min(slice_end));
                if let Err(e) = wait(end - now) {
                    return Step::Done(Err(e));
                }
            }
        });
        match step {
            Step::Done(r) => return r.py(py),
            Step::WouldBlock(e) => return Err::<T, _>(e).py(py),
            Step::TimedOut => return Err(timed_out(py)),
            Step::Slice => py.check_signals()?,
        }
    }
}

/// Waits until `ready()` holds, polling it every few milliseconds without the GIL, checking
/// signals between slices; fails with `udt.timeout` at `deadline`. For conditions that no
/// readiness event announces (a send buffer that has drained).
pub fn poll_until(
    py: Python<'_>,
    deadline: Option<Instant>,
    ready: impl Fn() -> bool + Sync,
) -> PyResult<()> {
    loop {
        let step = py.detach(|| {
            let slice_end = Instant::now() + SLICE;
            let mut nap = Duration::from_millis(1);
            loop {
                if ready() {
                    return Step::Done(Ok(()));
                }
                let now = Instant::now();
                if deadline.is_some_and(|d| now >= d) {
                    return Step::TimedOut;
                }
                if now >= slice_end {
                    return Step::Slice;
                }
                std::thread::sleep(nap.min(slice_end - now));
                nap = (nap * 2).min(Duration::from_millis(10));
            }
        });
        match step {
            Step::Done(r) => return r.py(py),
            Step::WouldBlock(e) => return Err::<(), _>(e).py(py),
            Step::TimedOut => return Err(timed_out(py)),
            Step::Slice => py.check_signals()?,
        }
    }
}

/// `udt.timeout("timed out")`, as Python's `socket` words it.
pub fn timed_out(py: Python<'_>) -> PyErr {
    raise(py, code::TIMEOUT, "timed out")
}
