//! Fuzz target: the C ABI (crates/udt-ffi, `libudt_c`) driven by random call sequences, the
//! way a careless or hostile C program would call it: live, closed and made-up handles,
//! option numbers and values of any kind, lengths that do not match, sockets connecting to
//! each other over loopback.
//!
//! The operation set follows `crates/udt-ffi/tests/hostile_calls.rs` (a proptest with 48
//! cases per `cargo test`); here libFuzzer steers the sequences by coverage. Blocking is
//! switched off on every socket created, and the options that would turn it back on are left
//! out, so no call can wait. Checks:
//!
//! * every call returns a result or a UDT4 error code: never a panic inside the library
//!   (libfuzzer-sys aborts on any panic, even one the library catches and turns into
//!   `UDT_EUNKNOWN`), and never an error code outside UDT4's list;
//! * a handle that was never handed out is refused as such: `UDT_EINVSOCK` for sockets,
//!   `UDT_EINVPOLLID` for epoll sets;
//! * `udt_getsockstate` returns a value of `UDTSTATUS`;
//! * once a run has closed every socket and epoll set it made, the threads the library
//!   started for them end (within 10 s): closing releases everything. Waiting for that at
//!   the end of each run also keeps the fuzzer's memory bounded: a bound socket's mux
//!   thread takes a few milliseconds to wind down after `udt_close`, and without the wait
//!   hundreds pile up (2 GB after about 900 runs).
#![no_main]

use std::os::raw::{c_char, c_int, c_void};

use libfuzzer_sys::fuzz_target;
use udt_c::consts::udt_errno;
use udt_c::epoll::*;
use udt_c::io::*;
use udt_c::last_error::*;
use udt_c::options::*;
use udt_c::perfmon::*;
use udt_c::socket::*;
use udt_fuzz::Input;

/// UDT4's error codes (udt.h `CUDTException`).
const KNOWN: &[i32] = &[
    1000, 1001, 1002, 1003, 1004, 2000, 2001, 2002, 3000, 3001, 3002, 4000, 4001, 4002, 4003, 4004,
    5000, 5001, 5002, 5003, 5004, 5005, 5006, 5007, 5008, 5009, 5010, 5011, 5012, 5013, 6000, 6001,
    6002, 6003, 7000,
];

/// Handles no run ever gets: far above any handle a process of this length allocates.
const MADE_UP_SOCK: c_int = 0x3FFF_0000;
const MADE_UP_EPOLL: c_int = 0x3FFF_0000;

/// Handles a run knows: the newest first, live or closed. Every handle made is also kept in
/// `made`, to be closed at the end.
struct Handles {
    socks: Vec<c_int>,
    epolls: Vec<c_int>,
    made: Vec<c_int>,
    made_epolls: Vec<c_int>,
}

impl Handles {
    /// The socket handle an index picks; past the known ones, a made-up handle.
    fn sock(&self, i: u8) -> c_int {
        self.socks
            .get(usize::from(i % 8))
            .copied()
            .unwrap_or(MADE_UP_SOCK + c_int::from(i))
    }
    fn epoll(&self, i: u8) -> c_int {
        self.epolls
            .get(usize::from(i % 4))
            .copied()
            .unwrap_or(MADE_UP_EPOLL + c_int::from(i))
    }
}

fn loopback(port: u16) -> libc::sockaddr_in {
    // SAFETY: all-zero is a valid sockaddr_in.
    let mut a: libc::sockaddr_in = unsafe { std::mem::zeroed() };
    a.sin_family = libc::AF_INET as libc::sa_family_t;
    a.sin_port = port.to_be();
    a.sin_addr.s_addr = u32::from(std::net::Ipv4Addr::LOCALHOST).to_be();
    a
}

/// Checks a call's result: `made_up` is the error a made-up handle must give, if one was used.
fn check(rc: i64, what: &str, made_up: Option<udt_errno>) {
    static DEBUG: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    if *DEBUG.get_or_init(|| std::env::var_os("UDT_FUZZ_DEBUG").is_some()) {
        eprintln!(
            "{what} -> {rc} ({})",
            if rc < 0 { udt_getlasterror_code() } else { 0 }
        );
    }
    if rc < 0 {
        let code = udt_getlasterror_code();
        assert_ne!(
            code,
            udt_errno::UDT_EUNKNOWN as c_int,
            "{what}: failed inside the library"
        );
        assert!(
            KNOWN.contains(&code),
            "{what} failed with unknown code {code}"
        );
        if let Some(e) = made_up {
            assert_eq!(code, e as c_int, "{what} on a made-up handle");
        }
    } else if let Some(e) = made_up {
        panic!(
            "{what} on a made-up handle returned {rc}, not error {}",
            e as c_int
        );
    }
}

/// One call decoded from the input. Returns the call's name for messages.
///
/// # Safety
/// Every pointer passed is to a live local buffer at least as long as the length passed with
/// it, or a length beyond it that the library must refuse before touching memory (`buf` has
/// 70 000 bytes; lengths stay below that, except those the library checks against its own
/// limits).
unsafe fn step(h: &mut Handles, input: &mut Input<'_>, buf: &mut [u8]) {
    let off = 0 as c_int;
    let op = input.u8();
    let a = input.u8();
    let sock = h.sock(a);
    let sock_made_up = (sock >= MADE_UP_SOCK).then_some(udt_errno::UDT_EINVSOCK);
    match op % 19 {
        0 | 1 => {
            let ty = if op & 0x20 == 0 {
                libc::SOCK_STREAM
            } else {
                libc::SOCK_DGRAM
            };
            let u = udt_socket(libc::AF_INET, ty, 0);
            check(u as i64, "udt_socket", None);
            if u >= 0 {
                // Never block: the random calls must not wait. No linger either, so that a
                // closed socket's thread ends at once (see `wait_for_release`).
                udt_setsockopt(u, 0, 1, &off as *const c_int as *const c_void, 4);
                udt_setsockopt(u, 0, 2, &off as *const c_int as *const c_void, 4);
                let no_linger = libc::linger {
                    l_onoff: 0,
                    l_linger: 0,
                };
                let len = std::mem::size_of::<libc::linger>() as c_int;
                let rc = udt_setsockopt(u, 0, 7, &no_linger as *const _ as *const c_void, len);
                check(rc as i64, "udt_setsockopt(UDT_LINGER)", None);
                h.socks.insert(0, u);
                h.socks.truncate(8);
                h.made.push(u);
            }
        }
        2 => check(
            udt_close(sock) as i64,
            &format!("udt_close({sock})"),
            sock_made_up,
        ),
        3 => {
            let port = input.u16();
            let addr = loopback(if port < 40_000 { 0 } else { port });
            let len = if op & 0x20 == 0 {
                std::mem::size_of::<libc::sockaddr_in>() as c_int
            } else {
                c_int::from(input.u8() % 32)
            };
            let rc = udt_bind(sock, &addr as *const _ as *const libc::sockaddr, len);
            check(
                rc as i64,
                "udt_bind",
                sock_made_up.filter(|_| op & 0x20 == 0),
            );
        }
        4 => {
            let backlog = c_int::from(input.u8() as i8);
            check(udt_listen(sock, backlog) as i64, "udt_listen", sock_made_up);
        }
        5 => {
            let mut addr = loopback(0);
            let mut len = std::mem::size_of::<libc::sockaddr_in>() as c_int;
            let s = udt_accept(sock, &mut addr as *mut _ as *mut libc::sockaddr, &mut len);
            check(s as i64, &format!("udt_accept({sock})"), sock_made_up);
            if s >= 0 {
                h.socks.push(s);
                h.made.push(s);
            }
        }
        6 => {
            // Towards another of our sockets' ports (maybe a listener), or nowhere.
            let mut to = loopback(9);
            let mut len = std::mem::size_of::<libc::sockaddr_in>() as c_int;
            udt_getsockname(
                h.sock(input.u8()),
                &mut to as *mut _ as *mut libc::sockaddr,
                &mut len,
            );
            let len = std::mem::size_of::<libc::sockaddr_in>() as c_int;
            let rc = udt_connect(sock, &to as *const _ as *const libc::sockaddr, len);
            check(rc as i64, &format!("udt_connect({sock})"), sock_made_up);
        }
        7 => {
            let n = c_int::from(input.u16()) - 5;
            let rc = udt_send(sock, buf.as_ptr() as *const c_char, n, 0);
            check(rc as i64, "udt_send", sock_made_up);
        }
        8 => {
            let n = c_int::from(input.u16()) - 5;
            let rc = udt_recv(sock, buf.as_mut_ptr() as *mut c_char, n, 0);
            check(rc as i64, "udt_recv", sock_made_up);
        }
        9 => {
            let n = c_int::from(input.u16()) - 5;
            let ttl = c_int::from(input.u8() as i8);
            let rc = udt_sendmsg(
                sock,
                buf.as_ptr() as *const c_char,
                n,
                ttl,
                c_int::from(op & 1 == 1),
            );
            check(rc as i64, "udt_sendmsg", sock_made_up);
        }
        10 => {
            let n = c_int::from(input.u16()) - 5;
            let rc = udt_recvmsg(sock, buf.as_mut_ptr() as *mut c_char, n);
            check(rc as i64, "udt_recvmsg", sock_made_up);
        }
        11 => {
            let opt = c_int::from(input.u8() % 28) - 3;
            if opt == 1 || opt == 2 || opt == 7 {
                return; // blocking modes and linger stay off
            }
            let n = usize::from(input.u8() % 13);
            let v = input.bytes(n).to_vec();
            let rc = udt_setsockopt(sock, 0, opt, v.as_ptr() as *const c_void, v.len() as c_int);
            // A made-up handle may be refused for the handle or for the option, in either
            // order; only the absence of a crash and a known code are checked.
            check(rc as i64, "udt_setsockopt", None);
        }
        12 => {
            let opt = c_int::from(input.u8() % 28) - 3;
            let mut len = c_int::from(input.u8() % 44) - 4;
            let rc = udt_getsockopt(sock, 0, opt, buf.as_mut_ptr() as *mut c_void, &mut len);
            check(rc as i64, "udt_getsockopt", None);
        }
        13 => {
            let mut t = udt_traceinfo::default();
            let rc = udt_perfmon(sock, &mut t, c_int::from(op & 1 == 1));
            check(rc as i64, "udt_perfmon", sock_made_up);
        }
        14 => {
            let s = udt_getsockstate(sock);
            assert!((1..=9).contains(&s), "udt_getsockstate returned {s}");
        }
        15 => {
            let e = udt_epoll_create();
            check(e as i64, "udt_epoll_create", None);
            if e >= 0 {
                h.epolls.insert(0, e);
                h.epolls.truncate(4);
                h.made_epolls.push(e);
            }
        }
        16 => {
            let e = h.epoll(input.u8());
            let ev = c_int::from(input.u8() % 17) - 1;
            let rc = udt_epoll_add_usock(e, sock, &ev);
            let made_up = if e >= MADE_UP_EPOLL {
                Some(udt_errno::UDT_EINVPOLLID)
            } else {
                None
            };
            check(rc as i64, "udt_epoll_add_usock", made_up);
        }
        17 => {
            let e = h.epoll(input.u8());
            let rc = udt_epoll_remove_usock(e, sock);
            let made_up = (e >= MADE_UP_EPOLL).then_some(udt_errno::UDT_EINVPOLLID);
            check(rc as i64, "udt_epoll_remove_usock", made_up);
        }
        _ => {
            let e = h.epoll(a);
            let made_up = (e >= MADE_UP_EPOLL).then_some(udt_errno::UDT_EINVPOLLID);
            if op & 0x20 == 0 {
                let mut r = [0 as c_int; 8];
                let mut rn = c_int::from(input.u8() % 11) - 2;
                let rc = udt_epoll_wait(
                    e,
                    r.as_mut_ptr(),
                    &mut rn,
                    std::ptr::null_mut(),
                    std::ptr::null_mut(),
                    0,
                    std::ptr::null_mut(),
                    std::ptr::null_mut(),
                    std::ptr::null_mut(),
                    std::ptr::null_mut(),
                );
                check(rc as i64, "udt_epoll_wait", made_up);
            } else {
                check(udt_epoll_release(e) as i64, "udt_epoll_release", made_up);
            }
        }
    }
}

/// Threads of this process.
fn threads() -> usize {
    std::fs::read_dir("/proc/self/task").map_or(0, |d| d.count())
}

/// Names of this process's threads, for messages.
fn thread_names() -> Vec<String> {
    std::fs::read_dir("/proc/self/task")
        .map(|d| {
            d.flatten()
                .filter_map(|t| std::fs::read_to_string(t.path().join("comm")).ok())
                .map(|n| n.trim().to_string())
                .collect()
        })
        .unwrap_or_default()
}

/// Waits until the threads of closed sockets have ended: back to the count before the first
/// run (libFuzzer's own), within 10 s.
fn wait_for_release() {
    static BASELINE: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    let baseline = *BASELINE.get_or_init(threads);
    let start = std::time::Instant::now();
    while threads() > baseline {
        let waited = start.elapsed();
        assert!(
            waited < std::time::Duration::from_secs(10),
            "{} threads still running 10 s after every socket was closed: {:?}",
            threads() - baseline,
            thread_names()
        );
        std::thread::sleep(std::time::Duration::from_micros(500));
    }
}

fuzz_target!(|data: &[u8]| {
    wait_for_release();
    let mut input = Input::new(data);
    let mut h = Handles {
        socks: Vec::new(),
        epolls: Vec::new(),
        made: Vec::new(),
        made_epolls: Vec::new(),
    };
    let mut buf = vec![0u8; 70_000];
    let mut ops = 0;
    while !input.is_empty() && ops < 64 {
        ops += 1;
        // SAFETY: see `step`.
        unsafe { step(&mut h, &mut input, &mut buf) };
    }
    for s in h.made {
        udt_close(s);
    }
    for e in h.made_epolls {
        udt_epoll_release(e);
    }
    wait_for_release();
});
