//! The async API's thread count does not grow with connections: a runtime's workers plus one
//! I/O thread per UDP port. Alone in its test binary, so that no other test's threads count.
#![cfg(feature = "tokio")]

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use udt::tokio::{UdtListener, UdtStream};

/// Threads of this process, from `/proc/self/status`.
fn threads() -> usize {
    let s = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = s.lines().find(|l| l.starts_with("Threads:")).unwrap();
    line["Threads:".len()..].trim().parse().unwrap()
}

/// Opens `n` connections from `builder`'s port to `server`, each echoing a few bytes.
async fn open(n: usize, builder: &udt::Builder, server: std::net::SocketAddr) -> Vec<UdtStream> {
    let tasks: Vec<_> = (0..n)
        .map(|k| {
            let b = builder.clone();
            tokio::spawn(async move {
                let mut s = UdtStream::connect_with(&b, server).await.unwrap();
                let msg = (k as u32).to_le_bytes();
                s.write_all(&msg).await.unwrap();
                let mut back = [0u8; 4];
                s.read_exact(&mut back).await.unwrap();
                assert_eq!(back, msg);
                s
            })
        })
        .collect();
    let mut v = Vec::with_capacity(n);
    for t in tasks {
        v.push(t.await.unwrap());
    }
    v
}

#[test]
fn threads_stay_constant_from_100_to_2000_connections() {
    // The harness's threads (its main thread and this test's).
    let before = threads();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        tokio::time::timeout(Duration::from_secs(120), async {
            let l = UdtListener::bind_with(&udt::Builder::new(), "127.0.0.1:0", 4096)
                .await
                .unwrap();
            let server = l.local_addr();
            tokio::spawn(async move {
                loop {
                    let (s, _) = l.accept().await.unwrap();
                    tokio::spawn(async move {
                        let (mut r, mut w) = s.into_split();
                        let _ = tokio::io::copy(&mut r, &mut w).await;
                    });
                }
            });
            let port = udt::Builder::new().bind("127.0.0.1:0").unwrap();
            let b = udt::Builder::new().local_addr(port.local_addr());
            let mut all = open(100, &b, server).await;
            let at_100 = threads();
            all.extend(open(1900, &b, server).await);
            let at_2000 = threads();
            assert_eq!(all.len(), 2000);
            assert_eq!(
                at_100, at_2000,
                "threads grew with connections: {at_100} at 100, {at_2000} at 2000"
            );
            // Two workers, two I/O threads (the listener's port and the clients').
            assert_eq!(at_2000, before + 4, "2 runtime workers + 2 I/O threads");
        })
        .await
        .expect("ran over its time limit")
    });
}
