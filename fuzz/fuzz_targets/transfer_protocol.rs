//! Fuzz target: the framing of `udt send` / `udt recv` (crates/udt-cli/src/transfer/
//! protocol.rs) and the receiver's check of the file names a sender claims (paths.rs).
//!
//! Both files are compiled here as they are (`#[path]`), rather than through a library
//! target of udt-cli: they depend only on std, anyhow, blake3 and libc, while udt-cli's
//! dependencies (the runtime, clap, the simulator...) would triple the instrumented build.
//!
//! The input is used three ways.
//!
//! 1. As the byte stream a hostile peer sends: `protocol::recv` reads frames until the stream
//!    ends or a frame is refused. It never panics; a frame declaring more than `MAX_BODY`
//!    bytes is refused; every message it returns encodes back to exactly the bytes it was
//!    read from, except that free text (`Refused`, `Abort`) has its control characters
//!    replaced, so that it cannot drive a terminal; such text then decodes to itself.
//! 2. As a file name a sender claims: `paths::validate_name` accepts it only if every
//!    component is non-empty, not `.` or `..`, free of NUL, `/`, `\` and control characters,
//!    within the length and depth limits, and not our temporary name; joined again the
//!    components give the name back.
//! 3. As a message built field by field: it encodes, and decodes to itself.
#![no_main]
#![allow(dead_code)]

#[path = "../../crates/udt-cli/src/transfer/paths.rs"]
mod paths;
#[path = "../../crates/udt-cli/src/transfer/protocol.rs"]
mod protocol;

use libfuzzer_sys::fuzz_target;
use protocol::{Msg, MAX_BODY};
use udt_fuzz::Input;

/// Reads frames from `stream` as the peer would send them.
fn check_stream(stream: &[u8]) {
    let mut r = stream;
    loop {
        let before = r;
        match protocol::recv(&mut r) {
            Ok(m) => {
                let used = &before[..before.len() - r.len()];
                let frame = m.encode();
                match &m {
                    Msg::Refused { reason } | Msg::Abort { reason } => {
                        assert!(!reason.chars().any(char::is_control), "{reason:?}");
                        assert_eq!(protocol::recv(&mut &frame[..]).expect("re-read"), m);
                    }
                    _ => assert_eq!(frame, used, "{m:?} does not encode to its frame"),
                }
            }
            Err(_) => {
                if before.len() >= 5 {
                    let len = u32::from_be_bytes([before[1], before[2], before[3], before[4]]);
                    // Refused frames: too long, cut short, or a body that does not parse.
                    assert!(
                        len as usize > MAX_BODY
                            || before.len() < 5 + len as usize
                            || Msg::decode(before[0], &before[5..5 + len as usize]).is_err()
                    );
                }
                return;
            }
        }
    }
}

fn check_name(bytes: &[u8]) {
    let Ok(name) = std::str::from_utf8(bytes) else {
        return;
    };
    if let Ok(comps) = paths::validate_name(name) {
        assert!(name.len() <= paths::MAX_NAME_BYTES);
        assert!(comps.len() <= paths::MAX_DEPTH);
        assert_eq!(comps.join("/"), name);
        for c in &comps {
            assert!(!c.is_empty() && *c != "." && *c != "..", "{name:?}");
            assert!(c.len() <= paths::MAX_COMPONENT_BYTES, "{name:?}");
            assert!(
                !c.chars()
                    .any(|ch| ch == '/' || ch == '\\' || ch.is_control()),
                "{name:?}"
            );
            assert!(!c.ends_with(paths::PART_SUFFIX), "{name:?}");
        }
        assert!(!name.starts_with('/'));
    }
}

fn digest(input: &mut Input<'_>) -> [u8; 32] {
    let mut d = [0u8; 32];
    for b in &mut d {
        *b = input.u8();
    }
    d
}

fn text(input: &mut Input<'_>) -> String {
    let n = usize::from(input.u8());
    String::from_utf8_lossy(input.bytes(n)).into_owned()
}

fn check_built(input: &mut Input<'_>) {
    let m = match input.u8() % 17 {
        0 => Msg::Hello {
            version: input.u32(),
            nonce: digest(input),
            auth_required: input.bool(),
        },
        1 => Msg::Auth { mac: digest(input) },
        2 => Msg::AuthResult { ok: input.bool() },
        3 => Msg::Begin {
            files: input.u64(),
            bytes: input.u64(),
        },
        4 => Msg::Dir { name: text(input) },
        5 => Msg::File {
            size: input.u64(),
            name: text(input),
        },
        6 => Msg::Ok,
        7 => Msg::Refused {
            reason: text(input),
        },
        8 => Msg::Ready {
            have: input.u64(),
            prefix_hash: digest(input),
        },
        9 => Msg::Exists {
            size: input.u64(),
            hash: digest(input),
        },
        10 => Msg::Identical { yes: input.bool() },
        11 => Msg::Start {
            offset: input.u64(),
        },
        12 => Msg::Digest {
            hash: digest(input),
        },
        13 => Msg::Verified { ok: input.bool() },
        14 => Msg::End,
        15 => Msg::Bye {
            files: input.u64(),
            bytes: input.u64(),
        },
        _ => Msg::Abort {
            reason: text(input),
        },
    };
    let frame = m.encode();
    assert!(frame.len() <= 5 + MAX_BODY);
    let back = protocol::recv(&mut &frame[..]).expect("an encoded message decodes");
    match (&m, &back) {
        (Msg::Refused { reason: a }, Msg::Refused { reason: b })
        | (Msg::Abort { reason: a }, Msg::Abort { reason: b }) => {
            // Same text, control characters replaced.
            let want: String = a
                .chars()
                .map(|c| if c.is_control() { '\u{fffd}' } else { c })
                .collect();
            assert_eq!(&want, b);
        }
        _ => assert_eq!(back, m),
    }
}

fuzz_target!(|data: &[u8]| {
    check_stream(data);
    check_name(data);
    check_built(&mut Input::new(data));
});
