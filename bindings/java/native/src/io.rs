//! Entry points that move data (`net.udt.Native`): stream bytes, messages, files.

use std::fs::{File, OpenOptions};

use jni::objects::{JByteArray, JClass, JString};
use jni::sys::{jboolean, jint, jlong, JNI_TRUE};
use jni::JNIEnv;
use udt::Error;

use crate::buffers::{self, STREAM_CHUNK};
use crate::entry::{run, Fail, Res};
use crate::table;

/// `int send(long id, byte[] buf, int off, int len)`: bytes queued (at most 4 MiB per
/// call; the Java stream loops), as UDT4's `send`.
#[no_mangle]
pub extern "system" fn Java_net_udt_Native_send<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    id: jlong,
    buf: JByteArray<'l>,
    off: jint,
    len: jint,
) -> jint {
    run(&mut env, 0, |env| {
        let (off, len) = buffers::range(env, &buf, off, len)?;
        let sock = table::get(id)?;
        let n = len.min(STREAM_CHUNK);
        buffers::with_scratch(n, |scratch| {
            buffers::read_from(env, &buf, off, scratch)?;
            Ok(sock.send(scratch)? as jint)
        })
    })
}

/// `int recv(long id, byte[] buf, int off, int len)`: bytes received, -1 at the end of the
/// stream (Java's convention; UDT4 returns 0 there).
#[no_mangle]
pub extern "system" fn Java_net_udt_Native_recv<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    id: jlong,
    buf: JByteArray<'l>,
    off: jint,
    len: jint,
) -> jint {
    run(&mut env, 0, |env| {
        let (off, len) = buffers::range(env, &buf, off, len)?;
        let sock = table::get(id)?;
        if len == 0 {
            return Ok(0);
        }
        let n = len.min(STREAM_CHUNK);
        buffers::with_scratch(n, |scratch| {
            let got = sock.recv(scratch)?;
            if got == 0 {
                return Ok(-1);
            }
            buffers::write_to(env, &buf, off, &scratch[..got])?;
            Ok(got as jint)
        })
    })
}

/// `int sendMessage(long id, byte[] buf, int off, int len, int ttlMs, boolean inOrder)`:
/// the message's length, as UDT4's `sendmsg` (`ttlMs` < 0: no time limit).
#[no_mangle]
pub extern "system" fn Java_net_udt_Native_sendMessage<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    id: jlong,
    buf: JByteArray<'l>,
    off: jint,
    len: jint,
    ttl_ms: jint,
    in_order: jboolean,
) -> jint {
    run(&mut env, 0, |env| {
        let (off, len) = buffers::range(env, &buf, off, len)?;
        let sock = table::get(id)?;
        buffers::with_scratch(len, |scratch| {
            buffers::read_from(env, &buf, off, scratch)?;
            Ok(sock.send_msg(scratch, ttl_ms, in_order == JNI_TRUE)? as jint)
        })
    })
}

/// `int receiveMessage(long id, byte[] buf, int off, int len)`: bytes copied of the next
/// message (a longer message is cut, the rest discarded, as UDT4's `recvmsg`). Once the
/// connection has ended and no message is left this fails with 2001, as UDT4's does.
#[no_mangle]
pub extern "system" fn Java_net_udt_Native_receiveMessage<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    id: jlong,
    buf: JByteArray<'l>,
    off: jint,
    len: jint,
) -> jint {
    run(&mut env, 0, |env| {
        let (off, len) = buffers::range(env, &buf, off, len)?;
        let sock = table::get(id)?;
        buffers::with_scratch(len, |scratch| {
            let read = sock.recv_msg(scratch)?;
            buffers::write_to(env, &buf, off, &scratch[..read.copied])?;
            Ok(read.copied as jint)
        })
    })
}

/// The path in a Java string, as an OS path.
fn path(env: &mut JNIEnv<'_>, s: &JString<'_>) -> Res<String> {
    if s.is_null() {
        return Err(Fail::Null("path is null"));
    }
    Ok(env.get_string(s)?.into())
}

fn offsets(offset: jlong, size: jlong) -> Res<(u64, u64)> {
    match (u64::try_from(offset), u64::try_from(size)) {
        (Ok(o), Ok(s)) => Ok((o, s)),
        _ => Err(Error::InvalidOption("file offset and size must not be negative").into()),
    }
}

/// `long sendFile(long id, String path, long offset, long size)`: bytes sent (UDT4's
/// `sendfile`); a file that cannot be opened is 4000 `EFILE`.
#[no_mangle]
pub extern "system" fn Java_net_udt_Native_sendFile<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    id: jlong,
    jpath: JString<'l>,
    offset: jlong,
    size: jlong,
) -> jlong {
    run(&mut env, 0, |env| {
        let (offset, size) = offsets(offset, size)?;
        let p = path(env, &jpath)?;
        let sock = table::get(id)?;
        let file = File::open(&p).map_err(Error::File)?;
        Ok(sock.sendfile(&file, offset, size)? as jlong)
    })
}

/// `long receiveFile(long id, String path, long offset, long size)`: bytes written at
/// `offset` (UDT4's `recvfile`); the file is created if missing and not truncated.
#[no_mangle]
pub extern "system" fn Java_net_udt_Native_receiveFile<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    id: jlong,
    jpath: JString<'l>,
    offset: jlong,
    size: jlong,
) -> jlong {
    run(&mut env, 0, |env| {
        let (offset, size) = offsets(offset, size)?;
        let p = path(env, &jpath)?;
        let sock = table::get(id)?;
        let file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .open(&p)
            .map_err(Error::File)?;
        Ok(sock.recvfile(&file, offset, size)? as jlong)
    })
}
