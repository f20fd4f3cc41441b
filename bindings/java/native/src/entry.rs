//! The frame of every JNI entry point: panics caught, failures thrown as Java exceptions.
//!
//! Exceptions thrown (classes in `net.udt` unless named):
//! - `UdtTimeoutException` (a `java.net.SocketTimeoutException`) for UDT4 6003 `ETIMEOUT`
//!   and 1001 `ENOSERVER` (the handshake timed out), with the code;
//! - `UdtException` (a `java.io.IOException`) with UDT4's code for every other socket error,
//!   and code -1 (UDT4's `EUNKNOWN`) for a panic or an unexpected JNI failure;
//! - `java.lang.NullPointerException` / `IndexOutOfBoundsException` for a null or out-of-range
//!   Java argument (the Java side checks first; this is the second line).

use std::panic::{self, AssertUnwindSafe};

use jni::objects::{JThrowable, JValue};
use jni::JNIEnv;

/// UDT4's code for an error it cannot classify (`EUNKNOWN`).
const UNKNOWN: i32 = -1;

/// Why a native call failed.
#[derive(Debug)]
pub(crate) enum Fail {
    /// The socket layer refused or failed.
    Udt(udt::Error),
    /// A JNI call failed; if it was because a Java exception is pending, that one is kept.
    Jni(jni::errors::Error),
    /// A required Java argument was null.
    Null(&'static str),
    /// An offset/length pair does not fit its array.
    Bounds(String),
}

impl From<udt::Error> for Fail {
    fn from(e: udt::Error) -> Self {
        Fail::Udt(e)
    }
}

impl From<jni::errors::Error> for Fail {
    fn from(e: jni::errors::Error) -> Self {
        Fail::Jni(e)
    }
}

/// Result of the body of an entry point.
pub(crate) type Res<T> = Result<T, Fail>;

/// Runs `body` as an entry point: its value on success; otherwise the matching Java
/// exception is pending and `default` is returned (Java ignores it). A panic in `body` is
/// caught here, so it never unwinds into the JVM.
pub(crate) fn run<'l, T>(
    env: &mut JNIEnv<'l>,
    default: T,
    body: impl FnOnce(&mut JNIEnv<'l>) -> Res<T>,
) -> T {
    let outcome = panic::catch_unwind(AssertUnwindSafe(|| body(env)));
    match outcome {
        Ok(Ok(v)) => v,
        Ok(Err(fail)) => {
            throw(env, fail);
            default
        }
        Err(_) => {
            throw_udt(
                env,
                UNKNOWN,
                "internal error: panic in the native layer",
                false,
            );
            default
        }
    }
}

/// Makes `fail` the pending Java exception.
fn throw(env: &mut JNIEnv<'_>, fail: Fail) {
    match fail {
        Fail::Udt(e) => {
            let code = e.udt4_code();
            throw_udt(env, code, &e.to_string(), code == 6003 || code == 1001);
        }
        Fail::Jni(e) => {
            // A Java exception raised inside the JNI call (out of memory, say) stays pending.
            if !env.exception_check().unwrap_or(true) {
                throw_udt(env, UNKNOWN, &format!("JNI failure: {e}"), false);
            }
        }
        Fail::Null(what) => {
            let _ = env.throw_new("java/lang/NullPointerException", what);
        }
        Fail::Bounds(msg) => {
            let _ = env.throw_new("java/lang/IndexOutOfBoundsException", msg);
        }
    }
}

/// Throws `net.udt.UdtException` (or `UdtTimeoutException` when `timeout`) with UDT4 `code`.
/// Falls back to a plain `java.io.IOException` if the exception cannot be built.
fn throw_udt(env: &mut JNIEnv<'_>, code: i32, msg: &str, timeout: bool) {
    let class = if timeout {
        "net/udt/UdtTimeoutException"
    } else {
        "net/udt/UdtException"
    };
    let built = env.new_string(msg).and_then(|jmsg| {
        env.new_object(
            class,
            "(ILjava/lang/String;)V",
            &[JValue::Int(code), JValue::Object(&jmsg)],
        )
    });
    let thrown = match built {
        Ok(obj) => env.throw(JThrowable::from(obj)),
        Err(e) => Err(e),
    };
    if thrown.is_err() {
        let _ = env.exception_clear();
        let _ = env.throw_new("java/io/IOException", format!("UDT error {code}: {msg}"));
    }
}
