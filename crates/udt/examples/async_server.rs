//! An echo server on the async API that serves many clients at once, on one UDP port and
//! one runtime.
//!
//! ```text
//! cargo run --release -p udt --features tokio --example async_server                  # demo
//! cargo run --release -p udt --features tokio --example async_server -- --listen 0.0.0.0:9000
//! ```
//!
//! Without `--listen` it runs a demonstration in one process: the server on 127.0.0.1 (an
//! ephemeral port) and `--clients N` (default 200) clients at once, all from one shared UDP
//! port, each sending 64 kB and checking the echo; it prints what it did and the process's
//! thread count. With `--listen ADDR` it serves until interrupted.

use std::net::SocketAddr;
use std::time::Instant;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use udt::tokio::{UdtListener, UdtStream};

/// Bytes each demo client sends and expects back.
const DEMO_BYTES: usize = 64 << 10;

/// Serves every connection `listener` accepts in a task of its own: echoes what it reads
/// until the client closes.
async fn serve(listener: UdtListener) {
    loop {
        let (stream, peer) = match listener.accept().await {
            Ok(c) => c,
            // The listener itself is gone: nothing more will come.
            Err(udt::Error::Closed | udt::Error::NotListening) => return,
            // One connection that could not be handed out (it broke while queued): the
            // others are unaffected.
            Err(e) => {
                eprintln!("accept failed: {e}");
                continue;
            }
        };
        tokio::spawn(async move {
            let (mut r, mut w) = stream.into_split();
            if let Err(e) = tokio::io::copy(&mut r, &mut w).await {
                eprintln!("{peer}: {e}");
            }
            // Dropping both halves closes the connection gracefully.
        });
    }
}

/// One demo client: sends a pattern, reads the echo, checks it.
async fn client(builder: udt::Builder, server: SocketAddr, k: usize) -> udt::Result<()> {
    let stream = UdtStream::connect_with(&builder, server).await?;
    let (mut r, mut w) = stream.into_split();
    let data: Vec<u8> = (0..DEMO_BYTES).map(|i| ((i + k) % 251) as u8).collect();
    let expect = data.clone();
    let writer = tokio::spawn(async move { w.write_all(&data).await.map(|()| w) });
    let mut echo = vec![0u8; DEMO_BYTES];
    r.read_exact(&mut echo).await?;
    let mut w = writer
        .await
        .map_err(|e| udt::Error::Io(std::io::Error::other(e)))??;
    w.shutdown().await?;
    if echo != expect {
        return Err(udt::Error::Io(std::io::Error::other("echo differs")));
    }
    Ok(())
}

fn threads() -> String {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Threads:"))
                .map(|l| l["Threads:".len()..].trim().to_string())
        })
        .unwrap_or_else(|| "?".into())
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let mut listen: Option<String> = None;
    let mut clients = 200usize;
    while let Some(flag) = args.next() {
        let value = args.next().ok_or(format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--listen" => listen = Some(value),
            "--clients" => clients = value.parse()?,
            _ => return Err(format!("unknown option {flag}").into()),
        }
    }
    if let Some(addr) = listen {
        let listener = UdtListener::bind(addr.as_str()).await?;
        println!("echo server on {}", listener.local_addr());
        serve(listener).await;
        return Ok(());
    }

    let listener = UdtListener::bind_with(&udt::Builder::new(), "127.0.0.1:0", 4096).await?;
    let server = listener.local_addr();
    println!("echo server on {server}; threads: {}", threads());
    tokio::spawn(serve(listener));

    // All clients share one UDP port (and so one I/O thread): hold it, then bind to it.
    let port = udt::Builder::new().bind("127.0.0.1:0")?;
    let builder = udt::Builder::new().local_addr(port.local_addr());
    let start = Instant::now();
    let tasks: Vec<_> = (0..clients)
        .map(|k| tokio::spawn(client(builder.clone(), server, k)))
        .collect();
    let mut ok = 0;
    for t in tasks {
        match t.await? {
            Ok(()) => ok += 1,
            Err(e) => eprintln!("client failed: {e}"),
        }
    }
    println!(
        "{ok}/{clients} clients echoed {DEMO_BYTES} bytes each in {:.2} s; threads: {}",
        start.elapsed().as_secs_f64(),
        threads()
    );
    if ok == clients {
        Ok(())
    } else {
        Err("some clients failed".into())
    }
}
