//! Command-line values of `udt relay`: rates, durations, probabilities, and the per-direction
//! form `fwd=X,rev=Y` that every impairment flag accepts.

use std::fmt;
use std::str::FromStr;

/// A value for each direction; a plain `X` sets both, `fwd=X`, `rev=Y` or `fwd=X,rev=Y` set
/// one or both (an unset direction keeps the flag's default).
#[derive(Clone, Debug, PartialEq)]
pub struct PerDir<T> {
    /// Client → `--to` (datagrams arriving on `--listen`).
    pub fwd: Option<T>,
    /// `--to` → client (replies).
    pub rev: Option<T>,
}

impl<T: Clone> PerDir<T> {
    /// The forward and reverse values, `default` where unset.
    pub fn resolve(opt: &Option<Self>, default: T) -> (T, T) {
        match opt {
            None => (default.clone(), default),
            Some(p) => (
                p.fwd.clone().unwrap_or_else(|| default.clone()),
                p.rev.clone().unwrap_or(default),
            ),
        }
    }
}

impl<T: FromStr<Err = String> + Clone> FromStr for PerDir<T> {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let s = s.trim();
        if !s.contains('=') {
            let v = T::from_str(s)?;
            return Ok(PerDir {
                fwd: Some(v.clone()),
                rev: Some(v),
            });
        }
        let mut out = PerDir {
            fwd: None,
            rev: None,
        };
        for part in s.split(',') {
            let (dir, value) = part
                .split_once('=')
                .ok_or_else(|| format!("expected fwd=VALUE or rev=VALUE, got {part:?}"))?;
            let slot = match dir.trim().to_ascii_lowercase().as_str() {
                "fwd" => &mut out.fwd,
                "rev" => &mut out.rev,
                other => return Err(format!("unknown direction {other:?} (use fwd or rev)")),
            };
            if slot.is_some() {
                return Err(format!("direction {dir:?} given twice"));
            }
            *slot = Some(T::from_str(value.trim())?);
        }
        Ok(out)
    }
}

/// A rate in bits per second, or unlimited.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rate(pub Option<u64>);

impl FromStr for Rate {
    type Err = String;

    /// `500mbit`, `1gbit`, `64kbit`, `1.5gbit`, `100000bit` or a bare number of bit/s
    /// (SI multiples); `off`, `none` or `0`: unlimited.
    fn from_str(s: &str) -> Result<Self, String> {
        let t = s.trim().to_ascii_lowercase();
        if matches!(t.as_str(), "off" | "none" | "unlimited" | "0") {
            return Ok(Rate(None));
        }
        let (num, unit) = split_number(&t);
        let mult = match unit {
            "" | "bit" => 1.0,
            "kbit" => 1e3,
            "mbit" => 1e6,
            "gbit" => 1e9,
            _ => {
                return Err(format!(
                    "unknown rate unit {unit:?} in {s:?} (use bit, kbit, mbit or gbit)"
                ))
            }
        };
        let v = parse_nonneg(num, s)? * mult;
        if !(1.0..=1e13).contains(&v) {
            return Err(format!("rate {s:?} out of range (1 bit/s … 10 Tbit/s)"));
        }
        Ok(Rate(Some(v.round() as u64)))
    }
}

impl fmt::Display for Rate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            None => write!(f, "unlimited"),
            Some(b) => write!(f, "{} Mbit/s", b as f64 / 1e6),
        }
    }
}

/// A duration in nanoseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Nanos(pub u64);

impl FromStr for Nanos {
    type Err = String;

    /// `10ms`, `250us`, `1.5s`, `500ns`, or `0`.
    fn from_str(s: &str) -> Result<Self, String> {
        let t = s.trim().to_ascii_lowercase();
        let (num, unit) = split_number(&t);
        let mult = match unit {
            "ns" => 1.0,
            "us" | "µs" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "" if parse_nonneg(num, s)? == 0.0 => 0.0,
            _ => {
                return Err(format!(
                    "duration {s:?} needs a unit: ns, us, ms or s (e.g. 10ms)"
                ))
            }
        };
        let v = parse_nonneg(num, s)? * mult;
        if v > 1e13 {
            return Err(format!("duration {s:?} is too long (at most 10000 s)"));
        }
        Ok(Nanos(v.round() as u64))
    }
}

/// A probability, `0.01` or `1%`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Prob(pub f64);

impl FromStr for Prob {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let t = s.trim();
        let v = match t.strip_suffix('%') {
            Some(pct) => parse_nonneg(pct.trim(), s)? / 100.0,
            None => parse_nonneg(t, s)?,
        };
        if v > 1.0 {
            return Err(format!("probability {s:?} is above 1 (100%)"));
        }
        Ok(Prob(v))
    }
}

/// A queue limit in packets (at least 1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Packets(pub usize);

impl FromStr for Packets {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim().parse::<usize>() {
            Ok(n) if n >= 1 => Ok(Packets(n)),
            _ => Err(format!("queue {s:?} must be a whole number of packets ≥ 1")),
        }
    }
}

/// Splits `"1.5gbit"` into `("1.5", "gbit")`.
fn split_number(s: &str) -> (&str, &str) {
    let end = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    (s[..end].trim(), s[end..].trim())
}

/// A finite, non-negative decimal number.
fn parse_nonneg(num: &str, whole: &str) -> Result<f64, String> {
    match num.parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
        _ => Err(format!(
            "{whole:?} is not a non-negative number with a unit"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates() {
        assert_eq!("500mbit".parse(), Ok(Rate(Some(500_000_000))));
        assert_eq!("1Gbit".parse(), Ok(Rate(Some(1_000_000_000))));
        assert_eq!("1.5gbit".parse(), Ok(Rate(Some(1_500_000_000))));
        assert_eq!("64kbit".parse(), Ok(Rate(Some(64_000))));
        assert_eq!("123456".parse(), Ok(Rate(Some(123_456))));
        assert_eq!("off".parse(), Ok(Rate(None)));
        assert!("5mbps".parse::<Rate>().is_err());
        assert!("fast".parse::<Rate>().is_err());
        assert!("-1mbit".parse::<Rate>().is_err());
        assert!("nanmbit".parse::<Rate>().is_err());
    }

    #[test]
    fn durations() {
        assert_eq!("10ms".parse(), Ok(Nanos(10_000_000)));
        assert_eq!("250us".parse(), Ok(Nanos(250_000)));
        assert_eq!("1.5s".parse(), Ok(Nanos(1_500_000_000)));
        assert_eq!("0".parse(), Ok(Nanos(0)));
        assert!("10".parse::<Nanos>().is_err());
        assert!("10 parsecs".parse::<Nanos>().is_err());
        assert!("1e30s".parse::<Nanos>().is_err());
    }

    #[test]
    fn probabilities() {
        assert_eq!("0.01".parse(), Ok(Prob(0.01)));
        assert_eq!("2.5%".parse(), Ok(Prob(0.025)));
        assert!("1.5".parse::<Prob>().is_err());
        assert!("-0.1".parse::<Prob>().is_err());
    }

    #[test]
    fn per_direction_values() {
        let both: PerDir<Nanos> = "10ms".parse().unwrap();
        assert_eq!(
            PerDir::resolve(&Some(both), Nanos(0)),
            (Nanos(10_000_000), Nanos(10_000_000))
        );
        let one: PerDir<Rate> = "fwd=1gbit".parse().unwrap();
        assert_eq!(
            PerDir::resolve(&Some(one), Rate(None)),
            (Rate(Some(1_000_000_000)), Rate(None))
        );
        let two: PerDir<Prob> = "fwd=0.01, rev=2%".parse().unwrap();
        assert_eq!(
            PerDir::resolve(&Some(two), Prob(0.0)),
            (Prob(0.01), Prob(0.02))
        );
        assert!("up=1ms".parse::<PerDir<Nanos>>().is_err());
        assert!("fwd=1ms,fwd=2ms".parse::<PerDir<Nanos>>().is_err());
        assert!("fwd=1ms,2ms".parse::<PerDir<Nanos>>().is_err());
        assert_eq!(
            PerDir::<Packets>::resolve(&None, Packets(7)),
            (Packets(7), Packets(7))
        );
    }
}
