//! The receive buffer (spec §9.1, §9.5): packets stored by sequence number until the
//! application reads them, reassembled into a byte stream or into messages.
//!
//! Slot `i` holds sequence number `start_seq + i`. The *readable prefix* is the run of slots
//! from the front with nothing missing; stream data and in-order messages are delivered from it.
//! Messages marked out-of-order may be delivered from anywhere once complete.

use std::collections::{HashMap, VecDeque};

use super::pool::BufferPool;
use crate::seq::{MsgNo, SeqNo};
use crate::wire::MessageWord;

#[derive(Debug)]
enum Slot {
    /// Not received.
    Empty,
    /// Received, not yet read.
    Data { buf: Vec<u8>, message: MessageWord },
    /// Read ahead of the prefix (an out-of-order message).
    Consumed,
    /// Given up on by a message drop request.
    Dropped,
}

impl Slot {
    fn is_filled(&self) -> bool {
        !matches!(self, Slot::Empty)
    }
}

/// Outcome of storing a data packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Insert {
    /// Stored.
    Stored,
    /// A packet with this sequence number is already held (or was already read).
    Duplicate,
    /// Before the buffer start or beyond its capacity: discarded.
    OutOfWindow,
}

/// A message read by [`RecvBuffer::read_message`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MsgRead {
    /// Bytes copied into the caller's buffer.
    pub copied: usize,
    /// Length of the message; larger than `copied` if the caller's buffer was too small (the
    /// rest is discarded, as with `recvmsg` in 4.11).
    pub msg_len: usize,
    /// The message was cut short because it did not fit in the receive buffer.
    pub partial: bool,
}

/// Stream bytes moved out of a [`RecvBuffer`] by [`RecvBuffer::take_stream`]: whole packets'
/// payload buffers, in order, the first possibly read in part already.
#[derive(Debug, Default)]
pub struct TakenStream {
    bufs: Vec<Vec<u8>>,
    /// Bytes of the first buffer read before it was taken.
    first_offset: usize,
    /// Unread bytes held, in all.
    len: usize,
}

impl TakenStream {
    /// Unread bytes held.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when nothing was taken.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Copies the bytes, in stream order, to the front of `out`; returns how many (all of them
    /// if `out` holds [`len`](Self::len) bytes, else as many as fit).
    pub fn copy_to(&self, out: &mut [u8]) -> usize {
        let mut copied = 0;
        for (i, buf) in self.bufs.iter().enumerate() {
            let from = if i == 0 { self.first_offset } else { 0 };
            let part = &buf[from.min(buf.len())..];
            let n = part.len().min(out.len() - copied);
            out[copied..copied + n].copy_from_slice(&part[..n]);
            copied += n;
        }
        copied
    }
}

/// The receiver's buffer.
#[derive(Debug)]
pub struct RecvBuffer {
    slots: VecDeque<Slot>,
    start_seq: SeqNo,
    capacity_pkts: usize,
    /// Bytes of the first slot already read (stream mode).
    read_offset: usize,
    /// Length of the readable prefix, slots.
    prefix: usize,
    /// Packets discarded because their message could not be completed.
    discarded_pkts: u64,
    /// Slots `1..head_scanned` are known to continue the message that starts at slot 0
    /// without ending it, so the next look at that message resumes there. Without this, a
    /// message of n packets cost n²/2 slot visits while it arrived (every arrival asks whether
    /// a message is readable): 60 % of a receiver's CPU with 1000-packet messages.
    head_scanned: usize,
    /// Messages with the in-order flag clear that have packets held, by number: they may be
    /// delivered from anywhere once complete, and counting their packets as they arrive finds
    /// that moment without searching the buffer (a search per arrival cost a slot visit for
    /// every packet held past a gap: thousands per arrival on a long lossy path).
    unordered: HashMap<MsgNo, Assembly>,
    /// Unordered messages whose packets have all arrived (number, first sequence number), in
    /// the order they completed. An entry may have gone stale (read at the head, broken,
    /// dropped); each is checked against the slots before it is used.
    complete: VecDeque<(MsgNo, SeqNo)>,
    pool: BufferPool,
}

/// What has arrived of one unordered message.
#[derive(Debug, Default)]
struct Assembly {
    /// Its packets held.
    held: u32,
    /// Sequence numbers of its first and last packets, once they arrived.
    first: Option<SeqNo>,
    last: Option<SeqNo>,
}

impl RecvBuffer {
    /// A buffer of `capacity_pkts` packets whose first expected packet is `isn`.
    pub fn new(capacity_pkts: usize, isn: SeqNo) -> Self {
        RecvBuffer {
            slots: VecDeque::new(),
            start_seq: isn,
            capacity_pkts: capacity_pkts.max(2),
            read_offset: 0,
            prefix: 0,
            discarded_pkts: 0,
            head_scanned: 0,
            unordered: HashMap::new(),
            complete: VecDeque::new(),
            pool: BufferPool::new(256),
        }
    }

    /// Capacity, packets.
    pub fn capacity_pkts(&self) -> usize {
        self.capacity_pkts
    }

    /// Sequence number of the oldest slot not yet read.
    pub fn start_seq(&self) -> SeqNo {
        self.start_seq
    }

    /// First sequence number after the readable prefix: everything before it is held or was
    /// given up on.
    pub fn prefix_end(&self) -> SeqNo {
        self.start_seq.add(self.prefix as u32)
    }

    /// Packets of incomplete messages discarded so far.
    pub fn discarded_pkts(&self) -> u64 {
        self.discarded_pkts
    }

    /// Slots held from the start up to `seq` (exclusive); 0 if `seq` is not after the start.
    pub fn slots_before(&self, seq: SeqNo) -> usize {
        self.start_seq.offset_to(seq).max(0) as usize
    }

    /// True if a packet `seq` would be stored (not already read, within capacity). One slot is
    /// always kept free, as in 4.11.
    pub fn in_window(&self, seq: SeqNo) -> bool {
        let off = self.start_seq.offset_to(seq);
        off >= 0 && (off as usize) < self.capacity_pkts - 1
    }

    /// Stores a packet.
    pub fn insert(&mut self, seq: SeqNo, message: MessageWord, payload: &[u8]) -> Insert {
        if !self.in_window(seq) {
            return Insert::OutOfWindow;
        }
        let off = self.start_seq.offset_to(seq) as usize;
        if off >= self.slots.len() {
            self.slots.resize_with(off + 1, || Slot::Empty);
        }
        match &self.slots[off] {
            Slot::Data { .. } | Slot::Consumed => return Insert::Duplicate,
            // A packet arriving for a dropped slot is kept: it may complete a message the sender
            // gave up on too early, and delivering it loses nothing.
            Slot::Empty | Slot::Dropped => {}
        }
        let mut buf = self.pool.take(payload.len());
        buf.extend_from_slice(payload);
        if !message.in_order() {
            self.count_unordered(seq, message);
        }
        self.slots[off] = Slot::Data { buf, message };
        self.extend_prefix();
        Insert::Stored
    }

    fn extend_prefix(&mut self) {
        while self.prefix < self.slots.len() && self.slots[self.prefix].is_filled() {
            self.prefix += 1;
        }
    }

    /// Gives up on `[first, last]` after a message drop request for message `msg`: missing
    /// packets are no longer waited for and held packets of that message are discarded. Returns
    /// false (and changes nothing) if the range reaches beyond the buffer's capacity.
    pub fn drop_range(&mut self, first: SeqNo, last: SeqNo, msg: MsgNo) -> bool {
        let last_off = self.start_seq.offset_to(last);
        if last_off >= self.capacity_pkts as i32 - 1 {
            return false;
        }
        if last_off < 0 {
            return true;
        }
        let first_off = self.start_seq.offset_to(first).max(0) as usize;
        let last_off = last_off as usize;
        // Slots of the head message may be dropped below.
        self.head_scanned = 0;
        if last_off >= self.slots.len() {
            self.slots.resize_with(last_off + 1, || Slot::Empty);
        }
        for i in first_off..=last_off {
            let drop_it = match &self.slots[i] {
                Slot::Empty => true,
                Slot::Data { message, .. } => message.msg() == msg,
                Slot::Consumed | Slot::Dropped => false,
            };
            if drop_it {
                if i == 0 {
                    // The bytes already read belonged to the packet given up on; a packet
                    // stored here later starts from its own beginning (fuzz: recv_buffer).
                    self.read_offset = 0;
                }
                if let Slot::Data { buf, message } =
                    std::mem::replace(&mut self.slots[i], Slot::Dropped)
                {
                    self.uncount_unordered(message);
                    self.pool.give(buf);
                    self.discarded_pkts += 1;
                }
            }
        }
        self.extend_prefix();
        true
    }

    /// Counts an arriving packet of an unordered message; queues the message once all its
    /// packets are held.
    fn count_unordered(&mut self, seq: SeqNo, message: MessageWord) {
        let a = self.unordered.entry(message.msg()).or_default();
        a.held = a.held.saturating_add(1);
        if message.boundary().starts_message() {
            a.first = Some(seq);
        }
        if message.boundary().ends_message() {
            a.last = Some(seq);
        }
        if let (Some(first), Some(last)) = (a.first, a.last) {
            // At least as many packets as the message spans (more only if a sender put a
            // block of another message under this number: checking the slots settles it).
            let span = first.offset_to(last);
            if span >= 0 && i64::from(a.held) > i64::from(span) {
                self.complete.push_back((message.msg(), first));
                if self.complete.len() > self.capacity_pkts {
                    // Only a peer that keeps re-sending dropped messages gets here: forget the
                    // entries that went stale rather than grow.
                    let (slots, start) = (&self.slots, self.start_seq);
                    self.complete
                        .retain(|&(msg, first)| Self::starts_unordered(slots, start, msg, first));
                }
            }
        }
    }

    /// A held packet of an unordered message leaves the buffer (read, dropped or discarded).
    fn uncount_unordered(&mut self, message: MessageWord) {
        if message.in_order() {
            return;
        }
        if let Some(a) = self.unordered.get_mut(&message.msg()) {
            a.held = a.held.saturating_sub(1);
            if a.held == 0 {
                self.unordered.remove(&message.msg());
            }
        }
    }

    /// Whether the slot of `first` holds the first packet of unordered message `msg`.
    fn starts_unordered(slots: &VecDeque<Slot>, start: SeqNo, msg: MsgNo, first: SeqNo) -> bool {
        let off = start.offset_to(first);
        off >= 0
            && matches!(slots.get(off as usize), Some(Slot::Data { message, .. })
                if message.msg() == msg
                    && message.boundary().starts_message()
                    && !message.in_order())
    }

    /// Removes the front slot; true if it held unread data.
    fn pop_front(&mut self) -> bool {
        match self.advance_front() {
            Some(buf) => {
                self.recycle(buf);
                true
            }
            None => false,
        }
    }

    /// Removes the front slot of the prefix; returns its payload buffer if it held data.
    fn advance_front(&mut self) -> Option<Vec<u8>> {
        let buf = match self.slots.pop_front() {
            Some(Slot::Data { buf, message }) => {
                self.uncount_unordered(message);
                Some(buf)
            }
            _ => None,
        };
        self.start_seq = self.start_seq.next();
        self.prefix -= 1;
        self.read_offset = 0;
        self.head_scanned = 0;
        buf
    }

    fn recycle(&mut self, buf: Vec<u8>) {
        // Spares plus slots in use stay within the capacity.
        let limit = self.capacity_pkts.saturating_sub(self.slots.len());
        self.pool.give_up_to(buf, limit);
    }

    /// Moves stream bytes out without copying them: the payload buffers of the packets at the
    /// front of the readable prefix, whole, while their unread bytes total at most
    /// `max_bytes`. Their slots are freed at once (the flow window reopens); the caller copies
    /// the bytes where it likes, without the lock that guards this buffer, and hands the
    /// buffers back with [`give_back`](Self::give_back). Empty when nothing is readable or
    /// the first packet's unread bytes alone exceed `max_bytes` (then use
    /// [`read_stream`](Self::read_stream)).
    pub fn take_stream(&mut self, max_bytes: usize) -> TakenStream {
        let mut taken = TakenStream::default();
        let mut bytes = 0;
        while self.prefix > 0 {
            let unread = match &self.slots[0] {
                Slot::Data { buf, .. } => buf.len().saturating_sub(self.read_offset),
                _ => {
                    self.pop_front();
                    continue;
                }
            };
            if bytes + unread > max_bytes {
                break;
            }
            if taken.bufs.is_empty() {
                taken.first_offset = self.read_offset;
            }
            if let Some(buf) = self.advance_front() {
                taken.bufs.push(buf);
                bytes += unread;
            }
        }
        taken.len = bytes;
        taken
    }

    /// Returns the buffers of a [`take_stream`](Self::take_stream) for reuse.
    pub fn give_back(&mut self, taken: TakenStream) {
        for buf in taken.bufs {
            self.recycle(buf);
        }
    }

    /// Frees the spare payload buffers that went unused since the previous call (see
    /// [`BufferPool::trim_unused`]); the connection calls it about once a second.
    pub fn trim_spares(&mut self) {
        self.pool.trim_unused();
    }

    /// Bytes readable now as a stream.
    pub fn stream_readable(&self) -> bool {
        self.prefix > 0
    }

    /// Copies stream bytes into `out`; returns the count (0 if nothing is readable).
    pub fn read_stream(&mut self, out: &mut [u8]) -> usize {
        let mut copied = 0;
        while copied < out.len() && self.prefix > 0 {
            match &self.slots[0] {
                Slot::Data { buf, .. } => {
                    let avail = &buf[self.read_offset..];
                    let n = avail.len().min(out.len() - copied);
                    out[copied..copied + n].copy_from_slice(&avail[..n]);
                    copied += n;
                    self.read_offset += n;
                    if self.read_offset == buf.len() {
                        self.pop_front();
                    }
                }
                _ => {
                    self.pop_front();
                }
            }
        }
        copied
    }

    /// Drops read or abandoned slots at the front, and messages at the front that can no longer
    /// be completed (a packet given up on, or a start that was never received).
    fn clean_front(&mut self) {
        loop {
            if self.prefix == 0 {
                return;
            }
            match &self.slots[0] {
                Slot::Consumed | Slot::Dropped => {
                    self.pop_front();
                    continue;
                }
                Slot::Data { message, .. } if !message.boundary().starts_message() => {
                    self.pop_front();
                    self.discarded_pkts += 1;
                    continue;
                }
                _ => {}
            }
            // A message starts at the front: is it broken inside the prefix?
            match self.scan_head() {
                Scan::Broken(at) => {
                    for _ in 0..at {
                        if self.pop_front() {
                            self.discarded_pkts += 1;
                        }
                    }
                }
                _ => return,
            }
        }
    }

    /// Looks at the message starting at slot `start` (a Data slot that starts a message),
    /// within slots `..limit`. Every packet of a message must carry its message number: a
    /// sender that mixes up its blocks (4.11 after a TTL drop, interop/README.md finding 4)
    /// can put a block of another message at a sequence number inside this one, and gluing
    /// the two together would hand the application a message nobody sent.
    fn scan_message(&self, start: usize, limit: usize) -> Scan {
        self.scan_message_from(start, start, limit)
    }

    /// [`scan_message`](Self::scan_message) of the message at slot 0 within the prefix,
    /// resuming where the previous look stopped.
    fn scan_head(&mut self) -> Scan {
        let r = self.scan_message_from(0, self.head_scanned.min(self.prefix), self.prefix);
        if let Scan::Incomplete = r {
            // Within the prefix every slot is filled, so the whole prefix continues it.
            self.head_scanned = self.prefix;
        }
        r
    }

    /// [`scan_message`](Self::scan_message), with slots `start + 1 .. from` already known
    /// to continue the message.
    fn scan_message_from(&self, start: usize, from: usize, limit: usize) -> Scan {
        let number = match &self.slots[start] {
            Slot::Data { message, .. } => message.msg(),
            _ => return Scan::Broken(start + 1),
        };
        let mut i = from.max(start);
        if i >= limit {
            return Scan::Incomplete;
        }
        loop {
            match &self.slots[i] {
                Slot::Data { message, .. } => {
                    if i > start && (message.boundary().starts_message() || message.msg() != number)
                    {
                        return Scan::Broken(i);
                    }
                    if message.boundary().ends_message() {
                        return Scan::Complete(i);
                    }
                }
                Slot::Empty => return Scan::Incomplete,
                Slot::Consumed | Slot::Dropped => return Scan::Broken(i + 1),
            }
            i += 1;
            if i >= limit {
                return Scan::Incomplete;
            }
        }
    }

    /// Finds the next deliverable message: `(first slot, last slot, partial)`.
    fn find_message(&mut self) -> Option<(usize, usize, bool)> {
        self.clean_front();
        if self.prefix > 0 {
            match self.scan_head() {
                Scan::Complete(end) => return Some((0, end, false)),
                // The whole buffer is one unfinished message: hand out what is there rather
                // than dead-lock (the message is larger than the receive buffer).
                Scan::Incomplete if self.prefix >= self.capacity_pkts - 1 => {
                    return Some((0, self.prefix - 1, true));
                }
                _ => {}
            }
        }
        // Out-of-order delivery: a complete message with the in-order flag clear.
        while let Some(&(msg, first)) = self.complete.front() {
            if Self::starts_unordered(&self.slots, self.start_seq, msg, first) {
                let off = self.start_seq.offset_to(first) as usize;
                if let Scan::Complete(end) = self.scan_message(off, self.slots.len()) {
                    return Some((off, end, false));
                }
            }
            // Read at the head already, broken, or dropped.
            self.complete.pop_front();
        }
        None
    }

    /// True when [`read_message`](Self::read_message) would return a message.
    pub fn message_readable(&mut self) -> bool {
        self.find_message().is_some()
    }

    /// Reads one message into `out`.
    pub fn read_message(&mut self, out: &mut [u8]) -> Option<MsgRead> {
        let (first, last, partial) = self.find_message()?;
        let mut copied = 0;
        let mut msg_len = 0;
        let limit = self.capacity_pkts.saturating_sub(self.slots.len());
        for i in first..=last {
            if let Slot::Data { buf, message } =
                std::mem::replace(&mut self.slots[i], Slot::Consumed)
            {
                self.uncount_unordered(message);
                let n = buf.len().min(out.len() - copied);
                out[copied..copied + n].copy_from_slice(&buf[..n]);
                copied += n;
                msg_len += buf.len();
                self.pool.give_up_to(buf, limit);
            }
        }
        self.clean_front();
        Some(MsgRead {
            copied,
            msg_len,
            partial,
        })
    }
}

enum Scan {
    /// The message ends at this slot.
    Complete(usize),
    /// A packet is still missing.
    Incomplete,
    /// The message can never complete; the next message may start at this slot.
    Broken(usize),
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::Boundary;

    fn seq(n: u32) -> SeqNo {
        SeqNo::new(n).unwrap()
    }
    fn word(b: Boundary, in_order: bool, m: u32) -> MessageWord {
        MessageWord::new(b, in_order, MsgNo::new(m).unwrap())
    }
    fn solo(m: u32) -> MessageWord {
        word(Boundary::Solo, true, m)
    }

    #[test]
    fn stream_reads_stop_at_first_gap() {
        let mut r = RecvBuffer::new(16, seq(10));
        assert_eq!(r.insert(seq(10), solo(1), b"abc"), Insert::Stored);
        assert_eq!(r.insert(seq(12), solo(1), b"ghi"), Insert::Stored);
        assert_eq!(r.insert(seq(10), solo(1), b"xxx"), Insert::Duplicate);
        let mut out = [0u8; 10];
        assert_eq!(r.read_stream(&mut out), 3);
        assert_eq!(&out[..3], b"abc");
        assert_eq!(r.read_stream(&mut out), 0);
        r.insert(seq(11), solo(1), b"def");
        let mut out = [0u8; 4];
        assert_eq!(r.read_stream(&mut out), 4);
        assert_eq!(&out, b"defg");
        let mut rest = [0u8; 4];
        assert_eq!(r.read_stream(&mut rest), 2);
        assert_eq!(&rest[..2], b"hi");
        assert_eq!(r.start_seq(), seq(13));
    }

    #[test]
    fn taking_moves_whole_packets_that_fit_and_frees_their_slots() {
        let mut r = RecvBuffer::new(8, seq(0));
        for (i, p) in [&b"abcd"[..], b"efgh", b"ij", b"klmn"].iter().enumerate() {
            r.insert(seq(i as u32), solo(1), p);
        }
        let mut out = [0u8; 3];
        assert_eq!(r.read_stream(&mut out), 3);
        // "d" is left of the first packet; "efgh" fits in 6 with it, "ij" does not.
        let t = r.take_stream(6);
        assert_eq!((t.len(), r.start_seq()), (5, seq(2)));
        let mut out = [0u8; 8];
        assert_eq!(t.copy_to(&mut out), 5);
        assert_eq!(&out[..5], b"defgh");
        r.give_back(t);
        // Nothing whole fits in 1 byte: nothing is taken and the reader copies instead.
        assert!(r.take_stream(1).is_empty());
        assert_eq!(r.start_seq(), seq(2));
        let t = r.take_stream(100);
        assert_eq!(t.copy_to(&mut out), 6);
        assert_eq!(&out[..6], b"ijklmn");
        assert!(!r.stream_readable());
        // A short destination gets what fits.
        let mut short = [0u8; 4];
        assert_eq!(t.copy_to(&mut short), 4);
        assert_eq!(&short, b"ijkl");
    }

    #[test]
    fn a_packet_stored_over_a_partly_read_dropped_one_reads_from_its_start() {
        // Found by the recv_buffer fuzz target: 20 of 30 bytes read, the packet dropped, a
        // shorter one stored in its slot; reading panicked slicing at the old offset.
        let mut r = RecvBuffer::new(8, seq(0));
        assert_eq!(r.insert(seq(0), solo(1), &[1; 30]), Insert::Stored);
        let mut out = [0u8; 20];
        assert_eq!(r.read_stream(&mut out), 20);
        assert!(r.drop_range(seq(0), seq(0), MsgNo::new(1).unwrap()));
        assert_eq!(r.insert(seq(0), solo(2), &[2; 11]), Insert::Stored);
        let mut out = [0u8; 32];
        assert_eq!(r.read_stream(&mut out), 11);
        assert_eq!(&out[..11], &[2; 11]);
    }

    #[test]
    fn window_keeps_one_slot_free_and_rejects_old() {
        let mut r = RecvBuffer::new(4, seq(0));
        assert_eq!(r.insert(seq(3), solo(1), b"x"), Insert::OutOfWindow);
        assert_eq!(r.insert(seq(2), solo(1), b"x"), Insert::Stored);
        assert_eq!(
            r.insert(seq(SeqNo::MAX), solo(1), b"x"),
            Insert::OutOfWindow
        );
    }

    #[test]
    fn a_block_of_another_message_breaks_the_message() {
        // Message 1 spans seq 0..=2, but seq 1 carries a middle block of message 2 (a sender
        // that mixed up its buffer): message 1 is discarded, not glued together; message 3
        // after it is delivered.
        let mut r = RecvBuffer::new(16, seq(0));
        r.insert(seq(0), word(Boundary::First, true, 1), b"aa");
        r.insert(seq(1), word(Boundary::Middle, true, 2), b"XX");
        r.insert(seq(2), word(Boundary::Last, true, 1), b"aa");
        r.insert(seq(3), word(Boundary::Solo, true, 3), b"ok");
        let mut out = [0u8; 16];
        let m = r.read_message(&mut out).expect("message 3");
        assert_eq!(&out[..m.copied], b"ok");
        assert!(r.read_message(&mut out).is_none());
        // Out of order too: a complete-looking message with a foreign block is never handed out.
        let mut r = RecvBuffer::new(16, seq(0));
        r.insert(seq(1), word(Boundary::First, false, 5), b"bb");
        r.insert(seq(2), word(Boundary::Middle, false, 6), b"YY");
        r.insert(seq(3), word(Boundary::Last, false, 5), b"bb");
        assert!(r.read_message(&mut out).is_none());
    }

    #[test]
    fn messages_reassemble_in_order() {
        let mut r = RecvBuffer::new(16, seq(0));
        r.insert(seq(0), word(Boundary::First, true, 1), b"he");
        r.insert(seq(2), word(Boundary::Last, true, 1), b"lo");
        let mut out = [0u8; 16];
        assert!(r.read_message(&mut out).is_none());
        r.insert(seq(1), word(Boundary::Middle, true, 1), b"l");
        let m = r.read_message(&mut out).unwrap();
        assert_eq!(&out[..m.copied], b"hello");
        assert_eq!(m.msg_len, 5);
        assert_eq!(r.start_seq(), seq(3));
    }

    #[test]
    fn unordered_message_is_delivered_past_a_gap() {
        let mut r = RecvBuffer::new(16, seq(0));
        r.insert(seq(1), word(Boundary::Solo, false, 2), b"B");
        r.insert(seq(2), word(Boundary::Solo, true, 3), b"C");
        let mut out = [0u8; 4];
        let m = r.read_message(&mut out).unwrap();
        assert_eq!(&out[..m.copied], b"B");
        assert!(
            r.read_message(&mut out).is_none(),
            "in-order C waits for seq 0"
        );
        r.insert(seq(0), word(Boundary::Solo, true, 1), b"A");
        assert_eq!(
            r.read_message(&mut out).map(|m| out[..m.copied].to_vec()),
            Some(b"A".to_vec())
        );
        assert_eq!(
            r.read_message(&mut out).map(|m| out[..m.copied].to_vec()),
            Some(b"C".to_vec())
        );
        // The consumed slot of B is skipped.
        assert_eq!(r.start_seq(), seq(3));
        assert_eq!(
            r.insert(seq(1), word(Boundary::Solo, false, 2), b"B"),
            Insert::OutOfWindow
        );
    }

    /// Unordered messages of several packets, their packets arriving scrambled behind a gap:
    /// each is handed out as soon as its last missing packet arrives, whole and only once; a
    /// message completed at the head is not handed out again; nothing is left counted.
    #[test]
    fn unordered_messages_complete_in_any_order() {
        const LEN: u32 = 5;
        let mut r = RecvBuffer::new(256, seq(0));
        let pkt = |m: u32, k: u32| {
            let b = match k {
                0 => Boundary::First,
                k if k == LEN - 1 => Boundary::Last,
                _ => Boundary::Middle,
            };
            (seq(m * LEN + k), word(b, false, m + 1), [m as u8, k as u8])
        };
        let mut out = [0u8; 64];
        // Messages 1..=9 arrive in a scrambled order, message 0 (at the head) last.
        let mut order: Vec<(u32, u32)> = (1..10)
            .flat_map(|m| (0..LEN).map(move |k| (m, k)))
            .collect();
        order.reverse();
        order.swap(3, 30);
        order.swap(7, 22);
        let mut delivered = Vec::new();
        for (m, k) in order {
            let (s, w, p) = pkt(m, k);
            r.insert(s, w, &p);
            while let Some(got) = r.read_message(&mut out) {
                assert_eq!(got.copied, 2 * LEN as usize, "whole messages only");
                let m = u32::from(out[0]);
                assert!(
                    (0..LEN as usize).all(|k| out[2 * k] == m as u8 && out[2 * k + 1] == k as u8)
                );
                delivered.push(m);
            }
        }
        delivered.sort_unstable();
        assert_eq!(delivered, (1..10).collect::<Vec<_>>());
        for k in 0..LEN {
            let (s, w, p) = pkt(0, k);
            r.insert(s, w, &p);
        }
        let got = r.read_message(&mut out).expect("message 0 at the head");
        assert_eq!((got.copied, out[0]), (2 * LEN as usize, 0));
        assert!(
            r.read_message(&mut out).is_none(),
            "nothing is handed out twice"
        );
        assert!(r.unordered.is_empty());
        assert!(r.complete.is_empty());
    }

    #[test]
    fn dropped_message_is_skipped() {
        let mut r = RecvBuffer::new(16, seq(0));
        r.insert(seq(0), word(Boundary::First, true, 1), b"a");
        // seq 1 (last of message 1) lost; message 2 complete.
        r.insert(seq(2), word(Boundary::Solo, true, 2), b"b");
        let mut out = [0u8; 4];
        assert!(r.read_message(&mut out).is_none());
        assert!(r.drop_range(seq(1), seq(1), MsgNo::new(1).unwrap()));
        let m = r.read_message(&mut out).unwrap();
        assert_eq!(&out[..m.copied], b"b");
        assert_eq!(r.discarded_pkts(), 1);
    }

    #[test]
    fn drop_range_beyond_capacity_is_refused() {
        let mut r = RecvBuffer::new(8, seq(0));
        assert!(!r.drop_range(seq(0), seq(100), MsgNo::new(1).unwrap()));
        assert!(r.drop_range(seq(0), seq(3), MsgNo::new(1).unwrap()));
        assert_eq!(r.prefix_end(), seq(4));
    }

    #[test]
    fn message_larger_than_buffer_is_returned_partially() {
        let mut r = RecvBuffer::new(4, seq(0));
        r.insert(seq(0), word(Boundary::First, true, 1), b"a");
        r.insert(seq(1), word(Boundary::Middle, true, 1), b"b");
        r.insert(seq(2), word(Boundary::Middle, true, 1), b"c");
        let mut out = [0u8; 8];
        let m = r.read_message(&mut out).unwrap();
        assert!(m.partial);
        assert_eq!(&out[..m.copied], b"abc");
    }

    /// Long messages arriving a packet at a time, asked after every arrival whether a message
    /// is readable (as the connection does): each becomes readable exactly when complete, also
    /// when a late packet fills a gap, when a drop request breaks the head message, and when
    /// a packet of another message turns up inside it.
    #[test]
    fn long_messages_become_readable_exactly_when_complete() {
        const N: u32 = 300;
        let mut r = RecvBuffer::new(4 * N as usize, seq(0));
        let boundary = |k: u32| match k {
            0 => Boundary::First,
            k if k == N - 1 => Boundary::Last,
            _ => Boundary::Middle,
        };
        // Message 1 in order, packet 100 late; message 2 right behind it.
        for k in (0..N).filter(|&k| k != 100) {
            r.insert(seq(k), word(boundary(k), true, 1), &[1]);
            assert!(
                !r.message_readable(),
                "message 1 readable without packet 100"
            );
        }
        for k in 0..N / 2 {
            r.insert(seq(N + k), word(boundary(k), true, 2), &[2]);
            assert!(!r.message_readable());
        }
        r.insert(seq(100), word(Boundary::Middle, true, 1), &[1]);
        assert!(r.message_readable());
        let mut out = vec![0u8; 4 * N as usize];
        let m = r.read_message(&mut out).unwrap();
        assert_eq!((m.copied, out[0]), (N as usize, 1));
        assert!(!r.message_readable(), "message 2 is not complete");
        // A drop request for message 2's missing tail: message 2 is broken and discarded.
        assert!(r.drop_range(seq(N + N / 2), seq(2 * N - 1), MsgNo::new(2).unwrap()));
        assert!(!r.message_readable());
        // Message 3: a block of message 9 in its middle breaks it; message 4 after it reads.
        let base = 2 * N;
        for k in 0..N {
            let msg = if k == 7 { 9 } else { 3 };
            r.insert(seq(base + k), word(boundary(k), true, msg), &[3]);
        }
        r.insert(seq(base + N), word(Boundary::Solo, true, 4), &[4]);
        let m = r.read_message(&mut out).unwrap();
        assert_eq!((m.copied, out[0]), (1, 4));
    }

    #[test]
    fn truncated_read_discards_rest() {
        let mut r = RecvBuffer::new(8, seq(0));
        r.insert(seq(0), word(Boundary::First, true, 1), b"abcd");
        r.insert(seq(1), word(Boundary::Last, true, 1), b"efgh");
        let mut out = [0u8; 3];
        let m = r.read_message(&mut out).unwrap();
        assert_eq!((m.copied, m.msg_len), (3, 8));
        assert_eq!(r.start_seq(), seq(2));
    }
}
