//! Socket addresses between Python and Rust, as Python's `socket` module spells them:
//! `(host, port)` for `AF_INET`, `(host, port[, flowinfo[, scope_id]])` for `AF_INET6`.
//! Host names are resolved (without the GIL); `""` means any address.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV6, ToSocketAddrs};

use pyo3::prelude::*;
use pyo3::types::{PyString, PyTuple};
use udt::Family;

use crate::errors::{code, raise_as};

/// A bad address: a `udt.error` (5003), and the `TypeError`/`ValueError`/`OverflowError`
/// Python's `socket` raises for the same mistake.
fn bad(py: Python<'_>, msg: impl AsRef<str>) -> PyErr {
    raise_as(py, "addresserror", code::INVALID_PARAM, msg.as_ref(), None)
}

/// The `(host, port, …)` tuple `obj` as a socket address of `family`.
pub fn parse(obj: &Bound<'_, PyAny>, family: Family) -> PyResult<SocketAddr> {
    let py = obj.py();
    let fam = match family {
        Family::V4 => "AF_INET",
        Family::V6 => "AF_INET6",
    };
    let tuple = obj.cast::<PyTuple>().map_err(|_| {
        bad(
            py,
            format!(
                "{fam} address must be a tuple (host, port), not {}",
                obj.get_type()
                    .name()
                    .map(|n| n.to_string())
                    .unwrap_or_default()
            ),
        )
    })?;
    let n = tuple.len();
    let ok_len = match family {
        Family::V4 => n == 2,
        Family::V6 => (2..=4).contains(&n),
    };
    if !ok_len {
        return Err(bad(
            py,
            format!(
                "{fam} address must be (host, port){}, got a tuple of {n}",
                if family == Family::V6 {
                    "[, flowinfo[, scope_id]]"
                } else {
                    ""
                }
            ),
        ));
    }
    let host_obj = tuple.get_item(0)?;
    let host: String = if let Ok(s) = host_obj.cast::<PyString>() {
        s.extract::<String>()?
    } else if let Ok(b) = host_obj.extract::<Vec<u8>>() {
        String::from_utf8(b).map_err(|_| bad(py, "host name is not valid UTF-8"))?
    } else {
        return Err(bad(py, "host must be a str"));
    };
    let port = int_in::<u16>(&tuple.get_item(1)?, "port must be 0-65535")?;
    let flowinfo = if n > 2 {
        int_in::<u32>(&tuple.get_item(2)?, "flowinfo must be 0-1048575")?
    } else {
        0
    };
    if flowinfo > 0xfffff {
        return Err(bad(py, "flowinfo must be 0-1048575"));
    }
    let scope_id = if n > 3 {
        int_in::<u32>(&tuple.get_item(3)?, "scope_id out of range")?
    } else {
        0
    };
    if host.contains('\0') {
        return Err(bad(py, "host name contains a NUL byte"));
    }
    let ip = match host.as_str() {
        "" => match family {
            Family::V4 => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
            Family::V6 => IpAddr::V6(Ipv6Addr::UNSPECIFIED),
        },
        "<broadcast>" if family == Family::V4 => IpAddr::V4(Ipv4Addr::BROADCAST),
        h => match h.parse::<IpAddr>() {
            Ok(ip) => ip,
            Err(_) => resolve(py, h, port, family)?,
        },
    };
    let addr = match (family, ip) {
        (Family::V4, IpAddr::V4(_)) => SocketAddr::new(ip, port),
        (Family::V6, IpAddr::V6(v6)) => {
            SocketAddr::V6(SocketAddrV6::new(v6, port, flowinfo, scope_id))
        }
        (Family::V6, IpAddr::V4(v4)) => SocketAddr::V6(SocketAddrV6::new(
            v4.to_ipv6_mapped(),
            port,
            flowinfo,
            scope_id,
        )),
        (Family::V4, IpAddr::V6(_)) => {
            return Err(bad(
                py,
                format!("{host:?} is an IPv6 address; this is an AF_INET socket"),
            ))
        }
    };
    Ok(addr)
}

/// An integer argument in `T`'s range, or the address error `msg`.
fn int_in<'py, T: TryFrom<i128>>(obj: &Bound<'py, PyAny>, msg: &str) -> PyResult<T> {
    let py = obj.py();
    if obj.is_instance_of::<pyo3::types::PyBool>() {
        return Err(bad(py, msg));
    }
    let v: i128 = obj
        .extract()
        .map_err(|_| bad(py, format!("{msg} (an int is required)")))?;
    T::try_from(v).map_err(|_| bad(py, msg))
}

/// Resolves `host` to an address of `family` (the first the resolver gives), without the GIL.
fn resolve(py: Python<'_>, host: &str, port: u16, family: Family) -> PyResult<IpAddr> {
    let found = py.detach(|| {
        (host, port)
            .to_socket_addrs()
            .map(|it| it.collect::<Vec<_>>())
    });
    let addrs = found.map_err(|e| {
        raise_as(
            py,
            "gaierror",
            code::INVALID_PARAM,
            &format!("cannot resolve {host:?}: {e}"),
            e.raw_os_error(),
        )
    })?;
    addrs
        .iter()
        .map(|a| a.ip())
        .find(|ip| match family {
            Family::V4 => ip.is_ipv4(),
            Family::V6 => ip.is_ipv6(),
        })
        .ok_or_else(|| {
            raise_as(
                py,
                "gaierror",
                code::INVALID_PARAM,
                &format!("{host:?} has no address of this socket's family"),
                None,
            )
        })
}

/// `addr` as Python's `socket` module gives it.
pub fn to_py<'py>(py: Python<'py>, addr: SocketAddr) -> PyResult<Bound<'py, PyTuple>> {
    match addr {
        SocketAddr::V4(a) => PyTuple::new(
            py,
            [
                a.ip().to_string().into_pyobject(py)?.into_any(),
                a.port().into_pyobject(py)?.into_any(),
            ],
        ),
        SocketAddr::V6(a) => {
            (a.ip().to_string(), a.port(), a.flowinfo(), a.scope_id()).into_pyobject(py)
        }
    }
}
