//! SYN cookies for the listener (spec §5.3): the listener keeps no state for a request until
//! the requester echoes a cookie only the listener can compute.
//!
//! 4.11 uses the first four bytes of MD5("ip:port:minute"), with no secret, and its fallback to
//! the previous minute is broken. Ours is a keyed SipHash of the source address and the minute
//! since the listener started, under a random 128-bit key; the previous minute's cookie is also
//! accepted, so a handshake straddling a minute boundary still completes. Cookies are opaque to
//! clients, so this is invisible on the wire.

use core::hash::Hasher;
use core::net::SocketAddr;

use siphasher::sip::SipHasher24;

use crate::time::Instant;

/// Lifetime of one cookie secret period, µs.
const PERIOD_US: u64 = 60_000_000;

/// Computes and checks cookies.
#[derive(Clone, Debug)]
pub(crate) struct CookieJar {
    key: [u8; 16],
    started: Instant,
}

impl CookieJar {
    /// A jar with secret `key`, counting minutes from `started`.
    pub(crate) fn new(key: [u8; 16], started: Instant) -> Self {
        CookieJar { key, started }
    }

    fn period(&self, now: Instant) -> u64 {
        now.micros_since(self.started) / PERIOD_US
    }

    fn compute(&self, addr: SocketAddr, period: u64) -> u32 {
        let mut h = SipHasher24::new_with_key(&self.key);
        match addr.ip() {
            core::net::IpAddr::V4(v4) => h.write(&v4.octets()),
            core::net::IpAddr::V6(v6) => h.write(&v6.octets()),
        }
        h.write_u16(addr.port());
        h.write_u64(period);
        h.finish() as u32
    }

    /// The cookie for a request from `addr` at `now`.
    pub(crate) fn issue(&self, addr: SocketAddr, now: Instant) -> u32 {
        self.compute(addr, self.period(now))
    }

    /// True if `cookie` was issued to `addr` in this or the previous period.
    pub(crate) fn check(&self, addr: SocketAddr, cookie: u32, now: Instant) -> bool {
        let p = self.period(now);
        cookie == self.compute(addr, p) || (p > 0 && cookie == self.compute(addr, p - 1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cookies_depend_on_address_and_expire() {
        let jar = CookieJar::new([7; 16], Instant::ZERO);
        let a: SocketAddr = "10.0.0.1:9000".parse().unwrap();
        let b: SocketAddr = "10.0.0.1:9001".parse().unwrap();
        let t0 = Instant::from_micros(1);
        let c = jar.issue(a, t0);
        assert!(jar.check(a, c, t0));
        assert!(!jar.check(b, c, t0));
        // Still valid in the next minute, not in the one after.
        assert!(jar.check(a, c, Instant::from_micros(PERIOD_US + 5)));
        assert!(!jar.check(a, c, Instant::from_micros(2 * PERIOD_US + 5)));
        // Another key gives other cookies.
        let other = CookieJar::new([8; 16], Instant::ZERO);
        assert!(!other.check(a, c, t0));
    }
}
