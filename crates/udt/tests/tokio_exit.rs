//! A program that exits right after `shutdown().await` still ends its peer's stream: the
//! async close returns only once the Shutdown datagram has been handed to the kernel (as the
//! blocking `close` does). The client is this test binary run again as a child process, so
//! that its exit is a real process exit.
#![cfg(feature = "tokio")]

use std::process::{Command, Stdio};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use udt::tokio::{UdtListener, UdtStream};

/// Where the child connects to; its presence makes the helper test act.
const ADDR_VAR: &str = "UDT_TOKIO_EXIT_TEST_ADDR";

/// Bytes the child sends.
const BYTES: usize = 1 << 20;

#[test]
fn exiting_right_after_shutdown_ends_the_peers_stream() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let l = UdtListener::bind("127.0.0.1:0").await.unwrap();
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args([
                "child_connects_sends_shuts_down_and_exits",
                "--exact",
                "--ignored",
            ])
            .env(ADDR_VAR, l.local_addr().to_string())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let (mut s, _) = tokio::time::timeout(Duration::from_secs(20), l.accept())
            .await
            .expect("the child did not connect")
            .unwrap();
        // Without the Shutdown, the end would come only from the peer-silence timeout
        // (about 5 s and 16 expiries, as a lost connection): a much shorter limit tells apart.
        let mut got = Vec::new();
        let r = tokio::time::timeout(Duration::from_secs(4), s.read_to_end(&mut got)).await;
        let status = child.wait().unwrap();
        assert!(status.success(), "child failed: {status}");
        let n = r
            .expect("no end of stream within 4 s: the child's Shutdown never left")
            .expect("the stream ended with an error, not with the child's Shutdown");
        assert_eq!(n, BYTES);
        assert!(got.iter().all(|&b| b == 0xa5));
    });
}

/// The child side: does nothing unless started by the test above.
#[test]
#[ignore = "helper process of exiting_right_after_shutdown_ends_the_peers_stream"]
fn child_connects_sends_shuts_down_and_exits() {
    let Ok(addr) = std::env::var(ADDR_VAR) else {
        return;
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let mut s = UdtStream::connect(addr.as_str()).await.unwrap();
        s.write_all(&vec![0xa5u8; BYTES]).await.unwrap();
        s.shutdown().await.unwrap();
    });
    // At once, as a program that returns from main: no destructor, no grace period.
    std::process::exit(0);
}
