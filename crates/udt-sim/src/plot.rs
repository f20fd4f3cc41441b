//! Plots (being written).
