//! The async API (`udt::tokio`) on loopback: transfers, many connections on one runtime,
//! cancellation, timeouts, messages, rendezvous, files, and interop with the blocking API.
//! Every test runs under `tokio::time::timeout`, so a lost wake-up fails instead of hanging.
#![cfg(feature = "tokio")]

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use udt::tokio::{Accepted, UdtListener, UdtMessageSocket, UdtStream};
use udt::{Builder, Error, SocketKind};

/// Longest any one test may take.
const LIMIT: Duration = Duration::from_secs(60);

/// Runs `f` on a multi-threaded runtime with two workers, failing after [`LIMIT`].
fn run<F: Future<Output = ()>>(f: F) {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
        .block_on(async {
            tokio::time::timeout(LIMIT, f)
                .await
                .expect("test ran over its time limit (a lost wake-up?)")
        })
}

/// Byte `i` of every test stream: `i mod 251` (no period that a packet length divides).
fn pattern(offset: u64, buf: &mut [u8]) {
    for (k, b) in buf.iter_mut().enumerate() {
        *b = ((offset + k as u64) % 251) as u8;
    }
}

fn check(offset: u64, buf: &[u8]) {
    let mut want = vec![0u8; buf.len()];
    pattern(offset, &mut want);
    assert!(buf == want.as_slice(), "corrupt data near offset {offset}");
}

/// Writes `total` pattern bytes in chunks of `chunk`.
async fn write_pattern<W: AsyncWriteExt + Unpin>(w: &mut W, total: u64, chunk: usize) {
    let mut buf = vec![0u8; chunk];
    let mut sent = 0u64;
    while sent < total {
        let n = chunk.min((total - sent) as usize);
        pattern(sent, &mut buf[..n]);
        w.write_all(&buf[..n]).await.unwrap();
        sent += n as u64;
    }
}

/// Reads to the end of the stream, checking the pattern; returns the byte count.
async fn read_pattern<R: AsyncReadExt + Unpin>(r: &mut R) -> u64 {
    let mut buf = vec![0u8; 256 << 10];
    let mut got = 0u64;
    loop {
        let n = r.read(&mut buf).await.unwrap();
        if n == 0 {
            return got;
        }
        check(got, &buf[..n]);
        got += n as u64;
    }
}

async fn listener() -> (UdtListener, SocketAddr) {
    let l = UdtListener::bind("127.0.0.1:0").await.unwrap();
    let a = l.local_addr();
    (l, a)
}

#[test]
fn stream_transfer_is_byte_exact() {
    run(async {
        const TOTAL: u64 = 32 << 20;
        let (l, addr) = listener().await;
        let server = tokio::spawn(async move {
            let (mut s, peer) = l.accept().await.unwrap();
            assert_eq!(peer.ip(), addr.ip());
            read_pattern(&mut s).await
        });
        let mut c = UdtStream::connect(addr).await.unwrap();
        write_pattern(&mut c, TOTAL, 100_000).await;
        c.shutdown().await.unwrap();
        assert_eq!(server.await.unwrap(), TOTAL);
    });
}

#[test]
fn dropping_a_stream_delivers_its_queued_data() {
    run(async {
        const TOTAL: u64 = 8 << 20;
        let (l, addr) = listener().await;
        let server = tokio::spawn(async move {
            let (mut s, _) = l.accept().await.unwrap();
            read_pattern(&mut s).await
        });
        let mut c = UdtStream::connect(addr).await.unwrap();
        write_pattern(&mut c, TOTAL, 1 << 20).await;
        // Most of it is still in the send buffer: the drop must linger, not discard.
        drop(c);
        assert_eq!(server.await.unwrap(), TOTAL);
    });
}

/// Echo server over many connections at once; clients share one UDP port, so the whole test
/// runs on two I/O threads plus the runtime's two workers.
#[test]
fn many_concurrent_connections_on_one_runtime() {
    run(async {
        const CONNS: usize = 300;
        const BYTES: u64 = 20_000;
        let (l, addr) = listener().await;
        let server = tokio::spawn(async move {
            let mut tasks = Vec::new();
            for _ in 0..CONNS {
                let (s, _) = l.accept().await.unwrap();
                tasks.push(tokio::spawn(async move {
                    let (mut r, mut w) = s.into_split();
                    tokio::io::copy(&mut r, &mut w).await.unwrap()
                }));
            }
            let mut total = 0;
            for t in tasks {
                total += t.await.unwrap();
            }
            total
        });
        // One client port for all: the first connection opens it, the others join it.
        let bound = Builder::new().bind("127.0.0.1:0").unwrap();
        let b = Builder::new().local_addr(bound.local_addr());
        let mut clients = Vec::new();
        for _ in 0..CONNS {
            let b = b.clone();
            clients.push(tokio::spawn(async move {
                let s = UdtStream::connect_with(&b, addr).await.unwrap();
                let (mut r, mut w) = s.into_split();
                let writer = tokio::spawn(async move {
                    write_pattern(&mut w, BYTES, 4096).await;
                    w
                });
                let mut buf = vec![0u8; BYTES as usize];
                r.read_exact(&mut buf).await.unwrap();
                check(0, &buf);
                let mut w = writer.await.unwrap();
                w.shutdown().await.unwrap();
                assert_eq!(
                    r.read(&mut buf).await.unwrap(),
                    0,
                    "end of stream after shutdown"
                );
            }));
        }
        drop(bound);
        for c in clients {
            c.await.unwrap();
        }
        assert_eq!(server.await.unwrap(), CONNS as u64 * BYTES);
    });
}

#[test]
fn read_timeout_through_tokio_then_the_stream_still_works() {
    run(async {
        let (l, addr) = listener().await;
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let server = tokio::spawn(async move {
            let (mut s, _) = l.accept().await.unwrap();
            rx.await.unwrap();
            s.write_all(b"late").await.unwrap();
            s.shutdown().await.unwrap();
        });
        let mut c = UdtStream::connect(addr).await.unwrap();
        let mut buf = [0u8; 16];
        let r = tokio::time::timeout(Duration::from_millis(200), c.read(&mut buf)).await;
        assert!(r.is_err(), "nothing was sent: the read must time out");
        tx.send(()).unwrap();
        let mut got = Vec::new();
        c.read_to_end(&mut got).await.unwrap();
        assert_eq!(got, b"late");
        server.await.unwrap();
    });
}

/// A read cancelled by `select!` consumes nothing: every byte reaches a later read.
#[test]
fn cancelled_reads_lose_no_data() {
    run(async {
        const TOTAL: u64 = 4 << 20;
        let (l, addr) = listener().await;
        let server = tokio::spawn(async move {
            let (mut s, _) = l.accept().await.unwrap();
            write_pattern(&mut s, TOTAL, 64 << 10).await;
            s.shutdown().await.unwrap();
        });
        let mut c = UdtStream::connect(addr).await.unwrap();
        let mut buf = vec![0u8; 64 << 10];
        let mut got = 0u64;
        let mut cancelled = 0u32;
        loop {
            // A timer that is often already due: many reads lose the race and are dropped.
            let tick = tokio::time::sleep(Duration::from_micros(50));
            tokio::select! {
                biased;
                _ = tick => { cancelled += 1; continue; }
                r = c.read(&mut buf) => {
                    let n = r.unwrap();
                    if n == 0 { break; }
                    check(got, &buf[..n]);
                    got += n as u64;
                }
            }
        }
        assert_eq!(got, TOTAL);
        eprintln!("{cancelled} reads cancelled");
        server.await.unwrap();
    });
}

/// An accept cancelled before a connection arrives leaves the listener usable, and one
/// cancelled while a connection waits does not lose it.
#[test]
fn cancelled_accept_loses_no_connection() {
    run(async {
        let (l, addr) = listener().await;
        let r = tokio::time::timeout(Duration::from_millis(100), l.accept()).await;
        assert!(r.is_err(), "no client yet: accept must time out");
        let c = UdtStream::connect(addr).await.unwrap();
        // The connection is queued now; a zero timeout polls accept once, which may or may
        // not get it — either way, the connection must come out exactly once.
        let first = tokio::time::timeout(Duration::ZERO, l.accept()).await;
        let (s, _) = match first {
            Ok(r) => r.unwrap(),
            Err(_) => l.accept().await.unwrap(),
        };
        assert_eq!(s.peer_addr().unwrap(), c.local_addr_for_test());
    });
}

/// A connect cancelled mid-handshake (the listener never answers) leaves nothing behind
/// that blocks: the runtime carries on.
#[test]
fn cancelled_connect_and_connect_timeout() {
    run(async {
        let port = std::net::UdpSocket::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
        let r = tokio::time::timeout(Duration::from_millis(100), UdtStream::connect(addr)).await;
        assert!(r.is_err(), "nobody listens: connect must still be waiting");
        let b = Builder::new().connect_timeout(Duration::from_millis(500));
        match UdtStream::connect_with(&b, addr).await {
            Err(Error::Connect(udt_proto::ConnectError::TimedOut)) => {}
            other => panic!("expected a connect timeout, got {other:?}"),
        }
    });
}

#[test]
fn messages_keep_their_boundaries() {
    run(async {
        let b = Builder::new().kind(SocketKind::Message);
        let l = UdtListener::bind_with(&b, "127.0.0.1:0", 16).await.unwrap();
        let addr = l.local_addr();
        let sizes: Vec<usize> = (0..200).map(|k| 1 + (k * 7919) % 20_000).collect();
        let expect = sizes.clone();
        let server = tokio::spawn(async move {
            let (m, _) = l.accept_msg().await.unwrap();
            let mut buf = vec![0u8; 32_000];
            for (k, &len) in expect.iter().enumerate() {
                let r = m.recv_msg(&mut buf).await.unwrap();
                assert_eq!(r.msg_len, len, "message {k}");
                assert_eq!(r.copied, len);
                assert!(
                    buf[..len].iter().all(|&x| x == k as u8),
                    "message {k} content"
                );
            }
            // A message larger than the buffer is cut, and its length told.
            let r = m.recv_msg(&mut buf[..10]).await.unwrap();
            assert_eq!((r.copied, r.msg_len), (10, 5000));
            // The peer closed: no message is left.
            assert!(matches!(
                m.recv_msg(&mut buf).await,
                Err(Error::ConnectionLost)
            ));
        });
        let m = UdtMessageSocket::connect(addr).await.unwrap();
        for (k, &len) in sizes.iter().enumerate() {
            m.send_msg(&vec![k as u8; len], None, true).await.unwrap();
        }
        m.send_msg(&[7u8; 5000], None, true).await.unwrap();
        m.close().await.unwrap();
        assert!(matches!(
            m.send_msg(b"after", None, true).await,
            Err(Error::Closed)
        ));
        server.await.unwrap();
    });
}

/// Sends and receives of messages cancelled by timeouts neither lose nor duplicate any.
#[test]
fn cancelled_message_calls_lose_nothing() {
    run(async {
        let b = Builder::new()
            .kind(SocketKind::Message)
            .send_buffer_pkts(32);
        let l = UdtListener::bind_with(&b, "127.0.0.1:0", 16).await.unwrap();
        let addr = l.local_addr();
        const N: u32 = 300;
        let server = tokio::spawn(async move {
            let (m, _) = l.accept_msg().await.unwrap();
            let mut buf = [0u8; 4096];
            let mut next = 0u32;
            while next < N {
                match tokio::time::timeout(Duration::from_micros(200), m.recv_msg(&mut buf)).await {
                    Err(_) => continue,
                    Ok(r) => {
                        let r = r.unwrap();
                        let k = u32::from_le_bytes(buf[..4].try_into().unwrap());
                        assert_eq!(k, next, "messages in order, none lost or repeated");
                        assert_eq!(r.msg_len, 4000);
                        next += 1;
                    }
                }
            }
        });
        let m = UdtMessageSocket::connect_with(&b, addr).await.unwrap();
        let mut k = 0u32;
        let mut msg = vec![0u8; 4000];
        while k < N {
            msg[..4].copy_from_slice(&k.to_le_bytes());
            // The small send buffer fills: many sends time out and are retried.
            match tokio::time::timeout(Duration::from_micros(200), m.send_msg(&msg, None, true))
                .await
            {
                Err(_) => continue,
                Ok(r) => {
                    r.unwrap();
                    k += 1;
                }
            }
        }
        server.await.unwrap();
        m.close().await.unwrap();
    });
}

/// A message that could never fit the send buffer is a typed error at once, not a task that
/// waits forever for space.
#[test]
fn a_message_larger_than_the_send_buffer_is_refused() {
    run(async {
        let b = Builder::new().kind(SocketKind::Message);
        let l = UdtListener::bind_with(&b, "127.0.0.1:0", 4).await.unwrap();
        let addr = l.local_addr();
        let acc = tokio::spawn(async move { l.accept_msg().await.unwrap().0 });
        let small = b.clone().send_buffer_pkts(8);
        let m = UdtMessageSocket::connect_with(&small, addr).await.unwrap();
        let _peer = acc.await.unwrap();
        assert!(matches!(
            m.send_msg(&vec![0u8; 100_000], None, true).await,
            Err(Error::MessageTooLarge)
        ));
        // The socket is still usable.
        m.send_msg(b"fits", None, true).await.unwrap();
    });
}

#[test]
fn accept_any_serves_both_kinds() {
    run(async {
        let b = Builder::new().accept_any_kind(true);
        let l = UdtListener::bind_with(&b, "127.0.0.1:0", 16).await.unwrap();
        let addr = l.local_addr();
        let server = tokio::spawn(async move {
            for _ in 0..2 {
                match l.accept_any().await.unwrap().0 {
                    Accepted::Stream(mut s) => {
                        s.write_all(b"stream").await.unwrap();
                        s.shutdown().await.unwrap();
                    }
                    Accepted::Message(m) => {
                        m.send_msg(b"message", None, true).await.unwrap();
                        m.close().await.unwrap();
                    }
                }
            }
        });
        let mut s = UdtStream::connect(addr).await.unwrap();
        let mut got = Vec::new();
        s.read_to_end(&mut got).await.unwrap();
        assert_eq!(got, b"stream");
        let m = UdtMessageSocket::connect(addr).await.unwrap();
        let mut buf = [0u8; 64];
        let r = m.recv_msg(&mut buf).await.unwrap();
        assert_eq!(&buf[..r.copied], b"message");
        server.await.unwrap();
    });
}

#[test]
fn rendezvous_connects_both_sides() {
    run(async {
        // Hold both ports first, so that each side knows the other's; the rendezvous sockets
        // join them (reuse address).
        let h1 = Builder::new().bind("127.0.0.1:0").unwrap();
        let h2 = Builder::new().bind("127.0.0.1:0").unwrap();
        let (a1, a2) = (h1.local_addr(), h2.local_addr());
        let side2 = tokio::spawn(async move {
            let mut s = UdtStream::rendezvous(a2, a1).await.unwrap();
            let mut got = Vec::new();
            s.read_to_end(&mut got).await.unwrap();
            got
        });
        let mut s = UdtStream::rendezvous(a1, a2).await.unwrap();
        assert!(s.socket().is_rendezvous());
        s.write_all(b"met halfway").await.unwrap();
        s.shutdown().await.unwrap();
        assert_eq!(side2.await.unwrap(), b"met halfway");
        drop((h1, h2));
    });
}

#[test]
fn message_rendezvous_connects_both_sides() {
    run(async {
        let h1 = Builder::new().bind("127.0.0.1:0").unwrap();
        let h2 = Builder::new().bind("127.0.0.1:0").unwrap();
        let (a1, a2) = (h1.local_addr(), h2.local_addr());
        let side2 = tokio::spawn(async move {
            let m = UdtMessageSocket::rendezvous(a2, a1).await.unwrap();
            let mut buf = [0u8; 64];
            let r = m.recv_msg(&mut buf).await.unwrap();
            buf[..r.copied].to_vec()
        });
        let m = UdtMessageSocket::rendezvous(a1, a2).await.unwrap();
        assert_eq!(m.socket().kind(), SocketKind::Message);
        m.send_msg(b"rendezvous message", None, true).await.unwrap();
        assert_eq!(side2.await.unwrap(), b"rendezvous message");
        m.close().await.unwrap();
        drop((h1, h2));
    });
}

#[test]
fn split_halves_work_from_separate_tasks_and_reunite() {
    run(async {
        const TOTAL: u64 = 4 << 20;
        let (l, addr) = listener().await;
        let server = tokio::spawn(async move {
            let (s, _) = l.accept().await.unwrap();
            let (mut r, mut w) = s.into_split();
            tokio::io::copy(&mut r, &mut w).await.unwrap()
        });
        let c = UdtStream::connect(addr).await.unwrap();
        let (mut r, mut w) = c.into_split();
        let reader = tokio::spawn(async move {
            let mut buf = vec![0u8; TOTAL as usize];
            r.read_exact(&mut buf).await.unwrap();
            check(0, &buf);
            r
        });
        write_pattern(&mut w, TOTAL, 50_000).await;
        let r = reader.await.unwrap();
        let mut s = r.reunite(w).unwrap();
        s.shutdown().await.unwrap();
        assert_eq!(server.await.unwrap(), TOTAL);
    });
}

#[test]
fn halves_of_different_streams_do_not_reunite() {
    run(async {
        let (l, addr) = listener().await;
        let acc = tokio::spawn(async move {
            let a = l.accept().await.unwrap();
            let b = l.accept().await.unwrap();
            (a, b)
        });
        let (r1, _w1) = UdtStream::connect(addr).await.unwrap().into_split();
        let (_r2, w2) = UdtStream::connect(addr).await.unwrap().into_split();
        assert!(r1.reunite(w2).is_err());
        drop(acc.await.unwrap());
    });
}

/// Async server, blocking client (a plain thread), and the other way round.
#[test]
fn interop_with_the_blocking_api() {
    run(async {
        const TOTAL: u64 = 8 << 20;
        // Blocking client → async server.
        let (l, addr) = listener().await;
        let client = std::thread::spawn(move || {
            use std::io::Write;
            let mut s = udt::Socket::connect(addr).unwrap();
            let mut buf = vec![0u8; 1 << 20];
            let mut sent = 0;
            while sent < TOTAL {
                pattern(sent, &mut buf);
                s.write_all(&buf).unwrap();
                sent += buf.len() as u64;
            }
            s.close().unwrap();
        });
        let (mut s, _) = l.accept().await.unwrap();
        assert_eq!(read_pattern(&mut s).await, TOTAL);
        tokio::task::spawn_blocking(move || client.join().unwrap())
            .await
            .unwrap();

        // Async client → blocking server, whose accepted socket is then driven async too.
        let bl = udt::Listener::bind("127.0.0.1:0").unwrap();
        let baddr = bl.local_addr();
        let server = std::thread::spawn(move || {
            use std::io::Read;
            let (mut s, _) = bl.accept().unwrap();
            let mut got = Vec::new();
            s.read_to_end(&mut got).unwrap();
            got.len() as u64
        });
        let mut c = UdtStream::connect(baddr).await.unwrap();
        write_pattern(&mut c, TOTAL, 1 << 20).await;
        c.shutdown().await.unwrap();
        let got = tokio::task::spawn_blocking(move || server.join().unwrap())
            .await
            .unwrap();
        assert_eq!(got, TOTAL);

        // A blocking socket handed over to async.
        let (l, addr) = listener().await;
        let acc = tokio::spawn(async move { l.accept().await.unwrap().0 });
        let blocking = tokio::task::spawn_blocking(move || udt::Socket::connect(addr).unwrap())
            .await
            .unwrap();
        let mut c = UdtStream::from_socket(blocking).unwrap();
        let mut s = acc.await.unwrap();
        c.write_all(b"handed over").await.unwrap();
        c.shutdown().await.unwrap();
        let mut got = Vec::new();
        s.read_to_end(&mut got).await.unwrap();
        assert_eq!(got, b"handed over");
    });
}

#[test]
fn wrong_kinds_are_typed_errors() {
    run(async {
        let b = Builder::new().kind(SocketKind::Message);
        let blocking_msg = {
            let l = udt::Builder::new()
                .kind(SocketKind::Message)
                .listen("127.0.0.1:0", 4)
                .unwrap();
            let addr = l.local_addr();
            let acc = std::thread::spawn(move || l.accept().unwrap().0);
            let m = tokio::task::spawn_blocking(move || b.connect(addr).unwrap())
                .await
                .unwrap();
            drop(acc.join().unwrap());
            m
        };
        assert!(matches!(
            UdtStream::from_socket(blocking_msg),
            Err(Error::WrongKind(SocketKind::Message))
        ));
    });
}

#[test]
fn sendfile_and_recvfile_on_tokio_files() {
    run(async {
        const LEN: u64 = 3 * (1 << 20) + 12_345;
        const OFFSET: u64 = 1000;
        let dir = std::env::temp_dir();
        let tag = format!("{}-{:?}", std::process::id(), std::thread::current().id());
        let src_path = dir.join(format!("udt-tokio-src-{tag}"));
        let dst_path = dir.join(format!("udt-tokio-dst-{tag}"));
        let mut data = vec![0u8; (OFFSET + LEN) as usize];
        pattern(0, &mut data);
        tokio::fs::write(&src_path, &data).await.unwrap();

        let (l, addr) = listener().await;
        let dst = dst_path.clone();
        let server = tokio::spawn(async move {
            let (mut s, _) = l.accept().await.unwrap();
            let mut f = tokio::fs::File::create(&dst).await.unwrap();
            s.recvfile(&mut f, 0, LEN).await.unwrap()
        });
        let mut c = UdtStream::connect(addr).await.unwrap();
        let mut f = tokio::fs::File::open(&src_path).await.unwrap();
        assert_eq!(c.sendfile(&mut f, OFFSET, LEN).await.unwrap(), LEN);
        // Past the end of the file: a typed file error, not a panic or a hang.
        match c.sendfile(&mut f, OFFSET + LEN - 10, 20).await {
            Err(Error::File(e)) => assert_eq!(e.kind(), std::io::ErrorKind::UnexpectedEof),
            other => panic!("expected an end-of-file error, got {other:?}"),
        }
        c.shutdown().await.unwrap();
        assert_eq!(server.await.unwrap(), LEN);
        let got = tokio::fs::read(&dst_path).await.unwrap();
        assert_eq!(got.len() as u64, LEN);
        assert!(got == data[OFFSET as usize..], "file content differs");
        let _ = tokio::fs::remove_file(&src_path).await;
        let _ = tokio::fs::remove_file(&dst_path).await;
    });
}

#[test]
fn recvfile_reports_a_peer_that_closes_early() {
    run(async {
        let dir = std::env::temp_dir();
        let path = dir.join(format!("udt-tokio-short-{}", std::process::id()));
        let (l, addr) = listener().await;
        let p = path.clone();
        let server = tokio::spawn(async move {
            let (mut s, _) = l.accept().await.unwrap();
            let mut f = tokio::fs::File::create(&p).await.unwrap();
            s.recvfile(&mut f, 0, 1 << 20).await
        });
        let mut c = UdtStream::connect(addr).await.unwrap();
        c.write_all(&[5u8; 1000]).await.unwrap();
        c.shutdown().await.unwrap();
        assert!(matches!(server.await.unwrap(), Err(Error::ConnectionLost)));
        // What did arrive was written.
        assert_eq!(tokio::fs::read(&path).await.unwrap(), vec![5u8; 1000]);
        let _ = tokio::fs::remove_file(&path).await;
    });
}

#[test]
fn writes_after_shutdown_fail_and_reads_end() {
    run(async {
        let (l, addr) = listener().await;
        let server = tokio::spawn(async move {
            let (mut s, _) = l.accept().await.unwrap();
            let mut got = Vec::new();
            s.read_to_end(&mut got).await.unwrap();
            got
        });
        let mut c = UdtStream::connect(addr).await.unwrap();
        c.write_all(b"x").await.unwrap();
        c.shutdown().await.unwrap();
        let e = c.write_all(b"y").await.unwrap_err();
        assert_eq!(
            udt::Error::Closed.to_string(),
            e.to_string(),
            "a write after shutdown reports the closed socket"
        );
        let mut buf = [0u8; 8];
        assert_eq!(c.read(&mut buf).await.unwrap(), 0);
        assert_eq!(server.await.unwrap(), b"x");
    });
}

#[test]
fn peer_drop_wakes_a_blocked_reader_and_writer() {
    run(async {
        let b = Builder::new().send_buffer_pkts(16);
        let l = UdtListener::bind_with(&b, "127.0.0.1:0", 4).await.unwrap();
        let addr = l.local_addr();
        let c = UdtStream::connect(addr).await.unwrap();
        let (s, _) = l.accept().await.unwrap();
        let (mut r, mut w) = s.into_split();
        let reader = tokio::spawn(async move {
            let mut buf = [0u8; 64];
            r.read(&mut buf).await
        });
        // The writer fills the 16-packet send buffer, and the peer never reads: it blocks.
        let writer = tokio::spawn(async move {
            let chunk = vec![1u8; 64 << 10];
            loop {
                if let Err(e) = w.write_all(&chunk).await {
                    return e;
                }
            }
        });
        tokio::time::sleep(Duration::from_millis(100)).await;
        // The client goes away without lingering: both waiting tasks must wake.
        c.socket().set_linger(None).unwrap();
        drop(c);
        assert_eq!(reader.await.unwrap().unwrap(), 0, "the reader sees the end");
        let e = writer.await.unwrap();
        assert!(!e.to_string().is_empty());
    });
}

trait LocalAddrForTest {
    fn local_addr_for_test(&self) -> SocketAddr;
}

impl LocalAddrForTest for UdtStream {
    /// The client's address as the server sees it: 0.0.0.0 is replaced by loopback.
    fn local_addr_for_test(&self) -> SocketAddr {
        let a = self.local_addr();
        SocketAddr::new("127.0.0.1".parse().unwrap(), a.port())
    }
}

#[test]
fn connections_share_one_client_port_and_its_io_thread() {
    run(async {
        let (l, addr) = listener().await;
        let l = Arc::new(l);
        let acc = {
            let l = Arc::clone(&l);
            tokio::spawn(async move {
                let mut v = Vec::new();
                for _ in 0..20 {
                    v.push(l.accept().await.unwrap().0);
                }
                v
            })
        };
        let bound = Builder::new().bind("127.0.0.1:0").unwrap();
        let port = bound.local_addr();
        let b = Builder::new().local_addr(port);
        let mut v = Vec::new();
        for _ in 0..20 {
            let s = UdtStream::connect_with(&b, addr).await.unwrap();
            assert_eq!(s.local_addr(), port);
            v.push(s);
        }
        let accepted = acc.await.unwrap();
        assert_eq!(accepted.len(), 20);
    });
}

/// The poller's readiness descriptor under tokio's `AsyncFd`: a task sleeps until a watched
/// blocking-API socket becomes readable, and sleeps again once its data is consumed.
#[test]
fn async_poller_wakes_on_the_readiness_descriptor() {
    run(async {
        let l = udt::Listener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr();
        let client = tokio::task::spawn_blocking(move || udt::Socket::connect(addr).unwrap());
        let (server, _) = tokio::task::spawn_blocking(move || l.accept().unwrap())
            .await
            .unwrap();
        let client = client.await.unwrap();
        let poller = udt::tokio::AsyncPoller::new(udt::Poller::new().unwrap()).unwrap();
        poller
            .poller()
            .add(&server, udt::Readiness::READ, 7)
            .unwrap();
        let mut events = Vec::new();
        let idle = tokio::time::timeout(Duration::from_millis(150), poller.wait(&mut events)).await;
        assert!(idle.is_err(), "nothing to read yet: wait must sleep");

        client.send(b"ping").unwrap();
        let n = poller.wait(&mut events).await.unwrap();
        assert_eq!(n, 1);
        assert_eq!(events[0].token, 7);
        assert!(events[0].readiness.is_readable());
        // Level-triggered: still ready until read.
        assert_eq!(poller.wait(&mut events).await.unwrap(), 1);
        let mut buf = [0u8; 16];
        assert_eq!(server.try_recv(&mut buf).unwrap(), 4);
        let idle = tokio::time::timeout(Duration::from_millis(150), poller.wait(&mut events)).await;
        assert!(idle.is_err(), "data consumed: wait must sleep again");

        client.send(b"pong").unwrap();
        assert_eq!(poller.wait(&mut events).await.unwrap(), 1);
    });
}
