//! The event queue: everything scheduled comes out in (time, insertion order) order.
//!
//! Most events are packets on a path whose delivery times never decrease: a FIFO link hands out
//! departure times in order, and a flow's propagation delay is constant. Such packets go to a
//! *lane*, a plain FIFO, and only the head of every non-empty lane sits in a small heap. Every
//! other event (timers, flow start and stop, packets that would overtake the tail of their lane
//! because of jitter or reordering) goes to a general heap. Since both sides are ordered by the
//! same (time, insertion order) key and that key is unique, the merged order is exactly that of
//! one heap holding everything, only cheaper: the general heap stays small and lane pushes and
//! pops are O(1) apart from the few-entry head heap.

use std::cmp::{Ordering, Reverse};
use std::collections::binary_heap::PeekMut;
use std::collections::{BinaryHeap, VecDeque};

use crate::link::Nanos;

/// An event of the general heap.
struct Entry<E> {
    at: Nanos,
    order: u64,
    event: E,
}

impl<E> PartialEq for Entry<E> {
    fn eq(&self, other: &Self) -> bool {
        (self.at, self.order) == (other.at, other.order)
    }
}
impl<E> Eq for Entry<E> {}
impl<E> PartialOrd for Entry<E> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl<E> Ord for Entry<E> {
    fn cmp(&self, other: &Self) -> Ordering {
        (self.at, self.order).cmp(&(other.at, other.order))
    }
}

/// A packet waiting in a lane.
struct LaneEntry<P> {
    at: Nanos,
    order: u64,
    packet: P,
}

/// What [`EventQueue::pop`] yields.
pub(crate) enum Popped<E, P> {
    /// An event of the general heap.
    Event(E),
    /// The head packet of a lane.
    Packet(usize, P),
}

/// Events in (time, insertion order) order; see the module documentation.
pub(crate) struct EventQueue<E, P> {
    order: u64,
    heap: BinaryHeap<Reverse<Entry<E>>>,
    lanes: Vec<VecDeque<LaneEntry<P>>>,
    /// (time, order, lane) of the head of every non-empty lane.
    heads: BinaryHeap<Reverse<(Nanos, u64, usize)>>,
}

impl<E, P> EventQueue<E, P> {
    /// An empty queue with `lanes` lanes.
    pub(crate) fn new(lanes: usize) -> Self {
        EventQueue {
            order: 0,
            heap: BinaryHeap::new(),
            lanes: (0..lanes).map(|_| VecDeque::new()).collect(),
            heads: BinaryHeap::with_capacity(lanes),
        }
    }

    fn next_order(&mut self) -> u64 {
        self.order += 1;
        self.order
    }

    /// Schedules `event` at `at` on the general heap.
    pub(crate) fn push(&mut self, at: Nanos, event: E) {
        let order = self.next_order();
        self.heap.push(Reverse(Entry { at, order, event }));
    }

    /// Schedules `packet` at `at` on `lane`, unless it would come out before the lane's last
    /// packet: then it is handed back (nothing is scheduled) for [`push`](Self::push).
    pub(crate) fn push_lane(&mut self, lane: usize, at: Nanos, packet: P) -> Result<(), P> {
        let q = &self.lanes[lane];
        if q.back().is_some_and(|b| at < b.at) {
            return Err(packet);
        }
        let was_empty = q.is_empty();
        let order = self.next_order();
        if was_empty {
            self.heads.push(Reverse((at, order, lane)));
        }
        self.lanes[lane].push_back(LaneEntry { at, order, packet });
        Ok(())
    }

    /// Takes the earliest event with its time.
    pub(crate) fn pop(&mut self) -> Option<(Nanos, Popped<E, P>)> {
        let lane_first = match (self.heads.peek(), self.heap.peek()) {
            (None, None) => return None,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (Some(Reverse((at, order, _))), Some(Reverse(e))) => (*at, *order) < (e.at, e.order),
        };
        if !lane_first {
            let Reverse(e) = self.heap.pop().expect("peeked");
            return Some((e.at, Popped::Event(e.event)));
        }
        let mut head = self.heads.peek_mut().expect("peeked");
        let lane = head.0 .2;
        let q = &mut self.lanes[lane];
        let e = q.pop_front().expect("a lane in the head heap is not empty");
        match q.front() {
            Some(next) => *head = Reverse((next.at, next.order, lane)),
            None => {
                PeekMut::pop(head);
            }
        }
        Some((e.at, Popped::Packet(lane, e.packet)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The queue yields exactly what one heap of everything would.
    #[test]
    fn merges_lanes_and_heap_in_time_then_insertion_order() {
        let mut q: EventQueue<u32, u32> = EventQueue::new(3);
        let mut reference = BinaryHeap::new();
        let mut order = 0u64;
        let mut x: u64 = 12345;
        let mut rnd = |m: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % m
        };
        let mut lane_tail = [0u64; 3];
        let mut now = 0;
        let (mut out, mut expected) = (Vec::new(), Vec::new());
        let mut handed_back = 0;
        for id in 0..20_000u32 {
            if rnd(3) > 0 {
                let lane = rnd(4) as usize;
                let mut at = now + rnd(50);
                // One order number per scheduled event, whichever way it goes.
                order += 1;
                if lane < 3 {
                    // Mostly non-decreasing per lane; sometimes overtaking (handed back).
                    if rnd(5) > 0 {
                        at = at.max(lane_tail[lane]);
                    }
                    match q.push_lane(lane, at, id) {
                        Ok(()) => lane_tail[lane] = at,
                        Err(p) => {
                            handed_back += 1;
                            q.push(at, p);
                        }
                    }
                } else {
                    q.push(at, id);
                }
                reference.push(Reverse((at, order, id)));
            } else if let Some((at, p)) = q.pop() {
                now = at;
                out.push(match p {
                    Popped::Event(e) => (at, e),
                    Popped::Packet(_, p) => (at, p),
                });
                let Reverse((at, _, id)) = reference.pop().expect("same length");
                expected.push((at, id));
            }
        }
        while let Some((at, p)) = q.pop() {
            out.push(match p {
                Popped::Event(e) => (at, e),
                Popped::Packet(_, p) => (at, p),
            });
        }
        while let Some(Reverse((at, _, id))) = reference.pop() {
            expected.push((at, id));
        }
        assert!(handed_back > 100);
        assert_eq!(out, expected);
    }
}
