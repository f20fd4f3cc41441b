//! Moving bytes between Java arrays and Rust slices.
//!
//! Data is copied (`Get/SetByteArrayRegion`) through a per-thread buffer rather than pinned:
//! a pinned ("critical") array would stall the garbage collector for as long as a send or
//! receive blocks. The copy costs little next to the network path, and the buffer is reused
//! so that streaming allocates nothing per call.

use std::cell::RefCell;

use jni::objects::JByteArray;
use jni::JNIEnv;

use crate::entry::{Fail, Res};

/// The most bytes one stream `send`/`recv` call moves; the Java streams loop over larger
/// requests. Large enough that the per-call cost vanishes, small enough to bound the buffer.
pub(crate) const STREAM_CHUNK: usize = 4 << 20;

/// A thread's buffer shrinks back to this after a call that needed more (a large message).
const KEEP: usize = STREAM_CHUNK;

thread_local! {
    static SCRATCH: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// Checks that `off..off+len` lies inside `array` and returns them as `usize`.
pub(crate) fn range(
    env: &JNIEnv<'_>,
    array: &JByteArray<'_>,
    off: i32,
    len: i32,
) -> Res<(usize, usize)> {
    if array.is_null() {
        return Err(Fail::Null("byte array is null"));
    }
    let size = env.get_array_length(array)?;
    if off < 0 || len < 0 || off > size - len {
        return Err(Fail::Bounds(format!(
            "offset {off}, length {len}, array length {size}"
        )));
    }
    Ok((off as usize, len as usize))
}

/// Runs `f` on this thread's scratch buffer, at least `len` bytes long.
pub(crate) fn with_scratch<T>(len: usize, f: impl FnOnce(&mut [u8]) -> Res<T>) -> Res<T> {
    SCRATCH.with(|cell| {
        let mut buf = cell.borrow_mut();
        if buf.len() < len {
            buf.resize(len, 0);
        }
        let out = f(&mut buf[..len]);
        if buf.len() > KEEP {
            buf.truncate(KEEP);
            buf.shrink_to(KEEP);
        }
        out
    })
}

/// Copies `array[off..off+dst.len()]` into `dst`.
pub(crate) fn read_from(
    env: &JNIEnv<'_>,
    array: &JByteArray<'_>,
    off: usize,
    dst: &mut [u8],
) -> Res<()> {
    env.get_byte_array_region(array, off as i32, bytemuck::cast_slice_mut(dst))?;
    Ok(())
}

/// Copies `src` into `array` at `off`.
pub(crate) fn write_to(
    env: &JNIEnv<'_>,
    array: &JByteArray<'_>,
    off: usize,
    src: &[u8],
) -> Res<()> {
    env.set_byte_array_region(array, off as i32, bytemuck::cast_slice(src))?;
    Ok(())
}
