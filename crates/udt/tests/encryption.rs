//! Encrypted connections over real UDP on loopback: a byte-exact transfer, the peer's view of
//! the negotiation, and the errors of a wrong secret and of mismatched requirements.

use std::io::ErrorKind;
use std::thread;
use std::time::Duration;

use udt::{Builder, Cipher, Encryption, EncryptionMode, Error};
use udt_proto::ConnectError;

fn enc(secret: &[u8], mode: EncryptionMode) -> Option<Encryption> {
    Some(Encryption::from_passphrase(secret, mode).unwrap())
}

#[test]
fn encrypted_transfer_over_loopback_is_byte_exact() {
    let server = Builder::new().encryption(enc(b"loopback secret", EncryptionMode::Required));
    let listener = server.listen("127.0.0.1:0", 4).unwrap();
    let addr = listener.local_addr();
    const TOTAL: usize = 20 << 20;
    let reader = thread::spawn(move || {
        let (sock, _) = listener.accept().unwrap();
        assert!(sock.is_encrypted());
        let mut buf = vec![0u8; 1 << 16];
        let mut got = 0usize;
        while got < TOTAL {
            let n = sock.recv(&mut buf).unwrap();
            for (k, &b) in buf[..n].iter().enumerate() {
                assert_eq!(b, ((got + k) % 251) as u8, "byte {}", got + k);
            }
            got += n;
        }
        let st = sock.stats(false).unwrap();
        (got, st.total.pkt_auth_failed)
    });
    let client = Builder::new().encryption(
        enc(b"loopback secret", EncryptionMode::Required)
            .map(|e| e.with_cipher(Cipher::ChaCha20Poly1305)),
    );
    let sock = client.connect(addr).unwrap();
    assert!(sock.is_encrypted());
    assert_eq!(sock.cipher(), Some(Cipher::ChaCha20Poly1305));
    let data: Vec<u8> = (0..TOTAL).map(|i| (i % 251) as u8).collect();
    let mut sent = 0;
    while sent < TOTAL {
        sent += sock.send(&data[sent..]).unwrap();
    }
    let (got, auth_failed) = reader.join().unwrap();
    assert_eq!(got, TOTAL);
    assert_eq!(auth_failed, 0);
    sock.close().unwrap();
}

#[test]
fn a_wrong_secret_is_refused_with_a_security_error() {
    let listener = Builder::new()
        .encryption(enc(b"right", EncryptionMode::Preferred))
        .listen("127.0.0.1:0", 4)
        .unwrap();
    let e = Builder::new()
        .encryption(enc(b"wrong", EncryptionMode::Preferred))
        .connect_timeout(Duration::from_secs(2))
        .connect(listener.local_addr())
        .err()
        .expect("must be refused");
    assert!(
        matches!(e, Error::Connect(ConnectError::AuthenticationFailed)),
        "{e}"
    );
    assert_eq!(e.udt4_code(), 1004);
    assert_eq!(std::io::Error::from(e).kind(), ErrorKind::ConnectionRefused);
}

#[test]
fn requirements_against_clear_peers() {
    // A clear listener (as UDT4 4.11 behaves): required refuses, preferred connects in clear.
    let clear = Builder::new().listen("127.0.0.1:0", 4).unwrap();
    let e = Builder::new()
        .encryption(enc(b"k", EncryptionMode::Required))
        .connect(clear.local_addr())
        .err()
        .expect("must be refused");
    assert!(
        matches!(e, Error::Connect(ConnectError::EncryptionUnavailable)),
        "{e}"
    );
    let s = Builder::new()
        .encryption(enc(b"k", EncryptionMode::Preferred))
        .connect(clear.local_addr())
        .unwrap();
    assert!(!s.is_encrypted());
    let (a, _) = clear.accept().unwrap();
    assert!(!a.is_encrypted());
    // A listener that requires encryption refuses a clear client, saying why.
    let strict = Builder::new()
        .encryption(enc(b"k", EncryptionMode::Required))
        .listen("127.0.0.1:0", 4)
        .unwrap();
    let e = Builder::new()
        .connect(strict.local_addr())
        .err()
        .expect("must be refused");
    assert!(
        matches!(e, Error::Connect(ConnectError::EncryptionRequired)),
        "{e}"
    );
    assert_eq!(e.udt4_code(), 1002);
}
