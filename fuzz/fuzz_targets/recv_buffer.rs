//! Fuzz target: receive-buffer reassembly (`udt_proto::buffer::recv::RecvBuffer`) against a
//! reference model.
//!
//! The first byte picks a mode; the next ones the capacity (2..=33 packets) and the initial
//! sequence number (often just below the 31-bit wrap). The rest is a sequence of operations.
//!
//! * **Stream**: packets of a byte stream arrive in any order, duplicated (sometimes with
//!   other contents, which must be ignored), before the window or past it, interleaved with
//!   reads of any size. Every insert's outcome (`Stored`, `Duplicate`, `OutOfWindow`), every
//!   read's bytes, `start_seq`, `prefix_end` and `stream_readable` must equal the model's.
//!   At the end the remaining packets arrive in order and the whole stream must read back.
//! * **Messages**: a sender's messages (1..=4 packets, in-order flag set or clear, message
//!   numbers wrapping) arrive in any order with duplicates and drop requests (a sender's TTL
//!   expiry) mixed in. Checks: every message read is exactly one message sent, whole (no
//!   partial message: they all fit the buffer), never twice; a message is delivered from the
//!   head only once every earlier message was delivered or dropped; an insert is a
//!   `Duplicate` for a packet held or read and `OutOfWindow` exactly outside the window; a
//!   drop request fails exactly when it reaches past the capacity. At the end the missing
//!   packets arrive in order, and every message not dropped must have been delivered.
//! * **Hostile**: arbitrary message words (boundaries, numbers, in-order flags that no sender
//!   would produce), drop requests and reads: no panic, reads stay within the caller's
//!   buffer and messages within the capacity.
#![no_main]

use std::collections::btree_map::Entry;
use std::collections::{BTreeMap, HashSet};

use libfuzzer_sys::fuzz_target;
use udt_fuzz::Input;
use udt_proto::buffer::recv::{Insert, RecvBuffer};
use udt_proto::seq::{MsgNo, SeqNo};
use udt_proto::wire::{Boundary, MessageWord};

/// Operations per input, at most.
const MAX_OPS: usize = 4_000;

fn solo() -> MessageWord {
    MessageWord::new(Boundary::Solo, true, MsgNo::new(1).expect("valid"))
}

/// Payload of stream packet `k`; `variant` other than 0 gives a different payload for the
/// same packet (a forged duplicate that must be ignored).
fn stream_payload(k: u64, variant: u8) -> Vec<u8> {
    let len = ((k * 7 + u64::from(variant)) % 23) as usize;
    (0..len)
        .map(|i| (k as u8).wrapping_mul(31) ^ (i as u8) ^ variant.wrapping_mul(101))
        .collect()
}

fn stream(input: &mut Input<'_>, cap: usize, isn: SeqNo) {
    let mut buf = RecvBuffer::new(cap, isn);
    let cap = buf.capacity_pkts();
    // Model: absolute packet index of the buffer start, packets held (k >= start), bytes of
    // packet `start` already read.
    let mut start = 0u64;
    let mut held: BTreeMap<u64, Vec<u8>> = BTreeMap::new();
    let mut offset = 0usize;
    let mut out = vec![0u8; 256];
    let read = |buf: &mut RecvBuffer,
                held: &mut BTreeMap<u64, Vec<u8>>,
                start: &mut u64,
                offset: &mut usize,
                out: &mut [u8]| {
        let n = buf.read_stream(out);
        let mut expect = Vec::new();
        while expect.len() < out.len() {
            let Some(p) = held.get(start) else { break };
            let take = (p.len() - *offset).min(out.len() - expect.len());
            expect.extend_from_slice(&p[*offset..*offset + take]);
            *offset += take;
            if *offset == p.len() {
                held.remove(start);
                *start += 1;
                *offset = 0;
            }
        }
        assert_eq!(&out[..n], &expect[..], "stream bytes differ from the model");
    };
    // The same through `take_stream`: whole packets whose unread bytes fit in `out`.
    let take = |buf: &mut RecvBuffer,
                held: &mut BTreeMap<u64, Vec<u8>>,
                start: &mut u64,
                offset: &mut usize,
                out: &mut [u8]| {
        let taken = buf.take_stream(out.len());
        let n = taken.copy_to(out);
        assert_eq!(n, taken.len(), "taken bytes not all copied");
        buf.give_back(taken);
        let mut expect = Vec::new();
        while let Some(p) = held.get(start) {
            if expect.len() + p.len() - *offset > out.len() {
                break;
            }
            expect.extend_from_slice(&p[*offset..]);
            held.remove(start);
            *start += 1;
            *offset = 0;
        }
        assert_eq!(&out[..n], &expect[..], "taken bytes differ from the model");
    };
    let mut ops = 0;
    while !input.is_empty() && ops < MAX_OPS {
        ops += 1;
        let op = input.u8();
        if op & 0x80 == 0 {
            // A packet, relative to the window start: a few before it, up to a few past it.
            let rel = i64::from(op & 0x3F) - 8 + i64::from(input.u8() % 4) * 64;
            let rel = rel.min(cap as i64 + 8);
            let variant = if op & 0x40 != 0 { input.u8() } else { 0 };
            let k = start as i64 + rel;
            let seq = if rel >= 0 {
                isn.add((start + rel as u64) as u32)
            } else {
                isn.add(start as u32).sub((-rel) as u32)
            };
            let payload = stream_payload(k.max(0) as u64, variant);
            let expect = if rel < 0 || rel as usize >= cap - 1 {
                Insert::OutOfWindow
            } else {
                match held.entry(k as u64) {
                    Entry::Occupied(_) => Insert::Duplicate,
                    Entry::Vacant(v) => {
                        v.insert(payload.clone());
                        Insert::Stored
                    }
                }
            };
            assert_eq!(buf.insert(seq, solo(), &payload), expect, "insert at {rel}");
        } else {
            let n = usize::from(op & 0x7F) * 2;
            if input.u8() & 1 == 0 {
                read(&mut buf, &mut held, &mut start, &mut offset, &mut out[..n]);
            } else {
                take(&mut buf, &mut held, &mut start, &mut offset, &mut out[..n]);
            }
        }
        assert_eq!(buf.start_seq(), isn.add(start as u32));
        let mut end = start;
        while held.contains_key(&end) {
            end += 1;
        }
        assert_eq!(buf.prefix_end(), isn.add(end as u32));
        assert_eq!(buf.stream_readable(), end > start);
    }
    // The rest arrives in order: everything reads back.
    let last = start + 3 * cap as u64;
    let mut k = start;
    while k < last {
        if k < start + cap as u64 - 1 {
            let payload = stream_payload(k, 0);
            let r = buf.insert(isn.add(k as u32), solo(), &payload);
            match held.entry(k) {
                Entry::Occupied(_) => assert_eq!(r, Insert::Duplicate),
                Entry::Vacant(v) => {
                    assert_eq!(r, Insert::Stored);
                    v.insert(payload);
                }
            }
            k += 1;
        } else {
            read(&mut buf, &mut held, &mut start, &mut offset, &mut out);
        }
    }
    while !held.is_empty() {
        let before = start;
        read(&mut buf, &mut held, &mut start, &mut offset, &mut out);
        assert!(start > before || held.is_empty(), "stream stuck at {start}");
    }
    assert!(!buf.stream_readable());
}

/// One message as the sender cut it.
struct Message {
    /// Absolute index of its first packet.
    first: u64,
    pkts: u64,
    number: MsgNo,
    in_order: bool,
}

/// The sender's side: messages and their packets, generated as far as needed.
struct Sender {
    isn: SeqNo,
    msgs: Vec<Message>,
    /// Index of the message of each packet.
    owner: Vec<usize>,
    next_no: MsgNo,
    max_pkts: u64,
}

impl Sender {
    fn ensure(&mut self, k: u64, input: &mut Input<'_>) {
        while (self.owner.len() as u64) <= k {
            let shape = input.u8();
            let pkts = 1 + u64::from(shape & 3).min(self.max_pkts - 1);
            let first = self.owner.len() as u64;
            let idx = self.msgs.len();
            self.msgs.push(Message {
                first,
                pkts,
                number: self.next_no,
                in_order: shape & 4 == 0,
            });
            self.next_no = self.next_no.next_for_sender();
            for _ in 0..pkts {
                self.owner.push(idx);
            }
        }
    }
    fn word(&self, k: u64) -> MessageWord {
        let m = &self.msgs[self.owner[k as usize]];
        let pos = (k - m.first) as usize;
        MessageWord::new(
            Boundary::for_position(pos, m.pkts as usize),
            m.in_order,
            m.number,
        )
    }
    fn payload(&self, k: u64) -> Vec<u8> {
        let j = self.owner[k as usize];
        let pos = (k - self.msgs[j].first) as u8;
        let mut p = (j as u32).to_le_bytes().to_vec();
        p.push(pos);
        p.extend((0..(j + pos as usize) % 7).map(|i| i as u8 ^ pos));
        p
    }
    fn message_bytes(&self, j: usize) -> Vec<u8> {
        let m = &self.msgs[j];
        (m.first..m.first + m.pkts)
            .flat_map(|k| self.payload(k))
            .collect()
    }
    fn seq(&self, k: u64) -> SeqNo {
        self.isn.add(k as u32)
    }
}

struct MessageCheck {
    buf: RecvBuffer,
    cap: usize,
    tx: Sender,
    /// Absolute index of the buffer start, as reported by the buffer.
    start: u64,
    delivered: HashSet<usize>,
    dropped: HashSet<usize>,
    /// Packets inserted and not refused.
    stored: HashSet<u64>,
}

impl MessageCheck {
    fn sync_start(&mut self) {
        let off = self.tx.isn.offset_to(self.buf.start_seq());
        assert!(
            off >= 0,
            "buffer start went before the initial sequence number"
        );
        assert!(off as u64 >= self.start, "buffer start went backwards");
        self.start = off as u64;
    }

    fn insert(&mut self, k: u64) {
        let (seq, word, payload) = (self.tx.seq(k), self.tx.word(k), self.tx.payload(k));
        let j = self.tx.owner[k as usize];
        let r = self.buf.insert(seq, word, &payload);
        let in_window = k >= self.start && k - self.start < self.cap as u64 - 1;
        if !in_window {
            assert_eq!(r, Insert::OutOfWindow, "packet {k}, start {}", self.start);
            return;
        }
        if self.dropped.contains(&j) {
            // A dropped slot takes the packet again; a held one refuses it.
            assert_ne!(r, Insert::OutOfWindow);
        } else if self.delivered.contains(&j) || self.stored.contains(&k) {
            assert_eq!(r, Insert::Duplicate, "packet {k} of message {j}");
        } else {
            assert_eq!(r, Insert::Stored, "packet {k} of message {j}");
        }
        if r == Insert::Stored {
            self.stored.insert(k);
        }
    }

    fn read(&mut self, out_len: usize) -> bool {
        let mut out = vec![0u8; out_len];
        let Some(r) = self.buf.read_message(&mut out) else {
            return false;
        };
        assert!(
            !r.partial,
            "a message that fits the buffer was delivered in part"
        );
        assert!(
            r.msg_len >= 5,
            "a message of {} bytes was never sent",
            r.msg_len
        );
        assert_eq!(r.copied, r.msg_len.min(out_len));
        // The first packet's payload starts with the message's index (reads are never
        // shorter than 5 bytes, so it is always there).
        let j = u32::from_le_bytes(out[..4].try_into().expect("4 bytes")) as usize;
        assert!(j < self.tx.msgs.len(), "message {j} was never sent");
        let bytes = self.tx.message_bytes(j);
        assert_eq!(r.msg_len, bytes.len(), "message {j} has the wrong length");
        assert_eq!(
            &out[..r.copied],
            &bytes[..r.copied],
            "message {j} corrupted"
        );
        assert!(self.delivered.insert(j), "message {j} delivered twice");
        let m = &self.tx.msgs[j];
        if m.in_order || m.first == self.start {
            // From the head: every earlier message is gone.
            for i in 0..j {
                assert!(
                    self.delivered.contains(&i) || self.dropped.contains(&i),
                    "message {j} delivered before message {i}"
                );
            }
        }
        self.sync_start();
        true
    }
}

fn messages(input: &mut Input<'_>, cap: usize, isn: SeqNo) {
    let buf = RecvBuffer::new(cap, isn);
    let cap = buf.capacity_pkts();
    let first_no = MsgNo::from_masked(MsgNo::MAX - u32::from(input.u8()));
    let mut c = MessageCheck {
        buf,
        cap,
        tx: Sender {
            isn,
            msgs: Vec::new(),
            owner: Vec::new(),
            next_no: first_no.next_for_sender(),
            max_pkts: (cap as u64).saturating_sub(2).clamp(1, 4),
        },
        start: 0,
        delivered: HashSet::new(),
        dropped: HashSet::new(),
        stored: HashSet::new(),
    };
    let mut ops = 0;
    while !input.is_empty() && ops < MAX_OPS {
        ops += 1;
        let op = input.u8();
        match op >> 6 {
            0 | 1 => {
                let rel = u64::from(op & 0x7F);
                let k = (c.start + rel).saturating_sub(4);
                c.tx.ensure(k, input);
                c.insert(k);
            }
            2 => {
                // Drop request for a message near the window.
                let k = c.start + u64::from(op & 0x3F);
                c.tx.ensure(k, input);
                let j = c.tx.owner[k as usize];
                let m = &c.tx.msgs[j];
                let last = m.first + m.pkts - 1;
                let ok = c
                    .buf
                    .drop_range(c.tx.seq(m.first), c.tx.seq(last), m.number);
                assert_eq!(
                    ok,
                    last < c.start + c.cap as u64 - 1,
                    "drop of {}..={last} with start {}",
                    m.first,
                    c.start
                );
                if ok {
                    c.dropped.insert(j);
                }
            }
            _ => {
                let len = 5 + usize::from(op & 0x3F) * 3;
                let readable = c.buf.message_readable();
                let got = c.read(len);
                assert_eq!(
                    readable, got,
                    "message_readable disagrees with read_message"
                );
            }
        }
        c.sync_start();
    }
    // Every packet still missing arrives, in order; everything not dropped gets delivered.
    let total = c.start + 3 * c.cap as u64;
    c.tx.ensure(total, input);
    let end = c.tx.msgs[c.tx.owner[total as usize]].first;
    let mut k = c.start;
    while k < end {
        if k < c.start {
            k = c.start;
            continue;
        }
        if k - c.start < c.cap as u64 - 1 {
            c.insert(k);
            k += 1;
        } else {
            // The window is full of packets: a message is readable, or the front holds
            // dropped slots that reading clears.
            let before = c.start;
            let got = c.read(256);
            c.sync_start();
            assert!(got || c.start > before, "stuck with the window full at {k}");
        }
    }
    while c.read(256) {}
    for j in 0..c.tx.owner[end as usize] {
        assert!(
            c.delivered.contains(&j) || c.dropped.contains(&j),
            "message {j} was never delivered"
        );
    }
}

fn hostile(input: &mut Input<'_>, cap: usize, isn: SeqNo) {
    let mut buf = RecvBuffer::new(cap, isn);
    let cap = buf.capacity_pkts();
    let mut ops = 0;
    let mut out = vec![0u8; 512];
    while !input.is_empty() && ops < MAX_OPS {
        ops += 1;
        let op = input.u8();
        let start = buf.start_seq();
        let seq = start.add(u32::from(input.u8())).sub(8);
        match op % 5 {
            0 | 1 => {
                // A few message numbers, any boundary and order bits.
                let raw = (u32::from(op) << 24) & 0xE000_0000 | u32::from(input.u8() % 6);
                let len = usize::from(input.u8() % 64);
                buf.insert(seq, MessageWord::from_raw(raw), &out[..len]);
            }
            2 => {
                let last = seq.add(u32::from(input.u8() % 16));
                buf.drop_range(seq, last, MsgNo::from_masked(u32::from(input.u8() % 6)));
            }
            3 => {
                let n = usize::from(input.u8()) * 2;
                let got = buf.read_stream(&mut out[..n]);
                assert!(got <= n);
            }
            _ => {
                let n = usize::from(input.u8()) * 2;
                if let Some(r) = buf.read_message(&mut out[..n]) {
                    assert!(r.copied <= n && r.copied <= r.msg_len);
                    assert!(r.msg_len <= cap * 63, "message of {} bytes", r.msg_len);
                }
            }
        }
        let off = start.offset_to(buf.start_seq());
        assert!(off >= 0, "buffer start went backwards");
        assert!(
            buf.slots_before(buf.prefix_end()) < cap,
            "prefix past capacity"
        );
    }
}

fuzz_target!(|data: &[u8]| {
    let mut input = Input::new(data);
    let mode = input.u8();
    let cap = 2 + usize::from(input.u8() % 32);
    let isn = if input.bool() {
        SeqNo::from_masked(SeqNo::MAX - u32::from(input.u8()))
    } else {
        SeqNo::from_masked(input.u32())
    };
    match mode % 3 {
        0 => stream(&mut input, cap, isn),
        1 => messages(&mut input, cap, isn),
        _ => hostile(&mut input, cap, isn),
    }
});
