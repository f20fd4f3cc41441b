//! `BsdSocket`: UDT4's socket lifecycle and option rules, on loopback.

use std::net::{SocketAddr, UdpSocket};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use udt::{BsdSocket, Error, Family, OptValue, Poller, Readiness, SockOpt, SocketKind, Udt4Status};

fn any_v4() -> SocketAddr {
    "127.0.0.1:0".parse().unwrap()
}

/// A listening socket on loopback and its address.
fn listening(kind: SocketKind) -> (BsdSocket, SocketAddr) {
    let l = BsdSocket::new(Family::V4, kind);
    l.bind(any_v4()).unwrap();
    l.listen(16).unwrap();
    let addr = l.local_addr().unwrap();
    (l, addr)
}

/// A connected pair: (client, accepted server side).
fn pair(kind: SocketKind) -> (BsdSocket, BsdSocket, BsdSocket) {
    let (l, addr) = listening(kind);
    let c = BsdSocket::new(Family::V4, kind);
    c.connect(addr).unwrap();
    let (s, peer) = l.accept().unwrap();
    // The client bound the unspecified address; the server sees loopback.
    assert_eq!(peer.port(), c.local_addr().unwrap().port());
    assert_eq!(s.peer_addr().unwrap(), peer);
    (l, c, s)
}

#[test]
fn lifecycle_states_follow_udt4() {
    let s = BsdSocket::new(Family::V4, SocketKind::Stream);
    assert_eq!(s.status(), Udt4Status::Init);
    assert!(matches!(s.local_addr(), Err(Error::NotBound)));
    assert_eq!(
        s.listen(4).unwrap_err().udt4_code(),
        5005,
        "listen before bind"
    );
    assert_eq!(
        s.accept().unwrap_err().udt4_code(),
        5006,
        "accept without listen"
    );
    s.bind(any_v4()).unwrap();
    assert_eq!(s.status(), Udt4Status::Opened);
    assert_eq!(
        s.bind(any_v4()).unwrap_err().udt4_code(),
        5001,
        "bind twice"
    );
    s.listen(4).unwrap();
    s.listen(4).unwrap(); // again: a no-op, as in 4.11
    assert_eq!(s.status(), Udt4Status::Listening);
    let addr = s.local_addr().unwrap();
    assert_ne!(addr.port(), 0);
    assert_eq!(
        s.connect(addr).unwrap_err().udt4_code(),
        5002,
        "connect while listening"
    );
    s.close().unwrap();
    assert_eq!(s.status(), Udt4Status::Closed);
    assert_eq!(s.close().unwrap_err().udt4_code(), 5004, "close twice");
    assert_eq!(s.accept().unwrap_err().udt4_code(), 5004);
}

#[test]
fn stream_round_trip_and_connected_state() {
    let (_l, c, s) = pair(SocketKind::Stream);
    assert_eq!(c.status(), Udt4Status::Connected);
    assert_eq!(s.status(), Udt4Status::Connected);
    let data: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
    let mut sent = 0;
    while sent < data.len() {
        sent += c.send(&data[sent..]).unwrap();
    }
    let mut got = vec![0u8; data.len()];
    let mut n = 0;
    while n < got.len() {
        n += s.recv(&mut got[n..]).unwrap();
    }
    assert_eq!(got, data);
    assert_eq!(c.send_msg(b"x", -1, true).unwrap_err().udt4_code(), 5009);
    assert_eq!(s.recv_msg(&mut [0u8; 8]).unwrap_err().udt4_code(), 5009);
    let perf = c.perfmon(false).unwrap();
    assert!(perf.pkt_sent_total > 0);
    c.close().unwrap();
    // The peer sees the end of the stream.
    assert_eq!(s.recv(&mut [0u8; 16]).unwrap(), 0);
}

#[test]
fn message_boundaries_and_wrong_kind() {
    let (_l, c, s) = pair(SocketKind::Message);
    for len in [1usize, 1000, 5000, 70_000] {
        let msg = vec![len as u8; len];
        assert_eq!(c.send_msg(&msg, -1, true).unwrap(), len);
    }
    for len in [1usize, 1000, 5000, 70_000] {
        let mut buf = vec![0u8; 100_000];
        let r = s.recv_msg(&mut buf).unwrap();
        assert_eq!(r.copied, len);
        assert!(buf[..len].iter().all(|&b| b == len as u8));
    }
    assert_eq!(c.send(b"x").unwrap_err().udt4_code(), 5010);
    assert_eq!(s.recv(&mut [0u8; 4]).unwrap_err().udt4_code(), 5010);
}

#[test]
fn options_obey_udt4_timing_rules() {
    let s = BsdSocket::new(Family::V4, SocketKind::Stream);
    // Defaults.
    assert_eq!(s.option(SockOpt::Mss).unwrap(), OptValue::Int(1500));
    assert_eq!(s.option(SockOpt::SndSyn).unwrap(), OptValue::Bool(true));
    assert_eq!(s.option(SockOpt::RcvTimeo).unwrap(), OptValue::Int(-1));
    assert_eq!(s.option(SockOpt::MaxBw).unwrap(), OptValue::Int64(-1));
    assert_eq!(s.option(SockOpt::State).unwrap(), OptValue::Int(1));
    // Values and their checks.
    s.set_option(SockOpt::Mss, OptValue::Int(1400)).unwrap();
    assert_eq!(s.option(SockOpt::Mss).unwrap(), OptValue::Int(1400));
    assert_eq!(
        s.set_option(SockOpt::Mss, OptValue::Int(20))
            .unwrap_err()
            .udt4_code(),
        5003
    );
    assert_eq!(
        s.set_option(SockOpt::Mss, OptValue::Bool(true))
            .unwrap_err()
            .udt4_code(),
        5003,
        "a bool is not an MSS"
    );
    s.set_option(SockOpt::Fc, OptValue::Int(5)).unwrap();
    assert_eq!(
        s.option(SockOpt::Fc).unwrap(),
        OptValue::Int(32),
        "raised to 32"
    );
    s.set_option(SockOpt::RcvBuf, OptValue::Int(1)).unwrap();
    assert_eq!(
        s.option(SockOpt::RcvBuf).unwrap(),
        OptValue::Int(32 * (1400 - 28)),
        "at least 32 packets"
    );
    s.set_option(
        SockOpt::Linger,
        OptValue::Linger(Some(Duration::from_secs(3))),
    )
    .unwrap();
    assert_eq!(
        s.option(SockOpt::Linger).unwrap(),
        OptValue::Linger(Some(Duration::from_secs(3)))
    );
    s.set_option(SockOpt::RcvTimeo, OptValue::Int(250)).unwrap();
    assert_eq!(s.option(SockOpt::RcvTimeo).unwrap(), OptValue::Int(250));
    s.set_option(SockOpt::MaxBw, OptValue::Int64(10_000_000))
        .unwrap();
    assert_eq!(
        s.option(SockOpt::MaxBw).unwrap(),
        OptValue::Int64(10_000_000)
    );
    s.set_option(SockOpt::ReuseAddr, OptValue::Int(0)).unwrap();
    assert_eq!(s.option(SockOpt::ReuseAddr).unwrap(), OptValue::Bool(false));
    let bic = udt::cc::by_name("bic").unwrap();
    s.set_option(SockOpt::Cc, OptValue::CongestionControl(bic))
        .unwrap();
    match s.option(SockOpt::Cc).unwrap() {
        OptValue::CongestionControl(f) => assert_eq!(f.name(), "bic"),
        other => panic!("UDT_CC read back as {other:?}"),
    }
    assert_eq!(
        s.set_option(SockOpt::State, OptValue::Int(5))
            .unwrap_err()
            .udt4_code(),
        5000,
        "read only"
    );
    assert_eq!(
        s.set_option(SockOpt::MaxMsg, OptValue::Int(5))
            .unwrap_err()
            .udt4_code(),
        5000,
        "not implemented in 4.11"
    );
    // After bind: MSS, buffers and reuse are fixed; FC and CC may still change.
    s.bind(any_v4()).unwrap();
    for opt in [
        SockOpt::Mss,
        SockOpt::SndBuf,
        SockOpt::RcvBuf,
        SockOpt::UdpSndBuf,
        SockOpt::ReuseAddr,
    ] {
        assert_eq!(
            s.set_option(opt, OptValue::Int(9000))
                .unwrap_err()
                .udt4_code(),
            5001,
            "{opt:?} after bind"
        );
    }
    s.set_option(SockOpt::Fc, OptValue::Int(1000)).unwrap();
    // Sockets accepted from a listener inherit its options.
    s.listen(4).unwrap();
    let c = BsdSocket::new(Family::V4, SocketKind::Stream);
    c.connect(s.local_addr().unwrap()).unwrap();
    let (a, _) = s.accept().unwrap();
    assert_eq!(a.option(SockOpt::RcvTimeo).unwrap(), OptValue::Int(250));
    assert_eq!(
        a.option(SockOpt::MaxBw).unwrap(),
        OptValue::Int64(10_000_000)
    );
    assert_eq!(a.option(SockOpt::Mss).unwrap(), OptValue::Int(1400));
    assert_eq!(
        c.set_option(SockOpt::Fc, OptValue::Int(64))
            .unwrap_err()
            .udt4_code(),
        5002,
        "FC after connect"
    );
    assert_eq!(
        c.set_option(SockOpt::Rendezvous, OptValue::Bool(true))
            .unwrap_err()
            .udt4_code(),
        5001
    );
    assert_eq!(c.option(SockOpt::State).unwrap(), OptValue::Int(5));
    assert_eq!(
        c.option(SockOpt::Event).unwrap(),
        OptValue::Int(Readiness::WRITE.bits() as i32)
    );
}

#[test]
fn receive_timeout_and_nonblocking_codes() {
    let (_l, c, s) = pair(SocketKind::Stream);
    s.set_option(SockOpt::RcvTimeo, OptValue::Int(100)).unwrap();
    let t = Instant::now();
    assert_eq!(s.recv(&mut [0u8; 4]).unwrap_err().udt4_code(), 6003);
    assert!(t.elapsed() >= Duration::from_millis(100));
    s.set_option(SockOpt::RcvSyn, OptValue::Bool(false))
        .unwrap();
    assert_eq!(s.recv(&mut [0u8; 4]).unwrap_err().udt4_code(), 6002);
    // A full send buffer in non-blocking mode: 6001.
    let small = BsdSocket::new(Family::V4, SocketKind::Stream);
    small
        .set_option(SockOpt::SndBuf, OptValue::Int(64 * 1472))
        .unwrap();
    small
        .set_option(SockOpt::SndSyn, OptValue::Bool(false))
        .unwrap();
    let (l2, addr2) = listening(SocketKind::Stream);
    small.connect(addr2).unwrap();
    let (_peer, _) = l2.accept().unwrap();
    let chunk = vec![7u8; 1 << 20];
    let err = loop {
        match small.send(&chunk) {
            Ok(_) => {}
            Err(e) => break e,
        }
    };
    assert_eq!(err.udt4_code(), 6001);
    drop(c);
}

#[test]
fn close_from_another_thread_wakes_blocked_calls() {
    let (l, c, s) = pair(SocketKind::Stream);
    let s = Arc::new(s);
    let reader = {
        let s = Arc::clone(&s);
        thread::spawn(move || s.recv(&mut [0u8; 64]))
    };
    let l = Arc::new(l);
    let acceptor = {
        let l = Arc::clone(&l);
        thread::spawn(move || l.accept().map(|_| ()))
    };
    thread::sleep(Duration::from_millis(100));
    s.close().unwrap();
    l.close().unwrap();
    let r = reader.join().unwrap();
    assert!(matches!(r, Err(Error::Closed)), "blocked recv: {r:?}");
    let a = acceptor.join().unwrap();
    assert!(matches!(a, Err(Error::Closed)), "blocked accept: {a:?}");
    drop(c);
}

#[test]
fn failed_connect_leaves_the_socket_bound() {
    // A port with no UDT listener: the handshake times out (UDT4's 3 s).
    let silent = UdpSocket::bind("127.0.0.1:0").unwrap();
    let target = silent.local_addr().unwrap();
    let c = BsdSocket::new(Family::V4, SocketKind::Stream);
    c.bind(any_v4()).unwrap();
    let port = c.local_addr().unwrap();
    let e = c.connect(target).unwrap_err();
    assert_eq!(e.udt4_code(), 1001, "{e}");
    assert_eq!(c.status(), Udt4Status::Opened);
    assert_eq!(c.local_addr().unwrap(), port, "same port after the failure");
    // It can try again, here with a listener on the other end.
    let (l, addr) = listening(SocketKind::Stream);
    c.connect(addr).unwrap();
    let (_s, peer) = l.accept().unwrap();
    assert_eq!(peer.port(), port.port());
}

#[test]
fn connect_timeout_gives_up_early_and_leaves_the_socket_bound() {
    // A silent port: the engine alone would give up after 3 s.
    let silent = UdpSocket::bind("127.0.0.1:0").unwrap();
    let c = BsdSocket::new(Family::V4, SocketKind::Stream);
    c.bind(any_v4()).unwrap();
    let port = c.local_addr().unwrap();
    let started = Instant::now();
    let e = c
        .connect_timeout(
            silent.local_addr().unwrap(),
            Some(Duration::from_millis(200)),
        )
        .unwrap_err();
    assert_eq!(e.udt4_code(), 6003, "{e}");
    assert!(started.elapsed() < Duration::from_secs(2));
    assert_eq!(c.status(), Udt4Status::Opened);
    assert_eq!(c.local_addr().unwrap(), port);
    // Within the limit it connects as `connect` does.
    let (l, addr) = listening(SocketKind::Stream);
    c.connect_timeout(addr, Some(Duration::from_secs(5)))
        .unwrap();
    let (_s, peer) = l.accept().unwrap();
    assert_eq!(peer.port(), port.port());
}

#[test]
fn nonblocking_connect_is_reported_by_a_poller_registered_before() {
    let (l, addr) = listening(SocketKind::Stream);
    let c = BsdSocket::new(Family::V4, SocketKind::Stream);
    c.set_option(SockOpt::RcvSyn, OptValue::Bool(false))
        .unwrap();
    let poller = Poller::new().unwrap();
    // Registered while the socket is new: watched once it connects (UDT4's epoll).
    c.poll_register(&poller, 7, Readiness::WRITE).unwrap();
    assert_eq!(
        c.poll_register(&poller, 7, Readiness::WRITE)
            .unwrap_err()
            .udt4_code(),
        5013
    );
    c.connect(addr).unwrap();
    let mut events = Vec::new();
    let n = poller
        .wait(&mut events, Some(Duration::from_secs(5)))
        .unwrap();
    assert_eq!(n, 1);
    assert_eq!(events[0].token, 7);
    assert!(events[0].readiness.is_writable());
    assert_eq!(c.status(), Udt4Status::Connected);
    l.accept().unwrap();
    c.poll_deregister(&poller, 7).unwrap();
    assert_eq!(c.poll_deregister(&poller, 7).unwrap_err().udt4_code(), 5013);
}

#[test]
fn bind_udp_adopts_an_application_socket() {
    let udp = UdpSocket::bind("127.0.0.1:0").unwrap();
    let port = udp.local_addr().unwrap();
    let (l, addr) = listening(SocketKind::Stream);
    let c = BsdSocket::new(Family::V4, SocketKind::Stream);
    c.bind_udp(udp).unwrap();
    assert_eq!(c.local_addr().unwrap(), port);
    c.connect(addr).unwrap();
    let (s, peer) = l.accept().unwrap();
    assert_eq!(peer, port);
    c.send(b"through an adopted socket").unwrap();
    let mut buf = [0u8; 64];
    let n = s.recv(&mut buf).unwrap();
    assert_eq!(&buf[..n], b"through an adopted socket");
}

#[test]
fn address_family_must_match() {
    let s = BsdSocket::new(Family::V6, SocketKind::Stream);
    assert_eq!(s.bind(any_v4()).unwrap_err().udt4_code(), 5003);
    s.bind("[::1]:0".parse().unwrap()).unwrap();
    s.listen(4).unwrap();
    let c = BsdSocket::new(Family::V6, SocketKind::Stream);
    c.connect(s.local_addr().unwrap()).unwrap();
    let (a, _) = s.accept().unwrap();
    assert_eq!(a.family(), Family::V6);
}

#[test]
fn rendezvous_needs_a_bound_socket_and_meets_its_peer() {
    let a = BsdSocket::new(Family::V4, SocketKind::Stream);
    a.set_option(SockOpt::Rendezvous, OptValue::Bool(true))
        .unwrap();
    assert_eq!(
        a.connect("127.0.0.1:9".parse().unwrap())
            .unwrap_err()
            .udt4_code(),
        5008
    );
    assert_eq!(a.listen(1).unwrap_err().udt4_code(), 5007);
    let b = BsdSocket::new(Family::V4, SocketKind::Stream);
    b.set_option(SockOpt::Rendezvous, OptValue::Bool(true))
        .unwrap();
    a.bind(any_v4()).unwrap();
    b.bind(any_v4()).unwrap();
    let (aa, ba) = (a.local_addr().unwrap(), b.local_addr().unwrap());
    let t = thread::spawn(move || {
        b.connect(aa).unwrap();
        b
    });
    a.connect(ba).unwrap();
    let b = t.join().unwrap();
    a.send(b"hi").unwrap();
    let mut buf = [0u8; 2];
    let mut n = 0;
    while n < 2 {
        n += b.recv(&mut buf[n..]).unwrap();
    }
    assert_eq!(&buf, b"hi");
}

#[test]
fn files_move_with_sendfile_and_recvfile() {
    let dir = std::env::temp_dir().join(format!("udt-bsd-file-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let src = dir.join("src");
    let dst = dir.join("dst");
    let data: Vec<u8> = (0..3_000_000u32).map(|i| (i * 7 % 253) as u8).collect();
    std::fs::write(&src, &data).unwrap();
    let (_l, c, s) = pair(SocketKind::Stream);
    let f = std::fs::File::open(&src).unwrap();
    let sender = thread::spawn(move || {
        let n = c.sendfile(&f, 1000, 2_000_000).unwrap();
        c.close().unwrap();
        n
    });
    let out = std::fs::File::create(&dst).unwrap();
    assert_eq!(s.recvfile(&out, 0, 2_000_000).unwrap(), 2_000_000);
    assert_eq!(sender.join().unwrap(), 2_000_000);
    assert_eq!(std::fs::read(&dst).unwrap(), &data[1000..2_001_000]);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn try_calls_and_wait_never_block_a_blocking_socket() {
    let (l, addr) = listening(SocketKind::Stream);
    assert_eq!(l.try_accept().unwrap_err().udt4_code(), 6002);
    assert!(l
        .wait(Readiness::READ, Some(Duration::from_millis(20)))
        .unwrap()
        .is_empty());
    let c = BsdSocket::new(Family::V4, SocketKind::Stream);
    c.connect(addr).unwrap();
    assert!(l
        .wait(Readiness::READ, Some(Duration::from_secs(5)))
        .unwrap()
        .is_readable());
    let (s, _) = l.try_accept().unwrap();
    // Still in blocking mode, yet the try_ calls return at once.
    assert_eq!(s.option(SockOpt::RcvSyn).unwrap(), OptValue::Bool(true));
    assert_eq!(s.try_recv(&mut [0u8; 8]).unwrap_err().udt4_code(), 6002);
    let t = Instant::now();
    assert!(s
        .wait(Readiness::READ, Some(Duration::from_millis(50)))
        .unwrap()
        .is_empty());
    assert!(t.elapsed() >= Duration::from_millis(50));
    assert_eq!(c.try_send(b"ping").unwrap(), 4);
    let r = s
        .wait(Readiness::READ, Some(Duration::from_secs(5)))
        .unwrap();
    assert!(r.is_readable(), "{r:?}");
    let mut buf = [0u8; 8];
    let mut n = 0;
    while n < 4 {
        n += s.try_recv(&mut buf[n..]).unwrap_or(0);
    }
    assert_eq!(&buf[..4], b"ping");
    assert!(c
        .wait(Readiness::WRITE, Some(Duration::ZERO))
        .unwrap()
        .is_writable());
    // Closing from another thread ends a wait.
    let s = Arc::new(s);
    let waiter = {
        let s = Arc::clone(&s);
        thread::spawn(move || s.wait(Readiness::READ, None))
    };
    thread::sleep(Duration::from_millis(50));
    s.close().unwrap();
    assert!(matches!(waiter.join().unwrap(), Err(Error::Closed)));
}

#[test]
fn rcvdata_counts_bytes_waiting_to_be_read() {
    let (_l, client, server) = pair(SocketKind::Stream);
    let read = |opt| match server.option(opt).unwrap() {
        OptValue::Int(v) => v,
        other => panic!("{other:?}"),
    };
    assert_eq!(read(SockOpt::RcvData), 0, "nothing sent yet");
    let data = vec![7u8; 10_000];
    let mut sent = 0;
    while sent < data.len() {
        sent += client.send(&data[sent..]).unwrap();
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut held = 0;
    while Instant::now() < deadline {
        held = read(SockOpt::RcvData);
        if held >= 10_000 {
            break;
        }
        thread::sleep(Duration::from_millis(5));
    }
    // Whole packets of at most MSS − 28 payload bytes: 10 000 bytes are 7 packets.
    assert!(
        (10_000..=7 * 1472).contains(&held),
        "UDT_RCVDATA reads {held} with 10 000 bytes waiting"
    );
    let mut buf = vec![0u8; 20_000];
    let mut got = 0;
    while got < 10_000 {
        got += server.recv(&mut buf).unwrap();
    }
    assert_eq!(read(SockOpt::RcvData), 0, "everything was read");
}
