//! The bottleneck: a link of fixed rate behind a DropTail queue counted in packets.
//!
//! A FIFO link needs no events of its own: when a packet is offered, its departure time follows
//! from when the link is next free, and the queue occupancy from the departure times of the
//! packets still waiting.

use std::collections::VecDeque;

/// Time in nanoseconds of simulated time.
pub type Nanos = u64;

/// One direction of the shared bottleneck.
#[derive(Debug)]
pub struct Link {
    /// Transmission time per byte, ns.
    ns_per_byte: f64,
    queue_limit: usize,
    /// Departure times of the packets in the system (waiting or being sent), ascending.
    departures: VecDeque<Nanos>,
    /// When the link finishes its current backlog, ns (fractional, so rates that do not divide
    /// a nanosecond evenly keep their average).
    busy_until: f64,
}

/// A packet accepted by the link.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Departure {
    /// When its last bit leaves the link, ns.
    pub at: Nanos,
    /// Time it waited behind other packets, ns.
    pub queueing: Nanos,
}

impl Link {
    /// A link of `rate_mbps` (10^6 bit/s) with a queue of `queue_limit` packets.
    pub fn new(rate_mbps: f64, queue_limit: u32) -> Self {
        Link {
            ns_per_byte: 8_000.0 / rate_mbps,
            queue_limit: queue_limit.max(1) as usize,
            departures: VecDeque::new(),
            busy_until: 0.0,
        }
    }

    /// Offers a packet of `wire_bytes` at `now`; `None` if the queue is full (tail drop).
    pub fn offer(&mut self, now: Nanos, wire_bytes: usize) -> Option<Departure> {
        while self.departures.front().is_some_and(|&d| d <= now) {
            self.departures.pop_front();
        }
        if self.departures.len() >= self.queue_limit {
            return None;
        }
        let start = self.busy_until.max(now as f64);
        self.busy_until = start + wire_bytes as f64 * self.ns_per_byte;
        // `busy_until.ceil()` without the library call (no SSE4.1 in the baseline target):
        // `busy_until` is finite and non-negative.
        let whole = self.busy_until as Nanos;
        let at = if (whole as f64) < self.busy_until {
            whole.saturating_add(1)
        } else {
            whole
        };
        self.departures.push_back(at);
        Some(Departure {
            at,
            queueing: (start - now as f64) as Nanos,
        })
    }

    /// Packets currently queued or in transmission.
    pub fn occupancy(&self) -> usize {
        self.departures.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serialises_at_link_rate_and_drops_at_the_tail() {
        // 1 Gb/s: 1500 bytes take 12 µs.
        let mut l = Link::new(1000.0, 2);
        let a = l.offer(0, 1500).unwrap();
        assert_eq!(
            a,
            Departure {
                at: 12_000,
                queueing: 0
            }
        );
        let b = l.offer(1_000, 1500).unwrap();
        assert_eq!(
            b,
            Departure {
                at: 24_000,
                queueing: 11_000
            }
        );
        assert!(l.offer(2_000, 1500).is_none(), "queue of 2 is full");
        // After the first departs there is room again.
        let c = l.offer(12_000, 1500).unwrap();
        assert_eq!(c.at, 36_000);
        // An idle link starts at once.
        assert_eq!(
            l.offer(100_000, 1500).unwrap(),
            Departure {
                at: 112_000,
                queueing: 0
            }
        );
    }
}
