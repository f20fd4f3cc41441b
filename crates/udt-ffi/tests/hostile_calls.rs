//! Random sequences of C API calls with live, closed and made-up handles, bad pointers'
//! lengths, random option numbers and values: every call must return a result or a UDT4 error
//! code — never panic (reported as `UDT_EUNKNOWN`), hang, or touch memory it was not given.
//! Blocking is switched off on every socket the test creates, and the options that would turn
//! it back on are left out of the random set, so no call can wait.

use std::os::raw::{c_char, c_int, c_void};

use proptest::prelude::*;
use udt_c::consts::udt_errno;
use udt_c::epoll::*;
use udt_c::io::*;
use udt_c::last_error::*;
use udt_c::options::*;
use udt_c::perfmon::*;
use udt_c::socket::*;

#[derive(Clone, Debug)]
enum Op {
    Socket { stream: bool },
    Close(usize),
    Bind(usize, u16),
    Listen(usize, i32),
    Accept(usize),
    Connect(usize, usize),
    Send(usize, i32),
    Recv(usize, i32),
    SendMsg(usize, i32, i32),
    RecvMsg(usize, i32),
    SetOpt(usize, i32, Vec<u8>),
    GetOpt(usize, i32, i32),
    Perf(usize),
    State(usize),
    EpollCreate,
    EpollAdd(usize, usize, i32),
    EpollRemove(usize, usize),
    EpollWait(usize, i32),
    EpollRelease(usize),
}

fn op() -> impl Strategy<Value = Op> {
    // Mostly the few newest handles (so sockets get bound, listen and connect), sometimes
    // closed or made-up ones.
    let h = prop_oneof![4 => 0usize..3, 1 => 0usize..12];
    prop_oneof![
        4 => any::<bool>().prop_map(|stream| Op::Socket { stream }),
        1 => h.clone().prop_map(Op::Close),
        4 => (h.clone(), any::<u16>()).prop_map(|(a, p)| Op::Bind(a, p)),
        3 => (h.clone(), -2i32..20).prop_map(|(a, b)| Op::Listen(a, b)),
        2 => h.clone().prop_map(Op::Accept),
        3 => (h.clone(), h.clone()).prop_map(|(a, b)| Op::Connect(a, b)),
        1 => (h.clone(), -5i32..70_000).prop_map(|(a, n)| Op::Send(a, n)),
        1 => (h.clone(), -5i32..70_000).prop_map(|(a, n)| Op::Recv(a, n)),
        1 => (h.clone(), -5i32..70_000, -2i32..100).prop_map(|(a, n, t)| Op::SendMsg(a, n, t)),
        1 => (h.clone(), -5i32..70_000).prop_map(|(a, n)| Op::RecvMsg(a, n)),
        1 => (
            h.clone(),
            -3i32..25,
            proptest::collection::vec(any::<u8>(), 0..12)
        )
            .prop_map(|(a, o, v)| Op::SetOpt(a, o, v)),
        1 => (h.clone(), -3i32..25, -4i32..40).prop_map(|(a, o, l)| Op::GetOpt(a, o, l)),
        1 => h.clone().prop_map(Op::Perf),
        1 => h.clone().prop_map(Op::State),
        1 => Just(Op::EpollCreate),
        1 => (h.clone(), h.clone(), -1i32..16).prop_map(|(e, s, ev)| Op::EpollAdd(e, s, ev)),
        1 => (h.clone(), h.clone()).prop_map(|(e, s)| Op::EpollRemove(e, s)),
        1 => (h.clone(), -2i32..9).prop_map(|(e, n)| Op::EpollWait(e, n)),
        1 => h.prop_map(Op::EpollRelease),
    ]
}

/// Handles the test knows: live ones first, then closed ones, then made-up ones.
struct Handles {
    socks: Vec<c_int>,
    epolls: Vec<c_int>,
}

impl Handles {
    fn sock(&self, i: usize) -> c_int {
        self.socks.get(i).copied().unwrap_or(i as c_int * 7919 + 3)
    }
    fn epoll(&self, i: usize) -> c_int {
        self.epolls
            .get(i)
            .copied()
            .unwrap_or(i as c_int * 104_729 + 5)
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

const KNOWN: &[i32] = &[
    1000, 1001, 1002, 1003, 1004, 2000, 2001, 2002, 3000, 3001, 3002, 4000, 4001, 4002, 4003, 4004,
    5000, 5001, 5002, 5003, 5004, 5005, 5006, 5007, 5008, 5009, 5010, 5011, 5012, 5013, 6000, 6001,
    6002, 6003, 7000,
];

fn check(rc: i64, what: &Op) -> Result<(), TestCaseError> {
    if rc < 0 {
        let code = udt_getlasterror_code();
        prop_assert!(
            code != udt_errno::UDT_EUNKNOWN as c_int,
            "{what:?} panicked inside the library"
        );
        prop_assert!(
            KNOWN.contains(&code),
            "{what:?} failed with unknown code {code}"
        );
    }
    Ok(())
}

unsafe fn run(h: &mut Handles, o: &Op) -> i64 {
    let mut buf = vec![0u8; 70_000];
    let off = 0 as c_int;
    match *o {
        Op::Socket { stream } => {
            let ty = if stream {
                libc::SOCK_STREAM
            } else {
                libc::SOCK_DGRAM
            };
            let u = udt_socket(libc::AF_INET, ty, 0);
            if u >= 0 {
                // Never block: the random calls must not wait.
                udt_setsockopt(u, 0, 1, &off as *const c_int as *const c_void, 4);
                udt_setsockopt(u, 0, 2, &off as *const c_int as *const c_void, 4);
                h.socks.insert(0, u);
            }
            u as i64
        }
        Op::Close(i) => udt_close(h.sock(i)) as i64,
        Op::Bind(i, port) => {
            // Only ephemeral ports or high ones, on loopback.
            let a = loopback(if port < 40_000 { 0 } else { port });
            let len = std::mem::size_of::<libc::sockaddr_in>() as c_int;
            udt_bind(h.sock(i), &a as *const _ as *const libc::sockaddr, len) as i64
        }
        Op::Listen(i, b) => udt_listen(h.sock(i), b) as i64,
        Op::Accept(i) => {
            let mut a = loopback(0);
            let mut len = std::mem::size_of::<libc::sockaddr_in>() as c_int;
            let s = udt_accept(h.sock(i), &mut a as *mut _ as *mut libc::sockaddr, &mut len);
            if s >= 0 {
                h.socks.push(s);
            }
            s as i64
        }
        Op::Connect(i, j) => {
            // Towards another of our sockets' ports (maybe a listener), or nowhere.
            let mut to = loopback(9);
            let mut len = std::mem::size_of::<libc::sockaddr_in>() as c_int;
            udt_getsockname(
                h.sock(j),
                &mut to as *mut _ as *mut libc::sockaddr,
                &mut len,
            );
            let len = std::mem::size_of::<libc::sockaddr_in>() as c_int;
            udt_connect(h.sock(i), &to as *const _ as *const libc::sockaddr, len) as i64
        }
        Op::Send(i, n) => udt_send(h.sock(i), buf.as_ptr() as *const c_char, n, 0) as i64,
        Op::Recv(i, n) => udt_recv(h.sock(i), buf.as_mut_ptr() as *mut c_char, n, 0) as i64,
        Op::SendMsg(i, n, ttl) => {
            udt_sendmsg(h.sock(i), buf.as_ptr() as *const c_char, n, ttl, 1) as i64
        }
        Op::RecvMsg(i, n) => udt_recvmsg(h.sock(i), buf.as_mut_ptr() as *mut c_char, n) as i64,
        Op::SetOpt(i, opt, ref v) => {
            if opt == 1 || opt == 2 {
                return 0; // blocking modes stay off
            }
            udt_setsockopt(
                h.sock(i),
                0,
                opt,
                v.as_ptr() as *const c_void,
                v.len() as c_int,
            ) as i64
        }
        Op::GetOpt(i, opt, len) => {
            let mut l = len.min(buf.len() as c_int);
            udt_getsockopt(h.sock(i), 0, opt, buf.as_mut_ptr() as *mut c_void, &mut l) as i64
        }
        Op::Perf(i) => {
            let mut t = udt_traceinfo::default();
            udt_perfmon(h.sock(i), &mut t, 1) as i64
        }
        Op::State(i) => {
            let s = udt_getsockstate(h.sock(i));
            if (1..=9).contains(&s) {
                0
            } else {
                -2
            }
        }
        Op::EpollCreate => {
            let e = udt_epoll_create();
            if e >= 0 {
                h.epolls.insert(0, e);
            }
            e as i64
        }
        Op::EpollAdd(e, s, ev) => udt_epoll_add_usock(h.epoll(e), h.sock(s), &ev) as i64,
        Op::EpollRemove(e, s) => udt_epoll_remove_usock(h.epoll(e), h.sock(s)) as i64,
        Op::EpollWait(e, n) => {
            let mut r = [0 as c_int; 8];
            let mut rn = n;
            udt_epoll_wait(
                h.epoll(e),
                r.as_mut_ptr(),
                &mut rn,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                0,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                std::ptr::null_mut(),
            ) as i64
        }
        Op::EpollRelease(e) => udt_epoll_release(h.epoll(e)) as i64,
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn random_call_sequences_only_return_codes(ops in proptest::collection::vec(op(), 1..60)) {
        let mut h = Handles { socks: Vec::new(), epolls: Vec::new() };
        for o in &ops {
            // SAFETY: every pointer passed is to a live local buffer at least as long as the
            // length passed with it (lengths beyond the buffer are refused by the checks
            // under test before memory is touched: `buf` has 70 000 bytes and lengths stay
            // below that).
            let rc = unsafe { run(&mut h, o) };
            prop_assert!(rc != -2, "{o:?}: getsockstate returned a value outside UDTSTATUS");
            check(rc, o)?;
            if std::env::var_os("HOSTILE_DEBUG").is_some() { eprintln!("{o:?} -> {rc}"); }
        }
        for s in h.socks {
            udt_close(s);
        }
        for e in h.epolls {
            udt_epoll_release(e);
        }
    }
}
