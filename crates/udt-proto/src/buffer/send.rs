//! The send buffer (spec §10.1): application data cut into packet-sized blocks, kept until
//! acknowledged.
//!
//! Blocks are stored oldest first. The first `sent` blocks have been given sequence numbers
//! (`first_seq`, `first_seq + 1`, …) and transmitted at least once; the rest wait to be sent.
//! An ACK releases blocks from the front.

use std::collections::VecDeque;

use thiserror::Error;

use super::pool::BufferPool;
use crate::seq::{MsgNo, SeqNo};
use crate::time::Instant;
use crate::wire::{Boundary, DropRequest, MessageWord};

/// Why a message could not be queued.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum SendBufferError {
    /// The message needs more packets than the whole buffer holds.
    #[error("message of {len} bytes is larger than the send buffer")]
    MessageTooLarge {
        /// Message length, bytes.
        len: usize,
    },
    /// The buffer has no room for the message now.
    #[error("send buffer full")]
    Full,
    /// Empty messages cannot be sent.
    #[error("empty message")]
    Empty,
}

/// One packet's worth of application data.
#[derive(Debug)]
pub struct Block {
    /// Payload bytes.
    pub data: Vec<u8>,
    /// Boundary bits, in-order flag and message number.
    pub message: MessageWord,
    /// When the block's message was queued.
    pub queued_at: Instant,
    /// Time to live of the block's message, ms (`None` = until delivered).
    pub ttl_ms: Option<u32>,
    /// The message was dropped: it is only kept to preserve the sequence mapping.
    pub dropped: bool,
}

impl Block {
    fn expired(&self, now: Instant) -> bool {
        self.ttl_ms
            .is_some_and(|ttl| now.micros_since(self.queued_at) > u64::from(ttl) * 1000)
    }
}

/// Empty payload buffers reserved in a [`SendBuffer`], so that the application's bytes can be
/// copied into them while nothing else waits: a runtime that guards the buffer with a lock
/// takes the slots under it, fills them outside it, and commits them under it again. The room
/// they stand for counts as used until [`SendBuffer::commit_stream`],
/// [`SendBuffer::commit_message`] or [`SendBuffer::release`] takes them back.
#[derive(Debug, Default)]
pub struct SendSlots {
    bufs: Vec<Vec<u8>>,
    payload_size: usize,
}

impl SendSlots {
    /// Slots held, packets.
    pub fn len(&self) -> usize {
        self.bufs.len()
    }

    /// True when no slot is held.
    pub fn is_empty(&self) -> bool {
        self.bufs.is_empty()
    }

    /// Bytes the slots hold when full.
    pub fn capacity(&self) -> usize {
        self.bufs.len() * self.payload_size
    }

    /// Copies the front of `data` into the slots, one packet's payload each, replacing what
    /// they held; returns how many bytes were copied (at most [`capacity`](Self::capacity)).
    pub fn fill(&mut self, data: &[u8]) -> usize {
        let mut copied = 0;
        let mut chunks = data.chunks(self.payload_size.max(1));
        for buf in &mut self.bufs {
            buf.clear();
            if let Some(chunk) = chunks.next() {
                buf.extend_from_slice(chunk);
                copied += chunk.len();
            }
        }
        copied
    }
}

/// The sender's buffer.
#[derive(Debug)]
pub struct SendBuffer {
    blocks: VecDeque<Block>,
    /// Sequence number of `blocks[0]` once sent; the next new block gets `first_seq + sent`.
    first_seq: SeqNo,
    /// Blocks at the front that have sequence numbers.
    sent: usize,
    capacity_pkts: usize,
    payload_size: usize,
    last_msg: MsgNo,
    pool: BufferPool,
    /// Blocks handed out as [`SendSlots`] and not yet committed or released.
    reserved: usize,
}

impl SendBuffer {
    /// A buffer of `capacity_pkts` blocks of `payload_size` bytes whose first packet will carry
    /// sequence number `isn`.
    pub fn new(capacity_pkts: usize, payload_size: usize, isn: SeqNo) -> Self {
        SendBuffer {
            blocks: VecDeque::new(),
            first_seq: isn,
            sent: 0,
            capacity_pkts: capacity_pkts.max(1),
            payload_size: payload_size.max(1),
            last_msg: MsgNo::default(),
            pool: BufferPool::new(256),
            reserved: 0,
        }
    }

    /// Payload bytes per full packet.
    pub fn payload_size(&self) -> usize {
        self.payload_size
    }

    /// Capacity, packets.
    pub fn capacity_pkts(&self) -> usize {
        self.capacity_pkts
    }

    /// Blocks that can still be queued: the capacity less the unsent blocks and the sent ones
    /// up to half the capacity. Sent blocks beyond that do not count, so the buffer grows with
    /// the window (which the flow window and the flight flag size bound) while the application can still queue half
    /// the capacity: under random loss a hole holds the cumulative ACK for a round trip or
    /// more, and the unacknowledged blocks reach three to four bandwidth-delay products
    /// (33 000 packets at 1 Gbit/s and 100 ms) although the path holds one. Reserved
    /// [`SendSlots`] count as unsent blocks.
    pub fn free_pkts(&self) -> usize {
        let unsent = self.blocks.len() - self.sent + self.reserved;
        self.capacity_pkts
            .saturating_sub(unsent + self.sent.min(self.capacity_pkts / 2))
    }

    /// Bytes that [`write_stream`](Self::write_stream) can still append to the last block
    /// (unsent and not full) before it needs a new one.
    pub fn tail_room(&self) -> usize {
        match self.blocks.back() {
            Some(last) if self.has_unsent() => self.payload_size - last.data.len(),
            _ => 0,
        }
    }

    /// Blocks held (unsent and unacknowledged).
    pub fn len_pkts(&self) -> usize {
        self.blocks.len()
    }

    /// True when nothing is unsent or unacknowledged.
    pub fn is_empty(&self) -> bool {
        self.blocks.is_empty()
    }

    /// True when some block waits for its first transmission.
    pub fn has_unsent(&self) -> bool {
        self.sent < self.blocks.len()
    }

    /// Blocks sent and not yet acknowledged.
    pub fn unacked_pkts(&self) -> usize {
        self.sent
    }

    /// Sequence number of the oldest unacknowledged block (4.11's `SndLastDataAck`).
    pub fn first_seq(&self) -> SeqNo {
        self.first_seq
    }

    /// Largest sequence number given out so far (4.11's `SndCurrSeqNo`).
    pub fn last_sent_seq(&self) -> SeqNo {
        self.first_seq.add(self.sent as u32).prev()
    }

    fn next_msg(&mut self) -> MsgNo {
        self.last_msg = self.last_msg.next_for_sender();
        self.last_msg
    }

    /// Queues stream bytes; returns how many were accepted (limited by free space).
    ///
    /// Unlike 4.11, which starts a new packet at every `send()` call, bytes are appended to the
    /// last block while it is unsent and not full, so many small writes do not become many
    /// small packets. Stream receivers ignore message numbers and boundaries.
    pub fn write_stream(&mut self, now: Instant, mut data: &[u8]) -> usize {
        let mut written = 0;
        if self.has_unsent() {
            if let Some(last) = self.blocks.back_mut() {
                let room = self.payload_size - last.data.len();
                let n = room.min(data.len());
                last.data.extend_from_slice(&data[..n]);
                written += n;
                data = &data[n..];
            }
        }
        if data.is_empty() {
            return written;
        }
        let msg = MessageWord::new(Boundary::Solo, false, self.next_msg());
        while !data.is_empty() && self.free_pkts() > 0 {
            let n = self.payload_size.min(data.len());
            let mut buf = self.pool.take(self.payload_size);
            buf.extend_from_slice(&data[..n]);
            self.blocks.push_back(Block {
                data: buf,
                message: msg,
                queued_at: now,
                ttl_ms: None,
                dropped: false,
            });
            written += n;
            data = &data[n..];
        }
        written
    }

    /// Queues one message, all or nothing. `ttl_ms`: drop it if not delivered within this many
    /// milliseconds of now; `in_order`: the receiver must deliver it in sequence.
    pub fn write_message(
        &mut self,
        now: Instant,
        data: &[u8],
        ttl_ms: Option<u32>,
        in_order: bool,
    ) -> Result<(), SendBufferError> {
        if data.is_empty() {
            return Err(SendBufferError::Empty);
        }
        let count = data.len().div_ceil(self.payload_size);
        if count > self.capacity_pkts {
            return Err(SendBufferError::MessageTooLarge { len: data.len() });
        }
        if count > self.free_pkts() {
            return Err(SendBufferError::Full);
        }
        let msg = self.next_msg();
        for (i, chunk) in data.chunks(self.payload_size).enumerate() {
            let mut buf = self.pool.take(self.payload_size);
            buf.extend_from_slice(chunk);
            self.blocks.push_back(Block {
                data: buf,
                message: MessageWord::new(Boundary::for_position(i, count), in_order, msg),
                queued_at: now,
                ttl_ms,
                dropped: false,
            });
        }
        Ok(())
    }

    /// Reserves slots for up to `max_bytes` of stream data, as many as the free space allows
    /// (none when it is full). The bytes belong after everything queued before
    /// [`commit_stream`](Self::commit_stream); a caller that wants them to continue the last
    /// block first fills [`tail_room`](Self::tail_room) with `write_stream`.
    pub fn reserve_stream(&mut self, max_bytes: usize) -> SendSlots {
        let count = max_bytes.div_ceil(self.payload_size).min(self.free_pkts());
        self.reserve(count)
    }

    /// Reserves slots for one message of `len` bytes, all or nothing, with the checks of
    /// [`write_message`](Self::write_message).
    pub fn reserve_message(&mut self, len: usize) -> Result<SendSlots, SendBufferError> {
        if len == 0 {
            return Err(SendBufferError::Empty);
        }
        let count = len.div_ceil(self.payload_size);
        if count > self.capacity_pkts {
            return Err(SendBufferError::MessageTooLarge { len });
        }
        if count > self.free_pkts() {
            return Err(SendBufferError::Full);
        }
        Ok(self.reserve(count))
    }

    fn reserve(&mut self, count: usize) -> SendSlots {
        let bufs = (0..count)
            .map(|_| self.pool.take(self.payload_size))
            .collect();
        self.reserved += count;
        SendSlots {
            bufs,
            payload_size: self.payload_size,
        }
    }

    /// Gives slots back unused.
    pub fn release(&mut self, slots: SendSlots) {
        self.reserved = self.reserved.saturating_sub(slots.bufs.len());
        for buf in slots.bufs {
            self.pool.give(buf);
        }
    }

    /// Queues the filled slots as stream data, as one `write_stream` call would; empty slots
    /// are released. Returns the bytes queued. Slots of another payload size (another
    /// buffer's) are released and queue nothing.
    pub fn commit_stream(&mut self, now: Instant, slots: SendSlots) -> usize {
        self.commit(now, slots, None, None)
    }

    /// Queues the filled slots as one message (see [`write_message`](Self::write_message));
    /// empty slots are released. Returns the bytes queued.
    pub fn commit_message(
        &mut self,
        now: Instant,
        slots: SendSlots,
        ttl_ms: Option<u32>,
        in_order: bool,
    ) -> usize {
        self.commit(now, slots, Some(in_order), ttl_ms)
    }

    /// `in_order`: `None` for stream data (one solo message word for every block), else the
    /// message's flag.
    fn commit(
        &mut self,
        now: Instant,
        mut slots: SendSlots,
        in_order: Option<bool>,
        ttl_ms: Option<u32>,
    ) -> usize {
        if slots.payload_size != self.payload_size {
            self.release(slots);
            return 0;
        }
        self.reserved = self.reserved.saturating_sub(slots.bufs.len());
        let (full, empty): (Vec<_>, Vec<_>) = slots.bufs.drain(..).partition(|b| !b.is_empty());
        for buf in empty {
            self.pool.give(buf);
        }
        if full.is_empty() {
            return 0;
        }
        let msg = self.next_msg();
        let count = full.len();
        let mut bytes = 0;
        for (i, data) in full.into_iter().enumerate() {
            bytes += data.len();
            let message = match in_order {
                None => MessageWord::new(Boundary::Solo, false, msg),
                Some(in_order) => MessageWord::new(Boundary::for_position(i, count), in_order, msg),
            };
            self.blocks.push_back(Block {
                data,
                message,
                queued_at: now,
                ttl_ms,
                dropped: false,
            });
        }
        bytes
    }

    /// Discards messages whose TTL expired before any of their packets was sent; returns how
    /// many. They never got sequence numbers, so the receiver needs no drop request. (4.11 only
    /// checks TTLs on retransmission, so a stale message still goes out once there.)
    pub fn discard_expired_unsent(&mut self, now: Instant) -> u32 {
        let mut discarded = 0;
        while let Some(b) = self.blocks.get(self.sent) {
            if !(b.message.boundary().starts_message() && b.expired(now)) {
                break;
            }
            let end = self.message_end(self.sent);
            for b in self.blocks.drain(self.sent..=end) {
                self.pool.give(b.data);
            }
            discarded += 1;
        }
        discarded
    }

    /// Gives the next unsent block its sequence number and returns both.
    pub fn send_next(&mut self) -> Option<(SeqNo, &Block)> {
        let seq = self.first_seq.add(self.sent as u32);
        let block = self.blocks.get(self.sent)?;
        self.sent += 1;
        Some((seq, block))
    }

    /// The block sent with sequence number `seq`, if still unacknowledged.
    pub fn get(&self, seq: SeqNo) -> Option<&Block> {
        let i = self.index_of(seq)?;
        self.blocks.get(i)
    }

    fn index_of(&self, seq: SeqNo) -> Option<usize> {
        let i = self.first_seq.offset_to(seq);
        (i >= 0 && (i as usize) < self.sent).then_some(i as usize)
    }

    /// Releases every block before `ack` (exclusive); returns how many were released.
    pub fn acknowledge(&mut self, ack: SeqNo) -> usize {
        let n = self.first_seq.offset_to(ack);
        if n <= 0 {
            return 0;
        }
        let n = (n as usize).min(self.sent);
        // Spares plus blocks in use stay within the capacity.
        let limit = self.capacity_pkts - (self.blocks.len() - n).min(self.capacity_pkts);
        for b in self.blocks.drain(..n) {
            self.pool.give_up_to(b.data, limit);
        }
        self.first_seq = self.first_seq.add(n as u32);
        self.sent -= n;
        n
    }

    /// Frees the spare payload buffers that went unused since the previous call (see
    /// [`BufferPool::trim_unused`]); the connection calls it about once a second.
    pub fn trim_spares(&mut self) {
        self.pool.trim_unused();
    }

    /// Index of the last block of the message containing block `i`.
    fn message_end(&self, i: usize) -> usize {
        let mut end = i;
        while end + 1 < self.blocks.len() && !self.blocks[end].message.boundary().ends_message() {
            end += 1;
        }
        end
    }

    /// If the packet `seq`, about to be retransmitted, belongs to a message whose TTL expired
    /// (or that was already dropped), drops the whole message and returns the drop request to
    /// send instead. Unsent blocks of the message get sequence numbers so that the request can
    /// name them; the sender never transmits them.
    ///
    /// The range covers exactly the message's packets still held (4.11 sends a range that
    /// starts at `seq` and ends one past the message, spec §10.7; we do not reproduce that).
    pub fn drop_if_expired(&mut self, seq: SeqNo, now: Instant) -> Option<DropRequest> {
        let i = self.index_of(seq)?;
        let b = &self.blocks[i];
        if !(b.dropped || b.expired(now)) {
            return None;
        }
        let msg = b.message.msg();
        let mut start = i;
        while start > 0 && !self.blocks[start].message.boundary().starts_message() {
            start -= 1;
        }
        let end = self.message_end(i);
        if end >= self.sent {
            self.sent = end + 1;
        }
        for b in self.blocks.range_mut(start..=end) {
            b.dropped = true;
        }
        Some(DropRequest {
            msg,
            first: self.first_seq.add(start as u32),
            last: self.first_seq.add(end as u32),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seq(n: u32) -> SeqNo {
        SeqNo::new(n).unwrap()
    }
    const T0: Instant = Instant::ZERO;

    #[test]
    fn stream_writes_fill_blocks_and_respect_capacity() {
        let mut b = SendBuffer::new(3, 10, seq(100));
        assert_eq!(b.write_stream(T0, &[1; 25]), 25);
        assert_eq!(b.len_pkts(), 3);
        // The last block has room for 5 more bytes, then the buffer is full.
        assert_eq!(b.write_stream(T0, &[2; 8]), 5);
        assert_eq!(b.free_pkts(), 0);
        let (s, blk) = b.send_next().unwrap();
        assert_eq!((s, blk.data.len()), (seq(100), 10));
        assert_eq!(b.last_sent_seq(), seq(100));
    }

    #[test]
    fn reserved_slots_hold_their_room_until_committed_or_released() {
        let mut b = SendBuffer::new(4, 10, seq(0));
        let mut slots = b.reserve_stream(25);
        assert_eq!((slots.len(), slots.capacity()), (3, 30));
        assert_eq!(b.free_pkts(), 1);
        // Another writer gets only the room left.
        assert_eq!(b.write_stream(T0, &[9; 40]), 10);
        assert_eq!(b.free_pkts(), 0);
        assert!(b.reserve_stream(10).is_empty());
        assert_eq!(slots.fill(&[1; 25]), 25);
        assert_eq!(b.commit_stream(T0, slots), 25);
        assert_eq!((b.len_pkts(), b.free_pkts()), (4, 0));
        // The committed bytes follow what was queued before the commit, one block per slot.
        let lens: Vec<_> = (0..4)
            .map(|_| b.send_next().unwrap().1.data.len())
            .collect();
        assert_eq!(lens, [10, 10, 10, 5]);
        assert_eq!(b.get(seq(0)).unwrap().data, vec![9; 10]);
        assert_eq!(b.get(seq(3)).unwrap().data, vec![1; 5]);

        let mut b = SendBuffer::new(4, 10, seq(0));
        let slots = b.reserve_stream(100);
        assert_eq!(slots.len(), 4);
        b.release(slots);
        assert_eq!((b.len_pkts(), b.free_pkts()), (0, 4));
    }

    #[test]
    fn slots_left_empty_queue_nothing_and_the_tail_stays_appendable() {
        let mut b = SendBuffer::new(4, 10, seq(0));
        let mut slots = b.reserve_stream(30);
        assert_eq!(slots.fill(&[1; 12]), 12);
        assert_eq!(b.commit_stream(T0, slots), 12);
        assert_eq!((b.len_pkts(), b.free_pkts(), b.tail_room()), (2, 2, 8));
        assert_eq!(b.write_stream(T0, &[2; 8]), 8);
        assert_eq!((b.len_pkts(), b.tail_room()), (2, 0));
        // Slots of another buffer's payload size are refused whole.
        let mut other = SendBuffer::new(4, 7, seq(0));
        let mut foreign = other.reserve_stream(7);
        foreign.fill(&[3; 7]);
        assert_eq!(b.commit_stream(T0, foreign), 0);
        assert_eq!(b.len_pkts(), 2);
    }

    #[test]
    fn a_message_committed_from_slots_matches_write_message() {
        let mut slotted = SendBuffer::new(8, 10, seq(0));
        let mut direct = SendBuffer::new(8, 10, seq(0));
        let data: Vec<u8> = (0..25).collect();
        let mut slots = slotted.reserve_message(data.len()).unwrap();
        assert_eq!(slots.fill(&data), 25);
        assert_eq!(slotted.commit_message(T0, slots, Some(30), true), 25);
        direct.write_message(T0, &data, Some(30), true).unwrap();
        for _ in 0..3 {
            let (s1, a) = slotted.send_next().unwrap();
            let (a, am, at) = (a.data.clone(), a.message, a.ttl_ms);
            let (s2, b) = direct.send_next().unwrap();
            assert_eq!((s1, a, am, at), (s2, b.data.clone(), b.message, b.ttl_ms));
        }
        assert_eq!(
            slotted.reserve_message(81).unwrap_err(),
            SendBufferError::MessageTooLarge { len: 81 }
        );
        assert_eq!(
            slotted.reserve_message(0).unwrap_err(),
            SendBufferError::Empty
        );
        // Three sent blocks and five reserved fill it.
        let _held = slotted.reserve_message(50).unwrap();
        assert_eq!(
            slotted.reserve_message(10).unwrap_err(),
            SendBufferError::Full
        );
    }

    #[test]
    fn sent_blocks_beyond_half_the_capacity_do_not_count() {
        let mut b = SendBuffer::new(8, 10, seq(0));
        assert_eq!(b.write_stream(T0, &[1; 80]), 80);
        assert_eq!(b.free_pkts(), 0);
        for _ in 0..6 {
            b.send_next().unwrap();
        }
        // Six sent (four of them count) and two unsent.
        assert_eq!(b.free_pkts(), 2);
        assert_eq!(b.write_stream(T0, &[2; 20]), 20);
        assert_eq!((b.len_pkts(), b.free_pkts()), (10, 0));
        // Four sent and four unsent fill it; once nothing is in flight, four are free.
        assert_eq!(b.acknowledge(seq(2)), 2);
        assert_eq!(b.free_pkts(), 0);
        assert_eq!(b.acknowledge(seq(6)), 4);
        assert_eq!(b.free_pkts(), 4);
    }

    #[test]
    fn sent_blocks_are_not_appended_to() {
        let mut b = SendBuffer::new(4, 10, seq(0));
        b.write_stream(T0, &[1; 3]);
        b.send_next().unwrap();
        b.write_stream(T0, &[2; 3]);
        assert_eq!(b.len_pkts(), 2);
        assert_eq!(b.get(seq(0)).unwrap().data, vec![1; 3]);
    }

    #[test]
    fn acknowledge_releases_front_blocks() {
        let mut b = SendBuffer::new(8, 10, seq(SeqNo::MAX - 1));
        b.write_stream(T0, &[0; 50]);
        for _ in 0..4 {
            b.send_next().unwrap();
        }
        assert_eq!(b.last_sent_seq(), seq(1));
        assert_eq!(b.acknowledge(seq(0)), 2);
        assert_eq!(b.first_seq(), seq(0));
        assert!(b.get(seq(SeqNo::MAX)).is_none());
        assert!(b.get(seq(1)).is_some());
        // An ACK beyond what was sent releases only what was sent.
        assert_eq!(b.acknowledge(seq(10)), 2);
        assert!(b.has_unsent());
    }

    #[test]
    fn messages_are_all_or_nothing_with_boundaries() {
        let mut b = SendBuffer::new(4, 10, seq(0));
        assert_eq!(
            b.write_message(T0, &[0; 41], None, true),
            Err(SendBufferError::MessageTooLarge { len: 41 })
        );
        b.write_message(T0, &[0; 25], None, true).unwrap();
        assert_eq!(
            b.write_message(T0, &[0; 11], None, false),
            Err(SendBufferError::Full)
        );
        let kinds: Vec<_> = (0..3)
            .map(|_| b.send_next().unwrap().1.message.boundary())
            .collect();
        assert_eq!(
            kinds,
            vec![Boundary::First, Boundary::Middle, Boundary::Last]
        );
    }

    #[test]
    fn expired_message_is_dropped_whole_including_unsent_blocks() {
        let mut b = SendBuffer::new(8, 10, seq(50));
        b.write_message(T0, &[0; 5], None, false).unwrap(); // seq 50
        b.write_message(T0, &[0; 30], Some(1), false).unwrap(); // seq 51..=53
        b.send_next().unwrap();
        b.send_next().unwrap(); // 51 sent, 52 and 53 unsent
        let late = Instant::from_micros(2_000);
        assert!(b.drop_if_expired(seq(50), late).is_none());
        let d = b.drop_if_expired(seq(51), late).unwrap();
        assert_eq!((d.first, d.last), (seq(51), seq(53)));
        assert_eq!(b.last_sent_seq(), seq(53));
        assert!(!b.has_unsent());
        // Asking again (the drop request was lost) repeats it.
        assert_eq!(b.drop_if_expired(seq(52), late), Some(d));
    }

    #[test]
    fn expired_unsent_messages_are_discarded_without_sequence_numbers() {
        let mut b = SendBuffer::new(8, 10, seq(7));
        b.write_message(T0, &[0; 15], Some(1), false).unwrap();
        b.write_message(T0, &[9; 5], None, false).unwrap();
        assert_eq!(b.discard_expired_unsent(Instant::from_micros(5_000)), 1);
        let (s, blk) = b.send_next().unwrap();
        assert_eq!((s, blk.data[0]), (seq(7), 9));
    }
}
