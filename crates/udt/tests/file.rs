//! `Socket::sendfile` / `Socket::recvfile` on loopback: exact bytes at the right offsets.

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};

/// A file under the system temporary directory, removed on drop.
struct TempFile {
    path: PathBuf,
}

impl TempFile {
    fn new(tag: &str) -> TempFile {
        static N: AtomicU32 = AtomicU32::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        let path =
            std::env::temp_dir().join(format!("udt-file-test-{}-{tag}-{n}", std::process::id()));
        TempFile { path }
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

/// Sends `src[offset..offset + len]` with `sendfile` and receives it with `recvfile` into a
/// file at `dst_offset`, whose bytes before it are pre-filled with 0xEE; returns the received
/// file's contents.
fn round_trip(src: &[u8], offset: u64, len: u64, dst_offset: u64) -> Vec<u8> {
    let src_file = TempFile::new("src");
    let dst_file = TempFile::new("dst");
    {
        let mut f = src_file.open_rw();
        f.write_all(src).unwrap();
    }
    let dst = dst_file.open_rw();
    dst.write_all_at(&vec![0xEE; dst_offset as usize], 0)
        .unwrap();

    let listener = udt::Listener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr();
    let receiver = std::thread::spawn(move || {
        let (conn, _) = listener.accept().unwrap();
        let mut seen = 0u64;
        let n = conn
            .recvfile_with(&dst, dst_offset, len, |b| seen += b.len() as u64)
            .unwrap();
        assert_eq!(seen, n, "on_block saw every written byte");
        // Nothing follows the range: the sender closes, so the stream ends here.
        let mut rest = Vec::new();
        let mut conn = conn;
        conn.read_to_end(&mut rest).unwrap();
        assert!(rest.is_empty(), "recvfile read past its length");
        n
    });
    let sock = udt::Socket::connect(addr).unwrap();
    let f = File::open(&src_file.path).unwrap();
    let mut seen = 0u64;
    let sent = sock
        .sendfile_with(&f, offset, len, |b| seen += b.len() as u64)
        .unwrap();
    assert_eq!((sent, seen), (len, len));
    sock.close().unwrap();
    assert_eq!(receiver.join().unwrap(), len);
    std::fs::read(&dst_file.path).unwrap()
}

#[test]
fn zero_bytes_move_nothing() {
    let src = content(100, 1);
    let out = round_trip(&src, 10, 0, 0);
    assert!(out.is_empty());
}

#[test]
fn one_byte() {
    let src = content(100, 2);
    let out = round_trip(&src, 37, 1, 0);
    assert_eq!(out, vec![src[37]]);
}

#[test]
fn length_not_a_multiple_of_the_packet_size() {
    // 1456 is the default payload size; 3 blocks of the buffer plus an odd remainder.
    let len = 3 * udt::FILE_BLOCK_SIZE + 1456 * 7 + 13;
    let src = content(len, 3);
    let out = round_trip(&src, 0, len as u64, 0);
    assert_eq!(out.len(), len);
    assert!(out == src, "received bytes differ");
}

#[test]
fn megabytes_from_an_offset_to_an_offset() {
    let len = 5 * 1024 * 1024 + 777;
    let src = content(len + 4099, 4);
    let out = round_trip(&src, 4099, len as u64, 12_345);
    assert_eq!(out.len(), 12_345 + len);
    assert!(
        out[..12_345].iter().all(|&b| b == 0xEE),
        "prefix overwritten"
    );
    assert!(out[12_345..] == src[4099..], "received bytes differ");
}

#[test]
fn sendfile_past_the_end_of_the_file_fails() {
    let src_file = TempFile::new("short");
    src_file.open_rw().write_all(&content(1000, 5)).unwrap();
    let listener = udt::Listener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr();
    let receiver = std::thread::spawn(move || {
        let (mut conn, _) = listener.accept().unwrap();
        let mut got = Vec::new();
        let _ = conn.read_to_end(&mut got);
        got.len()
    });
    let sock = udt::Socket::connect(addr).unwrap();
    let f = File::open(&src_file.path).unwrap();
    let mut seen = 0u64;
    let err = sock
        .sendfile_with(&f, 500, 501, |b| seen += b.len() as u64)
        .unwrap_err();
    match err {
        udt::Error::File(e) => assert_eq!(e.kind(), std::io::ErrorKind::UnexpectedEof),
        other => panic!("unexpected error {other:?}"),
    }
    // The block could not be read whole, so nothing was queued.
    assert_eq!(seen, 0);
    sock.close().unwrap();
    assert_eq!(receiver.join().unwrap(), 0);
}

#[test]
fn recvfile_keeps_what_arrived_when_the_peer_closes_early() {
    let dst_file = TempFile::new("early");
    let dst = dst_file.open_rw();
    let listener = udt::Listener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr();
    let receiver = std::thread::spawn(move || {
        let (conn, _) = listener.accept().unwrap();
        let mut seen = 0u64;
        let r = conn.recvfile_with(&dst, 0, 1 << 20, |b| seen += b.len() as u64);
        (r.map_err(|e| e.to_string()), seen)
    });
    let data = content(70_001, 6);
    let mut sock = udt::Socket::connect(addr).unwrap();
    sock.write_all(&data).unwrap();
    sock.close().unwrap();
    let (r, seen) = receiver.join().unwrap();
    assert!(r.is_err(), "a short stream must be an error, got {r:?}");
    assert_eq!(seen, data.len() as u64);
    assert!(std::fs::read(&dst_file.path).unwrap() == data);
}

#[test]
fn overflowing_range_is_rejected() {
    let listener = udt::Listener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr();
    let t = std::thread::spawn(move || listener.accept().map(|_| ()));
    let sock = udt::Socket::connect(addr).unwrap();
    let f = TempFile::new("ovf");
    let file = f.open_rw();
    assert!(matches!(
        sock.sendfile(&file, u64::MAX, 2),
        Err(udt::Error::InvalidOperation(_))
    ));
    assert!(matches!(
        sock.recvfile(&file, i64::MAX as u64, 1),
        Err(udt::Error::InvalidOperation(_))
    ));
    sock.close().unwrap();
    t.join().unwrap().unwrap();
}
