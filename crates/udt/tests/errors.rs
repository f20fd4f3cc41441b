//! Failures on loopback are typed errors in UDT4's categories, and none of them hangs: no
//! listener, a rejected request, a port in use, an invalid option, a connection the peer
//! closed, and (ignored by default: it takes UDT4's ~45 s of silence) a peer that vanished.

use std::io::{ErrorKind, Write};
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use udt::{Builder, Error, Poller, Readiness, Socket, SocketKind};
use udt_proto::ConnectError;

/// A UDP port nobody listens on (bound and released).
fn free_port() -> u16 {
    UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[test]
fn no_listener_is_a_connection_setup_timeout() {
    let b = Builder::new().connect_timeout(Duration::from_millis(400));
    let e = b
        .connect(("127.0.0.1", free_port()))
        .err()
        .expect("must fail");
    assert!(matches!(e, Error::Connect(ConnectError::TimedOut)), "{e}");
    assert_eq!(e.udt4_code(), 1001);
    assert_eq!(std::io::Error::from(e).kind(), ErrorKind::TimedOut);
}

#[test]
fn a_rejected_request_is_refused() {
    // A message socket asking a stream listener: the listener answers with a rejection.
    let listener = Builder::new().listen("127.0.0.1:0", 4).unwrap();
    let e = Builder::new()
        .kind(SocketKind::Message)
        .connect(listener.local_addr())
        .err()
        .expect("must be rejected");
    assert!(matches!(e, Error::Connect(ConnectError::Rejected)), "{e}");
    assert_eq!(e.udt4_code(), 1002);
    assert_eq!(std::io::Error::from(e).kind(), ErrorKind::ConnectionRefused);
}

#[test]
fn a_port_in_use_and_an_invalid_option() {
    let holder = UdpSocket::bind("127.0.0.1:0").unwrap();
    let e = Builder::new()
        .listen(holder.local_addr().unwrap(), 4)
        .err()
        .unwrap();
    assert!(matches!(e, Error::AddrInUse(_)), "{e}");
    assert_eq!(e.udt4_code(), 1003);

    let e = Builder::new()
        .flight_flag_size(0)
        .listen("127.0.0.1:0", 4)
        .err()
        .unwrap();
    assert!(matches!(e, Error::InvalidOption(_)), "{e}");
    assert_eq!(e.udt4_code(), 5003);
}

#[test]
fn a_connection_the_peer_closed_is_broken() {
    let listener = Builder::new().listen("127.0.0.1:0", 4).unwrap();
    let mut client = Socket::connect(listener.local_addr()).unwrap();
    let (server, _) = listener.accept().unwrap();
    server.close().unwrap();
    // Sends fail once the peer's Shutdown has arrived; reads see the end of the stream.
    let start = Instant::now();
    let e = loop {
        match client.write(b"anyone there?") {
            Ok(_) => std::thread::sleep(Duration::from_millis(10)),
            Err(e) => break e,
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "no error after 20 s"
        );
    };
    assert_eq!(e.kind(), ErrorKind::ConnectionReset);
    let e = client.send(b"again").unwrap_err();
    assert!(matches!(e, Error::ConnectionLost), "{e}");
    assert_eq!(e.udt4_code(), 2001);
    let mut buf = [0u8; 8];
    assert_eq!(client.recv(&mut buf).unwrap(), 0);
}

/// A UDP relay between one client and `server`, which drops everything once `cut` is set
/// (the server "vanishes" without a Shutdown and without ICMP errors).
fn relay(server: SocketAddr, cut: Arc<AtomicBool>) -> SocketAddr {
    let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
    sock.set_read_timeout(Some(Duration::from_millis(100)))
        .unwrap();
    let addr = sock.local_addr().unwrap();
    std::thread::spawn(move || {
        let mut client: Option<SocketAddr> = None;
        let mut buf = vec![0u8; 65536];
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(120) {
            let Ok((n, from)) = sock.recv_from(&mut buf) else {
                continue;
            };
            if cut.load(Ordering::Relaxed) {
                continue;
            }
            let to = if from == server {
                match client {
                    Some(c) => c,
                    None => continue,
                }
            } else {
                client = Some(from);
                server
            };
            let _ = sock.send_to(&buf[..n], to);
        }
    });
    addr
}

#[test]
#[ignore = "takes UDT4's broken-link timeout (about 45 s of silence); run with --ignored"]
fn a_peer_that_vanishes_breaks_the_connection() {
    let listener = Builder::new().listen("127.0.0.1:0", 4).unwrap();
    let cut = Arc::new(AtomicBool::new(false));
    let via = relay(listener.local_addr(), Arc::clone(&cut));
    let mut client = Socket::connect(via).unwrap();
    let (_server, _) = listener.accept().unwrap();
    let poller = Poller::new().unwrap();
    poller.add(&client, Readiness::ERR, 1).unwrap();
    client.write_all(&[7u8; 100_000]).unwrap();
    cut.store(true, Ordering::Relaxed);
    let start = Instant::now();
    // Keep the connection busy; the sender's EXP timer declares it broken.
    let e = loop {
        match client.send(&[1u8; 1000]) {
            Ok(_) => {}
            Err(e) => break e,
        }
    };
    eprintln!(
        "broken after {:.1} s of silence",
        start.elapsed().as_secs_f64()
    );
    assert!(matches!(e, Error::ConnectionLost), "{e}");
    assert_eq!(e.udt4_code(), 2001);
    // Pollers see the broken connection as an error.
    let mut events = Vec::new();
    assert_eq!(poller.wait(&mut events, Some(Duration::ZERO)).unwrap(), 1);
    assert_eq!(events[0].readiness, Readiness::ERR);
}
