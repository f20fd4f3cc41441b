//! Metrics (being written).
