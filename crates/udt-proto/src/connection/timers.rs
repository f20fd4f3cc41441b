//! The EXP timer (spec §8.6): retransmission timeout, keep-alive and broken-link detection.

use super::{CloseReason, Connection, Outgoing};
use crate::seq::SeqRange;
use crate::time::Instant;

/// Floor of the EXP interval, µs per expiry count (4.11's code value).
pub(super) const EXP_FLOOR_US: u64 = 300_000;
/// The connection is declared dead after more than this many silent expiries …
const BROKEN_EXP_COUNT: u32 = 16;
/// … once the last interval also exceeds this, µs.
const BROKEN_SILENCE_US: u64 = 5_000_000;

impl Connection {
    /// When the peer counts as dead for silence ([`ConnectionConfig::peer_idle_timeout`]),
    /// if that option is set.
    ///
    /// [`ConnectionConfig::peer_idle_timeout`]: crate::ConnectionConfig::peer_idle_timeout
    pub(super) fn idle_deadline(&self) -> Option<Instant> {
        let t = self.config.peer_idle_timeout?;
        Some(self.last_heard + t)
    }

    pub(super) fn check_exp(&mut self, now: Instant) {
        if self.idle_deadline().is_some_and(|d| now >= d) {
            self.break_connection(now, CloseReason::TimedOut);
            return;
        }
        if now < self.exp_deadline() {
            return;
        }
        if self.exp_count > BROKEN_EXP_COUNT
            && now.micros_since(self.last_rsp_time) > BROKEN_SILENCE_US
        {
            self.break_connection(now, CloseReason::TimedOut);
            return;
        }
        if !self.sndbuf.is_empty() {
            let last_sent = self.sndbuf.last_sent_seq();
            // Go back N: if nothing is queued for retransmission, everything unacknowledged is.
            if self.snd_loss.is_empty() && !self.snd_last_ack.is_after(last_sent) {
                let n = self.snd_loss.insert(SeqRange {
                    first: self.snd_last_ack,
                    last: last_sent,
                });
                self.retx_watch.clear();
                self.stats.count(|c| c.pkt_snd_loss += u64::from(n));
            }
            self.stats.count(|c| c.timeouts += 1);
            self.with_cc(now, |cc, ctx| cc.on_timeout(ctx));
            self.warning_stretch = 1.0;
            self.resume_sending(now);
        } else {
            self.queue(Outgoing::KeepAlive);
        }
        self.exp_count += 1;
        self.last_rsp_time = now;
    }
}
