//! `udt_setsockopt`/`udt_getsockopt`: UDT4's option numbers and C value types, converted to
//! and from [`udt::OptValue`]; the rules of which option may change when live in
//! [`udt::BsdSocket::set_option`].

use std::os::raw::{c_int, c_void};
use std::time::Duration;

use udt::{OptType, OptValue, SockOpt};

use crate::call::{guarded, len_arg, FfiResult};
use crate::handles;
use crate::last_error::FfiError;

/// Option numbers beyond UDT4's (`udt_opt` in `udt_c.h`): transport encryption.
mod ext {
    use std::os::raw::c_int;
    pub const SECRET: c_int = 100;
    pub const ENCRYPTION: c_int = 101;
    pub const ENCRYPTED: c_int = 102;
}

/// Sets one of the encryption options (`ext`); `optval` has `len` readable bytes.
///
/// # Safety
/// `optval` must point to `optlen` readable bytes (or be null with `optlen` 0).
unsafe fn set_encryption_option(
    s: &udt::BsdSocket,
    optname: c_int,
    optval: *const c_void,
    optlen: c_int,
) -> FfiResult<()> {
    let len = len_arg(optlen, "option length")?;
    if optval.is_null() && len > 0 {
        return Err(FfiError::param("option value is null"));
    }
    let bytes = if len == 0 {
        &[][..]
    } else {
        // SAFETY: `optval` is non-null with `len` readable bytes.
        unsafe { std::slice::from_raw_parts(optval as *const u8, len) }
    };
    match optname {
        ext::SECRET => s.set_encryption_secret(bytes)?,
        ext::ENCRYPTION => {
            let v: [u8; 4] = bytes
                .try_into()
                .map_err(|_| FfiError::param("UDT_ENCRYPTION takes an int (4 bytes)"))?;
            s.set_encryption_mode_code(i64::from(i32::from_ne_bytes(v)))?;
        }
        _ => {
            return Err(FfiError::new(
                crate::consts::udt_errno::UDT_EINVOP,
                "UDT_ENCRYPTED is read only",
            ))
        }
    }
    Ok(())
}

/// The value of one of the encryption options as an `int`.
fn encryption_option(s: &udt::BsdSocket, optname: c_int) -> FfiResult<i32> {
    match optname {
        ext::ENCRYPTION => Ok(s.encryption_mode_code()),
        ext::ENCRYPTED => Ok(i32::from(s.is_encrypted())),
        _ => Err(FfiError::new(
            crate::consts::udt_errno::UDT_EINVOP,
            "UDT_SECRET is write only",
        )),
    }
}

/// UDT4's `linger` value: `struct linger { int l_onoff; int l_linger; }`, seconds.
fn linger_from(onoff: c_int, secs: c_int) -> Option<Duration> {
    (onoff != 0).then(|| Duration::from_secs(u64::try_from(secs.max(0)).unwrap_or(0)))
}

/// The value at `optval` (`optlen` bytes) as the type `opt` takes.
///
/// # Safety
/// `optval` must point to `optlen` readable bytes.
unsafe fn read_value(opt: SockOpt, optval: *const c_void, optlen: c_int) -> FfiResult<OptValue> {
    let len = len_arg(optlen, "option length")?;
    if optval.is_null() {
        return Err(FfiError::param("option value is null"));
    }
    // SAFETY (for every read below): `optval` has `len` readable bytes, and each branch reads
    // no more than it checked `len` for; unaligned reads since C may pass any buffer.
    let int = |n: usize| -> FfiResult<i64> {
        match n {
            1 => Ok(i64::from(unsafe { *(optval as *const u8) })),
            4 => Ok(i64::from(unsafe {
                std::ptr::read_unaligned(optval as *const i32)
            })),
            8 => Ok(unsafe { std::ptr::read_unaligned(optval as *const i64) }),
            _ => Err(FfiError::param(format!(
                "option {} takes 1, 4 or 8 bytes, not {n}",
                opt.udt4_name()
            ))),
        }
    };
    Ok(match opt.value_type() {
        OptType::Bool => {
            // C++ `bool` is one byte; C callers often pass an `int`.
            if len != 1 && len != 4 {
                return Err(FfiError::param(format!(
                    "{} takes a bool (1 byte) or an int (4 bytes)",
                    opt.udt4_name()
                )));
            }
            OptValue::Bool(int(len)? != 0)
        }
        OptType::Int => {
            if len < 4 {
                return Err(FfiError::param(format!(
                    "{} takes an int (4 bytes)",
                    opt.udt4_name()
                )));
            }
            OptValue::Int(int(4)? as i32)
        }
        OptType::Int64 => match len {
            4 | 8 => OptValue::Int64(int(len)?),
            _ => {
                return Err(FfiError::param(format!(
                    "{} takes an int64_t (8 bytes) or an int",
                    opt.udt4_name()
                )))
            }
        },
        OptType::Linger => {
            if len < std::mem::size_of::<libc::linger>() {
                return Err(FfiError::param("UDT_LINGER takes a struct linger"));
            }
            // SAFETY: `len` covers a struct linger.
            let l = unsafe { std::ptr::read_unaligned(optval as *const libc::linger) };
            OptValue::Linger(linger_from(l.l_onoff, l.l_linger))
        }
        OptType::CongestionControl => {
            // SAFETY: `optval` has `len` readable bytes.
            let bytes = unsafe { std::slice::from_raw_parts(optval as *const u8, len) };
            let name = bytes.split(|&b| b == 0).next().unwrap_or_default();
            let name = std::str::from_utf8(name)
                .map_err(|_| FfiError::param("congestion control name is not UTF-8"))?;
            let f = udt_proto::cc::by_name(name)
                .ok_or_else(|| FfiError::param(format!("unknown congestion control {name:?}")))?;
            OptValue::CongestionControl(f)
        }
    })
}

/// Sets option `optname` (`udt_opt`) of `u` from the `optlen` bytes at `optval`: an `int`, a
/// `bool` (one byte, or an `int`), an `int64_t` for `UDT_MAXBW` (or an `int`), a
/// `struct linger` for `UDT_LINGER`, and for `UDT_CC` the algorithm's name (`"udt"`,
/// `"bic"`, `"ctcp"`, …; up to a NUL or `optlen` bytes). `level` is ignored, as in UDT4.
/// Returns 0 or `UDT_ERROR` (`UDT_EINVPARAM` for a bad value or length, `UDT_EBOUNDSOCK` /
/// `UDT_ECONNSOCK` when the socket is past the point where the option may change,
/// `UDT_EINVOP` for read-only options).
///
/// # Safety
/// `optval` must point to `optlen` readable bytes.
#[no_mangle]
pub unsafe extern "C" fn udt_setsockopt(
    u: c_int,
    level: c_int,
    optname: c_int,
    optval: *const c_void,
    optlen: c_int,
) -> c_int {
    let _ = level;
    guarded(|| {
        let s = handles::socket(u)?;
        if (ext::SECRET..=ext::ENCRYPTED).contains(&optname) {
            // SAFETY: forwarded contract.
            unsafe { set_encryption_option(&s, optname, optval, optlen) }?;
            return Ok(0);
        }
        let opt = SockOpt::from_udt4(optname)
            .ok_or_else(|| FfiError::param(format!("unknown option {optname}")))?;
        if opt.is_read_only() {
            s.set_option(opt, OptValue::Int(0))?;
        }
        // SAFETY: forwarded contract.
        let v = unsafe { read_value(opt, optval, optlen) }?;
        s.set_option(opt, v)?;
        Ok(0)
    })
}

/// Reads option `optname` of `u` into `optval` (room for `*optlen` bytes) and sets `*optlen`
/// to the bytes written: `int` (4), `bool` (1, as UDT4's C++ `bool`), `int64_t` (8),
/// `struct linger` (8), and for `UDT_CC` the algorithm's name with a NUL (cut to fit).
/// Returns 0 or `UDT_ERROR` (`UDT_EINVPARAM` if the buffer is too small).
///
/// # Safety
/// `optval` and `optlen` must be writable; `optval` for `*optlen` bytes.
#[no_mangle]
pub unsafe extern "C" fn udt_getsockopt(
    u: c_int,
    level: c_int,
    optname: c_int,
    optval: *mut c_void,
    optlen: *mut c_int,
) -> c_int {
    let _ = level;
    guarded(|| {
        let s = handles::socket(u)?;
        if optval.is_null() || optlen.is_null() {
            return Err(FfiError::param("option buffer or its length is null"));
        }
        // SAFETY: `optlen` is non-null and readable per the contract.
        let cap = len_arg(unsafe { std::ptr::read_unaligned(optlen) }, "option length")?;
        let value = if (ext::SECRET..=ext::ENCRYPTED).contains(&optname) {
            OptValue::Int(encryption_option(&s, optname)?)
        } else {
            let opt = SockOpt::from_udt4(optname)
                .ok_or_else(|| FfiError::param(format!("unknown option {optname}")))?;
            s.option(opt)?
        };
        let bytes: Vec<u8> = match value {
            OptValue::Int(v) => v.to_ne_bytes().to_vec(),
            OptValue::Bool(b) => vec![u8::from(b)],
            OptValue::Int64(v) => v.to_ne_bytes().to_vec(),
            OptValue::Linger(l) => {
                let (on, secs) = match l {
                    Some(d) => (1, c_int::try_from(d.as_secs()).unwrap_or(c_int::MAX)),
                    None => (0, 0),
                };
                let lg = libc::linger {
                    l_onoff: on,
                    l_linger: secs,
                };
                let mut v = lg.l_onoff.to_ne_bytes().to_vec();
                v.extend_from_slice(&lg.l_linger.to_ne_bytes());
                v
            }
            OptValue::CongestionControl(f) => {
                let mut v = f.name().as_bytes().to_vec();
                v.truncate(cap.saturating_sub(1));
                v.push(0);
                v
            }
        };
        if bytes.len() > cap {
            return Err(FfiError::param(format!(
                "option {optname} needs {} bytes, the buffer has {cap}",
                bytes.len()
            )));
        }
        // SAFETY: `optval` has room for `cap` ≥ `bytes.len()` bytes.
        unsafe {
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), optval as *mut u8, bytes.len());
            std::ptr::write_unaligned(optlen, bytes.len() as c_int);
        }
        Ok(0)
    })
}
