//! Sends of 64 KiB and more copy into the send buffer outside the multiplexer's lock
//! (`socket/bulk_send.rs`): byte-exact streams and messages through that path, mixed with small
//! writes, from several threads at once, blocking and not.

use std::io::Read;
use std::sync::Arc;
use std::thread;

use udt::{Builder, Error, Socket, SocketKind};

fn pattern(offset: u64, len: usize) -> Vec<u8> {
    (0..len as u64)
        .map(|k| ((offset + k) % 251) as u8)
        .collect()
}

fn pair(kind: SocketKind, send_buffer_pkts: u32) -> (Socket, Socket) {
    let listener = Builder::new().kind(kind).listen("127.0.0.1:0", 1).unwrap();
    let addr = listener.local_addr();
    let accept = thread::spawn(move || listener.accept().unwrap().0);
    let client = Builder::new()
        .kind(kind)
        .send_buffer_pkts(send_buffer_pkts)
        .connect(addr)
        .unwrap();
    let server = accept.join().unwrap();
    (client, server)
}

fn read_all(mut s: Socket) -> Vec<u8> {
    let mut out = Vec::new();
    s.read_to_end(&mut out).unwrap();
    out
}

/// Writes of every size around the 64 KiB threshold, through a send buffer small enough
/// (64 packets, about 93 KB) that large writes are taken in part.
#[test]
fn large_and_small_writes_arrive_byte_exact() {
    let (client, server) = pair(SocketKind::Stream, 64);
    let reader = thread::spawn(move || read_all(server));
    let sizes = [
        1,
        100,
        65_535,
        65_536,
        65_537,
        1_456,
        (1 << 20) + 3,
        7,
        3 << 20,
    ];
    let mut off = 0u64;
    for round in 0..3 {
        for &len in &sizes {
            let data = pattern(off, len);
            let mut rest = &data[..];
            while !rest.is_empty() {
                let n = client.send(rest).unwrap();
                assert!(
                    n > 0 && n <= rest.len(),
                    "round {round}, size {len}: took {n}"
                );
                rest = &rest[n..];
            }
            off += len as u64;
        }
    }
    client.close().unwrap();
    let got = reader.join().unwrap();
    assert_eq!(got.len() as u64, off);
    assert!(got == pattern(0, off as usize), "stream corrupted");
}

/// Three threads write large chunks to one socket at once: every thread's bytes arrive
/// complete and in its order.
#[test]
fn threads_writing_at_once_keep_their_own_order() {
    let (client, server) = pair(SocketKind::Stream, 256);
    let reader = thread::spawn(move || read_all(server));
    let client = Arc::new(client);
    const CHUNK: usize = 200_000;
    const CHUNKS: u8 = 20;
    let writers: Vec<_> = (0..3u8)
        .map(|t| {
            let c = Arc::clone(&client);
            thread::spawn(move || {
                for k in 0..CHUNKS {
                    // The top two bits name the writer, the rest count its chunks.
                    let chunk = vec![(t << 6) | k; CHUNK];
                    let mut rest = &chunk[..];
                    while !rest.is_empty() {
                        rest = &rest[c.send(rest).unwrap()..];
                    }
                }
            })
        })
        .collect();
    for w in writers {
        w.join().unwrap();
    }
    client.close().unwrap();
    let got = reader.join().unwrap();
    assert_eq!(got.len(), 3 * CHUNKS as usize * CHUNK);
    for t in 0..3u8 {
        let mine: Vec<u8> = got.iter().copied().filter(|b| b >> 6 == t).collect();
        let want: Vec<u8> = (0..CHUNKS)
            .flat_map(|k| vec![(t << 6) | k; CHUNK])
            .collect();
        assert!(
            mine == want,
            "writer {t}'s bytes out of order or incomplete"
        );
    }
}

/// Large messages, sent blocking and non-blocking, arrive whole and byte-exact; a message the
/// buffer cannot take now is refused whole with `SendWouldBlock`.
#[test]
fn large_messages_arrive_whole() {
    let (client, server) = pair(SocketKind::Message, 1000);
    let too_big = vec![0u8; 2_000_000];
    let refused = client.send_msg(&too_big, None, true);
    assert!(
        matches!(refused, Err(Error::MessageTooLarge)),
        "{refused:?}"
    );
    let sizes = [65_536, 200_001, 1_456_000, 70_000, 10];
    let reader = thread::spawn(move || {
        let mut buf = vec![0u8; 2 << 20];
        let mut off = 0u64;
        for round in 0..4 {
            for &len in &sizes {
                let m = server.recv_msg(&mut buf).unwrap();
                assert_eq!((m.copied, m.msg_len), (len, len), "round {round}");
                assert!(
                    buf[..len] == pattern(off, len),
                    "message of {len} corrupted"
                );
                off += len as u64;
            }
        }
    });
    let mut off = 0u64;
    let mut refused = 0;
    for round in 0..4 {
        for &len in &sizes {
            let msg = pattern(off, len);
            if round % 2 == 0 {
                client.send_msg(&msg, None, true).unwrap();
            } else {
                loop {
                    match client.try_send_msg(&msg, None, true) {
                        Ok(()) => break,
                        Err(Error::SendWouldBlock) => {
                            refused += 1;
                            thread::sleep(std::time::Duration::from_millis(1));
                        }
                        Err(e) => panic!("{e}"),
                    }
                }
            }
            off += len as u64;
        }
    }
    reader.join().unwrap();
    eprintln!("non-blocking sends refused while the buffer was full: {refused}");
}

/// A non-blocking large write into a full buffer fails with `SendWouldBlock`, and one into a
/// buffer with some room takes part of it.
#[test]
fn non_blocking_large_writes_take_what_fits() {
    let (client, server) = pair(SocketKind::Stream, 32);
    let data = pattern(0, 1 << 20);
    // Nobody reads yet, but the peer's receive buffer takes a window's worth: stop once the
    // send buffer itself is full.
    let mut taken = 0;
    loop {
        match client.try_send(&data[taken % data.len()..]) {
            Ok(n) => {
                assert!(n > 0);
                taken += n;
            }
            Err(Error::SendWouldBlock) => break,
            Err(e) => panic!("{e}"),
        }
        assert!(taken < 64 << 20, "the send buffer never filled");
    }
    let mut buf = vec![0u8; taken];
    let mut s = server;
    s.read_exact(&mut buf).unwrap();
    let mut want = Vec::with_capacity(taken);
    while want.len() < taken {
        let from = want.len() % data.len();
        let n = (data.len() - from).min(taken - want.len());
        want.extend_from_slice(&data[from..from + n]);
    }
    assert!(buf == want, "non-blocking writes corrupted the stream");
}
