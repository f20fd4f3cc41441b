//! The poller on loopback: readiness for read, write, accept, end-of-stream and errors, over
//! sockets on many UDP ports, and its file descriptor with `libc::poll`.

use std::os::fd::AsRawFd;
use std::time::Duration;

use udt::{Builder, Error, Listener, PollEvent, Poller, Readiness, Socket, SocketKind};

/// Long enough that only a broken implementation waits it out on loopback.
const LONG: Option<Duration> = Some(Duration::from_secs(20));
const NOW: Option<Duration> = Some(Duration::ZERO);

/// A listener with options `lb`, a client with options `cb`, and the accepted server side.
fn pair(lb: &Builder, cb: &Builder) -> (Listener, Socket, Socket) {
    let listener = lb.listen("127.0.0.1:0", 16).unwrap();
    let client = cb.connect(listener.local_addr()).unwrap();
    let (server, _) = listener.accept().unwrap();
    (listener, server, client)
}

/// `poll(2)` on `fd` for `POLLIN` with a timeout in ms; true when readable.
fn fd_readable(fd: i32, timeout_ms: i32) -> bool {
    let mut p = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd.
    let rc = unsafe { libc::poll(&mut p, 1, timeout_ms) };
    assert!(rc >= 0, "poll failed");
    rc == 1 && p.revents & libc::POLLIN != 0
}

/// Waits until `token` is reported, returning its readiness.
fn wait_for(poller: &Poller, token: u64) -> Readiness {
    let mut events = Vec::new();
    for _ in 0..1000 {
        assert!(
            poller.wait(&mut events, LONG).unwrap() > 0,
            "poller timed out"
        );
        if let Some(e) = events.iter().find(|e| e.token == token) {
            return e.readiness;
        }
        // Other tokens are ready (level-triggered): give the awaited one time to arrive.
        std::thread::sleep(Duration::from_millis(5));
    }
    panic!("token {token} never became ready");
}

/// The readiness of `token` now (empty if not ready).
fn now(poller: &Poller, token: u64) -> Readiness {
    let mut events = Vec::new();
    poller.wait(&mut events, NOW).unwrap();
    events
        .iter()
        .find(|e| e.token == token)
        .map_or(Readiness::empty(), |e| e.readiness)
}

/// Reads everything readable now from a non-blocking socket.
fn drain(s: &Socket) -> Vec<u8> {
    let mut out = Vec::new();
    let mut buf = [0u8; 65536];
    loop {
        match s.recv(&mut buf) {
            Ok(0) => break,
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(Error::WouldBlock) => break,
            Err(e) => panic!("recv: {e}"),
        }
    }
    out
}

#[test]
fn accept_readiness_and_descriptor() {
    let listener = Builder::new().listen("127.0.0.1:0", 16).unwrap();
    listener.set_nonblocking(true);
    assert!(matches!(listener.accept(), Err(Error::WouldBlock)));
    let poller = Poller::new().unwrap();
    poller.add(&listener, Readiness::READ, 7).unwrap();
    let fd = poller.as_raw_fd();
    assert!(now(&poller, 7).is_empty());
    assert!(!fd_readable(fd, 0));

    let addr = listener.local_addr();
    let client = std::thread::spawn(move || Socket::connect(addr).unwrap());
    assert_eq!(wait_for(&poller, 7), Readiness::READ);
    assert!(
        fd_readable(fd, 0),
        "descriptor must be readable while a connection waits"
    );
    // Level-triggered: still reported until accepted.
    assert_eq!(now(&poller, 7), Readiness::READ);

    let (_conn, _) = listener.accept().unwrap();
    // Accepting consumed the readiness: the descriptor resets without a wait() call.
    assert!(
        !fd_readable(fd, 0),
        "descriptor stayed readable after accept"
    );
    assert!(now(&poller, 7).is_empty());
    drop(client.join().unwrap());
}

#[test]
fn read_write_and_end_of_stream() {
    let (_l, server, client) = pair(&Builder::new(), &Builder::new());
    server.set_nonblocking(true);
    let poller = Poller::new().unwrap();
    poller.add(&server, Readiness::READ, 1).unwrap();
    poller
        .add(&client, Readiness::READ | Readiness::WRITE, 2)
        .unwrap();
    let fd = poller.as_raw_fd();

    // A fresh connection: the client may write, nobody may read.
    assert_eq!(wait_for(&poller, 2), Readiness::WRITE);
    assert!(now(&poller, 1).is_empty());

    // Only read interest for the client from now on: nothing to report.
    poller.modify(2, Readiness::READ).unwrap();
    assert!(now(&poller, 2).is_empty());
    assert!(!fd_readable(fd, 0));

    client.send(b"ready?").unwrap();
    assert_eq!(wait_for(&poller, 1), Readiness::READ);
    assert!(fd_readable(fd, 0));
    let mut got = drain(&server);
    while got.len() < 6 {
        wait_for(&poller, 1);
        got.extend(drain(&server));
    }
    assert_eq!(got, b"ready?");
    // Everything read: neither the poller nor the descriptor reports it any more.
    assert!(now(&poller, 1).is_empty());
    assert!(
        !fd_readable(fd, 0),
        "descriptor stayed readable after the data was read"
    );

    // The peer closes: end of stream is readable and an error.
    poller.modify(1, Readiness::READ | Readiness::ERR).unwrap();
    client.close().unwrap();
    let r = wait_for(&poller, 1);
    assert!(r.is_readable() && r.is_error(), "{r:?}");
    // With every condition of interest, an ended connection is also writable (a write fails
    // at once instead of blocking), as in UDT4.
    poller.modify(1, Readiness::ALL).unwrap();
    assert_eq!(now(&poller, 1), Readiness::ALL);
    let mut buf = [0u8; 16];
    assert_eq!(server.recv(&mut buf).unwrap(), 0, "end of stream");
    // The client's registration went with the client.
    assert_eq!(poller.len(), 1);
}

#[test]
fn write_readiness_follows_the_send_buffer() {
    // Small buffers on both sides; the server does not read at first, so the client's buffer
    // fills and stays full.
    let small = Builder::new().send_buffer_pkts(32).recv_buffer_pkts(32);
    let (_l, server, client) = pair(&small, &small);
    client.set_nonblocking(true);
    server.set_nonblocking(true);
    let poller = Poller::new().unwrap();
    poller.add(&client, Readiness::WRITE, 5).unwrap();
    assert_eq!(wait_for(&poller, 5), Readiness::WRITE);

    let chunk = vec![0x5au8; 16 * 1024];
    let mut sent = 0usize;
    // Fill until writes stay refused even after in-flight acknowledgements had time to land.
    let mut refused_in_a_row = 0;
    while refused_in_a_row < 5 {
        match client.send(&chunk) {
            Ok(n) => {
                sent += n;
                refused_in_a_row = 0;
            }
            Err(Error::SendWouldBlock) => {
                refused_in_a_row += 1;
                std::thread::sleep(Duration::from_millis(100));
            }
            Err(e) => panic!("send: {e}"),
        }
    }
    assert!(
        now(&poller, 5).is_empty(),
        "a full send buffer is not writable"
    );
    assert!(!fd_readable(poller.as_raw_fd(), 0));

    // The server reads: acknowledgements free the client's buffer.
    let mut received = 0usize;
    let mut events: Vec<PollEvent> = Vec::new();
    for round in 0.. {
        received += drain(&server).len();
        if poller
            .wait(&mut events, Some(Duration::from_millis(50)))
            .unwrap()
            > 0
        {
            break;
        }
        assert!(received <= sent, "read more than was sent");
        assert!(round < 400, "never writable again");
    }
    assert_eq!(events[0].token, 5);
    assert_eq!(events[0].readiness, Readiness::WRITE);
}

#[test]
fn many_sockets_on_many_ports() {
    const PER_LISTENER: usize = 6;
    let listeners = [
        Builder::new().listen("127.0.0.1:0", 64).unwrap(),
        Builder::new().listen("127.0.0.1:0", 64).unwrap(),
    ];
    let poller = Poller::new().unwrap();
    let mut servers = Vec::new();
    let mut clients = Vec::new();
    for l in &listeners {
        for _ in 0..PER_LISTENER {
            // Every client has its own UDP port (and I/O thread).
            let c = Builder::new()
                .nonblocking(true)
                .connect(l.local_addr())
                .unwrap();
            let (s, _) = l.accept().unwrap();
            clients.push(c);
            servers.push(s);
        }
    }
    for (i, s) in servers.iter_mut().enumerate() {
        s.set_nonblocking(true);
        poller.add(&*s, Readiness::READ, i as u64).unwrap();
    }
    for (i, c) in clients.iter().enumerate() {
        poller.add(c, Readiness::READ, 1000 + i as u64).unwrap();
    }
    // Each client sends its index; each server echoes what it read.
    for (i, c) in clients.iter().enumerate() {
        c.send(format!("client {i}").as_bytes()).unwrap();
    }
    let n = clients.len();
    let mut at_server = vec![Vec::new(); n];
    let mut at_client = vec![Vec::new(); n];
    let mut events = Vec::new();
    let done = |a: &[Vec<u8>], b: &[Vec<u8>]| {
        (0..n).all(|i| {
            let want = format!("client {i}");
            a[i] == want.as_bytes() && b[i] == want.as_bytes()
        })
    };
    for round in 0.. {
        if done(&at_server, &at_client) {
            break;
        }
        assert!(round < 10_000, "echoes never completed");
        assert!(
            poller.wait(&mut events, LONG).unwrap() > 0,
            "poller timed out"
        );
        for e in &events {
            assert_eq!(e.readiness, Readiness::READ);
            let t = e.token as usize;
            if t < 1000 {
                let data = drain(&servers[t]);
                servers[t].send(&data).unwrap();
                at_server[t].extend(data);
            } else {
                at_client[t - 1000].extend(drain(&clients[t - 1000]));
            }
        }
    }
    // All consumed: nothing ready, descriptor quiet.
    assert_eq!(poller.wait(&mut events, NOW).unwrap(), 0);
    assert!(!fd_readable(poller.as_raw_fd(), 0));
}

#[test]
fn descriptor_wakes_a_blocked_libc_poll() {
    let (_l, server, client) = pair(&Builder::new(), &Builder::new());
    server.set_nonblocking(true);
    let poller = Poller::new().unwrap();
    poller.add(&server, Readiness::READ, 3).unwrap();
    let fd = poller.as_raw_fd();
    let waiter = std::thread::spawn(move || fd_readable(fd, 20_000));
    std::thread::sleep(Duration::from_millis(50));
    client.send(b"wake up").unwrap();
    assert!(
        waiter.join().unwrap(),
        "libc::poll did not see the poller's descriptor"
    );
    let mut got = Vec::new();
    while got.len() < 7 {
        got.extend(drain(&server));
    }
    assert_eq!(got, b"wake up");
    assert!(!fd_readable(fd, 0));
    drop(poller);
}

#[test]
fn registration_mistakes_are_typed_errors() {
    let (listener, server, _client) = pair(&Builder::new(), &Builder::new());
    let poller = Poller::new().unwrap();
    poller.add(&server, Readiness::READ, 1).unwrap();
    assert!(matches!(
        poller.add(&listener, Readiness::READ, 1),
        Err(Error::InvalidPoll(_))
    ));
    assert!(matches!(
        poller.add(&server, Readiness::WRITE, 2),
        Err(Error::InvalidPoll(_))
    ));
    assert!(matches!(
        poller.add(&listener, Readiness::empty(), 3),
        Err(Error::InvalidOption(_))
    ));
    assert!(matches!(
        poller.modify(9, Readiness::READ),
        Err(Error::InvalidPoll(_))
    ));
    assert!(matches!(poller.remove(9), Err(Error::InvalidPoll(_))));
    poller.remove(1).unwrap();
    assert!(poller.is_empty());
    // A socket registered with two pollers is reported by both.
    let other = Poller::new().unwrap();
    poller.add(&server, Readiness::WRITE, 1).unwrap();
    other.add(&server, Readiness::WRITE, 1).unwrap();
    assert_eq!(wait_for(&poller, 1), Readiness::WRITE);
    assert_eq!(wait_for(&other, 1), Readiness::WRITE);
    drop(server);
    assert!(poller.is_empty() && other.is_empty());
}

#[test]
fn message_sockets_are_readable_per_whole_message() {
    let msg = Builder::new().kind(SocketKind::Message).nonblocking(true);
    let (_l, server, client) = pair(&msg, &msg);
    let poller = Poller::new().unwrap();
    poller.add(&server, Readiness::READ, 4).unwrap();
    assert!(now(&poller, 4).is_empty());
    client.send_msg(&[9u8; 20_000], None, true).unwrap();
    client.send_msg(b"second", None, true).unwrap();
    assert_eq!(wait_for(&poller, 4), Readiness::READ);
    let mut buf = vec![0u8; 32_768];
    let first = server.recv_msg(&mut buf).unwrap();
    assert_eq!(first.msg_len, 20_000);
    // One message left: still readable (level-triggered) until it is read too.
    assert_eq!(wait_for(&poller, 4), Readiness::READ);
    let second = server.recv_msg(&mut buf).unwrap();
    assert_eq!(&buf[..second.copied], b"second");
    assert!(now(&poller, 4).is_empty());
    assert!(!fd_readable(poller.as_raw_fd(), 0));
}

#[test]
fn nonblocking_connect_completes_in_the_background() {
    let listener = Builder::new().listen("127.0.0.1:0", 16).unwrap();
    let poller = Poller::new().unwrap();
    let ok = Builder::new()
        .connect_nonblocking(listener.local_addr())
        .unwrap();
    poller.add(&ok, Readiness::ALL, 1).unwrap();
    // Connected: writable, no error.
    assert_eq!(wait_for(&poller, 1), Readiness::WRITE);
    assert!(matches!(ok.connect_result(), Some(Ok(()))));
    let (_server, _) = listener.accept().unwrap();

    // Nobody listens there: the attempt times out and the poller reports an error.
    let dead = std::net::UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let failing = Builder::new()
        .connect_timeout(Duration::from_millis(300))
        .connect_nonblocking(dead)
        .unwrap();
    assert!(failing.connect_result().is_none(), "still connecting");
    let mut buf = [0u8; 4];
    assert!(matches!(failing.recv(&mut buf), Err(Error::NotConnected)));
    poller.add(&failing, Readiness::ERR, 2).unwrap();
    assert!(wait_for(&poller, 2).is_error());
    assert!(matches!(
        failing.connect_result(),
        Some(Err(Error::Connect(udt_proto::ConnectError::TimedOut)))
    ));
}
