//! The frame every entry point runs in: errors become UDT4's return value plus the thread's
//! last error, and a panic is caught here instead of unwinding into C (which would be
//! undefined behaviour).

use std::os::raw::c_int;
use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::consts::{udt_errno, UDT_ERROR};
use crate::last_error::{self, FfiError};

/// Result of an entry point's body.
pub type FfiResult<T> = Result<T, FfiError>;

/// Runs `body`; on an error (or a panic) records it as the thread's last error and returns
/// `on_error` instead.
pub fn guarded_or<T>(on_error: T, body: impl FnOnce() -> FfiResult<T>) -> T {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(v)) => v,
        Ok(Err(e)) => {
            last_error::set(&e);
            on_error
        }
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".to_string());
            last_error::set(&FfiError::new(
                udt_errno::UDT_EUNKNOWN,
                format!("internal error: {what}"),
            ));
            on_error
        }
    }
}

/// [`guarded_or`] for the common shape: `int` result, `UDT_ERROR` (−1) on failure.
pub fn guarded(body: impl FnOnce() -> FfiResult<c_int>) -> c_int {
    guarded_or(UDT_ERROR, body)
}

/// Converts a C length to `usize`, refusing negative values.
pub fn len_arg(len: c_int, what: &str) -> FfiResult<usize> {
    usize::try_from(len).map_err(|_| FfiError::param(format!("{what} is negative")))
}

/// Converts a byte count to the `int` a C call returns (calls never move more than `int`
/// bytes, since their lengths are `int`).
pub fn int_ret(n: usize) -> c_int {
    c_int::try_from(n).unwrap_or(c_int::MAX)
}
