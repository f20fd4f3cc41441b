//! Sockets: [`Builder`] (options), [`Socket`] (a connection: a byte stream with `Read` and
//! `Write`, or a message socket with `send_msg`/`recv_msg`) and [`Listener`].

use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, ToSocketAddrs};
use std::sync::Arc;
use std::time::Duration;

use udt_proto::buffer::MsgRead;
use udt_proto::cc::{self, SharedFactory};
use udt_proto::stats::PerfStats;
use udt_proto::{CloseReason, ConnectionConfig, SocketId, SocketKind};

use crate::error::{Error, Result};
use crate::mux::Mux;
use crate::udp::BufferSizes;

/// Default kernel receive buffer of the UDP socket, bytes: room for about 100 ms of packets
/// at 1 Gb/s while the I/O thread is busy (4.11 asks for 12 MB).
pub const DEFAULT_UDP_RECV_BUFFER: usize = 16 << 20;
/// Default kernel send buffer of the UDP socket, bytes.
pub const DEFAULT_UDP_SEND_BUFFER: usize = 4 << 20;

/// Socket options (UDT4's `setsockopt` values that make sense here), used to connect, listen or
/// meet a rendezvous peer.
#[derive(Clone, Debug)]
pub struct Builder {
    conn: ConnectionConfig,
    udp_recv_buffer: usize,
    udp_send_buffer: usize,
    read_timeout: Option<Duration>,
    write_timeout: Option<Duration>,
}

impl Default for Builder {
    fn default() -> Self {
        Builder {
            conn: ConnectionConfig::default(),
            udp_recv_buffer: DEFAULT_UDP_RECV_BUFFER,
            udp_send_buffer: DEFAULT_UDP_SEND_BUFFER,
            read_timeout: None,
            write_timeout: None,
        }
    }
}

impl Builder {
    /// Default options: stream socket, MSS 1500, 25 600-packet buffers, linger 180 s, native
    /// congestion control.
    pub fn new() -> Self {
        Self::default()
    }

    /// Socket or message socket.
    pub fn kind(mut self, kind: SocketKind) -> Self {
        self.conn.kind = kind;
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

    /// Kernel buffers of the UDP socket, bytes (`UDP_RCVBUF`, `UDP_SNDBUF`).
    pub fn udp_buffers(mut self, recv: usize, send: usize) -> Self {
        self.udp_recv_buffer = recv;
        self.udp_send_buffer = send;
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
        let f = cc::by_name(name).ok_or(Error::InvalidOperation("unknown congestion control"))?;
        Ok(self.congestion_control(f))
    }

    /// Give up connecting after this long.
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.conn.connect_timeout = timeout;
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

    fn open(&self, local: SocketAddr) -> Result<Arc<Mux>> {
        self.conn.validate().map_err(Error::InvalidOperation)?;
        Mux::bind(local, self.udp_recv_buffer, self.udp_send_buffer)
    }

    /// Connects to a listening UDT socket.
    pub fn connect(&self, addr: impl ToSocketAddrs) -> Result<Socket> {
        let remote = resolve(addr)?;
        let mux = self.open(unspecified_like(remote))?;
        self.connect_on(mux, remote, self.conn.clone())
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
        let mux = self.open(local)?;
        let mut conn = self.conn.clone();
        conn.rendezvous = true;
        if conn.connect_timeout < Duration::from_secs(30) {
            // 4.11 gives rendezvous 30 s: both sides must be started by hand.
            conn.connect_timeout = Duration::from_secs(30);
        }
        self.connect_on(mux, remote, conn)
    }

    fn connect_on(
        &self,
        mux: Arc<Mux>,
        remote: SocketAddr,
        conn: ConnectionConfig,
    ) -> Result<Socket> {
        // `mux` arrives holding one handle for us (see `Mux::bind`); the socket takes it over.
        let mut st = mux.lock();
        let now = mux.clock.now();
        let id = match st.ep.connect(now, remote, conn) {
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
        loop {
            if let Some(r) = st.connect_results.remove(&id) {
                drop(st);
                let stream = Socket::new(mux, id, self);
                return match r {
                    Ok(()) => Ok(stream),
                    Err(e) => Err(Error::Connect(e)),
                };
            }
            st = cv.wait(st).unwrap_or_else(|p| p.into_inner());
        }
    }

    /// Binds `addr` and listens, queueing up to `backlog` connections for [`Listener::accept`].
    pub fn listen(&self, addr: impl ToSocketAddrs, backlog: usize) -> Result<Listener> {
        let local = resolve(addr)?;
        let mux = self.open(local)?;
        // `mux` arrives holding one handle for us (see `Mux::bind`); the listener takes it over.
        let mut st = mux.lock();
        let now = mux.clock.now();
        if let Err(e) = st.ep.listen(now, self.conn.clone(), backlog) {
            st.handles -= 1;
            drop(st);
            mux.wake();
            return Err(e.into());
        }
        drop(st);
        Ok(Listener {
            mux,
            builder: self.clone(),
        })
    }
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

    /// Waits for the next established connection.
    pub fn accept(&self) -> Result<(Socket, SocketAddr)> {
        let mut st = self.mux.lock();
        let cv = st.accept_cv.clone();
        loop {
            if let Some(id) = st.ep.accept() {
                let peer = st.ep.connection(id).map(|c| c.peer_addr());
                st.connect_results.remove(&id);
                st.handles += 1;
                drop(st);
                let stream = Socket::from_accepted(Arc::clone(&self.mux), id, &self.builder);
                return match peer {
                    Some(p) => Ok((stream, p)),
                    None => Err(Error::ConnectionLost),
                };
            }
            st = cv.wait(st).unwrap_or_else(|p| p.into_inner());
        }
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        let mut st = self.mux.lock();
        let now = self.mux.clock.now();
        st.ep.stop_listening(now);
        st.handles -= 1;
        self.mux.after_app_call(&mut st);
        self.mux.wake();
    }
}

/// A UDT connection. A stream socket ([`SocketKind::Stream`], the default) carries bytes
/// (`send`, `recv`, `Read`, `Write`); a message socket ([`SocketKind::Message`]) carries whole
/// messages (`send_msg`, `recv_msg`) with optional time-to-live and out-of-order delivery.
pub struct Socket {
    mux: Arc<Mux>,
    id: SocketId,
    read_timeout: Option<Duration>,
    write_timeout: Option<Duration>,
    nonblocking: bool,
}

impl Socket {
    fn new(mux: Arc<Mux>, id: SocketId, b: &Builder) -> Socket {
        Socket {
            mux,
            id,
            read_timeout: b.read_timeout,
            write_timeout: b.write_timeout,
            nonblocking: false,
        }
    }

    fn from_accepted(mux: Arc<Mux>, id: SocketId, b: &Builder) -> Socket {
        Socket::new(mux, id, b)
    }

    /// Connects to `addr` with default options.
    pub fn connect(addr: impl ToSocketAddrs) -> Result<Socket> {
        Builder::new().connect(addr)
    }

    /// The peer's address.
    pub fn peer_addr(&self) -> Result<SocketAddr> {
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

    /// Non-blocking mode: reads and writes that would wait fail with [`Error::WouldBlock`].
    pub fn set_nonblocking(&mut self, on: bool) {
        self.nonblocking = on;
    }

    /// Timeout of blocking reads.
    pub fn set_read_timeout(&mut self, t: Option<Duration>) {
        self.read_timeout = t;
    }

    /// Timeout of blocking writes.
    pub fn set_write_timeout(&mut self, t: Option<Duration>) {
        self.write_timeout = t;
    }

    fn deadline(t: Option<Duration>) -> Option<std::time::Instant> {
        t.map(|d| std::time::Instant::now() + d)
    }

    /// Queues bytes for sending; returns how many were taken (blocks until at least one).
    pub fn send(&self, data: &[u8]) -> Result<usize> {
        self.mux.blocking(
            self.id,
            self.nonblocking,
            Self::deadline(self.write_timeout),
            |c, now| c.send(now, data),
        )
    }

    /// Reads received bytes; `Ok(0)` once the peer has closed and everything was read.
    pub fn recv(&self, buf: &mut [u8]) -> Result<usize> {
        let r = self.mux.blocking(
            self.id,
            self.nonblocking,
            Self::deadline(self.read_timeout),
            |c, _| c.recv(buf),
        );
        match r {
            Err(Error::ConnectionLost) if self.closed_by_peer() => Ok(0),
            other => other,
        }
    }

    /// Sends one message (message sockets): delivered whole or, if `ttl` passes first, not at
    /// all; `in_order`: deliver it only after every earlier message. Blocks until the whole
    /// message fits in the send buffer.
    pub fn send_msg(&self, data: &[u8], ttl: Option<Duration>, in_order: bool) -> Result<()> {
        self.mux.blocking(
            self.id,
            self.nonblocking,
            Self::deadline(self.write_timeout),
            |c, now| c.send_msg(now, data, ttl, in_order),
        )
    }

    /// Receives one message into `buf` (message sockets). If `buf` is too small the message is
    /// cut and the rest discarded: compare `copied` with `msg_len`. Fails with
    /// [`Error::ConnectionLost`] once the connection has ended and no message is left.
    pub fn recv_msg(&self, buf: &mut [u8]) -> Result<MsgRead> {
        self.mux.blocking(
            self.id,
            self.nonblocking,
            Self::deadline(self.read_timeout),
            |c, _| c.recv_msg(buf),
        )
    }

    fn closed_by_peer(&self) -> bool {
        let st = self.mux.lock();
        st.ep
            .connection(self.id)
            .is_some_and(|c| c.close_reason() == Some(CloseReason::PeerShutdown))
    }

    /// Performance statistics (UDT4 `perfmon`); `clear` restarts the since-last-query values.
    pub fn stats(&self, clear: bool) -> Result<PerfStats> {
        let mut st = self.mux.lock();
        let now = self.mux.clock.now();
        let mut c = st.ep.connection_mut(self.id).ok_or(Error::NotConnected)?;
        Ok(c.stats(now, clear))
    }

    /// Closes the connection and waits until queued data is delivered (or the linger time
    /// passes, or the connection breaks).
    pub fn close(self) -> Result<()> {
        {
            let mut st = self.mux.lock();
            let now = self.mux.clock.now();
            st.ep.close(now, self.id);
            self.mux.after_app_call(&mut st);
        }
        // Wait for the endpoint to finish the connection (it frees it once closed).
        let r = self.mux.blocking(self.id, false, None, |c, _| {
            if c.is_connected() {
                Err(udt_proto::Error::WouldBlock)
            } else {
                Ok(())
            }
        });
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
