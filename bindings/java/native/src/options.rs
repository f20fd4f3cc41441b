//! Entry points for options and statistics (`net.udt.Native`): UDT4's `setsockopt`,
//! `getsockopt` (one entry point per value type, chosen by the Java enum) and `perfmon`.

use std::time::Duration;

use jni::objects::{JClass, JDoubleArray, JLongArray, JString};
use jni::sys::{jboolean, jint, jlong, jstring, JNI_FALSE, JNI_TRUE};
use jni::JNIEnv;
use udt::{cc, Error, OptValue, PerfStats, SockOpt};

use crate::entry::{run, Fail, Res};
use crate::table;

/// The option with UDT4 number `n` (5003 for an unknown number).
fn opt(n: jint) -> Res<SockOpt> {
    SockOpt::from_udt4(n).ok_or_else(|| Error::InvalidOption("unknown option number").into())
}

fn set(id: jlong, n: jint, v: OptValue) -> Res<()> {
    Ok(table::get(id)?.set_option(opt(n)?, v)?)
}

fn get(id: jlong, n: jint) -> Res<OptValue> {
    Ok(table::get(id)?.option(opt(n)?)?)
}

fn wrong_type() -> Fail {
    Error::InvalidOption("the option has another value type").into()
}

/// `void setInt(long id, int opt, int value)`.
#[no_mangle]
pub extern "system" fn Java_net_udt_Native_setInt<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    id: jlong,
    n: jint,
    value: jint,
) {
    run(&mut env, (), |_| set(id, n, OptValue::Int(value)))
}

/// `void setLong(long id, int opt, long value)`.
#[no_mangle]
pub extern "system" fn Java_net_udt_Native_setLong<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    id: jlong,
    n: jint,
    value: jlong,
) {
    run(&mut env, (), |_| set(id, n, OptValue::Int64(value)))
}

/// `void setBool(long id, int opt, boolean value)`.
#[no_mangle]
pub extern "system" fn Java_net_udt_Native_setBool<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    id: jlong,
    n: jint,
    value: jboolean,
) {
    run(&mut env, (), |_| {
        set(id, n, OptValue::Bool(value == JNI_TRUE))
    })
}

/// `void setLinger(long id, int seconds)`: `UDT_LINGER`; a negative value turns it off.
#[no_mangle]
pub extern "system" fn Java_net_udt_Native_setLinger<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    id: jlong,
    seconds: jint,
) {
    run(&mut env, (), |_| {
        let l = u64::try_from(seconds).ok().map(Duration::from_secs);
        set(id, SockOpt::Linger as jint, OptValue::Linger(l))
    })
}

/// `void setCc(long id, String name)`: `UDT_CC` by algorithm name.
#[no_mangle]
pub extern "system" fn Java_net_udt_Native_setCc<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    id: jlong,
    name: JString<'l>,
) {
    run(&mut env, (), |env| {
        if name.is_null() {
            return Err(Fail::Null("congestion control name is null"));
        }
        let name: String = env.get_string(&name)?.into();
        let f = cc::by_name(&name).ok_or(Error::InvalidOption("unknown congestion control"))?;
        set(id, SockOpt::Cc as jint, OptValue::CongestionControl(f))
    })
}

/// `int getInt(long id, int opt)`.
#[no_mangle]
pub extern "system" fn Java_net_udt_Native_getInt<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    id: jlong,
    n: jint,
) -> jint {
    run(&mut env, 0, |_| match get(id, n)? {
        OptValue::Int(v) => Ok(v),
        _ => Err(wrong_type()),
    })
}

/// `long getLong(long id, int opt)`.
#[no_mangle]
pub extern "system" fn Java_net_udt_Native_getLong<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    id: jlong,
    n: jint,
) -> jlong {
    run(&mut env, 0, |_| match get(id, n)? {
        OptValue::Int64(v) => Ok(v),
        OptValue::Int(v) => Ok(jlong::from(v)),
        _ => Err(wrong_type()),
    })
}

/// `boolean getBool(long id, int opt)`.
#[no_mangle]
pub extern "system" fn Java_net_udt_Native_getBool<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    id: jlong,
    n: jint,
) -> jboolean {
    run(&mut env, JNI_FALSE, |_| match get(id, n)? {
        OptValue::Bool(true) => Ok(JNI_TRUE),
        OptValue::Bool(false) => Ok(JNI_FALSE),
        _ => Err(wrong_type()),
    })
}

/// `int getLinger(long id)`: `UDT_LINGER` in whole seconds, -1 when off.
#[no_mangle]
pub extern "system" fn Java_net_udt_Native_getLinger<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    id: jlong,
) -> jint {
    run(&mut env, 0, |_| match get(id, SockOpt::Linger as jint)? {
        OptValue::Linger(None) => Ok(-1),
        OptValue::Linger(Some(d)) => Ok(jint::try_from(d.as_secs()).unwrap_or(jint::MAX)),
        _ => Err(wrong_type()),
    })
}

/// `String getCc(long id)`: the congestion control's name.
#[no_mangle]
pub extern "system" fn Java_net_udt_Native_getCc<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    id: jlong,
) -> jstring {
    run(&mut env, std::ptr::null_mut(), |env| {
        match get(id, SockOpt::Cc as jint)? {
            OptValue::CongestionControl(f) => Ok(env.new_string(f.name())?.into_raw()),
            _ => Err(wrong_type()),
        }
    })
}

/// Number of integer and of real fields of UDT4's `TRACEINFO`, in the order the Java record
/// `PerfStats` declares them.
const LONGS: usize = 26;
const REALS: usize = 5;

fn as_long(v: u64) -> jlong {
    jlong::try_from(v).unwrap_or(jlong::MAX)
}

/// `TRACEINFO`'s fields split into integers and reals, each in declaration order.
fn flatten(p: &PerfStats) -> ([jlong; LONGS], [f64; REALS]) {
    let longs = [
        p.ms_timestamp,
        p.pkt_sent_total,
        p.pkt_recv_total,
        p.pkt_snd_loss_total,
        p.pkt_rcv_loss_total,
        p.pkt_retrans_total,
        p.pkt_sent_ack_total,
        p.pkt_recv_ack_total,
        p.pkt_sent_nak_total,
        p.pkt_recv_nak_total,
        p.us_snd_duration_total,
        p.pkt_sent,
        p.pkt_recv,
        p.pkt_snd_loss,
        p.pkt_rcv_loss,
        p.pkt_retrans,
        p.pkt_sent_ack,
        p.pkt_recv_ack,
        p.pkt_sent_nak,
        p.pkt_recv_nak,
        p.us_snd_duration,
        u64::from(p.pkt_flow_window),
        u64::from(p.pkt_congestion_window),
        u64::from(p.pkt_flight_size),
        p.byte_avail_snd_buf,
        p.byte_avail_rcv_buf,
    ]
    .map(as_long);
    let reals = [
        p.mbps_send_rate,
        p.mbps_recv_rate,
        p.us_pkt_snd_period,
        p.ms_rtt,
        p.mbps_bandwidth,
    ];
    (longs, reals)
}

/// `void perfmon(long id, boolean clear, long[] longs, double[] reals)`: fills the arrays
/// (26 and 5 elements) with `TRACEINFO`'s integer and real fields in declaration order.
#[no_mangle]
pub extern "system" fn Java_net_udt_Native_perfmon<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    id: jlong,
    clear: jboolean,
    longs: JLongArray<'l>,
    reals: JDoubleArray<'l>,
) {
    run(&mut env, (), |env| {
        if longs.is_null() || reals.is_null() {
            return Err(Fail::Null("perfmon arrays are null"));
        }
        if env.get_array_length(&longs)? as usize != LONGS
            || env.get_array_length(&reals)? as usize != REALS
        {
            return Err(Fail::Bounds(format!(
                "perfmon needs arrays of {LONGS} and {REALS} elements"
            )));
        }
        let stats = table::get(id)?.perfmon(clear == JNI_TRUE)?;
        let (l, r) = flatten(&stats);
        env.set_long_array_region(&longs, 0, &l)?;
        env.set_double_array_region(&reals, 0, &r)?;
        Ok(())
    })
}
