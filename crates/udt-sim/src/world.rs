//! The discrete-event loop: real `udt-proto` endpoints for both ends of every flow, a shared
//! bottleneck in the data direction and a reverse path for acknowledgements, in virtual time.
//!
//! Topology (paper 001 Fig. 1, a dumbbell): every sender sits right before the shared queue;
//! after the link, each flow's packets take that flow's one-way propagation delay (half its
//! RTT) to its receiver. Packets from receivers cross a reverse link of the same rate and queue
//! size, then the same delay. Optional impairments (random loss, reordering, duplication,
//! jitter) apply after the link.
//!
//! Everything is driven by one seeded generator and one event queue ordered by (time, insertion
//! order), so a scenario and a seed always produce the same run.

use std::collections::{BTreeMap, VecDeque};
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::time::Duration;

use rand_chacha::ChaCha8Rng;
use rand_core::{Rng, SeedableRng};
use udt_proto::{
    cc, ConnectionConfig, Endpoint, EndpointConfig, Error, Event, Instant, SocketId, SocketKind,
};

use crate::link::{Link, Nanos};
use crate::metrics::{FlowRecord, RunRecord};
use crate::pattern;
use crate::queue::{EventQueue, Popped};
use crate::scenario::{Coalescing, FlowSpec, Scenario};
use crate::stall::Stalls;

/// IP and UDP header bytes that a datagram carries on the link.
const IP_UDP_OVERHEAD: usize = 28;
/// Port of every simulated sender and receiver.
const SENDER_PORT: u16 = 5000;
const RECEIVER_PORT: u16 = 9000;
/// Bytes written to a send buffer per call.
const WRITE_CHUNK: usize = 256 * 1024;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum EventKind {
    /// The in-flight packet in this slot leaves its sender's access link and reaches the
    /// bottleneck queue.
    Enqueue(u32),
    /// Deliver the in-flight packet in this slot.
    Deliver(u32),
    /// A node's endpoint timer.
    Timer(u32),
    /// A flow starts connecting.
    FlowStart(u32),
    /// An unlimited flow stops.
    FlowStop(u32),
    /// A node's batch of held packets is due (clumped delivery, ACK compression); the value
    /// is the node and the batch's number, so that a batch flushed early is not flushed twice.
    Flush(u32, u64),
    /// The next packet of a node's flushed batch is handed over (batches released with a
    /// gap between packets, `rx_clump_gap_us`).
    Release(u32),
}

/// Mixed into the run's seed for the stall schedule, which then does not draw from (and so
/// does not shift) the generator that decides losses: a scenario without stalls runs exactly
/// as before they existed.
const STALL_SEED_SALT: u64 = 0x5_7a11;

/// Lanes of the event queue per flow: packets leaving the sender's access link, packets
/// reaching the receiver, packets reaching the sender. On each, times never decrease unless
/// jitter or reordering is configured (then overtaking packets go to the general heap).
const LANES_PER_FLOW: usize = 3;
const LANE_ACCESS: usize = 0;
const LANE_FORWARD: usize = 1;
const LANE_REVERSE: usize = 2;

struct InFlight {
    to: u32,
    from: u32,
    from_addr: SocketAddr,
    /// A buffer of `datagram_capacity` bytes (pool buffers are never shrunk, so they need no
    /// zeroing when reused) holding the datagram in its first `len` bytes.
    data: Vec<u8>,
    len: usize,
    /// Time spent in the sender's access queue, ns.
    access_wait: Nanos,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Role {
    Sender,
    Receiver,
}

struct Node {
    ep: Endpoint,
    addr: SocketAddr,
    flow: usize,
    role: Role,
    /// The timer instant the event queue holds for this node, ns.
    timer_at: Option<Nanos>,
    /// How packets reaching this node are batched, if they are.
    coalescing: Option<Coalescing>,
    /// Packets held for the current batch, in arrival order.
    batch: Vec<InFlight>,
    /// Number of the current batch (incremented at every flush).
    batch_no: u64,
    /// Flushed packets still being handed over one gap apart, in order.
    releasing: VecDeque<InFlight>,
    /// Burst pacing quantum of a sender, ns (0 = per-packet pacing); see
    /// [`LinkSpec::sender_burst_us`](crate::scenario::LinkSpec::sender_burst_us).
    burst_ns: Nanos,
    /// A sender paces in bursts of its connection's own quantum; see
    /// [`LinkSpec::sender_burst_by_rtt`](crate::scenario::LinkSpec::sender_burst_by_rtt).
    burst_by_rtt: bool,
    /// Whether the armed timer is a paced send (served under the burst quantum).
    timer_paced: bool,
    /// When a paced send last woke this node, ns.
    last_paced_ns: Option<Nanos>,
}

/// Per-flow application state and measurements.
struct Flow {
    spec: FlowSpec,
    /// One-way propagation delay, ns.
    one_way_ns: Nanos,
    /// The sender's access link, if modelled.
    access: Option<Link>,
    sender_conn: Option<SocketId>,
    receiver_conn: Option<SocketId>,
    /// Bytes handed to the sender's connection.
    written: u64,
    /// Bytes read by the receiving application.
    received: u64,
    corrupt: u64,
    start_s: f64,
    stop_s: f64,
    completed_at: Option<f64>,
    /// When the receiver last got a data packet, ns (while the transfer is incomplete).
    last_data_at: Option<Nanos>,
    /// Longest time the receiver got no data packet while the transfer was incomplete, ns.
    max_silence_ns: Nanos,
    closed_sender: bool,
    delivered: Vec<u64>,
    rtt_sum_us: Vec<f64>,
    rtt_count: Vec<u64>,
    sent_pkts: u64,
    retransmitted_pkts: u64,
}

/// What a run produced.
#[derive(Debug, Clone)]
pub struct RunOutput {
    /// The raw per-sample record, for [`crate::metrics::analyze`].
    pub record: RunRecord,
    /// Per flow: bytes written by the sender, bytes read by the receiver, corrupt bytes, and
    /// whether a finite transfer completed.
    pub flows: Vec<FlowIntegrity>,
    /// Events processed.
    pub events: u64,
    /// Datagrams offered to the links.
    pub datagrams: u64,
    /// Data packets delivered to receivers.
    pub data_packets_delivered: u64,
    /// Datagrams dropped by the forward queue, by random loss, by the reverse queue.
    pub dropped_queue: u64,
    /// Datagrams dropped by the random loss model.
    pub dropped_loss: u64,
}

/// Integrity account of one flow.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FlowIntegrity {
    /// Bytes the sending application queued.
    pub bytes_written: u64,
    /// Bytes the receiving application read.
    pub bytes_received: u64,
    /// Bytes read that differ from what was written at that offset.
    pub corrupt_bytes: u64,
    /// For a finite flow: all bytes arrived; for an unlimited one: always true.
    pub complete: bool,
    /// Longest time, seconds, the receiver got no data packet while the transfer was
    /// incomplete (from its first data packet; an unfinished transfer counts until the end).
    pub max_silence_s: f64,
}

impl FlowIntegrity {
    /// True if the receiver got exactly a prefix of the sender's stream, all of it for a
    /// finite flow that completed.
    pub fn ok(&self) -> bool {
        self.corrupt_bytes == 0 && self.bytes_received <= self.bytes_written
    }
}

/// The simulation of one scenario with one seed.
pub struct World {
    now: Nanos,
    end: Nanos,
    sample_ns: Nanos,
    buckets: usize,
    queue: EventQueue<EventKind, InFlight>,
    nodes: Vec<Node>,
    flows: Vec<Flow>,
    forward: Link,
    reverse: Link,
    rng: ChaCha8Rng,
    /// Host stalls of the path, if configured (`LinkSpec::stall_ms`).
    stalls: Option<Stalls>,
    scenario: Scenario,
    slots: Vec<Option<InFlight>>,
    free_slots: Vec<u32>,
    pool: Vec<Vec<u8>>,
    datagram_capacity: usize,
    scratch: Vec<u8>,
    link_offered: Vec<u64>,
    link_dropped: Vec<u64>,
    events: u64,
    datagrams: u64,
    data_delivered: u64,
    dropped_queue: u64,
    dropped_loss: u64,
    /// One congestion-control factory per distinct name in the scenario, shared by the flows
    /// that name it, so that a group algorithm (GTP) sees all of them as one group.
    cc_factories: BTreeMap<String, cc::SharedFactory>,
}

fn secs_to_ns(s: f64) -> Nanos {
    (s * 1e9).round().max(0.0) as Nanos
}

fn node_addr(flow: usize, role: Role) -> SocketAddr {
    let (a, port) = match role {
        Role::Sender => (1, SENDER_PORT),
        Role::Receiver => (2, RECEIVER_PORT),
    };
    let ip = Ipv4Addr::new(10, a, (flow >> 8) as u8, flow as u8);
    SocketAddr::V4(SocketAddrV4::new(ip, port))
}

impl World {
    /// Sets up the nodes and schedules the flows of `scenario`, with every random choice
    /// drawn from `seed`.
    pub fn new(scenario: &Scenario, seed: u64) -> Self {
        let flows_spec = scenario.expanded_flows();
        let end = secs_to_ns(scenario.duration_s);
        let sample_ns = secs_to_ns(scenario.sample_interval_s).max(1);
        let buckets = end.div_ceil(sample_ns).max(1) as usize;
        let max_mss = flows_spec
            .iter()
            .map(|f| f.mss.unwrap_or(1500))
            .max()
            .unwrap_or(1500);
        let mut world = World {
            now: 0,
            end,
            sample_ns,
            buckets,
            queue: EventQueue::new(flows_spec.len() * LANES_PER_FLOW),
            nodes: Vec::with_capacity(flows_spec.len() * 2),
            flows: Vec::with_capacity(flows_spec.len()),
            forward: Link::new(scenario.link.rate_mbps, scenario.link.queue_packets),
            reverse: Link::new(scenario.link.rate_mbps, scenario.link.queue_packets),
            rng: ChaCha8Rng::seed_from_u64(seed),
            stalls: Stalls::new(
                scenario.link.stall_ms,
                scenario.link.stall_every_ms,
                seed ^ STALL_SEED_SALT,
            ),
            scenario: scenario.clone(),
            slots: Vec::new(),
            free_slots: Vec::new(),
            pool: Vec::new(),
            datagram_capacity: max_mss as usize,
            scratch: vec![0u8; WRITE_CHUNK.max(1 << 20)],
            link_offered: vec![0; buckets],
            link_dropped: vec![0; buckets],
            events: 0,
            datagrams: 0,
            data_delivered: 0,
            dropped_queue: 0,
            dropped_loss: 0,
            cc_factories: resolve_cc(&flows_spec),
        };
        for (i, spec) in flows_spec.into_iter().enumerate() {
            let start_s = spec.start_s.min(scenario.duration_s);
            let stop_s = spec
                .stop_s
                .unwrap_or(scenario.duration_s)
                .min(scenario.duration_s);
            for role in [Role::Sender, Role::Receiver] {
                let node_seed = seed
                    .wrapping_mul(0x9E37_79B9_7F4A_7C15)
                    .wrapping_add((2 * i as u64 + (role == Role::Receiver) as u64) * 0x1000_0001);
                let mut ep = Endpoint::new(EndpointConfig {
                    seed: node_seed,
                    ..Default::default()
                });
                if role == Role::Receiver {
                    ep.listen(Instant::ZERO, flow_config(&spec, &world.cc_factories), 1)
                        .expect("scenario validated: the configuration is valid");
                }
                let coalescing = match role {
                    Role::Receiver => scenario.link.rx_coalescing(),
                    Role::Sender => scenario.link.ack_coalescing(),
                };
                world.nodes.push(Node {
                    ep,
                    addr: node_addr(i, role),
                    flow: i,
                    role,
                    timer_at: None,
                    coalescing,
                    batch: Vec::new(),
                    batch_no: 0,
                    releasing: VecDeque::new(),
                    burst_ns: match role {
                        Role::Sender => (scenario.link.sender_burst_us.max(0.0) * 1000.0) as Nanos,
                        Role::Receiver => 0,
                    },
                    burst_by_rtt: role == Role::Sender && scenario.link.sender_burst_by_rtt,
                    timer_paced: false,
                    last_paced_ns: None,
                });
            }
            world.flows.push(Flow {
                one_way_ns: secs_to_ns(spec.rtt_ms / 2000.0),
                access: scenario
                    .link
                    .access_rate()
                    .map(|r| Link::new(r, scenario.link.queue_packets)),
                spec,
                sender_conn: None,
                receiver_conn: None,
                written: 0,
                received: 0,
                corrupt: 0,
                start_s,
                stop_s,
                completed_at: None,
                last_data_at: None,
                max_silence_ns: 0,
                closed_sender: false,
                delivered: vec![0; buckets],
                rtt_sum_us: vec![0.0; buckets],
                rtt_count: vec![0; buckets],
                sent_pkts: 0,
                retransmitted_pkts: 0,
            });
            world.schedule(secs_to_ns(start_s), EventKind::FlowStart(i as u32));
            if world.flows[i].spec.bytes.is_none() {
                world.schedule(secs_to_ns(stop_s), EventKind::FlowStop(i as u32));
            }
        }
        world
    }

    fn schedule(&mut self, at: Nanos, kind: EventKind) {
        self.queue.push(at, kind);
    }

    /// Schedules a packet on lane `lane` of flow `flow`; `kind` makes the general-heap event
    /// if it cannot go on the lane.
    fn schedule_packet(
        &mut self,
        flow: usize,
        lane: usize,
        at: Nanos,
        packet: InFlight,
        kind: fn(u32) -> EventKind,
    ) {
        if let Err(packet) = self
            .queue
            .push_lane(flow * LANES_PER_FLOW + lane, at, packet)
        {
            let slot = self.store(packet);
            self.queue.push(at, kind(slot));
        }
    }

    fn bucket(&self, at: Nanos) -> usize {
        ((at / self.sample_ns) as usize).min(self.buckets - 1)
    }

    fn now_instant(&self) -> Instant {
        Instant::from_micros(self.now / 1000)
    }

    fn chance(&mut self, p: f64) -> bool {
        p > 0.0 && (self.rng.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64) < p
    }

    /// Runs to the end of the scenario.
    pub fn run(mut self) -> RunOutput {
        while let Some((at, ev)) = self.queue.pop() {
            if at > self.end {
                break;
            }
            self.now = at;
            self.events += 1;
            let kind = match ev {
                Popped::Packet(lane, p) => {
                    if lane % LANES_PER_FLOW == LANE_ACCESS {
                        self.bottleneck(p);
                    } else {
                        self.deliver(p);
                    }
                    continue;
                }
                Popped::Event(kind) => kind,
            };
            match kind {
                EventKind::Enqueue(slot) => {
                    let p = self.take_slot(slot);
                    self.bottleneck(p);
                }
                EventKind::Deliver(slot) => {
                    let p = self.take_slot(slot);
                    self.deliver(p);
                }
                EventKind::Timer(n) => {
                    let now = self.now_instant();
                    let node = &mut self.nodes[n as usize];
                    if node.timer_at != Some(at) {
                        continue; // superseded
                    }
                    node.timer_at = None;
                    if node.timer_paced {
                        node.last_paced_ns = Some(at);
                    }
                    node.ep.handle_timeout(now);
                    self.service(n as usize);
                }
                EventKind::FlowStart(f) => self.start_flow(f as usize),
                EventKind::FlowStop(f) => self.stop_flow(f as usize),
                EventKind::Flush(n, no) => {
                    if self.nodes[n as usize].batch_no == no {
                        self.flush(n as usize);
                    }
                }
                EventKind::Release(n) => self.release_next(n as usize),
            }
        }
        self.now = self.end;
        self.finish()
    }

    fn start_flow(&mut self, f: usize) {
        let now = self.now_instant();
        let sender = 2 * f;
        let remote = self.nodes[sender + 1].addr;
        let cfg = flow_config(&self.flows[f].spec, &self.cc_factories);
        match self.nodes[sender].ep.connect(now, remote, cfg) {
            Ok(id) => self.flows[f].sender_conn = Some(id),
            Err(e) => panic!("scenario validated, yet connect failed: {e}"),
        }
        self.service(sender);
    }

    fn stop_flow(&mut self, f: usize) {
        let now = self.now_instant();
        let sender = 2 * f;
        self.flows[f].stop_s = self.now as f64 / 1e9;
        self.flows[f].closed_sender = true;
        self.record_sender_stats(f);
        if let Some(id) = self.flows[f].sender_conn {
            self.nodes[sender].ep.abort(now, id);
        }
        self.service(sender);
    }

    /// Copies the sender's retransmission count while its connection still exists.
    fn record_sender_stats(&mut self, f: usize) {
        let now = self.now_instant();
        if let Some(id) = self.flows[f].sender_conn {
            if let Some(mut c) = self.nodes[2 * f].ep.connection_mut(id) {
                let s = c.stats(now, false);
                self.flows[f].retransmitted_pkts = s.pkt_retrans_total;
                if std::env::var_os("UDT_SIM_DEBUG").is_some() {
                    eprintln!(
                        "flow {f}: bw {:.0} Mb/s rtt {:.1} ms period {:.2} us cwnd {} flow window {} {:?}",
                        s.mbps_bandwidth, s.ms_rtt, s.us_pkt_snd_period, s.pkt_congestion_window, s.pkt_flow_window, s.total
                    );
                }
            }
        }
    }

    fn take_slot(&mut self, slot: u32) -> InFlight {
        let p = self.slots[slot as usize]
            .take()
            .expect("scheduled slot holds a packet");
        self.free_slots.push(slot);
        p
    }

    /// A packet reaches its host: handed to the endpoint at once, or held in the host's
    /// batch when packets reaching it are coalesced.
    fn deliver(&mut self, p: InFlight) {
        let to = p.to as usize;
        let Some(c) = self.nodes[to].coalescing else {
            self.hand_over(p);
            self.service(to);
            return;
        };
        let node = &mut self.nodes[to];
        node.batch.push(p);
        if node.batch.len() == 1 {
            let no = node.batch_no;
            self.schedule(self.now + c.interval_ns, EventKind::Flush(to as u32, no));
        }
        if c.max_pkts > 0 && self.nodes[to].batch.len() >= c.max_pkts as usize {
            self.flush(to);
        }
    }

    /// Hands node `n`'s held packets to its endpoint, all at the current time (a NIC's
    /// interrupt, a poll of the emulator's queue).
    fn flush(&mut self, n: usize) {
        let node = &mut self.nodes[n];
        node.batch_no += 1;
        if node.coalescing.is_some_and(|c| c.gap_ns > 0) {
            // Handed over one gap apart: the first now unless earlier ones are still going.
            let idle = node.releasing.is_empty();
            node.releasing.extend(node.batch.drain(..));
            if idle {
                self.release_next(n);
            }
            return;
        }
        let mut batch = core::mem::take(&mut node.batch);
        for p in batch.drain(..) {
            self.hand_over(p);
        }
        // Keep the allocation for the next batch.
        self.nodes[n].batch = batch;
        self.service(n);
    }

    /// Hands over the next packet of node `n`'s flushed batches, and schedules the one after
    /// it a gap later.
    fn release_next(&mut self, n: usize) {
        let Some(p) = self.nodes[n].releasing.pop_front() else {
            return;
        };
        self.hand_over(p);
        self.service(n);
        let node = &self.nodes[n];
        if !node.releasing.is_empty() {
            let gap = node.coalescing.map_or(0, |c| c.gap_ns);
            self.schedule(self.now + gap, EventKind::Release(n as u32));
        }
    }

    /// Gives a datagram to its endpoint (without servicing the node).
    fn hand_over(&mut self, p: InFlight) {
        let to = p.to as usize;
        let now = self.now_instant();
        let datagram = &p.data[..p.len];
        if self.nodes[to].role == Role::Receiver && datagram.first().is_some_and(|b| b & 0x80 == 0)
        {
            self.data_delivered += 1;
            let f = &mut self.flows[self.nodes[to].flow];
            if f.completed_at.is_none() {
                if let Some(last) = f.last_data_at {
                    f.max_silence_ns = f.max_silence_ns.max(self.now - last);
                }
                f.last_data_at = Some(self.now);
            }
        }
        self.nodes[to]
            .ep
            .handle_datagram(now, p.from_addr, datagram);
        self.pool.push(p.data);
    }

    /// After anything happened at node `n`: run its application, send what it has to send,
    /// and re-arm its timer.
    fn service(&mut self, n: usize) {
        let now = self.now_instant();
        let flow = self.nodes[n].flow;
        if self.nodes[n].role == Role::Receiver {
            while let Some(id) = self.nodes[n].ep.accept() {
                self.flows[flow].receiver_conn = Some(id);
            }
        }
        while let Some((id, ev)) = self.nodes[n].ep.poll_event() {
            match (self.nodes[n].role, ev) {
                (Role::Sender, Event::Connected | Event::Writable) => self.pump_sender(flow),
                (Role::Sender, Event::Closed(_)) => self.record_sender_stats(flow),
                (Role::Receiver, Event::Readable | Event::Closed(_))
                    if self.flows[flow].receiver_conn == Some(id) =>
                {
                    self.drain_receiver(flow);
                }
                _ => {}
            }
        }
        loop {
            let mut data = self.take_buffer();
            let Some(t) = self.nodes[n].ep.poll_transmit(now, &mut data) else {
                self.pool.push(data);
                break;
            };
            self.route(n, t.destination, data, t.len);
        }
        self.rearm(n);
    }

    /// A datagram buffer of `datagram_capacity` bytes (contents unspecified).
    fn take_buffer(&mut self) -> Vec<u8> {
        self.pool
            .pop()
            .unwrap_or_else(|| vec![0; self.datagram_capacity])
    }

    fn rearm(&mut self, n: usize) {
        let node = &mut self.nodes[n];
        let mut next = node
            .ep
            .poll_timeout()
            .map(|t| (t.as_micros() * 1000).max(self.now));
        // Burst pacing, as the runtime's I/O thread does it: a paced send waits until one
        // quantum after the previous paced wake-up.
        let quantum_ns = if node.burst_by_rtt {
            node.ep.paced_timeout_quantum_us().map(|q| q * 1000)
        } else if node.burst_ns > 0 && node.ep.timeout_is_paced() {
            Some(node.burst_ns)
        } else {
            None
        };
        node.timer_paced = quantum_ns.is_some();
        if let (Some(q), Some(t), Some(last)) = (quantum_ns, next, node.last_paced_ns) {
            next = Some(t.max(last + q));
        }
        if next != node.timer_at {
            node.timer_at = next;
            if let Some(at) = next {
                self.schedule(at, EventKind::Timer(n as u32));
            }
        }
    }

    fn store(&mut self, packet: InFlight) -> u32 {
        match self.free_slots.pop() {
            Some(s) => {
                self.slots[s as usize] = Some(packet);
                s
            }
            None => {
                self.slots.push(Some(packet));
                (self.slots.len() - 1) as u32
            }
        }
    }

    /// Puts a datagram from node `from` on the path towards `to_addr`.
    fn route(&mut self, from: usize, to_addr: SocketAddr, data: Vec<u8>, len: usize) {
        self.datagrams += 1;
        let flow = self.nodes[from].flow;
        let to = match self.nodes[from].role {
            Role::Sender => 2 * flow + 1,
            Role::Receiver => 2 * flow,
        };
        if self.nodes[to].addr != to_addr {
            self.pool.push(data);
            return;
        }
        let packet = InFlight {
            to: to as u32,
            from: from as u32,
            from_addr: self.nodes[from].addr,
            data,
            len,
            access_wait: 0,
        };
        if self.nodes[from].role == Role::Sender {
            let now = self.now;
            let wire = packet.len + IP_UDP_OVERHEAD;
            let bucket = self.bucket(now);
            if let Some(access) = self.flows[flow].access.as_mut() {
                // The sender's own interface first: a DropTail queue like the bottleneck's.
                self.link_offered[bucket] += 1;
                let Some(dep) = access.offer(now, wire) else {
                    self.dropped_queue += 1;
                    self.link_dropped[bucket] += 1;
                    self.pool.push(packet.data);
                    return;
                };
                let packet = InFlight {
                    access_wait: dep.queueing,
                    ..packet
                };
                self.schedule_packet(flow, LANE_ACCESS, dep.at, packet, EventKind::Enqueue);
                return;
            }
        }
        self.bottleneck(packet);
    }

    /// The shared link of the packet's direction, then impairments and propagation.
    fn bottleneck(&mut self, packet: InFlight) {
        let from = packet.from as usize;
        let flow = self.nodes[from].flow;
        let forward = self.nodes[from].role == Role::Sender;
        let bucket = self.bucket(self.now);
        // A packet that came through an access link was counted as offered there.
        if forward && self.flows[flow].access.is_none() {
            self.link_offered[bucket] += 1;
        }
        let link = if forward {
            &mut self.forward
        } else {
            &mut self.reverse
        };
        let Some(dep) = link.offer(self.now, packet.len + IP_UDP_OVERHEAD) else {
            self.dropped_queue += 1;
            if forward {
                self.link_dropped[bucket] += 1;
            }
            self.pool.push(packet.data);
            return;
        };
        let loss = if forward {
            self.scenario.link.loss
        } else {
            self.scenario.link.reverse_loss
        };
        if self.chance(loss) {
            self.dropped_loss += 1;
            if forward {
                self.link_dropped[bucket] += 1;
            }
            self.pool.push(packet.data);
            return;
        }
        let is_data = packet.data[..packet.len][0] & 0x80 == 0;
        let f = &mut self.flows[flow];
        if forward && is_data {
            // RTT this packet experiences: the path's base RTT plus its waits in the queues.
            let queued = dep.queueing + packet.access_wait;
            f.rtt_sum_us[bucket] += f.spec.rtt_ms * 1000.0 + queued as f64 / 1000.0;
            f.rtt_count[bucket] += 1;
            f.sent_pkts += 1;
        }
        let base = dep.at + f.one_way_ns;
        let copies = if self.chance(self.scenario.link.duplicate) {
            2
        } else {
            1
        };
        let mut packet = Some(packet);
        for copy in 0..copies {
            let mut at = base;
            if self.scenario.link.jitter_ms > 0.0 {
                let j = (self.rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
                at += secs_to_ns(j * self.scenario.link.jitter_ms / 1000.0);
            }
            if self.chance(self.scenario.link.reorder) {
                at += secs_to_ns(self.scenario.link.reorder_delay_ms / 1000.0);
            }
            if let Some(stalls) = &self.stalls {
                at = stalls.release_at(at, u64::from(!forward));
            }
            let p = if copy + 1 == copies {
                packet.take().expect("one packet per copy")
            } else {
                let p = packet.as_ref().expect("packet kept for the last copy");
                InFlight {
                    data: p.data.clone(),
                    ..*p
                }
            };
            let lane = if forward { LANE_FORWARD } else { LANE_REVERSE };
            self.schedule_packet(flow, lane, at, p, EventKind::Deliver);
        }
    }

    /// Keeps the sender's buffer full: an unlimited backlog, or the flow's remaining bytes.
    fn pump_sender(&mut self, f: usize) {
        let flow = &mut self.flows[f];
        let Some(id) = flow.sender_conn else { return };
        if flow.closed_sender {
            return;
        }
        let now = Instant::from_micros(self.now / 1000);
        let ep = &mut self.nodes[2 * f].ep;
        let Some(mut conn) = ep.connection_mut(id) else {
            return;
        };
        let limit = flow.spec.bytes.unwrap_or(u64::MAX);
        let message_size = flow.spec.message_size;
        while flow.written < limit {
            let want = match message_size {
                Some(m) => (m as u64).min(limit - flow.written) as usize,
                None => (WRITE_CHUNK as u64).min(limit - flow.written) as usize,
            };
            // The stream's bytes are handed out as a slice; only a message longer than the
            // longest such span needs a copy.
            let long_message;
            let chunk = if want <= pattern::MAX_SPAN {
                pattern::stream(flow.written, want)
            } else {
                let mut bytes = vec![0u8; want];
                pattern::fill(flow.written, &mut bytes);
                long_message = bytes;
                &long_message
            };
            let result = match message_size {
                Some(_) => conn.send_msg(now, chunk, None, true).map(|()| want),
                None => conn.send(now, chunk),
            };
            match result {
                Ok(n) => flow.written += n as u64,
                Err(Error::WouldBlock) => break,
                Err(_) => return,
            }
        }
        if flow.written >= limit && flow.spec.bytes.is_some() {
            // Everything is queued: close with linger so it is still delivered.
            flow.closed_sender = true;
            conn.close(now);
        }
    }

    /// Reads everything readable and checks it against the pattern.
    fn drain_receiver(&mut self, f: usize) {
        let flow = &mut self.flows[f];
        let Some(id) = flow.receiver_conn else { return };
        let bucket = ((self.now / self.sample_ns) as usize).min(self.buckets - 1);
        let ep = &mut self.nodes[2 * f + 1].ep;
        let Some(mut conn) = ep.connection_mut(id) else {
            return;
        };
        loop {
            let n = match conn.kind() {
                SocketKind::Stream => match conn.recv(&mut self.scratch) {
                    Ok(n) => n,
                    Err(_) => break,
                },
                SocketKind::Message => match conn.recv_msg(&mut self.scratch) {
                    Ok(m) => m.copied,
                    Err(_) => break,
                },
            };
            flow.corrupt += pattern::mismatches(flow.received, &self.scratch[..n]);
            flow.received += n as u64;
            flow.delivered[bucket] += n as u64;
        }
        if flow.completed_at.is_none() && flow.spec.bytes.is_some_and(|b| flow.received >= b) {
            flow.completed_at = Some(self.now as f64 / 1e9);
        }
    }

    fn finish(mut self) -> RunOutput {
        let duration = self.scenario.duration_s;
        let mut records = Vec::with_capacity(self.flows.len());
        let mut integrity = Vec::with_capacity(self.flows.len());
        for f in 0..self.flows.len() {
            self.record_sender_stats(f);
        }
        for (i, f) in self.flows.iter_mut().enumerate() {
            let stop = match (f.spec.bytes, f.completed_at) {
                (Some(_), Some(t)) => t,
                (Some(_), None) => duration,
                (None, _) => f.stop_s,
            };
            let mut silence = f.max_silence_ns;
            if f.completed_at.is_none() {
                if let Some(last) = f.last_data_at {
                    silence = silence.max(self.now - last);
                }
            }
            integrity.push(FlowIntegrity {
                bytes_written: f.written,
                bytes_received: f.received,
                corrupt_bytes: f.corrupt,
                complete: f.spec.bytes.is_none_or(|b| f.received == b),
                max_silence_s: silence as f64 / 1e9,
            });
            records.push(FlowRecord {
                id: i,
                cc: f.spec.cc.clone(),
                rtt_ms: f.spec.rtt_ms,
                start_s: f.start_s,
                stop_s: stop,
                bytes_delivered: f.received,
                delivered_bytes: core::mem::take(&mut f.delivered),
                rtt_sum_us: core::mem::take(&mut f.rtt_sum_us),
                rtt_count: core::mem::take(&mut f.rtt_count),
                retransmitted_pkts: f.retransmitted_pkts,
                sent_pkts: f.sent_pkts,
            });
        }
        RunOutput {
            record: RunRecord {
                duration_s: duration,
                sample_interval_s: self.scenario.sample_interval_s,
                link_rate_mbps: self.scenario.link.rate_mbps,
                warmup_s: self.scenario.warmup_s,
                flows: records,
                link_offered_pkts: self.link_offered,
                link_dropped_pkts: self.link_dropped,
            },
            flows: integrity,
            events: self.events,
            datagrams: self.datagrams,
            data_packets_delivered: self.data_delivered,
            dropped_queue: self.dropped_queue,
            dropped_loss: self.dropped_loss,
        }
    }
}

/// Resolves each distinct congestion-control name of `flows` once.
fn resolve_cc(flows: &[FlowSpec]) -> BTreeMap<String, cc::SharedFactory> {
    let mut factories = BTreeMap::new();
    for f in flows {
        if !factories.contains_key(&f.cc) {
            if let Some(factory) = cc::by_name(&f.cc) {
                factories.insert(f.cc.clone(), factory);
            }
        }
    }
    factories
}

/// The connection options of a flow.
fn flow_config(
    spec: &FlowSpec,
    factories: &BTreeMap<String, cc::SharedFactory>,
) -> ConnectionConfig {
    let mut cfg = ConnectionConfig {
        congestion_control: factories
            .get(&spec.cc)
            .cloned()
            .expect("scenario validated: cc exists"),
        kind: if spec.message_size.is_some() {
            SocketKind::Message
        } else {
            SocketKind::Stream
        },
        linger: Some(Duration::from_secs(3600)),
        ..Default::default()
    };
    if let Some(m) = spec.mss {
        cfg.mss = m;
    }
    if let Some(b) = spec.recv_buffer_pkts {
        cfg.recv_buffer_pkts = b;
    }
    if let Some(b) = spec.send_buffer_pkts {
        cfg.send_buffer_pkts = b;
    }
    if let Some(w) = spec.flight_flag_size {
        cfg.flight_flag_size = w;
    }
    if let Some(p) = spec.periodic_nak {
        cfg.periodic_nak = p;
    }
    cfg
}
