//! Handle tables: `int` handles for C, `Arc`s inside. A lookup clones the `Arc` and releases
//! the table's lock at once, so a call that blocks never stops other threads from using other
//! handles, and a handle closed by one thread while another blocks in it stays valid memory
//! (the blocked call returns an error instead).

use std::collections::HashMap;
use std::os::raw::c_int;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use udt::BsdSocket;

use crate::consts::udt_errno;
use crate::epoll::EpollSet;
use crate::last_error::FfiError;

/// A table of live objects by positive `int` handle.
pub struct Table<T> {
    inner: Mutex<TableInner<T>>,
}

struct TableInner<T> {
    items: HashMap<c_int, Arc<T>>,
    next: c_int,
}

impl<T> Table<T> {
    /// An empty table whose first handle is `first` (≥ 1).
    pub fn new(first: c_int) -> Table<T> {
        Table {
            inner: Mutex::new(TableInner {
                items: HashMap::new(),
                next: first.max(1),
            }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, TableInner<T>> {
        // A panic caught at the ABI boundary may have poisoned the lock; the map itself is
        // always consistent (no operation leaves it half-changed), so keep using it.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Stores `item` under a fresh handle. Handles count up and are not reused until the
    /// counter wraps (then live handles are skipped).
    pub fn insert(&self, item: T) -> c_int {
        let mut t = self.lock();
        loop {
            let h = t.next;
            t.next = if t.next == c_int::MAX { 1 } else { t.next + 1 };
            if let std::collections::hash_map::Entry::Vacant(e) = t.items.entry(h) {
                e.insert(Arc::new(item));
                return h;
            }
        }
    }

    /// The object under `h`, if it is live.
    pub fn get(&self, h: c_int) -> Option<Arc<T>> {
        self.lock().items.get(&h).cloned()
    }

    /// Removes and returns the object under `h`.
    pub fn remove(&self, h: c_int) -> Option<Arc<T>> {
        self.lock().items.remove(&h)
    }

    /// Removes and returns every object.
    pub fn drain(&self) -> Vec<Arc<T>> {
        self.lock().items.drain().map(|(_, v)| v).collect()
    }
}

/// The process's UDT sockets. The first handle is random-ish, as UDT4's are, so that handles
/// of one run are not mistaken for another's.
pub fn sockets() -> &'static Table<BsdSocket> {
    static T: OnceLock<Table<BsdSocket>> = OnceLock::new();
    T.get_or_init(|| {
        let seed = std::process::id() as c_int;
        Table::new(1 + (seed.wrapping_mul(7919) & 0x3fff_ffff))
    })
}

/// The process's pollers (`udt_epoll_create`).
pub fn pollers() -> &'static Table<EpollSet> {
    static T: OnceLock<Table<EpollSet>> = OnceLock::new();
    T.get_or_init(|| Table::new(1))
}

/// The socket under `u`, or `UDT_EINVSOCK`.
pub fn socket(u: c_int) -> Result<Arc<BsdSocket>, FfiError> {
    sockets()
        .get(u)
        .ok_or_else(|| FfiError::new(udt_errno::UDT_EINVSOCK, format!("no socket {u}")))
}

/// The poller under `eid`, or `UDT_EINVPOLLID`.
pub fn poller(eid: c_int) -> Result<Arc<EpollSet>, FfiError> {
    pollers()
        .get(eid)
        .ok_or_else(|| FfiError::new(udt_errno::UDT_EINVPOLLID, format!("no poller {eid}")))
}
