//! Borrowing the memory of Python bytes-like objects (`bytes`, `bytearray`, `memoryview`,
//! `array`, NumPy arrays …) without copying, through the buffer protocol.
//!
//! pyo3 offers the buffer protocol only when the limited API is 3.11 or newer, because
//! `Py_buffer` entered the stable ABI in 3.11. This wheel targets the stable ABI of 3.9, so the
//! two functions and the struct are declared here. They are safe to use on 3.9 and 3.10: the
//! functions have been exported by every CPython 3 build, and 3.11 froze the struct with the
//! layout it has had since 3.3 — the very reason it could be added to the stable ABI unchanged.
//!
//! A [`Buf`] holds the exporter's buffer until it is dropped, which is what lets a call release
//! the GIL while it reads or writes the memory: a `bytearray` cannot be resized, nor a
//! `memoryview` released, while an export is held (they raise `BufferError` instead).

use std::ffi::{c_char, c_int, c_void};

use pyo3::exceptions::{PyBufferError, PyTypeError};
use pyo3::ffi::{PyObject, Py_ssize_t};
use pyo3::prelude::*;

/// `Py_buffer`, as in CPython's `Include/pybuffer.h` (3.3 onwards).
#[repr(C)]
struct PyBufferRaw {
    buf: *mut c_void,
    obj: *mut PyObject,
    len: Py_ssize_t,
    itemsize: Py_ssize_t,
    readonly: c_int,
    ndim: c_int,
    format: *mut c_char,
    shape: *mut Py_ssize_t,
    strides: *mut Py_ssize_t,
    suboffsets: *mut Py_ssize_t,
    internal: *mut c_void,
}

extern "C" {
    fn PyObject_GetBuffer(obj: *mut PyObject, view: *mut PyBufferRaw, flags: c_int) -> c_int;
    fn PyBuffer_Release(view: *mut PyBufferRaw);
}

/// `PyBUF_SIMPLE`: one contiguous block of bytes, or the exporter refuses.
const PYBUF_SIMPLE: c_int = 0;
/// `PyBUF_WRITABLE`: … and writable.
const PYBUF_WRITABLE: c_int = 0x0001;

/// A held buffer export: a contiguous block of bytes owned by a Python object.
pub struct Buf {
    view: Box<PyBufferRaw>,
}

// SAFETY: the export pins the memory (see the module notes) and the view is only read after
// creation; `PyBuffer_Release` runs in `Drop` with the GIL held.
unsafe impl Send for Buf {}
unsafe impl Sync for Buf {}

impl Buf {
    /// Borrows `obj`'s bytes for reading (`bytes`, `bytearray`, contiguous `memoryview`, …).
    pub fn readable(obj: &Bound<'_, PyAny>) -> PyResult<Buf> {
        Self::get(obj, PYBUF_SIMPLE)
    }

    /// Borrows `obj`'s bytes for writing (`bytearray`, writable contiguous `memoryview`, …).
    pub fn writable(obj: &Bound<'_, PyAny>) -> PyResult<Buf> {
        Self::get(obj, PYBUF_WRITABLE).map_err(|e| {
            if e.is_instance_of::<PyBufferError>(obj.py())
                || e.is_instance_of::<PyTypeError>(obj.py())
            {
                PyTypeError::new_err(format!(
                    "a writable contiguous bytes-like object is required, not '{}'",
                    obj.get_type()
                        .name()
                        .map(|n| n.to_string())
                        .unwrap_or_default()
                ))
            } else {
                e
            }
        })
    }

    fn get(obj: &Bound<'_, PyAny>, flags: c_int) -> PyResult<Buf> {
        let mut view = Box::new(PyBufferRaw {
            buf: std::ptr::null_mut(),
            obj: std::ptr::null_mut(),
            len: 0,
            itemsize: 0,
            readonly: 0,
            ndim: 0,
            format: std::ptr::null_mut(),
            shape: std::ptr::null_mut(),
            strides: std::ptr::null_mut(),
            suboffsets: std::ptr::null_mut(),
            internal: std::ptr::null_mut(),
        });
        // SAFETY: `obj` is a live object, the GIL is held (we have a `Bound`), and `view`
        // points to writable memory of the right layout.
        let rc = unsafe { PyObject_GetBuffer(obj.as_ptr(), &mut *view, flags) };
        if rc != 0 {
            return Err(PyErr::fetch(obj.py()));
        }
        if view.len < 0 || (view.len > 0 && view.buf.is_null()) {
            // SAFETY: the export succeeded, so it must be released once.
            unsafe { PyBuffer_Release(&mut *view) };
            return Err(PyBufferError::new_err(
                "the object exported an invalid buffer",
            ));
        }
        Ok(Buf { view })
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.view.len as usize
    }

    /// The bytes. Valid while `self` lives; the GIL need not be held.
    pub fn as_slice(&self) -> &[u8] {
        if self.view.len == 0 {
            return &[];
        }
        // SAFETY: a held PyBUF_SIMPLE export is `len` contiguous bytes at `buf`.
        unsafe { std::slice::from_raw_parts(self.view.buf as *const u8, self.len()) }
    }

    /// The bytes, writable (only for a [`Buf::writable`] export). The caller must not let two
    /// threads write through the same export at once; Python code that shares one buffer
    /// between two receiving threads gets unspecified contents, as with the `socket` module.
    #[allow(clippy::mut_from_ref)]
    pub fn as_mut_slice(&self) -> &mut [u8] {
        if self.view.len == 0 || self.view.readonly != 0 {
            return &mut [];
        }
        // SAFETY: a held writable export is `len` contiguous writable bytes at `buf`.
        unsafe { std::slice::from_raw_parts_mut(self.view.buf as *mut u8, self.len()) }
    }
}

impl Drop for Buf {
    fn drop(&mut self) {
        // Releasing touches reference counts: it needs the GIL, which may not be held here.
        Python::attach(|_| {
            // SAFETY: the export is held (created in `get`) and released exactly once.
            unsafe { PyBuffer_Release(&mut *self.view) };
        });
    }
}
