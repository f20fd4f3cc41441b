//! A small free list of payload buffers, so that the steady state of a transfer allocates
//! nothing per packet.
//!
//! The send and receive buffers return their buffers with [`BufferPool::give_up_to`], bounding
//! spares plus buffers in use by their capacity, and the connection calls
//! [`BufferPool::trim_unused`] (through the buffers) about once a second, which frees the spares
//! that sat unused for that whole time: a busy connection keeps what its bursts need, an idle
//! one gives its memory back.

/// Recycled byte buffers of one payload size.
#[derive(Debug, Default)]
pub struct BufferPool {
    free: Vec<Vec<u8>>,
    /// Most buffers kept for reuse; the rest are freed, so an idle connection gives memory back.
    retain: usize,
    /// Fewest spares held since the last [`trim_unused`](Self::trim_unused).
    low_water: usize,
}

impl BufferPool {
    /// A pool keeping at most `retain` spare buffers.
    pub fn new(retain: usize) -> Self {
        BufferPool {
            free: Vec::new(),
            retain,
            low_water: 0,
        }
    }

    /// An empty buffer with room for at least `capacity` bytes.
    pub fn take(&mut self, capacity: usize) -> Vec<u8> {
        let taken = self.free.pop();
        self.low_water = self.low_water.min(self.free.len());
        match taken {
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

    /// Returns a buffer for reuse if fewer than `limit` spares are held; the owner's bound
    /// (typically its capacity minus the buffers in use) replaces the pool's own retain limit.
    pub fn give_up_to(&mut self, buf: Vec<u8>, limit: usize) {
        if self.free.len() < limit {
            self.free.push(buf);
        }
    }

    /// Spare buffers held.
    pub fn spare(&self) -> usize {
        self.free.len()
    }

    /// Frees the spares that were not needed since the previous call (as many as the fewest
    /// spares held in between) and starts a new interval.
    pub fn trim_unused(&mut self) {
        let unused = self.low_water.min(self.free.len());
        if unused == self.free.len() {
            self.free = Vec::new();
        } else {
            // The oldest spares go; the most recently returned ones are likely still cached.
            self.free.drain(..unused);
        }
        self.low_water = self.free.len();
    }

    /// Frees every spare buffer.
    pub fn shrink(&mut self) {
        self.free = Vec::new();
        self.low_water = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trim_frees_only_spares_unused_for_a_whole_interval() {
        let mut p = BufferPool::new(4);
        for _ in 0..10 {
            p.give_up_to(vec![0u8; 8], 100);
        }
        assert_eq!(p.spare(), 10);
        // First interval: low water starts at 0 (nothing was held before).
        p.trim_unused();
        assert_eq!(p.spare(), 10);
        // Three taken and one returned: seven were never needed.
        let a = p.take(8);
        let _b = p.take(8);
        let _c = p.take(8);
        p.give_up_to(a, 100);
        assert_eq!(p.spare(), 8);
        p.trim_unused();
        assert_eq!(p.spare(), 1);
        // Idle for an interval: everything goes.
        p.trim_unused();
        assert_eq!(p.spare(), 0);
        p.give_up_to(vec![0u8; 8], 0);
        assert_eq!(p.spare(), 0, "limit 0 keeps nothing");
    }
}
