//! Congestion-control algorithms by name, for options, `udt perf --cc` and scenario files.

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};

use super::native::{NativeCc, NativeConfig};
use super::{CongestionControl, FnFactory, SharedFactory};

/// The built-in names [`by_name`] accepts, with a one-line description each (names
/// applications add with [`register`] are listed by [`available`]).
pub fn names() -> &'static [(&'static str, &'static str)] {
    &[
        (
            "udt",
            "UDT's DAIMD rate control made robust: random loss told from congestion by delay and delivery, rate bounded by the measured delivery rate, capacity estimates checked",
        ),
        (
            "udt-native",
            "UDT native DAIMD control as UDT4 4.11 runs it, with a slow start that stops at the path's BDP and at most two decreases per congestion epoch (the default before `udt`)",
        ),
        ("udt4", "UDT native DAIMD control, exactly as UDT4 4.11"),
        (
            "udt-noisy",
            "UDT native control ignoring the first loss of each congestion event",
        ),
        (
            "udt-paper",
            "UDT native control as the papers describe it (min increase 1/MSS, freeze)",
        ),
        (
            "udt-paper-noisy",
            "the papers' variant with the noisy-link rule",
        ),
        (
            "udpblast",
            "UDP Blast: fixed rate (100 Mb/s; `udpblast:<Mb/s>` for another)",
        ),
        (
            "tcp",
            "TCP NewReno (CTCP), window-based, ACK every 2 packets",
        ),
        (
            "scalable",
            "Scalable TCP (Kelly 2003): +0.01 per ACK, -1/8 per loss",
        ),
        ("highspeed", "HighSpeed TCP (RFC 3649)"),
        ("bic", "BiC TCP (Xu, Harfoush, Rhee 2004)"),
        (
            "westwood",
            "TCP Westwood: window after loss = bandwidth estimate x RTTmin",
        ),
        (
            "vegas",
            "TCP Vegas (Brakmo, Peterson 1995): delay-based, alpha 1, beta 3",
        ),
        (
            "fast",
            "FAST TCP (Jin, Wei, Low 2004): delay-based, alpha 50, gamma 0.5",
        ),
        (
            "gtp",
            "GTP (Wu, Chien 2004): receiver-driven group rates; 1 Gb/s, `gtp:<Mb/s>`",
        ),
    ]
}

/// The factory for the algorithm called `name`, or `None` if there is none.
pub fn by_name(name: &str) -> Option<SharedFactory> {
    if let Some(f) = library_by_name(name) {
        return Some(f);
    }
    if let Some(f) = super::gtp::by_name(name) {
        return Some(f);
    }
    if name == "udt" {
        return Some(Arc::new(FnFactory::new("udt", || {
            Box::new(super::udt::UdtCc::new()) as Box<dyn CongestionControl>
        })));
    }
    let config = match name {
        "udt-native" => NativeConfig::udt(),
        "udt4" => NativeConfig::udt4(),
        "udt-noisy" => NativeConfig::udt().with_noisy_link(),
        "udt-paper" => NativeConfig::paper(),
        "udt-paper-noisy" => NativeConfig::paper().with_noisy_link(),
        _ => return user_by_name(name),
    };
    let owned = name.to_owned();
    Some(Arc::new(FnFactory::new(owned, move || {
        Box::new(NativeCc::new(config)) as Box<dyn CongestionControl>
    })))
}

/// The algorithms of the CCC library (papers 003/004) by name.
fn library_by_name(name: &str) -> Option<SharedFactory> {
    use super::{bic, ctcp, fast, highspeed, scalable, udpblast, vegas, westwood};
    fn boxed(cc: impl CongestionControl + 'static) -> Box<dyn CongestionControl> {
        Box::new(cc)
    }
    let make: fn() -> Box<dyn CongestionControl> = match name {
        "tcp" => || boxed(ctcp::NewReno::default()),
        "scalable" => || boxed(scalable::scalable()),
        "highspeed" => || boxed(highspeed::highspeed()),
        "bic" => || boxed(bic::bic()),
        "westwood" => || boxed(westwood::westwood()),
        "vegas" => || boxed(vegas::vegas()),
        "fast" => || boxed(fast::fast()),
        _ => {
            // `udpblast` or `udpblast:<Mb/s>`; each connection gets its own rate handle.
            let bps = match name.strip_prefix("udpblast") {
                Some("") => udpblast::DEFAULT_RATE_BPS,
                Some(rest) => {
                    let mbps: f64 = rest.strip_prefix(':')?.parse().ok()?;
                    if !(mbps.is_finite() && mbps > 0.0 && mbps <= 1e6) {
                        return None;
                    }
                    (mbps * 1e6) as u64
                }
                None => return None,
            };
            return Some(Arc::new(FnFactory::new(name.to_owned(), move || {
                boxed(udpblast::UdpBlast::new(udpblast::BlastRate::new(bps)))
            })));
        }
    };
    Some(Arc::new(FnFactory::new(name.to_owned(), make)))
}

/// Why [`register`] refused a name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RegistryError {
    /// The name belongs to an algorithm of this library.
    #[error("`{0}` is a built-in congestion control")]
    BuiltIn(String),
    /// An application already registered this name (see [`unregister`]).
    #[error("congestion control `{0}` is already registered")]
    AlreadyRegistered(String),
    /// Names are 1 to 64 characters from `A-Z a-z 0-9 - _ . : +`, so that they fit in
    /// command lines and scenario files unquoted.
    #[error("invalid congestion control name `{0}`")]
    InvalidName(String),
}

/// Algorithms registered by the application, by name (process-wide).
static USER: RwLock<BTreeMap<String, SharedFactory>> = RwLock::new(BTreeMap::new());

/// The map of registered algorithms. A panic while the lock was held cannot leave the map
/// half-updated (every update is a single insert or remove), so a poisoned lock is used as is.
fn user_map() -> std::sync::RwLockReadGuard<'static, BTreeMap<String, SharedFactory>> {
    USER.read().unwrap_or_else(|e| e.into_inner())
}

fn user_by_name(name: &str) -> Option<SharedFactory> {
    user_map().get(name).cloned()
}

/// Makes `factory` available under `name` to [`by_name`], and so to
/// `udt::Builder::congestion_control_by_name`, `udt perf --cc` and simulator scenario files,
/// for the rest of the process (or until [`unregister`]).
///
/// Every lookup returns this same factory, so state it holds is shared by all connections
/// built from it. Built-in names (including parametrised ones such as `udpblast:50`) cannot be
/// replaced, nor can a name already registered.
pub fn register(name: &str, factory: SharedFactory) -> Result<(), RegistryError> {
    let valid = (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.:+".contains(&b));
    if !valid {
        return Err(RegistryError::InvalidName(name.to_owned()));
    }
    let mut map = USER.write().unwrap_or_else(|e| e.into_inner());
    if map.contains_key(name) {
        return Err(RegistryError::AlreadyRegistered(name.to_owned()));
    }
    // Not in the user map, so anything `by_name` finds is built in. (`by_name` takes the read
    // lock only for names it does not know itself, which this one then is not.)
    drop(map);
    if by_name(name).is_some() {
        return Err(RegistryError::BuiltIn(name.to_owned()));
    }
    map = USER.write().unwrap_or_else(|e| e.into_inner());
    if map.contains_key(name) {
        return Err(RegistryError::AlreadyRegistered(name.to_owned()));
    }
    map.insert(name.to_owned(), factory);
    Ok(())
}

/// Removes an algorithm added with [`register`]; false if `name` was not registered.
/// Connections already built from it keep running.
pub fn unregister(name: &str) -> bool {
    USER.write()
        .unwrap_or_else(|e| e.into_inner())
        .remove(name)
        .is_some()
}

/// Every name [`by_name`] accepts now: the built-in ones of [`names`], then those registered
/// by the application (described by their factory's name), in name order.
pub fn available() -> Vec<(String, String)> {
    let mut all: Vec<(String, String)> = names()
        .iter()
        .map(|(n, d)| ((*n).to_owned(), (*d).to_owned()))
        .collect();
    all.extend(user_map().iter().map(|(n, f)| {
        (
            n.clone(),
            format!("registered by the application ({})", f.name()),
        )
    }));
    all
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_listed_name_resolves() {
        for (n, _) in names() {
            let f = by_name(n).unwrap();
            assert_eq!(f.name(), *n);
            let _ = f.build();
        }
        assert!(by_name("nope").is_none());
    }
}
