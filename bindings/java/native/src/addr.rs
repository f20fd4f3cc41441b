//! Socket addresses across JNI: Java passes an `InetAddress`'s raw bytes and a port, and gets
//! back the raw bytes followed by the port (two bytes, big-endian). Raw bytes need no parsing
//! and no name lookup on either side.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use jni::objects::JByteArray;
use jni::sys::jbyteArray;
use jni::JNIEnv;

use crate::entry::{Fail, Res};
use udt::Error;

/// The address named by `raw` (4 or 16 bytes) and `port` (0…65535).
pub(crate) fn decode(env: &JNIEnv<'_>, raw: &JByteArray<'_>, port: i32) -> Res<SocketAddr> {
    if raw.is_null() {
        return Err(Fail::Null("address bytes are null"));
    }
    let port = u16::try_from(port).map_err(|_| Error::InvalidOption("port out of range"))?;
    let bytes = env.convert_byte_array(raw)?;
    let ip = if let Ok(v4) = <[u8; 4]>::try_from(bytes.as_slice()) {
        IpAddr::V4(Ipv4Addr::from(v4))
    } else if let Ok(v6) = <[u8; 16]>::try_from(bytes.as_slice()) {
        IpAddr::V6(Ipv6Addr::from(v6))
    } else {
        return Err(Error::InvalidOption("an IP address has 4 or 16 bytes").into());
    };
    Ok(SocketAddr::new(ip, port))
}

/// `addr` as address bytes followed by the port, big-endian.
pub(crate) fn encode(env: &JNIEnv<'_>, addr: SocketAddr) -> Res<jbyteArray> {
    let mut out = match addr.ip() {
        IpAddr::V4(v4) => v4.octets().to_vec(),
        IpAddr::V6(v6) => v6.octets().to_vec(),
    };
    out.extend_from_slice(&addr.port().to_be_bytes());
    Ok(env.byte_array_from_slice(&out)?.into_raw())
}
