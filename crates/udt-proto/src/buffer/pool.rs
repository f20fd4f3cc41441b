//! A small free list of payload buffers, so that the steady state of a transfer allocates
//! nothing per packet.

/// Recycled byte buffers of one payload size.
#[derive(Debug, Default)]
pub struct BufferPool {
    free: Vec<Vec<u8>>,
    /// Most buffers kept for reuse; the rest are freed, so an idle connection gives memory back.
    retain: usize,
}

impl BufferPool {
    /// A pool keeping at most `retain` spare buffers.
    pub fn new(retain: usize) -> Self {
        BufferPool {
            free: Vec::new(),
            retain,
        }
    }

    /// An empty buffer with room for at least `capacity` bytes.
    pub fn take(&mut self, capacity: usize) -> Vec<u8> {
        match self.free.pop() {
            Some(mut b) => {
                b.clear();
                b.reserve(capacity);
                b
            }
            None => Vec::with_capacity(capacity),
        }
    }

    /// Returns a buffer for reuse.
    pub fn give(&mut self, buf: Vec<u8>) {
        if self.free.len() < self.retain {
            self.free.push(buf);
        }
    }

    /// Frees every spare buffer.
    pub fn shrink(&mut self) {
        self.free = Vec::new();
    }
}
