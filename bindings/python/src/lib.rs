//! `udt._udt`, the extension module under the `udt` Python package: UDT sockets with the
//! feel of Python's `socket` module, as a thin layer over `udt::BsdSocket`. The Python half
//! (`python/udt/`) adds the exception classes, `create_connection`/`create_server` and
//! `udt.asyncio`.

mod addr;
mod blocking;
mod buffer;
mod errors;
mod file;
mod options;
mod perfmon;
mod poller;
mod socket;

use pyo3::prelude::*;

use crate::socket::{parse_timeout, AF_INET, AF_INET6, SOCK_DGRAM, SOCK_STREAM};

/// `getdefaulttimeout()`: the timeout new sockets get (`None`: blocking).
#[pyfunction]
fn getdefaulttimeout() -> Option<f64> {
    socket::default_timeout().map(|d| d.as_secs_f64())
}

/// `setdefaulttimeout(timeout)`: the timeout new and accepted sockets get.
#[pyfunction]
fn setdefaulttimeout(timeout: Option<f64>) -> PyResult<()> {
    socket::set_default_timeout(parse_timeout(timeout)?);
    Ok(())
}

/// `congestion_controls() -> [(name, description), …]`: the algorithms `UDT_CC` takes by name.
#[pyfunction]
fn congestion_controls() -> Vec<(&'static str, &'static str)> {
    udt::cc::names().to_vec()
}

#[pymodule]
fn _udt(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<socket::Socket>()?;
    m.add_class::<perfmon::PerfMon>()?;
    m.add_class::<poller::Poller>()?;
    m.add_function(wrap_pyfunction!(getdefaulttimeout, m)?)?;
    m.add_function(wrap_pyfunction!(setdefaulttimeout, m)?)?;
    m.add_function(wrap_pyfunction!(congestion_controls, m)?)?;
    m.add("AF_INET", AF_INET)?;
    m.add("AF_INET6", AF_INET6)?;
    m.add("SOCK_STREAM", SOCK_STREAM)?;
    m.add("SOCK_DGRAM", SOCK_DGRAM)?;
    m.add("UDT_EPOLL_IN", poller::EPOLL_IN)?;
    m.add("UDT_EPOLL_OUT", poller::EPOLL_OUT)?;
    m.add("UDT_EPOLL_ERR", poller::EPOLL_ERR)?;
    options::add_constants(m)?;
    for (name, v) in [
        ("INIT", udt::Udt4Status::Init),
        ("OPENED", udt::Udt4Status::Opened),
        ("LISTENING", udt::Udt4Status::Listening),
        ("CONNECTING", udt::Udt4Status::Connecting),
        ("CONNECTED", udt::Udt4Status::Connected),
        ("BROKEN", udt::Udt4Status::Broken),
        ("CLOSING", udt::Udt4Status::Closing),
        ("CLOSED", udt::Udt4Status::Closed),
        ("NONEXIST", udt::Udt4Status::NonExist),
    ] {
        m.add(name, v as i32)?;
    }
    Ok(())
}
