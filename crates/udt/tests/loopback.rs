//! Real UDP on loopback: connections, byte-exact transfers, close.

use std::io::{Read, Write};
use std::time::{Duration, Instant};

fn pattern(offset: u64, buf: &mut [u8]) {
    for (k, b) in buf.iter_mut().enumerate() {
        *b = ((offset + k as u64) % 251) as u8;
    }
}

#[test]
fn stream_transfer_is_byte_exact() {
    let listener = udt::Listener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr();
    const TOTAL: u64 = 64 << 20;
    let server = std::thread::spawn(move || {
        let (mut conn, _) = listener.accept().unwrap();
        let mut buf = vec![0u8; 1 << 20];
        let mut expect = vec![0u8; 1 << 20];
        let mut got = 0u64;
        loop {
            let n = conn.read(&mut buf).unwrap();
            if n == 0 {
                break;
            }
            pattern(got, &mut expect[..n]);
            assert!(buf[..n] == expect[..n], "corrupt data near offset {got}");
            got += n as u64;
        }
        got
    });
    let start = Instant::now();
    let mut s = udt::Socket::connect(addr).unwrap();
    let mut chunk = vec![0u8; 1 << 20];
    let mut sent = 0u64;
    while sent < TOTAL {
        pattern(sent, &mut chunk);
        s.write_all(&chunk).unwrap();
        sent += chunk.len() as u64;
    }
    s.close().unwrap();
    let got = server.join().unwrap();
    let secs = start.elapsed().as_secs_f64();
    eprintln!(
        "64 MiB over loopback in {secs:.2} s: {:.0} Mb/s",
        TOTAL as f64 * 8.0 / secs / 1e6
    );
    assert_eq!(got, TOTAL);
}

#[test]
fn connecting_to_a_closed_port_times_out() {
    let b = udt::Builder::new().connect_timeout(Duration::from_millis(600));
    // Bind and drop a UDP socket to get a port nobody listens on.
    let port = std::net::UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let start = Instant::now();
    let err = b.connect(("127.0.0.1", port)).err().expect("must fail");
    assert!(
        matches!(err, udt::Error::Connect(udt_proto::ConnectError::TimedOut)),
        "{err}"
    );
    assert!(start.elapsed() < Duration::from_secs(5));
}

/// A listener with `accept_any_kind` takes a message and a stream client on one port; each
/// accepted socket has its client's kind and carries data in that kind's way.
#[test]
fn a_listener_accepting_any_kind_serves_both() {
    use udt::{Builder, SocketKind};
    let listener = Builder::new()
        .accept_any_kind(true)
        .listen("127.0.0.1:0", 4)
        .unwrap();
    let addr = listener.local_addr();
    let msg_client = Builder::new()
        .kind(SocketKind::Message)
        .connect(addr)
        .unwrap();
    let (msg_server, _) = listener.accept().unwrap();
    let mut stream_client = Builder::new().connect(addr).unwrap();
    let (mut stream_server, _) = listener.accept().unwrap();
    assert_eq!(msg_server.kind(), SocketKind::Message);
    assert_eq!(stream_server.kind(), SocketKind::Stream);

    let mut msg = vec![0u8; 5000];
    pattern(0, &mut msg);
    msg_client.send_msg(&msg, None, true).unwrap();
    stream_client.write_all(b"bytes").unwrap();
    let mut buf = vec![0u8; 10_000];
    let m = msg_server.recv_msg(&mut buf).unwrap();
    assert_eq!((m.copied, m.msg_len), (5000, 5000));
    assert!(buf[..5000] == msg[..]);
    stream_server.read_exact(&mut buf[..5]).unwrap();
    assert_eq!(&buf[..5], b"bytes");
}
