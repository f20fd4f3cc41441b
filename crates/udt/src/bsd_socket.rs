//! [`BsdSocket`]: a UDT socket with the lifecycle of a BSD socket and of UDT4's API —
//! created, then bound, then listening or connected, then closed — and UDT4's numbered
//! options. It is the common ground of the C, C++, Python and Java front ends: each is a thin
//! layer over this type, so the rules (which option may be set when, which error code a
//! misuse gets, how blocking and timeouts behave) are written once, here.
//!
//! Every method takes `&self` and the type is `Send + Sync`: one thread may receive while
//! another sends, and any thread may close the socket, which makes the others' blocked calls
//! return [`Error::Closed`]. No lock is held while a call blocks.

use std::fs::File;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Duration;

use udt_proto::buffer::MsgRead;
use udt_proto::config::IP_UDP_HEADER_LEN;
use udt_proto::stats::PerfStats;
use udt_proto::{ConnectionState, SocketKind};

use crate::error::{Error, Result};
use crate::poll::{register, PollShared, Poller, Source};
use crate::readiness::Readiness;
use crate::socket::{Bound, Builder, Listener, Socket};
use crate::sockopt::{OptValue, SockOpt};

/// The IP version of a socket (`AF_INET` or `AF_INET6`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    /// IPv4 (`AF_INET`).
    V4,
    /// IPv6 (`AF_INET6`); accepts IPv4-mapped peers.
    V6,
}

impl Family {
    fn matches(self, addr: SocketAddr) -> bool {
        match self {
            Family::V4 => addr.is_ipv4(),
            Family::V6 => addr.is_ipv6(),
        }
    }

    fn unspecified(self) -> SocketAddr {
        match self {
            Family::V4 => SocketAddr::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), 0),
            Family::V6 => SocketAddr::new(IpAddr::V6(Ipv6Addr::UNSPECIFIED), 0),
        }
    }
}

/// UDT4's socket states (`UDTSTATUS`), with its numbers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(i32)]
pub enum Udt4Status {
    /// Created, not bound.
    Init = 1,
    /// Bound to a UDP port.
    Opened = 2,
    /// Listening.
    Listening = 3,
    /// Handshake in progress.
    Connecting = 4,
    /// Connected.
    Connected = 5,
    /// The connection broke (peer closed it or went silent); unread data may remain.
    Broken = 6,
    /// Closed locally, still delivering queued data (linger).
    Closing = 7,
    /// Closed.
    Closed = 8,
    /// No such socket (front ends report it for unknown handles).
    NonExist = 9,
}

/// Where the socket is in its lifecycle.
enum Phase {
    /// Created; options may still change everything.
    Init,
    /// Bound to a UDP port.
    Bound(Bound),
    /// Listening.
    Listening(Arc<Listener>),
    /// Connecting or connected (or the connection has ended).
    Connected(Arc<Socket>),
    /// Closed by the application.
    Closed,
}

/// A poller registration made before the socket had anything to watch (created or bound):
/// applied when it starts listening or connecting, as UDT4's epoll does.
struct PendingReg {
    poller: Weak<PollShared>,
    token: u64,
    interest: Readiness,
}

/// The mutable part of a [`BsdSocket`].
struct Inner {
    phase: Phase,
    /// Options for binding, listening and connecting (and accepted sockets).
    builder: Builder,
    /// `UDT_SNDSYN`.
    send_blocking: bool,
    /// `UDT_RCVSYN`.
    recv_blocking: bool,
    /// `UDT_RENDEZVOUS`.
    rendezvous: bool,
    pending: Vec<PendingReg>,
    /// The mode a secret set later is used with.
    encryption_mode: udt_proto::EncryptionMode,
}

impl Inner {
    /// Options that 4.11 takes only before the socket is bound (5001 `EBOUNDSOCK` after).
    fn require_unbound(&self) -> Result<()> {
        match self.phase {
            Phase::Init => Ok(()),
            Phase::Closed => Err(Error::Closed),
            _ => Err(Error::AlreadyBound),
        }
    }

    /// Options that 4.11 takes only before connecting; `code` is the error it gives after.
    fn require_unconnected(&self, code: Error) -> Result<()> {
        match self.phase {
            Phase::Init | Phase::Bound(_) => Ok(()),
            Phase::Closed => Err(Error::Closed),
            _ => Err(code),
        }
    }

    fn update(&mut self, f: impl FnOnce(Builder) -> Builder) {
        let b = std::mem::take(&mut self.builder);
        self.builder = f(b);
    }

    fn payload_bytes_per_buffer_pkt(&self) -> u32 {
        self.builder
            .connection_config()
            .mss
            .saturating_sub(IP_UDP_HEADER_LEN)
            .max(1)
    }
}

/// A UDT socket with the BSD/UDT4 lifecycle (see the module notes).
pub struct BsdSocket {
    family: Family,
    kind: SocketKind,
    inner: Mutex<Inner>,
}

impl std::fmt::Debug for BsdSocket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BsdSocket")
            .field("family", &self.family)
            .field("kind", &self.kind)
            .field("status", &self.status())
            .finish()
    }
}

fn ms_to_timeout(ms: i64) -> Option<Duration> {
    match ms {
        // UDT4: a negative timeout waits forever.
        ..0 => None,
        // UDT4: zero times out at once when the call would wait.
        0 => Some(Duration::from_nanos(1)),
        ms => Some(Duration::from_millis(ms as u64)),
    }
}

fn timeout_to_ms(t: Option<Duration>) -> i32 {
    t.map_or(-1, |d| i32::try_from(d.as_millis()).unwrap_or(i32::MAX))
}

fn as_bool(v: &OptValue) -> Option<bool> {
    match v {
        OptValue::Bool(b) => Some(*b),
        OptValue::Int(i) => Some(*i != 0),
        OptValue::Int64(i) => Some(*i != 0),
        _ => None,
    }
}

fn as_int(v: &OptValue) -> Option<i64> {
    match v {
        OptValue::Int(i) => Some(i64::from(*i)),
        OptValue::Int64(i) => Some(*i),
        OptValue::Bool(b) => Some(i64::from(*b)),
        _ => None,
    }
}

fn int_in(v: i64, what: &'static str) -> Result<i32> {
    i32::try_from(v).map_err(|_| Error::InvalidOption(what))
}

impl BsdSocket {
    /// A new socket of `family` and `kind` (UDT4's `socket(af, type, 0)`), with default
    /// options, in state [`Udt4Status::Init`].
    pub fn new(family: Family, kind: SocketKind) -> BsdSocket {
        BsdSocket {
            family,
            kind,
            inner: Mutex::new(Inner {
                phase: Phase::Init,
                builder: Builder::new().kind(kind),
                send_blocking: true,
                recv_blocking: true,
                rendezvous: false,
                pending: Vec::new(),
                encryption_mode: udt_proto::EncryptionMode::Required,
            }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The socket's IP version.
    pub fn family(&self) -> Family {
        self.family
    }

    /// Stream or message socket.
    pub fn kind(&self) -> SocketKind {
        self.kind
    }

    fn check_family(&self, addr: SocketAddr) -> Result<()> {
        if self.family.matches(addr) {
            Ok(())
        } else {
            Err(Error::InvalidOption(
                "address family does not match the socket's",
            ))
        }
    }

    /// Binds to `addr` (UDT4's `bind`). Fails with [`Error::AlreadyBound`] unless the socket
    /// is new.
    pub fn bind(&self, addr: SocketAddr) -> Result<()> {
        self.check_family(addr)?;
        let mut inner = self.lock();
        inner.require_unbound()?;
        let bound = inner.builder.bind(addr)?;
        inner.phase = Phase::Bound(bound);
        Ok(())
    }

    /// Binds to a UDP socket the application made (UDT4's `bind2`): UDT takes it over.
    pub fn bind_udp(&self, udp: UdpSocket) -> Result<()> {
        let local = udp.local_addr()?;
        self.check_family(local)?;
        let mut inner = self.lock();
        inner.require_unbound()?;
        let bound = inner.builder.bind_udp(udp)?;
        inner.phase = Phase::Bound(bound);
        Ok(())
    }

    /// Listens (UDT4's `listen`), queueing up to `backlog` connections. The socket must be
    /// bound ([`Error::NotBound`] otherwise); listening again is a no-op, as in UDT4.
    pub fn listen(&self, backlog: usize) -> Result<()> {
        let mut inner = self.lock();
        if inner.rendezvous {
            return Err(Error::RendezvousListen);
        }
        let bound = match std::mem::replace(&mut inner.phase, Phase::Closed) {
            Phase::Bound(b) => b,
            other => {
                let err = match &other {
                    Phase::Init => Error::NotBound,
                    Phase::Listening(_) => {
                        inner.phase = other;
                        return Ok(());
                    }
                    Phase::Connected(_) => Error::AlreadyConnected,
                    Phase::Closed => Error::Closed,
                    Phase::Bound(_) => unreachable!("handled above"),
                };
                inner.phase = other;
                return Err(err);
            }
        };
        // A failed listen leaves the socket bound, as in UDT4: keep a hold on the port.
        let again = bound.share();
        match inner.builder.listen_bound(bound, backlog) {
            Ok(l) => {
                drop(again);
                l.set_nonblocking(!inner.recv_blocking);
                let l = Arc::new(l);
                inner.phase = Phase::Listening(Arc::clone(&l));
                apply_pending(&mut inner, Source::from(&*l));
                Ok(())
            }
            Err(e) => {
                inner.phase = Phase::Bound(again);
                Err(e)
            }
        }
    }

    /// Takes the next connection (UDT4's `accept`): a new socket with this one's options, and
    /// the peer's address. Blocks unless `UDT_RCVSYN` is off ([`Error::WouldBlock`] then).
    pub fn accept(&self) -> Result<(BsdSocket, SocketAddr)> {
        self.accept_with(Listener::accept)
    }

    fn accept_with(
        &self,
        take: impl FnOnce(&Listener) -> Result<(Socket, SocketAddr)>,
    ) -> Result<(BsdSocket, SocketAddr)> {
        let (listener, builder, send_blocking, recv_blocking) = {
            let inner = self.lock();
            match &inner.phase {
                Phase::Listening(l) => (
                    Arc::clone(l),
                    inner.builder.clone(),
                    inner.send_blocking,
                    inner.recv_blocking,
                ),
                Phase::Closed => return Err(Error::Closed),
                _ => return Err(Error::NotListening),
            }
        };
        let (sock, peer) = take(&listener)?;
        sock.set_send_nonblocking(!send_blocking);
        sock.set_recv_nonblocking(!recv_blocking);
        let kind = sock.kind();
        let accepted = BsdSocket {
            family: self.family,
            kind,
            inner: Mutex::new(Inner {
                phase: Phase::Connected(Arc::new(sock)),
                builder: builder.kind(kind),
                send_blocking,
                recv_blocking,
                rendezvous: false,
                pending: Vec::new(),
                encryption_mode: udt_proto::EncryptionMode::Required,
            }),
        };
        Ok((accepted, peer))
    }

    /// Connects to `addr` (UDT4's `connect`), in rendezvous mode if `UDT_RENDEZVOUS` is on
    /// (the socket must be bound then: [`Error::RendezvousUnbound`]). A new socket is bound
    /// to an ephemeral port first. With `UDT_RCVSYN` on this waits for the handshake; off, it
    /// returns at once and a poller reports the socket writable once connected. A failed
    /// connect leaves the socket bound, so it may try again.
    pub fn connect(&self, addr: SocketAddr) -> Result<()> {
        self.connect_timeout(addr, None)
    }

    /// As [`connect`](Self::connect), but a blocking connect waits at most `timeout` (`None`:
    /// until the handshake ends, at the latest after the engine's connect timeout, 3 s as in
    /// 4.11) and then fails with [`Error::Timeout`], leaving the socket bound as any failed
    /// connect does. For front ends whose language takes a timeout per connect call
    /// (`java.net.Socket.connect(addr, timeout)`).
    pub fn connect_timeout(&self, addr: SocketAddr, timeout: Option<Duration>) -> Result<()> {
        self.check_family(addr)?;
        let (sock, wait) = {
            let mut inner = self.lock();
            let bound = match std::mem::replace(&mut inner.phase, Phase::Closed) {
                Phase::Bound(b) => b,
                Phase::Init if inner.rendezvous => {
                    inner.phase = Phase::Init;
                    return Err(Error::RendezvousUnbound);
                }
                Phase::Init => match inner.builder.bind(self.family.unspecified()) {
                    Ok(b) => b,
                    Err(e) => {
                        inner.phase = Phase::Init;
                        return Err(e);
                    }
                },
                other => {
                    let err = if matches!(other, Phase::Closed) {
                        Error::Closed
                    } else {
                        Error::AlreadyConnected
                    };
                    inner.phase = other;
                    return Err(err);
                }
            };
            let keep = bound.share();
            let started = if inner.rendezvous {
                inner.builder.rendezvous_bound(bound, addr, false)
            } else {
                inner.builder.connect_bound(bound, addr, false)
            };
            let sock = match started {
                Ok(s) => Arc::new(s),
                Err(e) => {
                    inner.phase = Phase::Bound(keep);
                    return Err(e);
                }
            };
            drop(keep);
            sock.set_send_nonblocking(!inner.send_blocking);
            sock.set_recv_nonblocking(!inner.recv_blocking);
            inner.phase = Phase::Connected(Arc::clone(&sock));
            apply_pending(&mut inner, Source::from(&*sock));
            (sock, inner.recv_blocking)
        };
        if !wait {
            return Ok(());
        }
        match sock.wait_connected(timeout) {
            Ok(()) => Ok(()),
            Err(e) => {
                // Back to bound on the same port, unless another thread closed the socket
                // meanwhile.
                let mut inner = self.lock();
                if let Phase::Connected(s) = &inner.phase {
                    if Arc::ptr_eq(s, &sock) {
                        inner.phase = Phase::Bound(sock.bound_again());
                    }
                }
                Err(e)
            }
        }
    }

    /// Closes the socket (UDT4's `close`). Threads blocked in its calls return
    /// [`Error::Closed`]. A connected socket in blocking send mode waits for its queued data
    /// to be delivered, at most the linger time. Closing again fails with [`Error::Closed`].
    pub fn close(&self) -> Result<()> {
        let phase = {
            let mut inner = self.lock();
            inner.pending.clear();
            std::mem::replace(&mut inner.phase, Phase::Closed)
        };
        match phase {
            Phase::Init | Phase::Bound(_) => Ok(()),
            Phase::Listening(l) => l.close(),
            Phase::Connected(s) => s.close(),
            Phase::Closed => Err(Error::Closed),
        }
    }

    /// The connected socket, or the error a data operation gets in the current phase.
    fn connected(&self) -> Result<Arc<Socket>> {
        match &self.lock().phase {
            Phase::Connected(s) => Ok(Arc::clone(s)),
            Phase::Closed => Err(Error::Closed),
            _ => Err(Error::NotConnected),
        }
    }

    /// The [`Socket`] under a connecting or connected socket, for front ends that want the
    /// Rust API directly (its `Read`/`Write`, say). Closing either closes both.
    pub fn socket(&self) -> Result<Arc<Socket>> {
        self.connected()
    }

    /// The local address (UDT4's `getsockname`); [`Error::NotBound`] before bind or connect.
    pub fn local_addr(&self) -> Result<SocketAddr> {
        match &self.lock().phase {
            Phase::Bound(b) => Ok(b.local_addr()),
            Phase::Listening(l) => Ok(l.local_addr()),
            Phase::Connected(s) => Ok(s.local_addr()),
            Phase::Init => Err(Error::NotBound),
            Phase::Closed => Err(Error::Closed),
        }
    }

    /// The peer's address (UDT4's `getpeername`).
    pub fn peer_addr(&self) -> Result<SocketAddr> {
        self.connected()?.peer_addr()
    }

    /// Sends stream bytes (UDT4's `send`); returns how many were queued.
    pub fn send(&self, data: &[u8]) -> Result<usize> {
        self.connected()?.send(data)
    }

    /// Receives stream bytes (UDT4's `recv`); `Ok(0)` at the end of the stream.
    pub fn recv(&self, buf: &mut [u8]) -> Result<usize> {
        self.connected()?.recv(buf)
    }

    /// Sends one message (UDT4's `sendmsg`): `ttl_ms` < 0 is reliable, otherwise the message
    /// is dropped if not delivered within that many milliseconds; `in_order`: deliver after
    /// every earlier message. Returns the message's length.
    pub fn send_msg(&self, data: &[u8], ttl_ms: i32, in_order: bool) -> Result<usize> {
        let ttl = (ttl_ms >= 0).then(|| Duration::from_millis(ttl_ms as u64));
        self.connected()?.send_msg(data, ttl, in_order)?;
        Ok(data.len())
    }

    /// Receives one message (UDT4's `recvmsg`); a message longer than `buf` is cut.
    pub fn recv_msg(&self, buf: &mut [u8]) -> Result<MsgRead> {
        self.connected()?.recv_msg(buf)
    }

    /// Sends `len` bytes of `file` from `offset` (UDT4's `sendfile`); returns bytes sent.
    pub fn sendfile(&self, file: &File, offset: u64, len: u64) -> Result<u64> {
        self.connected()?.sendfile(file, offset, len)
    }

    /// Receives `len` bytes into `file` at `offset` (UDT4's `recvfile`); returns bytes
    /// written.
    pub fn recvfile(&self, file: &File, offset: u64, len: u64) -> Result<u64> {
        self.connected()?.recvfile(file, offset, len)
    }

    /// As [`send`](Self::send) but never waits ([`Error::SendWouldBlock`]), whatever
    /// `UDT_SNDSYN` says.
    pub fn try_send(&self, data: &[u8]) -> Result<usize> {
        self.connected()?.try_send(data)
    }

    /// As [`recv`](Self::recv) but never waits ([`Error::WouldBlock`]).
    pub fn try_recv(&self, buf: &mut [u8]) -> Result<usize> {
        self.connected()?.try_recv(buf)
    }

    /// As [`send_msg`](Self::send_msg) but never waits ([`Error::SendWouldBlock`]).
    pub fn try_send_msg(&self, data: &[u8], ttl_ms: i32, in_order: bool) -> Result<usize> {
        let ttl = (ttl_ms >= 0).then(|| Duration::from_millis(ttl_ms as u64));
        self.connected()?.try_send_msg(data, ttl, in_order)?;
        Ok(data.len())
    }

    /// As [`recv_msg`](Self::recv_msg) but never waits ([`Error::WouldBlock`]).
    pub fn try_recv_msg(&self, buf: &mut [u8]) -> Result<MsgRead> {
        self.connected()?.try_recv_msg(buf)
    }

    /// As [`accept`](Self::accept) but never waits ([`Error::WouldBlock`]).
    pub fn try_accept(&self) -> Result<(BsdSocket, SocketAddr)> {
        self.accept_with(Listener::try_accept)
    }

    /// Waits until the socket is ready for `interest` (a listener: [`Readiness::READ`], a
    /// connection waiting), at most `timeout`; returns what holds (empty on timeout). A socket
    /// that is connecting counts as not ready; one neither connecting nor listening fails
    /// with [`Error::NotConnected`]. With the `try_` calls this lets a front end wait in
    /// slices (to notice Ctrl-C, say) without changing the socket's blocking mode.
    pub fn wait(&self, interest: Readiness, timeout: Option<Duration>) -> Result<Readiness> {
        let phase = match &self.lock().phase {
            Phase::Listening(l) => Err(Arc::clone(l)),
            Phase::Connected(s) => Ok(Arc::clone(s)),
            Phase::Closed => return Err(Error::Closed),
            _ => return Err(Error::NotConnected),
        };
        match phase {
            Ok(s) => s.wait(interest, timeout),
            Err(l) => Ok(if l.wait(timeout)? {
                Readiness::READ
            } else {
                Readiness::empty()
            }),
        }
    }

    /// Performance statistics (UDT4's `perfmon`); `clear` restarts the interval values.
    pub fn perfmon(&self, clear: bool) -> Result<PerfStats> {
        self.connected()?.stats(clear)
    }

    /// The socket's state (UDT4's `getsockstate`).
    pub fn status(&self) -> Udt4Status {
        match &self.lock().phase {
            Phase::Init => Udt4Status::Init,
            Phase::Bound(_) => Udt4Status::Opened,
            Phase::Listening(_) => Udt4Status::Listening,
            Phase::Connected(s) => match s.state() {
                ConnectionState::Connecting => Udt4Status::Connecting,
                ConnectionState::Connected => Udt4Status::Connected,
                ConnectionState::Broken => Udt4Status::Broken,
                ConnectionState::Closing => Udt4Status::Closing,
                ConnectionState::Closed => Udt4Status::Closed,
            },
            Phase::Closed => Udt4Status::Closed,
        }
    }

    /// Current readiness (`UDT_EVENT`).
    pub fn readiness(&self) -> Readiness {
        match &self.lock().phase {
            Phase::Connected(s) => s.readiness(),
            Phase::Listening(l) => l.readiness(),
            _ => Readiness::empty(),
        }
    }

    /// Sets the secret of transport encryption (`docs/encryption.md`), stretched with
    /// Argon2id; an empty secret turns encryption off. The mode is the one last set with
    /// [`set_encryption_mode`](Self::set_encryption_mode) (default: required). Only before
    /// connecting or listening ([`Error::AlreadyConnected`] after).
    pub fn set_encryption_secret(&self, secret: &[u8]) -> Result<()> {
        let mut inner = self.lock();
        inner.require_unconnected(Error::AlreadyConnected)?;
        if matches!(inner.phase, Phase::Listening(_)) {
            return Err(Error::AlreadyConnected);
        }
        let enc = if secret.is_empty() {
            None
        } else {
            Some(
                udt_proto::Encryption::from_passphrase(secret, inner.encryption_mode)
                    .map_err(|_| Error::InvalidOption("encryption secret too long"))?,
            )
        };
        inner.update(|b| b.encryption(enc));
        Ok(())
    }

    /// Sets whether encryption is required or only preferred; `None` turns it off (and
    /// forgets the secret). Only before connecting or listening.
    pub fn set_encryption_mode(&self, mode: Option<udt_proto::EncryptionMode>) -> Result<()> {
        let mut inner = self.lock();
        inner.require_unconnected(Error::AlreadyConnected)?;
        if matches!(inner.phase, Phase::Listening(_)) {
            return Err(Error::AlreadyConnected);
        }
        let current = inner.builder.connection_config().encryption.clone();
        match mode {
            None => inner.update(|b| b.encryption(None)),
            Some(m) => {
                inner.encryption_mode = m;
                inner.update(|b| b.encryption(current.map(|e| e.with_mode(m))));
            }
        }
        Ok(())
    }

    /// The encryption mode in force: `None` while no secret is set.
    pub fn encryption_mode(&self) -> Option<udt_proto::EncryptionMode> {
        let inner = self.lock();
        inner
            .builder
            .connection_config()
            .encryption
            .as_ref()
            .map(|e| e.mode)
    }

    /// The encryption mode as the C and Python options (`UDT_ENCRYPTION`) number it:
    /// 0 off, 1 preferred, 2 required.
    pub fn encryption_mode_code(&self) -> i32 {
        match self.encryption_mode() {
            None => 0,
            Some(udt_proto::EncryptionMode::Preferred) => 1,
            Some(udt_proto::EncryptionMode::Required) => 2,
        }
    }

    /// Sets the encryption mode from its option code (see
    /// [`encryption_mode_code`](Self::encryption_mode_code)); another code is
    /// [`Error::InvalidOption`].
    pub fn set_encryption_mode_code(&self, code: i64) -> Result<()> {
        let mode = match code {
            0 => None,
            1 => Some(udt_proto::EncryptionMode::Preferred),
            2 => Some(udt_proto::EncryptionMode::Required),
            _ => {
                return Err(Error::InvalidOption(
                    "UDT_ENCRYPTION is 0 (off), 1 (preferred) or 2 (required)",
                ))
            }
        };
        self.set_encryption_mode(mode)
    }

    /// True once the connection runs encrypted.
    pub fn is_encrypted(&self) -> bool {
        self.connected().is_ok_and(|s| s.is_encrypted())
    }

    /// Sets an option (UDT4's `setsockopt`), with 4.11's rules on when each may change:
    /// [`Error::AlreadyBound`] (5001) or [`Error::AlreadyConnected`] (5002) when too late,
    /// [`Error::InvalidOption`] (5003) for a bad value or a value of the wrong type,
    /// [`Error::InvalidOperation`] (5000) for read-only and unimplemented options. An `Int`
    /// is accepted for boolean and 64-bit options.
    pub fn set_option(&self, opt: SockOpt, value: OptValue) -> Result<()> {
        let mut inner = self.lock();
        if matches!(inner.phase, Phase::Closed) {
            return Err(Error::Closed);
        }
        if opt.is_read_only() {
            return Err(Error::InvalidOperation("read-only option"));
        }
        let wrong = Error::InvalidOption("wrong value type for this option");
        match opt {
            SockOpt::Mss => {
                inner.require_unbound()?;
                let v = as_int(&value).ok_or(wrong)?;
                let v = int_in(v, "MSS out of range")?;
                if !(udt_proto::config::MIN_MSS as i32..=udt_proto::config::MAX_MSS as i32)
                    .contains(&v)
                {
                    return Err(Error::InvalidOption("MSS must be 76 to 65535 bytes"));
                }
                inner.update(|b| b.mss(v as u32));
            }
            SockOpt::SndSyn => {
                let on = as_bool(&value).ok_or(wrong)?;
                inner.send_blocking = on;
                if let Phase::Connected(s) = &inner.phase {
                    s.set_send_nonblocking(!on);
                }
            }
            SockOpt::RcvSyn => {
                let on = as_bool(&value).ok_or(wrong)?;
                inner.recv_blocking = on;
                match &inner.phase {
                    Phase::Connected(s) => s.set_recv_nonblocking(!on),
                    Phase::Listening(l) => l.set_nonblocking(!on),
                    _ => {}
                }
            }
            SockOpt::Cc => {
                inner.require_unconnected(Error::AlreadyBound)?;
                let OptValue::CongestionControl(f) = value else {
                    return Err(wrong);
                };
                inner.update(|b| b.congestion_control(f));
            }
            SockOpt::Fc => {
                inner.require_unconnected(Error::AlreadyConnected)?;
                let v = as_int(&value).ok_or(wrong)?;
                if v < 1 {
                    return Err(Error::InvalidOption("flight flag size must be positive"));
                }
                let v = v.clamp(32, i64::from(udt_proto::config::MAX_WINDOW_PKTS));
                inner.update(|b| b.flight_flag_size(v as u32));
            }
            SockOpt::SndBuf | SockOpt::RcvBuf => {
                inner.require_unbound()?;
                let v = as_int(&value).ok_or(wrong)?;
                if v <= 0 {
                    return Err(Error::InvalidOption("buffer size must be positive"));
                }
                let per_pkt = i64::from(inner.payload_bytes_per_buffer_pkt());
                let max = i64::from(udt_proto::config::MAX_WINDOW_PKTS);
                let pkts = (v / per_pkt).min(max) as u32;
                if opt == SockOpt::SndBuf {
                    inner.update(|b| b.send_buffer_pkts(pkts.max(1)));
                } else {
                    // 4.11: at least 32 packets, at most the flight flag size.
                    let fc = inner.builder.connection_config().flight_flag_size;
                    inner.update(|b| b.recv_buffer_pkts(pkts.max(32).min(fc.max(32))));
                }
            }
            SockOpt::Linger => {
                let l = match value {
                    OptValue::Linger(l) => l,
                    _ => return Err(wrong),
                };
                inner.update(|b| b.linger(l));
                if let Phase::Connected(s) = &inner.phase {
                    // A connection that already ended keeps nothing to linger for.
                    let _ = s.set_linger(l);
                }
            }
            SockOpt::UdpSndBuf | SockOpt::UdpRcvBuf => {
                inner.require_unbound()?;
                let v = as_int(&value).ok_or(wrong)?;
                let mss = i64::from(inner.builder.connection_config().mss);
                let v = v.clamp(mss, i64::from(i32::MAX)) as usize;
                if opt == SockOpt::UdpRcvBuf {
                    inner.update(|b| b.udp_recv_buffer(v));
                } else {
                    inner.update(|b| b.udp_send_buffer(v));
                }
            }
            SockOpt::MaxMsg | SockOpt::MsgTtl => {
                return Err(Error::InvalidOperation(
                    "UDT_MAXMSG and UDT_MSGTTL are not implemented (as in UDT4)",
                ))
            }
            SockOpt::Rendezvous => {
                inner.require_unconnected(Error::AlreadyBound)?;
                if matches!(inner.phase, Phase::Listening(_)) {
                    return Err(Error::AlreadyBound);
                }
                inner.rendezvous = as_bool(&value).ok_or(wrong)?;
            }
            SockOpt::SndTimeo | SockOpt::RcvTimeo => {
                let t = ms_to_timeout(as_int(&value).ok_or(wrong)?);
                if opt == SockOpt::SndTimeo {
                    inner.update(|b| b.write_timeout(t));
                    if let Phase::Connected(s) = &inner.phase {
                        s.set_write_timeout(t)?;
                    }
                } else {
                    inner.update(|b| b.read_timeout(t));
                    if let Phase::Connected(s) = &inner.phase {
                        s.set_read_timeout(t)?;
                    }
                }
            }
            SockOpt::ReuseAddr => {
                inner.require_unbound()?;
                let on = as_bool(&value).ok_or(wrong)?;
                inner.update(|b| b.reuse_addr(on));
            }
            SockOpt::MaxBw => {
                let v = as_int(&value).ok_or(wrong)?;
                // UDT4: zero or negative means unlimited.
                let bw = u64::try_from(v).ok().filter(|&v| v > 0);
                inner.update(|b| b.max_bandwidth(bw));
                if let Phase::Connected(s) = &inner.phase {
                    // A connection that already ended has no rate to change.
                    let _ = s.set_max_bandwidth(bw);
                }
            }
            SockOpt::State | SockOpt::Event | SockOpt::SndData | SockOpt::RcvData => {
                unreachable!("read-only options are refused above")
            }
        }
        Ok(())
    }

    /// Reads an option (UDT4's `getsockopt`), in the type [`SockOpt::value_type`] names.
    pub fn option(&self, opt: SockOpt) -> Result<OptValue> {
        let inner = self.lock();
        let conn = inner.builder.connection_config();
        let sock = match &inner.phase {
            Phase::Connected(s) => Some(Arc::clone(s)),
            Phase::Closed if opt != SockOpt::State => return Err(Error::Closed),
            _ => None,
        };
        let per_pkt = i64::from(inner.payload_bytes_per_buffer_pkt());
        let int = |v: i64| OptValue::Int(v.clamp(i64::from(i32::MIN), i64::from(i32::MAX)) as i32);
        Ok(match opt {
            SockOpt::Mss => int(i64::from(sock.as_ref().map_or(conn.mss, |s| s.mss()))),
            SockOpt::SndSyn => OptValue::Bool(inner.send_blocking),
            SockOpt::RcvSyn => OptValue::Bool(inner.recv_blocking),
            SockOpt::Cc => OptValue::CongestionControl(conn.congestion_control.clone()),
            SockOpt::Fc => int(i64::from(conn.flight_flag_size)),
            SockOpt::SndBuf => int(i64::from(conn.send_buffer_pkts) * per_pkt),
            SockOpt::RcvBuf => int(i64::from(conn.recv_buffer_pkts) * per_pkt),
            SockOpt::Linger => OptValue::Linger(sock.as_ref().map_or(conn.linger, |s| s.linger())),
            SockOpt::UdpSndBuf => int(inner.builder.udp_buffer_sizes().1 as i64),
            SockOpt::UdpRcvBuf => int(inner.builder.udp_buffer_sizes().0 as i64),
            SockOpt::MaxMsg | SockOpt::MsgTtl => {
                return Err(Error::InvalidOperation(
                    "UDT_MAXMSG and UDT_MSGTTL are not implemented (as in UDT4)",
                ))
            }
            SockOpt::Rendezvous => OptValue::Bool(inner.rendezvous),
            SockOpt::SndTimeo => OptValue::Int(timeout_to_ms(
                sock.as_ref()
                    .map_or(inner.builder.write_timeout_value(), |s| s.write_timeout()),
            )),
            SockOpt::RcvTimeo => OptValue::Int(timeout_to_ms(
                sock.as_ref()
                    .map_or(inner.builder.read_timeout_value(), |s| s.read_timeout()),
            )),
            SockOpt::ReuseAddr => OptValue::Bool(inner.builder.is_reuse_addr()),
            SockOpt::MaxBw => {
                let bw = sock
                    .as_ref()
                    .map_or(conn.max_bandwidth, |s| s.max_bandwidth());
                OptValue::Int64(bw.map_or(-1, |v| i64::try_from(v).unwrap_or(i64::MAX)))
            }
            SockOpt::State => {
                drop(inner);
                OptValue::Int(self.status() as i32)
            }
            SockOpt::Event => {
                drop(inner);
                OptValue::Int(i32::from(self.readiness().bits()))
            }
            SockOpt::SndData => int(sock.map_or(0, |s| s.send_buffer_used_pkts() as i64)),
            SockOpt::RcvData => {
                // The engine reports free space as free packets × MSS (UDT4's unit), keeping
                // one slot in reserve as 4.11 does; count the packets held and give them in
                // payload bytes (each holds at most MSS − 28).
                let mss = u64::from(sock.as_ref().map_or(conn.mss, |s| s.mss()).max(1));
                let held = sock.and_then(|s| s.stats(false).ok()).map_or(0, |p| {
                    let free_pkts = p.byte_avail_rcv_buf / mss;
                    let held_pkts = u64::from(conn.recv_buffer_pkts).saturating_sub(free_pkts + 1);
                    held_pkts * per_pkt as u64
                });
                int(i64::try_from(held).unwrap_or(i64::MAX))
            }
        })
    }

    /// Watches this socket with `poller` (UDT4's `epoll_add_usock`) under `token`. A socket
    /// that neither listens nor connects yet is watched from the moment it does.
    pub fn poll_register(&self, poller: &Poller, token: u64, interest: Readiness) -> Result<()> {
        let mut inner = self.lock();
        match &inner.phase {
            Phase::Listening(l) => poller.add(&**l, interest, token),
            Phase::Connected(s) => poller.add(&**s, interest, token),
            Phase::Closed => Err(Error::Closed),
            Phase::Init | Phase::Bound(_) => {
                if interest.is_empty() {
                    return Err(Error::InvalidOption("empty poll interest"));
                }
                let shared = Arc::downgrade(poller.shared());
                if inner
                    .pending
                    .iter()
                    .any(|r| r.poller.ptr_eq(&shared) && r.token == token)
                {
                    return Err(Error::InvalidPoll("source already registered"));
                }
                inner.pending.push(PendingReg {
                    poller: shared,
                    token,
                    interest,
                });
                Ok(())
            }
        }
    }

    /// Stops watching this socket's registration `token` with `poller` (UDT4's
    /// `epoll_remove_usock`).
    pub fn poll_deregister(&self, poller: &Poller, token: u64) -> Result<()> {
        let mut inner = self.lock();
        let shared = Arc::downgrade(poller.shared());
        let before = inner.pending.len();
        inner
            .pending
            .retain(|r| !(r.poller.ptr_eq(&shared) && r.token == token));
        if inner.pending.len() != before {
            return Ok(());
        }
        drop(inner);
        poller.remove(token)
    }
}

/// Registers the pending registrations with the source the socket now has; registrations of
/// pollers that are gone, or that the poller refuses (a token reused meanwhile), are dropped.
fn apply_pending(inner: &mut Inner, src: Source<'_>) {
    for reg in inner.pending.drain(..) {
        if let Some(shared) = reg.poller.upgrade() {
            let _ = register(&shared, src, reg.interest, reg.token);
        }
    }
}
