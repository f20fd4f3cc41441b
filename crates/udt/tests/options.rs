//! Socket options on loopback: values reach the connection, getters report them, options UDT4
//! allows after connecting can be changed, invalid values are typed errors, and reuse address
//! shares a UDP port between sockets.

use std::io::{Read, Write};
use std::net::SocketAddr;
use std::time::Duration;

use udt::{Builder, ConnectionState, Error, Readiness, Socket, SocketKind};

/// Threads of this process named `udt-io-<port>`: the I/O threads serving UDP port `port`.
/// A new thread names itself when it starts, so this waits (up to 5 s) for at least one.
fn io_threads_on(port: u16) -> usize {
    let want = format!("udt-io-{port}");
    let count = || {
        std::fs::read_dir("/proc/self/task")
            .unwrap()
            .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
            .filter(|name| name.trim_end() == want)
            .count()
    };
    for _ in 0..500 {
        let n = count();
        if n > 0 {
            return n;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    0
}

fn localhost(port: u16) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], port))
}

#[test]
fn options_reach_the_socket_and_getters_report_them() {
    let listener = Builder::new().mss(1400).listen("127.0.0.1:0", 4).unwrap();
    let client_opts = Builder::new()
        .mss(1200)
        .flight_flag_size(4096)
        .send_buffer_pkts(1000)
        .recv_buffer_pkts(2000)
        .udp_buffers(1 << 20, 1 << 19)
        .linger(Some(Duration::from_secs(3)))
        .max_bandwidth(Some(50_000_000))
        .read_timeout(Some(Duration::from_secs(7)))
        .write_timeout(Some(Duration::from_secs(8)))
        .congestion_control_by_name("udt")
        .unwrap();
    assert!(
        client_opts.is_reuse_addr(),
        "reuse address is on by default, as in UDT4"
    );
    assert_eq!(client_opts.udp_buffer_sizes(), (1 << 20, 1 << 19));
    let client = client_opts.connect(listener.local_addr()).unwrap();
    let (server, _) = listener.accept().unwrap();

    // MSS is negotiated down to the smaller side's.
    assert_eq!(client.mss(), 1200);
    assert_eq!(server.mss(), 1200);
    assert_eq!(client.flight_flag_size(), 4096);
    assert_eq!(client.send_buffer_pkts(), 1000);
    assert_eq!(client.recv_buffer_pkts(), 2000);
    assert_eq!(client.linger(), Some(Duration::from_secs(3)));
    assert_eq!(client.max_bandwidth(), Some(50_000_000));
    assert_eq!(client.read_timeout(), Some(Duration::from_secs(7)));
    assert_eq!(client.write_timeout(), Some(Duration::from_secs(8)));
    assert!(!client.is_rendezvous());
    assert!(!client.is_nonblocking());
    assert_eq!(client.kind(), SocketKind::Stream);
    assert_eq!(client.congestion_control_name(), "udt");
    let b = client.udp_buffers();
    assert_eq!((b.recv_requested, b.send_requested), (1 << 20, 1 << 19));
    assert!(b.recv_granted > 0 && b.send_granted > 0);
    // The accepted side inherits the listener's options.
    assert_eq!(server.send_buffer_pkts(), 25_600);
    // Read-only options: state, readiness (`UDT_EVENT`), send-buffer use (`UDT_SNDDATA`).
    assert_eq!(client.state(), ConnectionState::Connected);
    assert_eq!(client.readiness(), Readiness::WRITE);
    assert_eq!(client.send_buffer_used_pkts(), 0);
}

#[test]
fn buffer_sizes_in_bytes_convert_like_udt4() {
    // UDT4 stores UDT_SNDBUF / UDT_RCVBUF as bytes / (MSS - 28) packets.
    let b = Builder::new()
        .mss(1028)
        .send_buffer_bytes(1_000_000)
        .recv_buffer_bytes(64_000);
    assert_eq!(b.connection_config().send_buffer_pkts, 1000);
    assert_eq!(b.connection_config().recv_buffer_pkts, 64);
    let e = Builder::new()
        .send_buffer_bytes(1000)
        .validate()
        .unwrap_err();
    assert!(matches!(e, Error::InvalidOption(_)), "{e}");
}

#[test]
fn options_changeable_after_connect() {
    let listener = Builder::new().listen("127.0.0.1:0", 4).unwrap();
    let mut client = Socket::connect(listener.local_addr()).unwrap();
    let (mut server, _) = listener.accept().unwrap();

    client.set_max_bandwidth(Some(10_000_000)).unwrap();
    assert_eq!(client.max_bandwidth(), Some(10_000_000));
    assert!(matches!(
        client.set_max_bandwidth(Some(0)),
        Err(Error::InvalidOption(_))
    ));
    assert_eq!(
        client.max_bandwidth(),
        Some(10_000_000),
        "unchanged by a refused value"
    );
    client.set_max_bandwidth(None).unwrap();
    client.set_linger(None).unwrap();
    assert_eq!(client.linger(), None);
    assert!(matches!(
        server.set_read_timeout(Some(Duration::ZERO)),
        Err(Error::InvalidOption(_))
    ));

    // A receive timeout makes an idle read give up with a timeout error.
    server
        .set_read_timeout(Some(Duration::from_millis(100)))
        .unwrap();
    let mut buf = [0u8; 8];
    let e = server.recv(&mut buf).unwrap_err();
    assert!(matches!(e, Error::Timeout), "{e}");
    assert_eq!(e.udt4_code(), 6003);
    // Non-blocking: a read with nothing there fails at once.
    server.set_nonblocking(true);
    assert!(matches!(server.recv(&mut buf), Err(Error::WouldBlock)));
    server.set_nonblocking(false);

    // The connection still works with the changed options; linger again so that close
    // delivers what was written.
    client.set_linger(Some(Duration::from_secs(5))).unwrap();
    client.write_all(b"options").unwrap();
    client.close().unwrap();
    let mut got = Vec::new();
    server.set_read_timeout(None).unwrap();
    server.read_to_end(&mut got).unwrap();
    assert_eq!(got, b"options");
}

#[test]
fn nonblocking_option_applies_to_made_sockets() {
    let listener = Builder::new()
        .nonblocking(true)
        .listen("127.0.0.1:0", 4)
        .unwrap();
    let client = Builder::new()
        .nonblocking(true)
        .connect(listener.local_addr())
        .unwrap();
    let (server, _) = listener.accept().unwrap();
    assert!(client.is_nonblocking() && server.is_nonblocking());
    let mut buf = [0u8; 4];
    assert!(matches!(server.recv(&mut buf), Err(Error::WouldBlock)));
}

#[test]
fn invalid_option_values_are_typed_errors() {
    let listener = Builder::new().listen("127.0.0.1:0", 4).unwrap();
    let to = listener.local_addr();
    let bad: Vec<(&str, Builder)> = vec![
        ("mss too small", Builder::new().mss(10)),
        ("mss too large", Builder::new().mss(70_000)),
        ("flight flag 0", Builder::new().flight_flag_size(0)),
        ("send buffer 0", Builder::new().send_buffer_pkts(0)),
        ("recv buffer 0", Builder::new().recv_buffer_pkts(0)),
        ("udp buffer 0", Builder::new().udp_buffers(0, 1 << 20)),
        (
            "udp buffer below the MSS",
            Builder::new().udp_buffers(1 << 20, 1000),
        ),
        ("max bandwidth 0", Builder::new().max_bandwidth(Some(0))),
        (
            "zero read timeout",
            Builder::new().read_timeout(Some(Duration::ZERO)),
        ),
        (
            "zero write timeout",
            Builder::new().write_timeout(Some(Duration::ZERO)),
        ),
        (
            "zero connect timeout",
            Builder::new().connect_timeout(Duration::ZERO),
        ),
        (
            "local address of the other IP version",
            Builder::new().local_addr("[::1]:0".parse().unwrap()),
        ),
    ];
    for (what, b) in bad {
        let e = b
            .connect(to)
            .err()
            .unwrap_or_else(|| panic!("{what}: accepted"));
        assert!(matches!(e, Error::InvalidOption(_)), "{what}: {e}");
        assert_eq!(e.udt4_code(), 5003, "{what}");
        assert_eq!(
            std::io::Error::from(e).kind(),
            std::io::ErrorKind::InvalidInput
        );
    }
    assert!(matches!(
        Builder::new().mss(10).listen("127.0.0.1:0", 4),
        Err(Error::InvalidOption(_))
    ));
    assert!(matches!(
        Builder::new().congestion_control_by_name("no-such-algorithm"),
        Err(Error::InvalidOption(_))
    ));
    assert!(Builder::new().validate().is_ok());
    // The listener was not disturbed by the refused attempts.
    let c = Socket::connect(to).unwrap();
    assert!(listener.accept().is_ok());
    drop(c);
}

#[test]
fn reuse_address_shares_the_port_and_its_thread() {
    let a = Builder::new().listen("127.0.0.1:0", 4).unwrap();
    let b = Builder::new().listen("127.0.0.1:0", 4).unwrap();
    let p = a.local_addr().port();
    assert_eq!(io_threads_on(p), 1);

    // A client bound to the listener's port joins its multiplexer.
    let mut c = Builder::new()
        .local_addr(localhost(p))
        .connect(b.local_addr())
        .unwrap();
    assert_eq!(c.local_addr().port(), p);
    assert_eq!(io_threads_on(p), 1, "the shared port has one I/O thread");
    let (mut at_b, peer) = b.accept().unwrap();
    assert_eq!(peer.port(), p, "the client speaks from the shared port");
    c.write_all(b"through the shared port").unwrap();
    let mut buf = [0u8; 23];
    at_b.read_exact(&mut buf).unwrap();
    assert_eq!(&buf, b"through the shared port");

    // The listener on that port still accepts.
    let d = Socket::connect(a.local_addr()).unwrap();
    let (mut at_a, _) = a.accept().unwrap();
    at_b.write_all(b"back").unwrap();
    let mut four = [0u8; 4];
    c.read_exact(&mut four).unwrap();
    assert_eq!(&four, b"back");
    drop(d);
    drop(at_a.write(b"x"));

    // One listener per port (UDT4 5011).
    let e = Builder::new().listen(localhost(p), 4).err().unwrap();
    assert!(matches!(e, Error::AlreadyListening), "{e}");
    assert_eq!(e.udt4_code(), 5011);
}

#[test]
fn rendezvous_sockets_share_a_port() {
    let peer1 = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let peer2 = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let (p1, p2) = (
        peer1.local_addr().unwrap().port(),
        peer2.local_addr().unwrap().port(),
    );
    drop((peer1, peer2));
    let hub = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let h = hub.local_addr().unwrap().port();
    drop(hub);
    // Two rendezvous peers, each meeting a socket of the hub port.
    let t1 = std::thread::spawn(move || {
        Builder::new()
            .rendezvous(localhost(p1), localhost(h))
            .unwrap()
    });
    let t2 = std::thread::spawn(move || {
        Builder::new()
            .rendezvous(localhost(p2), localhost(h))
            .unwrap()
    });
    let hub1 = std::thread::spawn(move || {
        Builder::new()
            .rendezvous(localhost(h), localhost(p1))
            .unwrap()
    });
    let hub2 = Builder::new()
        .rendezvous(localhost(h), localhost(p2))
        .unwrap();
    let hub1 = hub1.join().unwrap();
    let (mut s1, mut s2) = (t1.join().unwrap(), t2.join().unwrap());
    assert!(hub1.is_rendezvous() && hub2.is_rendezvous());
    assert_eq!(io_threads_on(h), 1, "both hub sockets share one port");
    let (mut hub1, mut hub2) = (hub1, hub2);
    hub1.write_all(b"one").unwrap();
    hub2.write_all(b"two").unwrap();
    let mut buf = [0u8; 3];
    s1.read_exact(&mut buf).unwrap();
    assert_eq!(&buf, b"one");
    s2.read_exact(&mut buf).unwrap();
    assert_eq!(&buf, b"two");
}

#[test]
fn port_in_use_without_reuse_is_a_clear_error() {
    let a = Builder::new()
        .reuse_addr(false)
        .listen("127.0.0.1:0", 4)
        .unwrap();
    let p = a.local_addr().port();
    // Reuse off on the new socket.
    let e = Builder::new()
        .reuse_addr(false)
        .rendezvous(localhost(p), localhost(9))
        .err()
        .unwrap();
    assert!(
        matches!(e, Error::AddrInUse(addr) if addr.port() == p),
        "{e}"
    );
    assert_eq!(e.udt4_code(), 1003);
    assert_eq!(
        std::io::Error::from(e).kind(),
        std::io::ErrorKind::AddrInUse
    );
    // Reuse on for the new socket, but the port's owner does not share.
    let e = Builder::new()
        .local_addr(localhost(p))
        .connect(localhost(9))
        .err()
        .unwrap();
    assert!(matches!(e, Error::AddrInUse(_)), "{e}");
    // A port held by another program (here a plain UDP socket).
    let other = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let e = Builder::new()
        .listen(other.local_addr().unwrap(), 4)
        .err()
        .unwrap();
    assert!(matches!(e, Error::AddrInUse(_)), "{e}");
}

#[test]
fn a_port_can_be_listened_on_again_once_its_listener_is_dropped() {
    for reuse in [false, true] {
        let first = Builder::new()
            .reuse_addr(reuse)
            .listen("127.0.0.1:0", 4)
            .unwrap();
        let addr = first.local_addr();
        drop(first);
        // The old I/O thread may still be closing the UDP socket: no spurious "in use".
        let again = Builder::new().reuse_addr(reuse).listen(addr, 4).unwrap();
        let c = Socket::connect(addr).unwrap();
        assert!(again.accept().is_ok());
        drop(c);
    }
}

/// The default UDP receive buffer grows with the MSS (faster flows of larger packets), up to
/// a cap; an explicit size, set before or after the MSS, always wins.
#[test]
fn the_default_udp_receive_buffer_follows_the_mss() {
    use udt::{default_udp_recv_buffer, DEFAULT_UDP_RECV_BUFFER, MAX_DEFAULT_UDP_RECV_BUFFER};
    assert_eq!(default_udp_recv_buffer(576), DEFAULT_UDP_RECV_BUFFER);
    assert_eq!(default_udp_recv_buffer(1500), DEFAULT_UDP_RECV_BUFFER);
    assert_eq!(default_udp_recv_buffer(3000), 2 * DEFAULT_UDP_RECV_BUFFER);
    assert_eq!(default_udp_recv_buffer(9000), MAX_DEFAULT_UDP_RECV_BUFFER);
    assert_eq!(default_udp_recv_buffer(65_535), MAX_DEFAULT_UDP_RECV_BUFFER);
    let jumbo = Builder::new().mss(9000);
    assert_eq!(jumbo.udp_buffer_sizes().0, MAX_DEFAULT_UDP_RECV_BUFFER);
    let set_first = Builder::new().udp_recv_buffer(1 << 20).mss(9000);
    assert_eq!(
        set_first.udp_buffer_sizes(),
        (1 << 20, udt::DEFAULT_UDP_SEND_BUFFER)
    );
    let set_after = Builder::new().mss(9000).udp_send_buffer(1 << 19);
    assert_eq!(
        set_after.udp_buffer_sizes(),
        (MAX_DEFAULT_UDP_RECV_BUFFER, 1 << 19)
    );
}
