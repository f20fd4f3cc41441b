//! Congestion-control algorithms by name, for options, `udt perf --cc` and scenario files.

use std::sync::Arc;

use super::native::{NativeCc, NativeConfig};
use super::{CongestionControl, FnFactory, SharedFactory};

/// Names [`by_name`] accepts, with a one-line description each.
pub fn names() -> &'static [(&'static str, &'static str)] {
    &[
        ("udt", "UDT native DAIMD control, exactly as UDT4 4.11"),
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
    ]
}

/// The factory for the algorithm called `name`, or `None` if there is none.
pub fn by_name(name: &str) -> Option<SharedFactory> {
    let config = match name {
        "udt" => NativeConfig::udt4(),
        "udt-noisy" => NativeConfig::udt4().with_noisy_link(),
        "udt-paper" => NativeConfig::paper(),
        "udt-paper-noisy" => NativeConfig::paper().with_noisy_link(),
        _ => return None,
    };
    let owned = name.to_owned();
    Some(Arc::new(FnFactory::new(owned, move || {
        Box::new(NativeCc::new(config)) as Box<dyn CongestionControl>
    })))
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
