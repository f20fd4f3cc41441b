//! The receiving side (spec §8.2, §9): storing data, loss detection and NAK, full and light
//! ACKs, ACK2 processing and message drop requests.

use super::nak_timer::Reported;
use super::{Connection, Outgoing};
use crate::buffer::recv::Insert;
use crate::cc::PacketInfo;
use crate::config::SocketKind;
use crate::seq::{SeqNo, SeqRange};
use crate::time::{Instant, SYN_US};
use crate::wire::{Ack, AckRates, DataPacket, DropRequest, LossReport, HEADER_LEN};

/// A light ACK is sent after every this many data packets since the last full ACK.
const LIGHT_ACK_PACKETS: u32 = 64;
/// Smallest round-trip allowance of the NAK timer, µs: 4.11's floor of its NAK interval
/// (spec §8.10), so the first repeat comes at least 600 ms after a report. Every NAK is a
/// congestion signal to the sender's control; on short paths, repeats every few RTTs for
/// losses a 4.11 sender has already given up on (TTL drops) collapse its rate.
const MIN_NAK_RTO_US: u64 = 300_000;
/// A full ACK with rates on the wire, bytes (header and six words).
const FULL_ACK_LEN: usize = HEADER_LEN + 24;
/// A light ACK on the wire, bytes.
const LIGHT_ACK_LEN: usize = HEADER_LEN + 4;

impl Connection {
    /// The ACK number now: the first lost packet, or the one after the largest received.
    fn ack_candidate(&self) -> SeqNo {
        self.rcv_loss
            .first()
            .unwrap_or_else(|| self.rcv_curr_seq.next())
    }

    /// The ACK number that may go out at `now`: [`Self::ack_candidate`], but while a drop
    /// request's hold lasts no more than one past the largest packet that arrived.
    fn ack_now(&self, now: Instant) -> SeqNo {
        let ack = self.ack_candidate();
        match self.drop_ack_hold_until {
            Some(until) if now < until => ack.min_wrapping(self.rcv_seen_seq.next()),
            _ => ack,
        }
    }

    /// Time to resend an unchanged, unconfirmed ACK: one RTT plus four variances after the
    /// last 6-word ACK.
    fn ack_resend_time(&self) -> Instant {
        let rto = u64::from(self.rtt.rtt_us()) + 4 * u64::from(self.rtt.var_us());
        self.last_rates_ack_time
            .map_or(Instant::ZERO, |t| t.plus_micros(rto))
    }

    /// When the ACK timer next has something to do; `None` when everything received has been
    /// confirmed (4.11 wakes every 10 ms regardless; an idle connection here sleeps).
    pub(super) fn ack_deadline(&self) -> Option<Instant> {
        let ack = self.ack_candidate();
        if self.waiting_on_holes() {
            Some(self.next_ack_time)
        } else if ack == self.rcv_last_ack_ack {
            None
        } else if ack.is_after(self.rcv_last_ack) {
            Some(self.next_ack_time)
        } else {
            Some(self.next_ack_time.max(self.ack_resend_time()))
        }
    }

    /// True when everything up to the first hole has been acknowledged, so no new ACK is due,
    /// but holes remain: the receiver is waiting on retransmissions. It then repeats a light
    /// ACK of that number every ACK period that sends no full ACK. Otherwise it would be
    /// silent until a retransmission fills the hole, a round trip after the NAK at best, and
    /// the sender's EXP timer (RTT + 4·RTTVar + SYN) fires whenever the RTT grows a little in
    /// between: its timeout resends every packet in flight. On a 10 Mb/s, 400 ms path with 0.1 % loss that
    /// was 6 timeouts and 4.2 % of the packets resent, for 0.14 % lost. A 4.11 sender takes
    /// an ACK that does not advance as a sign of life and otherwise ignores it, as ours does.
    /// Only with periodic NAKs (4.11 sends no such ACK, and without repeated reports the
    /// sender's timeout is what recovers a lost retransmission from a 4.11 sender), and only
    /// under the native EXP timer: an algorithm that sets its own RTO keeps TCP's timer
    /// semantics, and the extra wake-ups alone moved two CTCP flows on 100 Mb/s, 30 ms from
    /// Jain 0.991–1.000 to 0.973–1.000 over eight seeds.
    fn waiting_on_holes(&self) -> bool {
        self.config.periodic_nak
            && self.cc_ctl.rto_us.is_none()
            && !self.rcv_loss.is_empty()
            && self.ack_candidate() == self.rcv_last_ack
    }

    /// The ACK timers of spec §8.2, run after every data packet and at timer expiry.
    /// `light_ok`: a light ACK may go out now (false after a data packet smaller than one;
    /// the next packet or the timer sends it).
    pub(super) fn check_ack_timers(&mut self, now: Instant, light_ok: bool) {
        let interval = self.cc_ctl.ack_interval_pkts;
        if now >= self.next_ack_time || (interval > 0 && self.pkt_count >= interval) {
            self.ack_deferred = false;
            let (ack_no, period_over) = (self.ack_no, now >= self.next_ack_time);
            self.send_full_ack(now);
            if period_over && self.ack_no == ack_no && self.waiting_on_holes() {
                self.queue(Outgoing::LightAck(self.rcv_last_ack));
            }
            let period = self.cc_ctl.ack_period_us.unwrap_or(SYN_US);
            self.next_ack_time = now.plus_micros(period);
            self.pkt_count = 0;
            self.light_ack_count = 1;
        } else if light_ok && LIGHT_ACK_PACKETS * self.light_ack_count <= self.pkt_count {
            let ack = self.ack_now(now);
            if ack != self.rcv_last_ack_ack {
                self.queue(Outgoing::LightAck(ack));
            }
            self.light_ack_count += 1;
        }
    }

    fn send_full_ack(&mut self, now: Instant) {
        let ack = self.ack_now(now);
        if ack == self.rcv_last_ack_ack {
            return;
        }
        if ack.is_after(self.rcv_last_ack) {
            self.rcv_last_ack = ack;
        } else if ack != self.rcv_last_ack || now < self.ack_resend_time() {
            return;
        }
        if !self.rcv_last_ack.is_after(self.rcv_last_ack_ack) {
            return;
        }
        self.ack_no = self.ack_no.next();
        let rates_due = self
            .last_rates_ack_time
            .is_none_or(|t| now.micros_since(t) > SYN_US);
        let rates = rates_due.then(|| {
            self.last_rates_ack_time = Some(now);
            AckRates {
                arrival_pps: self.rate_estimator.arrival_rate_pps(),
                capacity_pps: self.rate_estimator.link_capacity_pps(),
            }
        });
        let ack = Ack {
            ack_no: self.ack_no,
            ack: self.rcv_last_ack,
            rtt_us: self.rtt.latest_us(),
            rtt_var_us: self.rtt.var_us(),
            avail_buf_pkts: self.available_recv_buffer().max(2),
            rates,
        };
        self.queue(Outgoing::Ack(ack));
        self.ack_history.record(self.ack_no, self.rcv_last_ack, now);
        self.stats.count(|c| c.pkt_sent_ack += 1);
    }

    /// The round-trip allowance the NAK timer multiplies: RTT + 4·RTTVar, at least 10 ms.
    fn nak_rto_us(&self) -> u64 {
        (u64::from(self.rtt.rtt_us()) + 4 * u64::from(self.rtt.var_us())).max(MIN_NAK_RTO_US)
    }

    /// When some loss is next due to be reported again, if periodic NAKs are on.
    pub(super) fn nak_deadline(&self) -> Option<Instant> {
        if !self.config.periodic_nak || self.rcv_loss.is_empty() {
            return None;
        }
        self.nak_schedule.deadline(self.nak_rto_us())
    }

    /// Reports again the losses whose last report is old enough (see [`super::nak_timer`]),
    /// as many ranges as one packet holds.
    pub(super) fn check_nak_timer(&mut self, now: Instant) {
        if self.nak_deadline().is_none_or(|t| now < t) {
            return;
        }
        // The body must fit the peer's receive buffer for control packets (payload size), and
        // a sealed NAK the MSS (its counter and tag take 8 bytes more than a data tag).
        let extra = if self.is_encrypted() {
            crate::crypto::CONTROL_OVERHEAD - crate::crypto::DATA_OVERHEAD
        } else {
            0
        };
        let max_bytes = (self.payload_size.saturating_sub(extra) / 4 * 4).max(8);
        let mut words = vec![0u8; max_bytes];
        let mut len = 0;
        let rto = self.nak_rto_us();
        let mut ranges = self.rcv_loss.ranges().peekable();
        self.nak_schedule.take_due(now, rto, |prev, last| {
            // Losses in (prev, last]: skip ranges that end before the span.
            while ranges
                .peek()
                .is_some_and(|r| prev.is_some_and(|p| !r.last.is_after(p)))
            {
                ranges.next();
            }
            let before = len;
            while let Some(r) = ranges.peek().copied() {
                if r.first.is_after(last) {
                    break;
                }
                let first = match prev {
                    Some(p) if !r.first.is_after(p) => p.next(),
                    _ => r.first,
                };
                let piece = SeqRange {
                    first,
                    last: r.last.min_wrapping(last),
                };
                match LossReport::encode([piece], &mut words[len..]) {
                    Ok(n) => len += n,
                    Err(_) => {
                        return Reported {
                            took_any: len > before,
                            full: true,
                        }
                    }
                }
                if r.last.is_after(last) {
                    break;
                }
                ranges.next();
            }
            Reported {
                took_any: len > before,
                full: false,
            }
        });
        drop(ranges);
        if len > 0 {
            words.truncate(len);
            self.queue(Outgoing::NakList(words));
            self.stats.count(|c| c.pkt_sent_nak += 1);
        }
    }

    /// An arriving data packet (spec §9.2).
    pub(super) fn on_data(&mut self, now: Instant, d: &DataPacket<'_>) {
        let seq = d.header.seq;
        let datagram_len = HEADER_LEN + d.payload.len();
        if now >= self.next_ack_time && datagram_len < FULL_ACK_LEN && !self.ack_deferred {
            // The ACK timer has lapsed, so this packet would be acknowledged at once, but it is
            // smaller than the ACK (amplification ≤ 1): the timer acknowledges it one period
            // from now instead. Once per ACK, so a stream of small packets cannot starve ACKs.
            self.ack_deferred = true;
            self.next_ack_time = now.plus_micros(self.cc_ctl.ack_period_us.unwrap_or(SYN_US));
        }
        let info = PacketInfo {
            seq,
            message: d.header.message,
            timestamp: d.header.timestamp,
            payload_len: d.payload.len(),
            retransmission: false,
        };
        self.with_cc(now, |cc, ctx| cc.on_packet_received(ctx, &info));
        self.pkt_count = self.pkt_count.saturating_add(1);
        self.rate_estimator.on_data_arrival(seq, now);
        self.stats.count(|c| c.pkt_recv += 1);
        if d.payload.len() > self.payload_size {
            // Larger than negotiated: storing it would let a peer inflate our memory.
            self.stats.count(|c| c.pkt_invalid += 1);
        } else {
            match self.rcvbuf.insert(seq, d.header.message, d.payload) {
                Insert::Stored => self.on_data_stored(now, seq, d.payload.len()),
                Insert::Duplicate | Insert::OutOfWindow => {
                    self.stats.count(|c| c.pkt_recv_discarded += 1);
                }
            }
        }
        self.check_ack_timers(now, datagram_len >= LIGHT_ACK_LEN);
    }

    fn on_data_stored(&mut self, now: Instant, seq: SeqNo, len: usize) {
        let datagram_len = HEADER_LEN + len;
        self.stats.count(|c| c.bytes_recv += len as u64);
        let expected = self.rcv_curr_seq.next();
        if seq.is_after(expected) {
            // A gap: report it at once, once (4.11 never repeats a NAK, spec §8.10).
            let lost = SeqRange {
                first: expected,
                last: seq.prev(),
            };
            self.rcv_loss.push_back(lost);
            // No reply may be larger than the datagram that caused it (amplification ≤ 1): a
            // data packet too small to pay for the NAK leaves the gap to the NAK timer (which
            // counts it as reported now) or the sender's EXP timer.
            let nak_len = HEADER_LEN + if lost.len() == 1 { 4 } else { 8 };
            if datagram_len >= nak_len {
                self.queue(Outgoing::Nak(lost));
                self.stats.count(|c| c.pkt_sent_nak += 1);
            }
            self.nak_schedule.reported(lost.last, now);
            let n = u64::from(lost.len());
            self.stats.count(|c| c.pkt_rcv_loss += n);
        }
        if len != self.payload_size && datagram_len >= FULL_ACK_LEN {
            // A short packet ends a send call or message: acknowledge it at once (unless it is
            // smaller than the ACK; then the ACK timer does, within SYN).
            self.next_ack_time = now;
        }
        if seq.is_after(self.rcv_seen_seq) {
            self.rcv_seen_seq = seq;
        }
        if seq.is_after(self.rcv_curr_seq) {
            self.rcv_curr_seq = seq;
        } else if self.rcv_loss.remove(seq) {
            self.nak_schedule.prune(self.rcv_loss.first());
        }
        self.signal_readable();
    }

    /// An ACK2 (spec §8.4): an RTT sample, and the sender's confirmation of an ACK number.
    pub(super) fn on_ack2(&mut self, now: Instant, ack_no: crate::seq::AckNo) {
        if let Some(c) = self.ack_history.confirm(ack_no, now) {
            self.rtt.update(c.rtt_us.min(u64::from(u32::MAX)) as u32);
            if c.ack.is_after(self.rcv_last_ack_ack) {
                self.rcv_last_ack_ack = c.ack;
            }
        }
    }

    /// A message drop request (spec §9.6). Honoured only by message sockets: a stream cannot
    /// lose bytes, so a drop request there is a protocol violation and is ignored.
    pub(super) fn on_drop_request(&mut self, now: Instant, d: &DropRequest) {
        // Validated in offsets from the receive buffer's start, which order numbers
        // unambiguously within the window (wrap-aware comparisons of numbers 2^30 apart do
        // not): the range must be forward and end inside the window.
        let start = self.rcvbuf.start_seq();
        let first = i64::from(start.offset_to(d.first));
        let last = i64::from(start.offset_to(d.last));
        let window = self.rcvbuf.capacity_pkts() as i64 - 1;
        if self.config.kind != SocketKind::Message
            || first > last
            || last >= window
            || !self.rcvbuf.drop_range(d.first, d.last, d.msg)
        {
            self.stats.count(|c| c.pkt_invalid += 1);
            return;
        }
        if last < 0 {
            return; // everything named was already delivered or given up
        }
        let first = first.max(0);
        self.rcv_loss.remove_range(SeqRange {
            first: start.add(first as u32),
            last: d.last,
        });
        self.nak_schedule.prune(self.rcv_loss.first());
        let curr = i64::from(start.offset_to(self.rcv_curr_seq));
        if first <= curr + 1 && last > curr {
            self.rcv_curr_seq = d.last;
            if d.last.is_after(self.rcv_seen_seq) {
                // The range names packets that never arrived, and may name some not sent
                // yet: a 4.11 sender whose expired message was partly sent sends the request
                // first and only then counts the rest (and one number more) as sent (spec
                // §10.7), and it breaks the connection on an ACK past what it counts
                // (§10.4). Our ACKs reached past everything sent as soon as 63 µs after the
                // request passed the relay, which fits the broken 4.11 senders seen in about
                // 1 of 6 lossy TTL transfers (interop/README.md, finding 4). One SYN later
                // the count has long settled; until then ACKs stop at what arrived.
                self.drop_ack_hold_until = Some(now.plus_micros(SYN_US));
            }
        }
        self.signal_readable();
    }
}
