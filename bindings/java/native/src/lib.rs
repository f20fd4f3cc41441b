//! The native side of the Java binding `net.udt`: JNI entry points, written with the `jni`
//! crate, over [`udt::BsdSocket`].
//!
//! This layer only translates: Java arguments are checked and converted, the call goes to
//! `BsdSocket`, and its result or error comes back as a Java value or exception. Rules
//! (which option may change when, error codes, blocking and timeouts) live in `BsdSocket`.
//!
//! - Sockets are named by opaque ids into a handle table ([`table`]), never by pointers: a
//!   Java object that outlives its socket can only name an id that no longer exists (UDT4's
//!   5004 `EINVSOCK`), never freed memory. Ids are never reused.
//! - A call takes the socket out of the table (a clone of its `Arc`) and releases the table
//!   before it blocks, so blocking calls never stop other threads using other sockets.
//! - Every entry point runs inside [`entry::run`], which catches panics and turns every
//!   failure into a Java exception ([`entry`]): nothing unwinds across the FFI boundary.

mod addr;
mod buffers;
mod entry;
mod io;
mod lifecycle;
mod options;
mod table;
