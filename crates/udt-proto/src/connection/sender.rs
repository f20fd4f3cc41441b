//! The sending side (spec §10): choosing the next packet, pacing, and processing ACK and NAK.

use super::{Connection, Event, Outgoing, State, MAX_TIME_DEBT_US};
use crate::cc::{PacketInfo, DELIVERY_WINDOW_MIN_US};
use crate::config::MAX_WINDOW_PKTS;
use crate::seq::{SeqNo, SeqRange};
use crate::time::{Instant, SYN_US};
use crate::wire::{Ack, DataHeader, LossReport, HEADER_LEN};

/// Smallest congestion window the sender uses whatever congestion control sets, packets: a
/// window of zero would stop a connection for good.
const MIN_CWND_PKTS: f64 = 2.0;
/// Longest inter-packet period the sender uses whatever congestion control sets, µs.
const MAX_PERIOD_US: f64 = 1_000_000.0;
/// Packets acknowledged before the receiver's arrival-rate reports count. A receiver reports
/// a rate once 9 intervals are real (ours since the thirty-fourth round, for 4.11 senders;
/// `estimate/receive_rate.rs`), and the first ones measure a slow start of a few packets a
/// round trip. Averaged in from then on, they changed how our slow start ended: in the
/// simulator (`scenarios/sweep/from_start.toml`) at 1 Gbit/s, 200 ms with a one-BDP queue,
/// 0.882 → 0.844 of the link with 0.1 % of the packets lost where none had been, and
/// 0.817 → 0.724 at 1 % loss. Before,
/// our receiver reported 1 packet/s (its initial intervals) for about 72 packets. Skipping
/// only 40, four flows sharing 10 packets of queue at 100 Mbit/s, 1 ms shared at a Jain
/// index of 0.94 (0.97 before, 0.99 with 80).
const EARLY_ARRIVAL_RATE_PKTS: u64 = 80;

/// Result of trying to send a data packet.
pub(super) enum DataOutcome {
    /// A data packet of this length was written.
    Sent(usize),
    /// A control packet (drop request) was queued instead.
    Queued,
    /// Nothing can be sent now.
    Nothing,
}

impl Connection {
    /// Offset of `seq` from the oldest unacknowledged packet (negative: already acknowledged).
    /// Numbers a peer may legitimately name lie in `0 ..= sent_span()`.
    fn window_offset(&self, seq: SeqNo) -> i64 {
        i64::from(self.sndbuf.first_seq().offset_to(seq))
    }

    /// Offset of the next new packet: packets sent and not yet acknowledged.
    fn sent_span(&self) -> i64 {
        self.sndbuf.unacked_pkts() as i64
    }

    /// Inter-packet period in force, µs: congestion control's, raised to respect the maximum
    /// bandwidth option (`10^6 · MSS / MAXBW`).
    pub(super) fn effective_period_us(&self) -> f64 {
        // No algorithm may stop the sender: at worst a packet a second leaves.
        let p = (self.cc_ctl.pkt_snd_period_us * self.warning_stretch).min(MAX_PERIOD_US);
        match self.config.max_bandwidth {
            Some(bw) => p.max(1e6 * f64::from(self.mss) / bw as f64),
            None => p,
        }
    }

    /// When the next data packet may leave. New data also waits out a pause requested by
    /// congestion control; retransmissions do not.
    pub(super) fn next_send_time(&self) -> Instant {
        let t = Instant::from_micros(ceil_to_u64(self.next_send_us));
        match self.cc_ctl.pause_until {
            Some(p) if self.snd_loss.is_empty() => t.max(p),
            _ => t,
        }
    }

    /// True when fewer than `min(flow window, congestion window)` packets are unacknowledged.
    fn window_open(&self) -> bool {
        let unacked = self
            .snd_last_ack
            .offset_to(self.sndbuf.last_sent_seq().next())
            .max(0) as u64;
        // No algorithm may close the window for good: two packets may always be in flight.
        let cwnd = self
            .cc_ctl
            .cwnd_pkts
            .max(MIN_CWND_PKTS)
            .min(f64::from(MAX_WINDOW_PKTS)) as u64;
        // Our own flight flag size bounds the window too (4.11 uses the peer's alone): the send
        // buffer lets packets in flight grow past its capacity with the window, and a peer that
        // advertised a huge flow window and never acknowledged would otherwise choose how much
        // memory that takes.
        let flow = self
            .flow_window
            .min(self.config.flight_flag_size.max(MIN_CWND_PKTS as u32));
        unacked < u64::from(flow).min(cwnd)
    }

    /// True when a packet could be sent as soon as pacing allows.
    pub(super) fn has_sendable_data(&self) -> bool {
        !self.snd_loss.is_empty() || (self.sndbuf.has_unsent() && self.window_open())
    }

    /// Called when the sender may have gone from blocked (window full, nothing queued) to
    /// sendable: waiting for an ACK is not lateness, so the schedule restarts at `now` without
    /// debt. (4.11 counts the stall as debt and then bursts.)
    pub(super) fn resume_sending(&mut self, now: Instant) {
        self.next_send_us = self.next_send_us.max(now.as_micros() as f64);
        self.time_debt_us = 0.0;
    }

    /// Schedules the packet after one sent at `now` (spec §10.2): one period later, less any
    /// debt from sending late; the second packet of a probing pair follows at once.
    fn schedule_after_send(&mut self, now: Instant, probe: bool) {
        let now_us = now.as_micros() as f64;
        // A late probe counts as debt too (as in 4.11): otherwise a runtime that wakes late
        // would lose that lateness once every 16 packets and fall short of the rate.
        let late = (now_us - self.next_send_us).max(0.0);
        self.time_debt_us = (self.time_debt_us + late).min(MAX_TIME_DEBT_US);
        if probe {
            self.next_send_us = now_us;
            // The pair's second packet borrows the next one's slot, unless the algorithm
            // wants 4.11's extra packet per pair.
            if !self.cc_ctl.probe_pair_outside_rate {
                self.pair_owed_us = self.effective_period_us();
            }
            return;
        }
        let period = self.effective_period_us() + std::mem::take(&mut self.pair_owed_us);
        if self.time_debt_us >= period {
            self.next_send_us = now_us;
            self.time_debt_us -= period;
        } else {
            self.next_send_us = now_us + period - self.time_debt_us;
            self.time_debt_us = 0.0;
        }
    }

    /// Writes data packet `seq` (held in the send buffer) into `buf`.
    fn write_data(&self, now: Instant, seq: SeqNo, buf: &mut [u8]) -> Option<(usize, PacketInfo)> {
        let block = self.sndbuf.get(seq)?;
        let len = HEADER_LEN + block.data.len();
        let timestamp = now.micros_since(self.opened_at) as u32;
        let header = DataHeader {
            seq,
            message: block.message,
            timestamp,
            dst: self.peer_id,
        };
        header.emit(buf).ok()?;
        buf[HEADER_LEN..len].copy_from_slice(&block.data);
        let info = PacketInfo {
            seq,
            message: block.message,
            timestamp,
            payload_len: block.data.len(),
            retransmission: false,
        };
        Some((len, info))
    }

    fn after_data_sent(
        &mut self,
        now: Instant,
        len: usize,
        mut info: PacketInfo,
        retransmission: bool,
    ) {
        info.retransmission = retransmission;
        self.all_sent_history.on_ack(now, 1);
        let payload = info.payload_len as u64;
        self.stats.count(|c| {
            c.pkt_sent += 1;
            c.bytes_sent += payload;
            if retransmission {
                c.pkt_retrans += 1;
            }
        });
        self.with_cc(now, |cc, ctx| cc.on_packet_sent(ctx, &info));
        let probe = !retransmission && info.seq.get() & 0xF == 0;
        self.schedule_after_send(now, probe);
        debug_assert!(len >= HEADER_LEN);
    }

    /// Produces the next data packet (spec §10.3): retransmissions first, then new data within
    /// the windows.
    pub(super) fn send_data(&mut self, now: Instant, buf: &mut [u8]) -> DataOutcome {
        if buf.len() < HEADER_LEN + self.payload_size + self.crypto_overhead() {
            return DataOutcome::Nothing;
        }
        while let Some(seq) = self.snd_loss.pop_first() {
            if seq.is_before(self.sndbuf.first_seq()) {
                continue; // acknowledged meanwhile
            }
            if let Some(drop) = self.sndbuf.drop_if_expired(seq, now) {
                self.snd_loss.remove_up_to(drop.last);
                self.stats.count(|c| c.msg_snd_dropped += 1);
                self.queue(Outgoing::Drop(drop));
                return DataOutcome::Queued;
            }
            if let Some((len, info)) = self.write_data(now, seq, buf) {
                let Some(len) = self.seal_data(buf, len) else {
                    continue;
                };
                self.retx_watch.retransmitted(seq, now);
                self.after_data_sent(now, len, info, true);
                return DataOutcome::Sent(len);
            }
        }
        if self.cc_ctl.pause_until.is_some_and(|p| now < p) || !self.window_open() {
            return DataOutcome::Nothing;
        }
        let expired = self.sndbuf.discard_expired_unsent(now);
        if expired > 0 {
            self.stats
                .count(|c| c.msg_snd_dropped += u64::from(expired));
        }
        let Some((seq, _)) = self.sndbuf.send_next() else {
            return DataOutcome::Nothing;
        };
        match self
            .write_data(now, seq, buf)
            .and_then(|(len, info)| Some((self.seal_data(buf, len)?, info)))
        {
            Some((len, info)) => {
                self.sent_history.on_ack(now, 1);
                if seq == self.sndbuf.first_seq() {
                    self.observe_head(now);
                }
                self.after_data_sent(now, len, info, false);
                DataOutcome::Sent(len)
            }
            None => DataOutcome::Nothing,
        }
    }

    /// A full ACK (spec §10.4).
    pub(super) fn on_ack(&mut self, now: Instant, a: &Ack) {
        let ack = a.ack;
        let off = self.window_offset(ack);
        if off > self.sent_span() {
            // Acknowledges data never sent. 4.11 breaks the connection; we drop the packet
            // (unanswered), so a forged or corrupted ACK cannot kill it.
            self.stats.count(|c| {
                c.pkt_invalid += 1;
                c.pkt_forged_ack += 1;
            });
            return;
        }
        // ACK2 for every other full ACK, also a late duplicate, as x86 builds of 4.11 do (spec
        // §8.3).
        self.queue(Outgoing::Ack2(a.ack_no));
        if off < 0 {
            return; // older than anything unacknowledged: a late duplicate
        }
        let was_sendable = self.has_sendable_data();
        let last_ack_off = self.window_offset(self.snd_last_ack);
        if off >= last_ack_off {
            self.flow_window = a.avail_buf_pkts.clamp(2, MAX_WINDOW_PKTS);
            self.snd_last_ack = ack;
            self.delivery.on_ack(now, (off - last_ack_off) as u64);
            self.receipts.on_ack(now, ack);
        }
        if self.sndbuf.acknowledge(ack) > 0 {
            self.snd_loss.remove_up_to(ack.prev());
            self.retx_watch.acknowledged(ack);
            self.observe_head(now);
            self.rtt.update(a.rtt_us);
            let rtt = a.rtt_us.min(crate::estimate::rtt::MAX_RTT_SAMPLE_US);
            // Before its first ACK2 round trip a receiver reports its initial guess (100 ms,
            // ours and 4.11's alike), which says nothing about the path.
            if rtt != crate::estimate::rtt::INITIAL_RTT_US {
                self.last_rtt_us = rtt;
                self.min_rtt.update(now, rtt);
            }
            // Older samples than a few round trips (and at least a second) are of no use.
            let keep = (4 * u64::from(self.rtt.rtt_us())).max(1_000_000);
            self.delivery.prune(keep);
            self.receipts.prune(keep);
            self.sent_history.prune(keep);
            self.all_sent_history.prune(keep);
            if let Some(r) = a.rates {
                if r.arrival_pps > 0 && self.delivery.acked_pkts() >= EARLY_ARRIVAL_RATE_PKTS {
                    self.arrival_rate_pps = smooth(self.arrival_rate_pps, r.arrival_pps);
                }
                if r.capacity_pps > 0 {
                    self.bandwidth_pps = smooth(self.bandwidth_pps, r.capacity_pps);
                }
                // Settling is a start-up matter: once the smoothed value has caught up, later
                // swings of the report (pairs broken by loss) do not withdraw it.
                self.capacity_settled = self.capacity_settled
                    || capacity_settled(
                        r.capacity_pps,
                        self.bandwidth_pps,
                        self.delivery.acked_pkts(),
                    );
                if self.timing_compressed(now) {
                    self.timing_compressed_at = Some(now);
                }
                self.peer_timing_compressed = self
                    .timing_compressed_at
                    .is_some_and(|t| now.micros_since(t) < COMPRESSED_HOLD_US);
                self.capacity_reported =
                    r.capacity_pps > 0 && self.capacity_settled && !self.peer_timing_compressed;
            }
            self.stats.count(|c| c.pkt_recv_ack += 1);
            self.with_cc(now, |cc, ctx| cc.on_ack(ctx, ack));
            // Congestion control has set its rate: congestion warnings' stretch ends.
            self.warning_stretch = 1.0;
            if self.send_blocked && self.sndbuf.free_pkts() >= self.writable_low_water_pkts() {
                self.send_blocked = false;
                self.events.push_back(Event::Writable);
            }
            if self.sndbuf.is_empty() {
                self.stats.set_sender_busy(false, now);
                self.drained_at = Some(now);
                if matches!(self.state, State::Closing { .. }) {
                    self.drained_while_closing(now);
                    return;
                }
            }
        }
        if !was_sendable && self.has_sendable_data() {
            self.resume_sending(now);
        }
    }

    /// A light ACK (spec §10.5): window accounting, and the delivery rate's progress.
    pub(super) fn on_light_ack(&mut self, now: Instant, ack: SeqNo) {
        let off = self.window_offset(ack);
        if off > self.sent_span() {
            self.stats.count(|c| {
                c.pkt_invalid += 1;
                c.pkt_forged_ack += 1;
            });
            return;
        }
        let was_sendable = self.has_sendable_data();
        let last_ack_off = self.window_offset(self.snd_last_ack);
        if off >= last_ack_off {
            let advanced = (off - last_ack_off) as u32;
            self.flow_window = self.flow_window.saturating_sub(advanced);
            self.snd_last_ack = ack;
            self.delivery.on_ack(now, u64::from(advanced));
            self.receipts.on_ack(now, ack);
        }
        // A light ACK can open a window that the congestion window had closed: the wait was
        // for this ACK, not lateness (see `resume_sending`). Counted as lateness, it came
        // back as a burst of up to `MAX_TIME_DEBT_US` of packets, which overflowed an
        // 8-packet queue at 100 Mb/s, 10 ms by 26-35 packets in a row, round trip after
        // round trip, once a hole held the full ACKs back.
        if !was_sendable && self.has_sendable_data() {
            self.resume_sending(now);
        }
    }

    /// A NAK (spec §10.6).
    pub(super) fn on_nak(&mut self, now: Instant, report: &LossReport<'_>) {
        // 4.11 hands the raw list to congestion control first and breaks the connection if it
        // names unsent packets; we validate first and drop an invalid report. Validation is in
        // offsets from the oldest unacknowledged packet: within the send window they order
        // numbers unambiguously, where wrap-aware comparisons of arbitrary numbers do not
        // (two numbers 2^30 apart compare "before" both ways).
        let sent = self.sent_span();
        let mut ranges: Vec<SeqRange> = Vec::with_capacity(report.word_count());
        for r in report.ranges() {
            let (first, last) = (self.window_offset(r.first), self.window_offset(r.last));
            if last >= sent || first > last {
                self.stats.count(|c| {
                    c.pkt_invalid += 1;
                    c.pkt_forged_nak += 1;
                });
                return;
            }
            ranges.push(r);
        }
        // Packets before the last ACK were received: never retransmit them.
        let floor = self.window_offset(self.snd_last_ack);
        if ranges.iter().all(|r| self.window_offset(r.last) < floor) {
            // Everything named was acknowledged since: a NAK overtaken by the ACK, or replayed
            // by an attacker to make congestion control slow down. Neither is news of a loss.
            self.stats.count(|c| c.pkt_stale_nak += 1);
            return;
        }
        self.stats.count(|c| c.pkt_recv_nak += 1);
        self.note_repeated_report(&ranges);
        let sent_end = self.sndbuf.first_seq().add(sent as u32);
        self.receipts.on_nak(now, &ranges, sent_end);
        self.with_cc(now, |cc, ctx| cc.on_loss(ctx, &ranges));
        self.warning_stretch = 1.0;
        let was_sendable = self.has_sendable_data();
        let base = self.sndbuf.first_seq();
        let mut added = 0u64;
        for r in ranges {
            let first = self.window_offset(r.first).max(floor);
            let last = self.window_offset(r.last);
            if first > last {
                continue;
            }
            added += u64::from(self.snd_loss.insert(SeqRange {
                first: base.add(first as u32),
                last: base.add(last as u32),
            }));
        }
        self.stats.count(|c| c.pkt_snd_loss += added);
        if !was_sendable && self.has_sendable_data() {
            self.resume_sending(now);
        }
    }
}

/// How much faster than we sent the peer may say our packets arrive before its timing counts
/// as compressed (see [`Connection::timing_compressed`]). A queue shared with other flows
/// can release one flow's packets in runs at the link's rate, which is its share's inverse
/// times its own: at 2, our own receivers' reports were set aside in the simulator's
/// staggered flows (100 Mb/s, 100 ms: utilization 0.93 → 0.87; 1 Gb/s, 300 ms: Jain 0.988 →
/// 0.944). 4.11 behind clumps read 3-12 times the rate sent, and the hold below bridges the
/// reports in between.
const COMPRESSED_ARRIVAL_FACTOR: f64 = 3.0;

/// How long the peer's timing stays judged compressed after it last read so, µs: a 4.11
/// receiver behind clumps read 1.2-12 times the rate sent, above the factor for only part of
/// its ACKs, and its capacity would have counted for the others.
const COMPRESSED_HOLD_US: u64 = 10_000_000;

/// Age, in retransmission timeouts, after which a copy the peer never reported again is sent
/// again once the head's copy was found lost (see `retx_watch`).
const OVERDUE_TIMEOUTS: u64 = 3;

impl Connection {
    /// True when the peer's smoothed arrival rate is more than [`COMPRESSED_ARRIVAL_FACTOR`]
    /// times the fastest we sent at: the pacing rate now, and every data packet over the last
    /// round trip and over the one before it. A path delivers a flow's packets faster than they
    /// were sent only where a shared queue releases them in runs, at most at the link's rate
    /// (see [`COMPRESSED_ARRIVAL_FACTOR`]); a receiver that sees them much faster has its timing
    /// squeezed — by interrupt coalescing, GRO, or an emulator that releases packets in
    /// clumps — and its packet-pair capacity is squeezed the same way. Ours then withholds its capacity; 4.11 reports both: behind
    /// `udt relay`'s clumps on a 1 Gbit/s link it reported arrival rates of 0.6-12 Gbit/s and
    /// capacities of 1.3-5.6 Gbit/s while 0.5-0.8 Gbit/s was delivered, and the sender,
    /// trusting the capacity, kept its rate above the link and overflowed the queue every few
    /// seconds. The pacing rate counts because the averages include time the sender spent
    /// blocked by its window (behind holes at 1 % loss): against them alone, our own receiver's
    /// arrival rate read over twice as fast in the simulator, and a plain 1 Gbit/s, 400 ms
    /// path at 1 % loss fell from 0.90 to 0.77 of the link.
    pub(super) fn timing_compressed(&self, now: Instant) -> bool {
        let rtt = u64::from(self.rtt.rtt_us());
        let window = rtt.max(DELIVERY_WINDOW_MIN_US);
        let recent = self.all_sent_history.rate_ending(now, window);
        let before = self.all_sent_history.rate_ending(
            Instant::from_micros(now.as_micros().saturating_sub(rtt)),
            window,
        );
        let (Some(recent), Some(before)) = (recent, before) else {
            return false;
        };
        let pacing = 1e6 / self.effective_period_us();
        let sent = recent.max(before).max(pacing);
        let arrival = f64::from(self.arrival_rate_pps);
        // One flow's arrivals cannot outrun the link either: an honest receiver's arrival
        // rate stays within its own capacity estimate, a squeezed one's need not.
        arrival > COMPRESSED_ARRIVAL_FACTOR * sent && arrival > f64::from(self.bandwidth_pps)
    }

    /// Learns from a valid loss report whether the peer reports losses again (see
    /// `retx_watch`): 4.11 reports a gap only when a packet beyond it arrives, so each of its
    /// reports names numbers above every earlier one; a report that does not is a repeat.
    fn note_repeated_report(&mut self, ranges: &[SeqRange]) {
        // Offsets order the numbers (every range was checked to end in the send window). A
        // highest number already acknowledged is forgotten: whatever is named now is new.
        let named = self
            .highest_nak_named
            .filter(|h| !h.is_before(self.snd_last_ack));
        let lowest = ranges.iter().map(|r| self.window_offset(r.first)).min();
        let highest = ranges
            .iter()
            .map(|r| r.last)
            .max_by_key(|&s| self.window_offset(s));
        if let (Some(h), Some(lo)) = (named, lowest) {
            if lo <= self.window_offset(h) {
                self.peer_repeats_naks = true;
            }
        }
        self.highest_nak_named = match (named, highest) {
            (Some(h), Some(hi)) if self.window_offset(h) >= self.window_offset(hi) => Some(h),
            (h, hi) => hi.or(h),
        };
    }

    /// How long a retransmission may stay unacknowledged before it counts as lost, µs: one
    /// RTT, four variances and the receiver's ACK timer (an ACK may wait that long). Two RTTs
    /// held the window behind each lost retransmission one RTT longer than needed: at 1 %
    /// loss, 1 Gb/s and 100 ms, 0.71 of the link instead of 0.77, with no fewer spurious
    /// copies (the simulator's retransmissions matched its drops either way).
    pub(super) fn retx_timeout_us(&self) -> u64 {
        u64::from(self.rtt.rtt_us()) + 4 * u64::from(self.rtt.var_us()) + SYN_US
    }

    /// Restarts the head clock if the packet the cumulative ACK waits on changed or just left
    /// (see `head_clock`).
    fn observe_head(&mut self, now: Instant) {
        let head = self.sndbuf.first_seq();
        let sent = !self.sndbuf.is_empty() && !head.is_after(self.sndbuf.last_sent_seq());
        self.head_clock.observe(head, sent, now);
    }

    /// Sends again the packet the cumulative ACK waits on when it was lost unreported, or its
    /// retransmission was lost (see `head_clock` and `retx_watch`).
    pub(super) fn check_lost_retransmissions(&mut self, now: Instant) {
        // The head may have moved without an ACK (dropped messages): the clock follows it
        // here, so that its deadline is never one that cannot fire (a timer that spins).
        self.observe_head(now);
        let head = self.sndbuf.first_seq();
        if self.sndbuf.is_empty() {
            return;
        }
        let timeout = self.retx_timeout_us();
        let retx_lost = self.retx_watch.head_lost(now, timeout, head);
        // A head that was retransmitted is `retx_watch`'s to judge.
        let unreported = !retx_lost
            && self.head_clock.expired(now, timeout, head)
            && !self.retx_watch.watches(head);
        if !retx_lost && !unreported {
            return;
        }
        let was_sendable = self.has_sendable_data();
        let mut lost = SeqRange::single(head);
        if unreported {
            // The head before this one was sent again unreported, and the ACK that copy
            // brought moved by exactly one: nothing sent after it had arrived either, or the
            // ACK would have passed it. The packets sent before that copy are a lost tail,
            // which no report can name (the receiver saw no packet beyond them) and which
            // EXP never answers while each copy brings an ACK. One head per timeout crawled
            // at 33 packets/s for 40 s (two flows, 1 Gb/s, 10 ms, one BDP: 2330 of a slow
            // start's packets lost at the overflow); they are all sent again now.
            if let Some((prev, last)) = self.unreported_resend {
                if prev.next() == head && last.is_after(head) {
                    lost.last = last;
                }
            }
            self.unreported_resend = Some((head, self.sndbuf.last_sent_seq()));
        }
        let mut added = u64::from(self.snd_loss.insert(lost));
        if retx_lost && !self.peer_repeats_naks {
            // No report will name the other lost copies (see `retx_watch`).
            for seq in self
                .retx_watch
                .take_overdue(now, OVERDUE_TIMEOUTS * timeout)
            {
                added += u64::from(self.snd_loss.insert(SeqRange::single(seq)));
            }
        }
        self.stats.count(|c| c.pkt_snd_loss += added);
        if !was_sendable && self.has_sendable_data() {
            self.resume_sending(now);
        }
    }
}

/// `x.max(0.0).ceil() as u64`, exactly, for every `x`, without the library call `ceil` is on
/// targets without SSE4.1 (this runs after every packet).
fn ceil_to_u64(x: f64) -> u64 {
    let t = x as u64; // truncates; saturates at 0 and u64::MAX; NaN gives 0
    if (t as f64) < x {
        t.saturating_add(1)
    } else {
        t
    }
}

/// Packets the peer must have acknowledged before its capacity reports count: a receiver's
/// packet-pair window (ours and 4.11's: 64 intervals) starts filled with a made-up 1 ms, and
/// its median is made of real pairs only once more than half of it is, one pair per 16
/// packets.
const CAPACITY_SETTLED_ACKED_PKTS: u64 =
    16 * (crate::estimate::receive_rate::PROBE_WINDOW as u64 / 2 + 1);

/// How far the smoothed capacity may be from the latest report for it to count, as a fraction
/// of the report.
const CAPACITY_SETTLED_FRACTION: f64 = 0.125;

/// True when a capacity report (`reported`, packets/s; 0 = none) can be trusted: enough pairs
/// are behind it ([`CAPACITY_SETTLED_ACKED_PKTS`]) and the smoothed estimate (`smoothed`) has
/// caught up with it. When the receiver's median jumps from the made-up 1 ms to the real
/// pairs, the smoothed value takes about ten ACKs to follow; in between it read 45 Mb/s on a
/// 300 Mb/s path, and slow start ended there, at a sixth of the link.
fn capacity_settled(reported: u32, smoothed: u32, acked_pkts: u64) -> bool {
    let (r, s) = (f64::from(reported), f64::from(smoothed));
    reported > 0
        && acked_pkts >= CAPACITY_SETTLED_ACKED_PKTS
        && (r - s).abs() <= CAPACITY_SETTLED_FRACTION * r
}

/// The sender's smoothing of receiver-reported rates: `(7·old + new) / 8`.
fn smooth(old: u32, sample: u32) -> u32 {
    ((7 * u64::from(old) + u64::from(sample)) >> 3) as u32
}

#[cfg(test)]
mod tests {
    use super::{capacity_settled, ceil_to_u64, smooth, CAPACITY_SETTLED_ACKED_PKTS};

    #[test]
    fn a_capacity_counts_once_enough_pairs_are_behind_it_and_the_smoothing_caught_up() {
        let enough = CAPACITY_SETTLED_ACKED_PKTS;
        assert!(!capacity_settled(0, 0, enough), "no report");
        assert!(
            !capacity_settled(25_000, 25_000, enough - 1),
            "too few pairs"
        );
        assert!(capacity_settled(25_000, 25_000, enough));
        // The receiver's median jumps from its made-up 1000 packets/s to the real 25 000:
        // the smoothed value needs about a dozen reports to come within 1/8 of it.
        let mut smoothed = 1_000;
        let mut reports = 0;
        while !capacity_settled(25_000, smoothed, enough) {
            smoothed = smooth(smoothed, 25_000);
            reports += 1;
            assert!(reports < 100, "never settles");
        }
        assert!((10..=20).contains(&reports), "{reports} reports");
    }

    #[test]
    fn ceil_to_u64_matches_the_float_ceiling() {
        let mut values = vec![
            -1e30,
            -2.5,
            -1.0,
            -0.5,
            -0.0,
            0.0,
            1e-300,
            0.5,
            1.0,
            1.0000001,
            123_456.75,
            4_503_599_627_370_495.5,
            9_007_199_254_740_993.0,
            1.8446744073709552e19,
            1e30,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
        ];
        let mut x = 0.37f64;
        for _ in 0..10_000 {
            x = (x * 1.618_033_988_75 + 0.1).fract();
            values.push(x * 1e7);
            values.push(x * 1e18);
            values.push(x.floor() + 1.0);
        }
        for v in values {
            assert_eq!(ceil_to_u64(v), v.max(0.0).ceil() as u64, "{v}");
        }
    }
}
