//! Turning `udt::Error` into the package's exceptions.
//!
//! The exception classes are defined in Python (`udt/_errors.py`), because several of them
//! derive from two built-in exceptions at once (`udt.timeout` is a `udt.error` and a
//! `TimeoutError`), which extension types cannot express. Every one carries UDT4's error code
//! in `errno`, the message in `strerror`, and the system `errno` behind the failure, if any,
//! in `os_errno`.

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyModule;

/// UDT4 codes this package raises for failures of its own making.
pub mod code {
    /// `EINVPARAM`: a bad argument (an address, an option value).
    pub const INVALID_PARAM: i32 = 5003;
    /// `ETIMEOUT`: a blocking call ran out of time.
    pub const TIMEOUT: i32 = 6003;
    /// `EASYNCSND`: a non-blocking send would have to wait.
    pub const SEND_WOULD_BLOCK: i32 = 6001;
    /// `EASYNCRCV`: a non-blocking receive, accept or connect would have to wait.
    pub const WOULD_BLOCK: i32 = 6002;
}

static ERRORS: PyOnceLock<Py<PyModule>> = PyOnceLock::new();

/// The exception class for UDT4 error `code`.
fn class_for(code: i32) -> &'static str {
    match code {
        1001 => "noserver",
        1002 => "refused",
        2001 => "connectionlost",
        code::SEND_WOULD_BLOCK | code::WOULD_BLOCK => "wouldblock",
        code::TIMEOUT => "timeout",
        _ => "error",
    }
}

/// An exception of class `class` (a name in `udt._errors`) with UDT4 code `code`.
pub fn raise_as(py: Python<'_>, class: &str, code: i32, msg: &str, os_errno: Option<i32>) -> PyErr {
    let made = (|| -> PyResult<Bound<'_, PyAny>> {
        let module = ERRORS.get_or_try_init(py, || py.import("udt._errors").map(Bound::unbind))?;
        let cls = module.bind(py).getattr(class)?;
        let exc = cls.call1((code, msg))?;
        if let Some(e) = os_errno {
            exc.setattr("os_errno", e)?;
        }
        Ok(exc)
    })();
    match made {
        Ok(exc) => PyErr::from_value(exc),
        // Only if the package's Python half is broken: still an OSError with the code.
        Err(e) => e,
    }
}

/// An exception for UDT4 error `code`, of the class that code maps to.
pub fn raise(py: Python<'_>, code: i32, msg: &str) -> PyErr {
    raise_as(py, class_for(code), code, msg, None)
}

/// The exception for `e`.
pub fn to_py(py: Python<'_>, e: udt::Error) -> PyErr {
    let code = e.udt4_code();
    raise_as(py, class_for(code), code, &e.to_string(), e.os_error())
}

/// Converts `udt::Result`s, given the GIL.
pub trait IntoPy<T> {
    /// The value, or the matching exception.
    fn py(self, py: Python<'_>) -> PyResult<T>;
}

impl<T> IntoPy<T> for udt::Result<T> {
    fn py(self, py: Python<'_>) -> PyResult<T> {
        self.map_err(|e| to_py(py, e))
    }
}
