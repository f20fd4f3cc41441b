//! Entry points of the socket lifecycle (`net.udt.Native`): create, bind, listen, accept,
//! connect, close, addresses, state.

use std::time::{Duration, Instant};

use jni::objects::{JByteArray, JClass};
use jni::sys::{jboolean, jbyteArray, jint, jlong, JNI_TRUE};
use jni::JNIEnv;
use udt::{BsdSocket, Error, Family, Readiness, SocketKind};

use crate::addr;
use crate::entry::{run, Res};
use crate::table;

/// Java's timeouts in milliseconds: 0 or less means none (`java.net.Socket` semantics).
fn java_timeout(ms: jint) -> Option<Duration> {
    u64::try_from(ms)
        .ok()
        .filter(|&ms| ms > 0)
        .map(Duration::from_millis)
}

/// `long create(boolean message, boolean ipv6)`: a new socket (UDT4's `socket`).
#[no_mangle]
pub extern "system" fn Java_net_udt_Native_create<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    message: jboolean,
    ipv6: jboolean,
) -> jlong {
    run(&mut env, 0, |_| {
        let kind = if message == JNI_TRUE {
            SocketKind::Message
        } else {
            SocketKind::Stream
        };
        let family = if ipv6 == JNI_TRUE {
            Family::V6
        } else {
            Family::V4
        };
        Ok(table::insert(BsdSocket::new(family, kind)))
    })
}

/// `void bind(long id, byte[] addr, int port)`.
#[no_mangle]
pub extern "system" fn Java_net_udt_Native_bind<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    id: jlong,
    raw: JByteArray<'l>,
    port: jint,
) {
    run(&mut env, (), |env| {
        let at = addr::decode(env, &raw, port)?;
        Ok(table::get(id)?.bind(at)?)
    })
}

/// `void listen(long id, int backlog)`; a backlog below 1 means 1.
#[no_mangle]
pub extern "system" fn Java_net_udt_Native_listen<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    id: jlong,
    backlog: jint,
) {
    run(&mut env, (), |_| {
        let backlog = usize::try_from(backlog).unwrap_or(1).max(1);
        Ok(table::get(id)?.listen(backlog)?)
    })
}

/// `long accept(long id, int timeoutMs)`: the accepted socket's id. With a timeout (> 0) it
/// waits for a pending connection at most that long (6003 after), taking it without waiting
/// again if another thread was faster.
#[no_mangle]
pub extern "system" fn Java_net_udt_Native_accept<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    id: jlong,
    timeout_ms: jint,
) -> jlong {
    run(&mut env, 0, |_| {
        let sock = table::get(id)?;
        let accepted = match java_timeout(timeout_ms) {
            None => sock.accept()?.0,
            Some(t) => accept_within(&sock, t)?,
        };
        Ok(table::insert(accepted))
    })
}

fn accept_within(sock: &BsdSocket, timeout: Duration) -> Res<BsdSocket> {
    let deadline = Instant::now() + timeout;
    loop {
        // Trying first gives a socket that does not listen its own error (5006).
        match sock.try_accept() {
            Ok((s, _)) => return Ok(s),
            Err(Error::WouldBlock) => {}
            Err(e) => return Err(e.into()),
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() || sock.wait(Readiness::READ, Some(left))?.is_empty() {
            return Err(Error::Timeout.into());
        }
    }
}

/// `void connect(long id, byte[] addr, int port, int timeoutMs)`.
#[no_mangle]
pub extern "system" fn Java_net_udt_Native_connect<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    id: jlong,
    raw: JByteArray<'l>,
    port: jint,
    timeout_ms: jint,
) {
    run(&mut env, (), |env| {
        let to = addr::decode(env, &raw, port)?;
        if to.port() == 0 {
            // No peer can listen there; without this the handshake would time out silently.
            return Err(Error::InvalidOption("cannot connect to port 0").into());
        }
        Ok(table::get(id)?.connect_timeout(to, java_timeout(timeout_ms))?)
    })
}

/// `void close(long id)`: idempotent; the id is dead from now on. Waits for queued data as
/// `UDT_LINGER` says (in blocking send mode), with the table already released.
#[no_mangle]
pub extern "system" fn Java_net_udt_Native_close<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    id: jlong,
) {
    run(&mut env, (), |_| {
        if let Some(sock) = table::remove(id) {
            match sock.close() {
                // Closed meanwhile by a racing call: the goal is reached.
                Ok(()) | Err(Error::Closed) => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(())
    })
}

/// `byte[] localAddress(long id)`: address bytes then the port, big-endian.
#[no_mangle]
pub extern "system" fn Java_net_udt_Native_localAddress<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    id: jlong,
) -> jbyteArray {
    run(&mut env, std::ptr::null_mut(), |env| {
        let a = table::get(id)?.local_addr()?;
        addr::encode(env, a)
    })
}

/// `byte[] peerAddress(long id)`: address bytes then the port, big-endian.
#[no_mangle]
pub extern "system" fn Java_net_udt_Native_peerAddress<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    id: jlong,
) -> jbyteArray {
    run(&mut env, std::ptr::null_mut(), |env| {
        let a = table::get(id)?.peer_addr()?;
        addr::encode(env, a)
    })
}

/// `int status(long id)`: UDT4's `UDTSTATUS` number; 9 `NONEXIST` for a dead id.
#[no_mangle]
pub extern "system" fn Java_net_udt_Native_status<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    id: jlong,
) -> jint {
    run(&mut env, 0, |_| {
        Ok(match table::get(id) {
            Ok(s) => s.status() as jint,
            Err(_) => udt::Udt4Status::NonExist as jint,
        })
    })
}
