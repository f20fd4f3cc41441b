//! The Composable UDT surface (papers 003/004, spec §13), exercised the way an algorithm
//! written outside the crate uses it: every hook fires with the right arguments, every
//! protocol control changes what goes on the wire, and algorithms registered by name are
//! found. Everything runs in simulated time on the in-memory network of `common`.

mod common;

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::{Arc, Mutex};

use common::{check_pattern, pattern, Datagram, Net};
use udt_proto::cc::{
    self, CcContext, CongestionControl, CustomMessage, FnFactory, PacketInfo, PerfStats,
    RegistryError, SeqNo, SeqRange, SharedFactory, UserDefined,
};
use udt_proto::{ConnectionConfig, Error, Instant, SocketId};

const CLIENT: usize = 0;
const SERVER: usize = 1;

/// What a probe algorithm does with the controls.
#[derive(Clone, Debug)]
struct Knobs {
    /// Fixed inter-packet period, µs.
    period_us: f64,
    /// Fixed window, packets.
    cwnd: f64,
    ack_timer_us: Option<u64>,
    ack_interval: Option<u32>,
    rto_us: Option<u64>,
    /// Sent to the peer from `init`.
    hello: Option<CustomMessage>,
    /// Answer every custom message with its words reversed, under `ext_type + 1`.
    echo: bool,
}

impl Default for Knobs {
    fn default() -> Self {
        Knobs {
            period_us: 100.0,
            cwnd: 1000.0,
            ack_timer_us: None,
            ack_interval: None,
            rto_us: None,
            hello: None,
            echo: false,
        }
    }
}

/// Everything a probe saw, in order.
#[derive(Debug, Default)]
struct Log {
    init: u32,
    close: u32,
    /// `(mss, max_cwnd)` seen by `init`.
    init_inputs: Option<(u32, f64)>,
    acks: Vec<SeqNo>,
    losses: Vec<Vec<SeqRange>>,
    timeouts: Vec<Instant>,
    sent_new: u64,
    sent_retrans: u64,
    /// Sequence numbers of new packets, in sending order.
    sent_seqs: Vec<SeqNo>,
    received: u64,
    custom: Vec<(u16, u32, Vec<u32>)>,
    /// At each `on_ack`: the statistics, and the `on_packet_sent` count at that moment.
    perf_at_ack: Vec<(PerfStats, u64)>,
}

/// A fixed-rate, fixed-window algorithm that records every hook.
struct Probe {
    knobs: Knobs,
    log: Arc<Mutex<Log>>,
}

impl Probe {
    fn log(&self) -> std::sync::MutexGuard<'_, Log> {
        self.log.lock().unwrap()
    }
}

impl CongestionControl for Probe {
    fn init(&mut self, ctx: &mut CcContext<'_>) {
        ctx.set_pkt_snd_period_us(self.knobs.period_us);
        ctx.set_cwnd_pkts(self.knobs.cwnd);
        if let Some(t) = self.knobs.ack_timer_us {
            ctx.set_ack_timer_us(t);
        }
        if let Some(n) = self.knobs.ack_interval {
            ctx.set_ack_interval_pkts(n);
        }
        if let Some(rto) = self.knobs.rto_us {
            ctx.set_rto_us(rto);
        }
        if let Some(m) = self.knobs.hello.clone() {
            ctx.send_custom(m);
        }
        let mut log = self.log();
        log.init += 1;
        log.init_inputs = Some((ctx.mss(), ctx.max_cwnd()));
    }
    fn close(&mut self, _ctx: &mut CcContext<'_>) {
        self.log().close += 1;
    }
    fn on_ack(&mut self, ctx: &mut CcContext<'_>, ack: SeqNo) {
        let perf = ctx.perf();
        let mut log = self.log();
        log.acks.push(ack);
        let sent = log.sent_new + log.sent_retrans;
        log.perf_at_ack.push((perf, sent));
    }
    fn on_loss(&mut self, _ctx: &mut CcContext<'_>, losses: &[SeqRange]) {
        self.log().losses.push(losses.to_vec());
    }
    fn on_timeout(&mut self, ctx: &mut CcContext<'_>) {
        let now = ctx.now();
        self.log().timeouts.push(now);
    }
    fn on_packet_sent(&mut self, _ctx: &mut CcContext<'_>, pkt: &PacketInfo) {
        let mut log = self.log();
        if pkt.retransmission {
            log.sent_retrans += 1;
        } else {
            log.sent_new += 1;
            log.sent_seqs.push(pkt.seq);
        }
    }
    fn on_packet_received(&mut self, _ctx: &mut CcContext<'_>, _pkt: &PacketInfo) {
        self.log().received += 1;
    }
    fn on_custom_message(&mut self, ctx: &mut CcContext<'_>, msg: &UserDefined<'_>) {
        let words: Vec<u32> = CustomMessage::words(msg.body).collect();
        if self.knobs.echo {
            let reversed: Vec<u32> = words.iter().rev().copied().collect();
            ctx.send_custom(CustomMessage::from_words(
                msg.ext_type.wrapping_add(1),
                msg.info,
                &reversed,
            ));
        }
        self.log().custom.push((msg.ext_type, msg.info, words));
    }
}

/// A factory of probes that all write to one log.
fn probe(knobs: Knobs) -> (SharedFactory, Arc<Mutex<Log>>) {
    let log = Arc::new(Mutex::new(Log::default()));
    let l = log.clone();
    let factory = FnFactory::new("probe", move || {
        Box::new(Probe {
            knobs: knobs.clone(),
            log: l.clone(),
        }) as Box<dyn CongestionControl>
    });
    (Arc::new(factory), log)
}

fn config(factory: SharedFactory) -> ConnectionConfig {
    ConnectionConfig {
        congestion_control: factory,
        ..Default::default()
    }
}

/// A client and a listening server `rtt_ms` apart, connected, each with its own algorithm.
fn connected(
    seed: u64,
    rtt_ms: u64,
    client: SharedFactory,
    server: SharedFactory,
) -> (Net, SocketId, SocketId) {
    let mut net = Net::new(seed, rtt_ms * 500);
    net.add("10.0.0.1:5000", seed * 2 + 1);
    net.add("10.0.0.2:9000", seed * 2 + 2);
    let now = net.now;
    net.nodes[SERVER]
        .ep
        .listen(now, config(server), 16)
        .unwrap();
    let (c, s) = net.establish(CLIENT, SERVER, config(client), 10.0);
    (net, c, s)
}

/// Client-to-server stream of pattern bytes: `sent` written so far, `received` read and
/// checked.
struct Stream {
    sent: u64,
    received: u64,
    buf: Vec<u8>,
}

impl Default for Stream {
    fn default() -> Self {
        Stream {
            sent: 0,
            received: 0,
            buf: vec![0u8; 64 * 1456],
        }
    }
}

impl Stream {
    /// Writes up to `total` bytes and reads what arrived, once.
    fn pump(&mut self, net: &mut Net, c: SocketId, s: SocketId, total: u64) {
        let now = net.now;
        let chunk = &mut self.buf;
        let mut conn = net.nodes[CLIENT].ep.connection_mut(c).unwrap();
        if self.sent < total && conn.send_buffer_free() > 0 {
            while self.sent < total {
                let n = (total - self.sent).min(chunk.len() as u64) as usize;
                pattern(self.sent, &mut chunk[..n]);
                match conn.send(now, &chunk[..n]) {
                    Ok(k) => self.sent += k as u64,
                    Err(Error::WouldBlock) => break,
                    Err(e) => panic!("send failed: {e}"),
                }
            }
        }
        drop(conn);
        let mut conn = net.nodes[SERVER].ep.connection_mut(s).unwrap();
        loop {
            match conn.recv(chunk) {
                Ok(n) => {
                    assert_eq!(check_pattern(self.received, &chunk[..n]), None);
                    self.received += n as u64;
                }
                Err(Error::WouldBlock) => break,
                Err(e) => panic!("recv failed: {e}"),
            }
        }
    }

    /// Transfers `total` bytes completely (panics after `limit_s` simulated seconds).
    fn transfer(&mut self, net: &mut Net, c: SocketId, s: SocketId, total: u64, limit_s: f64) {
        let ok = net.run_until(limit_s, |net| {
            self.pump(net, c, s, total);
            self.received == total
        });
        assert!(ok, "only {} of {total} bytes arrived", self.received);
    }

    /// Keeps the sender busy for `secs` simulated seconds.
    fn run_for(&mut self, net: &mut Net, c: SocketId, s: SocketId, secs: f64) {
        net.run_until(secs, |net| {
            self.pump(net, c, s, u64::MAX);
            false
        });
    }
}

/// What kind of UDT packet a datagram is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Data(u32),
    FullAck,
    LightAck,
    Custom(u16),
    OtherControl,
}

fn kind(d: &Datagram<'_>) -> Kind {
    let w0 = u32::from_be_bytes([d.data[0], d.data[1], d.data[2], d.data[3]]);
    if w0 & 0x8000_0000 == 0 {
        return Kind::Data(w0);
    }
    match (w0 >> 16) & 0x7FFF {
        // A light ACK carries one word; a full one four or six.
        2 if d.data.len() == 16 + 4 => Kind::LightAck,
        2 => Kind::FullAck,
        0x7FFF => Kind::Custom(w0 as u16),
        _ => Kind::OtherControl,
    }
}

/// Counts the datagrams of each kind the server sends and the client sends, from `from` on.
#[derive(Debug, Default)]
struct Census {
    from: Option<Instant>,
    data_from_client: u64,
    full_acks_from_server: u64,
    light_acks_from_server: u64,
    custom: Vec<(bool, u16)>,
}

fn census(net: &mut Net) -> Rc<RefCell<Census>> {
    let census = Rc::new(RefCell::new(Census::default()));
    let c = census.clone();
    let server = net.addr(SERVER);
    net.filter = Some(Box::new(move |d: &Datagram<'_>| {
        let mut c = c.borrow_mut();
        if c.from.is_some_and(|t| d.now < t) {
            return true;
        }
        let from_server = d.from == server;
        match kind(d) {
            Kind::Data(_) if !from_server => c.data_from_client += 1,
            Kind::FullAck if from_server => c.full_acks_from_server += 1,
            Kind::LightAck if from_server => c.light_acks_from_server += 1,
            Kind::Custom(ext) => c.custom.push((from_server, ext)),
            _ => {}
        }
        true
    }));
    census
}

#[test]
fn every_hook_fires_with_its_arguments() {
    let (cf, clog) = probe(Knobs::default());
    let (sf, slog) = probe(Knobs::default());
    let (mut net, c, s) = connected(1, 20, cf, sf);
    {
        let client = clog.lock().unwrap();
        assert_eq!(client.init, 1);
        // init sees the negotiated MSS and the peer's flow window (default 131 072).
        assert_eq!(client.init_inputs, Some((1500, 131_072.0)));
        assert_eq!(slog.lock().unwrap().init, 1);
    }
    // Drop the 100th and 101st data packets once: the receiver reports exactly that range.
    let dropped = Rc::new(RefCell::new(Vec::new()));
    let d2 = dropped.clone();
    let mut data_seen = 0u32;
    net.filter = Some(Box::new(move |d: &Datagram<'_>| {
        if let Kind::Data(seq) = kind(d) {
            data_seen += 1;
            if data_seen == 100 || data_seen == 101 {
                d2.borrow_mut().push(seq);
                return false;
            }
        }
        true
    }));
    let total = 2_000 * 1456;
    let mut stream = Stream::default();
    stream.transfer(&mut net, c, s, total, 30.0);
    // The last ACK is still on its way to the sender.
    net.run_until(0.1, |_| false);
    let dropped = dropped.borrow().clone();
    assert_eq!(dropped.len(), 2);
    {
        let client = clog.lock().unwrap();
        let server = slog.lock().unwrap();
        let first_loss = client.losses.first().expect("on_loss never fired");
        assert_eq!(
            first_loss,
            &[SeqRange {
                first: SeqNo::from_masked(dropped[0]),
                last: SeqNo::from_masked(dropped[1]),
            }]
        );
        assert_eq!(client.sent_new, 2_000);
        assert!(client.sent_retrans >= 2);
        // The receiver's hook saw every data packet that was not dropped.
        assert_eq!(
            server.received,
            client.sent_new + client.sent_retrans - 2,
            "on_packet_received count"
        );
        // ACKs only move forward, and the last one acknowledges everything.
        let isn = client.sent_seqs[0];
        assert!(client.acks.windows(2).all(|w| w[1].is_after(w[0])));
        assert_eq!(*client.acks.last().unwrap(), isn.add(2_000));
        assert!(client.timeouts.is_empty());
        assert_eq!(client.close, 0);
    }
    let now = net.now;
    net.nodes[CLIENT].ep.close(now, c);
    net.run_until(1.0, |_| false);
    assert_eq!(clog.lock().unwrap().close, 1, "client close hook");
    assert_eq!(slog.lock().unwrap().close, 1, "server close hook");
}

#[test]
fn perf_statistics_are_readable_from_a_hook() {
    let (cf, clog) = probe(Knobs::default());
    let (sf, _) = probe(Knobs::default());
    let (mut net, c, s) = connected(2, 20, cf, sf);
    Stream::default().transfer(&mut net, c, s, 5_000 * 1456, 30.0);
    let log = clog.lock().unwrap();
    assert!(!log.perf_at_ack.is_empty());
    for (perf, sent_by_hook) in &log.perf_at_ack {
        // The statistics count exactly the packets the sent hook saw before this ACK.
        assert_eq!(perf.pkt_sent_total, *sent_by_hook);
        assert_eq!(perf.us_pkt_snd_period, 100.0);
        assert_eq!(perf.pkt_congestion_window, 1000);
    }
    let (last, _) = log.perf_at_ack.last().unwrap();
    // The counters include the ACK being processed, and the RTT is about 20 ms.
    assert_eq!(last.pkt_recv_ack_total, log.acks.len() as u64);
    assert!(
        (15.0..25.0).contains(&last.ms_rtt),
        "rtt {} ms",
        last.ms_rtt
    );
}

#[test]
fn custom_messages_travel_between_the_two_algorithms() {
    let hello = CustomMessage::from_words(0x1234, 0xDEAD_BEEF, &[1, 2, 3]);
    let (cf, clog) = probe(Knobs {
        hello: Some(hello),
        ..Default::default()
    });
    let (sf, slog) = probe(Knobs {
        echo: true,
        ..Default::default()
    });
    let mut net = Net::new(3, 5_000);
    net.add("10.0.0.1:5000", 7);
    net.add("10.0.0.2:9000", 8);
    let census = census(&mut net);
    let now = net.now;
    net.nodes[SERVER].ep.listen(now, config(sf), 4).unwrap();
    let to = net.addr(SERVER);
    net.nodes[CLIENT].ep.connect(now, to, config(cf)).unwrap();
    net.run_until(1.0, |_| false);
    // The server's algorithm got the client's message, with its extended type, info and body.
    assert_eq!(
        slog.lock().unwrap().custom,
        vec![(0x1234, 0xDEAD_BEEF, vec![1, 2, 3])]
    );
    // And its reply, sent from inside its hook, came back.
    assert_eq!(
        clog.lock().unwrap().custom,
        vec![(0x1235, 0xDEAD_BEEF, vec![3, 2, 1])]
    );
    // On the wire: type 0x7FFF with the extended type in the low 16 bits of word 0.
    assert_eq!(
        census.borrow().custom,
        vec![(false, 0x1234), (true, 0x1235)]
    );
}

/// Full ACKs the server sends while the client streams at `period_us` for one second, with
/// the server's algorithm setting `knobs`.
fn acks_during_one_second(period_us: f64, knobs: Knobs) -> Census {
    let (cf, _) = probe(Knobs {
        period_us,
        ..Default::default()
    });
    let (sf, _) = probe(knobs);
    let (mut net, c, s) = connected(4, 10, cf, sf);
    let mut stream = Stream::default();
    stream.run_for(&mut net, c, s, 0.5); // past start-up
    let census = census(&mut net);
    census.borrow_mut().from = Some(net.now);
    stream.run_for(&mut net, c, s, 1.0);
    net.filter = None;
    Rc::try_unwrap(census).unwrap().into_inner()
}

#[test]
fn ack_timer_sets_the_period_of_full_acks() {
    // About 5 000 packets/s: below 64 packets per ACK period, so no light ACKs at all.
    let default = acks_during_one_second(200.0, Knobs::default());
    let fast = acks_during_one_second(
        200.0,
        Knobs {
            ack_timer_us: Some(2_000),
            ..Default::default()
        },
    );
    let capped = acks_during_one_second(
        200.0,
        Knobs {
            ack_timer_us: Some(50_000),
            ..Default::default()
        },
    );
    // A full ACK at the first packet arrival after each period ends: one per 10 ms by
    // default (SYN), one per 2 ms when asked, and never slower than SYN.
    assert!(
        (95..=100).contains(&default.full_acks_from_server),
        "{default:?}"
    );
    assert!(
        (450..=500).contains(&fast.full_acks_from_server),
        "{fast:?}"
    );
    assert!(
        (95..=100).contains(&capped.full_acks_from_server),
        "{capped:?}"
    );
    assert_eq!(default.light_acks_from_server, 0);
}

#[test]
fn ack_interval_adds_a_full_ack_every_n_packets() {
    let every4 = acks_during_one_second(
        200.0,
        Knobs {
            ack_interval: Some(4),
            ..Default::default()
        },
    );
    // 5 000 packets in the second (one period per packet: each probing pair leaves back to
    // back, and the packet after it waits one period more): a full ACK every 4th packet, and
    // the timer never expires, since each such ACK restarts it.
    let pkts = every4.data_from_client;
    assert!((4_990..=5_010).contains(&pkts), "{every4:?}");
    let expected = pkts / 4;
    assert!(
        every4.full_acks_from_server.abs_diff(expected) <= 2,
        "{every4:?}"
    );
    assert_eq!(every4.light_acks_from_server, 0);
}

#[test]
fn light_acks_come_every_64_packets_between_full_acks() {
    // 50 000 packets/s: 500 per 10 ms ACK period, so light ACKs at packets 64, 128, …, 448
    // of each period: seven per full ACK.
    let census = acks_during_one_second(20.0, Knobs::default());
    let full = census.full_acks_from_server;
    let light = census.light_acks_from_server;
    assert!((95..=100).contains(&full), "{census:?}");
    assert!(
        (49_980..=50_020).contains(&census.data_from_client),
        "{census:?}"
    );
    assert!(light.abs_diff(7 * full) <= 8, "{census:?}");
    // An ACK interval of 32 resets the count before 64 packets: full ACKs only.
    let census = acks_during_one_second(
        20.0,
        Knobs {
            ack_interval: Some(32),
            ..Default::default()
        },
    );
    assert_eq!(census.light_acks_from_server, 0, "{census:?}");
    assert!(
        census
            .full_acks_from_server
            .abs_diff(census.data_from_client / 32)
            <= 2,
        "{census:?}"
    );
}

/// Streams for a while, then cuts the path both ways for two seconds; returns the instants
/// of the client's timeouts relative to the start of the silence, µs. (Cutting only the data
/// direction would not do: the receiver keeps re-sending its unconfirmed ACK, and any packet
/// from the peer restarts the timeout, in 4.11 as here.)
fn timeouts_during_silence(rto_us: Option<u64>) -> Vec<u64> {
    let (cf, clog) = probe(Knobs {
        rto_us,
        ..Default::default()
    });
    let (sf, _) = probe(Knobs::default());
    let (mut net, c, s) = connected(5, 10, cf, sf);
    let mut stream = Stream::default();
    stream.run_for(&mut net, c, s, 0.3);
    let silence = net.now;
    net.nodes[SERVER].blackout = true;
    net.nodes[CLIENT].blackout = true;
    stream.run_for(&mut net, c, s, 2.0);
    let log = clog.lock().unwrap();
    log.timeouts
        .iter()
        .map(|t| t.micros_since(silence))
        .collect()
}

#[test]
fn rto_override_replaces_the_timeout_formula() {
    let formula = timeouts_during_silence(None);
    let fixed = timeouts_during_silence(Some(50_000));
    // UDT's formula: at least 300 ms after the last response, then backing off (×2, ×3 …).
    assert!(formula[0] >= 290_000, "{formula:?}");
    assert!(formula.len() <= 4, "{formula:?}");
    // A fixed 50 ms RTO: the first timeout 50 ms after the last ACK (at most one 10 ms ACK
    // period plus the 5 ms flight before the silence), then every 50 ms without back-off.
    assert!((35_000..=50_000).contains(&fixed[0]), "{fixed:?}");
    assert!(fixed.windows(2).all(|w| w[1] - w[0] == 50_000), "{fixed:?}");
    assert!(fixed.len() >= 39, "{fixed:?}");
}

/// A trivial user algorithm: fixed rate.
struct Fixed;

impl CongestionControl for Fixed {
    fn init(&mut self, ctx: &mut CcContext<'_>) {
        ctx.set_pkt_snd_period_us(50.0);
        ctx.set_cwnd_pkts(500.0);
    }
}

#[test]
fn registered_algorithms_are_found_by_name() {
    let name = "ccc-test-fixed";
    let factory: SharedFactory = Arc::new(FnFactory::new(name, || {
        Box::new(Fixed) as Box<dyn CongestionControl>
    }));
    cc::register(name, factory.clone()).unwrap();
    assert!(matches!(
        cc::register(name, factory.clone()),
        Err(RegistryError::AlreadyRegistered(_))
    ));
    assert!(matches!(
        cc::register("udt", factory.clone()),
        Err(RegistryError::BuiltIn(_))
    ));
    for bad in ["", "has space", "quote\"", &"x".repeat(65)] {
        assert!(matches!(
            cc::register(bad, factory.clone()),
            Err(RegistryError::InvalidName(_))
        ));
    }
    // Parametrised built-in names are built in too.
    assert!(matches!(
        cc::register("gtp:100", factory.clone()),
        Err(RegistryError::BuiltIn(_))
    ));
    assert!(cc::available().iter().any(|(n, _)| n == name));
    let found = cc::by_name(name).expect("registered name resolves");
    let (mut net, c, s) = connected(6, 10, found.clone(), found);
    let conn = net.nodes[CLIENT].ep.connection(c).unwrap();
    assert_eq!(conn.congestion_control_name(), name);
    Stream::default().transfer(&mut net, c, s, 200 * 1456, 10.0);
    let perf = net.nodes[CLIENT]
        .ep
        .connection_mut(c)
        .unwrap()
        .stats(net.now, false);
    assert_eq!(perf.us_pkt_snd_period, 50.0);
    assert!(cc::unregister(name));
    assert!(cc::by_name(name).is_none());
}
