//! Client/server and rendezvous connections over IPv6 loopback (`::1`).

use std::io::{Read, Write};
use std::net::{SocketAddr, UdpSocket};

use udt::{Builder, Socket};

fn pattern(offset: usize, buf: &mut [u8]) {
    for (k, b) in buf.iter_mut().enumerate() {
        *b = ((offset + k) % 251) as u8;
    }
}

#[test]
fn client_server_over_ipv6_loopback() {
    let listener = Builder::new().listen("[::1]:0", 4).unwrap();
    let addr = listener.local_addr();
    assert!(addr.is_ipv6());
    const TOTAL: usize = 4 << 20;
    let server = std::thread::spawn(move || {
        let (mut conn, peer) = listener.accept().unwrap();
        assert!(peer.is_ipv6());
        let mut got = Vec::with_capacity(TOTAL);
        conn.read_to_end(&mut got).unwrap();
        got
    });
    let mut client = Socket::connect(addr).unwrap();
    assert!(client.local_addr().is_ipv6());
    assert_eq!(client.peer_addr().unwrap(), addr);
    let mut data = vec![0u8; TOTAL];
    pattern(0, &mut data);
    client.write_all(&data).unwrap();
    client.close().unwrap();
    let got = server.join().unwrap();
    assert!(got == data, "data differs ({} bytes received)", got.len());
}

#[test]
fn rendezvous_over_ipv6_loopback() {
    let free = || -> SocketAddr { UdpSocket::bind("[::1]:0").unwrap().local_addr().unwrap() };
    let (a, b) = (free(), free());
    let other = std::thread::spawn(move || {
        let mut s = Builder::new().rendezvous(b, a).unwrap();
        let mut buf = [0u8; 5];
        s.read_exact(&mut buf).unwrap();
        s.write_all(&buf).unwrap();
        buf
    });
    let mut s = Builder::new().rendezvous(a, b).unwrap();
    assert!(s.is_rendezvous());
    assert_eq!(s.peer_addr().unwrap(), b);
    s.write_all(b"hello").unwrap();
    let mut echo = [0u8; 5];
    s.read_exact(&mut echo).unwrap();
    assert_eq!(&echo, b"hello");
    assert_eq!(&other.join().unwrap(), b"hello");
}
