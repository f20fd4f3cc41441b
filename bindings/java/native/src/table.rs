//! The handle table: opaque Java-visible ids to sockets.
//!
//! Java holds a `long` id, not a pointer, so a closed socket (or a forged id) is an error
//! the table reports, never a dangling pointer. Ids come from a counter and are never
//! reused, so a stale id cannot reach a socket created later.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, LazyLock, RwLock};

use udt::{BsdSocket, Error};

static SOCKETS: LazyLock<RwLock<HashMap<i64, Arc<BsdSocket>>>> =
    LazyLock::new(|| RwLock::new(HashMap::new()));

/// Starts at 1 so that 0 (a Java field's default) never names a socket.
static NEXT_ID: AtomicI64 = AtomicI64::new(1);

/// Enters `sock` and returns its new id.
pub(crate) fn insert(sock: BsdSocket) -> i64 {
    let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
    SOCKETS
        .write()
        .unwrap_or_else(|p| p.into_inner())
        .insert(id, Arc::new(sock));
    id
}

/// The socket named `id`: [`Error::Closed`] (5004) if there is none (closed, or never
/// existed). The table's lock is released on return, before the caller does anything slow.
pub(crate) fn get(id: i64) -> Result<Arc<BsdSocket>, Error> {
    SOCKETS
        .read()
        .unwrap_or_else(|p| p.into_inner())
        .get(&id)
        .cloned()
        .ok_or(Error::Closed)
}

/// Takes the socket named `id` out of the table; later lookups fail. Threads already inside
/// a call on it keep their `Arc` until the call returns.
pub(crate) fn remove(id: i64) -> Option<Arc<BsdSocket>> {
    SOCKETS
        .write()
        .unwrap_or_else(|p| p.into_inner())
        .remove(&id)
}

#[cfg(test)]
mod tests {
    use super::*;
    use udt::{Family, SocketKind};

    #[test]
    fn ids_are_unique_and_dead_ids_fail() {
        let a = insert(BsdSocket::new(Family::V4, SocketKind::Stream));
        let b = insert(BsdSocket::new(Family::V4, SocketKind::Stream));
        assert_ne!(a, b);
        assert!(get(a).is_ok());
        assert!(remove(a).is_some());
        assert_eq!(get(a).unwrap_err().udt4_code(), 5004);
        assert!(remove(a).is_none());
        assert_eq!(get(0).unwrap_err().udt4_code(), 5004);
        assert_eq!(get(-7).unwrap_err().udt4_code(), 5004);
        let c = insert(BsdSocket::new(Family::V4, SocketKind::Stream));
        assert!(c != a && c != b, "ids are never reused");
        remove(b);
        remove(c);
    }
}
