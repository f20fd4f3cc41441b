//! Scenario files: the shared bottleneck and the flows that cross it (TOML).

use serde::{Deserialize, Serialize};
use thiserror::Error;

/// A scenario as written in a TOML file.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// Simulated run length, seconds.
    pub duration_s: f64,
    /// Width of a throughput sample, seconds.
    #[serde(default = "default_sample_interval")]
    pub sample_interval_s: f64,
    /// Seconds skipped at the start of every phase by the phase metrics (start-up transients).
    #[serde(default)]
    pub warmup_s: f64,
    /// Seed of every random choice (overridden by `--seed`).
    #[serde(default = "default_seed")]
    pub seed: u64,
    /// The shared bottleneck.
    pub link: LinkSpec,
    /// The flows.
    #[serde(rename = "flow", default)]
    pub flows: Vec<FlowSpec>,
}

fn default_sample_interval() -> f64 {
    1.0
}
fn default_seed() -> u64 {
    1
}
fn default_count() -> u32 {
    1
}
fn default_cc() -> String {
    "udt".to_owned()
}

/// The bottleneck link (and the reverse path, which has the same rate and queue).
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct LinkSpec {
    /// Rate, Mb/s (10^6 bits per second, counting whole UDP datagrams plus 28 bytes of IP/UDP
    /// headers).
    pub rate_mbps: f64,
    /// DropTail queue limit, packets.
    pub queue_packets: u32,
    /// Independent drop probability per data-direction packet.
    #[serde(default)]
    pub loss: f64,
    /// Independent drop probability per reverse-direction (ACK) packet.
    #[serde(default)]
    pub reverse_loss: f64,
    /// Probability that a packet is held back by `reorder_delay_ms` (arrives out of order).
    #[serde(default)]
    pub reorder: f64,
    /// Extra delay of a reordered packet, ms.
    #[serde(default = "default_reorder_delay")]
    pub reorder_delay_ms: f64,
    /// Probability that a packet is delivered twice.
    #[serde(default)]
    pub duplicate: f64,
    /// Uniform random extra delay in `[0, jitter_ms]` added to every packet, ms.
    #[serde(default)]
    pub jitter_ms: f64,
    /// Rate of each sender's own access link into the bottleneck, Mb/s (default: the
    /// bottleneck rate, like the papers' testbeds of 1 GigE hosts on 1 Gb/s paths; 0 = none).
    /// Packets queue there first (DropTail, `queue_packets` long), so a packet pair reaches the
    /// bottleneck one packet time apart and other flows' packets can fall between them, as in
    /// a real dumbbell. With one flow it changes nothing.
    #[serde(default)]
    pub access_rate_mbps: Option<f64>,
    /// Clumped delivery to receivers, as interrupt coalescing, GRO, a virtual NIC or a busy
    /// emulator produce it: data-direction packets reaching a receiver are held and handed to
    /// it together, with one arrival time, once this many µs have passed since the first of
    /// the batch arrived (0 = off). See [`Coalescing`].
    #[serde(default)]
    pub rx_coalesce_us: f64,
    /// With `rx_coalesce_us`: a batch is also handed over as soon as it holds this many
    /// packets (0 = no limit; a NIC's `rx-frames`).
    #[serde(default)]
    pub rx_coalesce_pkts: u32,
    /// With `rx_coalesce_us`: a batch's packets are handed over this many µs apart, one after
    /// another, as a host's receive path handles them (3–4 µs each through `udt relay` on a
    /// two-core machine), instead of at one instant (0). Within a clump the packets then read
    /// a few times the link's rate, not an infinite one, as packet pairs do on real hosts.
    #[serde(default)]
    pub rx_clump_gap_us: f64,
    /// ACK compression: the same for packets reaching senders (acknowledgements), µs (0 =
    /// off).
    #[serde(default)]
    pub ack_coalesce_us: f64,
    /// With `ack_coalesce_us`: largest batch of packets reaching a sender (0 = no limit).
    #[serde(default)]
    pub ack_coalesce_pkts: u32,
    /// Burst pacing of senders, as the runtime (`crates/udt`) paces by default: a sender's
    /// paced sends are served at most once per this many µs, and each serving sends back to
    /// back every packet that fell due since (the engine's lateness debt keeps the average
    /// rate). 0 = every packet at its own time, to the nanosecond.
    #[serde(default)]
    pub sender_burst_us: f64,
    /// Burst pacing of senders with each connection's own quantum, as the runtime paces by
    /// default ([`udt_proto::Connection::burst_quantum_us`]: 1/40 of the path's RTT, 50–250
    /// µs); overrides `sender_burst_us`.
    #[serde(default)]
    pub sender_burst_by_rtt: bool,
    /// Stalls of the path's hosts, ms (0 = none): in each direction, once per
    /// `stall_every_ms` on average, the path stops handing packets over for this long and
    /// then hands over what it held, in order. A user-space emulator or a host that shares
    /// its cores with busy processes does this: through `udt relay` on a two-core machine,
    /// with a sender and a receiver beside it, releases ran 1.3–2.3 ms late on average for
    /// whole runs, and up to 31 ms. Unlike `jitter_ms` it never reorders, and a stall holds
    /// the RTT up for its whole length, as a queue would.
    #[serde(default)]
    pub stall_ms: f64,
    /// With `stall_ms`: the mean time from one stall's start to the next, ms. Each
    /// `stall_every_ms` has one stall, at a random point (drawn from the run's seed).
    #[serde(default)]
    pub stall_every_ms: f64,
}

/// How packets reaching one host are batched: held from the first packet of a batch until
/// `interval_ns` has passed or `max_pkts` are held, then handed over together (or `gap_ns`
/// apart).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Coalescing {
    /// Longest hold of a batch, ns (> 0).
    pub interval_ns: u64,
    /// Largest batch, packets (0 = no limit).
    pub max_pkts: u32,
    /// Spacing of a batch's packets as they are handed over, ns (0 = all at once).
    pub gap_ns: u64,
}

impl Coalescing {
    fn new(us: f64, pkts: u32, gap_us: f64) -> Option<Coalescing> {
        (us > 0.0).then(|| Coalescing {
            interval_ns: (us * 1000.0).round().max(1.0) as u64,
            max_pkts: pkts,
            gap_ns: (gap_us * 1000.0).round() as u64,
        })
    }
}

impl LinkSpec {
    /// Batching of packets reaching receivers (clumped delivery), if configured.
    pub fn rx_coalescing(&self) -> Option<Coalescing> {
        Coalescing::new(
            self.rx_coalesce_us,
            self.rx_coalesce_pkts,
            self.rx_clump_gap_us,
        )
    }

    /// Batching of packets reaching senders (ACK compression), if configured.
    pub fn ack_coalescing(&self) -> Option<Coalescing> {
        Coalescing::new(self.ack_coalesce_us, self.ack_coalesce_pkts, 0.0)
    }

    /// The access link rate in force, Mb/s, if there is one.
    pub fn access_rate(&self) -> Option<f64> {
        match self.access_rate_mbps {
            None => Some(self.rate_mbps),
            Some(r) if r > 0.0 => Some(r),
            Some(_) => None,
        }
    }
}

fn default_reorder_delay() -> f64 {
    1.0
}

/// One flow (or `count` identical flows).
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct FlowSpec {
    /// Congestion control by name (see `udt_proto::cc::names`).
    #[serde(default = "default_cc")]
    pub cc: String,
    /// Base round-trip time of the flow's path, ms.
    pub rtt_ms: f64,
    /// When the flow starts, s.
    #[serde(default)]
    pub start_s: f64,
    /// When an unlimited flow stops, s (default: end of run).
    #[serde(default)]
    pub stop_s: Option<f64>,
    /// Bytes to transfer (default: unlimited backlog until `stop_s`).
    #[serde(default)]
    pub bytes: Option<u64>,
    /// Number of identical flows.
    #[serde(default = "default_count")]
    pub count: u32,
    /// MSS, bytes including IP and UDP headers (default 1500).
    #[serde(default)]
    pub mss: Option<u32>,
    /// Receive buffer of the receiver, packets (default: the library's).
    #[serde(default)]
    pub recv_buffer_pkts: Option<u32>,
    /// Send buffer of the sender, packets (default: the library's).
    #[serde(default)]
    pub send_buffer_pkts: Option<u32>,
    /// Flow window limit (`UDT_FC`), packets (default: the library's).
    #[serde(default)]
    pub flight_flag_size: Option<u32>,
    /// Message mode: send messages of this many bytes instead of a stream.
    #[serde(default)]
    pub message_size: Option<u32>,
    /// Receivers re-report missing packets every NAK interval (default true; false is exactly
    /// 4.11, which reports each loss once).
    #[serde(default)]
    pub periodic_nak: Option<bool>,
}

/// A scenario that cannot be run.
#[derive(Debug, Error)]
pub enum ScenarioError {
    /// The TOML could not be parsed.
    #[error("scenario file: {0}")]
    Parse(#[from] toml::de::Error),
    /// A value is out of range.
    #[error("scenario: {0}")]
    Invalid(String),
}

/// Most flows a scenario may declare (after `count` expansion).
pub const MAX_FLOWS: usize = 10_000;

impl Scenario {
    /// Parses and validates a scenario.
    pub fn from_toml(text: &str) -> Result<Self, ScenarioError> {
        let s: Scenario = toml::from_str(text)?;
        s.validate()?;
        Ok(s)
    }

    /// Checks every value.
    pub fn validate(&self) -> Result<(), ScenarioError> {
        let bad = |m: &str| Err(ScenarioError::Invalid(m.to_owned()));
        let finite_pos = |x: f64| x.is_finite() && x > 0.0;
        let prob = |x: f64| (0.0..=1.0).contains(&x);
        if !finite_pos(self.duration_s) || self.duration_s > 1e6 {
            return bad("duration_s must be positive and at most 10^6");
        }
        if !finite_pos(self.sample_interval_s) || self.duration_s / self.sample_interval_s > 1e7 {
            return bad("sample_interval_s must be positive and give at most 10^7 samples");
        }
        if !(self.warmup_s.is_finite() && self.warmup_s >= 0.0) {
            return bad("warmup_s must be non-negative");
        }
        let l = &self.link;
        if !finite_pos(l.rate_mbps) || l.rate_mbps > 1e6 {
            return bad("link.rate_mbps must be positive and at most 10^6");
        }
        if let Some(a) = l.access_rate_mbps {
            if !(a.is_finite() && (0.0..=1e6).contains(&a)) {
                return bad("link.access_rate_mbps must be within [0, 10^6]");
            }
        }
        if l.queue_packets == 0 || l.queue_packets > 10_000_000 {
            return bad("link.queue_packets must be between 1 and 10^7");
        }
        if !prob(l.loss) || !prob(l.reverse_loss) || !prob(l.reorder) || !prob(l.duplicate) {
            return bad("link probabilities must be within [0, 1]");
        }
        let delay_ok = |x: f64| x.is_finite() && (0.0..=10_000.0).contains(&x);
        if !delay_ok(l.jitter_ms) || !delay_ok(l.reorder_delay_ms) {
            return bad("link.jitter_ms and reorder_delay_ms must be within [0, 10000]");
        }
        if !delay_ok(l.stall_ms) || !delay_ok(l.stall_every_ms) {
            return bad("link.stall_ms and stall_every_ms must be within [0, 10000]");
        }
        if l.stall_ms > 0.0 && l.stall_every_ms <= l.stall_ms {
            return bad("link.stall_every_ms must be longer than link.stall_ms");
        }
        let hold_ok = |x: f64| x.is_finite() && (0.0..=1e6).contains(&x);
        if !hold_ok(l.rx_coalesce_us) || !hold_ok(l.ack_coalesce_us) {
            return bad("link.rx_coalesce_us and ack_coalesce_us must be within [0, 10^6]");
        }
        if !(l.rx_clump_gap_us.is_finite() && (0.0..=1000.0).contains(&l.rx_clump_gap_us)) {
            return bad("link.rx_clump_gap_us must be within [0, 1000]");
        }
        if self.flows.is_empty() {
            return bad("at least one [[flow]] is needed");
        }
        let mut total = 0usize;
        for f in &self.flows {
            if udt_proto::cc::by_name(&f.cc).is_none() {
                return Err(ScenarioError::Invalid(format!(
                    "unknown congestion control {:?}",
                    f.cc
                )));
            }
            if !(f.rtt_ms.is_finite() && f.rtt_ms >= 0.0 && f.rtt_ms <= 100_000.0) {
                return bad("flow.rtt_ms must be within [0, 100000]");
            }
            if !(f.start_s.is_finite() && f.start_s >= 0.0) {
                return bad("flow.start_s must be non-negative");
            }
            if let Some(stop) = f.stop_s {
                if !(stop.is_finite() && stop > f.start_s) {
                    return bad("flow.stop_s must be after start_s");
                }
            }
            if f.count == 0 {
                return bad("flow.count must be at least 1");
            }
            if let Some(m) = f.mss {
                if !(udt_proto::config::MIN_MSS..=9000).contains(&m) {
                    return bad("flow.mss must be between 76 and 9000");
                }
            }
            if f.message_size == Some(0) {
                return bad("flow.message_size must be positive");
            }
            total += f.count as usize;
        }
        if total > MAX_FLOWS {
            return bad("too many flows (at most 10000)");
        }
        Ok(())
    }

    /// The flows with `count` expanded, in declaration order.
    pub fn expanded_flows(&self) -> Vec<FlowSpec> {
        self.flows
            .iter()
            .flat_map(|f| {
                std::iter::repeat_n(
                    FlowSpec {
                        count: 1,
                        ..f.clone()
                    },
                    f.count as usize,
                )
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const EXAMPLE: &str = r#"
duration_s = 60.0
sample_interval_s = 1.0
[link]
rate_mbps = 1000.0
queue_packets = 8333
loss = 0.0
[[flow]]
cc = "udt"
rtt_ms = 100.0
start_s = 0.0
stop_s = 60.0
bytes = 50000000
count = 2
"#;

    #[test]
    fn issue_example_parses() {
        let s = Scenario::from_toml(EXAMPLE).unwrap();
        assert_eq!(s.expanded_flows().len(), 2);
        assert_eq!(s.flows[0].bytes, Some(50_000_000));
    }

    #[test]
    fn invalid_values_are_reported() {
        let bad = EXAMPLE.replace("loss = 0.0", "loss = 1.5");
        assert!(matches!(
            Scenario::from_toml(&bad),
            Err(ScenarioError::Invalid(_))
        ));
        let bad = EXAMPLE.replace("cc = \"udt\"", "cc = \"nope\"");
        assert!(Scenario::from_toml(&bad).is_err());
        let bad = EXAMPLE.replace("rate_mbps", "rate");
        assert!(matches!(
            Scenario::from_toml(&bad),
            Err(ScenarioError::Parse(_))
        ));
        assert!(Scenario::from_toml("duration_s = 1").is_err());
    }
}
