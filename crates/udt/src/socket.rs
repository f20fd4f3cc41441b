//! Sockets: [`Builder`] (options), [`Socket`] (a connection: a byte stream with `Read` and
//! `Write`, or a message socket with `send_msg`/`recv_msg`) and [`Listener`].

use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, ToSocketAddrs, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use udt_proto::buffer::MsgRead;
use udt_proto::cc::{self, SharedFactory};
use udt_proto::stats::PerfStats;
use udt_proto::{
    CloseReason, Connection, ConnectionConfig, ConnectionState, Error as EngineError,
    Instant as EngineInstant, SocketId, SocketKind,
};

use crate::error::{Error, Result};

pub(crate) mod bulk_recv;
pub(crate) mod bulk_send;
use crate::mux::{Mux, State};
#[cfg(feature = "tokio")]
use crate::readiness::Watcher;
use crate::readiness::{self, Readiness, Target};
use crate::udp::{BufferSizes, IoStats};

/// Longest wait in [`Socket::close`] for the I/O thread to send the connection's last
/// datagrams.
const CLOSE_FLUSH_LIMIT: Duration = Duration::from_millis(500);

/// Default kernel receive buffer of the UDP socket with the default MSS, bytes: room for
/// about 100 ms of packets at 1 Gb/s while the I/O thread is busy (4.11 asks for 12 MB).
/// Larger MSSs get more, see [`default_udp_recv_buffer`].
pub const DEFAULT_UDP_RECV_BUFFER: usize = 16 << 20;

/// Largest default kernel receive buffer of the UDP socket, bytes (see
/// [`default_udp_recv_buffer`]).
pub const MAX_DEFAULT_UDP_RECV_BUFFER: usize = 64 << 20;

/// The default kernel receive buffer of the UDP socket for `mss`, bytes:
/// [`DEFAULT_UDP_RECV_BUFFER`] for 1500 bytes and less, growing in proportion above that, up
/// to [`MAX_DEFAULT_UDP_RECV_BUFFER`]. Larger packets cost the receiver less per byte, so
/// flows run faster and the same pause of the I/O thread leaves more bytes waiting: with
/// 9000-byte packets on loopback (12-17 Gb/s), 16 MB held 8-10 ms and overflowed, 250-5 000
/// times per 2 GB (`docs/benchmarks.md`).
pub fn default_udp_recv_buffer(mss: u32) -> usize {
    let scaled = DEFAULT_UDP_RECV_BUFFER as u64 * u64::from(mss) / 1500;
    (scaled as usize).clamp(DEFAULT_UDP_RECV_BUFFER, MAX_DEFAULT_UDP_RECV_BUFFER)
}
/// Default kernel send buffer of the UDP socket, bytes.
pub const DEFAULT_UDP_SEND_BUFFER: usize = 4 << 20;

/// Socket options (UDT4's `setsockopt` values that make sense here), used to connect, listen or
/// meet a rendezvous peer.
///
/// Setters take any value; [`Builder::validate`] (called by `connect`, `rendezvous` and
/// `listen`) rejects out-of-range ones with [`Error::InvalidOption`] (UDT4 5003).
#[derive(Clone, Debug)]
pub struct Builder {
    conn: ConnectionConfig,
    /// `None`: [`default_udp_recv_buffer`] of the MSS.
    udp_recv_buffer: Option<usize>,
    udp_send_buffer: usize,
    read_timeout: Option<Duration>,
    write_timeout: Option<Duration>,
    reuse_addr: bool,
    local_addr: Option<SocketAddr>,
    nonblocking: bool,
    accept_any_kind: bool,
}

impl Default for Builder {
    fn default() -> Self {
        Builder {
            conn: ConnectionConfig::default(),
            udp_recv_buffer: None,
            udp_send_buffer: DEFAULT_UDP_SEND_BUFFER,
            read_timeout: None,
            write_timeout: None,
            reuse_addr: true,
            local_addr: None,
            nonblocking: false,
            accept_any_kind: false,
        }
    }
}

impl Builder {
    /// Default options: stream socket, MSS 1500, a 131 072-packet receive buffer and flow
    /// window, a 25 600-packet send buffer, linger 180 s, native congestion control.
    pub fn new() -> Self {
        Self::default()
    }

    /// Socket or message socket.
    pub fn kind(mut self, kind: SocketKind) -> Self {
        self.conn.kind = kind;
        self
    }

    /// A listener made with this on accepts stream and message peers alike; each accepted
    /// socket takes its peer's kind ([`Socket::kind`]). Off (the default, and UDT4's only
    /// behaviour), a listener refuses peers of a kind other than [`Builder::kind`]. Useful for
    /// a server that serves both, like `udt perf server`. Ignored by `connect`.
    pub fn accept_any_kind(mut self, on: bool) -> Self {
        self.accept_any_kind = on;
        self
    }

    /// Maximum segment size, bytes including IP and UDP headers (`UDT_MSS`, 76 … 65535).
    pub fn mss(mut self, bytes: u32) -> Self {
        self.conn.mss = bytes;
        self
    }

    /// Largest flow window, packets (`UDT_FC`).
    pub fn flight_flag_size(mut self, packets: u32) -> Self {
        self.conn.flight_flag_size = packets;
        self
    }

    /// Send buffer, packets (`UDT_SNDBUF` divided by the payload size).
    pub fn send_buffer_pkts(mut self, packets: u32) -> Self {
        self.conn.send_buffer_pkts = packets;
        self
    }

    /// Receive buffer, packets (`UDT_RCVBUF` divided by the payload size).
    pub fn recv_buffer_pkts(mut self, packets: u32) -> Self {
        self.conn.recv_buffer_pkts = packets;
        self
    }

    /// Send buffer in bytes, as UDT4's `UDT_SNDBUF` takes it: stored as
    /// `bytes / (MSS − 28)` packets, so set the MSS first.
    pub fn send_buffer_bytes(mut self, bytes: usize) -> Self {
        self.conn.send_buffer_pkts = bytes_to_pkts(bytes, self.conn.mss);
        self
    }

    /// Receive buffer in bytes, as UDT4's `UDT_RCVBUF` takes it: stored as
    /// `bytes / (MSS − 28)` packets, so set the MSS first.
    pub fn recv_buffer_bytes(mut self, bytes: usize) -> Self {
        self.conn.recv_buffer_pkts = bytes_to_pkts(bytes, self.conn.mss);
        self
    }

    /// Kernel buffers of the UDP socket, bytes (`UDP_RCVBUF`, `UDP_SNDBUF`).
    pub fn udp_buffers(self, recv: usize, send: usize) -> Self {
        self.udp_recv_buffer(recv).udp_send_buffer(send)
    }

    /// Kernel receive buffer of the UDP socket, bytes (`UDP_RCVBUF`; default
    /// [`default_udp_recv_buffer`] of the MSS).
    pub fn udp_recv_buffer(mut self, bytes: usize) -> Self {
        self.udp_recv_buffer = Some(bytes);
        self
    }

    /// Kernel send buffer of the UDP socket, bytes (`UDP_SNDBUF`; default
    /// [`DEFAULT_UDP_SEND_BUFFER`]).
    pub fn udp_send_buffer(mut self, bytes: usize) -> Self {
        self.udp_send_buffer = bytes;
        self
    }

    /// Keep delivering queued data for up to this long after close (`UDT_LINGER`).
    pub fn linger(mut self, linger: Option<Duration>) -> Self {
        self.conn.linger = linger;
        self
    }

    /// Largest sending rate, bytes per second (`UDT_MAXBW`).
    pub fn max_bandwidth(mut self, bytes_per_sec: Option<u64>) -> Self {
        self.conn.max_bandwidth = bytes_per_sec;
        self
    }

    /// Congestion control for connections made with these options (`UDT_CC`).
    pub fn congestion_control(mut self, factory: SharedFactory) -> Self {
        self.conn.congestion_control = factory;
        self
    }

    /// Congestion control by name (see [`udt_proto::cc::names`]).
    pub fn congestion_control_by_name(self, name: &str) -> Result<Self> {
        let f = cc::by_name(name).ok_or(Error::InvalidOption("unknown congestion control"))?;
        Ok(self.congestion_control(f))
    }

    /// Authenticated encryption for connections made with these options (see
    /// `docs/encryption.md`): `Some` with a secret and a mode
    /// ([`EncryptionMode::Preferred`](udt_proto::EncryptionMode) connects in clear to peers
    /// without the extension, such as UDT4 4.11; `Required` refuses them); `None` (the
    /// default) sends in clear, as UDT4 does.
    ///
    /// ```no_run
    /// use udt::{Builder, Encryption, EncryptionMode};
    /// let enc = Encryption::from_passphrase(b"s3cret", EncryptionMode::Required).unwrap();
    /// let sock = Builder::new().encryption(Some(enc)).connect("127.0.0.1:9000").unwrap();
    /// assert!(sock.is_encrypted());
    /// ```
    pub fn encryption(mut self, encryption: Option<udt_proto::Encryption>) -> Self {
        self.conn.encryption = encryption;
        self
    }

    /// Give up connecting after this long.
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.conn.connect_timeout = timeout;
        self
    }

    /// Declare the peer dead once nothing has been heard from it for this long (a killed peer,
    /// a cut path): blocked and later calls then fail with [`Error::ConnectionLost`] (data
    /// already received stays readable first). `None` (the default) keeps UDT4's rule only: about 46 s of silence on a short
    /// path. Idle but live peers exchange keep-alives well within a second, so any value of a
    /// second or more is safe.
    pub fn peer_idle_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.conn.peer_idle_timeout = timeout;
        self
    }

    /// Blocking reads give up after this long (`UDT_RCVTIMEO`).
    pub fn read_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.read_timeout = timeout;
        self
    }

    /// Blocking writes give up after this long (`UDT_SNDTIMEO`).
    pub fn write_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.write_timeout = timeout;
        self
    }

    /// Reuse address (`UDT_REUSEADDR`, default on as in UDT4): a socket bound to an explicit
    /// port that another of this process's sockets already uses, with the same IP version and
    /// this option on for both, shares that UDP port, its multiplexer and I/O thread. Off, the
    /// socket gets a UDP socket of its own, and a port in use is [`Error::AddrInUse`]. A shared
    /// port keeps the UDP buffer sizes of the socket that opened it.
    pub fn reuse_addr(mut self, on: bool) -> Self {
        self.reuse_addr = on;
        self
    }

    /// The local address `connect` binds (default: the unspecified address of the remote's IP
    /// version, port 0, i.e. a new UDP port). With an explicit port and reuse address on, the
    /// connection shares the port with this process's other sockets on it.
    pub fn local_addr(mut self, addr: SocketAddr) -> Self {
        self.local_addr = Some(addr);
        self
    }

    /// Non-blocking mode of the sockets made (`UDT_SNDSYN`/`UDT_RCVSYN` false): their reads
    /// and writes fail with [`Error::WouldBlock`] instead of waiting. `connect` still waits
    /// for the handshake (use [`Builder::connect_nonblocking`] not to), and `accept` blocks
    /// unless [`Listener::set_nonblocking`].
    pub fn nonblocking(mut self, on: bool) -> Self {
        self.nonblocking = on;
        self
    }

    /// The connection options (MSS, buffers, linger, …) as set.
    pub fn connection_config(&self) -> &ConnectionConfig {
        &self.conn
    }

    /// Requested kernel UDP buffers, bytes: (receive, send).
    pub fn udp_buffer_sizes(&self) -> (usize, usize) {
        let recv = self
            .udp_recv_buffer
            .unwrap_or_else(|| default_udp_recv_buffer(self.conn.mss));
        (recv, self.udp_send_buffer)
    }

    /// Whether reuse address is on.
    pub fn is_reuse_addr(&self) -> bool {
        self.reuse_addr
    }

    /// Checks every option, failing with [`Error::InvalidOption`] on the first invalid one.
    pub fn validate(&self) -> Result<()> {
        self.conn.validate().map_err(Error::InvalidOption)?;
        let mss = self.conn.mss as usize;
        let (udp_recv, udp_send) = self.udp_buffer_sizes();
        if udp_recv < mss || udp_send < mss {
            return Err(Error::InvalidOption(
                "UDP buffers must hold at least one MSS",
            ));
        }
        if udp_recv > i32::MAX as usize || udp_send > i32::MAX as usize {
            return Err(Error::InvalidOption("UDP buffers must be below 2 GiB"));
        }
        if self.read_timeout == Some(Duration::ZERO) || self.write_timeout == Some(Duration::ZERO) {
            return Err(Error::InvalidOption(
                "send/receive timeouts must be positive (None waits forever)",
            ));
        }
        if self.conn.connect_timeout.is_zero() {
            return Err(Error::InvalidOption("connect timeout must be positive"));
        }
        Ok(())
    }

    fn open(&self, local: SocketAddr) -> Result<Arc<Mux>> {
        self.validate()?;
        let (udp_recv, udp_send) = self.udp_buffer_sizes();
        Mux::open(local, self.reuse_addr, udp_recv, udp_send)
    }

    /// Opens the UDP port `addr` for UDT (UDT4's `bind`), with this builder's UDP buffers and
    /// reuse-address setting, without listening or connecting yet: the port is taken and
    /// [`Bound::local_addr`] names it. [`Builder::listen_bound`], [`Builder::connect_bound`]
    /// or [`Builder::rendezvous_bound`] then use it.
    pub fn bind(&self, addr: impl ToSocketAddrs) -> Result<Bound> {
        let local = resolve(addr)?;
        Ok(Bound::new(self.open(local)?))
    }

    /// Takes over a UDP socket the application made (UDT4's `bind2`), instead of opening
    /// one: it is made non-blocking, given this builder's UDP buffers and receive timestamps,
    /// and bound to an ephemeral port if it was not bound. The socket then belongs to UDT and
    /// is closed when its last UDT socket is.
    pub fn bind_udp(&self, udp: UdpSocket) -> Result<Bound> {
        self.validate()?;
        let (udp_recv, udp_send) = self.udp_buffer_sizes();
        let mux = Mux::adopt(udp, self.reuse_addr, udp_recv, udp_send)?;
        Ok(Bound::new(mux))
    }

    /// Connects to a listening UDT socket.
    pub fn connect(&self, addr: impl ToSocketAddrs) -> Result<Socket> {
        self.connect_with(addr, true)
    }

    /// Starts connecting and returns at once (UDT4's `connect` with `UDT_RCVSYN` false). The
    /// handshake completes in the background: a [`Poller`](crate::Poller) reports the socket
    /// writable once it is connected, or with an error if connecting failed;
    /// [`Socket::connect_result`] tells which. Sending or receiving before then fails with
    /// [`Error::NotConnected`].
    pub fn connect_nonblocking(&self, addr: impl ToSocketAddrs) -> Result<Socket> {
        self.connect_with(addr, false)
    }

    fn connect_with(&self, addr: impl ToSocketAddrs, wait: bool) -> Result<Socket> {
        let remote = resolve(addr)?;
        let local = match self.local_addr {
            Some(l) if l.is_ipv4() != remote.is_ipv4() => {
                return Err(Error::InvalidOption(
                    "local and remote addresses are of different IP versions",
                ))
            }
            Some(l) => l,
            None => unspecified_like(remote),
        };
        let bound = self.bind(local)?;
        self.connect_bound(bound, remote, wait)
    }

    /// Connects from a port opened with [`Builder::bind`] or [`Builder::bind_udp`]; `wait`:
    /// block until the handshake ends (as [`Builder::connect`]) or return at once (as
    /// [`Builder::connect_nonblocking`]).
    pub fn connect_bound(
        &self,
        bound: Bound,
        addr: impl ToSocketAddrs,
        wait: bool,
    ) -> Result<Socket> {
        let remote = resolve(addr)?;
        check_same_family(bound.local_addr(), remote)?;
        self.validate()?;
        self.connect_on(bound.into_mux(), remote, self.conn.clone(), wait)
    }

    /// Meets a peer that connects to us at the same time (rendezvous): both sides bind a known
    /// port and connect to each other.
    pub fn rendezvous(
        &self,
        local: impl ToSocketAddrs,
        remote: impl ToSocketAddrs,
    ) -> Result<Socket> {
        let local = resolve(local)?;
        let remote = resolve(remote)?;
        check_same_family(local, remote)?;
        let bound = self.bind(local)?;
        self.rendezvous_bound(bound, remote, true)
    }

    /// Rendezvous from a port opened with [`Builder::bind`] or [`Builder::bind_udp`]; `wait`
    /// as in [`Builder::connect_bound`].
    pub fn rendezvous_bound(
        &self,
        bound: Bound,
        remote: impl ToSocketAddrs,
        wait: bool,
    ) -> Result<Socket> {
        let remote = resolve(remote)?;
        check_same_family(bound.local_addr(), remote)?;
        self.validate()?;
        let mut conn = self.conn.clone();
        conn.rendezvous = true;
        if conn.connect_timeout < Duration::from_secs(30) {
            // 4.11 gives rendezvous 30 s: both sides must be started by hand.
            conn.connect_timeout = Duration::from_secs(30);
        }
        self.connect_on(bound.into_mux(), remote, conn, wait)
    }

    fn connect_on(
        &self,
        mux: Arc<Mux>,
        remote: SocketAddr,
        conn: ConnectionConfig,
        wait: bool,
    ) -> Result<Socket> {
        // `mux` arrives holding one handle for us (see `Mux::bind`); the socket takes it over.
        let mut st = mux.lock();
        let now = mux.clock.now();
        let id = match st.ep.connect(now, remote, conn.clone()) {
            Ok(id) => id,
            Err(e) => {
                st.handles -= 1;
                drop(st);
                mux.wake();
                return Err(e.into());
            }
        };
        let cv = st.waiter(id);
        mux.after_app_call(&mut st);
        let mut opts = self.clone();
        opts.conn = conn;
        if !wait {
            drop(st);
            return Ok(Socket::new(mux, id, &opts));
        }
        loop {
            if let Some(r) = st.connect_results.remove(&id) {
                drop(st);
                let stream = Socket::new(mux, id, &opts);
                return match r {
                    Ok(()) => Ok(stream),
                    Err(e) => Err(Error::Connect(e)),
                };
            }
            st = cv.wait(st);
        }
    }

    /// Binds `addr` and listens, queueing up to `backlog` connections for [`Listener::accept`].
    pub fn listen(&self, addr: impl ToSocketAddrs, backlog: usize) -> Result<Listener> {
        let bound = self.bind(addr)?;
        self.listen_bound(bound, backlog)
    }

    /// Listens on a port opened with [`Builder::bind`] or [`Builder::bind_udp`].
    pub fn listen_bound(&self, bound: Bound, backlog: usize) -> Result<Listener> {
        if self.conn.rendezvous {
            return Err(Error::RendezvousListen);
        }
        self.validate()?;
        let mux = bound.into_mux();
        // `mux` arrives holding one handle for us (see `Mux::bind`); the listener takes it over.
        let mut st = mux.lock();
        let now = mux.clock.now();
        if let Err(e) = st.ep.listen(now, self.conn.clone(), backlog) {
            st.handles -= 1;
            drop(st);
            mux.wake();
            return Err(e.into());
        }
        st.ep.set_listener_accepts_any_kind(self.accept_any_kind);
        drop(st);
        Ok(Listener {
            mux,
            builder: self.clone(),
            nonblocking: AtomicBool::new(false),
            closed: AtomicBool::new(false),
        })
    }

    /// Whether sockets made with these options start in non-blocking mode.
    pub fn is_nonblocking(&self) -> bool {
        self.nonblocking
    }

    /// Blocking read timeout of sockets made with these options.
    pub fn read_timeout_value(&self) -> Option<Duration> {
        self.read_timeout
    }

    /// Blocking write timeout of sockets made with these options.
    pub fn write_timeout_value(&self) -> Option<Duration> {
        self.write_timeout
    }
}

/// A UDP port opened for UDT that neither listens nor connects yet (a bound UDT4 socket),
/// from [`Builder::bind`] or [`Builder::bind_udp`]. Dropping it releases the port (unless
/// other sockets share it).
pub struct Bound {
    /// Holds one application handle on the multiplexer until taken by a listener or socket.
    mux: Option<Arc<Mux>>,
}

impl Bound {
    fn new(mux: Arc<Mux>) -> Bound {
        Bound { mux: Some(mux) }
    }

    fn mux(&self) -> &Arc<Mux> {
        self.mux
            .as_ref()
            .expect("a Bound holds its multiplexer until consumed")
    }

    /// The bound UDP address.
    pub fn local_addr(&self) -> SocketAddr {
        self.mux().local_addr()
    }

    /// What the kernel granted for the UDP socket buffers.
    pub fn udp_buffers(&self) -> BufferSizes {
        self.mux().buffers
    }

    /// What this socket's UDP port has moved and by which path: GSO and GRO in use or not,
    /// datagrams and system calls, burst-pacing wake-ups. Shared by every socket of the port.
    pub fn io_stats(&self) -> IoStats {
        self.mux().io_stats()
    }

    /// A second hold on the same port (both must be dropped or consumed to release it).
    pub(crate) fn share(&self) -> Bound {
        let mux = self.mux();
        mux.lock().handles += 1;
        Bound::new(Arc::clone(mux))
    }

    /// Hands the multiplexer, with its handle, to a listener or socket.
    fn into_mux(mut self) -> Arc<Mux> {
        self.mux
            .take()
            .expect("a Bound holds its multiplexer until consumed")
    }
}

impl Drop for Bound {
    fn drop(&mut self) {
        if let Some(mux) = self.mux.take() {
            mux.lock().handles -= 1;
            mux.wake();
        }
    }
}

impl std::fmt::Debug for Bound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bound")
            .field("local_addr", &self.mux.as_ref().map(|m| m.local_addr()))
            .finish()
    }
}

fn check_same_family(local: SocketAddr, remote: SocketAddr) -> Result<()> {
    if local.is_ipv4() != remote.is_ipv4() {
        return Err(Error::InvalidOption(
            "local and remote addresses are of different IP versions",
        ));
    }
    Ok(())
}

/// UDT4's conversion of a buffer size in bytes to packets of `MSS − 28` bytes (a value the
/// validation rejects if the MSS is out of range).
fn bytes_to_pkts(bytes: usize, mss: u32) -> u32 {
    let per_pkt = (mss.saturating_sub(udt_proto::config::IP_UDP_HEADER_LEN) as usize).max(1);
    u32::try_from(bytes / per_pkt).unwrap_or(u32::MAX)
}

fn resolve(addr: impl ToSocketAddrs) -> Result<SocketAddr> {
    addr.to_socket_addrs()?
        .next()
        .ok_or(Error::InvalidOperation("address resolves to nothing"))
}

fn unspecified_like(remote: SocketAddr) -> SocketAddr {
    let ip = match remote.ip() {
        IpAddr::V4(_) => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
        IpAddr::V6(_) => IpAddr::V6(Ipv6Addr::UNSPECIFIED),
    };
    SocketAddr::new(ip, 0)
}

/// A listening socket.
pub struct Listener {
    mux: Arc<Mux>,
    builder: Builder,
    nonblocking: AtomicBool,
    /// Set by [`Listener::close`]: accept fails with [`Error::Closed`] from then on.
    closed: AtomicBool,
}

impl Listener {
    /// Listens on `addr` with default options and a backlog of 1024.
    pub fn bind(addr: impl ToSocketAddrs) -> Result<Listener> {
        Builder::new().listen(addr, 1024)
    }

    /// The bound address.
    pub fn local_addr(&self) -> SocketAddr {
        self.mux.local_addr()
    }

    /// What the kernel granted for the UDP socket buffers (less than requested when
    /// `net.core.rmem_max` / `wmem_max` cap it).
    pub fn udp_buffers(&self) -> BufferSizes {
        self.mux.buffers
    }

    /// What this socket's UDP port has moved and by which path: GSO and GRO in use or not,
    /// datagrams and system calls, burst-pacing wake-ups. Shared by every socket of the port.
    pub fn io_stats(&self) -> IoStats {
        self.mux.io_stats()
    }

    /// The options accepted sockets inherit.
    pub fn options(&self) -> &Builder {
        &self.builder
    }

    /// What the UDP port's endpoint dropped so far (malformed datagrams, unroutable or forged
    /// sources, refused handshakes, replies dropped), counts of datagrams, and what it holds
    /// per peer (entries).
    pub fn port_stats(&self) -> (udt_proto::endpoint::EndpointStats, udt_proto::StateCounts) {
        let st = self.mux.lock();
        (st.ep.stats(), st.ep.state_counts())
    }

    /// Non-blocking mode: [`accept`](Self::accept) fails with [`Error::WouldBlock`] instead of
    /// waiting when no connection is queued (use a [`Poller`](crate::Poller) to wait).
    pub fn set_nonblocking(&self, on: bool) {
        self.nonblocking.store(on, Ordering::Relaxed);
    }

    /// True in non-blocking mode.
    pub fn is_nonblocking(&self) -> bool {
        self.nonblocking.load(Ordering::Relaxed)
    }

    pub(crate) fn poll_mux(&self) -> &Arc<Mux> {
        &self.mux
    }

    /// Registers `watcher` (its registration `token`) for this listener's readiness and
    /// pushes it the current readiness. Dropping or closing the listener unregisters it.
    #[cfg(feature = "tokio")]
    pub(crate) fn add_watcher(&self, watcher: std::sync::Weak<dyn Watcher>, token: u64) {
        let mut st = self.mux.lock();
        st.watch(Target::Listener, watcher, token);
        st.refresh(Target::Listener);
        self.mux.after_app_call(&mut st);
    }

    /// Current readiness, as a [`Poller`](crate::Poller) would report it: read when a
    /// connection waits to be accepted, error once the listener no longer listens.
    pub fn readiness(&self) -> crate::Readiness {
        let mut st = self.mux.lock();
        let r = readiness::of(&mut st.ep, Target::Listener);
        self.mux.after_app_call(&mut st);
        r
    }

    /// Waits for the next established connection. Fails with [`Error::Closed`] once the
    /// listener is closed, also when another thread closes it during the wait.
    pub fn accept(&self) -> Result<(Socket, SocketAddr)> {
        self.accept_inner(self.is_nonblocking())
    }

    /// As [`accept`](Self::accept), but never waits, whatever the blocking mode:
    /// [`Error::WouldBlock`] when no connection is queued. Unlike [`wait`](Self::wait) then
    /// `accept`, no other thread can take the connection in between.
    pub fn try_accept(&self) -> Result<(Socket, SocketAddr)> {
        self.accept_inner(true)
    }

    fn accept_inner(&self, nonblocking: bool) -> Result<(Socket, SocketAddr)> {
        let mut st = self.mux.lock();
        let cv = st.accept_cv.clone();
        loop {
            if let Some(r) = self.accept_locked(&mut st) {
                return r;
            }
            if nonblocking {
                return Err(Error::WouldBlock);
            }
            st = cv.wait(st).unwrap_or_else(|p| p.into_inner());
        }
    }

    /// One attempt to accept, with the multiplexer locked: `None` when no connection is
    /// queued.
    fn accept_locked(
        &self,
        st: &mut MutexGuard<'_, State>,
    ) -> Option<Result<(Socket, SocketAddr)>> {
        if self.closed.load(Ordering::Acquire) {
            return Some(Err(Error::Closed));
        }
        let id = st.ep.accept()?;
        st.connect_results.remove(&id);
        st.refresh(Target::Listener);
        let r = match st.ep.connection(id) {
            Some(c) => {
                let (peer, kind) = (c.peer_addr(), c.kind());
                st.handles += 1;
                // No lock is taken here: the guard is the caller's.
                let sock = Socket::from_accepted(Arc::clone(&self.mux), id, &self.builder, kind);
                Ok((sock, peer))
            }
            // Queued, then gone before it was taken: nothing to hand out.
            None => Err(Error::ConnectionLost),
        };
        // Hands out the task wake-ups the refresh may have asked for.
        self.mux.after_app_call(st);
        Some(r)
    }

    /// Accepts a queued connection without waiting, whatever the blocking mode; when none
    /// is queued, runs `park` before releasing the multiplexer's lock and fails with
    /// [`Error::WouldBlock`] (see `Mux::attempt_or_park`: no arrival can slip between the
    /// two). The async layer's accept.
    #[cfg(feature = "tokio")]
    pub(crate) fn accept_or_park(&self, park: impl FnOnce()) -> Result<(Socket, SocketAddr)> {
        let mut st = self.mux.lock();
        if let Some(r) = self.accept_locked(&mut st) {
            return r;
        }
        park();
        self.mux.after_app_call(&mut st);
        Err(Error::WouldBlock)
    }

    /// Waits until a connection is ready to be accepted, at most `timeout` (`None`: no
    /// limit); returns whether one is. Fails with [`Error::Closed`] once the listener is
    /// closed, also by another thread during the wait.
    pub fn wait(&self, timeout: Option<Duration>) -> Result<bool> {
        let deadline = timeout.map(|t| std::time::Instant::now() + t);
        let mut st = self.mux.lock();
        let cv = st.accept_cv.clone();
        loop {
            if self.closed.load(Ordering::Acquire) {
                return Err(Error::Closed);
            }
            if st.ep.pending_accepts() > 0 {
                return Ok(true);
            }
            st = match deadline {
                None => cv.wait(st).unwrap_or_else(|p| p.into_inner()),
                Some(d) => {
                    let left = d.saturating_duration_since(std::time::Instant::now());
                    if left.is_zero() {
                        return Ok(false);
                    }
                    cv.wait_timeout(st, left)
                        .unwrap_or_else(|p| p.into_inner())
                        .0
                }
            };
        }
    }

    /// Stops listening: connections queued and not accepted are closed, and threads waiting
    /// in [`accept`](Self::accept) return [`Error::Closed`]. Later calls fail with
    /// [`Error::Closed`]. Dropping the listener closes it too.
    pub fn close(&self) -> Result<()> {
        if self.closed.swap(true, Ordering::AcqRel) {
            return Err(Error::Closed);
        }
        let mut st = self.mux.lock();
        let now = self.mux.clock.now();
        st.unwatch_all(Target::Listener);
        st.ep.stop_listening(now);
        st.accept_cv.notify_all();
        self.mux.after_app_call(&mut st);
        Ok(())
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        let _ = self.close();
        self.mux.lock().handles -= 1;
        self.mux.wake();
    }
}

/// Settings of a socket that its setters change while other threads use it.
#[derive(Clone, Copy, Debug)]
struct Live {
    read_timeout: Option<Duration>,
    write_timeout: Option<Duration>,
    /// Sends fail with [`Error::SendWouldBlock`] instead of waiting (`UDT_SNDSYN` false).
    send_nonblocking: bool,
    /// Receives fail with [`Error::WouldBlock`] instead of waiting (`UDT_RCVSYN` false).
    recv_nonblocking: bool,
    max_bandwidth: Option<u64>,
    linger: Option<Duration>,
}

/// A UDT connection. A stream socket ([`SocketKind::Stream`], the default) carries bytes
/// (`send`, `recv`, `Read`, `Write`); a message socket ([`SocketKind::Message`]) carries whole
/// messages (`send_msg`, `recv_msg`) with optional time-to-live and out-of-order delivery.
///
/// Every method takes `&self`: one thread may send while another receives, and any thread may
/// [`close`](Self::close) the socket, which wakes the others' blocked calls.
pub struct Socket {
    mux: Arc<Mux>,
    id: SocketId,
    /// The options it was made with (the live ones are in `live`).
    opts: Builder,
    live: Mutex<Live>,
    /// Set by [`Socket::close`]: every later or blocked call fails with [`Error::Closed`].
    closed: AtomicBool,
    /// Held through a send that copies outside the multiplexer's lock, so that two threads
    /// writing at once cannot interleave inside one call's bytes.
    send_serial: Mutex<()>,
}

impl Socket {
    fn new(mux: Arc<Mux>, id: SocketId, b: &Builder) -> Socket {
        Socket {
            mux,
            id,
            opts: b.clone(),
            live: Mutex::new(Live {
                read_timeout: b.read_timeout,
                write_timeout: b.write_timeout,
                send_nonblocking: b.nonblocking,
                recv_nonblocking: b.nonblocking,
                max_bandwidth: b.conn.max_bandwidth,
                linger: b.conn.linger,
            }),
            closed: AtomicBool::new(false),
            send_serial: Mutex::new(()),
        }
    }

    fn live(&self) -> MutexGuard<'_, Live> {
        self.live.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn poll_parts(&self) -> (&Arc<Mux>, SocketId) {
        (&self.mux, self.id)
    }

    /// Registers `watcher` (its registration `token`) for this connection's readiness and
    /// pushes it the current readiness. Dropping or closing the socket unregisters it.
    #[cfg(feature = "tokio")]
    pub(crate) fn add_watcher(&self, watcher: std::sync::Weak<dyn Watcher>, token: u64) {
        let mut st = self.mux.lock();
        st.watch(Target::Conn(self.id), watcher, token);
        st.refresh(Target::Conn(self.id));
        self.mux.after_app_call(&mut st);
    }

    fn from_accepted(mux: Arc<Mux>, id: SocketId, b: &Builder, kind: SocketKind) -> Socket {
        let mut b = b.clone();
        b.conn.kind = kind;
        Socket::new(mux, id, &b)
    }

    /// Connects to `addr` with default options.
    pub fn connect(addr: impl ToSocketAddrs) -> Result<Socket> {
        Builder::new().connect(addr)
    }

    fn check_open(&self) -> Result<()> {
        if self.closed.load(Ordering::Acquire) {
            Err(Error::Closed)
        } else {
            Ok(())
        }
    }

    /// The peer's address.
    pub fn peer_addr(&self) -> Result<SocketAddr> {
        self.check_open()?;
        let st = self.mux.lock();
        st.ep
            .connection(self.id)
            .map(|c| c.peer_addr())
            .ok_or(Error::NotConnected)
    }

    /// The local UDP address.
    pub fn local_addr(&self) -> SocketAddr {
        self.mux.local_addr()
    }

    /// What the kernel granted for the UDP socket buffers.
    pub fn udp_buffers(&self) -> BufferSizes {
        self.mux.buffers
    }

    /// What this socket's UDP port has moved and by which path: GSO and GRO in use or not,
    /// datagrams and system calls, burst-pacing wake-ups. Shared by every socket of the port.
    pub fn io_stats(&self) -> IoStats {
        self.mux.io_stats()
    }

    /// Non-blocking mode for both directions: reads and writes that would wait fail with
    /// [`Error::WouldBlock`] (reads) or [`Error::SendWouldBlock`] (writes).
    pub fn set_nonblocking(&self, on: bool) {
        let mut l = self.live();
        l.send_nonblocking = on;
        l.recv_nonblocking = on;
    }

    /// Non-blocking mode of sends alone (`UDT_SNDSYN` false).
    pub fn set_send_nonblocking(&self, on: bool) {
        self.live().send_nonblocking = on;
    }

    /// Non-blocking mode of receives alone (`UDT_RCVSYN` false).
    pub fn set_recv_nonblocking(&self, on: bool) {
        self.live().recv_nonblocking = on;
    }

    /// True when both directions are non-blocking.
    pub fn is_nonblocking(&self) -> bool {
        let l = self.live();
        l.send_nonblocking && l.recv_nonblocking
    }

    /// True when sends do not wait (`UDT_SNDSYN` false).
    pub fn is_send_nonblocking(&self) -> bool {
        self.live().send_nonblocking
    }

    /// True when receives do not wait (`UDT_RCVSYN` false).
    pub fn is_recv_nonblocking(&self) -> bool {
        self.live().recv_nonblocking
    }

    /// Timeout of blocking reads (`UDT_RCVTIMEO`; `None` waits forever). A zero duration is
    /// [`Error::InvalidOption`].
    pub fn set_read_timeout(&self, t: Option<Duration>) -> Result<()> {
        if t == Some(Duration::ZERO) {
            return Err(Error::InvalidOption("receive timeout must be positive"));
        }
        self.live().read_timeout = t;
        Ok(())
    }

    /// Timeout of blocking writes (`UDT_SNDTIMEO`; `None` waits forever). A zero duration is
    /// [`Error::InvalidOption`].
    pub fn set_write_timeout(&self, t: Option<Duration>) -> Result<()> {
        if t == Some(Duration::ZERO) {
            return Err(Error::InvalidOption("send timeout must be positive"));
        }
        self.live().write_timeout = t;
        Ok(())
    }

    /// Timeout of blocking reads.
    pub fn read_timeout(&self) -> Option<Duration> {
        self.live().read_timeout
    }

    /// Timeout of blocking writes.
    pub fn write_timeout(&self) -> Option<Duration> {
        self.live().write_timeout
    }

    /// Changes the largest sending rate, bytes per second (`UDT_MAXBW`; `None` = unlimited),
    /// from the next packet on. Zero is [`Error::InvalidOption`].
    pub fn set_max_bandwidth(&self, bytes_per_sec: Option<u64>) -> Result<()> {
        if bytes_per_sec == Some(0) {
            return Err(Error::InvalidOption("maximum bandwidth must be positive"));
        }
        self.check_open()?;
        let mut st = self.mux.lock();
        let mut c = st.ep.connection_mut(self.id).ok_or(Error::NotConnected)?;
        c.set_max_bandwidth(bytes_per_sec)?;
        drop(c);
        self.mux.after_app_call(&mut st);
        self.live().max_bandwidth = bytes_per_sec;
        Ok(())
    }

    /// Largest sending rate, bytes per second (`None` = unlimited).
    pub fn max_bandwidth(&self) -> Option<u64> {
        self.live().max_bandwidth
    }

    /// Changes how long [`close`](Self::close) (and drop) keep delivering queued data
    /// (`UDT_LINGER`; `None` closes at once, abandoning unacknowledged data).
    pub fn set_linger(&self, linger: Option<Duration>) -> Result<()> {
        self.check_open()?;
        let mut st = self.mux.lock();
        let mut c = st.ep.connection_mut(self.id).ok_or(Error::NotConnected)?;
        c.set_linger(linger);
        drop(c);
        self.live().linger = linger;
        Ok(())
    }

    /// Linger time of close.
    pub fn linger(&self) -> Option<Duration> {
        self.live().linger
    }

    /// Maximum segment size in force, bytes including IP and UDP headers (`UDT_MSS`; in
    /// client/server mode the smaller of both sides').
    pub fn mss(&self) -> u32 {
        let st = self.mux.lock();
        st.ep
            .connection(self.id)
            .map_or(self.opts.conn.mss, |c| c.mss())
    }

    /// Largest flow window this side allows, packets (`UDT_FC`).
    pub fn flight_flag_size(&self) -> u32 {
        self.opts.conn.flight_flag_size
    }

    /// Send buffer, packets (`UDT_SNDBUF` / payload size).
    pub fn send_buffer_pkts(&self) -> u32 {
        self.opts.conn.send_buffer_pkts
    }

    /// Receive buffer, packets (`UDT_RCVBUF` / payload size).
    pub fn recv_buffer_pkts(&self) -> u32 {
        self.opts.conn.recv_buffer_pkts
    }

    /// The options this socket was made with (a listener's, for an accepted socket, with the
    /// peer's kind); the setters' current values are read with the getters.
    pub fn options(&self) -> &Builder {
        &self.opts
    }

    /// Outcome of connecting: `None` while the handshake is in progress (after
    /// [`Builder::connect_nonblocking`]), then `Ok(())` once connected (even if the connection
    /// later ended) or the [`Error::Connect`] that ended it.
    pub fn connect_result(&self) -> Option<Result<()>> {
        let st = self.mux.lock();
        if st
            .ep
            .connection(self.id)
            .is_some_and(|c| c.state() == ConnectionState::Connecting)
        {
            return None;
        }
        match st.connect_results.get(&self.id) {
            Some(Err(e)) => Some(Err(Error::Connect(*e))),
            _ => Some(Ok(())),
        }
    }

    /// Blocks until the handshake of a connection started with
    /// [`Builder::connect_nonblocking`] (or its rendezvous twin) has ended, at most `timeout`
    /// (`None`: no limit): `Ok(())` once connected, the [`Error::Connect`] that ended it,
    /// [`Error::Timeout`], or [`Error::Closed`] if the socket is closed meanwhile.
    pub fn wait_connected(&self, timeout: Option<Duration>) -> Result<()> {
        let deadline = Self::deadline(timeout);
        let mut st = self.mux.lock();
        let cv = st.waiter(self.id);
        loop {
            self.check_open()?;
            let connecting = st
                .ep
                .connection(self.id)
                .is_some_and(|c| c.state() == ConnectionState::Connecting);
            if !connecting {
                return match st.connect_results.get(&self.id) {
                    Some(Err(e)) => Err(Error::Connect(*e)),
                    _ => Ok(()),
                };
            }
            st = match deadline {
                None => cv.wait(st),
                Some(d) => {
                    let left = d.saturating_duration_since(std::time::Instant::now());
                    if left.is_zero() {
                        return Err(Error::Timeout);
                    }
                    cv.wait_timeout(st, left)
                }
            };
        }
    }

    /// A new hold on this socket's UDP port, so that the port outlives the socket (UDT4 keeps
    /// a socket bound after a failed connect).
    pub(crate) fn bound_again(&self) -> Bound {
        self.mux.lock().handles += 1;
        Bound::new(Arc::clone(&self.mux))
    }

    /// State of the connection (`UDT_STATE`); [`ConnectionState::Closed`] once
    /// [`close`](Self::close) was called.
    pub fn state(&self) -> ConnectionState {
        if self.closed.load(Ordering::Acquire) {
            return ConnectionState::Closed;
        }
        let st = self.mux.lock();
        st.ep
            .connection(self.id)
            .map_or(ConnectionState::Closed, |c| c.state())
    }

    /// Current readiness (`UDT_EVENT`): read, write, error, as a [`Poller`](crate::Poller)
    /// would report it.
    pub fn readiness(&self) -> crate::Readiness {
        let mut st = self.mux.lock();
        let r = readiness::of(&mut st.ep, Target::Conn(self.id));
        self.mux.after_app_call(&mut st);
        r
    }

    /// Packets in the send buffer, unsent and unacknowledged (`UDT_SNDDATA`).
    pub fn send_buffer_used_pkts(&self) -> usize {
        let st = self.mux.lock();
        st.ep
            .connection(self.id)
            .map_or(0, |c| c.send_buffer_pkts())
    }

    /// True once the connection runs encrypted (negotiated in the handshake).
    pub fn is_encrypted(&self) -> bool {
        let st = self.mux.lock();
        st.ep.connection(self.id).is_some_and(|c| c.is_encrypted())
    }

    /// The cipher of an encrypted connection.
    pub fn cipher(&self) -> Option<udt_proto::Cipher> {
        let st = self.mux.lock();
        st.ep.connection(self.id).and_then(|c| c.cipher())
    }

    /// True for a rendezvous connection (`UDT_RENDEZVOUS`).
    pub fn is_rendezvous(&self) -> bool {
        self.opts.conn.rendezvous
    }

    /// Whether the socket was made with reuse address on (`UDT_REUSEADDR`).
    pub fn is_reuse_addr(&self) -> bool {
        self.opts.reuse_addr
    }

    /// Stream or message socket.
    pub fn kind(&self) -> SocketKind {
        self.opts.conn.kind
    }

    /// Name of the congestion control algorithm (`UDT_CC`).
    pub fn congestion_control_name(&self) -> &str {
        self.opts.conn.congestion_control.name()
    }

    fn deadline(t: Option<Duration>) -> Option<std::time::Instant> {
        t.map(|d| std::time::Instant::now() + d)
    }

    /// Runs a send-side operation: waits for buffer space unless non-blocking, then fails with
    /// [`Error::SendWouldBlock`].
    fn sending<R>(
        &self,
        op: impl FnMut(&mut Connection, EngineInstant) -> std::result::Result<R, EngineError>,
    ) -> Result<R> {
        let (nonblocking, timeout) = {
            let l = self.live();
            (l.send_nonblocking, l.write_timeout)
        };
        self.mux
            .blocking(
                self.id,
                nonblocking,
                Self::deadline(timeout),
                &self.closed,
                op,
            )
            .map_err(|e| match e {
                Error::WouldBlock => Error::SendWouldBlock,
                other => other,
            })
    }

    /// Runs a receive-side operation: waits for data unless non-blocking, then fails with
    /// [`Error::WouldBlock`].
    fn receiving<R>(
        &self,
        op: impl FnMut(&mut Connection, EngineInstant) -> std::result::Result<R, EngineError>,
    ) -> Result<R> {
        let (nonblocking, timeout) = {
            let l = self.live();
            (l.recv_nonblocking, l.read_timeout)
        };
        self.mux.blocking(
            self.id,
            nonblocking,
            Self::deadline(timeout),
            &self.closed,
            op,
        )
    }

    /// Fails with [`Error::WrongKind`] unless this is a socket of kind `want`.
    pub(crate) fn expect_kind(&self, want: SocketKind) -> Result<()> {
        if self.kind() == want {
            Ok(())
        } else {
            Err(Error::WrongKind(self.kind()))
        }
    }

    /// Queues bytes for sending; returns how many were taken (blocks until at least one).
    pub fn send(&self, data: &[u8]) -> Result<usize> {
        self.expect_kind(SocketKind::Stream)?;
        if data.len() >= bulk_send::OUTSIDE_LOCK_MIN_BYTES {
            return self.send_stream_outside_lock(data, true);
        }
        self.sending(|c, now| c.send(now, data))
    }

    /// Reads received bytes; `Ok(0)` once the peer has closed and everything was read.
    pub fn recv(&self, buf: &mut [u8]) -> Result<usize> {
        self.expect_kind(SocketKind::Stream)?;
        let read = if buf.len() >= bulk_recv::OUTSIDE_LOCK_MIN_BYTES {
            self.recv_stream_outside_lock(buf, true)
        } else {
            self.receiving(|c, _| c.recv(buf))
        };
        match read {
            Err(Error::ConnectionLost) if self.closed_by_peer() => Ok(0),
            other => other,
        }
    }

    /// Sends one message (message sockets): delivered whole or, if `ttl` passes first, not at
    /// all; `in_order`: deliver it only after every earlier message. Blocks until the whole
    /// message fits in the send buffer.
    pub fn send_msg(&self, data: &[u8], ttl: Option<Duration>, in_order: bool) -> Result<()> {
        self.expect_kind(SocketKind::Message)?;
        if data.len() >= bulk_send::OUTSIDE_LOCK_MIN_BYTES {
            return self.send_msg_outside_lock(data, ttl, in_order, true);
        }
        self.sending(|c, now| c.send_msg(now, data, ttl, in_order))
    }

    /// Receives one message into `buf` (message sockets). If `buf` is too small the message is
    /// cut and the rest discarded: compare `copied` with `msg_len`. Fails with
    /// [`Error::ConnectionLost`] once the connection has ended and no message is left.
    pub fn recv_msg(&self, buf: &mut [u8]) -> Result<MsgRead> {
        self.expect_kind(SocketKind::Message)?;
        self.receiving(|c, _| c.recv_msg(buf))
    }

    /// As [`send`](Self::send), but never waits, whatever the blocking mode:
    /// [`Error::SendWouldBlock`] when the send buffer is full. With [`wait`](Self::wait), the
    /// building block of event loops and of blocking calls that must stay interruptible.
    pub fn try_send(&self, data: &[u8]) -> Result<usize> {
        self.expect_kind(SocketKind::Stream)?;
        if data.len() >= bulk_send::OUTSIDE_LOCK_MIN_BYTES {
            return self.send_stream_outside_lock(data, false);
        }
        self.attempt(|c, now| c.send(now, data))
            .map_err(Self::send_side)
    }

    /// As [`recv`](Self::recv), but never waits: [`Error::WouldBlock`] when nothing is
    /// readable; `Ok(0)` at the end of the stream.
    pub fn try_recv(&self, buf: &mut [u8]) -> Result<usize> {
        self.expect_kind(SocketKind::Stream)?;
        let read = if buf.len() >= bulk_recv::OUTSIDE_LOCK_MIN_BYTES {
            self.recv_stream_outside_lock(buf, false)
        } else {
            self.attempt(|c, _| c.recv(buf))
        };
        match read {
            Err(Error::ConnectionLost) if self.closed_by_peer() => Ok(0),
            other => other,
        }
    }

    /// As [`send_msg`](Self::send_msg), but never waits: [`Error::SendWouldBlock`] when the
    /// message does not fit in the send buffer now.
    pub fn try_send_msg(&self, data: &[u8], ttl: Option<Duration>, in_order: bool) -> Result<()> {
        self.expect_kind(SocketKind::Message)?;
        if data.len() >= bulk_send::OUTSIDE_LOCK_MIN_BYTES {
            return self.send_msg_outside_lock(data, ttl, in_order, false);
        }
        self.attempt(|c, now| c.send_msg(now, data, ttl, in_order))
            .map_err(Self::send_side)
    }

    /// As [`recv_msg`](Self::recv_msg), but never waits: [`Error::WouldBlock`] when no whole
    /// message is readable.
    pub fn try_recv_msg(&self, buf: &mut [u8]) -> Result<MsgRead> {
        self.expect_kind(SocketKind::Message)?;
        self.attempt(|c, _| c.recv_msg(buf))
    }

    fn attempt<R>(
        &self,
        op: impl FnMut(&mut Connection, EngineInstant) -> std::result::Result<R, EngineError>,
    ) -> Result<R> {
        self.mux.blocking(self.id, true, None, &self.closed, op)
    }

    /// Runs `op` once without waiting; on `WouldBlock` runs `park` under the multiplexer's
    /// lock first (see `Mux::attempt_or_park`). The async layer's send and receive.
    #[cfg(feature = "tokio")]
    pub(crate) fn attempt_or_park<R>(
        &self,
        op: impl FnOnce(&mut Connection, EngineInstant) -> std::result::Result<R, EngineError>,
        park: impl FnOnce(),
    ) -> Result<R> {
        self.mux.attempt_or_park(self.id, &self.closed, op, park)
    }

    /// Starts a graceful close without waiting and without giving up the handle: queued data
    /// keeps flowing for the linger time, then the peer gets a Shutdown. Watchers stay
    /// registered, so that an async task can wait for the end (the async `shutdown`).
    #[cfg(feature = "tokio")]
    pub(crate) fn start_close(&self) {
        let mut st = self.mux.lock();
        let now = self.mux.clock.now();
        st.ep.close(now, self.id);
        self.mux.after_app_call(&mut st);
    }

    /// The I/O pass count after which every datagram queued now (the Shutdown of a
    /// connection just finished) has left; see [`Socket::poll_flushed`].
    #[cfg(feature = "tokio")]
    pub(crate) fn flush_target(&self) -> u64 {
        self.mux.flush_target()
    }

    /// True once the I/O thread has made `target` passes; else the task is woken after the
    /// next pass. The async twin of the flush at the end of [`Socket::close`].
    #[cfg(feature = "tokio")]
    pub(crate) fn poll_flushed(&self, target: u64, cx: &mut std::task::Context<'_>) -> bool {
        self.mux.poll_flushed(target, cx)
    }

    /// Gives a wait for buffer space its send-side error.
    pub(crate) fn send_side(e: Error) -> Error {
        match e {
            Error::WouldBlock => Error::SendWouldBlock,
            other => other,
        }
    }

    /// Waits until the socket is ready for one of the conditions in `interest` (or has
    /// ended: [`Readiness::ERR`] is always reported), at most `timeout` (`None`: no limit);
    /// returns every condition that holds, or an empty set on timeout. Fails with
    /// [`Error::Closed`] once the socket is closed, also by another thread during the wait.
    pub fn wait(&self, interest: Readiness, timeout: Option<Duration>) -> Result<Readiness> {
        let deadline = Self::deadline(timeout);
        let mut st = self.mux.lock();
        let cv = st.waiter(self.id);
        loop {
            self.check_open()?;
            let r = readiness::of(&mut st.ep, Target::Conn(self.id));
            if !(r & (interest | Readiness::ERR)).is_empty() {
                self.mux.after_app_call(&mut st);
                return Ok(r);
            }
            st = match deadline {
                None => cv.wait(st),
                Some(d) => {
                    let left = d.saturating_duration_since(std::time::Instant::now());
                    if left.is_zero() {
                        return Ok(Readiness::empty());
                    }
                    cv.wait_timeout(st, left)
                }
            };
        }
    }

    /// True when the connection ended because the peer closed it (reads then report the end
    /// of the stream rather than an error).
    pub(crate) fn closed_by_peer(&self) -> bool {
        let st = self.mux.lock();
        st.ep
            .connection(self.id)
            .is_some_and(|c| c.close_reason() == Some(CloseReason::PeerShutdown))
    }

    /// Performance statistics (UDT4 `perfmon`); `clear` restarts the since-last-query values.
    pub fn stats(&self, clear: bool) -> Result<PerfStats> {
        self.check_open()?;
        let mut st = self.mux.lock();
        let now = self.mux.clock.now();
        let mut c = st.ep.connection_mut(self.id).ok_or(Error::NotConnected)?;
        Ok(c.stats(now, clear))
    }

    /// Closes the connection. Threads blocked in this socket's calls return
    /// [`Error::Closed`], as do later calls. In blocking send mode this waits until queued
    /// data is delivered (or the linger time passes, or the connection breaks); with
    /// non-blocking sends (`UDT_SNDSYN` false) it returns at once and the data keeps flowing
    /// in the background for the linger time, as in UDT4. A second close fails with
    /// [`Error::Closed`].
    pub fn close(&self) -> Result<()> {
        if self.closed.swap(true, Ordering::AcqRel) {
            return Err(Error::Closed);
        }
        {
            let mut st = self.mux.lock();
            let now = self.mux.clock.now();
            st.unwatch_all(Target::Conn(self.id));
            st.ep.close(now, self.id);
            st.interrupt(self.id);
            self.mux.after_app_call(&mut st);
        }
        if self.is_send_nonblocking() {
            self.mux.wake();
            return Ok(());
        }
        // Wait for the endpoint to finish the connection (it frees it once closed).
        let never = AtomicBool::new(false);
        let r = self.mux.blocking(self.id, false, None, &never, |c, _| {
            if c.is_connected() {
                Err(udt_proto::Error::WouldBlock)
            } else {
                Ok(())
            }
        });
        // The engine has queued its Shutdown (and last ACKs); make sure they left before we
        // return, or a process that exits right after closing leaves the peer waiting for its
        // timeout.
        self.mux.flush(CLOSE_FLUSH_LIMIT);
        match r {
            Ok(()) | Err(Error::ConnectionLost) => Ok(()),
            Err(e) => Err(e),
        }
    }
}

impl Drop for Socket {
    fn drop(&mut self) {
        let mut st = self.mux.lock();
        let now = self.mux.clock.now();
        st.unwatch_all(Target::Conn(self.id));
        // Lingering data keeps flowing from the I/O thread after the handle is gone.
        st.ep.close(now, self.id);
        st.handles -= 1;
        self.mux.after_app_call(&mut st);
        self.mux.wake();
    }
}

impl io::Read for Socket {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        Socket::recv(self, buf).map_err(io::Error::from)
    }
}

impl io::Write for Socket {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        Socket::send(self, buf).map_err(io::Error::from)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl io::Read for &Socket {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        Socket::recv(self, buf).map_err(io::Error::from)
    }
}

impl io::Write for &Socket {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        Socket::send(self, buf).map_err(io::Error::from)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}
