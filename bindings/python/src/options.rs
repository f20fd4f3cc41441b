//! UDT4's socket options as Python values: numbers as module constants (`udt.UDT_MSS` …),
//! values converted to and from [`OptValue`] by the type UDT4 gives each option.

use std::time::Duration;

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyModule, PyString, PyTuple};
use udt::{OptType, OptValue, SockOpt};

use crate::errors::{code, raise};

/// Option numbers beyond UDT4's, as in `udt_c.h`: transport encryption
/// (docs/encryption.md).
pub mod ext {
    /// Write only: the secret (bytes or str); empty turns encryption off.
    pub const SECRET: i64 = 100;
    /// 0 off, 1 preferred, 2 required (the default once a secret is set).
    pub const ENCRYPTION: i64 = 101;
    /// Read only: 1 if the connection runs encrypted.
    pub const ENCRYPTED: i64 = 102;
}

/// Adds every option number (`UDT_MSS` = 0 … `UDT_RCVDATA` = 20, and the encryption options
/// `UDT_SECRET`, `UDT_ENCRYPTION`, `UDT_ENCRYPTED` = 100 … 102) to the module.
pub fn add_constants(m: &Bound<'_, PyModule>) -> PyResult<()> {
    for opt in SockOpt::ALL {
        m.add(opt.udt4_name(), opt.udt4_number())?;
    }
    m.add("UDT_SECRET", ext::SECRET)?;
    m.add("UDT_ENCRYPTION", ext::ENCRYPTION)?;
    m.add("UDT_ENCRYPTED", ext::ENCRYPTED)?;
    Ok(())
}

/// True for the encryption options, which are not in UDT4's table.
pub fn is_encryption(n: i64) -> bool {
    (ext::SECRET..=ext::ENCRYPTED).contains(&n)
}

/// Sets encryption option `n` of `s` to `v`.
pub fn set_encryption(
    py: Python<'_>,
    s: &udt::BsdSocket,
    n: i64,
    v: &Bound<'_, PyAny>,
) -> PyResult<udt::Result<()>> {
    Ok(match n {
        ext::SECRET => {
            let secret: Vec<u8> = if let Ok(t) = v.cast::<PyString>() {
                t.extract::<String>()?.into_bytes()
            } else {
                v.extract::<Vec<u8>>()
                    .map_err(|_| raise(py, code::INVALID_PARAM, "UDT_SECRET takes bytes or str"))?
            };
            py.detach(|| s.set_encryption_secret(&secret))
        }
        ext::ENCRYPTION => {
            let code = v
                .extract::<i64>()
                .map_err(|_| raise(py, code::INVALID_PARAM, "UDT_ENCRYPTION takes an int"))?;
            s.set_encryption_mode_code(code)
        }
        _ => Err(udt::Error::InvalidOperation("UDT_ENCRYPTED is read only")),
    })
}

/// Reads encryption option `n` of `s`.
pub fn get_encryption(s: &udt::BsdSocket, n: i64) -> udt::Result<i64> {
    match n {
        ext::ENCRYPTION => Ok(i64::from(s.encryption_mode_code())),
        ext::ENCRYPTED => Ok(i64::from(s.is_encrypted())),
        _ => Err(udt::Error::InvalidOperation("UDT_SECRET is write only")),
    }
}

/// The option numbered `n`, or `udt.error` 5003.
pub fn option(py: Python<'_>, n: i64) -> PyResult<SockOpt> {
    i32::try_from(n)
        .ok()
        .and_then(SockOpt::from_udt4)
        .ok_or_else(|| {
            raise(
                py,
                code::INVALID_PARAM,
                &format!("unknown socket option {n}"),
            )
        })
}

fn bad_value(py: Python<'_>, opt: SockOpt, want: &str) -> PyErr {
    raise(
        py,
        code::INVALID_PARAM,
        &format!("{} takes {want}", opt.udt4_name()),
    )
}

/// An integer, not a bool where UDT4 takes an int (a bool is accepted: Python's `socket` takes
/// `True` for `1`).
fn int_value(py: Python<'_>, opt: SockOpt, v: &Bound<'_, PyAny>) -> PyResult<i64> {
    v.extract::<i64>().map_err(|_| bad_value(py, opt, "an int"))
}

/// The Python value `v` as option `opt`'s value.
pub fn to_value(py: Python<'_>, opt: SockOpt, v: &Bound<'_, PyAny>) -> PyResult<OptValue> {
    Ok(match opt.value_type() {
        OptType::Bool => {
            if let Ok(b) = v.cast::<PyBool>() {
                OptValue::Bool(b.is_true())
            } else {
                OptValue::Bool(int_value(py, opt, v)? != 0)
            }
        }
        OptType::Int => {
            let i = int_value(py, opt, v)?;
            OptValue::Int(i32::try_from(i).map_err(|_| bad_value(py, opt, "a 32-bit int"))?)
        }
        OptType::Int64 => OptValue::Int64(int_value(py, opt, v)?),
        OptType::Linger => OptValue::Linger(linger(py, opt, v)?),
        OptType::CongestionControl => {
            let name = v
                .cast::<PyString>()
                .map_err(|_| bad_value(py, opt, "an algorithm's name (str), e.g. \"bic\""))?
                .extract::<String>()?;
            let factory = udt::cc::by_name(&name).ok_or_else(|| {
                let known: Vec<&str> = udt::cc::names().iter().map(|(n, _)| *n).collect();
                raise(
                    py,
                    code::INVALID_PARAM,
                    &format!(
                        "unknown congestion control {name:?}; known: {}",
                        known.join(", ")
                    ),
                )
            })?;
            OptValue::CongestionControl(factory)
        }
    })
}

/// `UDT_LINGER` from `None`/`False` (off), seconds (int or float ≥ 0), or UDT4's
/// `struct linger` as a tuple `(l_onoff, l_linger)`.
fn linger(py: Python<'_>, opt: SockOpt, v: &Bound<'_, PyAny>) -> PyResult<Option<Duration>> {
    let want = "None, seconds, or (l_onoff, l_linger)";
    if v.is_none() {
        return Ok(None);
    }
    if let Ok(b) = v.cast::<PyBool>() {
        if !b.is_true() {
            return Ok(None);
        }
        return Err(bad_value(py, opt, want));
    }
    if let Ok(t) = v.cast::<PyTuple>() {
        let (on, secs): (i64, i64) = t.extract().map_err(|_| bad_value(py, opt, want))?;
        if on == 0 {
            return Ok(None);
        }
        return secs_to_duration(secs as f64)
            .ok_or_else(|| bad_value(py, opt, want))
            .map(Some);
    }
    let secs: f64 = v.extract().map_err(|_| bad_value(py, opt, want))?;
    secs_to_duration(secs)
        .ok_or_else(|| bad_value(py, opt, want))
        .map(Some)
}

fn secs_to_duration(secs: f64) -> Option<Duration> {
    (secs.is_finite() && (0.0..=1e9).contains(&secs)).then(|| Duration::from_secs_f64(secs))
}

/// Option value `v` as a Python object: int, bool, `(l_onoff, l_linger)` or the algorithm's
/// name.
pub fn from_value(py: Python<'_>, v: OptValue) -> PyResult<Py<PyAny>> {
    Ok(match v {
        OptValue::Int(i) => i.into_pyobject(py)?.into_any().unbind(),
        OptValue::Int64(i) => i.into_pyobject(py)?.into_any().unbind(),
        OptValue::Bool(b) => PyBool::new(py, b).to_owned().into_any().unbind(),
        OptValue::Linger(None) => (0, 0).into_pyobject(py)?.into_any().unbind(),
        OptValue::Linger(Some(d)) => (1, d.as_secs().min(i32::MAX as u64) as i32)
            .into_pyobject(py)?
            .into_any()
            .unbind(),
        OptValue::CongestionControl(f) => f.name().into_pyobject(py)?.into_any().unbind(),
    })
}

/// Splits `setsockopt`'s arguments: `(optname, value)` as in UDT4's Python wrappers or
/// `(level, optname, value)` as in Python's `socket` (the level is ignored, as UDT4 does).
pub fn split_args<'py>(
    args: &Bound<'py, PyTuple>,
    want: usize,
) -> PyResult<Vec<Bound<'py, PyAny>>> {
    let items: Vec<_> = args.iter().collect();
    match items.len() {
        n if n == want => Ok(items),
        n if n == want + 1 => Ok(items[1..].to_vec()),
        n => Err(PyTypeError::new_err(format!(
            "expected {want} or {} arguments, got {n}",
            want + 1
        ))),
    }
}
