//! The thread-local "last error" of UDT4's API: a failed call records UDT4's error code, the
//! system `errno` behind it (if any) and a message; `udt_getlasterror_*` read them back on the
//! same thread. Like `errno`, a successful call leaves the slot alone.

use std::cell::RefCell;
use std::ffi::CString;
use std::os::raw::{c_char, c_int};

use crate::call::guarded_or;
use crate::consts::udt_errno;

/// A failed call, as C sees it.
#[derive(Debug, Clone)]
pub struct FfiError {
    /// UDT4's error code (`udt_errno`).
    pub code: c_int,
    /// The system `errno` behind it, 0 if none.
    pub errno: c_int,
    /// A description for humans.
    pub message: String,
}

impl FfiError {
    /// An error with `code` and `message`, no `errno`.
    pub fn new(code: udt_errno, message: impl Into<String>) -> FfiError {
        FfiError {
            code: code as c_int,
            errno: 0,
            message: message.into(),
        }
    }

    /// `UDT_EINVPARAM` with `message`: a bad argument from the caller.
    pub fn param(message: impl Into<String>) -> FfiError {
        FfiError::new(udt_errno::UDT_EINVPARAM, message)
    }
}

impl From<udt::Error> for FfiError {
    fn from(e: udt::Error) -> FfiError {
        FfiError {
            code: e.udt4_code(),
            errno: e.os_error().unwrap_or(0),
            message: e.to_string(),
        }
    }
}

struct Slot {
    code: c_int,
    errno: c_int,
    desc: CString,
}

thread_local! {
    static LAST: RefCell<Slot> = RefCell::new(Slot {
        code: 0,
        errno: 0,
        desc: CString::from(c"Success"),
    });
}

/// Records `e` as this thread's last error.
pub fn set(e: &FfiError) {
    // A message with an interior NUL (it cannot come from our own texts, but be safe) is cut
    // there rather than lost.
    let text = e.message.split('\0').next().unwrap_or_default();
    let desc = CString::new(text).unwrap_or_default();
    LAST.with(|slot| {
        let mut s = slot.borrow_mut();
        s.code = e.code;
        s.errno = e.errno;
        s.desc = desc;
    });
}

/// This thread's last error code (0 if no call has failed on this thread).
pub fn code() -> c_int {
    LAST.with(|slot| slot.borrow().code)
}

/// UDT4's code of the last error on the calling thread (`udt_errno`); 0 (`UDT_SUCCESS`) if no
/// call has failed on this thread since it started or since `udt_clearlasterror`.
#[no_mangle]
pub extern "C" fn udt_getlasterror_code() -> c_int {
    guarded_or(udt_errno::UDT_EUNKNOWN as c_int, || Ok(code()))
}

/// The system `errno` behind the calling thread's last error (0 if there was none), as UDT4's
/// `CUDTException::getErrno` reports it.
#[no_mangle]
pub extern "C" fn udt_getlasterror_errno() -> c_int {
    guarded_or(0, || Ok(LAST.with(|slot| slot.borrow().errno)))
}

/// A description of the calling thread's last error. The string belongs to the library and
/// stays valid on this thread until the next failing call or `udt_clearlasterror`.
#[no_mangle]
pub extern "C" fn udt_getlasterror_desc() -> *const c_char {
    static FALLBACK: &std::ffi::CStr = c"unknown error";
    guarded_or(FALLBACK.as_ptr(), || {
        Ok(LAST.with(|slot| slot.borrow().desc.as_ptr()))
    })
}

/// Resets the calling thread's last error to `UDT_SUCCESS`.
#[no_mangle]
pub extern "C" fn udt_clearlasterror() {
    guarded_or((), || {
        LAST.with(|slot| {
            let mut s = slot.borrow_mut();
            s.code = 0;
            s.errno = 0;
            s.desc = CString::from(c"Success");
        });
        Ok(())
    })
}

/// Records an error of a layer above this one (the C++ drop-in, say) as the calling thread's
/// last error, so that `udt_getlasterror_*` report it like any other: `code` is a `udt_errno`,
/// `desc` a NUL-terminated description (null: none).
///
/// # Safety
/// `desc`, if not null, must be a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn udt_setlasterror(code: c_int, desc: *const c_char) {
    guarded_or((), || {
        let message = if desc.is_null() {
            String::new()
        } else {
            // SAFETY: per the contract.
            unsafe { std::ffi::CStr::from_ptr(desc) }
                .to_string_lossy()
                .into_owned()
        };
        set(&FfiError {
            code,
            errno: 0,
            message,
        });
        Ok(())
    })
}
