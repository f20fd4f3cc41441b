//! The user's algorithm over real UDP on loopback, given to the sockets by value.

use std::io::{Read, Write};

fn pattern(offset: u64, buf: &mut [u8]) {
    for (k, b) in buf.iter_mut().enumerate() {
        *b = ((offset + k as u64) % 251) as u8;
    }
}

#[test]
fn user_aimd_carries_a_transfer_over_loopback() {
    const TOTAL: u64 = 8 << 20;
    let options = udt::Builder::new().congestion_control(user_cc::factory());
    let listener = options.listen("127.0.0.1:0", 1).unwrap();
    let addr = listener.local_addr();
    let server = std::thread::spawn(move || {
        let (mut conn, _) = listener.accept().unwrap();
        let mut buf = vec![0u8; 1 << 16];
        let mut expect = vec![0u8; 1 << 16];
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
    let mut s = options.connect(addr).unwrap();
    let mut chunk = vec![0u8; 1 << 16];
    let mut sent = 0u64;
    while sent < TOTAL {
        pattern(sent, &mut chunk);
        s.write_all(&chunk).unwrap();
        sent += chunk.len() as u64;
    }
    // The sender runs the user's algorithm: no pacing at all (UDT's native control always
    // paces, starting at 1 µs).
    let perf = s.stats(false).unwrap();
    assert_eq!(perf.us_pkt_snd_period, 0.0, "{perf:?}");
    s.close().unwrap();
    assert_eq!(server.join().unwrap(), TOTAL);
}
