//! Congestion control written in C (or C++, through the drop-in's `CCC` class): a table of
//! callbacks ([`udt_cc_ops`]) becomes a [`CongestionControl`] factory that `udt_setcc`
//! installs on a socket, as UDT4's `setsockopt(UDT_CC, CCCFactory<T>*)` does.
//!
//! Each callback gets the algorithm's own state pointer (from `create`) and a
//! [`udt_cc_ctx`]: the connection's measurements, refreshed before the call, and the two
//! controls (`cwnd`, `pkt_snd_period_us`), read back after it — the shape of 4.11's `CCC`
//! member variables. The protocol controls (ACK timer and interval, RTO, custom messages,
//! statistics) are functions taking the context. A context is valid only during the callback
//! that received it.

use std::os::raw::{c_char, c_int, c_void};
use std::sync::Arc;

use udt::{OptValue, SockOpt};
use udt_proto::cc::{
    CcContext, CongestionControl, CongestionControlFactory, CustomMessage, PacketInfo, SeqNo,
    SeqRange, SharedFactory, UserDefined,
};

use crate::call::guarded;
use crate::handles;
use crate::last_error::FfiError;
use crate::perfmon::udt_traceinfo;

/// What a callback sees of the connection, and the controls it sets.
#[repr(C)]
#[allow(non_camel_case_types)]
pub struct udt_cc_ctx {
    /// Maximum segment size, bytes including IP and UDP headers.
    pub mss: c_int,
    /// The peer's flow window: the largest useful congestion window, packets.
    pub max_cwnd: f64,
    /// Largest sequence number sent so far.
    pub snd_curr_seq: i32,
    /// Arrival rate the receiver reports, packets per second.
    pub rcv_rate: c_int,
    /// Smoothed round-trip time, µs.
    pub rtt_us: c_int,
    /// Estimated link capacity, packets per second.
    pub bandwidth: c_int,
    /// Control: time between packets, µs (0: send as fast as the window allows).
    pub pkt_snd_period_us: f64,
    /// Control: congestion window, packets.
    pub cwnd: f64,
    /// The library's side of the context; do not touch.
    pub internal: *mut c_void,
}

/// A data packet, as `on_pkt_sent`/`on_pkt_received` see it.
#[repr(C)]
#[allow(non_camel_case_types)]
pub struct udt_cc_packet {
    /// Sequence number.
    pub seq: i32,
    /// The message word (boundary bits, in-order flag, message number), as on the wire.
    pub msgno: i32,
    /// Timestamp, µs since the sending socket was opened.
    pub timestamp: i32,
    /// Payload length, bytes.
    pub payload_len: c_int,
    /// 1 for a retransmission (sender side).
    pub retransmission: c_int,
}

/// A custom control message (type 0x7FFF) from the peer's algorithm.
#[repr(C)]
#[allow(non_camel_case_types)]
pub struct udt_cc_custom_msg {
    /// Extended type (16 bits).
    pub ext_type: c_int,
    /// Additional-info word.
    pub info: u32,
    /// Body bytes as on the wire (UDT4 peers send 32-bit words in network order).
    pub body: *const u8,
    /// Body length, bytes.
    pub body_len: c_int,
}

/// A congestion-control algorithm as C callbacks. Every member may be null (nothing to do).
/// `create` is called once per connection (from a library thread) with the `user` pointer
/// given to `udt_setcc`, and returns that connection's state (the `cc` of every other
/// callback; null if there is no `create` or it returned null); `destroy` frees a non-null
/// state; `release`
/// is called once with `user` when no socket uses the algorithm any more. The callbacks of
/// one connection never run concurrently; different connections' may.
#[repr(C)]
#[allow(non_camel_case_types)]
#[derive(Clone, Copy)]
pub struct udt_cc_ops {
    /// Makes the state of one connection's algorithm.
    pub create: Option<unsafe extern "C" fn(user: *mut c_void) -> *mut c_void>,
    /// Frees what `create` made.
    pub destroy: Option<unsafe extern "C" fn(cc: *mut c_void)>,
    /// The connection is established.
    pub init: Option<unsafe extern "C" fn(cc: *mut c_void, ctx: *mut udt_cc_ctx)>,
    /// The connection is closing.
    pub close: Option<unsafe extern "C" fn(cc: *mut c_void, ctx: *mut udt_cc_ctx)>,
    /// An ACK acknowledged everything before sequence number `ack`.
    pub on_ack: Option<unsafe extern "C" fn(cc: *mut c_void, ctx: *mut udt_cc_ctx, ack: i32)>,
    /// A NAK reported losses, in UDT4's loss-list encoding (a range is its first number with
    /// the top bit set, then its last number).
    pub on_loss: Option<
        unsafe extern "C" fn(cc: *mut c_void, ctx: *mut udt_cc_ctx, losses: *const i32, n: c_int),
    >,
    /// The retransmission timer expired.
    pub on_timeout: Option<unsafe extern "C" fn(cc: *mut c_void, ctx: *mut udt_cc_ctx)>,
    /// A data packet is about to leave.
    pub on_pkt_sent: Option<
        unsafe extern "C" fn(cc: *mut c_void, ctx: *mut udt_cc_ctx, pkt: *const udt_cc_packet),
    >,
    /// A data packet arrived.
    pub on_pkt_received: Option<
        unsafe extern "C" fn(cc: *mut c_void, ctx: *mut udt_cc_ctx, pkt: *const udt_cc_packet),
    >,
    /// A custom control message arrived.
    pub process_custom_msg: Option<
        unsafe extern "C" fn(cc: *mut c_void, ctx: *mut udt_cc_ctx, msg: *const udt_cc_custom_msg),
    >,
    /// No socket uses the algorithm any more: free `user`.
    pub release: Option<unsafe extern "C" fn(user: *mut c_void)>,
}

/// The factory's `user` pointer: owned by the factory until `release`.
struct UserData {
    ops: udt_cc_ops,
    user: *mut c_void,
}

// SAFETY: the C side promises (udt_cc_ops' contract) that `create` may be called from any
// thread; the pointer itself is only passed back to it.
unsafe impl Send for UserData {}
// SAFETY: as above; the library never dereferences `user`.
unsafe impl Sync for UserData {}

impl Drop for UserData {
    fn drop(&mut self) {
        if let Some(release) = self.ops.release {
            // SAFETY: called once, with the pointer the application gave us.
            unsafe { release(self.user) };
        }
    }
}

struct CFactory {
    name: String,
    data: Arc<UserData>,
}

impl CongestionControlFactory for CFactory {
    fn name(&self) -> &str {
        &self.name
    }

    fn build(&self) -> Box<dyn CongestionControl> {
        let cc = match self.data.ops.create {
            // SAFETY: the application's constructor, with its own pointer.
            Some(create) => unsafe { create(self.data.user) },
            None => std::ptr::null_mut(),
        };
        Box::new(CAlgorithm {
            data: Arc::clone(&self.data),
            cc,
        })
    }
}

/// One connection's algorithm.
struct CAlgorithm {
    data: Arc<UserData>,
    cc: *mut c_void,
}

// SAFETY: a connection's algorithm runs on one thread at a time (the engine holds it under
// its lock); udt_cc_ops' contract makes the state movable between threads.
unsafe impl Send for CAlgorithm {}

impl Drop for CAlgorithm {
    fn drop(&mut self) {
        if let (Some(destroy), false) = (self.data.ops.destroy, self.cc.is_null()) {
            // SAFETY: frees what `create` returned, once.
            unsafe { destroy(self.cc) };
        }
    }
}

impl CAlgorithm {
    /// Fills a context from `ctx`, runs `f` on it, and applies the controls it set.
    fn call(&self, ctx: &mut CcContext<'_>, f: impl FnOnce(*mut c_void, *mut udt_cc_ctx)) {
        let mut c = udt_cc_ctx {
            mss: ctx.mss() as c_int,
            max_cwnd: ctx.max_cwnd(),
            snd_curr_seq: ctx.snd_curr_seq().get() as i32,
            rcv_rate: ctx.rcv_rate_pps().min(c_int::MAX as u32) as c_int,
            rtt_us: ctx.rtt_us().min(c_int::MAX as u32) as c_int,
            bandwidth: ctx.bandwidth_pps().min(c_int::MAX as u32) as c_int,
            pkt_snd_period_us: ctx.pkt_snd_period_us(),
            cwnd: ctx.cwnd_pkts(),
            internal: std::ptr::null_mut(),
        };
        let before = (c.pkt_snd_period_us, c.cwnd);
        let ctx_ptr: *mut CcContext<'_> = ctx;
        c.internal = ctx_ptr as *mut c_void;
        f(self.cc, &mut c);
        // SAFETY: `ctx` outlives this call; the callback has returned, so nothing else uses
        // the pointer we lent it.
        let ctx = unsafe { &mut *ctx_ptr };
        if c.pkt_snd_period_us != before.0 {
            ctx.set_pkt_snd_period_us(c.pkt_snd_period_us);
        }
        if c.cwnd != before.1 {
            ctx.set_cwnd_pkts(c.cwnd);
        }
    }
}

fn packet(p: &PacketInfo) -> udt_cc_packet {
    udt_cc_packet {
        seq: p.seq.get() as i32,
        msgno: p.message.raw() as i32,
        timestamp: p.timestamp as i32,
        payload_len: p.payload_len.min(c_int::MAX as usize) as c_int,
        retransmission: c_int::from(p.retransmission),
    }
}

/// UDT4's loss-list encoding of `ranges`.
fn loss_list(ranges: &[SeqRange]) -> Vec<i32> {
    let mut v = Vec::with_capacity(ranges.len() * 2);
    for r in ranges {
        if r.first == r.last {
            v.push(r.first.get() as i32);
        } else {
            v.push((r.first.get() | 0x8000_0000) as i32);
            v.push(r.last.get() as i32);
        }
    }
    v
}

impl CongestionControl for CAlgorithm {
    fn init(&mut self, ctx: &mut CcContext<'_>) {
        if let Some(f) = self.data.ops.init {
            // SAFETY: the application's callback with its state and a live context.
            self.call(ctx, |cc, c| unsafe { f(cc, c) });
        }
    }

    fn close(&mut self, ctx: &mut CcContext<'_>) {
        if let Some(f) = self.data.ops.close {
            // SAFETY: as in `init`.
            self.call(ctx, |cc, c| unsafe { f(cc, c) });
        }
    }

    fn on_ack(&mut self, ctx: &mut CcContext<'_>, ack: SeqNo) {
        if let Some(f) = self.data.ops.on_ack {
            // SAFETY: as in `init`.
            self.call(ctx, |cc, c| unsafe { f(cc, c, ack.get() as i32) });
        }
    }

    fn on_loss(&mut self, ctx: &mut CcContext<'_>, losses: &[SeqRange]) {
        if let Some(f) = self.data.ops.on_loss {
            let list = loss_list(losses);
            let n = list.len().min(c_int::MAX as usize) as c_int;
            // SAFETY: as in `init`; `list` lives across the call.
            self.call(ctx, |cc, c| unsafe { f(cc, c, list.as_ptr(), n) });
        }
    }

    fn on_timeout(&mut self, ctx: &mut CcContext<'_>) {
        if let Some(f) = self.data.ops.on_timeout {
            // SAFETY: as in `init`.
            self.call(ctx, |cc, c| unsafe { f(cc, c) });
        }
    }

    fn on_packet_sent(&mut self, ctx: &mut CcContext<'_>, pkt: &PacketInfo) {
        if let Some(f) = self.data.ops.on_pkt_sent {
            let p = packet(pkt);
            // SAFETY: as in `init`; `p` lives across the call.
            self.call(ctx, |cc, c| unsafe { f(cc, c, &p) });
        }
    }

    fn on_packet_received(&mut self, ctx: &mut CcContext<'_>, pkt: &PacketInfo) {
        if let Some(f) = self.data.ops.on_pkt_received {
            let p = packet(pkt);
            // SAFETY: as in `init`; `p` lives across the call.
            self.call(ctx, |cc, c| unsafe { f(cc, c, &p) });
        }
    }

    fn on_custom_message(&mut self, ctx: &mut CcContext<'_>, msg: &UserDefined<'_>) {
        if let Some(f) = self.data.ops.process_custom_msg {
            let m = udt_cc_custom_msg {
                ext_type: c_int::from(msg.ext_type),
                info: msg.info,
                body: msg.body.as_ptr(),
                body_len: msg.body.len().min(c_int::MAX as usize) as c_int,
            };
            // SAFETY: as in `init`; `m` and the body it points to live across the call.
            self.call(ctx, |cc, c| unsafe { f(cc, c, &m) });
        }
    }
}

/// The engine's context behind a callback's `ctx`, or an error for a null one.
///
/// # Safety
/// `ctx` must be the context passed to the running callback.
unsafe fn engine<'a>(ctx: *mut udt_cc_ctx) -> Result<&'a mut CcContext<'a>, FfiError> {
    if ctx.is_null() {
        return Err(FfiError::param("congestion-control context is null"));
    }
    // SAFETY: per the contract, `internal` points to the live CcContext of this callback.
    let internal = unsafe { (*ctx).internal };
    if internal.is_null() {
        return Err(FfiError::param("congestion-control context is not live"));
    }
    // SAFETY: as above.
    Ok(unsafe { &mut *(internal as *mut CcContext<'a>) })
}

/// Installs the algorithm `ops` (with `user`, and named `name` for statistics) on socket `u`
/// before it connects; accepted sockets inherit a listener's. The library copies `*ops`, and
/// calls `ops->release(user)` once no socket uses the algorithm. Returns 0 or `UDT_ERROR`
/// (then `release` is called before returning).
///
/// # Safety
/// `ops` must point to a valid `udt_cc_ops` whose functions honour its contract; `name` must
/// be a NUL-terminated string or null.
#[no_mangle]
pub unsafe extern "C" fn udt_setcc(
    u: c_int,
    ops: *const udt_cc_ops,
    user: *mut c_void,
    name: *const c_char,
) -> c_int {
    guarded(|| {
        if ops.is_null() {
            return Err(FfiError::param("ops is null"));
        }
        // SAFETY: per the contract.
        let ops = unsafe { *ops };
        // From here on the factory owns `user`: any failure releases it (UserData's drop).
        let data = Arc::new(UserData { ops, user });
        let name = if name.is_null() {
            "c-callbacks".to_string()
        } else {
            // SAFETY: per the contract.
            unsafe { std::ffi::CStr::from_ptr(name) }
                .to_string_lossy()
                .into_owned()
        };
        let s = handles::socket(u)?;
        let factory: SharedFactory = Arc::new(CFactory { name, data });
        s.set_option(SockOpt::Cc, OptValue::CongestionControl(factory))?;
        Ok(0)
    })
}

/// Sets the period of the receiver's timer-driven ACKs, µs (capped at 10 000; 0: default).
///
/// # Safety
/// `ctx` must be the context of the running callback.
#[no_mangle]
pub unsafe extern "C" fn udt_cc_set_ack_timer(ctx: *mut udt_cc_ctx, us: i64) -> c_int {
    guarded(|| {
        // SAFETY: forwarded contract.
        unsafe { engine(ctx) }?.set_ack_timer_us(u64::try_from(us).unwrap_or(0));
        Ok(0)
    })
}

/// Also acknowledges every `pkts` received packets (0: off).
///
/// # Safety
/// `ctx` must be the context of the running callback.
#[no_mangle]
pub unsafe extern "C" fn udt_cc_set_ack_interval(ctx: *mut udt_cc_ctx, pkts: c_int) -> c_int {
    guarded(|| {
        // SAFETY: forwarded contract.
        unsafe { engine(ctx) }?.set_ack_interval_pkts(u32::try_from(pkts).unwrap_or(0));
        Ok(0)
    })
}

/// Replaces UDT's retransmission timeout by a fixed `us` µs (0: UDT's formula).
///
/// # Safety
/// `ctx` must be the context of the running callback.
#[no_mangle]
pub unsafe extern "C" fn udt_cc_set_rto(ctx: *mut udt_cc_ctx, us: i64) -> c_int {
    guarded(|| {
        // SAFETY: forwarded contract.
        unsafe { engine(ctx) }?.set_rto_us(u64::try_from(us).unwrap_or(0));
        Ok(0)
    })
}

/// Queues a custom control message for the peer's algorithm: `ext_type` (16 bits), `info`,
/// and `len` body bytes (UDT4 peers read them as 32-bit words in network order).
///
/// # Safety
/// `ctx` must be the context of the running callback; `body` must point to `len` bytes (or
/// be null with `len` 0).
#[no_mangle]
pub unsafe extern "C" fn udt_cc_send_custom(
    ctx: *mut udt_cc_ctx,
    ext_type: c_int,
    info: u32,
    body: *const u8,
    len: c_int,
) -> c_int {
    guarded(|| {
        let len = crate::call::len_arg(len, "body length")?;
        if len > 0 && body.is_null() {
            return Err(FfiError::param("body is null"));
        }
        let ext = u16::try_from(ext_type).map_err(|_| FfiError::param("ext_type is not 16-bit"))?;
        let bytes = if len == 0 {
            Vec::new()
        } else {
            // SAFETY: per the contract.
            unsafe { std::slice::from_raw_parts(body, len) }.to_vec()
        };
        // SAFETY: forwarded contract.
        unsafe { engine(ctx) }?.send_custom(CustomMessage {
            ext_type: ext,
            info,
            body: bytes,
        });
        Ok(0)
    })
}

/// Writes the connection's statistics (nothing is cleared) to `*perf`.
///
/// # Safety
/// `ctx` must be the context of the running callback; `perf` a writable `udt_traceinfo`.
#[no_mangle]
pub unsafe extern "C" fn udt_cc_perf(ctx: *mut udt_cc_ctx, perf: *mut udt_traceinfo) -> c_int {
    guarded(|| {
        if perf.is_null() {
            return Err(FfiError::param("perf is null"));
        }
        // SAFETY: forwarded contract.
        let stats = unsafe { engine(ctx) }?.perf();
        // SAFETY: `perf` is non-null and writable per the contract.
        unsafe { std::ptr::write_unaligned(perf, udt_traceinfo::from(&stats)) };
        Ok(0)
    })
}
