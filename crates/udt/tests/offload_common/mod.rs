//! Shared by `offload_on.rs` and `offload_off.rs` (each a process of its own, since the
//! environment decides the offloads once per process): a byte-exact loopback transfer that
//! returns both ends' I/O statistics.

use std::io::{Read, Write};

fn pattern(offset: u64, buf: &mut [u8]) {
    for (k, b) in buf.iter_mut().enumerate() {
        *b = ((offset + k as u64) % 251) as u8;
    }
}

/// Sends `total` bytes from a client to a listener on loopback, checks every byte, and
/// returns the (sender, receiver) I/O statistics. With `rate_mbps`, the sender is paced.
pub fn transfer(total: u64, rate_mbps: Option<u64>) -> (udt::IoStats, udt::IoStats) {
    let listener = udt::Listener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr();
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
        (got, conn.io_stats())
    });
    let mut b = udt::Builder::new();
    if let Some(r) = rate_mbps {
        b = b.max_bandwidth(Some(r * 1_000_000 / 8));
    }
    let mut s = b.connect(addr).unwrap();
    let empty = s.stats(false).unwrap().byte_avail_snd_buf;
    let mut chunk = vec![0u8; 1 << 20];
    let mut sent = 0u64;
    while sent < total {
        let n = chunk.len().min((total - sent) as usize);
        pattern(sent, &mut chunk[..n]);
        s.write_all(&chunk[..n]).unwrap();
        sent += n as u64;
    }
    // Until the receiver has acknowledged everything: the counters then hold every datagram.
    let until = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while s.stats(false).unwrap().byte_avail_snd_buf < empty && std::time::Instant::now() < until {
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    let tx = s.io_stats();
    s.close().unwrap();
    let (got, rx) = server.join().unwrap();
    assert_eq!(got, total);
    (tx, rx)
}
