//! The pipelined `Socket::sendfile_blocks` / `Socket::recvfile_blocks` on loopback: exact bytes
//! at the right offsets, the consumer sees exactly the bytes queued or written, in order, and
//! every failure (file too short, write refused, peer gone, consumer panics) ends the pipeline
//! with the right error and no hang.

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::FileExt;
use std::panic::AssertUnwindSafe;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use proptest::prelude::*;
use udt::FILE_BLOCK_SIZE as BLOCK;

/// A file under the system temporary directory, removed on drop.
struct TempFile {
    path: PathBuf,
}

impl TempFile {
    fn new(tag: &str) -> TempFile {
        static N: AtomicU32 = AtomicU32::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        let path =
            std::env::temp_dir().join(format!("udt-pipe-test-{}-{tag}-{n}", std::process::id()));
        TempFile { path }
    }

    fn with(tag: &str, bytes: &[u8]) -> TempFile {
        let t = TempFile::new(tag);
        t.open_rw().write_all(bytes).unwrap();
        t
    }

    fn open_rw(&self) -> File {
        OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&self.path)
            .unwrap()
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Deterministic, non-periodic content (an LCG), so a shifted or repeated block shows.
fn content(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            x = x
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (x >> 56) as u8
        })
        .collect()
}

/// A connected pair on loopback: (client, server side).
fn pair() -> (udt::Socket, udt::Socket) {
    let listener = udt::Listener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr();
    let t = std::thread::spawn(move || listener.accept().unwrap().0);
    let c = udt::Socket::connect(addr).unwrap();
    let s = t.join().unwrap();
    // A broken test must fail, not hang the suite.
    for sock in [&c, &s] {
        sock.set_read_timeout(Some(Duration::from_secs(30)))
            .unwrap();
        sock.set_write_timeout(Some(Duration::from_secs(30)))
            .unwrap();
    }
    (c, s)
}

/// Sends `src[offset..offset + len]` with `sendfile_blocks` and receives it with
/// `recvfile_blocks` at `dst_offset` of a file whose first bytes are 0xEE; checks that each
/// side's consumer saw exactly the range, in order, and returns the received file.
fn round_trip(src: &[u8], offset: u64, len: u64, dst_offset: u64) -> Vec<u8> {
    let src_file = TempFile::with("src", src);
    let dst_file = TempFile::new("dst");
    let dst = dst_file.open_rw();
    dst.write_all_at(&vec![0xEE; dst_offset as usize], 0)
        .unwrap();
    let (c, s) = pair();
    let receiver = std::thread::spawn(move || {
        let mut seen = Vec::new();
        let n = s
            .recvfile_blocks(&dst, dst_offset, len, |b| seen.extend_from_slice(b))
            .unwrap();
        // Nothing follows the range: the sender closes, so the stream ends here.
        let mut rest = Vec::new();
        let mut s = s;
        s.read_to_end(&mut rest).unwrap();
        assert!(rest.is_empty(), "recvfile_blocks read past its length");
        (n, seen)
    });
    let f = File::open(&src_file.path).unwrap();
    let mut seen = Vec::new();
    let sent = c
        .sendfile_blocks(&f, offset, len, |b| seen.extend_from_slice(b))
        .unwrap();
    c.close().unwrap();
    let range = &src[offset as usize..(offset + len) as usize];
    assert_eq!(sent, len);
    assert!(seen == range, "the sender's consumer saw other bytes");
    let (n, seen) = receiver.join().unwrap();
    assert_eq!(n, len);
    assert!(seen == range, "the receiver's consumer saw other bytes");
    std::fs::read(&dst_file.path).unwrap()
}

fn check(len: usize, offset: usize, dst_offset: usize, seed: u64) {
    let src = content(offset + len + 17, seed);
    let out = round_trip(&src, offset as u64, len as u64, dst_offset as u64);
    assert_eq!(out.len(), dst_offset + len);
    assert!(
        out[..dst_offset].iter().all(|&b| b == 0xEE),
        "prefix overwritten"
    );
    assert!(
        out[dst_offset..] == src[offset..offset + len],
        "received bytes differ"
    );
}

#[test]
fn lengths_around_the_block_size() {
    for (i, len) in [0, 1, BLOCK - 1, BLOCK, BLOCK + 1, 2 * BLOCK]
        .into_iter()
        .enumerate()
    {
        check(len, 0, 0, i as u64);
    }
}

#[test]
fn several_blocks_from_an_offset_to_an_offset() {
    // More blocks than buffers in the pool, so every buffer is recycled more than once.
    check(
        (udt::PIPELINE_BLOCKS * 3 + 1) * BLOCK + 1456 * 7 + 13,
        4099,
        12_345,
        7,
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// Random lengths (around and across block boundaries) and offsets: each side's consumer
    /// sees exactly the range, so a hash computed by it matches the file's.
    #[test]
    fn random_ranges_arrive_whole(
        blocks in 0usize..5,
        extra in prop_oneof![Just(0usize), Just(1), Just(BLOCK - 1), 0..BLOCK],
        offset in prop_oneof![Just(0usize), 0..3 * BLOCK],
        dst_offset in 0usize..100_000,
        seed in any::<u64>(),
    ) {
        let len = (blocks * BLOCK + extra).min(5 * BLOCK);
        check(len, offset, dst_offset, seed);
    }
}

#[test]
fn a_file_shorter_than_the_range_fails_after_the_whole_blocks() {
    // 2.5 blocks in the file, 4 asked for: the two whole blocks go, the third cannot be read.
    let data = content(2 * BLOCK + BLOCK / 2, 11);
    let src = TempFile::with("short", &data);
    let (c, s) = pair();
    let receiver = std::thread::spawn(move || {
        let mut got = Vec::new();
        let mut s = s;
        let _ = s.read_to_end(&mut got);
        got
    });
    let f = File::open(&src.path).unwrap();
    let mut seen = 0u64;
    let err = c
        .sendfile_blocks(&f, 0, 4 * BLOCK as u64, |b| seen += b.len() as u64)
        .unwrap_err();
    match err {
        udt::Error::File(e) => assert_eq!(e.kind(), std::io::ErrorKind::UnexpectedEof),
        other => panic!("unexpected error {other:?}"),
    }
    assert_eq!(
        seen,
        2 * BLOCK as u64,
        "exactly the queued bytes were reported"
    );
    c.close().unwrap();
    let got = receiver.join().unwrap();
    assert!(
        got == data[..2 * BLOCK],
        "the peer got exactly the queued bytes"
    );
}

#[test]
fn a_peer_that_goes_away_fails_the_sender_with_exact_accounting() {
    // Far more than the send and receive buffers hold, so the sender must still be queueing
    // when the close arrives; sparse, so it costs no disk.
    let len = 1024 * BLOCK as u64;
    let src = TempFile::new("gone");
    src.open_rw().set_len(len).unwrap();
    let (c, s) = pair();
    let receiver = std::thread::spawn(move || {
        let mut buf = vec![0; BLOCK + BLOCK / 2];
        let mut s = s;
        s.read_exact(&mut buf).unwrap();
        s.close().unwrap();
        buf.len() as u64
    });
    let f = File::open(&src.path).unwrap();
    let mut seen = 0u64;
    let r = c.sendfile_blocks(&f, 0, len, |b| seen += b.len() as u64);
    let read = receiver.join().unwrap();
    assert!(r.is_err(), "the peer left after {read} bytes, got {r:?}");
    assert!(seen >= read && seen < len, "seen {seen}");
}

#[test]
fn the_receiver_keeps_what_arrived_when_the_peer_closes_early() {
    let (c, s) = pair();
    let dst_file = TempFile::new("early");
    let dst = dst_file.open_rw();
    let receiver = std::thread::spawn(move || {
        let mut seen = 0u64;
        let r = s.recvfile_blocks(&dst, 0, 8 * BLOCK as u64, |b| seen += b.len() as u64);
        (r.map_err(|e| e.to_string()), seen)
    });
    let data = content(2 * BLOCK + 70_001, 13);
    let mut c = c;
    c.write_all(&data).unwrap();
    c.close().unwrap();
    let (r, seen) = receiver.join().unwrap();
    assert!(r.is_err(), "a short stream must be an error, got {r:?}");
    assert_eq!(seen, data.len() as u64);
    assert!(std::fs::read(&dst_file.path).unwrap() == data);
}

/// Receives into `dst`, which refuses writes, while the peer sends 8 blocks; the write error
/// must come back (not the connection's), with nothing reported written.
fn refused_write(dst: File) {
    let (c, s) = pair();
    let data = content(8 * BLOCK, 14);
    let src = TempFile::with("src", &data);
    let sender = std::thread::spawn(move || {
        let f = File::open(&src.path).unwrap();
        // Fails or not depending on when the receiver's close arrives; either is fine.
        let _ = c.sendfile(&f, 0, data.len() as u64);
        let _ = c.close();
    });
    let mut seen = 0u64;
    let err = s
        .recvfile_blocks(&dst, 0, 8 * BLOCK as u64, |b| seen += b.len() as u64)
        .unwrap_err();
    assert!(matches!(err, udt::Error::File(_)), "{err:?}");
    assert_eq!(seen, 0);
    s.close().unwrap();
    sender.join().unwrap();
}

#[test]
fn a_write_to_a_read_only_file_fails_cleanly() {
    let t = TempFile::with("ro", b"");
    refused_write(File::open(&t.path).unwrap());
}

#[test]
fn a_full_disk_fails_cleanly() {
    let Ok(full) = OpenOptions::new().write(true).open("/dev/full") else {
        eprintln!("skipped: no /dev/full");
        return;
    };
    refused_write(full);
}

#[test]
fn a_consumer_that_panics_midway_stops_the_pipeline() {
    let data = content(16 * BLOCK, 15);
    let src = TempFile::with("panic", &data);
    let (c, s) = pair();
    let receiver = std::thread::spawn(move || {
        let mut got = Vec::new();
        let mut s = s;
        let _ = s.read_to_end(&mut got);
    });
    let f = File::open(&src.path).unwrap();
    let mut blocks = 0;
    let r = std::panic::catch_unwind(AssertUnwindSafe(|| {
        c.sendfile_blocks(&f, 0, data.len() as u64, |_| {
            blocks += 1;
            if blocks == 3 {
                panic!("consumer failed on purpose");
            }
        })
    }));
    assert!(r.is_err(), "the consumer's panic must reach the caller");
    c.close().unwrap();
    receiver.join().unwrap();

    // The same on the receiving side.
    let (c, s) = pair();
    let sender = std::thread::spawn(move || {
        let f = File::open(&src.path).unwrap();
        let _ = c.sendfile(&f, 0, data.len() as u64);
        let _ = c.close();
    });
    let dst_file = TempFile::new("panic-dst");
    let dst = dst_file.open_rw();
    let mut blocks = 0;
    let r = std::panic::catch_unwind(AssertUnwindSafe(|| {
        s.recvfile_blocks(&dst, 0, 16 * BLOCK as u64, |_| {
            blocks += 1;
            if blocks == 3 {
                panic!("consumer failed on purpose");
            }
        })
    }));
    assert!(r.is_err(), "the consumer's panic must reach the caller");
    s.close().unwrap();
    sender.join().unwrap();
}
