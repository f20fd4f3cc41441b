//! # udt-sim
//!
//! A deterministic discrete-event network simulator that runs real `udt-proto` endpoints in
//! virtual time and measures congestion control with the metrics of the UDT papers.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod heatmap;
pub mod link;
pub mod metrics;
pub mod pattern;
pub mod plot;
mod queue;
pub mod report;
pub mod scenario;
pub mod seeds;
pub mod stall;
pub mod sweep;
pub mod world;

pub use report::{simulate, Report};
pub use scenario::Scenario;
pub use sweep::SweepSpec;
