//! A deterministic driver for unit tests of the algorithms: it plays the connection's part
//! (sequence numbers, clock, RTT) and calls the hooks directly through [`CcContext::new`].

use super::{CcContext, CcControls, CcInputs, CongestionControl, PacketInfo};
use crate::seq::{SeqNo, SeqRange};
use crate::time::Instant;
use crate::wire::MessageWord;

/// One algorithm under test and the connection state it sees.
pub(crate) struct Harness {
    pub cc: Box<dyn CongestionControl>,
    pub inputs: CcInputs,
    pub controls: CcControls,
}

impl Harness {
    /// Starts `cc` at t = 1 s with MSS 1500, RTT 100 ms and a 100 000-packet flow window.
    pub fn new(cc: Box<dyn CongestionControl>) -> Self {
        let inputs = CcInputs {
            now: Instant::from_micros(1_000_000),
            mss: 1500,
            max_cwnd_pkts: 100_000.0,
            snd_curr_seq: SeqNo::new(999).unwrap(),
            rcv_rate_pps: 0,
            rtt_us: 100_000,
            rtt_var_us: 10_000,
            bandwidth_pps: 0,
            ..Default::default()
        };
        let mut h = Harness {
            cc,
            inputs,
            controls: CcControls::default(),
        };
        h.with(|cc, ctx| cc.init(ctx));
        h
    }

    pub fn with(&mut self, f: impl FnOnce(&mut dyn CongestionControl, &mut CcContext<'_>)) {
        let mut ctx = CcContext::new(&self.inputs, &mut self.controls);
        f(&mut *self.cc, &mut ctx);
    }

    pub fn cwnd(&self) -> f64 {
        self.controls.cwnd_pkts
    }

    pub fn period(&self) -> f64 {
        self.controls.pkt_snd_period_us
    }

    pub fn advance_us(&mut self, us: u64) {
        self.inputs.now = self.inputs.now.plus_micros(us);
    }

    /// Sends `n` new packets (calling `on_packet_sent`); returns the last sequence number.
    pub fn send(&mut self, n: u32) -> SeqNo {
        for _ in 0..n {
            let seq = self.inputs.snd_curr_seq.next();
            self.inputs.snd_curr_seq = seq;
            let pkt = packet(seq);
            self.with(|cc, ctx| cc.on_packet_sent(ctx, &pkt));
        }
        self.inputs.snd_curr_seq
    }

    /// An ACK whose first unacknowledged number is `ack`.
    pub fn ack(&mut self, ack: SeqNo) {
        self.with(|cc, ctx| cc.on_ack(ctx, ack));
    }

    /// A NAK for `first..=last`.
    pub fn loss(&mut self, first: SeqNo, last: SeqNo) {
        let r = [SeqRange { first, last }];
        self.with(|cc, ctx| cc.on_loss(ctx, &r));
    }

    pub fn timeout(&mut self) {
        self.with(|cc, ctx| cc.on_timeout(ctx));
    }

    /// One loss-free round trip of a window-limited sender: sends a window, waits `rtt_us`,
    /// then acknowledges it in ACKs of two packets.
    pub fn round(&mut self, rtt_us: u64) {
        let n = self.cwnd().floor().max(1.0) as u32;
        let first = self.inputs.snd_curr_seq.next();
        self.send(n);
        self.advance_us(rtt_us);
        let mut acked = 0;
        while acked < n {
            acked = (acked + 2).min(n);
            self.ack(first.add(acked));
        }
    }
}

/// A 1456-byte data packet with sequence number `seq`, as the algorithms see one sent.
pub(crate) fn packet(seq: SeqNo) -> PacketInfo {
    PacketInfo {
        seq,
        message: MessageWord::from_raw(0),
        timestamp: 0,
        payload_len: 1456,
        retransmission: false,
    }
}
